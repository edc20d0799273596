//! `HistogramObserver._non_linear_param_search` (torch 2.15), reproduced operation by operation.
//!
//! Greedy shrinking of `[start_bin, end_bin]`: with `total = sum(hist)` (float32 cascade sum)
//! and `cSum = cumsum(hist)` (float64 running sum stored as float32), `alpha`/`beta` move by
//! `1e-5` (Python doubles); the quantile bins are found by comparing `cSum` with
//! `float32(next_alpha·total)` / `float32(next_beta·total)`; the side that moved further is
//! moved, and each new candidate's L2 error estimate is computed; the search stops at the first
//! error larger than the best so far.
//!
//! The error (`_compute_quantization_error`) treats each source bin's mass as uniform and sums
//! over all bins, in float32, `density·(e³ − b³)/3` for the parts of the bin that fall into the
//! first, the middle and the last destination bin it overlaps (`dst_nbins = 2^bits` destination
//! bins of width `bin_width·(end − start + 1)/dst_nbins`; Python doubles become float32 where they
//! meet tensors), then `norm.sum()` with the cascade sum. Every rounding step is PyTorch's, so the
//! chosen bins are PyTorch's.
//!
//! Speed: the quantile scans reuse the monotonicity of `cSum` (amortised O(1) per step), empty
//! bins are skipped where that provably leaves every float32 value unchanged, and the floor
//! divisions use an exact float64 shortcut when the quotients are small (`dst_nbins ≤ 2²⁰`).

use crate::derivation::{self, Candidates, Step};
use crate::kernels::torch::{cumsum_f32, div_floor, sum_f32};

/// What the search found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOutcome {
    pub start_bin: usize,
    pub end_bin: usize,
    /// `min_val + bin_width·start_bin` (float32).
    pub new_min: f32,
    /// `min_val + bin_width·(end_bin + 1)` (float32).
    pub new_max: f32,
    /// Number of error evaluations (candidates tried).
    pub evaluations: usize,
    /// The error estimate of the chosen range (as PyTorch's `norm_min`).
    pub norm: f64,
}

/// Run the search on `hist` (bins over `[min_val, max_val]`) for `dst_nbins` destination bins.
pub fn non_linear_param_search(
    hist: &[f32],
    min_val: f32,
    max_val: f32,
    dst_nbins: f64,
) -> SearchOutcome {
    let bins = hist.len();
    let bin_width = (max_val - min_val) / bins as f32;
    let finish = |start: usize, end: usize, evaluations: usize, norm: f64| SearchOutcome {
        start_bin: start,
        end_bin: end,
        new_min: min_val + bin_width * start as f32,
        new_max: min_val + bin_width * (end + 1) as f32,
        evaluations,
        norm,
    };
    if bins == 0 {
        return finish(0, 0, 0, f64::INFINITY);
    }
    let total = sum_f32(hist) as f64;
    let csum = cumsum_f32(hist);
    let mut error = QuantError::new(hist, min_val, max_val, dst_nbins);

    const STEP: f64 = 1e-5;
    let (mut alpha, mut beta) = (0.0f64, 1.0f64);
    let (mut start, mut end) = (0usize, bins - 1);
    let mut norm_min = f64::INFINITY;
    let mut evaluations = 0usize;
    // First index with cSum >= threshold / last index with cSum <= threshold: both thresholds
    // only move one way, so these cursors only move one way.
    let mut first_ge = 0usize;
    let mut last_le = bins as isize - 1;
    // The candidates evaluated, for the derivation: start and end bin, their range, the error.
    let mut tried = derivation::recording().then(Vec::new);
    let range_of = |start: usize, end: usize| {
        (
            min_val + bin_width * start as f32,
            min_val + bin_width * (end + 1) as f32,
        )
    };
    while alpha < beta {
        let next_alpha = alpha + STEP;
        let next_beta = beta - STEP;
        let lo_threshold = (next_alpha * total) as f32;
        let hi_threshold = (next_beta * total) as f32;
        while first_ge < bins && csum[first_ge] < lo_threshold {
            first_ge += 1;
        }
        while last_le >= 0 && csum[last_le as usize] > hi_threshold {
            last_le -= 1;
        }
        // PyTorch scans l up from start_bin (stopping at end_bin) and r down from end_bin
        // (stopping at start_bin); with cSum non-decreasing that is a clamp of the cursors.
        let l = first_ge.clamp(start, end);
        let r = last_le.clamp(start as isize, end as isize) as usize;

        let (mut next_start, mut next_end) = (start, end);
        if l - start > end - r {
            next_start = l;
            alpha = next_alpha;
        } else {
            next_end = r;
            beta = next_beta;
            if r == end {
                // Nothing moves (here l == start) until the upper quantile leaves end_bin:
                // step beta alone, exactly as the full loop would.
                while alpha < beta {
                    let next_beta = beta - STEP;
                    if csum[end] > (next_beta * total) as f32 {
                        break;
                    }
                    beta = next_beta;
                }
                continue;
            }
        }
        if next_start == start && next_end == end {
            continue;
        }
        evaluations += 1;
        let norm = error.evaluate(next_start, next_end);
        if let Some(tried) = tried.as_mut() {
            let (lo, hi) = range_of(next_start, next_end);
            tried.push(vec![
                next_start as f64,
                next_end as f64,
                f64::from(lo),
                f64::from(hi),
                norm,
            ]);
        }
        if norm > norm_min {
            break;
        }
        norm_min = norm;
        start = next_start;
        end = next_end;
    }
    let outcome = finish(start, end, evaluations, norm_min);
    if let Some(tried) = tried {
        record_search(tried, &outcome, hist.len(), dst_nbins);
    }
    outcome
}

