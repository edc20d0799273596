//! ggml's binary and ternary types, quantized and dequantized bit for bit (ggml-quants.c @
//! d99724f2): Q1_0 (one sign bit per value), TQ1_0 and TQ2_0 (the ternary types of BitNet-style
//! models, values `{−d, 0, d}`).
//!
//! | type | block | bytes | layout | value |
//! |---|---|---|---|---|
//! | Q1_0 | 128 | 18 (1.125 bits) | `d` fp16 @0, 128 sign bits @2 (bit `j % 8` of byte `j / 8`) | `bit ? d : −d` |
//! | TQ1_0 | 256 | 54 (1.6875 bits) | `qs[48]` @0: five trits per byte; `qh[4]` @48: four trits per byte; `d` fp16 @52 | `(t − 1)·d`, `t ∈ {0, 1, 2}` |
//! | TQ2_0 | 256 | 66 (2.0625 bits) | `qs[64]` @0: four 2-bit codes per byte; `d` fp16 @64 | `(q − 1)·d`, `q ∈ {0 … 3}` |
//!
//! **Q1_0** (`quantize_row_q1_0_ref`, l. 40): `d = (Σ|x|)/128` (the mean magnitude, summed in
//! order in float32) stored as fp16; bit set when `x ≥ 0` (so `−0.0` and `+0.0` both give `+d`).
//! `quantize_q1_0` ignores the imatrix.
//!
//! **TQ1_0 / TQ2_0** (`quantize_row_tq1_0_ref`, `quantize_row_tq2_0_ref`): `d = amax` of the
//! super-block, `id = 1/d` (0 when `d = 0`), trit `t = lroundf(x·id) + 1` — round half away from
//! zero, so `|x| ≥ d/2` maps to `±d`. Both ignore the imatrix.
//! * TQ1_0 packs five trits `t₀…t₄` of elements `m, m + 32, …, m + 128` (first 32 bytes; then
//!   `m, m + 16, …` over the next 80 values for 16 bytes) as `q = ((((t₀·3 + t₁)·3 + t₂)·3 + t₃)·3 + t₄)`,
//!   stored as `⌈q·256/243⌉`, a fixed-point fraction of `3⁵`; `qh` packs the last 16 values four
//!   per byte the same way with a fifth trit 0. Decoding multiplies the byte by `3ⁿ` (mod 256) and
//!   takes `(q·3) >> 8` as the `n`-th trit.
//! * TQ2_0 stores `t` in bits `2n` of byte `m` for element `m + 32n` of each 128.
//!
//! `lroundf` of a non-finite product (a super-block whose `amax` is so small that `1/d` is
//! `+∞`) is, on x86-64 glibc, `LONG_MIN`, whose low 32 bits make `t = 1`: such a block stores
//! zeros. quantscope reproduces that.

use super::fp16::{read_fp16, write_fp16};
use super::QK_K;

/// Q1_0 values per block (`QK1_0`).
pub const QK1_0: usize = 128;
/// Q1_0 block bytes.
pub const Q1_0_BYTES: usize = 18;
/// TQ1_0 super-block bytes.
pub const TQ1_0_BYTES: usize = 54;
/// TQ2_0 super-block bytes.
pub const TQ2_0_BYTES: usize = 66;

/// Offset of TQ1_0's `d`.
const TQ1_D: usize = 52;
/// Offset of TQ1_0's `qh`.
const TQ1_QH: usize = 48;
/// Offset of TQ2_0's `d`.
const TQ2_D: usize = 64;

/// `3ⁿ` as TQ1_0's decoder keeps them (`uint8_t pow3[6]`).
const POW3: [u8; 6] = [1, 3, 9, 27, 81, 243];

/// `(int)lroundf(v)` on x86-64 glibc: half away from zero; `LONG_MIN` (low 32 bits 0) for
/// NaN, ±∞ and values beyond `long`.
fn lroundf_int(v: f32) -> i32 {
    if v.is_finite() && v.abs() < 9.223_372e18 {
        v.round() as i64 as i32
    } else {
        i64::MIN as i32
    }
}

