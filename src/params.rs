//! Observer parameters: their declared specification (for the registry, the CLI and the page's
//! controls) and the values a user passes (a JSON object, with the golden `cases.json` keys and
//! string forms, e.g. `{"dtype": "qint8", "qscheme": "per_tensor_symmetric", "bins": 256}`).

use crate::error::{Error, Result};
use serde::Serialize;
use serde_json::{Map, Value};

/// The type and admissible range of one parameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ParamKind {
    /// An integer in `min..=max`.
    Int { min: i64, max: i64 },
    /// A real number in `min..=max`; `log` suggests a logarithmic slider.
    Float { min: f64, max: f64, log: bool },
    /// A boolean switch.
    Bool,
    /// One of a fixed set of strings.
    Choice { options: Vec<&'static str> },
    /// A bit width: an integer in `min..=max`, or a float format given as
    /// `[exponent_bits, mantissa_bits]` (ModelOpt's `num_bits=(4, 3)` for FP8 E4M3), each
    /// `0..=15`.
    Bits { min: i64, max: i64 },
    /// A vector of finite numbers given as a JSON array (e.g. ggml's per-column importance
    /// matrix); no slider: the page and CLI supply it from a tensor or a `.npy`.
    Floats,
}

/// The value of a [`ParamKind::Bits`] parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bits {
    /// An integer bit width.
    Int(i64),
    /// A float format with this many exponent and mantissa bits.
    Float { exponent: i64, mantissa: i64 },
}

impl Bits {
    /// Parse `8` or `[4, 3]`.
    fn from_value(v: &Value) -> Option<Bits> {
        if let Some(i) = as_integer(v) {
            return Some(Bits::Int(i));
        }
        match v.as_array().map(Vec::as_slice) {
            Some([e, m]) => {
                let (e, m) = (as_integer(e)?, as_integer(m)?);
                ((0..=15).contains(&e) && (0..=15).contains(&m)).then_some(Bits::Float {
                    exponent: e,
                    mantissa: m,
                })
            }
            _ => None,
        }
    }
}

/// What must be recomputed when a parameter changes; the page uses it to keep slider updates
/// cheap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Affects {
    /// The observer has to see the data again (e.g. `bins`, `averaging_constant`).
    Data,
    /// Only the range search / qparams on the existing state (e.g. `percentile`, `stride`).
    Search,
}

/// Declaration of one parameter of an observer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamSpec {
    /// Key in the params object.
    pub name: &'static str,
    /// Type and range.
    #[serde(flatten)]
    pub kind: ParamKind,
    /// The framework's default, `null` when the framework has none (e.g. an optional override).
    pub default: Value,
    /// One line for tooltips and `quantscope list`.
    pub doc: &'static str,
    /// What a change of this parameter invalidates.
    pub affects: Affects,
}

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

impl ParamSpec {
    /// An integer parameter.
    pub fn int(
        name: &'static str,
        min: i64,
        max: i64,
        default: impl Into<Value>,
        doc: &'static str,
    ) -> Self {
        ParamSpec {
            name,
            kind: ParamKind::Int { min, max },
            default: default.into(),
            doc,
            affects: Affects::Data,
        }
    }

    /// A real parameter.
    pub fn float(
        name: &'static str,
        min: f64,
        max: f64,
        default: impl Into<Value>,
        doc: &'static str,
    ) -> Self {
        ParamSpec {
            name,
            kind: ParamKind::Float {
                min,
                max,
                log: false,
            },
            default: default.into(),
            doc,
            affects: Affects::Data,
        }
    }

    /// A boolean parameter.
    pub fn bool(name: &'static str, default: impl Into<Value>, doc: &'static str) -> Self {
        ParamSpec {
            name,
            kind: ParamKind::Bool,
            default: default.into(),
            doc,
            affects: Affects::Data,
        }
    }

    /// A bit-width parameter (integer `min..=max` or `[exponent, mantissa]`).
    pub fn bits(
        name: &'static str,
        min: i64,
        max: i64,
        default: impl Into<Value>,
        doc: &'static str,
    ) -> Self {
        ParamSpec {
            name,
            kind: ParamKind::Bits { min, max },
            default: default.into(),
            doc,
            affects: Affects::Data,
        }
    }

