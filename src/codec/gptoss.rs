//! `gptoss.mxfp4`: gpt-oss's MXFP4 tensors (`quant_method: mxfp4`), as transformers'
//! `convert_moe_packed_tensors` dequantizes them: `<name>_blocks` uint8 `[…, R, G, 16]` (32
//! E2M1 codes per 16 bytes, the even element in the **low** nibble) and `<name>_scales` uint8
//! `[…, R, G]` (E8M0 exponents). Block `g` of a row holds its elements `32g … 32g+31`.
//!
//! `w = D(lut[c] · 2^(s − 127))`: `torch.ldexp` on the bfloat16 table value multiplies by the
//! float32 `2.0 ** (s − 127)` (exact, +∞ for code 255) and the result is stored in `dtype`
//! (bfloat16), one rounding; E2M1 code 8 is −0.0 (transformers' `FP4_VALUES`).
//!
//! Shapes: 2-D weights (`blocks` `[N, G, 16]`) decode to `[N, 32·G]`; expert tensors
//! (`blocks` `[E, N, G, 16]`, as gpt-oss stores `gate_up_proj`/`down_proj`) decode to
//! `[E, 32·G, N]`, transposed as `convert_moe_packed_tensors` returns them (the layout of
//! `GptOssExperts`' parameters). The logical last-but-one (experts) or last (2-D) dimension
//! may be shorter than `32·G` (padding dropped).
//!
//! Encoding is triton_kernels' `downcast_to_mxfp_torch` with `ROUND_UP` scales, as
//! transformers' `quantize_to_mxfp4` calls it: per block of 32 along K,
//! `d = f32(amax) / 6`, the scale `2^⌈log2 d⌉` taken by adding `0x7FFFFF` to `d`'s bits and
//! keeping the exponent (so a subnormal `d` gives `2^−126`, and `d = 0` the code 0), and the
//! elements `x · (1/scale)` rounded to nearest even on the E2M1 grid, saturating at ±6, the
//! sign kept for zeros.

use super::explain::StoredSlices;
use super::scaled::{e2m1, pack_low_nibble_first, OutDtype};
use super::{decoded, Codec, CodecEntry, CodecFamily, Encoded, Stored};
use crate::error::{Error, Result};
use crate::formats::{pow2, ElementFormat};
use crate::params::Choice;
use crate::qdq::{SliceRanges, Slicing};
use crate::slice_map::SliceMap;
use crate::tensor::Tensor;

/// The library and version reproduced.
pub const LIBRARY: (&str, &str) = (
    "transformers / triton_kernels",
    "transformers 5.17.0 integrations/mxfp4.py; triton_kernels mxfp.py @ 018a674f",
);

const QUIRKS: &[&str] = &[
    "low nibble first inside each 16-byte block (integrations/mxfp4.py convert_moe_packed_tensors: idx_lo = blk & 0x0F)",
    "E2M1 code 8 decodes to −0.0 (FP4_VALUES), and torch.ldexp multiplies by the float32 2^(s−127), +∞ for s = 255",
    "3-D expert tensors come back transposed, [E, K, N] (convert_moe_packed_tensors returns out.transpose(1, 2))",
    "scales round up: 2^⌈log2(amax/6)⌉ by adding 0x7FFFFF to the float32 bits, so blocks never clip (numerics_details/mxfp.py ROUND_UP)",
];

/// Values per block.
const BLOCK: usize = 32;

crate::declare_params! {
    /// gpt-oss MXFP4 tensors.
    pub struct GptOssArgs {
        /// dtype the dequantized values are stored in (`dtype` of convert_moe_packed_tensors)
        dtype: OutDtype = OutDtype::Bfloat16; choice(), Data;
    }
}

/// The codec family `gptoss.mxfp4`.
pub struct GptOssFamily;

impl CodecFamily for GptOssFamily {
    type Args = GptOssArgs;
    fn build(a: &GptOssArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(GptOssMxfp4 { dtype: a.dtype }))
    }
}

