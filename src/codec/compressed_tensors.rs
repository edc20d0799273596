//! compressed-tensors' stored weight formats (`ct.pack_quantized`, `ct.int_quantized`,
//! `ct.float_quantized`, `ct.nvfp4`, `ct.mxfp4`), as compressed-tensors 0.19.0 writes them
//! (`compressors/*/base.py`) and decompresses them (`quantization/lifecycle/forward*.py`).
//! A weight is `[…, N, K]` (out × in); its scales follow the strategy: one per tensor
//! (`[1]`), per channel (`[N, 1]`), per group of `G` along K (`[N, ⌈K/G⌉]`) or per 2-D block
//! (`[⌈N/bh⌉, ⌈K/bw⌉]`, edge blocks partial). `D(·)` is rounding to `dtype`, the weight's
//! dtype, which is also the scales' dtype (bfloat16 in the golden checkpoints).
//!
//! * **`ct.pack_quantized`** (format `pack-quantized`, 1..8-bit integers): `weight_packed`
//!   int32 `[…, N, ⌈K·b/32⌉]`, each row a little-endian bit stream in which element `k` sits at
//!   bit `k·b` (an element may straddle two words), holding `q + 2^(b−1)`; `weight_scale`;
//!   `weight_shape` (`[N, K]`); asymmetric channel/group schemes add `weight_zero_point`
//!   `[⌈N·b/32⌉, ⌈K/G⌉]`, signed zero points `+2^(b−1)` packed the same way **down each
//!   column** (dim 0). `w = D((q − zp) · scale)`: `q − zp` is exact and the product is rounded
//!   once. An optional `weight_g_idx` (int32 `[K]`, written by compressed-tensors before
//!   0.10 for `actorder='group'`) makes column `k` use group `g_idx[k]`: see [`PackQuantized`].
//! * **`ct.int_quantized`** (formats `int-quantized`, `naive-quantized` with int weights):
//!   `weight` int8 `[…, N, K]`, `weight_scale`, and for asymmetric schemes
//!   `weight_zero_point` (int8, one per scale). `w = D((q − zp) · scale)`.
//! * **`ct.float_quantized`** (formats `float-quantized`, `naive-quantized` with FP8
//!   weights): `weight` FP8 E4M3 bytes, `weight_scale`. `w = D(fp8(q) · scale)`; the FP8 code
//!   0x80 gives −0.0.
//! * **`ct.nvfp4`** (`nvfp4-pack-quantized`): `weight_packed` uint8 `[N, K/2]`, two E2M1
//!   codes per byte, the even element in the low nibble; `weight_scale` FP8 E4M3 `[N, K/16]`;
//!   `weight_global_scale` float32 `[1]`, the *reciprocal* of a multiplier.
//!   `w = bf16(e2m1(c) · (f32(scale) / global_scale))`: a float32 division, a float32
//!   product, one rounding to bfloat16; E2M1 code 8 is −0.0 (`kE2M1[|c|] · (±1.0)`).
//! * **`ct.mxfp4`** (`mxfp4-pack-quantized`): `weight_packed` as NVFP4, `weight_scale` uint8
//!   E8M0 `[N, K/32]`. `w = bf16(e2m1(c) · 2^(s − 127))` (the scale `2.0 ** bf16(s − 127)`, so
//!   code 255 is +∞); code 8 is −0.0.
//!
//! **Encoding** is compressed-tensors' round to nearest with the memoryless min–max
//! observer's qparams (`calculate_qparams`, then `quantize`), every step in `dtype` as torch
//! computes it: the values are first rounded to `dtype`; per scale, `min⁻ = min(min, 0)`,
//! `max⁺ = max(max, 0)`;
//! * symmetric: `scale = D(max(|min⁻|, max⁺) / ((qmax − qmin)/2))`, `zp = 0`;
//! * asymmetric: `scale = D(D(max⁺ − min⁻) / (qmax − qmin))`,
//!   `zp = round_half_even(clamp(D(qmin − D(min⁻ / scale)), qmin, qmax))` (int8; an all-zero
//!   slice, `0/0`, gets 0 as torch's cast of NaN does on x86);
//! * a zero scale becomes `dtype`'s epsilon;
//! * `q = round_half_even(clamp(D(D(x / scale) + zp), qmin, qmax))` for integers (`[−2^(b−1),
//!   2^(b−1) − 1]`), `fp8(clamp(D(x / scale), −448, 448))` for FP8 (`qmax = 448`).
//!
//! The MXFP4 encoder is llm-compressor's `MXFP4A16` round to nearest: the memoryless min–max
//! observer's group ranges through the same `calculate_qparams` the observer runs
//! ([`crate::observers::llmcompressor::qparams`]: the absmax rounded to a power of two, the
//! E8M0 exponent minus 2), and `cast_to_fp4`'s threshold table on `clamp(x/s, −6, 6)` of the
//! bfloat16 values. The NVFP4 encoder is `NVFP4A16`'s, with its bfloat16 global scale (see
//! [`CtFp4::encode_nvfp4`]). `tests/hf_quant_encode.rs` checks that both give the golden files'
//! bytes for every weight.

use super::explain::StoredSlices;
use super::scaled::{
    check_shape, e2m1, float_scales, fp8_scales, low_nibble_codes, pack_low_nibble_first, Grid,
    OutDtype, Strategy,
};
use super::{decoded, Codec, CodecEntry, CodecFamily, Encoded, Stored};
use crate::error::{Error, Result};
use crate::formats::{pow2, ElementFormat};
use crate::observers::llmcompressor::fake_quant::cast_to_fp4;
use crate::params::Choice;
use crate::qdq::{SliceRanges, Slicing};
use crate::quant::round_half_even;
use crate::tensor::Tensor;

/// The library and version reproduced.
pub const LIBRARY: (&str, &str) = ("compressed-tensors", "0.19.0");

/// Colour and legend of the Hugging Face checkpoint formats.
pub const DRAWN: (usize, &str) = (10, "compressed-tensors");

