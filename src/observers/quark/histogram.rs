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
//!
//! What is collected depends on `bins`, `skip_zeros` and `symmetric` only ([`Binning`]); the
//! other parameters enter the search.

use super::build_qparams;
use super::config::quark_params;
use super::dtype::UniformDtype;
use super::kernels::scaled_fake_quantize;
use super::qparams::{self, ScaleZp};
use super::spec::{PerTensorScheme, QuarkConfig};
use crate::error::{Error, Result, Stage};
use crate::histogram::{histc, histc_abs};
use crate::kernels::torch::{add_left_aligned, arange_via_f64_fma, linspace_fma};
use crate::observer::{HistogramState, ObserverKind, PlotSnapshot, QParams};
use crate::params::ParamSet;
use crate::qdq::QdqKernel;
use crate::shared_stats;
use crate::tensor::Tensor;
use std::borrow::Cow;
use std::fmt::Debug;
use std::marker::PhantomData;

/// Largest histogram Quark's merging is allowed to grow to here (it grows with the ratio of the
/// final range to the first batch's bin width).
pub const MAX_BINS: usize = 1 << 24;

quark_params! {
    /// The configuration `PerTensorHistogramObserver` reads (and its `_num_bins`/`_skip_zeros`
    /// attributes).
    pub struct PerTensorHistogramArgs {
        dtype: UniformDtype = UniformDtype::Int8, Search;
        qscheme: PerTensorScheme = PerTensorScheme::PerTensor;
        symmetric: Some(true), Data;
        scale_type: Search;
        is_dynamic: false, Search;
        scale_format: None;
        histogram: bins 2048, skip_zeros false;
    }
}

/// How a Quark histogram observer bins its batches: the part of its configuration that decides
/// what is collected.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Binning {
    /// Initial `_num_bins`.
    pub bins: usize,
    /// `_skip_zeros`.
    pub skip_zeros: bool,
    /// `symmetric` of the spec (`None` counts as symmetric: `|x|` over `[0, max|x|]`).
    pub symmetric: Option<bool>,
    /// Corrected merging (for the `.fixed` observers): extend the edges by whole bins of the
    /// old width on either side and add the old counts at their own offset.
    pub aligned: bool,
}

impl Binning {
    /// From the declared `bins` (already checked to be in `1..=2^20`).
    pub fn new(bins: i64, skip_zeros: bool, symmetric: Option<bool>, aligned: bool) -> Self {
        Binning {
            bins: bins.max(1) as usize,
            skip_zeros,
            symmetric,
            aligned,
        }
    }
}

/// The histogram state of Quark's histogram observers.
#[derive(Debug, Clone, PartialEq)]
pub struct QuarkHistogram {
    /// `_num_bins` (grows as the range grows).
    pub num_bins: usize,
    /// `calib_hist`.
    pub hist: Vec<f32>,
    /// `calib_bin_edges` (normally `hist.len() + 1` values, not always).
    pub edges: Vec<f32>,
}

/// The values a batch is binned by: the batch itself, or its magnitudes (binned on the fly).
struct BatchValues<'a> {
    data: &'a [f32],
    magnitudes: bool,
}

impl<'a> BatchValues<'a> {
    fn of(data: &'a [f32], magnitudes: bool) -> Self {
        BatchValues { data, magnitudes }
    }

    /// `torch.histc(x, bins, lo, hi)` of these values.
    fn histc(&self, bins: usize, lo: f32, hi: f32) -> Vec<f32> {
        if self.magnitudes {
            histc_abs(self.data, bins, lo, hi)
        } else {
            histc(self.data, bins, lo, hi)
        }
    }
}

/// `x[x != 0]`: the batch itself when it has no zero (no copy, and its shared histograms), else
/// a copy of the values before the first zero and the non-zero values after it.
fn without_zeros(data: &[f32]) -> Cow<'_, [f32]> {
    match data.iter().position(|&v| v == 0.0) {
        None => Cow::Borrowed(data),
        Some(first) => {
            let mut kept = Vec::with_capacity(data.len() - 1);
            kept.extend_from_slice(&data[..first]);
            kept.extend(data[first..].iter().copied().filter(|&v| v != 0.0));
            Cow::Owned(kept)
        }
    }
}

/// `(x.min(), x.max())` as PyTorch gives them: NaN when any value is NaN, infinities included,
/// `None` for an empty batch. From the shared per-tensor statistics (no pass of its own when
/// they exist).
fn nan_propagating_min_max(data: &[f32]) -> Option<(f32, f32)> {
    if data.is_empty() {
        return None;
    }
    let counts = shared_stats::nonfinite(data);
    if counts.nan > 0 {
        return Some((f32::NAN, f32::NAN));
    }
    let finite = shared_stats::finite_min_max(data);
    let lo = if counts.neg_inf > 0 {
        f32::NEG_INFINITY
    } else {
        finite.map_or(f32::INFINITY, |(lo, _)| lo)
    };
    let hi = if counts.pos_inf > 0 {
        f32::INFINITY
    } else {
        finite.map_or(f32::NEG_INFINITY, |(_, hi)| hi)
    };
    Some((lo, hi))
}

