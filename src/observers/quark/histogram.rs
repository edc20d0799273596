//! Quark's `PerTensorHistogramObserver`, the histogram collection shared with the percentile
//! and MSE observers, ported literally.
//!
//! Each batch (float32): zeros dropped if `skip_zeros`; asymmetric: range `[min, max]` of the
//! batch; symmetric (or `None`): `|x|` and range `[0, max|x|]`. A constant batch widens its max by
//! `max(|min|, 1)·bins·ε`. The first batch is `torch.histc(x, bins, min, max)` with edges
//! `torch.linspace(min, max, bins + 1)`. Later batches that leave the edges extend them by whole
//! bins of the current width with `torch.arange` (which may drop the old last edge and yield a
//! count different from `bins + 1`), re-bin the batch with `torch.histc` over the new range and
//! add the **old counts left-aligned** (`hist[:old] += old`) — misplaced whenever the range grew
//! to the left. `PerTensorHistogramObserver` itself **never sets min/max**, so its qparams are
//! Quark's defaults (scale 1.0, zp 0; for fp8 `ε`).

use super::build_qparams;
use super::kernels::scaled_fake_quantize;
use super::qparams::{self, ScaleZp};
use super::spec::{QuarkSpec, SpecDefaults};
use super::torch_ops::{arange_f32, linspace_f32};
use crate::error::{Error, Result, Stage};
use crate::histogram::histc;
use crate::observer::legacy::Observer;
use crate::observer::{HistogramState, ObserverState, QParams};
use crate::params::{ParamSpec, Params};
use crate::tensor::Tensor;

/// Largest histogram Quark's merging is allowed to grow to here (it grows with the ratio of the
/// final range to the first batch's bin width).
pub const MAX_BINS: usize = 1 << 24;

/// The histogram state of Quark's histogram observers.
#[derive(Debug, Clone, PartialEq)]
pub struct QuarkHistogram {
    /// `_num_bins` (grows as the range grows).
    pub num_bins: usize,
    /// `_skip_zeros`.
    pub skip_zeros: bool,
    /// `symmetric` of the spec (`None` counts as symmetric).
    pub symmetric: Option<bool>,
    /// `calib_hist`.
    pub hist: Vec<f32>,
    /// `calib_bin_edges` (normally `hist.len() + 1` values, not always).
    pub edges: Vec<f32>,
    /// Corrected merging (for the `.fixed` observers): extend the edges by whole bins of the
    /// old width on either side and add the old counts at their own offset.
    pub aligned: bool,
}

fn forward_error(message: impl Into<String>) -> Error {
    Error::framework("AssertionError", message, Stage::Forward)
}

impl QuarkHistogram {
    /// An empty histogram that will start with `bins` bins.
    pub fn new(bins: usize, skip_zeros: bool, symmetric: Option<bool>) -> Self {
        QuarkHistogram {
            num_bins: bins,
            skip_zeros,
            symmetric,
            hist: Vec::new(),
            edges: Vec::new(),
            aligned: false,
        }
    }

    /// The same histogram with corrected (aligned) merging.
    pub fn with_aligned_merging(mut self) -> Self {
        self.aligned = true;
        self
    }

