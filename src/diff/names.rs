//! Pairing a quantized checkpoint's weights with the original's, across naming schemes.
//!
//! * The same name on both sides pairs (HF ↔ HF quantized, whose layouts name each weight as the
//!   original does; float ONNX ↔ Q/DQ ONNX, whose weights are named by the float initializer).
//! * Hugging Face ↔ GGUF, per architecture, with the names of gguf-py's `TensorNameMap` (the
//!   table `convert_hf_to_gguf.py` writes by), and what the conversion did to the values:
//!   - the llama architecture's `q_proj`/`k_proj` rows are permuted for rotary embeddings
//!     (`LlamaModel.permute`: GGUF row `h·hd + 2j + k` is HF row `h·hd + k·hd/2 + j`, with the
//!     key/value head count for `k_proj`); the pairing undoes it;
//!   - Gemma's RMSNorm weights are stored plus one (`GemmaModel`: `data + 1`); the pairing
//!     subtracts it.
//!
//!   Architectures: `bert`, `llama` (also Mistral's checkpoints), `qwen2`, `qwen3`, `gemma`,
//!   `gemma2`, `gemma3`, and the MoE ones (`qwen2moe`, `qwen3moe`, Mixtral as `llama`), whose
//!   stacked experts (`ffn_*_exps`) are split into one weight per expert ([`super::experts`]).
//!
//! * What names leave unpaired is paired by graph position where both sides have a graph
//!   (ONNX: the node that reads the weight and at which input, [`by_position`]): a quantizer
//!   keeps the float model's node names even where it renames or re-creates the weights.
//!
//! Weights found on one side only are listed as unpaired.

use serde::Serialize;
use std::collections::HashMap;

/// What must be done to the quantized side's values to compare them with the original's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Transform {
    /// Nothing.
    Identity,
    /// Undo llama's rotary row permutation, with this many heads.
    Unpermute { heads: usize },
    /// Subtract the one Gemma's conversion added to norm weights.
    MinusOne,
}

/// One weight of each side that are the same parameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    pub original: usize,
    pub quantized: usize,
    pub transform: Transform,
}

/// The pairs, and the weights of each side without a partner (indices into each side).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pairing {
    pub pairs: Vec<Pair>,
    pub unpaired_original: Vec<usize>,
    pub unpaired_quantized: Vec<usize>,
}

/// The GGUF facts the name table needs: `general.architecture` and the head counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GgufModel {
    pub architecture: String,
    pub heads: Option<usize>,
    pub kv_heads: Option<usize>,
}

impl GgufModel {
    /// From a GGUF file's metadata.
    pub fn from_metadata(
        kv: &std::collections::BTreeMap<String, crate::checkpoint::gguf::MetaValue>,
    ) -> Option<Self> {
        let architecture = kv.get("general.architecture")?.as_str()?.to_string();
        let count = |key: &str| {
            kv.get(&format!("{architecture}.attention.{key}"))
                .and_then(|v| v.as_u64())
                .and_then(|v| usize::try_from(v).ok())
        };
        let heads = count("head_count");
        Some(GgufModel {
            heads,
            kv_heads: count("head_count_kv").or(heads),
            architecture,
        })
    }
}

/// The GGUF name of Hugging Face weight `hf` in architecture `arch`, if the table has it.
pub fn gguf_name(arch: &str, hf: &str) -> Option<String> {
    let (stem, suffix) = match hf.rsplit_once('.') {
        Some((s, x @ ("weight" | "bias"))) => (s, x),
        _ => return None,
    };
    let mapped = if arch == "bert" {
        bert(stem)?
    } else if matches!(
        arch,
        "llama" | "qwen2" | "qwen3" | "qwen2moe" | "qwen3moe" | "gemma" | "gemma2" | "gemma3"
    ) {
        if let Some((stacked, e)) = expert(stem) {
            return Some(super::experts::expert_name(
                &format!("{stacked}.{suffix}"),
                e,
            ));
        }
        decoder(stem)?
    } else {
        return None;
    };
    Some(format!("{mapped}.{suffix}"))
}

/// `prefix.N.rest` → (N, rest).
fn layer<'a>(stem: &'a str, prefix: &str) -> Option<(usize, &'a str)> {
    let rest = stem.strip_prefix(prefix)?;
    let (n, rest) = rest.split_once('.')?;
    Some((n.parse().ok()?, rest))
}

