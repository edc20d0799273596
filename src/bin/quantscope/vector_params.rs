//! Vector parameters (kind `vector`, e.g. `llmcompressor.imatrix_mse`'s `importance`) given on
//! the command line as a tensor file — `{"importance": "imatrix.npy"}` or `"stats.npz:member"`
//! — are read from it: the tensor's values in C order.

use super::inputs::read_tensor;
use quantscope::error::{Error, Result};
use quantscope::params::{ParamKind, Params};
use quantscope::registry;
use serde_json::Value;

/// `params` with every vector parameter of observer `id` that names a file replaced by the
/// file's values (an unknown observer is left to the driver to refuse).
pub fn read_vector_params(id: &str, mut params: Params) -> Result<Params> {
    let Ok(spec) = registry::find(id) else {
        return Ok(params);
    };
    for p in spec.params.iter().filter(|p| p.kind == ParamKind::Vector) {
        let Some(Value::String(path)) = params.0.get(p.name) else {
            continue;
        };
        let tensor = read_tensor(path)?;
        let bad = tensor.data.iter().filter(|v| !v.is_finite()).count();
        if bad > 0 {
            return Err(Error::param(
                p.name,
                format!(
                    "{path} holds {bad} NaN/Inf values; `{}` takes finite numbers",
                    p.name
                ),
            ));
        }
        let values: Vec<f64> = tensor.data.iter().map(|&v| v as f64).collect();
        params.0.insert(p.name.to_string(), Value::from(values));
    }
    Ok(params)
}
