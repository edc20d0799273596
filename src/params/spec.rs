//! The declaration of one parameter as the registry, the CLI, the page's controls and the
//! TypeScript types see it: name, kind and admissible range, default, documentation and what a
//! change invalidates. Declarations are written once per observer with
//! [`declare_params!`](crate::declare_params), which also generates the typed configuration.

use crate::error::{Error, Result};
use serde::Serialize;
use serde_json::Value;

/// The type and admissible range of one parameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
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
    /// Free text (names carried to the framework, e.g. a custom op's name).
    Text,
    /// A vector of numbers taken from a tensor (e.g. an importance matrix): inline as a JSON
    /// array (one number is a vector of one); the CLI reads it from a `.npy` path, the page
    /// from a loaded tensor.
    Vector,
    /// A bit width: an integer in `min..=max`, or one of the float formats `formats`, each given
    /// as `[exponent_bits, mantissa_bits]` (ModelOpt's `num_bits=(4, 3)` for FP8 E4M3).
    Bits {
        min: i64,
        max: i64,
        formats: Vec<[i64; 2]>,
    },
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
    /// Parse `8` or `[4, 3]` (each of `[e, m]` in `0..=15`).
    pub fn from_value(v: &Value) -> Option<Bits> {
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

    /// `8` or `[4, 3]`.
    pub fn to_value(self) -> Value {
        match self {
            Bits::Int(i) => Value::from(i),
            Bits::Float { exponent, mantissa } => Value::from(vec![exponent, mantissa]),
        }
    }
}

/// What must be recomputed when a parameter changes. The session keeps an observer's collected
/// state across changes of [`Affects::Search`] parameters and collects it again for any change
/// of an [`Affects::Data`] one; a property test over the whole registry checks every declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "snake_case")]
pub enum Affects {
    /// The observer has to see the data again (e.g. `bins`, `averaging_constant`).
    Data,
    /// Only the range search / qparams on the collected state (e.g. `percentile`, `dtype`).
    Search,
}

/// Declaration of one parameter of an observer or quantizer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct ParamSpec {
    /// Key in the params object (the framework's keyword).
    pub name: &'static str,
    /// Type and range.
    #[serde(flatten)]
    // A union cannot be extended by an interface: an override makes the type an intersection.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "ParamKind"))]
    pub kind: ParamKind,
    /// The framework's default, `null` when the framework decides (an optional override).
    #[cfg_attr(target_arch = "wasm32", tsify(type = "unknown"))]
    pub default: Value,
    /// One line for tooltips and `quantscope list`.
    pub doc: &'static str,
    /// What a change of this parameter invalidates.
    pub affects: Affects,
    /// True for an attribute assigned after construction rather than a constructor keyword
    /// (PyTorch's `obs.upsample_rate = 128`): passing it to the constructor is refused the way
    /// the framework refuses an unknown keyword.
    pub attribute: bool,
}

impl ParamSpec {
    /// A parameter of `kind` (affecting the data, a constructor keyword).
    pub fn new(name: &'static str, kind: ParamKind, default: Value, doc: &'static str) -> Self {
        ParamSpec {
            name,
            kind,
            default,
            doc,
            affects: Affects::Data,
            attribute: false,
        }
    }

    /// An integer parameter.
    pub fn int(
        name: &'static str,
        min: i64,
        max: i64,
        default: impl Into<Value>,
        doc: &'static str,
    ) -> Self {
        Self::new(name, ParamKind::Int { min, max }, default.into(), doc)
    }

    /// A real parameter.
    pub fn float(
        name: &'static str,
        min: f64,
        max: f64,
        default: impl Into<Value>,
        doc: &'static str,
    ) -> Self {
        let kind = ParamKind::Float {
            min,
            max,
            log: false,
        };
        Self::new(name, kind, default.into(), doc)
    }

    /// A boolean parameter.
    pub fn bool(name: &'static str, default: impl Into<Value>, doc: &'static str) -> Self {
        Self::new(name, ParamKind::Bool, default.into(), doc)
    }

