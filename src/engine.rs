//! The one driver: a [`Run`] (observer, parameters, calibration batches) produces a [`Report`]
//! (qparams, error metrics, counts). The CLI, the explorer's session, the wasm boundary, the npm
//! package and the tests all go through [`collect`] and [`conclude`], so every path computes the
//! same numbers.
//!
//! **Non-finite values.** PyTorch lets one NaN poison an observer's range. quantscope instead
//! counts NaN/±Inf and, by default ([`NonFinitePolicy::Exclude`]), keeps them out of the
//! statistics: per-tensor observers see only the finite values (flattened); observers that need
//! the tensor's shape (per-channel, per-group, per-block) see non-finite values replaced by 0,
//! which leaves any range that contains zero unchanged. Error metrics always cover finite
//! elements only. [`NonFinitePolicy::Strict`] refuses such tensors instead.

use crate::derivation::{self, Step};
use crate::error::{Error, Result};
use crate::observer::{
    Collected, Family, Granularity, Grid, Instance, ObserverSpec, PlotSnapshot, QParams, Resolved,
};
use crate::params::Params;
use crate::qdq::{self, BlockMetrics};
use crate::quant::QdqMetrics;
use crate::registry;
use crate::shared_stats::{self, SharedStats};
use crate::tensor::{NonFiniteCounts, Tensor};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// What to do with NaN/±Inf values in the input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NonFinitePolicy {
    /// Count them, report them, keep them out of the statistics.
    #[default]
    Exclude,
    /// Refuse tensors that contain any.
    Strict,
}

/// An error as a report carries it (and JavaScript sees it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct ErrorInfo {
    /// `load`, `param`, `framework`, `unknown`, `input` (or, from the page, `internal`/`panic`).
    pub kind: String,
    /// The full message.
    pub message: String,
    /// The framework's exception class, for `framework` errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    /// When the framework raised it: `init`, `forward` or `calculate_qparams`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// The parameter at fault, for `param` errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
}

impl From<&Error> for ErrorInfo {
    fn from(e: &Error) -> Self {
        let (kind, exception, stage, param) = match e {
            Error::Load { .. } => ("load", None, None, None),
            Error::InvalidParam { name, .. } => ("param", None, None, Some(name.clone())),
            Error::Framework { kind, stage, .. } => (
                "framework",
                Some(kind.clone()),
                Some(stage.name().to_string()),
                None,
            ),
            Error::Unknown { .. } => ("unknown", None, None, None),
            Error::Input(_) => ("input", None, None, None),
        };
        ErrorInfo {
            kind: kind.to_string(),
            message: e.to_string(),
            exception,
            stage,
            param,
        }
    }
}

/// Everything one observer run produces: the one result type of the CLI, the explorer, the npm
/// package and the tests.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct Report {
    /// The observer's registry id.
    pub observer: String,
    pub family: Family,
    pub granularity: Granularity,
    /// The parameters as given (every other one has its declared default).
    #[cfg_attr(target_arch = "wasm32", tsify(type = "Record<string, unknown>"))]
    pub params: Params,
    /// False when the observer (or the framework) refused the run; see `error`.
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// The chosen quantization parameters (absent when the run failed).
    #[serde(flatten, default)]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub qparams: Option<QParams>,
    /// Quantize–dequantize error over all batches (finite values); absent for pass-through
    /// observers, failed runs and while `metrics_pending`.
    #[serde(default)]
    pub metrics: Option<QdqMetrics>,
    /// True while the metrics of these qparams are still being computed (a search-only change
    /// answered at once; see the explorer's session).
    #[serde(default)]
    pub metrics_pending: bool,
    /// True when the qparams were searched on state collected earlier (a search-only change):
    /// no pass over the data was needed.
    #[serde(default)]
    pub state_reused: bool,
    pub nonfinite: NonFiniteCounts,
    /// Number of batches and elements observed.
    pub batches: usize,
    pub elements: usize,
    /// The steps by which the observer reached its qparams, recorded by its search
    /// ([`crate::derivation`]); only when asked for (`observe --explain`, [`Run::explained`]).
    /// The last step's values hold the report's `scale` and `zero_point`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub derivation: Vec<Step>,
    /// A snapshot of the observer's state for plots and the golden tests (not serialised).
    #[serde(skip)]
    pub snapshot: PlotSnapshot,
}

