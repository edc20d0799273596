//! torchao 0.18.0 `choose_qparams_affine_with_min_max` and `_get_and_check_qmin_qmax`
//! (`quant_primitives.py`), all float32:
//!
//! * range: the dtype's bounds unless given; custom bounds outside them raise an
//!   `AssertionError` when qparams are computed;
//! * `min⁻ = min(min_val, 0)`, `max⁺ = max(max_val, 0)`; eps defaults to
//!   `finfo(float32).smallest_normal` = 1.1754944e−38 and is applied as a **clamp**
//!   (`scale = max(scale, eps)`), so an all-zero input gets that tiny scale;
//! * SYMMETRIC: `s = max(−min⁻, max⁺) / ((qmax − qmin)/2)` (127.5 for int8 and uint8);
//!   SYMMETRIC_NO_CLIPPING_ERR: `s = max(min⁻/qmin, max⁺/qmax)` (with qmin = 0 the first is
//!   −inf or NaN and never wins); both with zero point `int((qmax + qmin + 1)/2)` — 0 for
//!   int8, **128 for uint8**, 0 for float8 (`int(0.5)`) — created by `full_like(scale)`, so it
//!   **stays float32 unless `zero_point_dtype` is given**;
//! * ASYMMETRIC: `s = (max⁺ − min⁻)/(qmax − qmin)`, clamped to eps, then
//!   `zp = qmin − round_half_even(min⁻/s)` — **rounded before the subtraction and the clamp**
//!   to `[qmin, qmax]` — and int32 unless `zero_point_dtype` is given;
//! * finally the scale is cast to `scale_dtype` (bfloat16/float16 round to nearest even).

use super::args::{AffineArgs, MappingType, ScaleDtype, ZeroPointDtype};
use crate::error::{Error, Result, Stage};
use crate::formats::half_cast::HalfType;
use crate::kernels::torch::pointwise::float_to_int;
use crate::kernels::torch::{maximum, minimum};
use crate::quant::round_half_even;

/// `_get_and_check_qmin_qmax(target_dtype, quant_min, quant_max)`, raising at `stage`.
pub fn qmin_qmax(args: &AffineArgs, stage: Stage) -> Result<(f64, f64)> {
    let (lo, hi) = args.target_dtype.bounds();
    let qmin = args.quant_min.map_or(lo, |v| v as f64);
    let qmax = args.quant_max.map_or(hi, |v| v as f64);
    let show = |v: f64| {
        if args.target_dtype.is_float8() {
            format!("{v:.1}")
        } else {
            format!("{}", v as i64)
        }
    };
    if qmin < lo {
        return Err(Error::framework(
            "AssertionError",
            format!(
                "quant_min out of bound for dtype, quant_min_lower_bound: {} quant_min: {}",
                show(lo),
                show(qmin)
            ),
            stage,
        ));
    }
    if qmax > hi {
        return Err(Error::framework(
            "AssertionError",
            format!(
                "quant_max out of bound for dtype, quant_max_upper_bound: {} quant_max: {}",
                show(hi),
                show(qmax)
            ),
            stage,
        ));
    }
    Ok((qmin, qmax))
}

/// A scale cast to `scale_dtype` (as float32).
pub fn cast_scale(s: f32, dtype: Option<ScaleDtype>) -> f32 {
    match dtype {
        None | Some(ScaleDtype::Float32) => s,
        Some(ScaleDtype::Float16) => HalfType::Float16.round_trip(s),
        Some(ScaleDtype::Bfloat16) => HalfType::Bfloat16.round_trip(s),
    }
}

/// A zero point cast to `zero_point_dtype` (as float32).
pub fn cast_zero_point(zp: f32, dtype: ZeroPointDtype) -> f32 {
    match dtype {
        ZeroPointDtype::Int8 => float_to_int(zp, 8, true) as f32,
        ZeroPointDtype::Uint8 => float_to_int(zp, 8, false) as f32,
        ZeroPointDtype::Int16 => float_to_int(zp, 16, true) as f32,
        ZeroPointDtype::Int32 => float_to_int(zp, 32, true) as f32,
        ZeroPointDtype::Float32 => zp,
        ZeroPointDtype::Float16 => HalfType::Float16.round_trip(zp),
        ZeroPointDtype::Bfloat16 => HalfType::Bfloat16.round_trip(zp),
    }
}

/// Scales and zero points (zero points as the float32 value of their dtype) and the zero
/// point's dtype (`None`: float32 kept from `full_like(scale)`).
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    pub scale: Vec<f32>,
    pub zero_point: Vec<f32>,
    pub zero_point_dtype: ZeroPointDtype,
}