const PACK_QUIRKS: &[&str] = &[
    "dense bit packing: 32 values of b bits fill exactly b int32 words, an element may straddle two words (compressors/pack_quantized/helpers.py pack_to_int32)",
    "the zero point is packed along dim 0, the output rows: weight_zero_point is [⌈N·b/32⌉, groups] (pack_quantized/base.py compress, packed_dim=0)",
    "dequantized in the scale's dtype: (q − zp) cast to bfloat16, times the bfloat16 scale, rounded once (lifecycle/forward_helpers.py _dequantize)",
    "quantized as round(D(x / scale)): the quotient is rounded to bfloat16 before the half-to-even rounding (forward_helpers.py _quantize)",
    "a zero scale is replaced by the dtype's epsilon after the zero point was computed (utils/helpers.py calculate_qparams step 5)",
];
const NAIVE_QUIRKS: &[&str] = &[
    "dequantized in the scale's dtype, rounded once (lifecycle/forward_helpers.py _dequantize)",
    "quantized as round(D(x / scale)): the quotient is rounded to bfloat16 before rounding to the integer or FP8 grid (forward_helpers.py _quantize)",
    "block scales cover partial edge blocks: the weight is zero-padded to whole blocks (utils/helpers.py maybe_pad_tensor_for_block_quant)",
];
const NVFP4_QUIRKS: &[&str] = &[
    "the global scale 448·6/amax is computed on the bfloat16 weight as torch divides a scalar by a tensor, a reciprocal then a multiply, each rounded to bfloat16: 2688·bf16(1/4.4375) = 608, where 2688/4.4375 = 605.75 would round to 604 (quantization/utils/helpers.py generate_gparam)",
    "the group scale amax/6 is a bfloat16, multiplied by the float32 global scale and rounded to E4M3 (helpers.py calculate_qparams)",
    "weight_global_scale is the reciprocal of a multiplier: scale / global_scale in float32, then one rounding of the product to bfloat16 (forward_helpers.py _dequantize)",
    "E2M1 code 8 (sign bit, magnitude 0) decodes to −0.0: kE2M1[|c|] · where(sign, −1.0, 1.0) (compressors/nvfp4/helpers.py unpack_fp4_from_uint8)",
    "low nibble first: byte j holds element 2j in bits 0–3 (nvfp4/helpers.py pack_fp4_to_uint8)",
];
const MXFP4_QUIRKS: &[&str] = &[
    "the E8M0 scale is 2.0 ** bfloat16(s − 127): code 255 is +∞, not NaN (compressors/mx_utils.py decompress_mx_scale)",
    "E2M1 code 8 decodes to −0.0 (compressors/nvfp4/helpers.py unpack_fp4_from_uint8)",
];

crate::declare_params! {
    /// compressed-tensors `pack-quantized` weights.
    pub struct PackArgs {
        /// bits per integer (`num_bits`)
        num_bits: i64 = 4; int(1, 8), Data;
        /// how scales are shared (`strategy`: tensor, channel or group)
        strategy: Strategy = Strategy::Group; choice(), Data;
        /// elements per group along the input dimension (`group_size`)
        group_size: i64 = 128; int(1, 1048576), Data;
        /// symmetric (no zero point) or asymmetric (`symmetric`)
        symmetric: bool = true; boolean(), Data;
        /// the weights' and scales' dtype, to which the dequantized values are rounded
        dtype: OutDtype = OutDtype::Bfloat16; choice(), Data;
    }
}

crate::declare_params! {
    /// compressed-tensors `int-quantized` / `naive-quantized` integer weights.
    pub struct IntQuantizedArgs {
        /// bits per integer (`num_bits`; stored as int8)
        num_bits: i64 = 8; int(2, 8), Data;
        /// how scales are shared (`strategy`)
        strategy: Strategy = Strategy::Channel; choice(), Data;
        /// elements per group along the input dimension (group strategy)
        group_size: i64 = 128; int(1, 1048576), Data;
        /// block rows (`block_structure[0]`, block strategy)
        block_rows: i64 = 128; int(1, 1048576), Data;
        /// block columns (`block_structure[1]`, block strategy)
        block_cols: i64 = 128; int(1, 1048576), Data;
        /// symmetric (no zero point) or asymmetric (`symmetric`)
        symmetric: bool = true; boolean(), Data;
        /// the weights' and scales' dtype, to which the dequantized values are rounded
        dtype: OutDtype = OutDtype::Bfloat16; choice(), Data;
    }
}

crate::declare_params! {
    /// compressed-tensors `float-quantized` / `naive-quantized` FP8 E4M3 weights.
    pub struct FloatQuantizedArgs {
        /// how scales are shared (`strategy`)
        strategy: Strategy = Strategy::Channel; choice(), Data;
        /// elements per group along the input dimension (group strategy)
        group_size: i64 = 128; int(1, 1048576), Data;
        /// block rows (`block_structure[0]`, block strategy)
        block_rows: i64 = 128; int(1, 1048576), Data;
        /// block columns (`block_structure[1]`, block strategy)
        block_cols: i64 = 128; int(1, 1048576), Data;
        /// the weights' and scales' dtype, to which the dequantized values are rounded
        dtype: OutDtype = OutDtype::Bfloat16; choice(), Data;
    }
}

crate::declare_params! {
    /// compressed-tensors `nvfp4-pack-quantized` weights.
    pub struct Nvfp4Args {
        /// elements per FP8 scale along the input dimension (`group_size`)
        group_size: i64 = 16; int(2, 1048576), Data;
    }
}

crate::declare_params! {
    /// compressed-tensors `mxfp4-pack-quantized` weights.
    pub struct Mxfp4Args {
        /// elements per E8M0 scale along the input dimension (`group_size`)
        group_size: i64 = 32; int(2, 1048576), Data;
    }
}

