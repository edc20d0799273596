//! `memoryless_mse` (`MemorylessMSEObserver`, llm-compressor 0.14.0.1 `observers/mse.py`):
//! every batch's statistics are the range found by the CPU grid search
//! ([`grid_search`](super::grid_search), `_grid_search_mse`):
//!
//! `p_i = 1 − i/grid`, `i < int(maxshrink·grid)`, candidate `[p_i·min, p_i·max]` of the
//! expanded raw range, scored per qparam by `Σ |fake_quant(x) − x|^norm` with **norm 2.4** by
//! default (not 2), the first strictly smaller error winning, stopped after `patience`
//! consecutive steps in which no qparam improved.
//!
//! Defaults: maxshrink 0.2, grid 100, patience 5, norm 2.4, expand 1 (`expand < 1` raises).

use super::args::{BaseName, SearchedQuantArgsFields};
use super::calibration::{self, Calibration, SearchReport, Target};
use super::flatten::flatten_for_calibration;
use super::grid_search::{grid_search, Schedule, SearchSettings};
use crate::error::{Error, Result, Stage};
use crate::observer::{Granularity, ObserverKind, ObserverState, QParams};
use crate::observers::torch::config::py_float_repr;
use crate::tensor::Tensor;

crate::declare_params! {
    /// The observer kwargs of the MSE search (`observer_kwargs`), llm-compressor's defaults.
    pub struct MseKwargs {
        /// largest shrink of the range tried: int(maxshrink·grid) candidates
        maxshrink: f64 = 0.2; float(0.0, 1.0), Data;
        /// stop after this many consecutive candidates in which no qparam improved
        patience: i64 = 5; int(0, 10000), Data;
        /// resolution of the shrink factors p = 1 − i/grid
        grid: f64 = 100.0; float(0.0, 1000.0), Data;
        /// exponent of the error Σ|x̂ − x|^norm (2.4 by default)
        norm: f64 = 2.4; float(0.0, 16.0), Data;
        /// factor applied to the raw range before searching (at least 1)
        expand: f64 = 1.0; float(0.0, 10.0), Data;
    }
}

crate::declare_params! {
    /// Arguments of `memoryless_mse`: `base_name`, the `QuantizationArgs` fields and the search's
    /// observer kwargs.
    pub struct MemorylessMseArgs {
        /// observed tensor: a Linear weight [out, in] (observed once) or an activation [batch, seq, hidden]
        base_name: BaseName = BaseName::Weight; choice(), Data;
    }
    include { quant: SearchedQuantArgsFields, search: MseKwargs }
}

/// The configuration of an MSE observer.
#[derive(Debug, Clone, PartialEq)]
pub struct MseConfig {
    pub target: Target,
    pub settings: SearchSettings,
}

impl MseKwargs {
    /// `MemorylessMSEObserver.__init__`: `expand < 1` raises.
    pub fn settings(&self) -> Result<SearchSettings> {
        if self.expand < 1.0 {
            return Err(Error::framework(
                "ValueError",
                format!(
                    "expand value must be at least 1.0, got {}",
                    py_float_repr(self.expand)
                ),
                Stage::Init,
            ));
        }
        Ok(SearchSettings {
            maxshrink: self.maxshrink,
            patience: self.patience,
            grid: self.grid,
            norm: self.norm,
            expand: self.expand,
        })
    }
}

/// One batch through the MSE search; returns the searched statistics (None when skipped).
pub fn search_batch(
    state: &Calibration,
    cfg: &MseConfig,
    batch: &Tensor,
) -> Result<Option<(super::stats::Stats, SearchReport)>> {
    if state.skips(&cfg.target, batch) {
        return Ok(None);
    }
    let flat = flatten_for_calibration(batch, cfg.target.base, &cfg.target.args)?;
    let outcome = grid_search(&flat, &cfg.target.args, &cfg.settings, Schedule::Mse, None)?;
    Ok(Some((
        outcome.stats,
        SearchReport {
            selected_step: outcome.selected_step,
            steps_evaluated: outcome.steps_evaluated,
            total_steps: outcome.total_steps,
            importance_used: None,
            warning: None,
        },
    )))
}

/// llm-compressor's `memoryless_mse` observer.
pub struct MemorylessMse;

impl ObserverKind for MemorylessMse {
    type Args = MemorylessMseArgs;
    type Config = MseConfig;
    type State = Calibration;

    fn resolve(args: &MemorylessMseArgs, _: &[String]) -> Result<MseConfig> {
        let target = Target {
            base: args.base_name,
            args: args.quant.validate()?,
        };
        Ok(MseConfig {
            target,
            settings: args.search.settings()?,
        })
    }

    fn init(_: &MseConfig) -> Calibration {
        Calibration::default()
    }

    fn observe(state: &mut Calibration, cfg: &MseConfig, batch: &Tensor) -> Result<()> {
        if let Some((stats, report)) = search_batch(state, cfg, batch)? {
            state.set(stats, &batch.shape);
            state.search = Some(report);
        }
        Ok(())
    }

    fn qparams(state: &Calibration, cfg: &MseConfig) -> Result<QParams> {
        calibration::qparams(state, &cfg.target)
    }

    fn fake_quantize(cfg: &MseConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        calibration::fake_quantize(&cfg.target, x, q)
    }

    fn granularity(cfg: &MseConfig) -> Option<Granularity> {
        Some(cfg.target.granularity())
    }

    fn plot(state: &Calibration) -> ObserverState {
        state.plot()
    }
}
