//! `PerChannelMinMaxObserver` and `MovingAveragePerChannelMinMaxObserver`.
//!
//! State: each batch is reduced to one min/max per index of `ch_axis` (PyTorch swaps axis 0 and
//! `ch_axis`, flattens the rest and takes `aminmax(dim=1)`; negative axes count from the end,
//! an axis outside the tensor raises `IndexError` in `forward`, as does a 1-d or 0-d input).
//! MinMax keeps running extrema, MovingAverage `v ← v + c·(cur − v)` in float32; shapes
//! broadcast like PyTorch's (a single channel combines with any count). The search: qparams per
//! channel with [`super::qparams::calculate`]. Non-finite values count as 0 (as the engine
//! prepares them).

use super::config::{not_implemented, QScheme, UniformArgs, UniformConfig};
use super::qparams::{calculate, to_qparams, Buffers};
use crate::error::{Error, Result, Stage};
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
use crate::params::ParamSet;
use crate::qdq::QdqKernel;
use crate::tensor::Tensor;
use std::marker::PhantomData;

crate::declare_params! {
    /// Arguments of `PerChannelMinMaxObserver`.
    pub struct PerChannelArgs {
        /// channel axis (negative counts from the end)
        ch_axis: i64 = 0; int(-64, 63), Data;
        /// quantization scheme (per-channel ones only)
        qscheme: QScheme = QScheme::PerChannelAffine; choice(), Search;
    }
    include { uniform: UniformArgs }
}

crate::declare_params! {
    /// Arguments of `MovingAveragePerChannelMinMaxObserver`.
    pub struct MovingAveragePerChannelArgs {
        /// weight c of the new batch in the running average v += c·(cur − v)
        averaging_constant: f64 = 0.01; float(0.0, 1.0), Data;
        /// channel axis (negative counts from the end)
        ch_axis: i64 = 0; int(-64, 63), Data;
        /// quantization scheme (per-channel ones only)
        qscheme: QScheme = QScheme::PerChannelAffine; choice(), Search;
    }
    include { uniform: UniformArgs }
}

/// The configuration of a per-channel observer.
#[derive(Debug, Clone, PartialEq)]
pub struct PerChannelConfig {
    pub ch_axis: i64,
    /// `None`: running extrema; `Some(c)`: moving average with constant `c` (float32).
    pub averaging_constant: Option<f32>,
    pub uniform: UniformConfig,
}

/// Per-channel running min/max.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerChannelState {
    pub min_val: Vec<f32>,
    pub max_val: Vec<f32>,
    /// `ch_axis` normalised against the last batch's rank.
    pub axis: Option<usize>,
}

const PER_CHANNEL_ONLY: &str = "qscheme only support torch.per_channel_symmetric, torch.per_channel_affine and torch.per_channel_affine_float_qparams.";

/// The checks of the per-channel constructors, in PyTorch's order.
fn per_channel_config(
    class: &str,
    qscheme: QScheme,
    uniform: &UniformArgs,
    unknown: &[String],
) -> Result<UniformConfig> {
    if !qscheme.is_per_channel() {
        return Err(not_implemented(format!("{class}'s {PER_CHANNEL_ONLY}")));
    }
    if uniform.is_dynamic {
        return Err(not_implemented(format!(
            "{class} doesn't support dynamic quantization"
        )));
    }
    let cfg = UniformConfig::resolve(uniform, qscheme, unknown)?;
    cfg.reject_quint8_symmetric_reduce_range()?;
    Ok(cfg)
}

/// The channel axis PyTorch's permutation produces for a tensor of rank `ndim`.
pub fn normalize_axis(ch_axis: i64, ndim: usize) -> Result<usize> {
    let n = ndim as i64;
    if ch_axis >= n || ch_axis < -n {
        return Err(Error::framework(
            "IndexError",
            "list assignment index out of range",
            Stage::Forward,
        ));
    }
    if ndim < 2 {
        // `torch.flatten(y, start_dim=1)` on a 1-d tensor.
        return Err(Error::framework(
            "IndexError",
            "Dimension out of range (expected to be in range of [-1, 0], but got 1)",
            Stage::Forward,
        ));
    }
    Ok(ch_axis.rem_euclid(n) as usize)
}

/// Per-channel min and max of `t` along `axis` (non-finite values count as 0).
pub fn channel_min_max(t: &Tensor, axis: usize) -> (Vec<f32>, Vec<f32>) {
    let channels = t.shape[axis];
    let inner: usize = t.shape[axis + 1..].iter().product();
    let mut lo = vec![f32::INFINITY; channels];
    let mut hi = vec![f32::NEG_INFINITY; channels];
    if inner == 0 || channels == 0 {
        return (lo, hi);
    }
    if t.data.len() == channels * inner {
        // One run per channel: channels side by side, each scanned in lanes (the same bits as
        // the loop below, see `lanes::min_max`).
        let finite_or_zero = |v: f32| if v.is_finite() { v } else { 0.0 };
        let ranges = crate::parallel::map_chunks_of(&t.data, inner, |run| {
            crate::lanes::min_max_of(run, finite_or_zero)
        });
        return ranges.into_iter().unzip();
    }
    for (row, chunk) in t.data.chunks_exact(inner).enumerate() {
        let c = row % channels;
        let (mut l, mut h) = (lo[c], hi[c]);
        for &v in chunk {
            let v = if v.is_finite() { v } else { 0.0 };
            l = if v < l { v } else { l };
            h = if v > h { v } else { h };
        }
        lo[c] = l;
        hi[c] = h;
    }
    (lo, hi)
}

