//! compressed-tensors 0.19.0 `calculate_qparams`, `calculate_range` and `generate_gparam`
//! (`quantization/utils/helpers.py`, `utils/mxfp_utils.py`), all float32:
//!
//! * range: INT `−2^(b−1) … 2^(b−1) − 1`, FP8 `±448`, FP4 `±6`; `bit_range = qmax − qmin`;
//! * `min = min(min_val, 0)`, `max = max(max_val, 0)`;
//! * symmetric: `s = max(|min|, |max|) / (bit_range / 2)` — **127.5** for int8 and 7.5 for
//!   int4, so +absmax maps to 127.5 and is clipped to 127 —, zero point 0; MX (float 4/8 bits,
//!   group 32, `scale_dtype` uint8): `s = 127 + ⌊log2 p⌋ − (2 | 8)` with `p` = absmax rounded
//!   to a power of two by adding `2^21` to its float32 bits and masking the mantissa (the FP4
//!   rounding point, also for MXFP8);
//! * asymmetric: `s = (max − min) / bit_range`, `zp = qmin − min / s` — a true division, **not
//!   rounded before the clamp** to `[qmin, qmax]`; asymmetric FP4 raises;
//! * then `s ← global_scale · s`, rounded to `scale_dtype` (FP8: clamp ±448, round to nearest
//!   even), MX exponents `e` become `2^(e − 127)`, and **only `s == 0`** is replaced by eps
//!   (`finfo(float32).eps`, 0.125 for FP8 scales, 1 for integer ones);
//! * the zero point is clamped, rounded half to even and cast to `zp_dtype` — after the scale
//!   was fixed, so an all-zero asymmetric input gives `zp = qmin − 0/0 = NaN`, which the int8
//!   cast turns into 0 on x86;
//! * NVFP4's global scale: `448·6 / max(absmax, finfo.tiny)` over the whole tensor, NaN/inf →
//!   1.

use super::args::{QuantArgs, QuantizationType, ScaleDtype, ZpDtype};
use crate::error::{Error, Result, Stage};
use crate::formats::half_cast::HalfType;
use crate::formats::ElementFormat;
use crate::kernels::torch::pointwise::float_to_int;
use crate::quant::round_half_even;

/// `calculate_range(args)`: `(q_min, q_max)` as float32.
pub fn calculate_range(args: &QuantArgs) -> Result<(f32, f32)> {
    match args.qtype {
        QuantizationType::Int => {
            let range = 2f64.powi(args.num_bits as i32);
            Ok((-(range / 2.0) as f32, (range / 2.0 - 1.0) as f32))
        }
        QuantizationType::Float => match args.num_bits {
            8 => Ok((-448.0, 448.0)),
            4 => Ok((-6.0, 6.0)),
            _ => Err(Error::framework(
                "NotImplementedError",
                "Range calculation only supported for 4 and 8 bits",
                Stage::CalculateQparams,
            )),
        },
    }
}

/// Scales and zero points of one `calculate_qparams` call (zero points as the float32 value
/// of their `zp_dtype`).
#[derive(Debug, Clone, PartialEq)]
pub struct Computed {
    pub scale: Vec<f32>,
    pub zero_point: Vec<f32>,
}

/// `should_generate_mx_scales(args)`.
pub fn is_mx(args: &QuantArgs) -> bool {
    matches!(args.num_bits, 4 | 8)
        && args.qtype == QuantizationType::Float
        && args.group_size == Some(32)
        && args.scale_dtype == Some(ScaleDtype::Uint8)
}

/// `round_to_power_2`: add `2^21` to the float32 bits, keep sign and exponent.
fn round_to_power_2(x: f32) -> f32 {
    let bits = (x.to_bits() as i32).wrapping_add(1 << 21);
    f32::from_bits((bits & (0x1ff << 23)) as u32)
}

/// `generate_mx_scales`: the biased E8M0 exponent (as float32) of a group's absmax.
fn mx_exponent(absmax: f32, num_bits: u32) -> f32 {
    let offset = if num_bits == 4 { 2.0 } else { 8.0 };
    127.0 + round_to_power_2(absmax).log2().floor() - offset
}