/// `quantize_row_q1_0_ref` on one block of 128.
pub fn quantize_q1_0_block(x: &[f32], out: &mut [u8]) {
    let mut sum_abs = 0.0f32;
    for &v in x {
        sum_abs += v.abs();
    }
    let d = sum_abs / QK1_0 as f32;
    write_fp16(out, 0, d);
    for (byte, x8) in out[2..Q1_0_BYTES].iter_mut().zip(x.chunks(8)) {
        *byte = x8
            .iter()
            .enumerate()
            .fold(0u8, |acc, (k, &v)| acc | (u8::from(v >= 0.0) << k));
    }
}

/// `dequantize_row_q1_0` on one block: `bit ? d : −d`.
pub fn dequantize_q1_0_block(b: &[u8], y: &mut [f32]) {
    let d = read_fp16(b, 0);
    let neg_d = -d;
    for (j, o) in y.iter_mut().enumerate().take(QK1_0) {
        let bit = (b.get(2 + j / 8).copied().unwrap_or(0) >> (j % 8)) & 1;
        *o = if bit != 0 { d } else { neg_d };
    }
}

/// `±d`, ordered.
fn symmetric(d: f32) -> (f32, f32) {
    let (a, z) = (-d, d);
    (a.min(z), a.max(z))
}

/// The range of a Q1_0 block, `±d`.
pub fn q1_0_range(b: &[u8]) -> (f32, f32) {
    symmetric(read_fp16(b, 0))
}

/// `amax`, `d = amax` stored as fp16 at `d_at`, and `id = 1/d` (0 for `d = 0`) of a
/// ternary super-block.
fn ternary_scale(x: &[f32], out: &mut [u8], d_at: usize) -> f32 {
    let mut amax = 0.0f32;
    for &v in x {
        // MAX(amax, fabsf(v))
        amax = if amax > v.abs() { amax } else { v.abs() };
    }
    let d = amax;
    write_fp16(out, d_at, d);
    if d != 0.0 {
        1.0 / d
    } else {
        0.0
    }
}

/// The trit `lroundf(v·id) + 1` (0, 1, 2 for −1, 0, 1).
fn trit(v: f32, id: f32) -> u8 {
    lroundf_int(v * id).wrapping_add(1) as u8
}

/// `q` as ⌈q·256/243⌉ in a byte (C: `((uint16_t)q * 256 + 242) / 243` into a `uint8_t`).
fn trits_fraction(q: u8) -> u8 {
    (q as u32 * 256).div_ceil(243) as u8
}

/// `quantize_row_tq1_0_ref` on one super-block of 256.
pub fn quantize_tq1_0_block(x: &[f32], out: &mut [u8]) {
    let id = ternary_scale(x, out, TQ1_D);
    // Bytes 0..32: elements m + 32n of the first 160; bytes 32..48: m + 16n of the next 80.
    for (base, start, width) in [(0usize, 0usize, 32usize), (32, 160, 16)] {
        for m in 0..width {
            let q = (0..5).fold(0u8, |q, n| {
                q.wrapping_mul(3)
                    .wrapping_add(trit(x[start + m + n * width], id))
            });
            out[base + m] = trits_fraction(q);
        }
    }
    // qh: elements 240 + j + 4m, four trits and a fifth 0.
    for j in 0..4 {
        let q = (0..4).fold(0u8, |q, m| {
            q.wrapping_mul(3).wrapping_add(trit(x[240 + j + 4 * m], id))
        });
        out[TQ1_QH + j] = trits_fraction(q.wrapping_mul(3));
    }
}

/// The `n`-th trit of a TQ1_0 byte: `((q·3ⁿ mod 256)·3) >> 8`.
fn nth_trit(q: u8, n: usize) -> i32 {
    let q = q.wrapping_mul(POW3[n]);
    ((q as u16 * 3) >> 8) as i32
}

/// `dequantize_row_tq1_0` on one super-block: `(t − 1)·d` in the packing order.
pub fn dequantize_tq1_0_block(b: &[u8], y: &mut [f32]) {
    let d = read_fp16(b, TQ1_D);
    let byte = |at: usize| b.get(at).copied().unwrap_or(0);
    let mut out = y.iter_mut();
    let mut put = |q: u8, n: usize| {
        if let Some(o) = out.next() {
            *o = (nth_trit(q, n) - 1) as f32 * d;
        }
    };
    for (base, width) in [(0usize, 32usize), (32, 16)] {
        for n in 0..5 {
            for m in 0..width {
                put(byte(base + m), n);
            }
        }
    }
    for n in 0..4 {
        for j in 0..4 {
            put(byte(TQ1_QH + j), n);
        }
    }
}