/// Broadcast `old` and `cur` like two 1-d tensors and combine them element-wise.
fn broadcast(old: &[f32], cur: &[f32], f: impl Fn(f32, f32) -> f32) -> Result<Vec<f32>> {
    let n = match (old.len(), cur.len()) {
        (a, b) if a == b => a,
        (1, b) => b,
        (a, 1) => a,
        (a, b) => {
            return Err(Error::framework(
                "RuntimeError",
                format!(
                    "The size of tensor a ({b}) must match the size of tensor b ({a}) at non-singleton dimension 0"
                ),
                Stage::Forward,
            ))
        }
    };
    let at = |v: &[f32], i: usize| if v.len() == 1 { v[0] } else { v[i] };
    Ok((0..n).map(|i| f(at(old, i), at(cur, i))).collect())
}

/// `forward()` of both per-channel observers.
fn feed(state: &mut PerChannelState, cfg: &PerChannelConfig, batch: &Tensor) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let axis = normalize_axis(cfg.ch_axis, batch.ndim())?;
    let (lo, hi) = channel_min_max(batch, axis);
    if state.min_val.is_empty() {
        state.min_val = lo;
        state.max_val = hi;
    } else {
        let (min_val, max_val) = match cfg.averaging_constant {
            None => (
                broadcast(&state.min_val, &lo, |old, cur| cur.min(old))?,
                broadcast(&state.max_val, &hi, |old, cur| cur.max(old))?,
            ),
            Some(c) => (
                broadcast(&state.min_val, &lo, |old, cur| old + c * (cur - old))?,
                broadcast(&state.max_val, &hi, |old, cur| old + c * (cur - old))?,
            ),
        };
        state.min_val = min_val;
        state.max_val = max_val;
    }
    state.axis = Some(axis);
    Ok(())
}

/// `calculate_qparams()` of both per-channel observers.
fn qparams(state: &PerChannelState, cfg: &PerChannelConfig) -> Result<QParams> {
    let computed = calculate(
        &cfg.uniform,
        &state.min_val,
        &state.max_val,
        Buffers::PerChannel,
    )?;
    Ok(to_qparams(
        &cfg.uniform,
        computed,
        state.axis,
        state.min_val.clone(),
        state.max_val.clone(),
    ))
}

/// One of PyTorch's per-channel classes: its arguments and how they resolve.
pub trait PerChannelClass: Send + Sync + 'static {
    /// The constructor's arguments.
    type Args: ParamSet;
    /// The class's constructor checks.
    fn resolve(args: &Self::Args, unknown: &[String]) -> Result<PerChannelConfig>;
}

/// `PerChannelMinMaxObserver`: running extrema per channel.
pub struct RunningExtrema;

impl PerChannelClass for RunningExtrema {
    type Args = PerChannelArgs;
    fn resolve(args: &PerChannelArgs, unknown: &[String]) -> Result<PerChannelConfig> {
        Ok(PerChannelConfig {
            ch_axis: args.ch_axis,
            averaging_constant: None,
            uniform: per_channel_config(
                "PerChannelMinMaxObserver",
                args.qscheme,
                &args.uniform,
                unknown,
            )?,
        })
    }
}

/// `MovingAveragePerChannelMinMaxObserver`: a moving average of each channel's min/max.
pub struct MovingAverage;

impl PerChannelClass for MovingAverage {
    type Args = MovingAveragePerChannelArgs;
    fn resolve(args: &MovingAveragePerChannelArgs, unknown: &[String]) -> Result<PerChannelConfig> {
        Ok(PerChannelConfig {
            ch_axis: args.ch_axis,
            averaging_constant: Some(args.averaging_constant as f32),
            uniform: per_channel_config(
                "MovingAveragePerChannelMinMaxObserver",
                args.qscheme,
                &args.uniform,
                unknown,
            )?,
        })
    }
}

/// A PyTorch per-channel min/max observer of class `C`.
pub struct PerChannel<C>(PhantomData<C>);

impl<C: PerChannelClass> ObserverKind for PerChannel<C> {
    type Args = C::Args;
    type Config = PerChannelConfig;
    type State = PerChannelState;

    fn resolve(args: &C::Args, unknown: &[String]) -> Result<PerChannelConfig> {
        C::resolve(args, unknown)
    }

    fn init(_: &PerChannelConfig) -> PerChannelState {
        PerChannelState::default()
    }

