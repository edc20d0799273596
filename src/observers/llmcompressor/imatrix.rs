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
//!
//! `nvfp4_expanded_imatrix` (`NVFP4ExpandedIMatrixObserver`) is the same search over NVFP4's
//! expanded range — `expand = 1.8`, `maxshrink = 1 − 0.8/1.8`, `grid = 200` (candidates
//! `1.8·(1 − i/200)·[min, max]` for `i = 0 … 111`), patience 1000, norm 2.4.

use super::args::{BaseName, QuantArgs, SearchedQuantArgsFields, Strategy};
use super::calibration::{Calibration, Target};
use super::flatten::Flattened;
use super::grid_search::{calibrate_by_search, Schedule, SearchSettings, Weighting};
use super::kind::{Calibrate, CompressorClass};
use super::stats::Combine;
use crate::error::{Error, Result, Stage};
use crate::kernels::torch::reduce::sum_dims;
use crate::observers::torch::config::py_float_repr;
use crate::params::Choice;
use crate::tensor::Tensor;

/// Declares the observer kwargs of an imatrix class with the class's own defaults.
macro_rules! imatrix_kwargs {
    (
        $(#[$meta:meta])*
        $name:ident {
            maxshrink: $maxshrink:expr, patience: $patience:expr, grid: $grid:expr,
            norm: $norm:expr, expand: $expand:expr $(,)?
        }
    ) => {
        crate::declare_params! {
            $(#[$meta])*
            pub struct $name {
                /// largest shrink of the (expanded) range tried: max(1, int(maxshrink·grid)) + 1 candidates
                maxshrink: f64 = $maxshrink; float(0.0, 1.0), Data;
                /// stop after this many consecutive candidates without improvement (0: never)
                patience: i64 = $patience; int(0, 10000), Data;
                /// resolution of the shrink factors p = 1 − i/grid
                grid: f64 = $grid; float(0.0, 1000.0), Data;
                /// exponent of the weighted error Σ|ŵ − w|^norm·importance
                norm: f64 = $norm; float(0.0, 16.0), Data;
                /// raise instead of falling back to the unweighted search
                strict: bool = false; boolean(), Data;
                /// factor applied to the raw range before searching
                expand: f64 = $expand; float(0.0, 10.0), Data;
                /// the mean of x² of the layer input per input channel (in_features values; a tensor or .npy)
                importance: Option<Vec<f64>> = None; vector(), Data;
            }
        }

        impl $name {
            /// The configuration of observing `base` (see [`IMatrixConfig::new`]).
            fn config(&self, base: BaseName, quant: &SearchedQuantArgsFields) -> Result<IMatrixConfig> {
                let args = quant.validate()?;
                IMatrixConfig::new(
                    Target { base, args },
                    SearchSettings {
                        maxshrink: self.maxshrink,
                        patience: self.patience,
                        grid: self.grid,
                        norm: self.norm,
                        expand: self.expand,
                    },
                    self.strict,
                    self.importance.as_deref(),
                )
            }
        }
    };
}

imatrix_kwargs! {
    /// The observer kwargs of `imatrix_mse`, llm-compressor's defaults.
    IMatrixKwargs { maxshrink: 0.95, patience: 5, grid: 20.0, norm: 3.0, expand: 1.0 }
}

imatrix_kwargs! {
    /// The observer kwargs of `nvfp4_expanded_imatrix`: from 1.8× the range down to 0.8×
    /// (maxshrink 1 − 0.8/1.8), never stopping early, norm 2.4.
    NvFp4IMatrixKwargs { maxshrink: 1.0 - 0.8 / 1.8, patience: 1000, grid: 200.0, norm: 2.4, expand: 1.8 }
}

crate::declare_params! {
    /// Arguments of `imatrix_mse`: `base_name`, the `QuantizationArgs` fields and its kwargs.
    pub struct IMatrixMseArgs {
        /// observed tensor: a Linear weight [out, in] (activations fall back to the plain search)
        base_name: BaseName = BaseName::Weight; choice(), Data;
    }
    include { quant: SearchedQuantArgsFields, kwargs: IMatrixKwargs }
}

crate::declare_params! {
    /// Arguments of `nvfp4_expanded_imatrix`.
    pub struct NvFp4IMatrixArgs {
        /// observed tensor: a Linear weight [out, in]
        base_name: BaseName = BaseName::Weight; choice(), Data;
    }
    include { quant: SearchedQuantArgsFields, kwargs: NvFp4IMatrixKwargs }
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

impl IMatrixConfig {
    /// `IMatrixMSEObserver.__init__`'s checks, then the configuration.
    fn new(
        target: Target,
        settings: SearchSettings,
        strict: bool,
        importance: Option<&[f64]>,
    ) -> Result<IMatrixConfig> {
        if settings.grid <= 0.0 {
            return Err(init_error(format!(
                "grid must be > 0, got {}",
                py_float_repr(settings.grid)
            )));
        }
        if settings.patience < 0 {
            return Err(init_error(format!(
                "patience must be >= 0, got {}",
                settings.patience
            )));
        }
        if !(0.0..=1.0).contains(&settings.maxshrink) {
            return Err(init_error(format!(
                "maxshrink must be in [0, 1], got {}",
                py_float_repr(settings.maxshrink)
            )));
        }
        if !settings.norm.is_finite() || settings.norm <= 0.0 {
            return Err(init_error(format!(
                "norm must be a finite positive number, got {}",
                py_float_repr(settings.norm)
            )));
        }
        Ok(IMatrixConfig {
            target,
            settings,
            strict,
            importance: importance.map(|v| v.iter().map(|&x| x as f32).collect()),
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

/// `_prepare_importance`: `imp / (mean(imp) + tiny)`, one weight per column: flattened element
/// `j` weighs entry `j mod columns` (the repeating form
/// [`ErrorTerms::weights`](super::search_error::ErrorTerms::weights) takes).
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
    if normalised.len() != batch.shape[1] {
        return Err(Error::input(format!(
            "imatrix_mse: {} importances for a weight of {} columns",
            normalised.len(),
            batch.shape[1]
        )));
    }
    Ok(normalised)
}

impl Calibrate for IMatrixConfig {
    fn target(&self) -> &Target {
        &self.target
    }

    /// One batch through the importance-weighted search.
    fn calibrate(&self, state: &mut Calibration, batch: &Tensor) -> Result<()> {
        let search = (&self.target, &self.settings);
        calibrate_by_search(
            state,
            batch,
            search,
            (Schedule::IMatrix, Combine::Last),
            |flat| {
                Ok(match validated_importance(self, flat)? {
                    Ok(imp) => Weighting {
                        weights: Some(element_weights(imp, batch)?),
                        importance_used: Some(true),
                        warning: None,
                    },
                    Err(message) => Weighting {
                        weights: None,
                        importance_used: Some(false),
                        warning: Some(format!("{message}. Falling back to uniform MSE.")),
                    },
                })
            },
        )
    }
}

/// `imatrix_mse`: the importance-weighted search.
pub struct IMatrixMse;

impl CompressorClass for IMatrixMse {
    type Args = IMatrixMseArgs;
    type Config = IMatrixConfig;
    fn resolve(args: &IMatrixMseArgs) -> Result<IMatrixConfig> {
        args.kwargs.config(args.base_name, &args.quant)
    }
}

/// `nvfp4_expanded_imatrix`: the importance-weighted search over NVFP4's expanded range.
pub struct NvFp4Expanded;

impl CompressorClass for NvFp4Expanded {
    type Args = NvFp4IMatrixArgs;
    type Config = IMatrixConfig;
    fn resolve(args: &NvFp4IMatrixArgs) -> Result<IMatrixConfig> {
        args.kwargs.config(args.base_name, &args.quant)
    }
}
