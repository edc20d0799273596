//! compressed-tensors checkpoints (`quant_method: compressed-tensors`): each module with
//! quantized weight tensors (`<module>.weight_packed`, `.weight_scale`, …) gets the scheme of
//! the config group whose `targets` match it (an exact module name first, then a `re:`
//! pattern, then a class name such as `Linear`, which any module with quantized tensors is
//! taken to match: a checkpoint does not say its modules' classes), unless `ignore` names it.
//! The group's `format` (or the configuration's global `format`) picks the codec:
//!
//! | format | entries | codec |
//! |---|---|---|
//! | `pack-quantized` | `weight_packed`, `weight_scale`, `weight_shape`, `weight_zero_point`, `weight_g_idx` | `ct.pack_quantized` |
//! | `int-quantized`, `naive-quantized` (int) | `weight` (int8), `weight_scale`, `weight_zero_point` | `ct.int_quantized` |
//! | `float-quantized`, `naive-quantized` (float) | `weight` (FP8), `weight_scale` | `ct.float_quantized` |
//! | `nvfp4-pack-quantized` | `weight_packed`, `weight_scale`, `weight_global_scale` | `ct.nvfp4` |
//! | `mxfp4-pack-quantized` | `weight_packed`, `weight_scale` | `ct.mxfp4` |
//!
//! The logical shape is the `weight` entry's, or for packed weights `[N, K]` from the packed
//! width and the scale grid (`K = groups · G` for groups, else `⌈K·b/32⌉ · 32/b`); the codec
//! checks it against the stored `weight_shape` when it decodes. A weight stored unquantized
//! (`dense`, a `frozen` float weight) stays plain; an unknown format is a warning naming it.

use super::coded::{assemble, broken, scale_dtype, Coded, Names};
use super::pattern::Pattern;
use super::Layout;
use crate::checkpoint::Catalog;
use crate::params::Params;
use crate::tensor::DType;
use serde_json::Value;
use std::collections::BTreeSet;

/// The formats read, each with its codec.
const FORMATS: [(&str, &str); 6] = [
    ("pack-quantized", "ct.pack_quantized"),
    ("int-quantized", "ct.int_quantized"),
    ("naive-quantized", "ct.int_quantized"),
    ("float-quantized", "ct.float_quantized"),
    ("nvfp4-pack-quantized", "ct.nvfp4"),
    ("mxfp4-pack-quantized", "ct.mxfp4"),
];

/// How strongly a target matches a module: exact name, pattern, class name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Match {
    Class,
    Pattern,
    Name,
}

/// How `target` matches module `name` (`None`: not at all); an unsupported pattern is
/// reported in `warnings`.
fn target_match(target: &str, name: &str, warnings: &mut BTreeSet<String>) -> Option<Match> {
    if let Some(re) = target.strip_prefix("re:") {
        return match Pattern::new(re).and_then(|p| p.matches_start(name)) {
            Some(true) => Some(Match::Pattern),
            Some(false) => None,
            None => {
                warnings.insert(format!(
                    "compressed-tensors pattern `{target}` uses regular-expression syntax quantscope does not match; it was not applied"
                ));
                None
            }
        };
    }
    if target == name {
        return Some(Match::Name);
    }
    // A class name (`Linear`, `Embedding`, `MoE`…): not a dotted module path.
    let class = target
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase())
        && !target.contains('.');
    class.then_some(Match::Class)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// One config group: its name, weight scheme and format.
struct Group<'a> {
    name: &'a str,
    targets: Vec<String>,
    weights: Option<&'a Value>,
    format: Option<&'a str>,
}

/// The scheme's integer field `key`, if any.
fn int(weights: &Value, key: &str) -> Option<i64> {
    weights.get(key).and_then(Value::as_i64)
}

