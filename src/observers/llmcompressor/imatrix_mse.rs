//! `imatrix_mse` (`IMatrixMSEObserver`, llm-compressor 0.14.0.1 `observers/imatrix.py`): the
//! grid search of [`grid_search`](super::grid_search) with imatrix's schedule, its error
//! weighted by per-input-channel importance:
//!
//! `err = Σ |fake_quant(w) − w|^norm · ŵ_col`, `ŵ = imp / (mean(imp) + finfo(float32).tiny)`,
//!
//! where `imp = E[x²]` of the layer's input per input channel — the value the observer's
//! forward-pre hook accumulates (`_imatrix_sum / _imatrix_count`), passed here as the
//! `importance` vector (a tensor or `.npy` of `in_features` values).
//!
//! Candidates `p = 1 − i/grid` for `i = 0 … max(1, int(maxshrink·grid))` (the end point
//! included), patience only when positive. Defaults: maxshrink 0.95, grid 20, patience 5,
//! **norm 3**. Weights only, CHANNEL/GROUP/TENSOR_GROUP only: an activation, the TENSOR
//! strategy, no importance, negative or all-zero values or a length other than the weight's
//! columns fall back to the unweighted search (with `strict`, they raise in `forward`).

use super::args::{BaseName, QuantArgs, SearchedQuantArgsFields, Strategy};
use super::calibration::{self, Calibration, SearchReport, Target};
use super::flatten::{flatten_for_calibration, Flattened};
use super::grid_search::{grid_search, Schedule, SearchSettings};
use crate::error::{Error, Result, Stage};
use crate::kernels::torch::reduce::sum_dims;
use crate::observer::{Granularity, ObserverKind, ObserverState, QParams};
use crate::observers::torch::config::py_float_repr;
use crate::params::Choice;
use crate::tensor::Tensor;

crate::declare_params! {
    /// The observer kwargs of `imatrix_mse`, llm-compressor's defaults.
    pub struct IMatrixKwargs {
        /// largest shrink tried: max(1, int(maxshrink·grid)) + 1 candidates
        maxshrink: f64 = 0.95; float(0.0, 1.0), Data;
        /// stop after this many consecutive candidates without improvement (0: never)
        patience: i64 = 5; int(0, 10000), Data;
        /// resolution of the shrink factors p = 1 − i/grid
        grid: f64 = 20.0; float(0.0, 1000.0), Data;
        /// exponent of the weighted error Σ|ŵ − w|^norm·importance
        norm: f64 = 3.0; float(0.0, 16.0), Data;
        /// raise instead of falling back to the unweighted search
        strict: bool = false; boolean(), Data;
        /// factor applied to the raw range before searching
        expand: f64 = 1.0; float(0.0, 10.0), Data;
        /// E[x²] of the layer input per input channel (in_features values; a tensor or .npy)
        importance: Option<Vec<f64>> = None; vector(), Data;
    }
}

crate::declare_params! {
    /// Arguments of `imatrix_mse`: `base_name`, the `QuantizationArgs` fields and its kwargs.
    pub struct IMatrixMseArgs {
        /// observed tensor: a Linear weight [out, in] (activations fall back to the plain search)
        base_name: BaseName = BaseName::Weight; choice(), Data;
    }
    include { quant: SearchedQuantArgsFields, kwargs: IMatrixKwargs }
}

/// The configuration of an imatrix observer.
#[derive(Debug, Clone, PartialEq)]
pub struct IMatrixConfig {
    pub target: Target,
    pub settings: SearchSettings,
    pub strict: bool,
    pub importance: Option<Vec<f32>>,
}

fn init_error(message: String) -> Error {
    Error::framework("ValueError", message, Stage::Init)
}

impl IMatrixKwargs {
    /// `IMatrixMSEObserver.__init__`'s checks, then the configuration.
    pub fn config(&self, target: Target) -> Result<IMatrixConfig> {
        if self.grid <= 0.0 {
            return Err(init_error(format!(
                "grid must be > 0, got {}",
                py_float_repr(self.grid)
            )));
        }
        if self.patience < 0 {
            return Err(init_error(format!(
                "patience must be >= 0, got {}",
                self.patience
            )));
        }
        if !(0.0..=1.0).contains(&self.maxshrink) {
            return Err(init_error(format!(
                "maxshrink must be in [0, 1], got {}",
                py_float_repr(self.maxshrink)
            )));
        }
        if !self.norm.is_finite() || self.norm <= 0.0 {
            return Err(init_error(format!(
                "norm must be a finite positive number, got {}",
                py_float_repr(self.norm)
            )));
        }
        Ok(IMatrixConfig {
            target,
            settings: SearchSettings {
                maxshrink: self.maxshrink,
                patience: self.patience,
                grid: self.grid,
                norm: self.norm,
                expand: self.expand,
            },
            strict: self.strict,
            importance: self
                .importance
                .as_ref()
                .map(|v| v.iter().map(|&x| x as f32).collect()),
        })
    }
}

