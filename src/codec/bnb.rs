//! bitsandbytes' formats as codecs: `bnb.nf4`, `bnb.fp4`, `bnb.blockwise8` and `bnb.int8`, with
//! bitsandbytes' own argument names (`quant_type`, `blocksize`, `compress_statistics`,
//! `quant_storage` of `quantize_4bit`; `blocksize`, `nested`, `code` of `quantize_blockwise`).
//! The kernels are [`crate::formats::bnb`]; blocks run over the flattened tensor.
//!
//! Stored as bitsandbytes' `QuantState` keeps it (the keys of `QuantState.as_dict`):
//! * 4-bit: `weight`, two codes per byte (even element in the high nibble), `[⌈n/2⌉, 1]`;
//!   `absmax` (float32 per block) and `quant_map` (the 16-entry code book), or with
//!   `compress_statistics` `absmax` as uint8 codes of `absmax − nested_offset`, with
//!   `nested_absmax` (float32 per 256 codes), `nested_quant_map` (the dynamic map) and
//!   `nested_offset`;
//! * 8-bit blockwise: `weight`, one code per element, `absmax` and `quant_map` (the 256-entry
//!   dynamic map), nested like the 4-bit statistics (blocks of `blocksize`).
//!
//! The representable range of a block is `[−absmax, absmax]` (4-bit), or
//! `[code[0]·absmax, code[255]·absmax]` (8-bit: the map's floor is −0.99297).
//!
//! Reading a checkpoint's `QuantState` (transformers' saved 4-bit weights):
//! * `dtype` is the dtype `dequantize_4bit` returns: the float32 product `table[q]·absmax` is
//!   rounded once to it (bfloat16 for a bf16 model), as the CPU kernel writes its output;
//! * `quant_map` is checked (16 float32 values) but not read: bitsandbytes 0.50.2 never reads it
//!   in 4-bit dequantization — the CPU kernel has fixed NF4/FP4 tables (FP4 nibble 8 gives
//!   −0.0 where the stored map holds +0.0) and its Python fallback rebuilds the map with
//!   `get_4bit_type` (backends/cpu/ops.py `dequantize_4bit`), so a file whose map differs
//!   decodes, in the library too, with the standard table;
//! * `nested_quant_map` is read: the nested statistics go through `dequantize_blockwise` with
//!   `QuantState.state2.code`, the stored map; `nested_offset` (a number in the JSON
//!   `quant_state` blob, not a tensor) comes as a one-element part.
//!
//! `bnb.int8` is LLM.int8's weight storage (`Linear8bitLt`, transformers' `load_in_8bit`):
//! `weight` int8 `[N, K]` and `SCB` float32 `[N]` (each row's absmax), optionally the
//! `weight_format` marker (0: rows). Decoding is `int8_vectorwise_dequant`,
//! `w = float32(float32(q·SCB)·float32(1/127))`; encoding `int8_vectorwise_quant` of the
//! float16-cast weights, `q = round_half_even(x·(127·(1/SCB)))`.

use super::explain::StoredSlices;
use super::half::OutDType;
use super::{decoded, Codec, CodecEntry, CodecFamily, Encoded, Stored};
use crate::error::{Error, Result};
use crate::formats::bnb::{
    self, blockwise8, double::DoubleQuant, four_bit::BLOCKSIZES, Blockwise8, FourBit, QuantType,
};
use crate::params::Choice;
use crate::qdq::{SliceRanges, Slicing};
use crate::tensor::Tensor;

/// The library and version reproduced.
pub const LIBRARY: (&str, &str) = ("bitsandbytes", "0.50.2 (CPU)");

const RECIPROCAL: &str = "scaled by x·(1/absmax) in float32 (reciprocal, then multiply), not x/absmax (backends/default/ops.py l. 245)";
const BUCKETIZE: &str = "the code is torch.bucketize against float32 midpoints of the sorted code book, not an argmin: a value on a midpoint takes the lower code (ops.py l. 229, 252)";
const SHORT_BLOCK: &str = "a zero block stores absmax 0 and codes the zero value; a short last block divides by its absmax clamped to 1e-38 and stores the clamped value (ops.py l. 247–249)";
const DOUBLE_QUANT: &str = "compress_statistics: offset = torch's float32 mean of the absmax (its summation order), then 8-bit blocks of 256 whatever the outer blocksize (functional.py l. 939–940)";

