//! The arithmetic every Horizon `observer_v2` observer shares (`ObserverBase` in the source);
//! the arguments and their checks are in [`super::config`], fake quantization in
//! [`super::scale_quanti`].
//!
//! * **Scale** (`_compute_scale_symmetric`, float32):
//!   `s = max(max(−min, max), 0) / ((qmax − qmin)/2)`, clamped below by `eps = 2⁻²³`; with
//!   `pow_quantization`, `s = 1 / 2^clamp(⌊−log2 s⌋, 1, 14)`. The divisor is 127.5 for qint8.
//!   Zero point is always 0.
//! * **Moving average** (`_compute_moving_average`, float32): `v ← v + c·(cur − v)` with `c`
//!   rounded to float32; the first statistics are copied.
//! * **`calculate_qparams`**: the scale of the averaged min/max, or scale 1.0 and zero point 0
//!   before any statistics.

use super::config::{QDtype, RoundMode};
use crate::derivation::{self, Step};
use crate::error::{Error, Result, Stage};
use crate::observer::{HistogramState, PlotSnapshot, QParams, ZeroPoint};

/// `torch.finfo(torch.float32).eps`, Horizon's lower bound on a scale.
pub const EPS: f32 = f32::EPSILON;

/// Per-tensor or per-channel statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `per_tensor_symmetric`.
    PerTensor,
    /// `per_channel_symmetric` along this (non-negative) axis.
    PerChannel(usize),
}

/// The quantization target of an observer: everything `calculate_qparams` and `scale_quanti`
/// need besides the statistics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantConfig {
    pub dtype: QDtype,
    pub quant_min: i64,
    pub quant_max: i64,
    pub round_mode: RoundMode,
    /// `pow_quantization()`: power-of-two scales.
    pub pow: bool,
}

impl QuantConfig {
    /// `_compute_scale_symmetric` for one slice, in float32.
    #[inline]
    pub fn scale(&self, min: f32, max: f32) -> f32 {
        let divisor = (self.quant_max - self.quant_min) as f32 / 2.0;
        let amax = nan_max(-min, max);
        let s = nan_clamp_min(nan_clamp_min(amax, 0.0) / divisor, EPS);
        if self.pow {
            let e = (-s.log2()).floor();
            let e = if e.is_nan() { e } else { e.clamp(1.0, 14.0) };
            1.0 / e.exp2()
        } else {
            s
        }
    }
}

/// Horizon's `observer_v2` source: not published on PyPI, so no line numbers; the golden data
/// records the file's sha256.
pub const OBSERVER_V2: &str = "horizon_plugin_pytorch/quantization/observer_v2.py \
                               (sha256 c9bc1fae…, the file the golden data ran; calculate_qparams)";

/// `torch.maximum` (NaN propagating).
#[inline]
fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

/// `clamp_min` (NaN propagating).
#[inline]
fn nan_clamp_min(a: f32, lo: f32) -> f32 {
    if a < lo {
        lo
    } else {
        a
    }
}

/// The moving-average statistics `min_val`/`max_val` of an observer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MinMaxState {
    pub min_val: Vec<f32>,
    pub max_val: Vec<f32>,
}

impl MinMaxState {
    /// True before any statistics were recorded.
    pub fn is_empty(&self) -> bool {
        self.min_val.is_empty() || self.max_val.is_empty()
    }

    /// Record this batch's statistics: copied the first time, then
    /// `v ← v + c·(cur − v)` in float32 with PyTorch broadcasting.
    pub fn update(&mut self, cur_min: Vec<f32>, cur_max: Vec<f32>, c: f32) -> Result<()> {
        if self.is_empty() {
            self.min_val = cur_min;
            self.max_val = cur_max;
            return Ok(());
        }
        self.min_val = ema(&self.min_val, &cur_min, c)?;
        self.max_val = ema(&self.max_val, &cur_max, c)?;
        Ok(())
    }

    /// `calculate_qparams`: per-slice symmetric scales, or scale 1.0 / zero point 0 (with
    /// Horizon's warning) when nothing was recorded.
    pub fn qparams(&self, quant: &QuantConfig, axis: Option<usize>) -> QParams {
        let mut q = QParams::int(
            vec![1.0],
            ZeroPoint::Int(vec![0]),
            quant.quant_min,
            quant.quant_max,
            self.min_val.clone(),
            self.max_val.clone(),
        );
        if self.is_empty() {
            q.notes.push(
                "No statistics yet: Horizon returns scale 1.0 and zero point 0 with the warning \
                 \"Must run observer before calling calculate_qparams\" (expected for KLObserver \
                 when update_interval exceeds the number of steps)."
                    .to_string(),
            );
            derivation::record_qparams(
                || {
                    Step::new(
                        "No statistics yet: Horizon's default scale and zero point",
                        "calculate_qparams warns and returns s = 1.0, zp = 0",
                        OBSERVER_V2,
                    )
                },
                &[],
                &[],
                &q.scale,
                &q.zero_point,
            );
            return q;
        }
        q.scale = self
            .min_val
            .iter()
            .zip(&self.max_val)
            .map(|(&lo, &hi)| quant.scale(lo, hi))
            .collect();
        q.zero_point = ZeroPoint::Int(vec![0; q.scale.len()]);
        q.axis = axis;
        derivation::record_qparams(
            || {
                let formula = if quant.pow {
                    "amax = max(−min, max); s = max(max(amax, 0) / ((qmax − qmin) / 2), eps); \
                     then a power of two: s = 2^−clamp(floor(−log2 s), 1, 14); zp = 0"
                } else {
                    "amax = max(−min, max); s = max(max(amax, 0) / ((qmax − qmin) / 2), eps); zp = 0"
                };
                let mut step = Step::new("Symmetric scale", formula, OBSERVER_V2);
                if let ([lo], [hi]) = (&self.min_val[..], &self.max_val[..]) {
                    step = step.value("min", *lo).value("max", *hi);
                }
                step.value("qmin", quant.quant_min)
                    .value("qmax", quant.quant_max)
            },
            &self.min_val,
            &self.max_val,
            &q.scale,
            &q.zero_point,
        );
        q
    }
}

