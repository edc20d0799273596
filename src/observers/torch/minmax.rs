//! `MinMaxObserver` and `MovingAverageMinMaxObserver` (per tensor).
//!
//! MinMax keeps the running `min_val = min(min_val, min(x))`, `max_val = max(max_val, max(x))`.
//! MovingAverage initialises with the first batch's min/max, then
//! `v ← v + c·(cur − v)` in float32 with `c` rounded to float32.
//! Both compute qparams with [`super::qparams::calculate`]. Non-finite values are not observed
//! (the engine filters them before; see [`crate::engine::NonFinitePolicy`]).

use super::config::{
    is_dynamic_of, not_implemented, py_number_repr, qscheme_of, specs, QScheme, UniformConfig,
    UNIFORM_KWARGS,
};
use super::qparams::{calculate, to_qparams, Buffers};
use crate::error::Result;
use crate::histogram::finite_min_max;
use crate::observer::{Observer, ObserverState, QParams, Retune};
use crate::params::{ParamSpec, Params};
use crate::tensor::Tensor;

/// How the running min/max is updated.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Update {
    /// Running extrema.
    MinMax,
    /// Exponential moving average with constant `c` (float32).
    MovingAverage(f32),
}

/// PyTorch's per-tensor min/max observers.
#[derive(Debug, Clone)]
pub struct MinMaxObserver {
    cfg: UniformConfig,
    update: Update,
    min_val: f32,
    max_val: f32,
}

/// Keywords of `MovingAverageMinMaxObserver.__init__` (plus the base's).
const MOVING_AVERAGE_KWARGS: &[&str] = &[
    "averaging_constant",
    "dtype",
    "qscheme",
    "reduce_range",
    "quant_min",
    "quant_max",
    "factory_kwargs",
    "eps",
    "is_dynamic",
];

impl MinMaxObserver {
    /// `MinMaxObserver(**params)`.
    pub fn new(params: &Params) -> Result<Self> {
        let cfg = minmax_config(params)?;
        Ok(MinMaxObserver {
            cfg,
            update: Update::MinMax,
            min_val: f32::INFINITY,
            max_val: f32::NEG_INFINITY,
        })
    }

    /// `MovingAverageMinMaxObserver(**params)`.
    pub fn moving_average(params: &Params) -> Result<Self> {
        let qscheme = qscheme_of(params, QScheme::PerTensorAffine)?;
        if !qscheme.is_per_tensor() {
            return Err(not_implemented(format!(
                "MovingAverageMinMaxObserver's qscheme only support torch.per_tensor_symmetric and torch.per_tensor_affine. but got: torch.{}",
                qscheme.name()
            )));
        }
        let constant = params.f64_or("averaging_constant", 0.01)?;
        if is_dynamic_of(params)? && constant != 1.0 {
            let shown = params
                .get("averaging_constant")
                .map(py_number_repr)
                .unwrap_or_else(|| "0.01".into());
            return Err(not_implemented(format!(
                "MovingAverageMinMaxObserver doesn't support dynamic quantization for averaging constant of {shown}"
            )));
        }
        let cfg = minmax_base(params, MOVING_AVERAGE_KWARGS)?;
        Ok(MinMaxObserver {
            cfg,
            update: Update::MovingAverage(constant as f32),
            min_val: f32::INFINITY,
            max_val: f32::NEG_INFINITY,
        })
    }

    /// The validated configuration.
    pub fn config(&self) -> &UniformConfig {
        &self.cfg
    }
}

/// `MinMaxObserver.__init__` checks.
fn minmax_config(params: &Params) -> Result<UniformConfig> {
    let qscheme = qscheme_of(params, QScheme::PerTensorAffine)?;
    if !qscheme.is_per_tensor() {
        return Err(not_implemented(
            "MinMaxObserver's qscheme only support torch.per_tensor_symmetric and torch.per_tensor_affine.",
        ));
    }
    minmax_base(params, UNIFORM_KWARGS)
}

/// The base constructor plus MinMax's quint8 symmetric `reduce_range` check.
fn minmax_base(params: &Params, accepted: &[&str]) -> Result<UniformConfig> {
    let cfg = UniformConfig::from_params(params, QScheme::PerTensorAffine, accepted)?;
    cfg.reject_quint8_symmetric_reduce_range()?;
    Ok(cfg)
}

impl Observer for MinMaxObserver {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        let Some((lo, hi)) = finite_min_max(&batch.data) else {
            return Ok(());
        };
        match self.update {
            Update::MinMax => {
                self.min_val = self.min_val.min(lo);
                self.max_val = self.max_val.max(hi);
            }
            Update::MovingAverage(c) => {
                if self.min_val == f32::INFINITY && self.max_val == f32::NEG_INFINITY {
                    self.min_val = lo;
                    self.max_val = hi;
                } else {
                    self.min_val += c * (lo - self.min_val);
                    self.max_val += c * (hi - self.max_val);
                }
            }
        }
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let computed = calculate(&self.cfg, &[self.min_val], &[self.max_val], Buffers::Scalar)?;
        Ok(to_qparams(
            &self.cfg,
            computed,
            None,
            vec![self.min_val],
            vec![self.max_val],
        ))
    }

    /// PyTorch's own fake-quantize kernels ([`super::fake_quant`]).
    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        super::fake_quant::fake_quantize(x, q)
    }

    fn reset(&mut self) {
        self.min_val = f32::INFINITY;
        self.max_val = f32::NEG_INFINITY;
    }

    fn state(&self) -> ObserverState {
        ObserverState {
            min_val: vec![self.min_val],
            max_val: vec![self.max_val],
            histogram: None,
        }
    }

    /// Everything but `averaging_constant` only changes the qparams formula.
    fn retune(&mut self, params: &Params) -> Result<Retune> {
        let rebuilt = match self.update {
            Update::MinMax => MinMaxObserver::new(params)?,
            Update::MovingAverage(_) => MinMaxObserver::moving_average(params)?,
        };
        if rebuilt.update != self.update {
            return Ok(Retune::NeedsData);
        }
        self.cfg = rebuilt.cfg;
        Ok(Retune::Applied)
    }
}

