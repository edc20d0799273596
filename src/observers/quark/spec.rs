//! Quark's `QTensorConfig` resolved: the fields the observers read (dtype, qscheme, symmetric,
//! ch_axis, group_size, scale type/format, zero-point type, dynamic flag, E8M0 rounding) as one
//! validated [`QuarkConfig`], with the checks of `QTensorConfig.__post_init__`.
//!
//! Each observer declares the fields it reads, with its own defaults, in [`super::config`].

use super::dtype::QuarkDtype;
use crate::error::{Error, Result, Stage};
use crate::formats::e8m0::ScaleRounding;
use crate::formats::half_cast::HalfType;
use crate::params::Choice;

crate::choice_enum! {
    /// `QSchemeType`.
    pub enum QScheme {
        PerTensor = "per_tensor",
        PerChannel = "per_channel",
        PerGroup = "per_group",
    }
}

/// The `qscheme` an observer class is made for: a choice of one.
macro_rules! fixed_qscheme {
    ($(#[$meta:meta])* pub enum $name:ident { $variant:ident = $text:literal }) => {
        crate::choice_enum! {
            $(#[$meta])*
            pub enum $name { $variant = $text }
        }

        impl From<$name> for QScheme {
            fn from(_: $name) -> QScheme {
                QScheme::$variant
            }
        }
    };
}

fixed_qscheme! {
    /// `QSchemeType.per_tensor`, the only scheme of the per-tensor observers.
    pub enum PerTensorScheme { PerTensor = "per_tensor" }
}

fixed_qscheme! {
    /// `QSchemeType.per_channel`, the only scheme of `PerChannelMinMaxObserver`.
    pub enum PerChannelScheme { PerChannel = "per_channel" }
}

fixed_qscheme! {
    /// `QSchemeType.per_group`, the only scheme of the per-group and per-block observers.
    pub enum PerGroupScheme { PerGroup = "per_group" }
}

crate::choice_enum! {
    /// `ScaleType`: the dtype scales are cast to (`float`/`pof2`/`float32` leave float32
    /// scales unchanged).
    pub enum ScaleType {
        Float = "float",
        Pof2 = "pof2",
        Float32 = "float32",
        Float16 = "float16",
        Bfloat16 = "bfloat16",
    }
}

impl ScaleType {
    /// Cast a float32 scale like `scale.to(scale_torch_dtype)`.
    #[inline]
    pub fn cast(self, s: f32) -> f32 {
        match self {
            ScaleType::Float16 => HalfType::Float16.round_trip(s),
            ScaleType::Bfloat16 => HalfType::Bfloat16.round_trip(s),
            _ => s,
        }
    }
}

crate::choice_enum! {
    /// `ZeroPointType`.
    pub enum ZeroPointType { Int32 = "int32", Float32 = "float32" }
}

crate::choice_enum! {
    /// `RoundType`: the rounding of Quark's GPU kernels; on CPU Quark always rounds half to
    /// even, so it is validated and otherwise unused.
    pub enum RoundMethod { HalfEven = "half_even", Round = "round", Floor = "floor" }
}

crate::choice_enum! {
    /// `scale_format` of the fp4/MX scale computation (Quark's `e4m3`/`e5m3` two-level scales
    /// are not reproduced).
    pub enum ScaleFormat { E8m0 = "e8m0", Float32 = "float32" }
}

crate::choice_enum! {
    /// `scale_calculation_mode`: how an E8M0 scale is rounded ([`crate::formats::e8m0`]).
    pub enum ScaleCalculationMode { Even = "even", Floor = "floor", Ceil = "ceil" }
}

impl ScaleCalculationMode {
    /// The E8M0 rounding of this mode.
    pub fn rounding(self) -> ScaleRounding {
        match self {
            ScaleCalculationMode::Even => ScaleRounding::Even,
            ScaleCalculationMode::Floor => ScaleRounding::Floor,
            ScaleCalculationMode::Ceil => ScaleRounding::Ceil,
        }
    }
}

/// A resolved Quark tensor configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct QuarkConfig {
    pub dtype: QuarkDtype,
    pub qscheme: QScheme,
    pub symmetric: Option<bool>,
    /// `None` for the per-tensor observers, which do not read it.
    pub ch_axis: Option<i64>,
    /// `None` for the observers that do not read it.
    pub group_size: Option<i64>,
    pub scale_type: ScaleType,
    /// `zero_point_type == "float32"`.
    pub float_zero_point: bool,
    pub is_dynamic: bool,
    pub scale_format: Option<ScaleFormat>,
    pub scale_calculation_mode: ScaleRounding,
}

impl QuarkConfig {
    /// The checks of `QTensorConfig.__post_init__` that concern these fields, and quantscope's
    /// own refusal of a group size of 0.
    pub fn checked(self) -> Result<Self> {
        let name = self.dtype.name();
        if self.dtype.is_int() && self.symmetric.is_none() {
            return Err(Error::framework(
                "ValueError",
                format!(
                    "The field `symmetric` cannot be None when Dtype is {name} in QTensorConfig. Please reconfigure the quantization settings accordingly."
                ),
                Stage::Init,
            ));
        }
        if let Some(g) = self.group_size.filter(|&g| g == 0 || g < -1) {
            return Err(Error::param(
                "group_size",
                format!("must be a positive integer or -1, got {g}"),
            ));
        }
        Ok(self)
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

    /// `Int8PerTensorSpec`'s configuration with another dtype (for tests).
    #[cfg(test)]
    pub fn for_tests(dtype: QuarkDtype) -> Self {
        QuarkConfig {
            dtype,
            qscheme: QScheme::PerTensor,
            symmetric: Some(true),
            ch_axis: None,
            group_size: None,
            scale_type: ScaleType::Float,
            float_zero_point: false,
            is_dynamic: false,
            scale_format: None,
            scale_calculation_mode: ScaleRounding::Even,
        }
    }

    /// The same configuration with one scale for the whole tensor (how the default qparams of
    /// an observer that saw no data are applied).
    pub fn per_tensor(&self) -> Self {
        QuarkConfig {
            qscheme: QScheme::PerTensor,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dtype: QuarkDtype, symmetric: Option<bool>) -> QuarkConfig {
        QuarkConfig {
            symmetric,
            ch_axis: Some(-1),
            ..QuarkConfig::for_tests(dtype)
        }
    }

    #[test]
    fn post_init_checks_and_axes() {
        let err = spec(QuarkDtype::Int8, None)
            .checked()
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("ValueError: The field `symmetric` cannot be None"),
            "{err}"
        );
        assert!(spec(QuarkDtype::Fp4, None).checked().is_ok());
        let zero_groups = QuarkConfig {
            group_size: Some(0),
            ..spec(QuarkDtype::Int8, Some(true))
        };
        assert!(zero_groups
            .checked()
            .unwrap_err()
            .to_string()
            .contains("group_size"));
        let s = spec(QuarkDtype::Int8, Some(true));
        assert_eq!(s.axis_for(2).unwrap(), 1);
        assert_eq!(s.axis_for(0).unwrap(), 0, "a 0-d tensor counts as 1-d");
        let far = QuarkConfig {
            ch_axis: Some(2),
            ..s
        };
        assert!(far
            .axis_for(2)
            .unwrap_err()
            .to_string()
            .starts_with("IndexError"));
        assert_eq!(
            ScaleType::Float16.cast(0.1),
            half::f16::from_f32(0.1).to_f32()
        );
        assert_eq!(ScaleCalculationMode::Ceil.rounding(), ScaleRounding::Ceil);
    }
}
