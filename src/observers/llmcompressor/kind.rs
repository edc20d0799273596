//! The one [`ObserverKind`] of every llm-compressor observer, generic over its class.
//!
//! llm-compressor's observers differ only in their constructor arguments and in how
//! `Observer.forward` turns a batch into `min_vals`/`max_vals` (a min-max reduction, the MSE
//! grid search or imatrix's weighted search, kept as the last batch, running extrema or a moving
//! average). Everything else is `observers/base.py` and compressed-tensors, shared by all:
//! the early returns of `forward` ([`Calibration::skips`]), `get_qparams()`
//! ([`calibration::qparams`]), the library's fake quantization ([`calibration::fake_quantize`])
//! and the granularity the strategy decides ([`Target::granularity`]).

use super::calibration::{self, Calibration, Target};
use crate::error::Result;
use crate::observer::{Granularity, ObserverKind, PlotSnapshot, QParams};
use crate::params::ParamSet;
use crate::tensor::Tensor;
use std::fmt::Debug;
use std::marker::PhantomData;

/// A resolved configuration: what it quantizes and how one batch updates the statistics.
pub trait Calibrate: Clone + Debug + Send + Sync + 'static {
    /// `base_name` and the validated `QuantizationArgs`.
    fn target(&self) -> &Target;
    /// `Observer.forward` on a batch that is not skipped (not empty, and not a weight already
    /// observed): update `state`'s statistics (and search report).
    fn calibrate(&self, state: &mut Calibration, batch: &Tensor) -> Result<()>;
}

/// One llm-compressor observer class: its constructor arguments and how they resolve.
pub trait CompressorClass: Send + Sync + 'static {
    /// The constructor's arguments (`base_name`, the `QuantizationArgs` fields, its kwargs).
    type Args: ParamSet;
    /// The resolved configuration.
    type Config: Calibrate;
    /// A `UserWarning` the class emits (a deprecated alias), noted on its qparams.
    const WARNING: Option<&'static str> = None;
    /// The constructor and its checks.
    fn resolve(args: &Self::Args) -> Result<Self::Config>;
}

/// The llm-compressor observer of class `C`.
pub struct CompressorObserver<C>(PhantomData<C>);

impl<C: CompressorClass> ObserverKind for CompressorObserver<C> {
    type Args = C::Args;
    type Config = C::Config;
    type State = Calibration;

    fn resolve(args: &C::Args, _: &[String]) -> Result<C::Config> {
        C::resolve(args)
    }

    fn init(_: &C::Config) -> Calibration {
        Calibration::default()
    }

    fn feed(state: &mut Calibration, cfg: &C::Config, batch: &Tensor) -> Result<()> {
        if state.skips(cfg.target(), batch) {
            return Ok(());
        }
        cfg.calibrate(state, batch)
    }

    fn qparams(state: &Calibration, cfg: &C::Config) -> Result<QParams> {
        let mut q = calibration::qparams(state, cfg.target())?;
        q.notes
            .extend(C::WARNING.map(|w| format!("UserWarning: {w}")));
        Ok(q)
    }

    /// Hand-written: llm-compressor's observers have no fused kernel (see
    /// [`calibration::fake_quantize`]).
    fn fake_quantize(cfg: &C::Config, x: &Tensor, q: &QParams) -> Result<Tensor> {
        calibration::fake_quantize(cfg.target(), x, q)
    }

    fn granularity(cfg: &C::Config) -> Option<Granularity> {
        Some(cfg.target().granularity())
    }

    fn plot(state: &Calibration) -> PlotSnapshot {
        state.plot()
    }
}
