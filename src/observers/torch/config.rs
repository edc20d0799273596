//! Constructor arguments shared by PyTorch's uniform-quantization observers
//! (`UniformQuantizationObserverBase.__init__` in torch 2.15): dtype, qscheme, `reduce_range`,
//! custom `quant_min`/`quant_max` and `eps`, validated in PyTorch's order with PyTorch's
//! exception classes and messages.
//!
//! Effective range (`calculate_qmin_qmax`): without a custom range, quint8/uint8 0..255
//! (0..127 with `reduce_range`), qint8/int8 −128..127 (−64..63), qint32/int32 −2³¹..2³¹−1,
//! uint16 0..65535, int16 −32768..32767, quint4x2 0..15 (`reduce_range` ignored for the last
//! four). With a custom range (both bounds given): it must contain 0, `qmin < qmax`, span at most
//! 256 values for qint8/int8 (2³² for qint32/int32), and `reduce_range` halves it with floor
//! division (`−100..100 → −50..50`).

use crate::error::{Error, Result, Stage};
use serde_json::Value;

/// `torch.finfo(torch.float32).eps`, PyTorch's default `eps`.
pub const F32_EPS: f64 = f32::EPSILON as f64;

crate::choice_enum! {
    /// The quantized dtypes a uniform observer accepts (`_ALLOWED_DTYPES` minus the float8
    /// types), spelled as PyTorch's `torch.<name>` without the prefix.
    pub enum QDtype {
        QUInt8 = "quint8",
        QInt8 = "qint8",
        QUInt4x2 = "quint4x2",
        QInt32 = "qint32",
        Int8 = "int8",
        UInt8 = "uint8",
        Int16 = "int16",
        Int32 = "int32",
        UInt16 = "uint16",
    }
}

impl QDtype {
    /// `torch.iinfo(dtype).bits` (8 for quint4x2, whose storage is a byte).
    pub fn bits(self) -> u32 {
        match self {
            QDtype::QUInt8 | QDtype::QInt8 | QDtype::QUInt4x2 | QDtype::Int8 | QDtype::UInt8 => 8,
            QDtype::Int16 | QDtype::UInt16 => 16,
            QDtype::QInt32 | QDtype::Int32 => 32,
        }
    }

    fn is_int8_like(self) -> bool {
        matches!(self, QDtype::QInt8 | QDtype::Int8)
    }

    fn is_uint8_like(self) -> bool {
        matches!(self, QDtype::QUInt8 | QDtype::UInt8)
    }

    fn is_int32_like(self) -> bool {
        matches!(self, QDtype::QInt32 | QDtype::Int32)
    }
}

crate::choice_enum! {
    /// `torch.qscheme` values.
    pub enum QScheme {
        PerTensorAffine = "per_tensor_affine",
        PerTensorSymmetric = "per_tensor_symmetric",
        PerChannelAffine = "per_channel_affine",
        PerChannelSymmetric = "per_channel_symmetric",
        PerChannelAffineFloatQparams = "per_channel_affine_float_qparams",
    }
}

impl QScheme {
    /// `is_per_tensor(qscheme)`.
    pub fn is_per_tensor(self) -> bool {
        matches!(self, QScheme::PerTensorAffine | QScheme::PerTensorSymmetric)
    }

    /// `is_per_channel(qscheme)`.
    pub fn is_per_channel(self) -> bool {
        !self.is_per_tensor()
    }

    /// Symmetric schemes (per tensor or per channel).
    pub fn is_symmetric(self) -> bool {
        matches!(
            self,
            QScheme::PerTensorSymmetric | QScheme::PerChannelSymmetric
        )
    }
}

crate::declare_params! {
    /// The arguments of `UniformQuantizationObserverBase.__init__` every uniform observer
    /// takes besides its `qscheme` (whose default differs per class). They only enter
    /// `calculate_qparams`, so they are search parameters.
    pub struct UniformArgs {
        /// quantized dtype; sets the default integer range
        dtype: QDtype = QDtype::QUInt8; choice(), Search;
        /// halve the default 8-bit range (0..127 / -64..63); deprecated in PyTorch
        reduce_range: bool = false; boolean(), Search;
        /// custom lower end of the integer range (used only with quant_max)
        quant_min: Option<i64> = None; int(i32::MIN as i64, i32::MAX as i64), Search;
        /// custom upper end of the integer range (used only with quant_min)
        quant_max: Option<i64> = None; int(i32::MIN as i64, i32::MAX as i64), Search;
        /// smallest scale (stored as a float32 buffer)
        eps: f64 = F32_EPS; log_float(0.0, f32::MAX as f64), Search;
        /// marks the observer as a dynamic-quantization placeholder
        is_dynamic: bool = false; boolean(), Search;
    }
}