/// Quirks NF4 reproduces, with their source.
const QUIRKS_NF4: &[&str] = &[RECIPROCAL, BUCKETIZE, SHORT_BLOCK, DOUBLE_QUANT];

/// Quirks FP4 reproduces, with their source.
const QUIRKS_FP4: &[&str] = &[
    RECIPROCAL,
    BUCKETIZE,
    "nibbles 0 (+0) and 8 share the value 0 and argsort keeps them in index order, so scaled values in (0, 0.0026] take nibble 8, which the CPU dequantizer reads as −0.0 (ops.py l. 229; csrc/cpu_ops.cpp fp4_lut)",
    SHORT_BLOCK,
    DOUBLE_QUANT,
];

/// Quirks the 8-bit format reproduces, with their source.
const QUIRKS_8BIT: &[&str] = &[
    "the CPU kernel looks codes up in a 65536-entry table instead of searching the code book: exact zeros come back as 2.125e-5·absmax (code 131), and a few codes per 16k differ from the nearest (csrc/cpu_ops.cpp build_quantize_lut / quantize_cpu_impl)",
    "an all-zero block gets code 0, the most negative code, and dequantizes to −0.0 (csrc/cpu_ops.cpp quantize_cpu_impl)",
    "the dynamic map runs from −0.99297 to +1: a block's most negative value is clipped (functional.py l. 296 create_dynamic_map)",
    "the dynamic map's torch.linspace points are fused multiply-adds (one rounding), as torch's AVX2 build computes them (functional.py l. 325)",
    "nested: the absmax is double-quantized with the outer blocksize (functional.py l. 664–667)",
];

/// Quirks the LLM.int8 weight format reproduces, with their source.
const QUIRKS_INT8: &[&str] = &[
    "the weights are cast to float16 before quantizing (nn/modules.py Int8Params._quantize): values beyond float16's range cannot be stored",
    "codes are round(x·(127/absmax)), half to even, where torch evaluates 127/absmax as reciprocal(absmax)·127 (two float32 roundings; Tensor.__rtruediv__), which moves 34 of the 147456 codes of a 384×384 weight off a direct division (backends/default/ops.py int8_vectorwise_quant)",
    "dequantization is q·SCB·(1/127): two float32 roundings, a multiply by 7.874015718698502e-3 rather than a division by 127 (_ops.py int8_vectorwise_dequant)",
];

crate::choice_enum! {
    /// `quant_storage` of `quantize_4bit`: a reinterpretation of the packed bytes.
    pub enum QuantStorage {
        Uint8 = "uint8",
        Int8 = "int8",
        Float16 = "float16",
        Bfloat16 = "bfloat16",
        Float32 = "float32",
    }
}

crate::choice_enum! {
    /// `quant_type` of `bnb.nf4`.
    pub enum Nf4Type { Nf4 = "nf4" }
}

crate::choice_enum! {
    /// `quant_type` of `bnb.fp4`.
    pub enum Fp4Type { Fp4 = "fp4" }
}

crate::choice_enum! {
    /// `code` of `quantize_blockwise`.
    pub enum BlockwiseCode { Dynamic = "dynamic" }
}

/// The arguments of `quantize_4bit` after `quant_type`.
macro_rules! four_bit_args {
    ($name:ident, $ty:ident, $default:expr) => {
        crate::declare_params! {
            /// `quantize_4bit` arguments.
            pub struct $name {
                /// 4-bit data type
                quant_type: $ty = $default; choice(), Data;
                /// values per absmax: 32, 64, …, 4096 (powers of two)
                blocksize: i64 = 64; int(32, 4096), Data;
                /// double quantization: the absmax values themselves in 8 bits (QLoRA's DQ)
                compress_statistics: bool = false; boolean(), Data;
                /// dtype the packed bytes are stored as (a reinterpretation: values unchanged)
                quant_storage: QuantStorage = QuantStorage::Uint8; choice(), Data;
                /// dtype `dequantize_4bit` returns (`QuantState.dtype`, the quantized weights'
                /// dtype): the float32 product rounded once to it
                dtype: OutDType = OutDType::Float32; choice(), Data;
            }
        }
    };
}

