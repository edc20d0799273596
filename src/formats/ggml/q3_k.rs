//! Q3_K (ggml-quants.c l. 1229 ref, l. 1355 imatrix): super-blocks of 256 values in 16
//! sub-blocks of 16, 110 bytes = 3.4375 bits per value.
//!
//! Layout: `hmask[32]` (the third bit of element `i` is bit `i/32` of `hmask[i % 32]`, **set**
//! for the upper half of the code range), `qs[64]` (low 2 bits, as in Q2_K), `scales[12]`
//! (sixteen 6-bit signed scales stored `+32`: low 4 bits in the nibbles of bytes 0–7 (sub-blocks
//! 0–7 low nibble, 8–15 high nibble), high 2 bits in bytes 8–11 (sub-block `j` at byte
//! `8 + j%4`, bits `2·(j/4)`)), `d` (fp16). Value: `(d·(sc − 32))·(q − 4·!hbit)`, `q` the low 2
//! bits, i.e. codes `−4…3`.
//!
//! * Reference path: [`make_q3_quants`]`(16, 4, x)` per sub-block (weights `x²`, coordinate
//!   descent); the sub-block scales to 6 bits with `iscale = −32/max_scale`, `max_scale` the
//!   signed scale of largest magnitude, clamped to `−32…31`; `d = fp16(1/iscale)`.
//! * imatrix path: `σ² = 2·Σx²/256`, weights `qw·√(σ² + x²)`, [`make_qx_quants`]`(16, 4, x, w)`
//!   per sub-block, then the 16 scales themselves by [`make_qx_quants`]`(16, 32, scales, sw)`,
//!   whose least-squares scale becomes `d`.
//! * Both requantize with the fp16 scales by division: `q = clamp(nearest_int(x/(d·sc)), −4, 3)`.

use super::fp16::{read_fp16, write_fp16};
use super::search::{make_q3_quants, make_qx_quants, nearest_int, Weights};
use super::sub_blocks::{imatrix_weights, sum, sum_squares};
use super::QK_K;

/// Bytes per super-block.
pub const BLOCK_BYTES: usize = 110;
const QS: usize = 32;
const SCALES: usize = 96;
const D: usize = 108;

/// `quantize_row_q3_K_ref` on one super-block.
pub fn quantize_block_ref(x: &[f32], out: &mut [u8]) {
    let mut codes = [0i8; QK_K];
    let mut scales = [0.0f32; 16];
    let (mut max_scale, mut amax) = (0.0f32, 0.0f32);
    for j in 0..16 {
        scales[j] = make_q3_quants(4, &x[16 * j..16 * j + 16], &mut codes[16 * j..16 * j + 16]);
        let scale = scales[j].abs();
        if scale > amax {
            amax = scale;
            max_scale = scales[j];
        }
    }
    out[SCALES..SCALES + 12].fill(0);
    if max_scale != 0.0 {
        let iscale = -32.0 / max_scale;
        let six_bit: Vec<i32> = scales
            .iter()
            .map(|&s| (nearest_int(iscale * s) as i8).clamp(-32, 31) as i32 + 32)
            .collect();
        pack_scales(&six_bit, out);
        write_fp16(out, D, 1.0 / iscale);
    } else {
        write_fp16(out, D, 0.0);
    }
    requantize_and_pack(x, &mut codes, out);
}

/// `quantize_row_q3_K_impl` on one super-block with its 256 imatrix entries.
pub fn quantize_block_imatrix(x: &[f32], qw: &[f32], out: &mut [u8]) {
    let mut codes = [0i8; QK_K];
    let mut scales = [0.0f32; 16];
    let mut sw = [0.0f32; 16];
    let sigma2 = 2.0 * sum_squares(x) / QK_K as f32;
    for j in 0..16 {
        let xs = &x[16 * j..16 * j + 16];
        let weight = imatrix_weights(xs, &qw[16 * j..16 * j + 16], sigma2);
        sw[j] = sum(&weight);
        scales[j] = make_qx_quants(
            4,
            xs,
            &mut codes[16 * j..16 * j + 16],
            Weights::Given(&weight),
        );
    }
    out[SCALES..SCALES + 12].fill(0);
    let mut ls = [0i8; 16];
    let d_block = make_qx_quants(32, &scales, &mut ls, Weights::Given(&sw));
    let six_bit: Vec<i32> = ls.iter().map(|&l| l as i32).collect();
    pack_scales(&six_bit, out);
    write_fp16(out, D, d_block);
    requantize_and_pack(x, &mut codes, out);
}

