//! What every llm-compressor observer shares: the statistics it collected, `get_qparams()`
//! (`observers/base.py`) and the library's fake quantization of a batch with the result.
//!
//! `Observer.forward` skips empty batches and, for weights, every batch after the first
//! (**weights are observed once**). `get_qparams()` asserts statistics exist, computes the
//! NVFP4 global scale for TENSOR_GROUP from the absmax of all statistics, then
//! `calculate_qparams(min_vals, max_vals, args, global_scale)`.

use super::args::{BaseName, QuantArgs, QuantizationType, Strategy};
use super::fake_quant::{cast_to_fp4, qdq, qdq_by, Rounding};
use super::flatten::slice_map;
use super::qparams::{
    calculate_qparams, calculate_range, global_absmax, global_scale, integer_zero_point,
};
use super::stats::Combine;
use crate::derivation::{self, Step};
use crate::error::{Error, Result, Stage};
use crate::formats::ElementFormat;
use crate::observer::{Granularity, Grid, PlotSnapshot, QParams, ZeroPoint};
use crate::observers::search_table::SearchTable;
use crate::observers::shaped_stats::ShapedStats;
use crate::params::Choice;
use crate::quant::round_half_even;
use crate::slice_map::write_grid_range;
use crate::tensor::Tensor;
use serde_json::{Map, Value};

/// What the observer watches and how it quantizes: `base_name` and the validated
/// `QuantizationArgs`.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub base: BaseName,
    pub args: QuantArgs,
}

impl Target {
    /// How the qparams of this target are shaped: the strategy decides (one per sequence
    /// position for `token`).
    pub fn granularity(&self) -> Granularity {
        match self.args.strategy {
            Strategy::Tensor => Granularity::PerTensor,
            Strategy::Channel | Strategy::Token => Granularity::PerChannel,
            Strategy::Group | Strategy::TensorGroup => Granularity::PerGroup,
            Strategy::Block => Granularity::PerBlock,
        }
    }
}

/// What a range search reports besides the range.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchReport {
    /// Per qparam, the winning `i` in `p = 1 − i/grid` (last searched batch).
    pub selected_step: Vec<usize>,
    pub steps_evaluated: usize,
    pub total_steps: usize,
    /// The candidates taken (see [`SearchTable`]).
    pub table: SearchTable,
    /// imatrix: whether the importance passed validation.
    pub importance_used: Option<bool>,
    /// A fallback the library logs (imatrix).
    pub warning: Option<String>,
}

/// The collected statistics (`min_vals`/`max_vals`), the shape of the batch that set them and
/// the search report of MSE observers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Calibration {
    pub stats: Option<ShapedStats>,
    pub batch_shape: Vec<usize>,
    pub search: Option<SearchReport>,
}

impl Calibration {
    /// `Observer.forward`'s early returns: an empty batch, or a weight already observed.
    pub fn skips(&self, target: &Target, batch: &Tensor) -> bool {
        batch.is_empty() || (target.base == BaseName::Weight && self.stats.is_some())
    }

    /// Record the statistics of a batch of `shape`, combined with those collected before.
    pub fn record(&mut self, combine: Combine, new: ShapedStats, shape: &[usize]) -> Result<()> {
        self.stats = Some(combine.merge(self.stats.as_ref(), new)?);
        self.batch_shape = shape.to_vec();
        Ok(())
    }

    /// The running min/max for plots.
    pub fn plot(&self) -> PlotSnapshot {
        ShapedStats::plot(self.stats.as_ref())
    }
}

/// The grid of `args`: integers, FP8 E4M3 or FP4 E2M1.
fn grid(args: &QuantArgs, qmin: f32, qmax: f32) -> Grid {
    match (args.qtype, args.num_bits) {
        (QuantizationType::Int, _) => Grid::Int {
            quant_min: qmin as i64,
            quant_max: qmax as i64,
        },
        (QuantizationType::Float, 4) => Grid::Float {
            format: "fp4_e2m1".into(),
            max: 6.0,
        },
        _ => Grid::Float {
            format: "fp8_e4m3".into(),
            max: 448.0,
        },
    }
}

/// compressed-tensors' `calculate_qparams`, 0.19.0.
const CALCULATE_QPARAMS: &str =
    "compressed_tensors/quantization/utils/helpers.py:51 (compressed-tensors 0.19.0); \
     global scale: generate_gparam at :320";

