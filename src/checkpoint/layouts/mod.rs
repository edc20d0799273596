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

mod bnb;
mod coded;
mod compressed_tensors;
mod fp8_block;
mod gptq;
mod modelopt;
mod mxfp4;
mod pattern;

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
    /// Configuration stored as tensors (the entries [`json_entries`] lists: bitsandbytes'
    /// `….quant_state.bitsandbytes__nf4` JSON bytes), parsed, by entry name; an entry that could
    /// not be read or parsed holds the reason.
    #[serde(skip)]
    pub json_entries: std::collections::BTreeMap<String, Result<Value, String>>,
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

    /// Take the bytes of entry `name` (one of [`json_entries`]), or the reason they could not
    /// be read.
    pub fn take_entry(&mut self, name: &str, bytes: Result<Vec<u8>, String>) {
        let value = bytes.and_then(|b| {
            serde_json::from_slice(&b).map_err(|e| format!("`{name}` is not valid JSON: {e}"))
        });
        self.json_entries.insert(name.to_string(), value);
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
    /// Where each weight sits in its model's graph (`node:input`, by weight name), for the
    /// formats that have a graph (ONNX, [`super::onnx::qdq`]). A diff pairs by it what names
    /// cannot pair.
    #[serde(skip)]
    pub positions: std::collections::BTreeMap<String, String>,
}

/// How many weights, values and stored bytes one format has in a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FormatCount {
    pub tensors: usize,
    pub elements: u64,
    pub bytes: u64,
}

/// The storage of a checkpoint's weights as a whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StorageSummary {
    /// Stored bits per value over every weight: `8·Σbytes / Σelements` (headers and padding
    /// excluded).
    pub bits_per_weight: f64,
    pub tensors: usize,
    pub elements: u64,
    pub bytes: u64,
    /// The same per stored format.
    pub formats: std::collections::BTreeMap<String, FormatCount>,
}

impl Layout {
    /// The storage summary of these weights of `catalog`.
    pub fn summary(&self, catalog: &Catalog) -> StorageSummary {
        let mut s = StorageSummary::default();
        for w in &self.weights {
            let bytes = w.stored_bytes(catalog);
            let elements = w.elements() as u64;
            let f = s.formats.entry(w.format.clone()).or_default();
            f.tensors += 1;
            f.elements += elements;
            f.bytes += bytes;
            s.tensors += 1;
            s.elements += elements;
            s.bytes += bytes;
        }
        if s.elements > 0 {
            s.bits_per_weight = s.bytes as f64 * 8.0 / s.elements as f64;
        }
        s
    }
}

/// The entries of `catalog` that hold configuration as JSON bytes (bitsandbytes' packed
/// `QuantState`), to be read into [`Configs::take_entry`] before [`weights`].
pub fn json_entries(catalog: &Catalog) -> Vec<usize> {
    bnb::json_entries(catalog)
}

/// The weights of `catalog` under the layout its `configs` say.
pub fn weights(catalog: &Catalog, configs: &Configs) -> Layout {
    if let Some(layout) = super::onnx::qdq::layout(catalog) {
        return layout;
    }
    let plain = || plain_weights(catalog);
    // ModelOpt's own file says the layout even where config.json does not.
    let modelopt = configs
        .hf_quant_config
        .as_ref()
        .and_then(|h| h.get("quantization"));
    let Some(q) = configs.quantization_config() else {
        if let Some(m) = modelopt {
            return modelopt::layout(catalog, m);
        }
        return Layout {
            name: None,
            weights: plain(),
            ..Layout::default()
        };
    };
    let method = q.get("quant_method").and_then(Value::as_str).unwrap_or("");
    match method {
        "bitsandbytes" => return bnb::weights(catalog, configs, q),
        "gptq" | "awq" => return gptq::weights(catalog, q, method),
        "compressed-tensors" => return compressed_tensors::layout(catalog, q),
        "fp8" => return fp8_block::layout(catalog, q),
        "mxfp4" => return mxfp4::layout(catalog),
        "modelopt" => return modelopt::layout(catalog, modelopt.unwrap_or(q)),
        _ => {}
    }
    Layout {
        name: None,
        weights: plain(),
        warnings: vec![format!(
            "quantization_config.quant_method `{method}` is not a layout quantscope reads; its tensors are listed as stored"
        )],
        ..Layout::default()
    }
}
