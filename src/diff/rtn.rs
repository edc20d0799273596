//! The "vs round-to-nearest" column: the quantized weight's own format applied to the original
//! by the codec's plain encoder (no GPTQ error feedback, no AWQ scale search, no importance
//! matrix), then decoded.

use crate::error::Result;
use crate::params::Params;
use crate::tensor::Tensor;

/// The codec that round-to-nearest uses for a weight stored by codec `id` with `params`: the
/// same codec and parameters, without an importance matrix (llama.cpp's `_ref` quantizers).
pub fn codec_for(id: &str, params: &Params) -> (String, Params) {
    let mut plain = params.clone();
    plain.0.remove("imatrix");
    (id.to_string(), plain)
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
