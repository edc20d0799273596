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
//! | ONNX `DequantizeLinear` / `MatMulNBits` | ONNX Runtime's own quantizer (`quantize_static`'s min–max weights, `MatMulNBitsQuantizer`), symmetric when the stored zero points say so |

use crate::codec::Encoded;
use crate::error::Result;
use crate::params::Params;
use crate::tensor::Tensor;

/// The codec that round-to-nearest uses for a weight stored by codec `id` with `params` (as
/// `stored`, when it is at hand), with its parameters: the same codec and parameters, without
/// an importance matrix (llama.cpp's `_ref` quantizers). Where the stored arrays leave a setting
/// open (whether ONNX Runtime's quantizer ran symmetric), every candidate is listed, the likelier
/// first.
pub fn codec_for(id: &str, params: &Params, stored: Option<&Encoded>) -> (String, Vec<Params>) {
    let (id, params) = codec_of(id, params);
    let candidates = match stored {
        Some(e) if id.starts_with("onnx.") => crate::codec::onnx::quantizer_params(&id, &params, e),
        _ => vec![params],
    };
    (id, candidates)
}

/// The codec and parameters of round-to-nearest for a weight stored by codec `id`.
fn codec_of(id: &str, params: &Params) -> (String, Params) {
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

/// What round-to-nearest gave for a weight.
pub struct Rounded {
    /// The codec's label.
    pub format: String,
    /// The decoded values, or `None` when the encoding equals the stored one bit for bit: the
    /// quantized weight *is* round-to-nearest's, and its values are the quantized weight's.
    pub values: Option<Vec<f32>>,
}

/// Round `original` to the nearest values of codec `codec` (id and parameters) in `shape` (the
/// quantized weight's, with as many elements), or `None` when the weight is stored without a
/// codec (a plain dtype). `original` is viewed in `shape` for the encoding, without a copy, and
/// handed back as it came. When round-to-nearest is the stored codec itself and `stored` (what
/// the quantized weight stores) holds the same bits, nothing is decoded.
pub fn round_to_nearest(
    codec: Option<&(String, Params)>,
    original: &mut Tensor,
    shape: &[usize],
    stored: Option<&Encoded>,
) -> Result<Option<Rounded>> {
    let Some((stored_id, params)) = codec else {
        return Ok(None);
    };
    let (id, candidates) = codec_for(stored_id, params, stored);
    if crate::tensor::element_count(shape) != Some(original.data.len()) {
        return Err(crate::error::Error::input(format!(
            "shape {shape:?} does not hold the original's {} values",
            original.data.len()
        )));
    }
    let mut first = None;
    for params in &candidates {
        let codec = crate::codec::find(&id)?.build(params, shape)?;
        let own_shape = std::mem::replace(&mut original.shape, shape.to_vec());
        let own_dtype = std::mem::replace(&mut original.dtype, crate::tensor::DType::F32);
        let encoded = codec.encode(original);
        original.shape = own_shape;
        original.dtype = own_dtype;
        let encoded = encoded?;
        if id == *stored_id && stored.is_some_and(|s| s.same_bits(&encoded)) {
            return Ok(Some(Rounded {
                format: codec.label(),
                values: None,
            }));
        }
        first.get_or_insert((codec, encoded));
    }
    let Some((codec, encoded)) = first else {
        return Ok(None);
    };
    let format = codec.label();
    let values = Some(codec.decode(&encoded)?.data);
    Ok(Some(Rounded { format, values }))
}
