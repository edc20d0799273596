//! `HistogramObserver._combine_histograms` / `_upscale_histogram` (torch 2.15).
//!
//! When a batch widens the range from `[a, b]` to `[a', b']`, every old bin is split into
//! `rate` parts of `count/rate` (float32); part `j` sits at the mid-point
//! `linspace(a, b, bins·rate + 1)[j] + 0.5·(b − a)/(bins·rate)` and goes to bin
//! `bucketize(mid, linspace(a', b', bins + 1), right=True) − 1` clamped to `[0, bins − 1]`; the
//! parts are accumulated in index order in float32 (`bincount` with weights). An old histogram
//! of a single value (`a == b`) moves whole, as `histc([a], bins, a', b')·sum(old)`.

use super::binning;
use crate::kernels::torch::{linspace_fma, sum_f32};

/// `update_hist + old histogram re-binned onto [new_min, new_max]`.
pub fn combine(
    old: &[f32],
    old_min: f32,
    old_max: f32,
    update: &[f32],
    new_min: f32,
    new_max: f32,
    rate: usize,
) -> Vec<f32> {
    if new_min == old_min && new_max == old_max {
        return old.iter().zip(update).map(|(a, b)| a + b).collect();
    }
    let transformed: Vec<f32> = if old_min == old_max {
        let mass = sum_f32(old);
        binning::histc(&[old_min], old.len(), new_min, new_max)
            .into_iter()
            .map(|one| one * mass)
            .collect()
    } else {
        upscale(old, old_min, old_max, new_min, new_max, rate)
    };
    update
        .iter()
        .zip(&transformed)
        .map(|(u, t)| u + t)
        .collect()
}

/// `_upscale_histogram`: the old histogram expressed on the new range's bins.
pub fn upscale(
    hist: &[f32],
    old_min: f32,
    old_max: f32,
    new_min: f32,
    new_max: f32,
    rate: usize,
) -> Vec<f32> {
    let bins = hist.len();
    let mut out = vec![0.0f32; bins];
    if bins == 0 || rate == 0 {
        return out;
    }
    let parts = bins * rate;
    let bin_size = (old_max - old_min) / parts as f32;
    let half = 0.5f32 * bin_size;
    let starts = linspace_fma(old_min, old_max, parts + 1);
    let bounds = linspace_fma(new_min, new_max, bins + 1);
    let rate_f = rate as f32;
    let last = bins as i64 - 1;
    for (j, &start) in starts[..parts].iter().enumerate() {
        let mid = start + half;
        let bucket = (upper_bound(&bounds, mid) as i64 - 1).clamp(0, last) as usize;
        out[bucket] += hist[j / rate] / rate_f;
    }
    out
}

/// `torch.bucketize(v, bounds, right=True)`: ATen's binary search for the first bound `> v`.
fn upper_bound(bounds: &[f32], v: f32) -> usize {
    let (mut start, mut end) = (0usize, bounds.len());
    while start < end {
        let mid = start + ((end - start) >> 1);
        // `!(bound > v)` also steps over a NaN bound, as ATen's search does.
        if bounds[mid] > v {
            end = mid;
        } else {
            start = mid + 1;
        }
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upscaling_keeps_the_mass_and_spreads_it_evenly() {
        // Two bins on [0, 2] re-binned on [0, 4]: everything lands in the new first bin.
        let out = upscale(&[16.0, 32.0], 0.0, 2.0, 0.0, 4.0, 16);
        assert_eq!(out, vec![48.0, 0.0]);
        // Onto [-1, 2] with 2 bins (edges -1, 0.5, 2): old bin 0 = [0, 1] splits at 0.5.
        let out = upscale(&[16.0, 16.0], 0.0, 2.0, -1.0, 2.0, 16);
        assert_eq!(out, vec![8.0, 24.0]);
    }

    #[test]
    fn single_valued_history_moves_whole() {
        let out = combine(
            &[0.0, 5.0, 0.0, 0.0],
            0.75,
            0.75,
            &[1.0, 0.0, 0.0, 1.0],
            -1.0,
            1.0,
            16,
        );
        // 0.75 on [-1, 1] with 4 bins → bin 3.
        assert_eq!(out, vec![1.0, 0.0, 0.0, 6.0]);
        let same = combine(&[1.0, 2.0], 0.0, 1.0, &[3.0, 4.0], 0.0, 1.0, 16);
        assert_eq!(same, vec![4.0, 6.0]);
    }

    #[test]
    fn bucketize_right_counts_bounds_at_or_below() {
        let b = [0.0, 1.0, 2.0];
        assert_eq!(upper_bound(&b, -0.5), 0);
        assert_eq!(upper_bound(&b, 0.0), 1);
        assert_eq!(upper_bound(&b, 1.5), 2);
        assert_eq!(upper_bound(&b, 2.0), 3);
    }
}