    /// True before the first batch.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty() && self.edges.is_empty()
    }

    /// `forward(x)`.
    pub fn observe(&mut self, data: &[f32]) -> Result<()> {
        let mut x: Vec<f32> = if self.skip_zeros {
            data.iter().copied().filter(|&v| v != 0.0).collect()
        } else {
            data.to_vec()
        };
        let safe_max = |x: &[f32]| {
            x.iter().copied().fold(None, |m: Option<f32>, v| {
                Some(match m {
                    None => v,
                    Some(m) if v.is_nan() || m.is_nan() => f32::NAN,
                    Some(m) => m.max(v),
                })
            })
        };
        let safe_min = |x: &[f32]| {
            x.iter().copied().fold(None, |m: Option<f32>, v| {
                Some(match m {
                    None => v,
                    Some(m) if v.is_nan() || m.is_nan() => f32::NAN,
                    Some(m) => m.min(v),
                })
            })
        };
        let (x_min, mut x_max): (f64, f64) = if self.symmetric == Some(false) {
            (
                safe_min(&x).map_or(0.0, f64::from),
                safe_max(&x).map_or(0.0, f64::from),
            )
        } else {
            if safe_min(&x).is_some_and(|m| m < 0.0) {
                x.iter_mut().for_each(|v| *v = v.abs());
            }
            (0.0, safe_max(&x).map_or(0.0, f64::from))
        };
        if x_min.is_nan() || x_max.is_nan() {
            return Err(Error::framework(
                "RuntimeError",
                "torch.histc: range of [nan, nan] is not finite",
                Stage::Forward,
            ));
        }
        if x_min == x_max {
            let span = x_min.abs().max(1.0) * self.num_bins as f64 * f32::EPSILON as f64;
            x_max = x_min + span.max(f32::MIN_POSITIVE as f64);
        }
        if self.is_empty() {
            self.hist = histc(&x, self.num_bins, x_min as f32, x_max as f32);
            self.edges = linspace_f32(x_min, x_max, self.num_bins + 1);
            return Ok(());
        }
        if self.edges.len() < 2 {
            return Err(Error::framework(
                "IndexError",
                "index 1 is out of bounds for dimension 0 with size 1",
                Stage::Forward,
            ));
        }
        if self.aligned {
            return self.merge_aligned(&x, x_min as f32, x_max as f32);
        }
        let last = |e: &[f32]| e[e.len() - 1];
        if (x_min as f32) < self.edges[0] {
            let width = (self.edges[1] - self.edges[0]) as f64;
            let grow = ((self.edges[0] - x_min as f32) / width as f32).ceil();
            self.grow(grow)?;
            self.edges = arange_f32(x_min - width, last(&self.edges) as f64, width)
                .filter(|e| e.len() >= 2)
                .ok_or_else(|| forward_error("cannot extend the histogram edges"))?;
        }
        if (x_max as f32) > last(&self.edges) {
            let width = (self.edges[1] - self.edges[0]) as f64;
            let grow = ((x_max as f32 - last(&self.edges)) / width as f32).ceil();
            self.grow(grow)?;
            self.edges = arange_f32(self.edges[0] as f64, x_max + width, width)
                .filter(|e| e.len() >= 2)
                .ok_or_else(|| forward_error("cannot extend the histogram edges"))?;
        }
        let inside = (x_max as f32) <= last(&self.edges) && (x_min as f32) >= self.edges[0];
        if !inside {
            return Err(forward_error(""));
        }
        let mut hist = histc(&x, self.num_bins, self.edges[0], last(&self.edges));
        if self.hist.len() > hist.len() {
            return Err(Error::framework(
                "RuntimeError",
                format!(
                    "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension 0",
                    hist.len(),
                    self.hist.len()
                ),
                Stage::Forward,
            ));
        }
        for (h, &old) in hist.iter_mut().zip(&self.hist) {
            *h += old;
        }
        self.hist = hist;
        Ok(())
    }

    /// Corrected merge: whole bins of the current width are added on each side, the edges
    /// stay a linear progression with `bins + 1` values and old counts keep their place.
    fn merge_aligned(&mut self, x: &[f32], x_min: f32, x_max: f32) -> Result<()> {
        let old_bins = self.hist.len();
        let lo = self.edges[0] as f64;
        let hi = self.edges[self.edges.len() - 1] as f64;
        let width = (hi - lo) / old_bins.max(1) as f64;
        let left = if (x_min as f64) < lo && width > 0.0 {
            ((lo - x_min as f64) / width).ceil()
        } else {
            0.0
        };
        let right = if (x_max as f64) > hi && width > 0.0 {
            ((x_max as f64 - hi) / width).ceil()
        } else {
            0.0
        };
        self.grow((left + right) as f32)?;
        let (new_lo, new_hi) = (lo - left * width, hi + right * width);
        self.edges = linspace_f32(new_lo, new_hi, self.num_bins + 1);
        let mut hist = histc(x, self.num_bins, new_lo as f32, new_hi as f32);
        let offset = left as usize;
        for (i, &old) in self.hist.iter().enumerate() {
            if let Some(h) = hist.get_mut(offset + i) {
                *h += old;
            }
        }
        self.hist = hist;
        Ok(())
    }

    fn grow(&mut self, by: f32) -> Result<()> {
        if !(by.is_finite() && by >= 0.0) || self.num_bins + by as usize > MAX_BINS {
            return Err(Error::input(format!(
                "Quark's histogram would grow past {MAX_BINS} bins (by {by}); the range grew too much relative to the first batch"
            )));
        }
        self.num_bins += by as usize;
        Ok(())
    }

    /// The histogram for plotting: the counts, and edges consistent with them (Quark's own
    /// edges when their count fits, else `linspace` over the binned range).
    pub fn state(&self) -> Option<HistogramState> {
        if self.hist.is_empty() {
            return None;
        }
        let edges = if self.edges.len() == self.hist.len() + 1 {
            self.edges.clone()
        } else {
            let (lo, hi) = (self.edges[0], self.edges[self.edges.len() - 1]);
            linspace_f32(lo as f64, hi as f64, self.hist.len() + 1)
        };
        Some(HistogramState {
            counts: self.hist.clone(),
            edges,
        })
    }
}

/// `bins`, `skip_zeros` parameter declarations with the given defaults.
pub fn histogram_params(bins: i64, skip_zeros: bool) -> Vec<ParamSpec> {
    vec![
        ParamSpec::int(
            "bins",
            1,
            1 << 20,
            bins,
            "initial number of bins (Quark's _num_bins instance attribute; grows with the range)",
        ),
        ParamSpec::bool(
            "skip_zeros",
            skip_zeros,
            "drop exact zeros before binning (Quark's _skip_zeros instance attribute)",
        ),
    ]
}

