//! The MSE observers of llm-compressor 0.14.0.1 (`observers/mse.py`): every batch's statistics
//! are the range found by the CPU grid search ([`grid_search`](super::grid_search),
//! `_grid_search_mse`):
//!
//! `p_i = 1 − i/grid`, `i < int(maxshrink·grid)`, candidate `[p_i·min, p_i·max]` of the
//! expanded raw range `expand·[amin, amax]`, scored per qparam by `Σ |fake_quant(x) − x|^norm`
//! with **norm 2.4** by default (not 2), the first strictly smaller error winning, stopped after
//! `patience` consecutive steps in which no qparam improved (`expand < 1` raises).
//!
//! * `memoryless_mse` (`MemorylessMSEObserver`): the last batch's search; maxshrink 0.2,
//!   grid 100, patience 5, expand 1;
//! * `mse` (`MovingAverageMSEObserver`): the searched ranges averaged over batches like
//!   `minmax`, `v ← v·(1 − c) + v_searched·c` (float32; the first batch initialises, `c = 1`
//!   keeps the last); the pipeline replaces it by `memoryless_mse` on weights;
//! * `nvfp4_expanded_mse` (`NVFP4ExpandedMSEObserver`): `memoryless_mse` with defaults tuned for
//!   NVFP4 range expansion — the search starts at `expand = 1.8` times the raw range and shrinks
//!   it down to `(1 − maxshrink)·1.8 ≈ 0.8` times: `p_i = 1 − i/200`,
//!   `i < int((1 − 0.8/1.8)·200) = 111`, candidate `1.8·p_i·[min, max]`, patience 1000 (never
//!   stops early);
//! * `fouroversix`: a deprecated alias that warns and returns an `nvfp4_expanded_mse`.
//!
//! For TENSOR_GROUP the candidates are scored without FP8 rounding of the scales and without
//! the global scale; `get_qparams` then applies both.

use super::args::{BaseName, SearchedQuantArgsFields};
use super::calibration::{Calibration, Target};
use super::grid_search::{calibrate_by_search, Schedule, SearchSettings, Weighting};
use super::kind::{Calibrate, CompressorClass};
use super::stats::Combine;
use crate::error::{Error, Result, Stage};
use crate::observers::torch::config::py_float_repr;
use crate::tensor::Tensor;

/// Observer kwargs that configure a grid search.
pub trait SearchKwargs {
    /// The constructor's checks, then the search's settings.
    fn settings(&self) -> Result<SearchSettings>;
}

