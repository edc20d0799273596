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

/// Sums over one piece of the data: `n`, `Σx` and the finite min/max (first pass), in lanes.
#[derive(Clone, Copy)]
struct FirstPass {
    n: u64,
    sum: f64,
    lo: f32,
    hi: f32,
}

/// Lanes of the partial sums: element `k` of a piece goes to lane `k mod LANES`, so the loops
/// vectorise and the result does not depend on how pieces are spread over threads.
const LANES: usize = 8;

/// `step(k mod LANES, piece[k])` for every element, eight at a time.
#[inline(always)]
fn for_lanes(piece: &[f32], mut step: impl FnMut(usize, f32)) {
    let mut lanes = piece.chunks_exact(LANES);
    for chunk in &mut lanes {
        for (l, &v) in chunk.iter().enumerate() {
            step(l, v);
        }
    }
    for (l, &v) in lanes.remainder().iter().enumerate() {
        step(l, v);
    }
}

#[inline(always)]
fn first_pass(piece: &[f32]) -> FirstPass {
    let mut n = [0u64; LANES];
    let mut sum = [0f64; LANES];
    let mut lo = [f32::INFINITY; LANES];
    let mut hi = [f32::NEG_INFINITY; LANES];
    let step = |l: usize, v: f32| {
        let finite = v.is_finite();
        n[l] += u64::from(finite);
        sum[l] += if finite { f64::from(v) } else { 0.0 };
        lo[l] = if finite && v < lo[l] { v } else { lo[l] };
        hi[l] = if finite && v > hi[l] { v } else { hi[l] };
    };
    for_lanes(piece, step);
    let mut out = FirstPass {
        n: 0,
        sum: 0.0,
        lo: f32::INFINITY,
        hi: f32::NEG_INFINITY,
    };
    for l in 0..LANES {
        out.n += n[l];
        out.sum += sum[l];
        out.lo = out.lo.min(lo[l]);
        out.hi = out.hi.max(hi[l]);
    }
    out
}

/// `(Σ(x − mean)², Σ(x − mean)⁴)` over the finite values of one piece, in lanes.
#[inline(always)]
fn central_moments(piece: &[f32], mean: f64) -> (f64, f64) {
    let mut m2 = [0f64; LANES];
    let mut m4 = [0f64; LANES];
    let step = |l: usize, v: f32| {
        let d = if v.is_finite() {
            f64::from(v) - mean
        } else {
            0.0
        };
        let d2 = d * d;
        m2[l] += d2;
        m4[l] += d2 * d2;
    };
    for_lanes(piece, step);
    (m2.iter().sum(), m4.iter().sum())
}

impl Stats {
    /// The statistics of the finite values of `data`: two passes of fixed pieces
    /// ([`crate::parallel::CHUNK`] elements, eight float64 lanes each) merged in order, in
    /// parallel natively; the bits do not depend on the thread count.
    pub fn of(data: &[f32]) -> Stats {
        let first = crate::parallel::map_chunks(data, |_, piece| {
            crate::simd::with_wide_vectors(
                #[inline(always)]
                || first_pass(piece),
            )
        });
        let (mut n, mut sum) = (0u64, 0f64);
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for p in &first {
            n += p.n;
            sum += p.sum;
            lo = lo.min(p.lo);
            hi = hi.max(p.hi);
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
        let moments = crate::parallel::map_chunks(data, |_, piece| {
            crate::simd::with_wide_vectors(
                #[inline(always)]
                || central_moments(piece, mean),
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
            finite: n as usize,
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
