//! ONNX's quantized weights as codecs: `DequantizeLinear` (opsets 10–21, also as
//! `com.microsoft::DequantizeLinear`) and ONNX Runtime's contrib `com.microsoft::MatMulNBits`,
//! decoded bit for bit as ONNX Runtime 1.31 decodes them. The ONNX reader
//! ([`crate::checkpoint::onnx`]) hands them the initializers it finds.
//!
//! **`onnx.dequantize_linear`** — stored: `x` (the codes), `x_scale` (float32) and optionally
//! `x_zero_point` (the codes' type; missing means 0):
//! `y = float32(x − zp) · scale`, the subtraction in integers (64-bit, so that no type wraps),
//! the int-to-float conversion rounding to nearest, one float32 multiply. `granularity`:
//! * `per_tensor`: one scale (a 0-d or one-element tensor);
//! * `per_axis`: a 1-D scale of length `shape[axis]`, element `i` along `axis` uses scale `i`;
//! * `blocked` (opset 21): scale of the same rank as `x`, `ceil(shape[axis] / block_size)` along
//!   `axis` and every other dimension equal; element `i` along `axis` uses block `i / block_size`.
//!
//! `axis` may be negative (`axis + rank`). `int4`/`uint4` codes (and their zero points) are packed
//! two per byte over the flattened tensor, element `2j` in the low nibble, `2j+1` in the high one
//! (the last high nibble of an odd count is padding); `int4` is two's complement. `x` is then a
//! `uint8` array of `ceil(n/2)` bytes.
//!
//! **`onnx.matmul_nbits`** — the weight `W` of `Y = A · W`, shape `[K, N]`. Stored: `B` (uint8
//! `[N, ceil(K/block_size), block_size·bits/8]`, one row per output column, `bits`-bit codes
//! packed from the low bits up), `scales` (float32 `[N, ceil(K/block_size)]`) and optionally
//! `zero_points` (uint8 `[N, ceil(ceil(K/block_size)·bits/8)]`, packed like the codes; missing
//! means `2^(bits−1)`). `W[k, n] = float32(code − zp) · scale` of block `k / block_size` of row
//! `n`; codes past `K` in the last block are padding.
//!
//! Encoding is ONNX Runtime's: `quantize_static`'s min–max weights for `DequantizeLinear`
//! ([`quantizer`]) and `MatMulNBitsQuantizer`'s MLAS block quantization for `MatMulNBits`
//! ([`blockwise`]), each writing the arrays ONNX Runtime writes.

pub mod blockwise;
pub mod quantizer;

use super::explain::StoredSlices;
use super::{decoded, Codec, CodecEntry, CodecFamily, Encoded, Stored};
use crate::error::{Error, Result};
use crate::formats::blocks::BlockLayout;
use crate::params::{ParamSet, Params};
use crate::qdq::{SliceRanges, Slicing};
use crate::quant::ChannelIndexer;
use crate::tensor::Tensor;

/// ONNX Runtime's version reproduced.
pub const ORT_VERSION: &str = "1.31.1";
const DRAWN: (usize, &str) = (12, "ONNX / ONNX Runtime");

crate::choice_enum! {
    /// The stored integer type of `DequantizeLinear`'s `x`.
    pub enum QType {
        Int8 = "int8",
        Uint8 = "uint8",
        Int16 = "int16",
        Uint16 = "uint16",
        Int32 = "int32",
        Int4 = "int4",
        Uint4 = "uint4",
    }
}

crate::choice_enum! {
    /// How `DequantizeLinear`'s scales are shared (said by the scale's shape in a model).
    pub enum DqGranularity {
        PerTensor = "per_tensor",
        PerAxis = "per_axis",
        Blocked = "blocked",
    }
}

crate::declare_params! {
    /// ONNX DequantizeLinear.
    pub struct DequantizeLinearArgs {
        /// stored integer type of x
        dtype: QType = QType::Int8; choice(), Data;
        /// how scales are shared
        granularity: DqGranularity = DqGranularity::PerTensor; choice(), Data;
        /// the axis attribute (per_axis, blocked; default 1, negative counts from the end)
        axis: i64 = 1; int(-64, 63), Data;
        /// the block_size attribute (blocked)
        block_size: i64 = 32; int(1, 1048576), Data;
        /// encoding: symmetric ranges (WeightSymmetric); unset: per_axis and signed types symmetric, unsigned types not
        symmetric: Option<bool> = None; boolean(), Data;
    }
}

