//! `nvfp4_expanded_mse` (`NVFP4ExpandedMSEObserver`, llm-compressor 0.14.0.1
//! `observers/mse.py`) and its deprecated alias `fouroversix`: `memoryless_mse` with defaults
//! tuned for NVFP4 range expansion — the search starts at `expand = 1.8` times the raw range
//! and shrinks it down to `(1 − maxshrink)·1.8 ≈ 0.8` times:
//!
//! `p_i = 1 − i/200`, `i < int((1 − 0.8/1.8)·200) = 111`, candidate `1.8·p_i·[min, max]`,
//! patience 1000 (never stops early), norm 2.4.
//!
//! For TENSOR_GROUP the candidates are scored without FP8 rounding of the scales and without
//! the global scale; `get_qparams` then applies both.

use super::args::{BaseName, SearchedQuantArgsFields};
use super::calibration::{self, Calibration, Target};
use super::memoryless_mse::{search_batch, MseConfig, MseKwargs};
use crate::error::Result;
use crate::observer::{Granularity, ObserverKind, ObserverState, QParams};
use crate::tensor::Tensor;

crate::declare_params! {
    /// The observer kwargs of `nvfp4_expanded_mse`, with the class's own defaults.
    pub struct NvFp4MseKwargs {
        /// largest shrink tried, relative to the expanded range (1 − 0.8/1.8)
        maxshrink: f64 = 1.0 - 0.8 / 1.8; float(0.0, 1.0), Data;
        /// stop after this many consecutive candidates without improvement
        patience: i64 = 1000; int(0, 10000), Data;
        /// resolution of the shrink factors p = 1 − i/grid
        grid: f64 = 200.0; float(0.0, 1000.0), Data;
        /// exponent of the error Σ|x̂ − x|^norm
        norm: f64 = 2.4; float(0.0, 16.0), Data;
        /// factor applied to the raw range before searching (at least 1)
        expand: f64 = 1.8; float(0.0, 10.0), Data;
    }
}

crate::declare_params! {
    /// Arguments of `nvfp4_expanded_mse`: `base_name`, the `QuantizationArgs` fields (pass
    /// NVFP4's: float, 4 bits, tensor_group, group_size 16, scale_dtype float8_e4m3fn) and the
    /// search's kwargs.
    pub struct NvFp4MseArgs {
        /// observed tensor: a Linear weight [out, in] (observed once)
        base_name: BaseName = BaseName::Weight; choice(), Data;
    }
    include { quant: SearchedQuantArgsFields, search: NvFp4MseKwargs }
}

fn resolve(args: &NvFp4MseArgs) -> Result<MseConfig> {
    let target = Target {
        base: args.base_name,
        args: args.quant.validate()?,
    };
    let k = &args.search;
    let settings = MseKwargs {
        maxshrink: k.maxshrink,
        patience: k.patience,
        grid: k.grid,
        norm: k.norm,
        expand: k.expand,
    }
    .settings()?;
    Ok(MseConfig { target, settings })
}

fn observe(state: &mut Calibration, cfg: &MseConfig, batch: &Tensor) -> Result<()> {
    if let Some((stats, report)) = search_batch(state, cfg, batch)? {
        state.set(stats, &batch.shape);
        state.search = Some(report);
    }
    Ok(())
}

/// llm-compressor's `nvfp4_expanded_mse` observer.
pub struct NvFp4ExpandedMse;

impl ObserverKind for NvFp4ExpandedMse {
    type Args = NvFp4MseArgs;
    type Config = MseConfig;
    type State = Calibration;

    fn resolve(args: &NvFp4MseArgs, _: &[String]) -> Result<MseConfig> {
        resolve(args)
    }

    fn init(_: &MseConfig) -> Calibration {
        Calibration::default()
    }

    fn observe(state: &mut Calibration, cfg: &MseConfig, batch: &Tensor) -> Result<()> {
        observe(state, cfg, batch)
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

/// `fouroversix`: a deprecated alias that warns and returns an `nvfp4_expanded_mse`.
pub struct FourOverSix;

/// The `UserWarning` the alias emits.
pub const FOUROVERSIX_WARNING: &str = "The 'fouroversix' observer is an alias for 'nvfp4_expanded_mse', which our results showed to be more accurate at taking advantage of the same range expansion benefit.";

impl ObserverKind for FourOverSix {
    type Args = NvFp4MseArgs;
    type Config = MseConfig;
    type State = Calibration;

    fn resolve(args: &NvFp4MseArgs, _: &[String]) -> Result<MseConfig> {
        resolve(args)
    }

    fn init(_: &MseConfig) -> Calibration {
        Calibration::default()
    }

    fn observe(state: &mut Calibration, cfg: &MseConfig, batch: &Tensor) -> Result<()> {
        observe(state, cfg, batch)
    }

    fn qparams(state: &Calibration, cfg: &MseConfig) -> Result<QParams> {
        let mut q = calibration::qparams(state, &cfg.target)?;
        q.notes.push(format!("UserWarning: {FOUROVERSIX_WARNING}"));
        Ok(q)
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
