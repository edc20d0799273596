//! bitsandbytes checkpoints (`quant_method: bitsandbytes`, as transformers saves them).
//!
//! * 4-bit (`load_in_4bit`): a Linear's `M.weight` is the packed codes (uint8 `[N·K/2, 1]`, or
//!   the same bytes in another `quant_storage` dtype, e.g. bfloat16 `[N·K/4, 1]`) with
//!   `M.weight.absmax`, `M.weight.quant_map` and, double-quantized, `M.weight.nested_absmax` and
//!   `M.weight.nested_quant_map`; the rest of `QuantState` is JSON in the uint8 entry
//!   `M.weight.quant_state.bitsandbytes__nf4` (or `__fp4`): `quant_type`, `blocksize`, `dtype`
//!   (the dtype dequantization returns), `shape` (the logical `[N, K]`) and, nested,
//!   `nested_blocksize`, `nested_dtype`, `nested_offset` — a number there, not a tensor. Those
//!   bytes are read beside the configuration files ([`json_entries`]); the weight is decoded by
//!   `bnb.nf4` / `bnb.fp4`.
//! * 8-bit (`load_in_8bit`, LLM.int8): `M.weight` int8 `[N, K]` with `M.SCB` float32 `[N]` and
//!   `M.weight_format` (uint8 scalar, 0 = rows), decoded by `bnb.int8`.

use super::super::weights::{PartFrom, PartSource, Weight, WeightSource};
use super::super::{Catalog, Entry};
use super::gptq::{assemble, by_name, coded_weight, dtype_of, entry_problem, Coded};
use super::{Configs, Layout};
use crate::codec::Stored;
use crate::params::Params;
use crate::tensor::DType;
use serde_json::Value;
use std::collections::HashMap;

/// The suffix of a packed `QuantState` entry, before its quant type.
const QUANT_STATE: &str = ".quant_state.bitsandbytes__";

/// The largest packed `QuantState` read (they are about a hundred bytes).
const MAX_QUANT_STATE_BYTES: u64 = 1 << 16;

/// The packed `QuantState` entries: uint8 `….quant_state.bitsandbytes__nf4|fp4`.
pub fn json_entries(catalog: &Catalog) -> Vec<usize> {
    catalog
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| quant_state_of(e).is_some())
        .filter(|(_, e)| e.range.end.saturating_sub(e.range.start) <= MAX_QUANT_STATE_BYTES)
        .map(|(i, _)| i)
        .collect()
}

/// `(weight name, quant type)` of a packed `QuantState` entry.
fn quant_state_of(e: &Entry) -> Option<(&str, &str)> {
    let at = e.name.rfind(QUANT_STATE)?;
    let quant_type = &e.name[at + QUANT_STATE.len()..];
    (dtype_of(e) == Some(DType::U8) && matches!(quant_type, "nf4" | "fp4"))
        .then(|| (&e.name[..at], quant_type))
}

