//! Parameters in the shape a framework's own call takes them, made flat.
//!
//! quantscope declares every parameter of an observer at the top level of one JSON object (see
//! [`super::declare`]). Some frameworks nest part of their call; their users copy those calls,
//! and the golden cases record them, so every path (CLI, npm package, page, notebooks) accepts
//! both forms: [`flatten`] runs before a parameter set is resolved.
//!
//! * ONNX Runtime — `create_calibrator(calibrate_method=…, extra_options={…})`: the
//!   `extra_options` entries are the calibrater's parameters; `calibrate_method` must name the
//!   observer being run (`"MinMax"` for `ort.MinMaxCalibrater`).
//! * llm-compressor — `QuantizationArgs(observer_kwargs={…}, block_structure=[R, C])`: the
//!   `observer_kwargs` entries are top-level parameters; `block_structure` may be the list `[R, C]`
//!   as well as the library's string `"RxC"`.
//! * torchao — `granularity=PerGroup(32)`, written `{"type": "PerGroup", "group_size": 32}`:
//!   the type becomes `granularity` and its fields become parameters (`axis`, `group_size`,
//!   `dim`, `block_size` as `"AxB"`); `zero_point_domain: null` is Python's `None` (a choice the
//!   library refuses, reproduced as such), not "the default" as `null` means elsewhere.
//! * AMD Quark — a `QTensorConfig` record may carry `eps`, Quark's fixed
//!   `torch.finfo(torch.float32).eps` of `UniformScalingObserver` (not a configuration field):
//!   that value is accepted and dropped, any other is refused; `percentile_set_via` (how a
//!   recorded `percentile` attribute was set) is a note and is dropped.
//!
//! A key given both nested and at the top level with different values is refused.

use super::Params;
use crate::error::{Error, Result};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// `params` of observer `observer_id` with the framework's nested forms made flat (see the
/// module documentation); a parameter set that is already flat is borrowed back unchanged (the
/// common case, on every slider move).
pub fn flatten<'a>(observer_id: &str, params: &'a Params) -> Result<Cow<'a, Params>> {
    let family = observer_id.split('.').next().unwrap_or_default();
    if !params
        .0
        .iter()
        .any(|(key, value)| is_nested(family, key, value))
    {
        return Ok(Cow::Borrowed(params));
    }
    let mut flat = Flat::default();
    for (key, value) in &params.0 {
        match (family, key.as_str(), value) {
            ("ort", "calibrate_method", method) => check_calibrate_method(observer_id, method)?,
            ("ort", "extra_options", options) => flat.extend(key, options)?,
            ("llmcompressor", "observer_kwargs", kwargs) => flat.extend(key, kwargs)?,
            ("llmcompressor", "block_structure", shape @ Value::Array(_)) => {
                flat.insert(key, shape_text(key, shape)?)?
            }
            ("torchao", "granularity", Value::Object(fields)) => flat.extend_granularity(fields)?,
            ("torchao", "zero_point_domain", Value::Null) => flat.insert(key, "None".into())?,
            ("quark", "eps", eps) => check_quark_eps(eps)?,
            ("quark", "percentile_set_via", _) => {}
            _ => flat.insert(key, value.clone())?,
        }
    }
    Ok(Cow::Owned(Params(flat.0)))
}

/// Whether `key: value` of a `family` observer's parameters is one of the forms [`flatten`]
/// rewrites or drops.
fn is_nested(family: &str, key: &str, value: &Value) -> bool {
    matches!(
        (family, key, value),
        ("ort", "calibrate_method" | "extra_options", _)
            | ("llmcompressor", "observer_kwargs", _)
            | ("llmcompressor", "block_structure", Value::Array(_))
            | ("torchao", "granularity", Value::Object(_))
            | ("torchao", "zero_point_domain", Value::Null)
            | ("quark", "eps" | "percentile_set_via", _)
    )
}

/// The flat map being built; a key may be set twice only to the same value.
#[derive(Default)]
struct Flat(Map<String, Value>);

impl Flat {
    fn insert(&mut self, key: &str, value: Value) -> Result<()> {
        match self.0.get(key) {
            Some(old) if !old.is_null() && !value.is_null() && *old != value => Err(Error::param(
                key,
                format!("`{key}` is given twice, as {old} and as {value}"),
            )),
            Some(old) if value.is_null() && !old.is_null() => Ok(()),
            _ => {
                self.0.insert(key.to_string(), value);
                Ok(())
            }
        }
    }

    /// Every entry of the object `options` (the value of `container`) at the top level.
    fn extend(&mut self, container: &str, options: &Value) -> Result<()> {
        match options {
            Value::Null => Ok(()),
            Value::Object(entries) => entries
                .iter()
                .try_for_each(|(k, v)| self.insert(k, v.clone())),
            other => Err(Error::param(
                container,
                format!("`{container}` must be an object of keyword arguments, got {other}"),
            )),
        }
    }

    /// torchao's granularity object: `type` → `granularity`, its fields beside it.
    fn extend_granularity(&mut self, fields: &Map<String, Value>) -> Result<()> {
        let kind = fields.get("type").cloned().ok_or_else(|| {
            Error::param(
                "granularity",
                "a granularity object needs its `type` (PerTensor, PerAxis, PerGroup, …)",
            )
        })?;
        self.insert("granularity", kind)?;
        for (key, value) in fields.iter().filter(|(k, _)| *k != "type") {
            let value = match key.as_str() {
                "block_size" => shape_text(key, value)?,
                _ => value.clone(),
            };
            self.insert(key, value)?;
        }
        Ok(())
    }
}

