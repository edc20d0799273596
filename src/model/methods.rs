//! The quantization methods a checkpoint is ranked by: observers (run through the driver,
//! [`crate::engine::run`]) and number formats ([`crate::codec::evaluate`]).
//!
//! An observer method is an observer id with its default parameters, so its result is exactly
//! what `quantscope observe FILE:TENSOR --observer ID` reports. A format method is a label of
//! the formats comparison (`fp8_e4m3`, `mxfp4_e2m1`, `int4 per group of 32`, …), whose result is
//! that row of `quantscope formats FILE:TENSOR`.
//!
//! Methods with one scale per channel (per-channel observers, `… per channel` formats) apply to
//! tensors with two or more axes only; other tensors have no result for them.

use crate::codec;
use crate::engine::{self, NonFinitePolicy};
use crate::error::{Error, Result};
use crate::params::Params;
use crate::qdq::{BlockMetrics, QdqKernel};
use crate::quant::QdqMetrics;
use crate::registry::{self, Granularity};
use crate::tensor::Tensor;
use serde::{Deserialize, Serialize};

/// What a method is.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MethodKind {
    /// A registry observer with these parameters.
    Observer {
        params: Params,
        #[serde(skip)]
        per_channel: bool,
    },
    /// A format family of the quantizer registry with these parameters.
    Format {
        family: &'static str,
        params: Params,
        #[serde(skip)]
        per_channel: bool,
    },
}

/// One way of quantizing a tensor, named by `id` in results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Method {
    /// The observer id or the format label.
    pub id: String,
    #[serde(flatten)]
    pub kind: MethodKind,
}

impl Method {
    /// Its result `r` on a tensor as the diagnosis weighs it.
    pub fn outcome(&self, r: &MethodResult) -> crate::diagnosis::Outcome {
        let (format, per_channel) = match &self.kind {
            MethodKind::Observer { per_channel, .. } => (false, *per_channel),
            MethodKind::Format { per_channel, .. } => (true, *per_channel),
        };
        crate::diagnosis::Outcome {
            label: self.id.clone(),
            format,
            per_tensor: !per_channel,
            sqnr_db: r.sqnr_db,
        }
    }
}

/// Whether a result comes from an observer or a number format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    Observer,
    Format,
}

/// What one method does to one tensor. Metrics cover the finite values (see
/// [`crate::quant::QdqMetrics`]); `sqnr_db` is `None` when there is no error at all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct MethodResult {
    pub id: String,
    /// `"observer"` or `"format"`.
    pub kind: ResultKind,
    pub sqnr_db: Option<f64>,
    pub mse: Option<f64>,
    pub max_abs_err: Option<f64>,
    pub clipped_fraction: Option<f64>,
    /// Why this method gave no result on this tensor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub error: Option<String>,
}

/// The documented default methods:
/// 1. `torch.MinMaxObserver`: 8-bit per tensor, PyTorch's defaults (`quint8`,
///    `per_tensor_affine`);
/// 2. `torch.PerChannelMinMaxObserver`: 8-bit per channel along axis 0 (`qint8`,
///    `per_channel_affine`), for tensors with two or more axes;
/// 3. `torch.HistogramObserver`: PyTorch's L2-minimising range search over 2048 bins (`quint8`);
/// 4. `fp8_e4m3`: FP8 E4M3 elements with one float32 amax scale per tensor;
/// 5. `mxfp4_e2m1`: OCP MXFP4, blocks of 32 along the last axis sharing an E8M0 scale;
/// 6. `int4 per group of 32`: symmetric int4 with one scale per 32 consecutive values along
///    the last axis.
pub fn default_methods() -> Vec<Method> {
    let mut methods: Vec<Method> = [
        "torch.MinMaxObserver",
        "torch.PerChannelMinMaxObserver",
        "torch.HistogramObserver",
    ]
    .into_iter()
    .filter_map(|id| observer(id).ok())
    .collect();
    methods.extend(
        ["fp8_e4m3", "mxfp4_e2m1", "int4 per group of 32"]
            .into_iter()
            .filter_map(|label| format(label).ok()),
    );
    methods
}

/// The observer `id` of the registry, with its default parameters.
pub fn observer(id: &str) -> Result<Method> {
    let spec = registry::find(id)?;
    Ok(Method {
        id: spec.id.to_string(),
        kind: MethodKind::Observer {
            params: Params::new(),
            per_channel: spec.granularity == Granularity::PerChannel,
        },
    })
}

