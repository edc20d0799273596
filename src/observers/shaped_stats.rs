//! Per-qparam statistics with their shape, as llm-compressor (`min_vals`/`max_vals`) and torchao
//! (`min_val`/`max_val`) keep them: one minimum and one maximum per quantization parameter, laid
//! out in the qparam shape (per tensor, per row, per group, per block, …).

use crate::observer::PlotSnapshot;

/// Minima and maxima, one per qparam, with the qparam shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapedStats {
    pub shape: Vec<usize>,
    pub min: Vec<f32>,
    pub max: Vec<f32>,
}

impl ShapedStats {
    /// The running min/max for plots (nothing before any statistics).
    pub fn plot(stats: Option<&ShapedStats>) -> PlotSnapshot {
        let (min_val, max_val) = stats
            .map(|s| (s.min.clone(), s.max.clone()))
            .unwrap_or_default();
        PlotSnapshot {
            min_val,
            max_val,
            histogram: None,
        }
    }
}
