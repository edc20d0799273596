//! PyTorch `torch.ao.quantization.observer` (torch 2.15.0).
//!
//! Every observer class of the module and every named default (`default_observer`,
//! `default_weight_observer`, …) as a [`Preset`]. Arithmetic follows PyTorch's float32 kernels
//! ([`crate::kernels::torch`]); constructor validation and error messages follow `observer.py`
//! ([`config`]).

pub mod config;
pub mod fake_quant;
pub mod fixed;
pub mod histogram;
pub mod minmax;
pub mod passthrough;
pub mod per_channel;
pub mod qparams;

use super::preset;
use crate::observer::ObserverKind;
use crate::observer::{Family, Granularity, ObserverSpec, Preset};
use passthrough::PassThrough;
use per_channel::PerChannel;
use serde_json::json;

/// The torch version whose behaviour is reproduced.
pub const TORCH_VERSION: &str = "2.15.0";

const MIN_EQ_MAX: &str = "min == max is not special-cased (the docstring says scale 1.0, zero point 0): a constant input gives scale = |value|/(qmax − qmin), all zeros give scale = eps";
const SYMMETRIC_127_5: &str = "symmetric scale divides by (qmax − qmin)/2 = 127.5 for qint8 −128..127, so +absmax maps to 127.5 and is clipped to 127";
const REDUCE_RANGE: &str = "reduce_range halves only the default 8-bit ranges; with custom quant_min/quant_max it uses quant_min // 2, quant_max // 2; quint4x2 and 32-bit dtypes ignore it";
const INT32_ZERO_POINT: &str = "the affine zero point is computed in int32: qint32 ranges give zero points near −2³¹ (and wrap when min/scale leaves the int32 range)";

fn spec<K: ObserverKind>(
    id: &'static str,
    granularity: Granularity,
    summary: &'static str,
) -> ObserverSpec {
    ObserverSpec::of::<K>(id, Family::Torch, TORCH_VERSION, granularity, summary)
}

