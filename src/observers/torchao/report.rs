//! What torchao's observers share: the statistics they keep, `calculate_qparams` on them, and
//! the Q/DQ the reference data measures — `quantize_affine` + `dequantize_affine` in the INT
//! domain (with the cast to the target dtype), `_fake_quantize_affine` in the FLOAT and NONE
//! domains — applied block by block to each batch with the batch's own block size.

use super::args::{AffineArgs, Granularity, ZeroPointDomain, ZeroPointDtype};
use super::fake_quant::Kernel;
use super::granularity::{block_size, size_repr, slice_map, ReductionView};
use super::qparams::{choose_qparams, qmin_qmax, Chosen};
use crate::derivation::{self, Step};
use crate::error::{Error, Result, Stage};
use crate::observer::{PlotSnapshot, QParams, ZeroPoint};
use crate::params::Choice;
use crate::slice_map::write_grid_range;
use crate::tensor::Tensor;
use serde_json::{Map, Value};

use crate::observers::search_table::SearchTable;
use crate::observers::shaped_stats::ShapedStats;

/// An observer's state: its statistics, the block size and shape of the last batch, and the
/// MSE search's selected steps.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observed {
    pub stats: Option<ShapedStats>,
    pub block_size: Vec<usize>,
    pub batch_shape: Vec<usize>,
    pub selected_step: Option<Vec<usize>>,
    /// The MSE observer's thresholds on the last batch searched (see [`SearchTable`]).
    pub search: Option<SearchTable>,
    /// `AffineQuantizedMSEObserver.calibrated` (for `run_once`).
    pub calibrated: bool,
}

impl Observed {
    /// The running min/max for plots.
    pub fn plot(&self) -> PlotSnapshot {
        ShapedStats::plot(self.stats.as_ref())
    }
}

/// A batch's block size and reduction view under `granularity`.
pub fn view_of(batch: &Tensor, granularity: &Granularity) -> Result<(Vec<usize>, ReductionView)> {
    let block = block_size(&batch.shape, granularity)?;
    let view = ReductionView::new(&block, &batch.shape)?;
    Ok((block, view))
}

fn integer(dtype: ZeroPointDtype) -> bool {
    matches!(
        dtype,
        ZeroPointDtype::Int8
            | ZeroPointDtype::Uint8
            | ZeroPointDtype::Int16
            | ZeroPointDtype::Int32
    )
}

/// `calculate_qparams()` of a min/max observer: an `AssertionError` without statistics, the
/// zero point dropped in the NONE domain.
pub fn qparams(state: &Observed, args: &AffineArgs) -> Result<QParams> {
    let stats = state.stats.as_ref().ok_or_else(|| {
        Error::framework(
            "AssertionError",
            "Expecting the observer has min_val and max_val, please run the observer before calling calculate_qparams",
            Stage::CalculateQparams,
        )
    })?;
    let chosen = choose_qparams(&stats.min, &stats.max, args, Stage::CalculateQparams)?;
    let mut q = build(
        args,
        chosen,
        args.zero_point_domain == ZeroPointDomain::NoZeroPoint,
        &state.batch_shape,
        &state.block_size,
    )?;
    q.min_val = stats.min.clone();
    q.max_val = stats.max.clone();
    q.extra
        .insert("qparam_shape".into(), Value::from(stats.shape.clone()));
    q.extra
        .insert("block_size".into(), Value::from(state.block_size.clone()));
    if let Some(steps) = &state.selected_step {
        q.extra
            .insert("selected_step".into(), Value::from(steps.clone()));
        if derivation::recording() {
            for step in line_search_steps(steps, state.search.as_ref()) {
                derivation::record(|| step);
            }
        }
    }
    record(&q, args);
    Ok(q)
}

/// Where the MSE observer's line search comes from.
const LINE_SEARCH: &str =
    "torchao/quantization/observer.py:320 (torchao 0.18.0, AffineQuantizedMSEObserver.line_search)";