/// The weights of a bitsandbytes checkpoint.
pub fn weights(catalog: &Catalog, configs: &Configs, q: &Value) -> Layout {
    let flag = |key: &str| {
        q.get(key)
            .or_else(|| q.get(format!("_{key}").as_str()))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let names = by_name(catalog);
    let mut coded = Vec::new();
    for (i, e) in catalog.entries.iter().enumerate() {
        if let Some((weight, quant_type)) = quant_state_of(e) {
            coded.push(four_bit(catalog, configs, &names, weight, quant_type, i));
        } else if let Some(module) = e.name.strip_suffix(".SCB") {
            if let Some(c) = int8(catalog, &names, module, i) {
                coded.push(c);
            }
        }
    }
    let name = match (flag("load_in_4bit"), flag("load_in_8bit")) {
        (true, _) => "bitsandbytes 4-bit",
        (_, true) => "bitsandbytes int8",
        _ => "bitsandbytes",
    };
    Layout {
        name: Some(name.to_string()),
        weights: assemble(catalog, coded),
        warnings: Vec::new(),
        ..Layout::default()
    }
}

/// The parsed `QuantState` of a 4-bit weight.
struct QuantState {
    blocksize: i64,
    dtype: String,
    shape: Vec<usize>,
    /// `nested_offset`, when the statistics are double-quantized.
    nested_offset: Option<f32>,
}

impl QuantState {
    fn of(v: &Value, quant_type: &str, nested: bool) -> Result<QuantState, String> {
        let field = |key: &str| v.get(key).ok_or(format!("the quant_state has no `{key}`"));
        let stored_type = field("quant_type")?.as_str().unwrap_or("");
        if stored_type != quant_type {
            return Err(format!(
                "the quant_state says quant_type `{stored_type}`, its name `{quant_type}`"
            ));
        }
        let blocksize = field("blocksize")?
            .as_i64()
            .ok_or("the quant_state's `blocksize` is not an integer")?;
        let dtype = field("dtype")?
            .as_str()
            .ok_or("the quant_state's `dtype` is not a string")?
            .to_string();
        let shape = field("shape")?
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                    .collect::<Option<Vec<usize>>>()
            })
            .ok_or("the quant_state's `shape` is not a list of sizes")?;
        let nested_offset = match nested {
            false => None,
            true => {
                let blocks = field("nested_blocksize")?.as_i64();
                if blocks != Some(256) {
                    return Err(format!(
                        "nested_blocksize {} is not the 256 quantize_4bit uses",
                        field("nested_blocksize")?
                    ));
                }
                let nested_dtype = field("nested_dtype")?.as_str().unwrap_or("");
                if nested_dtype != "float32" {
                    return Err(format!("nested_dtype `{nested_dtype}` is not float32"));
                }
                // `torch.tensor(float(nested_offset))`: the JSON number rounded to float32.
                let offset = field("nested_offset")?
                    .as_f64()
                    .ok_or("the quant_state's `nested_offset` is not a number")?;
                Some(offset as f32)
            }
        };
        Ok(QuantState {
            blocksize,
            dtype,
            shape,
            nested_offset,
        })
    }
}

/// The 4-bit weight `weight` whose packed `QuantState` is entry `state`.
fn four_bit(
    catalog: &Catalog,
    configs: &Configs,
    names: &HashMap<&str, usize>,
    weight: &str,
    quant_type: &str,
    state: usize,
) -> Coded {
    let find = |suffix: &str| {
        let name = match suffix {
            "" => weight.to_string(),
            s => format!("{weight}.{s}"),
        };
        names.get(name.as_str()).copied().ok_or(name)
    };
    let codes = find("");
    let nested = find("nested_absmax").is_ok();
    let mut parts = Vec::new();
    let mut problem = None;
    let mut taken = vec![state];
    let required = ["", "absmax", "quant_map"];
    let optional = if nested {
        &["nested_absmax", "nested_quant_map"][..]
    } else {
        &[][..]
    };
    for (k, suffix) in required.iter().chain(optional).enumerate() {
        let part = if suffix.is_empty() { "weight" } else { suffix };
        match find(suffix) {
            Ok(i) => {
                taken.push(i);
                // The packed codes are read as bytes whatever their `quant_storage` dtype.
                let packed = suffix.is_empty() && dtype_of(&catalog.entries[i]) != Some(DType::U8);
                parts.push(PartSource {
                    part,
                    from: if packed {
                        PartFrom::EntryBytes(i)
                    } else {
                        PartFrom::Entry(i)
                    },
                });
            }
            Err(name) if k < required.len() || nested => {
                problem = problem.or(Some(format!("missing `{name}`")));
            }
            Err(_) => {}
        }
    }
    let state_name = &catalog.entries[state].name;
    let parsed = match configs.json_entries.get(state_name.as_str()) {
        None => Err(format!("the quant_state entry `{state_name}` was not read")),
        Some(Err(e)) => Err(e.clone()),
        Some(Ok(v)) => QuantState::of(v, quant_type, nested),
    };
    let packed_bytes = codes.as_ref().ok().map_or(0, |&i| {
        let e = &catalog.entries[i];
        e.range.end.saturating_sub(e.range.start) as usize
    });
    let (shape, blocksize, params) = match parsed {
        Ok(qs) => {
            if let Some(offset) = qs.nested_offset {
                parts.push(PartSource {
                    part: "nested_offset",
                    from: PartFrom::Value {
                        shape: vec![1],
                        data: Stored::F32(vec![offset]),
                    },
                });
            }
            let params = Params::new()
                .with("blocksize", qs.blocksize)
                .with("compress_statistics", nested)
                .with("dtype", qs.dtype.as_str());
            (qs.shape, usize::try_from(qs.blocksize).ok(), params)
        }
        Err(e) => {
            problem = problem.or(Some(e));
            (vec![packed_bytes * 2], None, Params::new())
        }
    };
    let problem = problem.or_else(|| entry_problem(catalog, &taken));
    let label = format!(
        "bitsandbytes {}{}{}",
        quant_type.to_uppercase(),
        blocksize.map_or(String::new(), |b| format!(" block {b}")),
        if nested { " double-quant" } else { "" }
    );
    let anchor = codes.unwrap_or(state);
    let stored_as = taken
        .iter()
        .map(|&i| catalog.entries[i].name.clone())
        .collect();
    let weight = coded_weight(
        catalog,
        Weight {
            name: weight.to_string(),
            shape,
            format: label,
            bits_per_weight: 0.0,
            block: blocksize,
            source: WeightSource::Coded {
                codec: format!("bnb.{quant_type}"),
                params,
                parts,
            },
            stored_as,
            problem,
        },
    );
    Coded {
        anchor,
        weight,
        taken,
    }
}

