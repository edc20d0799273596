//! What the Hugging Face checkpoint codecs (`ct.*`, `deepseek.fp8_block`, `gptoss.mxfp4`,
//! `modelopt.nvfp4`) share: the dtype the dequantized values are rounded to, the scale grid
//! that maps an element of an `[…, N, K]` weight to its scale (per tensor, channel, group or
//! 2-D block), the reading of stored scales (bfloat16/float16 bit patterns, float32, FP8
//! E4M3 bytes) and of 4-bit E2M1 codes packed two per byte, low nibble first.
//!
//! Every function here checks a stored array's length (with its name) before reading it.

use super::{Encoded, Stored};
use crate::error::{Error, Result};
use crate::formats::half_cast::HalfType;
use crate::formats::ElementFormat;

crate::choice_enum! {
    /// The dtype of the dequantized values (the library rounds its result to it once).
    pub enum OutDtype {
        Bfloat16 = "bfloat16",
        Float16 = "float16",
        Float32 = "float32",
    }
}

impl OutDtype {
    /// `x` rounded to this dtype (round to nearest even), as float32.
    #[inline(always)]
    pub fn round(self, x: f32) -> f32 {
        match self {
            OutDtype::Bfloat16 => HalfType::Bfloat16.round_trip(x),
            OutDtype::Float16 => HalfType::Float16.round_trip(x),
            OutDtype::Float32 => x,
        }
    }

    /// A 16-bit pattern of this dtype as float32 (float32 has no 16-bit pattern: `None`).
    pub fn from_bits(self, bits: u16) -> Option<f32> {
        match self {
            OutDtype::Bfloat16 => Some(f32::from_bits((bits as u32) << 16)),
            OutDtype::Float16 => Some(half::f16::from_bits(bits).to_f32()),
            OutDtype::Float32 => None,
        }
    }

    /// Values of this dtype (already rounded to it) as the stored array a library keeps:
    /// 16-bit patterns, or float32.
    pub fn store(self, values: &[f32]) -> Stored {
        match self {
            OutDtype::Bfloat16 => Stored::U16(
                values
                    .iter()
                    .map(|&v| (HalfType::Bfloat16.round_trip(v).to_bits() >> 16) as u16)
                    .collect(),
            ),
            OutDtype::Float16 => Stored::U16(
                values
                    .iter()
                    .map(|&v| half::f16::from_f32(v).to_bits())
                    .collect(),
            ),
            OutDtype::Float32 => Stored::F32(values.to_vec()),
        }
    }

    /// Bits of one value.
    pub fn bits(self) -> usize {
        match self {
            OutDtype::Float32 => 32,
            _ => 16,
        }
    }
}

crate::choice_enum! {
    /// compressed-tensors' `QuantizationStrategy` for weights.
    pub enum Strategy {
        Tensor = "tensor",
        Channel = "channel",
        Group = "group",
        Block = "block",
    }
}

/// A weight seen as `batch` matrices of `rows × cols` (a 1-D tensor is one row; leading
/// dimensions, such as experts, are the batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matrices {
    pub batch: usize,
    pub rows: usize,
    pub cols: usize,
}

impl Matrices {
    /// The matrices of `shape`.
    pub fn of(shape: &[usize]) -> Result<Matrices> {
        let overflow = || {
            Error::input(format!(
                "shape {shape:?} has more elements than this machine can address"
            ))
        };
        let (batch, rows, cols) = match shape {
            [] => (1, 1, 1),
            [k] => (1, 1, *k),
            [lead @ .., n, k] => (
                lead.iter()
                    .try_fold(1usize, |a, &d| a.checked_mul(d))
                    .ok_or_else(overflow)?,
                *n,
                *k,
            ),
        };
        batch
            .checked_mul(rows)
            .and_then(|r| r.checked_mul(cols))
            .ok_or_else(overflow)?;
        Ok(Matrices { batch, rows, cols })
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.batch * self.rows * self.cols
    }
}