/// The importance the search uses, or the fallback the library logs (an error with
/// `strict`): `_get_validated_importance`.
fn validated_importance<'a>(
    cfg: &'a IMatrixConfig,
    flat: &Flattened<'_>,
) -> Result<std::result::Result<&'a [f32], String>> {
    let fallback = |message: String, strict_kind: &str| -> Result<_> {
        if cfg.strict {
            Err(Error::framework(strict_kind, message, Stage::Forward))
        } else {
            Ok(Err(message))
        }
    };
    let args: &QuantArgs = &cfg.target.args;
    if cfg.target.base != BaseName::Weight {
        return fallback(
            "imatrix_mse: only supported for weight observers".into(),
            "NotImplementedError",
        );
    }
    if args.strategy == Strategy::Tensor {
        return fallback(
            "imatrix_mse: TENSOR strategy not supported".into(),
            "NotImplementedError",
        );
    }
    let Some(imp) = cfg.importance.as_deref() else {
        return fallback(
            "imatrix_mse: no importance data available".into(),
            "ValueError",
        );
    };
    if imp.iter().any(|v| !v.is_finite()) {
        return fallback(
            "imatrix_mse: contains non-finite values".into(),
            "ValueError",
        );
    }
    if imp.iter().any(|&v| v < 0.0) {
        return fallback("imatrix_mse: contains negative values".into(), "ValueError");
    }
    if imp.iter().all(|&v| v == 0.0) {
        return fallback("imatrix_mse: all zeros".into(), "ValueError");
    }
    let s = &flat.shape;
    let expected = match args.strategy {
        Strategy::Channel => s.last().copied(),
        Strategy::Group | Strategy::TensorGroup if s.len() >= 4 => Some(s[2] * s[3]),
        _ => None,
    };
    let Some(expected) = expected else {
        return fallback(
            format!("imatrix_mse: unsupported strategy {}", args.strategy.name()),
            "NotImplementedError",
        );
    };
    if imp.len() != expected {
        return fallback(
            format!(
                "imatrix_mse: size mismatch: expected {expected}, got {}",
                imp.len()
            ),
            "ValueError",
        );
    }
    Ok(Ok(imp))
}

/// `_prepare_importance`: `imp / (mean(imp) + tiny)`, one weight per flattened element (the
/// weight's column).
fn element_weights(imp: &[f32], batch: &Tensor) -> Result<Vec<f32>> {
    if batch.ndim() != 2 {
        return Err(Error::input(format!(
            "imatrix_mse weighs a Linear weight [out_features, in_features]; this batch has shape {:?}",
            batch.shape
        )));
    }
    let mean = sum_dims(imp, &[imp.len()], &[0])[0] / imp.len() as f32;
    let denominator = mean + f32::MIN_POSITIVE;
    let normalised: Vec<f32> = imp.iter().map(|v| v / denominator).collect();
    let cols = batch.shape[1];
    Ok((0..batch.len()).map(|j| normalised[j % cols]).collect())
}

/// One batch through the importance-weighted search.
pub fn observe_imatrix(state: &mut Calibration, cfg: &IMatrixConfig, batch: &Tensor) -> Result<()> {
    if state.skips(&cfg.target, batch) {
        return Ok(());
    }
    let flat = flatten_for_calibration(batch, cfg.target.base, &cfg.target.args)?;
    let (weights, warning) = match validated_importance(cfg, &flat)? {
        Ok(imp) => (Some(element_weights(imp, batch)?), None),
        Err(message) => (
            None,
            Some(format!("{message}. Falling back to uniform MSE.")),
        ),
    };
    let outcome = grid_search(
        &flat,
        &cfg.target.args,
        &cfg.settings,
        Schedule::IMatrix,
        weights.as_deref(),
    )?;
    state.set(outcome.stats, &batch.shape);
    state.search = Some(SearchReport {
        selected_step: outcome.selected_step,
        steps_evaluated: outcome.steps_evaluated,
        total_steps: outcome.total_steps,
        importance_used: Some(weights.is_some()),
        warning,
    });
    Ok(())
}

/// llm-compressor's `imatrix_mse` observer.
pub struct IMatrixMse;

impl ObserverKind for IMatrixMse {
    type Args = IMatrixMseArgs;
    type Config = IMatrixConfig;
    type State = Calibration;

    fn resolve(args: &IMatrixMseArgs, _: &[String]) -> Result<IMatrixConfig> {
        let target = Target {
            base: args.base_name,
            args: args.quant.validate()?,
        };
        args.kwargs.config(target)
    }

    fn init(_: &IMatrixConfig) -> Calibration {
        Calibration::default()
    }

    fn observe(state: &mut Calibration, cfg: &IMatrixConfig, batch: &Tensor) -> Result<()> {
        observe_imatrix(state, cfg, batch)
    }

    fn qparams(state: &Calibration, cfg: &IMatrixConfig) -> Result<QParams> {
        calibration::qparams(state, &cfg.target)
    }

    fn fake_quantize(cfg: &IMatrixConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        calibration::fake_quantize(&cfg.target, x, q)
    }

    fn granularity(cfg: &IMatrixConfig) -> Option<Granularity> {
        Some(cfg.target.granularity())
    }

    fn plot(state: &Calibration) -> ObserverState {
        state.plot()
    }
}