    /// A bit width: an integer in `min..=max` or one of the float `formats` `[e, m]`.
    pub fn bits(
        name: &'static str,
        min: i64,
        max: i64,
        formats: &[[i64; 2]],
        default: impl Into<Value>,
        doc: &'static str,
    ) -> Self {
        let kind = ParamKind::Bits {
            min,
            max,
            formats: formats.to_vec(),
        };
        Self::new(name, kind, default.into(), doc)
    }

    /// A vector of numbers (default null: none given), e.g. an importance matrix.
    pub fn vector(name: &'static str, doc: &'static str) -> Self {
        Self::new(name, ParamKind::Vector, Value::Null, doc)
    }

    /// A choice among strings.
    pub fn choice(
        name: &'static str,
        options: &[&'static str],
        default: impl Into<Value>,
        doc: &'static str,
    ) -> Self {
        let kind = ParamKind::Choice {
            options: options.to_vec(),
        };
        Self::new(name, kind, default.into(), doc)
    }

    /// Mark the parameter as affecting only the search on collected state.
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

    /// Check a value against this declaration (`null` always passes: it means "the default").
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
            (ParamKind::Text, Value::String(_)) => Ok(()),
            (ParamKind::Vector, Value::Array(items))
                if items.iter().all(|x| x.as_f64().is_some_and(f64::is_finite)) =>
            {
                Ok(())
            }
            (ParamKind::Vector, Value::Number(n)) if n.as_f64().is_some_and(f64::is_finite) => {
                Ok(())
            }
            (ParamKind::Vector, v) => bad(format!(
                "expected an array of finite numbers, got {}",
                short(v)
            )),
            (ParamKind::Text, v) => bad(format!("expected a string, got {v}")),
            (ParamKind::Bits { min, max, formats }, v) => match Bits::from_value(v) {
                Some(Bits::Int(i)) if i >= *min && i <= *max => Ok(()),
                Some(Bits::Int(i)) => bad(format!("{i} is outside {min}..={max}")),
                Some(Bits::Float { exponent, mantissa })
                    if formats.contains(&[exponent, mantissa]) =>
                {
                    Ok(())
                }
                Some(Bits::Float { exponent, mantissa }) => bad(format!(
                    "[{exponent}, {mantissa}] is not one of the float formats {}",
                    formats
                        .iter()
                        .map(|[e, m]| format!("[{e}, {m}]"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                None => bad(format!(
                    "expected an integer in {min}..={max} or [exponent_bits, mantissa_bits], got {v}"
                )),
            },
        }
    }
}

/// A JSON value cut to a readable length for messages.
fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// An integer from a JSON number that has no fractional part (e.g. `8` or `8.0`).
pub fn as_integer(v: &Value) -> Option<i64> {
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    let x = v.as_f64()?;
    (x.fract() == 0.0 && x.abs() < 9.0e18).then_some(x as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validation_reports_ranges_and_formats() {
        let spec = ParamSpec::int("bins", 2, 1 << 20, 2048, "histogram bins");
        assert!(spec.validate(&Value::from(256)).is_ok());
        let err = spec.validate(&Value::from(1)).unwrap_err().to_string();
        assert!(err.contains("bins") && err.contains("outside"), "{err}");
        assert!(spec.validate(&Value::from(7.5)).is_err());
        let choice = ParamSpec::choice("dtype", &["qint8", "quint8"], "quint8", "dtype");
        assert!(choice.validate(&Value::from("int3")).is_err());
        let bits = ParamSpec::new(
            "num_bits",
            ParamKind::Bits {
                min: 1,
                max: 16,
                formats: vec![[4, 3]],
            },
            Value::from(8),
            "bits",
        );
        assert!(bits.validate(&Value::from(4)).is_ok());
        assert!(bits.validate(&json!([4, 3])).is_ok());
        assert!(bits.validate(&json!([5, 2])).is_err());
        assert!(bits.validate(&Value::from(0)).is_err());
        assert!(bits.validate(&json!([4])).is_err());
        assert_eq!(
            Bits::from_value(&json!([4, 3])),
            Some(Bits::Float {
                exponent: 4,
                mantissa: 3
            })
        );
        assert_eq!(Bits::Int(8).to_value(), json!(8));
    }
}
