//! The registry: every observer quantscope knows, its family, parameters and named presets.
//!
//! The CLI's `list`, the page's controls and the npm package's types are all generated from
//! here, so adding an observer to its family's `observers()` is all it takes to show it
//! everywhere.

use crate::error::{Error, Result};
use crate::observer::Observer;
use crate::params::{ParamSpec, Params};
use serde::Serialize;
use std::sync::OnceLock;

/// The framework an observer reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Torch,
    Quark,
    Horizon,
    Ort,
    Modelopt,
}

impl Family {
    /// Display name of the framework.
    pub fn framework(self) -> &'static str {
        match self {
            Family::Torch => "PyTorch torch.ao.quantization",
            Family::Quark => "AMD Quark",
            Family::Horizon => "Horizon observer_v2",
            Family::Ort => "ONNX Runtime",
            Family::Modelopt => "NVIDIA Model Optimizer",
        }
    }

    /// Id prefix (`torch`, `quark`, …).
    pub fn prefix(self) -> &'static str {
        match self {
            Family::Torch => "torch",
            Family::Quark => "quark",
            Family::Horizon => "horizon",
            Family::Ort => "ort",
            Family::Modelopt => "modelopt",
        }
    }
}

/// How an observer's parameters are shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// One scale for the whole tensor.
    PerTensor,
    /// One scale per channel along an axis.
    PerChannel,
    /// One scale per group of consecutive elements along an axis.
    PerGroup,
    /// One shared scale per block (MX, BFP).
    PerBlock,
    /// No qparams (pass-through observers).
    PassThrough,
}

/// Constructor of an observer from its parameters.
pub type BuildFn = fn(&Params) -> Result<Box<dyn Observer>>;

/// Everything the registry knows about one observer.
#[derive(Clone, Serialize)]
pub struct ObserverSpec {
    /// Unique id, `family.ClassName` (e.g. `torch.HistogramObserver`); corrected variants of
    /// buggy framework behaviour end in `.fixed`.
    pub id: &'static str,
    pub family: Family,
    /// The framework version whose behaviour is reproduced.
    pub framework_version: &'static str,
    pub granularity: Granularity,
    /// One-line summary of the maths.
    pub summary: &'static str,
    pub params: Vec<ParamSpec>,
    /// Framework bugs or surprises this observer reproduces on purpose, shown to users.
    pub quirks: Vec<&'static str>,
    /// For a `.fixed` variant: the faithful observer it corrects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrects: Option<&'static str>,
    /// Applied (in addition to `params` defaults) before user params; lets a registry entry
    /// reuse another observer's constructor with a different configuration.
    #[serde(skip)]
    pub build: BuildFn,
}

impl std::fmt::Debug for ObserverSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObserverSpec")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ObserverSpec {
    /// A spec with no quirks; use the builder methods for the rest.
    pub fn new(
        id: &'static str,
        family: Family,
        framework_version: &'static str,
        granularity: Granularity,
        summary: &'static str,
        params: Vec<ParamSpec>,
        build: BuildFn,
    ) -> Self {
        ObserverSpec {
            id,
            family,
            framework_version,
            granularity,
            summary,
            params,
            quirks: Vec::new(),
            corrects: None,
            build,
        }
    }

    /// Record a reproduced framework quirk.
    pub fn quirk(mut self, text: &'static str) -> Self {
        self.quirks.push(text);
        self
    }

    /// Mark this entry as the corrected variant of `faithful_id`.
    pub fn corrects(mut self, faithful_id: &'static str) -> Self {
        self.corrects = Some(faithful_id);
        self
    }

    /// The declared parameter `name`.
    pub fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Validate the declared parameters present in `params` and build the observer.
    pub fn build(&self, params: &Params) -> Result<Box<dyn Observer>> {
        for (key, value) in &params.0 {
            if let Some(spec) = self.param(key) {
                spec.validate(value)?;
            }
        }
        (self.build)(params)
    }
}

/// A named configuration of an observer (e.g. PyTorch's `default_weight_observer`).
#[derive(Debug, Clone, Serialize)]
pub struct Preset {
    pub name: &'static str,
    pub observer: &'static str,
    pub params: Params,
    pub doc: &'static str,
}

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

/// Build observer `id` with `params`.
pub fn build(id: &str, params: &Params) -> Result<Box<dyn Observer>> {
    find(id)?.build(params)
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
    fn defaults_satisfy_their_own_specs_and_presets_resolve() {
        for spec in observers() {
            for p in &spec.params {
                p.validate(&p.default)
                    .unwrap_or_else(|e| panic!("{}: {e}", spec.id));
            }
        }
        for preset in presets() {
            find(preset.observer).unwrap_or_else(|e| panic!("{}: {e}", preset.name));
        }
    }
}
