//! Quantized Hugging Face layouts: which stored entries make up each weight, and which codec
//! decodes them, as the checkpoint's configuration says.
//!
//! A layout is recognised from `config.json`'s `quantization_config` (its `quant_method`, and
//! for compressed-tensors each config group's `format`), or from ModelOpt's
//! `hf_quant_config.json`. Every entry a layout does not take stays a plain weight of its own
//! (LayerNorms, biases, embeddings left unquantized), so a checkpoint's weights are always
//! complete. A configuration quantscope does not know (an unknown `quant_method`) lists the
//! entries as they are with one warning saying so: the values of an unrecognised layout are
//! never guessed.

use super::weights::{plain_weights, Weight};
use super::Catalog;
use serde::Serialize;
use serde_json::Value;

/// The configuration files found beside a checkpoint's tensor files.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Configs {
    /// `config.json` (its `quantization_config` says the layout).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// ModelOpt's `hf_quant_config.json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hf_quant_config: Option<Value>,
    /// GPTQ/AWQ exporters' `quantize_config.json`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantize_config: Option<Value>,
}

impl Configs {
    /// The configuration file names read beside a checkpoint, with what each fills.
    pub const FILES: [&'static str; 3] = [
        "config.json",
        "hf_quant_config.json",
        "quantize_config.json",
    ];

    /// Take the content of configuration file `name` (one of [`Configs::FILES`]); other names
    /// are ignored. An unparsable file is an error naming it.
    pub fn take(&mut self, name: &str, text: &[u8]) -> Result<(), String> {
        let slot = match name {
            "config.json" => &mut self.config,
            "hf_quant_config.json" => &mut self.hf_quant_config,
            "quantize_config.json" => &mut self.quantize_config,
            _ => return Ok(()),
        };
        let value: Value =
            serde_json::from_slice(text).map_err(|e| format!("{name} is not valid JSON: {e}"))?;
        *slot = Some(value);
        Ok(())
    }

    /// `config.json`'s `quantization_config`, if any.
    pub fn quantization_config(&self) -> Option<&Value> {
        self.config.as_ref()?.get("quantization_config")
    }
}

/// A checkpoint's weights under its layout.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Layout {
    /// The layout recognised (`compressed-tensors pack-quantized`, `gptq`, …), or `None` for a
    /// plain checkpoint.
    pub name: Option<String>,
    pub weights: Vec<Weight>,
    /// Problems of the checkpoint as a whole (an unknown `quant_method`, a configuration that
    /// contradicts the tensors).
    pub warnings: Vec<String>,
    /// An ONNX model's activation quantize–dequantize pairs ([`super::onnx::qdq`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub activations: Vec<super::onnx::ActivationQdq>,
}

/// The weights of `catalog` under the layout its `configs` say.
pub fn weights(catalog: &Catalog, configs: &Configs) -> Layout {
    if let Some(layout) = super::onnx::qdq::layout(catalog) {
        return layout;
    }
    let plain = || plain_weights(catalog);
    let Some(q) = configs.quantization_config() else {
        return Layout {
            name: None,
            weights: plain(),
            ..Layout::default()
        };
    };
    let method = q.get("quant_method").and_then(Value::as_str).unwrap_or("");
    Layout {
        name: None,
        weights: plain(),
        warnings: vec![format!(
            "quantization_config.quant_method `{method}` is not a layout quantscope reads; its tensors are listed as stored"
        )],
        ..Layout::default()
    }
}
