//! `ClipStdObserver` and `NormObserver` (per tensor): ranges from moments or norms of the
//! batch, then the moving average.
//!
//! * **ClipStd:** `cur = (max(mn, μ − k·σ), min(mx, μ + k·σ))` with `μ = x.mean()` (float32) and
//!   `σ = x.std()` (unbiased; PyTorch sums the squared deviations from the float32 mean in
//!   float64). One element gives σ = NaN, which propagates.
//! * **Norm:** `max = ‖|x|‖_p` reduced over **dim 0 only**, `min = −max`. A 2-d `[rows, cols]`
//!   batch therefore yields one range per column, so this "per-tensor" observer returns `cols`
//!   scales — Horizon's behaviour, kept. The norm follows PyTorch's float32 kernels.

use super::base::{self, plot_state, MinMaxState};
use super::config::{ensure, BaseConfig, PerTensorBaseArgs};
use crate::error::Result;
use crate::kernels::torch::sum_f32;
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
use crate::tensor::Tensor;

crate::declare_params! {
    /// Arguments of `ClipStdObserver`.
    pub struct ClipStdArgs {
        /// how many standard deviations around the mean to keep
        std_scale: f64 = 3.0; float(0.0, 100.0), Data;
    }
    include { base: PerTensorBaseArgs }
}

crate::declare_params! {
    /// Arguments of `NormObserver`.
    pub struct NormArgs {
        /// the order p of the norm
        norm: f64 = 2.0; float(0.0, 100.0), Data;
    }
    include { base: PerTensorBaseArgs }
}

/// The configuration of a `ClipStdObserver`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClipStdConfig {
    pub base: BaseConfig,
    /// `std_scale` as float32 (it multiplies a float32 tensor).
    pub std_scale: f32,
}

/// The configuration of a `NormObserver`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NormConfig {
    pub base: BaseConfig,
    /// The order `p`.
    pub norm: f64,
}

/// The moving average of a `NormObserver`, and the shape of the last batch (its scales follow
/// that batch's trailing dimensions).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NormState {
    pub stats: MinMaxState,
    pub last_shape: Vec<usize>,
}

/// `(max(mn, μ − k·σ), min(mx, μ + k·σ))` with PyTorch's `maximum`/`minimum` (NaN wins).
fn clip_std_range(data: &[f32], k: f32) -> (f32, f32) {
    let (mn, mx) = base::min_max(data);
    let n = data.len();
    let mean = sum_f32(data) / n as f32;
    let m = mean as f64;
    let sum_dx2: f64 = data
        .iter()
        .map(|&v| {
            let d = v as f64 - m;
            d * d
        })
        .sum();
    let std = (sum_dx2 / (n as f64 - 1.0).max(0.0)).sqrt() as f32;
    let lo = mean - k * std;
    let hi = mean + k * std;
    let maximum = |a: f32, b: f32| {
        if a.is_nan() || b.is_nan() {
            f32::NAN
        } else {
            a.max(b)
        }
    };
    let minimum = |a: f32, b: f32| {
        if a.is_nan() || b.is_nan() {
            f32::NAN
        } else {
            a.min(b)
        }
    };
    (maximum(mn, lo), minimum(mx, hi))
}

/// `torch.linalg.norm(|x|, ord = p, dim = 0)` in float32, flattened: one value per trailing
/// position. As PyTorch's CPU kernels do it: a 2-norm over a single contiguous run goes through
/// the vectorised path (8 lanes of squares, then the lanes, then the tail); every other
/// case accumulates each output sequentially over dim 0 (`acc + |x|^p`, then `acc^(1/p)`).
fn norm_dim0(x: &Tensor, p: f64) -> Vec<f32> {
    let cols: usize = x.shape.iter().skip(1).product();
    let cols = cols.max(1);
    let pf = p as f32;
    if p == 2.0 && cols == 1 {
        let data = &x.data;
        let full = data.len() / 8 * 8;
        let mut lanes = [0.0f32; 8];
        for chunk in data[..full].chunks_exact(8) {
            for (lane, &v) in lanes.iter_mut().zip(chunk) {
                let v = v.abs();
                *lane += v * v;
            }
        }
        let mut acc = lanes[0];
        for &lane in &lanes[1..] {
            acc += lane;
        }
        for &v in &data[full..] {
            let v = v.abs();
            acc += v * v;
        }
        return vec![acc.sqrt()];
    }
    let mut acc = vec![0.0f32; cols];
    for row in x.data.chunks_exact(cols) {
        for (a, &v) in acc.iter_mut().zip(row) {
            let v = v.abs();
            *a += if p == 2.0 {
                v * v
            } else if p == 1.0 {
                v
            } else {
                v.powf(pf)
            };
        }
    }
    acc.into_iter()
        .map(|s| {
            if p == 2.0 {
                s.sqrt()
            } else if p == 1.0 {
                s
            } else {
                s.powf(1.0 / pf)
            }
        })
        .collect()
}

/// Horizon's `ClipStdObserver(std_scale=3.0, averaging_constant=0.01, …)`.
pub struct ClipStd;

impl ObserverKind for ClipStd {
    type Args = ClipStdArgs;
    type Config = ClipStdConfig;
    type State = MinMaxState;