    /// A choice among strings.
    pub fn choice(
        name: &'static str,
        options: &[&'static str],
        default: impl Into<Value>,
        doc: &'static str,
    ) -> Self {
        ParamSpec {
            name,
            kind: ParamKind::Choice {
                options: options.to_vec(),
            },
            default: default.into(),
            doc,
            affects: Affects::Data,
        }
    }

    /// A vector-of-numbers parameter (default null: none given).
    pub fn floats(name: &'static str, doc: &'static str) -> Self {
        ParamSpec {
            name,
            kind: ParamKind::Floats,
            default: Value::Null,
            doc,
            affects: Affects::Data,
        }
    }

    /// Mark the parameter as affecting only the search on existing state.
    pub fn search_only(mut self) -> Self {
        self.affects = Affects::Search;
        self
    }

    /// Suggest a logarithmic slider (floats only).
    pub fn log_scale(mut self) -> Self {
        if let ParamKind::Float { log, .. } = &mut self.kind {
            *log = true;
        }
        self
    }

    /// Check a value against this specification.
    pub fn validate(&self, value: &Value) -> Result<()> {
        let bad = |reason: String| Err(Error::param(self.name, reason));
        match (&self.kind, value) {
            (_, Value::Null) => Ok(()),
            (ParamKind::Int { min, max }, v) => match as_integer(v) {
                Some(i) if i >= *min && i <= *max => Ok(()),
                Some(i) => bad(format!("{i} is outside {min}..={max}")),
                None => bad(format!("expected an integer, got {v}")),
            },
            (ParamKind::Float { min, max, .. }, v) => match v.as_f64() {
                Some(x) if x.is_finite() && x >= *min && x <= *max => Ok(()),
                Some(x) => bad(format!("{x} is outside {min}..={max}")),
                None => bad(format!("expected a number, got {v}")),
            },
            (ParamKind::Bool, Value::Bool(_)) => Ok(()),
            (ParamKind::Bool, v) => bad(format!("expected true or false, got {v}")),
            (ParamKind::Choice { options }, Value::String(s)) if options.contains(&s.as_str()) => {
                Ok(())
            }
            (ParamKind::Choice { options }, v) => {
                bad(format!("expected one of {}, got {v}", options.join(", ")))
            }
            (ParamKind::Floats, Value::Array(items)) => {
                match items.iter().position(|x| !x.as_f64().is_some_and(f64::is_finite)) {
                    None => Ok(()),
                    Some(i) => bad(format!("element {i} is not a finite number: {}", items[i])),
                }
            }
            (ParamKind::Floats, v) => bad(format!("expected an array of numbers, got {v}")),
            (ParamKind::Bits { min, max }, v) => match Bits::from_value(v) {
                Some(Bits::Int(i)) if i >= *min && i <= *max => Ok(()),
                Some(Bits::Int(i)) => bad(format!("{i} is outside {min}..={max}")),
                Some(Bits::Float { .. }) => Ok(()),
                None => bad(format!(
                    "expected an integer in {min}..={max} or [exponent_bits, mantissa_bits], got {v}"
                )),
            },
        }
    }
}

/// An integer from a JSON number that has no fractional part (e.g. `8` or `8.0`).
fn as_integer(v: &Value) -> Option<i64> {
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    let x = v.as_f64()?;
    (x.fract() == 0.0 && x.abs() < 9.0e18).then_some(x as i64)
}

/// The parameter values passed to an observer: a JSON object.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
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

    #[test]
    fn spec_validation_reports_ranges() {
        let spec = ParamSpec::int("bins", 2, 1 << 20, 2048, "histogram bins");
        assert!(spec.validate(&Value::from(256)).is_ok());
        let err = spec.validate(&Value::from(1)).unwrap_err().to_string();
        assert!(err.contains("bins") && err.contains("outside"), "{err}");
        let choice = ParamSpec::choice("dtype", &["qint8", "quint8"], "quint8", "dtype");
        assert!(choice.validate(&Value::from("int3")).is_err());
        let bits = ParamSpec::bits("num_bits", 1, 16, 8, "bits");
        assert!(bits.validate(&Value::from(4)).is_ok());
        assert!(bits.validate(&serde_json::json!([4, 3])).is_ok());
        assert!(bits.validate(&Value::from(0)).is_err());
        assert!(bits.validate(&serde_json::json!([4])).is_err());
        let p = Params::from_json(r#"{"a": [4, 3], "b": 8}"#).unwrap();
        assert_eq!(
            p.opt_bits("a").unwrap(),
            Some(Bits::Float {
                exponent: 4,
                mantissa: 3
            })
        );
        assert_eq!(p.opt_bits("b").unwrap(), Some(Bits::Int(8)));
        let floats = ParamSpec::floats("imatrix", "importance");
        assert!(floats.validate(&serde_json::json!([1.0, 2, 0.5])).is_ok());
        assert!(floats.validate(&Value::Null).is_ok());
        assert!(floats.validate(&serde_json::json!([1.0, "x"])).is_err());
        assert!(floats.validate(&Value::from("imatrix.npy")).is_err());
        let p = Params::from_json(r#"{"imatrix": [1, 0.5]}"#).unwrap();
        assert_eq!(p.opt_f32s("imatrix").unwrap(), Some(vec![1.0, 0.5]));
        assert!(p.opt_f32s("missing").unwrap().is_none());
    }
}
