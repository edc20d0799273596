//! torchao 0.18.0 observers (`torchao/quantization/observer.py`) with its affine quantization
//! primitives (`quant_primitives.py`), as the CPU runs them (torch 2.14).
//!
//! The constructor arguments ([`args`]) are flat: the granularity class and its argument are
//! separate parameters. A batch is cut into blocks by [`granularity`]; [`qparams`] is
//! `choose_qparams_affine_with_min_max`; [`fake_quant`] the INT/FLOAT/NONE-domain Q/DQ;
//! [`report`] what the observers share.

pub mod args;
pub mod fake_quant;
pub mod fixed;
pub mod granularity;
pub mod minmax;
pub mod mse;
pub mod qparams;
pub mod report;

use crate::observer::{Family, Granularity, ObserverKind, ObserverSpec, Preset};

/// The version whose behaviour is reproduced.
pub const VERSION: &str = "0.18.0";

const PER_AXIS_VS_PER_ROW: &str = "PerAxis(axis) keeps `axis` (one qparam per index along it) while PerRow(dim) reduces `dim`: PerAxis(0) and PerRow() both give one qparam per row of a 2-d weight, PerRow(0) one per column (torchao/quantization/utils.py:705-733)";
const SMALLEST_NORMAL_EPS: &str = "eps defaults to finfo(float32).smallest_normal = 1.2e−38 and is a clamp, so an all-zero input gets scale 1.2e−38 (torchao/quantization/quant_primitives.py:1456, :1483)";
const SYMMETRIC_127_5: &str = "SYMMETRIC divides max(−min⁻, max⁺) by (qmax − qmin)/2: 127.5 for int8 and uint8 (torchao/quantization/quant_primitives.py:1468)";
const FLOAT_ZERO_POINT: &str = "the symmetric zero point int((qmax + qmin + 1)/2) — 128 for uint8 — is made by full_like(scale) and stays float32 unless zero_point_dtype is given (torchao/quantization/quant_primitives.py:1482)";
const ROUND_THEN_SUBTRACT: &str = "the asymmetric zero point qmin − round(min⁻/scale) is rounded before the subtraction and the clamp (unlike compressed-tensors), so it depends on which side of .5 the float32 min⁻/scale lands (torchao/quantization/quant_primitives.py:1488)";
const NO_CLIPPING_UINT8: &str = "SYMMETRIC_NO_CLIPPING_ERR with qmin = 0 divides min⁻ by 0: −inf or NaN never wins, so scale = max⁺/qmax (torchao/quantization/quant_primitives.py:1478-1481)";
const RECIPROCAL: &str = "quantization multiplies by the reciprocal 1/scale, rounds, then adds the zero point and clamps (torchao/quantization/quant_primitives.py:490-492)";
const FLOAT8_TWICE: &str = "float8 targets go through the integer path: values are rounded to integers in ±448, then quantize_affine casts them to float8, a second rounding (torchao/quantization/quant_primitives.py:431)";
const FLOAT_DOMAIN: &str = "zero_point_domain=FLOAT still gets the integer-domain zero point, which the tinygemm formula then uses as a float offset (most values clip) (torchao/quantization/observer.py:177-192, quant_primitives.py:604-606)";
const NONE_DOMAIN: &str = "zero_point_domain=NONE returns zero_point None; Python None as the domain raises ValueError (torchao/quantization/observer.py:94, :190)";
const QRANGE_LATE: &str = "custom quant_min/quant_max outside the dtype's bounds raise only when qparams are computed (torchao/quantization/quant_primitives.py:288-296)";
const SHAPE_FIXED: &str = "later batches must give statistics of the same shape (AssertionError); per-token statistics are per row index, shared across batches (torchao/quantization/observer.py:160)";
const INT4_CAST: &str = "quantize_affine cannot cast to torch.int1…int7 on CPU (NotImplementedError): the error metrics then use _fake_quantize_affine (torchao/quantization/quant_primitives.py:431)";

/// Quirks of `choose_qparams_affine_with_min_max` and the granularities.
const COMMON: [&str; 9] = [
    PER_AXIS_VS_PER_ROW,
    SMALLEST_NORMAL_EPS,
    SYMMETRIC_127_5,
    FLOAT_ZERO_POINT,
    ROUND_THEN_SUBTRACT,
    NO_CLIPPING_UINT8,
    FLOAT_DOMAIN,
    NONE_DOMAIN,
    QRANGE_LATE,
];

/// The Q/DQ quirks every observer's error metrics reproduce.
const QDQ: [&str; 3] = [RECIPROCAL, FLOAT8_TWICE, INT4_CAST];

const MSE_QUIRKS: [&str; 4] = [
    "every forward() replaces min/max with a search on that batch alone (the last batch wins; run_once keeps the first) (torchao/quantization/observer.py:348-351)",
    "candidates are symmetric [−t, t] even for ASYMMETRIC mapping and uint8, with t = (range/steps)·i in float32 (torchao/quantization/observer.py:340-341)",
    "the best loss starts at 1e9, not inf, and the first minimum wins: when no loss is below 1e9 the raw min/max stay (torchao/quantization/observer.py:336, :342-344)",
    "the loss is the block's mean squared error (norm 2), not llm-compressor's 2.4 (torchao/quantization/observer.py:283-289)",
];

const FIXED_TRUTH: &str = "`if not scale`: a scale of [0.0] counts as missing and becomes [1.0]; a zero point of [0] becomes zeros_like(scale) (float32); a multi-element scale raises RuntimeError (torchao/quantization/observer.py:227-230)";

/// The registry entry of `K` with `groups` of quirks, then the Q/DQ quirks.
fn spec<K: ObserverKind>(
    id: &'static str,
    summary: &'static str,
    groups: &[&[&'static str]],
) -> ObserverSpec {
    let mut s = ObserverSpec::of::<K>(
        id,
        Family::Torchao,
        VERSION,
        Granularity::PerTensor,
        summary,
    );
    for q in groups.iter().copied().flatten().chain(&QDQ) {
        s = s.quirk(q);
    }
    s
}

/// The torchao observers.
pub fn observers() -> Vec<ObserverSpec> {
    vec![
        spec::<minmax::AffineMinMax>(
            "torchao.AffineQuantizedMinMaxObserver",
            "running element-wise min/max per block (PerTensor, PerAxis, PerGroup, PerRow, PerToken, PerBlock), then choose_qparams_affine_with_min_max",
            &[&COMMON, &[SHAPE_FIXED]],
        ),
        spec::<mse::AffineMse>(
            "torchao.AffineQuantizedMSEObserver",
            "per block, the symmetric threshold t = range·i/steps (i = 1…100) with the least mean squared Q/DQ error; every batch replaces the last",
            &[&COMMON, &MSE_QUIRKS],
        )
        .heavy(),
        spec::<fixed::AffineFixedQParam>(
            "torchao.AffineQuantizedFixedQParamObserver",
            "returns the scale and zero point it was built with; the data is ignored",
            &[&[FIXED_TRUTH]],
        ),
    ]
}

/// torchao has no named observer presets.
pub fn presets() -> Vec<Preset> {
    Vec::new()
}
