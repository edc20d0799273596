//! ONNX Runtime 1.31.1 calibraters (`onnxruntime.quantization.calibrate`), with ORT's own
//! scale/zero-point formula and quantization (`quant_utils`).
//!
//! ORT calibrates through `collect_data(reader)` calls. **One call stacks every array the
//! reader yields** (so histograms see the concatenation and a moving average is a plain mean of
//! the per-batch minima/maxima); ranges and histograms are merged only **between** calls. The
//! `collect_mode` parameter chooses which of the two an observed batch is:
//! `per_batch` = one `collect_data` call per batch, `single_reader` = every batch from one
//! reader in a single call (the observer keeps what that call would hold — per-batch min/max
//! for MinMax, the batches themselves for the histogram methods, as ORT does — and does the
//! pooled computation when asked for qparams).
//!
//! Parameters use `create_calibrator`'s `extra_options` names and defaults; they may be given at
//! the top level or nested in an `extra_options` object (as the golden cases record them).
//! `quant_type`, `qdq_symmetric` and `min_real_range` choose how ORT's quantizer turns the range
//! into scale and zero point (`get_qmin_qmax_for_qType`, `compute_scale_zp`).

mod collector;
mod entropy;
mod histogram;
mod minmax;
mod percentile;
mod qparams;

pub use collector::{Collected, HistKind};
pub use entropy::{entropy_threshold, EntropySearch};
pub use percentile::{distribution, percentile_range, Scenario};
pub use qparams::{compute_scale_zp, QuantOptions, QuantType};

use crate::error::{Error, Result};
use crate::observer::{Family, Granularity, ObserverSpec, Preset};
use crate::params::{ParamSpec, Params};
use serde_json::Value;

/// The framework version reproduced.
pub const VERSION: &str = "onnxruntime 1.31.1";

/// How observed batches map to `collect_data` calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectMode {
    /// One `collect_data` call per batch.
    PerBatch,
    /// All batches in one `collect_data` call.
    SingleReader,
}

impl CollectMode {
    fn parse(p: &Params) -> Result<Self> {
        match p.str_or("collect_mode", "per_batch")? {
            "per_batch" => Ok(CollectMode::PerBatch),
            "single_reader" => Ok(CollectMode::SingleReader),
            other => Err(Error::param(
                "collect_mode",
                format!("expected per_batch or single_reader, got {other}"),
            )),
        }
    }
}

/// The parameters every ORT calibrater takes (how batches are collected, how the range becomes
/// qparams).
fn common_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::choice(
            "collect_mode",
            &["per_batch", "single_reader"],
            "per_batch",
            "per_batch: one collect_data() call per batch (ranges/histograms merge between calls, moving average is an EMA); single_reader: every batch in one call (arrays concatenated)",
        ),
        ParamSpec::choice(
            "quant_type",
            &QuantType::NAMES,
            "uint8",
            "activation type the range is quantized to (ORT's default QUInt8)",
        )
        .search_only(),
        ParamSpec::bool(
            "qdq_symmetric",
            false,
            "ActivationSymmetric: symmetric compute_scale_zp (int8 then uses −127..127)",
        )
        .search_only(),
        ParamSpec::float(
            "min_real_range",
            0.0,
            1e30,
            Value::Null,
            "MinimumRealRange: enforce rmax − rmin ≥ this before computing the scale",
        )
        .search_only(),
    ]
}

/// The quantization options of a (flattened) parameter set.
fn quant_options(p: &Params) -> Result<QuantOptions> {
    Ok(QuantOptions {
        quant_type: QuantType::parse(p.str_or("quant_type", "uint8")?)?,
        symmetric: p.bool_or("qdq_symmetric", false)?,
        min_real_range: p.opt_f64("min_real_range")?.map(|v| v as f32),
    })
}

