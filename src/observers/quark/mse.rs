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
//! merges histograms aligned. `start_bin` and `stride` only enter the search; what is collected
//! is the histogram of [`super::histogram::Binning`].

use super::config::quark_params;
use super::dtype::MseDtype;
use super::histogram::{
    Binning, HistogramClass, HistogramObserver, HistogramSearch, QuarkHistogram,
};
use super::kernels::int_affine;
use super::qparams::{self, ScaleZp};
use super::spec::{PerTensorScheme, QuarkConfig};
use crate::error::{Error, Result, Stage};
use crate::observer::QParams;
use crate::params::{Choice, ParamSet};
use std::marker::PhantomData;

/// The configuration of an MSE observer.
#[derive(Debug, Clone, PartialEq)]
pub struct MseConfig {
    pub spec: QuarkConfig,
    pub binning: Binning,
    /// First bin centre tried (clamped to the last one).
    pub start_bin: usize,
    /// Step between tried centres (≥ 1).
    pub stride: usize,
}

/// The arguments of one variant of the MSE observer.
pub trait MseVariant: ParamSet {
    /// The resolved configuration.
    fn config(&self) -> Result<MseConfig>;
}

/// The arguments of an MSE variant: the configuration `PerTensorMSEObserver` reads, its
/// attributes and `get_min_max_by_mse`'s search arguments, searching from `$start` by default;
/// `$aligned` selects the corrected histogram merging.
macro_rules! mse_variant {
    ($(#[$meta:meta])* $name:ident, start_bin $start:expr, aligned $aligned:expr) => {
        quark_params! {
            $(#[$meta])*
            pub struct $name {
                dtype: MseDtype = MseDtype::Int8, Search;
                qscheme: PerTensorScheme = PerTensorScheme::PerTensor;
                symmetric: Some(true), Data;
                scale_type: Search;
                is_dynamic: false, Search;
                scale_format: None;
                histogram: bins 2048, skip_zeros false;
                mse_search: start_bin $start;
            }
        }

        impl MseVariant for $name {
            fn config(&self) -> Result<MseConfig> {
                let spec = self.quark_config()?;
                Ok(MseConfig {
                    binning: Binning::new(self.bins, self.skip_zeros, spec.symmetric, $aligned),
                    spec,
                    start_bin: self.start_bin.max(0) as usize,
                    stride: self.stride.max(1) as usize,
                })
            }
        }
    };
}

mse_variant!(
    /// The arguments of Quark's `PerTensorMSEObserver`.
    PerTensorMseArgs, start_bin 2045, aligned false
);
mse_variant!(
    /// The arguments of the corrected variant: the search starts at bin 128, histograms merge
    /// aligned.
    FixedMseArgs, start_bin 128, aligned true
);

/// The MSE class with the arguments `A` of a variant.
pub struct Mse<A>(PhantomData<fn() -> A>);

impl<A: MseVariant> HistogramClass for Mse<A> {
    type Args = A;
    type Config = MseConfig;

    fn resolve(args: &A) -> Result<MseConfig> {
        args.config()
    }
}

/// `PerTensorMSEObserver` with the arguments `A` of a variant.
pub type PerTensorMse<A> = HistogramObserver<Mse<A>>;

/// Quark's `PerTensorMSEObserver`.
pub type QuarkMse = PerTensorMse<PerTensorMseArgs>;
/// The corrected variant (search from bin 128, aligned merging).
pub type FixedMse = PerTensorMse<FixedMseArgs>;

impl MseConfig {
    /// `(0, amax)` minimising the histogram MSE.
    pub fn min_max(&self, hist: &QuarkHistogram) -> Result<(f32, f32)> {
        let edges = &hist.edges;
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
        let counts = &hist.hist;
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
        let spec = &self.spec;
        let n = centers.len() as f64;
        let sum = if spec.dtype.is_int() {
            let (scale, zp) = qparams::int_qparams(spec, &[0.0], &[amax], true)?;
            let (qmin, qmax) = spec.qrange();
            let (s, z) = (scale[0], zp.get_f64(0) as f32);
            centers
                .iter()
                .zip(counts)
                .map(|(&c, &k)| {
                    let d = int_affine(c, s, z, qmin as f32, qmax as f32) - c;
                    (d * d * k) as f64
                })
                .sum::<f64>()
        } else if let (true, Some(format)) = (spec.dtype.is_fp8(), spec.dtype.element()) {
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
                    spec.dtype.name()
                ),
                Stage::CalculateQparams,
            ));
        };
        Ok((sum / n) as f32)
    }

    /// How many bin centres the search tries on `hist`.
    fn candidates(&self, hist: &QuarkHistogram) -> usize {
        let bins = hist.hist.len();
        bins.saturating_sub(self.start_bin.min(bins.saturating_sub(1)))
            .div_ceil(self.stride)
    }
}

impl HistogramSearch for MseConfig {
    fn spec_and_binning(&self) -> (&QuarkConfig, &Binning) {
        (&self.spec, &self.binning)
    }

    fn min_max(&self, hist: &QuarkHistogram) -> Result<Option<(f32, f32)>> {
        MseConfig::min_max(self, hist).map(Some)
    }

    fn scale_zp(&self, min: f32, max: f32) -> Result<ScaleZp> {
        if self.spec.dtype.is_fp8() {
            // The int64 zero `min` turns Quark's float32 eps into an int64 0 on this path.
            Ok(qparams::fp8_qparams(&self.spec, &[min], &[max], 0.0))
        } else {
            qparams::calculate_qparams(&self.spec, &[min], &[max], true)
        }
    }

    fn annotate(&self, hist: &QuarkHistogram, q: &mut QParams) {
        q.extra
            .insert("candidates".into(), self.candidates(hist).into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;

    fn config(dtype: &str) -> MseConfig {
        let p = Params::new()
            .with("dtype", dtype)
            .with("bins", 16)
            .with("start_bin", 0);
        PerTensorMseArgs::from_params(&p).unwrap().config().unwrap()
    }

    fn histogram() -> QuarkHistogram {
        QuarkHistogram {
            num_bins: 16,
            hist: vec![
                1000.0, 500.0, 200.0, 50.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                1.0,
            ],
            edges: (0..=16).map(|i| i as f32 / 4.0).collect(),
        }
    }

    #[test]
    fn searches_bin_centres_and_keeps_min_at_zero() {
        let cfg = config("int4");
        let (lo, hi) = cfg.min_max(&histogram()).unwrap();
        assert_eq!(lo, 0.0);
        // With 16 int4 levels the single outlier in the last bin is not worth the resolution.
        assert!(hi < 3.875, "{hi}");
        assert_eq!((hi * 8.0).fract(), 0.0, "a bin centre: {hi}");
        let only_last = MseConfig {
            start_bin: 15,
            ..cfg.clone()
        };
        assert_eq!(only_last.min_max(&histogram()).unwrap(), (0.0, 3.875));
        assert_eq!(only_last.candidates(&histogram()), 1);
        assert_eq!(cfg.candidates(&histogram()), 16);
        assert_eq!(config("fp8_e4m3").min_max(&histogram()).unwrap().0, 0.0);
    }

    #[test]
    fn variants_differ_in_start_bin_and_merging() {
        let quark = PerTensorMseArgs::from_params(&Params::new())
            .unwrap()
            .config()
            .unwrap();
        let fixed = FixedMseArgs::from_params(&Params::new())
            .unwrap()
            .config()
            .unwrap();
        assert_eq!((quark.start_bin, fixed.start_bin), (2045, 128));
        assert!(!quark.binning.aligned && fixed.binning.aligned);
    }
}