crate::declare_params! {
    /// ONNX Runtime MatMulNBits.
    pub struct MatMulNBitsArgs {
        /// bits per code
        bits: i64 = 4; int(2, 8), Data;
        /// block_size attribute: codes per scale along K
        block_size: i64 = 32; int(1, 1048576), Data;
        /// encoding: symmetric blocks without stored zero points (is_symmetric)
        symmetric: bool = false; boolean(), Data;
    }
}

impl QType {
    /// `(qmin, qmax)`.
    pub fn code_range(self) -> (i64, i64) {
        match self {
            QType::Int8 => (-128, 127),
            QType::Uint8 => (0, 255),
            QType::Int16 => (-32768, 32767),
            QType::Uint16 => (0, 65535),
            QType::Int32 => (i32::MIN as i64, i32::MAX as i64),
            QType::Int4 => (-8, 7),
            QType::Uint4 => (0, 15),
        }
    }

    /// Bits per code.
    pub fn bits(self) -> u32 {
        match self {
            QType::Int8 | QType::Uint8 => 8,
            QType::Int16 | QType::Uint16 => 16,
            QType::Int32 => 32,
            QType::Int4 | QType::Uint4 => 4,
        }
    }

    /// The ONNX name (`int8`, `uint4`, …).
    pub fn name(self) -> &'static str {
        match self {
            QType::Int8 => "int8",
            QType::Uint8 => "uint8",
            QType::Int16 => "int16",
            QType::Uint16 => "uint16",
            QType::Int32 => "int32",
            QType::Int4 => "int4",
            QType::Uint4 => "uint4",
        }
    }

    /// Stored elements of an array of `n` codes (4-bit codes two per byte).
    pub fn stored_len(self, n: usize) -> usize {
        match self {
            QType::Int4 | QType::Uint4 => n.div_ceil(2),
            _ => n,
        }
    }

    /// The `n` codes of stored array `name` of `e`, as integers.
    fn codes(self, e: &Encoded, name: &str, n: usize) -> Result<Vec<i32>> {
        let part = e.part_of_len(name, self.stored_len(n))?;
        let wrong = || {
            Error::input(format!(
                "stored array `{name}` holds {}, not {} codes",
                part.data.dtype(),
                self.name()
            ))
        };
        Ok(match (self, &part.data) {
            (QType::Int8, Stored::I8(v)) => v.iter().map(|&q| i32::from(q)).collect(),
            (QType::Uint8, Stored::U8(v)) => v.iter().map(|&q| i32::from(q)).collect(),
            (QType::Int16, Stored::I16(v)) => v.iter().map(|&q| i32::from(q)).collect(),
            (QType::Uint16, Stored::U16(v)) => v.iter().map(|&q| i32::from(q)).collect(),
            (QType::Int32, Stored::I32(v)) => v.clone(),
            (QType::Int4 | QType::Uint4, Stored::U8(v)) => (0..n)
                .map(|i| {
                    let nibble = (v[i / 2] >> (4 * (i % 2))) & 0x0f;
                    match self {
                        QType::Int4 => i32::from(((nibble << 4) as i8) >> 4),
                        _ => i32::from(nibble),
                    }
                })
                .collect(),
            _ => return Err(wrong()),
        })
    }
}

/// The codec family `onnx.dequantize_linear`.
pub struct DequantizeLinearFamily;

/// A configured `DequantizeLinear`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DequantizeLinear {
    pub dtype: QType,
    pub granularity: DqGranularity,
    pub axis: i64,
    pub block_size: usize,
    /// Encoding only: symmetric ranges; `None` is ONNX Runtime's default for the type.
    pub symmetric: Option<bool>,
}

impl CodecFamily for DequantizeLinearFamily {
    type Args = DequantizeLinearArgs;
    fn build(a: &DequantizeLinearArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(DequantizeLinear {
            dtype: a.dtype,
            granularity: a.granularity,
            axis: a.axis,
            block_size: a.block_size as usize,
            symmetric: a.symmetric,
        }))
    }
}