fn forward_error(message: impl Into<String>) -> Error {
    Error::framework("AssertionError", message, Stage::Forward)
}

impl QuarkHistogram {
    /// The empty histogram of `binning`.
    pub fn new(binning: &Binning) -> Self {
        QuarkHistogram {
            num_bins: binning.bins,
            hist: Vec::new(),
            edges: Vec::new(),
        }
    }

    /// True before the first batch.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty() && self.edges.is_empty()
    }

    /// `forward(x)`.
    pub fn feed(&mut self, binning: &Binning, data: &[f32]) -> Result<()> {
        let kept = if binning.skip_zeros {
            without_zeros(data)
        } else {
            Cow::Borrowed(data)
        };
        let range = nan_propagating_min_max(&kept);
        let (x, x_min, mut x_max): (BatchValues, f64, f64) = if binning.symmetric == Some(false) {
            (
                BatchValues::of(&kept, false),
                range.map_or(0.0, |(lo, _)| f64::from(lo)),
                range.map_or(0.0, |(_, hi)| f64::from(hi)),
            )
        } else {
            // `x = x.abs()` when `x.min() < 0` (never with a NaN: the min is then NaN).
            let negative = range.is_some_and(|(lo, _)| lo < 0.0);
            let max = match range {
                None => 0.0,
                Some((lo, hi)) if negative => lo.abs().max(hi.abs()),
                Some((_, hi)) => hi,
            };
            (BatchValues::of(&kept, negative), 0.0, f64::from(max))
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
            self.hist = x.histc(self.num_bins, x_min as f32, x_max as f32);
            self.edges = linspace_fma(x_min as f32, x_max as f32, self.num_bins + 1);
            return Ok(());
        }
        if self.edges.len() < 2 {
            return Err(Error::framework(
                "IndexError",
                "index 1 is out of bounds for dimension 0 with size 1",
                Stage::Forward,
            ));
        }
        if binning.aligned {
            return self.merge_aligned(&x, x_min as f32, x_max as f32);
        }
        let last = |e: &[f32]| e[e.len() - 1];
        if (x_min as f32) < self.edges[0] {
            let width = (self.edges[1] - self.edges[0]) as f64;
            let grow = ((self.edges[0] - x_min as f32) / width as f32).ceil();
            self.grow(grow)?;
            self.edges = arange_via_f64_fma(x_min - width, last(&self.edges) as f64, width)
                .ok()
                .filter(|e| e.len() >= 2)
                .ok_or_else(|| forward_error("cannot extend the histogram edges"))?;
        }
        if (x_max as f32) > last(&self.edges) {
            let width = (self.edges[1] - self.edges[0]) as f64;
            let grow = ((x_max as f32 - last(&self.edges)) / width as f32).ceil();
            self.grow(grow)?;
            self.edges = arange_via_f64_fma(self.edges[0] as f64, x_max + width, width)
                .ok()
                .filter(|e| e.len() >= 2)
                .ok_or_else(|| forward_error("cannot extend the histogram edges"))?;
        }
        let inside = (x_max as f32) <= last(&self.edges) && (x_min as f32) >= self.edges[0];
        if !inside {
            return Err(forward_error(""));
        }
        let mut hist = x.histc(self.num_bins, self.edges[0], last(&self.edges));
        add_left_aligned(&mut hist, &self.hist)?;
        self.hist = hist;
        Ok(())
    }

    /// Corrected merge: whole bins of the current width are added on each side, the edges
    /// stay a linear progression with `bins + 1` values and old counts keep their place.
    fn merge_aligned(&mut self, x: &BatchValues, x_min: f32, x_max: f32) -> Result<()> {
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
        self.edges = linspace_fma(new_lo as f32, new_hi as f32, self.num_bins + 1);
        let mut hist = x.histc(self.num_bins, new_lo as f32, new_hi as f32);
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

    /// A snapshot for plotting: no min/max buffers (Quark's histogram observers never set them
    /// during collection), the counts, and edges consistent with them (Quark's own edges when
    /// their count fits, else `linspace` over the binned range).
    pub fn plot(&self) -> PlotSnapshot {
        let histogram = (!self.hist.is_empty()).then(|| {
            let edges = if self.edges.len() == self.hist.len() + 1 {
                self.edges.clone()
            } else {
                let (lo, hi) = (self.edges[0], self.edges[self.edges.len() - 1]);
                linspace_fma(lo, hi, self.hist.len() + 1)
            };
            HistogramState {
                counts: self.hist.clone(),
                edges,
            }
        });
        PlotSnapshot {
            min_val: Vec::new(),
            max_val: Vec::new(),
            histogram,
        }
    }
}

