//! llm-compressor's MSE range search on CPU: `_grid_search_mse` (`observers/mse_quant.py`,
//! the eager path; CUDA runs a different Triton search) and imatrix's `_grid_search`
//! (`observers/imatrix.py`).
//!
//! From the flattened batch's raw range per qparam, `min = amin·expand`, `max = amax·expand`,
//! candidate `i` is the range scaled by `p = 1 − i/grid` (`p` in double, rounded to float32 by
//! the multiply; candidate 0 is the unshrunk range). Each candidate gets the real
//! `calculate_qparams` (TENSOR_GROUP without `scale_dtype`: no FP8 rounding, no global scale)
//! and is scored per qparam by
//!
//! `err = Σ |fake_quant(x) − x|^norm · w` over dims `(0, −1)`,
//!
//! float32 throughout, summed in ATen's order in one fused, vectorised pass per candidate
//! ([`ErrorTerms`]), candidates scored in parallel a wave at a time; `w` is the
//! normalised importance (imatrix) or 1. A qparam takes a candidate when its error is strictly
//! smaller than its best so far (ties keep the earlier, wider range); the best starts at
//! `finfo(float32).max`.
//!
//! The schedules differ:
//! * MSE: `int(maxshrink·grid)` candidates (`i = 0 …`); the **patience counter is global** — it
//!   resets when any qparam improved and the search stops after `patience` consecutive steps
//!   where none did (`patience = 0` stops at the first such step);
//! * imatrix: `max(1, int(maxshrink·grid)) + 1` candidates (the end point included), and
//!   patience applies only when positive.

use super::args::QuantArgs;
use super::calibration::{Calibration, SearchReport, Target};
use super::fake_quant::Rounding;
use super::flatten::{flatten_for_calibration, Flattened};
use super::qparams::{at_stage, calculate_qparams, calculate_range};
use super::search_error::ErrorTerms;
use super::stats::Combine;
use crate::error::{Result, Stage};
use crate::kernels::torch::pointwise::Power;
use crate::kernels::torch::reduce::min_max_dims;
use crate::observers::search_table::{Candidate, SearchTable};
use crate::observers::shaped_stats::ShapedStats;
use crate::parallel;
use crate::shared_stats::shared_search;
use crate::tensor::Tensor;

/// The search's keyword arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchSettings {
    pub maxshrink: f64,
    pub patience: i64,
    pub grid: f64,
    pub norm: f64,
    pub expand: f64,
}

/// Which loop runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// `_grid_search_mse` (memoryless_mse, mse, nvfp4_expanded_mse).
    Mse,
    /// imatrix's `_grid_search` (imatrix_mse, nvfp4_expanded_imatrix).
    IMatrix,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOutcome {
    pub stats: ShapedStats,
    /// Per qparam, the winning `i` in `p = 1 − i/grid`.
    pub selected_step: Vec<usize>,
    /// Candidates scored before the search stopped.
    pub steps_evaluated: usize,
    /// Candidates the schedule allows.
    pub total_steps: usize,
    /// The candidates taken, for the derivation.
    pub table: SearchTable,
}

/// How the error of a search is weighted, and what its report says about it.
#[derive(Debug, Clone, Default)]
pub struct Weighting {
    /// Per flattened element, repeating with its length (imatrix's normalised importance,
    /// one per column: see [`ErrorTerms::weights`]); `None`: unweighted.
    pub weights: Option<Vec<f32>>,
    /// imatrix: whether the importance passed validation (`None` for the MSE observers).
    pub importance_used: Option<bool>,
    /// The fallback the library logs, if any.
    pub warning: Option<String>,
}