/// The registry entries of compressed-tensors' formats.
pub fn entries() -> Vec<CodecEntry> {
    let (library, version) = LIBRARY;
    vec![
        CodecEntry::of::<PackFamily>(
            "ct.pack_quantized",
            "compressed-tensors pack-quantized: 1..8-bit integers bit-packed in int32 rows, scales per tensor/channel/group, zero points packed along the rows",
        )
        .reproducing(library, version, PACK_QUIRKS),
        CodecEntry::of::<IntQuantizedFamily>(
            "ct.int_quantized",
            "compressed-tensors int-quantized / naive-quantized: int8 weights with scales (and zero points)",
        )
        .reproducing(library, version, NAIVE_QUIRKS),
        CodecEntry::of::<FloatQuantizedFamily>(
            "ct.float_quantized",
            "compressed-tensors float-quantized: FP8 E4M3 weights with scales per tensor, channel, group or block",
        )
        .reproducing(library, version, NAIVE_QUIRKS),
        CodecEntry::of::<Nvfp4Family>(
            "ct.nvfp4",
            "compressed-tensors nvfp4-pack-quantized: E2M1 pairs per byte, FP8 scale per 16, divided by a float32 global scale",
        )
        .reproducing(library, version, NVFP4_QUIRKS),
        CodecEntry::of::<Mxfp4Family>(
            "ct.mxfp4",
            "compressed-tensors mxfp4-pack-quantized: E2M1 pairs per byte, E8M0 scale per 32",
        )
        .reproducing(library, version, MXFP4_QUIRKS),
    ]
    .into_iter()
    .map(|e| e.drawn(DRAWN.0, DRAWN.1))
    .collect()
}

/// `(qmin, qmax)` of signed `bits`-bit integers.
fn int_range(bits: u32) -> (f32, f32) {
    (-(pow2(bits as i32 - 1)), pow2(bits as i32 - 1) - 1.0)
}

/// The epsilon of `dtype` (`torch.finfo(dtype).eps`), which replaces a zero scale.
fn eps(dtype: OutDtype) -> f32 {
    match dtype {
        OutDtype::Bfloat16 => pow2(-7),
        OutDtype::Float16 => pow2(-10),
        OutDtype::Float32 => f32::EPSILON,
    }
}

/// What a quantizer rounds to: signed integers of some bits, or FP8 E4M3.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Grain {
    Int(u32),
    Fp8,
}

impl Grain {
    fn range(self) -> (f32, f32) {
        match self {
            Grain::Int(b) => int_range(b),
            Grain::Fp8 => (-448.0, 448.0),
        }
    }
}

/// compressed-tensors' memoryless min–max qparams and round-to-nearest quantization of `t`
/// (see the module docs): `(codes as float, scales, zero points)`; FP8 codes are bytes.
fn ct_quantize(
    t: &Tensor,
    grid: &Grid,
    grain: Grain,
    symmetric: bool,
    dtype: OutDtype,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let d = |x: f32| dtype.round(x);
    let x: Vec<f32> = t.data.iter().map(|&v| d(v)).collect();
    let (qmin, qmax) = grain.range();
    let mut scales = Vec::with_capacity(grid.len());
    let mut zps = Vec::with_capacity(grid.len());
    let members = grid.members();
    for m in &members {
        let (lo, hi) = m
            .iter()
            .fold((0f32, 0f32), |(lo, hi), &i| (lo.min(x[i]), hi.max(x[i])));
        let (s, zp) = if symmetric {
            (d(lo.abs().max(hi) / d((qmax - qmin) / 2.0)), 0.0)
        } else {
            let s = d(d(hi - lo) / (qmax - qmin));
            let zp = d(qmin - d(lo / s));
            let zp = if zp.is_nan() {
                0.0
            } else {
                round_half_even(zp.clamp(qmin, qmax)).clamp(-128.0, 127.0)
            };
            (s, zp)
        };
        scales.push(if s == 0.0 { eps(dtype) } else { s });
        zps.push(zp);
    }
    let codes = grid.map(|i, g| {
        let scaled = d(d(x[i] / scales[g]) + zps[g]);
        let clamped = if scaled.is_nan() {
            scaled
        } else {
            scaled.clamp(qmin, qmax)
        };
        match grain {
            Grain::Int(_) => {
                if clamped.is_nan() {
                    0.0
                } else {
                    round_half_even(clamped)
                }
            }
            Grain::Fp8 => ElementFormat::Fp8E4m3.encode(clamped).unwrap_or(0x7F) as f32,
        }
    });
    (codes, scales, zps)
}

/// Dense little-endian bit packing of `b`-bit unsigned values, one row of `cols` values into
/// `⌈cols·b/32⌉` words.
fn pack_row(values: impl Iterator<Item = u32>, cols: usize, b: u32, out: &mut Vec<i32>) {
    let words = (cols * b as usize).div_ceil(32);
    let start = out.len();
    out.resize(start + words, 0);
    for (k, v) in values.enumerate() {
        let bit = k * b as usize;
        let (w, off) = (bit / 32, (bit % 32) as u32);
        let v = v & ((1u32 << b) - 1);
        out[start + w] = ((out[start + w] as u32) | (v << off)) as i32;
        if off + b > 32 {
            out[start + w + 1] = ((out[start + w + 1] as u32) | (v >> (32 - off))) as i32;
        }
    }
}

/// Value `k` of a dense little-endian `b`-bit stream held in `words` (which must hold it).
#[inline(always)]
fn unpack_at(words: &[i32], k: usize, b: u32) -> u32 {
    let bit = k * b as usize;
    let (w, off) = (bit / 32, (bit % 32) as u32);
    let mut v = (words[w] as u32) >> off;
    if off + b > 32 {
        v |= (words[w + 1] as u32) << (32 - off);
    }
    v & ((1u32 << b) - 1)
}

/// Words of a packed row of `cols` values of `b` bits.
fn packed_words(cols: usize, b: u32) -> usize {
    (cols * b as usize).div_ceil(32)
}

/// Check the optional `weight_shape` part against the logical shape.
fn check_weight_shape(e: &Encoded, packed_from: &str) -> Result<()> {
    if !e.has("weight_shape") {
        return Ok(());
    }
    let stored = e.integer_codes("weight_shape", e.part("weight_shape")?.data.len())?;
    let stored: Vec<usize> = stored.iter().map(|&v| v.max(0.0) as usize).collect();
    if stored != e.shape {
        let packed = e
            .part(packed_from)
            .map(|p| p.shape.clone())
            .unwrap_or_default();
        return Err(Error::input(format!(
            "`weight_shape` {stored:?} disagrees with {packed_from} {packed:?} (which holds {:?})",
            e.shape
        )));
    }
    Ok(())
}