/// The validated configuration of a uniform-quantization observer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UniformConfig {
    pub dtype: QDtype,
    pub qscheme: QScheme,
    pub reduce_range: bool,
    /// Effective range after `reduce_range`.
    pub quant_min: i64,
    pub quant_max: i64,
    /// True when both `quant_min` and `quant_max` were passed.
    pub has_customized_qrange: bool,
    /// The `eps` buffer (float32).
    pub eps: f32,
    pub is_dynamic: bool,
}

/// Python's `TypeError: <function>() got an unexpected keyword argument '<key>'` for the first
/// of `unknown`.
pub fn reject_unknown(unknown: &[String], function: &str) -> Result<()> {
    match unknown.first() {
        Some(key) => Err(unexpected_kwarg_error(function, key)),
        None => Ok(()),
    }
}

/// Python's `TypeError: <function>() got an unexpected keyword argument '<key>'`.
pub fn unexpected_kwarg_error(function: &str, key: &str) -> Error {
    Error::framework(
        "TypeError",
        format!("{function}() got an unexpected keyword argument '{key}'"),
        Stage::Init,
    )
}

/// A `NotImplementedError` raised by a constructor.
pub fn not_implemented(message: impl Into<String>) -> Error {
    Error::framework("NotImplementedError", message, Stage::Init)
}

/// An `AssertionError` raised by a constructor.
pub fn init_assertion(message: impl Into<String>) -> Error {
    Error::framework("AssertionError", message, Stage::Init)
}

impl UniformConfig {
    /// What `UniformQuantizationObserverBase.__init__` does with the arguments, after the
    /// subclass's own qscheme check: the `ObserverBase` keyword check, custom range validation
    /// and `calculate_qmin_qmax`.
    pub fn resolve(args: &UniformArgs, qscheme: QScheme, unknown: &[String]) -> Result<Self> {
        reject_unknown(unknown, "ObserverBase.__init__")?;
        let (quant_min, quant_max, has_customized_qrange) = match (args.quant_min, args.quant_max) {
            (Some(qmin), Some(qmax)) => {
                let (qmin, qmax) = custom_qmin_qmax(qmin, qmax, args.dtype, args.reduce_range)?;
                (qmin, qmax, true)
            }
            _ => {
                let (qmin, qmax) = default_qmin_qmax(args.dtype, args.reduce_range);
                (qmin, qmax, false)
            }
        };
        Ok(UniformConfig {
            dtype: args.dtype,
            qscheme,
            reduce_range: args.reduce_range,
            quant_min,
            quant_max,
            has_customized_qrange,
            eps: args.eps as f32,
            is_dynamic: args.is_dynamic,
        })
    }

    /// The check `MinMaxObserver`/`PerChannelMinMaxObserver` make after the base constructor.
    pub fn reject_quint8_symmetric_reduce_range(&self) -> Result<()> {
        if self.qscheme.is_symmetric() && self.reduce_range && self.dtype == QDtype::QUInt8 {
            return Err(not_implemented(
                "Cannot reduce range for symmetric quantization for quint8",
            ));
        }
        Ok(())
    }
}

/// `calculate_qmin_qmax` without a custom range.
pub fn default_qmin_qmax(dtype: QDtype, reduce_range: bool) -> (i64, i64) {
    match dtype {
        d if d.is_int8_like() => {
            if reduce_range {
                (-64, 63)
            } else {
                (-128, 127)
            }
        }
        d if d.is_uint8_like() => {
            if reduce_range {
                (0, 127)
            } else {
                (0, 255)
            }
        }
        d if d.is_int32_like() => (-(1i64 << 31), (1i64 << 31) - 1),
        QDtype::UInt16 => (0, (1 << 16) - 1),
        QDtype::Int16 => (-(1 << 15), (1 << 15) - 1),
        _ => (0, 15),
    }
}

/// `validate_qmin_qmax` followed by the custom branch of `calculate_qmin_qmax`.
pub fn custom_qmin_qmax(
    quant_min: i64,
    quant_max: i64,
    dtype: QDtype,
    reduce_range: bool,
) -> Result<(i64, i64)> {
    if !(quant_min <= 0 && 0 <= quant_max) {
        return Err(init_assertion(
            "Used-specified quantization range must include 0.",
        ));
    }
    if quant_min >= quant_max {
        return Err(init_assertion(
            "qmin must be strictly less than qmax for user-specified quantization range.",
        ));
    }
    let span = quant_max as i128 - quant_min as i128 + 1;
    if dtype.is_int8_like() && !(0 < span && span <= 256) {
        return Err(init_assertion(
            "quantization range should be positive and not exceed the maximum bit range (=256).",
        ));
    }
    if dtype.is_int32_like() && !(0 < span && span <= 1i128 << 32) {
        return Err(init_assertion(
            "quantization range should be positive and not exceed the maximum bit range (=4294967296).",
        ));
    }
    if reduce_range {
        Ok((quant_min.div_euclid(2), quant_max.div_euclid(2)))
    } else {
        Ok((quant_min, quant_max))
    }
}

