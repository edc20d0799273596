//! The one mapping from a golden case's library-shaped parameters to quantscope's flat
//! parameters (what the CLI, the npm package and the page accept).
//!
//! * llm-compressor: `observer_kwargs` entries become top-level parameters; `block_structure`
//!   `[R, C]` becomes the library's string spelling `"RxC"`; the imatrix importance named in
//!   `extra_inputs.importance` (a `.npy` of E[x²] per input channel) becomes the `importance`
//!   vector.
//! * torchao: `granularity: {"type": T, …}` becomes `granularity: T` plus its argument
//!   (`axis`, `group_size`, `dim`, or `block_size` as `"AxB"`); `zero_point_domain: null`
//!   (Python `None`, which the library refuses) becomes the choice `"None"` (a JSON null means
//!   "the default" to quantscope).
//! * Every other family's parameters are already flat.

use super::Case;
use quantscope::params::Params;
use quantscope::tensor::read_tensors;
use serde_json::{Map, Value};

/// `[a, b, …]` → `"axbx…"`.
fn shape_text(v: &Value) -> Option<Value> {
    let parts: Option<Vec<String>> = v
        .as_array()?
        .iter()
        .map(|x| x.as_i64().map(|i| i.to_string()))
        .collect();
    Some(Value::from(parts?.join("x")))
}

/// The values of a `.npy` file next to the case's inputs.
fn vector_from_npy(case: &Case, relative: &str) -> Result<Value, String> {
    let dir = case
        .batches
        .first()
        .and_then(|p| p.parent())
        .and_then(|p| p.parent())
        .ok_or("case has no inputs folder")?;
    let path = dir.join(relative);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut tensors = read_tensors(&bytes, relative).map_err(|e| e.to_string())?;
    let values: Vec<f64> = tensors
        .remove(0)
        .tensor
        .data
        .iter()
        .map(|&v| v as f64)
        .collect();
    Ok(Value::from(values))
}

/// The flat parameters of `case` (see the module documentation).
pub fn flat_params(case: &Case) -> Result<Params, String> {
    let family = case.observer.split('.').next().unwrap_or_default();
    let mut out = Map::new();
    for (key, value) in &case.params.0 {
        match (family, key.as_str()) {
            ("llmcompressor", "observer_kwargs") => {
                for (k, v) in value.as_object().into_iter().flatten() {
                    out.insert(k.clone(), v.clone());
                }
            }
            ("llmcompressor", "block_structure") if value.is_array() => {
                out.insert(key.clone(), shape_text(value).ok_or("bad block_structure")?);
            }
            ("torchao", "granularity") => {
                let g = value.as_object().ok_or("granularity is not an object")?;
                let kind = g.get("type").cloned().ok_or("granularity without type")?;
                out.insert("granularity".into(), kind);
                for (k, v) in g.iter().filter(|(k, _)| *k != "type") {
                    let v = if k == "block_size" {
                        shape_text(v).ok_or("bad block_size")?
                    } else {
                        v.clone()
                    };
                    out.insert(k.clone(), v);
                }
            }
            ("torchao", "zero_point_domain") if value.is_null() => {
                out.insert(key.clone(), Value::from("None"));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if let Some(importance) = case
        .raw
        .get("extra_inputs")
        .and_then(|e| e.get("importance"))
        .and_then(Value::as_str)
    {
        out.insert("importance".into(), vector_from_npy(case, importance)?);
    }
    Ok(Params(out))
}

/// `case` with flat parameters.
pub fn flattened(case: &Case) -> Result<Case, String> {
    Ok(Case {
        params: flat_params(case)?,
        ..case.clone()
    })
}