/// Flatten `{"extra_options": {...}, ...}` into one parameter set, check `calibrate_method`,
/// and validate every key this calibrater declares. Keys of `extra_options` that are not
/// calibrater options are ignored (as ORT does) and reported in the returned notes.
fn flatten(params: &Params, method: &str, specs: &[ParamSpec]) -> Result<(Params, Vec<String>)> {
    let mut flat = Params::new();
    let mut notes = Vec::new();
    for (k, v) in &params.0 {
        if k != "extra_options" && k != "calibrate_method" {
            flat.0.insert(k.clone(), v.clone());
        }
    }
    if let Some(m) = params.opt_str("calibrate_method")? {
        if m != method {
            return Err(Error::param(
                "calibrate_method",
                format!("this observer is the {method} calibrater, got {m}"),
            ));
        }
    }
    match params.get("extra_options") {
        None => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                if specs.iter().any(|s| s.name == k) {
                    flat.0.insert(k.clone(), v.clone());
                } else {
                    notes.push(format!(
                        "extra_options key `{k}` is not an option of this calibrater and was ignored"
                    ));
                }
            }
        }
        Some(other) => {
            return Err(Error::param(
                "extra_options",
                format!("expected a JSON object, got {other}"),
            ))
        }
    }
    for (k, v) in &flat.0 {
        if let Some(spec) = specs.iter().find(|s| s.name == k) {
            spec.validate(v)?;
        }
    }
    Ok((flat, notes))
}

fn minmax_params() -> Vec<ParamSpec> {
    let mut p = vec![
        ParamSpec::bool(
            "symmetric",
            false,
            "make each collected range symmetric: (−max|·|, +max|·|)",
        ),
        ParamSpec::bool(
            "moving_average",
            false,
            "average the per-batch minima/maxima instead of taking the global min/max",
        ),
        ParamSpec::float(
            "averaging_constant",
            0.0,
            1.0,
            0.01,
            "moving-average smoothing factor c between collect_data calls: v += c·(new − v)",
        ),
    ];
    p.extend(common_params());
    p
}

fn entropy_params() -> Vec<ParamSpec> {
    let mut p = vec![
        ParamSpec::int(
            "num_bins",
            1,
            1 << 20,
            128,
            "histogram bins (grows when later calls exceed the range)",
        ),
        ParamSpec::int(
            "num_quantized_bins",
            1,
            1 << 20,
            128,
            "bins of the quantized distribution q; thresholds tried: num_quantized_bins/2 ..= num_bins/2 bins each side",
        )
        .search_only(),
        ParamSpec::bool(
            "symmetric",
            false,
            "accepted but without effect: the entropy collector always histograms signed values",
        ),
    ];
    p.extend(common_params());
    p
}

fn percentile_params() -> Vec<ParamSpec> {
    let mut p = vec![
        ParamSpec::int("num_bins", 1, 1 << 20, 2048, "histogram bins (grows with the data)"),
        ParamSpec::float(
            "percentile",
            0.0,
            100.0,
            99.999,
            "share of the data (in %) inside the range",
        )
        .search_only(),
        ParamSpec::bool(
            "symmetric",
            true,
            "true: histogram of |x| (from min|x|), range ±percentile clamped to the data; false: signed histogram, (100−p)/2 % cut on each side",
        ),
    ];
    p.extend(common_params());
    p
}

fn distribution_params() -> Vec<ParamSpec> {
    let mut p = vec![
        ParamSpec::int(
            "num_bins",
            1,
            1 << 20,
            2048,
            "histogram bins; ORT refuses fewer than 512 (ValueError)",
        ),
        ParamSpec::choice(
            "scenario",
            &["same", "p3"],
            "same",
            "same: mean/std of the values; p3: of sign(v)·|v|^(1/3) (float 8 ~ X³)",
        )
        .search_only(),
    ];
    p.extend(common_params());
    p
}

