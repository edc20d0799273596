//! ONNX Runtime 1.31.1 calibraters (`onnxruntime.quantization.calibrate`), with ORT's own
//! scale/zero-point formula and quantization (`quant_utils`).
//!
//! ORT calibrates through `collect_data(reader)` calls. **One call stacks every array the
//! reader yields** (so histograms see the concatenation and a moving average is a plain mean of
//! the per-batch minima/maxima); ranges and histograms are merged only **between** calls. The
//! `collect_mode` parameter chooses which of the two an observed batch is:
//! `per_batch` = one `collect_data` call per batch, `single_reader` = every batch from one
//! reader in a single call (the histogram calibraters then keep the batches themselves, as ORT
//! holds every output of the reader, and do the pooled computation when asked for qparams).
//!
//! Parameters are `create_calibrator`'s `extra_options` keys, with its defaults, given flat
//! (`{"num_bins": 2048}`); `collect_mode` and the quantizer's `quant_type`, `qdq_symmetric` and
//! `min_real_range` (how the range becomes scale and zero point: `get_qmin_qmax_for_qType`,
//! `compute_scale_zp`) sit beside them. A golden case records the call itself
//! (`calibrate_method`, `extra_options`); the test harness spreads `extra_options` into them.
//! Keys ORT would silently ignore are refused like any undeclared key.
//!
//! What is collected and what is searched: MinMax keeps every batch's ReduceMin/ReduceMax, so
//! all its parameters only enter the fold over them (`minmax.rs`); the histogram calibraters keep
//! the collector's histogram (or, for one reader, the batches), which `num_bins`, `collect_mode`
//! and the Percentile calibrater's `symmetric` decide (`histogram.rs`); the search parameters of
//! each method and the quantizer's are applied to it (`calibraters.rs`).

mod calibraters;
mod collector;
mod entropy;
mod histogram;
mod minmax;
mod percentile;
mod qparams;

use crate::observer::{Family, Granularity, ObserverKind, ObserverSpec, Preset};

/// The framework version reproduced.
pub const VERSION: &str = "onnxruntime 1.31.1";

crate::choice_enum! {
    /// How observed batches map to `collect_data` calls.
    pub enum CollectMode {
        /// One `collect_data` call per batch.
        PerBatch = "per_batch",
        /// All batches in one `collect_data` call.
        SingleReader = "single_reader",
    }
}

fn spec<K: ObserverKind>(id: &'static str, summary: &'static str) -> ObserverSpec {
    ObserverSpec::of::<K>(id, Family::Ort, VERSION, Granularity::PerTensor, summary)
}

/// The ORT calibraters.
pub fn observers() -> Vec<ObserverSpec> {
    vec![
        spec::<minmax::MinMax>(
            "ort.MinMaxCalibrater",
            "Global min/max of the per-batch ReduceMin/ReduceMax (or their moving average), made symmetric on request; ORT's float64 scale",
        )
        .quirk("Moving average depends on batching: an EMA across collect_data() calls, but a plain mean of the per-batch minima/maxima within one call (collect_mode=single_reader)")
        .quirk("int8 with qdq_symmetric uses −127..127 for the scale while quantization still clips at −128"),
        spec::<calibraters::Entropy>(
            "ort.EntropyCalibrater",
            "KL-divergence threshold search on a ±max|x| histogram (first minimum), clamped to the data range",
        )
        .quirk("With the defaults (128 bins, 128 quantized bins) only one candidate exists, so the range is simply [min, max]")
        .quirk("The expanded q distribution is an int64 array: the per-bin share truncates")
        .quirk("Histograms merge only between collect_data() calls; one call bins the concatenation of its batches"),
        spec::<calibraters::Percentile>(
            "ort.PercentileCalibrater",
            "Percentile of the |x| histogram (symmetric) or both tails of the signed histogram, clamped to the observed min/max",
        )
        .quirk("The |x| histogram starts at min|x| of the first call, not 0; later smaller values are dropped")
        .quirk("The symmetric threshold is clamped to the observed min/max, so the range is usually asymmetric")
        .quirk("TensorData.hist / .bins hold hist[:2] (the first two bin counts), not the histogram"),
        spec::<calibraters::Distribution>(
            "ort.DistributionCalibrater",
            "Mean and standard deviation of the signed histogram (for float 8); the range reported is ±max|x|",
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
    use crate::params::Params;
    use crate::tensor::Tensor;

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

    #[test]
    fn undeclared_keys_are_refused_nested_or_flat() {
        let batches = vec![Tensor::from_vec(vec![-1.0, 2.0])];
        let run = |json: &str| {
            let p = Params::from_json(json).unwrap();
            engine::run(
                "ort.MinMaxCalibrater",
                &p,
                &batches,
                NonFinitePolicy::Exclude,
            )
            .unwrap()
        };
        // ONNX Runtime's call form equals the flat one.
        let nested = run(r#"{"extra_options": {"symmetric": true}}"#);
        let flat = run(r#"{"symmetric": true}"#);
        assert!(nested.ok, "{:?}", nested.error);
        assert_eq!(nested.qparams, flat.qparams);
        for json in [r#"{"extra_options": {"bogus": 1}}"#, r#"{"bogus": 1}"#] {
            let e = run(json).error.expect("refused");
            assert_eq!(
                (e.kind.as_str(), e.param.as_deref()),
                ("param", Some("bogus"))
            );
        }
    }
}
