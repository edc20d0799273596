//! Quantizer building blocks of the frameworks (quantize, dequantize and quantize–dequantize
//! with given parameters), as opposed to observers, which choose the parameters.

pub mod quark_onnx;
