//! Quantizers: what happens to each value inside the chosen range — the frameworks' quantize,
//! dequantize and quantize–dequantize with given parameters (as opposed to observers, which
//! choose the parameters), every number format side by side, and rounding optimisers such as
//! AdaRound.

pub mod adaround;
pub mod formats;
pub mod quark_onnx;