/// The LLM.int8 weight of module `module`, whose `SCB` is entry `scb` (`None` when there is no
/// int8 `module.weight` beside it).
fn int8(
    catalog: &Catalog,
    names: &HashMap<&str, usize>,
    module: &str,
    scb: usize,
) -> Option<Coded> {
    let weight_name = format!("{module}.weight");
    let codes = *names.get(weight_name.as_str())?;
    let entry = &catalog.entries[codes];
    if dtype_of(entry) != Some(DType::I8) {
        return None;
    }
    let format = names
        .get(format!("{module}.weight_format").as_str())
        .copied();
    let taken: Vec<usize> = [Some(codes), Some(scb), format]
        .into_iter()
        .flatten()
        .collect();
    let mut parts = vec![
        PartSource {
            part: "weight",
            from: PartFrom::Entry(codes),
        },
        PartSource {
            part: "SCB",
            from: PartFrom::Entry(scb),
        },
    ];
    if let Some(i) = format {
        parts.push(PartSource {
            part: "weight_format",
            from: PartFrom::Entry(i),
        });
    }
    let rows = entry.shape.first().copied().unwrap_or(0);
    let scb_entry = &catalog.entries[scb];
    let problem = (scb_entry.elements != rows)
        .then(|| {
            format!(
                "SCB {:?} disagrees with weight {:?}: one scale per row",
                scb_entry.shape, entry.shape
            )
        })
        .or_else(|| entry_problem(catalog, &taken));
    let weight = coded_weight(
        catalog,
        Weight {
            name: weight_name,
            shape: entry.shape.clone(),
            format: "bitsandbytes LLM.int8 (rows)".to_string(),
            bits_per_weight: 0.0,
            block: entry.shape.last().copied(),
            source: WeightSource::Coded {
                codec: "bnb.int8".to_string(),
                params: Params::new(),
                parts,
            },
            stored_as: taken
                .iter()
                .map(|&i| catalog.entries[i].name.clone())
                .collect(),
            problem,
        },
    );
    Some(Coded {
        anchor: codes,
        weight,
        taken,
    })
}

#[cfg(test)]
mod tests {
    use super::super::gptq::tests::{catalog, with_config};
    use super::super::weights as layout_of;
    use super::*;
    use serde_json::json;

    const BLOB: &str = "q.weight.quant_state.bitsandbytes__nf4";

    fn four_bit(quant_map: bool, nested: bool) -> Catalog {
        let mut e: Vec<(&str, DType, &[usize])> = vec![
            ("q.bias", DType::BF16, &[384]),
            ("q.weight", DType::U8, &[73728, 1]),
            (
                "q.weight.absmax",
                if nested { DType::U8 } else { DType::F32 },
                &[2304],
            ),
            (BLOB, DType::U8, &[80]),
        ];
        if quant_map {
            e.push(("q.weight.quant_map", DType::F32, &[16]));
        }
        if nested {
            e.push(("q.weight.nested_absmax", DType::F32, &[9]));
            e.push(("q.weight.nested_quant_map", DType::F32, &[256]));
        }
        catalog(&e)
    }

    fn configs(blob: Option<Value>) -> Configs {
        let mut c = with_config(json!({"quant_method": "bitsandbytes", "_load_in_4bit": true}));
        if let Some(b) = blob {
            c.take_entry(BLOB, Ok(b.to_string().into_bytes()));
        }
        c
    }

    fn state(nested: bool) -> Value {
        let mut v =
            json!({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [384, 384]});
        if nested {
            v["nested_blocksize"] = json!(256);
            v["nested_dtype"] = json!("float32");
            v["nested_offset"] = json!(0.24743440747261047);
        }
        v
    }

