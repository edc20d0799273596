//! NVIDIA ModelOpt checkpoints (`hf_quant_config.json`, or `config.json` `quant_method:
//! modelopt`): with `quant_algo: NVFP4`, every `<module>.weight` uint8 entry with its FP8
//! `<module>.weight_scale` and float32 `<module>.weight_scale_2` is decoded by
//! `modelopt.nvfp4` (`[N, K/2]` bytes give `[N, K]`). `input_scale` entries (activations)
//! stay plain. Another `quant_algo` is a warning naming it.

use super::coded::{assemble, broken, Coded, Names};
use super::Layout;
use crate::checkpoint::Catalog;
use crate::params::Params;
use crate::tensor::DType;
use serde_json::Value;

/// The layout of a ModelOpt checkpoint whose quantization section is `q` (holding
/// `quant_algo` and `group_size`).
pub fn layout(catalog: &Catalog, q: &Value) -> Layout {
    let algo = q.get("quant_algo").and_then(Value::as_str).unwrap_or("");
    if algo != "NVFP4" {
        return Layout {
            name: None,
            weights: crate::checkpoint::weights::plain_weights(catalog),
            warnings: vec![format!(
                "ModelOpt quant_algo `{algo}` is not a layout quantscope reads (it reads NVFP4); its tensors are listed as stored"
            )],
            ..Layout::default()
        };
    }
    let group = q.get("group_size").and_then(Value::as_i64).unwrap_or(16);
    let names = Names::new(catalog);
    let mut weights = Vec::new();
    for (module, scale) in names.with_suffix(".weight_scale") {
        let name = format!("{module}.weight");
        let Some(w) = names.pick(&name, |d| d == Some(DType::U8)) else {
            continue;
        };
        if names.dtype(w) != Some(DType::U8) {
            continue;
        }
        let mut shape = names.shape(w).to_vec();
        if let Some(last) = shape.last_mut() {
            *last *= 2;
        }
        let weight = match names.get(&format!("{module}.weight_scale_2")) {
            Some(s2) => Coded {
                name,
                shape,
                codec: "modelopt.nvfp4",
                params: Params::new().with("block_size", group),
                parts: vec![
                    ("weight", w),
                    ("weight_scale", scale),
                    ("weight_scale_2", s2),
                ],
                block: Some(group as usize),
                problem: None,
            }
            .weight(catalog),
            None => broken(
                &names,
                name,
                shape,
                "ModelOpt NVFP4",
                &[w, scale],
                format!("missing scale entry `{module}.weight_scale_2`"),
            ),
        };
        weights.push(weight);
    }
    assemble(catalog, "ModelOpt NVFP4".into(), weights, Vec::new())
}
