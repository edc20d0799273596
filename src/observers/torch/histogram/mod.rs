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
//! is an attribute, settable after construction with [`Observer::set_attribute`].
//! Non-finite values are skipped (PyTorch skips ±inf; NaN would poison its range).

pub mod binning;
pub mod combine;
pub mod search;

use super::config::{is_dynamic_of, not_implemented, qscheme_of, specs, QScheme, UniformConfig};
use super::ops::linspace_f32;
use super::qparams::{calculate, to_qparams, Buffers};
use crate::error::{Error, Result, Stage};
use crate::histogram::finite_min_max;
use crate::observer::{HistogramState, Observer, ObserverState, QParams, Retune};
use crate::params::{ParamSpec, Params};
use crate::tensor::Tensor;
use serde_json::Value;

/// Largest `bins` accepted (the search is quadratic in the worst case).
pub const MAX_BINS: usize = 1 << 16;
/// Largest `bins · upsample_rate` accepted (size of the upsampled histogram).
pub const MAX_UPSAMPLED: usize = 1 << 26;
/// PyTorch's fixed upsampling rate.
pub const DEFAULT_UPSAMPLE_RATE: usize = 16;

const KWARGS: &[&str] = &[
    "bins",
    "dtype",
    "qscheme",
    "reduce_range",
    "quant_min",
    "quant_max",
    "factory_kwargs",
    "eps",
    "is_dynamic",
];

/// PyTorch's `HistogramObserver`.
#[derive(Debug, Clone)]
pub struct HistogramObserver {
    cfg: UniformConfig,
    bins: usize,
    upsample_rate: usize,
    /// `2 ** torch.iinfo(dtype).bits`.
    dst_nbins: u64,
    histogram: Vec<f32>,
    min_val: f32,
    max_val: f32,
}

impl HistogramObserver {
    /// `HistogramObserver(**params)`.
    pub fn new(params: &Params) -> Result<Self> {
        let qscheme = qscheme_of(params, QScheme::PerTensorAffine)?;
        if !qscheme.is_per_tensor() {
            return Err(not_implemented(
                "HistogramObserver's qscheme only support torch.per_tensor_symmetric and torch.per_tensor_affine.",
            ));
        }
        if is_dynamic_of(params)? {
            return Err(not_implemented(
                "HistogramObserver doesn't support dynamic quantization",
            ));
        }
        let cfg = UniformConfig::from_params(params, QScheme::PerTensorAffine, KWARGS)?;
        let bins = params.i64_or("bins", 2048)?;
        if bins < 0 {
            return Err(Error::framework(
                "RuntimeError",
                "zeros: Dimension size must be non-negative.",
                Stage::Init,
            ));
        }
        let bins = bins as usize;
        if bins > MAX_BINS {
            return Err(Error::param(
                "bins",
                format!("{bins} is more than the {MAX_BINS} bins quantscope supports"),
            ));
        }
        Ok(HistogramObserver {
            cfg,
            bins,
            upsample_rate: DEFAULT_UPSAMPLE_RATE,
            dst_nbins: 1u64 << cfg.dtype.bits(),
            histogram: vec![0.0; bins],
            min_val: f32::INFINITY,
            max_val: f32::NEG_INFINITY,
        })
    }

    /// The current histogram (`self.histogram`).
    pub fn histogram(&self) -> &[f32] {
        &self.histogram
    }

    /// `upsample_rate` (16 unless set after construction).
    pub fn upsample_rate(&self) -> usize {
        self.upsample_rate
    }

    /// Set the `upsample_rate` attribute, as `obs.upsample_rate = rate` does in PyTorch.
    pub fn set_upsample_rate(&mut self, rate: usize) -> Result<()> {
        if rate == 0 || rate.saturating_mul(self.bins.max(1)) > MAX_UPSAMPLED {
            return Err(Error::param(
                "upsample_rate",
                format!(
                    "{rate} must be at least 1 and bins · upsample_rate at most {MAX_UPSAMPLED}"
                ),
            ));
        }
        self.upsample_rate = rate;
        Ok(())
    }