/// The layout of a compressed-tensors checkpoint.
pub fn layout(catalog: &Catalog, q: &Value) -> Layout {
    let names = Names::new(catalog);
    let mut warnings = BTreeSet::new();
    let global_format = q.get("format").and_then(Value::as_str);
    let ignore = strings(q.get("ignore"));
    let groups: Vec<Group> = q
        .get("config_groups")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(name, g)| Group {
                    name,
                    targets: strings(g.get("targets")),
                    weights: g.get("weights").filter(|w| w.is_object()),
                    format: g.get("format").and_then(Value::as_str),
                })
                .collect()
        })
        .unwrap_or_default();
    // Modules with quantized weight tensors: a `weight_scale` (every format has one) or a
    // `weight_packed`.
    let mut modules: Vec<String> = names
        .with_suffix(".weight_scale")
        .into_iter()
        .chain(names.with_suffix(".weight_packed"))
        .map(|(m, _)| m)
        .collect();
    modules.sort();
    modules.dedup();
    let mut weights = Vec::new();
    for module in modules {
        let ignored = ignore.iter().any(|t| {
            !matches!(
                target_match(t, &module, &mut warnings),
                None | Some(Match::Class)
            )
        });
        if ignored {
            continue;
        }
        let best = groups
            .iter()
            .filter(|g| g.weights.is_some())
            .filter_map(|g| {
                g.targets
                    .iter()
                    .filter_map(|t| target_match(t, &module, &mut warnings))
                    .max()
                    .map(|m| (m, g))
            })
            .max_by_key(|(m, _)| *m);
        let Some((_, group)) = best else {
            warnings.insert(format!(
                "compressed-tensors: no config group targets `{module}`; its tensors are listed as stored"
            ));
            continue;
        };
        let format = group.format.or(global_format).unwrap_or("");
        if format == "dense" {
            continue;
        }
        let Some(&(_, codec)) = FORMATS.iter().find(|(f, _)| *f == format) else {
            warnings.insert(format!(
                "compressed-tensors format `{format}` (config group `{}`) is not one quantscope reads; its tensors are listed as stored",
                group.name
            ));
            continue;
        };
        let scheme = group.weights.unwrap_or(&Value::Null);
        if let Some(w) = module_weight(&names, &module, format, codec, scheme) {
            weights.push(w);
        }
    }
    let mut used: Vec<&str> = groups
        .iter()
        .filter_map(|g| g.format.or(global_format))
        .collect();
    used.sort();
    used.dedup();
    let name = format!("compressed-tensors {}", used.join(", "));
    assemble(catalog, name, weights, warnings.into_iter().collect())
}

/// The parameters every CT codec of a scheme shares: strategy and its sizes.
fn strategy_params(p: Params, scheme: &Value) -> (Params, Option<usize>) {
    let strategy = scheme
        .get("strategy")
        .and_then(Value::as_str)
        .unwrap_or("tensor");
    let mut p = p.with("strategy", strategy);
    let mut block = None;
    if let Some(g) = int(scheme, "group_size") {
        p = p.with("group_size", g);
        if strategy == "group" {
            block = Some(g as usize);
        }
    }
    if let Some([r, c]) = scheme
        .get("block_structure")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_i64).collect::<Vec<_>>())
        .as_deref()
    {
        p = p.with("block_rows", *r).with("block_cols", *c);
        if strategy == "block" {
            block = Some((*r * *c) as usize);
        }
    }
    (p, block)
}

