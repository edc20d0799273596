//! Quark's `QTensorConfig` as quantscope parameters: dtype, qscheme, symmetric, ch_axis,
//! group_size, scale type/format, zero-point type, dynamic flag, rounding.
//!
//! Defaults are those of Quark's `DataTypeSpec` helpers (`Int8PerTensorSpec`: symmetric,
//! `scale_type="float"`, `round_method="half_even"`, static; `Int8PerChannelSpec`: asymmetric;
//! `OCP_MX*Spec`: `ch_axis=-1`, `group_size=32`, `scale_format="e8m0"`, `"even"`, dynamic).
//! Where Quark has none (`ch_axis`, `group_size` of per-channel/per-group specs) the default is
//! the usual weight layout and is documented on the parameter.

use crate::error::{Error, Result, Stage};
use crate::formats::e8m0::ScaleRounding;
use crate::formats::half_cast::HalfType;
use crate::formats::ElementFormat;
use crate::observer::Grid;
use crate::params::{ParamSpec, Params};
use serde_json::Value;

/// Quark `Dtype`s the observers accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuarkDtype {
    Int4,
    Uint4,
    Int8,
    Uint8,
    Int16,
    Fp8E4m3,
    Fp8E5m2,
    Fp6E2m3,
    Fp6E3m2,
    Fp4,
    Float16,
    Bfloat16,
}

/// Every accepted dtype name.
pub const DTYPE_NAMES: [&str; 12] = [
    "int4", "uint4", "int8", "uint8", "int16", "fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2",
    "fp4", "float16", "bfloat16",
];

impl QuarkDtype {
    /// Quark's name (`Dtype.value`).
    pub fn name(self) -> &'static str {
        match self {
            QuarkDtype::Int4 => "int4",
            QuarkDtype::Uint4 => "uint4",
            QuarkDtype::Int8 => "int8",
            QuarkDtype::Uint8 => "uint8",
            QuarkDtype::Int16 => "int16",
            QuarkDtype::Fp8E4m3 => "fp8_e4m3",
            QuarkDtype::Fp8E5m2 => "fp8_e5m2",
            QuarkDtype::Fp6E2m3 => "fp6_e2m3",
            QuarkDtype::Fp6E3m2 => "fp6_e3m2",
            QuarkDtype::Fp4 => "fp4",
            QuarkDtype::Float16 => "float16",
            QuarkDtype::Bfloat16 => "bfloat16",
        }
    }

    /// Parse a Quark dtype name.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "int4" => QuarkDtype::Int4,
            "uint4" => QuarkDtype::Uint4,
            "int8" => QuarkDtype::Int8,
            "uint8" => QuarkDtype::Uint8,
            "int16" => QuarkDtype::Int16,
            "fp8_e4m3" => QuarkDtype::Fp8E4m3,
            "fp8_e5m2" => QuarkDtype::Fp8E5m2,
            "fp6_e2m3" => QuarkDtype::Fp6E2m3,
            "fp6_e3m2" => QuarkDtype::Fp6E3m2,
            "fp4" => QuarkDtype::Fp4,
            "float16" => QuarkDtype::Float16,
            "bfloat16" => QuarkDtype::Bfloat16,
            _ => return None,
        })
    }

    /// `calculate_qmin_qmax(dtype)`: integer ranges are full (int8 −128..127), float ranges
    /// are `±max`.
    pub fn qrange(self) -> (f64, f64) {
        match self {
            QuarkDtype::Int4 => (-8.0, 7.0),
            QuarkDtype::Uint4 => (0.0, 15.0),
            QuarkDtype::Int8 => (-128.0, 127.0),
            QuarkDtype::Uint8 => (0.0, 255.0),
            QuarkDtype::Int16 => (-32768.0, 32767.0),
            QuarkDtype::Float16 | QuarkDtype::Bfloat16 => {
                let m = self.half().map_or(0.0, |h| h.max() as f64);
                (-m, m)
            }
            _ => {
                let m = self.element().map_or(0.0, |f| f.max() as f64);
                (-m, m)
            }
        }
    }

    /// True for the integer dtypes.
    pub fn is_int(self) -> bool {
        matches!(
            self,
            QuarkDtype::Int4
                | QuarkDtype::Uint4
                | QuarkDtype::Int8
                | QuarkDtype::Uint8
                | QuarkDtype::Int16
        )
    }

    /// The small float element format of fp8/fp6/fp4 dtypes.
    pub fn element(self) -> Option<ElementFormat> {
        match self {
            QuarkDtype::Fp8E4m3 => Some(ElementFormat::Fp8E4m3),
            QuarkDtype::Fp8E5m2 => Some(ElementFormat::Fp8E5m2),
            QuarkDtype::Fp6E2m3 => Some(ElementFormat::Fp6E2m3),
            QuarkDtype::Fp6E3m2 => Some(ElementFormat::Fp6E3m2),
            QuarkDtype::Fp4 => Some(ElementFormat::Fp4E2m1),
            _ => None,
        }
    }

    /// float16/bfloat16 (cast-only dtypes).
    pub fn half(self) -> Option<HalfType> {
        match self {
            QuarkDtype::Float16 => Some(HalfType::Float16),
            QuarkDtype::Bfloat16 => Some(HalfType::Bfloat16),
            _ => None,
        }
    }

    /// True for fp8_e4m3/fp8_e5m2 (Quark's fp8 qparam path).
    pub fn is_fp8(self) -> bool {
        matches!(self, QuarkDtype::Fp8E4m3 | QuarkDtype::Fp8E5m2)
    }

    /// The grid values live on after quantization with this dtype.
    pub fn grid(self) -> Grid {
        let (qmin, qmax) = self.qrange();
        if self.is_int() {
            Grid::Int {
                quant_min: qmin as i64,
                quant_max: qmax as i64,
            }
        } else {
            Grid::Float {
                format: self.name().to_string(),
                max: qmax,
            }
        }
    }
}

