//! DeepSeek-V3-style FP8 checkpoints (`quant_method: fp8`, transformers'
//! `FineGrainedFP8Config`): every `<name>.weight` stored as FP8 E4M3 with a
//! `<name>.weight_scale_inv` grid beside it is decoded by `deepseek.fp8_block` with the block
//! of `weight_block_size` (128×128 when the configuration does not say). The block is never
//! inferred from the shapes (pitfall of padded grids).

use super::coded::{assemble, broken, Coded, Names};
use super::Layout;
use crate::checkpoint::Catalog;
use crate::params::Params;
use crate::tensor::DType;
use serde_json::Value;

/// The layout of a DeepSeek FP8 checkpoint.
pub fn layout(catalog: &Catalog, q: &Value) -> Layout {
    let names = Names::new(catalog);
    let mut warnings = Vec::new();
    let block = match q.get("weight_block_size") {
        Some(Value::Array(a)) => {
            let b: Vec<i64> = a.iter().filter_map(Value::as_i64).collect();
            match b.as_slice() {
                [r, c] if *r > 0 && *c > 0 => (*r, *c),
                _ => {
                    warnings.push(format!(
                        "quantization_config.weight_block_size {} is not two positive sizes; 128×128 assumed",
                        Value::Array(a.clone())
                    ));
                    (128, 128)
                }
            }
        }
        _ => (128, 128),
    };
    if let Some(fmt) = q.get("fmt").and_then(Value::as_str) {
        if fmt != "e4m3" {
            warnings.push(format!(
                "quantization_config.fmt `{fmt}`: quantscope reads e4m3 FP8 weights only"
            ));
        }
    }
    let mut weights = Vec::new();
    for (i, e) in catalog.entries.iter().enumerate() {
        let Some(module) = e.name.strip_suffix(".weight") else {
            continue;
        };
        let fp8 = |d: Option<DType>| d == Some(DType::F8E4M3);
        if names.pick(&e.name, fp8) != Some(i) {
            continue; // another entry of the same name is the weight
        }
        let scale = names.get(&format!("{module}.weight_scale_inv"));
        let fp8 = names.dtype(i) == Some(DType::F8E4M3);
        let w = match (fp8, scale) {
            (true, Some(s)) => Coded {
                name: e.name.clone(),
                shape: e.shape.clone(),
                codec: "deepseek.fp8_block",
                params: Params::new()
                    .with("block_rows", block.0)
                    .with("block_cols", block.1),
                parts: vec![("weight", i), ("weight_scale_inv", s)],
                block: Some((block.0 * block.1) as usize),
                problem: None,
            }
            .weight(catalog),
            (true, None) => broken(
                &names,
                e.name.clone(),
                e.shape.clone(),
                "FP8 E4M3 block",
                &[i],
                format!("missing scale entry `{module}.weight_scale_inv`"),
            ),
            (false, Some(s)) => broken(
                &names,
                e.name.clone(),
                e.shape.clone(),
                "FP8 E4M3 block",
                &[i, s],
                format!(
                    "`{}` is {}, not FP8 E4M3, beside `{module}.weight_scale_inv`",
                    e.name,
                    e.dtype.name()
                ),
            ),
            (false, None) => continue,
        };
        weights.push(w);
    }
    assemble(
        catalog,
        format!("FP8 block {}×{} (DeepSeek)", block.0, block.1),
        weights,
        warnings,
    )
}
