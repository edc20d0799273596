//! `static_minmax` (`StaticMinMaxObserver`, llm-compressor 0.14.0.1 `observers/min_max.py`):
//! the element-wise running extrema of every batch's per-qparam `amin`/`amax`,
//!
//! `min_vals ← torch.min(amin(flat), min_vals)`, `max_vals ← torch.max(amax(flat), max_vals)`,
//!
//! (torch broadcasting: statistics of different shapes raise), then `calculate_qparams`. The
//! FP8 scheme's static activation observer; on weights the pipeline replaces it by
//! `memoryless_minmax`, and a weight is observed once anyway.

use super::args::{BaseName, QuantArgsFields};
use super::calibration::{self, Calibration, Target};
use super::flatten::flatten_for_calibration;
use super::stats::Stats;
use crate::error::Result;
use crate::observer::{Granularity, ObserverKind, ObserverState, QParams};
use crate::tensor::Tensor;

crate::declare_params! {
    /// Arguments of `static_minmax`: `base_name` and the `QuantizationArgs` fields.
    pub struct StaticMinMaxArgs {
        /// observed tensor: an activation [batch, seq, hidden] or a Linear weight [out, in] (observed once)
        base_name: BaseName = BaseName::Input; choice(), Data;
    }
    include { quant: QuantArgsFields }
}

/// llm-compressor's `static_minmax` observer.
pub struct StaticMinMax;

impl ObserverKind for StaticMinMax {
    type Args = StaticMinMaxArgs;
    type Config = Target;
    type State = Calibration;

    fn resolve(args: &StaticMinMaxArgs, _: &[String]) -> Result<Target> {
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
        let new = Stats::of(&flat)?;
        let stats = match &state.stats {
            Some(old) => old.running_extrema(&new)?,
            None => new,
        };
        state.set(stats, &batch.shape);
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