/// Groups must tile the input dimension (compressed-tensors raises otherwise).
fn check_groups(grid: &Grid, strategy: Strategy) -> Result<()> {
    let (cols, g) = (grid.m.cols, grid.block_cols);
    if strategy == Strategy::Group && cols >= g && cols % g != 0 {
        return Err(Error::input(format!(
            "{cols} input columns are not divisible by group_size {g} (compressed-tensors raises ValueError)"
        )));
    }
    Ok(())
}

fn label_strategy(strategy: Strategy, grid_group: usize, block: (usize, usize)) -> String {
    match strategy {
        Strategy::Tensor => "per tensor".into(),
        Strategy::Channel => "per channel".into(),
        Strategy::Group => format!("g{grid_group}"),
        Strategy::Block => format!("block {}×{}", block.0, block.1),
    }
}

/// Bits per value of scales (and zero points) of `grid` over `n` values.
fn grid_bits(grid: &Grid, bits_each: usize) -> f64 {
    let n = grid.m.len().max(1) as f64;
    (grid.len() * bits_each) as f64 / n
}

// ---------------------------------------------------------------------------------------------
// pack-quantized

/// The codec family `ct.pack_quantized`.
pub struct PackFamily;

impl CodecFamily for PackFamily {
    type Args = PackArgs;
    fn build(a: &PackArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        if a.strategy == Strategy::Block {
            return Err(Error::param(
                "strategy",
                "pack-quantized stores tensor, channel or group scales",
            ));
        }
        Ok(Box::new(PackQuantized {
            bits: a.num_bits as u32,
            strategy: a.strategy,
            group_size: a.group_size as usize,
            symmetric: a.symmetric,
            dtype: a.dtype,
        }))
    }
}

/// A configured `pack-quantized` codec.
///
/// `weight_g_idx` (activation ordering, `actorder='group'`) is read with the semantics of
/// compressed-tensors' older decompressors (0.9, before the option was removed): columns are
/// permuted so that each group's are contiguous, dequantized group by group, and permuted
/// back, i.e. column `k` uses the scale and zero point of group `g_idx[k]`; every index must
/// lie in `[0, ⌈K/G⌉)`. No golden data covers it: compressed-tensors 0.19.0 can neither
/// write nor read it (see `not_made` in the golden `cases.json`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PackQuantized {
    pub bits: u32,
    pub strategy: Strategy,
    pub group_size: usize,
    pub symmetric: bool,
    pub dtype: OutDtype,
}

impl PackQuantized {
    fn grid(&self, shape: &[usize]) -> Result<Grid> {
        let grid = Grid::new(self.strategy, shape, self.group_size, (1, 1))?;
        check_groups(&grid, self.strategy)?;
        Ok(grid)
    }

    /// Whether the zero point is stored packed along dim 0 (asymmetric channel/group).
    fn packed_zp(&self) -> bool {
        !self.symmetric && matches!(self.strategy, Strategy::Group | Strategy::Channel)
    }

    /// The zero points, one per scale.
    fn zero_points(&self, e: &Encoded, grid: &Grid) -> Result<Vec<f32>> {
        if self.symmetric {
            return Ok(vec![0.0; grid.len()]);
        }
        if !self.packed_zp() {
            return e.integer_codes("weight_zero_point", grid.len());
        }
        let (_, groups) = grid.dims();
        let (m, b) = (grid.m, self.bits);
        let rows = packed_words(m.rows, b);
        let part = e.part("weight_zero_point")?;
        if part.data.len() != m.batch * rows * groups {
            return Err(Error::input(format!(
                "`weight_zero_point` is {:?}, {:?} with {} needs {:?} (zero points packed along the rows)",
                part.shape,
                e.shape,
                grid.describe(),
                if m.batch > 1 { vec![m.batch, rows, groups] } else { vec![rows, groups] }
            )));
        }
        let words = e.i32s("weight_zero_point")?;
        let offset = 1u32 << (b - 1);
        let mut out = Vec::with_capacity(grid.len());
        let mut column = Vec::with_capacity(rows);
        for batch in 0..m.batch {
            let base = batch * rows * groups;
            let mut per = vec![0f32; m.rows * groups];
            for g in 0..groups {
                column.clear();
                column.extend((0..rows).map(|r| words[base + r * groups + g]));
                for n in 0..m.rows {
                    per[n * groups + g] = unpack_at(&column, n, b) as f32 - offset as f32;
                }
            }
            out.extend(per);
        }
        Ok(out)
    }