/// `round_to_quantized_type_dtype(x, dtype)` for a scale (kept in float32).
fn round_scale(x: f32, dtype: ScaleDtype) -> f32 {
    match dtype {
        ScaleDtype::Float32 => x,
        ScaleDtype::Float16 => HalfType::Float16.round_trip(torch_clamp(x, -65504.0, 65504.0)),
        ScaleDtype::Bfloat16 => HalfType::Bfloat16.round_trip(x),
        ScaleDtype::Float8E4m3fn => ElementFormat::Fp8E4m3.quantize(torch_clamp(x, -448.0, 448.0)),
        ScaleDtype::Uint8 => {
            float_to_int(round_half_even(torch_clamp(x, 0.0, 255.0)), 8, false) as f32
        }
    }
}

/// `torch.clamp` (NaN propagates).
fn torch_clamp(x: f32, lo: f32, hi: f32) -> f32 {
    if x.is_nan() {
        x
    } else {
        x.max(lo).min(hi)
    }
}

/// `round_to_quantized_type_dtype(zp, zp_dtype, cast_to_original_dtype=False)`, as float32.
pub fn cast_zero_point(zp: f32, dtype: ZpDtype) -> f32 {
    let int = |lo: f32, hi: f32, bits: u32, signed: bool| {
        float_to_int(round_half_even(torch_clamp(zp, lo, hi)), bits, signed) as f32
    };
    match dtype {
        ZpDtype::Int8 => int(-128.0, 127.0, 8, true),
        ZpDtype::Uint8 => int(0.0, 255.0, 8, false),
        ZpDtype::Int16 => int(-32768.0, 32767.0, 16, true),
        ZpDtype::Int32 => int(-2_147_483_648.0, 2_147_483_647.0, 32, true),
        ZpDtype::Float8E4m3fn => ElementFormat::Fp8E4m3.quantize(torch_clamp(zp, -448.0, 448.0)),
        ZpDtype::Float16 => HalfType::Float16.round_trip(torch_clamp(zp, -65504.0, 65504.0)),
        ZpDtype::Bfloat16 => HalfType::Bfloat16.round_trip(zp),
        ZpDtype::Float32 => zp,
    }
}

/// True for zero-point dtypes that hold integers.
pub fn integer_zero_point(dtype: ZpDtype) -> bool {
    matches!(
        dtype,
        ZpDtype::Int8 | ZpDtype::Uint8 | ZpDtype::Int16 | ZpDtype::Int32
    )
}

/// `_get_dtype_eps(scale_dtype or float32)`.
fn scale_eps(dtype: Option<ScaleDtype>) -> f32 {
    match dtype {
        None | Some(ScaleDtype::Float32) => f32::EPSILON,
        Some(ScaleDtype::Float16) => half::f16::EPSILON.to_f32(),
        Some(ScaleDtype::Bfloat16) => half::bf16::EPSILON.to_f32(),
        Some(ScaleDtype::Float8E4m3fn) => 0.125,
        Some(ScaleDtype::Uint8) => 1.0,
    }
}

/// `calculate_qparams(min_vals, max_vals, args, global_scale)`; `stage` is where an error is
/// raised (`forward` inside an MSE search, `calculate_qparams` from `get_qparams`).
pub fn calculate_qparams(
    min_vals: &[f32],
    max_vals: &[f32],
    args: &QuantArgs,
    global_scale: Option<f32>,
    stage: Stage,
) -> Result<Computed> {
    let (qmin, qmax) = calculate_range(args).map_err(|e| at_stage(e, stage))?;
    let bit_range = qmax - qmin;
    if !args.symmetric && args.qtype == QuantizationType::Float && args.num_bits == 4 {
        return Err(Error::framework(
            "NotImplementedError",
            "Asymmetric Quantization is not supported for FP4",
            stage,
        ));
    }
    let mx = is_mx(args);
    let eps = scale_eps(args.scale_dtype);
    let mut scale = Vec::with_capacity(min_vals.len());
    let mut zero_point = Vec::with_capacity(min_vals.len());
    for (&lo, &hi) in min_vals.iter().zip(max_vals) {
        let lo = torch_min(lo, 0.0);
        let hi = torch_max(hi, 0.0);
        let (mut s, zp) = if args.symmetric {
            let amax = torch_max(lo.abs(), hi.abs());
            let s = if mx {
                mx_exponent(amax, args.num_bits)
            } else {
                amax / (bit_range / 2.0)
            };
            (s, 0.0f32)
        } else {
            let s = (hi - lo) / bit_range;
            (s, torch_clamp(qmin - lo / s, qmin, qmax))
        };
        if let Some(g) = global_scale {
            s *= g;
        }
        if let Some(dtype) = args.scale_dtype {
            s = round_scale(s, dtype);
        }
        if mx {
            s = exp2_int(float_to_int(s, 32, true) - 127);
        }
        if s == 0.0 {
            s = eps;
        }
        scale.push(s);
        zero_point.push(cast_zero_point(zp, args.zp_dtype));
    }
    Ok(Computed { scale, zero_point })
}