/// `QSchemeType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QScheme {
    PerTensor,
    PerChannel,
    PerGroup,
}

impl QScheme {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "per_tensor" => Some(QScheme::PerTensor),
            "per_channel" => Some(QScheme::PerChannel),
            "per_group" => Some(QScheme::PerGroup),
            _ => None,
        }
    }
}

/// `ScaleType`: the dtype scales are cast to (`float`/`pof2`/`float32` leave float32 scales
/// unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleType {
    Float,
    Pof2,
    Float32,
    Half(HalfType),
}

impl ScaleType {
    /// Cast a float32 scale like `scale.to(scale_torch_dtype)`.
    #[inline]
    pub fn cast(self, s: f32) -> f32 {
        match self {
            ScaleType::Half(h) => h.round_trip(s),
            _ => s,
        }
    }
}

/// `scale_format` of the fp4/MX scale computation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleFormat {
    E8m0,
    Float32,
}

/// A parsed Quark tensor configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct QuarkSpec {
    pub dtype: QuarkDtype,
    pub qscheme: QScheme,
    pub symmetric: Option<bool>,
    pub ch_axis: Option<i64>,
    pub group_size: Option<i64>,
    pub scale_type: ScaleType,
    /// `zero_point_type == "float32"`.
    pub float_zero_point: bool,
    pub is_dynamic: bool,
    pub scale_format: Option<ScaleFormat>,
    pub scale_calculation_mode: ScaleRounding,
}

/// Defaults of one observer's configuration parameters.
#[derive(Debug, Clone, Copy)]
pub struct SpecDefaults {
    pub dtypes: &'static [&'static str],
    pub dtype: &'static str,
    pub qschemes: &'static [&'static str],
    pub qscheme: &'static str,
    pub symmetric: Option<bool>,
    pub ch_axis: Option<i64>,
    pub group_size: Option<i64>,
    pub is_dynamic: bool,
    pub scale_format: Option<&'static str>,
}

