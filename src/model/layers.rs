//! The layer a tensor belongs to, read from its name, so that the layer profile can group a
//! checkpoint's tensors by layer.
//!
//! A name is split into tokens at `.`, `/`, `_`, `-` and `:`. The layer index is the first
//! token that is
//! * a plain number: `encoder.layer.3.attention.self.query.weight` (BERT),
//!   `model.layers.12.mlp.down_proj.weight` (Llama), `blk.7.attn_q.weight` (GGUF),
//!   `transformer.h.0.attn.c_attn.weight` (GPT-2), `blocks/2/conv` (Keras-style paths);
//! * or a short layer word followed by a number: `l0_ffn_dense_out`, `layer3`, `block12`,
//!   `blk4`, `h5` (activation dumps named after their layer).
//!
//! Names without such a token (`embeddings.word_embeddings.weight`, `lm_head.weight`) have no
//! layer. Digits inside a word (`fc1`, `conv2d`, `c_attn`) are not layer indices.

/// Words that, directly followed by digits, name a layer (`l0`, `layer3`, `block12`, …).
const LAYER_WORDS: [&str; 6] = ["layer", "layers", "block", "blk", "l", "h"];

/// The layer index of the tensor called `name`, if its name carries one (see the module docs).
pub fn layer_index(name: &str) -> Option<usize> {
    name.split(['.', '/', '_', '-', ':']).find_map(|token| {
        if is_number(token) {
            return token.parse().ok();
        }
        let split = token.find(|c: char| c.is_ascii_digit())?;
        let (word, digits) = token.split_at(split);
        (is_number(digits) && LAYER_WORDS.contains(&word.to_ascii_lowercase().as_str()))
            .then(|| digits.parse().ok())
            .flatten()
    })
}

fn is_number(token: &str) -> bool {
    !token.is_empty() && token.len() <= 9 && token.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::layer_index;

    #[test]
    fn common_naming_schemes() {
        for (name, layer) in [
            ("encoder.layer.3.attention.self.query.weight", Some(3)),
            ("model.layers.12.mlp.down_proj.weight", Some(12)),
            ("blk.7.attn_q.weight", Some(7)),
            ("transformer.h.0.attn.c_attn.weight", Some(0)),
            ("blocks/2/conv", Some(2)),
            ("l0_ffn_dense_out", Some(0)),
            ("L11_attn_out", Some(11)),
            ("layer3", Some(3)),
            ("block12.fc1.weight", Some(12)),
            ("embeddings.word_embeddings.weight", None),
            ("fc1.weight", None),
            ("conv2d_out", None),
            ("lm_head.weight", None),
            ("", None),
            ("x.99999999999999999999.y", None),
        ] {
            assert_eq!(layer_index(name), layer, "{name}");
        }
    }
}
