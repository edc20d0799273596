//! NVIDIA Model Optimizer 0.47 calibrators.
use crate::registry::{ObserverSpec, Preset};
/// The ModelOpt calibrators.
pub fn observers() -> Vec<ObserverSpec> {
    Vec::new()
}
/// No presets.
pub fn presets() -> Vec<Preset> {
    Vec::new()
}
