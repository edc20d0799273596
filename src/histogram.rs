//! Histogram binning exactly as `torch.histc` does it on float32 data.
//!
//! `torch.histc(x, bins, min, max)` (CPU, float32) maps an element `v` with
//! `min <= v <= max` to bin `⌊(v − min) · bins / (max − min)⌋` computed in float32, puts
//! `v == max` in the last bin and ignores everything else (NaN included). When `min == max` it
//! uses `[min − 1, max + 1]`. Observers that bin "like PyTorch" (PyTorch, Quark, Horizon,
//! ModelOpt) share this kernel so that counts agree bit for bit.

/// Add the histc counts of `data` over `[lo, hi]` with `bins` bins into `counts`
/// (`counts.len() == bins`). Returns the number of elements counted.
///
/// The elements are binned and counted in integers (in parallel natively, see
/// [`crate::observers::torch::histogram::binning::count`]; once per registered tensor, see
/// [`crate::shared_stats::histc_counts`]); adding `k` to a float32 count `c` then gives what `k`
/// additions of 1.0 give: `c + k` exactly when `c` is an integer and `c + k ≤ 2²⁴`, otherwise
/// the additions are made one by one.
pub fn histc_accumulate(data: &[f32], lo: f32, hi: f32, counts: &mut [f32]) -> usize {
    add_counts(&integer_counts(data, false, counts.len(), lo, hi), counts)
}

/// [`histc_accumulate`] of `|data|` (without a copy of the absolute values).
pub fn histc_abs_accumulate(data: &[f32], lo: f32, hi: f32, counts: &mut [f32]) -> usize {
    add_counts(&integer_counts(data, true, counts.len(), lo, hi), counts)
}

/// Integer histc counts of `data` (of `|data|` when `magnitudes`), shared while registered.
fn integer_counts(
    data: &[f32],
    magnitudes: bool,
    bins: usize,
    lo: f32,
    hi: f32,
) -> std::sync::Arc<Vec<u64>> {
    use crate::observers::torch::histogram::binning;
    if bins == 0 {
        return std::sync::Arc::new(Vec::new());
    }
    let key = crate::shared_stats::HistcKey {
        magnitudes,
        bins,
        lo: lo.to_bits(),
        hi: hi.to_bits(),
    };
    crate::shared_stats::histc_counts(data, key, || {
        if magnitudes {
            binning::count_abs(data, bins, lo, hi)
        } else {
            binning::count(data, bins, lo, hi)
        }
    })
}

/// Add integer counts `totals` to float32 counters as one addition of 1.0 per element would.
fn add_counts(totals: &[u64], counts: &mut [f32]) -> usize {
    const EXACT: f32 = 16_777_216.0; // 2^24
    let mut counted = 0usize;
    for (c, &k) in counts.iter_mut().zip(totals) {
        counted += k as usize;
        if c.fract() == 0.0 && (k as f64) + (*c as f64) <= EXACT as f64 {
            *c += k as f32;
        } else {
            for _ in 0..k {
                *c += 1.0;
            }
        }
    }
    counted
}

/// The histc counts of `data` one element at a time: the definition [`histc_accumulate`]
/// reproduces.
pub fn histc_accumulate_sequential(data: &[f32], lo: f32, hi: f32, counts: &mut [f32]) -> usize {
    let bins = counts.len();
    if bins == 0 {
        return 0;
    }
    let (lo, hi) = if lo == hi {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo, hi)
    };
    let width = hi - lo;
    let nbins = bins as f32;
    let last = bins - 1;
    let mut counted = 0usize;
    for &v in data {
        if v >= lo && v <= hi {
            let pos = ((v - lo) * nbins / width) as usize;
            counts[pos.min(last)] += 1.0;
            counted += 1;
        }
    }
    counted
}

/// `torch.histc(data, bins, lo, hi)` as a new vector of float32 counts.
pub fn histc(data: &[f32], bins: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut counts = vec![0.0f32; bins];
    histc_accumulate(data, lo, hi, &mut counts);
    counts
}

/// `torch.histc(data.abs(), bins, lo, hi)`, binning `|x|` on the fly.
pub fn histc_abs(data: &[f32], bins: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut counts = vec![0.0f32; bins];
    histc_abs_accumulate(data, lo, hi, &mut counts);
    counts
}

