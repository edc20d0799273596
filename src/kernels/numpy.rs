//! numpy's floating-point semantics, for calibrators written in numpy (ONNX Runtime, parts of
//! ModelOpt).
//!
//! Each function reproduces what numpy 2.x computes bit for bit on the same inputs:
//! * [`sum_f32`]/[`sum_f64`] — `np.sum` of a contiguous array: `0 + pairwise_sum(a)`, where the
//!   pairwise sum adds blocks of ≤ 128 elements with 8 interleaved accumulators.
//! * [`linspace_f32`] — `np.linspace(start, stop, num, dtype=float32)` with float32 endpoints:
//!   `y[k] = k·step + start` in float32 (two roundings), `y[-1] = stop`.
//! * [`histogram_uniform_f32`] — `np.histogram(a, bins=n, range=(lo, hi))` on float32 data:
//!   edges from [`linspace_f32`], a bin index from `(x − lo)/(hi − lo)·n` (float32) corrected by
//!   one against the edges, so a value lands in bin `i` with `edges[i] ≤ x < edges[i+1]`, the last
//!   bin closed. `lo == hi` widens to `lo − 0.5 .. hi + 0.5`.
//! * [`histogram_with_edges`] — `np.histogram(a, bins=edges)`: the same rule by binary search
//!   (numpy's `searchsorted` on sorted data), values outside the edges dropped.
//! * [`arange_from_f32`] — `np.arange(start, stop, step)` with float32 scalars, which numpy 2.x
//!   returns as **float64**: length `ceil(f32(f32(stop − start)/step))`, `a[0] = start`,
//!   `a[1] = f32(start + step)`, `a[i] = start + i·(a[1] − a[0])` in float64.
//! * [`searchsorted_left`] — `np.searchsorted(a, v)` with numpy's NaN ordering.

use super::torch;
use crate::error::{Error, Result};

/// Largest array these helpers will allocate (bins or edges); numpy would try and run out of
/// memory long after a browser tab does.
pub const MAX_ELEMENTS: usize = 1 << 22;

macro_rules! pairwise {
    ($name:ident, $t:ty) => {
        /// numpy's `pairwise_sum` (the kernel behind `np.sum` on a contiguous array).
        pub fn $name(a: &[$t]) -> $t {
            let n = a.len();
            if n < 8 {
                let mut res: $t = -0.0;
                for &x in a {
                    res += x;
                }
                res
            } else if n <= 128 {
                let mut r = [0.0 as $t; 8];
                r.copy_from_slice(&a[..8]);
                let mut i = 8;
                while i < n - (n % 8) {
                    for j in 0..8 {
                        r[j] += a[i + j];
                    }
                    i += 8;
                }
                let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
                while i < n {
                    res += a[i];
                    i += 1;
                }
                res
            } else {
                let mut n2 = n / 2;
                n2 -= n2 % 8;
                $name(&a[..n2]) + $name(&a[n2..])
            }
        }
    };
}

pairwise!(pairwise_sum_f32, f32);
pairwise!(pairwise_sum_f64, f64);

/// `np.sum(a)` of a float32 array (accumulated in float32).
pub fn sum_f32(a: &[f32]) -> f32 {
    0.0 + pairwise_sum_f32(a)
}

/// `np.sum(a)` of a float64 array.
pub fn sum_f64(a: &[f64]) -> f64 {
    0.0 + pairwise_sum_f64(a)
}

/// `np.cumsum` of a float64 array (sequential).
pub fn cumsum_f64(a: &[f64]) -> Vec<f64> {
    let mut acc = 0.0f64;
    a.iter()
        .map(|&x| {
            acc += x;
            acc
        })
        .collect()
}

/// `np.linspace(start, stop, num, dtype=np.float32)` with float32 endpoints (`num ≥ 2`).
pub fn linspace_f32(start: f32, stop: f32, num: usize) -> Vec<f32> {
    if num == 0 {
        return Vec::new();
    }
    if num == 1 {
        return vec![start];
    }
    let div = (num - 1) as f32;
    let delta = stop - start;
    let step = delta / div;
    let mut y: Vec<f32> = if step == 0.0 {
        (0..num).map(|k| (k as f32 / div) * delta + start).collect()
    } else {
        (0..num).map(|k| (k as f32) * step + start).collect()
    };
    y[num - 1] = stop;
    y
}