/// The derivation's steps of the MSE observer's line search (the last batch searched): the
/// winning steps, every threshold with its loss, and the blocks of widest range in full.
fn line_search_steps(selected: &[usize], table: Option<&SearchTable>) -> Vec<Step> {
    let mut picked = selected.to_vec();
    picked.sort_unstable();
    let mut step = Step::new(
        "Line search over symmetric clipping thresholds",
        "for each of `steps` thresholds t_i = amax·i/steps, quantize with the range ±t_i and \
         measure the squared error; keep each block's threshold with the smallest error (first minimum)",
        LINE_SEARCH,
    )
    .value("blocks", picked.len())
    .value("smallest winning step", picked.first().copied().unwrap_or_default())
    .value("median winning step", picked.get(picked.len() / 2).copied().unwrap_or_default())
    .value("largest winning step", picked.last().copied().unwrap_or_default());
    let mut steps = Vec::new();
    if let Some(table) = table {
        let rule =
            "a block takes a threshold whose loss is strictly below its best so far, which starts \
                    at 1e9 (first minimum; every threshold is scored)";
        let (mut tables, slices) = table.steps(["i", "t/amax", "mse"], rule, LINE_SEARCH);
        if !tables.is_empty() {
            let mut t = tables.remove(0);
            if table.slices == 1 {
                // Thresholds are symmetric ranges: drawn against t.
                t = t.symmetric_ranges_in(3);
            }
            step = step.candidates(t);
        }
        steps.push(step);
        steps.extend(slices.into_iter().map(|mut s| {
            s.candidates = s.candidates.map(|c| c.symmetric_ranges_in(3));
            s
        }));
    } else {
        steps.push(step);
    }
    steps
}

/// `choose_qparams_affine_with_min_max`, torchao 0.18.0.
const CHOOSE_QPARAMS: &str = "torchao/quantization/quant_primitives.py:1417 (torchao 0.18.0, \
                              choose_qparams_affine_with_min_max; _choose_qparams_affine at :1498)";

/// The derivation's last step: the scale and zero point of `q` from its ranges.
pub fn record(q: &QParams, args: &AffineArgs) {
    derivation::record_qparams(
        || {
            Step::new(
                "Scale and zero point (choose_qparams_affine_with_min_max)",
                match args.zero_point_domain {
                    ZeroPointDomain::Float => {
                        "s = max((max − min) / (qmax − qmin), eps); zp = min + s·(qmax + qmin + 1)/2 (float domain)"
                    }
                    ZeroPointDomain::NoZeroPoint => {
                        "s = max(max(−min, max) / ((qmax − qmin) / 2), eps); no zero point"
                    }
                    _ => {
                        "symmetric: s = max(max(−min⁻, max⁺) / ((qmax − qmin) / 2), eps), zp = (qmax + qmin + 1)/2 rounded down; \
                         asymmetric: s = max((max⁺ − min⁻) / (qmax − qmin), eps), zp = clamp(qmin − round(min⁻ / s), qmin, qmax)"
                    }
                },
                CHOOSE_QPARAMS,
            )
        },
        &q.min_val,
        &q.max_val,
        &q.scale,
        &q.zero_point,
    );
}