/// One batch through the search of `schedule`: the batch flattened for `target`, its error
/// weighted as `weigh` decides from the flattened batch, the searched statistics recorded into
/// `state` (combined by `combine`) and the search's report kept (the `calibrate` of every MSE
/// and imatrix observer).
pub fn calibrate_by_search(
    state: &mut Calibration,
    batch: &Tensor,
    (target, settings): (&Target, &SearchSettings),
    (schedule, combine): (Schedule, Combine),
    weigh: impl FnOnce(&Flattened<'_>) -> Result<Weighting>,
) -> Result<()> {
    let flat = flatten_for_calibration(batch, target.base, &target.args)?;
    let weighting = weigh(&flat)?;
    let search = || grid_search(&flat, &target.args, settings, schedule, None);
    let outcome = match weighting.weights.as_deref() {
        // An unweighted search is a function of the flattened batch, its arguments and the
        // schedule alone: observers that run it alike (an alias and the observer it names)
        // share it while the batch is registered.
        None => {
            let key = format!(
                "llm-compressor grid search {schedule:?} {settings:?} {:?} {:?}",
                target.args, flat.shape
            );
            SearchOutcome::clone(&*shared_search(&flat.data, key, search)?)
        }
        Some(weights) => grid_search(&flat, &target.args, settings, schedule, Some(weights))?,
    };
    state.record(combine, outcome.stats, &batch.shape)?;
    state.search = Some(SearchReport {
        selected_step: outcome.selected_step,
        steps_evaluated: outcome.steps_evaluated,
        total_steps: outcome.total_steps,
        table: outcome.table,
        importance_used: weighting.importance_used,
        warning: weighting.warning,
    });
    Ok(())
}

/// Search the range of every qparam of `flat` (see the module documentation); `weights` are
/// per flattened element.
pub fn grid_search(
    flat: &Flattened<'_>,
    args: &QuantArgs,
    settings: &SearchSettings,
    schedule: Schedule,
    weights: Option<&[f32]>,
) -> Result<SearchOutcome> {
    let args = args.for_search();
    let dims = flat.reduced_dims()?;
    let (raw_min, raw_max) = min_max_dims(&flat.data, &flat.shape, &dims);
    let expand = settings.expand as f32;
    let min_val: Vec<f32> = raw_min.iter().map(|v| v * expand).collect();
    let max_val: Vec<f32> = raw_max.iter().map(|v| v * expand).collect();
    let qcount = min_val.len();
    let mut best_error = vec![f32::MAX; qcount];
    let mut best_min = min_val.clone();
    let mut best_max = max_val.clone();
    let mut selected = vec![0usize; qcount];
    let widths: Vec<f64> = min_val
        .iter()
        .zip(&max_val)
        .map(|(&lo, &hi)| hi as f64 - lo as f64)
        .collect();
    let mut table = SearchTable::new(&widths);

    let product = (settings.maxshrink * settings.grid).trunc();
    let total_steps = match schedule {
        Schedule::Mse => product.max(0.0) as usize,
        Schedule::IMatrix => product.max(1.0) as usize + 1,
    };
    let (qmin, qmax) = calculate_range(&args).map_err(|e| at_stage(e, Stage::Forward))?;
    let terms = ErrorTerms {
        data: &flat.data,
        shape: &flat.shape,
        dims: &dims,
        weights,
        power: Power::new(settings.norm),
        range: (qmin, qmax),
        rounding: Rounding::of(&args),
    };
    // Candidate `i`: its shrunk range and error per qparam.
    let score = |i: usize| -> Result<(Vec<f32>, Vec<f32>, Vec<f32>)> {
        let p = (1.0 - i as f64 / settings.grid) as f32;
        let shrunk_min: Vec<f32> = min_val.iter().map(|v| v * p).collect();
        let shrunk_max: Vec<f32> = max_val.iter().map(|v| v * p).collect();
        let q = calculate_qparams(&shrunk_min, &shrunk_max, &args, None, Stage::Forward)?;
        let err = terms.errors(&q.scale, &q.zero_point);
        Ok((shrunk_min, shrunk_max, err))
    };
    let mut no_improve = 0i64;
    let mut evaluated = 0usize;
    // Candidates are scored a wave at a time (one per thread) and taken in order, so the
    // outcome does not depend on the wave size; scores past the stopping step are discarded.
    let wave = parallel::threads();
    let mut next = 0usize;
    'search: while next < total_steps {
        let count = wave.min(total_steps - next);
        let scored = parallel::map_indices(count, |w| score(next + w));
        for (w, candidate) in scored.into_iter().enumerate() {
            let i = next + w;
            let (shrunk_min, shrunk_max, err) = candidate?;
            evaluated += 1;
            let mut improved = 0usize;
            for k in 0..qcount {
                if err[k] < best_error[k] {
                    best_error[k] = err[k];
                    best_min[k] = shrunk_min[k];
                    best_max[k] = shrunk_max[k];
                    selected[k] = i;
                    improved += 1;
                }
            }
            let factor = (1.0 - i as f64 / settings.grid) as f32;
            table.add(
                Candidate {
                    index: i,
                    factor: factor as f64,
                },
                &err,
                |k| (shrunk_min[k], shrunk_max[k]),
                improved,
            );
            if improved > 0 {
                no_improve = 0;
            } else {
                no_improve += 1;
                let stop = match schedule {
                    Schedule::Mse => no_improve >= settings.patience,
                    Schedule::IMatrix => settings.patience > 0 && no_improve >= settings.patience,
                };
                if stop {
                    break 'search;
                }
            }
        }
        next += count;
    }
    Ok(SearchOutcome {
        stats: ShapedStats {
            shape: flat.qparam_shape(),
            min: best_min,
            max: best_max,
        },
        selected_step: {
            table.select(|k| selected.get(k).copied());
            selected
        },
        steps_evaluated: evaluated,
        total_steps,
        table,
    })
}
