//! ORT's `compute_percentile` and `compute_distribution` on a collected histogram.
//!
//! **Percentile**: `cdf = cumsum(hist / total)` (float64). Symmetric (the `|x|` histogram):
//! `idx = searchsorted(cdf, p/100)`, range `(−edges[idx], edges[idx])`. Asymmetric (the value
//! histogram): `t = (100 − p)/200`, range `(edges[searchsorted(cdf, t)],
//! edges[searchsorted(cdf, 1 − t)])`. Either way the range is then clamped to the observed data
//! `[min, max]` — which turns the symmetric result asymmetric (e.g. `(−45, 119.94)`).
//! `TensorData.hist`/`.bins` receive `hist[:2]`, the first two bin counts (an ORT bug).
//!
//! **Distribution**: needs `num_bins ≥ 512`. Bin centres `v = (e[:-1] + e[1:])·0.5` (float32);
//! `same`: `avg = Σh·v/Σh`, `std = sqrt(Σh·v²/Σh − avg²)` in float64 (numpy pairwise sums), stored
//! as float32; `p3`: the same on `sign(v)·|v|^(1/3)`. The range reported is the histogram's
//! `(edges.min(), edges.max())` = `±threshold`.

use crate::derivation::{self, Step};
use crate::error::{Error, Result, Stage};
use crate::kernels::numpy;

/// Result of the percentile search.
#[derive(Debug, Clone, PartialEq)]
pub struct PercentileSearch {
    /// `(lowest, highest)` after clamping to the data range.
    pub range: (f32, f32),
    /// The edge indices picked (`[idx]` symmetric, `[left, right]` asymmetric).
    pub indices: Vec<usize>,
    /// ORT's `TensorData.hist` and `.bins`: `hist[0]`, `hist[1]`.
    pub tensordata_hist_bins: (i64, i64),
}

/// `compute_percentile` for one histogram.
pub fn percentile_range(
    hist: &[i64],
    edges: &[f32],
    min: f32,
    max: f32,
    percentile: f64,
    symmetric: bool,
) -> Result<PercentileSearch> {
    if !(0.0..=100.0).contains(&percentile) {
        return Err(Error::framework(
            "ValueError",
            "Invalid percentile. Must be in range 0 <= percentile <= 100.",
            Stage::CalculateQparams,
        ));
    }
    let total: i64 = hist.iter().sum();
    let shares: Vec<f64> = hist.iter().map(|&h| h as f64 / total as f64).collect();
    let cdf = numpy::cumsum_f64(&shares);
    let edge = |i: usize| -> Result<f32> {
        edges.get(i).copied().ok_or_else(|| {
            Error::framework(
                "IndexError",
                format!(
                    "index {i} is out of bounds for axis 0 with size {}",
                    edges.len()
                ),
                Stage::CalculateQparams,
            )
        })
    };
    let (indices, (mut lo, mut hi)) = if symmetric {
        let idx = numpy::searchsorted_left(&cdf, percentile / 100.0);
        let th = edge(idx)?;
        (vec![idx], (-th, th))
    } else {
        let cut = (100.0 - percentile) / 200.0;
        let right = numpy::searchsorted_left(&cdf, 1.0 - cut);
        let left = numpy::searchsorted_left(&cdf, cut);
        (vec![left, right], (edge(left)?, edge(right)?))
    };
    let (unclamped_lo, unclamped_hi) = (lo, hi);
    if lo < min {
        lo = min;
    }
    if hi > max {
        hi = max;
    }
    derivation::record(|| {
        let formula = if symmetric {
            "cdf = cumsum(hist of |x|) / total; i = searchsorted(cdf, percentile / 100) (left); \
             threshold ±edges[i], then clamped to the observed [min, max]"
        } else {
            "cdf = cumsum(hist) / total; cut = (100 − percentile) / 200; low = edges[searchsorted(cdf, cut)], \
             high = edges[searchsorted(cdf, 1 − cut)], then clamped to the observed [min, max]"
        };
        Step::new(
            "Percentile of the histogram",
            formula,
            "onnxruntime/quantization/calibrate.py:1055 (onnxruntime 1.31.1, HistogramCollector.compute_percentile)",
        )
        .value("percentile", percentile)
        .value("bins", hist.len())
        .value("bin index", indices.iter().map(|&i| i as i64).collect::<Vec<_>>())
        .value("range before clamping", vec![unclamped_lo, unclamped_hi])
        .value("observed min, max", vec![min, max])
        .value("range", vec![lo, hi])
    });
    let (h0, h1) = match hist {
        [a, b, ..] => (*a, *b),
        _ => {
            // `(*thresholds, *hist[:2])` has fewer than 4 items and TensorsData's own error
            // message then fails to format (`{k:r}` on a str).
            return Err(Error::framework(
                "ValueError",
                "Unknown format code 'r' for object of type 'str'",
                Stage::CalculateQparams,
            ));
        }
    };
    Ok(PercentileSearch {
        range: (lo, hi),
        indices,
        tensordata_hist_bins: (h0, h1),
    })
}