four_bit_args!(Nf4Args, Nf4Type, Nf4Type::Nf4);
four_bit_args!(Fp4Args, Fp4Type, Fp4Type::Fp4);

crate::declare_params! {
    /// `quantize_blockwise` arguments.
    pub struct Blockwise8Args {
        /// values per absmax
        blocksize: i64 = 4096; int(1, 65536), Data;
        /// double-quantize the absmax values (blocks of the same size)
        nested: bool = false; boolean(), Data;
        /// the code book
        code: BlockwiseCode = BlockwiseCode::Dynamic; choice(), Data;
    }
}

crate::declare_params! {
    /// LLM.int8's weights (`int8_vectorwise_quant`, whose `threshold` only matters to matmuls).
    pub struct Int8Args {
        /// how the int8 weights are laid out: by rows (`weight_format` 0, the only one stored)
        weight_format: Int8Format = Int8Format::Row; choice(), Data;
    }
}

crate::choice_enum! {
    /// `weight_format` of a bitsandbytes int8 `Linear8bitLt`.
    pub enum Int8Format { Row = "row" }
}

/// `quantize_4bit` → `dequantize_4bit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bnb4 {
    pub quant_type: QuantType,
    pub blocksize: usize,
    pub compress_statistics: bool,
    /// The dtype the dequantized values are returned in.
    pub dtype: OutDType,
}

/// `quantize_blockwise` → `dequantize_blockwise` with the dynamic map.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bnb8 {
    pub blocksize: usize,
    pub nested: bool,
}

fn four_bit(
    quant_type: QuantType,
    blocksize: i64,
    compress_statistics: bool,
    dtype: OutDType,
) -> Result<Box<dyn Codec>> {
    let blocksize = blocksize as usize;
    if !BLOCKSIZES.contains(&blocksize) {
        return Err(Error::param(
            "blocksize",
            format!("quantize_4bit accepts 32, 64, 128, 256, 512, 1024, 2048 or 4096 (bitsandbytes raises ValueError: invalid blocksize {blocksize})"),
        ));
    }
    Ok(Box::new(Bnb4 {
        quant_type,
        blocksize,
        compress_statistics,
        dtype,
    }))
}

/// The codec family `bnb.nf4`.
pub struct Nf4;

impl CodecFamily for Nf4 {
    type Args = Nf4Args;
    fn build(a: &Nf4Args, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        four_bit(QuantType::Nf4, a.blocksize, a.compress_statistics, a.dtype)
    }
}

/// The codec family `bnb.fp4`.
pub struct Fp4;

impl CodecFamily for Fp4 {
    type Args = Fp4Args;
    fn build(a: &Fp4Args, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        four_bit(QuantType::Fp4, a.blocksize, a.compress_statistics, a.dtype)
    }
}

/// LLM.int8's row-wise weights: `int8_vectorwise_quant` → `int8_vectorwise_dequant`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Int8Rows;

/// The codec family `bnb.int8`.
pub struct Int8Family;

impl CodecFamily for Int8Family {
    type Args = Int8Args;
    fn build(_: &Int8Args, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(Int8Rows))
    }
}

/// The codec family `bnb.blockwise8`.
pub struct Blockwise8Family;

impl CodecFamily for Blockwise8Family {
    type Args = Blockwise8Args;
    fn build(a: &Blockwise8Args, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(Bnb8 {
            blocksize: a.blocksize as usize,
            nested: a.nested,
        }))
    }
}

/// Colour and legend of bitsandbytes' formats.
const DRAWN: (usize, &str) = (5, "bitsandbytes");

/// The bitsandbytes entries of the codec registry.
pub fn entries() -> Vec<CodecEntry> {
    let (library, version) = LIBRARY;
    vec![
        CodecEntry::of::<Nf4>(
            "bnb.nf4",
            "bitsandbytes NF4: 4-bit normal-float code book, float32 absmax per block",
        )
        .reproducing(library, version, QUIRKS_NF4),
        CodecEntry::of::<Fp4>(
            "bnb.fp4",
            "bitsandbytes FP4: 4-bit float (bias 2) code book, float32 absmax per block",
        )
        .reproducing(library, version, QUIRKS_FP4),
        CodecEntry::of::<Blockwise8Family>(
            "bnb.blockwise8",
            "bitsandbytes 8-bit dynamic blockwise (the 8-bit optimizers' and LLM.int8 state format)",
        )
        .reproducing(library, version, QUIRKS_8BIT),
        CodecEntry::of::<Int8Family>(
            "bnb.int8",
            "bitsandbytes LLM.int8 weights: int8 codes per row with a float32 absmax (SCB) per row",
        )
        .reproducing(library, version, QUIRKS_INT8),
    ]
    .into_iter()
    .map(|e| e.drawn(DRAWN.0, DRAWN.1))
    .collect()
}

