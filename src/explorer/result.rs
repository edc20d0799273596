//! The result of one observer run as the page, exports and the npm package see it.

use crate::error::{Error, Stage};
use crate::observer::{Grid, Observer, QParams};
use crate::params::Params;
use crate::plot::{fmt_num, ChannelView, PanelView};
use crate::quant::{accumulate_metrics, MetricsAccumulator, QdqMetrics};
use crate::registry::{Family, Granularity, ObserverSpec};
use crate::tensor::Tensor;
use serde::Serialize;

/// An error as JavaScript sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorInfo {
    /// `load`, `param`, `framework`, `unknown` or `input`.
    pub kind: &'static str,
    /// The full message.
    pub message: String,
    /// The framework's exception class, for `framework` errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
    /// The parameter at fault, for `param` errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
}

impl From<&Error> for ErrorInfo {
    fn from(e: &Error) -> Self {
        let (kind, exception, stage, param) = match e {
            Error::Load { .. } => ("load", None, None, None),
            Error::InvalidParam { name, .. } => ("param", None, None, Some(name.clone())),
            Error::Framework { kind, stage, .. } => {
                ("framework", Some(kind.clone()), Some(*stage), None)
            }
            Error::Unknown { .. } => ("unknown", None, None, None),
            Error::Input(_) => ("input", None, None, None),
        };
        ErrorInfo {
            kind,
            message: e.to_string(),
            exception,
            stage,
            param,
        }
    }
}

/// Everything one observer run produced.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub observer: String,
    pub family: Family,
    pub granularity: Granularity,
    /// The parameters given (defaults apply to the others).
    pub params: Params,
    pub ok: bool,
    pub error: Option<ErrorInfo>,
    pub qparams: Option<QParams>,
    /// Quantize–dequantize error over all batches (finite values).
    pub metrics: Option<QdqMetrics>,
    /// The chosen clipping range per slice: the observer's `clip_range` when it searched for
    /// one, else its `min_val`/`max_val`.
    pub clip_min: Vec<f64>,
    pub clip_max: Vec<f64>,
    /// The representable range of the grid per slice, `[(qmin − zp)·s, (qmax − zp)·s]`.
    pub grid_min: Vec<f64>,
    pub grid_max: Vec<f64>,
    pub scale: Vec<f64>,
    pub zero_point: Vec<f64>,
    /// Framework quirks this observer reproduces (from the registry).
    pub quirks: Vec<&'static str>,
    /// True when the last change was applied with `retune` (no pass over the data).
    pub retuned: bool,
    /// True while the error metrics of these qparams are still being computed (see
    /// `Session::update_deferred`).
    pub metrics_pending: bool,
    /// What the panel draws.
    pub view: PanelView,
}

impl RunResult {
    /// A failed run.
    pub fn failed(spec: &ObserverSpec, params: &Params, e: &Error) -> Self {
        let info = ErrorInfo::from(e);
        RunResult {
            observer: spec.id.to_string(),
            family: spec.family,
            granularity: spec.granularity,
            params: params.clone(),
            ok: false,
            qparams: None,
            metrics: None,
            clip_min: Vec::new(),
            clip_max: Vec::new(),
            grid_min: Vec::new(),
            grid_max: Vec::new(),
            scale: Vec::new(),
            zero_point: Vec::new(),
            quirks: spec.quirks.clone(),
            retuned: false,
            metrics_pending: false,
            view: PanelView {
                observer: spec.id.to_string(),
                error: Some(info.message.clone()),
                notes: spec.quirks.iter().map(|q| q.to_string()).collect(),
                ..Default::default()
            },
            error: Some(info),
        }
    }
}