/// Dtypes of the per-tensor and per-group uniform-scaling observers (fp6 would fail Quark's
/// int-path assertion, fp4 per tensor has no fake-quantize kernel).
pub const UNIFORM_DTYPES: &[&str] = &[
    "int4", "uint4", "int8", "uint8", "int16", "fp8_e4m3", "fp8_e5m2",
];
/// Dtypes of `PerChannelMinMaxObserver` (fp4 per channel has a kernel; needs `scale_format`).
pub const PER_CHANNEL_DTYPES: &[&str] = &[
    "int4", "uint4", "int8", "uint8", "int16", "fp8_e4m3", "fp8_e5m2", "fp4",
];
/// Dtypes `get_min_max_by_mse` accepts.
pub const MSE_DTYPES: &[&str] = &["int4", "uint4", "int8", "uint8", "fp8_e4m3", "fp8_e5m2"];
/// Dtypes of the power-of-two observers (Quark also accepts int32).
pub const POW2_DTYPES: &[&str] = &["int8", "uint8"];
/// Element dtypes of `PerBlockMXObserver`.
pub const MX_DTYPES: &[&str] = &["fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4"];
/// `PerBlockBFPObserver` (8-bit mantissas).
pub const BFP_DTYPES: &[&str] = &["int8"];
/// Cast-only dtypes of `PlaceholderObserver`.
pub const HALF_DTYPES: &[&str] = &["float16", "bfloat16"];
/// Dtypes `PerTensorHistogramObserverPro` maps onto torch dtypes.
pub const HISTOGRAM_PRO_DTYPES: &[&str] = &["int8", "uint8", "uint4"];

