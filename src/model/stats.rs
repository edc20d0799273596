//! Summary statistics of a tensor's finite values, the columns a user scans for outliers.
//!
//! Over the `n` finite values `x` (NaN and ±Inf are counted apart, see
//! [`crate::tensor::NonFiniteCounts`]), accumulated in f64 in two passes (the mean first, then
//! central moments, which avoids the cancellation of the one-pass formulas):
//! * `mean = Σx / n`;
//! * `std = √(m₂)` with `m₂ = Σ(x − mean)² / n`: the population standard deviation (numpy's
//!   `std` with `ddof=0`);
//! * `kurtosis = m₄ / m₂² − 3` with `m₄ = Σ(x − mean)⁴ / n`: the excess (Fisher) kurtosis,
//!   biased, as `scipy.stats.kurtosis` computes by default; 0 for a normal distribution, large
//!   for heavy-tailed tensors whose outliers stretch a min–max range;
//! * `absmax_over_std = max|x| / std`: how many standard deviations the largest magnitude lies
//!   from zero, which bounds how many int8 steps the bulk of the values gets.
//!
//! Statistics that are undefined (no finite value; `std = 0`) are `None`.

use serde::{Deserialize, Serialize};

/// Statistics of the finite values of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct Stats {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub kurtosis: Option<f64>,
    pub absmax_over_std: Option<f64>,
    /// Number of finite values the statistics cover.
    pub finite: usize,
}

impl Stats {
    /// The statistics of the finite values of `data`.
    pub fn of(data: &[f32]) -> Stats {
        let (mut n, mut sum) = (0usize, 0f64);
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for &v in data.iter().filter(|v| v.is_finite()) {
            n += 1;
            sum += f64::from(v);
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if n == 0 {
            return Stats {
                min: None,
                max: None,
                mean: None,
                std: None,
                kurtosis: None,
                absmax_over_std: None,
                finite: 0,
            };
        }
        let count = n as f64;
        let mean = sum / count;
        let (mut m2, mut m4) = (0f64, 0f64);
        for &v in data.iter().filter(|v| v.is_finite()) {
            let d = f64::from(v) - mean;
            let d2 = d * d;
            m2 += d2;
            m4 += d2 * d2;
        }
        let (m2, m4) = (m2 / count, m4 / count);
        let std = m2.sqrt();
        let defined = |x: f64| (x.is_finite()).then_some(x);
        let absmax = f64::from(lo.abs().max(hi.abs()));
        Stats {
            min: Some(f64::from(lo)),
            max: Some(f64::from(hi)),
            mean: defined(mean),
            std: defined(std),
            kurtosis: (m2 > 0.0).then(|| m4 / (m2 * m2) - 3.0).and_then(defined),
            absmax_over_std: (std > 0.0).then(|| absmax / std).and_then(defined),
            finite: n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_of_a_known_sample() {
        // x = [-2, -1, 0, 1, 2]: mean 0, m2 = 2, m4 = (16+1+0+1+16)/5 = 6.8, kurtosis 6.8/4 − 3.
        let s = Stats::of(&[-2.0, -1.0, f32::NAN, 0.0, 1.0, 2.0, f32::INFINITY]);
        assert_eq!(s.finite, 5);
        assert_eq!((s.min, s.max, s.mean), (Some(-2.0), Some(2.0), Some(0.0)));
        assert_eq!(s.std, Some(2f64.sqrt()));
        assert!((s.kurtosis.unwrap() - (6.8 / 4.0 - 3.0)).abs() < 1e-12);
        assert!((s.absmax_over_std.unwrap() - 2.0 / 2f64.sqrt()).abs() < 1e-12);
        let c = Stats::of(&[3.0; 4]);
        assert_eq!(
            (c.std, c.kurtosis, c.absmax_over_std),
            (Some(0.0), None, None)
        );
        let e = Stats::of(&[f32::NAN]);
        assert_eq!((e.finite, e.min, e.mean), (0, None, None));
    }
}
