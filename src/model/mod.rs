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
pub use parallel::{rank_checkpoint, rank_positions};
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
    /// What makes the tensor hard and what did best here, in words, from its statistics and
    /// results ([`crate::diagnosis::diagnose_stats`]); `None` for a skipped tensor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub diagnosis: Option<String>,
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
    tensor: Result<&Tensor>,
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
        diagnosis: None,
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
    // The statistics and every method read the same tensor: its non-finite counts, finite
    // range, `Σx²` and histograms are computed once for all of them. The summary comes first,
    // so that the one scan also sums its `Σx`.
    let _shared = crate::shared_stats::SharedStats::share(&[tensor]);
    let stats = Stats::of(&tensor.data);
    row.nonfinite = crate::shared_stats::nonfinite(&tensor.data);
    row.stats = Some(stats);
    if stats.finite == 0 {
        let n = row.nonfinite;
        row.error = Some(format!(
            "no finite values ({} NaN, {} +Inf, {} -Inf): nothing to quantize",
            n.nan, n.pos_inf, n.neg_inf
        ));
        return row;
    }
    // Every method's search first, then one pass over the tensor measures all their kernels.
    let applying: Vec<&Method> = methods
        .iter()
        .filter(|m| m.applies_to(&tensor.shape))
        .collect();
    let prepared: Vec<_> = applying.iter().map(|m| m.prepare(tensor)).collect();
    let kernels: Vec<_> = prepared.iter().filter_map(|p| p.kernel()).collect();
    let mut measured = crate::qdq::measure_kernels(&tensor.data, &kernels).into_iter();
    row.results = prepared
        .into_iter()
        .map(|p| {
            let m = p.kernel().and_then(|_| measured.next());
            p.finish(m.as_ref())
        })
        .collect();
    let outcomes: Vec<_> = applying
        .iter()
        .zip(&row.results)
        .map(|(m, r)| m.outcome(r))
        .collect();
    row.diagnosis = Some(crate::diagnosis::diagnose_stats(&stats, &outcomes).text);
    row
}

/// A row's place in the worst-first order (see the module docs): its group (0 ranked by SQNR,
/// 1 without a usable result, 2 skipped), its SQNR within group 0 (+∞ when the quantization is
/// exact) and its position in checkpoint order.
pub type RankKey = (u8, f64, usize);

/// The [`RankKey`] of `row` ranked with `methods`.
pub fn rank_key(row: &TensorRow, methods: &[Method]) -> RankKey {
    if row.error.is_some() {
        return (2, 0.0, row.position);
    }
    let first = methods.iter().find_map(|m| {
        row.results
            .iter()
            .find(|r| r.id == m.id && r.error.is_none())
    });
    match first {
        Some(r) => (0, r.sqnr_db.unwrap_or(f64::INFINITY), row.position),
        None => (1, 0.0, row.position),
    }
}

/// The worst-first order of two rows' keys: by group, then SQNR, then checkpoint order.
pub fn rank_order(a: RankKey, b: RankKey) -> std::cmp::Ordering {
    a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2))
}

/// Sort rows worst first (see the module docs), ties in checkpoint order.
pub fn sort_worst_first(rows: &mut [TensorRow], methods: &[Method]) {
    rows.sort_by(|a, b| rank_order(rank_key(a, methods), rank_key(b, methods)));
}

/// The report of `rows` (in any order) for `catalog`: sorted worst first.
pub fn report(catalog: &Catalog, mut rows: Vec<TensorRow>, methods: &[Method]) -> ModelReport {
    sort_worst_first(&mut rows, methods);
    ModelReport {
        tensors: rows,
        load_errors: catalog.load_errors.clone(),
    }
}