/// A shape for which the line-up holds every format (two axes, a whole number of ggml's
/// 256-value super-blocks), so that every label can be named.
const ANY_SHAPE: [usize; 2] = [2, 256];

/// Every format label of the comparison line-up, with its family and parameters.
pub fn format_labels() -> Vec<(String, &'static str, Params)> {
    codec::lineup(&ANY_SHAPE)
        .into_iter()
        .filter_map(|(family, params)| {
            let label = codec::find(family)
                .and_then(|f| f.build(&params, &ANY_SHAPE))
                .ok()?
                .label();
            Some((label, family, params))
        })
        .collect()
}

/// The methods a user can choose from, by name: the defaults, every observer of the registry
/// that quantizes (pass-through observers have nothing to measure) and every format label.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct MethodChoices {
    pub defaults: Vec<String>,
    pub observers: Vec<String>,
    pub formats: Vec<String>,
}

/// Every method name [`resolve`] accepts, grouped.
pub fn choices() -> MethodChoices {
    MethodChoices {
        defaults: default_methods().into_iter().map(|m| m.id).collect(),
        observers: registry::observers()
            .iter()
            .filter(|s| s.granularity != Granularity::PassThrough)
            .map(|s| s.id.to_string())
            .collect(),
        formats: format_labels()
            .into_iter()
            .map(|(label, _, _)| label)
            .collect(),
    }
}

/// The methods named in `names`, in order: each an observer id of the registry or else a format
/// label (see [`format()`]); an empty list means the defaults. Fails on the first unknown name
/// and on duplicates.
pub fn resolve(names: &[String]) -> Result<Vec<Method>> {
    if names.is_empty() {
        return Ok(default_methods());
    }
    let mut out: Vec<Method> = Vec::with_capacity(names.len());
    for name in names {
        let method = match observer(name) {
            Ok(m) => m,
            Err(_) if !name.contains('.') || format(name).is_ok() => format(name)?,
            Err(e) => return Err(e),
        };
        if out.iter().any(|m| m.id == method.id) {
            return Err(Error::input(format!(
                "method `{}` is named twice",
                method.id
            )));
        }
        out.push(method);
    }
    Ok(out)
}

