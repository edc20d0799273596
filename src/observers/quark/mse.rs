//! Quark's `PerTensorMSEObserver` (`get_min_max_by_mse`).
//!
//! The histogram of [`super::histogram`] (2048 bins). Candidates are the bin centres
//! `(edges[i] + edges[i+1]) / 2` from `start_bin` on (default **2045**, clamped to the last
//! centre) with `stride`: with 2048 bins only the **last three** bins are tried. For a candidate
//! `amax`, the centres are fake-quantized — int dtypes with the qparams of `(min 0, max amax)`
//! (`torch.fake_quantize_per_tensor_affine`), fp8 with `scale = amax/fmax` and the float8 cast
//! — and the error is `mean((q(c) − c)² · count)` (float32). The first minimum wins; the result
//! is `min = 0` (also for asymmetric configurations), `max = amax`, then the common qparams.
//!
//! The `.fixed` variant starts at bin 128 (the start of the calibrator this code follows) and
//! merges histograms aligned.

use super::build_qparams;
use super::histogram::{parse_histogram, QuarkHistogram};
use super::kernels::{int_affine, scaled_fake_quantize};
use super::qparams;
use super::spec::{QuarkSpec, SpecDefaults};
use crate::error::{Error, Result, Stage};
use crate::observer::legacy::{Observer, Retune};
use crate::observer::{ObserverState, QParams};
use crate::params::{ParamSpec, Params};
use crate::tensor::Tensor;

/// Quark's `start_bin` default.
pub const START_BIN: i64 = 2045;
/// `start_bin` of the `.fixed` variant.
pub const FIXED_START_BIN: i64 = 128;

/// `start_bin`/`stride` parameter declarations.
pub fn search_params(start_bin: i64) -> Vec<ParamSpec> {
    vec![
        ParamSpec::int(
            "start_bin",
            0,
            1 << 24,
            start_bin,
            "first bin centre tried as amax (default of get_min_max_by_mse)",
        )
        .search_only(),
        ParamSpec::int("stride", 1, 1 << 20, 1, "step between tried bins").search_only(),
    ]
}

/// `PerTensorMSEObserver`.
#[derive(Debug, Clone)]
pub struct PerTensorMse {
    spec: QuarkSpec,
    hist: QuarkHistogram,
    initial: QuarkHistogram,
    start_bin: usize,
    stride: usize,
}

impl PerTensorMse {
    /// Build from parameters (`fixed`: start at bin 128, aligned merging).
    pub fn new(defaults: &SpecDefaults, params: &Params, fixed: bool) -> Result<Self> {
        let spec = defaults.parse(params)?;
        let mut hist = parse_histogram(params, &spec, 2048, false)?;
        if fixed {
            hist = hist.with_aligned_merging();
        }
        let mut observer = PerTensorMse {
            spec,
            initial: hist.clone(),
            hist,
            start_bin: 0,
            stride: 1,
        };
        observer.set_search(params, if fixed { FIXED_START_BIN } else { START_BIN })?;
        Ok(observer)
    }

    fn set_search(&mut self, params: &Params, default_start: i64) -> Result<()> {
        let start = params.i64_or("start_bin", default_start)?;
        let stride = params.i64_or("stride", 1)?;
        if start < 0 {
            return Err(Error::param(
                "start_bin",
                format!("must be ≥ 0, got {start}"),
            ));
        }
        if stride < 1 {
            return Err(Error::param("stride", format!("must be ≥ 1, got {stride}")));
        }
        self.start_bin = start as usize;
        self.stride = stride as usize;
        Ok(())
    }

    /// `(0, amax)` minimising the histogram MSE.
    pub fn min_max(&self) -> Result<(f32, f32)> {
        let edges = &self.hist.edges;
        if edges.len() < 2 {
            return Err(Error::framework(
                "ValueError",
                format!(
                    "calib_bin_edges must have at least 2 elements, got {}",
                    edges.len()
                ),
                Stage::CalculateQparams,
            ));
        }
        let centers: Vec<f32> = edges.windows(2).map(|w| (w[1] + w[0]) / 2.0).collect();
        let counts = &self.hist.hist;
        if counts.len() != centers.len() {
            return Err(Error::framework(
                "RuntimeError",
                format!(
                    "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension 0",
                    centers.len(),
                    counts.len()
                ),
                Stage::CalculateQparams,
            ));
        }
        let start = self.start_bin.min(centers.len() - 1);
        let mut best: Option<(f32, usize)> = None;
        for i in (start..centers.len()).step_by(self.stride) {
            let mse = self.candidate_mse(&centers, counts, centers[i])?;
            if best.is_none_or(|(m, _)| mse < m) {
                best = Some((mse, i));
            }
        }
        let i = best.map_or(start, |(_, i)| i);
        Ok((0.0, centers[i]))
    }