/// `HistogramObserver._non_linear_param_search`, torch 2.15.0.
const SOURCE: &str = "torch/ao/quantization/observer.py:1130 (torch 2.15.0); the error estimate \
                      _compute_quantization_error at :1076";

/// The search's step of the derivation: every candidate it evaluated, in order.
fn record_search(tried: Vec<Vec<f64>>, outcome: &SearchOutcome, bins: usize, dst_nbins: f64) {
    // The pick is the last candidate the search moved to (none when the first was worse).
    let picked = tried
        .iter()
        .rposition(|row| row[0] == outcome.start_bin as f64 && row[1] == outcome.end_bin as f64);
    let mut step = Step::new(
        "Greedy search for the range with the smallest estimated L2 error",
        "from [0, bins − 1], move the bin range's end whose quantile (α or β, steps of 1e-5) moved \
         further; estimate the error of quantizing the histogram into dst_nbins bins over each new \
         range (each source bin's mass spread uniformly); stop at the first estimate larger than \
         the best so far",
        SOURCE,
    )
    .value("bins", bins)
    .value("dst_nbins", dst_nbins)
    .value("candidates evaluated", outcome.evaluations)
    .value("start_bin", outcome.start_bin)
    .value("end_bin", outcome.end_bin)
    .value("search_min", outcome.new_min)
    .value("search_max", outcome.new_max)
    .value("estimated L2 error", outcome.norm);
    if let Some(picked) = picked {
        step = step.candidates(Candidates::new(
            &["start_bin", "end_bin", "min", "max", "estimated L2 error"],
            tried,
            picked,
            "greedy: the last candidate before the first estimate that is larger than the best so far",
        )
        .ranges_in(2, 3));
    }
    derivation::record(|| step);
}

