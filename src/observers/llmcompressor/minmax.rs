//! The min-max observers of llm-compressor 0.14.0.1 (`observers/min_max.py`). Each batch,
//! laid out by [`flatten_for_calibration`](super::flatten), is reduced to one value per qparam
//! (tensor, output row, group, block, sequence position),
//!
//! `min_b = amin(flat, dims=(0, −1))`, `max_b = amax(flat, dims=(0, −1))`,
//!
//! and combined with what was collected before ([`Combine`]):
//!
//! * `memoryless_minmax` (`MemorylessMinMaxObserver`): the last batch's — the pipeline's default
//!   for weights, which it observes once;
//! * `static_minmax` (`StaticMinMaxObserver`): `min ← torch.min(min_b, min)`,
//!   `max ← torch.max(max_b, max)` (torch broadcasting: statistics of different shapes raise) —
//!   the FP8 scheme's static activation observer;
//! * `minmax` (`MinMaxObserver`): the moving average `v ← v·(1 − c) + v_b·c` (float32, `1 − c`
//!   and `c` rounded from double), initialised by the first batch; `c = 1` keeps the last —
//!   the pipeline's default for activations.
//!
//! Then compressed-tensors' `calculate_qparams` ([`super::qparams`]). On weights the pipeline
//! replaces the last two by `memoryless_minmax`, and a weight is observed once anyway.

use super::args::{BaseName, QuantArgsFields};
use super::calibration::{Calibration, Target};
use super::flatten::flatten_for_calibration;
use super::kind::{Calibrate, CompressorClass};
use super::stats::Combine;
use crate::error::Result;
use crate::observers::shaped_stats::ShapedStats;
use crate::tensor::Tensor;

crate::declare_params! {
    /// Arguments of `memoryless_minmax`: `base_name` and the `QuantizationArgs` fields.
    pub struct MemorylessMinMaxArgs {
        /// observed tensor: a Linear weight [out, in] (observed once) or an activation [batch, seq, hidden]
        base_name: BaseName = BaseName::Weight; choice(), Data;
    }
    include { quant: QuantArgsFields }
}

crate::declare_params! {
    /// Arguments of `static_minmax`: `base_name` and the `QuantizationArgs` fields.
    pub struct StaticMinMaxArgs {
        /// observed tensor: an activation [batch, seq, hidden] or a Linear weight [out, in] (observed once)
        base_name: BaseName = BaseName::Input; choice(), Data;
    }
    include { quant: QuantArgsFields }
}

crate::declare_params! {
    /// Arguments of `minmax`: `base_name`, the `QuantizationArgs` fields and its observer kwarg.
    pub struct MinMaxArgs {
        /// observed tensor: an activation [batch, seq, hidden] or a Linear weight [out, in] (observed once)
        base_name: BaseName = BaseName::Input; choice(), Data;
        /// weight c of the new batch: v ← v·(1 − c) + v_batch·c (observer_kwargs)
        averaging_constant: f64 = 0.01; float(0.0, 1.0), Data;
    }
    include { quant: QuantArgsFields }
}

/// The configuration of a min-max observer.
#[derive(Debug, Clone, PartialEq)]
pub struct MinMaxConfig {
    pub target: Target,
    pub combine: Combine,
}

impl MinMaxConfig {
    fn new(base: BaseName, quant: &QuantArgsFields, combine: Combine) -> Result<MinMaxConfig> {
        let args = quant.validate()?;
        Ok(MinMaxConfig {
            target: Target { base, args },
            combine,
        })
    }
}

impl Calibrate for MinMaxConfig {
    fn target(&self) -> &Target {
        &self.target
    }

    fn calibrate(&self, state: &mut Calibration, batch: &Tensor) -> Result<()> {
        let flat = flatten_for_calibration(batch, self.target.base, &self.target.args)?;
        state.record(self.combine, ShapedStats::of(&flat)?, &batch.shape)
    }
}

/// `memoryless_minmax`: the last batch's min/max.
pub struct Memoryless;

impl CompressorClass for Memoryless {
    type Args = MemorylessMinMaxArgs;
    type Config = MinMaxConfig;
    fn resolve(args: &MemorylessMinMaxArgs) -> Result<MinMaxConfig> {
        MinMaxConfig::new(args.base_name, &args.quant, Combine::Last)
    }
}

/// `static_minmax`: running extrema.
pub struct Static;

impl CompressorClass for Static {
    type Args = StaticMinMaxArgs;
    type Config = MinMaxConfig;
    fn resolve(args: &StaticMinMaxArgs) -> Result<MinMaxConfig> {
        MinMaxConfig::new(args.base_name, &args.quant, Combine::RunningExtrema)
    }
}

/// `minmax`: a moving average of the batches' min/max.
pub struct MovingAverage;

impl CompressorClass for MovingAverage {
    type Args = MinMaxArgs;
    type Config = MinMaxConfig;
    fn resolve(args: &MinMaxArgs) -> Result<MinMaxConfig> {
        let combine = Combine::MovingAverage(args.averaging_constant);
        MinMaxConfig::new(args.base_name, &args.quant, combine)
    }
}
