//! `HistogramObserver` (torch 2.15): a running histogram over the running data range, and
//! qparams from the range that a greedy L2 search keeps.
//!
//! * First batch: `histc(x, bins, min(x), max(x))` ([`binning`]).
//! * Later batches: the range grows to include the batch, the batch is binned on the new range,
//!   and the old histogram is re-binned onto it ([`combine`], upsampling rate 16) — or simply
//!   added when the range did not change.
//! * `calculate_qparams`: [`search::non_linear_param_search`] picks `[search_min, search_max]`,
//!   then the usual affine/symmetric formula ([`super::qparams`]) is applied to it.
//!
//! `upsample_rate` is not a constructor argument in torch 2.15 (PyTorch raises `TypeError`); it
//! is an attribute, settable after construction with
//! [`Run::with_attributes`](crate::engine::Run::with_attributes).
//! Non-finite values are skipped (PyTorch skips ±inf; NaN would poison its range).

pub mod binning;
pub mod combine;
pub mod search;

use super::config::{not_implemented, QScheme, UniformArgs, UniformConfig};
use super::qparams::{calculate, to_qparams, Buffers};
use crate::error::{Error, Result, Stage};
use crate::kernels::torch::linspace_fma;
use crate::observer::{HistogramState, ObserverKind, PlotSnapshot, QParams};
use crate::qdq::QdqKernel;
use crate::shared_stats::finite_min_max;
use crate::tensor::Tensor;
use serde_json::Value;

/// Largest `bins` accepted (the search is quadratic in the worst case).
pub const MAX_BINS: usize = 1 << 16;
/// Largest `bins · upsample_rate` accepted (size of the upsampled histogram).
pub const MAX_UPSAMPLED: usize = 1 << 26;

crate::declare_params! {
    /// Arguments of `HistogramObserver` (and its `upsample_rate` attribute).
    pub struct HistogramArgs {
        /// number of histogram bins
        bins: i64 = 2048; int(1, MAX_BINS as i64), Data;
        /// upsampling of the old histogram when the range grows (an attribute in torch 2.15,
        /// not a constructor argument)
        upsample_rate: i64 = 16; int(1, 4096), Data, attribute;
        /// quantization scheme (per-tensor only)
        qscheme: QScheme = QScheme::PerTensorAffine; choice(), Search;
    }
    include { uniform: UniformArgs }
}

/// The configuration of a `HistogramObserver`.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramConfig {
    pub uniform: UniformConfig,
    pub bins: usize,
    pub upsample_rate: usize,
    /// `2 ** torch.iinfo(dtype).bits`.
    pub dst_nbins: u64,
}

/// The running histogram over the running range.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramObserverState {
    pub histogram: Vec<f32>,
    pub min_val: f32,
    pub max_val: f32,
}

impl HistogramObserverState {
    fn initialized(&self) -> bool {
        !(self.min_val == f32::INFINITY || self.max_val == f32::NEG_INFINITY)
    }

    /// The range the counts were binned on (histc widens an empty range by ±1).
    fn binning_range(&self) -> (f32, f32) {
        if self.min_val == self.max_val {
            (self.min_val - 1.0, self.max_val + 1.0)
        } else {
            (self.min_val, self.max_val)
        }
    }
}

/// PyTorch's `HistogramObserver`.
pub struct Histogram;

impl ObserverKind for Histogram {
    type Args = HistogramArgs;
    type Config = HistogramConfig;
    type State = HistogramObserverState;

    fn resolve(args: &HistogramArgs, unknown: &[String]) -> Result<HistogramConfig> {
        if !args.qscheme.is_per_tensor() {
            return Err(not_implemented(
                "HistogramObserver's qscheme only support torch.per_tensor_symmetric and torch.per_tensor_affine.",
            ));
        }
        if args.uniform.is_dynamic {
            return Err(not_implemented(
                "HistogramObserver doesn't support dynamic quantization",
            ));
        }
        let uniform = UniformConfig::resolve(&args.uniform, args.qscheme, unknown)?;
        let (bins, rate) = (args.bins as usize, args.upsample_rate as usize);
        if rate.saturating_mul(bins) > MAX_UPSAMPLED {
            return Err(Error::param(
                "upsample_rate",
                format!("bins · upsample_rate = {} is more than the {MAX_UPSAMPLED} quantscope supports", bins * rate),
            ));
        }
        Ok(HistogramConfig {
            bins,
            upsample_rate: rate,
            dst_nbins: 1u64 << uniform.dtype.bits(),
            uniform,
        })
    }