/// A label reduced to what matters: lower case, without spaces, `_`, `-` and brackets.
fn normalise(label: &str) -> String {
    label
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | '-' | '(' | ')'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The format with this label (case, spaces and `_` ignored, so `int4_per_group_of_32` works),
/// or a unique abbreviation of one (`mxfp4`).
pub fn format(label: &str) -> Result<Method> {
    let labels = format_labels();
    let wanted = normalise(label);
    let exact = labels.iter().find(|(l, _, _)| normalise(l) == wanted);
    let prefixed: Vec<_> = labels
        .iter()
        .filter(|(l, _, _)| !wanted.is_empty() && normalise(l).starts_with(&wanted))
        .collect();
    let found = match (exact, prefixed.as_slice()) {
        (Some(f), _) => f,
        (None, [one]) => *one,
        _ => {
            let names: Vec<&str> = labels.iter().map(|(l, _, _)| l.as_str()).collect();
            return Err(Error::Unknown {
                what: "format",
                name: label.to_string(),
                hint: format!(
                    "{}; formats: {}",
                    if prefixed.len() > 1 {
                        " (ambiguous)"
                    } else {
                        ""
                    },
                    names.join(", ")
                ),
            });
        }
    };
    let (label, family, params) = found.clone();
    Ok(format_method(label, family, params))
}

/// The method of format `family` with `params`, named `label` in results (per channel when
/// its `granularity` says so).
fn format_method(label: String, family: &'static str, params: Params) -> Method {
    let per_channel = params
        .get("granularity")
        .and_then(serde_json::Value::as_str)
        == Some("per_channel");
    Method {
        id: label,
        kind: MethodKind::Format {
            family,
            params,
            per_channel,
        },
    }
}

/// The format `id` of the quantizer registry with `params` (what `quantscope quantize
/// --quantizer ID --params JSON` takes), named in results by its label, as [`format()`] names it.
pub fn format_by_id(id: &str, params: Params) -> Result<Method> {
    let spec = codec::find(id).map_err(|_| Error::Unknown {
        what: "format",
        name: id.to_string(),
        hint: format!(
            "; format ids: {}",
            codec::codecs()
                .iter()
                .map(|f| f.id)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })?;
    if let Some(why) = spec.decode_only {
        return Err(Error::input(format!(
            "format {id} is decode-only ({why}): it cannot quantize a checkpoint's tensors"
        )));
    }
    let needs_imatrix =
        crate::formats::ggml::GgmlType::from_id(spec.id).is_some_and(|t| t.requires_imatrix());
    if needs_imatrix && params.get("imatrix").is_none() {
        return Err(Error::param(
            "imatrix",
            format!("format {id} cannot quantize without an importance matrix (ggml_quantize_requires_imatrix), and a checkpoint's tensors come without one"),
        ));
    }
    let label = spec.build(&params, &ANY_SHAPE)?.label();
    Ok(format_method(label, spec.id, params))
}

impl Method {
    /// True when this method gives a result for a tensor of `shape` (per-channel methods need
    /// two or more axes).
    pub fn applies_to(&self, shape: &[usize]) -> bool {
        let per_channel = match &self.kind {
            MethodKind::Observer { per_channel, .. } | MethodKind::Format { per_channel, .. } => {
                *per_channel
            }
        };
        !per_channel || shape.len() >= 2
    }

    /// Run this method on `tensor` (non-finite values handled as `observe` and `formats` do):
    /// through the driver ([`engine::run`]) or [`codec::evaluate`], each measuring on its own.
    pub fn run(&self, tensor: &Tensor) -> MethodResult {
        let outcome = match &self.kind {
            MethodKind::Observer { params, .. } => {
                engine::run(&self.id, params, std::slice::from_ref(tensor), EXCLUDE)
                    .and_then(observer_metrics)
            }
            MethodKind::Format { family, params, .. } => {
                codec::evaluate(family, params, tensor).map(|r| r.metrics)
            }
        };
        self.result(outcome)
    }

    /// [`Method::run`] up to the metrics pass: the kernel that measures `tensor`, when the
    /// method has one, for a caller that measures several methods in one pass over the data
    /// ([`crate::qdq::measure_kernels`]); [`Prepared::finish`] then gives the result
    /// [`Method::run`] gives, bit for bit.
    pub fn prepare(&self, tensor: &Tensor) -> Prepared<'_> {
        let stage = match &self.kind {
            MethodKind::Observer { params, .. } => {
                let batches = std::slice::from_ref(tensor);
                match engine::Run::new(&self.id, params.clone(), batches) {
                    Ok(run) => match run.with_policy(EXCLUDE).report_deferred() {
                        (report, Some(kernel)) => Stage::Measure {
                            kernel,
                            report: Some(Box::new(report)),
                        },
                        (report, None) => Stage::Done(observer_metrics(report)),
                    },
                    Err(e) => Stage::Done(Err(e)),
                }
            }
            MethodKind::Format { family, params, .. } => {
                match codec::evaluation_kernel(family, params, tensor) {
                    Ok(kernel) => Stage::Measure {
                        kernel,
                        report: None,
                    },
                    Err(outcome) => Stage::Done(outcome),
                }
            }
        };
        Prepared {
            method: self,
            stage,
        }
    }

    /// The result of `outcome` (metrics, or why there are none).
    fn result(&self, outcome: Result<QdqMetrics>) -> MethodResult {
        let kind = match self.kind {
            MethodKind::Observer { .. } => ResultKind::Observer,
            MethodKind::Format { .. } => ResultKind::Format,
        };
        match outcome {
            Ok(m) => MethodResult {
                id: self.id.clone(),
                kind,
                sqnr_db: m.sqnr_db,
                mse: Some(m.mse),
                max_abs_err: Some(m.max_abs_err),
                clipped_fraction: Some(m.clipped_fraction),
                error: None,
            },
            Err(e) => MethodResult {
                id: self.id.clone(),
                kind,
                sqnr_db: None,
                mse: None,
                max_abs_err: None,
                clipped_fraction: None,
                error: Some(e.to_string()),
            },
        }
    }
}

/// Methods treat non-finite values as `observe` does by default.
const EXCLUDE: NonFinitePolicy = NonFinitePolicy::Exclude;

/// An observer report's metrics, or why it has none.
fn observer_metrics(report: engine::Report) -> Result<QdqMetrics> {
    match (report.error, report.metrics) {
        (Some(e), _) => Err(Error::input(e.message)),
        (None, Some(m)) => Ok(m),
        (None, None) => Err(Error::input(
            "a pass-through observer: it does not quantize",
        )),
    }
}

/// A method run on a tensor up to its metrics pass ([`Method::prepare`]).
pub struct Prepared<'a> {
    method: &'a Method,
    stage: Stage,
}