/// The codec family `onnx.matmul_nbits`.
pub struct MatMulNBitsFamily;

/// A configured `MatMulNBits` weight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatMulNBits {
    pub bits: u32,
    pub block_size: usize,
    /// Symmetric blocks, no zero points stored (a missing zero point means `2^(bits−1)`).
    pub symmetric: bool,
}

impl CodecFamily for MatMulNBitsFamily {
    type Args = MatMulNBitsArgs;
    fn build(a: &MatMulNBitsArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        let (bits, block_size) = (a.bits as u32, a.block_size as usize);
        if !(block_size * bits as usize).is_multiple_of(8) {
            return Err(Error::param(
                "block_size",
                format!("{block_size} codes of {bits} bits are not a whole number of bytes"),
            ));
        }
        Ok(Box::new(MatMulNBits {
            bits,
            block_size,
            symmetric: a.symmetric,
        }))
    }
}

const QUIRKS_DQ: &[&str] = &[
    "y = float32(x - zero_point) * scale: the subtraction is done in integers before the one float32 multiply (onnxruntime/core/providers/cpu/quantization/quantize_linear.cc, DequantizeLinear)",
    "a missing zero point means 0; axis defaults to 1 and may be negative (onnx docs/Operators.md, DequantizeLinear-13 and -21)",
    "int4/uint4 are packed two per byte over the flattened tensor, low nibble first (onnx/onnx.proto, TensorProto: uint4/int4 values packed as two 4-bit elements into one byte)",
];

const QUIRKS_NBITS: &[&str] = &[
    "B is [N, blocks, block_size*bits/8]: one row per output column, blocks along K (onnxruntime docs/ContribOperators.md, com.microsoft.MatMulNBits)",
    "a missing zero point means 2^(bits-1), i.e. 8 for 4 bits (onnxruntime docs/ContribOperators.md, com.microsoft.MatMulNBits)",
    "zero points are packed like the codes, two 4-bit blocks per byte, even block in the low nibble",
];

/// The registry entries.
pub fn entries() -> Vec<CodecEntry> {
    vec![
        CodecEntry::of::<DequantizeLinearFamily>(
            "onnx.dequantize_linear",
            "ONNX DequantizeLinear: integer codes with float32 scales and zero points, per tensor, per axis or blocked (int4..int32)",
        )
        .reproducing("ONNX Runtime", ORT_VERSION, QUIRKS_DQ)
        .drawn(DRAWN.0, DRAWN.1),
        CodecEntry::of::<MatMulNBitsFamily>(
            "onnx.matmul_nbits",
            "ONNX Runtime MatMulNBits (com.microsoft): blockwise 2..8-bit weights along K with float32 scales",
        )
        .reproducing("ONNX Runtime", ORT_VERSION, QUIRKS_NBITS)
        .drawn(DRAWN.0, DRAWN.1),
    ]
}

/// Where each element of `shape` finds its scale: `(outer, len, inner)` around the axis, and the
/// scale index of `(o, a, i)`.
#[derive(Debug, Clone, Copy)]
struct ScaleMap {
    outer: usize,
    len: usize,
    inner: usize,
    granularity: DqGranularity,
    block: usize,
    blocks: usize,
}

impl ScaleMap {
    #[inline]
    fn index(&self, o: usize, a: usize, i: usize) -> usize {
        match self.granularity {
            DqGranularity::PerTensor => 0,
            DqGranularity::PerAxis => a,
            DqGranularity::Blocked => (o * self.blocks + a / self.block) * self.inner + i,
        }
    }

    /// `f(flat index, scale index)` for every element in C order.
    fn each(&self, mut f: impl FnMut(usize, usize)) {
        let mut flat = 0;
        for o in 0..self.outer {
            for a in 0..self.len {
                for i in 0..self.inner {
                    f(flat, self.index(o, a, i));
                    flat += 1;
                }
            }
        }
    }
}