    /// `ObserverBase.__init__`, then `std_scale > 0`, then the per-tensor scheme.
    fn resolve(args: &ClipStdArgs, _unknown: &[String]) -> Result<ClipStdConfig> {
        let base = BaseConfig::resolve(&args.base.base())?;
        ensure(args.std_scale > 0.0, "std_scale should be greated than 0.")?;
        base.require_per_tensor("ClipStdObserver only support per_tensor_symmetric qscheme.")?;
        Ok(ClipStdConfig {
            base,
            std_scale: args.std_scale as f32,
        })
    }

    fn init(_: &ClipStdConfig) -> MinMaxState {
        MinMaxState::default()
    }

    fn feed(state: &mut MinMaxState, cfg: &ClipStdConfig, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let (lo, hi) = clip_std_range(&batch.data, cfg.std_scale);
        state.update(vec![lo], vec![hi], cfg.base.averaging_constant)
    }

    fn qparams(state: &MinMaxState, cfg: &ClipStdConfig) -> Result<QParams> {
        Ok(state.qparams(&cfg.base.quant, None))
    }

    scale_quanti_qdq!(base.quant);

    fn plot(state: &MinMaxState) -> PlotSnapshot {
        plot_state(state, None)
    }
}

/// Horizon's `NormObserver(norm=2.0, averaging_constant=0.01, …)`.
pub struct Norm;

impl ObserverKind for Norm {
    type Args = NormArgs;
    type Config = NormConfig;
    type State = NormState;

    /// `ObserverBase.__init__`, then `norm > 0`, then the per-tensor scheme.
    fn resolve(args: &NormArgs, _unknown: &[String]) -> Result<NormConfig> {
        let base = BaseConfig::resolve(&args.base.base())?;
        ensure(args.norm > 0.0, "norm should be greated than 0.")?;
        base.require_per_tensor("Norm observer only support per_tensor_symmetric qscheme.")?;
        Ok(NormConfig {
            base,
            norm: args.norm,
        })
    }

    fn init(_: &NormConfig) -> NormState {
        NormState::default()
    }

    fn feed(state: &mut NormState, cfg: &NormConfig, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let hi = norm_dim0(batch, cfg.norm);
        let lo = hi.iter().map(|v| -v).collect();
        state.stats.update(lo, hi, cfg.base.averaging_constant)?;
        state.last_shape = batch.shape.clone();
        Ok(())
    }

    fn qparams(state: &NormState, cfg: &NormConfig) -> Result<QParams> {
        let mut q = state.stats.qparams(&cfg.base.quant, None);
        if q.scale.len() > 1 {
            // Per-column scales: on a 2-d tensor they run along the last axis.
            if state.last_shape.len() == 2 && state.last_shape[1] == q.scale.len() {
                q.axis = Some(1);
            }
            q.notes.push(format!(
                "NormObserver reduces over dim 0 only: this per-tensor observer returns {} scales, \
                 one per position of the trailing dimensions.",
                q.scale.len()
            ));
        }
        Ok(q)
    }

    scale_quanti_qdq!(base.quant);

    fn plot(state: &NormState) -> PlotSnapshot {
        plot_state(&state.stats, None)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::instance;
    use crate::tensor::Tensor;

    #[test]
    fn clip_std_clamps_outliers_to_k_sigma() {
        let mut v = vec![0.0f32; 99];
        for (i, x) in v.iter_mut().enumerate() {
            *x = if i % 2 == 0 { 1.0 } else { -1.0 };
        }
        v.push(50.0);
        let mut o = instance("horizon.ClipStdObserver", "{}").unwrap();
        o.feed(&Tensor::from_vec(v.clone())).unwrap();
        let q = o.qparams().unwrap();
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / 100.0;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / 99.0;
        let hi = mean + 3.0 * var.sqrt();
        assert!(
            (q.max_val[0] as f64 - hi).abs() < 1e-5,
            "{} vs {hi}",
            q.max_val[0]
        );
        assert_eq!(q.min_val, vec![-1.0]);
    }

    #[test]
    fn single_element_std_is_nan() {
        let mut o = instance("horizon.ClipStdObserver", "{}").unwrap();
        o.feed(&Tensor::from_vec(vec![2.0])).unwrap();
        assert!(o.qparams().unwrap().scale[0].is_nan());
    }

    #[test]
    fn norm_reduces_over_dim_zero_only() {
        let mut o = instance("horizon.NormObserver", "{}").unwrap();
        let x = Tensor::new(vec![2, 3], vec![3.0, 0.0, -1.0, 4.0, 2.0, 0.0]).unwrap();
        o.feed(&x).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.max_val, vec![5.0, 2.0, 1.0]);
        assert_eq!(q.min_val, vec![-5.0, -2.0, -1.0]);
        assert_eq!(q.scale.len(), 3);
        assert_eq!(q.axis, Some(1));
        let dq = o.fake_quantize(&x, &q).unwrap();
        assert_eq!(dq.data.len(), 6);
        let mut l1 = instance("horizon.NormObserver", r#"{"norm": 1.0}"#).unwrap();
        l1.feed(&Tensor::from_vec(vec![1.0, -2.0, 3.0])).unwrap();
        assert_eq!(l1.qparams().unwrap().max_val, vec![6.0]);
    }

    #[test]
    fn non_positive_arguments_are_refused() {
        let e = instance("horizon.NormObserver", r#"{"norm": 0.0}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "AssertionError: norm should be greated than 0."
        );
        let e = instance("horizon.ClipStdObserver", r#"{"std_scale": 0.0}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "AssertionError: std_scale should be greated than 0."
        );
    }
}
