//! Quark's `PerBlockBFPObserver` (block floating point with int8 mantissas).
//!
//! Per batch: blocks of `group_size` along `ch_axis` (NaN/±inf read as 0), `amax` per block —
//! static: running max, dynamic: this batch. The step is `2^(⌊log2 amax⌋ − 6)` (ε for a zero
//! block); if this batch has a value whose mantissa rounds to ≥ 128 (or < −128) with that step,
//! the block's (running) `amax` is **doubled** — in every batch where it happens
//! ([`crate::formats::bfp`]). qparams recompute the step from the adjusted `amax`; zero points
//! are int32 zeros. Quantize–dequantize: int8 per group (−128..127).

use super::build_qparams;
use super::kernels::{forward_block_layout, scaled_fake_quantize};
use super::qparams::nan_max;
use super::spec::{QuarkSpec, SpecDefaults};
use crate::error::{Error, Result, Stage};
use crate::formats::bfp::BFP16;
use crate::observer::legacy::Observer;
use crate::observer::{ObserverState, QParams, ZeroPoint};
use crate::params::Params;
use crate::tensor::Tensor;

/// `PerBlockBFPObserver`.
#[derive(Debug, Clone)]
pub struct PerBlockBfp {
    spec: QuarkSpec,
    amax: Vec<f32>,
    layout: Option<(usize, usize)>,
    adjusted_blocks: usize,
}

impl PerBlockBfp {
    /// Build from parameters.
    pub fn new(defaults: &SpecDefaults, params: &Params) -> Result<Self> {
        let spec = defaults.parse(params)?;
        if spec.group_size.is_none_or(|g| g < 1) {
            return Err(Error::param(
                "group_size",
                "PerBlockBFPObserver needs a positive block size",
            ));
        }
        Ok(PerBlockBfp {
            spec,
            amax: Vec::new(),
            layout: None,
            adjusted_blocks: 0,
        })
    }

    fn scale_of(&self, amax: f32) -> f32 {
        self.spec.scale_type.cast(BFP16.scale(amax))
    }
}

impl Observer for PerBlockBfp {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        let layout = forward_block_layout(&self.spec, batch)?;
        let clean: Vec<f32> = batch
            .data
            .iter()
            .map(|&v| if v.is_finite() { v } else { 0.0 })
            .collect();
        let amax = layout.block_amax(&clean);
        if self.spec.is_dynamic || self.amax.is_empty() {
            self.amax = amax;
        } else if self.amax.len() != amax.len() {
            return Err(Error::framework(
                "RuntimeError",
                format!(
                    "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension 1",
                    self.amax.len(),
                    amax.len()
                ),
                Stage::Forward,
            ));
        } else {
            for (a, b) in self.amax.iter_mut().zip(amax) {
                *a = nan_max(*a, b);
            }
        }
        let scales: Vec<f32> = self.amax.iter().map(|&a| self.scale_of(a)).collect();
        for (a, over) in self
            .amax
            .iter_mut()
            .zip(BFP16.block_overflows(&layout, &clean, &scales))
        {
            if over {
                *a *= 2.0;
                self.adjusted_blocks += 1;
            }
        }
        self.layout = Some((layout.axis(), layout.block_size()));
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let amax = if self.amax.is_empty() {
            vec![0.0]
        } else {
            self.amax.clone()
        };
        let scale: Vec<f32> = amax.iter().map(|&a| self.scale_of(a)).collect();
        let n = scale.len();
        let mut q = build_qparams(
            &self.spec,
            (scale, ZeroPoint::Int(vec![0; n])),
            Vec::new(),
            Vec::new(),
        );
        q.amax = Some(amax);
        if let Some((axis, block)) = self.layout {
            q.extra.insert("block_axis".into(), axis.into());
            q.extra.insert("block_size".into(), block.into());
        }
        q.extra
            .insert("adjusted_blocks".into(), self.adjusted_blocks.into());
        Ok(q)
    }

    fn reset(&mut self) {
        self.amax.clear();
        self.layout = None;
        self.adjusted_blocks = 0;
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

    #[test]
    fn overflowing_blocks_double_their_running_amax() {
        let d = SpecDefaults {
            dtypes: super::super::spec::BFP_DTYPES,
            dtype: "int8",
            qschemes: &["per_group"],
            qscheme: "per_group",
            symmetric: Some(true),
            ch_axis: Some(-1),
            group_size: Some(2),
            is_dynamic: false,
            scale_format: None,
        };
        let mut o = PerBlockBfp::new(&d, &Params::new()).unwrap();
        // Block 0: 1.995 rounds to mantissa 128 with step 2^-6 → amax doubled to 3.99.
        o.observe(&Tensor::new(vec![1, 4], vec![1.995, 0.1, 1.0, f32::NAN]).unwrap())
            .unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.amax, Some(vec![3.99, 1.0]));
        assert_eq!(q.scale, vec![pow2(-5), pow2(-6)]);
        // Again in the next batch: the running amax doubles again.
        o.observe(&Tensor::new(vec![1, 4], vec![0.0, 0.0, 1.995, 0.0]).unwrap())
            .unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.amax, Some(vec![3.99, 3.99]));
        assert_eq!(q.extra["adjusted_blocks"], 2);
        assert_eq!(q.scale, vec![pow2(-5), pow2(-5)]);
    }
}