/// The statistics' parts: `absmax` as float32, or double-quantized.
fn with_statistics(e: Encoded, absmax: &[f32], double: &Option<DoubleQuant>) -> Encoded {
    match double {
        None => e.with_flat("absmax", Stored::F32(absmax.to_vec())),
        Some(d) => e
            .with_flat("absmax", Stored::U8(d.codes.clone()))
            .with_flat("nested_absmax", Stored::F32(d.absmax2.clone()))
            .with_flat(
                "nested_quant_map",
                Stored::F32(blockwise8::dynamic_code().code.to_vec()),
            )
            .with_flat("nested_offset", Stored::F32(vec![d.offset])),
    }
}

/// The statistics read back: `(absmax, double quantization)`, lengths checked. The nested
/// statistics are dequantized with the stored `nested_quant_map` when there is one (bitsandbytes
/// dequantizes them with `QuantState.state2.code`, i.e. the file's map), else the dynamic map.
fn read_statistics(
    e: &Encoded,
    blocks: usize,
    nested_blocksize: usize,
) -> Result<(Vec<f32>, Option<DoubleQuant>)> {
    if !e.has("nested_absmax") {
        e.part_of_len("absmax", blocks)?;
        return Ok((e.f32s("absmax")?.to_vec(), None));
    }
    e.part_of_len("absmax", blocks)?;
    e.part_of_len("nested_absmax", blocks.div_ceil(nested_blocksize))?;
    e.part_of_len("nested_offset", 1)?;
    let code = match e.has("nested_quant_map") {
        true => {
            e.part_of_len("nested_quant_map", 256)?;
            let mut code = [0f32; 256];
            code.copy_from_slice(e.f32s("nested_quant_map")?);
            code
        }
        false => blockwise8::dynamic_code().code,
    };
    let double = DoubleQuant::from_stored_with(
        e.f32s("nested_offset")?[0],
        e.u8s("absmax")?.to_vec(),
        e.f32s("nested_absmax")?.to_vec(),
        nested_blocksize,
        &code,
    );
    Ok((Vec::new(), Some(double)))
}

/// The slices of a blockwise bitsandbytes encoding: blocks of `blocksize` of the flat tensor,
/// each with the absmax the dequantizer uses and, under double quantization, the uint8 code it
/// is stored as, its nested block's absmax and the offset.
fn block_slices(
    blocksize: usize,
    absmax: &[f32],
    double: &Option<DoubleQuant>,
    rule: String,
    source: &str,
) -> StoredSlices {
    let mut slices = StoredSlices::new(Slicing::Flat(blocksize), absmax.len(), rule, source)
        .column("absmax", absmax.iter().map(|&a| a as f64));
    if let Some(d) = double {
        let nested = d.blocksize.max(1);
        slices = slices
            .column("absmax code (uint8)", d.codes.iter().map(|&c| c as f64))
            .column(
                "nested_absmax",
                (0..absmax.len()).map(|b| d.absmax2.get(b / nested).copied().unwrap_or(0.0) as f64),
            )
            .column("nested_offset", absmax.iter().map(|_| d.offset as f64));
    }
    slices
}

/// The double quantization's part of a rule, when there is one.
fn double_rule(double: &Option<DoubleQuant>) -> &'static str {
    match double {
        Some(_) => {
            "; the absmax is stored as a uint8 code of absmax − offset (the dynamic map, blocks \
             of 256 with their own float32 absmax), so the dequantizer uses \
             code[absmax code]·nested_absmax + offset"
        }
        None => "",
    }
}

const SOURCE_4BIT: &str =
    "bitsandbytes/backends/default/ops.py:229–252, quantize_4bit / dequantize_4bit (bitsandbytes 0.50.2)";
