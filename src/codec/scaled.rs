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
use crate::qdq::Slicing;
use crate::slice_map::SliceMap;

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

    /// Every value of `values` rounded to this dtype, as float32 (a weight cast to the dtype
    /// before a library quantizes it).
    pub fn round_all(self, values: &[f32]) -> Vec<f32> {
        values.iter().map(|&v| self.round(v)).collect()
    }

    /// A 16-bit pattern of this dtype as float32 (float32 has no 16-bit pattern: `None`).
    pub fn value_of_bits(self, bits: u16) -> Option<f32> {
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

    /// The elements of each scale as slices, numbered as the scales are.
    pub fn slicing(&self) -> Slicing {
        if self.per_tensor {
            return Slicing::Tensor;
        }
        Slicing::Mapped(SliceMap::from_blocks(
            &[self.m.batch, self.m.rows, self.m.cols],
            &[1, self.block_rows, self.block_cols],
        ))
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
        let squeeze = |s: &[usize]| s.iter().copied().filter(|&d| d != 1).collect::<Vec<_>>();
        let same_shape = squeeze(&part.shape) == squeeze(&self.shape());
        if got != want || !same_shape {
            return Err(Error::input(format!(
                "`{name}`: scale grid {:?} {} {:?} with {} (needs {:?})",
                part.shape,
                match got.cmp(&want) {
                    std::cmp::Ordering::Less => "too small for",
                    std::cmp::Ordering::Greater => "too large for",
                    std::cmp::Ordering::Equal => "does not fit",
                },
                e.shape,
                self.describe(),
                self.shape()
            )));
        }
        Ok(())
    }

    /// `f(index, scale index)` for every element, in C order.
    pub fn each(&self, mut f: impl FnMut(usize, usize)) {
        let mut i = 0;
        for b in 0..self.m.batch {
            for r in 0..self.m.rows {
                for c in 0..self.m.cols {
                    f(i, self.index(b, r, c));
                    i += 1;
                }
            }
        }
    }

    /// `f(index, scale index)` for every element, in C order, collected.
    pub fn map(&self, mut f: impl FnMut(usize, usize) -> f32) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.m.len());
        self.each(|i, g| out.push(f(i, g)));
        out
    }

    /// The elements of each scale's block, as lists of element indices (for encoders).
    pub fn members(&self) -> Vec<Vec<usize>> {
        let mut members = vec![Vec::new(); self.len()];
        self.each(|i, g| members[g].push(i));
        members
    }
}