/// `old + c·(cur − old)` elementwise with PyTorch's broadcasting of length-1 operands.
fn ema(old: &[f32], cur: &[f32], c: f32) -> Result<Vec<f32>> {
    let n = broadcast_len(old.len(), cur.len())?;
    Ok((0..n)
        .map(|i| {
            let o = old[if old.len() == 1 { 0 } else { i }];
            let v = cur[if cur.len() == 1 { 0 } else { i }];
            o + c * (v - o)
        })
        .collect())
}

/// The broadcast length of two 1-d operands, or PyTorch's size-mismatch error.
fn broadcast_len(a: usize, b: usize) -> Result<usize> {
    if a == b || b == 1 {
        Ok(a)
    } else if a == 1 {
        Ok(b)
    } else {
        Err(Error::framework(
            "RuntimeError",
            format!(
                "The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton dimension 0"
            ),
            Stage::Forward,
        ))
    }
}

/// `torch.aminmax` of a non-empty slice (NaN-free input).
pub fn min_max(data: &[f32]) -> (f32, f32) {
    crate::shared_stats::finite_min_max(data).unwrap_or((f32::NAN, f32::NAN))
}

/// The error a per-channel observer reports for an empty channel dimension.
pub fn empty_reduction_error() -> Error {
    Error::framework(
        "RuntimeError",
        "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.",
        Stage::Forward,
    )
}

/// A snapshot of the moving-average statistics (and a histogram) for plotting.
pub fn plot_state(stats: &MinMaxState, histogram: Option<HistogramState>) -> PlotSnapshot {
    PlotSnapshot {
        min_val: stats.min_val.clone(),
        max_val: stats.max_val.clone(),
        histogram,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quant(dtype: QDtype, range: Option<(i64, i64)>, pow: bool) -> QuantConfig {
        let (quant_min, quant_max) = range.unwrap_or(dtype.range());
        QuantConfig {
            dtype,
            quant_min,
            quant_max,
            round_mode: RoundMode::HalfToEven,
            pow,
        }
    }

    #[test]
    fn scale_divides_by_half_the_range() {
        let q = quant(QDtype::Qint8, None, false);
        assert_eq!(q.scale(-1.0, 2.55), 2.55f32 / 127.5);
        assert_eq!(q.scale(0.0, 0.0), EPS);
        assert_eq!(q.scale(0.5, 0.75), 0.75f32 / 127.5);
        let q16 = quant(QDtype::Qint16, None, false);
        assert_eq!(q16.scale(-3.0, 1.0), 3.0f32 / 32767.5);
        let custom = quant(QDtype::Qint8, Some((-127, 127)), false);
        assert_eq!(custom.scale(-1.27, 0.0), 1.27f32 / 127.0);
    }

    #[test]
    fn pow_scales_are_clamped_powers_of_two() {
        let q = quant(QDtype::Qint8, None, true);
        // 4/127.5 = 0.0314 → ⌊−log2⌋ = ⌊4.99⌋ = 4 → 1/16
        assert_eq!(q.scale(-4.0, 1.0), 1.0 / 16.0);
        // exactly 2^-5 stays 2^-5
        assert_eq!(q.scale(0.0, 127.5 / 32.0), 1.0 / 32.0);
        // huge range clamps the exponent at 1
        assert_eq!(q.scale(-1000.0, 1.0), 0.5);
        // tiny range clamps at 14
        assert_eq!(q.scale(0.0, 0.0), 1.0 / 16384.0);
    }

    #[test]
    fn ema_copies_first_then_averages_in_f32() {
        let mut s = MinMaxState::default();
        s.update(vec![-1.0], vec![1.0], 0.01).unwrap();
        assert_eq!(s.max_val, vec![1.0]);
        s.update(vec![-3.0], vec![3.0], 0.01).unwrap();
        assert_eq!(s.max_val, vec![1.0f32 + 0.01f32 * (3.0 - 1.0)]);
        let mut pc = MinMaxState::default();
        pc.update(vec![0.0; 3], vec![1.0; 3], 0.5).unwrap();
        assert!(pc.update(vec![0.0; 2], vec![1.0; 2], 0.5).is_err());
    }
}
