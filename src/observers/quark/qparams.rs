//! `UniformScalingObserver.calculate_qparams`: min/max → scale and zero point, in float32.
//!
//! * int, symmetric: `amax = max(−min(min,0), max(max,0))`, `scale = max(amax / ((qmax−qmin)/2), ε)`
//!   — int8 divides by **127.5** — and `zp = 0` (also for uint8).
//! * int, asymmetric, int32 zero point: `scale = max((max⁺ − min⁻)/(qmax−qmin), ε)`,
//!   `zp = clamp(qmin − round_half_even(min⁻/scale), qmin, qmax)`.
//! * int, asymmetric, float32 zero point: `scale = (max − min)/(qmax−qmin)` (1.0 where `≤ ε`),
//!   `zp = −min/scale` (raw range, no zero inclusion).
//! * fp8: `scale = amax / fmax` (`ε` where 0), float zero points 0.
//! * fp4: the `scale_format` rule (`e8m0`: [`crate::formats::e8m0`], `float32`: `amax/6`), `ε`
//!   where 0.
//!
//! `ε` = 2⁻²³. A per-tensor observer that never saw data (`min = +inf`, `max = −inf`) gets
//! Quark's defaults `scale = [1.0]`, `zp = [0]` on the int path. fp6 dtypes reach the int path
//! with float ranges and fail Quark's `assert isinstance(quant_min, int)`.

use super::dtype::QuarkDtype;
use super::spec::{QuarkConfig, ScaleFormat};
use crate::derivation::Step;
use crate::error::{Error, Result, Stage};
use crate::formats::e8m0;
use crate::observer::ZeroPoint;

/// float32 machine epsilon, Quark's default `eps`.
pub const EPS: f32 = f32::EPSILON;

/// Scales and zero points, one per slice.
pub type ScaleZp = (Vec<f32>, ZeroPoint);

/// `torch.max(a, b)` of two float32 tensors (NaN propagates).
#[inline]
pub fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

/// `torch.min(a, b)` (NaN propagates).
#[inline]
pub fn nan_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.min(b)
    }
}

/// `UniformScalingObserver.calculate_qparams`, amd-quark 0.13.
pub const CALCULATE_QPARAMS: &str =
    "quark/torch/quantization/observer/observer.py:250 (amd-quark 0.13); \
     calculate_int_quant_params at :259, calculate_fp8_quant_parameters at :295, \
     calculate_fp4_quant_parameters at :314";

/// The derivation's step of [`calculate_qparams`] for `spec`, from a range that is `range`.
pub fn step(spec: &QuarkConfig, range: &str) -> Step {
    let formula = if spec.dtype.is_fp8() {
        "amax = max(|min(min, 0)|, |max(max, 0)|); s = amax / fmax (ε = 2⁻²³ where 0); zp = 0"
    } else if spec.dtype == QuarkDtype::Fp4 {
        "amax = max(|min(min, 0)|, |max(max, 0)|); s by the scale format: e8m0 (a power of two) or amax / 6"
    } else if spec.symmetric == Some(true) {
        "amax = max(−min(min, 0), max(max, 0)); s = max(amax / ((qmax − qmin) / 2), ε); zp = 0 \
         (int8: amax / 127.5)"
    } else if spec.float_zero_point {
        "s = (max − min) / (qmax − qmin), 1.0 where ≤ ε; zp = −min / s (float)"
    } else {
        "s = max((max(max, 0) − min(min, 0)) / (qmax − qmin), ε); \
         zp = clamp(qmin − round_half_even(min(min, 0) / s), qmin, qmax)"
    };
    let (qmin, qmax) = spec.qrange();
    Step::new(
        format!("Scale and zero point from {range}"),
        formula,
        CALCULATE_QPARAMS,
    )
    .value("qmin", qmin)
    .value("qmax", qmax)
}

/// Quark's default qparams of an observer without data.
pub fn default_qparams() -> ScaleZp {
    (vec![1.0], ZeroPoint::Int(vec![0]))
}

/// `UniformScalingObserver.calculate_qparams(min_val, max_val)`. `scalar` says the min/max
/// buffers are 0-d (per-tensor observers), which is when `check_min_max_valid` looks for the
/// "never observed" state and asserts `min <= max`.
pub fn calculate_qparams(
    spec: &QuarkConfig,
    min: &[f32],
    max: &[f32],
    scalar: bool,
) -> Result<ScaleZp> {
    if spec.dtype.is_fp8() {
        Ok(fp8_qparams(spec, min, max, EPS))
    } else if spec.dtype == QuarkDtype::Fp4 {
        fp4_qparams(spec, min, max)
    } else {
        int_qparams(spec, min, max, scalar)
    }
}

