//! `PerChannelMinMaxObserver` and `MovingAveragePerChannelMinMaxObserver`.
//!
//! Each batch is reduced to one min/max per index of `ch_axis` (PyTorch swaps axis 0 and
//! `ch_axis`, flattens the rest and takes `aminmax(dim=1)`; negative axes count from the end,
//! an axis outside the tensor raises `IndexError` in `forward`, as does a 1-d or 0-d input).
//! MinMax keeps running extrema, MovingAverage `v ← v + c·(cur − v)` in float32; shapes
//! broadcast like PyTorch's (a single channel combines with any count). Qparams per channel with
//! [`super::qparams::calculate`]. Non-finite values count as 0 (as the engine prepares them).

use super::config::{is_dynamic_of, not_implemented, qscheme_of, specs, QScheme, UniformConfig};
use super::qparams::{calculate, to_qparams, Buffers};
use crate::error::{Error, Result, Stage};
use crate::observer::{Observer, ObserverState, QParams, Retune};
use crate::params::{ParamSpec, Params};
use crate::tensor::Tensor;

/// PyTorch's per-channel min/max observers.
#[derive(Debug, Clone)]
pub struct PerChannelObserver {
    cfg: UniformConfig,
    ch_axis: i64,
    /// `None`: running extrema; `Some(c)`: moving average with constant `c`.
    averaging_constant: Option<f32>,
    min_val: Vec<f32>,
    max_val: Vec<f32>,
    /// `ch_axis` normalised against the last batch's rank.
    axis: Option<usize>,
}

const PER_CHANNEL_KWARGS: &[&str] = &[
    "ch_axis",
    "dtype",
    "qscheme",
    "reduce_range",
    "quant_min",
    "quant_max",
    "factory_kwargs",
    "eps",
    "is_dynamic",
];

const MOVING_AVERAGE_PER_CHANNEL_KWARGS: &[&str] = &[
    "averaging_constant",
    "ch_axis",
    "dtype",
    "qscheme",
    "reduce_range",
    "quant_min",
    "quant_max",
    "factory_kwargs",
    "eps",
    "is_dynamic",
];

const PER_CHANNEL_ONLY: &str = "qscheme only support torch.per_channel_symmetric, torch.per_channel_affine and torch.per_channel_affine_float_qparams.";

impl PerChannelObserver {
    /// `PerChannelMinMaxObserver(**params)`.
    pub fn new(params: &Params) -> Result<Self> {
        let cfg = per_channel_config(params, "PerChannelMinMaxObserver", PER_CHANNEL_KWARGS)?;
        Ok(Self::with(cfg, params.i64_or("ch_axis", 0)?, None))
    }

    /// `MovingAveragePerChannelMinMaxObserver(**params)`.
    pub fn moving_average(params: &Params) -> Result<Self> {
        let cfg = per_channel_config(
            params,
            "MovingAveragePerChannelMinMaxObserver",
            MOVING_AVERAGE_PER_CHANNEL_KWARGS,
        )?;
        let constant = params.f64_or("averaging_constant", 0.01)? as f32;
        Ok(Self::with(
            cfg,
            params.i64_or("ch_axis", 0)?,
            Some(constant),
        ))
    }

    fn with(cfg: UniformConfig, ch_axis: i64, averaging_constant: Option<f32>) -> Self {
        PerChannelObserver {
            cfg,
            ch_axis,
            averaging_constant,
            min_val: Vec::new(),
            max_val: Vec::new(),
            axis: None,
        }
    }

    /// The validated configuration.
    pub fn config(&self) -> &UniformConfig {
        &self.cfg
    }
}

/// The checks of the per-channel constructors, in PyTorch's order.
fn per_channel_config(params: &Params, class: &str, accepted: &[&str]) -> Result<UniformConfig> {
    let qscheme = qscheme_of(params, QScheme::PerChannelAffine)?;
    if !qscheme.is_per_channel() {
        return Err(not_implemented(format!("{class}'s {PER_CHANNEL_ONLY}")));
    }
    if is_dynamic_of(params)? {
        return Err(not_implemented(format!(
            "{class} doesn't support dynamic quantization"
        )));
    }
    let cfg = UniformConfig::from_params(params, QScheme::PerChannelAffine, accepted)?;
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

impl Observer for PerChannelObserver {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let axis = normalize_axis(self.ch_axis, batch.ndim())?;
        let (lo, hi) = channel_min_max(batch, axis);
        if self.min_val.is_empty() {
            self.min_val = lo;
            self.max_val = hi;
        } else {
            let (min_val, max_val) = match self.averaging_constant {
                None => (
                    broadcast(&self.min_val, &lo, |old, cur| cur.min(old))?,
                    broadcast(&self.max_val, &hi, |old, cur| cur.max(old))?,
                ),
                Some(c) => (
                    broadcast(&self.min_val, &lo, |old, cur| old + c * (cur - old))?,
                    broadcast(&self.max_val, &hi, |old, cur| old + c * (cur - old))?,
                ),
            };
            self.min_val = min_val;
            self.max_val = max_val;
        }
        self.axis = Some(axis);
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let computed = calculate(&self.cfg, &self.min_val, &self.max_val, Buffers::PerChannel)?;
        Ok(to_qparams(
            &self.cfg,
            computed,
            self.axis,
            self.min_val.clone(),
            self.max_val.clone(),
        ))
    }

    /// PyTorch's own fake-quantize kernels ([`super::fake_quant`]).
    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        super::fake_quant::fake_quantize(x, q)
    }

    fn reset(&mut self) {
        self.min_val.clear();
        self.max_val.clear();
        self.axis = None;
    }

    fn state(&self) -> ObserverState {
        ObserverState {
            min_val: self.min_val.clone(),
            max_val: self.max_val.clone(),
            histogram: None,
        }
    }

    /// Everything but `ch_axis` and `averaging_constant` only changes the qparams formula.
    fn retune(&mut self, params: &Params) -> Result<Retune> {
        let rebuilt = match self.averaging_constant {
            None => PerChannelObserver::new(params)?,
            Some(_) => PerChannelObserver::moving_average(params)?,
        };
        if rebuilt.ch_axis != self.ch_axis || rebuilt.averaging_constant != self.averaging_constant
        {
            return Ok(Retune::NeedsData);
        }
        self.cfg = rebuilt.cfg;
        Ok(Retune::Applied)
    }
}