fn bert(stem: &str) -> Option<String> {
    let stem = stem.strip_prefix("bert.").unwrap_or(stem);
    let fixed = match stem {
        "embeddings.word_embeddings" => Some("token_embd"),
        "embeddings.position_embeddings" => Some("position_embd"),
        "embeddings.token_type_embeddings" => Some("token_types"),
        "embeddings.LayerNorm" => Some("token_embd_norm"),
        _ => None,
    };
    if let Some(f) = fixed {
        return Some(f.to_string());
    }
    let (n, rest) = layer(stem, "encoder.layer.")?;
    let name = match rest {
        "attention.self.query" => "attn_q",
        "attention.self.key" => "attn_k",
        "attention.self.value" => "attn_v",
        "attention.output.dense" => "attn_output",
        "attention.output.LayerNorm" => "attn_output_norm",
        "intermediate.dense" => "ffn_up",
        "output.dense" => "ffn_down",
        "output.LayerNorm" => "layer_output_norm",
        _ => return None,
    };
    Some(format!("blk.{n}.{name}"))
}

fn decoder(stem: &str) -> Option<String> {
    let fixed = match stem {
        "model.embed_tokens" => Some("token_embd"),
        "model.norm" => Some("output_norm"),
        "lm_head" => Some("output"),
        _ => None,
    };
    if let Some(f) = fixed {
        return Some(f.to_string());
    }
    let (n, rest) = layer(stem, "model.layers.")?;
    let name = match rest {
        "self_attn.q_proj" => "attn_q",
        "self_attn.k_proj" => "attn_k",
        "self_attn.v_proj" => "attn_v",
        "self_attn.o_proj" => "attn_output",
        "self_attn.q_norm" => "attn_q_norm",
        "self_attn.k_norm" => "attn_k_norm",
        "mlp.gate_proj" => "ffn_gate",
        "mlp.up_proj" => "ffn_up",
        "mlp.down_proj" => "ffn_down",
        "mlp.gate" | "block_sparse_moe.gate" => "ffn_gate_inp",
        "mlp.shared_expert.gate_proj" => "ffn_gate_shexp",
        "mlp.shared_expert.up_proj" => "ffn_up_shexp",
        "mlp.shared_expert.down_proj" => "ffn_down_shexp",
        "mlp.shared_expert_gate" => "ffn_gate_inp_shexp",
        "input_layernorm" => "attn_norm",
        "post_attention_layernorm" => "post_attention_norm",
        "pre_feedforward_layernorm" => "ffn_norm",
        "post_feedforward_layernorm" => "post_ffw_norm",
        _ => return None,
    };
    Some(format!("blk.{n}.{name}"))
}

/// A decoder's expert weight: `model.layers.N.mlp.experts.E.{gate,up,down}_proj` (Qwen MoE) or
/// `model.layers.N.block_sparse_moe.experts.E.w{1,3,2}` (Mixtral, converted as `llama`) → the
/// GGUF stacked tensor's stem `blk.N.ffn_{gate,up,down}_exps` and `E`.
fn expert(stem: &str) -> Option<(String, usize)> {
    let (n, rest) = layer(stem, "model.layers.")?;
    let rest = rest
        .strip_prefix("mlp.experts.")
        .or_else(|| rest.strip_prefix("block_sparse_moe.experts."))?;
    let (e, projection) = rest.split_once('.')?;
    let kind = match projection {
        "gate_proj" | "w1" => "gate",
        "up_proj" | "w3" => "up",
        "down_proj" | "w2" => "down",
        _ => return None,
    };
    Some((format!("blk.{n}.ffn_{kind}_exps"), e.parse().ok()?))
}

/// The GGUF name of `hf`, corrected for the architectures where `post_attention_layernorm` is
/// the feed-forward norm (llama, qwen: `ffn_norm`; Gemma 2/3 have both norms).
fn gguf_name_in(model: &GgufModel, hf: &str) -> Option<String> {
    let name = gguf_name(&model.architecture, hf)?;
    if !model.architecture.starts_with("gemma") || model.architecture == "gemma" {
        return Some(name.replace(".post_attention_norm.", ".ffn_norm."));
    }
    Some(name)
}

/// What the conversion did to HF weight `hf` in `model`.
fn transform(model: &GgufModel, hf: &str) -> Transform {
    let arch = model.architecture.as_str();
    if arch == "llama" {
        let heads = if hf.contains("self_attn.q_proj.") {
            model.heads
        } else if hf.contains("self_attn.k_proj.") {
            model.kv_heads
        } else {
            None
        };
        if let Some(heads) = heads {
            return Transform::Unpermute { heads };
        }
    }
    if arch.starts_with("gemma") && hf.ends_with("norm.weight") {
        return Transform::MinusOne;
    }
    Transform::Identity
}

