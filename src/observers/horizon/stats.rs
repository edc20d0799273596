//! `ClipStdObserver` and `NormObserver` (per tensor): ranges from moments or norms of the
//! batch, then the moving average.
//!
//! * **ClipStd:** `cur = (max(mn, μ − k·σ), min(mx, μ + k·σ))` with `μ = x.mean()` (float32) and
//!   `σ = x.std()` (unbiased; PyTorch sums the squared deviations from the float32 mean in
//!   float64). One element gives σ = NaN, which propagates.
//! * **Norm:** `max = ‖|x|‖_p` reduced over **dim 0 only**, `min = −max`. A 2-d `[rows, cols]`
//!   batch therefore yields one range per column, so this "per-tensor" observer returns `cols`
//!   scales — Horizon's behaviour, kept. The norm follows PyTorch's float32 kernels.

use super::base::{self, MinMaxState, QuantConfig};
use super::torch_ops::sum_f32;
use crate::error::Result;
use crate::observer::legacy::{Observer, Retune};
use crate::observer::{ObserverState, QParams};
use crate::params::Params;
use crate::tensor::Tensor;

/// What a [`MomentObserver`] computes per batch.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// `ClipStdObserver(std_scale)`.
    ClipStd(f32),
    /// `NormObserver(norm)`.
    Norm(f64),
}

/// Horizon's `ClipStdObserver` or `NormObserver`.
#[derive(Debug, Clone)]
pub struct MomentObserver {
    params: Params,
    quant: QuantConfig,
    averaging_constant: f32,
    kind: Kind,
    state: MinMaxState,
    /// Shape of the last batch (Norm's scales follow its trailing dimensions).
    last_shape: Vec<usize>,
}

impl MomentObserver {
    /// `ClipStdObserver(std_scale=3.0, averaging_constant=0.01, …)`.
    pub fn clip_std(params: &Params) -> Result<Self> {
        let (scheme, quant, c) = base::base_from_params(params)?;
        let k = params.f64_or("std_scale", 3.0)?;
        base::ensure(k > 0.0, "std_scale should be greated than 0.")?;
        base::ensure(
            scheme == base::Scheme::PerTensor,
            "ClipStdObserver only support per_tensor_symmetric qscheme.",
        )?;
        Ok(Self::with(params, quant, c, Kind::ClipStd(k as f32)))
    }

    /// `NormObserver(norm=2.0, averaging_constant=0.01, …)`.
    pub fn norm(params: &Params) -> Result<Self> {
        let (scheme, quant, c) = base::base_from_params(params)?;
        let p = params.f64_or("norm", 2.0)?;
        base::ensure(p > 0.0, "norm should be greated than 0.")?;
        base::ensure(
            scheme == base::Scheme::PerTensor,
            "Norm observer only support per_tensor_symmetric qscheme.",
        )?;
        Ok(Self::with(params, quant, c, Kind::Norm(p)))
    }

    fn with(params: &Params, quant: QuantConfig, c: f32, kind: Kind) -> Self {
        MomentObserver {
            params: params.clone(),
            quant,
            averaging_constant: c,
            kind,
            state: MinMaxState::default(),
            last_shape: Vec::new(),
        }
    }

    fn rebuild(&self, params: &Params) -> Result<Self> {
        match self.kind {
            Kind::ClipStd(_) => Self::clip_std(params),
            Kind::Norm(_) => Self::norm(params),
        }
    }
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

impl Observer for MomentObserver {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let (lo, hi) = match self.kind {
            Kind::ClipStd(k) => {
                let (lo, hi) = clip_std_range(&batch.data, k);
                (vec![lo], vec![hi])
            }
            Kind::Norm(p) => {
                let hi = norm_dim0(batch, p);
                (hi.iter().map(|v| -v).collect(), hi)
            }
        };
        self.state.update(lo, hi, self.averaging_constant)?;
        self.last_shape = batch.shape.clone();
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let mut q = self.state.qparams(&self.quant, None);
        if q.scale.len() > 1 {
            // Norm's per-column scales: on a 2-d tensor they run along the last axis.
            if self.last_shape.len() == 2 && self.last_shape[1] == q.scale.len() {
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

    fn reset(&mut self) {
        self.state = MinMaxState::default();
        self.last_shape.clear();
    }

    fn state(&self) -> ObserverState {
        ObserverState {
            min_val: self.state.min_val.clone(),
            max_val: self.state.max_val.clone(),
            histogram: None,
        }
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        base::fake_quantize(x, q, self.quant.round_mode)
    }

    /// dtype, range, round mode and power-of-two only enter `calculate_qparams`.
    fn retune(&mut self, params: &Params) -> Result<Retune> {
        let merged = self.params.merged(params);
        let fresh = self.rebuild(&merged)?;
        if fresh.kind != self.kind || fresh.averaging_constant != self.averaging_constant {
            return Ok(Retune::NeedsData);
        }
        self.quant = fresh.quant;
        self.params = merged;
        Ok(Retune::Applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_std_clamps_outliers_to_k_sigma() {
        let mut v = vec![0.0f32; 99];
        for (i, x) in v.iter_mut().enumerate() {
            *x = if i % 2 == 0 { 1.0 } else { -1.0 };
        }
        v.push(50.0);
        let mut o = MomentObserver::clip_std(&Params::new()).unwrap();
        o.observe(&Tensor::from_vec(v.clone())).unwrap();
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
        let mut o = MomentObserver::clip_std(&Params::new()).unwrap();
        o.observe(&Tensor::from_vec(vec![2.0])).unwrap();
        assert!(o.qparams().unwrap().scale[0].is_nan());
    }

    #[test]
    fn norm_reduces_over_dim_zero_only() {
        let mut o = MomentObserver::norm(&Params::new()).unwrap();
        let x = Tensor::new(vec![2, 3], vec![3.0, 0.0, -1.0, 4.0, 2.0, 0.0]).unwrap();
        o.observe(&x).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.max_val, vec![5.0, 2.0, 1.0]);
        assert_eq!(q.min_val, vec![-5.0, -2.0, -1.0]);
        assert_eq!(q.scale.len(), 3);
        assert_eq!(q.axis, Some(1));
        let dq = o.fake_quantize(&x, &q).unwrap();
        assert_eq!(dq.data.len(), 6);
        let mut l1 = MomentObserver::norm(&Params::new().with("norm", 1.0)).unwrap();
        l1.observe(&Tensor::from_vec(vec![1.0, -2.0, 3.0])).unwrap();
        assert_eq!(l1.qparams().unwrap().max_val, vec![6.0]);
    }

    #[test]
    fn non_positive_arguments_are_refused() {
        assert!(MomentObserver::norm(&Params::new().with("norm", 0.0)).is_err());
        let e = MomentObserver::clip_std(&Params::new().with("std_scale", 0.0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "AssertionError: std_scale should be greated than 0."
        );
    }
}