/// [`crate::shared_stats::finite_min_max`] in one sequential pass (the definition the parallel version reproduces).
pub fn finite_min_max_sequential(data: &[f32]) -> Option<(f32, f32)> {
    let body = data.len() / 8 * 8;
    let (lo, hi) = finite_min_max_lanes(&data[..body]);
    finite_min_max_finish(lo, hi, &data[body..])
}

/// The eight lanes of [`crate::shared_stats::finite_min_max`] over `data` (a multiple of 8 elements; the rest is
/// ignored): lane `k` holds the extrema of elements `k, k + 8, …`, the first of equal values
/// kept.
pub fn finite_min_max_lanes(data: &[f32]) -> ([f32; 8], [f32; 8]) {
    crate::simd::with_wide_vectors(
        #[inline(always)]
        || finite_min_max_lanes_portable(data),
    )
}

#[inline(always)]
fn finite_min_max_lanes_portable(data: &[f32]) -> ([f32; 8], [f32; 8]) {
    let mut lanes = SixteenLanes::new();
    lanes.feed(data);
    lanes.eight(data)
}

/// The lanes of [`finite_min_max_lanes`] kept as sixteen while values are fed (value `j` of the
/// fed run into lane `j mod 16`), folded back to the eight exactly by [`SixteenLanes::eight`].
///
/// Why sixteen: with eight, LLVM packs the minimum's and the maximum's lanes into one 512-bit
/// register, and each step's dependency chain runs through lane extracts and inserts (about 12
/// cycles per eight values instead of one 4-cycle `minps`). Sixteen lanes are a register each.
pub(crate) struct SixteenLanes {
    lo: [f32; 16],
    hi: [f32; 16],
}

impl SixteenLanes {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        SixteenLanes {
            lo: [f32::INFINITY; 16],
            hi: [f32::NEG_INFINITY; 16],
        }
    }

    /// Feed sixteen values (at a multiple of 16 from the start of the run).
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // lane by lane, as the vectoriser packs it
    pub(crate) fn push16(&mut self, chunk: &[f32; 16]) {
        for j in 0..16 {
            finite_min_max_step(&mut self.lo[j], &mut self.hi[j], chunk[j]);
        }
    }

    /// Feed the last eight values of a run whose length is an odd multiple of 8.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // lane by lane, as the vectoriser packs it
    pub(crate) fn push8(&mut self, chunk: &[f32; 8]) {
        for k in 0..8 {
            finite_min_max_step(&mut self.lo[k], &mut self.hi[k], chunk[k]);
        }
    }

    /// Feed `data` (a multiple of 8 values; the rest is ignored) at a multiple of 16 from the
    /// start of the run.
    #[inline(always)]
    pub(crate) fn feed(&mut self, data: &[f32]) {
        let mut sixteens = data.chunks_exact(16);
        for chunk in &mut sixteens {
            if let Ok(chunk) = chunk.try_into() {
                self.push16(chunk);
            }
        }
        if let Some(chunk) = sixteens.remainder().first_chunk::<8>() {
            self.push8(chunk);
        }
    }

    /// Lanes fed the values that follow those `self` was fed (`later`, started at a multiple
    /// of 16 of the run) taken in: each lane keeps its first extremum.
    #[inline(always)]
    pub(crate) fn absorb(&mut self, later: &SixteenLanes) {
        for j in 0..16 {
            if later.lo[j] < self.lo[j] {
                self.lo[j] = later.lo[j];
            }
            if later.hi[j] > self.hi[j] {
                self.hi[j] = later.hi[j];
            }
        }
    }

    /// The eight lanes of the whole run `fed` (every value fed, in order): lane `k` of eight
    /// holds values `k, k + 8, …`, which alternate between lanes `k` and `k + 8` of sixteen.
    /// Each of those kept the first of its equal extrema, so the two can only disagree on equal
    /// values when they are zeros of opposite signs; lane `k` is then scanned again in order
    /// (the first zero it meets is kept).
    pub(crate) fn eight(&self, fed: &[f32]) -> ([f32; 8], [f32; 8]) {
        let mut lo = [f32::INFINITY; 8];
        let mut hi = [f32::NEG_INFINITY; 8];
        for k in 0..8 {
            let again = || {
                let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
                let whole = fed.len() / 8 * 8;
                for &v in fed[..whole].iter().skip(k).step_by(8) {
                    finite_min_max_step(&mut lo, &mut hi, v);
                }
                (lo, hi)
            };
            lo[k] = first_extremum(self.lo[k], self.lo[k + 8], |a, b| a < b, || again().0);
            hi[k] = first_extremum(self.hi[k], self.hi[k + 8], |a, b| a > b, || again().1);
        }
        (lo, hi)
    }
}