/// Registry parameters of `MinMaxObserver`.
pub fn minmax_params() -> Vec<ParamSpec> {
    specs::uniform("per_tensor_affine")
        .into_iter()
        .map(ParamSpec::search_only)
        .collect()
}

/// Registry parameters of `MovingAverageMinMaxObserver`.
pub fn moving_average_params() -> Vec<ParamSpec> {
    let mut params = vec![specs::averaging_constant()];
    params.extend(minmax_params());
    params
}

/// Registry constructor of `torch.MinMaxObserver`.
pub fn build_minmax(params: &Params) -> Result<Box<dyn Observer>> {
    Ok(Box::new(MinMaxObserver::new(params)?))
}

/// Registry constructor of `torch.MovingAverageMinMaxObserver`.
pub fn build_moving_average(params: &Params) -> Result<Box<dyn Observer>> {
    Ok(Box::new(MinMaxObserver::moving_average(params)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::ZeroPoint;
    use serde_json::{json, Value};

    fn params(v: Value) -> Params {
        Params::from_value(v).unwrap()
    }

    #[test]
    fn minmax_tracks_running_extrema() {
        let mut obs = MinMaxObserver::new(&params(json!({}))).unwrap();
        obs.observe(&Tensor::from_vec(vec![-1.0, 2.0])).unwrap();
        obs.observe(&Tensor::from_vec(vec![0.5, 3.0, f32::NAN]))
            .unwrap();
        let q = obs.qparams().unwrap();
        assert_eq!((q.min_val[0], q.max_val[0]), (-1.0, 3.0));
        assert_eq!(q.scale, vec![4.0f32 / 255.0]);
        // -1/(4/255) = -63.75 → -64 → zp 64
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![64]));
    }

    #[test]
    fn moving_average_is_float32() {
        let mut obs =
            MinMaxObserver::moving_average(&params(json!({"averaging_constant": 0.5}))).unwrap();
        obs.observe(&Tensor::from_vec(vec![-1.0, 1.0])).unwrap();
        obs.observe(&Tensor::from_vec(vec![-3.0, 2.0])).unwrap();
        assert_eq!(obs.state().min_val, vec![-2.0]);
        assert_eq!(obs.state().max_val, vec![1.5]);
        let mut obs = MinMaxObserver::moving_average(&params(json!({}))).unwrap();
        obs.observe(&Tensor::from_vec(vec![0.0, 1.0])).unwrap();
        obs.observe(&Tensor::from_vec(vec![0.0, 2.0])).unwrap();
        assert_eq!(obs.state().max_val, vec![1.0 + 0.01f32 * 1.0]);
    }

    #[test]
    fn pytorch_refusals() {
        let err = |p| MinMaxObserver::new(&params(p)).unwrap_err().to_string();
        assert_eq!(
            err(json!({"qscheme": "per_channel_affine"})),
            "NotImplementedError: MinMaxObserver's qscheme only support torch.per_tensor_symmetric and torch.per_tensor_affine."
        );
        assert_eq!(
            err(json!({"qscheme": "per_tensor_symmetric", "reduce_range": true})),
            "NotImplementedError: Cannot reduce range for symmetric quantization for quint8"
        );
        // The qscheme check comes before the keyword check.
        assert!(err(json!({"qscheme": "per_channel_affine", "bins": 3}))
            .starts_with("NotImplementedError"));
        assert_eq!(
            err(json!({"bins": 3})),
            "TypeError: ObserverBase.__init__() got an unexpected keyword argument 'bins'"
        );
        // uint8 symmetric with reduce_range is accepted (only quint8 is refused).
        assert!(MinMaxObserver::new(&params(
            json!({"dtype": "uint8", "qscheme": "per_tensor_symmetric", "reduce_range": true})
        ))
        .is_ok());
        let err = |p| {
            MinMaxObserver::moving_average(&params(p))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(json!({"qscheme": "per_channel_symmetric"})),
            "NotImplementedError: MovingAverageMinMaxObserver's qscheme only support torch.per_tensor_symmetric and torch.per_tensor_affine. but got: torch.per_channel_symmetric"
        );
        assert_eq!(
            err(json!({"is_dynamic": true})),
            "NotImplementedError: MovingAverageMinMaxObserver doesn't support dynamic quantization for averaging constant of 0.01"
        );
        assert!(MinMaxObserver::moving_average(&params(
            json!({"is_dynamic": true, "averaging_constant": 1})
        ))
        .is_ok());
    }

    #[test]
    fn retune_keeps_the_range() {
        let mut obs = MinMaxObserver::new(&params(json!({}))).unwrap();
        obs.observe(&Tensor::from_vec(vec![-1.0, 2.0])).unwrap();
        let retuned = obs
            .retune(&params(
                json!({"dtype": "qint8", "qscheme": "per_tensor_symmetric"}),
            ))
            .unwrap();
        assert_eq!(retuned, Retune::Applied);
        assert_eq!(obs.qparams().unwrap().scale, vec![2.0f32 / 127.5]);
        assert!(obs
            .retune(&params(json!({"qscheme": "per_channel_affine"})))
            .is_err());
    }
}