impl SpecDefaults {
    /// Per-tensor observers: `Int8PerTensorSpec` defaults.
    pub const fn per_tensor(dtypes: &'static [&'static str]) -> Self {
        SpecDefaults {
            dtypes,
            dtype: "int8",
            qschemes: &["per_tensor"],
            qscheme: "per_tensor",
            symmetric: Some(true),
            ch_axis: None,
            group_size: None,
            is_dynamic: false,
            scale_format: None,
        }
    }

    /// The parameter declarations for these defaults.
    pub fn params(&self) -> Vec<ParamSpec> {
        let mut p = vec![
            ParamSpec::choice(
                "dtype",
                self.dtypes,
                self.dtype,
                "Quark Dtype of the quantized values",
            ),
            ParamSpec::choice(
                "qscheme",
                self.qschemes,
                self.qscheme,
                "QSchemeType (fixed by the observer class)",
            ),
            ParamSpec::bool(
                "symmetric",
                self.symmetric.map_or(Value::Null, Value::Bool),
                "symmetric range around zero (int dtypes require it)",
            ),
        ];
        if self.qscheme != "per_tensor" {
            p.push(ParamSpec::int(
                "ch_axis",
                -16,
                15,
                self.ch_axis.map_or(Value::Null, Value::from),
                "channel axis (per-channel) or axis the groups/blocks run along; Quark has no default",
            ));
        }
        if self.qscheme == "per_group" {
            p.push(ParamSpec::int(
                "group_size",
                -1,
                1 << 20,
                self.group_size.map_or(Value::Null, Value::from),
                "elements per group/block (-1: the whole axis)",
            ));
        }
        p.extend([
            ParamSpec::choice(
                "scale_type",
                &["float", "pof2", "float32", "float16", "bfloat16"],
                "float",
                "dtype the scale is cast to (float/pof2/float32 keep float32)",
            ),
            ParamSpec::choice(
                "zero_point_type",
                &["int32", "float32"],
                "int32",
                "int32 zero point (range includes 0) or float32 (raw min/max)",
            ),
            ParamSpec::bool(
                "is_dynamic",
                self.is_dynamic,
                "dynamic: keep only the last batch's statistics",
            ),
            ParamSpec::choice(
                "round_method",
                &["half_even", "round", "floor"],
                "half_even",
                "rounding of the GPU kernels; on CPU Quark always rounds half to even",
            ),
            ParamSpec::choice(
                "scale_format",
                &["e8m0", "float32"],
                self.scale_format.map_or(Value::Null, Value::from),
                "scale format for fp4/MX scales",
            ),
            ParamSpec::choice(
                "scale_calculation_mode",
                &["even", "floor", "ceil"],
                "even",
                "E8M0 scale rounding: even (round amax's mantissa first), floor, ceil",
            ),
        ]);
        p
    }

    /// Parse `params` (already validated against [`SpecDefaults::params`]) into a spec,
    /// applying Quark's `QTensorConfig.__post_init__` checks.
    pub fn parse(&self, params: &Params) -> Result<QuarkSpec> {
        let dtype_name = params.str_or("dtype", self.dtype)?;
        if !self.dtypes.contains(&dtype_name) {
            return Err(Error::param(
                "dtype",
                format!(
                    "this observer supports {}, got {dtype_name}",
                    self.dtypes.join(", ")
                ),
            ));
        }
        let dtype = QuarkDtype::from_name(dtype_name)
            .ok_or_else(|| Error::param("dtype", format!("unknown Quark dtype {dtype_name}")))?;
        let qscheme_name = params.str_or("qscheme", self.qscheme)?;
        let qscheme = QScheme::from_name(qscheme_name)
            .filter(|_| self.qschemes.contains(&qscheme_name))
            .ok_or_else(|| {
                Error::param(
                    "qscheme",
                    format!(
                        "this observer supports {}, got {qscheme_name}",
                        self.qschemes.join(", ")
                    ),
                )
            })?;
        let symmetric = match params.opt_bool("symmetric")? {
            Some(b) => Some(b),
            None if params.0.contains_key("symmetric") => None,
            None => self.symmetric,
        };
        let ch_axis = if params.0.contains_key("ch_axis") {
            params.opt_i64("ch_axis")?
        } else {
            self.ch_axis
        };
        let group_size = if params.0.contains_key("group_size") {
            params.opt_i64("group_size")?
        } else {
            self.group_size
        };
        let scale_type = match params.str_or("scale_type", "float")? {
            "float" => ScaleType::Float,
            "pof2" => ScaleType::Pof2,
            "float32" => ScaleType::Float32,
            "float16" => ScaleType::Half(HalfType::Float16),
            "bfloat16" => ScaleType::Half(HalfType::Bfloat16),
            other => {
                return Err(Error::param(
                    "scale_type",
                    format!("unknown scale type {other}"),
                ))
            }
        };
        let float_zero_point = match params.str_or("zero_point_type", "int32")? {
            "int32" => false,
            "float32" => true,
            other => {
                return Err(Error::param(
                    "zero_point_type",
                    format!("expected int32 or float32, got {other}"),
                ))
            }
        };
        let is_dynamic = params.bool_or("is_dynamic", self.is_dynamic)?;
        let round_method = params.str_or("round_method", "half_even")?;
        if !["half_even", "round", "floor"].contains(&round_method) {
            return Err(Error::param(
                "round_method",
                format!("expected half_even, round or floor, got {round_method}"),
            ));
        }
        let scale_format = match params.opt_str("scale_format")?.or(self.scale_format) {
            None => None,
            Some("e8m0") => Some(ScaleFormat::E8m0),
            Some("float32") => Some(ScaleFormat::Float32),
            Some(other) => {
                return Err(Error::param(
                    "scale_format",
                    format!("quantscope supports e8m0 and float32, got {other}"),
                ))
            }
        };
        let mode = params.str_or("scale_calculation_mode", "even")?;
        let scale_calculation_mode = ScaleRounding::from_name(mode).ok_or_else(|| {
            Error::framework(
                "ValueError",
                format!("Unsupported scale_calculation_mode: {mode}"),
                Stage::Init,
            )
        })?;
        if let Some(g) = group_size {
            if g == 0 || g < -1 {
                return Err(Error::param(
                    "group_size",
                    format!("must be a positive integer or -1, got {g}"),
                ));
            }
        }
        let spec = QuarkSpec {
            dtype,
            qscheme,
            symmetric,
            ch_axis,
            group_size,
            scale_type,
            float_zero_point,
            is_dynamic,
            scale_format,
            scale_calculation_mode,
        };
        spec.post_init_checks()?;
        Ok(spec)
    }
}

