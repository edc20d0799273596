//! ONNX Runtime's `MatMulNBitsQuantizer` (default weight-only config, QOperator format): the
//! weight `W [K, N]` is padded with zeros to whole blocks along K and handed to MLAS'
//! `BlockwiseQuantizer::quantizeAndTranspose` (`onnxruntime/core/mlas/lib/q4_dq.cpp`, through
//! `quantize_matmul_{2,4,8}bits`), column by column, one block of `block_size` rows at a time.
//! Everything is float32; `roundf` rounds ties away from zero.
//!
//! * Range: `min`, `max` of the block (the padding zeros included).
//! * Asymmetric (`range2scalezp`, `zero_points` stored): `min = min(min, 0)`,
//!   `max = max(max, 0)`, `s = (max − min) / (2^bits − 1)`; `zp = roundf(−min / s)` clamped to
//!   `0 … 2^bits − 1` (`zp = 0` when `s = 0`).
//! * Symmetric (`range2scale`, no zero points stored): `m` is whichever of `max`, `min` has the
//!   larger magnitude (`min` on a tie), `s = −m / 2^(bits−1)` — negative when the block's
//!   largest magnitude is positive, so that it lands on code 0 — and `zp = 2^(bits−1)`.
//! * Codes: `q = clamp(roundf(x · (1/s) + zp), 0, 2^bits − 1)` (`1/s` is 0 when `s = 0`).
//! * Packing: codes from the low bits up, `block_size·bits/8` bytes per block; zero points
//!   likewise, `ceil(blocks·bits/8)` bytes per column, an unused high field holding
//!   `2^(bits−1)`.

use super::MatMulNBits;
use crate::codec::{Encoded, Stored};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Where the rule is written.
pub const SOURCE: &str = "onnxruntime/quantization/matmul_nbits_quantizer.py qbits_block_quant, \
     onnxruntime/core/mlas/lib/q4_dq.cpp BlockwiseQuantizer::quantizeAndTranspose, range2scalezp, range2scale \
     (ONNX Runtime 1.31.1)";

/// `(scale, zero point)` of a block whose values span `[lo, hi]`.
pub fn block_qparams(lo: f32, hi: f32, bits: u32, symmetric: bool) -> (f32, u8) {
    let max_code = ((1u32 << bits) - 1) as f32;
    let mid = 1u8 << (bits - 1);
    if symmetric {
        let m = if hi.abs() > lo.abs() { hi } else { lo };
        return (-m / f32::from(mid), mid);
    }
    let (lo, hi) = (lo.min(0.0), hi.max(0.0));
    let scale = (hi - lo) / max_code;
    let zp = if scale != 0.0 { 0.0 - lo / scale } else { lo };
    let zp = if zp < 0.0 {
        0
    } else if zp > max_code {
        max_code as u8
    } else {
        zp.round() as u8
    };
    (scale, zp)
}

/// One code: `clamp(roundf(x · (1/s) + zp), 0, 2^bits − 1)`.
#[inline]
pub fn block_code(x: f32, scale: f32, zp: u8, bits: u32) -> u8 {
    let reciprocal = if scale != 0.0 { 1.0 / scale } else { 0.0 };
    let max_code = ((1u32 << bits) - 1) as f32;
    (x * reciprocal + f32::from(zp))
        .round()
        .clamp(0.0, max_code) as u8
}

/// Store `value` (`bits` wide) as field `j` of `row`, packed from the low bits up.
fn put(row: &mut [u8], j: usize, bits: usize, value: u8) {
    let bit = j * bits;
    row[bit / 8] |= value << (bit % 8);
}

impl MatMulNBits {
    /// `MatMulNBitsQuantizer`'s encoding of `t` (`[K, N]`).
    pub(super) fn quantize(&self, t: &Tensor) -> Result<Encoded> {
        if !matches!(self.bits, 2 | 4 | 8) {
            return Err(Error::param(
                "bits",
                format!(
                    "ONNX Runtime's MatMulNBits quantizer writes 2, 4 or 8 bits, not {}",
                    self.bits
                ),
            ));
        }
        if let Some(bad) = t.data.iter().find(|v| !v.is_finite()) {
            return Err(Error::input(format!(
                "ONNX Runtime's quantizer needs finite values, the tensor holds {bad}"
            )));
        }
        let (k, n, blocks, blob, zp_row) = self.dims(&t.shape)?;
        if k * n == 0 {
            return Err(Error::input(
                "ONNX Runtime's quantizer needs a non-empty tensor",
            ));
        }
        let bits = self.bits as usize;
        let mid = 1u8 << (bits - 1);
        let mut b = vec![0u8; n * blocks * blob];
        let mut scales = vec![0f32; n * blocks];
        // Unused fields of the last zero-point byte hold the middle code, as MLAS leaves them.
        let mut zero_points = vec![0u8; n * zp_row];
        for col in 0..n {
            let zp_bytes = &mut zero_points[col * zp_row..(col + 1) * zp_row];
            for j in blocks..zp_row * 8 / bits {
                put(zp_bytes, j, bits, mid);
            }
            for blk in 0..blocks {
                let rows = blk * self.block_size..((blk + 1) * self.block_size).min(k);
                let padded = (blk + 1) * self.block_size > k;
                let (mut lo, mut hi) = if padded {
                    (0.0, 0.0)
                } else {
                    (f32::MAX, -f32::MAX)
                };
                for r in rows.clone() {
                    let v = t.data[r * n + col];
                    if v < lo {
                        lo = v;
                    }
                    if v > hi {
                        hi = v;
                    }
                }
                let (scale, zp) = block_qparams(lo, hi, self.bits, self.symmetric);
                scales[col * blocks + blk] = scale;
                put(zp_bytes, blk, bits, zp);
                let codes = &mut b[(col * blocks + blk) * blob..(col * blocks + blk + 1) * blob];
                for j in 0..self.block_size {
                    let x = if j < rows.len() {
                        t.data[(rows.start + j) * n + col]
                    } else {
                        0.0
                    };
                    put(codes, j, bits, block_code(x, scale, zp, self.bits));
                }
            }
        }
        let mut e = Encoded::new(&t.shape)
            .with("B", vec![n, blocks, blob], Stored::U8(b))
            .with("scales", vec![n, blocks], Stored::F32(scales));
        if !self.symmetric {
            e = e.with("zero_points", vec![n, zp_row], Stored::U8(zero_points));
        }
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symmetric_scale_is_negative_when_the_largest_magnitude_is_positive() {
        // range2scale maps the larger half of the range onto [−8, 0]: code 0 is the largest |x|.
        let (s, zp) = block_qparams(-1.0, 2.0, 4, true);
        assert_eq!((s, zp), (-0.25, 8));
        assert_eq!(block_code(2.0, s, zp, 4), 0);
        assert_eq!(block_code(-1.0, s, zp, 4), 12);
    }
}
