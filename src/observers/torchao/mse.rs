//! `AffineQuantizedMSEObserver` (torchao 0.18.0 `quantization/observer.py`): every batch is
//! searched on its own (`line_search`) and **replaces** the statistics (the last batch wins;
//! `run_once` keeps the first):
//!
//! `r = max(|amin|, amax)` per block, thresholds `t_i = (r / steps) · i` for `i = 1 … steps`
//! (float32), each scored by the loss `mean((fake_quant(x; [−t_i, t_i]) − x)²)` over the block
//! (`_fake_quantize_affine` with the observer's own settings — **symmetric candidates even for
//! ASYMMETRIC mapping**). The best loss starts at **1e9**, not inf, and the comparison is strict:
//! the first minimum wins, and when no loss is below 1e9 the raw min/max stay.
//!
//! Each threshold's loss is one fused pass over the block (no squared-error tensor), the
//! thresholds scored in parallel and compared in order, so the result is the sequential one.

use super::args::{AffineArgs, SearchedAffineArgsFields, ZeroPointDomain};
use super::fake_quant::Kernel;
use super::granularity::slice_map;
use super::qparams::{choose_qparams, qmin_qmax};
use super::report::{self, check_blocks, view_of, Observed};
use crate::error::{Error, Result, Stage};
use crate::kernels::torch::reduce::{
    contiguous_runs, inner_row_sum_of_lanes, mean_dims_of, min_max_dims, RowLanes, VEC,
};
use crate::observer::{Granularity, ObserverKind, PlotSnapshot, QParams};
use crate::observers::search_table::{Candidate, SearchTable};
use crate::observers::shaped_stats::ShapedStats;
use crate::parallel;
use crate::tensor::Tensor;

crate::declare_params! {
    /// Arguments of `AffineQuantizedMSEObserver`.
    pub struct MseArgs {
        /// number of thresholds t_i = range/steps·i tried per block
        steps: i64 = 100; int(1, 10000), Data;
        /// search the first batch only
        run_once: bool = false; boolean(), Data;
    }
    include { affine: SearchedAffineArgsFields }
}

/// The configuration of the MSE observer.
#[derive(Debug, Clone, PartialEq)]
pub struct MseConfig {
    pub args: AffineArgs,
    pub steps: usize,
    pub run_once: bool,
}

fn nan_min(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.min(b)
    }
}

/// What `line_search` found for one batch.
struct Searched {
    /// The searched `(min_val, max_val)`.
    stats: ShapedStats,
    /// Per block, the selected step `i` (0: none, the raw range stayed).
    selected: Vec<usize>,
    /// Every threshold taken, for the derivation.
    table: SearchTable,
    block: Vec<usize>,
}