impl Report {
    fn base(spec: &ObserverSpec, params: &Params, batches: &[&Tensor]) -> Report {
        Report {
            observer: spec.id.to_string(),
            family: spec.family,
            granularity: spec.granularity,
            params: params.clone(),
            ok: true,
            error: None,
            qparams: None,
            metrics: None,
            metrics_pending: false,
            state_reused: false,
            nonfinite: batches.iter().fold(NonFiniteCounts::default(), |acc, b| {
                acc + shared_stats::nonfinite(&b.data)
            }),
            batches: batches.len(),
            elements: batches.iter().map(|b| b.len()).sum(),
            derivation: Vec::new(),
            snapshot: PlotSnapshot::default(),
        }
    }

    /// A failed run of `spec` with `params`.
    pub fn failed(spec: &ObserverSpec, params: &Params, batches: &[&Tensor], e: &Error) -> Report {
        Report {
            ok: false,
            error: Some(ErrorInfo::from(e)),
            ..Report::base(spec, params, batches)
        }
    }

    /// The registry entry of the observer.
    pub fn spec(&self) -> Option<&'static ObserverSpec> {
        registry::find(&self.observer).ok()
    }
}

/// One observer run: an observer, its parameters and the calibration batches, in order.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    pub spec: &'static ObserverSpec,
    /// Parameters: constructor keywords and (unless `attributes` is given) attributes alike.
    pub params: Params,
    /// Attributes assigned after construction, kept apart from the constructor keywords
    /// (a framework call, as the CLI's `--set` and the golden cases give them).
    pub attributes: Option<Params>,
    pub batches: Vec<&'a Tensor>,
    pub policy: NonFinitePolicy,
    /// Whether the report carries the search's derivation.
    pub explain: bool,
}

/// What a search found: the qparams and, when asked for, the derivation that led to them.
#[derive(Debug, Clone)]
pub struct Searched {
    pub qparams: QParams,
    pub derivation: Vec<Step>,
}

impl<'a> Run<'a> {
    /// Observer `id` (see [`registry::find`]) with `params` over `batches`.
    pub fn new(id: &str, params: Params, batches: &'a [Tensor]) -> Result<Self> {
        Ok(Run {
            spec: registry::find(id)?,
            params,
            attributes: None,
            batches: batches.iter().collect(),
            policy: NonFinitePolicy::Exclude,
            explain: false,
        })
    }

    /// With `explain`, the report carries the derivation of its qparams.
    pub fn explained(mut self, explain: bool) -> Self {
        self.explain = explain;
        self
    }

    /// Assign `attributes` after construction (e.g. `{"upsample_rate": 128}` for PyTorch's
    /// `HistogramObserver`); `params` are then the constructor keywords only.
    pub fn with_attributes(mut self, attributes: Params) -> Self {
        self.attributes = Some(attributes);
        self
    }

