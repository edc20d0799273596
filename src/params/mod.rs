//! Observer and quantizer parameters: the values a user passes (a JSON object with the
//! frameworks' own keys and string forms, e.g. `{"dtype": "qint8", "bins": 256}`), their
//! declarations ([`spec`]) and typed parameter sets declared once ([`declare`]).

pub mod declare;
pub mod spec;

pub use declare::{kinds, Choice, ParamSet, ParamValue};
use spec::as_integer;
pub use spec::{Affects, Bits, ParamKind, ParamSpec};

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Check every key of `params` against `specs` (the declared parameters of `owner`): unknown
/// keys and out-of-range values are refused.
pub fn validate_declared(specs: &[ParamSpec], params: &Params, owner: &str) -> Result<()> {
    for (key, value) in &params.0 {
        match specs.iter().find(|p| p.name == key) {
            Some(spec) => spec.validate(value)?,
            None => {
                return Err(Error::param(
                    key,
                    format!("`{owner}` has no parameter `{key}`"),
                ))
            }
        }
    }
    Ok(())
}

/// The parameter values passed to an observer: a JSON object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(type = "Record<string, unknown>"))]
#[serde(transparent)]
pub struct Params(pub Map<String, Value>);

impl Params {
    /// An empty parameter set (all defaults).
    pub fn new() -> Self {
        Params(Map::new())
    }

    /// Parse a JSON object text such as `{"dtype": "qint8"}`.
    pub fn from_json(text: &str) -> Result<Self> {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(Params(map)),
            Ok(other) => Err(Error::param(
                "params",
                format!("expected a JSON object, got {other}"),
            )),
            Err(e) => Err(Error::param("params", format!("not valid JSON: {e}"))),
        }
    }

    /// From a JSON value, which must be an object or null.
    pub fn from_value(value: Value) -> Result<Self> {
        match value {
            Value::Object(map) => Ok(Params(map)),
            Value::Null => Ok(Params::new()),
            other => Err(Error::param(
                "params",
                format!("expected a JSON object, got {other}"),
            )),
        }
    }

    /// Builder-style setter.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.insert(key.to_string(), value.into());
        self
    }

    /// The raw value of `key`, if given and not null.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    /// True when `key` was given (and is not null).
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The keys given, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// An optional integer.
    pub fn opt_i64(&self, key: &str) -> Result<Option<i64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => as_integer(v)
                .map(Some)
                .ok_or_else(|| Error::param(key, format!("expected an integer, got {v}"))),
        }
    }

    /// An integer with a default.
    pub fn i64_or(&self, key: &str, default: i64) -> Result<i64> {
        Ok(self.opt_i64(key)?.unwrap_or(default))
    }

    /// An optional real number (integers accepted).
    pub fn opt_f64(&self, key: &str) -> Result<Option<f64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| Error::param(key, format!("expected a number, got {v}"))),
        }
    }

    /// A real number with a default.
    pub fn f64_or(&self, key: &str, default: f64) -> Result<f64> {
        Ok(self.opt_f64(key)?.unwrap_or(default))
    }

    /// An optional boolean.
    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(Error::param(
                key,
                format!("expected true or false, got {v}"),
            )),
        }
    }

    /// A boolean with a default.
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool> {
        Ok(self.opt_bool(key)?.unwrap_or(default))
    }

    /// An optional string.
    pub fn opt_str(&self, key: &str) -> Result<Option<&str>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(v) => Err(Error::param(key, format!("expected a string, got {v}"))),
        }
    }

    /// An optional bit width (`8` or `[4, 3]`).
    pub fn opt_bits(&self, key: &str) -> Result<Option<Bits>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => Bits::from_value(v).map(Some).ok_or_else(|| {
                Error::param(
                    key,
                    format!("expected an integer or [exponent_bits, mantissa_bits], got {v}"),
                )
            }),
        }
    }

    /// An optional vector of numbers (a JSON array), as float32.
    pub fn opt_f32s(&self, key: &str) -> Result<Option<Vec<f32>>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|x| {
                    x.as_f64()
                        .map(|f| f as f32)
                        .ok_or_else(|| Error::param(key, format!("expected numbers, got {x}")))
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Some(v) => Err(Error::param(
                key,
                format!("expected an array of numbers, got {v}"),
            )),
        }
    }

    /// A string with a default.
    pub fn str_or<'a>(&'a self, key: &str, default: &'a str) -> Result<&'a str> {
        Ok(self.opt_str(key)?.unwrap_or(default))
    }

    /// Merge `other` over `self` (keys of `other` win).
    pub fn merged(&self, other: &Params) -> Params {
        let mut map = self.0.clone();
        for (k, v) in &other.0 {
            map.insert(k.clone(), v.clone());
        }
        Params(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_getters_accept_json_forms() {
        let p = Params::from_json(
            r#"{"bins": 256, "eps": 1e-5, "dtype": "qint8", "reduce_range": true, "x": 8.0}"#,
        )
        .unwrap();
        assert_eq!(p.opt_i64("bins").unwrap(), Some(256));
        assert_eq!(p.opt_i64("x").unwrap(), Some(8));
        assert_eq!(p.f64_or("eps", 0.0).unwrap(), 1e-5);
        assert_eq!(p.str_or("dtype", "quint8").unwrap(), "qint8");
        assert!(p.bool_or("reduce_range", false).unwrap());
        assert!(p.opt_i64("dtype").is_err());
        assert!(Params::from_json("[1]").is_err());
        assert!(Params::from_json("{").is_err());
    }
}