    /// The validated configuration.
    pub fn config(&self) -> &UniformConfig {
        &self.cfg
    }

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

impl Observer for HistogramObserver {
    /// One pass when the batch stays inside the running range (the histc over that range is
    /// computed together with the batch's min/max); two passes otherwise.
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        if self.bins == 0 {
            if finite_min_max(&batch.data).is_none() {
                return Ok(());
            }
            return Err(Error::framework(
                "RuntimeError",
                "torch.histogram(): bins must be > 0, but got 0 for dimension 0",
                Stage::Forward,
            ));
        }
        if !self.initialized() {
            let Some((x_min, x_max)) = finite_min_max(&batch.data) else {
                return Ok(());
            };
            self.min_val = x_min;
            self.max_val = x_max;
            self.histogram = binning::histc(&batch.data, self.bins, x_min, x_max);
            return Ok(());
        }
        let (same_range, batch_range) =
            binning::histc_with_range(&batch.data, self.bins, self.min_val, self.max_val);
        let Some((x_min, x_max)) = batch_range else {
            return Ok(());
        };
        let new_min = self.min_val.min(x_min);
        let new_max = self.max_val.max(x_max);
        let update = if new_min == self.min_val && new_max == self.max_val {
            same_range
        } else {
            binning::histc(&batch.data, self.bins, new_min, new_max)
        };
        self.histogram = combine::combine(
            &self.histogram,
            self.min_val,
            self.max_val,
            &update,
            new_min,
            new_max,
            self.upsample_rate,
        );
        self.min_val = new_min;
        self.max_val = new_max;
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let mut extra = serde_json::Map::new();
        extra.insert("dst_nbins".into(), Value::from(self.dst_nbins));
        extra.insert("upsample_rate".into(), Value::from(self.upsample_rate));
        let uninitialized = self.min_val == f32::INFINITY && self.max_val == f32::NEG_INFINITY;
        let (computed, clip) = if uninitialized || self.bins == 0 {
            (
                calculate(
                    &self.cfg,
                    &[f32::INFINITY],
                    &[f32::NEG_INFINITY],
                    Buffers::Scalar,
                )?,
                None,
            )
        } else {
            let found = search::non_linear_param_search(
                &self.histogram,
                self.min_val,
                self.max_val,
                self.dst_nbins as f64,
            );
            extra.insert("search_min".into(), Value::from(found.new_min as f64));
            extra.insert("search_max".into(), Value::from(found.new_max as f64));
            extra.insert("start_bin".into(), Value::from(found.start_bin));
            extra.insert("end_bin".into(), Value::from(found.end_bin));
            extra.insert("search_evaluations".into(), Value::from(found.evaluations));
            (
                calculate(
                    &self.cfg,
                    &[found.new_min],
                    &[found.new_max],
                    Buffers::Scalar,
                )?,
                Some((vec![found.new_min], vec![found.new_max])),
            )
        };
        let mut q = to_qparams(
            &self.cfg,
            computed,
            None,
            vec![self.min_val],
            vec![self.max_val],
        );
        q.clip_range = clip;
        for (k, v) in extra {
            q.extra.insert(k, v);
        }
        Ok(q)
    }

    /// PyTorch's own fake-quantize kernels ([`super::fake_quant`]).
    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        super::fake_quant::fake_quantize(x, q)
    }

    fn reset(&mut self) {
        self.histogram = vec![0.0; self.bins];
        self.min_val = f32::INFINITY;
        self.max_val = f32::NEG_INFINITY;
    }

    fn state(&self) -> ObserverState {
        let histogram = self.initialized().then(|| {
            let (lo, hi) = self.binning_range();
            HistogramState {
                counts: self.histogram.clone(),
                edges: linspace_f32(lo, hi, self.bins + 1),
            }
        });
        ObserverState {
            min_val: vec![self.min_val],
            max_val: vec![self.max_val],
            histogram,
        }
    }

    /// Everything but `bins` only affects the search and the qparams formula.
    fn retune(&mut self, params: &Params) -> Result<Retune> {
        let rebuilt = HistogramObserver::new(params)?;
        if rebuilt.bins != self.bins {
            return Ok(Retune::NeedsData);
        }
        self.cfg = rebuilt.cfg;
        self.dst_nbins = rebuilt.dst_nbins;
        Ok(Retune::Applied)
    }

    fn set_attribute(&mut self, name: &str, value: &Value) -> Result<()> {
        match name {
            "upsample_rate" => {
                let rate = value.as_u64().ok_or_else(|| {
                    Error::param(name, format!("expected a positive integer, got {value}"))
                })?;
                self.set_upsample_rate(usize::try_from(rate).unwrap_or(usize::MAX))
            }
            other => Err(Error::param(
                other,
                "HistogramObserver has no settable attribute of this name (only upsample_rate)",
            )),
        }
    }
}

