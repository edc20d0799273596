//! PyTorch `torch.ao.quantization.observer` (torch 2.15.0).

use crate::registry::{ObserverSpec, Preset};

/// The PyTorch observers.
pub fn observers() -> Vec<ObserverSpec> {
    Vec::new()
}

/// PyTorch's named observer presets.
pub fn presets() -> Vec<Preset> {
    Vec::new()
}
