//! gpt-oss MXFP4 checkpoints (`quant_method: mxfp4`): every `<name>_blocks` uint8 entry with
//! its `<name>_scales` is one weight named `<name>` (`….weight` for a Linear, `….gate_up_proj`
//! for gpt-oss' experts), decoded by `gptoss.mxfp4`: `[N, G, 16]` blocks give `[N, 32·G]`,
//! `[E, N, G, 16]` expert blocks give `[E, 32·G, N]` as transformers returns them.

use super::coded::{assemble, broken, Coded, Names};
use super::Layout;
use crate::checkpoint::Catalog;
use crate::params::Params;

/// The layout of a gpt-oss MXFP4 checkpoint.
pub fn layout(catalog: &Catalog) -> Layout {
    let names = Names::new(catalog);
    let mut weights = Vec::new();
    for (name, blocks) in names.with_suffix("_blocks") {
        let bs = names.shape(blocks).to_vec();
        let shape = match bs.as_slice() {
            [n, g, 16] => Some(vec![*n, g * 32]),
            [e, n, g, 16] => Some(vec![*e, g * 32, *n]),
            _ => None,
        };
        let scales = names.get(&format!("{name}_scales"));
        let w = match (shape, scales) {
            (Some(shape), Some(s)) => Coded {
                name,
                shape,
                codec: "gptoss.mxfp4",
                params: Params::new(),
                parts: vec![("blocks", blocks), ("scales", s)],
                block: Some(32),
                problem: None,
            }
            .weight(catalog),
            (Some(shape), None) => broken(
                &names,
                name.clone(),
                shape,
                "gpt-oss MXFP4",
                &[blocks],
                format!("missing scale entry `{name}_scales`"),
            ),
            (None, _) => broken(
                &names,
                name.clone(),
                Vec::new(),
                "gpt-oss MXFP4",
                &[blocks],
                format!(
                    "`{name}_blocks` is {bs:?}; gpt-oss stores [N, K/32, 16] or [E, N, K/32, 16]"
                ),
            ),
        };
        weights.push(w);
    }
    assemble(catalog, "gpt-oss MXFP4".into(), weights, Vec::new())
}
