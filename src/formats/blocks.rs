//! Which block each element of a tensor belongs to when it is cut into blocks along an axis.
//!
//! The layout is the one of Quark's `reshape_to_blocks` (and of the OCP MX reference code):
//! swap `axis` with the last axis, flatten everything else into rows, zero-pad each row to a
//! multiple of `block` and cut it into `ceil(len/block)` blocks. Block `k` of row `r` has the
//! flat index `r · blocks_per_row + k`. No data is moved: [`BlockLayout::block_of`] maps a C-order
//! element index straight to its block.

use crate::error::{Error, Result};

/// Blocks of `block` consecutive elements along one axis of a shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockLayout {
    axis: usize,
    block: usize,
    /// Length of the blocked axis.
    len: usize,
    /// Product of the dimensions after `axis` and before the last one.
    mid: usize,
    /// Length of the last dimension (when `axis` is not the last one).
    last: usize,
    rows: usize,
    blocks_per_row: usize,
    axis_is_last: bool,
}

impl BlockLayout {
    /// Layout of `shape` cut into blocks of `block` along `axis` (negative counts from the end).
    /// A 0-d shape is treated as `[1]`.
    pub fn new(shape: &[usize], axis: i64, block: usize) -> Result<Self> {
        if block == 0 {
            return Err(Error::param(
                "group_size",
                "the block size must be positive",
            ));
        }
        let one = [1usize];
        let shape = if shape.is_empty() { &one[..] } else { shape };
        let n = shape.len() as i64;
        let a = if axis < 0 { axis + n } else { axis };
        if a < 0 || a >= n {
            return Err(Error::input(format!(
                "axis {axis} is out of range for a tensor of shape {shape:?}"
            )));
        }
        let a = a as usize;
        let last_index = shape.len() - 1;
        let len = shape[a];
        let total: usize = shape.iter().product();
        let rows = total.checked_div(len).unwrap_or(0);
        let mid = shape[a + 1..last_index.max(a + 1)]
            .iter()
            .product::<usize>();
        Ok(BlockLayout {
            axis: a,
            block,
            len,
            mid: if a == last_index { 1 } else { mid },
            last: shape[last_index],
            rows,
            blocks_per_row: len.div_ceil(block),
            axis_is_last: a == last_index,
        })
    }

    /// The blocked axis (non-negative).
    pub fn axis(&self) -> usize {
        self.axis
    }

    /// Elements per block.
    pub fn block_size(&self) -> usize {
        self.block
    }

    /// Number of rows (product of the other dimensions).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Blocks per row, `ceil(len / block)`.
    pub fn blocks_per_row(&self) -> usize {
        self.blocks_per_row
    }

    /// Total number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.rows * self.blocks_per_row
    }

    /// The block of C-order element `i`.
    #[inline]
    pub fn block_of(&self, i: usize) -> usize {
        let (row, pos) = if self.axis_is_last {
            (i / self.len, i % self.len)
        } else {
            let l = i % self.last;
            let t = i / self.last;
            let m = t % self.mid;
            let t = t / self.mid;
            let pos = t % self.len;
            let outer = t / self.len;
            ((outer * self.last + l) * self.mid + m, pos)
        };
        row * self.blocks_per_row + pos / self.block
    }

    /// When the blocked axis is the last one: the block of element `i` and how many elements
    /// from `i` on stay in it (a block never spans two rows). `None` for other axes, where
    /// consecutive elements belong to different rows.
    #[inline]
    pub fn contiguous_run(&self, i: usize) -> Option<(usize, usize)> {
        if !self.axis_is_last || self.len == 0 {
            return None;
        }
        let pos = i % self.len;
        let run = (self.block - pos % self.block).min(self.len - pos);
        Some(((i / self.len) * self.blocks_per_row + pos / self.block, run))
    }

    /// `max |x|` of every block (padding counts as 0; NaN propagates like `torch.max`).
    pub fn block_amax(&self, data: &[f32]) -> Vec<f32> {
        if self.axis_is_last && self.len > 0 && data.len() == self.rows * self.len {
            // Rows in parallel, each block's magnitudes in lanes (the maximum does not depend
            // on the order).
            let block = self.block;
            let rows = crate::parallel::map_chunks_of(data, self.len, |row| {
                row.chunks(block)
                    .map(crate::lanes::abs_max)
                    .collect::<Vec<_>>()
            });
            return rows.into_iter().flatten().collect();
        }
        self.fold(data, 0.0f32, |a, v| nan_max(a, v.abs()))
    }

    /// `f` folded over the elements of every block, in their order in the tensor, from `init`
    /// (a block's padding is not visited). Blocks along the last axis are walked as runs.
    pub fn fold<T: Copy>(&self, data: &[f32], init: T, f: impl Fn(T, f32) -> T) -> Vec<T> {
        let mut out = vec![init; self.num_blocks()];
        if self.axis_is_last {
            for (r, row) in data.chunks(self.len.max(1)).enumerate() {
                for (k, chunk) in row.chunks(self.block).enumerate() {
                    let slot = &mut out[r * self.blocks_per_row + k];
                    *slot = chunk.iter().fold(*slot, |a, &v| f(a, v));
                }
            }
        } else {
            for (i, &v) in data.iter().enumerate() {
                let slot = &mut out[self.block_of(i)];
                *slot = f(*slot, v);
            }
        }
        out
    }

    /// Apply `f(block, value)` to every element, keeping the tensor's layout.
    pub fn map(&self, data: &[f32], mut f: impl FnMut(usize, f32) -> f32) -> Vec<f32> {
        if self.axis_is_last {
            let mut out = Vec::with_capacity(data.len());
            for (r, row) in data.chunks(self.len.max(1)).enumerate() {
                for (k, chunk) in row.chunks(self.block).enumerate() {
                    let b = r * self.blocks_per_row + k;
                    out.extend(chunk.iter().map(|&v| f(b, v)));
                }
            }
            out
        } else {
            data.iter()
                .enumerate()
                .map(|(i, &v)| f(self.block_of(i), v))
                .collect()
        }
    }

    /// The elements of every block, in block order (for checks that look at a whole block).
    pub fn gather(&self, data: &[f32]) -> Vec<Vec<f32>> {
        let mut blocks = vec![Vec::with_capacity(self.block); self.num_blocks()];
        for (i, &v) in data.iter().enumerate() {
            blocks[self.block_of(i)].push(v);
        }
        blocks
    }
}

