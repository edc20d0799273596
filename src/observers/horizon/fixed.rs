//! `FixedScaleObserver`: ignores the data and returns the configured scale and zero point
//! (`scale` as float32, `zero_point` truncated to an integer as `torch.tensor(zp, dtype=long)`
//! does). It keeps no min/max.

use super::base::{self, QuantConfig};
use crate::error::Result;
use crate::observer::legacy::{Observer, Retune};
use crate::observer::{ObserverState, QParams, ZeroPoint};
use crate::params::Params;
use crate::tensor::Tensor;

/// Horizon's `FixedScaleObserver`.
#[derive(Debug, Clone)]
pub struct FixedScaleObserver {
    params: Params,
    quant: QuantConfig,
    scale: f32,
    zero_point: i64,
}

impl FixedScaleObserver {
    /// `FixedScaleObserver(scale=1, zero_point=0, …)`.
    pub fn new(params: &Params) -> Result<Self> {
        let scale = params.f64_or("scale", 1.0)?;
        base::ensure(scale > 0.0, "scale must bigger than 0")?;
        let zero_point = params.f64_or("zero_point", 0.0)?;
        let (_, quant, _) = base::base_from_params(params)?;
        Ok(FixedScaleObserver {
            params: params.clone(),
            quant,
            scale: scale as f32,
            zero_point: zero_point.trunc() as i64,
        })
    }
}

impl Observer for FixedScaleObserver {
    fn observe(&mut self, _batch: &Tensor) -> Result<()> {
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        Ok(QParams::int(
            vec![self.scale],
            ZeroPoint::Int(vec![self.zero_point]),
            self.quant.quant_min,
            self.quant.quant_max,
            Vec::new(),
            Vec::new(),
        ))
    }

    fn reset(&mut self) {}

    fn state(&self) -> ObserverState {
        ObserverState::default()
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        base::fake_quantize(x, q, self.quant.round_mode)
    }

    /// Nothing depends on the data: every parameter applies at once.
    fn retune(&mut self, params: &Params) -> Result<Retune> {
        let merged = self.params.merged(params);
        *self = Self::new(&merged)?;
        Ok(Retune::Applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_configured_scale_and_truncated_zero_point() {
        let mut o =
            FixedScaleObserver::new(&Params::new().with("scale", 0.5).with("zero_point", 3.7))
                .unwrap();
        o.observe(&Tensor::from_vec(vec![100.0])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.scale, vec![0.5]);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![3]));
        assert!(q.min_val.is_empty());
        let dq = o
            .fake_quantize(&Tensor::from_vec(vec![1.25, 100.0]), &q)
            .unwrap();
        // 1.25/0.5 = 2.5 → 2 (ties to even) → (2 + 3 − 3)·0.5; 100 clamps at 127 − 3.
        assert_eq!(dq.data, vec![1.0, 62.0]);
    }

    #[test]
    fn zero_scale_is_refused() {
        let e = FixedScaleObserver::new(&Params::new().with("scale", 0.0)).unwrap_err();
        assert_eq!(e.to_string(), "AssertionError: scale must bigger than 0");
    }
}
