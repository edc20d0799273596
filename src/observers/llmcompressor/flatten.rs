//! `flatten_for_calibration` (llm-compressor 0.14.0.1, `observers/helpers.py`): how a batch is
//! laid out as `(num_observations, *qparam_shape, group_size)` before statistics are reduced
//! over dims `(0, −1)`.
//!
//! Weights (`[rows, cols]`):
//! * tensor: `(1, 1, numel)`;
//! * channel: `unsqueeze(−2).unsqueeze(0)` → `(1, rows, 1, cols)`, one slice per row;
//! * group / tensor_group: `unflatten(−1, (−1, g)).unsqueeze(0)` → `(1, rows, cols/g, g)`
//!   (a column count not divisible by `g` raises torch's `unflatten` `RuntimeError`);
//! * block `[bh, bw]`: zero-padded to multiples of the block (the padding zeros enter min/max),
//!   then `(1, ⌈rows/bh⌉, ⌈cols/bw⌉, bh·bw)`: a transposed copy;
//! * token: `ValueError`.
//!
//! Activations (`[batch, seq, hidden]`):
//! * tensor: `reshape(−1, 1, hidden)`;
//! * token: unchanged — the reduction over dims `(0, −1)` gives one slice per **sequence
//!   position**, shared by the batch (a 2-d activation reduces to one value);
//! * group / tensor_group: `flatten(0, 1).unflatten(−1, (−1, g))` → `(batch·seq, hidden/g, g)`,
//!   one slice per group shared by all tokens;
//! * channel, block: `ValueError`.
//!
//! Every layout but block only reshapes, so the slices are blocks of the original shape
//! ([`SliceMap::from_blocks`]).

use super::args::{BaseName, QuantArgs, Strategy};
use crate::error::{Error, Result, Stage};
use crate::slice_map::SliceMap;
use crate::tensor::Tensor;
use std::borrow::Cow;

/// A batch as `flatten_for_calibration` lays it out.
#[derive(Debug, Clone)]
pub struct Flattened<'a> {
    /// `(num_observations, *qparam_shape, group_size)`.
    pub shape: Vec<usize>,
    /// The values in that layout's C order.
    pub data: Cow<'a, [f32]>,
}

impl Flattened<'_> {
    /// The qparam shape (the middle dims).
    pub fn qparam_shape(&self) -> Vec<usize> {
        match self.shape.len() {
            0..=2 => Vec::new(),
            n => self.shape[1..n - 1].to_vec(),
        }
    }

    /// Number of qparams (product of the middle dims).
    pub fn qparams(&self) -> usize {
        self.qparam_shape().iter().product()
    }

    /// The dims statistics are reduced over: `(0, −1)` (torch refuses a 1-d tensor, where both
    /// name dim 0).
    pub fn reduced_dims(&self) -> Result<Vec<usize>> {
        match self.shape.len() {
            0 => Err(forward_error(
                "IndexError",
                "Dimension out of range (expected to be in range of [-1, 0], but got -1)".into(),
            )),
            1 => Err(forward_error(
                "RuntimeError",
                "dim 0 appears multiple times in the list of dims".into(),
            )),
            n => Ok(vec![0, n - 1]),
        }
    }
}

fn forward_error(kind: &str, message: String) -> Error {
    Error::framework(kind, message, Stage::Forward)
}

fn value_error(message: &str) -> Error {
    forward_error("ValueError", message.to_string())
}

/// torch's `unflatten` error for a dim that `(−1, g)` does not divide.
fn unflatten_error(dim: usize, size: usize, group: usize) -> Error {
    forward_error(
        "RuntimeError",
        format!(
            "unflatten: Provided sizes [-1, {group}] don't multiply up to the size of dim {dim} ({size}) in the input tensor"
        ),
    )
}

/// The layout of a batch of `shape`: the flattened shape and, on the original shape, the block
/// of elements that share a qparam (`None` for the block strategy, whose flattened data is a
/// padded copy).
struct Layout {
    flat_shape: Vec<usize>,
    block: Vec<usize>,
}