/// `np.floor_divide` on float32 scalars (numpy's `npy_divmod`: `(a − fmod(a, b))/b`, adjusted
/// to Python's sign convention, snapped to the nearest integral value) — the same algorithm,
/// step for step, as ATen's `c10::div_floor_floating`, so it is [`torch::div_floor`].
pub fn floor_divide_f32(a: f32, b: f32) -> f32 {
    torch::div_floor(a, b)
}

/// Counts of `np.histogram(data, bins=n, range=(lo, hi))` on float32 data, and its float32 edges.
/// Values outside `[lo, hi]` and NaN are not counted.
pub fn histogram_uniform_f32(
    data: &[f32],
    n: usize,
    lo: f32,
    hi: f32,
) -> Result<(Vec<i64>, Vec<f32>)> {
    histogram_uniform::<false>(data, n, lo, hi)
}

/// [`histogram_uniform_f32`] of `np.abs(data)`, taking each `|x|` on the fly.
pub fn histogram_uniform_abs_f32(
    data: &[f32],
    n: usize,
    lo: f32,
    hi: f32,
) -> Result<(Vec<i64>, Vec<f32>)> {
    histogram_uniform::<true>(data, n, lo, hi)
}

/// Elements per parallel piece of a histogram: integer counts add up to the same totals in any
/// order, so the pieces run in parallel natively.
const HISTOGRAM_PIECE: usize = 1 << 20;

fn histogram_uniform<const ABS: bool>(
    data: &[f32],
    n: usize,
    lo: f32,
    hi: f32,
) -> Result<(Vec<i64>, Vec<f32>)> {
    if n == 0 {
        return Err(Error::framework(
            "ValueError",
            "`bins` must be positive, when an integer",
            crate::error::Stage::Forward,
        ));
    }
    if n >= MAX_ELEMENTS {
        return Err(Error::input(format!(
            "a histogram of {n} bins is too large"
        )));
    }
    if lo > hi {
        return Err(Error::framework(
            "ValueError",
            "max must be larger than min in range parameter.",
            crate::error::Stage::Forward,
        ));
    }
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(Error::framework(
            "ValueError",
            format!("supplied range of [{lo}, {hi}] is not finite"),
            crate::error::Stage::Forward,
        ));
    }
    let (lo, hi) = if lo == hi {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    };
    let edges = linspace_f32(lo, hi, n + 1);
    let bins = UniformBins::new(lo, hi, &edges);
    let count = |piece: &[f32]| {
        if n <= MAX_FAST_BINS {
            crate::simd::with_wide_vectors_on(
                &bins,
                #[inline(always)]
                |bins| bins.count_blocks::<ABS>(piece),
            )
        } else {
            bins.count_each::<ABS>(piece)
        }
    };
    let counts = crate::parallel::sum_piece_counts(data, HISTOGRAM_PIECE, n, count);
    Ok((counts, edges))
}

/// Bins up to this many take the blocked path of [`UniformBins::count_blocks`] (its float32
/// floor is exact below 2²²).
const MAX_FAST_BINS: usize = 1 << 22;

/// Values whose bins one pass of [`UniformBins::count_blocks`] computes before counting them.
const BIN_BLOCK: usize = 1024;

/// Interleaved sub-histograms of [`UniformBins::count_blocks`]: runs of values in one bin
/// (most of a peaked distribution) do not wait on one counter.
const BIN_WAYS: usize = 4;

/// numpy's uniform binning of `[lo, hi]` into `n` bins with float32 `edges`.
struct UniformBins<'a> {
    lo: f32,
    hi: f32,
    denom: f32,
    nf: f32,
    edges: &'a [f32],
}

impl<'a> UniformBins<'a> {
    /// The bins of `[lo, hi]` between float32 `edges` (`n + 1` of them).
    fn new(lo: f32, hi: f32, edges: &'a [f32]) -> Self {
        UniformBins {
            lo,
            hi,
            denom: hi - lo,
            nf: (edges.len() - 1) as f32,
            edges,
        }
    }