/// `_compute_quantization_error` with everything that does not depend on the candidate
/// precomputed.
struct QuantError {
    /// `hist / float32(bin_width)`.
    density: Vec<f32>,
    /// Bins whose density is not zero, when skipping the others is exact.
    occupied: Option<Vec<usize>>,
    /// Every term underflows to 0 in float32.
    underflows: bool,
    /// Python's `bin_width` (double).
    bin_width: f64,
    dst_nbins: f64,
    /// `float32(dst_nbins − 1)`, the clamp bound.
    dst_max: f32,
    /// Whether `floor(a/b)` in float64 equals ATen's float32 floor division here.
    fast_floor: bool,
    /// Per-bin norms, reused between evaluations (zeros at skipped bins).
    norm: Vec<f32>,
}

impl QuantError {
    fn new(hist: &[f32], min_val: f32, max_val: f32, dst_nbins: f64) -> Self {
        let bins = hist.len();
        let bin_width = (max_val as f64 - min_val as f64) / bins as f64;
        let bw = bin_width as f32;
        let density: Vec<f32> = hist.iter().map(|&h| h / bw).collect();
        // An empty bin contributes +0.0 exactly when no intermediate overflows: every distance
        // is at most (bins + 1) bin widths, and its cube must stay finite.
        let reach = (bins as f64 + 1.0) * bin_width.abs();
        let finite_density = density.iter().all(|d| d.is_finite());
        let skip_ok = reach.is_finite() && reach < 1e12 && finite_density;
        // Every distance is below 2·reach; when that is under 2⁻⁵⁰ every float32 cube
        // `(x·x)·x` rounds to 0, so every term and the whole error are exactly 0.
        let underflows = finite_density && 2.0 * reach < 2f64.powi(-50);
        let occupied = skip_ok.then(|| {
            density
                .iter()
                .enumerate()
                .filter(|(_, &d)| d != 0.0)
                .map(|(i, _)| i)
                .collect()
        });
        QuantError {
            density,
            occupied,
            underflows,
            bin_width,
            dst_nbins,
            dst_max: (dst_nbins - 1.0) as f32,
            // Quotients beyond ±2²¹ clamp to 0 or dst_max either way when dst_nbins ≤ 2²⁰.
            fast_floor: dst_nbins <= (1u64 << 20) as f64,
            norm: vec![0.0; bins],
        }
    }

    /// The float32 error estimate of the candidate `[start, end]`, as a Python float.
    fn evaluate(&mut self, start: usize, end: usize) -> f64 {
        let dst_width = self.bin_width * (end - start + 1) as f64 / self.dst_nbins;
        if dst_width == 0.0 || self.underflows {
            return 0.0;
        }
        let k = Kernel {
            bw: self.bin_width as f32,
            dbw: dst_width as f32,
            half: (dst_width / 2.0) as f32,
            neg_half: (-dst_width / 2.0) as f32,
            dst_max: self.dst_max,
            start: start as i64,
        };
        let (h3, nh3) = (
            k.half * k.half * k.half,
            k.neg_half * k.neg_half * k.neg_half,
        );
        let middle = (h3 - nh3) / 3.0;
        let fast = self.fast_floor && k.dbw > 0.0 && k.dbw.is_finite() && k.bw.is_finite();
        match (&self.occupied, fast) {
            (Some(bins), true) => {
                for &i in bins {
                    self.norm[i] = k.term::<true>(i, self.density[i], h3, nh3, middle);
                }
            }
            (Some(bins), false) => {
                for &i in bins {
                    self.norm[i] = k.term::<false>(i, self.density[i], h3, nh3, middle);
                }
            }
            (None, _) => {
                for (i, (out, &d)) in self.norm.iter_mut().zip(&self.density).enumerate() {
                    *out = if fast {
                        k.term::<true>(i, d, h3, nh3, middle)
                    } else {
                        k.term::<false>(i, d, h3, nh3, middle)
                    };
                }
            }
        }
        sum_f32(&self.norm) as f64
    }
}

/// The float32 constants of one candidate.
struct Kernel {
    bw: f32,
    dbw: f32,
    half: f32,
    neg_half: f32,
    dst_max: f32,
    start: i64,
}