crate::choice_enum! {
    /// The `scenario` of the Distribution calibrater.
    pub enum Scenario {
        /// Weights and float 8 follow the same distribution.
        Same = "same",
        /// float 8 ~ X³ for a Gaussian X: statistics of `sign(v)·|v|^(1/3)`.
        P3 = "p3",
    }
}

/// Result of `compute_distribution`.
#[derive(Debug, Clone, PartialEq)]
pub struct DistributionStats {
    pub avg: f32,
    pub std: f32,
    /// `(edges.min(), edges.max())`.
    pub range: (f32, f32),
}

/// `compute_distribution` for one histogram collected with `num_bins` bins.
pub fn distribution(
    hist: &[i64],
    edges: &[f32],
    num_bins: usize,
    scenario: Scenario,
) -> Result<DistributionStats> {
    if num_bins < 512 {
        return Err(Error::framework(
            "ValueError",
            "Invalid num_bins. Must be in range 512 <= num_bins.",
            Stage::CalculateQparams,
        ));
    }
    let mut values: Vec<f32> = edges.windows(2).map(|w| (w[0] + w[1]) * 0.5).collect();
    if scenario == Scenario::P3 {
        let power = (1.0f64 / 3.0) as f32;
        for v in values.iter_mut() {
            let mut fact = v.abs() / *v;
            if !fact.is_finite() {
                fact = 1.0;
            }
            *v = v.abs().powf(power) * fact;
        }
    }
    let total: i64 = hist.iter().sum();
    let weighted: Vec<f64> = hist
        .iter()
        .zip(&values)
        .map(|(&h, &v)| h as f64 * v as f64)
        .collect();
    let squares: Vec<f64> = hist
        .iter()
        .zip(&values)
        .map(|(&h, &v)| h as f64 * (v * v) as f64)
        .collect();
    let avg = numpy::sum_f64(&weighted) / total as f64;
    let std = (numpy::sum_f64(&squares) / total as f64 - avg * avg).sqrt();
    let lo = edges.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = edges.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    Ok(DistributionStats {
        avg: avg as f32,
        std: std as f32,
        range: (lo, hi),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_percentile_is_clamped_to_the_data() {
        // |x| histogram over [0, 4] (4 bins): cdf = [.25, .5, .75, 1], the 75th percentile is
        // the first cdf ≥ 0.75, edges[2] = 2, so the range would be ±2, but the data never went
        // below −1.
        let hist = [1, 1, 1, 1];
        let edges = [0.0, 1.0, 2.0, 3.0, 4.0];
        let r = percentile_range(&hist, &edges, -1.0, 4.0, 75.0, true).unwrap();
        assert_eq!(r.indices, vec![2]);
        assert_eq!(r.range, (-1.0, 2.0));
        assert_eq!(r.tensordata_hist_bins, (1, 1));
        let a =
            percentile_range(&hist, &[-2.0, -1.0, 0.0, 1.0, 2.0], -2.0, 2.0, 50.0, false).unwrap();
        // t = 0.25: left = searchsorted(cdf, 0.25) = 0, right = searchsorted(cdf, 0.75) = 2.
        assert_eq!(a.indices, vec![0, 2]);
        assert_eq!(a.range, (-2.0, 0.0));
        assert!(percentile_range(&hist, &edges, 0.0, 4.0, 101.0, true).is_err());
    }

    #[test]
    fn distribution_statistics_use_bin_centres() {
        let edges = crate::kernels::numpy::linspace_f32(-2.0, 2.0, 513);
        let mut hist = vec![0i64; 512];
        hist[0] = 1; // centre −1.99609375
        hist[511] = 1; // centre +1.99609375
        let d = distribution(&hist, &edges, 512, Scenario::Same).unwrap();
        assert_eq!(d.avg, 0.0);
        assert_eq!(d.std, 511.0 / 256.0);
        assert_eq!(d.range, (-2.0, 2.0));
        let p3 = distribution(&hist, &edges, 512, Scenario::P3).unwrap();
        assert!((p3.std - (511.0f32 / 256.0).powf(1.0 / 3.0)).abs() < 1e-6);
        let err = distribution(&hist, &edges, 128, Scenario::Same).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ValueError: Invalid num_bins. Must be in range 512 <= num_bins."
        );
    }
}