/// `check_min_max_valid`: `Ok(false)` means "return the defaults".
fn check_min_max_valid(min: &[f32], max: &[f32], scalar: bool) -> Result<bool> {
    if min.is_empty() || max.is_empty() {
        return Ok(false);
    }
    if scalar {
        let (lo, hi) = (min[0], max[0]);
        if lo == f32::INFINITY && hi == f32::NEG_INFINITY {
            return Ok(false);
        }
        if lo.is_nan() || hi.is_nan() || lo > hi {
            return Err(Error::framework(
                "AssertionError",
                format!("min {lo} should be less than max {hi}"),
                Stage::CalculateQparams,
            ));
        }
    } else if min
        .iter()
        .zip(max)
        .any(|(lo, hi)| lo.is_nan() || hi.is_nan() || lo > hi)
    {
        return Err(Error::framework(
            "RuntimeError",
            "min val should be less than max val",
            Stage::CalculateQparams,
        ));
    }
    Ok(true)
}

/// `calculate_int_quant_params`.
pub fn int_qparams(spec: &QuarkConfig, min: &[f32], max: &[f32], scalar: bool) -> Result<ScaleZp> {
    if !check_min_max_valid(min, max, scalar)? {
        return Ok(default_qparams());
    }
    if !spec.dtype.is_int() {
        // `assert isinstance(quant_min, int)` with fp6's float range.
        return Err(Error::framework(
            "AssertionError",
            "",
            Stage::CalculateQparams,
        ));
    }
    let (qmin, qmax) = spec.qrange();
    let span = (qmax - qmin) as f32;
    let eps = EPS;
    let n = min.len().min(max.len());
    let mut scale = Vec::with_capacity(n);
    if spec.symmetric == Some(true) {
        let half = ((qmax - qmin) / 2.0) as f32;
        for (&lo, &hi) in min.iter().zip(max) {
            let min_neg = nan_min(lo, 0.0);
            let max_pos = nan_max(hi, 0.0);
            let amax = nan_max(-min_neg, max_pos);
            scale.push(spec.scale_type.cast(nan_max(amax / half, eps)));
        }
        return Ok((scale, ZeroPoint::Int(vec![0; n])));
    }
    if spec.float_zero_point {
        let mut zp = Vec::with_capacity(n);
        for (&lo, &hi) in min.iter().zip(max) {
            let s = (hi - lo) / span;
            let s = if s > eps { s } else { 1.0 };
            zp.push(-lo / s);
            scale.push(spec.scale_type.cast(s));
        }
        return Ok((scale, ZeroPoint::Float(zp)));
    }
    let mut zp = Vec::with_capacity(n);
    for (&lo, &hi) in min.iter().zip(max) {
        let min_neg = nan_min(lo, 0.0);
        let max_pos = nan_max(hi, 0.0);
        let s = nan_max((max_pos - min_neg) / span, eps);
        let z = qmin as i64 - (min_neg / s).round_ties_even() as i64;
        zp.push(z.clamp(qmin as i64, qmax as i64));
        scale.push(spec.scale_type.cast(s));
    }
    Ok((scale, ZeroPoint::Int(zp)))
}

/// `calculate_fp8_quant_parameters` with Quark's `eps` (which [`super::mse`] can turn into 0).
pub fn fp8_qparams(spec: &QuarkConfig, min: &[f32], max: &[f32], eps: f32) -> ScaleZp {
    let (_, fmax) = spec.qrange();
    let scale: Vec<f32> = min
        .iter()
        .zip(max)
        .map(|(&lo, &hi)| {
            let amax = nan_max(nan_min(lo, 0.0).abs(), nan_max(hi, 0.0).abs());
            spec.scale_type
                .cast(float32_format_scale(spec, amax, fmax as f32, eps))
        })
        .collect();
    let n = scale.len();
    (scale, ZeroPoint::Float(vec![0.0; n]))
}

/// `get_scale(amax, eps, "float32")`: `amax / qmax` (in the scale dtype), `eps` where 0.
fn float32_format_scale(spec: &QuarkConfig, amax: f32, qmax: f32, eps: f32) -> f32 {
    let amax = spec.scale_type.cast(amax);
    let s = spec.scale_type.cast(amax / qmax);
    if s == 0.0 {
        spec.scale_type.cast(eps)
    } else {
        s
    }
}

