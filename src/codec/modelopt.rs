//! `modelopt.nvfp4`: NVIDIA ModelOpt's NVFP4 export (`hf_quant_config.json` `quant_algo:
//! NVFP4`, `config.json` `quant_method: modelopt`), as `NVFP4QTensor.dequantize` reads it:
//! `weight` uint8 `[N, K/2]` (two E2M1 codes per byte, the even element in the **low**
//! nibble), `weight_scale` FP8 E4M3 `[N, K/16]`, `weight_scale_2` float32 `[]` (a
//! **multiplier**, `amax / (6 · 448)`).
//!
//! `w = D(e2m1(c) · (f32(weight_scale) · weight_scale_2))`: the per-block scale is a float32
//! product, the element product is float32, rounded once to `dtype` (bfloat16). ModelOpt's
//! E2M1 table has **+0.0** at index 8 (the sign of zero differs from compressed-tensors').
//!
//! Encoding (ModelOpt's `NVFP4QTensor.quantize`, with its FP8 rounding of the block scales)
//! is not reproduced: `encode` returns an error.

use super::scaled::{check_shape, fp8_scales, low_nibble_codes, scalar, Grid, OutDtype, Strategy};
use super::{decoded, Codec, CodecEntry, CodecFamily, Encoded};
use crate::error::{Error, Result};
use crate::qdq::{SliceRanges, Slicing};
use crate::tensor::Tensor;

/// The library and version reproduced.
pub const LIBRARY: (&str, &str) = ("nvidia-modelopt", "0.47.0");

const QUIRKS: &[&str] = &[
    "weight_scale_2 multiplies (compressed-tensors' global scale divides): per-block scale = f32(fp8 scale) · weight_scale_2 (modelopt/torch/quantization/qtensor/nvfp4_tensor.py dequantize)",
    "E2M1 index 8 is +0.0 in ModelOpt's table, so a negative-zero code decodes to +0.0 (nvfp4_tensor.py e2m1_values)",
    "low nibble first: byte j holds element 2j in bits 0–3 (nvfp4_tensor.py _unpack_tensor)",
];

crate::declare_params! {
    /// ModelOpt NVFP4 weights.
    pub struct ModelOptArgs {
        /// elements per FP8 block scale (`block_sizes[-1]`, `group_size`)
        block_size: i64 = 16; int(2, 1048576), Data;
        /// dtype the dequantized values are rounded to
        dtype: OutDtype = OutDtype::Bfloat16; choice(), Data;
    }
}

/// The codec family `modelopt.nvfp4`.
pub struct ModelOptFamily;

impl CodecFamily for ModelOptFamily {
    type Args = ModelOptArgs;
    fn build(a: &ModelOptArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(ModelOptNvfp4 {
            block: a.block_size as usize,
            dtype: a.dtype,
        }))
    }
}

/// The registry entry.
pub fn entry() -> CodecEntry {
    let (library, version) = LIBRARY;
    CodecEntry::of::<ModelOptFamily>(
        "modelopt.nvfp4",
        "ModelOpt NVFP4: E2M1 pairs per byte, FP8 scale per 16, times a float32 weight_scale_2",
    )
    .reproducing(library, version, QUIRKS)
    .decode_only("ModelOpt's block-scale rounding is not reproduced yet; decoding is exact")
    .drawn(11, "ModelOpt")
}

/// A configured ModelOpt NVFP4 codec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelOptNvfp4 {
    pub block: usize,
    pub dtype: OutDtype,
}

/// ModelOpt's E2M1 value of `code`: index 8 is +0.0.
#[inline(always)]
fn e2m1_modelopt(code: u8) -> f32 {
    let v = super::scaled::e2m1(code);
    if v == 0.0 {
        0.0
    } else {
        v
    }
}

impl ModelOptNvfp4 {
    fn grid(&self, shape: &[usize]) -> Result<Grid> {
        Grid::new(Strategy::Group, shape, self.block, (1, 1))
    }

    fn multipliers(&self, e: &Encoded, grid: &Grid) -> Result<Vec<f32>> {
        grid.check(e, "weight_scale")?;
        let scales = fp8_scales(e, "weight_scale", grid.len())?;
        let s2 = scalar(e, "weight_scale_2")?;
        Ok(scales.iter().map(|&s| s * s2).collect())
    }
}

impl Codec for ModelOptNvfp4 {
    fn label(&self) -> String {
        format!("ModelOpt NVFP4 block {}", self.block)
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let Ok(grid) = self.grid(shape) else {
            return 0.0;
        };
        let m = grid.m;
        let n = m.len().max(1) as f64;
        ((m.batch * m.rows * m.cols.div_ceil(2) + grid.len()) * 8 + 32) as f64 / n
    }

    fn encode(&self, _: &Tensor) -> Result<Encoded> {
        Err(Error::input(
            "modelopt.nvfp4: encoding is not reproduced yet (ModelOpt's block-scale rounding); only decoding is exact",
        ))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let grid = self.grid(&e.shape)?;
        let m = grid.m;
        check_shape(e, "weight", &[m.batch * m.rows, m.cols.div_ceil(2)])?;
        let codes = low_nibble_codes(e, "weight", m)?;
        let mult = self.multipliers(e, &grid)?;
        let dtype = self.dtype;
        let values = grid.map(|i, g| dtype.round(e2m1_modelopt(codes[i]) * mult[g]));
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let grid = self.grid(&e.shape)?;
        let mult = self.multipliers(e, &grid)?;
        let index = grid.map(|_, g| g as f32);
        Ok(SliceRanges::new(
            Slicing::Flat(1),
            index
                .iter()
                .map(|&g| {
                    let s = 6.0 * mult[g as usize].abs() as f64;
                    Some((-s, s))
                })
                .collect::<Vec<_>>(),
        ))
    }
}
