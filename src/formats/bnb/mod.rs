//! bitsandbytes 0.50.2 quantization on CPU, bit for bit: NF4 and FP4 with a per-block absmax
//! ([`four_bit`]), optionally with double-quantized statistics ([`double`]), and the 8-bit
//! dynamic blockwise format ([`blockwise8`]).
//!
//! Everything works on the **flattened** tensor: blocks run over the flat values, ignoring
//! rows. All arithmetic is float32; the code books are in [`codes`]. What runs on CPU is not
//! what runs on CUDA: 4-bit quantization is the pure-torch default kernel (bucketize against
//! midpoints), 8-bit quantization a 65536-entry lookup table — both differ from the CUDA
//! kernels near decision boundaries (see the module docs).

pub mod blockwise8;
pub mod codes;
pub mod double;
pub mod four_bit;
pub mod torch_sum;

use crate::error::{Error, Result};
use double::DoubleQuant;
pub use four_bit::{FourBit, QuantType};

/// Refuse empty or non-finite input.
fn validate(what: &str, x: &[f32]) -> Result<()> {
    if x.is_empty() {
        return Err(Error::input(format!(
            "bitsandbytes {what} cannot quantize an empty tensor"
        )));
    }
    let bad = x.iter().filter(|v| !v.is_finite()).count();
    if bad > 0 {
        return Err(Error::input(format!(
            "bitsandbytes {what}: the tensor has {bad} NaN/±Inf values; its absmax scaling needs finite input"
        )));
    }
    Ok(())
}

/// `quantize_4bit(x, blocksize, compress_statistics, quant_type)`.
pub fn quantize_4bit(
    x: &[f32],
    quant_type: QuantType,
    blocksize: usize,
    compress_statistics: bool,
) -> Result<FourBit> {
    validate(quant_type.name(), x)?;
    if !four_bit::BLOCKSIZES.contains(&blocksize) {
        return Err(Error::param(
            "blocksize",
            format!(
                "quantize_4bit accepts 32, 64, 128, 256, 512, 1024, 2048 or 4096 (bitsandbytes raises ValueError: invalid blocksize {blocksize})"
            ),
        ));
    }
    Ok(four_bit::quantize(
        x,
        quant_type,
        blocksize,
        compress_statistics,
    ))
}

/// A tensor quantized by `quantize_blockwise` (8-bit dynamic map).
#[derive(Debug, Clone, PartialEq)]
pub struct Blockwise8 {
    pub blocksize: usize,
    /// One code per element.
    pub codes: Vec<u8>,
    /// The absmax of each block as computed (before any nested quantization).
    pub absmax: Vec<f32>,
    /// The nested quantization of `absmax`, with `nested`.
    pub double: Option<DoubleQuant>,
}

/// `quantize_blockwise(x, blocksize=blocksize, nested=nested)` with the default dynamic map.
pub fn quantize_blockwise(x: &[f32], blocksize: usize, nested: bool) -> Result<Blockwise8> {
    validate("blockwise8", x)?;
    if blocksize == 0 {
        return Err(Error::param(
            "blocksize",
            "must be positive (bitsandbytes raises ValueError: blocksize must be positive, got 0)",
        ));
    }
    let (codes, absmax) = blockwise8::quantize(x, blocksize, blockwise8::dynamic_code());
    let double = nested.then(|| DoubleQuant::of(&absmax, blocksize));
    Ok(Blockwise8 {
        blocksize,
        codes,
        absmax,
        double,
    })
}

impl Blockwise8 {
    /// The absmax the dequantizer uses.
    pub fn absmax_used(&self) -> &[f32] {
        match &self.double {
            Some(d) => &d.absmax_dequantized,
            None => &self.absmax,
        }
    }

    /// `dequantize_blockwise`: `code[q]·absmax`.
    pub fn dequantize(&self) -> Vec<f32> {
        let code = &blockwise8::dynamic_code().code;
        blockwise8::dequantize(&self.codes, self.absmax_used(), self.blocksize, code)
    }

    /// Per block: `[code[0]·absmax, code[255]·absmax]` — the map's smallest value is −0.99297,
    /// so a block's most negative value can lie outside.
    pub fn ranges(&self) -> Vec<(f32, f32)> {
        let code = &blockwise8::dynamic_code().code;
        self.absmax_used()
            .iter()
            .map(|&a| {
                let (lo, hi) = (code[0] * a, code[255] * a);
                (lo.min(hi), lo.max(hi))
            })
            .collect()
    }

    /// Storage per value: 8-bit codes plus a float32 absmax per block, or with `nested` the
    /// absmax double-quantized in blocks of `blocksize`.
    pub fn bits_per_value(numel: usize, blocksize: usize, nested: bool) -> f64 {
        let n = numel.max(1) as f64;
        let blocks = numel.div_ceil(blocksize.max(1));
        let statistics = if nested {
            DoubleQuant::bits(blocks, blocksize.max(1))
        } else {
            32.0 * blocks as f64
        };
        8.0 + statistics / n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_bad_input_and_block_sizes() {
        assert!(quantize_4bit(&[], QuantType::Nf4, 64, false).is_err());
        assert!(quantize_4bit(&[1.0, f32::NAN], QuantType::Nf4, 64, false).is_err());
        let e = quantize_4bit(&[1.0; 100], QuantType::Fp4, 100, false).unwrap_err();
        assert!(e.to_string().contains("invalid blocksize 100"), "{e}");
        assert!(quantize_blockwise(&[1.0; 10], 0, false).is_err());
        assert!(quantize_blockwise(&[f32::INFINITY], 64, false).is_err());
    }

    #[test]
    fn blockwise8_bits_per_value() {
        assert_eq!(Blockwise8::bits_per_value(4096, 4096, false), 8.0078125);
        assert_eq!(Blockwise8::bits_per_value(4096, 64, false), 8.5);
    }
}