/// Pair `original` names with `quantized` names. `gguf` is the GGUF model of the side that is a
/// GGUF file (its names are GGUF names and the other side's are Hugging Face names), if one is.
pub fn pair(
    original: &[&str],
    quantized: &[&str],
    gguf: Option<(&GgufModel, GgufSide)>,
) -> Pairing {
    let by_name: HashMap<&str, usize> =
        quantized.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let gguf_by_name: HashMap<&str, usize>;
    let mut taken = vec![false; quantized.len()];
    let mut pairing = Pairing::default();
    let originals_by_name: HashMap<&str, usize> =
        original.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    match gguf {
        Some((model, GgufSide::Quantized)) => {
            gguf_by_name = by_name.clone();
            for (i, name) in original.iter().enumerate() {
                let found = by_name
                    .get(name)
                    .map(|&q| (q, Transform::Identity))
                    .or_else(|| {
                        let g = gguf_name_in(model, name)?;
                        gguf_by_name
                            .get(g.as_str())
                            .map(|&q| (q, transform(model, name)))
                    });
                match found {
                    Some((q, t)) if !taken[q] => {
                        taken[q] = true;
                        pairing.pairs.push(Pair {
                            original: i,
                            quantized: q,
                            transform: t,
                        });
                    }
                    _ => pairing.unpaired_original.push(i),
                }
            }
        }
        Some((model, GgufSide::Original)) => {
            // The original is GGUF (e.g. an F16 GGUF) and the quantized side is HF: the
            // transform is then applied forward to the quantized values ([`apply`]).
            let mut original_taken = vec![false; original.len()];
            for (q, name) in quantized.iter().enumerate() {
                let found = originals_by_name
                    .get(name)
                    .map(|&o| (o, Transform::Identity))
                    .or_else(|| {
                        let g = gguf_name_in(model, name)?;
                        originals_by_name
                            .get(g.as_str())
                            .map(|&o| (o, transform(model, name)))
                    });
                if let Some((o, t)) = found.filter(|(o, _)| !original_taken[*o]) {
                    original_taken[o] = true;
                    taken[q] = true;
                    pairing.pairs.push(Pair {
                        original: o,
                        quantized: q,
                        transform: t,
                    });
                }
            }
            pairing.unpaired_original = (0..original.len())
                .filter(|&o| !original_taken[o])
                .collect();
            pairing.pairs.sort_by_key(|p| p.original);
        }
        None => {
            for (i, name) in original.iter().enumerate() {
                match by_name.get(name) {
                    Some(&q) if !taken[q] => {
                        taken[q] = true;
                        pairing.pairs.push(Pair {
                            original: i,
                            quantized: q,
                            transform: Transform::Identity,
                        });
                    }
                    _ => pairing.unpaired_original.push(i),
                }
            }
        }
    }
    pairing.unpaired_quantized = (0..quantized.len()).filter(|&q| !taken[q]).collect();
    pairing
}

/// Pair what `pairing` left unpaired by graph position: an original and a quantized weight at
/// the same position (`position(side, index)`), each the only one of its side there, are the
/// same parameter.
pub fn by_position<'p>(pairing: &mut Pairing, position: impl Fn(usize, usize) -> Option<&'p str>) {
    let unique = |side: usize, unpaired: &[usize]| {
        let mut at: HashMap<&'p str, Option<usize>> = HashMap::new();
        for &i in unpaired {
            if let Some(p) = position(side, i) {
                at.entry(p)
                    .and_modify(|seen| *seen = None)
                    .or_insert(Some(i));
            }
        }
        at
    };
    let quantized_at = unique(1, &pairing.unpaired_quantized);
    let mut paired_quantized = std::collections::HashSet::new();
    let originals_at = unique(0, &pairing.unpaired_original);
    pairing.unpaired_original.retain(|&o| {
        let found = position(0, o)
            .filter(|p| originals_at.get(p) == Some(&Some(o)))
            .and_then(|p| quantized_at.get(p).copied().flatten());
        match found {
            Some(q) => {
                pairing.pairs.push(Pair {
                    original: o,
                    quantized: q,
                    transform: Transform::Identity,
                });
                paired_quantized.insert(q);
                false
            }
            None => true,
        }
    });
    pairing
        .unpaired_quantized
        .retain(|q| !paired_quantized.contains(q));
    pairing.pairs.sort_by_key(|p| p.original);
}

/// Which side of a diff is the GGUF file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgufSide {
    Original,
    Quantized,
}