/// Which scale each element of a weight uses: blocks of `block_rows × block_cols` of each
/// matrix, edge blocks partial (`[⌈N/br⌉, ⌈K/bc⌉]` scales per matrix), or one scale in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub m: Matrices,
    /// One scale for the whole tensor.
    pub per_tensor: bool,
    pub block_rows: usize,
    pub block_cols: usize,
}

impl Grid {
    /// The grid of `strategy` for `shape` (`group_size` for groups, `block` for blocks).
    pub fn new(
        strategy: Strategy,
        shape: &[usize],
        group_size: usize,
        block: (usize, usize),
    ) -> Result<Grid> {
        let m = Matrices::of(shape)?;
        let (per_tensor, block_rows, block_cols) = match strategy {
            Strategy::Tensor => (true, 1, 1),
            Strategy::Channel => (false, 1, m.cols.max(1)),
            Strategy::Group => (false, 1, group_size),
            Strategy::Block => (false, block.0, block.1),
        };
        if block_rows == 0 || block_cols == 0 {
            return Err(Error::input("a group or block of 0 elements"));
        }
        Ok(Grid {
            m,
            per_tensor,
            block_rows,
            block_cols,
        })
    }

    /// Blocks down and across one matrix.
    pub fn dims(&self) -> (usize, usize) {
        if self.per_tensor {
            (1, 1)
        } else {
            (
                self.m.rows.div_ceil(self.block_rows),
                self.m.cols.div_ceil(self.block_cols),
            )
        }
    }

    /// The scale grid's shape as the libraries store it (`[1]` per tensor).
    pub fn shape(&self) -> Vec<usize> {
        if self.per_tensor {
            return vec![1];
        }
        let (gr, gc) = self.dims();
        if self.m.batch > 1 {
            vec![self.m.batch, gr, gc]
        } else {
            vec![gr, gc]
        }
    }

    /// Number of scales.
    pub fn len(&self) -> usize {
        if self.per_tensor {
            1
        } else {
            let (gr, gc) = self.dims();
            self.m.batch * gr * gc
        }
    }

    /// The scale index of element `(b, r, c)`.
    #[inline(always)]
    pub fn index(&self, b: usize, r: usize, c: usize) -> usize {
        if self.per_tensor {
            return 0;
        }
        let (gr, gc) = self.dims();
        (b * gr + r / self.block_rows) * gc + c / self.block_cols
    }

    /// What one scale covers, for messages: `blocks 128×128`, `groups of 32`, ….
    pub fn describe(&self) -> String {
        if self.per_tensor {
            "one scale per tensor".into()
        } else if self.block_rows == 1 && self.block_cols >= self.m.cols {
            "one scale per row".into()
        } else if self.block_rows == 1 {
            format!("groups of {}", self.block_cols)
        } else {
            format!("blocks {}×{}", self.block_rows, self.block_cols)
        }
    }

    /// Check that part `name` holds this grid's scales, with a message saying how it does not
    /// (`scale grid [2, 3] too small for [300, 200] with blocks 128×128`).
    pub fn check(&self, e: &Encoded, name: &str) -> Result<()> {
        let part = e.part(name)?;
        let want = self.len();
        let got = part.data.len();
        if got != want {
            return Err(Error::input(format!(
                "`{name}`: scale grid {:?} too {} for {:?} with {} (needs {:?})",
                part.shape,
                if got < want { "small" } else { "large" },
                e.shape,
                self.describe(),
                self.shape()
            )));
        }
        Ok(())
    }

    /// `f(index, scale index)` for every element, in C order, collected.
    pub fn map(&self, mut f: impl FnMut(usize, usize) -> f32) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.m.len());
        let mut i = 0;
        for b in 0..self.m.batch {
            for r in 0..self.m.rows {
                for c in 0..self.m.cols {
                    out.push(f(i, self.index(b, r, c)));
                    i += 1;
                }
            }
        }
        out
    }

    /// The elements of each scale's block, as lists of element indices (for encoders).
    pub fn members(&self) -> Vec<Vec<usize>> {
        let mut members = vec![Vec::new(); self.len()];
        let mut i = 0;
        for b in 0..self.m.batch {
            for r in 0..self.m.rows {
                for c in 0..self.m.cols {
                    members[self.index(b, r, c)].push(i);
                    i += 1;
                }
            }
        }
        members
    }
}

