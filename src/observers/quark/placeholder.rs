//! Quark's `PlaceholderObserver`: no statistics, no qparams (`_calculate_qparams` returns
//! `None`). It stands in front of float16/bfloat16 "quantization", which is a cast there and
//! back, so that is what [`Observer::fake_quantize`] does here.

use super::spec::{QuarkSpec, SpecDefaults};
use crate::error::Result;
use crate::observer::legacy::Observer;
use crate::observer::{Grid, ObserverState, QParams, ZeroPoint};
use crate::params::Params;
use crate::tensor::Tensor;

/// `PlaceholderObserver`.
#[derive(Debug, Clone)]
pub struct Placeholder {
    spec: QuarkSpec,
}

impl Placeholder {
    /// Build from parameters (`dtype` float16 or bfloat16).
    pub fn new(defaults: &SpecDefaults, params: &Params) -> Result<Self> {
        Ok(Placeholder {
            spec: defaults.parse(params)?,
        })
    }
}

impl Observer for Placeholder {
    fn observe(&mut self, _batch: &Tensor) -> Result<()> {
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let half = self.spec.dtype.half();
        let mut q = QParams::int(
            Vec::new(),
            ZeroPoint::Float(Vec::new()),
            0,
            0,
            Vec::new(),
            Vec::new(),
        );
        q.grid = Grid::Float {
            format: self.spec.dtype.name().to_string(),
            max: half.map_or(0.0, |h| h.max() as f64),
        };
        q.notes.push(
            "PlaceholderObserver has no qparams: the tensor is only cast to the dtype and back"
                .to_string(),
        );
        Ok(q)
    }

    fn reset(&mut self) {}

    fn state(&self) -> ObserverState {
        ObserverState::default()
    }

    fn fake_quantize(&self, x: &Tensor, _q: &QParams) -> Result<Tensor> {
        super::kernels::scaled_fake_quantize(&self.spec, x, &[], &ZeroPoint::Float(Vec::new()))
    }
}
