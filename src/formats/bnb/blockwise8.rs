//! bitsandbytes' 8-bit dynamic blockwise quantization on CPU (`quantize_blockwise` →
//! `cquantize_blockwise_cpu_fp32` → `quantize_cpu_impl`, csrc/cpu_ops.cpp @ 95f9af309d4d;
//! `dequantize_blockwise` → `dequantizeBlockwise8bitCpu`).
//!
//! The flattened tensor is cut into blocks of `blocksize` (the last one may be shorter). Per
//! block: `absmax = max|x|`; an all-zero block gets code 0 everywhere — the **most negative**
//! code, so it dequantizes to `−0.99297·0 = −0.0`. Otherwise `v = clamp(x·(1/absmax), −1, 1)`
//! (a float32 reciprocal, then a multiply) and the code is read from a 65536-entry table
//! instead of searching the code book:
//! `i = trunc(fma((v + 1)·0.5, 65535, 0.5))`, `code = lut[i]` with
//! `lut[i] = #{k : (c[k] + c[k+1])·0.5 < (2i)/65535 − 1}` (float32). The table's resolution
//! (2/65535) is coarser than the dynamic map near 0: an exact zero lands on index 32768, whose
//! value `1.5e-5` is above the midpoint `1.06e-5`, so **zeros do not stay zero** — they come
//! back as `2.125e-5·absmax` (code 131). Dequantization is `code[q]·absmax` in float32.

use super::codes::dynamic_map;
use std::sync::OnceLock;

/// Entries of the lookup table.
const LUT_SIZE: usize = 65536;

/// The default 8-bit code book and its lookup table, built once.
pub struct DynamicCode {
    pub code: [f32; 256],
    lut: Vec<u8>,
}

impl DynamicCode {
    /// `build_quantize_lut(code)`.
    fn new(code: [f32; 256]) -> Self {
        let mids: Vec<f32> = code.windows(2).map(|w| (w[0] + w[1]) * 0.5).collect();
        let lut = (0..LUT_SIZE)
            .map(|i| {
                let val = (2.0f32 * i as f32) / 65535.0 - 1.0;
                mids.partition_point(|&m| m < val) as u8
            })
            .collect();
        DynamicCode { code, lut }
    }

    /// The code of a scaled value `v ∈ [−1, 1]`.
    #[inline]
    fn lookup(&self, v: f32) -> u8 {
        let t = (v + 1.0) * 0.5;
        // One rounding, as the shipped binary's fused multiply-add: t·65535 + 0.5 is exact in
        // float64 (24 + 16 significant bits), so rounding that to float32 is the FMA's result.
        let y = (t as f64 * 65535.0 + 0.5) as f32;
        self.lut[(y as u32 & 0xFFFF) as usize]
    }
}

/// The default dynamic code book with its table.
pub fn dynamic_code() -> &'static DynamicCode {
    static CODE: OnceLock<DynamicCode> = OnceLock::new();
    CODE.get_or_init(|| DynamicCode::new(dynamic_map()))
}

/// `quantize_cpu_impl`: one code per element and one absmax per block.
pub fn quantize(x: &[f32], blocksize: usize, code: &DynamicCode) -> (Vec<u8>, Vec<f32>) {
    let mut codes = Vec::with_capacity(x.len());
    let mut absmax = Vec::with_capacity(x.len().div_ceil(blocksize));
    for block in x.chunks(blocksize) {
        let mut a = 0.0f32;
        for &v in block {
            a = a.max(v.abs());
        }
        absmax.push(a);
        if a == 0.0 {
            codes.extend(std::iter::repeat_n(0u8, block.len()));
            continue;
        }
        let inv = 1.0 / a;
        codes.extend(
            block
                .iter()
                .map(|&v| code.lookup((v * inv).clamp(-1.0, 1.0))),
        );
    }
    (codes, absmax)
}

/// `dequantizeBlockwise8bitCpu`: `code[q]·absmax`.
pub fn dequantize(codes: &[u8], absmax: &[f32], blocksize: usize, code: &[f32; 256]) -> Vec<f32> {
    codes
        .chunks(blocksize)
        .zip(absmax)
        .flat_map(|(block, &a)| block.iter().map(move |&q| code[q as usize] * a))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_come_back_as_code_131_and_zero_blocks_as_code_0() {
        let c = dynamic_code();
        let x = [0.0f32, 1.0, -1.0, 0.5, 0.0, 0.0, 0.0, 0.0];
        let (q, absmax) = quantize(&x, 4, c);
        assert_eq!(absmax, vec![1.0, 0.0]);
        assert_eq!(q[0], 131);
        assert_eq!(q[1], 255);
        assert_eq!(&q[4..], &[0, 0, 0, 0]);
        let y = dequantize(&q, &absmax, 4, &c.code);
        assert!(y[0] > 2e-5 && y[0] < 2.2e-5, "{}", y[0]);
        assert_eq!(y[1], 1.0);
        assert!(y[4] == 0.0 && y[4].is_sign_negative());
        // −1 (= −absmax) cannot be represented: the smallest code is −0.99297.
        assert!((y[2] + 0.99297).abs() < 1e-5);
    }
}