/// Parse `bins`/`skip_zeros`.
pub fn parse_histogram(
    params: &Params,
    spec: &QuarkSpec,
    bins: i64,
    skip_zeros: bool,
) -> Result<QuarkHistogram> {
    let bins = params.i64_or("bins", bins)?;
    if !(1..=1 << 20).contains(&bins) {
        return Err(Error::param(
            "bins",
            format!("{bins} is outside 1..=1048576"),
        ));
    }
    Ok(QuarkHistogram::new(
        bins as usize,
        params.bool_or("skip_zeros", skip_zeros)?,
        spec.symmetric,
    ))
}

/// Quark's `PerTensorHistogramObserver` (collection only; qparams are the defaults).
#[derive(Debug, Clone)]
pub struct PerTensorHistogram {
    spec: QuarkSpec,
    hist: QuarkHistogram,
    initial: QuarkHistogram,
}

impl PerTensorHistogram {
    /// Build from parameters.
    pub fn new(defaults: &SpecDefaults, params: &Params) -> Result<Self> {
        let spec = defaults.parse(params)?;
        let hist = parse_histogram(params, &spec, 2048, false)?;
        Ok(PerTensorHistogram {
            spec,
            initial: hist.clone(),
            hist,
        })
    }
}

/// The qparams of Quark's histogram observers from `(min, max)` buffers that may be the
/// untouched `(+inf, −inf)`.
pub fn histogram_qparams(spec: &QuarkSpec, min: f32, max: f32) -> Result<ScaleZp> {
    qparams::calculate_qparams(spec, &[min], &[max], true)
}

impl Observer for PerTensorHistogram {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        self.hist.observe(&batch.data)
    }

    fn qparams(&self) -> Result<QParams> {
        let sz = histogram_qparams(&self.spec, f32::INFINITY, f32::NEG_INFINITY)?;
        let mut q = build_qparams(&self.spec, sz, Vec::new(), Vec::new());
        q.extra
            .insert("num_bins_final".into(), self.hist.num_bins.into());
        q.notes.push(
            "Quark's PerTensorHistogramObserver never sets min_val/max_val: these are its default qparams"
                .to_string(),
        );
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_batch_is_histc_with_linspace_edges() {
        let mut h = QuarkHistogram::new(4, false, Some(false));
        h.observe(&[0.0, 1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(h.hist, vec![1.0, 1.0, 1.0, 2.0]);
        assert_eq!(h.edges, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        // Symmetric: |x| over [0, max|x|].
        let mut s = QuarkHistogram::new(2, false, Some(true));
        s.observe(&[-4.0, 1.0, 3.0]).unwrap();
        assert_eq!(s.hist, vec![1.0, 2.0]);
        assert_eq!(s.edges, vec![0.0, 2.0, 4.0]);
    }

    #[test]
    fn growing_left_adds_old_counts_left_aligned() {
        let mut h = QuarkHistogram::new(4, false, Some(false));
        h.observe(&[0.0, 1.0, 2.0, 3.0, 4.0]).unwrap();
        // New min −2: two more bins on the left; edges from arange(−3, 4, 1) = −3..3 (the old
        // last edge 4 is dropped by arange's open end).
        h.observe(&[-2.0]).unwrap();
        assert_eq!(h.num_bins, 6);
        assert_eq!(h.edges, vec![-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0]);
        // −2 lands in bin 1 of histc(6 bins over [−3, 3]); old counts are added at 0..4.
        assert_eq!(h.hist, vec![1.0, 2.0, 1.0, 2.0, 0.0, 0.0]);
    }

    #[test]
    fn aligned_merging_keeps_old_counts_in_place() {
        let mut h = QuarkHistogram::new(4, false, Some(false)).with_aligned_merging();
        h.observe(&[0.0, 1.0, 2.0, 3.0, 4.0]).unwrap();
        h.observe(&[-2.0, 5.5]).unwrap();
        assert_eq!(h.num_bins, 8);
        assert_eq!(h.edges, vec![-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(h.hist, vec![1.0, 0.0, 1.0, 1.0, 1.0, 2.0, 0.0, 1.0]);
    }

    #[test]
    fn constant_batches_widen_the_range() {
        let mut h = QuarkHistogram::new(2048, true, Some(true));
        h.observe(&[0.0, 0.0]).unwrap();
        assert_eq!(h.hist.iter().sum::<f32>(), 0.0);
        assert_eq!(h.edges[2048], 2048.0 * f32::EPSILON);
        let mut c = QuarkHistogram::new(2048, false, Some(false));
        c.observe(&[0.75; 10]).unwrap();
        assert_eq!(c.hist[0], 10.0);
        assert_eq!(c.edges[2048], 0.75 + 2048.0 * f32::EPSILON);
    }
}
