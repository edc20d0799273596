//! `HistogramCalibrator.collect`: the `|x|` histogram ModelOpt searches.
//!
//! Each batch becomes `|x|` if its minimum is negative (float32), zeros optionally dropped.
//! * `torch_hist=True` (default): the first batch gives `histc(x, num_bins, 0, max)` and edges
//!   `torch.linspace(0, max, num_bins + 1)`. A later maximum beyond the last edge sets
//!   `num_bins = ceil(max/width)` and edges `torch.arange(0, max + width, width)` (their count
//!   need not be `num_bins + 1`); every later batch is binned by `histc(x, num_bins, 0,
//!   edges[-1])` and the old counts are added to the first bins (aligned, since both start at 0
//!   with the same width).
//! * `torch_hist=False`: numpy's path, as ORT's `|x|` histogram — `np.histogram(x, num_bins)` on
//!   `[min, max]` of the first batch, `np.arange` edges appended (float64 from then on), old
//!   counts added left-aligned.

use crate::error::{Error, Result, Stage};
use crate::histogram::{histc, histc_abs};
use crate::kernels::numpy;
use crate::kernels::torch::{arange_via_f64, linspace_via_f64};

crate::declare_params! {
    /// `HistogramCalibrator(num_bins, skip_zeros, torch_hist, axis)`: what is collected.
    pub struct CollectArgs {
        /// histogram bins of |x| (grows with the data)
        num_bins: i64 = 2048; int(1, 1 << 20), Data;
        /// leave exact zeros out of the histogram
        skip_zeros: bool = false; boolean(), Data;
        /// bin with torch.histc from 0 (true) or np.histogram from min|x| (false)
        torch_hist: bool = true; boolean(), Data;
        /// must stay null: histogram calibration is per tensor only (NotImplementedError)
        axis: Option<i64> = None; int(-64, 63), Search;
    }
}

/// The collected histogram.
#[derive(Debug, Clone, PartialEq)]
pub enum Hist {
    /// torch path: float32 counts, float32 edges, the current `_num_bins`.
    Torch {
        hist: Vec<f32>,
        edges: Vec<f32>,
        num_bins: usize,
    },
    /// numpy path: int64 counts; edges float32 until the first growth, float64 after.
    Numpy {
        hist: Vec<i64>,
        edges: Vec<f64>,
        edges_f32: bool,
    },
}

impl Hist {
    /// Counts as `compute_amax` sees them (`.int()` of the torch counts).
    pub fn counts(&self) -> Vec<i64> {
        match self {
            Hist::Torch { hist, .. } => hist.iter().map(|&c| c as i32 as i64).collect(),
            Hist::Numpy { hist, .. } => hist.clone(),
        }
    }

    /// Edges as float64 (exact copies of the float32 ones on the torch path).
    pub fn edges(&self) -> Vec<f64> {
        match self {
            Hist::Torch { edges, .. } => edges.iter().map(|&e| e as f64).collect(),
            Hist::Numpy { edges, .. } => edges.clone(),
        }
    }
}

fn empty_reduction(op: &str) -> Error {
    Error::framework(
        "RuntimeError",
        format!("{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."),
        Stage::Forward,
    )
}

/// Add one batch to `state`.
pub fn collect(
    state: Option<Hist>,
    batch: &[f32],
    num_bins: usize,
    skip_zeros: bool,
    torch_hist: bool,
) -> Result<Hist> {
    let (lo, hi) = numpy::min_max_ignore_nan(batch).ok_or_else(|| empty_reduction("min"))?;
    let abs = lo < 0.0;
    if torch_hist && !skip_zeros {
        // `x = |batch|` binned on the fly; its NaN-ignoring max is that of the batch's extremes.
        let x_max = if abs { lo.abs().max(hi.abs()) } else { hi };
        let bin = |bins: usize, top: f32| {
            if abs {
                histc_abs(batch, bins, 0.0, top)
            } else {
                histc(batch, bins, 0.0, top)
            }
        };
        return collect_torch(state, x_max, bin, num_bins);
    }
    let x: Vec<f32> = batch
        .iter()
        .map(|&v| if abs { v.abs() } else { v })
        .filter(|&v| !(skip_zeros && v == 0.0))
        .collect();
    if torch_hist {
        let (_, x_max) = numpy::min_max_ignore_nan(&x).ok_or_else(|| empty_reduction("max"))?;
        collect_torch(
            state,
            x_max,
            |bins, top| histc(&x, bins, 0.0, top),
            num_bins,
        )
    } else {
        collect_numpy(state, &x, num_bins)
    }
}

