//! The constructor arguments of torchao 0.18.0's `AffineQuantizedObserverBase`
//! (`torchao/quantization/observer.py`) as flat parameters.
//!
//! `granularity` names the class and its own argument is a parameter of its own: `axis`
//! (`PerAxis(axis)`), `group_size` (`PerGroup(group_size)`), `dim` (`PerRow(dim)`) and
//! `block_size` (`PerBlock(block_size)`, written `"AxB"`). `zero_point_domain` takes the enum's
//! names plus `"None"` for Python's `None`, which the constructor refuses (`ValueError`).
//! `preserve_zero=False` only warns (deprecated) and changes nothing.

use crate::error::{Error, Result, Stage};

crate::choice_enum! {
    /// `MappingType`.
    pub enum MappingType {
        Symmetric = "SYMMETRIC",
        SymmetricNoClippingErr = "SYMMETRIC_NO_CLIPPING_ERR",
        Asymmetric = "ASYMMETRIC",
    }
}

crate::choice_enum! {
    /// `target_dtype` (`torch.<name>`): the integer types with their ranges (sub-byte ones
    /// included) and the float8 types (range ±finfo.max).
    pub enum TargetDtype {
        Int8 = "int8",
        Uint8 = "uint8",
        Int16 = "int16",
        Int32 = "int32",
        Int1 = "int1",
        Int2 = "int2",
        Int3 = "int3",
        Int4 = "int4",
        Int5 = "int5",
        Int6 = "int6",
        Int7 = "int7",
        Uint1 = "uint1",
        Uint2 = "uint2",
        Uint3 = "uint3",
        Uint4 = "uint4",
        Uint5 = "uint5",
        Uint6 = "uint6",
        Uint7 = "uint7",
        Float8E4m3fn = "float8_e4m3fn",
        Float8E5m2 = "float8_e5m2",
    }
}

impl TargetDtype {
    /// `_DTYPE_TO_QVALUE_BOUNDS` / `finfo` bounds.
    pub fn bounds(self) -> (f64, f64) {
        use TargetDtype::*;
        let signed = |b: i32| (-(2f64.powi(b - 1)), 2f64.powi(b - 1) - 1.0);
        let unsigned = |b: i32| (0.0, 2f64.powi(b) - 1.0);
        match self {
            Int8 => signed(8),
            Uint8 => unsigned(8),
            Int16 => signed(16),
            Int32 => signed(32),
            Int1 => signed(1),
            Int2 => signed(2),
            Int3 => signed(3),
            Int4 => signed(4),
            Int5 => signed(5),
            Int6 => signed(6),
            Int7 => signed(7),
            Uint1 => unsigned(1),
            Uint2 => unsigned(2),
            Uint3 => unsigned(3),
            Uint4 => unsigned(4),
            Uint5 => unsigned(5),
            Uint6 => unsigned(6),
            Uint7 => unsigned(7),
            Float8E4m3fn => (-448.0, 448.0),
            Float8E5m2 => (-57344.0, 57344.0),
        }
    }

    /// float8 targets (bounds are floats, `quantize_affine` casts to float8).
    pub fn is_float8(self) -> bool {
        matches!(self, TargetDtype::Float8E4m3fn | TargetDtype::Float8E5m2)
    }

    /// `torch.int1` … `torch.int7`: `quantize_affine` cannot cast to them on CPU.
    pub fn is_sub_byte_signed(self) -> bool {
        use TargetDtype::*;
        matches!(self, Int1 | Int2 | Int3 | Int4 | Int5 | Int6 | Int7)
    }
}

crate::choice_enum! {
    /// The granularity class.
    pub enum GranularityKind {
        PerTensor = "PerTensor",
        PerAxis = "PerAxis",
        PerGroup = "PerGroup",
        PerRow = "PerRow",
        PerToken = "PerToken",
        PerBlock = "PerBlock",
    }
}

crate::choice_enum! {
    /// `scale_dtype`.
    pub enum ScaleDtype { Float32 = "float32", Float16 = "float16", Bfloat16 = "bfloat16" }
}

crate::choice_enum! {
    /// `zero_point_dtype`.
    pub enum ZeroPointDtype {
        Int8 = "int8",
        Uint8 = "uint8",
        Int16 = "int16",
        Int32 = "int32",
        Float32 = "float32",
        Float16 = "float16",
        Bfloat16 = "bfloat16",
    }
}

crate::choice_enum! {
    /// `ZeroPointDomain` (`None`: Python's `None`).
    pub enum ZeroPointDomain { Int = "INT", Float = "FLOAT", NoZeroPoint = "NONE", PythonNone = "None" }
}