/// `line_search(input)`: the searched ranges, the selected step per block and the candidates.
fn line_search(batch: &Tensor, cfg: &MseConfig) -> Result<Searched> {
    let args = &cfg.args;
    let (block, view) = view_of(batch, &args.granularity)?;
    let dims = view.reduced();
    let (mut min_val, mut max_val) = min_max_dims(&batch.data, &view.shape, &dims);
    let range: Vec<f32> = min_val
        .iter()
        .zip(&max_val)
        .map(|(lo, &hi)| {
            let a = lo.abs();
            if a.is_nan() || hi.is_nan() {
                f32::NAN
            } else {
                a.max(hi)
            }
        })
        .collect();
    check_blocks(&batch.shape, &block, &view, range.len())?;
    let mut optimal = vec![1e9f32; range.len()];
    let mut selected = vec![0usize; range.len()];
    let widths: Vec<f64> = range.iter().map(|&r| r as f64).collect();
    let mut table = SearchTable::new(&widths);
    let map = slice_map(&batch.shape, &block);
    let (qmin, qmax) = qmin_qmax(args, Stage::Forward)?;
    let kernel =
        Kernel::new(args.zero_point_domain, qmin, qmax, None).with_scale_dtype(args.scale_dtype);
    let none = args.zero_point_domain == ZeroPointDomain::NoZeroPoint;
    let steps = cfg.steps as f32;
    // Threshold `i`: the candidate range and its loss per block, the squared errors summed in
    // ATen's order in one fused pass; every threshold is scored (in parallel), then taken in
    // order.
    let score = |i: usize| -> Result<(Vec<f32>, Vec<f32>)> {
        let thres: Vec<f32> = range.iter().map(|r| r / steps * i as f32).collect();
        let neg: Vec<f32> = thres.iter().map(|t| -t).collect();
        let q = choose_qparams(&neg, &thres, args, Stage::Forward)?;
        let zero_point = |k: usize| if none { 0.0 } else { q.zero_point[k] };
        let runs = contiguous_runs(&view.shape, &dims)
            .filter(|&run| run >= VEC && map.run_length(batch.data.len()) == Some(run));
        let loss = match runs {
            // Each block one contiguous run: ATen's inner row sum, 32 lanes at a time.
            Some(run) => crate::simd::with_wide_vectors(
                #[inline(always)]
                || {
                    let n = run as f32;
                    (batch.data.chunks(run).enumerate())
                        .map(|(k, x)| {
                            let block = Block {
                                x,
                                kernel,
                                qparams: (q.scale[k], zero_point(k)),
                            };
                            inner_row_sum_of_lanes(run, &block) / n
                        })
                        .collect()
                },
            ),
            None => mean_dims_of(&view.shape, &dims, |j| {
                let x = batch.data[j];
                let k = map.slice_of(j);
                let d = (kernel.apply(x, q.scale[k], zero_point(k)) - x).abs();
                d * d
            }),
        };
        Ok((thres, loss))
    };
    let scored = parallel::map_indices(cfg.steps, |w| score(w + 1));
    for (w, candidate) in scored.into_iter().enumerate() {
        let (thres, loss) = candidate?;
        let mut improved = 0usize;
        for k in 0..range.len() {
            if loss[k] < optimal[k] {
                min_val[k] = -thres[k];
                max_val[k] = thres[k];
                selected[k] = w + 1;
                improved += 1;
            }
            optimal[k] = nan_min(loss[k], optimal[k]);
        }
        table.add(
            Candidate {
                index: w + 1,
                factor: (w + 1) as f64 / cfg.steps as f64,
            },
            &loss,
            |k| (-thres[k], thres[k]),
            improved,
        );
    }
    table.select(|k| selected.get(k).copied().filter(|&s| s > 0));
    Ok(Searched {
        stats: ShapedStats {
            shape: view.reduced_shape(false),
            min: min_val,
            max: max_val,
        },
        selected,
        table,
        block,
    })
}

/// One block's squared Q/DQ errors under its `(scale, zero point)`.
struct Block<'a> {
    x: &'a [f32],
    kernel: Kernel,
    qparams: (f32, f32),
}

impl RowLanes for Block<'_> {
    #[inline(always)]
    fn lanes<const L: usize>(&self, at: usize) -> [f32; L] {
        let mut out = [0.0f32; L];
        let (s, zp) = self.qparams;
        for (o, &x) in out.iter_mut().zip(&self.x[at..]) {
            let d = (self.kernel.apply(x, s, zp) - x).abs();
            *o = d * d;
        }
        out
    }
}

/// torchao's `AffineQuantizedMSEObserver`.
pub struct AffineMse;

impl ObserverKind for AffineMse {
    type Args = MseArgs;
    type Config = MseConfig;
    type State = Observed;

    fn resolve(args: &MseArgs, _: &[String]) -> Result<MseConfig> {
        Ok(MseConfig {
            args: args.affine.resolve()?,
            steps: args.steps.max(1) as usize,
            run_once: args.run_once,
        })
    }

    fn init(_: &MseConfig) -> Observed {
        Observed::default()
    }

    fn feed(state: &mut Observed, cfg: &MseConfig, batch: &Tensor) -> Result<()> {
        if cfg.run_once && state.calibrated {
            return Ok(());
        }
        if batch.is_empty() {
            // `line_search` returns the empty input, which cannot be unpacked into min/max.
            return Err(Error::framework(
                "ValueError",
                "not enough values to unpack (expected 2, got 0)",
                Stage::Forward,
            ));
        }
        let Searched {
            stats,
            selected,
            table,
            block,
        } = line_search(batch, cfg)?;
        state.stats = Some(stats);
        state.selected_step = Some(selected);
        state.search = Some(table);
        state.block_size = block;
        state.batch_shape = batch.shape.clone();
        state.calibrated = true;
        Ok(())
    }

    fn qparams(state: &Observed, cfg: &MseConfig) -> Result<QParams> {
        report::qparams(state, &cfg.args)
    }

    /// Hand-written: torchao's observers have no fused kernel (see [`super::report::fake_quantize`]).
    fn fake_quantize(cfg: &MseConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        report::fake_quantize(&cfg.args, x, q)
    }

    fn granularity(cfg: &MseConfig) -> Option<Granularity> {
        Some(cfg.args.granularity.shape())
    }

    fn plot(state: &Observed) -> PlotSnapshot {
        state.plot()
    }
}
