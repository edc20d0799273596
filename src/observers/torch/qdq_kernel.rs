//! PyTorch's fake quantization ([`super::fake_quant`]) as fused kernels ([`crate::qdq`]).
//!
//! The kernels compute in float32 what [`super::fake_quant::fake_quantize`] computes through
//! int64, with the same bits, whenever `qmin`, `qmax` (and, per tensor, the integer zero point)
//! lie within ±2²⁴, where float32 holds every integer exactly:
//!
//! * `t = float32(zp) + round_half_even(x·(1/s))` is integral (or ±∞/NaN); PyTorch's
//!   `static_cast<int64_t>` turns NaN and `t ≥ 2⁶³` into `i64::MIN` (x86), which the clamp
//!   sends to `qmin`, and clamps everything else to `[qmin, qmax]` — the same as a float32
//!   clamp once those two cases are mapped to `qmin`;
//! * per tensor, `float32(q − zp)` of integers within ±2²⁵ rounds like the float32
//!   subtraction of their exact float32 values; per channel, `(q − zp)·s` is float64 either way;
//! * a float zero point goes through `fma(x, 1/s, zp)` as PyTorch's kernel does.
//!
//! Outside those ranges (qint32 grids) there is no kernel and the driver falls back to
//! `fake_quantize`.

use crate::observer::{QParams, ZeroPoint};
use crate::qdq::{PerChannel, PerTensor, QdqKernel};
use crate::quant::round_half_even;

/// Largest magnitude below which float32 holds every integer.
const EXACT: i64 = 1 << 24;
/// `2⁶³`: from here on (and for NaN) the int64 cast gives `i64::MIN`.
const INT64_LIMIT: f32 = 9_223_372_036_854_775_808.0;

/// `clamp(static_cast<int64_t>(t), qmin, qmax)` for an integral float32 `t`, in float32.
#[inline(always)]
fn clamp_like_int64(t: f32, qmin: f32, qmax: f32) -> f32 {
    let t = if t < INT64_LIMIT { t } else { qmin };
    let t = if t < qmin { qmin } else { t };
    if t > qmax {
        qmax
    } else {
        t
    }
}

/// The kernel of PyTorch's fake quantization with `q` on tensors of `shape`, when one applies.
pub fn kernel(shape: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
    let (quant_min, quant_max) = q.grid.int_range()?;
    let exact = |v: i64| (-EXACT..=EXACT).contains(&v);
    if !exact(quant_min) || !exact(quant_max) || quant_min > quant_max {
        return None;
    }
    if q.scale.is_empty() || q.zero_point.len() != q.scale.len() {
        return None;
    }
    let (qmin, qmax) = (quant_min as f32, quant_max as f32);
    match (q.axis, &q.zero_point) {
        (None, ZeroPoint::Int(zps)) => {
            let (s, zp) = (q.scale[0], zps[0]);
            if !exact(zp) {
                return None;
            }
            let (inv, zp) = (1.0f32 / s, zp as f32);
            Some(Box::new(PerTensor::new(q, move |v: f32| {
                let t = clamp_like_int64(zp + round_half_even(v * inv), qmin, qmax);
                (t - zp) * s
            })))
        }
        (None, ZeroPoint::Float(zps)) => {
            let (s, zp) = (q.scale[0], zps[0]);
            let inv = 1.0f32 / s;
            Some(Box::new(PerTensor::new(q, move |v: f32| {
                let t = clamp_like_int64(round_half_even(v.mul_add(inv, zp)), qmin, qmax);
                ((t as f64 - zp as f64) * s as f64) as f32
            })))
        }
        (Some(axis), ZeroPoint::Int(zps)) => {
            // (1/s, float32(zp), zp, s) per channel.
            let params: Vec<(f32, f32, f64, f64)> = q
                .scale
                .iter()
                .zip(zps)
                .map(|(&s, &zp)| (1.0f32 / s, zp as f32, zp as f64, s as f64))
                .collect();
            let k = PerChannel::new(
                q,
                shape,
                axis,
                params,
                move |v: f32, p: &(f32, f32, f64, f64)| {
                    let (inv, zp32, zp64, s) = *p;
                    let t = clamp_like_int64(zp32 + round_half_even(v * inv), qmin, qmax);
                    ((t as f64 - zp64) * s) as f32
                },
            )?;
            Some(Box::new(k))
        }
        (Some(axis), ZeroPoint::Float(zps)) => {
            let params: Vec<(f32, f32, f64)> = q
                .scale
                .iter()
                .zip(zps)
                .map(|(&s, &zp)| (1.0f32 / s, zp, s as f64))
                .collect();
            let k = PerChannel::new(
                q,
                shape,
                axis,
                params,
                move |v: f32, p: &(f32, f32, f64)| {
                    let (inv, zp, s) = *p;
                    let t = clamp_like_int64(round_half_even(v.mul_add(inv, zp)), qmin, qmax);
                    ((t as f64 - zp as f64) * s) as f32
                },
            )?;
            Some(Box::new(k))
        }
    }
}
