//! Observer and quantizer parameters: the values a user passes (a JSON object with the
//! frameworks' own keys and string forms, e.g. `{"dtype": "qint8", "bins": 256}`), their
//! declarations ([`spec`]) and typed parameter sets declared once ([`declare`]).

pub mod declare;
pub mod library;
pub mod spec;

pub use declare::{kinds, Choice, ParamSet, ParamValue};
pub use spec::{Affects, Bits, ParamKind, ParamSpec};

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Check every key of `params` against `specs` (the declared parameters of `owner`): unknown
/// keys and out-of-range values are refused (a key given as `null` is not given).
pub fn validate_declared(specs: &[ParamSpec], params: &Params, owner: &str) -> Result<()> {
    for (key, value) in params.0.iter().filter(|(_, v)| !v.is_null()) {
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
    fn params_are_a_json_object() {
        let p = Params::from_json(r#"{"bins": 256, "dtype": "qint8", "x": null}"#).unwrap();
        assert_eq!(p.get("bins"), Some(&Value::from(256)));
        assert!(p.has("dtype") && !p.has("x"), "null means not given");
        assert!(Params::from_json("[1]").is_err());
        assert!(Params::from_json("{").is_err());
        assert_eq!(Params::from_value(Value::Null).unwrap(), Params::new());
        let merged = p.merged(&Params::new().with("bins", 8));
        assert_eq!(merged.get("bins"), Some(&Value::from(8)));
    }
}