/// `torch.clamp(x, min=lo)` (NaN propagates).
fn clamp_min(x: f32, lo: f32) -> f32 {
    if x.is_nan() {
        x
    } else {
        x.max(lo)
    }
}

/// `choose_qparams_affine_with_min_max(min_val, max_val, …)` (see the module documentation).
pub fn choose_qparams(
    min_val: &[f32],
    max_val: &[f32],
    args: &AffineArgs,
    stage: Stage,
) -> Result<Chosen> {
    let (qmin, qmax) = qmin_qmax(args, stage)?;
    let eps = args.eps.map_or(f32::MIN_POSITIVE, |e| e as f32);
    let symmetric_zero = ((qmax + qmin + 1.0) / 2.0).trunc() as f32;
    let zero_point_dtype = args.zero_point_dtype.unwrap_or(match args.mapping_type {
        MappingType::Asymmetric => ZeroPointDtype::Int32,
        _ => ZeroPointDtype::Float32,
    });
    let (qmin32, qmax32) = (qmin as f32, qmax as f32);
    let mut scale = Vec::with_capacity(min_val.len());
    let mut zero_point = Vec::with_capacity(min_val.len());
    for (&lo, &hi) in min_val.iter().zip(max_val) {
        let min_neg = minimum(lo, 0.0);
        let max_pos = maximum(hi, 0.0);
        let (s, zp) = match args.mapping_type {
            MappingType::Symmetric => {
                let m = maximum(-min_neg, max_pos);
                let s = m / ((qmax - qmin) / 2.0) as f32;
                (clamp_min(s, eps), symmetric_zero)
            }
            MappingType::SymmetricNoClippingErr => {
                let smin = min_neg / qmin32;
                let smax = max_pos / qmax32;
                let s = if smin > smax { smin } else { smax };
                (clamp_min(s, eps), symmetric_zero)
            }
            MappingType::Asymmetric => {
                let s = clamp_min((max_pos - min_neg) / (qmax - qmin) as f32, eps);
                let zp = qmin32 - round_half_even(min_neg / s);
                let zp = if zp.is_nan() {
                    zp
                } else {
                    zp.max(qmin32).min(qmax32)
                };
                (s, zp)
            }
        };
        scale.push(cast_scale(s, args.scale_dtype));
        zero_point.push(cast_zero_point(zp, zero_point_dtype));
    }
    Ok(Chosen {
        scale,
        zero_point,
        zero_point_dtype,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::torchao::args::AffineArgsFields;
    use crate::params::{ParamSet, Params};
    use serde_json::json;

    fn args(v: serde_json::Value) -> AffineArgs {
        AffineArgsFields::from_params(&Params::from_value(v).unwrap())
            .unwrap()
            .resolve()
            .unwrap()
    }

    #[test]
    fn formulas_of_torchao() {
        let c = |v, lo: f32, hi: f32| {
            choose_qparams(&[lo], &[hi], &args(v), Stage::CalculateQparams).unwrap()
        };
        let sym = c(json!({}), -1.0, 2.55);
        assert_eq!((sym.scale[0], sym.zero_point[0]), (2.55f32 / 127.5, 0.0));
        assert_eq!(sym.zero_point_dtype, ZeroPointDtype::Float32);
        let u8sym = c(json!({"target_dtype": "uint8"}), -1.0, 1.0);
        assert_eq!(u8sym.zero_point[0], 128.0);
        // Asymmetric: rounded before the subtraction.
        let asym = c(
            json!({"mapping_type": "ASYMMETRIC", "target_dtype": "uint8"}),
            -1.0,
            3.0,
        );
        let s = 4.0f32 / 255.0;
        assert_eq!(asym.zero_point[0], 0.0 - (-1.0f32 / s).round_ties_even());
        assert_eq!(asym.zero_point_dtype, ZeroPointDtype::Int32);
        // All zeros: eps is a clamp.
        assert_eq!(c(json!({}), 0.0, 0.0).scale[0], f32::MIN_POSITIVE);
        let noclip = c(
            json!({"mapping_type": "SYMMETRIC_NO_CLIPPING_ERR", "target_dtype": "uint8"}),
            0.0,
            2.55,
        );
        assert_eq!(noclip.scale[0], 2.55f32 / 255.0);
        let err = choose_qparams(
            &[0.0],
            &[1.0],
            &args(json!({"quant_min": -200, "quant_max": 127})),
            Stage::CalculateQparams,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(err, "AssertionError: quant_min out of bound for dtype, quant_min_lower_bound: -128 quant_min: -200");
    }
}
