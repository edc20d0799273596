//! Which qparam slice each element belongs to, and each slice's representable range, for
//! layouts a channel axis or one block axis cannot describe: llm-compressor's and torchao's
//! per-group, per-token, per-row and 2-d block layouts, where a slice may be shared by all
//! tokens or span two dims.
//!
//! An observer that uses them stores both in [`QParams::extra`](crate::qparams::QParams):
//!
//! * `slice_map`: `[[M, D, W], …]` — element `i` (C order) belongs to slice
//!   `Σ ((i mod M) div D) · W` (`M = 0`: no modulo). [`SliceMap::from_blocks`] builds it from a
//!   block shape, torchao's `block_size`: along dim `d` (size `n`, C-order stride `t`), a block
//!   of `b` elements gives `⌈n/b⌉` slices, contributing `(i mod n·t) div b·t`.
//! * `grid_range`: `[[lo…], [hi…]]` — the representable range of each slice (the framework's
//!   own formula: zero point, global scale, float-domain offsets), used for the clipped share
//!   and the grid drawn in the page.
//!
//! The error metrics ([`crate::qdq::measure_ranges`]) and
//! [`QParams::representable_range`](crate::qparams::QParams::representable_range) read them.

use serde_json::{Map, Value};
use std::ops::Range;

/// Key of the slice map in `QParams::extra`.
pub const SLICE_MAP_KEY: &str = "slice_map";
/// Key of the per-slice representable ranges in `QParams::extra`.
pub const GRID_RANGE_KEY: &str = "grid_range";

/// Element index → slice index: `Σ ((i mod M) div D) · W` over the terms.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SliceMap {
    terms: Vec<[usize; 3]>,
}

impl SliceMap {
    /// Every element in slice 0 (per tensor).
    pub fn per_tensor() -> Self {
        SliceMap::default()
    }

    /// Slices of blocks `block[d]` along each dim `d` of `shape` (a block at least as large as
    /// its dim spans it; the last block of a dim may be partial), numbered in C order of the
    /// block grid. Dims without an entry in `block` count as one whole block.
    pub fn from_blocks(shape: &[usize], block: &[usize]) -> Self {
        let n = shape.len();
        let mut stride = vec![1usize; n];
        for d in (0..n.saturating_sub(1)).rev() {
            stride[d] = stride[d + 1] * shape[d + 1];
        }
        let counts: Vec<usize> = (0..n)
            .map(|d| {
                let b = block.get(d).copied().unwrap_or(shape[d]).max(1);
                shape[d].div_ceil(b).max(1)
            })
            .collect();
        let mut terms = Vec::new();
        let mut weight = 1usize;
        for d in (0..n).rev() {
            if counts[d] > 1 {
                let b = block.get(d).copied().unwrap_or(shape[d]).max(1);
                let modulus = if d == 0 { 0 } else { shape[d] * stride[d] };
                terms.push([modulus, b * stride[d], weight]);
            }
            weight *= counts[d];
        }
        SliceMap { terms }
    }

    /// `r` when slice `k` is exactly elements `k·r … k·r + r − 1` of `len` elements (per
    /// tensor, per row, per group of a row: every layout whose slices are consecutive runs), so
    /// that a loop can take one slice's qparams per run instead of computing each element's.
    pub fn run_length(&self, len: usize) -> Option<usize> {
        let Some(&[first_modulus, run, first_weight]) = self.terms.first() else {
            return Some(len.max(1));
        };
        if run == 0 || first_weight != 1 {
            return None;
        }
        // Each further term must continue the count where the previous one wrapped around.
        let mut modulus = first_modulus;
        for &[m, d, w] in &self.terms[1..] {
            if modulus == 0 || modulus % run != 0 || d != modulus || w != modulus / run {
                return None;
            }
            modulus = m;
        }
        (modulus == 0 || modulus >= len).then_some(run)
    }

    /// The slice of element `i`.
    #[inline]
    pub fn slice_of(&self, i: usize) -> usize {
        self.terms
            .iter()
            .map(|&[m, d, w]| {
                let r = if m == 0 { i } else { i % m };
                (r / d.max(1)) * w
            })
            .sum()
    }

    /// The map stored in `extra`, if any.
    pub fn from_extra(extra: &Map<String, Value>) -> Option<Self> {
        let terms = extra
            .get(SLICE_MAP_KEY)?
            .as_array()?
            .iter()
            .map(|t| {
                let t = t.as_array()?;
                let get = |k: usize| t.get(k)?.as_u64().and_then(|v| usize::try_from(v).ok());
                Some([get(0)?, get(1)?, get(2)?])
            })
            .collect::<Option<Vec<_>>>()?;
        Some(SliceMap { terms })
    }