/// The report of chosen (or fixed) qparams: grid, zero point as the library returns it, and
/// the per-block layout and representable ranges of a batch of `shape` cut into `block`.
pub fn build(
    args: &AffineArgs,
    chosen: Chosen,
    zero_point_is_none: bool,
    shape: &[usize],
    block: &[usize],
) -> Result<QParams> {
    let (qmin, qmax) = qmin_qmax(args, Stage::CalculateQparams)?;
    let mid = (qmax + qmin + 1.0) / 2.0;
    let mut extra = Map::new();
    extra.insert(
        "eps_effective".into(),
        Value::from(args.eps.unwrap_or(f32::MIN_POSITIVE as f64)),
    );
    extra.insert(
        "zero_point_dtype".into(),
        if zero_point_is_none {
            Value::Null
        } else {
            Value::from(chosen.zero_point_dtype.name())
        },
    );
    if zero_point_is_none {
        extra.insert("zero_point_is_none".into(), Value::from(true));
    }
    slice_map(shape, block).write(&mut extra);
    let (lo, hi): (Vec<f64>, Vec<f64>) = chosen
        .scale
        .iter()
        .zip(&chosen.zero_point)
        .map(|(&s, &zp)| {
            let (s, zp) = (s as f64, zp as f64);
            match args.zero_point_domain {
                ZeroPointDomain::Float => ((qmin - mid) * s + zp, (qmax - mid) * s + zp),
                _ if zero_point_is_none => (qmin * s, qmax * s),
                _ => ((qmin - zp) * s, (qmax - zp) * s),
            }
        })
        .unzip();
    write_grid_range(&mut extra, &lo, &hi);
    let mut notes = Vec::new();
    if args.target_dtype.is_sub_byte_signed() {
        notes.push(format!(
            "quantize_affine cannot cast to torch.{} on CPU (NotImplementedError); the error metrics use _fake_quantize_affine, which skips the cast",
            args.target_dtype.name()
        ));
    }
    let zero_point = if zero_point_is_none {
        ZeroPoint::Float(vec![0.0; chosen.scale.len()])
    } else if integer(chosen.zero_point_dtype) {
        ZeroPoint::Int(chosen.zero_point.iter().map(|&z| z as i64).collect())
    } else {
        ZeroPoint::Float(chosen.zero_point)
    };
    Ok(QParams {
        extra,
        notes,
        ..QParams::int(
            chosen.scale,
            zero_point,
            qmin as i64,
            qmax as i64,
            Vec::new(),
            Vec::new(),
        )
    })
}

/// `scale.view(shape_after_reduction)`: the `RuntimeError` when a batch cut into `block` has
/// another number of blocks than there are scales (e.g. `PerAxis` on a 1-d batch, where the
/// statistics reduce every dim but the blocks are single elements).
pub fn check_blocks(
    shape: &[usize],
    block: &[usize],
    view: &ReductionView,
    scales: usize,
) -> Result<()> {
    let blocks: usize = shape
        .iter()
        .zip(block)
        .map(|(s, b)| s / b.max(&1))
        .product();
    if blocks == scales {
        return Ok(());
    }
    let mut after = view.shape.clone();
    for &d in &view.dims {
        after[d] = 1;
    }
    Err(Error::framework(
        "RuntimeError",
        format!(
            "shape '{}' is invalid for input of size {scales}",
            size_repr(&after)
                .trim_start_matches("torch.Size(")
                .trim_end_matches(')')
        ),
        Stage::Forward,
    ))
}

/// The reference Q/DQ of one batch with `q`: every element with its block's scale and zero
/// point (see the module documentation).
pub fn fake_quantize(args: &AffineArgs, x: &Tensor, q: &QParams) -> Result<Tensor> {
    let (block, view) = view_of(x, &args.granularity)?;
    check_blocks(&x.shape, &block, &view, q.scale.len())?;
    let map = slice_map(&x.shape, &block);
    let (qmin, qmax) = qmin_qmax(args, Stage::Forward)?;
    let cast = (args.zero_point_domain == ZeroPointDomain::Int
        && !args.target_dtype.is_sub_byte_signed())
    .then_some(args.target_dtype);
    let kernel =
        Kernel::new(args.zero_point_domain, qmin, qmax, cast).with_scale_dtype(args.scale_dtype);
    let data = x
        .data
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let k = map.slice_of(i);
            kernel.apply(v, q.scale[k], q.zero_point.get_f64(k) as f32)
        })
        .collect();
    Ok(x.with_data(data))
}