impl DequantizeLinear {
    /// The `axis` attribute as an index into `shape` (a negative axis counts from the end).
    fn axis_index(&self, shape: &[usize]) -> Result<usize> {
        let rank = shape.len() as i64;
        let axis = if self.axis < 0 {
            self.axis + rank
        } else {
            self.axis
        };
        if axis < 0 || axis >= rank {
            return Err(Error::param(
                "axis",
                format!(
                    "axis {} is out of range for x of shape {shape:?}",
                    self.axis
                ),
            ));
        }
        Ok(axis as usize)
    }

    /// The slices of `map` as quantscope numbers them (its slicing), and each slice's index
    /// into the stored scales and zero points.
    fn slices(&self, shape: &[usize], map: &ScaleMap) -> Result<(Slicing, Vec<usize>)> {
        Ok(match map.granularity {
            DqGranularity::PerTensor => (Slicing::Tensor, vec![0]),
            DqGranularity::PerAxis => (
                Slicing::Channel(ChannelIndexer::new(shape, self.axis_index(shape)?)),
                (0..map.len).collect(),
            ),
            DqGranularity::Blocked => {
                let axis = self.axis_index(shape)? as i64;
                let layout = BlockLayout::new(shape, axis, map.block)?;
                let mut scale_of = vec![0; layout.num_blocks()];
                map.each(|i, s| {
                    if let Some(slot) = scale_of.get_mut(layout.block_of(i)) {
                        *slot = s;
                    }
                });
                (Slicing::Block(layout), scale_of)
            }
        })
    }

    /// The scale map for `x` of `shape` with a scale of `scale_shape` (checked as ONNX checks it).
    fn scale_map(&self, shape: &[usize], scale_shape: &[usize]) -> Result<(ScaleMap, usize)> {
        let n: usize = shape.iter().product();
        let scales: usize = scale_shape.iter().product();
        let per_tensor = ScaleMap {
            outer: 1,
            len: n,
            inner: 1,
            granularity: DqGranularity::PerTensor,
            block: 1,
            blocks: 1,
        };
        if self.granularity == DqGranularity::PerTensor {
            if scales != 1 || scale_shape.len() > 1 {
                return Err(Error::input(format!(
                    "a per-tensor scale is a scalar or a one-element vector, not shape {scale_shape:?}"
                )));
            }
            return Ok((per_tensor, 1));
        }
        let axis = self.axis_index(shape)?;
        let (outer, len, inner) = (
            shape[..axis].iter().product::<usize>(),
            shape[axis],
            shape[axis + 1..].iter().product::<usize>(),
        );
        match self.granularity {
            DqGranularity::PerAxis => {
                if scale_shape != [len] {
                    return Err(Error::input(format!(
                        "a per-axis scale has shape [{len}] (x's axis {axis}), not {scale_shape:?}"
                    )));
                }
                Ok((
                    ScaleMap {
                        outer,
                        len,
                        inner,
                        granularity: DqGranularity::PerAxis,
                        block: 1,
                        blocks: len,
                    },
                    len,
                ))
            }
            _ => {
                let blocks = len.div_ceil(self.block_size.max(1));
                let mut want = shape.to_vec();
                want[axis] = blocks;
                if scale_shape != want.as_slice() {
                    return Err(Error::input(format!(
                        "a blocked scale (block_size {}, axis {axis}) of x {shape:?} has shape {want:?}, not {scale_shape:?}",
                        self.block_size
                    )));
                }
                Ok((
                    ScaleMap {
                        outer,
                        len,
                        inner,
                        granularity: DqGranularity::Blocked,
                        block: self.block_size.max(1),
                        blocks,
                    },
                    scales,
                ))
            }
        }
    }

