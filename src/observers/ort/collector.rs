//! ORT's `HistogramCollector`: the histograms behind the Entropy, Percentile and Distribution
//! calibraters, built exactly as `collect_value` / `collect_absolute_value` do.
//!
//! * **value** (`collect_value`; Entropy, Distribution, Percentile with `symmetric=False`):
//!   `threshold = max(|min|, |max|)`; first call `np.histogram(x, num_bins, range=(−th, th))`.
//!   Later calls with a threshold ≤ the old one are binned on the old range and added; a larger
//!   threshold grows the histogram by `half = int((th − old_th) // stride + 1)` bins on each side
//!   (`stride = 2·old_th/bins`, all float32), re-bins the new data on `±(half·stride + old_th)`
//!   and adds the old counts to the centre slice. An old threshold of 0 re-bins with the same bin
//!   count and adds the old counts unaligned.
//! * **absolute** (`collect_absolute_value`; Percentile with `symmetric=True`): `|x|` binned with
//!   `np.histogram(|x|, num_bins)`, i.e. on `[min|x|, max|x|]` — not from 0, so later values
//!   below the first batch's `min|x|` are dropped. A later `max|x|` beyond the last edge appends
//!   `np.arange(last + w, max|x| + w, w)` edges (float64, possibly one bin more than needed);
//!   the new data is binned on the float64 edges, old counts are added left-aligned, and the
//!   edges are stored back as float32.
//!
//! One `collect` call sees the concatenation of all arrays of one `collect_data()` call.

use crate::error::{Error, Result, Stage};
use crate::kernels::numpy;

/// Which of the collector's two histograms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistKind {
    /// Signed values on `±threshold` (`collect_value`).
    Value,
    /// Absolute values from `min|x|` (`collect_absolute_value`).
    Absolute,
}

/// The collector's per-tensor entry: `(hist, hist_edges, min, max[, threshold])`.
#[derive(Debug, Clone, PartialEq)]
pub struct Collected {
    /// Bin counts (numpy int64).
    pub hist: Vec<i64>,
    /// Bin edges, float32, `hist.len() + 1` of them.
    pub edges: Vec<f32>,
    /// Running minimum of the raw (signed) data.
    pub min: f32,
    /// Running maximum of the raw (signed) data.
    pub max: f32,
    /// `collect_value` only: the current `±threshold` of the histogram.
    pub threshold: f32,
}

/// `(np.nanmin, np.nanmax)` of one collect call, `(0, 0)` for an empty array.
fn min_max(data: &[f32]) -> (f32, f32) {
    if data.is_empty() {
        return (0.0, 0.0);
    }
    numpy::min_max_ignore_nan(data).unwrap_or((f32::NAN, f32::NAN))
}

/// Python's `max(a, b)` on numpy scalars: `b` if `b > a` else `a`.
fn py_max(a: f32, b: f32) -> f32 {
    if b > a {
        b
    } else {
        a
    }
}

/// Python's `min(a, b)`: `b` if `b < a` else `a`.
fn py_min(a: f32, b: f32) -> f32 {
    if b < a {
        b
    } else {
        a
    }
}

/// Add one collect call's data (`data` = all arrays of the call, concatenated) to `state`.
pub fn collect(
    state: Option<Collected>,
    data: &[f32],
    kind: HistKind,
    num_bins: usize,
) -> Result<Collected> {
    match kind {
        HistKind::Value => collect_value(state, data, num_bins),
        HistKind::Absolute => collect_absolute_value(state, data, num_bins),
    }
}

fn collect_value(state: Option<Collected>, data: &[f32], num_bins: usize) -> Result<Collected> {
    let (min, max) = min_max(data);
    let threshold = py_max(min.abs(), max.abs());
    let Some(old) = state else {
        let (hist, edges) = numpy::histogram_uniform_f32(data, num_bins, -threshold, threshold)?;
        return Ok(Collected {
            hist,
            edges,
            min,
            max,
            threshold,
        });
    };
    let new_min = py_min(old.min, min);
    let new_max = py_max(old.max, max);
    if threshold <= old.threshold {
        let (new_hist, _) =
            numpy::histogram_uniform_f32(data, old.hist.len(), -old.threshold, old.threshold)?;
        let hist = new_hist.iter().zip(&old.hist).map(|(a, b)| a + b).collect();
        return Ok(Collected {
            hist,
            edges: old.edges,
            min: new_min,
            max: new_max,
            threshold: old.threshold,
        });
    }
    if old.threshold == 0.0 {
        let (mut hist, edges) =
            numpy::histogram_uniform_f32(data, old.hist.len(), -threshold, threshold)?;
        for (h, o) in hist.iter_mut().zip(&old.hist) {
            *h += o;
        }
        return Ok(Collected {
            hist,
            edges,
            min: new_min,
            max: new_max,
            threshold,
        });
    }
    let old_bins = old.hist.len();
    let stride = 2.0f32 * old.threshold / old_bins as f32;
    let half_f = numpy::floor_divide_f32(threshold - old.threshold, stride) + 1.0;
    if !half_f.is_finite() || half_f < 0.0 || half_f as f64 * 2.0 >= numpy::MAX_ELEMENTS as f64 {
        return Err(Error::input(format!(
            "the histogram would grow by {half_f} bins on each side"
        )));
    }
    let half = half_f as usize;
    let new_bins = old_bins + 2 * half;
    let new_threshold = (half as f32) * stride + old.threshold;
    let (mut hist, edges) =
        numpy::histogram_uniform_f32(data, new_bins, -new_threshold, new_threshold)?;
    for (h, o) in hist[half..new_bins - half].iter_mut().zip(&old.hist) {
        *h += o;
    }
    Ok(Collected {
        hist,
        edges,
        min: new_min,
        max: new_max,
        threshold: new_threshold,
    })
}