/// The weight of `module` in `format`, or `None` when it is stored unquantized.
fn module_weight(
    names: &Names,
    module: &str,
    format: &str,
    codec: &'static str,
    scheme: &Value,
) -> Option<crate::checkpoint::weights::Weight> {
    let entry = |suffix: &str| names.get(&format!("{module}.{suffix}"));
    let name = format!("{module}.weight");
    let label = format!("compressed-tensors {format}");
    let present: Vec<usize> = [
        "weight",
        "weight_packed",
        "weight_scale",
        "weight_zero_point",
        "weight_shape",
        "weight_global_scale",
        "weight_g_idx",
    ]
    .iter()
    .filter_map(|s| entry(s))
    .collect();
    let missing = |what: &str, shape: Vec<usize>| {
        Some(broken(
            names,
            name.clone(),
            shape,
            &label,
            &present,
            format!("missing entry `{module}.{what}` ({format})"),
        ))
    };
    let symmetric = scheme
        .get("symmetric")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let bits = int(scheme, "num_bits").unwrap_or(if codec == "ct.pack_quantized" { 4 } else { 8 });
    let Some(scale) = entry("weight_scale") else {
        let shape = entry("weight").map_or_else(Vec::new, |i| names.shape(i).to_vec());
        return missing("weight_scale", shape);
    };
    let dtype = scale_dtype(names.dtype(scale));
    let (params, block) = strategy_params(Params::new(), scheme);
    let mut parts = Vec::new();
    let (shape, params) = match codec {
        "ct.pack_quantized" => {
            let Some(packed) = entry("weight_packed") else {
                return missing("weight_packed", Vec::new());
            };
            let ps = names.shape(packed);
            let (rows, words) = match ps {
                [lead @ .., w] => (lead.to_vec(), *w),
                [] => (Vec::new(), 0),
            };
            let b = bits.clamp(1, 8) as usize;
            let k_max = words * 32 / b;
            let k_min = if words == 0 {
                0
            } else {
                (words - 1) * 32 / b + 1
            };
            let strategy = scheme.get("strategy").and_then(Value::as_str);
            let groups = names.shape(scale).last().copied().unwrap_or(0);
            let k = match (strategy, int(scheme, "group_size")) {
                (Some("group"), Some(g)) if g > 0 => {
                    let full = groups * g as usize;
                    if (k_min..=k_max).contains(&full) {
                        full
                    } else {
                        k_max.min(full.max(k_min))
                    }
                }
                _ => k_max,
            };
            let mut shape = rows;
            shape.push(k);
            parts.push(("weight_packed", packed));
            parts.push(("weight_scale", scale));
            if let Some(i) = entry("weight_shape") {
                parts.push(("weight_shape", i));
            }
            if !symmetric {
                match entry("weight_zero_point") {
                    Some(i) => parts.push(("weight_zero_point", i)),
                    None => return missing("weight_zero_point", shape),
                }
            }
            if let Some(i) = entry("weight_g_idx") {
                parts.push(("weight_g_idx", i));
            }
            let p = Params(
                params
                    .0
                    .into_iter()
                    .filter(|(k, _)| k != "block_rows" && k != "block_cols")
                    .collect(),
            )
            .with("num_bits", bits)
            .with("symmetric", symmetric)
            .with("dtype", dtype.unwrap_or("bfloat16"));
            (shape, p)
        }
        "ct.int_quantized" | "ct.float_quantized" => {
            let stored =
                |d: Option<DType>| matches!(d, Some(DType::I8 | DType::U8 | DType::F8E4M3));
            let Some(w) = names.pick(&format!("{module}.weight"), stored) else {
                return missing("weight", Vec::new());
            };
            let codec_for = match names.dtype(w) {
                // Stored unquantized (a frozen or dense weight): a plain weight.
                Some(DType::BF16 | DType::F16 | DType::F32 | DType::F64) => return None,
                Some(DType::F8E4M3) => "ct.float_quantized",
                _ => "ct.int_quantized",
            };
            parts.push(("weight", w));
            parts.push(("weight_scale", scale));
            let mut p = params.with("dtype", dtype.unwrap_or("bfloat16"));
            if codec_for == "ct.int_quantized" {
                p = p.with("num_bits", bits).with("symmetric", symmetric);
                if !symmetric {
                    match entry("weight_zero_point") {
                        Some(i) => parts.push(("weight_zero_point", i)),
                        None => return missing("weight_zero_point", names.shape(w).to_vec()),
                    }
                }
            } else {
                // The float codec has no symmetric/num_bits parameters.
                p = Params(
                    p.0.into_iter()
                        .filter(|(k, _)| k != "num_bits" && k != "symmetric")
                        .collect(),
                );
            }
            return Some(
                Coded {
                    name,
                    shape: names.shape(w).to_vec(),
                    codec: if codec_for == "ct.float_quantized" {
                        "ct.float_quantized"
                    } else {
                        "ct.int_quantized"
                    },
                    params: p,
                    parts,
                    block,
                    problem: None,
                }
                .weight(names.catalog),
            );
        }
        _ => {
            // nvfp4 / mxfp4
            let Some(packed) = entry("weight_packed") else {
                return missing("weight_packed", Vec::new());
            };
            let mut shape = names.shape(packed).to_vec();
            if let Some(last) = shape.last_mut() {
                *last *= 2;
            }
            parts.push(("weight_packed", packed));
            parts.push(("weight_scale", scale));
            if codec == "ct.nvfp4" {
                match entry("weight_global_scale") {
                    Some(i) => parts.push(("weight_global_scale", i)),
                    None => return missing("weight_global_scale", shape),
                }
            }
            let g = int(scheme, "group_size").unwrap_or(if codec == "ct.nvfp4" { 16 } else { 32 });
            (shape, Params::new().with("group_size", g))
        }
    };
    let block = if codec == "ct.nvfp4" || codec == "ct.mxfp4" {
        params
            .get("group_size")
            .and_then(Value::as_u64)
            .map(|g| g as usize)
    } else {
        block
    };
    Some(
        Coded {
            name,
            shape,
            codec,
            params,
            parts,
            block,
            problem: None,
        }
        .weight(names.catalog),
    )
}