    /// Scales, zero points and the scale map of `e`, every length checked.
    fn stored(&self, e: &Encoded) -> Result<(ScaleMap, Vec<f32>, Vec<i32>)> {
        let scale = e.part("x_scale")?;
        let (map, count) = self.scale_map(&e.shape, &scale.shape)?;
        let scales = e.f32s("x_scale")?;
        if scales.len() != count {
            return Err(Error::input(format!(
                "stored array `x_scale` has {} elements, its shape {:?} says {count}",
                scales.len(),
                scale.shape
            )));
        }
        let zero_points = if e.has("x_zero_point") {
            let zp = e.part("x_zero_point")?;
            let one = |shape: &[usize]| shape.len() <= 1 && shape.iter().product::<usize>() == 1;
            // A per-tensor zero point may be 0-d beside a [1] scale (ONNX Runtime writes both).
            let same = match map.granularity {
                DqGranularity::PerTensor => one(&zp.shape),
                _ => zp.shape == scale.shape,
            };
            if !same {
                return Err(Error::input(format!(
                    "the zero point has shape {:?}, the scale {:?}",
                    zp.shape, scale.shape
                )));
            }
            self.dtype.codes(e, "x_zero_point", count)?
        } else {
            vec![0; count]
        };
        Ok((map, scales.to_vec(), zero_points))
    }
}

impl Codec for DequantizeLinear {
    fn label(&self) -> String {
        let sharing = match self.granularity {
            DqGranularity::PerTensor => "per tensor".to_string(),
            DqGranularity::PerAxis => format!("per axis {}", self.axis),
            DqGranularity::Blocked => {
                format!("blocks of {} along axis {}", self.block_size, self.axis)
            }
        };
        format!("{} {sharing} (DequantizeLinear)", self.dtype.name())
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let n = shape.iter().product::<usize>().max(1) as f64;
        let scales = match self.granularity {
            DqGranularity::PerTensor => 1.0,
            DqGranularity::PerAxis => self.axis_index(shape).map_or(1, |a| shape[a]) as f64,
            DqGranularity::Blocked => (n / self.block_size.max(1) as f64).ceil(),
        };
        f64::from(self.dtype.bits()) + scales * (32.0 + f64::from(self.dtype.bits())) / n
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        self.quantize(t)
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let n = e.numel()?;
        let (map, scales, zero_points) = self.stored(e)?;
        let codes = self.dtype.codes(e, "x", n)?;
        let mut out = vec![0f32; n];
        map.each(|i, s| {
            let q = i64::from(codes[i]) - i64::from(zero_points[s]);
            out[i] = q as f32 * scales[s];
        });
        decoded(&e.shape, out)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let (map, scales, zero_points) = self.stored(e)?;
        let (qmin, qmax) = self.dtype.code_range();
        let range = |s: usize| {
            let (scale, zp) = (scales[s], i64::from(zero_points[s]));
            Some((
                f64::from((qmin - zp) as f32 * scale),
                f64::from((qmax - zp) as f32 * scale),
            ))
        };
        let (slicing, scale_of) = self.slices(&e.shape, &map)?;
        Ok(SliceRanges::new(
            slicing,
            scale_of.iter().map(|&s| range(s)),
        ))
    }

    /// The slices of the scales (per tensor, per axis or blocks), with each slice's scale and
    /// zero point; 4-bit codes are unpacked.
    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let (map, scales, zero_points) = self.stored(e)?;
        let (slicing, scale_of) = self.slices(&e.shape, &map)?;
        let symmetric = if self.is_symmetric() {
            "symmetric: rmax = max(|rmin|, |rmax|), rmin = −rmax, zp = round((qmin + qmax)/2); "
        } else {
            "zp = round(qmin − rmin/s); "
        };
        let (qmin, qmax) = self.dtype.code_range();
        let rule = format!(
            "{} ({}): rmin = min(min, 0), rmax = max(max, 0); {symmetric}s = (rmax − rmin)/(qmax − qmin){}; \
             q = clip(round(x/s) + zp, {qmin}, {qmax}) (ties to even); x̂ = float32(q − zp)·s",
            self.dtype.name(),
            match map.granularity {
                DqGranularity::PerTensor => "per tensor",
                DqGranularity::PerAxis => "per slice along the axis",
                DqGranularity::Blocked => "per block along the axis",
            },
            match map.granularity {
                DqGranularity::Blocked => ", rounded to float32 before zp",
                _ => " in float64",
            }
        );
        let mut slices = StoredSlices::new(slicing, scale_of.len(), rule, quantizer::SOURCE)
            .column("scale", scale_of.iter().map(|&s| f64::from(scales[s])))
            .column(
                "zero_point",
                scale_of.iter().map(|&s| f64::from(zero_points[s])),
            );
        if self.dtype.bits() == 4 {
            let codes = self.dtype.codes(e, "x", e.numel()?)?;
            slices = slices.codes(codes.iter().map(|&q| q as i16).collect());
        }
        Ok(Some(slices))
    }
}

