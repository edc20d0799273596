//! Quark's `PerBlockMXObserver` (OCP MX: fp8/fp6/fp4 elements, one E8M0 scale per block).
//!
//! `reshape_to_blocks(x, group_size, ch_axis)` (blocks along `ch_axis`, rows zero-padded), then
//! `amax = max|x|` per block; static: running max (a change of block count restarts it),
//! dynamic: last batch. Scale (`get_scale`, `scale_format="e8m0"`): `even`/`floor`/`ceil` of
//! [`crate::formats::e8m0`] with the element's mantissa bits and `emax` (floor/ceil zero blocks
//! get ε); `scale_format="float32"`: `amax / element max` (ε where 0). Zero points are 0.
//! Quantize–dequantize: `q(x / s)·s` per block, [`super::kernels`].

use super::build_qparams;
use super::kernels::{forward_block_layout, scaled_fake_quantize};
use super::qparams::{nan_max, EPS};
use super::spec::{QuarkSpec, ScaleFormat, SpecDefaults};
use crate::error::{Error, Result, Stage};
use crate::formats::e8m0;
use crate::formats::ElementFormat;
use crate::observer::legacy::Observer;
use crate::observer::{ObserverState, QParams, ZeroPoint};
use crate::params::Params;
use crate::tensor::Tensor;

/// `PerBlockMXObserver`.
#[derive(Debug, Clone)]
pub struct PerBlockMx {
    spec: QuarkSpec,
    element: ElementFormat,
    amax: Vec<f32>,
    /// (axis, block size) of the last batch.
    layout: Option<(usize, usize)>,
}

impl PerBlockMx {
    /// Build from parameters.
    pub fn new(defaults: &SpecDefaults, params: &Params) -> Result<Self> {
        let spec = defaults.parse(params)?;
        let element = spec
            .dtype
            .element()
            .ok_or_else(|| Error::framework("AssertionError", "", Stage::Init))?;
        if spec.group_size.is_none_or(|g| g < 1) {
            return Err(Error::param(
                "group_size",
                "PerBlockMXObserver needs a positive block size",
            ));
        }
        Ok(PerBlockMx {
            spec,
            element,
            amax: Vec::new(),
            layout: None,
        })
    }

    /// Scale of a block with `amax` under the spec's `scale_format` and rounding mode.
    fn scale_of(&self, amax: f32) -> f32 {
        let s = match self.spec.scale_format {
            Some(ScaleFormat::Float32) | None => {
                let a = self.spec.scale_type.cast(amax);
                let s = self.spec.scale_type.cast(a / self.element.max());
                if s == 0.0 {
                    EPS
                } else {
                    s
                }
            }
            Some(ScaleFormat::E8m0) => {
                let s = e8m0::shared_scale(
                    amax,
                    self.element.mantissa_bits(),
                    self.element.emax(),
                    self.spec.scale_calculation_mode,
                );
                if s == 0.0 && self.spec.scale_calculation_mode != e8m0::ScaleRounding::Even {
                    EPS
                } else {
                    s
                }
            }
        };
        self.spec.scale_type.cast(s)
    }
}

impl Observer for PerBlockMx {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        let layout = forward_block_layout(&self.spec, batch)?;
        let amax = layout.block_amax(&batch.data);
        if self.spec.is_dynamic || self.amax.len() != amax.len() {
            self.amax = amax;
        } else {
            for (a, b) in self.amax.iter_mut().zip(amax) {
                *a = nan_max(*a, b);
            }
        }
        self.layout = Some((layout.axis(), layout.block_size()));
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let (amax, layout) = match self.layout {
            Some(l) => (self.amax.clone(), Some(l)),
            None => (vec![0.0], None),
        };
        let scale: Vec<f32> = amax.iter().map(|&a| self.scale_of(a)).collect();
        let n = scale.len();
        let mut q = build_qparams(
            &self.spec,
            (scale, ZeroPoint::Float(vec![0.0; n])),
            Vec::new(),
            Vec::new(),
        );
        q.amax = Some(amax);
        q.grid = crate::observer::Grid::Float {
            format: format!("mx{}", self.element.name()),
            max: self.element.max() as f64,
        };
        if let Some((axis, block)) = layout {
            q.extra.insert("block_axis".into(), axis.into());
            q.extra.insert("block_size".into(), block.into());
        }
        q.extra.insert(
            "scale_calculation_mode".into(),
            self.spec.scale_calculation_mode.name().into(),
        );
        Ok(q)
    }

    fn reset(&mut self) {
        self.amax.clear();
        self.layout = None;
    }

    fn state(&self) -> ObserverState {
        ObserverState::default()
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        scaled_fake_quantize(&self.spec, x, &q.scale, &q.zero_point)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::pow2;

    fn defaults() -> SpecDefaults {
        SpecDefaults {
            dtypes: super::super::spec::MX_DTYPES,
            dtype: "fp4",
            qschemes: &["per_group"],
            qscheme: "per_group",
            symmetric: None,
            ch_axis: Some(-1),
            group_size: Some(2),
            is_dynamic: false,
            scale_format: Some("e8m0"),
        }
    }

    #[test]
    fn static_amax_runs_and_scales_follow_the_mode() {
        let mut o = PerBlockMx::new(&defaults(), &Params::new()).unwrap();
        o.observe(&Tensor::new(vec![1, 4], vec![1.0, -3.0, 0.0, 0.0]).unwrap())
            .unwrap();
        o.observe(&Tensor::new(vec![1, 4], vec![0.5, 0.5, 7.0, 0.0]).unwrap())
            .unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.amax, Some(vec![3.0, 7.0]));
        // even: 3 = 1.5·2 stays → 2^(1−2); 7 = 1.75·4 carries → 2^(3−2).
        assert_eq!(q.scale, vec![0.5, 2.0]);
        assert_eq!(q.extra["block_size"], 2);
        let ceil = PerBlockMx::new(
            &defaults(),
            &Params::new().with("scale_calculation_mode", "ceil"),
        )
        .unwrap();
        assert_eq!(ceil.scale_of(3.0), 1.0);
        assert_eq!(ceil.scale_of(0.0), EPS);
        let even_zero = PerBlockMx::new(&defaults(), &Params::new()).unwrap();
        assert_eq!(even_zero.scale_of(0.0), pow2(-127));
        let y = o
            .fake_quantize(
                &Tensor::new(vec![1, 4], vec![1.3, -3.0, 5.0, 9.0]).unwrap(),
                &q,
            )
            .unwrap();
        assert_eq!(y.data, vec![1.5, -3.0, 4.0, 8.0]);
    }
}
