//! `AffineQuantizedMinMaxObserver` (torchao 0.18.0 `quantization/observer.py`): every batch is
//! viewed by its block size ([`granularity`](super::granularity)) and
//!
//! `min_val ← min(min_val, amin(view, reduction_dims))`, `max_val ← max(max_val, amax(…))`
//!
//! element-wise across batches (later batches must give the same shape: an
//! `AssertionError`; per-token statistics are therefore per row index), then
//! `choose_qparams_affine_with_min_max` ([`qparams`](super::qparams)). `keepdim=False` (the
//! default) drops the reduced dims (a 0-d `min_val` per tensor).

use super::args::{AffineArgs, AffineArgsFields};
use super::granularity::size_repr;
use super::report::{self, view_of, Observed};
use crate::error::{Error, Result, Stage};
use crate::kernels::torch::reduce::min_max_dims;
use crate::observer::{Granularity, ObserverKind, PlotSnapshot, QParams};
use crate::observers::shaped_stats::ShapedStats;
use crate::tensor::Tensor;

crate::declare_params! {
    /// Arguments of `AffineQuantizedMinMaxObserver`.
    pub struct MinMaxArgs {
        /// keep the reduced dims (as 1s) in min_val/max_val
        keepdim: bool = false; boolean(), Data;
    }
    include { affine: AffineArgsFields }
}

/// The configuration of the min/max observer.
#[derive(Debug, Clone, PartialEq)]
pub struct MinMaxConfig {
    pub args: AffineArgs,
    pub keepdim: bool,
}

fn nan_fold(a: f32, b: f32, f: fn(f32, f32) -> f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        f(a, b)
    }
}

/// torchao's `AffineQuantizedMinMaxObserver`.
pub struct AffineMinMax;

impl ObserverKind for AffineMinMax {
    type Args = MinMaxArgs;
    type Config = MinMaxConfig;
    type State = Observed;

    fn resolve(args: &MinMaxArgs, _: &[String]) -> Result<MinMaxConfig> {
        Ok(MinMaxConfig {
            args: args.affine.resolve()?,
            keepdim: args.keepdim,
        })
    }

    fn init(_: &MinMaxConfig) -> Observed {
        Observed::default()
    }

    fn feed(state: &mut Observed, cfg: &MinMaxConfig, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let (block, view) = view_of(batch, &cfg.args.granularity)?;
        let (min, max) = min_max_dims(&batch.data, &view.shape, &view.reduced());
        let shape = view.reduced_shape(cfg.keepdim);
        let stats = match state.stats.take() {
            None => ShapedStats { shape, min, max },
            Some(old) => {
                if old.shape != shape {
                    let message = format!(
                        "Can't update existing min_val - shape mismatch, self.min_val:{} != min_val:{}",
                        size_repr(&old.shape),
                        size_repr(&shape)
                    );
                    state.stats = Some(old);
                    return Err(Error::framework("AssertionError", message, Stage::Forward));
                }
                ShapedStats {
                    min: old
                        .min
                        .iter()
                        .zip(&min)
                        .map(|(&a, &b)| nan_fold(a, b, f32::min))
                        .collect(),
                    max: old
                        .max
                        .iter()
                        .zip(&max)
                        .map(|(&a, &b)| nan_fold(a, b, f32::max))
                        .collect(),
                    shape,
                }
            }
        };
        state.stats = Some(stats);
        state.block_size = block;
        state.batch_shape = batch.shape.clone();
        Ok(())
    }

    fn qparams(state: &Observed, cfg: &MinMaxConfig) -> Result<QParams> {
        report::qparams(state, &cfg.args)
    }

    /// Hand-written: torchao's observers have no fused kernel (see [`super::report::fake_quantize`]).
    fn fake_quantize(cfg: &MinMaxConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        report::fake_quantize(&cfg.args, x, q)
    }

    fn granularity(cfg: &MinMaxConfig) -> Option<Granularity> {
        Some(cfg.args.granularity.shape())
    }

    fn plot(state: &Observed) -> PlotSnapshot {
        state.plot()
    }
}