impl Kernel {
    /// `clamp(div(a, dbw, rounding_mode="floor"), 0, dst_nbins − 1)`. The fast form divides
    /// in float64 (exact floor of the real quotient, which is what ATen's float32 fmod-based
    /// floor division returns while |quotient| < 2²²; beyond that both clamp the same way).
    #[inline(always)]
    fn floor_div<const FAST: bool>(&self, a: f32) -> f32 {
        if FAST {
            let q = a as f64 / self.dbw as f64;
            let t = q as i64;
            let floor = t - ((t as f64) > q) as i64;
            floor.clamp(0, self.dst_max as i64) as f32
        } else {
            let q = div_floor(a, self.dbw);
            let q = if q < 0.0 { 0.0 } else { q };
            if q > self.dst_max {
                self.dst_max
            } else {
                q
            }
        }
    }

    /// `norm[i]` of `_compute_quantization_error`: `((0 + t_first) + t_middle) + t_last`.
    #[inline(always)]
    fn term<const FAST: bool>(
        &self,
        i: usize,
        density: f32,
        h3: f32,
        nh3: f32,
        middle: f32,
    ) -> f32 {
        let begin = (i as i64 - self.start) as f32 * self.bw;
        let end = begin + self.bw;
        let first = self.floor_div::<FAST>(begin);
        let last = self.floor_div::<FAST>(end);
        let first_center = (first + 0.5) * self.dbw;
        let delta_begin = begin - first_center;
        let t_first = density * ((h3 - delta_begin * delta_begin * delta_begin) / 3.0);
        let t_middle = (last - first - 1.0) * (density * middle);
        let last_center = last * self.dbw + self.half;
        let delta_end = end - last_center;
        let t_last = density * ((delta_end * delta_end * delta_end - nh3) / 3.0);
        ((0.0 + t_first) + t_middle) + t_last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_histogram_loses_its_last_bin() {
        // torch 2.15: (-1.0, 0.96875) after 2 evaluations.
        let out = non_linear_param_search(&[10.0f32; 64], -1.0, 1.0, 256.0);
        assert_eq!((out.start_bin, out.end_bin, out.evaluations), (0, 62, 2));
        assert_eq!((out.new_min, out.new_max), (-1.0, 0.96875));
    }

    #[test]
    fn greedy_search_stops_at_the_first_worse_candidate() {
        // torch 2.15 on the same histogram: (-10.0, 0.732421875) after 2 error evaluations —
        // dropping the lone outlier at the top first makes the next candidate worse.
        let mut hist = vec![0.0f32; 2048];
        for (i, h) in hist.iter_mut().enumerate().take(1100).skip(900) {
            *h = 1000.0 - (i as f32 - 1000.0).abs();
        }
        hist[0] = 1.0;
        hist[2047] = 1.0;
        let out = non_linear_param_search(&hist, -10.0, 10.0, 256.0);
        assert_eq!((out.start_bin, out.end_bin, out.evaluations), (0, 1098, 2));
        assert_eq!((out.new_min, out.new_max), (-10.0, 0.732_421_9));
    }

    #[test]
    fn skipping_empty_bins_and_fast_floor_change_nothing() {
        let mut hist = vec![0.0f32; 300];
        for (i, h) in hist.iter_mut().enumerate() {
            if i % 3 != 0 {
                *h = ((i * 37) % 11) as f32 / 16.0;
            }
        }
        let mut exact = QuantError::new(&hist, -2.5, 3.7, 256.0);
        exact.occupied = None;
        exact.fast_floor = false;
        let mut fast = QuantError::new(&hist, -2.5, 3.7, 256.0);
        assert!(fast.occupied.is_some() && fast.fast_floor);
        for (s, e) in [(0, 299), (3, 280), (40, 41), (150, 150), (7, 299)] {
            assert_eq!(
                exact.evaluate(s, e).to_bits(),
                fast.evaluate(s, e).to_bits()
            );
        }
    }
}