/// Python's `repr()` of a number given as JSON (integers stay integers, floats use the shortest
/// round-trip digits with Python's exponent rules, e.g. `0.01`, `1e-05`, `2.0`).
pub fn py_number_repr(value: &Value) -> String {
    match value {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => py_float_repr(n.as_f64().unwrap_or(f64::NAN)),
        other => other.to_string(),
    }
}

/// Python's `repr(float)`.
pub fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // Shortest round-trip digits and decimal exponent, e.g. "1.5e-5".
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    let point = exp + 1; // digits before the decimal point
    if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
    } else if point as usize >= digits.len() {
        format!(
            "{sign}{digits}{}.0",
            "0".repeat(point as usize - digits.len())
        )
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{sign}{int}.{frac}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ParamSet, Params};
    use serde_json::json;

    fn cfg(p: Value) -> Result<UniformConfig> {
        let params = Params::from_value(p).unwrap();
        let unknown: Vec<String> = params
            .keys()
            .filter(|k| !UniformArgs::specs().iter().any(|s| s.name == *k))
            .map(str::to_string)
            .collect();
        UniformConfig::resolve(
            &UniformArgs::from_params(&params)?,
            QScheme::PerTensorAffine,
            &unknown,
        )
    }

    #[test]
    fn default_ranges_follow_dtype_and_reduce_range() {
        let r = |p| {
            let c = cfg(p).unwrap();
            (c.quant_min, c.quant_max)
        };
        assert_eq!(r(json!({})), (0, 255));
        assert_eq!(r(json!({"reduce_range": true})), (0, 127));
        assert_eq!(
            r(json!({"dtype": "qint8", "reduce_range": true})),
            (-64, 63)
        );
        assert_eq!(r(json!({"dtype": "int8"})), (-128, 127));
        assert_eq!(
            r(json!({"dtype": "quint4x2", "reduce_range": true})),
            (0, 15)
        );
        assert_eq!(r(json!({"dtype": "qint32"})), (-2147483648, 2147483647));
        assert_eq!(r(json!({"dtype": "int16"})), (-32768, 32767));
        assert_eq!(r(json!({"dtype": "uint16"})), (0, 65535));
        // Only one bound given: the default range is used.
        assert_eq!(r(json!({"quant_min": 0})), (0, 255));
    }

    #[test]
    fn custom_ranges_are_validated_and_floor_halved() {
        let c = cfg(
            json!({"dtype": "qint8", "quant_min": -100, "quant_max": 100, "reduce_range": true}),
        )
        .unwrap();
        assert_eq!((c.quant_min, c.quant_max), (-50, 50));
        let c = cfg(json!({"quant_min": -7, "quant_max": 8, "reduce_range": true})).unwrap();
        assert_eq!((c.quant_min, c.quant_max), (-4, 4));
        assert!(c.has_customized_qrange);
        let msg = |p| cfg(p).unwrap_err().to_string();
        assert_eq!(
            msg(json!({"quant_min": 1, "quant_max": 10})),
            "AssertionError: Used-specified quantization range must include 0."
        );
        assert_eq!(
            msg(json!({"quant_min": 0, "quant_max": 0})),
            "AssertionError: qmin must be strictly less than qmax for user-specified quantization range."
        );
        assert!(
            msg(json!({"dtype": "qint8", "quant_min": -200, "quant_max": 200})).contains("(=256)")
        );
        // quint8 has no span check.
        assert!(cfg(json!({"quant_min": 0, "quant_max": 1000})).is_ok());
        assert_eq!(
            msg(json!({"upsample_rate": 3})),
            "TypeError: ObserverBase.__init__() got an unexpected keyword argument 'upsample_rate'"
        );
    }

    #[test]
    fn python_float_repr() {
        assert_eq!(py_float_repr(0.01), "0.01");
        assert_eq!(py_float_repr(1e-5), "1e-05");
        assert_eq!(py_float_repr(0.0001), "0.0001");
        assert_eq!(py_float_repr(2.0), "2.0");
        assert_eq!(py_float_repr(-0.5), "-0.5");
        assert_eq!(py_float_repr(1e16), "1e+16");
        assert_eq!(py_float_repr(123456.789), "123456.789");
        assert_eq!(py_float_repr(1.5e-7), "1.5e-07");
        assert_eq!(py_number_repr(&json!(1)), "1");
    }
}