/// The extremum of a lane split in two alternating halves whose own extrema are `a` (the half
/// fed first) and `b`: the one `beats` the other, `a` when they are the same bits, and otherwise
/// (`+0` against `−0`) the lane scanned again in order.
#[inline]
fn first_extremum(a: f32, b: f32, beats: fn(f32, f32) -> bool, again: impl Fn() -> f32) -> f32 {
    if beats(b, a) {
        b
    } else if beats(a, b) || a.to_bits() == b.to_bits() {
        a
    } else {
        again()
    }
}

/// One value `v` into a lane of [`finite_min_max_lanes`] whose extrema `lo`, `hi` started at
/// `+∞`, `−∞`: `v` replaces `lo` when it is finite and smaller, `hi` when it is finite and
/// larger (the first of equal values kept, zeros' signs included).
///
/// Written as the float min/max pattern `if c < lo { c } else { lo }` on a candidate `c` that is
/// NaN where `v` must not count (NaN itself, `−∞` for the minimum, `+∞` for the maximum; `+∞` is
/// never below a minimum that starts at `+∞` and only takes values, nor `−∞` above the maximum),
/// so that each lane's dependency chain is one `minps`/`maxps` rather than a compare, a mask and
/// a blend.
#[inline(always)]
pub fn finite_min_max_step(lo: &mut f32, hi: &mut f32, v: f32) {
    let low = if v == f32::NEG_INFINITY { f32::NAN } else { v };
    let high = if v == f32::INFINITY { f32::NAN } else { v };
    *lo = if low < *lo { low } else { *lo };
    *hi = if high > *hi { high } else { *hi };
}

/// Combine the lanes of [`finite_min_max_lanes`] in order, then the remaining elements `rest`.
pub fn finite_min_max_finish(
    lanes_lo: [f32; 8],
    lanes_hi: [f32; 8],
    rest: &[f32],
) -> Option<(f32, f32)> {
    // Strict comparisons (the first of equal values kept, zeros' signs included) rather than
    // `f32::min`/`max`, whose choice between −0 and +0 depends on how the compiler lowers them.
    let mut lo = f32::INFINITY;
    let mut hi = f32::NEG_INFINITY;
    for (&l, &h) in lanes_lo.iter().zip(&lanes_hi) {
        lo = if l < lo { l } else { lo };
        hi = if h > hi { h } else { hi };
    }
    for &v in rest.iter().filter(|v| v.is_finite()) {
        lo = if v < lo { v } else { lo };
        hi = if v > hi { v } else { hi };
    }
    (lo <= hi).then_some((lo, hi))
}