/// Declares the shared argument set; `$affects` is what the quantization fields (mapping,
/// dtypes, range, eps, domain) change: only `calculate_qparams` (`Search`) or also the search
/// in `forward` (`Data`).
macro_rules! affine_args {
    ($(#[$meta:meta])* $name:ident, $affects:ident) => {
        crate::declare_params! {
            $(#[$meta])*
            pub struct $name {
                /// SYMMETRIC, SYMMETRIC_NO_CLIPPING_ERR or ASYMMETRIC
                mapping_type: MappingType = MappingType::Symmetric; choice(), $affects;
                /// quantized dtype (sets the default range: int8 −128..127, uint4 0..15, float8 ±448, …)
                target_dtype: TargetDtype = TargetDtype::Int8; choice(), $affects;
                /// PerTensor, PerAxis(axis), PerGroup(group_size), PerRow(dim), PerToken or PerBlock(block_size)
                granularity: GranularityKind = GranularityKind::PerTensor; choice(), Data;
                /// PerAxis: the axis kept (one qparam per index along it)
                axis: i64 = 0; int(-8, 7), Data;
                /// PerGroup: elements per group along the last dim
                group_size: i64 = 128; int(1, 65536), Data;
                /// PerRow: the dim reduced (−1: one qparam per row)
                dim: i64 = -1; int(-8, 7), Data;
                /// PerBlock: block shape "AxB" (left-padded with 1s)
                block_size: Option<String> = None; text(), Data;
                /// lower end of the range (default from target_dtype)
                quant_min: Option<i64> = None; int(i32::MIN as i64, i32::MAX as i64), $affects;
                /// upper end of the range (default from target_dtype)
                quant_max: Option<i64> = None; int(i32::MIN as i64, i32::MAX as i64), $affects;
                /// smallest scale (a clamp; default finfo(float32).smallest_normal)
                eps: Option<f64> = None; log_float(0.0, f32::MAX as f64), $affects;
                /// dtype the scale is cast to (default float32)
                scale_dtype: Option<ScaleDtype> = None; choice(), $affects;
                /// dtype of the zero point (default: float32 when symmetric, int32 when asymmetric)
                zero_point_dtype: Option<ZeroPointDtype> = None; choice(), $affects;
                /// deprecated: False only warns
                preserve_zero: bool = true; boolean(), Search;
                /// INT (integer zero point), FLOAT (tinygemm offset, deprecated) or NONE (no zero point)
                zero_point_domain: ZeroPointDomain = ZeroPointDomain::Int; choice(), $affects;
            }
        }

        impl $name {
            /// `AffineQuantizedObserverBase.__init__`.
            pub fn resolve(&self) -> Result<AffineArgs> {
                AffineArgs::resolve(RawArgs {
                    mapping_type: self.mapping_type,
                    target_dtype: self.target_dtype,
                    granularity: self.granularity,
                    axis: self.axis,
                    group_size: self.group_size,
                    dim: self.dim,
                    block_size: self.block_size.as_deref(),
                    quant_min: self.quant_min,
                    quant_max: self.quant_max,
                    eps: self.eps,
                    scale_dtype: self.scale_dtype,
                    zero_point_dtype: self.zero_point_dtype,
                    zero_point_domain: self.zero_point_domain,
                })
            }
        }
    };
}

affine_args!(
    /// Arguments of an observer whose quantization fields only enter `calculate_qparams`.
    AffineArgsFields,
    Search
);

affine_args!(
    /// Arguments of an observer whose search in `forward` uses every field.
    SearchedAffineArgsFields,
    Data
);

struct RawArgs<'a> {
    mapping_type: MappingType,
    target_dtype: TargetDtype,
    granularity: GranularityKind,
    axis: i64,
    group_size: i64,
    dim: i64,
    block_size: Option<&'a str>,
    quant_min: Option<i64>,
    quant_max: Option<i64>,
    eps: Option<f64>,
    scale_dtype: Option<ScaleDtype>,
    zero_point_dtype: Option<ZeroPointDtype>,
    zero_point_domain: ZeroPointDomain,
}

/// A granularity object.
#[derive(Debug, Clone, PartialEq)]
pub enum Granularity {
    PerTensor,
    PerAxis(i64),
    PerGroup(usize),
    PerRow(i64),
    PerToken,
    PerBlock(Vec<usize>),
}

impl Granularity {
    /// The registry's name for this granularity (`PerAxis`, `PerRow` and `PerToken` keep one
    /// qparam per index of an axis).
    pub fn shape(&self) -> crate::observer::Granularity {
        use crate::observer::Granularity as G;
        match self {
            Granularity::PerTensor => G::PerTensor,
            Granularity::PerAxis(_) | Granularity::PerRow(_) | Granularity::PerToken => {
                G::PerChannel
            }
            Granularity::PerGroup(_) => G::PerGroup,
            Granularity::PerBlock(_) => G::PerBlock,
        }
    }
}

/// The observer's arguments after its constructor.
#[derive(Debug, Clone, PartialEq)]
pub struct AffineArgs {
    pub mapping_type: MappingType,
    pub target_dtype: TargetDtype,
    pub granularity: Granularity,
    pub quant_min: Option<i64>,
    pub quant_max: Option<i64>,
    pub eps: Option<f64>,
    pub scale_dtype: Option<ScaleDtype>,
    pub zero_point_dtype: Option<ZeroPointDtype>,
    /// INT, FLOAT or NONE (Python `None` is refused).
    pub zero_point_domain: ZeroPointDomain,
}

fn init_error(kind: &str, message: &str) -> Error {
    Error::framework(kind, message, Stage::Init)
}

impl AffineArgs {
    fn resolve(raw: RawArgs<'_>) -> Result<AffineArgs> {
        let granularity = match raw.granularity {
            GranularityKind::PerTensor => Granularity::PerTensor,
            GranularityKind::PerAxis => Granularity::PerAxis(raw.axis),
            GranularityKind::PerGroup => Granularity::PerGroup(raw.group_size.max(1) as usize),
            GranularityKind::PerRow => Granularity::PerRow(raw.dim),
            GranularityKind::PerToken => Granularity::PerToken,
            GranularityKind::PerBlock => {
                let text = raw.block_size.ok_or_else(|| {
                    init_error(
                        "TypeError",
                        "PerBlock.__init__() missing 1 required positional argument: 'block_size'",
                    )
                })?;
                Granularity::PerBlock(parse_shape(text).ok_or_else(|| {
                    Error::param(
                        "block_size",
                        format!("expected a block shape such as \"32x64\", got {text:?}"),
                    )
                })?)
            }
        };
        if raw.zero_point_domain == ZeroPointDomain::PythonNone {
            return Err(init_error(
                "ValueError",
                "Please use ZeroPointDomain.NONE instead of None",
            ));
        }
        Ok(AffineArgs {
            mapping_type: raw.mapping_type,
            target_dtype: raw.target_dtype,
            granularity,
            quant_min: raw.quant_min,
            quant_max: raw.quant_max,
            eps: raw.eps,
            scale_dtype: raw.scale_dtype,
            zero_point_dtype: raw.zero_point_dtype,
            zero_point_domain: raw.zero_point_domain,
        })
    }
}

/// `"32x64"` (or `"[32, 64]"`) → `[32, 64]`, every entry positive.
fn parse_shape(text: &str) -> Option<Vec<usize>> {
    let trimmed = text
        .trim()
        .trim_start_matches(['[', '('])
        .trim_end_matches([']', ')']);
    let sep = if trimmed.contains('x') { 'x' } else { ',' };
    let dims: Option<Vec<usize>> = trimmed
        .split(sep)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().ok().filter(|v| *v > 0))
        .collect();
    dims.filter(|d| !d.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ParamSet, Params};
    use serde_json::json;

    fn resolve(v: serde_json::Value) -> Result<AffineArgs> {
        AffineArgsFields::from_params(&Params::from_value(v).unwrap())?.resolve()
    }

    #[test]
    fn granularities_and_refusals() {
        assert_eq!(
            resolve(json!({"granularity": "PerBlock", "block_size": "32x64"}))
                .unwrap()
                .granularity,
            Granularity::PerBlock(vec![32, 64])
        );
        assert_eq!(
            resolve(json!({"granularity": "PerRow"}))
                .unwrap()
                .granularity,
            Granularity::PerRow(-1)
        );
        assert_eq!(
            resolve(json!({"zero_point_domain": "None"}))
                .unwrap_err()
                .to_string(),
            "ValueError: Please use ZeroPointDomain.NONE instead of None"
        );
        assert!(resolve(json!({"granularity": "PerBlock"})).is_err());
        assert!(resolve(json!({"granularity": "PerBlock", "block_size": "0x3"})).is_err());
        assert_eq!(TargetDtype::Uint4.bounds(), (0.0, 15.0));
        assert_eq!(TargetDtype::Int4.bounds(), (-8.0, 7.0));
    }
}