    /// The bin numpy's fast path starts from, `⌊(x − lo)/(hi − lo)·n⌋` capped at `n − 1` (0 for
    /// NaN), before the edges decide ([`Self::settle`]); `n` (the slot of dropped values) when
    /// `x` is outside `[lo, hi]`. Branch-free, so that a block of them vectorises; the floor of
    /// `0 ≤ f < 2²²` is [`crate::quant::floor_small`], which vectorises where `f as usize` does not.
    #[inline(always)]
    fn first_guess(&self, x: f32) -> u32 {
        let f = (x - self.lo) / self.denom * self.nf;
        let last = self.nf - 1.0;
        // `f as usize` saturates (NaN → 0), then the cap: f ≥ n → n − 1.
        let f = if f >= self.nf {
            last
        } else if f > 0.0 {
            f
        } else {
            0.0
        };
        let bin = crate::quant::floor_small(f);
        let inside = (x >= self.lo) & (x <= self.hi);
        if inside {
            bin
        } else {
            self.nf as u32
        }
    }

    /// numpy's correction of the first guess `i` of a kept `x`: one bin down when `x` lies below
    /// its lower edge, one up when at or above its upper edge (not past the last bin).
    #[inline(always)]
    fn settle(&self, x: f32, i: usize) -> usize {
        let last = self.edges.len() - 2;
        if x < self.edges[i] {
            i.saturating_sub(1)
        } else if i != last && x >= self.edges[i + 1] {
            i + 1
        } else {
            i
        }
    }

    /// The counts of `piece` (of its magnitudes with `ABS`), value by value.
    fn count_each<const ABS: bool>(&self, piece: &[f32]) -> Vec<i64> {
        let n = self.edges.len() - 1;
        let mut counts = vec![0i64; n];
        for &x in piece {
            let x = if ABS { x.abs() } else { x };
            if !(x >= self.lo && x <= self.hi) {
                continue;
            }
            let f = (x - self.lo) / self.denom * self.nf;
            counts[self.settle(x, (f as usize).min(n - 1))] += 1;
        }
        counts
    }

    /// [`Self::count_each`]'s counts, a block at a time: first every value's first guess (a
    /// vectorised loop), then the corrections and the counting into interleaved
    /// sub-histograms.
    #[inline(always)]
    fn count_blocks<const ABS: bool>(&self, piece: &[f32]) -> Vec<i64> {
        let n = self.edges.len() - 1;
        let stride = n + 1;
        let mut sub = vec![0u32; stride * BIN_WAYS];
        let mut guesses = [0u32; BIN_BLOCK];
        for block in piece.chunks(BIN_BLOCK) {
            let guesses = &mut guesses[..block.len()];
            for (guess, &x) in guesses.iter_mut().zip(block) {
                *guess = self.first_guess(if ABS { x.abs() } else { x });
            }
            for (k, (&guess, &x)) in guesses.iter().zip(block).enumerate() {
                let way = (k % BIN_WAYS) * stride;
                let bin = if guess as usize == n {
                    n
                } else {
                    self.settle(if ABS { x.abs() } else { x }, guess as usize)
                };
                sub[way + bin] += 1;
            }
        }
        // A piece holds fewer than 2³² values: no sub-counter overflowed.
        let mut counts = vec![0i64; n];
        for way in sub.chunks_exact(stride) {
            for (total, &c) in counts.iter_mut().zip(way) {
                *total += i64::from(c);
            }
        }
        counts
    }
}

/// `np.histogram(data, bins=n)` (range from the data's min/max, `0..1` when empty).
pub fn histogram_auto_f32(data: &[f32], n: usize) -> Result<(Vec<i64>, Vec<f32>)> {
    let range = auto_range(min_max_ignore_nan(data), data.is_empty())?;
    histogram_uniform_f32(data, n, range.0, range.1)
}

/// [`histogram_auto_f32`] of `np.abs(data)`, without the copy.
pub fn histogram_auto_abs_f32(data: &[f32], n: usize) -> Result<(Vec<i64>, Vec<f32>)> {
    let range = auto_range(abs_min_max_ignore_nan(data), data.is_empty())?;
    histogram_uniform_abs_f32(data, n, range.0, range.1)
}

/// `np.histogram`'s automatic range from the data's NaN-ignoring min/max.
fn auto_range(min_max: Option<(f32, f32)>, empty: bool) -> Result<(f32, f32)> {
    match min_max {
        Some(mm) => Ok(mm),
        None if empty => Ok((0.0, 1.0)),
        None => Err(Error::framework(
            "ValueError",
            "autodetected range of [nan, nan] is not finite",
            crate::error::Stage::Forward,
        )),
    }
}

