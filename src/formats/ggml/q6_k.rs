//! Q6_K (ggml-quants.c l. 1869 ref, l. 1970 imatrix): super-blocks of 256 values in 16
//! sub-blocks of 16 with an int8 scale each, 210 bytes = 6.5625 bits per value.
//!
//! Layout: `ql[128]` (low 4 bits), `qh[64]` (high 2 bits), `scales[16]` (int8), `d` (fp16).
//! Element `128·h + 32·k + l` (`k = 0…3`, `l = 0…31`) has its low bits in the low (`k < 2`) or
//! high nibble of `ql[64·h + 32·(k % 2) + l]` and its high bits in bits `2k` of `qh[32·h + l]`.
//! Value: `(d·sc)·(q − 32)`, `q ∈ 0…63`.
//!
//! * Reference path: [`make_qx_quants`](super::search::make_qx_quants)`(16, 32, x)` per sub-block (weights `x²`); a super-block
//!   whose largest `|scale|` is below `GROUP_MAX_EPS` = 1e-15 is all zero. Otherwise
//!   `iscale = −128/max_scale` (`max_scale` signed), sub-scales `min(127, nearest_int(iscale·s))`,
//!   `d = fp16(1/iscale)`.
//! * imatrix path: the same with [`make_qx_quants`](super::search::make_qx_quants) weighted by the **raw** imatrix entries
//!   (`qw`; the `√(σ² + x²)` factor is commented out in the source).
//! * Both requantize by division: `q = clamp(nearest_int(x/(d·sc)), −32, 31) + 32`.

use super::fp16::{read_fp16, write_fp16};
use super::search::{nearest_int, qx_search, Weights, GROUP_MAX_EPS};
use super::QK_K;

/// Bytes per super-block.
pub const BLOCK_BYTES: usize = 210;
const QH: usize = 128;
const SCALES: usize = 192;
const D: usize = 208;

/// `quantize_row_q6_K_ref` (no imatrix) or `quantize_row_q6_K_impl` (with the super-block's
/// 256 imatrix entries) on one super-block.
#[inline(always)]
pub fn quantize_block(x: &[f32], qw: Option<&[f32]>, out: &mut [u8]) {
    let mut codes = [0i8; QK_K];
    let mut scales = [0.0f32; 16];
    let mut searches = [None; 16];
    let (mut max_scale, mut max_abs_scale) = (0.0f32, 0.0f32);
    for ib in 0..16 {
        let weights = match qw {
            Some(q) => Weights::Given(&q[16 * ib..16 * ib + 16]),
            None => Weights::Squares,
        };
        // make_qx_quants' codes are only kept where the rounded scale is 0 (below).
        let search = qx_search(32, &x[16 * ib..16 * ib + 16], weights);
        let scale = search.scale;
        searches[ib] = Some(search);
        scales[ib] = scale;
        if scale.abs() > max_abs_scale {
            max_abs_scale = scale.abs();
            max_scale = scale;
        }
    }
    if max_abs_scale < GROUP_MAX_EPS {
        out[..BLOCK_BYTES].fill(0);
        write_fp16(out, D, 0.0);
        return;
    }
    let iscale = -128.0 / max_scale;
    write_fp16(out, D, 1.0 / iscale);
    for ib in 0..16 {
        out[SCALES + ib] = nearest_int(iscale * scales[ib]).min(127) as i8 as u8;
    }
    let d_all = read_fp16(out, D);
    for j in 0..16 {
        let d = d_all * (out[SCALES + j] as i8) as f32;
        if d == 0.0 {
            if let Some(search) = searches[j] {
                search.codes(32, &x[16 * j..16 * j + 16], &mut codes[16 * j..16 * j + 16]);
            }
            continue;
        }
        for ii in 0..16 {
            let l = nearest_int(x[16 * j + ii] / d).clamp(-32, 31);
            codes[16 * j + ii] = (l + 32) as i8;
        }
    }
    for h in 0..2 {
        for l in 0..32 {
            let c = |k: usize| codes[128 * h + 32 * k + l] as u8;
            out[64 * h + l] = (c(0) & 0xF) | ((c(2) & 0xF) << 4);
            out[64 * h + l + 32] = (c(1) & 0xF) | ((c(3) & 0xF) << 4);
            out[QH + 32 * h + l] =
                (c(0) >> 4) | ((c(1) >> 4) << 2) | ((c(2) >> 4) << 4) | ((c(3) >> 4) << 6);
        }
    }
}

/// The int8 scale of sub-block `j`.
fn sub_scale(b: &[u8], j: usize) -> i32 {
    b[SCALES + j] as i8 as i32
}

/// `dequantize_row_q6_K` on one super-block: `(d·sc)·q`.
///
/// Element `i = 128·h + 32·k + l` (`h` the half, `k < 4`, `l < 32`) has the code
/// `(low | high << 4) − 32`: `low` the low (`k < 2`) or high nibble of byte `64·h + 32·(k mod 2) + l`,
/// `high` bits `2k…2k+1` of byte `128 + 32·h + l`. Walked as ggml walks it (per half, the 32
/// positions `l` each giving four values), so that the loop vectorises.
pub fn dequantize_block(b: &[u8], y: &mut [f32]) {
    let d = read_fp16(b, D);
    let (b, y) = (&b[..BLOCK_BYTES], &mut y[..QK_K]);
    for h in 0..2 {
        let (ql, qh) = (&b[64 * h..64 * h + 64], &b[QH + 32 * h..QH + 32 * h + 32]);
        let scale = |k: usize, l: usize| d * sub_scale(b, 8 * h + 2 * k + l / 16) as f32;
        let out = &mut y[128 * h..128 * h + 128];
        for l in 0..32 {
            let (lo, hi, high) = (ql[l], ql[l + 32], qh[l]);
            let q = |low: u8, k: usize| (low | (((high >> (2 * k)) & 3) << 4)) as i32 - 32;
            out[l] = scale(0, l) * q(lo & 0xF, 0) as f32;
            out[l + 32] = scale(1, l) * q(hi & 0xF, 1) as f32;
            out[l + 64] = scale(2, l) * q(lo >> 4, 2) as f32;
            out[l + 96] = scale(3, l) * q(hi >> 4, 3) as f32;
        }
    }
}

/// Per 16-value sub-block: the range of `(d·sc)·q`, `q ∈ −32…31`.
pub fn ranges(b: &[u8], out: &mut Vec<(f32, f32)>) {
    let d = read_fp16(b, D);
    for j in 0..16 {
        let dl = d * sub_scale(b, j) as f32;
        let (a, z) = (dl * -32.0, dl * 31.0);
        out.push((a.min(z), a.max(z)));
    }
}

/// `(d, int8 sub-scales)` decoded from the block.
pub fn decode_scales(b: &[u8]) -> (f32, Vec<i32>) {
    (read_fp16(b, D), (0..16).map(|j| sub_scale(b, j)).collect())
}