fn layout(shape: &[usize], base: BaseName, args: &QuantArgs) -> Result<Layout> {
    let n = shape.len();
    let numel: usize = shape.iter().product();
    let last = shape.last().copied();
    let group = || args.group_size.unwrap_or(1).max(1);
    match (base, args.strategy) {
        (BaseName::Weight, Strategy::Tensor) => Ok(Layout {
            flat_shape: vec![1, 1, numel],
            block: shape.to_vec(),
        }),
        (BaseName::Weight, Strategy::Token) => Err(value_error(
            "Token quantization cannot be applied to weights",
        )),
        (BaseName::Weight, Strategy::Channel) => {
            let last = last.ok_or_else(|| {
                forward_error(
                    "IndexError",
                    "Dimension out of range (expected to be in range of [-1, 0], but got -2)"
                        .into(),
                )
            })?;
            let mut flat = vec![1];
            flat.extend_from_slice(&shape[..n - 1]);
            flat.extend([1, last]);
            let mut block = vec![1; n];
            block[n - 1] = last;
            Ok(Layout {
                flat_shape: flat,
                block,
            })
        }
        (BaseName::Weight, Strategy::Group | Strategy::TensorGroup) => {
            let g = group();
            let last = last.unwrap_or(1);
            if n == 0 || last % g != 0 {
                return Err(unflatten_error(n.saturating_sub(1), last, g));
            }
            let mut flat = vec![1];
            flat.extend_from_slice(&shape[..n - 1]);
            flat.extend([last / g, g]);
            let mut block = vec![1; n];
            block[n - 1] = g;
            Ok(Layout {
                flat_shape: flat,
                block,
            })
        }
        (BaseName::Weight, Strategy::Block) => {
            let [bh, bw] = args.block.unwrap_or([1, 1]);
            if n < 2 {
                return Err(value_error(&format!(
                    "Tensor must be at least 2D, got shape torch.Size({shape:?})"
                )));
            }
            if n > 2 {
                return Err(value_error("too many values to unpack (expected 2)"));
            }
            let (rows, cols) = (shape[0].div_ceil(bh), shape[1].div_ceil(bw));
            Ok(Layout {
                flat_shape: vec![1, rows, cols, bh * bw],
                block: vec![bh, bw],
            })
        }
        (_, Strategy::Tensor) => {
            let last = last.ok_or_else(|| {
                forward_error(
                    "IndexError",
                    "Dimension out of range (expected to be in range of [-1, 0], but got -1)"
                        .into(),
                )
            })?;
            Ok(Layout {
                flat_shape: vec![numel.checked_div(last).unwrap_or(0), 1, last],
                block: shape.to_vec(),
            })
        }
        (_, Strategy::Token) => {
            let mut block = vec![1; n];
            if n >= 3 {
                block[0] = shape[0];
                block[n - 1] = shape[n - 1];
            } else {
                block = shape.to_vec();
            }
            Ok(Layout {
                flat_shape: shape.to_vec(),
                block,
            })
        }
        (_, Strategy::Channel) => Err(value_error(
            "Channel quantization cannot be applied to activations",
        )),
        (_, Strategy::Block) => Err(value_error(
            "Block quantization cannot be applied to activations",
        )),
        (_, Strategy::Group | Strategy::TensorGroup) => {
            if n < 2 {
                return Err(forward_error(
                    "IndexError",
                    "Dimension out of range (expected to be in range of [-1, 0], but got 1)".into(),
                ));
            }
            let g = group();
            let mut merged = vec![shape[0] * shape[1]];
            merged.extend_from_slice(&shape[2..]);
            let m = merged.len();
            let last = merged[m - 1];
            if last % g != 0 {
                return Err(unflatten_error(m - 1, last, g));
            }
            let mut flat = merged[..m - 1].to_vec();
            flat.extend([last / g, g]);
            let block = if n == 2 {
                shape.to_vec()
            } else {
                let mut b = vec![1; n];
                b[0] = shape[0];
                b[1] = shape[1];
                b[n - 1] = g;
                b
            };
            Ok(Layout {
                flat_shape: flat,
                block,
            })
        }
    }
}

