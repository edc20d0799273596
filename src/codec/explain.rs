//! Codec derivations: how a number format stored one block of a tensor, recorded by the
//! codec's own quantizer.
//!
//! A codec has no single scale to explain: every block has its own. A derivation therefore
//! follows **one block** (by default the block holding the tensor's value of largest magnitude,
//! the one that sets the hardest scale) through the codec's encoder while
//! [`crate::derivation`] records: the searches the library runs (ggml's `make_qkx_quants`,
//! `make_qx_quants`, `make_qp_quants`, `make_q3_quants`, MX's shared-exponent rule) add their
//! steps with their candidate tables, exactly as they run for the whole tensor. Per-sub-block
//! searches are condensed: the sub-block holding the block's largest |x| in full, the others
//! as one table of their results.
//!
//! **What "equals the report" means for a codec.** The last step (`Stored block`) holds what
//! the one-block encoding stored (ggml: the block's bytes and the scales decoded from them; MX:
//! the E8M0 scale code and the element codes) and the values they decode to. A test checks
//! that these are, bit for bit, the bytes and values of the same block in the encoding of the
//! whole tensor (what `quantize` and the formats table report), for every codec that explains
//! and every golden ggml case.

use super::compare::clean;
use super::{find, Codec};
use crate::derivation::{Candidates, Step, Value};
use crate::error::{Error, Result};
use crate::params::Params;
use crate::tensor::Tensor;
use serde::Serialize;

/// A codec's derivation of one block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockDerivation {
    /// The format's label (`ggml.Q4_K`, `mxfp4_e2m1`, …).
    pub format: String,
    /// The block followed (its index in the codec's block order).
    pub block: usize,
    /// How many blocks the tensor has.
    pub blocks: usize,
    pub steps: Vec<Step>,
}

/// The derivation of block `block` (default: the one holding the value of largest magnitude)
/// of `t` under format `id` with `params`.
pub fn explain(
    id: &str,
    params: &Params,
    t: &Tensor,
    block: Option<usize>,
) -> Result<BlockDerivation> {
    let codec = find(id)?.build(params, &t.shape)?;
    explain_codec(codec.as_ref(), t, block)
}

/// [`explain`] with a configured codec.
pub fn explain_codec(
    codec: &dyn Codec,
    t: &Tensor,
    block: Option<usize>,
) -> Result<BlockDerivation> {
    let clean = clean(t)?;
    let (index, blocks, steps) = codec.explain_block(&clean, block)?;
    Ok(BlockDerivation {
        format: codec.label(),
        block: index,
        blocks,
        steps,
    })
}

/// The index of the first value of largest magnitude (0 for an empty slice).
pub fn largest_magnitude(values: &[f32]) -> usize {
    let mut best = (0, f32::NEG_INFINITY);
    for (i, v) in values.iter().enumerate() {
        if v.abs() > best.1 {
            best = (i, v.abs());
        }
    }
    best.0
}

/// Block `block` of `count`, or the one `default` names; an error naming the range otherwise.
pub fn pick_block(block: Option<usize>, default: usize, count: usize) -> Result<usize> {
    match block {
        Some(b) if b < count => Ok(b),
        Some(b) => Err(Error::param(
            "block",
            format!(
                "block {b} does not exist: the tensor has {count} blocks (0…{})",
                count.saturating_sub(1)
            ),
        )),
        None => Ok(default.min(count.saturating_sub(1))),
    }
}

/// The first step: which block is followed, where it lies and its values.
pub fn block_step(
    index: usize,
    count: usize,
    chosen: bool,
    values: &[f32],
    place: &str,
    source: &str,
) -> Step {
    let why = if chosen {
        "the block you chose"
    } else {
        "the block holding the tensor's value of largest magnitude (the widest range to cover)"
    };
    let amax = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    Step::new(
        format!("Block {index} of {count}"),
        format!("{why}: {place}"),
        source,
    )
    .value("block", index)
    .value("values", values)
    .value("amax", amax)
}

/// Condense the steps a block's encoder recorded: a search that ran once per sub-block (the
/// same title `count` times in a row) is kept in full for sub-block `focus`, followed by one
/// table of every sub-block's result (`scale`, and `the_min` where the search has one).
pub fn condense(recorded: Vec<Step>, focus: usize) -> Vec<Step> {
    let mut out = Vec::new();
    let mut rest = recorded.into_iter().peekable();
    while let Some(first) = rest.next() {
        let mut run = vec![first];
        while rest.peek().is_some_and(|s| s.title == run[0].title) {
            run.extend(rest.next());
        }
        if run.len() == 1 {
            out.extend(run);
            continue;
        }
        let count = run.len();
        let shown = focus.min(count - 1);
        let number = |s: &Step, name: &str| match s.values.get(name) {
            Some(Value::F32(v)) => *v as f64,
            Some(Value::F64(v)) => *v,
            _ => f64::NAN,
        };
        let with_min = run.iter().any(|s| s.values.get("the_min").is_some());
        let mut columns = vec!["sub-block", "scale"];
        if with_min {
            columns.push("−min");
        }
        let rows = run
            .iter()
            .enumerate()
            .map(|(j, s)| {
                let mut row = vec![j as f64, number(s, "scale")];
                if with_min {
                    row.push(number(s, "the_min"));
                }
                row
            })
            .collect();
        let source = run[0].source.clone();
        let title = run[0].title.clone();
        let mut kept = run.swap_remove(shown);
        kept.title = format!("{title}, sub-block {shown} of {count}");
        out.push(kept);
        out.push(
            Step::new(
                format!("{title}: every sub-block"),
                "the same search on each sub-block; the one above in full",
                &source,
            )
            .candidates(
                Candidates::new(
                    &columns,
                    rows,
                    shown,
                    "marked: the sub-block holding the block's largest |x|, shown in full above",
                )
                .per_slice(),
            ),
        );
    }
    out
}
