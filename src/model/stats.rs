//! Summary statistics of a tensor's finite values, the columns a user scans for outliers.
//!
//! Over the `n` finite values `x` (NaN and ±Inf are counted apart, see
//! [`crate::tensor::NonFiniteCounts`]), accumulated in f64 lanes in two passes (the mean first, then
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

/// Lanes of the partial sums: element `k` of a piece goes to lane `k mod LANES`, so the loops
/// vectorise and the result does not depend on how pieces are spread over threads.
const LANES: usize = 8;

/// `x − mean` in float64, 0 when `x` is not finite (with `ALL_FINITE` the caller knows it is).
#[inline(always)]
fn deviation<const ALL_FINITE: bool>(x: f32, mean: f64) -> f64 {
    if ALL_FINITE || x.is_finite() {
        f64::from(x) - mean
    } else {
        0.0
    }
}

/// `(Σ(x − mean)², Σ(x − mean)⁴)` over the finite values of one piece: element `k` into lane
/// `k mod 8`, the lanes added in order. Each step is written one operation across the eight
/// lanes at a time, so that each becomes one vector operation.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // lane by lane, as the vectoriser packs it
fn central_moments<const ALL_FINITE: bool>(piece: &[f32], mean: f64) -> (f64, f64) {
    let mut m2 = [0f64; LANES];
    let mut m4 = [0f64; LANES];
    let (eights, tail) = piece.as_chunks::<LANES>();
    for chunk in eights {
        let mut d2 = [0f64; LANES];
        for k in 0..LANES {
            let d = deviation::<ALL_FINITE>(chunk[k], mean);
            d2[k] = d * d;
        }
        for k in 0..LANES {
            m2[k] += d2[k];
        }
        for k in 0..LANES {
            m4[k] += d2[k] * d2[k];
        }
    }
    for (k, &v) in tail.iter().enumerate() {
        let d = deviation::<ALL_FINITE>(v, mean);
        let d2 = d * d;
        m2[k] += d2;
        m4[k] += d2 * d2;
    }
    (m2.iter().sum(), m4.iter().sum())
}

impl Stats {
    /// The statistics of the finite values of `data`. The count, min/max and `Σx` come from
    /// the tensor's one shared scan ([`crate::shared_stats::scanned`]); the central moments
    /// then take a second pass of fixed pieces ([`crate::parallel::CHUNK`] elements, eight
    /// float64 lanes each) merged in order, in parallel natively. The bits do not depend on
    /// the thread count.
    pub fn of(data: &[f32]) -> Stats {
        let scan = crate::shared_stats::scanned(data);
        let n = data.len() - scan.counts.total();
        let Some((lo, hi)) = scan.range.filter(|_| n > 0) else {
            return Stats {
                min: None,
                max: None,
                mean: None,
                std: None,
                kurtosis: None,
                absmax_over_std: None,
                finite: 0,
            };
        };
        let count = n as f64;
        let mean = scan.sum / count;
        let all_finite = n == data.len();
        let moments = crate::parallel::map_chunks(data, |_, piece| {
            crate::simd::with_wide_vectors(
                #[inline(always)]
                || {
                    if all_finite {
                        central_moments::<true>(piece, mean)
                    } else {
                        central_moments::<false>(piece, mean)
                    }
                },
            )
        });
        let (m2, m4) = moments
            .iter()
            .fold((0f64, 0f64), |(a, b), &(c, d)| (a + c, b + d));
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
