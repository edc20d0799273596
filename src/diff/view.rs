//! One pair up close: what the compare view shows when a row is opened. A pure function of the
//! two weights' values (the original, and the quantized weight decoded in the original's order)
//! and the quantized format's block size:
//!
//! * the values of both, as two histograms over one range (`[min, max]` of the finite values
//!   of both), so that the grid the format leaves shows against the original's distribution;
//! * the error `q − x` as a histogram over its own range;
//! * the error per block: the mean squared error of each block of `block` consecutive values
//!   (the format's group or block along the rows; a whole row when the format has none or its
//!   blocks do not divide the rows), in storage order, merged into at most [`MAX_BLOCK_BINS`]
//!   bins of consecutive blocks (each bin keeps the mean and the largest block MSE of its
//!   blocks), with the worst block.
//!
//! Non-finite values are left out of every histogram and block.

use crate::plot::Hist;
use serde::{Deserialize, Serialize};

/// Bins of the value and error histograms.
pub const HIST_BINS: usize = 160;
/// The most bins the per-block chart gets.
pub const MAX_BLOCK_BINS: usize = 2048;

/// The error per block of a weight.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct BlockErrors {
    /// Values per block.
    pub block: usize,
    /// True when a block is a whole row (the format has no smaller block).
    pub rows: bool,
    /// Number of blocks.
    pub count: usize,
    /// Blocks merged per bin.
    pub per_bin: usize,
    /// Mean of the block MSEs of each bin.
    pub mean_mse: Vec<f64>,
    /// Largest block MSE of each bin.
    pub max_mse: Vec<f64>,
    /// Index of the block with the largest MSE, and that MSE.
    pub worst: usize,
    pub worst_mse: f64,
}

/// One pair up close (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct DiffTensorView {
    pub original: String,
    pub quantized: String,
    pub format: String,
    pub shape: Vec<usize>,
    /// The original's values and the dequantized values, over the same range.
    pub original_hist: Hist,
    pub dequantized_hist: Hist,
    /// `dequantized − original`.
    pub error_hist: Hist,
    pub blocks: BlockErrors,
    /// Values left out for not being finite (either side).
    pub nonfinite: usize,
}

/// The names a view carries.
#[derive(Debug, Clone, Copy)]
pub struct PairNames<'a> {
    pub original: &'a str,
    pub quantized: &'a str,
    pub format: &'a str,
}

/// A histogram of the finite values of `values` over `[lo, hi]` in `bins` bins.
fn histogram(values: impl Iterator<Item = f64>, lo: f64, hi: f64, bins: usize) -> Hist {
    let mut counts = vec![0.0; bins];
    let width = (hi - lo) / bins as f64;
    for v in values {
        if !v.is_finite() || v < lo || v > hi {
            continue;
        }
        let i = (((v - lo) / width) as usize).min(bins - 1);
        counts[i] += 1.0;
    }
    Hist { lo, hi, counts }
}

/// `[min, max]` of the finite values, widened when empty or a single point.
fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (-1.0, 1.0);
    }
    if hi > lo {
        (lo, hi)
    } else {
        let pad = if lo == 0.0 { 1e-6 } else { lo.abs() * 1e-3 };
        (lo - pad, hi + pad)
    }
}

/// The view of one pair: `original` and `dequantized` (same length, C order, `shape`, rows of
/// `columns` values) and `block`, the quantized format's values per block (if it has blocks).
pub fn tensor_view(
    names: PairNames<'_>,
    shape: &[usize],
    original: &[f32],
    dequantized: &[f32],
    columns: usize,
    block: Option<usize>,
) -> DiffTensorView {
    let n = original.len().min(dequantized.len());
    let (x, q) = (&original[..n], &dequantized[..n]);
    let both = || {
        x.iter()
            .zip(q)
            .filter(|(a, b)| a.is_finite() && b.is_finite())
    };
    let (lo, hi) = range(both().flat_map(|(&a, &b)| [f64::from(a), f64::from(b)]));
    let err = || both().map(|(&a, &b)| f64::from(b) - f64::from(a));
    let (elo, ehi) = range(err());
    let columns = columns.max(1);
    let (block, rows) = match block {
        Some(b) if b > 0 && b < columns && columns.is_multiple_of(b) => (b, false),
        _ => (columns, true),
    };
    DiffTensorView {
        original: names.original.to_string(),
        quantized: names.quantized.to_string(),
        format: names.format.to_string(),
        shape: shape.to_vec(),
        original_hist: histogram(both().map(|(&a, _)| f64::from(a)), lo, hi, HIST_BINS),
        dequantized_hist: histogram(both().map(|(_, &b)| f64::from(b)), lo, hi, HIST_BINS),
        error_hist: histogram(err(), elo, ehi, HIST_BINS),
        blocks: block_errors(x, q, block, rows),
        nonfinite: n - both().count(),
    }
}

