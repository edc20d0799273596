//! Running an observer over calibration batches and measuring what its choice costs.
//!
//! This is the one driver shared by the CLI, the wasm boundary and the tests.
//!
//! **Non-finite values.** PyTorch lets one NaN poison an observer's range. quantscope instead
//! counts NaN/±Inf and, by default ([`NonFinitePolicy::Exclude`]), keeps them out of the
//! statistics: per-tensor observers see only the finite values (flattened); observers that need
//! the tensor's shape (per-channel, per-group, per-block) see non-finite values replaced by 0,
//! which leaves any range that contains zero unchanged. Error metrics always cover finite
//! elements only. [`NonFinitePolicy::Strict`] refuses such tensors instead.

use crate::error::{Error, Result};
use crate::observer::{Observer, ObserverState, QParams};
use crate::params::Params;
use crate::quant::{accumulate_metrics, MetricsAccumulator, QdqMetrics};
use crate::registry::{self, Granularity, ObserverSpec};
use crate::tensor::{NonFiniteCounts, Tensor};
use serde::Serialize;

/// What to do with NaN/±Inf values in the input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NonFinitePolicy {
    /// Count them, report them, keep them out of the statistics.
    #[default]
    Exclude,
    /// Refuse tensors that contain any.
    Strict,
}

/// Everything one observer run produces.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub observer: String,
    pub params: Params,
    #[serde(flatten)]
    pub qparams: QParams,
    /// Quantize–dequantize error over all batches, or `None` for pass-through observers.
    pub qdq: Option<QdqMetrics>,
    pub nonfinite: NonFiniteCounts,
    /// Number of batches and elements observed.
    pub batches: usize,
    pub elements: usize,
    /// Framework quirks reproduced by this observer (from the registry).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quirks: Vec<&'static str>,
    #[serde(skip)]
    pub state: ObserverState,
}

/// Prepare one batch for an observer of the given granularity under `policy`.
pub fn prepare_batch(
    batch: &Tensor,
    granularity: Granularity,
    policy: NonFinitePolicy,
) -> Result<std::borrow::Cow<'_, Tensor>> {
    use std::borrow::Cow;
    let counts = batch.nonfinite();
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

/// Feed `batches` to a fresh observer `spec` built with `params`; returns the observer.
pub fn observe_all(
    spec: &ObserverSpec,
    params: &Params,
    batches: &[Tensor],
    policy: NonFinitePolicy,
) -> Result<Box<dyn Observer>> {
    observe_all_with_attributes(spec, params, &Params::new(), batches, policy)
}

/// [`observe_all`] with attributes assigned right after construction, as Python code does
/// with `obs.upsample_rate = 128` (see [`Observer::set_attribute`]).
pub fn observe_all_with_attributes(
    spec: &ObserverSpec,
    params: &Params,
    attributes: &Params,
    batches: &[Tensor],
    policy: NonFinitePolicy,
) -> Result<Box<dyn Observer>> {
    let mut observer = spec.build(params)?;
    for (name, value) in &attributes.0 {
        observer.set_attribute(name, value)?;
    }
    for batch in batches {
        let prepared = prepare_batch(batch, spec.granularity, policy)?;
        observer.observe(&prepared)?;
    }
    Ok(observer)
}

/// Error metrics of `observer`'s quantize–dequantize with `q` over `batches`.
pub fn measure(observer: &dyn Observer, q: &QParams, batches: &[Tensor]) -> Result<QdqMetrics> {
    let mut acc = MetricsAccumulator::default();
    for batch in batches {
        let dq = observer.fake_quantize(batch, q)?;
        accumulate_metrics(&mut acc, batch, &dq, q);
    }
    Ok(acc.finish())
}

/// Run observer `id` with `params` over `batches` and measure its quantization error.
pub fn run(
    id: &str,
    params: &Params,
    batches: &[Tensor],
    policy: NonFinitePolicy,
) -> Result<Report> {
    run_with_attributes(id, params, &Params::new(), batches, policy)
}

/// [`run`] with attributes assigned right after construction (e.g. `{"upsample_rate": 128}`
/// for PyTorch's `HistogramObserver`).
pub fn run_with_attributes(
    id: &str,
    params: &Params,
    attributes: &Params,
    batches: &[Tensor],
    policy: NonFinitePolicy,
) -> Result<Report> {
    let spec = registry::find(id)?;
    let observer = observe_all_with_attributes(spec, params, attributes, batches, policy)?;
    report(spec, params, observer.as_ref(), batches)
}

/// Build the [`Report`] of an observer that has seen `batches`.
pub fn report(
    spec: &ObserverSpec,
    params: &Params,
    observer: &dyn Observer,
    batches: &[Tensor],
) -> Result<Report> {
    let qparams = observer.qparams()?;
    let qdq = match qparams.grid {
        crate::observer::Grid::None => None,
        _ => Some(measure(observer, &qparams, batches)?),
    };
    Ok(Report {
        observer: spec.id.to_string(),
        params: params.clone(),
        qparams,
        qdq,
        nonfinite: batches
            .iter()
            .fold(NonFiniteCounts::default(), |acc, b| acc + b.nonfinite()),
        batches: batches.len(),
        elements: batches.iter().map(Tensor::len).sum(),
        quirks: spec.quirks.clone(),
        state: observer.state(),
    })
}

/// Split `tensor` into batches along `axis` (one batch per index, the axis removed).
pub fn split_batches(tensor: &Tensor, axis: usize) -> Result<Vec<Tensor>> {
    if axis >= tensor.ndim() {
        return Err(Error::input(format!(
            "cannot split a tensor of shape {:?} along axis {axis}",
            tensor.shape
        )));
    }
    let view = tensor.view();
    let mut out = Vec::with_capacity(tensor.shape[axis]);
    for sub in view.axis_iter(ndarray::Axis(axis)) {
        let shape = sub.shape().to_vec();
        let data: Vec<f32> = sub.iter().copied().collect();
        out.push(Tensor {
            shape,
            data,
            dtype: tensor.dtype,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_removes_the_axis() {
        let t = Tensor::new(vec![2, 3], vec![1., 2., 3., 4., 5., 6.]).unwrap();
        let parts = split_batches(&t, 1).unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[1].shape, vec![2]);
        assert_eq!(parts[1].data, vec![2., 5.]);
        assert!(split_batches(&t, 2).is_err());
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