/// `max` that propagates NaN (as `torch.max`).
#[inline]
fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if b > a {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: transpose axis↔last, flatten rows, cut rows into blocks.
    fn reference_blocks(shape: &[usize], axis: usize, block: usize) -> Vec<usize> {
        let n = shape.len();
        let total: usize = shape.iter().product();
        let mut tshape = shape.to_vec();
        tshape.swap(axis, n - 1);
        let len = shape[axis];
        let per_row = len.div_ceil(block);
        let mut out = vec![0; total];
        for (flat, slot) in out.iter_mut().enumerate() {
            let mut idx = vec![0; n];
            let mut rest = flat;
            for d in (0..n).rev() {
                idx[d] = rest % shape[d];
                rest /= shape[d];
            }
            idx.swap(axis, n - 1);
            let mut row = 0;
            for d in 0..n - 1 {
                row = row * tshape[d] + idx[d];
            }
            *slot = row * per_row + idx[n - 1] / block;
        }
        out
    }

    #[test]
    fn block_index_matches_transpose_and_reshape() {
        for (shape, axis, block) in [
            (vec![4usize, 64], 1usize, 32usize),
            (vec![4, 64], 0, 2),
            (vec![3, 5, 7], 1, 3),
            (vec![3, 5, 7], 0, 2),
            (vec![2, 3, 4, 5], 1, 2),
            (vec![10], 0, 4),
            (vec![2, 3, 5], 2, 4),
        ] {
            let layout = BlockLayout::new(&shape, axis as i64, block).unwrap();
            let want = reference_blocks(&shape, axis, block);
            let got: Vec<usize> = (0..want.len()).map(|i| layout.block_of(i)).collect();
            assert_eq!(got, want, "{shape:?} axis {axis} block {block}");
            let max_block = *want.iter().max().unwrap();
            assert_eq!(layout.num_blocks(), max_block + 1);
            for i in 0..want.len() {
                match layout.contiguous_run(i) {
                    Some((b, run)) => {
                        // The run stays in block b and ends where the block (or row) does.
                        assert!(want[i..i + run].iter().all(|&w| w == b), "{shape:?} {i}");
                        assert!(run >= 1 && (i + run == want.len() || want[i + run] != b));
                    }
                    None => assert_ne!(axis, shape.len() - 1),
                }
            }
        }
    }

    #[test]
    fn amax_pads_with_zero_and_negative_axes_work() {
        let data: Vec<f32> = (0..10).map(|i| -(i as f32)).collect();
        let layout = BlockLayout::new(&[2, 5], -1, 4).unwrap();
        assert_eq!(layout.block_amax(&data), vec![3.0, 4.0, 8.0, 9.0]);
        let col = BlockLayout::new(&[2, 5], 0, 4).unwrap();
        assert_eq!(col.block_amax(&data), vec![5.0, 6.0, 7.0, 8.0, 9.0]);
        assert!(BlockLayout::new(&[2, 5], 2, 4).is_err());
        assert!(BlockLayout::new(&[2, 5], 0, 0).is_err());
        let nan = BlockLayout::new(&[3], 0, 2).unwrap();
        assert!(nan.block_amax(&[1.0, f32::NAN, 2.0])[0].is_nan());
        assert_eq!(
            layout.map(&data, |b, v| b as f32 + v * 0.0),
            vec![0., 0., 0., 0., 1., 2., 2., 2., 2., 3.]
        );
    }
}