/// The range of a TQ1_0 super-block, `±d`.
pub fn tq1_0_range(b: &[u8]) -> (f32, f32) {
    symmetric(read_fp16(b, TQ1_D))
}

/// `quantize_row_tq2_0_ref` on one super-block of 256.
pub fn quantize_tq2_0_block(x: &[f32], out: &mut [u8]) {
    let id = ternary_scale(x, out, TQ2_D);
    for (j, x128) in x.chunks(128).enumerate() {
        for m in 0..32 {
            out[32 * j + m] = (0..4).fold(0u8, |q, n| {
                q.wrapping_add((trit(x128[m + 32 * n], id) & 3) << (2 * n))
            });
        }
    }
}

/// `dequantize_row_tq2_0` on one super-block: `(q − 1)·d`.
pub fn dequantize_tq2_0_block(b: &[u8], y: &mut [f32]) {
    let d = read_fp16(b, TQ2_D);
    for (j, y128) in y.chunks_mut(128).enumerate().take(QK_K / 128) {
        for (l, y32) in y128.chunks_mut(32).enumerate() {
            for (m, o) in y32.iter_mut().enumerate() {
                let q = (b.get(32 * j + m).copied().unwrap_or(0) >> (2 * l)) & 3;
                *o = (q as i32 - 1) as f32 * d;
            }
        }
    }
}

/// The range of a TQ2_0 super-block: codes 0…3 give `−d … 2d` (the quantizer writes 0…2, the
/// decoder reads 3 as `2d`).
pub fn tq2_0_range(b: &[u8]) -> (f32, f32) {
    let d = read_fp16(b, TQ2_D);
    let (a, z) = (-d, 2.0 * d);
    (a.min(z), a.max(z))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tq1_0_packs_five_trits_per_byte_and_reads_them_back() {
        // A ternary ramp with amax 1 decodes exactly.
        let x: Vec<f32> = (0..256).map(|i| ((i * 7 % 3) as f32) - 1.0).collect();
        let mut b = [0u8; TQ1_0_BYTES];
        quantize_tq1_0_block(&x, &mut b);
        let mut y = [0.0f32; 256];
        dequantize_tq1_0_block(&b, &mut y);
        assert_eq!(y.to_vec(), x);
        assert_eq!(tq1_0_range(&b), (-1.0, 1.0));
    }

    #[test]
    fn tq2_0_round_half_away_from_zero() {
        // amax 2 → id 0.5: 1.0 → lroundf(0.5) = 1 → +d; −1.0 → −d; 0.98 → 0.
        let mut x = [0.0f32; 256];
        x[0] = 2.0;
        x[1] = 1.0;
        x[2] = -1.0;
        x[3] = 0.98;
        let mut b = [0u8; TQ2_0_BYTES];
        quantize_tq2_0_block(&x, &mut b);
        let mut y = [0.0f32; 256];
        dequantize_tq2_0_block(&b, &mut y);
        assert_eq!(&y[..4], &[2.0, 2.0, -2.0, 0.0]);
        assert_eq!(tq2_0_range(&b), (-2.0, 4.0));
    }

    #[test]
    fn q1_0_keeps_signs_and_the_mean_magnitude() {
        let x: Vec<f32> = (0..128)
            .map(|i| if i % 3 == 0 { -0.5 } else { 0.25 })
            .collect();
        let mut b = [0u8; Q1_0_BYTES];
        quantize_q1_0_block(&x, &mut b);
        let d = read_fp16(&b, 0);
        let mut y = [0.0f32; 128];
        dequantize_q1_0_block(&b, &mut y);
        assert_eq!(y[0], -d);
        assert_eq!(y[1], d);
        // −0.0 counts as non-negative.
        let mut z = [0.0f32; 128];
        z[5] = -0.0;
        quantize_q1_0_block(&z, &mut b);
        assert_eq!(b[2], 0xff);
    }

    #[test]
    fn lroundf_of_non_finite_is_long_min() {
        assert_eq!(lroundf_int(f32::INFINITY).wrapping_add(1), 1);
        assert_eq!(lroundf_int(f32::NAN).wrapping_add(1), 1);
        assert_eq!(lroundf_int(-0.5), -1);
        assert_eq!(lroundf_int(0.5), 1);
        assert_eq!(lroundf_int(0.49999997), 0);
    }
}