/// The MSE of every block of `block` values, binned.
fn block_errors(x: &[f32], q: &[f32], block: usize, rows: bool) -> BlockErrors {
    let mse: Vec<f64> = x
        .chunks(block)
        .zip(q.chunks(block))
        .map(|(bx, bq)| {
            let (sum, count) = bx
                .iter()
                .zip(bq)
                .filter(|(a, b)| a.is_finite() && b.is_finite())
                .fold((0.0, 0usize), |(s, c), (&a, &b)| {
                    let e = f64::from(b) - f64::from(a);
                    (s + e * e, c + 1)
                });
            if count == 0 {
                0.0
            } else {
                sum / count as f64
            }
        })
        .collect();
    let count = mse.len();
    let per_bin = count.div_ceil(MAX_BLOCK_BINS).max(1);
    let mean_mse = mse
        .chunks(per_bin)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect();
    let max_mse = mse
        .chunks(per_bin)
        .map(|c| c.iter().copied().fold(0.0, f64::max))
        .collect();
    let (worst, worst_mse) =
        mse.iter().copied().enumerate().fold(
            (0, 0.0),
            |(wi, wv), (i, v)| if v > wv { (i, v) } else { (wi, wv) },
        );
    BlockErrors {
        block,
        rows,
        count,
        per_bin,
        mean_mse,
        max_mse,
        worst,
        worst_mse,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: PairNames<'static> = PairNames {
        original: "w",
        quantized: "q",
        format: "Q4_0",
    };

    #[test]
    fn histograms_share_a_range_and_count_every_finite_value() {
        let x = [0.0f32, 1.0, 2.0, 3.0, f32::NAN, 5.0, 6.0, 7.0];
        let q = [0.0f32, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0];
        let v = tensor_view(NAMES, &[2, 4], &x, &q, 4, Some(2));
        assert_eq!((v.original_hist.lo, v.original_hist.hi), (0.0, 8.0));
        assert_eq!(v.dequantized_hist.lo, v.original_hist.lo);
        assert_eq!(v.original_hist.counts.iter().sum::<f64>(), 7.0);
        assert_eq!(v.error_hist.counts.iter().sum::<f64>(), 7.0);
        assert_eq!(v.nonfinite, 1);
        assert_eq!(
            (v.blocks.block, v.blocks.rows, v.blocks.count),
            (2, false, 4)
        );
        assert_eq!(v.blocks.mean_mse, vec![0.125, 0.0, 0.0, 0.5]);
        assert_eq!((v.blocks.worst, v.blocks.worst_mse), (3, 0.5));
    }

    #[test]
    fn blocks_fall_back_to_rows_and_bins_merge() {
        let x = vec![0.0f32; 3 * 5000];
        let mut q = x.clone();
        q[7] = 1.0;
        let v = tensor_view(NAMES, &[5000, 3], &x, &q, 3, Some(2));
        assert_eq!(
            (v.blocks.block, v.blocks.rows, v.blocks.count),
            (3, true, 5000)
        );
        assert_eq!(v.blocks.per_bin, 3);
        assert_eq!(v.blocks.max_mse.len(), 1667);
        assert_eq!(v.blocks.worst, 2);
        assert!((v.blocks.max_mse[0] - 1.0 / 3.0).abs() < 1e-12);
    }
}