/// The eight lanes of [`finite_min_max_lanes`] fed one value at a time, as their definition reads
/// (what the faster versions are tested against).
#[cfg(test)]
pub(crate) fn finite_min_max_lanes_one_by_one(data: &[f32]) -> ([f32; 8], [f32; 8]) {
    let mut lo = [f32::INFINITY; 8];
    let mut hi = [f32::NEG_INFINITY; 8];
    for (i, &v) in data[..data.len() / 8 * 8].iter().enumerate() {
        finite_min_max_step(&mut lo[i % 8], &mut hi[i % 8], v);
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_lanes_fold_to_the_eight_lanes_fed_one_by_one() {
        let bits = |(lo, hi): ([f32; 8], [f32; 8])| (lo.map(f32::to_bits), hi.map(f32::to_bits));
        // Zeros of both signs in the two halves of a lane, either one first.
        let special = [
            0.0,
            -0.0,
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        let mut state = 0x2545_f491_u32;
        for len in (0..100).chain([4095, 4096, 4104, 4112, 10_000]) {
            for _ in 0..40 {
                let data: Vec<f32> = (0..len)
                    .map(|_| {
                        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        special[(state >> 24) as usize % special.len()]
                    })
                    .collect();
                assert_eq!(
                    bits(finite_min_max_lanes(&data)),
                    bits(finite_min_max_lanes_one_by_one(&data)),
                    "{data:?}"
                );
            }
        }
        // Lane 0: −0 in the second half (value 8) before +0 in the first (value 16).
        let mut data = vec![2.0f32; 32];
        data[8] = -0.0;
        data[16] = 0.0;
        assert_eq!(
            finite_min_max_lanes(&data).0[0].to_bits(),
            (-0.0f32).to_bits()
        );
        data[8] = 0.0;
        data[16] = -0.0;
        assert_eq!(finite_min_max_lanes(&data).0[0].to_bits(), 0.0f32.to_bits());
    }

    #[test]
    fn the_min_max_step_is_the_finite_strict_select() {
        // Every sequence of three special values, from the lanes' starting point: the same bits
        // as "replace when finite and strictly smaller (larger)".
        let special = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
        ];
        for &a in &special {
            for &b in &special {
                for &c in &special {
                    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
                    let (mut want_lo, mut want_hi) = (f32::INFINITY, f32::NEG_INFINITY);
                    for v in [a, b, c] {
                        finite_min_max_step(&mut lo, &mut hi, v);
                        if v.is_finite() && v < want_lo {
                            want_lo = v;
                        }
                        if v.is_finite() && v > want_hi {
                            want_hi = v;
                        }
                    }
                    assert_eq!(
                        (lo.to_bits(), hi.to_bits()),
                        (want_lo.to_bits(), want_hi.to_bits()),
                        "{a} {b} {c}"
                    );
                }
            }
        }
    }

    #[test]
    fn integer_counting_equals_one_addition_at_a_time() {
        let data: Vec<f32> = (0..5000).map(|i| ((i as f32) * 0.77).sin() * 3.0).collect();
        for start in [vec![0.0f32; 16], vec![0.5; 16], vec![16_777_000.0; 16]] {
            let mut fast = start.clone();
            let mut slow = start.clone();
            let a = histc_accumulate(&data, -2.0, 2.5, &mut fast);
            let b = histc_accumulate_sequential(&data, -2.0, 2.5, &mut slow);
            assert_eq!((a, fast), (b, slow));
        }
    }

    #[test]
    fn max_goes_to_last_bin_and_outside_is_dropped() {
        let h = histc(&[0.0, 0.5, 1.0, 1.5, -0.1, f32::NAN], 2, 0.0, 1.0);
        assert_eq!(h, vec![1.0, 2.0]);
    }

    #[test]
    fn constant_range_widens_by_one() {
        // histc(0.75, bins=4, 0.75, 0.75) uses [-0.25, 1.75]: 0.75 lands in bin 2 (= bins/2).
        assert_eq!(histc(&[0.75], 4, 0.75, 0.75), vec![0.0, 0.0, 1.0, 0.0]);
    }

    #[test]
    fn min_max_ignores_non_finite() {
        assert_eq!(
            crate::shared_stats::finite_min_max(&[f32::NAN, 3.0, -2.0, f32::INFINITY]),
            Some((-2.0, 3.0))
        );
        assert_eq!(crate::shared_stats::finite_min_max(&[f32::NAN]), None);
        let many: Vec<f32> = (0..1000).map(|i| i as f32 - 500.0).collect();
        assert_eq!(
            crate::shared_stats::finite_min_max(&many),
            Some((-500.0, 499.0))
        );
    }

    #[test]
    fn magnitudes_are_binned_as_a_copy_of_the_absolute_values_would_be() {
        let mut data: Vec<f32> = (0..(3 << 20) + 17)
            .map(|i| ((i as f32) * 0.61).sin() * 5.0)
            .collect();
        data[7] = f32::NAN;
        data[8] = f32::NEG_INFINITY;
        data[9] = -0.0;
        let abs: Vec<f32> = data.iter().map(|v| v.abs()).collect();
        for (bins, lo, hi) in [(2048, 0.0f32, 5.0f32), (3, -1.0, 2.5), (16, 1.0, 1.0)] {
            assert_eq!(histc_abs(&data, bins, lo, hi), histc(&abs, bins, lo, hi));
            let tensor = crate::tensor::Tensor::from_vec(data.clone());
            let _shared = crate::shared_stats::SharedStats::share(&[&tensor]);
            // Shared: the first call counts, the second (and values vs magnitudes) must not mix.
            assert_eq!(
                histc_abs(&tensor.data, bins, lo, hi),
                histc(&abs, bins, lo, hi)
            );
            assert_eq!(
                histc_abs(&tensor.data, bins, lo, hi),
                histc(&abs, bins, lo, hi)
            );
            assert_eq!(
                histc(&tensor.data, bins, lo, hi),
                histc(&data, bins, lo, hi)
            );
        }
    }
}
