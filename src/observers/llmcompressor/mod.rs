//! llm-compressor 0.14.0.1 observers (`llmcompressor/observers/`) with compressed-tensors
//! 0.19.0's `calculate_qparams` and fake quantization, as the CPU runs them (torch 2.14).
//!
//! Every observer takes `base_name`, the flat `QuantizationArgs` fields ([`args`]) and its
//! `observer_kwargs` as flat parameters. Batches are laid out by `flatten_for_calibration`
//! ([`flatten`]), reduced to per-qparam statistics ([`stats`], or searched by
//! [`grid_search`]), and turned into scales and zero points by [`qparams`]; [`fake_quant`] is
//! the library's quantize–dequantize. Sums follow ATen's order ([`crate::kernels::torch`]).

pub mod args;
pub mod calibration;
pub mod fake_quant;
pub mod flatten;
pub mod grid_search;
pub mod imatrix;
pub mod kind;
pub mod minmax;
pub mod mse;
pub mod qparams;
pub mod search_error;
pub mod stats;

use super::preset;
use crate::observer::{Family, Granularity, ObserverSpec, Preset};
use kind::{CompressorClass, CompressorObserver};
use serde_json::json;

/// The versions whose behaviour is reproduced.
pub const VERSION: &str = "0.14.0.1 (compressed-tensors 0.19.0)";

const SYMMETRIC_127_5: &str = "symmetric scales divide max(|min|, |max|) by bit_range/2 = 127.5 for int8 (7.5 for int4), so +absmax maps to 127.5 and is clipped to 127 (compressed_tensors/quantization/utils/helpers.py:87)";
const ZERO_POINT: &str = "the asymmetric zero point qmin − min/scale is a true division clamped to [qmin, qmax] before it is rounded half to even by the cast to zp_dtype; computed before eps replaces a zero scale, it is NaN for an all-zero input, which the int8 cast makes 0 on x86 (compressed_tensors/quantization/utils/helpers.py:98-99, :130; quant_args.py:421)";
const ONLY_ZERO_SCALE: &str = "only a scale of exactly 0 is replaced by eps (finfo(float32).eps; 0.125 for FP8 scales, 1 for uint8); tiny scales are kept (compressed_tensors/quantization/utils/helpers.py:123-127, :375)";
const DIVIDE_CLAMP_ROUND: &str = "fake quantization divides by the scale (no reciprocal), adds the zero point and clamps to [qmin, qmax] before rounding (compressed_tensors/quantization/lifecycle/forward_helpers.py:186-194)";
const WEIGHTS_ONCE: &str = "weights are observed once: every batch after the first is ignored (llmcompressor/observers/base.py:137)";
const LAYOUTS: &str = "token strategy on activations keeps [batch, seq, hidden], so there is one scale per sequence position shared by the batch, not one per token; group activations share one scale per group of columns across all tokens; block weights are zero-padded and the padding enters min/max (llmcompressor/observers/helpers.py:115, :123, :87)";
const LERP: &str = "the moving average is old·(1 − c) + new·c with 1 − c and c rounded to float32 (not old + c·(new − old)); c = 1 keeps the last batch (llmcompressor/observers/helpers.py:220, min_max.py:62)";
const FP4: &str = "FP4 values are rounded by a threshold table on |x| (ties to even on the E2M1 grid: 0.25→0, 0.75→1, 2.5→2, 5→4), and asymmetric FP4 raises NotImplementedError in get_qparams (compressed_tensors/quantization/utils/fp4_utils.py:89, utils/helpers.py:95)";
const SCALE_FORMATS: &str = "MX scales round the group absmax to a power of two at the FP4 rounding point (2^21 added to the float32 bits), also for MXFP8; NVFP4's global_scale = 448·6/absmax of the whole tensor is folded into the stored FP8 group scales and divided back out by fake quantization (compressed_tensors/quantization/utils/mxfp_utils.py:113, utils/helpers.py:340, lifecycle/forward_helpers.py:184)";
const MSE_NORM: &str = "the search scores Σ|x̂ − x|^2.4 per qparam (norm 2.4, not 2) (llmcompressor/observers/mse.py:34, mse_quant.py:275)";
const MSE_PATIENCE: &str = "candidate 0 is the unshrunk range, ties keep the earlier (wider) one, and the patience counter is global: it resets whenever any qparam improved, so channel and group searches usually run every step; patience 0 stops at the first step without improvement (llmcompressor/observers/mse_quant.py:72, :84-92)";
const TENSOR_GROUP_SEARCH: &str = "TENSOR_GROUP candidates are scored without FP8 rounding of the scales and without the global scale (llmcompressor/observers/mse_quant.py:58)";
const CPU_SEARCH: &str = "this is the CPU eager search; on CUDA a Triton search with per-qparam patience and an error buffer runs instead and can choose other ranges (llmcompressor/observers/mse_quant.py:115)";
const IMATRIX_SCHEDULE: &str = "imatrix scores max(1, int(maxshrink·grid)) + 1 candidates (the end point included), ties keep the earlier one, patience 0 means never stop early, and the importance is divided by its mean + finfo(float32).tiny (llmcompressor/observers/imatrix.py:49, :147, :288, :322)";
const IMATRIX_FALLBACK: &str = "activations, the TENSOR strategy, a missing, negative, all-zero or wrongly sized importance fall back to the unweighted search with a warning (raise with strict) (llmcompressor/observers/imatrix.py:153-243)";

