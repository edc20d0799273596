//! The "vs round-to-nearest" column: the quantized weight's format applied to the original by
//! plain round-to-nearest (no GPTQ error feedback, no AWQ scale search, no importance matrix),
//! then decoded.
//!
//! For a layout that is itself round-to-nearest (compressed-tensors, bitsandbytes, ggml without
//! an imatrix) that is the same codec. For the layouts made by an algorithm or a different
//! exporter, it is compressed-tensors' round-to-nearest at the nearest scheme (memoryless min–max
//! scales, weights kept in bfloat16), as llm-compressor would write the same model:
//!
//! | stored as | round-to-nearest |
//! |---|---|
//! | GPTQ int b, group g, sym / asym | `ct.pack_quantized` b bits, group g, symmetric / not (`W4A16`, `W4A16_ASYM`) |
//! | AWQ GEMM int4, group g | `ct.pack_quantized` 4 bits, group g, asymmetric (`W4A16_ASYM`) |
//! | DeepSeek FP8 blocks r×c | `ct.float_quantized`, blocks r×c (`FP8_BLOCK`) |
//! | gpt-oss MXFP4 | `ct.mxfp4` (`MXFP4A16`) |
//! | ModelOpt NVFP4 | `ct.nvfp4` (`NVFP4A16`) |

use crate::error::Result;
use crate::params::Params;
use crate::tensor::Tensor;

/// The codec that round-to-nearest uses for a weight stored by codec `id` with `params`: the
/// same codec and parameters, without an importance matrix (llama.cpp's `_ref` quantizers).
pub fn codec_for(id: &str, params: &Params) -> (String, Params) {
    let get = |key: &str| params.0.get(key).cloned();
    let num = |key: &str, default: i64| get(key).and_then(|v| v.as_i64()).unwrap_or(default);
    let flag = |key: &str, default: bool| get(key).and_then(|v| v.as_bool()).unwrap_or(default);
    let pack = |bits: i64, group: i64, symmetric: bool| {
        let strategy = if group > 0 { "group" } else { "channel" };
        let mut p = Params::new()
            .with("num_bits", bits)
            .with("strategy", strategy)
            .with("symmetric", symmetric);
        if group > 0 {
            p = p.with("group_size", group);
        }
        ("ct.pack_quantized".to_string(), p)
    };
    match id {
        "gptq.int" => pack(num("bits", 4), num("group_size", 128), flag("sym", true)),
        "awq.gemm" => pack(4, num("group_size", 128), !flag("zero_point", true)),
        "deepseek.fp8_block" => (
            "ct.float_quantized".to_string(),
            Params::new()
                .with("strategy", "block")
                .with("block_rows", num("block_rows", 128))
                .with("block_cols", num("block_cols", 128)),
        ),
        "gptoss.mxfp4" => ("ct.mxfp4".to_string(), Params::new()),
        "modelopt.nvfp4" => ("ct.nvfp4".to_string(), Params::new()),
        _ => {
            let mut plain = params.clone();
            plain.0.remove("imatrix");
            (id.to_string(), plain)
        }
    }
}

/// Round `original` to the nearest values of codec `codec` (id and parameters) in `shape` (the
/// quantized weight's): the codec's label and the decoded values, or `None` when the weight is
/// stored without a codec (a plain dtype).
pub fn round_to_nearest(
    codec: Option<&(String, Params)>,
    original: &Tensor,
    shape: &[usize],
) -> Result<Option<(String, Vec<f32>)>> {
    let Some((id, params)) = codec else {
        return Ok(None);
    };
    let (id, params) = codec_for(id, params);
    let codec = crate::codec::find(&id)?.build(&params, shape)?;
    let input = Tensor::new(shape.to_vec(), original.data.clone())?;
    let encoded = codec.encode(&input)?;
    let decoded = codec.decode(&encoded)?;
    Ok(Some((codec.label(), decoded.data)))
}