/// The ORT calibraters.
pub fn observers() -> Vec<ObserverSpec> {
    vec![
        ObserverSpec::legacy(
            "ort.MinMaxCalibrater",
            Family::Ort,
            VERSION,
            Granularity::PerTensor,
            "Global min/max of the per-batch ReduceMin/ReduceMax (or their moving average), made symmetric on request; ORT's float64 scale",
            minmax_params(),
            minmax::build,
        )
        .quirk("Moving average depends on batching: an EMA across collect_data() calls, but a plain mean of the per-batch minima/maxima within one call (collect_mode=single_reader)")
        .quirk("int8 with qdq_symmetric uses −127..127 for the scale while quantization still clips at −128"),
        ObserverSpec::legacy(
            "ort.EntropyCalibrater",
            Family::Ort,
            VERSION,
            Granularity::PerTensor,
            "KL-divergence threshold search on a ±max|x| histogram (first minimum), clamped to the data range",
            entropy_params(),
            histogram::build_entropy,
        )
        .quirk("With the defaults (128 bins, 128 quantized bins) only one candidate exists, so the range is simply [min, max]")
        .quirk("The expanded q distribution is an int64 array: the per-bin share truncates")
        .quirk("Histograms merge only between collect_data() calls; one call bins the concatenation of its batches"),
        ObserverSpec::legacy(
            "ort.PercentileCalibrater",
            Family::Ort,
            VERSION,
            Granularity::PerTensor,
            "Percentile of the |x| histogram (symmetric) or both tails of the signed histogram, clamped to the observed min/max",
            percentile_params(),
            histogram::build_percentile,
        )
        .quirk("The |x| histogram starts at min|x| of the first call, not 0; later smaller values are dropped")
        .quirk("The symmetric threshold is clamped to the observed min/max, so the range is usually asymmetric")
        .quirk("TensorData.hist / .bins hold hist[:2] (the first two bin counts), not the histogram"),
        ObserverSpec::legacy(
            "ort.DistributionCalibrater",
            Family::Ort,
            VERSION,
            Granularity::PerTensor,
            "Mean and standard deviation of the signed histogram (for float 8); the range reported is ±max|x|",
            distribution_params(),
            histogram::build_distribution,
        )
        .quirk("Refuses num_bins < 512 (ValueError) only when the range is computed, after collecting")
        .quirk("The range reported is the histogram's ±threshold, symmetric even for one-sided data"),
    ]
}

/// ORT has no named calibrater presets beyond `create_calibrator`'s defaults.
pub fn presets() -> Vec<Preset> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{self, NonFinitePolicy};
    use crate::tensor::Tensor;

    #[test]
    fn extra_options_are_flattened_and_validated() {
        let p = Params::from_json(
            r#"{"calibrate_method": "MinMax", "extra_options": {"symmetric": true, "ActivationSymmetric": true}, "collect_mode": "single_reader"}"#,
        )
        .unwrap();
        let (flat, notes) = flatten(&p, "MinMax", &minmax_params()).unwrap();
        assert!(flat.bool_or("symmetric", false).unwrap());
        assert_eq!(flat.str_or("collect_mode", "").unwrap(), "single_reader");
        assert_eq!(notes.len(), 1);
        let wrong = Params::from_json(r#"{"calibrate_method": "Entropy"}"#).unwrap();
        assert!(flatten(&wrong, "MinMax", &minmax_params()).is_err());
        let bad = Params::from_json(r#"{"extra_options": {"averaging_constant": 2.0}}"#).unwrap();
        assert!(flatten(&bad, "MinMax", &minmax_params()).is_err());
    }

    #[test]
    fn every_calibrater_runs_through_the_engine() {
        let batches = vec![
            Tensor::from_vec((0..1000).map(|i| (i as f32 * 0.37).sin() * 3.0).collect()),
            Tensor::from_vec((0..1000).map(|i| (i as f32 * 0.11).cos() * 5.0).collect()),
        ];
        for spec in observers() {
            for mode in ["per_batch", "single_reader"] {
                let p = Params::new().with("collect_mode", mode);
                let r = engine::run(spec.id, &p, &batches, NonFinitePolicy::Exclude)
                    .unwrap_or_else(|e| panic!("{} {mode}: {e}", spec.id));
                assert!(r.ok, "{} {mode}: {:?}", spec.id, r.error);
                assert!(r.qparams.unwrap().scale[0] > 0.0, "{}", spec.id);
                assert!(r.metrics.is_some());
            }
        }
    }
}