enum Stage {
    /// The outcome is known (no kernel, or the method failed before measuring).
    Done(Result<QdqMetrics>),
    /// The metrics are what `kernel` measures; an observer's report is completed with them.
    Measure {
        kernel: Box<dyn QdqKernel>,
        report: Option<Box<engine::Report>>,
    },
}

impl Prepared<'_> {
    /// The kernel to measure the tensor with, if the method is waiting for it.
    pub fn kernel(&self) -> Option<&dyn QdqKernel> {
        match &self.stage {
            Stage::Measure { kernel, .. } => Some(kernel.as_ref()),
            Stage::Done(_) => None,
        }
    }

    /// The result, given what [`Prepared::kernel`] measured over the tensor (ignored when
    /// there is no kernel).
    pub fn finish(self, measured: Option<&BlockMetrics>) -> MethodResult {
        let outcome = match (self.stage, measured) {
            (Stage::Done(outcome), _) => outcome,
            (Stage::Measure { report, .. }, Some(m)) => match report {
                Some(mut report) => {
                    engine::complete(&mut report, m);
                    observer_metrics(*report)
                }
                None => Ok(m.finish()),
            },
            (Stage::Measure { .. }, None) => Err(Error::input("the tensor was not measured")),
        };
        self.method.result(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_resolve() {
        assert_eq!(format("mxfp4").unwrap().id, "mxfp4_e2m1");
        assert_eq!(
            format("INT4_per_group_of_32").unwrap().id,
            "int4 per group of 32"
        );
        assert_eq!(format("int4").unwrap().id, "int4");
        let e = format("fp8").unwrap_err().to_string();
        assert!(e.contains("ambiguous") && e.contains("fp8_e5m2"), "{e}");
        assert!(format("int8 per channel").unwrap().applies_to(&[2, 2]));
        assert!(!format("int8 per channel").unwrap().applies_to(&[4]));
        assert!(observer("nope").is_err());
        assert_eq!(format("ggml.Q4_K").unwrap().id, "ggml.Q4_K");
        assert_eq!(format("bnb.nf4").unwrap().id, "bnb.nf4");
        assert_eq!(format("ggml.mxfp4").unwrap().id, "ggml.MXFP4");
        let named = |names: &[&str]| {
            resolve(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .map(|ms| ms.into_iter().map(|m| m.id).collect::<Vec<_>>())
        };
        assert_eq!(
            named(&["torch.HistogramObserver", "ggml.Q4_K", "mxfp4"]).unwrap(),
            ["torch.HistogramObserver", "ggml.Q4_K", "mxfp4_e2m1"]
        );
        let e = named(&["torch.NopeObserver"]).unwrap_err().to_string();
        assert!(e.contains("observer") && e.contains("NopeObserver"), "{e}");
        assert!(named(&["int8", "int8"])
            .unwrap_err()
            .to_string()
            .contains("twice"));
        for (label, family, params) in format_labels() {
            assert_eq!(
                format_by_id(family, params).unwrap(),
                format(&label).unwrap(),
                "{label}"
            );
        }
        let e = format_by_id("fp8_e4m3", Params::new())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("format ids: int, ") && e.contains("minifloat"),
            "{e}"
        );
        let e = format_by_id("ggml.IQ2_XXS", Params::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("without an importance matrix"), "{e}");
        assert!(format_by_id("ggml.IQ2_S", Params::new()).is_ok());
        let c = choices();
        assert!(c.formats.iter().any(|f| f == "ggml.Q4_K"));
        assert!(c.observers.iter().any(|o| o == "torch.HistogramObserver"));
        assert!(!c.observers.iter().any(|o| o == "torch.NoopObserver"));
        assert_eq!(c.defaults.len(), 6);
        let ids: Vec<String> = default_methods().into_iter().map(|m| m.id).collect();
        assert_eq!(
            ids,
            [
                "torch.MinMaxObserver",
                "torch.PerChannelMinMaxObserver",
                "torch.HistogramObserver",
                "fp8_e4m3",
                "mxfp4_e2m1",
                "int4 per group of 32"
            ]
        );
    }
}
