//! Quark's `PerTensorPercentileObserver` (`get_min_max_by_percentile`).
//!
//! The histogram of [`super::histogram`] with 4200 bins and zeros skipped; `percentile` is the
//! instance attribute (default 99.99999999, not part of Quark's config). `cdf = cumsum(hist /
//! total)` (float32 quotients accumulated in double, stored float32).
//!
//! * symmetric: `target = min(p/100, cdf[−1])`; `max = edges[i]` for the first `cdf[i] ≥ target`
//!   (the bin's **left** edge), `min = 0`.
//! * asymmetric (**Quark bug**): with `t = (100 − p)/200`, the first bin where `cdf ≥ t` — a *low*
//!   quantile — gives `max`, and the first bin where `cdf ≤ 1 − t` (almost always bin 0) gives
//!   `min`: the range collapses onto the lower tail. The `.fixed` variant takes `min` at the `t`
//!   quantile and `max` at the `1 − t` quantile instead.
//!
//! An empty histogram gives `min = max = 0`. Then the common qparams. `percentile` only enters
//! the search; what is collected is the histogram of [`super::histogram::Binning`].

use super::config::quark_params;
use super::dtype::UniformDtype;
use super::histogram::{
    Binning, HistogramClass, HistogramObserver, HistogramSearch, QuarkHistogram,
};
use super::spec::{PerTensorScheme, QuarkConfig};
use crate::error::{Error, Result, Stage};
use crate::observer::QParams;

quark_params! {
    /// The configuration `PerTensorPercentileObserver` reads, and its instance attributes.
    pub struct PerTensorPercentileArgs {
        dtype: UniformDtype = UniformDtype::Int8, Search;
        qscheme: PerTensorScheme = PerTensorScheme::PerTensor;
        symmetric: Some(true), Data;
        scale_type: Search;
        is_dynamic: false, Search;
        scale_format: None;
        histogram: bins 4200, skip_zeros true;
        extra {
            /// percentile kept (Quark's .percentile instance attribute, not in its config)
            percentile: f64 = 99.99999999; float(0.0, 100.0), Search;
        }
    }
}

/// The configuration of a percentile observer.
#[derive(Debug, Clone, PartialEq)]
pub struct PercentileConfig {
    pub spec: QuarkConfig,
    pub binning: Binning,
    pub percentile: f64,
    /// Asymmetric tails the right way round (and aligned merging).
    pub fixed: bool,
}

impl HistogramSearch for PercentileConfig {
    fn spec_and_binning(&self) -> (&QuarkConfig, &Binning) {
        (&self.spec, &self.binning)
    }

    fn min_max(&self, hist: &QuarkHistogram) -> Result<Option<(f32, f32)>> {
        percentile_min_max(hist, self.percentile, self.spec.symmetric, self.fixed).map(Some)
    }

    fn annotate(&self, _: &QuarkHistogram, q: &mut QParams) {
        if self.spec.symmetric == Some(false) && !self.fixed {
            q.notes.push(
                "Quark's asymmetric percentile swaps the tails: max is taken at the lower quantile"
                    .to_string(),
            );
        }
    }
}

/// The percentile class; `FIXED` puts the asymmetric tails the right way round and merges
/// histograms aligned.
pub struct Percentile<const FIXED: bool>;

impl<const FIXED: bool> HistogramClass for Percentile<FIXED> {
    type Args = PerTensorPercentileArgs;
    type Config = PercentileConfig;

    fn resolve(args: &PerTensorPercentileArgs) -> Result<PercentileConfig> {
        let spec = args.quark_config()?;
        Ok(PercentileConfig {
            binning: Binning::new(args.bins, args.skip_zeros, spec.symmetric, FIXED),
            spec,
            percentile: args.percentile,
            fixed: FIXED,
        })
    }
}

/// `PerTensorPercentileObserver` (`FIXED`: the corrected variant).
pub type PerTensorPercentile<const FIXED: bool> = HistogramObserver<Percentile<FIXED>>;

/// The first index where `pred` holds, else `fallback`.
fn first_index(cdf: &[f32], fallback: usize, pred: impl Fn(f32) -> bool) -> usize {
    cdf.iter().position(|&c| pred(c)).unwrap_or(fallback)
}

fn edge(edges: &[f32], i: usize) -> Result<f32> {
    edges.get(i).copied().ok_or_else(|| {
        Error::framework(
            "IndexError",
            format!(
                "index {i} is out of bounds for dimension 0 with size {}",
                edges.len()
            ),
            Stage::CalculateQparams,
        )
    })
}

