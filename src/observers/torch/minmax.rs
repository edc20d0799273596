//! `MinMaxObserver` and `MovingAverageMinMaxObserver` (per tensor).
//!
//! State: the running `min_val = min(min_val, min(x))`, `max_val = max(max_val, max(x))`;
//! MovingAverage initialises with the first batch's min/max, then `v ← v + c·(cur − v)` in
//! float32 with `c` rounded to float32. Both compute qparams from that state with
//! [`super::qparams::calculate`]; every constructor argument but `averaging_constant` only
//! enters that formula. Non-finite values are not observed (the engine filters them before; see
//! [`crate::engine::NonFinitePolicy`]).

use super::config::{not_implemented, py_float_repr, QScheme, UniformArgs, UniformConfig};
use super::qparams::{calculate, to_qparams, Buffers};
use crate::error::Result;
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
use crate::params::Choice;
use crate::qdq::QdqKernel;
use crate::shared_stats::finite_min_max;
use crate::tensor::Tensor;

crate::declare_params! {
    /// Arguments of `MinMaxObserver`.
    pub struct MinMaxArgs {
        /// quantization scheme (MinMaxObserver accepts only the per-tensor ones)
        qscheme: QScheme = QScheme::PerTensorAffine; choice(), Search;
    }
    include { uniform: UniformArgs }
}

crate::declare_params! {
    /// Arguments of `MovingAverageMinMaxObserver`.
    pub struct MovingAverageArgs {
        /// weight c of the new batch in the running average v += c·(cur − v)
        averaging_constant: f64 = 0.01; float(0.0, 1.0), Data;
        /// quantization scheme (per-tensor only)
        qscheme: QScheme = QScheme::PerTensorAffine; choice(), Search;
    }
    include { uniform: UniformArgs }
}

/// The running min/max of a per-tensor observer (`+inf`/`−inf` before any data).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinMaxState {
    pub min_val: f32,
    pub max_val: f32,
}

impl MinMaxState {
    const EMPTY: MinMaxState = MinMaxState {
        min_val: f32::INFINITY,
        max_val: f32::NEG_INFINITY,
    };

    fn plot(&self) -> PlotSnapshot {
        PlotSnapshot {
            min_val: vec![self.min_val],
            max_val: vec![self.max_val],
            histogram: None,
        }
    }

    fn qparams(&self, cfg: &UniformConfig) -> Result<QParams> {
        let computed = calculate(cfg, &[self.min_val], &[self.max_val], Buffers::Scalar)?;
        Ok(to_qparams(
            cfg,
            computed,
            None,
            vec![self.min_val],
            vec![self.max_val],
        ))
    }
}

/// The configuration of a moving-average observer: the averaging constant (float32) and the
/// qparams formula.
#[derive(Debug, Clone, PartialEq)]
pub struct MovingAverageConfig {
    pub averaging_constant: f32,
    pub uniform: UniformConfig,
}

/// `MinMaxObserver.__init__`'s checks: per-tensor qscheme, then the base constructor, then
/// quint8 symmetric `reduce_range`.
fn per_tensor_config(
    class: &str,
    qscheme: QScheme,
    uniform: &UniformArgs,
    unknown: &[String],
) -> Result<UniformConfig> {
    if !qscheme.is_per_tensor() {
        return Err(not_implemented(format!(
            "{class}'s qscheme only support torch.per_tensor_symmetric and torch.per_tensor_affine."
        )));
    }
    let cfg = UniformConfig::resolve(uniform, qscheme, unknown)?;
    cfg.reject_quint8_symmetric_reduce_range()?;
    Ok(cfg)
}

/// PyTorch's `MinMaxObserver`: running extrema.
pub struct MinMax;

impl ObserverKind for MinMax {
    type Args = MinMaxArgs;
    type Config = UniformConfig;
    type State = MinMaxState;

    fn resolve(args: &MinMaxArgs, unknown: &[String]) -> Result<UniformConfig> {
        per_tensor_config("MinMaxObserver", args.qscheme, &args.uniform, unknown)
    }

    fn init(_: &UniformConfig) -> MinMaxState {
        MinMaxState::EMPTY
    }

    fn feed(state: &mut MinMaxState, _: &UniformConfig, batch: &Tensor) -> Result<()> {
        if let Some((lo, hi)) = finite_min_max(&batch.data) {
            state.min_val = state.min_val.min(lo);
            state.max_val = state.max_val.max(hi);
        }
        Ok(())
    }

    fn qparams(state: &MinMaxState, cfg: &UniformConfig) -> Result<QParams> {
        state.qparams(cfg)
    }

    /// PyTorch's own fake-quantize kernels ([`super::fake_quant`]).
    fn qdq_kernel(_: &UniformConfig, shape: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        super::fake_quant::kernel(shape, q)
    }

    fn plot(state: &MinMaxState) -> PlotSnapshot {
        state.plot()
    }
}

