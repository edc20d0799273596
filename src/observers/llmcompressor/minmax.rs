//! `minmax` (`MinMaxObserver`, llm-compressor 0.14.0.1 `observers/min_max.py`): a moving
//! average of every batch's per-qparam `amin`/`amax`,
//!
//! `v ← v·(1 − c) + v_batch·c` (float32, `1 − c` and `c` rounded from double),
//!
//! initialised by the first batch; `c = 1` keeps the last batch. Then `calculate_qparams`. The
//! pipeline's default for activations; on weights it is replaced by `memoryless_minmax`, and a
//! weight is observed once anyway.

use super::args::{BaseName, QuantArgsFields};
use super::calibration::{self, Calibration, Target};
use super::flatten::flatten_for_calibration;
use super::stats::Stats;
use crate::error::Result;
use crate::observer::{Granularity, ObserverKind, ObserverState, QParams};
use crate::tensor::Tensor;

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

/// The configuration of `minmax`.
#[derive(Debug, Clone, PartialEq)]
pub struct MinMaxConfig {
    pub target: Target,
    pub averaging_constant: f64,
}

/// llm-compressor's `minmax` observer.
pub struct MinMax;

impl ObserverKind for MinMax {
    type Args = MinMaxArgs;
    type Config = MinMaxConfig;
    type State = Calibration;

    fn resolve(args: &MinMaxArgs, _: &[String]) -> Result<MinMaxConfig> {
        Ok(MinMaxConfig {
            target: Target {
                base: args.base_name,
                args: args.quant.validate()?,
            },
            averaging_constant: args.averaging_constant,
        })
    }

    fn init(_: &MinMaxConfig) -> Calibration {
        Calibration::default()
    }

    fn observe(state: &mut Calibration, cfg: &MinMaxConfig, batch: &Tensor) -> Result<()> {
        if state.skips(&cfg.target, batch) {
            return Ok(());
        }
        let flat = flatten_for_calibration(batch, cfg.target.base, &cfg.target.args)?;
        let new = Stats::of(&flat)?;
        let stats = match &state.stats {
            Some(old) if cfg.averaging_constant != 1.0 => old.lerp(&new, cfg.averaging_constant)?,
            _ => new,
        };
        state.set(stats, &batch.shape);
        Ok(())
    }

    fn qparams(state: &Calibration, cfg: &MinMaxConfig) -> Result<QParams> {
        calibration::qparams(state, &cfg.target)
    }

    fn fake_quantize(cfg: &MinMaxConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        calibration::fake_quantize(&cfg.target, x, q)
    }

    fn granularity(cfg: &MinMaxConfig) -> Option<Granularity> {
        Some(cfg.target.granularity())
    }

    fn plot(state: &Calibration) -> ObserverState {
        state.plot()
    }
}
