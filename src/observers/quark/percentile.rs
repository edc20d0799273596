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
//! An empty histogram gives `min = max = 0`. Then the common qparams.

use super::build_qparams;
use super::histogram::{histogram_qparams, parse_histogram, QuarkHistogram};
use super::kernels::scaled_fake_quantize;
use super::spec::{QuarkSpec, SpecDefaults};
use crate::error::{Error, Result, Stage};
use crate::observer::legacy::{Observer, Retune};
use crate::observer::{ObserverState, QParams};
use crate::params::{ParamSpec, Params};
use crate::tensor::Tensor;

/// Quark's default `percentile` attribute.
pub const DEFAULT_PERCENTILE: f64 = 99.99999999;

/// `percentile` parameter declaration.
pub fn percentile_param() -> ParamSpec {
    ParamSpec::float(
        "percentile",
        0.0,
        100.0,
        DEFAULT_PERCENTILE,
        "percentile kept (Quark's .percentile instance attribute, not in its config)",
    )
    .search_only()
}

/// `PerTensorPercentileObserver` (faithful or with the asymmetric tails put right).
#[derive(Debug, Clone)]
pub struct PerTensorPercentile {
    spec: QuarkSpec,
    hist: QuarkHistogram,
    initial: QuarkHistogram,
    percentile: f64,
    fixed: bool,
}

impl PerTensorPercentile {
    /// Build from parameters; `fixed` swaps the asymmetric tails back.
    pub fn new(defaults: &SpecDefaults, params: &Params, fixed: bool) -> Result<Self> {
        let spec = defaults.parse(params)?;
        let mut hist = parse_histogram(params, &spec, 4200, true)?;
        if fixed {
            hist = hist.with_aligned_merging();
        }
        Ok(PerTensorPercentile {
            spec,
            initial: hist.clone(),
            hist,
            percentile: params.f64_or("percentile", DEFAULT_PERCENTILE)?,
            fixed,
        })
    }

    /// `(min, max)` by percentile.
    pub fn min_max(&self) -> Result<(f32, f32)> {
        let p = self.percentile;
        if !(0.0..=100.0).contains(&p) {
            return Err(Error::framework(
                "ValueError",
                "Percentile value must be between 0 and 100.",
                Stage::CalculateQparams,
            ));
        }
        percentile_min_max(&self.hist, p, self.spec.symmetric, self.fixed)
    }
}

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
            return Ok((edge(&h.edges, lo)?, edge(&h.edges, hi)?));
        }
        let upper_idx = first_index(&cdf, last_idx, |c| c >= t32);
        let lower_idx = first_index(&cdf, 0, |c| c <= upper32);
        Ok((edge(&h.edges, lower_idx)?, edge(&h.edges, upper_idx)?))
    } else {
        let target = (p / 100.0).min(cdf[last_idx] as f64) as f32;
        let idx = first_index(&cdf, last_idx, |c| c >= target);
        Ok((0.0, edge(&h.edges, idx)?))
    }
}

impl Observer for PerTensorPercentile {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        self.hist.observe(&batch.data)
    }

    fn qparams(&self) -> Result<QParams> {
        let (lo, hi) = self.min_max()?;
        let sz = histogram_qparams(&self.spec, lo, hi)?;
        let mut q = build_qparams(&self.spec, sz, vec![lo], vec![hi]);
        q.clip_range = Some((vec![lo], vec![hi]));
        q.extra
            .insert("num_bins_final".into(), self.hist.num_bins.into());
        if self.spec.symmetric == Some(false) && !self.fixed {
            q.notes.push(
                "Quark's asymmetric percentile swaps the tails: max is taken at the lower quantile"
                    .to_string(),
            );
        }
        Ok(q)
    }

    fn reset(&mut self) {
        self.hist = self.initial.clone();
    }

    fn state(&self) -> ObserverState {
        ObserverState {
            min_val: Vec::new(),
            max_val: Vec::new(),
            histogram: self.hist.state(),
        }
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        scaled_fake_quantize(&self.spec, x, &q.scale, &q.zero_point)
    }

    fn retune(&mut self, params: &Params) -> Result<Retune> {
        let only_percentile = params.keys().all(|k| k == "percentile");
        if !only_percentile {
            return Ok(Retune::NeedsData);
        }
        self.percentile = params.f64_or("percentile", self.percentile)?;
        Ok(Retune::Applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(counts: &[f32]) -> QuarkHistogram {
        let mut h = QuarkHistogram::new(counts.len(), false, Some(false));
        h.hist = counts.to_vec();
        h.edges = (0..=counts.len()).map(|i| i as f32).collect();
        h
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
