//! From a ranking to the data of its layer-profile chart ([`crate::plot::LayerProfileView`]):
//! the rows back in checkpoint order, each with its layer index ([`super::layers`]) and the SQNR
//! of every method.

use super::layers::layer_index;
use super::TensorRow;
use crate::plot::{LayerProfileView, ProfileTensor};

/// The layer profile of `rows` (in any order) for the methods `methods` (ids, the ranking's
/// first), emphasising the row at checkpoint position `highlighted`.
pub fn layer_profile(
    rows: &[TensorRow],
    methods: &[String],
    highlighted: Option<usize>,
) -> LayerProfileView {
    let mut ordered: Vec<&TensorRow> = rows.iter().collect();
    ordered.sort_by_key(|r| r.position);
    let tensors = ordered
        .iter()
        .map(|row| ProfileTensor {
            name: row.name.clone(),
            layer: layer_index(&row.name),
            sqnr_db: methods
                .iter()
                .map(|m| {
                    row.results
                        .iter()
                        .find(|r| &r.id == m && r.error.is_none())
                        .and_then(|r| r.sqnr_db)
                })
                .collect(),
            skipped: row.error.is_some(),
        })
        .collect();
    LayerProfileView {
        methods: methods.to_vec(),
        tensors,
        highlighted: highlighted.and_then(|p| ordered.iter().position(|r| r.position == p)),
    }
}
