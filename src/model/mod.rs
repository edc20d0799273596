//! Ranking every tensor of a checkpoint by what quantization does to it.
//!
//! For each tensor of a [`Catalog`]: its statistics ([`Stats`]) and the result of each
//! [`Method`] (observers and number formats: SQNR, MSE, max error, clipped share), then the
//! tensors sorted worst first. The pieces are separate so that a Web Worker can drive them one
//! tensor at a time ([`CheckpointRanking`]: [`rank_tensor`] on each tensor it reads,
//! [`sort_worst_first`] at the end). Natively, [`rank_checkpoint`] does it all in parallel over
//! tensors.
//!
//! **Order.** Tensors are sorted by the SQNR of the first method (in the order given) that has
//! a result for the tensor, lowest first; a result without error (SQNR undefined because the
//! quantization is exact) counts as +∞. Tensors without any result come next, then the tensors
//! that were skipped, each group in checkpoint order.

mod csv;
pub mod layers;
pub mod methods;
#[cfg(not(target_arch = "wasm32"))]
mod parallel;
mod profile;
pub mod ranking;
pub mod stats;

use crate::checkpoint::{Catalog, Entry, LoadError};
use crate::error::Result;
use crate::tensor::{NonFiniteCounts, Tensor};
use serde::{Deserialize, Serialize};

pub use csv::csv;
pub use methods::{default_methods, Method, MethodKind, MethodResult, ResultKind};
#[cfg(not(target_arch = "wasm32"))]
pub use parallel::rank_checkpoint;
pub use profile::layer_profile;
pub use ranking::CheckpointRanking;
pub use stats::Stats;

/// One tensor's row of the ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct TensorRow {
    pub name: String,
    pub file: String,
    pub shape: Vec<usize>,
    pub dtype: String,
    pub elements: usize,
    /// Byte range of the tensor in its file.
    pub byte_range: [u64; 2],
    pub nonfinite: NonFiniteCounts,
    /// Statistics of the finite values; `None` for a skipped tensor.
    pub stats: Option<Stats>,
    /// One result per method that applies to the tensor, in method order.
    pub results: Vec<MethodResult>,
    /// Why the tensor was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub error: Option<String>,
    /// Position in checkpoint order (files in the order given, tensors in file order), from 0.
    pub position: usize,
}

/// The ranking of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct ModelReport {
    /// Tensors, worst first.
    pub tensors: Vec<TensorRow>,
    /// Files that could not be listed at all.
    pub load_errors: Vec<LoadError>,
}

/// The row of `entry` (at `position` in checkpoint order, in file `file`), from the outcome of
/// reading it: statistics and every applicable method's result, or the reason it is skipped.
pub fn rank_tensor(
    entry: &Entry,
    position: usize,
    file: &str,
    tensor: Result<Tensor>,
    methods: &[Method],
) -> TensorRow {
    let mut row = TensorRow {
        name: entry.name.clone(),
        file: file.to_string(),
        shape: entry.shape.clone(),
        dtype: entry.dtype.name().to_string(),
        elements: entry.elements,
        byte_range: [entry.range.start, entry.range.end],
        nonfinite: NonFiniteCounts::default(),
        stats: None,
        results: Vec::new(),
        error: None,
        position,
    };
    let tensor = match tensor {
        Ok(t) => t,
        Err(e) => {
            row.error = Some(match &entry.problem {
                Some(p) => p.clone(),
                None => e.to_string(),
            });
            return row;
        }
    };
    row.nonfinite = tensor.nonfinite();
    let stats = Stats::of(&tensor.data);
    row.stats = Some(stats);
    if stats.finite == 0 {
        let n = row.nonfinite;
        row.error = Some(format!(
            "no finite values ({} NaN, {} +Inf, {} -Inf): nothing to quantize",
            n.nan, n.pos_inf, n.neg_inf
        ));
        return row;
    }
    row.results = methods
        .iter()
        .filter(|m| m.applies_to(&tensor.shape))
        .map(|m| m.run(&tensor))
        .collect();
    row
}

/// The sort key of a row: ranked rows by SQNR, then rows without a usable result, then skipped
/// rows.
fn sort_key(row: &TensorRow, methods: &[Method]) -> (u8, f64) {
    if row.error.is_some() {
        return (2, 0.0);
    }
    let first = methods.iter().find_map(|m| {
        row.results
            .iter()
            .find(|r| r.id == m.id && r.error.is_none())
    });
    match first {
        Some(r) => (0, r.sqnr_db.unwrap_or(f64::INFINITY)),
        None => (1, 0.0),
    }
}

/// Sort rows worst first (see the module docs), ties in checkpoint order.
pub fn sort_worst_first(rows: &mut [TensorRow], methods: &[Method]) {
    rows.sort_by(|a, b| {
        let (ka, kb) = (sort_key(a, methods), sort_key(b, methods));
        ka.0.cmp(&kb.0)
            .then(ka.1.total_cmp(&kb.1))
            .then(a.position.cmp(&b.position))
    });
}

/// The report of `rows` (in any order) for `catalog`: sorted worst first.
pub fn report(catalog: &Catalog, mut rows: Vec<TensorRow>, methods: &[Method]) -> ModelReport {
    sort_worst_first(&mut rows, methods);
    ModelReport {
        tensors: rows,
        load_errors: catalog.load_errors.clone(),
    }
}
