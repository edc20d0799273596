//! ORT's `quant_utils`: `get_qmin_qmax_for_qType`, `compute_scale_zp` and `quantize_nparray`.
//!
//! * Ranges: uint8 0..255, int8 −128..127, uint16 0..65535, int16 −32768..32767, uint4 0..15,
//!   int4 −8..7; with `symmetric` int8 is **−127..127** and int16 −32767..32767 (the others keep
//!   their full range).
//! * `compute_scale_zp(rmin, rmax)`: `rmin = min(rmin, 0)`, `rmax = max(rmax, 0)` (float32);
//!   optionally `rmax = max(rmax, rmin + min_real_range)`; symmetric → `±max(|rmin|, |rmax|)`;
//!   `scale = (rmax − rmin)/(qmax − qmin)` in **float64**, then cast to float32; a scale below
//!   float32's smallest normal gives `(1.0, 0)`. Zero point: symmetric `round((qmin + qmax)/2)`,
//!   else `round(qmin − rmin/scale)` (float64, half to even).
//! * `quantize_nparray`: `clip(round_half_even(x / scale) + zp, qmin, qmax)` in float32 with the
//!   **full** type range (−128..127 even when the scale used −127..127); dequantized as
//!   `(q − zp)·scale`.

use crate::derivation::{self, Step};
use crate::observer::{QParams, ZeroPoint};
use crate::quant::round_half_even;
use serde_json::json;

crate::choice_enum! {
    /// An ONNX integer quantization type (`QuantType`), spelled as the `quant_type` parameter
    /// takes it.
    pub enum QuantType {
        UInt8 = "uint8",
        Int8 = "int8",
        UInt16 = "uint16",
        Int16 = "int16",
        UInt4 = "uint4",
        Int4 = "int4",
    }
}

impl QuantType {
    /// `get_qmin_qmax_for_qType(qType, reduce_range=False, symmetric)`.
    pub fn qmin_qmax(self, symmetric: bool) -> (i64, i64) {
        match (self, symmetric) {
            (QuantType::UInt8, _) => (0, 255),
            (QuantType::Int8, true) => (-127, 127),
            (QuantType::Int8, false) => (-128, 127),
            (QuantType::UInt16, _) => (0, 65535),
            (QuantType::Int16, true) => (-32767, 32767),
            (QuantType::Int16, false) => (-32768, 32767),
            (QuantType::UInt4, _) => (0, 15),
            (QuantType::Int4, _) => (-8, 7),
        }
    }
}

crate::declare_params! {
    /// How ORT's quantizer turns a calibrated range into scale and zero point
    /// (`get_qmin_qmax_for_qType`, `compute_scale_zp`). The calibraters never read them: they
    /// are search parameters of every ORT observer.
    pub struct QuantArgs {
        /// activation type the range is quantized to (ORT's default QUInt8)
        quant_type: QuantType = QuantType::UInt8; choice(), Search;
        /// ActivationSymmetric: symmetric compute_scale_zp (int8 then uses −127..127)
        qdq_symmetric: bool = false; boolean(), Search;
        /// MinimumRealRange: enforce rmax − rmin ≥ this before computing the scale
        min_real_range: Option<f64> = None; float(0.0, 1e30), Search;
    }
}

/// How the calibrated range becomes scale and zero point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantOptions {
    pub quant_type: QuantType,
    /// `ActivationSymmetric` / `WeightSymmetric`: the `symmetric` argument of `compute_scale_zp`
    /// and `get_qmin_qmax_for_qType`.
    pub symmetric: bool,
    /// `MinimumRealRange` (float32, as ORT compares it with the float32 range).
    pub min_real_range: Option<f32>,
}

impl QuantOptions {
    /// The options `args` select.
    pub fn resolve(args: &QuantArgs) -> Self {
        QuantOptions {
            quant_type: args.quant_type,
            symmetric: args.qdq_symmetric,
            min_real_range: args.min_real_range.map(|r| r as f32),
        }
    }
}

