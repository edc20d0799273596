//! `deepseek.fp8_block`: DeepSeek-V3's FP8 checkpoints (`quant_method: fp8`, read by
//! transformers' `FineGrainedFP8Config`): `weight` FP8 E4M3 `[N, K]` and `weight_scale_inv`
//! float32 `[⌈N/bh⌉, ⌈K/bw⌉]`, one per `bh × bw` block (`weight_block_size`, 128×128),
//! edge blocks partial.
//!
//! `weight_scale_inv` is a **multiplier**, whatever its name says:
//! `w = D(f32(fp8(q)) · weight_scale_inv[i / bh, j / bw])`, the float32 product rounded once
//! to `dtype` (bfloat16 in DeepSeek-V3's `fp8_cast_bf16.py` / `weight_dequant`; transformers'
//! `Fp8Dequantize` returns the float32 product when the scales are float32). The block is
//! taken from the configuration, never inferred from the shapes: transformers infers it as
//! `rows / grid_rows`, which is silently wrong on padded grids.
//!
//! Encoding is DeepSeek-V3's `weight_quant` (`inference/kernel.py`): per block,
//! `s = max|x| / 448` in float32 and `q = fp8(x / s)` (round to nearest even), with `x` the
//! float32 value of the bfloat16 weight. A block of zeros has `s = 0` and `0/0` codes, NaN in
//! the library: `encode` refuses it. (transformers' `Fp8Quantize` stores `1/(448/amax)`, which
//! can differ in the last bit: a checkpoint's scales are read, never recomputed.)

use super::explain::StoredSlices;
use super::scaled::{float_scales, Grid, OutDtype, Strategy};
use super::{decoded, Codec, CodecEntry, CodecFamily, Encoded, Stored};
use crate::error::{Error, Result};
use crate::formats::ElementFormat;
use crate::params::Choice;
use crate::qdq::{SliceRanges, Slicing};
use crate::tensor::Tensor;

/// The library and version reproduced.
pub const LIBRARY: (&str, &str) = (
    "DeepSeek-V3 (inference/kernel.py) / transformers",
    "transformers 5.17.0 finegrained_fp8",
);

const QUIRKS: &[&str] = &[
    "weight_scale_inv is a multiplier: w = fp8 · scale_inv (DeepSeek-V3 inference/kernel.py weight_dequant_kernel)",
    "the scale grid is [⌈N/128⌉, ⌈K/128⌉] with partial edge blocks; the block comes from weight_block_size, not from the shapes (transformers' Fp8Dequantize infers rows // grid_rows, wrong on padded grids)",
    "the float32 product is rounded once to bfloat16 (fp8_cast_bf16.py sets the default dtype to bfloat16)",
];

crate::declare_params! {
    /// DeepSeek-V3 FP8 block weights.
    pub struct Fp8BlockArgs {
        /// block rows (`weight_block_size[0]`)
        block_rows: i64 = 128; int(1, 1048576), Data;
        /// block columns (`weight_block_size[1]`)
        block_cols: i64 = 128; int(1, 1048576), Data;
        /// dtype the dequantized values are rounded to
        dtype: OutDtype = OutDtype::Bfloat16; choice(), Data;
    }
}

/// The codec family `deepseek.fp8_block`.
pub struct Fp8BlockFamily;

impl CodecFamily for Fp8BlockFamily {
    type Args = Fp8BlockArgs;
    fn build(a: &Fp8BlockArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(Fp8Block {
            block: (a.block_rows as usize, a.block_cols as usize),
            dtype: a.dtype,
        }))
    }
}

/// The registry entry.
pub fn entry() -> CodecEntry {
    let (library, version) = LIBRARY;
    CodecEntry::of::<Fp8BlockFamily>(
        "deepseek.fp8_block",
        "DeepSeek-V3 FP8: E4M3 weights with a float32 multiplier (weight_scale_inv) per 128×128 block",
    )
    .reproducing(library, version, QUIRKS)
    .drawn(8, "DeepSeek FP8")
}

/// A configured DeepSeek FP8 block codec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fp8Block {
    pub block: (usize, usize),
    pub dtype: OutDtype,
}

impl Fp8Block {
    fn grid(&self, shape: &[usize]) -> Result<Grid> {
        Grid::new(Strategy::Block, shape, 1, self.block)
    }

    fn scales(&self, e: &Encoded, grid: &Grid) -> Result<Vec<f32>> {
        grid.check(e, "weight_scale_inv")?;
        // Float32 normally; a bfloat16 grid is read as bfloat16.
        float_scales(e, "weight_scale_inv", grid.len(), OutDtype::Bfloat16)
    }
}

impl Codec for Fp8Block {
    fn label(&self) -> String {
        format!("FP8 E4M3 block {}×{}", self.block.0, self.block.1)
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let Ok(grid) = self.grid(shape) else {
            return 0.0;
        };
        8.0 + (grid.len() * 32) as f64 / grid.m.len().max(1) as f64
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let grid = self.grid(&t.shape)?;
        let x = OutDtype::Bfloat16.round_all(&t.data);
        let mut scales = Vec::with_capacity(grid.len());
        for (b, members) in grid.members().iter().enumerate() {
            let amax = members.iter().fold(0f32, |a, &i| a.max(x[i].abs()));
            if amax == 0.0 || !amax.is_finite() {
                return Err(Error::input(format!(
                    "block {b} has amax {amax}: DeepSeek's weight_quant divides by amax/448 (NaN codes)"
                )));
            }
            scales.push(amax / 448.0);
        }
        let codes = grid.map(|i, g| {
            ElementFormat::Fp8E4m3
                .encode(x[i] / scales[g])
                .unwrap_or(0x7F) as f32
        });
        Ok(Encoded::new(&t.shape)
            .with(
                "weight",
                t.shape.clone(),
                Stored::U8(codes.iter().map(|&c| c as u8).collect()),
            )
            .with("weight_scale_inv", grid.shape(), Stored::F32(scales)))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let grid = self.grid(&e.shape)?;
        e.part_of_len("weight", grid.m.len())?;
        let scales = self.scales(e, &grid)?;
        let codes = e.u8s("weight")?;
        let dtype = self.dtype;
        let values =
            grid.map(|i, g| dtype.round(ElementFormat::Fp8E4m3.decode(codes[i]) * scales[g]));
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let grid = self.grid(&e.shape)?;
        let scales = self.scales(e, &grid)?;
        let ranges = grid.map(|_, g| g as f32);
        Ok(SliceRanges::new(
            Slicing::Flat(1),
            ranges
                .iter()
                .map(|&g| {
                    let s = scales[g as usize].abs() as f64 * 448.0;
                    Some((-s, s))
                })
                .collect::<Vec<_>>(),
        ))
    }

    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let grid = self.grid(&e.shape)?;
        let scales = self.scales(e, &grid)?;
        Ok(Some(
            StoredSlices::new(
                grid.slicing(),
                grid.len(),
                format!(
                    "x taken as float32 of the bfloat16 weight; s = max |x| / 448 (float32) per {} block; \
                     q = fp8_e4m3(x / s), round to nearest even; x̂ = {}(fp8(q)·s)",
                    format_args!("{}×{}", self.block.0, self.block.1),
                    self.dtype.name()
                ),
                "DeepSeek-V3 inference/kernel.py weight_quant / weight_dequant",
            )
            .column("weight_scale_inv", scales.iter().map(|&s| s as f64)),
        ))
    }
}