    /// Use `policy` for non-finite values.
    pub fn with_policy(mut self, policy: NonFinitePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The observer configured with this run's parameters.
    pub fn resolve(&self) -> Result<Box<dyn Resolved>> {
        match &self.attributes {
            Some(attributes) => self.spec.resolve_call(&self.params, attributes),
            None => self.spec.resolve(&self.params),
        }
    }

    /// The configured observer after it collected every batch (what a framework's observer
    /// object is after the calibration loop).
    pub fn instance(&self) -> Result<Instance> {
        let resolved = self.resolve()?;
        let state = collect(self.spec, resolved.as_ref(), &self.batches, self.policy)?;
        Ok(Instance { resolved, state })
    }

    /// The parameters a report gives: constructor keywords and attributes together.
    fn all_params(&self) -> Params {
        match &self.attributes {
            Some(a) => self.params.merged(a),
            None => self.params.clone(),
        }
    }

    /// The configured observer and the state it collected from every batch.
    fn collected(&self) -> Result<(Box<dyn Resolved>, Box<dyn Collected>)> {
        let resolved = self.resolve()?;
        let state = collect(self.spec, resolved.as_ref(), &self.batches, self.policy)?;
        Ok((resolved, state))
    }

    /// Run it: resolve, collect, search and measure. Refusals are reported in the report. An
    /// explained report's derivation also compares its range with the best clipping on the data
    /// ([`derivation::best_clipping_step`]).
    pub fn report(&self) -> Report {
        let mut report = self.report_alone();
        if self.explain {
            let mut derivation = std::mem::take(&mut report.derivation);
            explain_against_the_best(&mut derivation, &report, &self.batches);
            report.derivation = derivation;
        }
        report
    }

    fn report_alone(&self) -> Report {
        let _shared = SharedStats::share(&self.batches);
        let params = self.all_params();
        match self.collected() {
            Ok((resolved, state)) => conclude(
                self.spec,
                &params,
                resolved.as_ref(),
                state.as_ref(),
                &self.batches,
                Conclusion {
                    with_metrics: true,
                    explain: self.explain,
                },
            ),
            Err(e) => Report::failed(self.spec, &params, &self.batches, &e),
        }
    }
}

impl Run<'_> {
    /// [`Run::report`] with its metrics pass left to the caller, who can then measure several
    /// observers' kernels over the same data in one pass ([`qdq::measure_kernels`]). With one
    /// batch and an observer that quantizes with a per-element kernel, the report comes back
    /// with `metrics_pending` and the kernel; [`complete`] then fills in what the kernel
    /// measured over the batch, the bits [`Run::report`] gives. Otherwise the report is
    /// [`Run::report`]'s and there is no kernel.
    pub fn report_deferred(&self) -> (Report, Option<Box<dyn qdq::QdqKernel>>) {
        let [batch] = self.batches[..] else {
            return (self.report(), None);
        };
        let _shared = SharedStats::share(&self.batches);
        let params = self.all_params();
        let (resolved, state) = match self.collected() {
            Ok(collected) => collected,
            Err(e) => return (Report::failed(self.spec, &params, &self.batches, &e), None),
        };
        let (resolved, state) = (resolved.as_ref(), state.as_ref());
        let searched = match search(
            self.spec,
            &params,
            resolved,
            state,
            &self.batches,
            self.explain,
        ) {
            Ok(searched) => searched,
            Err(failed) => return (*failed, None),
        };
        let kernel = match searched.qparams.grid {
            Grid::None => None,
            _ => resolved.qdq_kernel(&batch.shape, &searched.qparams),
        };
        let with_metrics = kernel.is_none();
        let report = report_with(
            self.spec,
            &params,
            resolved,
            state,
            &self.batches,
            searched,
            with_metrics,
        );
        (report, kernel)
    }
}

/// Add to `steps` (the derivation of `report`) the comparison with the best clipping on
/// `batches`, before its last step, when there is one ([`derivation::best_clipping_step`]).
pub fn explain_against_the_best(steps: &mut Vec<Step>, report: &Report, batches: &[&Tensor]) {
    let Some(q) = &report.qparams else {
        return;
    };
    let data: Vec<&[f32]> = batches.iter().map(|b| &b.data[..]).collect();
    if let Some(step) = derivation::best_clipping_step(q, report.metrics.as_ref(), &data) {
        derivation::insert_before_last(steps, step);
    }
}

/// Fill in the metrics of a report from [`Run::report_deferred`]: `metrics` is what its kernel
/// measured over the one batch ([`qdq::measure_kernel`] or [`qdq::measure_kernels`]).
pub fn complete(report: &mut Report, metrics: &BlockMetrics) {
    let mut total = BlockMetrics::default();
    total.merge(metrics);
    report.metrics = Some(total.finish());
    report.metrics_pending = false;
}

/// Run observer `id` with `params` over `batches` (every error inside the report, except an
/// unknown id).
pub fn run(
    id: &str,
    params: &Params,
    batches: &[Tensor],
    policy: NonFinitePolicy,
) -> Result<Report> {
    Ok(Run::new(id, params.clone(), batches)?
        .with_policy(policy)
        .report())
}