/// The PyTorch observers.
pub fn observers() -> Vec<ObserverSpec> {
    vec![
        spec::<minmax::MinMax>(
            "torch.MinMaxObserver",
            Granularity::PerTensor,
            "running min/max of all batches; affine s = (max⁺ − min⁻)/(qmax − qmin), symmetric s = max|x|/((qmax − qmin)/2)",
        )
        .quirk(MIN_EQ_MAX)
        .quirk(SYMMETRIC_127_5)
        .quirk(REDUCE_RANGE)
        .quirk(INT32_ZERO_POINT),
        spec::<minmax::MovingAverageMinMax>(
            "torch.MovingAverageMinMaxObserver",
            Granularity::PerTensor,
            "exponential moving average of each batch's min/max (v += c·(cur − v), float32), then MinMax's qparams",
        )
        .quirk("the first batch initialises the averages with its own min/max")
        .quirk(MIN_EQ_MAX)
        .quirk(SYMMETRIC_127_5),
        spec::<PerChannel<per_channel::RunningExtrema>>(
            "torch.PerChannelMinMaxObserver",
            Granularity::PerChannel,
            "running min/max per index of ch_axis, then MinMax's qparams per channel (or float qparams: s = (max − min)/(qmax − qmin), zp = −min/s)",
        )
        .quirk("per_channel_affine_float_qparams uses the raw min/max (the range need not contain 0), replaces scale <= eps by 1.0 and returns zp = −min/scale as float32, neither rounded nor clamped")
        .quirk("a negative ch_axis counts from the end; an out-of-range axis raises IndexError only in forward")
        .quirk(MIN_EQ_MAX)
        .quirk(SYMMETRIC_127_5),
        spec::<PerChannel<per_channel::MovingAverage>>(
            "torch.MovingAveragePerChannelMinMaxObserver",
            Granularity::PerChannel,
            "moving average of each channel's min/max (v += c·(cur − v), float32), then per-channel qparams",
        )
        .quirk("the first batch initialises the averages with its own min/max")
        .quirk(MIN_EQ_MAX),
        spec::<histogram::Histogram>(
            "torch.HistogramObserver",
            Granularity::PerTensor,
            "running float32 histogram (histc, re-binned by 16× upsampling when the range grows); a greedy search shrinks the range while an L2 quantization-error estimate decreases",
        )
        .quirk("upsample_rate is not a constructor argument in torch 2.15 (TypeError); it is fixed at 16 unless the attribute is set after construction")
        .quirk("dst_nbins = 2^bits(dtype): 256 for every 8-bit dtype and for quint4x2, regardless of quant_min/quant_max/reduce_range")
        .quirk("the search evaluates its error estimate in float32; for tiny ranges the estimates underflow to 0 and the search never stops early")
        .quirk("a constant first batch is binned on [v − 1, v + 1] (its mass sits in bin bins/2) while min_val == max_val is stored")
        .quirk(MIN_EQ_MAX),
        spec::<fixed::FixedQParams>(
            "torch.FixedQParamsObserver",
            Granularity::PerTensor,
            "returns the scale and zero point it was built with; the data is ignored",
        )
        .quirk("none of its arguments are validated (a zero point outside quant_min..quant_max is accepted)"),
        spec::<PassThrough<passthrough::Placeholder>>(
            "torch.PlaceholderObserver",
            Granularity::PassThrough,
            "carries dtype/qscheme/range to the quantized module (float16 or dynamic quantization); computes nothing",
        )
        .quirk("calculate_qparams raises Exception(\"calculate_qparams should not be called for PlaceholderObserver\")"),
        spec::<PassThrough<passthrough::Recording>>(
            "torch.RecordingObserver",
            Granularity::PassThrough,
            "debug observer that records its inputs; computes nothing",
        )
        .quirk("calculate_qparams raises Exception(\"calculate_qparams should not be called for RecordingObserver\")"),
        spec::<PassThrough<passthrough::Noop>>(
            "torch.NoopObserver",
            Granularity::PassThrough,
            "passes its dtype (float16 by default) to the quantized module; computes nothing",
        )
        .quirk("calculate_qparams raises Exception(\"calculate_qparams should not be called for NoopObserver\")"),
        spec::<PassThrough<passthrough::ReuseInput>>(
            "torch.ReuseInputObserver",
            Granularity::PassThrough,
            "reuses the observer of the operator's input (FX graph mode); computes nothing",
        )
        .quirk("calculate_qparams raises Exception(\"calculate_qparams should not be called for ReuseInputObserver\")"),
    ]
}