    /// The group of each column: `g_idx` when stored, else `k / G`.
    fn column_groups(&self, e: &Encoded, grid: &Grid) -> Result<Option<Vec<usize>>> {
        if !e.has("weight_g_idx") {
            return Ok(None);
        }
        if self.strategy != Strategy::Group {
            return Err(Error::input(
                "`weight_g_idx` is only meaningful with group scales",
            ));
        }
        let (_, groups) = grid.dims();
        let g_idx = e.integer_codes("weight_g_idx", grid.m.cols)?;
        g_idx
            .iter()
            .enumerate()
            .map(|(k, &g)| {
                if g >= 0.0 && (g as usize) < groups {
                    Ok(g as usize)
                } else {
                    Err(Error::input(format!(
                        "`weight_g_idx`[{k}] = {g} is outside the {groups} groups"
                    )))
                }
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }
}

impl Codec for PackQuantized {
    fn label(&self) -> String {
        format!(
            "compressed-tensors int{} {} {}",
            self.bits,
            label_strategy(self.strategy, self.group_size, (1, 1)),
            if self.symmetric { "sym" } else { "asym" }
        )
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let Ok(grid) = Grid::new(self.strategy, shape, self.group_size, (1, 1)) else {
            return 0.0;
        };
        let m = grid.m;
        let n = m.len().max(1) as f64;
        let packed = (m.batch * m.rows * packed_words(m.cols, self.bits) * 32) as f64 / n;
        let zp = if self.packed_zp() {
            let (_, groups) = grid.dims();
            (m.batch * packed_words(m.rows, self.bits) * groups * 32) as f64 / n
        } else if self.symmetric {
            0.0
        } else {
            grid_bits(&grid, 8)
        };
        packed + grid_bits(&grid, self.dtype.bits()) + zp
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let grid = self.grid(&t.shape)?;
        let (codes, scales, zps) =
            ct_quantize(t, &grid, Grain::Int(self.bits), self.symmetric, self.dtype);
        let m = grid.m;
        let b = self.bits;
        let offset = 1i64 << (b - 1);
        let mut packed = Vec::new();
        for row in codes.chunks(m.cols.max(1)) {
            pack_row(
                row.iter().map(|&q| (q as i64 + offset) as u32),
                m.cols,
                b,
                &mut packed,
            );
        }
        let mut packed_shape = t.shape.clone();
        match packed_shape.last_mut() {
            Some(last) => *last = packed_words(m.cols, b),
            None => packed_shape.push(packed_words(m.cols, b)),
        }
        let mut e = Encoded::new(&t.shape)
            .with("weight_packed", packed_shape, Stored::I32(packed))
            .with("weight_scale", grid.shape(), self.dtype.store(&scales))
            .with_flat(
                "weight_shape",
                Stored::I32(t.shape.iter().map(|&d| d as i32).collect()),
            );
        if self.packed_zp() {
            let (_, groups) = grid.dims();
            let rows = packed_words(m.rows, b);
            let mut words = vec![0i32; m.batch * rows * groups];
            let mut column = Vec::new();
            for batch in 0..m.batch {
                for g in 0..groups {
                    column.clear();
                    pack_row(
                        (0..m.rows).map(|n| {
                            (zps[(batch * m.rows + n) * groups + g] as i64 + offset) as u32
                        }),
                        m.rows,
                        b,
                        &mut column,
                    );
                    for (r, &w) in column.iter().enumerate() {
                        words[(batch * rows + r) * groups + g] = w;
                    }
                }
            }
            let shape = if m.batch > 1 {
                vec![m.batch, rows, groups]
            } else {
                vec![rows, groups]
            };
            e = e.with("weight_zero_point", shape, Stored::I32(words));
        } else if !self.symmetric {
            e = e.with(
                "weight_zero_point",
                grid.shape(),
                Stored::I8(zps.iter().map(|&z| z as i8).collect()),
            );
        }
        Ok(e)
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let grid = self.grid(&e.shape)?;
        let m = grid.m;
        let b = self.bits;
        let per_row = packed_words(m.cols, b);
        check_weight_shape(e, "weight_packed")?;
        let part = e.part("weight_packed")?;
        if part.data.len() != m.batch * m.rows * per_row {
            return Err(Error::input(format!(
                "`weight_packed` is {:?}, {:?} in {b}-bit values needs {per_row} int32 words per row",
                part.shape, e.shape
            )));
        }
        grid.check(e, "weight_scale")?;
        let scales = float_scales(e, "weight_scale", grid.len(), self.dtype)?;
        let zps = self.zero_points(e, &grid)?;
        let groups = self.column_groups(e, &grid)?;
        let words = e.i32s("weight_packed")?;
        let offset = (1u32 << (b - 1)) as f32;
        let (_, gc) = grid.dims();
        let dtype = self.dtype;
        let values = grid.map(|i, g| {
            let (row, k) = (i / m.cols.max(1), i % m.cols.max(1));
            let q = unpack_at(&words[row * per_row..(row + 1) * per_row], k, b) as f32 - offset;
            let g = match &groups {
                Some(gi) => g - g % gc.max(1) + gi[k],
                None => g,
            };
            dtype.round((q - zps[g]) * scales[g])
        });
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let grid = self.grid(&e.shape)?;
        grid.check(e, "weight_scale")?;
        let scales = float_scales(e, "weight_scale", grid.len(), self.dtype)?;
        let zps = self.zero_points(e, &grid)?;
        let (qmin, qmax) = int_range(self.bits);
        Ok(grid_ranges(&grid, &scales, &zps, qmin, qmax))
    }

    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let grid = self.grid(&e.shape)?;
        if e.has("weight_g_idx") {
            return Ok(None);
        }
        grid.check(e, "weight_scale")?;
        let scales = float_scales(e, "weight_scale", grid.len(), self.dtype)?;
        let zps = self.zero_points(e, &grid)?;
        let (m, b) = (grid.m, self.bits);
        let per_row = packed_words(m.cols, b);
        let words = e.part_of_len("weight_packed", m.batch * m.rows * per_row)?;
        let Stored::I32(words) = &words.data else {
            return Err(Error::input("`weight_packed` holds int32 words"));
        };
        // Codes of at most 8 bits, less the offset: they fit 16 bits.
        let offset = 1i32 << (b - 1);
        let codes = (0..m.len())
            .map(|i| {
                let (row, k) = (i / m.cols.max(1), i % m.cols.max(1));
                (unpack_at(&words[row * per_row..(row + 1) * per_row], k, b) as i32 - offset) as i16
            })
            .collect();
        let rule = encode_rule(Grain::Int(b), self.symmetric, self.dtype)
            + &format!(
                "; q + {offset} packed {}-bit, little-endian, into int32 words",
                b
            );
        Ok(Some(
            grid_slices(&grid, &scales, &zps, self.symmetric, rule).codes(codes),
        ))
    }
}

/// Where compressed-tensors' round-to-nearest encoding comes from.
const ENCODE_SOURCE: &str = "compressed_tensors/quantization/utils/helpers.py calculate_qparams, \
     quantization/lifecycle/forward.py _quantize / _dequantize (compressed-tensors 0.19.0)";

/// The rule of compressed-tensors' round-to-nearest encoding for `grain`, in `dtype` (`D`).
fn encode_rule(grain: Grain, symmetric: bool, dtype: OutDtype) -> String {
    let (qmin, qmax) = grain.range();
    let scale = match (grain, symmetric) {
        (Grain::Fp8, _) => "scale = D(max(|min⁻|, max⁺) / 448), q = fp8_e4m3(clamp(D(x / scale), −448, 448)), \
             x̂ = D(fp8(q)·scale)"
            .to_string(),
        (Grain::Int(_), true) => format!(
            "scale = D(max(|min⁻|, max⁺) / ((qmax − qmin)/2)), zp = 0; q = round_half_even(clamp(D(x / scale), \
             {qmin}, {qmax})); x̂ = D(q·scale)"
        ),
        (Grain::Int(_), false) => format!(
            "scale = D(D(max⁺ − min⁻) / (qmax − qmin)), zp = round_half_even(clamp(D(qmin − D(min⁻/scale)), \
             qmin, qmax)); q = round_half_even(clamp(D(D(x / scale) + zp), {qmin}, {qmax})); x̂ = D((q − zp)·scale)"
        ),
    };
    format!(
        "the values first rounded to D = {}; min⁻ = min(min, 0), max⁺ = max(max, 0); {scale}; a zero \
         scale becomes D's epsilon",
        dtype.name()
    )
}

/// The slices of a grid encoding: each scale's block, its scale and zero point.
fn grid_slices(
    grid: &Grid,
    scales: &[f32],
    zps: &[f32],
    symmetric: bool,
    rule: String,
) -> StoredSlices {
    let mut slices = StoredSlices::new(grid.slicing(), grid.len(), rule, ENCODE_SOURCE)
        .column("weight_scale", scales.iter().map(|&s| s as f64));
    if !symmetric {
        slices = slices.column("weight_zero_point", zps.iter().map(|&z| z as f64));
    }
    slices
}

/// The representable range of every element's scale block, `[(qmin − zp)·s, (qmax − zp)·s]`.
fn grid_ranges(grid: &Grid, scales: &[f32], zps: &[f32], qmin: f32, qmax: f32) -> SliceRanges {
    let per_block: Vec<Option<(f64, f64)>> = scales
        .iter()
        .zip(zps)
        .map(|(&s, &z)| {
            let (s, z) = (s as f64, z as f64);
            let (a, b) = ((qmin as f64 - z) * s, (qmax as f64 - z) * s);
            Some((a.min(b), a.max(b)))
        })
        .collect();
    let index: Vec<f32> = grid.map(|_, g| g as f32);
    let ranges: Vec<Option<(f64, f64)>> = index.iter().map(|&g| per_block[g as usize]).collect();
    SliceRanges::new(Slicing::Flat(1), ranges)
}

// ---------------------------------------------------------------------------------------------
// int-quantized / float-quantized (naive)

/// The codec family `ct.int_quantized`.
pub struct IntQuantizedFamily;

impl CodecFamily for IntQuantizedFamily {
    type Args = IntQuantizedArgs;
    fn build(a: &IntQuantizedArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(Naive {
            grain: Grain::Int(a.num_bits as u32),
            strategy: a.strategy,
            group_size: a.group_size as usize,
            block: (a.block_rows as usize, a.block_cols as usize),
            symmetric: a.symmetric,
            dtype: a.dtype,
        }))
    }
}