/// Prepare one batch for an observer of the given granularity under `policy`: per-tensor and
/// pass-through observers see the finite values, flattened; the others see the batch's shape
/// with non-finite values replaced by 0.
pub fn prepare_batch(
    batch: &Tensor,
    granularity: Granularity,
    policy: NonFinitePolicy,
) -> Result<Cow<'_, Tensor>> {
    let counts = shared_stats::nonfinite(&batch.data);
    if counts.total() == 0 {
        return Ok(Cow::Borrowed(batch));
    }
    if policy == NonFinitePolicy::Strict {
        return Err(Error::input(format!(
            "the tensor has {} NaN, {} +Inf and {} -Inf values and strict mode refuses non-finite input",
            counts.nan, counts.pos_inf, counts.neg_inf
        )));
    }
    let cleaned = match granularity {
        Granularity::PerTensor | Granularity::PassThrough => {
            let data: Vec<f32> = batch
                .data
                .iter()
                .copied()
                .filter(|v| v.is_finite())
                .collect();
            Tensor {
                shape: vec![data.len()],
                data,
                dtype: batch.dtype,
            }
        }
        _ => Tensor {
            shape: batch.shape.clone(),
            data: batch
                .data
                .iter()
                .map(|&v| if v.is_finite() { v } else { 0.0 })
                .collect(),
            dtype: batch.dtype,
        },
    };
    Ok(Cow::Owned(cleaned))
}

/// Collect `resolved`'s state from `batches`, in order.
pub fn collect(
    spec: &ObserverSpec,
    resolved: &dyn Resolved,
    batches: &[&Tensor],
    policy: NonFinitePolicy,
) -> Result<Box<dyn Collected>> {
    let granularity = resolved.granularity().unwrap_or(spec.granularity);
    let mut state = resolved.new_state();
    for batch in batches {
        let prepared = prepare_batch(batch, granularity, policy)?;
        resolved.feed(state.as_mut(), &prepared)?;
    }
    Ok(state)
}

/// Error metrics of quantize–dequantizing `batches` with `q` the observer's way: one fused pass
/// per batch where the observer has a kernel, else `fake_quantize` and a pass over its result;
/// either way in fixed pieces merged in order (see [`crate::qdq`]), so the result does not
/// depend on the number of threads.
pub fn measure(
    resolved: &dyn Resolved,
    state: &dyn Collected,
    q: &QParams,
    batches: &[&Tensor],
) -> Result<QdqMetrics> {
    let mut total = BlockMetrics::default();
    for batch in batches {
        let metrics = match resolved.qdq_kernel(&batch.shape, q) {
            Some(kernel) => qdq::measure_kernel(&batch.data, kernel.as_ref()),
            None => {
                let dq = resolved.fake_quantize(state, batch, q)?;
                qdq::measure_pair(batch, &dq, q)
            }
        };
        total.merge(&metrics);
    }
    Ok(total.finish())
}

/// What [`conclude`] adds to the qparams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conclusion {
    /// Measure the error metrics (a pass over the data); otherwise they are left pending.
    pub with_metrics: bool,
    /// Record the search's derivation.
    pub explain: bool,
}

/// The report of an observer that collected `state` from `batches`: its qparams (a pure search)
/// and what `conclusion` asks for.
pub fn conclude(
    spec: &ObserverSpec,
    params: &Params,
    resolved: &dyn Resolved,
    state: &dyn Collected,
    batches: &[&Tensor],
    conclusion: Conclusion,
) -> Report {
    match search(spec, params, resolved, state, batches, conclusion.explain) {
        Ok(searched) => report_with(
            spec,
            params,
            resolved,
            state,
            batches,
            searched,
            conclusion.with_metrics,
        ),
        Err(failed) => *failed,
    }
}

/// The first half of [`conclude`]: the qparams of `state` (the observer's pure search), with
/// `explain` the steps it recorded, or the failed report that says why there are none. A caller
/// can look at them before paying for the metrics.
pub fn search(
    spec: &ObserverSpec,
    params: &Params,
    resolved: &dyn Resolved,
    state: &dyn Collected,
    batches: &[&Tensor],
    explain: bool,
) -> std::result::Result<Searched, Box<Report>> {
    let (qparams, derivation) = derivation::capture(explain, || resolved.qparams(state));
    match qparams {
        Ok(qparams) => Ok(Searched {
            qparams,
            derivation,
        }),
        Err(e) => {
            let mut r = Report::failed(spec, params, batches, &e);
            r.snapshot = state.plot();
            r.derivation = derivation;
            Err(Box::new(r))
        }
    }
}