/// `compute_scale_zp(rmin, rmax, qmin, qmax, symmetric, min_real_range)` → `(zero_point, scale)`.
pub fn compute_scale_zp(
    rmin: f32,
    rmax: f32,
    qmin: i64,
    qmax: i64,
    symmetric: bool,
    min_real_range: Option<f32>,
) -> (i64, f32) {
    // np.minimum/np.maximum propagate NaN.
    let mut rmin = if rmin.is_nan() { rmin } else { rmin.min(0.0) };
    let mut rmax = if rmax.is_nan() { rmax } else { rmax.max(0.0) };
    if let Some(r) = min_real_range {
        let floor = rmin + r;
        if floor > rmax {
            rmax = floor;
        }
    }
    if symmetric {
        let absmax = if rmin.abs().is_nan() || rmax.abs().is_nan() {
            f32::NAN
        } else {
            rmin.abs().max(rmax.abs())
        };
        rmin = -absmax;
        rmax = absmax;
    }
    let dr = rmax as f64 - rmin as f64;
    let dq = qmax as f64 - qmin as f64;
    let scale = dr / dq;
    if scale < f32::MIN_POSITIVE as f64 {
        return (0, 1.0);
    }
    let zp = if symmetric {
        ((qmin + qmax) as f64 / 2.0).round_ties_even()
    } else {
        (qmin as f64 - rmin as f64 / scale).round_ties_even()
    };
    (zp as i64, scale as f32)
}

/// The [`QParams`] ORT derives from a calibrated range `(lowest, highest)`.
pub fn qparams_from_range(lo: f32, hi: f32, opts: &QuantOptions) -> QParams {
    let (qmin, qmax) = opts.quant_type.qmin_qmax(opts.symmetric);
    let (zp, scale) = compute_scale_zp(lo, hi, qmin, qmax, opts.symmetric, opts.min_real_range);
    let (clip_min, clip_max) = opts.quant_type.qmin_qmax(false);
    let mut q = QParams::int(
        vec![scale],
        ZeroPoint::Int(vec![zp]),
        clip_min,
        clip_max,
        vec![lo],
        vec![hi],
    );
    q.extra.insert("qmin_qmax".into(), json!([qmin, qmax]));
    derivation::record_qparams(
        || {
            let formula = if opts.symmetric {
                "absmax = max(|rmin|, |rmax|); s = float32(2·absmax / (qmax − qmin)) in float64; \
                 zp = round_half_even((qmin + qmax) / 2)"
            } else {
                "rmin = min(rmin, 0), rmax = max(rmax, 0); s = float32((rmax − rmin) / (qmax − qmin)) in float64; \
                 zp = round_half_even(qmin − rmin / s)"
            };
            Step::new(
                "Scale and zero point (compute_scale_zp)",
                formula,
                COMPUTE_SCALE_ZP,
            )
            .value("rmin", lo)
            .value("rmax", hi)
            .value("qmin", qmin)
            .value("qmax", qmax)
            .value("symmetric", opts.symmetric)
        },
        &[lo],
        &[hi],
        &q.scale,
        &q.zero_point,
    );
    q
}

/// `compute_scale_zp`, onnxruntime 1.31.1.
const COMPUTE_SCALE_ZP: &str = "onnxruntime/quantization/quant_utils.py:243 (onnxruntime 1.31.1)";

/// `quantize_nparray` followed by ORT's dequantization `(q − zp)·scale` of one value, all
/// float32 (a true division by the scale).
#[inline(always)]
pub fn qdq_value(v: f32, scale: f32, zp: f32, lo: f32, hi: f32) -> f32 {
    let qv = (round_half_even(v / scale) + zp).clamp(lo, hi);
    (qv - zp) * scale
}