/// The stored scales of part `name` (`len` of them) as float32: 16-bit patterns of `dtype`,
/// or float32 values.
pub fn float_scales(e: &Encoded, name: &str, len: usize, dtype: OutDtype) -> Result<Vec<f32>> {
    match &e.part_of_len(name, len)?.data {
        Stored::U16(v) => {
            let Some(_) = dtype.value_of_bits(0) else {
                return Err(Error::input(format!(
                    "stored array `{name}` holds 16-bit values, but the dtype is float32"
                )));
            };
            Ok(v.iter().filter_map(|&b| dtype.value_of_bits(b)).collect())
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

#[cfg(test)]
mod tests {
    //! Malformed stored arrays: each refused with a message naming the array.
    use crate::codec::{find, Encoded, Stored};
    use crate::params::Params;
    use crate::tensor::Tensor;

    fn decode_err(id: &str, params: Params, e: &Encoded) -> String {
        let c = find(id).unwrap().build(&params, &e.shape).unwrap();
        c.decode(e).unwrap_err().to_string()
    }

    fn ramp(shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor::new(
            shape.to_vec(),
            (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0)
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn pack_quantized_weight_shape_disagreement_is_named() {
        let c = find("ct.pack_quantized")
            .unwrap()
            .build(&Params::new().with("group_size", 64), &[4, 384])
            .unwrap();
        let mut e = c.encode(&ramp(&[4, 384])).unwrap();
        let round = c.decode(&e).unwrap();
        assert_eq!(round.shape, vec![4, 384]);
        e.parts.retain(|p| p.name != "weight_shape");
        e = e.with_flat("weight_shape", Stored::I32(vec![4, 512]));
        let msg = c.decode(&e).unwrap_err().to_string();
        assert!(
            msg.contains("`weight_shape` [4, 512] disagrees with weight_packed [4, 48]"),
            "{msg}"
        );
    }

    #[test]
    fn pack_quantized_short_arrays_are_named() {
        let p = Params::new()
            .with("group_size", 64)
            .with("symmetric", false);
        let c = find("ct.pack_quantized")
            .unwrap()
            .build(&p, &[16, 128])
            .unwrap();
        let good = c.encode(&ramp(&[16, 128])).unwrap();
        assert_eq!(good.part("weight_zero_point").unwrap().shape, vec![2, 2]);
        for (name, msg) in [
            ("weight_packed", "`weight_packed` is"),
            ("weight_scale", "`weight_scale`: scale grid"),
            ("weight_zero_point", "`weight_zero_point` is"),
        ] {
            let mut e = good.clone();
            let part = e.parts.iter_mut().find(|q| q.name == name).unwrap();
            part.data = match &part.data {
                Stored::I32(v) => Stored::I32(v[1..].to_vec()),
                Stored::U16(v) => Stored::U16(v[1..].to_vec()),
                other => other.clone(),
            };
            let err = decode_err("ct.pack_quantized", p.clone(), &e);
            assert!(err.contains(msg), "{name}: {err}");
        }
        let mut e = good.clone();
        e.parts.retain(|q| q.name != "weight_zero_point");
        assert!(decode_err("ct.pack_quantized", p.clone(), &e).contains("weight_zero_point"));
    }

    #[test]
    fn g_idx_out_of_range_is_refused() {
        let p = Params::new().with("group_size", 32);
        let c = find("ct.pack_quantized")
            .unwrap()
            .build(&p, &[2, 64])
            .unwrap();
        let mut e = c.encode(&ramp(&[2, 64])).unwrap();
        let plain = c.decode(&e).unwrap();
        let g_idx: Vec<i32> = (0..64).map(|k| k / 32).collect();
        e = e.with_flat("weight_g_idx", Stored::I32(g_idx.clone()));
        assert_eq!(c.decode(&e).unwrap(), plain);
        let mut bad = g_idx;
        bad[5] = 99;
        e.parts.retain(|q| q.name != "weight_g_idx");
        e = e.with_flat("weight_g_idx", Stored::I32(bad));
        let msg = c.decode(&e).unwrap_err().to_string();
        assert!(
            msg.contains("`weight_g_idx`[5] = 99 is outside the 2 groups"),
            "{msg}"
        );
    }

    #[test]
    fn fp8_block_scale_grid_too_small_is_named() {
        let e = Encoded::new(&[384, 384])
            .with("weight", vec![384, 384], Stored::U8(vec![0x38; 384 * 384]))
            .with("weight_scale_inv", vec![2, 3], Stored::F32(vec![1.0; 6]));
        let msg = decode_err("deepseek.fp8_block", Params::new(), &e);
        assert!(
            msg.contains(
                "scale grid [2, 3] too small for [384, 384] with blocks 128×128 (needs [3, 3])"
            ),
            "{msg}"
        );
        let e = Encoded::new(&[300, 200])
            .with("weight", vec![300, 200], Stored::U8(vec![0x38; 60000]))
            .with("weight_scale_inv", vec![2, 3], Stored::F32(vec![1.0; 6]));
        let msg = decode_err("deepseek.fp8_block", Params::new(), &e);
        assert!(
            msg.contains(
                "scale grid [2, 3] does not fit [300, 200] with blocks 128×128 (needs [3, 2])"
            ),
            "{msg}"
        );
        let e = Encoded::new(&[300, 200])
            .with("weight", vec![300, 100], Stored::U8(vec![0x38; 30000]))
            .with("weight_scale_inv", vec![3, 2], Stored::F32(vec![1.0; 6]));
        assert!(decode_err("deepseek.fp8_block", Params::new(), &e).contains("`weight`"));
        // Partial edge blocks: element (299, 199) uses scale [2, 1].
        let mut scales = vec![1.0f32; 6];
        scales[5] = 2.0;
        let e = Encoded::new(&[300, 200])
            .with("weight", vec![300, 200], Stored::U8(vec![0x38; 60000]))
            .with("weight_scale_inv", vec![3, 2], Stored::F32(scales));
        let c = find("deepseek.fp8_block")
            .unwrap()
            .build(&Params::new(), &[300, 200])
            .unwrap();
        let v = c.decode(&e).unwrap();
        assert_eq!(v.data[0], 1.0);
        assert_eq!(v.data[299 * 200 + 199], 2.0);
        assert_eq!(v.data[255 * 200 + 127], 1.0);
        assert_eq!(v.data[256 * 200 + 127], 1.0);
        assert_eq!(v.data[256 * 200 + 128], 2.0);
    }

    #[test]
    fn fp4_codecs_name_their_arrays_and_signs_of_zero() {
        // NVFP4 (CT): code 8 is −0.0; ModelOpt: +0.0.
        let ct = Encoded::new(&[1, 16])
            .with("weight_packed", vec![1, 8], Stored::U8(vec![0x88; 8]))
            .with("weight_scale", vec![1, 1], Stored::U8(vec![0x38]))
            .with("weight_global_scale", vec![1], Stored::F32(vec![2.0]));
        let c = find("ct.nvfp4")
            .unwrap()
            .build(&Params::new(), &[1, 16])
            .unwrap();
        assert!(c
            .decode(&ct)
            .unwrap()
            .data
            .iter()
            .all(|v| v.to_bits() == 0x8000_0000));
        let mo = Encoded::new(&[1, 16])
            .with("weight", vec![1, 8], Stored::U8(vec![0x88; 8]))
            .with("weight_scale", vec![1, 1], Stored::U8(vec![0x38]))
            .with("weight_scale_2", vec![], Stored::F32(vec![2.0]));
        let m = find("modelopt.nvfp4")
            .unwrap()
            .build(&Params::new(), &[1, 16])
            .unwrap();
        assert!(m.decode(&mo).unwrap().data.iter().all(|v| v.to_bits() == 0));
        let mut short = mo.clone();
        short.parts.retain(|p| p.name != "weight_scale_2");
        assert!(m
            .decode(&short)
            .unwrap_err()
            .to_string()
            .contains("weight_scale_2"));
        let mut short = ct.clone();
        short.parts[1].data = Stored::U8(vec![]);
        assert!(c
            .decode(&short)
            .unwrap_err()
            .to_string()
            .contains("`weight_scale`"));
        // gpt-oss: 3-D experts come back transposed [E, K, N].
        let g = find("gptoss.mxfp4")
            .unwrap()
            .build(&Params::new(), &[2, 32, 3])
            .unwrap();
        let x = ramp(&[2, 32, 3]);
        let enc = g.encode(&x).unwrap();
        assert_eq!(enc.part("blocks").unwrap().shape, vec![2, 3, 1, 16]);
        let back = g.decode(&enc).unwrap();
        assert_eq!(back.shape, vec![2, 32, 3]);
        let mut bad = enc.clone();
        bad.parts[1].data = Stored::U8(vec![127; 5]);
        let msg = g.decode(&bad).unwrap_err().to_string();
        assert!(
            msg.contains("`scales` is [2, 3, 1], the tensor [2, 32, 3] needs [2, 3, 1]"),
            "{msg}"
        );
    }
}