/// A shape `[a, b, …]` in the string spelling `"axbx…"` (a string passes through).
fn shape_text(key: &str, shape: &Value) -> Result<Value> {
    if shape.is_string() {
        return Ok(shape.clone());
    }
    let parts: Option<Vec<String>> = shape.as_array().and_then(|items| {
        items
            .iter()
            .map(|x| x.as_u64().map(|n| n.to_string()))
            .collect()
    });
    match parts {
        Some(parts) if !parts.is_empty() => Ok(Value::from(parts.join("x"))),
        _ => Err(Error::param(
            key,
            format!(
                "`{key}` must be a list of non-negative integers such as [32, 64], got {shape}"
            ),
        )),
    }
}

/// ONNX Runtime's `calibrate_method` must be the method of observer `observer_id`.
fn check_calibrate_method(observer_id: &str, method: &Value) -> Result<()> {
    let named = method.as_str().map(|m| format!("ort.{m}Calibrater"));
    match named {
        Some(id) if id == observer_id => Ok(()),
        _ => Err(Error::param(
            "calibrate_method",
            format!(
                "calibrate_method {method} does not select `{observer_id}` (its method is \"{}\")",
                method_of(observer_id)
            ),
        )),
    }
}

/// `"MinMax"` for `ort.MinMaxCalibrater`.
fn method_of(observer_id: &str) -> &str {
    observer_id
        .strip_prefix("ort.")
        .and_then(|m| m.strip_suffix("Calibrater"))
        .unwrap_or(observer_id)
}

/// Quark's observers use `torch.finfo(torch.float32).eps` and cannot be given another `eps`.
fn check_quark_eps(eps: &Value) -> Result<()> {
    match eps.as_f64() {
        None if eps.is_null() => Ok(()),
        Some(v) if v == f32::EPSILON as f64 => Ok(()),
        _ => Err(Error::param(
            "eps",
            format!(
                "Quark's observers use the fixed eps = torch.finfo(torch.float32).eps = {:e}; \
                 got {eps}",
                f32::EPSILON
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn flat(id: &str, v: Value) -> Result<Value> {
        flatten(id, &Params::from_value(v).unwrap()).map(|p| Value::Object(p.into_owned().0))
    }

    #[test]
    fn onnx_runtime_extra_options_become_parameters() {
        let call = json!({"calibrate_method": "Percentile", "extra_options": {"percentile": 99.9},
                          "collect_mode": "per_batch"});
        assert_eq!(
            flat("ort.PercentileCalibrater", call.clone()).unwrap(),
            json!({"percentile": 99.9, "collect_mode": "per_batch"})
        );
        let wrong = flat("ort.MinMaxCalibrater", call).unwrap_err().to_string();
        assert!(
            wrong.contains("\"Percentile\"") && wrong.contains("\"MinMax\""),
            "{wrong}"
        );
        let twice = json!({"percentile": 99.0, "extra_options": {"percentile": 99.9}});
        assert!(flat("ort.PercentileCalibrater", twice)
            .unwrap_err()
            .to_string()
            .contains("given twice"));
        assert!(flat("ort.MinMaxCalibrater", json!({"extra_options": 3})).is_err());
    }

    #[test]
    fn llm_compressor_observer_kwargs_and_block_lists() {
        let args = json!({"strategy": "block", "block_structure": [32, 64],
                          "observer_kwargs": {"maxshrink": 0.5, "grid": 50}});
        assert_eq!(
            flat("llmcompressor.mse", args).unwrap(),
            json!({"strategy": "block", "block_structure": "32x64", "maxshrink": 0.5, "grid": 50})
        );
        assert!(flat("llmcompressor.mse", json!({"block_structure": [32, -1]})).is_err());
    }

    #[test]
    fn torchao_granularity_objects_and_python_none() {
        let args = json!({"granularity": {"type": "PerBlock", "block_size": [32, 64]},
                          "zero_point_domain": null});
        assert_eq!(
            flat("torchao.AffineQuantizedMinMaxObserver", args).unwrap(),
            json!({"granularity": "PerBlock", "block_size": "32x64", "zero_point_domain": "None"})
        );
        let missing = json!({"granularity": {"group_size": 32}});
        assert!(flat("torchao.AffineQuantizedMinMaxObserver", missing).is_err());
        // Elsewhere null keeps its meaning ("not given").
        assert_eq!(
            flat("torch.MinMaxObserver", json!({"quant_min": null})).unwrap(),
            json!({"quant_min": null})
        );
    }

    #[test]
    fn quark_fixed_eps_and_notes() {
        let record = json!({"eps": f32::EPSILON as f64, "percentile_set_via": "default",
                            "percentile": 99.9});
        assert_eq!(
            flat("quark.PerTensorPercentileObserver", record).unwrap(),
            json!({"percentile": 99.9})
        );
        assert!(flat("quark.PerTensorMinMaxObserver", json!({"eps": 1e-5})).is_err());
    }

    #[test]
    fn flat_parameters_pass_through() {
        let p = json!({"dtype": "qint8", "bins": 256});
        assert_eq!(flat("torch.HistogramObserver", p.clone()).unwrap(), p);
    }
}
