//! Quark's `PerTensorHistogramObserverPro`: a wrapper around PyTorch's `HistogramObserver`.
//!
//! Quark maps its config onto torch's: int8 → `qint8`, uint8 → `quint8`, uint4 → `quint4x2`,
//! with Quark's ranges (int8 −128..127), `per_tensor_symmetric` when symmetric else
//! `per_tensor_affine`, `bins` (256) and `reduce_range` (false). Its `upsample_rate` argument is
//! dropped (torch ≥ 2.5 no longer takes it). qparams are torch's `_non_linear_param_search` and
//! `_calculate_qparams`; here `min_val`/`max_val` are the searched range (what Quark computes
//! qparams from) and `observed_min`/`observed_max` the running data range. The torch observer
//! itself is [`crate::observers::torch`]'s, looked up in the registry.

use super::spec::{QuarkDtype, QuarkSpec, SpecDefaults};
use crate::error::{Error, Result, Stage};
use crate::observer::legacy::Observer;
use crate::observer::{ObserverState, QParams};
use crate::params::{ParamSpec, Params};
use crate::tensor::Tensor;
use serde_json::Value;

/// Registry id of the wrapped torch observer.
pub const TORCH_HISTOGRAM: &str = "torch.HistogramObserver";

/// Extra parameter declarations (`bins`, `reduce_range`, `upsample_rate`).
pub fn pro_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::int("bins", 1, 1 << 16, 256, "histogram bins of torch's HistogramObserver"),
        ParamSpec::bool("reduce_range", false, "torch's reduce_range"),
        ParamSpec::int(
            "upsample_rate",
            1,
            1 << 12,
            384,
            "Quark's argument, ignored: torch ≥ 2.5 removed it (torch upsamples by its own fixed rate)",
        ),
    ]
}

/// `PerTensorHistogramObserverPro`.
pub struct PerTensorHistogramPro {
    spec: QuarkSpec,
    inner: crate::observer::Instance,
}

impl PerTensorHistogramPro {
    /// Build from parameters.
    pub fn new(defaults: &SpecDefaults, params: &Params) -> Result<Self> {
        let spec = defaults.parse(params)?;
        let torch_dtype = match spec.dtype {
            QuarkDtype::Int8 => "qint8",
            QuarkDtype::Uint8 => "quint8",
            QuarkDtype::Uint4 => "quint4x2",
            _ => {
                return Err(Error::framework(
                    "ValueError",
                    "PerTensorHistogramObserverPro only supports 4bit and 8bit",
                    Stage::Init,
                ))
            }
        };
        let (qmin, qmax) = spec.qrange();
        let qscheme = if spec.symmetric == Some(true) {
            "per_tensor_symmetric"
        } else {
            "per_tensor_affine"
        };
        let torch_params = Params::new()
            .with("dtype", torch_dtype)
            .with("qscheme", qscheme)
            .with("bins", params.i64_or("bins", 256)?)
            .with("quant_min", qmin as i64)
            .with("quant_max", qmax as i64)
            .with("reduce_range", params.bool_or("reduce_range", false)?);
        let torch_spec = crate::registry::find(TORCH_HISTOGRAM).map_err(|_| {
            Error::input(format!(
                "PerTensorHistogramObserverPro wraps {TORCH_HISTOGRAM}, which this build does not include"
            ))
        })?;
        let inner = crate::observer::Instance::new(torch_spec, &torch_params)?;
        Ok(PerTensorHistogramPro { spec, inner })
    }

    /// The configuration.
    pub fn spec(&self) -> &QuarkSpec {
        &self.spec
    }
}

impl Observer for PerTensorHistogramPro {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        self.inner.observe(batch)
    }

    fn qparams(&self) -> Result<QParams> {
        let mut q = self.inner.qparams()?;
        let searched = |key: &str| -> Option<Vec<f32>> {
            let v = q.extra.get(key)?;
            match v {
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

    fn reset(&mut self) {
        self.inner.state = self.inner.resolved.new_state();
    }

    fn state(&self) -> ObserverState {
        self.inner.plot()
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        self.inner.fake_quantize(x, q)
    }
}
