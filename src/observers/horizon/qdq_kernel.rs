//! Horizon's `scale_quanti` ([`super::scale_quanti::fake_quantize`]) as fused kernels
//! ([`crate::qdq`]) for one scale or one scale per channel along `q.axis`, with one
//! monomorphic loop per rounding mode (round half to even, or the BPU's `⌊v + 0.5⌋`).
//! NormObserver's column scales (several scales without an axis) keep the two-step path.

use super::config::RoundMode;
use super::scale_quanti::qdq_value;
use crate::observer::QParams;
use crate::qdq::{PerChannel, PerTensor, QdqKernel};
use crate::quant::round_half_even;

/// The kernel of `scale_quanti` with `q` on tensors of `shape`, when one applies.
pub fn kernel(shape: &[usize], q: &QParams, round_mode: RoundMode) -> Option<Box<dyn QdqKernel>> {
    match round_mode {
        RoundMode::HalfToEven => with_rounding(shape, q, round_half_even),
        RoundMode::BpuRound => with_rounding(shape, q, |v| RoundMode::BpuRound.round(v)),
    }
}

fn with_rounding(
    shape: &[usize],
    q: &QParams,
    round: impl Fn(f32) -> f32 + Copy + Send + Sync + 'static,
) -> Option<Box<dyn QdqKernel>> {
    let (quant_min, quant_max) = q.grid.int_range()?;
    let (qmin, qmax) = (quant_min as f32, quant_max as f32);
    let n = q.scale.len();
    if n == 0 || q.zero_point.len() != n || qmin > qmax {
        return None;
    }
    let zps: Vec<f32> = (0..n).map(|i| q.zero_point.get_f64(i) as f32).collect();
    if n == 1 && q.axis.is_none() {
        let (s, zp) = (q.scale[0], zps[0]);
        return Some(Box::new(PerTensor::new(q, move |v: f32| {
            qdq_value(v, s, zp, qmin, qmax, round)
        })));
    }
    let axis = q.axis?;
    let params: Vec<(f32, f32)> = q.scale.iter().copied().zip(zps).collect();
    let k = PerChannel::new(q, shape, axis, params, move |v: f32, p: &(f32, f32)| {
        qdq_value(v, p.0, p.1, qmin, qmax, round)
    })?;
    Some(Box::new(k))
}