/// The codec family `ct.float_quantized`.
pub struct FloatQuantizedFamily;

impl CodecFamily for FloatQuantizedFamily {
    type Args = FloatQuantizedArgs;
    fn build(a: &FloatQuantizedArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(Naive {
            grain: Grain::Fp8,
            strategy: a.strategy,
            group_size: a.group_size as usize,
            block: (a.block_rows as usize, a.block_cols as usize),
            symmetric: true,
            dtype: a.dtype,
        }))
    }
}

/// A configured `int-quantized` / `float-quantized` / `naive-quantized` codec: one stored
/// code per element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Naive {
    grain: Grain,
    strategy: Strategy,
    group_size: usize,
    block: (usize, usize),
    symmetric: bool,
    dtype: OutDtype,
}

impl Naive {
    fn grid(&self, shape: &[usize]) -> Result<Grid> {
        let grid = Grid::new(self.strategy, shape, self.group_size, self.block)?;
        check_groups(&grid, self.strategy)?;
        Ok(grid)
    }

    fn zero_points(&self, e: &Encoded, grid: &Grid) -> Result<Vec<f32>> {
        if self.symmetric {
            Ok(vec![0.0; grid.len()])
        } else {
            e.integer_codes("weight_zero_point", grid.len())
        }
    }

    fn codes(&self, e: &Encoded, n: usize) -> Result<Vec<f32>> {
        check_shape(e, "weight", &e.shape)?;
        match self.grain {
            Grain::Int(_) => e.integer_codes("weight", n),
            Grain::Fp8 => {
                e.part_of_len("weight", n)?;
                Ok(e.u8s("weight")?
                    .iter()
                    .map(|&c| ElementFormat::Fp8E4m3.decode(c))
                    .collect())
            }
        }
    }
}

impl Codec for Naive {
    fn label(&self) -> String {
        let strategy = label_strategy(self.strategy, self.group_size, self.block);
        match self.grain {
            Grain::Int(b) => format!(
                "compressed-tensors int{b} {strategy} {}",
                if self.symmetric { "sym" } else { "asym" }
            ),
            Grain::Fp8 => format!("compressed-tensors FP8 E4M3 {strategy}"),
        }
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let Ok(grid) = Grid::new(self.strategy, shape, self.group_size, self.block) else {
            return 0.0;
        };
        let zp = if self.symmetric {
            0.0
        } else {
            grid_bits(&grid, 8)
        };
        8.0 + grid_bits(&grid, self.dtype.bits()) + zp
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let grid = self.grid(&t.shape)?;
        let (codes, scales, zps) = ct_quantize(t, &grid, self.grain, self.symmetric, self.dtype);
        let weight = match self.grain {
            Grain::Int(_) => Stored::I8(codes.iter().map(|&q| q as i8).collect()),
            Grain::Fp8 => Stored::U8(codes.iter().map(|&q| q as u8).collect()),
        };
        let mut e = Encoded::new(&t.shape)
            .with("weight", t.shape.clone(), weight)
            .with("weight_scale", grid.shape(), self.dtype.store(&scales));
        if !self.symmetric {
            e = e.with(
                "weight_zero_point",
                grid.shape(),
                Stored::I8(zps.iter().map(|&z| z as i8).collect()),
            );
        }
        Ok(e)
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let grid = self.grid(&e.shape)?;
        let codes = self.codes(e, grid.m.len())?;
        grid.check(e, "weight_scale")?;
        let scales = float_scales(e, "weight_scale", grid.len(), self.dtype)?;
        let zps = self.zero_points(e, &grid)?;
        let dtype = self.dtype;
        let values = grid.map(|i, g| dtype.round((codes[i] - zps[g]) * scales[g]));
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let grid = self.grid(&e.shape)?;
        grid.check(e, "weight_scale")?;
        let scales = float_scales(e, "weight_scale", grid.len(), self.dtype)?;
        let zps = self.zero_points(e, &grid)?;
        let (qmin, qmax) = self.grain.range();
        Ok(grid_ranges(&grid, &scales, &zps, qmin, qmax))
    }

    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let grid = self.grid(&e.shape)?;
        grid.check(e, "weight_scale")?;
        let scales = float_scales(e, "weight_scale", grid.len(), self.dtype)?;
        let zps = self.zero_points(e, &grid)?;
        let rule = encode_rule(self.grain, self.symmetric, self.dtype);
        Ok(Some(grid_slices(
            &grid,
            &scales,
            &zps,
            self.symmetric,
            rule,
        )))
    }
}

