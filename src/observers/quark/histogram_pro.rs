//! Quark's `PerTensorHistogramObserverPro`: a wrapper around PyTorch's `HistogramObserver`.
//!
//! Quark maps its config onto torch's: int8 → `qint8`, uint8 → `quint8`, uint4 → `quint4x2`,
//! with Quark's ranges (int8 −128..127) passed as `quant_min`/`quant_max`,
//! `per_tensor_symmetric` when symmetric else `per_tensor_affine`, `bins` (256) and
//! `reduce_range` (false). Its `upsample_rate` argument is dropped (torch ≥ 2.5 no longer takes
//! it), so torch's default rate applies. qparams are torch's `_non_linear_param_search` and
//! `_calculate_qparams`; here `min_val`/`max_val` are the searched range (what Quark computes
//! qparams from) and `observed_min`/`observed_max` the running data range.
//!
//! The torch observer is [`crate::observers::torch::histogram::Histogram`] itself: its state
//! is what is collected (it depends on `bins` only), and every other parameter enters torch's
//! search.

use super::config::quark_params;
use super::dtype::HistogramProDtype;
use super::spec::{PerTensorScheme, QuarkConfig};
use crate::error::Result;
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
use crate::observers::torch::config::{QDtype, QScheme as TorchQScheme, UniformArgs};
use crate::observers::torch::histogram::{
    Histogram, HistogramArgs, HistogramConfig, HistogramObserverState,
};
use crate::params::{ParamSet, Params};
use crate::qdq::QdqKernel;
use crate::tensor::Tensor;
use serde_json::Value;

quark_params! {
    /// The configuration `PerTensorHistogramObserverPro` reads, and its own arguments.
    pub struct HistogramProArgs {
        dtype: HistogramProDtype = HistogramProDtype::Int8, Search;
        qscheme: PerTensorScheme = PerTensorScheme::PerTensor;
        symmetric: Some(true), Search;
        scale_type: Search;
        is_dynamic: false, Search;
        scale_format: None;
        extra {
            /// histogram bins of torch's HistogramObserver
            bins: i64 = 256; int(1, 1 << 16), Data;
            /// torch's reduce_range
            reduce_range: bool = false; boolean(), Search;
            /// Quark's argument, ignored: torch ≥ 2.5 removed it (torch upsamples by its own
            /// fixed rate)
            upsample_rate: i64 = 384; int(1, 1 << 12), Search;
        }
    }
}

/// The Quark configuration and the torch observer it builds.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramProConfig {
    pub spec: QuarkConfig,
    pub torch: HistogramConfig,
}

/// The torch dtype Quark maps `dtype` onto.
fn torch_dtype(dtype: HistogramProDtype) -> QDtype {
    match dtype {
        HistogramProDtype::Int8 => QDtype::QInt8,
        HistogramProDtype::Uint8 => QDtype::QUInt8,
        HistogramProDtype::Uint4 => QDtype::QUInt4x2,
    }
}

/// `PerTensorHistogramObserverPro`.
pub struct PerTensorHistogramPro;

impl ObserverKind for PerTensorHistogramPro {
    type Args = HistogramProArgs;
    type Config = HistogramProConfig;
    type State = HistogramObserverState;

    /// `HistogramObserver(qscheme, dtype, bins, quant_min, quant_max, reduce_range)`, torch's
    /// other arguments at their defaults.
    fn resolve(args: &HistogramProArgs, _: &[String]) -> Result<HistogramProConfig> {
        let spec = args.quark_config()?;
        let (qmin, qmax) = spec.qrange();
        let defaults = HistogramArgs::from_params(&Params::new())?;
        let torch_args = HistogramArgs {
            bins: args.bins,
            qscheme: if spec.symmetric == Some(true) {
                TorchQScheme::PerTensorSymmetric
            } else {
                TorchQScheme::PerTensorAffine
            },
            uniform: UniformArgs {
                dtype: torch_dtype(args.dtype),
                reduce_range: args.reduce_range,
                quant_min: Some(qmin as i64),
                quant_max: Some(qmax as i64),
                ..defaults.uniform.clone()
            },
            ..defaults
        };
        Ok(HistogramProConfig {
            torch: Histogram::resolve(&torch_args, &[])?,
            spec,
        })
    }

    fn init(cfg: &HistogramProConfig) -> HistogramObserverState {
        Histogram::init(&cfg.torch)
    }

    fn feed(
        state: &mut HistogramObserverState,
        cfg: &HistogramProConfig,
        batch: &Tensor,
    ) -> Result<()> {
        Histogram::feed(state, &cfg.torch, batch)
    }

    fn qparams(state: &HistogramObserverState, cfg: &HistogramProConfig) -> Result<QParams> {
        let mut q = Histogram::qparams(state, &cfg.torch)?;
        let searched = |key: &str| -> Option<Vec<f32>> {
            match q.extra.get(key)? {
                Value::Array(a) => a.iter().map(|x| x.as_f64().map(|f| f as f32)).collect(),
                other => other.as_f64().map(|f| vec![f as f32]),
            }
        };
        let (smin, smax) = match (searched("search_min"), searched("search_max")) {
            (Some(lo), Some(hi)) => (lo, hi),
            _ => match &q.clip_range {
                Some((lo, hi)) => (lo.clone(), hi.clone()),
                None => (q.min_val.clone(), q.max_val.clone()),
            },
        };
        q.extra
            .insert("observed_min".into(), serde_json::json!(q.min_val));
        q.extra
            .insert("observed_max".into(), serde_json::json!(q.max_val));
        q.min_val = smin.clone();
        q.max_val = smax.clone();
        q.clip_range = Some((smin, smax));
        Ok(q)
    }

    /// torch's `fake_quantize_per_tensor_affine`, as the torch observer's qparams are applied
    /// (also the values: the default `fake_quantize` runs this kernel).
    fn qdq_kernel(
        cfg: &HistogramProConfig,
        shape: &[usize],
        q: &QParams,
    ) -> Option<Box<dyn QdqKernel>> {
        Histogram::qdq_kernel(&cfg.torch, shape, q)
    }

    fn plot(state: &HistogramObserverState) -> PlotSnapshot {
        Histogram::plot(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(p: Value) -> HistogramProConfig {
        let args = HistogramProArgs::from_params(&Params::from_value(p).unwrap()).unwrap();
        PerTensorHistogramPro::resolve(&args, &[]).unwrap()
    }

    #[test]
    fn quark_config_maps_onto_torch() {
        let c = config(json!({}));
        assert_eq!(c.torch.uniform.dtype, QDtype::QInt8);
        assert_eq!(c.torch.uniform.qscheme, TorchQScheme::PerTensorSymmetric);
        assert_eq!(
            (c.torch.uniform.quant_min, c.torch.uniform.quant_max),
            (-128, 127)
        );
        assert_eq!((c.torch.bins, c.torch.upsample_rate), (256, 16));
        let c = config(
            json!({"dtype": "uint4", "symmetric": false, "reduce_range": true, "upsample_rate": 7}),
        );
        assert_eq!(c.torch.uniform.dtype, QDtype::QUInt4x2);
        assert_eq!(c.torch.uniform.qscheme, TorchQScheme::PerTensorAffine);
        assert_eq!(
            (c.torch.uniform.quant_min, c.torch.uniform.quant_max),
            (0, 7)
        );
        assert_eq!(
            c.torch.upsample_rate, 16,
            "Quark's upsample_rate is dropped"
        );
    }
}