/// Which qparam each element of a batch of `shape` uses.
pub fn slice_map(shape: &[usize], base: BaseName, args: &QuantArgs) -> Result<SliceMap> {
    let l = layout(shape, base, args)?;
    Ok(SliceMap::from_blocks(shape, &l.block))
}

/// `flatten_for_calibration(batch, base_name, args)`.
pub fn flatten_for_calibration<'a>(
    batch: &'a Tensor,
    base: BaseName,
    args: &QuantArgs,
) -> Result<Flattened<'a>> {
    let l = layout(&batch.shape, base, args)?;
    let data = match (base, args.strategy) {
        (BaseName::Weight, Strategy::Block) => Cow::Owned(blocks_padded(batch, &l)),
        _ => Cow::Borrowed(batch.data.as_slice()),
    };
    Ok(Flattened {
        shape: l.flat_shape,
        data,
    })
}

/// The zero-padded weight cut into `(block_rows, block_cols, bh·bw)`, each block contiguous.
fn blocks_padded(batch: &Tensor, l: &Layout) -> Vec<f32> {
    let (rows, cols) = (batch.shape[0], batch.shape[1]);
    let (bh, bw) = (l.block[0], l.block[1]);
    let (br, bc) = (l.flat_shape[1], l.flat_shape[2]);
    let mut out = vec![0.0f32; br * bc * bh * bw];
    for r in 0..rows {
        for c in 0..cols {
            let (i, j) = (r / bh, c / bw);
            let k = (r % bh) * bw + c % bw;
            out[((i * bc + j) * bh * bw) + k] = batch.data[r * cols + c];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::llmcompressor::args::tests::valid as args;
    use serde_json::json;

    #[test]
    fn layouts_follow_the_library() {
        let w = Tensor::new(vec![4, 6], (0..24).map(|v| v as f32).collect()).unwrap();
        let f =
            flatten_for_calibration(&w, BaseName::Weight, &args(json!({"strategy": "channel"})))
                .unwrap();
        assert_eq!(
            (f.shape.clone(), f.qparam_shape()),
            (vec![1, 4, 1, 6], vec![4, 1])
        );
        let blocks = args(json!({"strategy": "block", "block_structure": "3x4"}));
        let f = flatten_for_calibration(&w, BaseName::Weight, &blocks).unwrap();
        assert_eq!(f.shape, vec![1, 2, 2, 12]);
        // Block (0, 1) holds columns 4..6 of rows 0..3, zero-padded.
        assert_eq!(&f.data[12..16], &[4.0, 5.0, 0.0, 0.0]);
        let map = slice_map(&w.shape, BaseName::Weight, &blocks).unwrap();
        assert_eq!(map.slice_of(3 * 6 + 5), 3);
        let err = flatten_for_calibration(&w, BaseName::Weight, &args(json!({"group_size": 4})))
            .unwrap_err()
            .to_string();
        assert_eq!(err, "RuntimeError: unflatten: Provided sizes [-1, 4] don't multiply up to the size of dim 1 (6) in the input tensor");
        let act = Tensor::new(vec![2, 3, 8], vec![0.0; 48]).unwrap();
        let token = args(json!({"strategy": "token", "dynamic": true}));
        let f = flatten_for_calibration(&act, BaseName::Input, &token).unwrap();
        assert_eq!(f.qparam_shape(), vec![3]);
        let map = slice_map(&act.shape, BaseName::Input, &token).unwrap();
        assert_eq!(map.slice_of(8 + 3), 1);
        assert_eq!(map.slice_of(24 + 8 + 3), 1);
        let group = args(json!({"group_size": 4}));
        let f = flatten_for_calibration(&act, BaseName::Input, &group).unwrap();
        assert_eq!(f.shape, vec![6, 2, 4]);
        let map = slice_map(&act.shape, BaseName::Input, &group).unwrap();
        assert_eq!((map.slice_of(5), map.slice_of(24 + 3)), (1, 0));
    }
}