/// The stored scales of part `name` (`len` of them) as float32: 16-bit patterns of `dtype`,
/// or float32 values.
pub fn float_scales(e: &Encoded, name: &str, len: usize, dtype: OutDtype) -> Result<Vec<f32>> {
    match &e.part_of_len(name, len)?.data {
        Stored::U16(v) => {
            let Some(_) = dtype.from_bits(0) else {
                return Err(Error::input(format!(
                    "stored array `{name}` holds 16-bit values, but the dtype is float32"
                )));
            };
            Ok(v.iter().filter_map(|&b| dtype.from_bits(b)).collect())
        }
        Stored::F32(v) => Ok(v.clone()),
        other => Err(Error::input(format!(
            "stored array `{name}` holds {}, not bfloat16, float16 or float32 scales",
            other.dtype()
        ))),
    }
}

/// The stored FP8 E4M3 scales of part `name` (`len` bytes) as float32 (exact).
pub fn fp8_scales(e: &Encoded, name: &str, len: usize) -> Result<Vec<f32>> {
    e.part_of_len(name, len)?;
    Ok(e.u8s(name)?
        .iter()
        .map(|&c| ElementFormat::Fp8E4m3.decode(c))
        .collect())
}

/// The one float32 value of part `name` (a scalar `[]` or `[1]` tensor).
pub fn scalar(e: &Encoded, name: &str) -> Result<f32> {
    e.part_of_len(name, 1)?;
    Ok(e.f32s(name)?[0])
}

/// The 4-bit codes of part `name`, two per byte with the even element in the low nibble,
/// for a tensor whose rows (last dimension) have `cols` elements: each row holds `⌈cols/2⌉`
/// bytes.
pub fn low_nibble_codes(e: &Encoded, name: &str, m: Matrices) -> Result<Vec<u8>> {
    let per_row = m.cols.div_ceil(2);
    let bytes = e.part_of_len(name, m.batch * m.rows * per_row)?;
    let Stored::U8(bytes) = &bytes.data else {
        return Err(Error::input(format!(
            "stored array `{name}` holds {}, not uint8",
            bytes.data.dtype()
        )));
    };
    let mut codes = Vec::with_capacity(m.len());
    if per_row == 0 {
        return Ok(codes);
    }
    for row in bytes.chunks_exact(per_row) {
        for c in 0..m.cols {
            let byte = row[c / 2];
            codes.push(if c % 2 == 0 { byte & 0x0F } else { byte >> 4 });
        }
    }
    Ok(codes)
}

/// 4-bit codes (row by row, `cols` per row) packed two per byte, even element in the low
/// nibble (the inverse of [`low_nibble_codes`]).
pub fn pack_low_nibble_first(codes: &[u8], cols: usize) -> Vec<u8> {
    if cols == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(codes.len() / cols * cols.div_ceil(2));
    for row in codes.chunks(cols) {
        for pair in row.chunks(2) {
            out.push((pair[0] & 0x0F) | (pair.get(1).copied().unwrap_or(0) & 0x0F) << 4);
        }
    }
    out
}

/// E2M1's value of 4-bit `code` (bit 3 the sign): code 8 is −0.0.
#[inline(always)]
pub fn e2m1(code: u8) -> f32 {
    ElementFormat::Fp4E2m1.decode(code)
}

/// Check that part `name` has the shape `want` (its element count is checked separately),
/// naming both in the message.
pub fn check_shape(e: &Encoded, name: &str, want: &[usize]) -> Result<()> {
    let part = e.part(name)?;
    let same = part.shape.iter().product::<usize>() == want.iter().product::<usize>()
        && part.data.len() == want.iter().product::<usize>();
    if !same {
        return Err(Error::input(format!(
            "`{name}` is {:?}, the tensor {:?} needs {want:?}",
            part.shape, e.shape
        )));
    }
    Ok(())
}