    /// Store the map in `extra`.
    pub fn write(&self, extra: &mut Map<String, Value>) {
        let terms: Vec<Value> = self.terms.iter().map(|t| Value::from(t.to_vec())).collect();
        extra.insert(SLICE_MAP_KEY.into(), Value::Array(terms));
    }
}

/// The runs of `run` elements (slice `k`: elements `k·run …`) that cover elements
/// `at … at + len − 1`: each as its slice and its positions in that stretch (counted from `at`).
pub fn runs(at: usize, len: usize, run: usize) -> impl Iterator<Item = (usize, Range<usize>)> {
    let run = run.max(1);
    let mut j = 0;
    std::iter::from_fn(move || {
        (j < len).then(|| {
            let slice = (at + j) / run;
            let end = ((slice + 1) * run - at).min(len);
            let positions = j..end;
            j = end;
            (slice, positions)
        })
    })
}

/// Store the representable range `[lo[k], hi[k]]` of every slice `k` in `extra`.
pub fn write_grid_range(extra: &mut Map<String, Value>, lo: &[f64], hi: &[f64]) {
    extra.insert(
        GRID_RANGE_KEY.into(),
        Value::from(vec![Value::from(lo.to_vec()), Value::from(hi.to_vec())]),
    );
}

/// The representable ranges of every slice stored in `extra` (none when there are none; a
/// slice whose stored bounds are not numbers gets `None`, as [`grid_range`] gives it).
pub fn grid_ranges(extra: &Map<String, Value>) -> Vec<Option<(f64, f64)>> {
    let Some(both) = extra.get(GRID_RANGE_KEY).and_then(Value::as_array) else {
        return Vec::new();
    };
    let (Some(lo), Some(hi)) = (
        both.first().and_then(Value::as_array),
        both.get(1).and_then(Value::as_array),
    ) else {
        return Vec::new();
    };
    lo.iter()
        .zip(hi)
        .map(|(l, h)| Some((l.as_f64()?, h.as_f64()?)))
        .collect()
}

/// The representable range of slice `k` stored in `extra`, if any.
pub fn grid_range(extra: &Map<String, Value>, k: usize) -> Option<(f64, f64)> {
    let both = extra.get(GRID_RANGE_KEY)?.as_array()?;
    let lo = both.first()?.as_array()?.get(k)?.as_f64()?;
    let hi = both.get(1)?.as_array()?.get(k)?.as_f64()?;
    Some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_number_slices_in_c_order() {
        // (4, 6) in blocks of (2, 4): a 2 × 2 grid, the second column block partial.
        let map = SliceMap::from_blocks(&[4, 6], &[2, 4]);
        let got: Vec<usize> = (0..24).map(|i| map.slice_of(i)).collect();
        let want: Vec<usize> = (0..24).map(|i| (i / 6 / 2) * 2 + (i % 6) / 4).collect();
        assert_eq!(got, want);
        // Shared by every token: (B, S, H) in blocks (B, S, 8) → one slice per group of 8.
        let map = SliceMap::from_blocks(&[2, 3, 16], &[2, 3, 8]);
        assert_eq!(map.slice_of(3 * 16 + 9), 1);
        // Per row: blocks (1, 16) of (5, 16).
        let map = SliceMap::from_blocks(&[5, 16], &[1, 16]);
        assert_eq!(map.slice_of(4 * 16 + 15), 4);
        assert_eq!(
            SliceMap::from_blocks(&[5, 16], &[5, 16]),
            SliceMap::per_tensor()
        );
        let mut extra = Map::new();
        map.write(&mut extra);
        write_grid_range(&mut extra, &[-1.0, -2.0], &[1.0, 2.0]);
        assert_eq!(SliceMap::from_extra(&extra), Some(map));
        assert_eq!(grid_range(&extra, 1), Some((-2.0, 2.0)));
        assert_eq!(grid_range(&extra, 2), None);
    }

    #[test]
    fn run_length_is_found_exactly_where_slices_are_runs() {
        let n = 8 * 12;
        for (shape, block, run) in [
            (vec![8, 12], vec![1, 4], Some(4)),
            (vec![8, 12], vec![1, 12], Some(12)),
            (vec![8, 12], vec![8, 12], Some(n)),
            (vec![2, 4, 12], vec![1, 1, 3], Some(3)),
            (vec![8, 12], vec![2, 4], None),
            (vec![8, 12], vec![8, 1], None),
            (vec![8, 12], vec![1, 5], None), // a partial last block
        ] {
            let map = SliceMap::from_blocks(&shape, &block);
            assert_eq!(map.run_length(n), run, "{shape:?} {block:?}");
            if let Some(r) = run {
                assert!((0..n).all(|i| map.slice_of(i) == i / r));
            }
        }
    }
}