/// `quantize_nparray` followed by ORT's dequantization `(q − zp)·scale` ([`qdq_value`]) with
/// per-tensor qparams, as a fused kernel (see [`crate::qdq`]): what the ORT observers'
/// `fake_quantize` runs.
pub fn qdq_kernel(q: &QParams) -> Option<Box<dyn crate::qdq::QdqKernel>> {
    let (quant_min, quant_max) = q.grid.int_range()?;
    if q.axis.is_some() || q.zero_point.is_empty() {
        return None;
    }
    let scale = *q.scale.first()?;
    let zp = q.zero_point.get_f64(0) as f32;
    let (lo, hi) = (quant_min as f32, quant_max as f32);
    if lo > hi {
        return None;
    }
    Some(Box::new(crate::qdq::PerTensor::new(q, move |v: f32| {
        qdq_value(v, scale, zp, lo, hi)
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Choice;
    use crate::tensor::Tensor;

    #[test]
    fn scale_is_float64_then_float32_and_zero_point_rounds_half_even() {
        // minmax-asym-normal: (−4.0231585, 3.9455497) on uint8.
        let (zp, s) = compute_scale_zp(
            -4.023158550262451f64 as f32,
            3.945549726486206f64 as f32,
            0,
            255,
            false,
            None,
        );
        assert_eq!(s as f64, 0.031249836087226868);
        assert_eq!(zp, 129);
        // Symmetric int8 uses −127..127: 120/127.
        let (zp, s) = compute_scale_zp(-120.0, 120.0, -127, 127, true, None);
        assert_eq!((zp, s as f64), (0, 0.9448819160461426));
        // uint8 symmetric: zero point round(127.5) = 128.
        assert_eq!(compute_scale_zp(-1.0, 1.0, 0, 255, true, None).0, 128);
        // An all-zero range: scale 1, zero point 0.
        assert_eq!(compute_scale_zp(0.0, 0.0, 0, 255, false, None), (0, 1.0));
        // A positive-only range still includes 0.
        let (zp, s) = compute_scale_zp(0.75, 0.75, 0, 255, false, None);
        assert_eq!((zp, s as f64), (0, 0.0029411765281111));
        // min_real_range widens rmax.
        let (_, s) = compute_scale_zp(0.0, 0.0, 0, 255, false, Some(2.55));
        assert_eq!(s, (2.55f32 as f64 / 255.0) as f32);
    }

    #[test]
    fn int8_symmetric_scales_with_127_but_clips_at_minus_128() {
        assert_eq!(QuantType::Int8.qmin_qmax(true), (-127, 127));
        let opts = QuantOptions {
            quant_type: QuantType::Int8,
            symmetric: true,
            min_real_range: None,
        };
        let q = qparams_from_range(-1.27, 1.27, &opts);
        assert_eq!(q.extra["qmin_qmax"], json!([-127, 127]));
        let x = Tensor::from_vec(vec![-5.0, 0.014, 0.026, 5.0]);
        let y = crate::qdq::fake_quantize(&x, qdq_kernel(&q).unwrap().as_ref());
        let s = q.scale[0];
        assert_eq!(y.data, vec![-128.0 * s, s, 3.0 * s, 127.0 * s]);
    }

    proptest::proptest! {
        #[test]
        fn zero_point_is_on_the_grid_and_zero_is_exact(
            lo in -1e4f32..1e4,
            span in 0f32..1e4,
            ty in 0usize..6,
            symmetric: bool,
        ) {
            let qt = QuantType::from_name(QuantType::OPTIONS[ty]).unwrap();
            let (qmin, qmax) = qt.qmin_qmax(symmetric);
            let (zp, scale) = compute_scale_zp(lo, lo + span, qmin, qmax, symmetric, None);
            proptest::prop_assert!(scale > 0.0);
            proptest::prop_assert!(zp >= qmin && zp <= qmax, "zp {} outside {}..{}", zp, qmin, qmax);
        }
    }
}