/// Registry parameters of `HistogramObserver`.
pub fn params() -> Vec<ParamSpec> {
    let mut params = vec![ParamSpec::int(
        "bins",
        1,
        MAX_BINS as i64,
        2048,
        "number of histogram bins",
    )];
    params.extend(
        specs::uniform("per_tensor_affine")
            .into_iter()
            .map(ParamSpec::search_only),
    );
    params
}

/// Registry constructor of `torch.HistogramObserver`.
pub fn build(params: &Params) -> Result<Box<dyn Observer>> {
    Ok(Box::new(HistogramObserver::new(params)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obs(p: Value) -> HistogramObserver {
        HistogramObserver::new(&Params::from_value(p).unwrap()).unwrap()
    }

    #[test]
    fn constant_input_lands_in_the_middle_bin() {
        let mut o = obs(json!({"bins": 8}));
        o.observe(&Tensor::from_vec(vec![0.75; 10])).unwrap();
        assert_eq!(o.histogram()[4], 10.0);
        let s = o.state();
        assert_eq!((s.min_val[0], s.max_val[0]), (0.75, 0.75));
        assert_eq!(s.histogram.unwrap().edges[0], -0.25);
        let q = o.qparams().unwrap();
        // min == max is not special-cased: scale 0.75/255.
        assert_eq!(q.scale, vec![0.75f32 / 255.0]);
    }

    #[test]
    fn histogram_total_tracks_finite_elements() {
        let mut o = obs(json!({"bins": 64}));
        o.observe(&Tensor::from_vec(vec![
            0.0,
            1.0,
            2.0,
            f32::INFINITY,
            f32::NAN,
        ]))
        .unwrap();
        o.observe(&Tensor::from_vec(vec![-3.0, 5.0, 0.5])).unwrap();
        let total: f32 = o.histogram().iter().sum();
        assert_eq!(total, 6.0);
        assert_eq!(o.state().min_val, vec![-3.0]);
    }

    #[test]
    fn constructor_checks() {
        let err = |p| {
            HistogramObserver::new(&Params::from_value(p).unwrap())
                .unwrap_err()
                .to_string()
        };
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
        assert_eq!(obs(json!({"dtype": "quint4x2"})).dst_nbins, 256);
        assert_eq!(obs(json!({"dtype": "qint32"})).dst_nbins, 1 << 32);
        // HistogramObserver has no quint8 symmetric reduce_range check.
        obs(json!({"qscheme": "per_tensor_symmetric", "reduce_range": true}));
    }

    #[test]
    fn upsample_rate_is_an_attribute() {
        let mut o = obs(json!({}));
        o.set_attribute("upsample_rate", &json!(128)).unwrap();
        assert_eq!(o.upsample_rate(), 128);
        assert!(o.set_attribute("upsample_rate", &json!(0)).is_err());
        assert!(o.set_attribute("bins", &json!(3)).is_err());
    }

    #[test]
    fn retune_reuses_the_histogram() {
        let mut o = obs(json!({"bins": 256}));
        let data: Vec<f32> = (0..1000).map(|i| (i as f32 / 100.0).sin() * 3.0).collect();
        o.observe(&Tensor::from_vec(data)).unwrap();
        let before = o.qparams().unwrap();
        let p = Params::from_value(
            json!({"bins": 256, "dtype": "qint8", "qscheme": "per_tensor_symmetric"}),
        )
        .unwrap();
        assert_eq!(o.retune(&p).unwrap(), Retune::Applied);
        let after = o.qparams().unwrap();
        assert_eq!(after.min_val, before.min_val);
        assert_ne!(after.zero_point, before.zero_point);
        let p = Params::from_value(json!({"bins": 512})).unwrap();
        assert_eq!(o.retune(&p).unwrap(), Retune::NeedsData);
    }
}