impl MatMulNBits {
    /// `(K, N, blocks per column, bytes per block, zero-point bytes per column)`.
    fn dims(&self, shape: &[usize]) -> Result<(usize, usize, usize, usize, usize)> {
        let [k, n] = shape else {
            return Err(Error::input(format!(
                "a MatMulNBits weight has shape [K, N], not {shape:?}"
            )));
        };
        let blocks = k.div_ceil(self.block_size);
        let blob = self.block_size * self.bits as usize / 8;
        let zp_row = (blocks * self.bits as usize).div_ceil(8);
        Ok((*k, *n, blocks, blob, zp_row))
    }

    /// Scales and zero points, one per (column, block), every length checked.
    fn stored(&self, e: &Encoded) -> Result<(Vec<f32>, Vec<i32>)> {
        let (_, n, blocks, _, zp_row) = self.dims(&e.shape)?;
        e.numel()?;
        let count = n * blocks;
        let scales = e.part_of_len("scales", count)?;
        let Stored::F32(scales) = &scales.data else {
            return Err(Error::input(format!(
                "stored array `scales` holds {}, not float32",
                scales.data.dtype()
            )));
        };
        let bits = self.bits as usize;
        let mask = (1u16 << bits) - 1;
        let zero_points = if e.has("zero_points") {
            let len = n.checked_mul(zp_row).ok_or_else(|| too_large(&e.shape))?;
            e.part_of_len("zero_points", len)?;
            let zp = e.u8s("zero_points")?;
            (0..count)
                .map(|j| {
                    let (col, b) = (j / blocks, j % blocks);
                    i32::from(packed(&zp[col * zp_row..(col + 1) * zp_row], b, bits, mask))
                })
                .collect()
        } else {
            vec![1 << (bits - 1); count]
        };
        Ok((scales.clone(), zero_points))
    }
}

fn too_large(shape: &[usize]) -> Error {
    Error::input(format!(
        "a MatMulNBits weight of shape {shape:?} is larger than this machine can address"
    ))
}

/// Code `j` of `bits` bits packed from the low bits up in `row`.
#[inline]
fn packed(row: &[u8], j: usize, bits: usize, mask: u16) -> u16 {
    let bit = j * bits;
    let lo = u16::from(row.get(bit / 8).copied().unwrap_or(0));
    let hi = u16::from(row.get(bit / 8 + 1).copied().unwrap_or(0));
    ((lo | hi << 8) >> (bit % 8)) & mask
}

impl Codec for MatMulNBits {
    fn label(&self) -> String {
        format!(
            "{}-bit blocks of {} (MatMulNBits)",
            self.bits, self.block_size
        )
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let Ok((k, n, blocks, blob, zp_row)) = self.dims(shape) else {
            return 0.0;
        };
        let (k, n, blocks) = (k as f64, n as f64, blocks as f64);
        let bytes = n * (blocks * (blob as f64 + 4.0) + zp_row as f64);
        bytes * 8.0 / (k * n).max(1.0)
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        self.quantize(t)
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let (k, n, blocks, blob, _) = self.dims(&e.shape)?;
        let (scales, zero_points) = self.stored(e)?;
        let len = n
            .checked_mul(blocks)
            .and_then(|x| x.checked_mul(blob))
            .ok_or_else(|| too_large(&e.shape))?;
        e.part_of_len("B", len)?;
        let b = e.u8s("B")?;
        let bits = self.bits as usize;
        let mask = (1u16 << bits) - 1;
        let mut out = vec![0f32; k * n];
        for col in 0..n {
            let row = &b[col * blocks * blob..(col + 1) * blocks * blob];
            for kk in 0..k {
                let blk = kk / self.block_size;
                let code = packed(
                    &row[blk * blob..(blk + 1) * blob],
                    kk % self.block_size,
                    bits,
                    mask,
                );
                let s = col * blocks + blk;
                out[kk * n + col] = (i32::from(code) - zero_points[s]) as f32 * scales[s];
            }
        }
        decoded(&e.shape, out)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let (scales, zero_points) = self.stored(e)?;
        let qmax = (1i32 << self.bits) - 1;
        let layout = BlockLayout::new(&e.shape, 0, self.block_size)?;
        // Block `col · blocks + b` of the layout along K is the scale of (column, block).
        Ok(SliceRanges::new(
            Slicing::Block(layout),
            scales.iter().zip(&zero_points).map(|(&s, &zp)| {
                Some((
                    f64::from((-zp) as f32 * s),
                    f64::from((qmax - zp) as f32 * s),
                ))
            }),
        ))
    }

