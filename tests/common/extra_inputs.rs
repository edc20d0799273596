//! Inputs a golden case names beside its parameters: llm-compressor's imatrix cases give the
//! importance (E[x²] per input channel) as `extra_inputs.importance`, a `.npy` path relative to
//! the family folder, which the observer takes as its `importance` vector parameter. The case's
//! parameters are otherwise passed as recorded: the engine itself accepts the frameworks'
//! nested forms (`quantscope::params::library`).

use quantscope::params::Params;
use quantscope::tensor::read_tensors;
use serde_json::Value;
use std::path::Path;

/// `params` of the case `raw` (in folder `dir`) with its extra inputs added as parameters.
pub fn with_extra_inputs(dir: &Path, raw: &Value, mut params: Params) -> Params {
    if let Some(relative) = raw
        .get("extra_inputs")
        .and_then(|e| e.get("importance"))
        .and_then(Value::as_str)
    {
        let path = dir.join(relative);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut tensors =
            read_tensors(&bytes, relative).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let values: Vec<f64> = tensors
            .remove(0)
            .tensor
            .data
            .iter()
            .map(|&v| v as f64)
            .collect();
        params.0.insert("importance".into(), Value::from(values));
    }
    params
}
