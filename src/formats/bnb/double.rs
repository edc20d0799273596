//! Double quantization of the per-block absmax (`compress_statistics=True` of `quantize_4bit`,
//! functional.py l. 938; `nested=True` of `quantize_blockwise`, l. 664).
//!
//! `offset = mean(absmax)` (torch's float32 mean, see [`super::torch_sum`]), then the shifted
//! statistics `absmax − offset` (float32) go through the 8-bit dynamic blockwise quantizer
//! ([`super::blockwise8`]) with blocks of 256 for 4-bit — whatever the outer block size — and of
//! the outer block size for `nested` 8-bit. The dequantizer rebuilds
//! `absmax = code[q]·absmax₂ + offset` (two float32 roundings) and uses that.

use super::blockwise8::{self, dynamic_code};
use super::torch_sum::torch_mean_f32;

/// The quantized statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct DoubleQuant {
    /// The float32 mean subtracted.
    pub offset: f32,
    /// 8-bit codes of `absmax − offset`.
    pub codes: Vec<u8>,
    /// Their block absmax.
    pub absmax2: Vec<f32>,
    /// Blocks of the nested quantizer.
    pub blocksize: usize,
    /// `code[q]·absmax₂ + offset`: the absmax the dequantizer uses.
    pub absmax_dequantized: Vec<f32>,
}

impl DoubleQuant {
    /// The nested block size of 4-bit double quantization.
    pub const BLOCKSIZE_4BIT: usize = 256;

    /// Quantize `absmax` with blocks of `blocksize`.
    pub fn of(absmax: &[f32], blocksize: usize) -> Self {
        let offset = torch_mean_f32(absmax);
        let shifted: Vec<f32> = absmax.iter().map(|&a| a - offset).collect();
        let (codes, absmax2) = blockwise8::quantize(&shifted, blocksize, dynamic_code());
        Self::from_stored(offset, codes, absmax2, blocksize)
    }

    /// The statistics as stored: the 8-bit `codes` of `absmax − offset` in blocks of
    /// `blocksize`, with those blocks' `absmax2`; the absmax the dequantizer uses is rebuilt.
    pub fn from_stored(offset: f32, codes: Vec<u8>, absmax2: Vec<f32>, blocksize: usize) -> Self {
        Self::from_stored_with(offset, codes, absmax2, blocksize, &dynamic_code().code)
    }

    /// [`DoubleQuant::from_stored`] with the code book `code` (a stored `nested_quant_map`).
    pub fn from_stored_with(
        offset: f32,
        codes: Vec<u8>,
        absmax2: Vec<f32>,
        blocksize: usize,
        code: &[f32; 256],
    ) -> Self {
        let absmax_dequantized = blockwise8::dequantize(&codes, &absmax2, blocksize, code)
            .into_iter()
            .map(|a| a + offset)
            .collect();
        DoubleQuant {
            offset,
            codes,
            absmax2,
            blocksize,
            absmax_dequantized,
        }
    }

    /// Bits stored for `count` statistics quantized in blocks of `blocksize`: an 8-bit code
    /// each, a float32 absmax per block and the float32 offset.
    pub fn bits(count: usize, blocksize: usize) -> f64 {
        (8 * count + 32 * count.div_ceil(blocksize) + 32) as f64
    }
}