/// The registry entry.
pub fn entry() -> CodecEntry {
    let (library, version) = LIBRARY;
    CodecEntry::of::<GptOssFamily>(
        "gptoss.mxfp4",
        "gpt-oss MXFP4: *_blocks (E2M1 pairs, 16 bytes per 32 values) and *_scales (E8M0)",
    )
    .reproducing(library, version, QUIRKS)
    .drawn(9, "gpt-oss MXFP4")
}

/// A configured gpt-oss MXFP4 codec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GptOssMxfp4 {
    pub dtype: OutDtype,
}

/// How a logical shape lies in the stored blocks: `experts` matrices of `rows` stored rows of
/// `k` values (`groups` blocks each), transposed or not.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    experts: usize,
    rows: usize,
    k: usize,
    groups: usize,
    transposed: bool,
}

impl Geometry {
    fn of(shape: &[usize]) -> Result<Geometry> {
        let (experts, rows, k, transposed) = match shape {
            [] => (1, 1, 1, false),
            [k] => (1, 1, *k, false),
            [n, k] => (1, *n, *k, false),
            [e, k, n] => (*e, *n, *k, true),
            _ => {
                return Err(Error::input(format!(
                    "gpt-oss MXFP4 tensors are 2-D weights or 3-D expert tensors, not {shape:?}"
                )))
            }
        };
        Ok(Geometry {
            experts,
            rows,
            k,
            groups: k.div_ceil(BLOCK),
            transposed,
        })
    }

    fn stored_rows(&self) -> usize {
        self.experts * self.rows
    }

    fn blocks_shape(&self) -> Vec<usize> {
        let mut s = vec![self.rows, self.groups, BLOCK / 2];
        if self.transposed {
            s.insert(0, self.experts);
        }
        s
    }

    fn scales_shape(&self) -> Vec<usize> {
        let mut s = vec![self.rows, self.groups];
        if self.transposed {
            s.insert(0, self.experts);
        }
        s
    }

    /// The logical flat index of stored row `r` (of all experts), column `c`.
    fn logical(&self, r: usize, c: usize) -> usize {
        if self.transposed {
            let (e, n) = (r / self.rows, r % self.rows);
            (e * self.k + c) * self.rows + n
        } else {
            r * self.k + c
        }
    }
}

impl GptOssMxfp4 {
    fn check<'a>(&self, e: &'a Encoded, g: &Geometry) -> Result<(&'a [u8], &'a [u8])> {
        for (name, want, len) in [
            (
                "blocks",
                g.blocks_shape(),
                g.stored_rows() * g.groups * BLOCK / 2,
            ),
            ("scales", g.scales_shape(), g.stored_rows() * g.groups),
        ] {
            let part = e.part(name)?;
            if part.data.len() != len {
                return Err(Error::input(format!(
                    "`{name}` is {:?}, the tensor {:?} needs {want:?}",
                    part.shape, e.shape
                )));
            }
        }
        Ok((e.u8s("blocks")?, e.u8s("scales")?))
    }
}