/// The qparams of Quark's histogram observers from `(min, max)` buffers that may be the
/// untouched `(+inf, −inf)`.
pub fn histogram_qparams(spec: &QuarkConfig, min: f32, max: f32) -> Result<ScaleZp> {
    qparams::calculate_qparams(spec, &[min], &[max], true)
}

/// The search of one histogram observer over the collected histogram.
pub trait HistogramSearch: Clone + Debug + Send + Sync + 'static {
    /// The quantization spec and how batches are binned.
    fn spec_and_binning(&self) -> (&QuarkConfig, &Binning);
    /// The quantization spec.
    fn spec(&self) -> &QuarkConfig {
        self.spec_and_binning().0
    }
    /// How batches are binned.
    fn binning(&self) -> &Binning {
        self.spec_and_binning().1
    }
    /// `(min_val, max_val)` chosen from the histogram; `None` when the observer never sets them
    /// (its qparams are then those of the untouched `(+inf, −inf)` buffers).
    fn min_max(&self, hist: &QuarkHistogram) -> Result<Option<(f32, f32)>>;
    /// Scale and zero point of `(min, max)` (default: [`histogram_qparams`]).
    fn scale_zp(&self, min: f32, max: f32) -> Result<ScaleZp> {
        histogram_qparams(self.spec(), min, max)
    }
    /// What the observer adds to its qparams (extra fields, notes).
    fn annotate(&self, _hist: &QuarkHistogram, _q: &mut QParams) {}
}

/// One of Quark's histogram observer classes: its arguments and how they resolve.
pub trait HistogramClass: Send + Sync + 'static {
    /// The configuration the class reads.
    type Args: ParamSet;
    /// The resolved configuration and search.
    type Config: HistogramSearch;
    /// The constructor.
    fn resolve(args: &Self::Args) -> Result<Self::Config>;
}

/// A Quark observer of class `C` that collects a [`QuarkHistogram`] and searches it.
pub struct HistogramObserver<C>(PhantomData<fn() -> C>);

impl<C: HistogramClass> ObserverKind for HistogramObserver<C> {
    type Args = C::Args;
    type Config = C::Config;
    type State = QuarkHistogram;

    fn resolve(args: &C::Args, _: &[String]) -> Result<C::Config> {
        C::resolve(args)
    }

    fn init(cfg: &C::Config) -> QuarkHistogram {
        QuarkHistogram::new(cfg.binning())
    }

    fn feed(state: &mut QuarkHistogram, cfg: &C::Config, batch: &Tensor) -> Result<()> {
        state.feed(cfg.binning(), &batch.data)
    }

    fn qparams(state: &QuarkHistogram, cfg: &C::Config) -> Result<QParams> {
        let range = cfg.min_max(state)?;
        let (lo, hi) = range.unwrap_or((f32::INFINITY, f32::NEG_INFINITY));
        let sz = cfg.scale_zp(lo, hi)?;
        let (mins, maxs) = range.map_or((Vec::new(), Vec::new()), |(l, h)| (vec![l], vec![h]));
        let mut q = build_qparams(cfg.spec(), sz, mins, maxs, || {
            qparams::step(cfg.spec(), "the range the histogram search chose")
        });
        q.clip_range = range.map(|(l, h)| (vec![l], vec![h]));
        q.extra
            .insert("num_bins_final".into(), state.num_bins.into());
        cfg.annotate(state, &mut q);
        Ok(q)
    }

    /// Hand-written: no kernel fits some qparams (see [`super::qdq_kernel`]).
    fn fake_quantize(cfg: &C::Config, x: &Tensor, q: &QParams) -> Result<Tensor> {
        scaled_fake_quantize(cfg.spec(), x, &q.scale, &q.zero_point)
    }

    fn qdq_kernel(cfg: &C::Config, _: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        super::qdq_kernel::kernel(cfg.spec(), q)
    }

    fn plot(state: &QuarkHistogram) -> PlotSnapshot {
        state.plot()
    }
}

/// The configuration of `PerTensorHistogramObserver`.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramConfig {
    pub spec: QuarkConfig,
    pub binning: Binning,
}

impl HistogramSearch for HistogramConfig {
    fn spec_and_binning(&self) -> (&QuarkConfig, &Binning) {
        (&self.spec, &self.binning)
    }