/// The torch-histogram update with this batch's values' max `x_max`; `bin(bins, top)` is
/// `histc(x, bins, 0, top)` of them.
fn collect_torch(
    state: Option<Hist>,
    x_max: f32,
    bin: impl Fn(usize, f32) -> Vec<f32>,
    num_bins: usize,
) -> Result<Hist> {
    let Some(Hist::Torch {
        hist: old,
        edges,
        num_bins: old_bins,
    }) = state
    else {
        return Ok(Hist::Torch {
            hist: bin(num_bins, x_max),
            edges: linspace_via_f64(0.0, x_max, num_bins + 1),
            num_bins,
        });
    };
    let mut bins = old_bins;
    let mut edges = edges;
    let last = edges.last().copied().unwrap_or(0.0);
    if x_max > last {
        let width = edges.get(1).copied().unwrap_or(0.0) - edges.first().copied().unwrap_or(0.0);
        let n = (x_max / width).ceil();
        if !n.is_finite() {
            return Err(Error::framework(
                "OverflowError",
                "cannot convert float infinity to integer",
                Stage::Forward,
            ));
        }
        if n >= numpy::MAX_ELEMENTS as f32 {
            return Err(Error::input(format!("the histogram would need {n} bins")));
        }
        bins = n as usize;
        edges = arange_via_f64(0.0, (x_max + width) as f64, width as f64)?;
    }
    let top = edges.last().copied().unwrap_or(0.0);
    let mut hist = bin(bins, top);
    if old.len() > hist.len() {
        return Err(Error::framework(
            "RuntimeError",
            format!(
                "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension 0",
                hist.len(),
                old.len()
            ),
            Stage::Forward,
        ));
    }
    for (h, o) in hist.iter_mut().zip(&old) {
        *h += o;
    }
    Ok(Hist::Torch {
        hist,
        edges,
        num_bins: bins,
    })
}

fn collect_numpy(state: Option<Hist>, x: &[f32], num_bins: usize) -> Result<Hist> {
    let Some(Hist::Numpy {
        hist: old,
        edges,
        edges_f32,
    }) = state
    else {
        let (hist, edges) = numpy::histogram_auto_f32(x, num_bins)?;
        return Ok(Hist::Numpy {
            hist,
            edges: edges.iter().map(|&e| e as f64).collect(),
            edges_f32: true,
        });
    };
    let (_, temp_amax) = numpy::min_max_ignore_nan(x).ok_or_else(|| {
        Error::framework(
            "ValueError",
            "zero-size array to reduction operation maximum which has no identity",
            Stage::Forward,
        )
    })?;
    let mut edges = edges;
    let mut edges_f32 = edges_f32;
    let last = edges.last().copied().unwrap_or(0.0);
    if temp_amax as f64 > last {
        let (e0, e1) = (
            edges.first().copied().unwrap_or(0.0),
            edges.get(1).copied().unwrap_or(0.0),
        );
        let more = if edges_f32 {
            let width = e1 as f32 - e0 as f32;
            numpy::arange_from_f32(last as f32 + width, temp_amax + width, width)?
        } else {
            let width = e1 - e0;
            numpy::arange_f64(last + width, temp_amax as f64 + width, width)?
        };
        edges.extend(more);
        edges_f32 = false;
    }
    let mut hist = numpy::histogram_with_edges(x, &edges)?;
    for (h, o) in hist.iter_mut().zip(&old) {
        *h += o;
    }
    Ok(Hist::Numpy {
        hist,
        edges,
        edges_f32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_path_grows_from_zero_with_the_same_width() {
        let a = collect(None, &[-1.0, 0.5, 2.0], 4, false, true).unwrap();
        let Hist::Torch { hist, edges, .. } = &a else {
            panic!()
        };
        assert_eq!(edges, &vec![0.0, 0.5, 1.0, 1.5, 2.0]);
        assert_eq!(hist, &vec![0.0, 1.0, 1.0, 1.0]);
        let b = collect(Some(a), &[3.2], 4, false, true).unwrap();
        let Hist::Torch {
            hist,
            edges,
            num_bins,
        } = &b
        else {
            panic!()
        };
        // ceil(3.2/0.5) = 7 bins; edges arange(0, 3.7, 0.5) = 8 values up to 3.5.
        assert_eq!(*num_bins, 7);
        assert_eq!(edges.len(), 8);
        assert_eq!(hist, &vec![0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0]);
        assert!(collect(Some(b), &[], 4, false, true).is_err());
    }

    #[test]
    fn numpy_path_starts_at_the_minimum_and_skips_zeros() {
        let a = collect(None, &[0.0, 1.0, 3.0], 2, true, false).unwrap();
        assert_eq!(a.edges(), vec![1.0, 2.0, 3.0]);
        assert_eq!(a.counts(), vec![1, 1]);
        let b = collect(Some(a), &[4.5], 2, true, false).unwrap();
        assert_eq!(b.edges(), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(b.counts(), vec![1, 1, 0, 1]);
    }
}