impl Codec for GptOssMxfp4 {
    fn label(&self) -> String {
        "gpt-oss MXFP4 (block 32)".into()
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let Ok(g) = Geometry::of(shape) else {
            return 0.0;
        };
        let n = (g.stored_rows() * g.k).max(1) as f64;
        (g.stored_rows() * g.groups * (BLOCK / 2 + 1) * 8) as f64 / n
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let g = Geometry::of(&t.shape)?;
        let x = |r: usize, c: usize| OutDtype::Bfloat16.round(t.data[g.logical(r, c)]);
        let mut scales = Vec::with_capacity(g.stored_rows() * g.groups);
        let mut codes = Vec::with_capacity(g.stored_rows() * g.groups * BLOCK);
        for r in 0..g.stored_rows() {
            for b in 0..g.groups {
                let cols = b * BLOCK..((b + 1) * BLOCK).min(g.k);
                let amax = cols.clone().fold(0f32, |a, c| a.max(x(r, c).abs()));
                let d = amax / 6.0;
                let bits = (d.to_bits().wrapping_add(0x007F_FFFF)) & 0x7F80_0000;
                let scale = f32::from_bits(bits);
                let quant = if scale == 0.0 { 0.0 } else { 1.0 / scale };
                scales.push((bits >> 23) as u8);
                for c in b * BLOCK..(b + 1) * BLOCK {
                    let v = if c < g.k { x(r, c) * quant } else { 0.0 };
                    codes.push(ElementFormat::Fp4E2m1.encode(v).unwrap_or(0));
                }
            }
        }
        Ok(Encoded::new(&t.shape)
            .with(
                "blocks",
                g.blocks_shape(),
                Stored::U8(pack_low_nibble_first(&codes, BLOCK)),
            )
            .with("scales", g.scales_shape(), Stored::U8(scales)))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let g = Geometry::of(&e.shape)?;
        let (blocks, scales) = self.check(e, &g)?;
        let mut values = vec![0f32; g.stored_rows() * g.k];
        for r in 0..g.stored_rows() {
            for c in 0..g.k {
                let blk = r * g.groups + c / BLOCK;
                let byte = blocks[blk * BLOCK / 2 + (c % BLOCK) / 2];
                let code = if c % 2 == 0 { byte & 0x0F } else { byte >> 4 };
                let v = e2m1(code) * pow2(scales[blk] as i32 - 127);
                values[g.logical(r, c)] = self.dtype.round(v);
            }
        }
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let g = Geometry::of(&e.shape)?;
        let (_, scales) = self.check(e, &g)?;
        let mut ranges = vec![None; g.stored_rows() * g.k];
        for r in 0..g.stored_rows() {
            for c in 0..g.k {
                let s = 6.0 * pow2(scales[r * g.groups + c / BLOCK] as i32 - 127) as f64;
                ranges[g.logical(r, c)] = Some((-s, s));
            }
        }
        Ok(SliceRanges::new(Slicing::Flat(1), ranges))
    }

    /// Blocks of 32 along K of each row (of each expert), numbered in the logical tensor's
    /// order: `[N, ⌈K/32⌉]`, or `[E, ⌈K/32⌉, N]` for experts stored transposed.
    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let g = Geometry::of(&e.shape)?;
        let (blocks, scales) = self.check(e, &g)?;
        let mut codes = vec![0i16; g.stored_rows() * g.k];
        for r in 0..g.stored_rows() {
            for c in 0..g.k {
                let blk = r * g.groups + c / BLOCK;
                let byte = blocks[blk * BLOCK / 2 + (c % BLOCK) / 2];
                codes[g.logical(r, c)] = if c % 2 == 0 { byte & 0x0F } else { byte >> 4 } as i16;
            }
        }
        let (slicing, order): (SliceMap, Vec<usize>) = if g.transposed {
            let order = (0..g.experts)
                .flat_map(|x| (0..g.groups).flat_map(move |b| (0..g.rows).map(move |n| (x, b, n))))
                .map(|(x, b, n)| (x * g.rows + n) * g.groups + b)
                .collect();
            (
                SliceMap::from_blocks(&[g.experts, g.k, g.rows], &[1, BLOCK, 1]),
                order,
            )
        } else {
            (
                SliceMap::from_blocks(&[g.rows, g.k], &[1, BLOCK]),
                (0..g.rows * g.groups).collect(),
            )
        };
        Ok(Some(
            StoredSlices::new(
                Slicing::Mapped(slicing),
                order.len(),
                format!(
                    "x = bfloat16(x); d = amax/6 (float32), the scale 2^⌈log2 d⌉ (d's bits + 0x7FFFFF, \
                     exponent kept), stored as its E8M0 byte; code = e2m1(x·(1/scale)), round to nearest \
                     even, saturating at ±6; x̂ = {}(e2m1(code)·2^(byte − 127))",
                    self.dtype.name()
                ),
                "triton_kernels downcast_to_mxfp_torch (ROUND_UP), transformers integrations/mxfp4.py \
                 quantize_to_mxfp4 / convert_moe_packed_tensors",
            )
            .column("scales (E8M0 byte)", order.iter().map(|&i| scales[i] as f64))
            .column(
                "scale",
                order.iter().map(|&i| pow2(scales[i] as i32 - 127) as f64),
            )
            .codes(codes),
        ))
    }
}