// ---------------------------------------------------------------------------------------------
// nvfp4 / mxfp4

/// The codec family `ct.nvfp4`.
pub struct Nvfp4Family;

impl CodecFamily for Nvfp4Family {
    type Args = Nvfp4Args;
    fn build(a: &Nvfp4Args, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(CtFp4 {
            mx: false,
            group_size: a.group_size as usize,
        }))
    }
}

/// The codec family `ct.mxfp4`.
pub struct Mxfp4Family;

impl CodecFamily for Mxfp4Family {
    type Args = Mxfp4Args;
    fn build(a: &Mxfp4Args, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(CtFp4 {
            mx: true,
            group_size: a.group_size as usize,
        }))
    }
}

/// llm-compressor's MX qparams of every group of `x` (already bfloat16 values): the memoryless
/// min–max observer's ranges through compressed-tensors' `calculate_qparams` (MXFP4: E8M0
/// exponent of the absmax rounded to a power of two, minus 2), as the stored exponent bytes and
/// the float32 scales `2^(e − 127)`.
fn mx_qparams(grid: &Grid, x: &[f32], group_size: usize) -> Result<(Vec<u8>, Vec<f32>)> {
    use crate::observers::llmcompressor::args::{
        QuantArgs, QuantizationType, ScaleDtype, Strategy as LlmStrategy, ZpDtype,
    };
    use crate::observers::llmcompressor::qparams::calculate_qparams;
    let mut min = vec![0f32; grid.len()];
    let mut max = vec![0f32; grid.len()];
    grid.each(|i, g| {
        min[g] = min[g].min(x[i]);
        max[g] = max[g].max(x[i]);
    });
    let args = QuantArgs {
        num_bits: 4,
        qtype: QuantizationType::Float,
        symmetric: true,
        strategy: LlmStrategy::Group,
        group_size: Some(group_size),
        block: None,
        dynamic: false,
        scale_dtype: Some(ScaleDtype::Uint8),
        zp_dtype: ZpDtype::Uint8,
    };
    let computed = calculate_qparams(&min, &max, &args, None, crate::error::Stage::Forward)?;
    // A power of two 2^(e − 127): its biased exponent is its float32 exponent field (e = 0 is the
    // subnormal 2^−127, whose field is 0 too).
    let exponents = computed
        .scale
        .iter()
        .map(|&s| {
            if s < f32::MIN_POSITIVE {
                0
            } else {
                (s.to_bits() >> 23) as u8
            }
        })
        .collect();
    Ok((exponents, computed.scale))
}

impl CtFp4 {
    /// NVFP4: llm-compressor's `NVFP4A16` round to nearest on the bfloat16 weight, every step
    /// in the dtype torch computes it in:
    /// * the global scale `g = bf16(2688 · bf16(1 / max(amax, tiny)))` over the whole tensor
    ///   (`generate_gparam`'s `448·6 / amax` on a bfloat16 tensor: torch's scalar-by-tensor
    ///   division is a reciprocal then a multiply, each rounded to bfloat16; not finite → 1),
    ///   stored as float32;
    /// * per group of 16, `s = fp8(clamp(g · bf16(amax / 6), ±448))` (the bfloat16 group scale
    ///   times the float32 global scale, rounded to E4M3; 0 → 0.125);
    /// * `code = e2m1(cast_to_fp4(clamp(x / (s / g), −6, 6)))` in float32.
    fn encode_nvfp4(&self, t: &Tensor) -> Result<Encoded> {
        let grid = self.grid(&t.shape)?;
        let bf = |v: f32| OutDtype::Bfloat16.round(v);
        let x = OutDtype::Bfloat16.round_all(&t.data);
        let amax_t = x.iter().fold(0f32, |a, &v| a.max(v.abs()));
        let g = bf(2688.0 * bf(1.0 / amax_t.max(f32::MIN_POSITIVE)));
        let g = if g.is_finite() { g } else { 1.0 };
        let mut amax = vec![0f32; grid.len()];
        grid.each(|i, k| amax[k] = amax[k].max(x[i].abs()));
        let fp8 = ElementFormat::Fp8E4m3;
        let scales: Vec<f32> = amax
            .iter()
            .map(|&a| {
                let s = fp8.quantize((g * bf(a / 6.0)).clamp(-448.0, 448.0));
                if s == 0.0 {
                    0.125
                } else {
                    s
                }
            })
            .collect();
        let codes: Vec<u8> = grid
            .map(|i, k| {
                let v = cast_to_fp4((x[i] / (scales[k] / g)).clamp(-6.0, 6.0));
                ElementFormat::Fp4E2m1.encode(v).unwrap_or(0) as f32
            })
            .into_iter()
            .map(|c| c as u8)
            .collect();
        let scale_codes = scales.iter().map(|&s| fp8.encode(s).unwrap_or(0)).collect();
        Ok(packed_fp4(t, &grid, &codes)
            .with("weight_scale", grid.shape(), Stored::U8(scale_codes))
            .with("weight_global_scale", vec![1], Stored::F32(vec![g])))
    }
}