    /// The blocks of `block_size` along K of each column, with their scale and zero point.
    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let (k, n, blocks, blob, _) = self.dims(&e.shape)?;
        let (scales, zero_points) = self.stored(e)?;
        e.part_of_len("B", n * blocks * blob)?;
        let b = e.u8s("B")?;
        let (bits, mask) = (self.bits as usize, (1u16 << self.bits) - 1);
        let codes = (0..k * n)
            .map(|i| {
                let (kk, col) = (i / n, i % n);
                let blk = kk / self.block_size;
                let at = (col * blocks + blk) * blob;
                packed(&b[at..at + blob], kk % self.block_size, bits, mask) as i16
            })
            .collect();
        let max_code = (1u32 << self.bits) - 1;
        let rule = if self.symmetric {
            format!(
                "per column and block of {} along K (MLAS range2scale, float32): m = whichever of min, max has the larger |·|, \
                 s = −m/{mid}, zp = {mid} (not stored); q = clamp(roundf(x·(1/s) + zp), 0, {max_code}); x̂ = float32(q − zp)·s",
                self.block_size,
                mid = 1u32 << (self.bits - 1)
            )
        } else {
            format!(
                "per column and block of {} along K (MLAS range2scalezp, float32): min = min(min, 0), max = max(max, 0), \
                 s = (max − min)/{max_code}, zp = clamp(roundf(−min/s), 0, {max_code}); \
                 q = clamp(roundf(x·(1/s) + zp), 0, {max_code}); x̂ = float32(q − zp)·s",
                self.block_size
            )
        };
        Ok(Some(
            StoredSlices::new(
                Slicing::Block(BlockLayout::new(&e.shape, 0, self.block_size)?),
                scales.len(),
                rule,
                blockwise::SOURCE,
            )
            .column("scale", scales.iter().map(|&s| f64::from(s)))
            .column("zero_point", zero_points.iter().map(|&z| f64::from(z)))
            .codes(codes),
        ))
    }
}

/// The parameters ONNX Runtime's quantizer may have run with for a weight that codec `id` (with
/// `params`) stores as `e`, the likelier first. Symmetry is read from the stored zero points:
/// `MatMulNBits` stores none when symmetric; `DequantizeLinear`'s symmetric slices all have the
/// type's middle code, which an asymmetric range can also give (a uint8 bias spanning ±0.227
/// stores 128), so then both are candidates.
pub fn quantizer_params(id: &str, params: &Params, e: &Encoded) -> Vec<Params> {
    let with = |symmetric: bool| params.clone().with("symmetric", symmetric);
    match id {
        "onnx.matmul_nbits" => vec![with(!e.has("zero_points"))],
        "onnx.dequantize_linear" => {
            let Ok(a) = DequantizeLinearArgs::from_params(params) else {
                return vec![params.clone()];
            };
            let codec = DequantizeLinear {
                dtype: a.dtype,
                granularity: a.granularity,
                axis: a.axis,
                block_size: a.block_size as usize,
                symmetric: None,
            };
            let middle = quantizer::symmetric_zero_point(a.dtype);
            match codec.stored(e) {
                Ok((_, _, zero_points)) if zero_points.iter().all(|&z| i64::from(z) == middle) => {
                    let default = codec.is_symmetric();
                    vec![with(default), with(!default)]
                }
                Ok(_) => vec![with(false)],
                Err(_) => vec![params.clone()],
            }
        }
        _ => vec![params.clone()],
    }
}