/// Apply `transform` to `values` of `shape` (the quantized side's), in place: after it, element
/// `i` corresponds to the original's element `i`. `forward` applies the permutation instead of
/// undoing it (when the original is the converted side).
pub fn apply(
    transform: Transform,
    shape: &[usize],
    values: &mut Vec<f32>,
    forward: bool,
) -> Result<(), String> {
    match transform {
        Transform::Identity => Ok(()),
        Transform::MinusOne => {
            let d = if forward { 1.0 } else { -1.0 };
            for v in values.iter_mut() {
                *v += d;
            }
            Ok(())
        }
        Transform::Unpermute { heads } => {
            let rows = shape.first().copied().unwrap_or(0);
            let cols = if shape.len() > 1 {
                values.len() / rows.max(1)
            } else {
                1
            };
            if heads == 0 || rows % heads != 0 || (rows / heads) % 2 != 0 {
                return Err(format!(
                    "cannot undo the rotary permutation: {rows} rows are not {heads} heads of an even size"
                ));
            }
            let hd = rows / heads;
            let half = hd / 2;
            let mut out = vec![0.0f32; values.len()];
            for h in 0..heads {
                for j in 0..half {
                    for k in 0..2 {
                        let gguf_row = h * hd + 2 * j + k;
                        let hf_row = h * hd + k * half + j;
                        let (from, to) = if forward {
                            (hf_row, gguf_row)
                        } else {
                            (gguf_row, hf_row)
                        };
                        out[to * cols..(to + 1) * cols]
                            .copy_from_slice(&values[from * cols..(from + 1) * cols]);
                    }
                }
            }
            *values = out;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_pair_only_what_names_left_and_only_when_unambiguous() {
        let original = ["a", "x", "y1", "y2", "z"];
        let quantized = ["a", "X", "Y", "Z"];
        let mut pairing = pair(&original, &quantized, None);
        // `a` pairs by name; `x`/`X` share a position; `y1` and `y2` both sit where `Y` does
        // (ambiguous: left unpaired); `z`/`Z` have no position.
        let positions = [
            [Some("n:0"), Some("m:1"), Some("k:1"), Some("k:1"), None],
            [Some("n:0"), Some("m:1"), Some("k:1"), None, None],
        ];
        by_position(&mut pairing, |side, i| positions[side][i]);
        let pairs: Vec<(usize, usize)> = pairing
            .pairs
            .iter()
            .map(|p| (p.original, p.quantized))
            .collect();
        assert_eq!(pairs, [(0, 0), (1, 1)]);
        assert_eq!(pairing.unpaired_original, [2, 3, 4]);
        assert_eq!(pairing.unpaired_quantized, [2, 3]);
    }

    #[test]
    fn bert_names_follow_gguf_py() {
        for (hf, g) in [
            (
                "encoder.layer.0.attention.self.query.weight",
                "blk.0.attn_q.weight",
            ),
            (
                "encoder.layer.5.output.LayerNorm.bias",
                "blk.5.layer_output_norm.bias",
            ),
            (
                "embeddings.token_type_embeddings.weight",
                "token_types.weight",
            ),
            ("embeddings.LayerNorm.weight", "token_embd_norm.weight"),
        ] {
            assert_eq!(gguf_name("bert", hf).as_deref(), Some(g), "{hf}");
        }
        assert_eq!(gguf_name("bert", "pooler.dense.weight"), None);
    }

    #[test]
    fn llama_rows_are_unpermuted() {
        // Two heads of 4 rows, one column: HF row r holds value r.
        let hf: Vec<f32> = (0..8).map(|r| r as f32).collect();
        let mut gguf = hf.clone();
        apply(Transform::Unpermute { heads: 2 }, &[8, 1], &mut gguf, true).unwrap();
        // GGUF row h·4 + 2j + k = HF row h·4 + 2k + j.
        assert_eq!(gguf, [0.0, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0]);
        apply(Transform::Unpermute { heads: 2 }, &[8, 1], &mut gguf, false).unwrap();
        assert_eq!(gguf, hf);
        let model = GgufModel {
            architecture: "llama".into(),
            heads: Some(32),
            kv_heads: Some(8),
        };
        let p = pair(
            &[
                "model.layers.3.self_attn.k_proj.weight",
                "model.norm.weight",
                "x",
            ],
            &["blk.3.attn_k.weight", "output_norm.weight", "y"],
            Some((&model, GgufSide::Quantized)),
        );
        assert_eq!(p.pairs[0].transform, Transform::Unpermute { heads: 8 });
        assert_eq!(p.pairs[1].quantized, 1);
        assert_eq!(
            (p.unpaired_original, p.unpaired_quantized),
            (vec![2], vec![2])
        );
    }
}