fn per_channel_common() -> Vec<ParamSpec> {
    specs::uniform("per_channel_affine")
        .into_iter()
        .map(ParamSpec::search_only)
        .collect()
}

/// Registry parameters of `PerChannelMinMaxObserver`.
pub fn per_channel_params() -> Vec<ParamSpec> {
    let mut params = vec![specs::ch_axis()];
    params.extend(per_channel_common());
    params
}

/// Registry parameters of `MovingAveragePerChannelMinMaxObserver`.
pub fn moving_average_per_channel_params() -> Vec<ParamSpec> {
    let mut params = vec![specs::averaging_constant(), specs::ch_axis()];
    params.extend(per_channel_common());
    params
}

/// Registry constructor of `torch.PerChannelMinMaxObserver`.
pub fn build_per_channel(params: &Params) -> Result<Box<dyn Observer>> {
    Ok(Box::new(PerChannelObserver::new(params)?))
}

/// Registry constructor of `torch.MovingAveragePerChannelMinMaxObserver`.
pub fn build_moving_average_per_channel(params: &Params) -> Result<Box<dyn Observer>> {
    Ok(Box::new(PerChannelObserver::moving_average(params)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::ZeroPoint;
    use serde_json::{json, Value};

    fn params(v: Value) -> Params {
        Params::from_value(v).unwrap()
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
        let mut obs = PerChannelObserver::new(&params(json!({"ch_axis": -1}))).unwrap();
        obs.observe(&x).unwrap();
        let q = obs.qparams().unwrap();
        assert_eq!(q.axis, Some(1));
        assert_eq!(q.min_val, vec![-4., -2., 3.]);
        // channel 2: range [0, 6] → scale 6/255, zp 0
        assert_eq!(q.scale[2], 6.0f32 / 255.0);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![204, 73, 0]));
    }

    #[test]
    fn axis_errors_are_pytorchs() {
        let mut obs = PerChannelObserver::new(&params(json!({"ch_axis": 2}))).unwrap();
        let err = obs.observe(&t(vec![2, 3], vec![0.; 6])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "IndexError: list assignment index out of range"
        );
        let mut obs = PerChannelObserver::new(&params(json!({}))).unwrap();
        let err = obs.observe(&Tensor::from_vec(vec![1.0, 2.0])).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("IndexError: Dimension out of range"));
        // No data: PyTorch's default single (1.0, 0).
        let q = obs.qparams().unwrap();
        assert_eq!((q.scale.clone(), q.axis), (vec![1.0], None));
    }

    #[test]
    fn channel_counts_broadcast_or_fail() {
        let mut obs = PerChannelObserver::new(&params(json!({}))).unwrap();
        obs.observe(&t(vec![3, 2], vec![0.; 6])).unwrap();
        let err = obs.observe(&t(vec![5, 1], vec![0.; 5])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "RuntimeError: The size of tensor a (5) must match the size of tensor b (3) at non-singleton dimension 0"
        );
        let mut obs = PerChannelObserver::new(&params(json!({}))).unwrap();
        obs.observe(&t(vec![1, 2], vec![-1., 1.])).unwrap();
        obs.observe(&t(vec![3, 1], vec![0., 2., -3.])).unwrap();
        assert_eq!(obs.state().min_val, vec![-1., -1., -3.]);
    }

    #[test]
    fn moving_average_per_channel() {
        let mut obs = PerChannelObserver::moving_average(&params(
            json!({"averaging_constant": 0.5, "ch_axis": 1}),
        ))
        .unwrap();
        obs.observe(&t(vec![1, 2], vec![-1., 1.])).unwrap();
        obs.observe(&t(vec![1, 2], vec![-3., 3.])).unwrap();
        assert_eq!(obs.state().min_val, vec![-2., 2.]);
        assert_eq!(obs.state().max_val, vec![-2., 2.]);
    }

    #[test]
    fn constructor_refusals() {
        let err = |p| PerChannelObserver::new(&params(p)).unwrap_err().to_string();
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
        let err =
            PerChannelObserver::moving_average(&params(json!({"qscheme": "per_tensor_affine"})))
                .unwrap_err()
                .to_string();
        assert!(err.contains("MovingAveragePerChannelMinMaxObserver's qscheme"));
    }
}
