//! Quark's `PerBlockBFPObserver` (block floating point with int8 mantissas).
//!
//! Per batch: blocks of `group_size` along `ch_axis` (NaN/±inf read as 0), `amax` per block —
//! static: running max, dynamic: this batch. The step is `2^(⌊log2 amax⌋ − 6)` (ε for a zero
//! block); if this batch has a value whose mantissa rounds to ≥ 128 (or < −128) with that step,
//! the block's (running) `amax` is **doubled** — in every batch where it happens
//! ([`crate::formats::bfp`]). qparams recompute the step from the adjusted `amax`; zero points
//! are int32 zeros. Quantize–dequantize: int8 per group (−128..127).
//!
//! The overflow check runs in `forward` with the scale cast to `scale_type`, so `scale_type` is
//! a data parameter, with `ch_axis`, `group_size` and `is_dynamic`.

use super::build_qparams;
use super::config::quark_params;
use super::dtype::BfpDtype;
use super::kernels::{forward_block_layout, require_block_size, scaled_fake_quantize};
use super::qparams::nan_max;
use super::spec::{PerGroupScheme, QuarkConfig};
use crate::derivation::Step;
use crate::error::{Error, Result, Stage};
use crate::formats::bfp::BFP16;
use crate::observer::{ObserverKind, PlotSnapshot, QParams, ZeroPoint};
use crate::qdq::QdqKernel;
use crate::tensor::Tensor;

quark_params! {
    /// The configuration `PerBlockBFPObserver` reads (blocks of 8 along the last axis).
    pub struct PerBlockBfpArgs {
        dtype: BfpDtype = BfpDtype::Int8, Search;
        qscheme: PerGroupScheme = PerGroupScheme::PerGroup;
        symmetric: Some(true), Search;
        ch_axis: -1, Data;
        group_size: 8, Data;
        scale_type: Data;
        is_dynamic: false, Data;
        scale_format: None;
    }
}

/// What `PerBlockBFPObserver` collects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BfpState {
    /// Per-block `max|x|`, doubled in every batch in which the block overflows.
    pub amax: Vec<f32>,
    /// `(axis, block size)` of the last batch.
    pub layout: Option<(usize, usize)>,
    /// How many times a block's `amax` was doubled.
    pub adjusted_blocks: usize,
}

/// The shared step of a block with `amax` (`2^(⌊log2 amax⌋ − 6)`, ε for 0), cast to the scale
/// type.
fn scale_of(spec: &QuarkConfig, amax: f32) -> f32 {
    spec.scale_type.cast(BFP16.scale(amax))
}

/// `PerBlockBFPObserver`.
pub struct PerBlockBfp;

impl ObserverKind for PerBlockBfp {
    type Args = PerBlockBfpArgs;
    type Config = QuarkConfig;
    type State = BfpState;

    fn resolve(args: &PerBlockBfpArgs, _: &[String]) -> Result<QuarkConfig> {
        require_block_size("PerBlockBFPObserver", args.group_size)?;
        args.quark_config()
    }

    fn init(_: &QuarkConfig) -> BfpState {
        BfpState::default()
    }

    fn feed(state: &mut BfpState, spec: &QuarkConfig, batch: &Tensor) -> Result<()> {
        let layout = forward_block_layout(spec, batch)?;
        let clean: Vec<f32> = batch
            .data
            .iter()
            .map(|&v| if v.is_finite() { v } else { 0.0 })
            .collect();
        let amax = layout.block_amax(&clean);
        if spec.is_dynamic || state.amax.is_empty() {
            state.amax = amax;
        } else if state.amax.len() != amax.len() {
            return Err(Error::framework(
                "RuntimeError",
                format!(
                    "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension 1",
                    state.amax.len(),
                    amax.len()
                ),
                Stage::Forward,
            ));
        } else {
            for (a, b) in state.amax.iter_mut().zip(amax) {
                *a = nan_max(*a, b);
            }
        }
        let scales: Vec<f32> = state.amax.iter().map(|&a| scale_of(spec, a)).collect();
        for (a, over) in state
            .amax
            .iter_mut()
            .zip(BFP16.block_overflows(&layout, &clean, &scales))
        {
            if over {
                *a *= 2.0;
                state.adjusted_blocks += 1;
            }
        }
        state.layout = Some((layout.axis(), layout.block_size()));
        Ok(())
    }

    fn qparams(state: &BfpState, spec: &QuarkConfig) -> Result<QParams> {
        let amax = if state.amax.is_empty() {
            vec![0.0]
        } else {
            state.amax.clone()
        };
        let scale: Vec<f32> = amax.iter().map(|&a| scale_of(spec, a)).collect();
        let n = scale.len();
        let mut q = build_qparams(
            spec,
            (scale, ZeroPoint::Int(vec![0; n])),
            Vec::new(),
            Vec::new(),
            || {
                Step::new(
                    "One power-of-two scale per block",
                    "amax = max |x| over the block; s = 2^(floor(log2(amax)) − 6)",
                    "quark/torch/quantization/observer/observer.py:1035 (amd-quark 0.13)",
                )
                .value("blocks", amax.len())
            },
        );
        q.amax = Some(amax);
        if let Some((axis, block)) = state.layout {
            q.extra.insert("block_axis".into(), axis.into());
            q.extra.insert("block_size".into(), block.into());
        }
        q.extra
            .insert("adjusted_blocks".into(), state.adjusted_blocks.into());
        Ok(q)
    }

    /// Hand-written: no kernel fits some qparams (see [`super::qdq_kernel`]).
    fn fake_quantize(spec: &QuarkConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        scaled_fake_quantize(spec, x, &q.scale, &q.zero_point)
    }

    fn qdq_kernel(spec: &QuarkConfig, shape: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        super::qdq_kernel::per_group_kernel(spec, shape, q)
    }

    fn plot(_: &BfpState) -> PlotSnapshot {
        PlotSnapshot::default()
    }

    fn slice_count(spec: &QuarkConfig, shape: &[usize]) -> Option<usize> {
        super::kernels::block_count(spec, shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::pow2;
    use crate::observer::Instance;
    use crate::params::Params;
    use crate::registry;

    #[test]
    fn overflowing_blocks_double_their_running_amax() {
        let spec = registry::find("quark.PerBlockBFPObserver").unwrap();
        let mut o = Instance::new(spec, &Params::new().with("group_size", 2)).unwrap();
        // Block 0: 1.995 rounds to mantissa 128 with step 2^-6 → amax doubled to 3.99.
        o.feed(&Tensor::new(vec![1, 4], vec![1.995, 0.1, 1.0, f32::NAN]).unwrap())
            .unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.amax, Some(vec![3.99, 1.0]));
        assert_eq!(q.scale, vec![pow2(-5), pow2(-6)]);
        // Again in the next batch: the running amax doubles again.
        o.feed(&Tensor::new(vec![1, 4], vec![0.0, 0.0, 1.995, 0.0]).unwrap())
            .unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.amax, Some(vec![3.99, 3.99]));
        assert_eq!(q.extra["adjusted_blocks"], 2);
        assert_eq!(q.scale, vec![pow2(-5), pow2(-5)]);
    }
}
