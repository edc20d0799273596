//! Mixture-of-experts layers: GGUF stacks a layer's experts in one tensor
//! (`blk.N.ffn_{gate,up,down}_exps.weight`, shape `[experts, rows, columns]`) where Hugging Face
//! keeps one weight per expert (`model.layers.N.mlp.experts.E.gate_proj.weight`, or Mixtral's
//! `block_sparse_moe.experts.E.w1`). For a diff, each stacked tensor is split into one weight
//! per expert, named `blk.N.ffn_gate_exps.weight[E]`.
//!
//! Expert `E` is the byte range `E·len/experts …` of the stacked tensor: its rows are whole rows
//! of ggml blocks (or of plain elements), so each expert is an entry of its own, decoded through
//! the same codec as the stacked tensor and read without the other experts.

use crate::checkpoint::layouts::Layout;
use crate::checkpoint::weights::{Weight, WeightSource};
use crate::checkpoint::{Catalog, Entry, Storage};

/// The name of expert `e` of stacked weight `stacked`.
pub fn expert_name(stacked: &str, e: usize) -> String {
    format!("{stacked}[{e}]")
}

/// Whether `name` is a GGUF stacked-experts tensor.
fn is_stacked(name: &str) -> bool {
    name.ends_with("_exps.weight")
}

/// Split every readable stacked-experts weight of `layout` into one weight per expert, adding
/// the experts' entries to `catalog`. Anything else is left as it is.
pub fn split_stacked(catalog: &mut Catalog, layout: &mut Layout) {
    let weights = std::mem::take(&mut layout.weights);
    for weight in weights {
        match experts_of(catalog, &weight) {
            Some(entries) => {
                for (e, entry) in entries.into_iter().enumerate() {
                    let index = catalog.entries.len();
                    layout.weights.push(Weight {
                        name: expert_name(&weight.name, e),
                        shape: entry.shape.clone(),
                        stored_as: vec![entry.name.clone()],
                        source: WeightSource::Entry(index),
                        ..weight.clone()
                    });
                    catalog.entries.push(entry);
                }
            }
            None => layout.weights.push(weight),
        }
    }
}

/// The entries of the experts of `weight`, if it is a readable stacked-experts tensor whose
/// bytes divide evenly between its experts.
fn experts_of(catalog: &Catalog, weight: &Weight) -> Option<Vec<Entry>> {
    let WeightSource::Entry(i) = weight.source else {
        return None;
    };
    let stacked = catalog.entries.get(i)?;
    if !is_stacked(&weight.name) || weight.problem.is_some() || stacked.problem.is_some() {
        return None;
    }
    if !matches!(
        stacked.storage,
        Storage::Plain { fortran: false, .. } | Storage::Coded { .. }
    ) {
        return None;
    }
    let [experts, rows, columns] = stacked.shape[..] else {
        return None;
    };
    let bytes = stacked.range.end.checked_sub(stacked.range.start)?;
    let experts_u64 = u64::try_from(experts).ok()?;
    if experts < 2 || bytes % experts_u64 != 0 {
        return None;
    }
    let each = bytes / experts_u64;
    let elements = rows.checked_mul(columns)?;
    Some(
        (0..experts_u64)
            .map(|e| Entry {
                name: expert_name(&stacked.name, e as usize),
                shape: vec![rows, columns],
                elements,
                range: stacked.range.start + e * each..stacked.range.start + (e + 1) * each,
                ..stacked.clone()
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_index_the_stacked_tensor() {
        assert_eq!(
            expert_name("blk.3.ffn_down_exps.weight", 7),
            "blk.3.ffn_down_exps.weight[7]"
        );
        assert!(is_stacked("blk.3.ffn_down_exps.weight"));
        assert!(!is_stacked("blk.3.ffn_down_shexp.weight"));
    }
}