    /// `PerTensorHistogramObserver` never sets its min/max buffers.
    fn min_max(&self, _: &QuarkHistogram) -> Result<Option<(f32, f32)>> {
        Ok(None)
    }

    fn annotate(&self, _: &QuarkHistogram, q: &mut QParams) {
        q.notes.push(
            "Quark's PerTensorHistogramObserver never sets min_val/max_val: these are its default qparams"
                .to_string(),
        );
    }
}

/// `PerTensorHistogramObserver` (collection only; qparams are the defaults).
pub struct Collection;

impl HistogramClass for Collection {
    type Args = PerTensorHistogramArgs;
    type Config = HistogramConfig;

    fn resolve(args: &PerTensorHistogramArgs) -> Result<HistogramConfig> {
        let spec = args.quark_config()?;
        let binning = Binning::new(args.bins, args.skip_zeros, spec.symmetric, false);
        Ok(HistogramConfig { spec, binning })
    }
}

/// Quark's `PerTensorHistogramObserver`.
pub type PerTensorHistogram = HistogramObserver<Collection>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_max_as_pytorch_gives_them() {
        let nan = f32::NAN;
        let inf = f32::INFINITY;
        assert_eq!(nan_propagating_min_max(&[]), None);
        assert_eq!(nan_propagating_min_max(&[2.0, -1.0]), Some((-1.0, 2.0)));
        assert_eq!(nan_propagating_min_max(&[2.0, -inf]), Some((-inf, 2.0)));
        assert_eq!(nan_propagating_min_max(&[inf]), Some((inf, inf)));
        assert_eq!(nan_propagating_min_max(&[-inf, inf]), Some((-inf, inf)));
        assert!(nan_propagating_min_max(&[1.0, nan]).is_some_and(|(a, b)| a.is_nan() && b.is_nan()));
    }

    fn binning(bins: usize, skip_zeros: bool, symmetric: bool, aligned: bool) -> Binning {
        Binning::new(bins as i64, skip_zeros, Some(symmetric), aligned)
    }

    /// A histogram of `b` fed `batches`.
    fn fed(b: Binning, batches: &[&[f32]]) -> QuarkHistogram {
        let mut h = QuarkHistogram::new(&b);
        for x in batches {
            h.feed(&b, x).unwrap();
        }
        h
    }

    #[test]
    fn first_batch_is_histc_with_linspace_edges() {
        let h = fed(
            binning(4, false, false, false),
            &[&[0.0, 1.0, 2.0, 3.0, 4.0]],
        );
        assert_eq!(h.hist, vec![1.0, 1.0, 1.0, 2.0]);
        assert_eq!(h.edges, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        // Symmetric: |x| over [0, max|x|].
        let s = fed(binning(2, false, true, false), &[&[-4.0, 1.0, 3.0]]);
        assert_eq!(s.hist, vec![1.0, 2.0]);
        assert_eq!(s.edges, vec![0.0, 2.0, 4.0]);
    }

    #[test]
    fn growing_left_adds_old_counts_left_aligned() {
        // New min −2: two more bins on the left; edges from arange(−3, 4, 1) = −3..3 (the old
        // last edge 4 is dropped by arange's open end).
        let h = fed(
            binning(4, false, false, false),
            &[&[0.0, 1.0, 2.0, 3.0, 4.0], &[-2.0]],
        );
        assert_eq!(h.num_bins, 6);
        assert_eq!(h.edges, vec![-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0]);
        // −2 lands in bin 1 of histc(6 bins over [−3, 3]); old counts are added at 0..4.
        assert_eq!(h.hist, vec![1.0, 2.0, 1.0, 2.0, 0.0, 0.0]);
    }

    #[test]
    fn aligned_merging_keeps_old_counts_in_place() {
        let h = fed(
            binning(4, false, false, true),
            &[&[0.0, 1.0, 2.0, 3.0, 4.0], &[-2.0, 5.5]],
        );
        assert_eq!(h.num_bins, 8);
        assert_eq!(h.edges, vec![-2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(h.hist, vec![1.0, 0.0, 1.0, 1.0, 1.0, 2.0, 0.0, 1.0]);
    }

    #[test]
    fn constant_batches_widen_the_range() {
        let h = fed(binning(2048, true, true, false), &[&[0.0, 0.0]]);
        assert_eq!(h.hist.iter().sum::<f32>(), 0.0);
        assert_eq!(h.edges[2048], 2048.0 * f32::EPSILON);
        let c = fed(binning(2048, false, false, false), &[&[0.75; 10]]);
        assert_eq!(c.hist[0], 10.0);
        assert_eq!(c.edges[2048], 0.75 + 2048.0 * f32::EPSILON);
    }
}
