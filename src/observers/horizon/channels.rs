//! The per-channel view Horizon's observers reduce over:
//! `x.transpose(0, ch_axis).flatten(start_dim=1)` (the transpose only when `ch_axis > 0`), with
//! PyTorch's errors for tensors that have too few dimensions.

use super::base::{self, Scheme};
use crate::error::{Error, Result, Stage};
use crate::tensor::Tensor;
use std::borrow::Cow;

/// PyTorch's `IndexError` for a dimension outside `[-n, n-1]` (0-d tensors count as 1-d).
fn dim_error(ndim: usize, dim: usize) -> Error {
    let n = ndim.max(1) as i64;
    Error::framework(
        "IndexError",
        format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        ),
        Stage::Forward,
    )
}

/// The layout of `x.transpose(0, ch_axis).flatten(start_dim=1)`: `outer` blocks of `channels`
/// runs of `inner` contiguous elements each; run `(o, c)` belongs to channel `c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelLayout {
    pub outer: usize,
    pub channels: usize,
    pub inner: usize,
}

impl ChannelLayout {
    /// The layout of channel axis `axis` of `shape`, failing like PyTorch's `transpose` /
    /// `flatten(start_dim=1)` do on tensors with too few dimensions.
    pub fn new(shape: &[usize], axis: usize) -> Result<Self> {
        let ndim = shape.len();
        if axis > 0 && axis >= ndim.max(1) {
            return Err(dim_error(ndim, axis));
        }
        if ndim < 2 {
            return Err(dim_error(ndim, 1));
        }
        Ok(ChannelLayout {
            outer: shape[..axis].iter().product(),
            channels: shape[axis],
            inner: shape[axis + 1..].iter().product(),
        })
    }

    /// Call `f(channel, run)` for every contiguous run of `data` (C order).
    #[inline]
    pub fn for_each_run(&self, data: &[f32], mut f: impl FnMut(usize, &[f32])) {
        if self.inner == 0 {
            return;
        }
        for (k, run) in data.chunks_exact(self.inner).enumerate() {
            f(k % self.channels.max(1), run);
        }
    }

    /// Per-channel `aminmax` (`(+inf, −inf)` for an empty channel, where PyTorch raises).
    pub fn min_max(&self, data: &[f32]) -> (Vec<f32>, Vec<f32>) {
        let mut lo = vec![f32::INFINITY; self.channels];
        let mut hi = vec![f32::NEG_INFINITY; self.channels];
        self.for_each_run(data, |c, run| {
            for &v in run {
                lo[c] = lo[c].min(v);
                hi[c] = hi[c].max(v);
            }
        });
        (lo, hi)
    }
}

/// The batch's `aminmax`, per tensor or per channel (`transpose(0, ch_axis).flatten(1)`).
pub fn batch_min_max(batch: &Tensor, scheme: Scheme) -> Result<(Vec<f32>, Vec<f32>)> {
    if batch.is_empty() {
        return Err(base::empty_reduction_error());
    }
    match scheme {
        Scheme::PerTensor => {
            let (lo, hi) = base::min_max(&batch.data);
            Ok((vec![lo], vec![hi]))
        }
        Scheme::PerChannel(axis) => {
            Ok(ChannelLayout::new(&batch.shape, axis)?.min_max(&batch.data))
        }
    }
}

/// `x.transpose(0, axis).flatten(start_dim=1)` as a contiguous copy: one row per channel, the
/// other dimensions in PyTorch's order (1, …, axis−1, 0, axis+1, …). Axis 0 is the data as is.
pub fn channel_rows(x: &Tensor, axis: usize) -> Result<(Cow<'_, [f32]>, usize)> {
    let layout = ChannelLayout::new(&x.shape, axis)?;
    let channels = layout.channels;
    if axis == 0 {
        return Ok((Cow::Borrowed(&x.data), channels));
    }
    let ndim = x.shape.len();
    let mut strides = vec![1usize; ndim];
    for d in (0..ndim.saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * x.shape[d + 1];
    }
    // Dimensions after the channel, in the transposed order.
    let order: Vec<usize> = (1..ndim).map(|d| if d == axis { 0 } else { d }).collect();
    let dims: Vec<usize> = order.iter().map(|&d| x.shape[d]).collect();
    let row_len: usize = dims.iter().product();
    let mut out = Vec::with_capacity(x.len());
    let mut idx = vec![0usize; order.len()];
    for c in 0..channels {
        let base = c * strides[axis];
        idx.iter_mut().for_each(|i| *i = 0);
        let mut offset = base;
        for _ in 0..row_len {
            out.push(x.data[offset]);
            // Odometer step over `dims`, last dimension fastest.
            for k in (0..idx.len()).rev() {
                idx[k] += 1;
                offset += strides[order[k]];
                if idx[k] < dims[k] {
                    break;
                }
                offset -= strides[order[k]] * dims[k];
                idx[k] = 0;
            }
        }
    }
    Ok((Cow::Owned(out), channels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_layout_follows_transpose_and_flatten() {
        let l = ChannelLayout::new(&[2, 3, 2], 1).unwrap();
        assert_eq!((l.outer, l.channels, l.inner), (2, 3, 2));
        let data: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let (lo, hi) = l.min_max(&data);
        assert_eq!(lo, vec![0.0, 2.0, 4.0]);
        assert_eq!(hi, vec![7.0, 9.0, 11.0]);
        let e = ChannelLayout::new(&[4], 0).unwrap_err().to_string();
        assert!(e.contains("[-1, 0], but got 1"), "{e}");
        let e = ChannelLayout::new(&[4, 2], 3).unwrap_err().to_string();
        assert!(e.contains("[-2, 1], but got 3"), "{e}");
    }

    #[test]
    fn channel_rows_follow_transpose_then_flatten() {
        // shape [2, 3, 2], value = flat index
        let x = Tensor::new(vec![2, 3, 2], (0..12).map(|v| v as f32).collect()).unwrap();
        let (rows, c) = channel_rows(&x, 1).unwrap();
        assert_eq!(c, 3);
        assert_eq!(
            rows.to_vec(),
            vec![0., 1., 6., 7., 2., 3., 8., 9., 4., 5., 10., 11.]
        );
        let (rows, c) = channel_rows(&x, 2).unwrap();
        assert_eq!(c, 2);
        // transpose(0, 2) has shape [2, 3, 2] with dims (2, 1, 0): row c lists x[k][j][c] for
        // j-major, k-minor.
        assert_eq!(
            rows.to_vec(),
            vec![0., 6., 2., 8., 4., 10., 1., 7., 3., 9., 5., 11.]
        );
        assert_eq!(channel_rows(&x, 0).unwrap().0.to_vec(), x.data);
    }
}