/// Declares the observer kwargs of an MSE search class (`observer_kwargs`) with the class's own
/// defaults; the constructor refuses `expand < 1`.
macro_rules! mse_kwargs {
    (
        $(#[$meta:meta])*
        $name:ident { maxshrink: $maxshrink:expr, patience: $patience:expr, grid: $grid:expr, expand: $expand:expr $(,)? }
    ) => {
        crate::declare_params! {
            $(#[$meta])*
            pub struct $name {
                /// largest shrink of the (expanded) range tried: int(maxshrink·grid) candidates
                maxshrink: f64 = $maxshrink; float(0.0, 1.0), Data;
                /// stop after this many consecutive candidates in which no qparam improved
                patience: i64 = $patience; int(0, 10000), Data;
                /// resolution of the shrink factors p = 1 − i/grid
                grid: f64 = $grid; float(0.0, 1000.0), Data;
                /// exponent of the error Σ|x̂ − x|^norm (2.4 by default)
                norm: f64 = 2.4; float(0.0, 16.0), Data;
                /// factor applied to the raw range before searching (at least 1)
                expand: f64 = $expand; float(0.0, 10.0), Data;
            }
        }

        impl SearchKwargs for $name {
            /// `MemorylessMSEObserver.__init__`: `expand < 1` raises.
            fn settings(&self) -> Result<SearchSettings> {
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
    };
}

mse_kwargs! {
    /// The observer kwargs of `memoryless_mse` and `mse`, llm-compressor's defaults.
    MseKwargs { maxshrink: 0.2, patience: 5, grid: 100.0, expand: 1.0 }
}

mse_kwargs! {
    /// The observer kwargs of `nvfp4_expanded_mse`: the search runs from 1.8× the range down to
    /// 0.8× (maxshrink 1 − 0.8/1.8) and never stops early.
    NvFp4MseKwargs { maxshrink: 1.0 - 0.8 / 1.8, patience: 1000, grid: 200.0, expand: 1.8 }
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

crate::declare_params! {
    /// Arguments of `nvfp4_expanded_mse` and `fouroversix`: `base_name`, the `QuantizationArgs`
    /// fields (pass NVFP4's: float, 4 bits, tensor_group, group_size 16, scale_dtype
    /// float8_e4m3fn) and the search's kwargs.
    pub struct NvFp4MseArgs {
        /// observed tensor: a Linear weight [out, in] (observed once)
        base_name: BaseName = BaseName::Weight; choice(), Data;
    }
    include { quant: SearchedQuantArgsFields, search: NvFp4MseKwargs }
}

/// The configuration of an MSE observer.
#[derive(Debug, Clone, PartialEq)]
pub struct MseConfig {
    pub target: Target,
    pub settings: SearchSettings,
    pub combine: Combine,
}

impl MseConfig {
    fn new(
        base: BaseName,
        quant: &SearchedQuantArgsFields,
        search: &impl SearchKwargs,
        combine: Combine,
    ) -> Result<MseConfig> {
        let args = quant.validate()?;
        Ok(MseConfig {
            target: Target { base, args },
            settings: search.settings()?,
            combine,
        })
    }
}

impl Calibrate for MseConfig {
    fn target(&self) -> &Target {
        &self.target
    }

    fn calibrate(&self, state: &mut Calibration, batch: &Tensor) -> Result<()> {
        let search = (&self.target, &self.settings);
        calibrate_by_search(state, batch, search, (Schedule::Mse, self.combine), |_| {
            Ok(Weighting::default())
        })
    }
}

/// `memoryless_mse`: the last batch's searched range.
pub struct Memoryless;

impl CompressorClass for Memoryless {
    type Args = MemorylessMseArgs;
    type Config = MseConfig;
    fn resolve(args: &MemorylessMseArgs) -> Result<MseConfig> {
        MseConfig::new(args.base_name, &args.quant, &args.search, Combine::Last)
    }
}

/// `mse`: a moving average of the searched ranges.
pub struct MovingAverage;

impl CompressorClass for MovingAverage {
    type Args = MseArgs;
    type Config = MseConfig;
    fn resolve(args: &MseArgs) -> Result<MseConfig> {
        let combine = Combine::MovingAverage(args.averaging_constant);
        MseConfig::new(args.base_name, &args.quant, &args.search, combine)
    }
}

/// `nvfp4_expanded_mse`: the search over NVFP4's expanded range.
pub struct NvFp4Expanded;

impl CompressorClass for NvFp4Expanded {
    type Args = NvFp4MseArgs;
    type Config = MseConfig;
    fn resolve(args: &NvFp4MseArgs) -> Result<MseConfig> {
        MseConfig::new(args.base_name, &args.quant, &args.search, Combine::Last)
    }
}

/// `fouroversix`: a deprecated alias that warns and returns an `nvfp4_expanded_mse`.
pub struct FourOverSix;

/// The `UserWarning` the alias emits.
pub const FOUROVERSIX_WARNING: &str = "The 'fouroversix' observer is an alias for 'nvfp4_expanded_mse', which our results showed to be more accurate at taking advantage of the same range expansion benefit.";

impl CompressorClass for FourOverSix {
    type Args = NvFp4MseArgs;
    type Config = MseConfig;
    const WARNING: Option<&'static str> = Some(FOUROVERSIX_WARNING);
    fn resolve(args: &NvFp4MseArgs) -> Result<MseConfig> {
        NvFp4Expanded::resolve(args)
    }
}