impl QuarkSpec {
    /// The checks of `QTensorConfig.__post_init__` that concern these fields.
    fn post_init_checks(&self) -> Result<()> {
        let name = self.dtype.name();
        let value_error = |m: String| Err(Error::framework("ValueError", m, Stage::Init));
        if self.dtype.is_int() && self.symmetric.is_none() {
            return value_error(format!(
                "The field `symmetric` cannot be None when Dtype is {name} in QTensorConfig. Please reconfigure the quantization settings accordingly."
            ));
        }
        match self.qscheme {
            QScheme::PerChannel if self.ch_axis.is_none() => value_error(
                "You select channel wise quant, user must assigned int num to ch_axis.".into(),
            ),
            QScheme::PerGroup if self.ch_axis.is_none() => value_error(
                "Got ch_axis=None in QTensorConfig initialization with qscheme=QSchemeType.per_group. A correct positive integer value is required for per-group quantization.".into(),
            ),
            QScheme::PerGroup if self.group_size.is_none() => value_error(
                "Got group_size=None in QTensorConfig initialization with qscheme=QSchemeType.per_group. A correct positive integer value is required for per-group quantization.".into(),
            ),
            _ => Ok(()),
        }
    }

    /// `(qmin, qmax)` of the dtype.
    pub fn qrange(&self) -> (f64, f64) {
        self.dtype.qrange()
    }

    /// `ch_axis` normalised against `ndim` (Python indexing), or an `IndexError` at forward.
    pub fn axis_for(&self, ndim: usize) -> Result<usize> {
        let axis = self.ch_axis.unwrap_or(0);
        let n = ndim.max(1) as i64;
        let a = if axis < 0 { axis + n } else { axis };
        if a < 0 || a >= n {
            return Err(Error::framework(
                "IndexError",
                format!(
                    "Dimension out of range (expected to be in range of [{}, {}], but got {axis})",
                    -n,
                    n - 1
                ),
                Stage::Forward,
            ));
        }
        Ok(a as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_validation() {
        let d = SpecDefaults::per_tensor(UNIFORM_DTYPES);
        let spec = d.parse(&Params::new()).unwrap();
        assert_eq!(spec.dtype, QuarkDtype::Int8);
        assert_eq!(spec.symmetric, Some(true));
        assert_eq!(spec.qrange(), (-128.0, 127.0));
        let p = Params::new().with("symmetric", Value::Null);
        let err = d.parse(&p).unwrap_err().to_string();
        assert!(
            err.starts_with("ValueError: The field `symmetric` cannot be None"),
            "{err}"
        );
        assert!(d.parse(&Params::new().with("dtype", "float16")).is_err());
        assert!(d
            .parse(&Params::new().with("qscheme", "per_channel"))
            .is_err());
        let err = d
            .parse(&Params::new().with("scale_calculation_mode", "nearest"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("Unsupported scale_calculation_mode"), "{err}");
        assert_eq!(QuarkDtype::Fp6E2m3.qrange(), (-7.5, 7.5));
        assert_eq!(QuarkDtype::Fp8E5m2.qrange(), (-57344.0, 57344.0));
        assert_eq!(QuarkDtype::Float16.qrange(), (-65504.0, 65504.0));
        for name in DTYPE_NAMES {
            assert_eq!(QuarkDtype::from_name(name).unwrap().name(), name);
        }
        for p in d.params() {
            p.validate(&p.default).unwrap();
        }
    }
}