/// PyTorch's named observer defaults, with exactly the keyword arguments of their
/// `with_args(...)` partials.
pub fn presets() -> Vec<Preset> {
    let neg1to1 = json!({"scale": 2.0 / 256.0, "zero_point": 128, "dtype": "quint8", "quant_min": 0, "quant_max": 255});
    let zero_to1 = json!({"scale": 1.0 / 256.0, "zero_point": 0, "dtype": "quint8", "quant_min": 0, "quant_max": 255});
    vec![
        preset(
            "default_observer",
            "torch.MinMaxObserver",
            json!({"quant_min": 0, "quant_max": 127}),
            "Default observer for static quantization, usually used for debugging (quint8 restricted to 0..127).",
        ),
        preset(
            "default_placeholder_observer",
            "torch.PlaceholderObserver",
            json!({}),
            "Default placeholder observer, usually used for quantization to torch.float16.",
        ),
        preset(
            "default_debug_observer",
            "torch.RecordingObserver",
            json!({}),
            "Default debug-only observer.",
        ),
        preset(
            "default_weight_observer",
            "torch.MinMaxObserver",
            json!({"dtype": "qint8", "qscheme": "per_tensor_symmetric"}),
            "Default weight observer.",
        ),
        preset(
            "weight_observer_range_neg_127_to_127",
            "torch.MinMaxObserver",
            json!({"dtype": "qint8", "qscheme": "per_tensor_symmetric", "quant_min": -127, "quant_max": 127, "eps": 2f64.powi(-12)}),
            "Symmetric weight observer with the 8-bit values restricted to [-127, +127], excluding -128.",
        ),
        preset(
            "default_histogram_observer",
            "torch.HistogramObserver",
            json!({"quant_min": 0, "quant_max": 127}),
            "Default histogram observer, usually used for PTQ (quint8 restricted to 0..127).",
        ),
        preset(
            "default_per_channel_weight_observer",
            "torch.PerChannelMinMaxObserver",
            json!({"dtype": "qint8", "qscheme": "per_channel_symmetric"}),
            "Default per-channel weight observer, usually used on backends where per-channel weight quantization is supported, such as fbgemm.",
        ),
        preset(
            "per_channel_weight_observer_range_neg_127_to_127",
            "torch.PerChannelMinMaxObserver",
            json!({"dtype": "qint8", "qscheme": "per_channel_symmetric", "quant_min": -127, "quant_max": 127, "eps": 2f64.powi(-12)}),
            "Per-channel, symmetric weight observer with the 8-bit values restricted to [-127, +127], excluding -128.",
        ),
        preset(
            "default_dynamic_quant_observer",
            "torch.PlaceholderObserver",
            json!({"dtype": "quint8", "quant_min": 0, "quant_max": 255, "is_dynamic": true}),
            "Default observer for dynamic quantization: a placeholder (quint8 0..255, is_dynamic) whose range is computed at run time, so it has no qparams of its own.",
        ),
        preset(
            "default_float_qparams_observer",
            "torch.PerChannelMinMaxObserver",
            json!({"dtype": "quint8", "qscheme": "per_channel_affine_float_qparams", "ch_axis": 0}),
            "Default observer for a floating point zero-point.",
        ),
        preset(
            "default_float_qparams_observer_4bit",
            "torch.PerChannelMinMaxObserver",
            json!({"dtype": "quint4x2", "qscheme": "per_channel_affine_float_qparams", "ch_axis": 0}),
            "Default observer for a floating point zero-point and 4 bit activations.",
        ),
        preset(
            "default_fixed_qparams_range_neg1to1_observer",
            "torch.FixedQParamsObserver",
            neg1to1.clone(),
            "Fixed qparams for outputs in [-1, 1] (tanh): scale 2/256, zero point 128.",
        ),
        preset(
            "default_fixed_qparams_range_0to1_observer",
            "torch.FixedQParamsObserver",
            zero_to1.clone(),
            "Fixed qparams for outputs in [0, 1] (sigmoid, softmax): scale 1/256, zero point 0.",
        ),
        preset(
            "default_symmetric_fixed_qparams_observer",
            "torch.FixedQParamsObserver",
            neg1to1,
            "Backwards-compatible alias of default_fixed_qparams_range_neg1to1_observer.",
        ),
        preset(
            "default_affine_fixed_qparams_observer",
            "torch.FixedQParamsObserver",
            zero_to1,
            "Backwards-compatible alias of default_fixed_qparams_range_0to1_observer.",
        ),
        preset(
            "default_reuse_input_observer",
            "torch.ReuseInputObserver",
            json!({}),
            "Default observer for operators like reshape that reuse the observer of their input.",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;
    use crate::registry;

    #[test]
    fn every_preset_builds() {
        for p in presets() {
            let spec = registry::find(p.observer).unwrap();
            spec.resolve(&p.params)
                .unwrap_or_else(|e| panic!("{}: {e}", p.name));
        }
        assert_eq!(presets().len(), 16);
    }

    #[test]
    fn registry_defaults_build() {
        for s in observers() {
            let mut params = Params::new();
            for p in &s.params {
                if !p.default.is_null() {
                    params = params.with(p.name, p.default.clone());
                }
            }
            let built = s.resolve(&params);
            if s.id == "torch.FixedQParamsObserver" {
                assert!(built.is_err(), "scale and zero_point are required");
            } else {
                built.unwrap_or_else(|e| panic!("{}: {e}", s.id));
            }
        }
    }
}
