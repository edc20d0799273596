//! The registry: every observer quantscope knows, its family, parameters and named presets.
//!
//! The CLI's `list`, the page's controls and the npm package's types are all generated from
//! here, so adding an observer to its family's `observers()` is all it takes to show it
//! everywhere.

use crate::error::{Error, Result};
pub use crate::observer::{Family, Granularity, ObserverEntry, ObserverSpec, Preset};
use std::sync::OnceLock;

struct Registry {
    observers: Vec<ObserverSpec>,
    presets: Vec<Preset>,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry {
        observers: crate::observers::all_observers(),
        presets: crate::observers::all_presets(),
    })
}

/// Every observer, grouped by family in registry order.
pub fn observers() -> &'static [ObserverSpec] {
    &registry().observers
}

/// The observers run when none is named (`quantscope observe` without `--observer`): every
/// per-tensor observer that corrects no other.
pub fn default_observers() -> impl Iterator<Item = &'static ObserverSpec> {
    observers()
        .iter()
        .filter(|s| s.granularity == Granularity::PerTensor && s.corrects.is_none())
}

/// Every named preset.
pub fn presets() -> &'static [Preset] {
    &registry().presets
}

/// Look up an observer by id.
pub fn find(id: &str) -> Result<&'static ObserverSpec> {
    observers()
        .iter()
        .find(|s| s.id == id)
        .ok_or_else(|| Error::Unknown {
            what: "observer",
            name: id.to_string(),
            hint: suggestion(id, observers().iter().map(|s| s.id)),
        })
}

/// Look up a preset by name (with or without a `family.` prefix).
pub fn find_preset(name: &str) -> Result<&'static Preset> {
    let bare = name.rsplit('.').next().unwrap_or(name);
    presets()
        .iter()
        .find(|p| p.name == name || p.name == bare)
        .ok_or_else(|| Error::Unknown {
            what: "preset",
            name: name.to_string(),
            hint: suggestion(name, presets().iter().map(|p| p.name)),
        })
}

/// " (did you mean `x`?)" for the candidate sharing the longest case-insensitive substring.
fn suggestion<'a>(wanted: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    let wanted = wanted.to_ascii_lowercase();
    let tail = wanted.rsplit('.').next().unwrap_or(&wanted).to_string();
    candidates
        .filter(|c| {
            let c = c.to_ascii_lowercase();
            !tail.is_empty()
                && (c.contains(&tail) || tail.contains(c.rsplit('.').next().unwrap_or("")))
        })
        .min_by_key(|c| c.len())
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_prefixed_by_family() {
        let mut seen = std::collections::HashSet::new();
        for spec in observers() {
            assert!(seen.insert(spec.id), "duplicate id {}", spec.id);
            assert!(
                spec.id.starts_with(&format!("{}.", spec.family.prefix())),
                "{}",
                spec.id
            );
        }
    }

    #[test]
    fn entries_state_library_name_and_corrections() {
        for spec in observers() {
            assert_eq!(spec.library, spec.family.prefix(), "{}", spec.id);
            assert_eq!(
                format!("{}.{}", spec.library, spec.name),
                spec.id,
                "{}: the display name is the id without its library",
                spec.id
            );
            // A `.fixed` variant names the observer it corrects, of its own library; nothing
            // else corrects anything.
            match spec.id.strip_suffix(".fixed") {
                Some(faithful) => {
                    assert_eq!(spec.corrects, Some(faithful), "{}", spec.id);
                    let corrected = find(faithful).expect("the corrected observer is registered");
                    assert_eq!(corrected.library, spec.library);
                    assert_eq!(corrected.corrects, None);
                }
                None => assert_eq!(spec.corrects, None, "{}", spec.id),
            }
            // An alias runs an observer of its own library, with the same parameters.
            if let Some(target) = spec.alias_of {
                let runs = find(target).expect("the aliased observer is registered");
                assert_eq!(runs.library, spec.library, "{}", spec.id);
                assert_eq!(runs.alias_of, None, "{}", spec.id);
                let names = |s: &ObserverSpec| s.params.iter().map(|p| p.name).collect::<Vec<_>>();
                assert_eq!(names(runs), names(spec), "{}", spec.id);
            }
        }
    }

    #[test]
    fn defaults_satisfy_their_own_specs_and_presets_resolve() {
        for spec in observers() {
            for p in &spec.params {
                p.validate(&p.default)
                    .unwrap_or_else(|e| panic!("{}: {e}", spec.id));
            }
            let names: std::collections::HashSet<_> = spec.params.iter().map(|p| p.name).collect();
            assert_eq!(
                names.len(),
                spec.params.len(),
                "{}: a parameter is declared twice",
                spec.id
            );
        }
        for preset in presets() {
            find(preset.observer).unwrap_or_else(|e| panic!("{}: {e}", preset.name));
        }
    }
}
