//! Quantizers: what happens to each value inside the chosen range — the frameworks' quantize,
//! dequantize and quantize–dequantize with given parameters (as opposed to observers, which
//! choose the parameters), and rounding optimisers such as AdaRound. The number formats
//! themselves are codecs ([`crate::codec`]).

pub mod adaround;
pub mod apply;
pub mod quark_onnx;

use crate::params::ParamSpec;
use serde::Serialize;

/// A rounding optimiser in the registry (AdaRound): its id, summary and parameters.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct OptimiserSpec {
    pub id: &'static str,
    pub summary: &'static str,
    pub params: Vec<ParamSpec>,
}

/// The quantizer registry, the counterpart of the observer registry: every codec (number
/// format family, [`crate::codec::codecs`]) and every rounding optimiser with their parameters (type, range, default), from
/// which the page builds its controls and `quantscope list` prints its listing.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct QuantizerRegistry {
    pub formats: Vec<crate::codec::CodecEntry>,
    pub optimisers: Vec<OptimiserSpec>,
}

/// The quantizer registry.
pub fn registry() -> QuantizerRegistry {
    QuantizerRegistry {
        formats: crate::codec::codecs(),
        optimisers: vec![OptimiserSpec {
            id: "adaround",
            summary: "AdaRound: learns up/down rounding of a linear layer's weight W from its \
                      inputs X (Nagel et al. 2020, Quark's defaults)",
            params: adaround::params(),
        }],
    }
}
