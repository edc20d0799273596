//! How torchao 0.18.0 turns a granularity into blocks of a batch (`get_block_size` in
//! `torchao/quantization/utils.py`) and views the batch for reduction
//! (`_get_reduction_params` in `quant_primitives.py`).
//!
//! Block size per granularity, for input shape `s`:
//! * `PerTensor`: `s`;
//! * `PerAxis(a)`: `s` with `s[a] = 1` — **keeps** axis `a` (one qparam per index along it);
//! * `PerRow(d)`: all 1s but `s[d]` — **reduces** dim `d` (`PerRow()` = one qparam per row,
//!   `PerRow(0)` one per column): the opposite of `PerAxis`;
//! * `PerToken`: `(1, …, 1, s[−1])`; `PerGroup(g)`: `(1, …, 1, g)` (asserts `g` divides the last
//!   dim); `PerBlock(b)`: `b` left-padded with 1s (asserts every dim divisible).
//!
//! The reduction view splits every dim whose block is neither 1 nor the whole dim into
//! `(s/b, b)` and reduces over the block parts; qparams are laid out row-major over the rest.

use super::args::Granularity;
use crate::error::{Error, Result, Stage};
use crate::slice_map::SliceMap;

fn forward_error(kind: &str, message: String) -> Error {
    Error::framework(kind, message, Stage::Forward)
}

/// Python's `repr` of a tuple of ints: `(32, 64)`, `(5,)`.
pub fn tuple_repr(v: &[usize]) -> String {
    match v {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            v.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `torch.Size([64, 256])`.
pub fn size_repr(v: &[usize]) -> String {
    format!(
        "torch.Size([{}])",
        v.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A Python index `i` into a sequence of length `n` (negative from the end).
fn python_index(i: i64, n: usize) -> Option<usize> {
    let j = if i < 0 { i + n as i64 } else { i };
    (0..n as i64).contains(&j).then_some(j as usize)
}

/// `get_block_size(input_shape, granularity)`.
pub fn block_size(shape: &[usize], granularity: &Granularity) -> Result<Vec<usize>> {
    let n = shape.len();
    match granularity {
        Granularity::PerTensor => Ok(shape.to_vec()),
        Granularity::PerAxis(axis) => {
            let a = python_index(*axis, n).ok_or_else(|| {
                forward_error("IndexError", "list assignment index out of range".into())
            })?;
            let mut b = shape.to_vec();
            b[a] = 1;
            Ok(b)
        }
        Granularity::PerBlock(block) => {
            let mut b = block.clone();
            while b.len() < n {
                b.insert(0, 1);
            }
            if b.len() != n {
                return Err(forward_error(
                    "AssertionError",
                    format!(
                        "Block size {} must have the same number of dimensions as input shape {}",
                        tuple_repr(&b),
                        size_repr(shape)
                    ),
                ));
            }
            if shape.iter().zip(&b).any(|(s, b)| s % b != 0) {
                return Err(forward_error(
                    "AssertionError",
                    format!(
                        "Not all shapes in input shape {} are divisible by block size {}",
                        size_repr(shape),
                        tuple_repr(&b)
                    ),
                ));
            }
            Ok(b)
        }
        Granularity::PerToken => {
            let mut b = vec![1; n];
            if let (Some(last), Some(&s)) = (b.last_mut(), shape.last()) {
                *last = s;
            }
            Ok(b)
        }
        Granularity::PerRow(dim) => {
            let d = python_index(*dim, n)
                .ok_or_else(|| forward_error("IndexError", "tuple index out of range".into()))?;
            let mut b = vec![1; n];
            b[d] = shape[d];
            Ok(b)
        }
        Granularity::PerGroup(g) => {
            let last = *shape
                .last()
                .ok_or_else(|| forward_error("IndexError", "tuple index out of range".into()))?;
            if last % g != 0 {
                return Err(forward_error(
                    "AssertionError",
                    format!("Last dimension of input {last} is not divisible by group size {g}"),
                ));
            }
            let mut b = vec![1; n];
            b[n - 1] = *g;
            Ok(b)
        }
    }
}

/// The reduction view of a batch: `_get_reduction_params(block_size, input_size)`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReductionView {
    /// `shape_for_reduction`.
    pub shape: Vec<usize>,
    /// `reduction_dims` (an empty list reduces every dim, as torch's `amin`/`mean` do).
    pub dims: Vec<usize>,
}

impl ReductionView {
    /// `_get_reduction_params`.
    pub fn new(block: &[usize], input: &[usize]) -> Result<Self> {
        let mut shape = Vec::new();
        let mut dims = Vec::new();
        for (i, (&b, &s)) in block.iter().zip(input).enumerate() {
            if b != s && b > 1 {
                if s % b != 0 {
                    return Err(forward_error(
                        "AssertionError",
                        format!(
                            "Expecting input size at {i} dimension: {s} to be divisible by block_size at {i} dimension: {b}"
                        ),
                    ));
                }
                shape.push(s / b);
                shape.push(b);
                dims.push(shape.len() - 1);
            } else {
                shape.push(s);
                if b != 1 {
                    dims.push(shape.len() - 1);
                }
            }
        }
        Ok(ReductionView { shape, dims })
    }

    /// The dims actually reduced (all of them when `dims` is empty).
    pub fn reduced(&self) -> Vec<usize> {
        if self.dims.is_empty() {
            (0..self.shape.len()).collect()
        } else {
            self.dims.clone()
        }
    }

    /// The shape of a reduction (`keepdim` keeps the reduced dims as 1s).
    pub fn reduced_shape(&self, keepdim: bool) -> Vec<usize> {
        let reduced = self.reduced();
        self.shape
            .iter()
            .enumerate()
            .filter_map(|(d, &s)| match (reduced.contains(&d), keepdim) {
                (false, _) => Some(s),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect()
    }
}

/// Which qparam every element of a batch of `shape` uses under `block`.
pub fn slice_map(shape: &[usize], block: &[usize]) -> SliceMap {
    SliceMap::from_blocks(shape, block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_views_follow_torchao() {
        let s = [64, 256];
        assert_eq!(block_size(&s, &Granularity::PerAxis(0)).unwrap(), [1, 256]);
        assert_eq!(block_size(&s, &Granularity::PerAxis(-1)).unwrap(), [64, 1]);
        assert_eq!(block_size(&s, &Granularity::PerRow(0)).unwrap(), [64, 1]);
        assert_eq!(block_size(&s, &Granularity::PerRow(-1)).unwrap(), [1, 256]);
        assert_eq!(
            block_size(&[2, 64, 256], &Granularity::PerBlock(vec![32, 64])).unwrap(),
            [1, 32, 64]
        );
        let err = block_size(&s, &Granularity::PerGroup(48))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "AssertionError: Last dimension of input 256 is not divisible by group size 48"
        );
        let err = block_size(&s, &Granularity::PerBlock(vec![48, 64]))
            .unwrap_err()
            .to_string();
        assert_eq!(err, "AssertionError: Not all shapes in input shape torch.Size([64, 256]) are divisible by block size (48, 64)");
        let v = ReductionView::new(&[32, 64], &s).unwrap();
        assert_eq!(
            (v.shape.clone(), v.dims.clone()),
            (vec![2, 32, 4, 64], vec![1, 3])
        );
        assert_eq!(v.reduced_shape(false), vec![2, 4]);
        assert_eq!(v.reduced_shape(true), vec![2, 1, 4, 1]);
        let t = ReductionView::new(&s, &s).unwrap();
        assert_eq!(
            (t.dims.clone(), t.reduced_shape(false)),
            (vec![0, 1], vec![])
        );
    }
}