const SOURCE_BLOCKWISE: &str =
    "bitsandbytes/functional.py quantize_blockwise / dequantize_blockwise (bitsandbytes 0.50.2)";

fn flat_ranges(blocksize: usize, ranges: Vec<(f32, f32)>) -> SliceRanges {
    SliceRanges::new(
        Slicing::Flat(blocksize),
        ranges
            .into_iter()
            .map(|(lo, hi)| Some((lo as f64, hi as f64))),
    )
}

impl Bnb4 {
    fn stored(&self, e: &Encoded) -> Result<FourBit> {
        let numel = e.numel()?;
        e.part_of_len("weight", numel.div_ceil(2))?;
        let blocks = numel.div_ceil(self.blocksize);
        if e.has("quant_map") {
            // Checked, not read: bitsandbytes' 4-bit dequantizers (the CPU kernel's fixed
            // tables, and its Python fallback's `get_4bit_type`) never read `quant_map`.
            e.part_of_len("quant_map", 16)?;
            e.f32s("quant_map")?;
        }
        let (absmax, double) = read_statistics(e, blocks, DoubleQuant::BLOCKSIZE_4BIT)?;
        Ok(FourBit {
            quant_type: self.quant_type,
            blocksize: self.blocksize,
            numel,
            packed: e.u8s("weight")?.to_vec(),
            absmax,
            double,
        })
    }
}

impl Codec for Bnb4 {
    /// `bnb.nf4`, `bnb.fp4 (block 128, double quant)`, ….
    fn label(&self) -> String {
        let mut extra = Vec::new();
        if self.blocksize != 64 {
            extra.push(format!("block {}", self.blocksize));
        }
        if self.compress_statistics {
            extra.push("double quant".to_string());
        }
        if self.dtype != OutDType::Float32 {
            extra.push(self.dtype.name().to_string());
        }
        let name = format!("bnb.{}", self.quant_type.name());
        if extra.is_empty() {
            name
        } else {
            format!("{name} ({})", extra.join(", "))
        }
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        FourBit::bits_per_value(
            shape.iter().product(),
            self.blocksize,
            self.compress_statistics,
        )
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let q = bnb::quantize_4bit(
            &t.data,
            self.quant_type,
            self.blocksize,
            self.compress_statistics,
        )?;
        let e = Encoded::new(&t.shape).with(
            "weight",
            vec![q.packed.len(), 1],
            Stored::U8(q.packed.clone()),
        );
        Ok(with_statistics(e, &q.absmax, &q.double)
            .with_flat("quant_map", Stored::F32(self.quant_type.code().to_vec())))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let last_dim_odd = e.shape.last().is_some_and(|d| d % 2 == 1);
        let mut values = self.stored(e)?.dequantize(last_dim_odd);
        if self.dtype != OutDType::Float32 {
            values.iter_mut().for_each(|v| *v = self.dtype.round(*v));
        }
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        Ok(flat_ranges(self.blocksize, self.stored(e)?.ranges()))
    }

    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let stored = self.stored(e)?;
        let name = self.quant_type.name();
        let rule = format!(
            "absmax = max |x| of the block; nibble = the {name} code-book entry nearest x·(1/absmax) \
             (torch.bucketize on the midpoints); x̂ = {name}[nibble]·absmax{}{}",
            if self.dtype != OutDType::Float32 {
                format!(", rounded to {}", self.dtype.name())
            } else {
                String::new()
            },
            double_rule(&stored.double)
        );
        let codes = stored.codes().iter().map(|&c| c as i16).collect();
        Ok(Some(
            block_slices(
                self.blocksize,
                stored.absmax_used(),
                &stored.double,
                rule,
                SOURCE_4BIT,
            )
            .codes(codes),
        ))
    }
}

impl Bnb8 {
    fn stored(&self, e: &Encoded) -> Result<Blockwise8> {
        let numel = e.numel()?;
        if self.blocksize == 0 {
            return Err(Error::param("blocksize", "must be positive"));
        }
        e.part_of_len("weight", numel)?;
        let (absmax, double) = read_statistics(e, numel.div_ceil(self.blocksize), self.blocksize)?;
        Ok(Blockwise8 {
            blocksize: self.blocksize,
            codes: e.u8s("weight")?.to_vec(),
            absmax,
            double,
        })
    }
}