/// Counts of `np.histogram(data, bins=edges)`: bin `i` holds `edges[i] ≤ x < edges[i+1]`, the
/// last bin also `x == edges[-1]`. Comparisons are exact (float32 data against float64 edges,
/// as numpy's promotion does). Fails like numpy when the edges decrease.
pub fn histogram_with_edges(data: &[f32], edges: &[f64]) -> Result<Vec<i64>> {
    if edges.windows(2).any(|w| w[0] > w[1]) {
        return Err(Error::framework(
            "ValueError",
            "`bins` must increase monotonically, when an array",
            crate::error::Stage::Forward,
        ));
    }
    let nbins = edges.len().saturating_sub(1);
    let mut counts = vec![0i64; nbins];
    if nbins == 0 {
        return Ok(counts);
    }
    let first = edges[0];
    let last = edges[nbins];
    for &x in data {
        let v = x as f64;
        if !(v >= first && v <= last) {
            continue;
        }
        // Number of edges ≤ v, minus one, is the bin (searchsorted right); v == last → last bin.
        let i = edges.partition_point(|&e| e <= v);
        let bin = if i > nbins { nbins - 1 } else { i - 1 }.min(nbins - 1);
        counts[bin] += 1;
    }
    Ok(counts)
}

/// `np.arange(start, stop, step)` with numpy float32 scalars: a float64 array (see module docs).
pub fn arange_from_f32(start: f32, stop: f32, step: f32) -> Result<Vec<f64>> {
    let len = ((stop - start) / step) as f64;
    let second = (start + step) as f64;
    arange_fill(start as f64, second, len)
}

/// `np.arange(start, stop, step)` with float64 scalars.
pub fn arange_f64(start: f64, stop: f64, step: f64) -> Result<Vec<f64>> {
    let len = (stop - start) / step;
    arange_fill(start, start + step, len)
}

fn arange_fill(start: f64, second: f64, len: f64) -> Result<Vec<f64>> {
    if len.is_nan() {
        return Err(Error::framework(
            "ValueError",
            "arange: cannot compute length",
            crate::error::Stage::Forward,
        ));
    }
    let len = len.ceil();
    if len <= 0.0 {
        return Ok(Vec::new());
    }
    if len >= MAX_ELEMENTS as f64 {
        return Err(Error::input(format!(
            "the histogram would need {len} more bins (over {MAX_ELEMENTS})"
        )));
    }
    let len = len as usize;
    let delta = second - start;
    Ok((0..len)
        .map(|i| match i {
            0 => start,
            1 => second,
            _ => start + (i as f64) * delta,
        })
        .collect())
}