    /// `mean((q(c) − c)² · count)` for one candidate `amax`.
    fn candidate_mse(&self, centers: &[f32], counts: &[f32], amax: f32) -> Result<f32> {
        let n = centers.len() as f64;
        let sum = if self.spec.dtype.is_int() {
            let (scale, zp) = qparams::int_qparams(&self.spec, &[0.0], &[amax], true)?;
            let (qmin, qmax) = self.spec.qrange();
            let (s, z) = (scale[0], zp.get_f64(0) as f32);
            centers
                .iter()
                .zip(counts)
                .map(|(&c, &k)| {
                    let d = int_affine(c, s, z, qmin as f32, qmax as f32) - c;
                    (d * d * k) as f64
                })
                .sum::<f64>()
        } else if let (true, Some(format)) = (self.spec.dtype.is_fp8(), self.spec.dtype.element()) {
            let scale = amax / format.max();
            centers
                .iter()
                .zip(counts)
                .map(|(&c, &k)| {
                    let d = format.quantize(c / scale) * scale - c;
                    (d * d * k) as f64
                })
                .sum::<f64>()
        } else {
            return Err(Error::framework(
                "ValueError",
                format!(
                    "Invalid dtype Dtype.{}. dtype must be a positive integer, fp8_e4m3 or fp8_e5m2.",
                    self.spec.dtype.name()
                ),
                Stage::CalculateQparams,
            ));
        };
        Ok((sum / n) as f32)
    }
}

impl Observer for PerTensorMse {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        self.hist.observe(&batch.data)
    }

    fn qparams(&self) -> Result<QParams> {
        let (lo, hi) = self.min_max()?;
        let sz = if self.spec.dtype.is_fp8() {
            // The int64 zero `min` turns Quark's float32 eps into an int64 0 on this path.
            qparams::fp8_qparams(&self.spec, &[lo], &[hi], 0.0)
        } else {
            qparams::calculate_qparams(&self.spec, &[lo], &[hi], true)?
        };
        let mut q = build_qparams(&self.spec, sz, vec![lo], vec![hi]);
        q.clip_range = Some((vec![lo], vec![hi]));
        q.extra
            .insert("num_bins_final".into(), self.hist.num_bins.into());
        let tried = self
            .hist
            .hist
            .len()
            .saturating_sub(self.start_bin.min(self.hist.hist.len().saturating_sub(1)))
            .div_ceil(self.stride);
        q.extra.insert("candidates".into(), tried.into());
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
        if !params.keys().all(|k| k == "start_bin" || k == "stride") {
            return Ok(Retune::NeedsData);
        }
        let default_start = self.start_bin as i64;
        self.set_search(params, default_start)?;
        Ok(Retune::Applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observer(dtype: &str, fixed: bool) -> PerTensorMse {
        let defaults = SpecDefaults::per_tensor(super::super::spec::MSE_DTYPES);
        let p = Params::new()
            .with("dtype", dtype)
            .with("bins", 16)
            .with("start_bin", 0);
        let mut o = PerTensorMse::new(&defaults, &p, fixed).unwrap();
        o.hist.hist = vec![
            1000.0, 500.0, 200.0, 50.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0,
        ];
        o.hist.edges = (0..=16).map(|i| i as f32 / 4.0).collect();
        o
    }

    #[test]
    fn searches_bin_centres_and_keeps_min_at_zero() {
        let o = observer("int4", false);
        let (lo, hi) = o.min_max().unwrap();
        assert_eq!(lo, 0.0);
        // With 16 int4 levels the single outlier in the last bin is not worth the resolution.
        assert!(hi < 3.875, "{hi}");
        assert_eq!((hi * 8.0).fract(), 0.0, "a bin centre: {hi}");
        let mut only_last = o.clone();
        only_last.start_bin = 15;
        assert_eq!(only_last.min_max().unwrap(), (0.0, 3.875));
        let fp8 = observer("fp8_e4m3", false);
        assert_eq!(fp8.min_max().unwrap().0, 0.0);
    }
}