impl Codec for Bnb8 {
    /// `bnb.blockwise8 (block 4096)`, `bnb.blockwise8 (block 256, nested)`.
    fn label(&self) -> String {
        format!(
            "bnb.blockwise8 (block {}{})",
            self.blocksize,
            if self.nested { ", nested" } else { "" }
        )
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        Blockwise8::bits_per_value(shape.iter().product(), self.blocksize, self.nested)
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let q = bnb::quantize_blockwise(&t.data, self.blocksize, self.nested)?;
        let e = Encoded::new(&t.shape).with("weight", t.shape.clone(), Stored::U8(q.codes.clone()));
        Ok(with_statistics(e, &q.absmax, &q.double).with_flat(
            "quant_map",
            Stored::F32(blockwise8::dynamic_code().code.to_vec()),
        ))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        decoded(&e.shape, self.stored(e)?.dequantize())
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        Ok(flat_ranges(self.blocksize, self.stored(e)?.ranges()))
    }

    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let stored = self.stored(e)?;
        let rule = format!(
            "absmax = max |x| of the block; code = the entry of the 256-value dynamic map nearest \
             x·(1/absmax); x̂ = map[code]·absmax{}",
            double_rule(&stored.double)
        );
        Ok(Some(block_slices(
            self.blocksize,
            stored.absmax_used(),
            &stored.double,
            rule,
            SOURCE_BLOCKWISE,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{evaluate, find, quantize_dequantize};
    use super::*;
    use crate::params::Params;

    fn ramp(n: usize) -> Tensor {
        Tensor::new(
            vec![n / 64, 64],
            (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 10.0)
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn bits_per_value_count_every_statistic() {
        let t = ramp(1 << 14);
        let bits = |id: &'static str, p: serde_json::Value| {
            evaluate(id, &Params::from_value(p).unwrap(), &t)
                .unwrap()
                .bits_per_value
        };
        // NF4 at block 64: 4 bits + a float32 absmax per 64 values.
        assert_eq!(bits("bnb.nf4", serde_json::json!({})), 4.5);
        // Double quantization: 8/64 + 32/(64·256) + 32/16384 bits of statistics.
        let dq = bits("bnb.nf4", serde_json::json!({"compress_statistics": true}));
        assert_eq!(dq, 4.0 + (8.0 * 256.0 + 32.0 + 32.0) / 16384.0);
        assert!(dq < 4.13);
        assert_eq!(
            bits("bnb.blockwise8", serde_json::json!({"blocksize": 256})),
            8.125
        );
    }

    #[test]
    fn library_keys_and_errors() {
        let spec = find("bnb.nf4").unwrap();
        let p = Params::from_json(
            r#"{"quant_type": "nf4", "blocksize": 128, "compress_statistics": true}"#,
        )
        .unwrap();
        let q = spec.build(&p, &[4, 64]).unwrap();
        assert_eq!(q.label(), "bnb.nf4 (block 128, double quant)");
        let bad = Params::from_json(r#"{"blocksize": 100}"#).unwrap();
        let e = spec.build(&bad, &[4, 64]).unwrap_err().to_string();
        assert!(e.contains("invalid blocksize 100"), "{e}");
        let wrong_type = Params::from_json(r#"{"quant_type": "fp4"}"#).unwrap();
        assert!(spec.build(&wrong_type, &[4, 64]).is_err());
        let nan = Tensor::from_vec(vec![1.0, f32::NAN]);
        assert!(spec
            .build(&Params::new(), &[2])
            .unwrap()
            .encode(&nan)
            .is_err());
    }

    #[test]
    fn the_8bit_map_clips_a_negative_extreme() {
        // The block's absmax is the negative −2.0; the map's floor is −0.99297·2.
        let t = Tensor::from_vec(vec![-2.0, 1.0, 0.5, 0.25]);
        let q = find("bnb.blockwise8")
            .unwrap()
            .build(&Params::new().with("blocksize", 4), &[4])
            .unwrap();
        let q = quantize_dequantize(q.as_ref(), &t).unwrap();
        assert_eq!(q.metrics.clipped_fraction, 0.25);
        assert!(q.values[0] > -2.0);
    }
}

/// `1/127` as `int8_vectorwise_dequant` multiplies by it (a Python float, rounded to float32).
const INV_127: f32 = 7.874015718698502e-3f64 as f32;

impl Int8Rows {
    /// `(rows, columns)`: the last dim is a row.
    fn rows(shape: &[usize]) -> Result<(usize, usize)> {
        let cols = shape.last().copied().unwrap_or(1);
        let numel = crate::tensor::element_count(shape)
            .ok_or_else(|| Error::input(format!("shape {shape:?} overflows")))?;
        Ok((numel.checked_div(cols).unwrap_or(0), cols))
    }

    /// `SCB`, lengths checked, and the `weight_format` when stored (0: rows).
    fn stored_scb<'a>(&self, e: &'a Encoded) -> Result<&'a [f32]> {
        let (rows, cols) = Self::rows(&e.shape)?;
        e.part_of_len("weight", rows * cols)?;
        e.i8s("weight")?;
        e.part_of_len("SCB", rows)?;
        if e.has("weight_format") {
            e.part_of_len("weight_format", 1)?;
            let format = e.u8s("weight_format")?[0];
            if format != 0 {
                return Err(Error::input(format!(
                    "weight_format {format} is not 0 (row): bitsandbytes 0.50 stores int8 weights by rows only"
                )));
            }
        }
        e.f32s("SCB")
    }
}

impl Codec for Int8Rows {
    fn label(&self) -> String {
        "bnb.int8 (LLM.int8 rows)".to_string()
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        8.0 + 32.0 / shape.last().copied().unwrap_or(1).max(1) as f64
    }

    /// `Int8Params._quantize`: `B = float16(x)`, `SCB = max|B|` per row (float32),
    /// `q = round_half_even(B·(127·(1/SCB)))` — torch's `127.0 / SCB` is a reciprocal then a
    /// multiply; a zero row's `0·∞` is NaN, whose int8 cast gives 0 on x86.
    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let (rows, cols) = Self::rows(&t.shape)?;
        let half = crate::formats::half_cast::HalfType::Float16;
        let b: Vec<f32> = t.data.iter().map(|&x| half.round_trip(x)).collect();
        if let Some(i) = b.iter().position(|v| !v.is_finite()) {
            return Err(Error::input(format!(
                "value {} is not a finite float16: LLM.int8 quantizes the weights as float16",
                t.data[i]
            )));
        }
        let mut codes = Vec::with_capacity(b.len());
        let mut scb = Vec::with_capacity(rows);
        for row in b.chunks(cols.max(1)).take(rows) {
            let absmax = row.iter().fold(0f32, |a, &v| a.max(v.abs()));
            // `127.0 / row_stats` is torch's `__rtruediv__`: `row_stats.reciprocal() * 127`.
            let factor = 127.0f32 * (1.0 / absmax);
            scb.push(absmax);
            codes.extend(row.iter().map(|&v| {
                let q = crate::quant::round_half_even(v * factor);
                if q.is_finite() {
                    q as i8
                } else {
                    0
                }
            }));
        }
        Ok(Encoded::new(&t.shape)
            .with("weight", t.shape.clone(), Stored::I8(codes))
            .with_flat("SCB", Stored::F32(scb)))
    }

    /// `int8_vectorwise_dequant`: `w = float32(float32(q·SCB)·float32(1/127))`.
    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let scb = self.stored_scb(e)?;
        let (_, cols) = Self::rows(&e.shape)?;
        let values = e
            .i8s("weight")?
            .chunks(cols.max(1))
            .zip(scb)
            .flat_map(|(row, &s)| row.iter().map(move |&q| q as f32 * s * INV_127))
            .collect();
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let scb = self.stored_scb(e)?;
        let (_, cols) = Self::rows(&e.shape)?;
        Ok(SliceRanges::new(
            Slicing::Flat(cols.max(1)),
            scb.iter().map(|&s| {
                let (lo, hi) = (-127.0 * s * INV_127, 127.0 * s * INV_127);
                Some((lo.min(hi) as f64, lo.max(hi) as f64))
            }),
        ))
    }

    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let scb = self.stored_scb(e)?;
        let (_, cols) = Self::rows(&e.shape)?;
        Ok(Some(
            StoredSlices::new(
                Slicing::Flat(cols.max(1)),
                scb.len(),
                "B = float16(x); SCB = max |B| of the row; q = round_half_even(B·(127·(1/SCB))); \
                 x̂ = float32(float32(q·SCB)·float32(1/127))",
                "bitsandbytes/functional.py int8_vectorwise_quant / int8_vectorwise_dequant (bitsandbytes 0.50.2)",
            )
            .column("SCB", scb.iter().map(|&s| s as f64)),
        ))
    }
}

#[cfg(test)]
mod checkpoint_tests {
    use super::super::find;
    use super::*;
    use crate::params::Params;