/// `np.searchsorted(a, v, side="left")` for a sorted float64 array, with numpy's ordering
/// (NaN sorts last), using numpy's own bisection.
pub fn searchsorted_left(a: &[f64], v: f64) -> usize {
    let lt = |x: f64, y: f64| x < y || (y.is_nan() && !x.is_nan());
    let (mut lo, mut hi) = (0usize, a.len());
    while lo < hi {
        let mid = lo + ((hi - lo) >> 1);
        if lt(a[mid], v) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// `np.argmin` of a float64 array: the first minimum, or the first NaN if there is one.
pub fn argmin(a: &[f64]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, &x) in a.iter().enumerate() {
        if x.is_nan() {
            return Some(i);
        }
        match best {
            Some(b) if a[b] <= x => {}
            _ => best = Some(i),
        }
    }
    best
}

/// `(np.nanmin(a), np.nanmax(a))`, `None` when every value is NaN or `a` is empty. In vector
/// lanes ([`crate::lanes::min_max`]); of two equal zeros the first met is kept, as the scan
/// `lo = if x < lo { x } else { lo }` keeps it.
pub fn min_max_ignore_nan(a: &[f32]) -> Option<(f32, f32)> {
    let (lo, hi) = crate::lanes::min_max(a);
    (lo <= hi).then_some((lo, hi))
}

/// `(np.nanmin(|a|), np.nanmax(|a|))` without the copy, `None` when every value is NaN or `a`
/// is empty. Magnitudes have no signed zeros, so pieces combine in any order (in parallel
/// natively).
pub fn abs_min_max_ignore_nan(a: &[f32]) -> Option<(f32, f32)> {
    let pieces = crate::parallel::map_chunks(a, |_, piece| {
        let mut lo = f32::INFINITY;
        let mut hi = f32::NEG_INFINITY;
        for &x in piece {
            let m = x.abs();
            // NaN fails both comparisons and is skipped.
            lo = if m < lo { m } else { lo };
            hi = if m > hi { m } else { hi };
        }
        (lo, hi)
    });
    let (lo, hi) = pieces
        .into_iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), (a, b)| {
            (lo.min(a), hi.max(b))
        });
    (lo <= hi).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magnitude_histograms_equal_those_of_a_copy() {
        let mut data: Vec<f32> = (0..(2 << 20) + 5)
            .map(|i| ((i as f32) * 0.37).cos() * 3.0)
            .collect();
        data[3] = f32::NAN;
        data[4] = -0.0;
        let abs: Vec<f32> = data.iter().map(|v| v.abs()).collect();
        assert_eq!(abs_min_max_ignore_nan(&data), min_max_ignore_nan(&abs));
        assert_eq!(
            histogram_auto_abs_f32(&data, 2048).unwrap(),
            histogram_auto_f32(&abs, 2048).unwrap()
        );
        assert_eq!(
            histogram_uniform_abs_f32(&data, 7, 0.5, 2.0).unwrap(),
            histogram_uniform_f32(&abs, 7, 0.5, 2.0).unwrap()
        );
        assert_eq!(abs_min_max_ignore_nan(&[f32::NAN]), None);
        assert!(histogram_auto_abs_f32(&[f32::NAN], 4).is_err());
    }

    #[test]
    fn nan_ignoring_extremes_equal_the_sequential_scan() {
        let scan = |a: &[f32]| {
            let (mut lo, mut hi, mut any) = (f32::INFINITY, f32::NEG_INFINITY, false);
            for &x in a.iter().filter(|x| !x.is_nan()) {
                any = true;
                lo = if x < lo { x } else { lo };
                hi = if x > hi { x } else { hi };
            }
            any.then_some((lo, hi))
        };
        let same = |a: Option<(f32, f32)>, b: Option<(f32, f32)>| {
            a.map(|(l, h)| (l.to_bits(), h.to_bits())) == b.map(|(l, h)| (l.to_bits(), h.to_bits()))
        };
        let mut data: Vec<f32> = (0..1003).map(|i| ((i as f32) * 0.61).sin()).collect();
        for (at, v) in [(5, f32::NAN), (17, f32::INFINITY), (900, f32::NEG_INFINITY)] {
            data[at] = v;
        }
        let cases: [Vec<f32>; 7] = [
            vec![],
            vec![f32::NAN; 11],
            vec![-0.0, 0.0, f32::NAN, -0.0],
            vec![0.0; 9].into_iter().chain([-0.0]).collect(),
            vec![f32::NAN, f32::INFINITY],
            data.clone(),
            data[..7].to_vec(),
        ];
        for case in &cases {
            assert!(same(min_max_ignore_nan(case), scan(case)), "{case:?}");
        }
        assert_eq!(
            min_max_ignore_nan(&cases[2]).unwrap().0.to_bits(),
            (-0.0f32).to_bits()
        );
    }

    #[test]
    fn pairwise_sum_matches_numpy_order() {
        // np.sum(np.float32([1e8, 1, -1e8, 1, 1, 1, 1, 1, 1])) == 5.0 in numpy: the 8 lanes are
        // combined as ((1e8 + 1) + (-1e8 + 1)) + 4 = 4 in float32, then the ninth element added.
        let a = [1e8f32, 1.0, -1e8, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        assert_eq!(sum_f32(&a), 5.0);
        // Sequential float32 would give 6.0.
        let seq = a.iter().fold(0.0f32, |s, &x| s + x);
        assert_eq!(seq, 6.0);
        assert_eq!(sum_f64(&[]), 0.0);
        let big: Vec<f64> = (0..1000).map(|i| i as f64).collect();
        assert_eq!(sum_f64(&big), 499500.0);
    }

    #[test]
    fn linspace_is_float32_two_roundings() {
        // np.linspace(np.float32(-1), np.float32(1), 4, dtype=np.float32)
        let y: Vec<f64> = linspace_f32(-1.0, 1.0, 4)
            .iter()
            .map(|&v| v as f64)
            .collect();
        assert_eq!(y, vec![-1.0, -0.3333333134651184, 0.3333333730697632, 1.0]);
    }

    #[test]
    fn histogram_closes_the_last_bin_and_drops_outside() {
        let (h, e) =
            histogram_uniform_f32(&[0.0, 0.5, 1.0, 1.5, -0.1, f32::NAN], 2, 0.0, 1.0).unwrap();
        assert_eq!(h, vec![1, 2]);
        assert_eq!(e, vec![0.0, 0.5, 1.0]);
        let (h, e) = histogram_uniform_f32(&[3.0], 2, 3.0, 3.0).unwrap();
        assert_eq!((h, e), (vec![0, 1], vec![2.5, 3.0, 3.5]));
        let h = histogram_with_edges(&[0.0, 0.5, 1.0, 2.0], &[0.0, 0.5, 1.0]).unwrap();
        assert_eq!(h, vec![1, 2]);
        assert!(histogram_with_edges(&[0.0], &[1.0, 0.0]).is_err());
    }

    #[test]
    fn arange_from_float32_scalars_is_float64() {
        // np.arange(np.float32(1.3), np.float32(2.5), np.float32(0.07))[:4]
        let a = arange_from_f32(1.3, 2.5, 0.07).unwrap();
        assert_eq!(a.len(), 18);
        assert_eq!(a[0], 1.2999999523162842);
        assert_eq!(a[1], 1.3700000047683716);
        assert_eq!(a[2], 1.440000057220459);
    }

    #[test]
    fn searchsorted_and_argmin_follow_numpy() {
        let a = [0.1, 0.5, 0.5, 1.0];
        assert_eq!(searchsorted_left(&a, 0.5), 1);
        assert_eq!(searchsorted_left(&a, 2.0), 4);
        assert_eq!(searchsorted_left(&[f64::NAN, f64::NAN], 0.9), 0);
        assert_eq!(argmin(&[3.0, 1.0, 1.0]), Some(1));
        assert_eq!(argmin(&[3.0, f64::NAN, 0.0]), Some(1));
        assert_eq!(argmin(&[]), None);
        assert_eq!(floor_divide_f32(7.0, 2.0), 3.0);
        assert_eq!(floor_divide_f32(0.3, 0.1), 3.0);
    }

    #[test]
    fn blocked_binning_counts_as_value_by_value() {
        let base: Vec<f32> = (0..5000)
            .map(|i| ((i as f32) * 0.731).sin() * 7.0)
            .chain([
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                -0.0,
                0.0,
                7.0,
                -7.0,
                f32::MAX,
                f32::MIN,
                1e-45,
                -1e-45,
            ])
            .collect();
        let geometries: [(f32, f32, usize); 7] = [
            (-7.0, 7.0, 2048),
            (0.0, 7.0, 3),
            (-1e-30, 1e-30, 100),
            (f32::MIN, f32::MAX, 10),
            (-7.0, 7.0, 1),
            (2.5, 2.5000002, 50),
            (0.0, 7.0, 4200),
        ];
        for (lo, hi, n) in geometries {
            let edges = linspace_f32(lo, hi, n + 1);
            // Every edge, and its neighbours, is a value too.
            let mut data = base.clone();
            for &e in &edges {
                data.extend([
                    e,
                    f32::from_bits(e.to_bits() + 1),
                    f32::from_bits(e.to_bits().max(1) - 1),
                ]);
            }
            let bins = UniformBins::new(lo, hi, &edges);
            assert_eq!(
                bins.count_blocks::<false>(&data),
                bins.count_each::<false>(&data),
                "{lo} {hi} {n}"
            );
            assert_eq!(
                bins.count_blocks::<true>(&data),
                bins.count_each::<true>(&data),
                "{lo} {hi} {n} abs"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn uniform_histogram_agrees_with_edge_search(
            data in proptest::collection::vec(-1e3f32..1e3, 0..400),
            lo in -1e3f32..1e3,
            width in 1e-3f32..2e3,
            bins in 1usize..300,
        ) {
            let hi = lo + width;
            let (fast, edges) = histogram_uniform_f32(&data, bins, lo, hi).unwrap();
            let e64: Vec<f64> = edges.iter().map(|&e| e as f64).collect();
            let slow = histogram_with_edges(&data, &e64).unwrap();
            proptest::prop_assert_eq!(fast, slow);
        }
    }
}