/// An encoding of `t` holding only `weight_packed`: the E2M1 `codes` two per byte, low nibble
/// first, rows of the grid's matrices.
fn packed_fp4(t: &Tensor, grid: &Grid, codes: &[u8]) -> Encoded {
    let cols = grid.m.cols;
    let mut packed_shape = t.shape.clone();
    match packed_shape.last_mut() {
        Some(last) => *last = cols.div_ceil(2),
        None => packed_shape.push(cols.div_ceil(2)),
    }
    Encoded::new(&t.shape).with(
        "weight_packed",
        packed_shape,
        Stored::U8(pack_low_nibble_first(codes, cols)),
    )
}

/// A configured `nvfp4-pack-quantized` (`mx: false`) or `mxfp4-pack-quantized` codec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CtFp4 {
    mx: bool,
    group_size: usize,
}

impl CtFp4 {
    fn grid(&self, shape: &[usize]) -> Result<Grid> {
        Grid::new(Strategy::Group, shape, self.group_size, (1, 1))
    }

    /// Each group's dequantization multiplier.
    fn multipliers(&self, e: &Encoded, grid: &Grid) -> Result<Vec<f32>> {
        grid.check(e, "weight_scale")?;
        if self.mx {
            e.part_of_len("weight_scale", grid.len())?;
            Ok(e.u8s("weight_scale")?
                .iter()
                .map(|&s| pow2(s as i32 - 127))
                .collect())
        } else {
            let scales = fp8_scales(e, "weight_scale", grid.len())?;
            let global = super::scaled::scalar(e, "weight_global_scale")?;
            Ok(scales.iter().map(|&s| s / global).collect())
        }
    }
}

impl Codec for CtFp4 {
    fn label(&self) -> String {
        if self.mx {
            format!("compressed-tensors MXFP4 g{}", self.group_size)
        } else {
            format!("compressed-tensors NVFP4 g{}", self.group_size)
        }
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let Ok(grid) = self.grid(shape) else {
            return 0.0;
        };
        let n = grid.m.len().max(1) as f64;
        let codes = (grid.m.batch * grid.m.rows * grid.m.cols.div_ceil(2) * 8) as f64 / n;
        codes + grid_bits(&grid, 8) + if self.mx { 0.0 } else { 32.0 / n }
    }

    /// MXFP4: llm-compressor's round to nearest (`MXFP4A16`, the memoryless min–max observer)
    /// through the library's own `calculate_qparams` ([`mx_qparams`]) and its FP4 rounding;
    /// NVFP4: [`CtFp4::encode_nvfp4`].
    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        if !self.mx {
            return self.encode_nvfp4(t);
        }
        let grid = self.grid(&t.shape)?;
        let x = OutDtype::Bfloat16.round_all(&t.data);
        let (exponents, scales) = mx_qparams(&grid, &x, self.group_size)?;
        let codes: Vec<u8> = grid
            .map(|i, g| {
                let v = cast_to_fp4((x[i] / scales[g]).clamp(-6.0, 6.0));
                ElementFormat::Fp4E2m1.encode(v).unwrap_or(0) as f32
            })
            .into_iter()
            .map(|c| c as u8)
            .collect();
        Ok(packed_fp4(t, &grid, &codes).with("weight_scale", grid.shape(), Stored::U8(exponents)))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let grid = self.grid(&e.shape)?;
        let codes = low_nibble_codes(e, "weight_packed", grid.m)?;
        let mult = self.multipliers(e, &grid)?;
        let values = grid.map(|i, g| OutDtype::Bfloat16.round(e2m1(codes[i]) * mult[g]));
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let grid = self.grid(&e.shape)?;
        let mult = self.multipliers(e, &grid)?;
        let zps = vec![0.0; mult.len()];
        Ok(grid_ranges(&grid, &mult, &zps, -6.0, 6.0))
    }

    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let grid = self.grid(&e.shape)?;
        let mult = self.multipliers(e, &grid)?;
        let codes = low_nibble_codes(e, "weight_packed", grid.m)?
            .into_iter()
            .map(i16::from)
            .collect();
        let (rule, source) = if self.mx {
            (
                "the values first rounded to bfloat16; per group of 32, amax rounded to a power of two p \
                 (2^21 added to its float32 bits, mantissa dropped), e = 127 + ⌊log2 p⌋ − 2 stored as the \
                 E8M0 byte, s = 2^(e − 127); code = e2m1(cast_to_fp4(clamp(x/s, −6, 6))) (cast_to_fp4's \
                 threshold table: ties to even on the E2M1 grid), packed two per byte, low nibble first; \
                 x̂ = bf16(e2m1(code)·s)",
                "compressed_tensors/quantization/utils/helpers.py calculate_qparams, utils/mxfp_utils.py \
                 generate_mx_scales, quantization/lifecycle/forward.py _quantize (compressed-tensors 0.19.0)",
            )
        } else {
            (
                "the values first rounded to bfloat16; g = bf16(2688·bf16(1/amax of the tensor)) stored as \
                 weight_global_scale; per group of 16, the E4M3 scale fp8(g·bf16(amax/6)); \
                 code = e2m1(cast_to_fp4(clamp(x/(scale/g), −6, 6))), packed two per byte, low nibble \
                 first; x̂ = bf16(e2m1(code)·(scale/g)) (the column `scale` is scale/g)",
                "compressed_tensors/quantization/utils/helpers.py generate_gparam, calculate_qparams; \
                 quantization/lifecycle/forward.py _quantize / _dequantize (compressed-tensors 0.19.0)",
            )
        };
        let mut slices = StoredSlices::new(grid.slicing(), grid.len(), rule, source).codes(codes);
        if self.mx {
            e.part_of_len("weight_scale", grid.len())?;
            slices = slices.column(
                "weight_scale (E8M0 byte)",
                e.u8s("weight_scale")?.iter().map(|&b| b as f64),
            );
        }
        Ok(Some(slices.column("scale", mult.iter().map(|&m| m as f64))))
    }
}
