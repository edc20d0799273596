//! The observers of every framework family, one module per family.

pub mod horizon;
pub mod llmcompressor;
pub mod modelopt;
pub mod ort;
pub mod quark;
pub mod search_table;
pub mod shaped_stats;
pub mod torch;
pub mod torchao;

use crate::params::Params;
use crate::registry::{ObserverSpec, Preset};
use serde_json::Value;

/// A preset of `observer` with the keyword arguments `params` as a JSON object (the families
/// write them as `json!` literals; a literal that is not an object gives no arguments).
pub(crate) fn preset(
    name: &'static str,
    observer: &'static str,
    params: Value,
    doc: &'static str,
) -> Preset {
    Preset {
        name,
        observer,
        params: Params::from_value(params).unwrap_or_default(),
        doc,
    }
}

/// Every family's observers, in registry order.
pub fn all_observers() -> Vec<ObserverSpec> {
    let mut all = Vec::new();
    all.extend(torch::observers());
    all.extend(quark::observers());
    all.extend(horizon::observers());
    all.extend(ort::observers());
    all.extend(modelopt::observers());
    all.extend(llmcompressor::observers());
    all.extend(torchao::observers());
    all
}

/// Every family's named presets.
pub fn all_presets() -> Vec<Preset> {
    let mut all = Vec::new();
    all.extend(torch::presets());
    all.extend(quark::presets());
    all.extend(horizon::presets());
    all.extend(ort::presets());
    all.extend(modelopt::presets());
    all.extend(llmcompressor::presets());
    all.extend(torchao::presets());
    all
}