/// The derivation's step of an MSE search: which shrink factor `p = 1 − i/grid` won.
/// Where llm-compressor's searches come from.
const SEARCH_SOURCE: &str =
    "llmcompressor/observers/mse_quant.py:21 (llmcompressor 0.14.0.1, _grid_search_mse); \
     imatrix: llmcompressor/observers/imatrix.py:252";

/// The derivation's steps of the search (the last batch searched): every candidate it took,
/// with the error of each, and the slices of widest range in full (see [`SearchTable`]).
fn search_steps(search: &SearchReport) -> Vec<Step> {
    let mut picked = search.selected_step.clone();
    picked.sort_unstable();
    let mut step = Step::new(
        "Shrink-factor grid search",
        "for i = 0, 1, …: candidate range p·(min, max) with p = 1 − i/grid, error Σ|Q(x) − x|^norm per slice; \
         stop after `patience` candidates without improvement; keep the first minimum",
        SEARCH_SOURCE,
    )
    .value("candidates evaluated", search.steps_evaluated)
    .value("grid size", search.total_steps);
    if let (Some(&lo), Some(&hi)) = (picked.first(), picked.last()) {
        step = step
            .value("smallest winning i", lo)
            .value("median winning i", picked[picked.len() / 2])
            .value("largest winning i", hi);
    }
    if let Some(used) = search.importance_used {
        step = step.value("importance used", used);
    }
    let rule = if search.steps_evaluated < search.total_steps {
        format!(
            "a slice takes a candidate whose error is strictly below its best so far (first minimum); \
             the search stopped after {} of {} candidates: `patience` candidates in a row improved no slice",
            search.steps_evaluated, search.total_steps
        )
    } else {
        "a slice takes a candidate whose error is strictly below its best so far (first minimum); \
         every candidate of the grid was scored"
            .to_string()
    };
    let (mut tables, slices) = search
        .table
        .steps(["i", "p", "error"], &rule, SEARCH_SOURCE);
    if !tables.is_empty() {
        step = step.candidates(tables.remove(0));
    }
    let mut steps = vec![step];
    steps.extend(slices);
    steps
}

/// `get_qparams()` on the collected statistics.
pub fn qparams(cal: &Calibration, target: &Target) -> Result<QParams> {
    let stats = cal.stats.as_ref().ok_or_else(|| {
        Error::framework(
            "AssertionError",
            "No statistics available. Call observer(value) first.",
            Stage::CalculateQparams,
        )
    })?;
    let args = &target.args;
    let global = (args.strategy == Strategy::TensorGroup)
        .then(|| global_scale(global_absmax(&stats.min, &stats.max)));
    let computed = calculate_qparams(
        &stats.min,
        &stats.max,
        args,
        global,
        Stage::CalculateQparams,
    )?;
    let (qmin, qmax) = calculate_range(args)?;
    let mut extra = Map::new();
    extra.insert("qparam_shape".into(), Value::from(stats.shape.clone()));
    extra.insert("zero_point_dtype".into(), Value::from(args.zp_dtype.name()));
    if let Some(g) = global {
        extra.insert("global_scale".into(), Value::from(vec![g as f64]));
    }
    let mut notes = Vec::new();
    if let Some(search) = &cal.search {
        extra.insert(
            "selected_step".into(),
            Value::from(search.selected_step.clone()),
        );
        extra.insert(
            "steps_evaluated".into(),
            Value::from(search.steps_evaluated),
        );
        extra.insert("total_steps".into(), Value::from(search.total_steps));
        if let Some(used) = search.importance_used {
            extra.insert("importance_used".into(), Value::from(used));
        }
        notes.extend(search.warning.clone());
    }
    slice_map(&cal.batch_shape, target.base, args)?.write(&mut extra);
    // The effective scale is the float32 `scale / global_scale` fake quantization uses.
    let (lo, hi): (Vec<f64>, Vec<f64>) = computed
        .scale
        .iter()
        .zip(&computed.zero_point)
        .map(|(&s, &zp)| {
            let s = global.map_or(s, |g| s / g) as f64;
            ((qmin as f64 - zp as f64) * s, (qmax as f64 - zp as f64) * s)
        })
        .unzip();
    write_grid_range(&mut extra, &lo, &hi);
    let zero_point = if integer_zero_point(args.zp_dtype) {
        ZeroPoint::Int(computed.zero_point.iter().map(|&z| z as i64).collect())
    } else {
        ZeroPoint::Float(computed.zero_point)
    };
    if let Some(search) = cal.search.as_ref().filter(|_| derivation::recording()) {
        for step in search_steps(search) {
            derivation::record(|| step);
        }
    }
    derivation::record_qparams(
        || {
            let mut step = Step::new(
                "Scale and zero point (calculate_qparams)",
                "min⁻ = min(min_vals, 0), max⁺ = max(max_vals, 0); symmetric: s = max(|min⁻|, max⁺) / ((qmax − qmin) / 2), zp = 0; \
                 asymmetric: s = (max⁺ − min⁻) / (qmax − qmin), zp = round(qmin − min⁻ / s); s rounded to the scale dtype; \
                 with a global scale (NVFP4): s = global · amax / 6 stored in fp8 e4m3",
                CALCULATE_QPARAMS,
            )
            .value("qmin", qmin)
            .value("qmax", qmax);
            if let Some(g) = global {
                step = step.value("global_scale", g);
            }
            step
        },
        &stats.min,
        &stats.max,
        &computed.scale,
        &zero_point,
    );
    Ok(QParams {
        scale: computed.scale,
        zero_point,
        grid: grid(args, qmin, qmax),
        axis: None,
        min_val: stats.min.clone(),
        max_val: stats.max.clone(),
        clip_range: None,
        amax: None,
        extra,
        notes,
    })
}

