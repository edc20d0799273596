//! `memoryless_minmax` (`MemorylessMinMaxObserver`, llm-compressor 0.14.0.1
//! `observers/min_max.py`): the statistics are the last observed batch's
//!
//! `min_vals = amin(flat, dims=(0, −1))`, `max_vals = amax(flat, dims=(0, −1))`
//!
//! of the batch laid out by [`flatten_for_calibration`](super::flatten) — one value per qparam
//! (tensor, output row, group, block, sequence position) — then compressed-tensors'
//! `calculate_qparams` ([`super::qparams`]). The pipeline's default for weights, which it
//! observes once.

use super::args::{BaseName, QuantArgsFields};
use super::calibration::{self, Calibration, Target};
use super::flatten::flatten_for_calibration;
use super::stats::Stats;
use crate::error::Result;
use crate::observer::{Granularity, ObserverKind, ObserverState, QParams};
use crate::tensor::Tensor;

crate::declare_params! {
    /// Arguments of `memoryless_minmax`: `base_name` and the `QuantizationArgs` fields.
    pub struct MemorylessMinMaxArgs {
        /// observed tensor: a Linear weight [out, in] (observed once) or an activation [batch, seq, hidden]
        base_name: BaseName = BaseName::Weight; choice(), Data;
    }
    include { quant: QuantArgsFields }
}

/// llm-compressor's `memoryless_minmax` observer.
pub struct MemorylessMinMax;

impl ObserverKind for MemorylessMinMax {
    type Args = MemorylessMinMaxArgs;
    type Config = Target;
    type State = Calibration;

    fn resolve(args: &MemorylessMinMaxArgs, _: &[String]) -> Result<Target> {
        Ok(Target {
            base: args.base_name,
            args: args.quant.validate()?,
        })
    }

    fn init(_: &Target) -> Calibration {
        Calibration::default()
    }

    fn observe(state: &mut Calibration, cfg: &Target, batch: &Tensor) -> Result<()> {
        if state.skips(cfg, batch) {
            return Ok(());
        }
        let flat = flatten_for_calibration(batch, cfg.base, &cfg.args)?;
        state.set(Stats::of(&flat)?, &batch.shape);
        Ok(())
    }

    fn qparams(state: &Calibration, cfg: &Target) -> Result<QParams> {
        calibration::qparams(state, cfg)
    }

    fn fake_quantize(cfg: &Target, x: &Tensor, q: &QParams) -> Result<Tensor> {
        calibration::fake_quantize(cfg, x, q)
    }

    fn granularity(cfg: &Target) -> Option<Granularity> {
        Some(cfg.granularity())
    }

    fn plot(state: &Calibration) -> ObserverState {
        state.plot()
    }
}