    fn replaced(e: &Encoded, name: &'static str, data: Stored) -> Encoded {
        let mut e = e.clone();
        e.parts.retain(|p| p.name != name);
        e.with_flat(name, data)
    }

    #[test]
    fn four_bit_output_dtype_and_stored_maps() {
        // Blocks of different magnitudes, so that the nested statistics are not all zero.
        let mut t = super::super::tests::ramp(vec![8, 64]);
        t.data
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v *= 1.0 + (i / 64) as f32);
        let p = Params::from_json(r#"{"compress_statistics": true, "dtype": "bfloat16"}"#).unwrap();
        let c = find("bnb.fp4").unwrap().build(&p, &[8, 64]).unwrap();
        assert_eq!(c.label(), "bnb.fp4 (double quant, bfloat16)");
        let e = c.encode(&t).unwrap();
        let y = c.decode(&e).unwrap();
        let f32_codec = find("bnb.fp4")
            .unwrap()
            .build(&Params::new().with("compress_statistics", true), &[8, 64])
            .unwrap();
        let x = f32_codec.decode(&e).unwrap();
        for (a, b) in x.data.iter().zip(&y.data) {
            assert_eq!(OutDType::Bfloat16.round(*a).to_bits(), b.to_bits());
        }
        // The stored quant_map is checked but not read (bitsandbytes never reads it)…
        let other_map = replaced(&e, "quant_map", Stored::F32(vec![9.0; 16]));
        assert_eq!(c.decode(&other_map).unwrap(), y);
        let msg = c
            .decode(&replaced(&e, "quant_map", Stored::F32(vec![0.0; 15])))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("`quant_map` has 15 elements"), "{msg}");
        // … while the nested map is (dequantize_blockwise with state2.code).
        let doubled: Vec<f32> = blockwise8::dynamic_code()
            .code
            .iter()
            .map(|v| v * 2.0)
            .collect();
        let nested = replaced(&e, "nested_quant_map", Stored::F32(doubled));
        assert_ne!(c.decode(&nested).unwrap(), y);
        let msg = c
            .decode(&replaced(
                &e,
                "nested_quant_map",
                Stored::F32(vec![0.0; 16]),
            ))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("`nested_quant_map` has 16 elements"), "{msg}");
    }

    #[test]
    fn llm_int8_rows() {
        let c = find("bnb.int8")
            .unwrap()
            .build(&Params::new(), &[2, 4])
            .unwrap();
        let t = Tensor::new(vec![2, 4], vec![1.0, -0.5, 0.25, 0.0, 0.0, 0.0, 0.0, 0.0]).unwrap();
        let e = c.encode(&t).unwrap();
        assert_eq!(e.i8s("weight").unwrap(), &[127, -64, 32, 0, 0, 0, 0, 0]);
        assert_eq!(e.f32s("SCB").unwrap(), &[1.0, 0.0]);
        let y = c.decode(&e).unwrap();
        assert_eq!(y.data[0], 127.0 * INV_127);
        assert_eq!(c.bits_per_value(&[2, 4]), 16.0);
        let format = e.clone().with("weight_format", vec![], Stored::U8(vec![1]));
        let msg = c.decode(&format).unwrap_err().to_string();
        assert!(msg.contains("weight_format 1 is not 0 (row)"), "{msg}");
        let ok = e.clone().with("weight_format", vec![], Stored::U8(vec![0]));
        assert_eq!(c.decode(&ok).unwrap(), y);
        let msg = c
            .decode(&replaced(&e, "SCB", Stored::F32(vec![1.0; 3])))
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("`SCB` has 3 elements, the tensor needs 2"),
            "{msg}"
        );
        let big = Tensor::new(vec![1, 2], vec![1e6, 1.0]).unwrap();
        let msg = c.encode(&big).unwrap_err().to_string();
        assert!(msg.contains("not a finite float16"), "{msg}");
    }
}