    #[test]
    fn a_4bit_weight_takes_its_quant_state() {
        let c = four_bit(true, true);
        assert_eq!(json_entries(&c), vec![3]);
        let l = layout_of(&c, &configs(Some(state(true))));
        assert_eq!(l.name.as_deref(), Some("bitsandbytes 4-bit"));
        let names: Vec<&str> = l.weights.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["q.bias", "q.weight"]);
        let w = &l.weights[1];
        assert_eq!(w.shape, vec![384, 384]);
        assert_eq!(w.format, "bitsandbytes NF4 block 64 double-quant");
        assert_eq!((w.block, w.problem.as_deref()), (Some(64), None));
        assert_eq!(w.stored_as.len(), 6);
        let WeightSource::Coded {
            codec,
            params,
            parts,
        } = &w.source
        else {
            panic!()
        };
        assert_eq!(codec, "bnb.nf4");
        assert_eq!(params.get("dtype"), Some(&json!("bfloat16")));
        let offset = parts.iter().find(|p| p.part == "nested_offset").unwrap();
        assert_eq!(
            offset.from,
            PartFrom::Value {
                shape: vec![1],
                data: Stored::F32(vec![0.24743440747261047f64 as f32])
            }
        );
        // 4 bits, 8-bit absmax per 64, float32 per 256 of those and 256 + 16 map entries, 4 offset bytes.
        let bytes = 73728 + 2304 + 16 * 4 + 9 * 4 + 256 * 4 + 4;
        assert_eq!(w.bits_per_weight, bytes as f64 * 8.0 / 147456.0);
    }

    #[test]
    fn a_4bit_weight_without_its_pieces_says_which() {
        let l = layout_of(&four_bit(false, false), &configs(Some(state(false))));
        assert_eq!(
            l.weights[1].problem.as_deref(),
            Some("missing `q.weight.quant_map`")
        );
        let l = layout_of(&four_bit(true, false), &configs(None));
        assert_eq!(
            l.weights[1].problem.as_deref(),
            Some("the quant_state entry `q.weight.quant_state.bitsandbytes__nf4` was not read")
        );
        assert_eq!(l.weights[1].shape, vec![147456]);
        let mut broken = configs(None);
        broken.take_entry(BLOB, Ok(b"{not json".to_vec()));
        let l = layout_of(&four_bit(true, false), &broken);
        let p = l.weights[1].problem.clone().unwrap();
        assert!(p.contains("is not valid JSON"), "{p}");
        let mut fp4 = state(false);
        fp4["quant_type"] = json!("fp4");
        let l = layout_of(&four_bit(true, false), &configs(Some(fp4)));
        assert_eq!(
            l.weights[1].problem.as_deref(),
            Some("the quant_state says quant_type `fp4`, its name `nf4`")
        );
        let mut no_offset = state(true);
        no_offset.as_object_mut().unwrap().remove("nested_offset");
        let l = layout_of(&four_bit(true, true), &configs(Some(no_offset)));
        assert_eq!(
            l.weights[1].problem.as_deref(),
            Some("the quant_state has no `nested_offset`")
        );
        assert!(l.weights[0].problem.is_none());
    }

    #[test]
    fn llm_int8_takes_scb_and_weight_format() {
        let c = catalog(&[
            ("m.SCB", DType::F32, &[4]),
            ("m.weight", DType::I8, &[4, 8]),
            ("m.weight_format", DType::U8, &[]),
            ("n.SCB", DType::F32, &[3]),
            ("n.weight", DType::I8, &[4, 8]),
        ]);
        let q = json!({"quant_method": "bitsandbytes", "_load_in_8bit": true});
        let l = layout_of(&c, &with_config(q));
        assert_eq!(l.name.as_deref(), Some("bitsandbytes int8"));
        let names: Vec<&str> = l.weights.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["m.weight", "n.weight"]);
        assert_eq!(
            l.weights[0].stored_as,
            ["m.weight", "m.SCB", "m.weight_format"]
        );
        assert_eq!(
            l.weights[0].bits_per_weight,
            (32 + 16 + 1) as f64 * 8.0 / 32.0
        );
        assert_eq!(
            l.weights[1].problem.as_deref(),
            Some("SCB [3] disagrees with weight [4, 8]: one scale per row")
        );
    }
}
