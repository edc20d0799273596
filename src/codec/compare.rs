//! Every format side by side on one tensor: the standard line-up, one format's row
//! (`evaluate`), and one format's quantize–dequantized values with their error
//! (`quantize_dequantize`, what `quantscope quantize` writes).
//!
//! Non-finite values are replaced by 0 before a codec sees the tensor (as for shaped
//! observers) and left out of the error metrics.

use super::{find, Codec, Encoded};
use crate::engine::{prepare_batch, NonFinitePolicy};
use crate::error::Result;
use crate::observer::Granularity;
use crate::params::Params;
use crate::qdq::{measure_ranges, QdqKernel};
use crate::quant::QdqMetrics;
use crate::tensor::Tensor;
use serde::Serialize;
use serde_json::json;
use std::borrow::Cow;

/// The standard line-up of the side-by-side view, for a tensor of `shape`: `(format id, params)`.
pub fn lineup(shape: &[usize]) -> Vec<(&'static str, Params)> {
    let p = |v: serde_json::Value| Params::from_value(v).unwrap_or_default();
    let mut all = vec![
        ("int", p(json!({"bits": 8}))),
        ("int", p(json!({"bits": 8, "signed": false}))),
        ("int", p(json!({"bits": 4}))),
        ("int", p(json!({"bits": 4, "signed": false}))),
    ];
    if shape.len() >= 2 {
        all.push((
            "int",
            p(json!({"bits": 8, "granularity": "per_channel", "axis": 0})),
        ));
        all.push((
            "int",
            p(json!({"bits": 4, "granularity": "per_channel", "axis": 0})),
        ));
    }
    all.push((
        "int",
        p(json!({"bits": 4, "granularity": "per_group", "group_size": 32})),
    ));
    all.push(("half", p(json!({"dtype": "float16"}))));
    all.push(("half", p(json!({"dtype": "bfloat16"}))));
    for element in ["fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1"] {
        all.push(("minifloat", p(json!({"element": element}))));
    }
    for element in [
        "fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1", "int8",
    ] {
        all.push(("mx", p(json!({"element": element}))));
    }
    all.push(("bfp", Params::new()));
    // What LLM users run: bitsandbytes NF4 (QLoRA, with and without double quantization) and
    // llama.cpp's Q4_K and MXFP4 (ggml's blocks only when the tensor is a whole number of them).
    all.push(("bnb.nf4", Params::new()));
    all.push(("bnb.nf4", p(json!({"compress_statistics": true}))));
    let numel: usize = shape.iter().product();
    for (id, block) in [("ggml.Q4_K", 256), ("ggml.MXFP4", 32)] {
        if numel > 0 && numel.is_multiple_of(block) {
            all.push((id, Params::new()));
        }
    }
    all
}

/// One row of the side-by-side comparison.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct FormatResult {
    pub format: String,
    pub id: &'static str,
    pub params: Params,
    pub bits_per_value: f64,
    #[serde(flatten)]
    pub metrics: QdqMetrics,
}

/// `t` with its non-finite values replaced by 0, as codecs see it.
pub(super) fn clean(t: &Tensor) -> Result<Cow<'_, Tensor>> {
    prepare_batch(t, Granularity::PerChannel, NonFinitePolicy::Exclude)
}

/// Quantize–dequantize `t` with format family `id` and measure the error over its finite
/// values.
pub fn evaluate(id: &'static str, params: &Params, t: &Tensor) -> Result<FormatResult> {
    let codec = find(id)?.build(params, &t.shape)?;
    let metrics = codec.measure(t, &*clean(t)?)?;
    Ok(FormatResult {
        format: codec.label(),
        id,
        params: params.clone(),
        bits_per_value: codec.bits_per_value(&t.shape),
        metrics,
    })
}

/// What [`evaluate`] measures, for a caller that runs several kernels over `t` in one pass
/// ([`crate::qdq::measure_kernels`]): `Ok(kernel)` when the codec has a fused kernel (its
/// metrics over `t`, finished, are [`evaluate`]'s), else `Err` with [`evaluate`]'s outcome.
pub fn evaluation_kernel(
    id: &'static str,
    params: &Params,
    t: &Tensor,
) -> std::result::Result<Box<dyn QdqKernel>, Result<QdqMetrics>> {
    let prepared = find(id)
        .and_then(|family| family.build(params, &t.shape))
        .and_then(|codec| Ok((clean(t)?, codec)));
    let (clean, codec) = prepared.map_err(Err)?;
    match codec.qdq_kernel(&clean) {
        Some(Ok(kernel)) => Ok(kernel),
        Some(Err(e)) => Err(Err(e)),
        None => Err(codec.measure(t, &clean)),
    }
}

/// Every format of the standard [`lineup`] on `t`; formats that do not apply to the tensor's
/// shape are skipped with their error.
pub fn compare(t: &Tensor) -> Vec<Result<FormatResult>> {
    lineup(&t.shape)
        .into_iter()
        .map(|(id, params)| evaluate(id, &params, t))
        .collect()
}

/// A tensor through a codec: what it stores, the values it decodes to, and their error.
#[derive(Debug, Clone)]
pub struct Qdq {
    pub encoded: Encoded,
    pub values: Vec<f32>,
    pub metrics: QdqMetrics,
}

/// Encode `t` (non-finite values replaced by 0) with `codec`, decode it, and measure the error
/// over the finite values of `t` (the same numbers as [`Codec::measure`]).
pub fn quantize_dequantize(codec: &dyn Codec, t: &Tensor) -> Result<Qdq> {
    let encoded = codec.encode(&*clean(t)?)?;
    let decoded = codec.decode(&encoded)?;
    let metrics = measure_ranges(&t.data, &decoded.data, &codec.ranges(&encoded)?).finish();
    Ok(Qdq {
        encoded,
        values: decoded.data,
        metrics,
    })
}