/// A framework error moved to `stage` (where the caller raises it).
pub fn at_stage(e: Error, stage: Stage) -> Error {
    match e {
        Error::Framework { kind, message, .. } => Error::Framework {
            kind,
            message,
            stage,
        },
        other => other,
    }
}

/// `torch.min(a, b)` element-wise (NaN propagates).
fn torch_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.min(b)
    }
}

/// `torch.max(a, b)` element-wise (NaN propagates).
fn torch_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

/// `2.0 ** e` as float32 for an integer exponent (exact, subnormal or infinite at the ends).
fn exp2_int(e: i64) -> f32 {
    (2f64).powi(e.clamp(-200, 200) as i32) as f32
}

/// `generate_gparam(−absmax, absmax)` for NVFP4: `448·6 / max(absmax, tiny)`, NaN/±inf → 1.
pub fn global_scale(absmax: f32) -> f32 {
    let a = torch_max(torch_min(-absmax, 0.0).abs(), torch_max(absmax, 0.0).abs());
    let a = if a.is_nan() {
        a
    } else {
        a.max(f32::MIN_POSITIVE)
    };
    let g = 2688.0f32 / a;
    if g.is_finite() {
        g
    } else {
        1.0
    }
}

/// The absmax over a whole tensor's statistics, as `Observer.get_global_scale` folds it:
/// `max(max(max_vals), −min(min_vals))`.
pub fn global_absmax(min_vals: &[f32], max_vals: &[f32]) -> f32 {
    let reduce = |v: &[f32], f: fn(f32, f32) -> f32, init: f32| {
        v.iter().fold(init, |a, &b| {
            if a.is_nan() || b.is_nan() {
                f32::NAN
            } else {
                f(a, b)
            }
        })
    };
    let top = reduce(max_vals, f32::max, f32::NEG_INFINITY);
    let bottom = reduce(min_vals, f32::min, f32::INFINITY);
    torch_max(torch_max(top, -bottom), top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::llmcompressor::args::tests::valid as args;
    use serde_json::json;

    #[test]
    fn formulas_of_compressed_tensors() {
        let q = |v, lo: f32, hi: f32| {
            calculate_qparams(&[lo], &[hi], &args(v), None, Stage::CalculateQparams).unwrap()
        };
        // Symmetric int8 divides by 127.5.
        assert_eq!(q(json!({}), -1.0, 2.55).scale, vec![2.55f32 / 127.5]);
        // Asymmetric: zp = qmin − min/s, unrounded before the clamp, then rounded to int8.
        let c = q(json!({"symmetric": false}), -1.0, 3.0);
        assert_eq!(c.scale, vec![4.0f32 / 255.0]);
        assert_eq!(
            c.zero_point,
            vec![(-128.0f32 + 1.0 / (4.0f32 / 255.0)).round_ties_even()]
        );
        // All zeros, asymmetric: NaN zero point cast to int8 → 0; scale replaced by eps.
        let c = q(json!({"symmetric": false}), 0.0, 0.0);
        assert_eq!((c.scale[0], c.zero_point[0]), (f32::EPSILON, 0.0));
        // MXFP4: absmax 5 → 4 after rounding to a power of two → 2^(2 − 2) = 1.
        let mx = json!({"type": "float", "num_bits": 4, "group_size": 32, "scale_dtype": "uint8", "zp_dtype": "uint8"});
        assert_eq!(q(mx, -5.0, 1.0).scale, vec![1.0]);
        let fp4 = json!({"type": "float", "num_bits": 4, "symmetric": false, "group_size": 16});
        let err = calculate_qparams(&[0.0], &[1.0], &args(fp4), None, Stage::Forward)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "NotImplementedError: Asymmetric Quantization is not supported for FP4"
        );
        // 2688 / tiny overflows float32: replaced by 1.
        assert_eq!(global_scale(0.0), 1.0);
        assert_eq!(global_scale(2.0), 1344.0);
        assert_eq!(global_scale(f32::NAN), 1.0);
        assert_eq!(global_absmax(&[-3.0, 1.0], &[2.0, 2.5]), 3.0);
    }
}
