//! Q2_K (ggml-quants.c l. 891 ref, l. 1149 imatrix): super-blocks of 256 values in 16
//! sub-blocks of 16, 84 bytes = 2.625 bits per value.
//!
//! Layout: `scales[16]` (low nibble: the sub-block scale `sc`, high nibble: its min `mn`),
//! `qs[64]` (2-bit codes, four per byte: byte `32·h + l` holds elements `128·h + l + 32·k` in bits
//! `2k`), `d`, `dmin` (fp16). Value: `(d·sc)·q − dmin·mn`, `q ∈ 0…3`.
//!
//! * Reference path: each sub-block's `(scale, min)` from
//!   [`make_qkx_quants`](super::search::make_qkx_quants) (`qkx2`,
//!   `nmax 3`, weights `|x|`, `rmin −0.5`, `rdelta 0.1`, 15 steps, **absolute** error); the 16
//!   scales and mins are quantized to 4 bits with `iscale = 15/max` and [`nearest_int`] (no
//!   clamp), `d = fp16(max_scale/15)`, `dmin = fp16(max_min/15)`.
//! * imatrix path: `σ² = Σx²/256` (no factor 2, unlike Q3_K…Q5_K), weights `qw·√(σ² + x²)`,
//!   `qkx3` with `rmin −0.9`, `rdelta 0.05`, 36 steps, squared error; scales and mins quantized
//!   by [`make_qp_quants`]`(16, 15, ·, sw)` with `sw` the per-sub-block weight sums.
//! * Both then requantize every element with the fp16-rounded scales, by **division**:
//!   `q = clamp(nearest_int((x + dmin·mn)/(d·sc)), 0, 3)`; a sub-block with `d·sc = 0` keeps the
//!   search's codes.

use super::fp16::{read_fp16, round_fp16, write_fp16};
use super::legacy::GRID_IMATRIX;
use super::search::{make_qp_quants, nearest_int, Asymmetric, Grid};
use super::sub_blocks::{fit_asymmetric, imatrix_weights, requantize_asymmetric, sum_squares};
use super::QK_K;

/// Bytes per super-block.
pub const BLOCK_BYTES: usize = 84;
const QS: usize = 16;
const D: usize = 80;
const DMIN: usize = 82;

const GRID_REF: Grid = Grid {
    rmin: -0.5,
    rdelta: 0.1,
    nstep: 15,
    use_mad: true,
};

/// `quantize_row_q2_K_ref` on one super-block.
pub fn quantize_block_ref(x: &[f32], out: &mut [u8]) {
    let mut codes = [0u8; QK_K];
    let fits = fit_asymmetric(x, 16, Asymmetric::Qkx2, 3, GRID_REF, &mut codes, |_, xs| {
        xs.iter().map(|v| v.abs()).collect()
    });
    let (max_scale, max_min) = (fits.max_scale(), fits.max_min());
    if max_scale > 0.0 {
        let iscale = 15.0 / max_scale;
        for (o, &scale) in out.iter_mut().zip(&fits.scales) {
            *o = nearest_int(iscale * scale) as u8;
        }
        write_fp16(out, D, max_scale / 15.0);
    } else {
        out[..16].fill(0);
        write_fp16(out, D, 0.0);
    }
    if max_min > 0.0 {
        let iscale = 15.0 / max_min;
        for (o, &min) in out.iter_mut().zip(&fits.mins) {
            *o |= (nearest_int(iscale * min) << 4) as u8;
        }
        write_fp16(out, DMIN, max_min / 15.0);
    } else {
        write_fp16(out, DMIN, 0.0);
    }
    requantize_and_pack(x, &mut codes, read_fp16(out, D), read_fp16(out, DMIN), out);
}

/// `quantize_row_q2_K_impl` on one super-block with its 256 imatrix entries.
pub fn quantize_block_imatrix(x: &[f32], qw: &[f32], out: &mut [u8]) {
    let mut codes = [0u8; QK_K];
    let sigma2 = sum_squares(x) / QK_K as f32;
    let fits = fit_asymmetric(
        x,
        16,
        Asymmetric::Qkx3,
        3,
        GRID_IMATRIX,
        &mut codes,
        |j, xs| imatrix_weights(xs, &qw[16 * j..16 * j + 16], sigma2),
    );
    let mut ls = [0u8; 16];
    let mut lm = [0u8; 16];
    let dm = make_qp_quants(15, &fits.scales, &mut ls, &fits.weight_sums);
    let mm = make_qp_quants(15, &fits.mins, &mut lm, &fits.weight_sums);
    write_fp16(out, D, dm);
    write_fp16(out, DMIN, mm);
    for j in 0..16 {
        out[j] = ls[j] | (lm[j] << 4);
    }
    requantize_and_pack(x, &mut codes, round_fp16(dm), round_fp16(mm), out);
}

/// Requantize with the stored scales and pack the 2-bit codes.
fn requantize_and_pack(x: &[f32], codes: &mut [u8; QK_K], d_all: f32, dmin: f32, out: &mut [u8]) {
    requantize_asymmetric(x, 16, 3, codes, |j| {
        (d_all * (out[j] & 0xF) as f32, dmin * (out[j] >> 4) as f32)
    });
    for h in 0..2 {
        for l in 0..32 {
            let at = 128 * h + l;
            out[QS + 32 * h + l] =
                codes[at] | (codes[at + 32] << 2) | (codes[at + 64] << 4) | (codes[at + 96] << 6);
        }
    }
}

/// The code of element `i` (`0…255`).
fn code(b: &[u8], i: usize) -> u8 {
    let (h, rest) = (i / 128, i % 128);
    (b[QS + 32 * h + rest % 32] >> (2 * (rest / 32))) & 3
}

/// `(d·sc, dmin·mn)` of sub-block `j`.
fn sub_block(b: &[u8], j: usize) -> (f32, f32) {
    let (d, dmin) = (read_fp16(b, D), read_fp16(b, DMIN));
    (d * (b[j] & 0xF) as f32, dmin * (b[j] >> 4) as f32)
}

/// `dequantize_row_q2_K` on one super-block: `dl·q − ml`.
pub fn dequantize_block(b: &[u8], y: &mut [f32]) {
    for (i, o) in y.iter_mut().enumerate().take(QK_K) {
        let (dl, ml) = sub_block(b, i / 16);
        *o = dl * code(b, i) as f32 - ml;
    }
}

/// Per 16-value sub-block: the representable range `[−dmin·mn, 3·d·sc − dmin·mn]`.
pub fn ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    for j in 0..16 {
        let (dl, ml) = sub_block(b, j);
        let (a, z) = (dl * 0.0 - ml, dl * 3.0 - ml);
        out.push((a.min(z), a.max(z)));
    }
}

/// `(d, dmin, sub-scales, sub-mins)` as integers decoded from the block.
pub fn decode_scales(b: &[u8]) -> (f32, f32, Vec<i32>, Vec<i32>) {
    (
        read_fp16(b, D),
        read_fp16(b, DMIN),
        (0..16).map(|j| (b[j] & 0xF) as i32).collect(),
        (0..16).map(|j| (b[j] >> 4) as i32).collect(),
    )
}