/// Store sixteen 6-bit values (`0…63`) in the 12 scale bytes.
fn pack_scales(six_bit: &[i32], out: &mut [u8]) {
    for (j, &l) in six_bit.iter().enumerate() {
        let low = (l & 0xF) as u8;
        if j < 8 {
            out[SCALES + j] = low;
        } else {
            out[SCALES + j - 8] |= low << 4;
        }
        out[SCALES + 8 + j % 4] |= ((l >> 4) << (2 * (j / 4))) as u8;
    }
}

/// The signed scale (`sc − 32`) of sub-block `j`.
fn sub_scale(b: &[u8], j: usize) -> i32 {
    let low = if j < 8 {
        b[SCALES + j] & 0xF
    } else {
        b[SCALES + j - 8] >> 4
    };
    let high = (b[SCALES + 8 + j % 4] >> (2 * (j / 4))) & 3;
    (low | (high << 4)) as i32 - 32
}

/// Requantize with the stored scales, split off the third bit into `hmask`, pack the rest.
fn requantize_and_pack(x: &[f32], codes: &mut [i8; QK_K], out: &mut [u8]) {
    let d_all = read_fp16(out, D);
    for j in 0..16 {
        let d = d_all * sub_scale(out, j) as f32;
        if d == 0.0 {
            continue;
        }
        for ii in 0..16 {
            let l = nearest_int(x[16 * j + ii] / d).clamp(-4, 3);
            codes[16 * j + ii] = (l + 4) as i8;
        }
    }
    out[..QS].fill(0);
    for (i, c) in codes.iter_mut().enumerate() {
        if *c > 3 {
            out[i % 32] |= 1 << (i / 32);
            *c -= 4;
        }
    }
    for h in 0..2 {
        for l in 0..32 {
            let at = 128 * h + l;
            let c = |k: usize| codes[at + 32 * k] as u8;
            out[QS + 32 * h + l] = c(0) | (c(1) << 2) | (c(2) << 4) | (c(3) << 6);
        }
    }
}

/// The signed code (`−4…3`) of element `i`.
fn code(b: &[u8], i: usize) -> i32 {
    let (h, rest) = (i / 128, i % 128);
    let low = ((b[QS + 32 * h + rest % 32] >> (2 * (rest / 32))) & 3) as i32;
    let high_set = b[i % 32] & (1 << (i / 32)) != 0;
    low - if high_set { 0 } else { 4 }
}

/// `dequantize_row_q3_K` on one super-block: `(d·(sc − 32))·q`.
pub fn dequantize_block(b: &[u8], y: &mut [f32]) {
    let d_all = read_fp16(b, D);
    for (i, o) in y.iter_mut().enumerate().take(QK_K) {
        let dl = d_all * sub_scale(b, i / 16) as f32;
        *o = dl * code(b, i) as f32;
    }
}

/// Per 16-value sub-block: the range of `dl·q`, `q ∈ −4…3`.
pub fn ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    let d_all = read_fp16(b, D);
    for j in 0..16 {
        let dl = d_all * sub_scale(b, j) as f32;
        let (a, z) = (dl * -4.0, dl * 3.0);
        out.push((a.min(z), a.max(z)));
    }
}

/// `(d, signed sub-scales)` decoded from the block.
pub fn decode_scales(b: &[u8]) -> (f32, Vec<i32>) {
    (read_fp16(b, D), (0..16).map(|j| sub_scale(b, j)).collect())
}
