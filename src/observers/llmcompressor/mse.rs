//! `mse` (`MovingAverageMSEObserver`, llm-compressor 0.14.0.1 `observers/mse.py`): the range
//! each batch's MSE grid search finds (as in [`memoryless_mse`](super::memoryless_mse)),
//! averaged over batches like `minmax`:
//!
//! `v ← v·(1 − c) + v_searched·c` (float32; the first batch initialises, `c = 1` keeps the
//! last).
//!
//! The pipeline replaces it by `memoryless_mse` on weights, which are observed once anyway.

use super::args::{BaseName, SearchedQuantArgsFields};
use super::calibration::{self, Calibration, Target};
use super::memoryless_mse::{search_batch, MseConfig, MseKwargs};
use crate::error::Result;
use crate::observer::{Granularity, ObserverKind, ObserverState, QParams};
use crate::tensor::Tensor;

crate::declare_params! {
    /// Arguments of `mse`: `base_name`, the `QuantizationArgs` fields and the observer kwargs.
    pub struct MseArgs {
        /// observed tensor: an activation [batch, seq, hidden] or a Linear weight [out, in] (observed once)
        base_name: BaseName = BaseName::Input; choice(), Data;
        /// weight c of the new batch's searched range: v ← v·(1 − c) + v_batch·c
        averaging_constant: f64 = 0.01; float(0.0, 1.0), Data;
    }
    include { quant: SearchedQuantArgsFields, search: MseKwargs }
}

/// The configuration of `mse`.
#[derive(Debug, Clone, PartialEq)]
pub struct MovingMseConfig {
    pub mse: MseConfig,
    pub averaging_constant: f64,
}

/// llm-compressor's `mse` observer.
pub struct MovingAverageMse;

impl ObserverKind for MovingAverageMse {
    type Args = MseArgs;
    type Config = MovingMseConfig;
    type State = Calibration;

    fn resolve(args: &MseArgs, _: &[String]) -> Result<MovingMseConfig> {
        let target = Target {
            base: args.base_name,
            args: args.quant.validate()?,
        };
        Ok(MovingMseConfig {
            mse: MseConfig {
                target,
                settings: args.search.settings()?,
            },
            averaging_constant: args.averaging_constant,
        })
    }

    fn init(_: &MovingMseConfig) -> Calibration {
        Calibration::default()
    }

    fn observe(state: &mut Calibration, cfg: &MovingMseConfig, batch: &Tensor) -> Result<()> {
        let Some((searched, report)) = search_batch(state, &cfg.mse, batch)? else {
            return Ok(());
        };
        let stats = match &state.stats {
            Some(old) if cfg.averaging_constant != 1.0 => {
                old.lerp(&searched, cfg.averaging_constant)?
            }
            _ => searched,
        };
        state.set(stats, &batch.shape);
        state.search = Some(report);
        Ok(())
    }

    fn qparams(state: &Calibration, cfg: &MovingMseConfig) -> Result<QParams> {
        calibration::qparams(state, &cfg.mse.target)
    }

    fn fake_quantize(cfg: &MovingMseConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        calibration::fake_quantize(&cfg.mse.target, x, q)
    }

    fn granularity(cfg: &MovingMseConfig) -> Option<Granularity> {
        Some(cfg.mse.target.granularity())
    }

    fn plot(state: &Calibration) -> ObserverState {
        state.plot()
    }
}