/// PyTorch's `MovingAverageMinMaxObserver`: an exponential moving average of each batch's
/// min/max.
pub struct MovingAverageMinMax;

impl ObserverKind for MovingAverageMinMax {
    type Args = MovingAverageArgs;
    type Config = MovingAverageConfig;
    type State = MinMaxState;

    fn resolve(args: &MovingAverageArgs, unknown: &[String]) -> Result<MovingAverageConfig> {
        let class = "MovingAverageMinMaxObserver";
        if !args.qscheme.is_per_tensor() {
            return Err(not_implemented(format!(
                "{class}'s qscheme only support torch.per_tensor_symmetric and torch.per_tensor_affine. but got: torch.{}",
                args.qscheme.name()
            )));
        }
        if args.uniform.is_dynamic && args.averaging_constant != 1.0 {
            return Err(not_implemented(format!(
                "{class} doesn't support dynamic quantization for averaging constant of {}",
                py_float_repr(args.averaging_constant)
            )));
        }
        Ok(MovingAverageConfig {
            averaging_constant: args.averaging_constant as f32,
            uniform: per_tensor_config(class, args.qscheme, &args.uniform, unknown)?,
        })
    }

    fn init(_: &MovingAverageConfig) -> MinMaxState {
        MinMaxState::EMPTY
    }

    fn feed(state: &mut MinMaxState, cfg: &MovingAverageConfig, batch: &Tensor) -> Result<()> {
        let Some((lo, hi)) = finite_min_max(&batch.data) else {
            return Ok(());
        };
        if *state == MinMaxState::EMPTY {
            *state = MinMaxState {
                min_val: lo,
                max_val: hi,
            };
        } else {
            let c = cfg.averaging_constant;
            state.min_val += c * (lo - state.min_val);
            state.max_val += c * (hi - state.max_val);
        }
        Ok(())
    }

    fn qparams(state: &MinMaxState, cfg: &MovingAverageConfig) -> Result<QParams> {
        state.qparams(&cfg.uniform)
    }

    /// PyTorch's own fake-quantize kernels ([`super::fake_quant`]).
    fn qdq_kernel(
        _: &MovingAverageConfig,
        shape: &[usize],
        q: &QParams,
    ) -> Option<Box<dyn QdqKernel>> {
        super::fake_quant::kernel(shape, q)
    }

    fn plot(state: &MinMaxState) -> PlotSnapshot {
        state.plot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::{Instance, ZeroPoint};
    use crate::params::Params;
    use crate::registry;
    use serde_json::{json, Value};

    fn instance(id: &str, p: Value) -> Result<Instance> {
        Instance::new(registry::find(id)?, &Params::from_value(p)?)
    }

    #[test]
    fn minmax_tracks_running_extrema() {
        let mut obs = instance("torch.MinMaxObserver", json!({})).unwrap();
        obs.feed(&Tensor::from_vec(vec![-1.0, 2.0])).unwrap();
        obs.feed(&Tensor::from_vec(vec![0.5, 3.0, f32::NAN]))
            .unwrap();
        let q = obs.qparams().unwrap();
        assert_eq!((q.min_val[0], q.max_val[0]), (-1.0, 3.0));
        assert_eq!(q.scale, vec![4.0f32 / 255.0]);
        // -1/(4/255) = -63.75 → -64 → zp 64
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![64]));
    }

    #[test]
    fn moving_average_is_float32() {
        let id = "torch.MovingAverageMinMaxObserver";
        let mut obs = instance(id, json!({"averaging_constant": 0.5})).unwrap();
        obs.feed(&Tensor::from_vec(vec![-1.0, 1.0])).unwrap();
        obs.feed(&Tensor::from_vec(vec![-3.0, 2.0])).unwrap();
        assert_eq!(obs.plot().min_val, vec![-2.0]);
        assert_eq!(obs.plot().max_val, vec![1.5]);
        let mut obs = instance(id, json!({})).unwrap();
        obs.feed(&Tensor::from_vec(vec![0.0, 1.0])).unwrap();
        obs.feed(&Tensor::from_vec(vec![0.0, 2.0])).unwrap();
        assert_eq!(obs.plot().max_val, vec![1.0 + 0.01f32 * 1.0]);
    }

    #[test]
    fn pytorch_refusals() {
        let err = |p| instance("torch.MinMaxObserver", p).unwrap_err().to_string();
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
        assert!(instance(
            "torch.MinMaxObserver",
            json!({"dtype": "uint8", "qscheme": "per_tensor_symmetric", "reduce_range": true})
        )
        .is_ok());
        let err = |p| {
            instance("torch.MovingAverageMinMaxObserver", p)
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
        assert!(instance(
            "torch.MovingAverageMinMaxObserver",
            json!({"is_dynamic": true, "averaging_constant": 1})
        )
        .is_ok());
    }
}