    fn init(cfg: &HistogramConfig) -> HistogramObserverState {
        HistogramObserverState {
            histogram: vec![0.0; cfg.bins],
            min_val: f32::INFINITY,
            max_val: f32::NEG_INFINITY,
        }
    }

    /// One pass when the batch stays inside the running range (the histc over that range is
    /// computed together with the batch's min/max); two passes otherwise.
    fn feed(
        state: &mut HistogramObserverState,
        cfg: &HistogramConfig,
        batch: &Tensor,
    ) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        if cfg.bins == 0 {
            if finite_min_max(&batch.data).is_none() {
                return Ok(());
            }
            return Err(Error::framework(
                "RuntimeError",
                "torch.histogram(): bins must be > 0, but got 0 for dimension 0",
                Stage::Forward,
            ));
        }
        if !state.initialized() {
            let Some((x_min, x_max)) = finite_min_max(&batch.data) else {
                return Ok(());
            };
            state.min_val = x_min;
            state.max_val = x_max;
            state.histogram = binning::histc(&batch.data, cfg.bins, x_min, x_max);
            return Ok(());
        }
        let (same_range, batch_range) =
            binning::histc_with_range(&batch.data, cfg.bins, state.min_val, state.max_val);
        let Some((x_min, x_max)) = batch_range else {
            return Ok(());
        };
        let new_min = state.min_val.min(x_min);
        let new_max = state.max_val.max(x_max);
        let update = if new_min == state.min_val && new_max == state.max_val {
            same_range
        } else {
            binning::histc(&batch.data, cfg.bins, new_min, new_max)
        };
        state.histogram = combine::combine(
            &state.histogram,
            state.min_val,
            state.max_val,
            &update,
            new_min,
            new_max,
            cfg.upsample_rate,
        );
        state.min_val = new_min;
        state.max_val = new_max;
        Ok(())
    }

    fn qparams(state: &HistogramObserverState, cfg: &HistogramConfig) -> Result<QParams> {
        let mut extra = serde_json::Map::new();
        extra.insert("dst_nbins".into(), Value::from(cfg.dst_nbins));
        extra.insert("upsample_rate".into(), Value::from(cfg.upsample_rate));
        let uninitialized = state.min_val == f32::INFINITY && state.max_val == f32::NEG_INFINITY;
        let (computed, clip) = if uninitialized || cfg.bins == 0 {
            (
                calculate(
                    &cfg.uniform,
                    &[f32::INFINITY],
                    &[f32::NEG_INFINITY],
                    Buffers::Scalar,
                )?,
                None,
            )
        } else {
            let found = search::non_linear_param_search(
                &state.histogram,
                state.min_val,
                state.max_val,
                cfg.dst_nbins as f64,
            );
            extra.insert("search_min".into(), Value::from(found.new_min as f64));
            extra.insert("search_max".into(), Value::from(found.new_max as f64));
            extra.insert("start_bin".into(), Value::from(found.start_bin));
            extra.insert("end_bin".into(), Value::from(found.end_bin));
            extra.insert("search_evaluations".into(), Value::from(found.evaluations));
            (
                calculate(
                    &cfg.uniform,
                    &[found.new_min],
                    &[found.new_max],
                    Buffers::Scalar,
                )?,
                Some((vec![found.new_min], vec![found.new_max])),
            )
        };
        let mut q = to_qparams(
            &cfg.uniform,
            computed,
            None,
            vec![state.min_val],
            vec![state.max_val],
        );
        q.clip_range = clip;
        for (k, v) in extra {
            q.extra.insert(k, v);
        }
        Ok(q)
    }

    /// PyTorch's own fake-quantize kernels ([`super::fake_quant`]).
    fn qdq_kernel(_: &HistogramConfig, shape: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        super::fake_quant::kernel(shape, q)
    }

    fn plot(state: &HistogramObserverState) -> PlotSnapshot {
        let histogram = state.initialized().then(|| {
            let (lo, hi) = state.binning_range();
            HistogramState {
                counts: state.histogram.clone(),
                edges: linspace_fma(lo, hi, state.histogram.len() + 1),
            }
        });
        PlotSnapshot {
            min_val: vec![state.min_val],
            max_val: vec![state.max_val],
            histogram,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::{Instance, ObserverSpec};
    use crate::params::Params;
    use crate::registry;
    use serde_json::json;

    fn spec() -> &'static ObserverSpec {
        registry::find("torch.HistogramObserver").unwrap()
    }

    fn obs(p: Value) -> Instance {
        Instance::new(spec(), &Params::from_value(p).unwrap()).unwrap()
    }

    fn counts(o: &Instance) -> Vec<f32> {
        o.plot().histogram.map(|h| h.counts).unwrap_or_default()
    }

    #[test]
    fn constant_input_lands_in_the_middle_bin() {
        let mut o = obs(json!({"bins": 8}));
        o.feed(&Tensor::from_vec(vec![0.75; 10])).unwrap();
        assert_eq!(counts(&o)[4], 10.0);
        let s = o.plot();
        assert_eq!((s.min_val[0], s.max_val[0]), (0.75, 0.75));
        assert_eq!(s.histogram.unwrap().edges[0], -0.25);
        let q = o.qparams().unwrap();
        // min == max is not special-cased: scale 0.75/255.
        assert_eq!(q.scale, vec![0.75f32 / 255.0]);
    }

    #[test]
    fn histogram_total_tracks_finite_elements() {
        let mut o = obs(json!({"bins": 64}));
        o.feed(&Tensor::from_vec(vec![
            0.0,
            1.0,
            2.0,
            f32::INFINITY,
            f32::NAN,
        ]))
        .unwrap();
        o.feed(&Tensor::from_vec(vec![-3.0, 5.0, 0.5])).unwrap();
        let total: f32 = counts(&o).iter().sum();
        assert_eq!(total, 6.0);
        assert_eq!(o.plot().min_val, vec![-3.0]);
    }

    #[test]
    fn constructor_checks() {
        let call = |kwargs: Value, attributes: Value| {
            spec().resolve_call(
                &Params::from_value(kwargs).unwrap(),
                &Params::from_value(attributes).unwrap(),
            )
        };
        let err = |p| call(p, json!({})).unwrap_err().to_string();
        assert_eq!(
            err(json!({"upsample_rate": 128})),
            "TypeError: ObserverBase.__init__() got an unexpected keyword argument 'upsample_rate'"
        );
        assert_eq!(
            err(json!({"qscheme": "per_channel_affine"})),
            "NotImplementedError: HistogramObserver's qscheme only support torch.per_tensor_symmetric and torch.per_tensor_affine."
        );
        assert_eq!(
            err(json!({"is_dynamic": true})),
            "NotImplementedError: HistogramObserver doesn't support dynamic quantization"
        );
        let dst = |p| {
            let mut o = obs(p);
            o.feed(&Tensor::from_vec(vec![0.0, 1.0])).unwrap();
            o.qparams().unwrap().extra["dst_nbins"].clone()
        };
        assert_eq!(dst(json!({"dtype": "quint4x2"})), json!(256));
        assert_eq!(dst(json!({"dtype": "qint32"})), json!(1u64 << 32));
        // HistogramObserver has no quint8 symmetric reduce_range check.
        obs(json!({"qscheme": "per_tensor_symmetric", "reduce_range": true}));
        // upsample_rate is an attribute, set after construction.
        assert!(call(json!({}), json!({"upsample_rate": 128})).is_ok());
        assert!(call(json!({}), json!({"upsample_rate": 0})).is_err());
        assert!(call(json!({}), json!({"bins": 3})).is_err());
    }
}