fn collect_absolute_value(
    state: Option<Collected>,
    data: &[f32],
    num_bins: usize,
) -> Result<Collected> {
    let (min, max) = min_max(data);
    let Some(old) = state else {
        let (hist, edges) = numpy::histogram_auto_abs_f32(data, num_bins)?;
        return Ok(Collected {
            hist,
            edges,
            min,
            max,
            threshold: 0.0,
        });
    };
    let abs: Vec<f32> = data.iter().map(|x| x.abs()).collect();
    let temp_amax = numpy::min_max_ignore_nan(&abs)
        .map(|(_, hi)| hi)
        .ok_or_else(|| {
            Error::framework(
                "ValueError",
                "zero-size array to reduction operation fmax which has no identity",
                Stage::Forward,
            )
        })?;
    let last = old.edges.last().copied().unwrap_or(0.0);
    let mut edges64: Vec<f64> = old.edges.iter().map(|&e| e as f64).collect();
    if temp_amax > last {
        let width =
            old.edges.get(1).copied().unwrap_or(last) - old.edges.first().copied().unwrap_or(0.0);
        let more = numpy::arange_from_f32(last + width, temp_amax + width, width)?;
        edges64.extend(more);
    }
    let mut hist = numpy::histogram_with_edges(&abs, &edges64)?;
    for (h, o) in hist.iter_mut().zip(&old.hist) {
        *h += o;
    }
    Ok(Collected {
        hist,
        edges: edges64.iter().map(|&e| e as f32).collect(),
        min: py_min(old.min, min),
        max: py_max(old.max, max),
        threshold: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_histogram_grows_symmetrically_and_aligns_old_counts() {
        // First call: ±1 in 4 bins of 0.5; second call reaches 1.6 → stride 0.5,
        // half = int((1.6 − 1) // 0.5 + 1) = 2, so 8 bins on ±2.
        let a = collect(None, &[-1.0, -0.2, 0.3, 1.0], HistKind::Value, 4).unwrap();
        assert_eq!(a.hist, vec![1, 1, 1, 1]);
        let b = collect(Some(a), &[1.6], HistKind::Value, 4).unwrap();
        assert_eq!(b.threshold, 2.0);
        assert_eq!(b.hist, vec![0, 0, 1, 1, 1, 1, 0, 1]);
        assert_eq!(b.edges.len(), 9);
        assert_eq!((b.min, b.max), (-1.0, 1.6));
        // A smaller threshold re-bins on the old range.
        let c = collect(Some(b), &[0.1], HistKind::Value, 4).unwrap();
        assert_eq!(c.hist.iter().sum::<i64>(), 6);
        assert_eq!(c.threshold, 2.0);
    }

    #[test]
    fn absolute_histogram_starts_at_min_abs_and_appends_edges() {
        // |x| in [0.5, 2.5] with 2 bins of width 1.
        let a = collect(None, &[-0.5, 1.0, 2.5], HistKind::Absolute, 2).unwrap();
        assert_eq!(a.edges, vec![0.5, 1.5, 2.5]);
        assert_eq!(a.hist, vec![2, 1]);
        // 0.2 is below the first edge and is dropped; 4.0 appends arange(3.5, 5.0, 1.0).
        let b = collect(Some(a), &[0.2, 4.0], HistKind::Absolute, 2).unwrap();
        assert_eq!(b.edges, vec![0.5, 1.5, 2.5, 3.5, 4.5]);
        assert_eq!(b.hist, vec![2, 1, 0, 1]);
        assert_eq!((b.min, b.max), (-0.5, 4.0));
    }

    proptest::proptest! {
        #[test]
        fn value_histogram_keeps_every_value(
            batches in proptest::collection::vec(
                proptest::collection::vec(-50f32..50.0, 1..200), 1..6),
            bins in 2usize..600,
        ) {
            let mut state = None;
            for b in &batches {
                state = Some(collect(state, b, HistKind::Value, bins).unwrap());
            }
            let c = state.unwrap();
            let n: usize = batches.iter().map(Vec::len).sum();
            proptest::prop_assert_eq!(c.hist.iter().sum::<i64>() as usize, n);
            proptest::prop_assert_eq!(c.edges.len(), c.hist.len() + 1);
            proptest::prop_assert!(c.edges.windows(2).all(|w| w[0] <= w[1]));
        }
    }
}