/// compressed-tensors' `fake_quantize(x, scale, zero_point, args, global_scale)` with the
/// qparams laid out the way the observer flattened its batches.
pub fn fake_quantize(target: &Target, x: &Tensor, q: &QParams) -> Result<Tensor> {
    let map = slice_map(&x.shape, target.base, &target.args)?;
    let (qmin, qmax) = calculate_range(&target.args)?;
    let rounding = Rounding::of(&target.args);
    let global = q
        .extra
        .get("global_scale")
        .and_then(|g| g.get(0))
        .and_then(Value::as_f64)
        .map(|g| g as f32);
    let slices = q.scale.len();
    let len = x.data.len();
    let qparams_of = |k: usize| {
        let s = match global {
            Some(g) => q.scale[k] / g,
            None => q.scale[k],
        };
        (s, q.zero_point.get_f64(k) as f32)
    };
    if let Some(run) = map.run_length(len) {
        if len.div_ceil(run) <= slices.min(q.zero_point.len()) {
            // Consecutive runs share their qparams: one run at a time, the rounding compiled in.
            let range = (qmin, qmax);
            let data = match rounding {
                Rounding::Integer => qdq_runs(&x.data, run, qparams_of, range, round_half_even),
                Rounding::Fp8 => qdq_runs(&x.data, run, qparams_of, range, |v| {
                    ElementFormat::Fp8E4m3.quantize(v)
                }),
                Rounding::Fp4 => qdq_runs(&x.data, run, qparams_of, range, cast_to_fp4),
            };
            return Ok(x.with_data(data));
        }
    }
    let mut data = Vec::with_capacity(len);
    for (i, &v) in x.data.iter().enumerate() {
        let k = map.slice_of(i);
        if k >= slices || k >= q.zero_point.len() {
            return Err(Error::input(format!(
                "a batch of shape {:?} needs more than the {slices} qparams the observer computed",
                x.shape
            )));
        }
        let (s, z) = qparams_of(k);
        data.push(qdq(v, s, z, qmin, qmax, rounding));
    }
    Ok(x.with_data(data))
}

/// [`qdq_by`] of `data` cut into runs of `run` values, run `k` under `qparams_of(k)`; in
/// parallel pieces natively (each value on its own: the same values on any number of threads).
fn qdq_runs(
    data: &[f32],
    run: usize,
    qparams_of: impl Fn(usize) -> (f32, f32) + Sync,
    range: (f32, f32),
    round: impl Fn(f32) -> f32 + Copy + Send + Sync,
) -> Vec<f32> {
    let mut out = vec![0.0f32; data.len()];
    crate::parallel::for_chunks_mut(data, &mut out, |start, piece, out| {
        crate::simd::with_wide_vectors(
            #[inline(always)]
            || {
                for (k, positions) in crate::slice_map::runs(start, piece.len(), run) {
                    let (s, z) = qparams_of(k);
                    for (o, &v) in out[positions.clone()].iter_mut().zip(&piece[positions]) {
                        *o = qdq_by(v, s, z, range, round);
                    }
                }
            },
        )
    });
    out
}