/// `get_min_max_by_percentile(hist, edges, p)`; `fixed` corrects the asymmetric tail swap.
pub fn percentile_min_max(
    h: &QuarkHistogram,
    p: f64,
    symmetric: Option<bool>,
    fixed: bool,
) -> Result<(f32, f32)> {
    let total: f32 = h.hist.iter().map(|&c| c as f64).sum::<f64>() as f32;
    if total.is_nan() || total <= 0.0 {
        return Ok((0.0, 0.0));
    }
    let mut acc = 0.0f64;
    let cdf: Vec<f32> = h
        .hist
        .iter()
        .map(|&c| {
            acc += (c / total) as f64;
            acc as f32
        })
        .collect();
    let last_idx = cdf.len() - 1;
    if symmetric == Some(false) {
        let t = (100.0 - p) / 200.0;
        let (t32, upper32) = (t as f32, (1.0 - t) as f32);
        if fixed {
            let lo = first_index(&cdf, last_idx, |c| c >= t32);
            let hi = first_index(&cdf, last_idx, |c| c >= upper32);
            let range = (edge(&h.edges, lo)?, edge(&h.edges, hi)?);
            record(
                p,
                "asymmetric, tails in order (quantscope's correction): min = edges[first i with \
                 cdf[i] ≥ (100 − p)/200], max = edges[first i with cdf[i] ≥ 1 − (100 − p)/200]",
                &[lo, hi],
                range,
            );
            return Ok(range);
        }
        let upper_idx = first_index(&cdf, last_idx, |c| c >= t32);
        let lower_idx = first_index(&cdf, 0, |c| c <= upper32);
        let range = (edge(&h.edges, lower_idx)?, edge(&h.edges, upper_idx)?);
        record(p, "asymmetric, as Quark 0.13 swaps the tails: max = edges[first i with cdf[i] ≥ (100 − p)/200], \
                   min = edges[first i with cdf[i] ≤ 1 − (100 − p)/200]", &[lower_idx, upper_idx], range);
        Ok(range)
    } else {
        let target = (p / 100.0).min(cdf[last_idx] as f64) as f32;
        let idx = first_index(&cdf, last_idx, |c| c >= target);
        let range = (0.0, edge(&h.edges, idx)?);
        record(
            p,
            "symmetric: max = edges[first i with cdf[i] ≥ min(p/100, cdf[last])], min = 0",
            &[idx],
            range,
        );
        Ok(range)
    }
}

/// The percentile search's step of the derivation.
fn record(p: f64, rule: &str, indices: &[usize], (lo, hi): (f32, f32)) {
    crate::derivation::record(|| {
        crate::derivation::Step::new(
            "Percentile of the |x| or x histogram (cdf in float32)",
            format!(
                "cdf = cumsum(hist / Σ hist); {rule}. PerTensorPercentileObserver's \
                 constructor sets percentile = 99.99999999 (only assigning the attribute afterwards \
                 changes it)"
            ),
            "quark/torch/quantization/observer/observer.py:1309 (amd-quark 0.13, get_min_max_by_percentile; \
             the hard-coded percentile at :1297)",
        )
        .value("percentile", p)
        .value("bin index", indices.iter().map(|&i| i as i64).collect::<Vec<_>>())
        .value("range", vec![lo, hi])
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(counts: &[f32]) -> QuarkHistogram {
        QuarkHistogram {
            num_bins: counts.len(),
            hist: counts.to_vec(),
            edges: (0..=counts.len()).map(|i| i as f32).collect(),
        }
    }

    #[test]
    fn symmetric_takes_the_left_edge() {
        let h = hist(&[8.0, 4.0, 2.0, 1.0, 1.0]);
        // cdf = .5 .75 .875 .9375 1
        assert_eq!(
            percentile_min_max(&h, 93.75, Some(true), false).unwrap(),
            (0.0, 3.0)
        );
        assert_eq!(
            percentile_min_max(&h, 99.99999999, Some(true), false).unwrap(),
            (0.0, 4.0)
        );
        assert_eq!(
            percentile_min_max(&h, 50.0, None, false).unwrap(),
            (0.0, 0.0)
        );
    }

    #[test]
    fn asymmetric_swaps_tails_unless_fixed() {
        let h = hist(&[1.0, 7.0, 48.0, 7.0, 1.0]);
        // t = 1/64: cdf = 1/64, 8/64, 56/64, 63/64, 1 → the first cdf ≥ t is bin 0 (→ max) and
        // the first cdf ≤ 1 − t is bin 0 (→ min).
        assert_eq!(
            percentile_min_max(&h, 96.875, Some(false), false).unwrap(),
            (0.0, 0.0)
        );
        // Fixed: min at the t quantile (bin 0), max at the 1 − t quantile (bin 3).
        assert_eq!(
            percentile_min_max(&h, 96.875, Some(false), true).unwrap(),
            (0.0, 3.0)
        );
        let empty = hist(&[0.0, 0.0]);
        assert_eq!(
            percentile_min_max(&empty, 99.0, Some(false), false).unwrap(),
            (0.0, 0.0)
        );
    }
}