    fn feed(state: &mut PerChannelState, cfg: &PerChannelConfig, batch: &Tensor) -> Result<()> {
        feed(state, cfg, batch)
    }

    fn qparams(state: &PerChannelState, cfg: &PerChannelConfig) -> Result<QParams> {
        qparams(state, cfg)
    }

    /// PyTorch's own fake-quantize kernels ([`super::fake_quant`]).
    fn qdq_kernel(
        _: &PerChannelConfig,
        shape: &[usize],
        q: &QParams,
    ) -> Option<Box<dyn QdqKernel>> {
        super::fake_quant::kernel(shape, q)
    }

    fn plot(state: &PerChannelState) -> PlotSnapshot {
        PlotSnapshot {
            min_val: state.min_val.clone(),
            max_val: state.max_val.clone(),
            histogram: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::{Instance, ZeroPoint};
    use crate::params::Params;
    use crate::registry;
    use serde_json::{json, Value};

    fn new(v: Value) -> Result<Instance> {
        Instance::new(
            registry::find("torch.PerChannelMinMaxObserver")?,
            &Params::from_value(v)?,
        )
    }

    fn moving_average(v: Value) -> Result<Instance> {
        Instance::new(
            registry::find("torch.MovingAveragePerChannelMinMaxObserver")?,
            &Params::from_value(v)?,
        )
    }

    fn t(shape: Vec<usize>, data: Vec<f32>) -> Tensor {
        Tensor::new(shape, data).unwrap()
    }

    #[test]
    fn reduces_along_any_axis() {
        let x = t(vec![2, 3], vec![1., -2., 3., -4., 5., 6.]);
        assert_eq!(channel_min_max(&x, 0), (vec![-2., -4.], vec![3., 6.]));
        assert_eq!(
            channel_min_max(&x, 1),
            (vec![-4., -2., 3.], vec![1., 5., 6.])
        );
        let mut obs = new(json!({"ch_axis": -1})).unwrap();
        obs.feed(&x).unwrap();
        let q = obs.qparams().unwrap();
        assert_eq!(q.axis, Some(1));
        assert_eq!(q.min_val, vec![-4., -2., 3.]);
        // channel 2: range [0, 6] → scale 6/255, zp 0
        assert_eq!(q.scale[2], 6.0f32 / 255.0);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![204, 73, 0]));
    }

    #[test]
    fn axis_errors_are_pytorchs() {
        let mut obs = new(json!({"ch_axis": 2})).unwrap();
        let err = obs.feed(&t(vec![2, 3], vec![0.; 6])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "IndexError: list assignment index out of range"
        );
        let mut obs = new(json!({})).unwrap();
        let err = obs.feed(&Tensor::from_vec(vec![1.0, 2.0])).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("IndexError: Dimension out of range"));
        // No data: PyTorch's default single (1.0, 0).
        let q = obs.qparams().unwrap();
        assert_eq!((q.scale.clone(), q.axis), (vec![1.0], None));
    }

    #[test]
    fn channel_counts_broadcast_or_fail() {
        let mut obs = new(json!({})).unwrap();
        obs.feed(&t(vec![3, 2], vec![0.; 6])).unwrap();
        let err = obs.feed(&t(vec![5, 1], vec![0.; 5])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "RuntimeError: The size of tensor a (5) must match the size of tensor b (3) at non-singleton dimension 0"
        );
        let mut obs = new(json!({})).unwrap();
        obs.feed(&t(vec![1, 2], vec![-1., 1.])).unwrap();
        obs.feed(&t(vec![3, 1], vec![0., 2., -3.])).unwrap();
        assert_eq!(obs.plot().min_val, vec![-1., -1., -3.]);
    }

    #[test]
    fn moving_average_per_channel() {
        let mut obs = moving_average(json!({"averaging_constant": 0.5, "ch_axis": 1})).unwrap();
        obs.feed(&t(vec![1, 2], vec![-1., 1.])).unwrap();
        obs.feed(&t(vec![1, 2], vec![-3., 3.])).unwrap();
        assert_eq!(obs.plot().min_val, vec![-2., 2.]);
        assert_eq!(obs.plot().max_val, vec![-2., 2.]);
    }

    #[test]
    fn constructor_refusals() {
        let err = |p| new(p).unwrap_err().to_string();
        assert_eq!(
            err(json!({"qscheme": "per_tensor_affine"})),
            format!("NotImplementedError: PerChannelMinMaxObserver's {PER_CHANNEL_ONLY}")
        );
        assert_eq!(
            err(json!({"is_dynamic": true})),
            "NotImplementedError: PerChannelMinMaxObserver doesn't support dynamic quantization"
        );
        assert_eq!(
            err(json!({"qscheme": "per_channel_symmetric", "reduce_range": true})),
            "NotImplementedError: Cannot reduce range for symmetric quantization for quint8"
        );
        let err = moving_average(json!({"qscheme": "per_tensor_affine"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("MovingAveragePerChannelMinMaxObserver's qscheme"));
    }
}
