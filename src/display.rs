//! What a panel displays, computed from a [`Report`] by one pure function ([`panel_view`]): the
//! clipping and grid ranges drawn over the histogram, the per-channel chart, the label/value
//! rows, the quirks and the numbers of the panel's `data-*` contract. The page, the npm
//! package's panels, SVG exports and the CLI's plots all call it, so they cannot disagree.

use crate::engine::Report;
use crate::observer::{Granularity, Grid, QParams};
use crate::params::Params;
use crate::plot::{fmt_num, ChannelView, PanelView, SliceNumbers};
use crate::quant::QdqMetrics;
use serde::Serialize;

/// The panel of `report`.
pub fn panel_view(report: &Report) -> PanelView {
    let spec = report.spec();
    let mut notes: Vec<String> = spec
        .map(|s| s.quirks.iter().map(|q| q.to_string()).collect())
        .unwrap_or_default();
    let base = PanelView {
        observer: report.observer.clone(),
        ..PanelView::default()
    };
    let q = match (&report.qparams, &report.error) {
        (Some(q), None) => q,
        (_, error) => {
            return PanelView {
                error: Some(error.as_ref().map_or_else(
                    || "no quantization parameters".to_string(),
                    |e| e.message.clone(),
                )),
                notes,
                ..base
            }
        }
    };
    notes.extend(q.notes.iter().cloned());
    let slices = slice_numbers(q);
    let per_slice = q.scale.len().max(q.min_val.len()) > 1 || q.axis.is_some();
    let channels = per_slice.then(|| ChannelView {
        axis: q.axis.unwrap_or(0),
        min: widen(&q.min_val),
        max: widen(&q.max_val),
        grid_min: slices.grid_min.clone(),
        grid_max: slices.grid_max.clone(),
        unit: slice_unit(report.granularity).into(),
    });
    PanelView {
        clip: envelope(&slices.clip_min, &slices.clip_max),
        grid: envelope(&slices.grid_min, &slices.grid_max),
        channels,
        stats: stats_rows(
            q,
            report.granularity,
            report.metrics.as_ref(),
            report.metrics_pending,
            &slices,
        ),
        notes,
        slices,
        ..base
    }
}

/// Per-tensor numbers as one number, per-slice numbers as a list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(untagged)]
pub enum Numbers {
    One(f64),
    Many(Vec<f64>),
}

/// One observer's result as a notebook holds it (`explorer.results[id]` of
/// `quantscope.Explorer`), the same whether the page computed it (the widget sends it to
/// Python) or the native module did (at once, in Python): what the panel shows — its slices'
/// clipping and grid ranges, scale and zero point, its quirks and error — with the observer's
/// state (`min_val`, `max_val`, `amax`, exactly as computed) and metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct NotebookResult {
    pub ok: bool,
    /// What the panel shows instead of the numbers.
    pub error: Option<String>,
    /// The report's error kind (`param`, `framework`, …).
    pub error_kind: Option<String>,
    pub granularity: Granularity,
    #[cfg_attr(target_arch = "wasm32", tsify(type = "Record<string, unknown>"))]
    pub params: Params,
    pub scale: Option<Numbers>,
    pub zero_point: Option<Numbers>,
    pub min_val: Option<Numbers>,
    pub max_val: Option<Numbers>,
    pub clip_min: Option<Numbers>,
    pub clip_max: Option<Numbers>,
    pub grid_min: Option<Numbers>,
    pub grid_max: Option<Numbers>,
    pub amax: Option<Numbers>,
    pub axis: Option<usize>,
    pub metrics: Option<QdqMetrics>,
    /// The notes the panel shows (the framework quirks reproduced, then the run's own).
    pub quirks: Vec<String>,
}

/// `report` as a notebook holds it (see [`NotebookResult`]).
pub fn notebook_result(report: &Report) -> NotebookResult {
    let view = panel_view(report);
    let per_tensor = matches!(
        report.granularity,
        Granularity::PerTensor | Granularity::PassThrough
    );
    let numbers = |values: Vec<f64>| match values.as_slice() {
        [one] if per_tensor => Numbers::One(*one),
        _ => Numbers::Many(values),
    };
    let q = report.qparams.as_ref();
    let state = |values: Option<&Vec<f32>>| values.map(|v| numbers(widen(v)));
    let failed = view.error.is_some();
    let s = view.slices;
    NotebookResult {
        ok: !failed,
        error: view.error,
        error_kind: if failed {
            report.error.as_ref().map(|e| e.kind.clone())
        } else {
            None
        },
        granularity: report.granularity,
        params: report.params.clone(),
        scale: Some(numbers(s.scale)),
        zero_point: Some(numbers(s.zero_point)),
        min_val: state(q.map(|q| &q.min_val)),
        max_val: state(q.map(|q| &q.max_val)),
        clip_min: Some(numbers(s.clip_min)),
        clip_max: Some(numbers(s.clip_max)),
        grid_min: Some(numbers(s.grid_min)),
        grid_max: Some(numbers(s.grid_max)),
        amax: state(q.and_then(|q| q.amax.as_ref())),
        axis: q.and_then(|q| q.axis),
        metrics: report.metrics,
        quirks: view.notes,
    }
}

fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// The clipping range (the observer's `clip_range` when it searched for one, else its
/// `min_val`/`max_val`), the grid's representable range, scale and zero point, per slice.
pub fn slice_numbers(q: &QParams) -> SliceNumbers {
    let (clip_min, clip_max) = match &q.clip_range {
        Some((lo, hi)) => (widen(lo), widen(hi)),
        None => (widen(&q.min_val), widen(&q.max_val)),
    };
    let (grid_min, grid_max) = (0..q.scale.len())
        .filter_map(|i| q.representable_range(i))
        .unzip();
    SliceNumbers {
        clip_min,
        clip_max,
        grid_min,
        grid_max,
        scale: widen(&q.scale),
        zero_point: (0..q.zero_point.len())
            .map(|i| q.zero_point.get_f64(i))
            .collect(),
    }
}

/// The widest `[min, max]` over the finite values of `lo` and `hi`.
fn envelope(lo: &[f64], hi: &[f64]) -> Option<[f64; 2]> {
    let a = lo
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(f64::INFINITY, f64::min);
    let b = hi
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    (a.is_finite() && b.is_finite()).then_some([a, b])
}

/// What one slice of a non-per-tensor observer is called.
pub fn slice_unit(g: Granularity) -> &'static str {
    match g {
        Granularity::PerGroup => "group",
        Granularity::PerBlock => "block",
        _ => "channel",
    }
}

/// `a … b` range of a list (or its single value).
fn span(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match v.len() {
        0 => "—".into(),
        1 => fmt_num(v[0]),
        _ if lo == hi => fmt_num(lo),
        _ => format!("{} … {}", fmt_num(lo), fmt_num(hi)),
    }
}

/// SQNR as displayed: decibels, `∞ (lossless)` when there is no error, `—` when undefined.
pub fn sqnr_text(m: &QdqMetrics) -> String {
    match m.sqnr_db {
        Some(v) => format!("{} dB", fmt_num(v)),
        None if m.mse == 0.0 && m.count > 0 => "∞ (lossless)".into(),
        None => "—".into(),
    }
}

/// The label/value rows a panel shows.
fn stats_rows(
    q: &QParams,
    granularity: Granularity,
    m: Option<&QdqMetrics>,
    pending: bool,
    slices: &SliceNumbers,
) -> Vec<[String; 2]> {
    let mut rows = Vec::new();
    if q.scale.len() > 1 || q.axis.is_some() {
        rows.push([
            format!("{}s", slice_unit(granularity)),
            format!("{} (axis {})", q.scale.len(), q.axis.unwrap_or(0)),
        ]);
    }
    rows.push(["min".into(), span(&widen(&q.min_val))]);
    rows.push(["max".into(), span(&widen(&q.max_val))]);
    if q.clip_range.is_some() {
        rows.push(["clip min".into(), span(&slices.clip_min)]);
        rows.push(["clip max".into(), span(&slices.clip_max)]);
    }
    rows.push(["scale".into(), span(&slices.scale)]);
    rows.push(["zero point".into(), span(&slices.zero_point)]);
    match &q.grid {
        Grid::Int {
            quant_min,
            quant_max,
        } => rows.push([
            "grid".into(),
            format!("[{quant_min}, {quant_max}]").replace('-', "−"),
        ]),
        Grid::Float { format, max } => {
            rows.push(["grid".into(), format!("{format} (±{})", fmt_num(*max))])
        }
        Grid::None => rows.push(["grid".into(), "none (pass-through)".into()]),
    }
    if let Some(amax) = &q.amax {
        rows.push(["amax".into(), span(&widen(amax))]);
    }
    if let Some(m) = m {
        rows.push(["MSE".into(), fmt_num(m.mse)]);
        rows.push(["SQNR".into(), sqnr_text(m)]);
        rows.push(["max |error|".into(), fmt_num(m.max_abs_err)]);
        rows.push([
            "clipped".into(),
            format!("{} %", fmt_num(m.clipped_fraction * 100.0)),
        ]);
    } else if pending {
        for k in ["MSE", "SQNR", "max |error|", "clipped"] {
            rows.push([k.into(), "…".into()]);
        }
    }
    rows
}