/// Quantization parameters and error metrics of an observer that has seen `batches`
/// (without the metrics, which cost a pass over the data, when `metrics` is false).
pub(crate) fn evaluate(
    spec: &ObserverSpec,
    params: &Params,
    observer: &dyn Observer,
    batches: &[&Tensor],
    with_metrics: bool,
) -> RunResult {
    let q = match observer.qparams() {
        Ok(q) => q,
        Err(e) => return RunResult::failed(spec, params, &e),
    };
    let pending = !with_metrics && !matches!(q.grid, Grid::None);
    let metrics = if matches!(q.grid, Grid::None) || pending {
        None
    } else {
        let mut acc = MetricsAccumulator::default();
        for batch in batches {
            match observer.fake_quantize(batch, &q) {
                Ok(dq) => accumulate_metrics(&mut acc, batch, &dq, &q),
                Err(e) => return RunResult::failed(spec, params, &e),
            }
        }
        Some(acc.finish())
    };
    let n = q.scale.len().max(q.min_val.len());
    let (clip_min, clip_max): (Vec<f64>, Vec<f64>) = match &q.clip_range {
        Some((lo, hi)) => (
            lo.iter().map(|&v| v as f64).collect(),
            hi.iter().map(|&v| v as f64).collect(),
        ),
        None => (
            q.min_val.iter().map(|&v| v as f64).collect(),
            q.max_val.iter().map(|&v| v as f64).collect(),
        ),
    };
    let (grid_min, grid_max): (Vec<f64>, Vec<f64>) = (0..q.scale.len())
        .filter_map(|i| q.representable_range(i))
        .unzip();
    let zero_point: Vec<f64> = (0..q.zero_point.len())
        .map(|i| q.zero_point.get_f64(i))
        .collect();
    let scale: Vec<f64> = q.scale.iter().map(|&v| v as f64).collect();
    let per_channel = n > 1 || q.axis.is_some();
    let envelope = |a: &[f64], b: &[f64]| -> Option<[f64; 2]> {
        let lo = a
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(f64::INFINITY, f64::min);
        let hi = b
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        (lo.is_finite() && hi.is_finite()).then_some([lo, hi])
    };
    let channels = per_channel.then(|| ChannelView {
        axis: q.axis.unwrap_or(0),
        min: q.min_val.iter().map(|&v| v as f64).collect(),
        max: q.max_val.iter().map(|&v| v as f64).collect(),
        grid_min: grid_min.clone(),
        grid_max: grid_max.clone(),
        unit: slice_unit(spec.granularity).into(),
    });
    let mut notes: Vec<String> = spec.quirks.iter().map(|q| q.to_string()).collect();
    notes.extend(q.notes.iter().cloned());
    let view = PanelView {
        observer: spec.id.to_string(),
        color: 0,
        clip: envelope(&clip_min, &clip_max),
        grid: envelope(&grid_min, &grid_max),
        channels,
        stats: stats_rows(
            &q,
            spec.granularity,
            metrics.as_ref(),
            pending,
            (&clip_min, &clip_max),
        ),
        notes,
        error: None,
    };
    RunResult {
        observer: spec.id.to_string(),
        family: spec.family,
        granularity: spec.granularity,
        params: params.clone(),
        ok: true,
        error: None,
        qparams: Some(q),
        metrics,
        clip_min,
        clip_max,
        grid_min,
        grid_max,
        scale,
        zero_point,
        quirks: spec.quirks.clone(),
        retuned: false,
        metrics_pending: pending,
        view,
    }
}

/// What one slice of a non-per-tensor observer is called.
fn slice_unit(g: Granularity) -> &'static str {
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

/// The label/value rows a panel shows.
fn stats_rows(
    q: &QParams,
    granularity: Granularity,
    m: Option<&QdqMetrics>,
    pending: bool,
    (clip_min, clip_max): (&[f64], &[f64]),
) -> Vec<[String; 2]> {
    let scale: Vec<f64> = q.scale.iter().map(|&v| v as f64).collect();
    let zero_point: Vec<f64> = (0..q.zero_point.len())
        .map(|i| q.zero_point.get_f64(i))
        .collect();
    let mut rows = Vec::new();
    let per_channel = scale.len() > 1 || q.axis.is_some();
    if per_channel {
        rows.push([
            format!("{}s", slice_unit(granularity)),
            format!("{} (axis {})", scale.len(), q.axis.unwrap_or(0)),
        ]);
    }
    let mins: Vec<f64> = q.min_val.iter().map(|&v| v as f64).collect();
    let maxs: Vec<f64> = q.max_val.iter().map(|&v| v as f64).collect();
    rows.push(["min".into(), span(&mins)]);
    rows.push(["max".into(), span(&maxs)]);
    if q.clip_range.is_some() {
        rows.push(["clip min".into(), span(clip_min)]);
        rows.push(["clip max".into(), span(clip_max)]);
    }
    rows.push(["scale".into(), span(&scale)]);
    rows.push(["zero point".into(), span(&zero_point)]);
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
        let a: Vec<f64> = amax.iter().map(|&v| v as f64).collect();
        rows.push(["amax".into(), span(&a)]);
    }
    if let Some(m) = m {
        rows.push(["MSE".into(), fmt_num(m.mse)]);
        rows.push([
            "SQNR".into(),
            m.sqnr_db
                .map(|v| format!("{} dB", fmt_num(v)))
                .unwrap_or_else(|| "—".into()),
        ]);
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