/// The second half of [`conclude`]: the report with the qparams [`search`] found, and with
/// `with_metrics` their error metrics.
pub fn report_with(
    spec: &ObserverSpec,
    params: &Params,
    resolved: &dyn Resolved,
    state: &dyn Collected,
    batches: &[&Tensor],
    searched: Searched,
    with_metrics: bool,
) -> Report {
    let Searched {
        qparams: q,
        derivation,
    } = searched;
    let quantizes = !matches!(q.grid, Grid::None);
    let metrics = match (quantizes, with_metrics) {
        (true, true) => match measure(resolved, state, &q, batches) {
            Ok(m) => Some(m),
            Err(e) => return Report::failed(spec, params, batches, &e),
        },
        _ => None,
    };
    Report {
        granularity: resolved.granularity().unwrap_or(spec.granularity),
        qparams: Some(q),
        metrics,
        metrics_pending: quantizes && !with_metrics,
        derivation,
        snapshot: state.plot(),
        ..Report::base(spec, params, batches)
    }
}

/// Split `t` into `count` consecutive batches along `axis`, like `torch.chunk` (chunk size
/// `⌈n / count⌉`; the last may be smaller and there may be fewer than `count`); each batch keeps
/// the axis. `count = None` gives one batch per index.
pub fn split_batches(t: &Tensor, axis: usize, count: Option<usize>) -> Result<Vec<Tensor>> {
    if axis >= t.ndim() {
        return Err(Error::input(format!(
            "cannot split a tensor of shape {:?} along axis {axis}",
            t.shape
        )));
    }
    let n = t.shape[axis];
    let count = count.unwrap_or(n);
    if count == 0 || n == 0 {
        return Err(Error::input(format!(
            "cannot split axis {axis} of length {n} into {count} batches"
        )));
    }
    let size = n.div_ceil(count.min(n));
    let view = t.view();
    Ok(view
        .axis_chunks_iter(ndarray::Axis(axis), size)
        .map(|part| Tensor {
            shape: part.shape().to_vec(),
            data: part.iter().copied().collect(),
            dtype: t.dtype,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_the_axis_like_torch_chunk() {
        let t = Tensor::new(vec![2, 3], vec![1., 2., 3., 4., 5., 6.]).unwrap();
        let parts = split_batches(&t, 1, None).unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[1].shape, vec![2, 1]);
        assert_eq!(parts[1].data, vec![2., 5.]);
        let parts = split_batches(&t, 1, Some(2)).unwrap();
        assert_eq!(parts.iter().map(|p| p.shape[1]).collect::<Vec<_>>(), [2, 1]);
        assert!(split_batches(&t, 2, None).is_err());
        assert!(split_batches(&t, 0, Some(0)).is_err());
    }

    #[test]
    fn the_resolved_strategy_decides_whether_non_finite_values_keep_the_shape() {
        let mut data: Vec<f32> = (0..32).map(|i| i as f32 - 10.0).collect();
        data[5] = f32::NAN;
        let batches = [Tensor::new(vec![4, 8], data).unwrap()];
        let run = |strategy: &str| {
            let params = Params::new()
                .with("base_name", "weight")
                .with("strategy", strategy);
            let r = Run::new("llmcompressor.memoryless_minmax", params, &batches)
                .unwrap()
                .report();
            assert!(r.ok, "{strategy}: {:?}", r.error);
            (r.granularity, r.qparams.unwrap().scale.len())
        };
        assert_eq!(run("channel"), (Granularity::PerChannel, 4));
        assert_eq!(run("tensor"), (Granularity::PerTensor, 1));
    }

    #[test]
    fn non_finite_values_are_excluded_or_refused() {
        let t = Tensor::from_vec(vec![1.0, f32::NAN, -2.0, f32::INFINITY]);
        let per_tensor =
            prepare_batch(&t, Granularity::PerTensor, NonFinitePolicy::Exclude).unwrap();
        assert_eq!(per_tensor.data, vec![1.0, -2.0]);
        let shaped = prepare_batch(&t, Granularity::PerChannel, NonFinitePolicy::Exclude).unwrap();
        assert_eq!(shaped.data, vec![1.0, 0.0, -2.0, 0.0]);
        let err = prepare_batch(&t, Granularity::PerTensor, NonFinitePolicy::Strict).unwrap_err();
        assert!(err.to_string().contains("1 NaN, 1 +Inf"), "{err}");
    }
}