/// `calculate_fp4_quant_parameters`.
fn fp4_qparams(spec: &QuarkConfig, min: &[f32], max: &[f32]) -> Result<ScaleZp> {
    let element = crate::formats::ElementFormat::Fp4E2m1;
    let mut scale = Vec::with_capacity(min.len());
    for (&lo, &hi) in min.iter().zip(max) {
        let amax = nan_max(nan_min(lo, 0.0).abs(), nan_max(hi, 0.0).abs());
        let s = match spec.scale_format {
            Some(ScaleFormat::E8m0) => {
                let s = e8m0::shared_scale(
                    amax,
                    element.mantissa_bits(),
                    element.emax(),
                    spec.scale_calculation_mode,
                );
                if s == 0.0 {
                    EPS
                } else {
                    s
                }
            }
            Some(ScaleFormat::Float32) => float32_format_scale(spec, amax, element.max(), EPS),
            None => return Err(Error::framework(
                "ValueError",
                "scale_format must be one of e8m0, e4m3, e5m3, or float32, got scale_format=None.",
                Stage::CalculateQparams,
            )),
        };
        let s = if s == 0.0 { EPS } else { s };
        scale.push(spec.scale_type.cast(s));
    }
    let n = scale.len();
    Ok((scale, ZeroPoint::Float(vec![0.0; n])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::quark::spec::{ScaleType, ZeroPointType};

    fn spec(dtype: QuarkDtype) -> QuarkConfig {
        QuarkConfig::for_tests(dtype)
    }

    fn asymmetric(dtype: QuarkDtype, zero_point: ZeroPointType) -> QuarkConfig {
        QuarkConfig {
            symmetric: Some(false),
            float_zero_point: zero_point == ZeroPointType::Float32,
            ..spec(dtype)
        }
    }

    #[test]
    fn symmetric_int8_divides_by_127_5_and_uint8_keeps_zp_0() {
        let s = spec(QuarkDtype::Int8);
        let (scale, zp) = calculate_qparams(&s, &[-45.0], &[120.0], true).unwrap();
        assert_eq!(scale, vec![120.0f32 / 127.5]);
        assert_eq!(zp, ZeroPoint::Int(vec![0]));
        let u = spec(QuarkDtype::Uint8);
        let (scale, zp) = calculate_qparams(&u, &[-1.0], &[2.0], true).unwrap();
        assert_eq!(scale, vec![2.0f32 / 127.5]);
        assert_eq!(zp, ZeroPoint::Int(vec![0]));
    }

    #[test]
    fn asymmetric_and_defaults() {
        let u = asymmetric(QuarkDtype::Uint8, ZeroPointType::Int32);
        let (scale, zp) = calculate_qparams(&u, &[-45.0], &[120.0], true).unwrap();
        assert_eq!(scale, vec![165.0f32 / 255.0]);
        assert_eq!(zp, ZeroPoint::Int(vec![70]));
        // Constant 0.75: range includes 0 → scale 0.75/255, zp 0.
        let (scale, zp) = calculate_qparams(&u, &[0.75], &[0.75], true).unwrap();
        assert_eq!(scale, vec![0.75f32 / 255.0]);
        assert_eq!(zp, ZeroPoint::Int(vec![0]));
        // Never observed.
        let (scale, zp) =
            calculate_qparams(&u, &[f32::INFINITY], &[f32::NEG_INFINITY], true).unwrap();
        assert_eq!((scale, zp), default_qparams());
        // All zeros → eps.
        let s = spec(QuarkDtype::Int8);
        assert_eq!(
            calculate_qparams(&s, &[0.0], &[0.0], true).unwrap().0,
            vec![EPS]
        );
        // Float zero point: raw range.
        let f = asymmetric(QuarkDtype::Uint8, ZeroPointType::Float32);
        let (scale, zp) = calculate_qparams(&f, &[1.0], &[3.55], false).unwrap();
        let want = (3.55f32 - 1.0) / 255.0;
        assert_eq!(scale, vec![want]);
        assert_eq!(zp, ZeroPoint::Float(vec![-1.0 / want]));
        let err = calculate_qparams(&s, &[2.0], &[1.0], true)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("AssertionError: min 2 should be less than max 1"),
            "{err}"
        );
    }

    #[test]
    fn float_dtypes() {
        let f8 = spec(QuarkDtype::Fp8E4m3);
        let (scale, zp) = calculate_qparams(&f8, &[-45.0], &[120.0], true).unwrap();
        assert_eq!(scale, vec![120.0f32 / 448.0]);
        assert_eq!(zp, ZeroPoint::Float(vec![0.0]));
        assert_eq!(
            calculate_qparams(&f8, &[0.0], &[0.0], true).unwrap().0,
            vec![EPS]
        );
        let f4 = spec(QuarkDtype::Fp4);
        assert!(calculate_qparams(&f4, &[-1.0], &[1.0], true).is_err());
        let f4 = QuarkConfig {
            scale_format: Some(ScaleFormat::E8m0),
            ..spec(QuarkDtype::Fp4)
        };
        assert_eq!(
            calculate_qparams(&f4, &[-1.0], &[7.0], true).unwrap().0,
            vec![2.0]
        );
        let f6 = spec(QuarkDtype::Fp6E2m3);
        let err = calculate_qparams(&f6, &[-1.0], &[1.0], true)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("AssertionError"), "{err}");
        let half = QuarkConfig {
            scale_type: ScaleType::Float16,
            ..spec(QuarkDtype::Int8)
        };
        let (scale, _) = calculate_qparams(&half, &[-1.0], &[1.0], true).unwrap();
        assert_eq!(scale, vec![half::f16::from_f32(1.0 / 127.5).to_f32()]);
    }
}