/// Quirks shared by every observer (layouts, qparams and fake quantization).
const COMMON: [&str; 8] = [
    SYMMETRIC_127_5,
    ZERO_POINT,
    ONLY_ZERO_SCALE,
    DIVIDE_CLAMP_ROUND,
    WEIGHTS_ONCE,
    LAYOUTS,
    FP4,
    SCALE_FORMATS,
];

/// Quirks of the MSE search.
const SEARCH: [&str; 4] = [MSE_NORM, MSE_PATIENCE, TENSOR_GROUP_SEARCH, CPU_SEARCH];

/// Quirks of the importance-weighted search.
const IMATRIX: [&str; 3] = [IMATRIX_SCHEDULE, IMATRIX_FALLBACK, TENSOR_GROUP_SEARCH];

fn spec<C: CompressorClass>(
    id: &'static str,
    summary: &'static str,
    quirks: &[&'static str],
) -> ObserverSpec {
    let mut s = ObserverSpec::of::<CompressorObserver<C>>(
        id,
        Family::Llmcompressor,
        VERSION,
        Granularity::PerTensor,
        summary,
    );
    for q in COMMON.iter().chain(quirks) {
        s = s.quirk(q);
    }
    s
}

/// The llm-compressor observers.
pub fn observers() -> Vec<ObserverSpec> {
    vec![
        spec::<minmax::Memoryless>(
            "llmcompressor.memoryless_minmax",
            "the last batch's min/max per qparam (tensor, output row, group, block, sequence position); symmetric s = absmax/(bit_range/2), asymmetric s = (max⁺ − min⁻)/bit_range, zp = qmin − min/s",
            &[],
        ),
        spec::<minmax::Static>(
            "llmcompressor.static_minmax",
            "running element-wise min/max of every batch's per-qparam min/max, then compressed-tensors' qparams",
            &[],
        ),
        spec::<minmax::MovingAverage>(
            "llmcompressor.minmax",
            "moving average v ← v·(1 − c) + v_batch·c of every batch's per-qparam min/max (c = 0.01), then compressed-tensors' qparams",
            &[LERP],
        ),
        spec::<mse::Memoryless>(
            "llmcompressor.memoryless_mse",
            "per qparam, the shrunk range p·[min, max], p = 1 − i/100 (i < 20), minimising Σ|x̂ − x|^2.4 of the last batch, with patience 5",
            &SEARCH,
        )
        .heavy(),
        spec::<mse::MovingAverage>(
            "llmcompressor.mse",
            "moving average (c = 0.01) of the range each batch's MSE search (norm 2.4, 20 shrink steps, patience 5) finds",
            &[MSE_NORM, MSE_PATIENCE, TENSOR_GROUP_SEARCH, CPU_SEARCH, LERP],
        )
        .heavy(),
        spec::<imatrix::IMatrixMse>(
            "llmcompressor.imatrix_mse",
            "per qparam, the shrunk range p·[min, max], p = 1 − i/20 (i = 0…19), minimising Σ|ŵ − w|³·E[x²]_col/mean(E[x²]) with the layer input's importance",
            &IMATRIX,
        )
        .heavy(),
        spec::<mse::NvFp4Expanded>(
            "llmcompressor.nvfp4_expanded_mse",
            "MSE search from 1.8× the range down to 0.8× (p = 1 − i/200, 111 steps, norm 2.4, no early stop), tuned for NVFP4",
            &SEARCH,
        )
        .heavy(),
        spec::<mse::FourOverSix>(
            "llmcompressor.fouroversix",
            "deprecated alias of nvfp4_expanded_mse (the same search, with a UserWarning)",
            &[SEARCH[0], SEARCH[1], SEARCH[2], SEARCH[3], "fouroversix returns an nvfp4_expanded_mse observer and warns that it is an alias (llmcompressor/observers/mse.py:148)"],
        )
        .heavy()
        .alias_of("llmcompressor.nvfp4_expanded_mse"),
        spec::<imatrix::NvFp4Expanded>(
            "llmcompressor.nvfp4_expanded_imatrix",
            "importance-weighted search from 1.8× the range down to 0.8× (p = 1 − i/200, 112 candidates, norm 2.4), tuned for NVFP4",
            &IMATRIX,
        )
        .heavy(),
    ]
}

/// The weight arguments of compressed-tensors' preset schemes (`quant_scheme.py`), observed by
/// the pipeline's default weight observer, plus the FP8 scheme's static activation observer.
pub fn presets() -> Vec<Preset> {
    let weight = "llmcompressor.memoryless_minmax";
    vec![
        preset("W4A16", weight, json!({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": true}),
            "Weights of the W4A16 scheme: int4, symmetric, groups of 128."),
        preset("W4A16_ASYM", weight, json!({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": false}),
            "Weights of the W4A16_ASYM scheme: int4, asymmetric, groups of 128."),
        preset("W8A16", weight, json!({"num_bits": 8, "type": "int", "strategy": "group", "group_size": 128, "symmetric": true}),
            "Weights of the W8A16 scheme: int8, symmetric, groups of 128."),
        preset("W8A8", weight, json!({"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": true}),
            "Weights of the W8A8 (INT8) scheme: int8, symmetric, per output channel."),
        preset("FP8", weight, json!({"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": true}),
            "Weights of the FP8 scheme: FP8 E4M3, one scale per tensor."),
        preset("FP8_DYNAMIC", weight, json!({"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": true}),
            "Weights of the FP8_DYNAMIC scheme: FP8 E4M3, per output channel."),
        preset("FP8_BLOCK", weight, json!({"num_bits": 8, "type": "float", "strategy": "block", "block_structure": "128x128", "symmetric": true}),
            "Weights of the FP8_BLOCK scheme: FP8 E4M3, one scale per 128×128 block."),
        preset("NVFP4", weight, json!({"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": true, "scale_dtype": "float8_e4m3fn", "zp_dtype": "float8_e4m3fn"}),
            "Weights of the NVFP4 scheme: FP4 E2M1 in groups of 16, FP8 group scales under a float32 global scale."),
        preset("MXFP4", weight, json!({"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32, "symmetric": true, "scale_dtype": "uint8", "zp_dtype": "uint8"}),
            "Weights of the MXFP4 scheme: FP4 E2M1 in groups of 32 with E8M0 power-of-two scales."),
        preset("MXFP8", weight, json!({"num_bits": 8, "type": "float", "strategy": "group", "group_size": 32, "symmetric": true, "scale_dtype": "uint8", "zp_dtype": "uint8"}),
            "Weights of the MXFP8 scheme: FP8 E4M3 in groups of 32 with E8M0 power-of-two scales."),
        preset("FP8_input_activations", "llmcompressor.static_minmax", json!({"base_name": "input", "num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": true}),
            "Input activations of the FP8 scheme: static FP8 E4M3 per tensor (observer static_minmax)."),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;
    use crate::registry;

    #[test]
    fn every_preset_and_default_builds() {
        for p in presets() {
            registry::find(p.observer)
                .unwrap()
                .resolve(&p.params)
                .unwrap_or_else(|e| panic!("{}: {e}", p.name));
        }
        for s in observers() {
            s.resolve(&Params::new())
                .unwrap_or_else(|e| panic!("{}: {e}", s.id));
        }
    }
}
