//! Q6_K (ggml-quants.c l. 1869 ref, l. 1970 imatrix): super-blocks of 256 values in 16
//! sub-blocks of 16 with an int8 scale each, 210 bytes = 6.5625 bits per value.
//!
//! Layout: `ql[128]` (low 4 bits), `qh[64]` (high 2 bits), `scales[16]` (int8), `d` (fp16).
//! Element `128·h + 32·k + l` (`k = 0…3`, `l = 0…31`) has its low bits in the low (`k < 2`) or
//! high nibble of `ql[64·h + 32·(k % 2) + l]` and its high bits in bits `2k` of `qh[32·h + l]`.
//! Value: `(d·sc)·(q − 32)`, `q ∈ 0…63`.
//!
//! * Reference path: [`make_qx_quants`](super::search::make_qx_quants)`(16, 32, x)` per
//!   sub-block (weights `x²`; the sixteen sub-blocks searched side by side by
//!   [`qx_search_sixteen`] unless a derivation records the searches); a super-block whose
//!   largest `|scale|` is below `GROUP_MAX_EPS` = 1e-15 is all zero. Otherwise
//!   `iscale = −128/max_scale` (`max_scale` signed), sub-scales `min(127, nearest_int(iscale·s))`,
//!   `d = fp16(1/iscale)`.
//! * imatrix path: the same with [`make_qx_quants`](super::search::make_qx_quants) weighted by the **raw** imatrix entries
//!   (`qw`; the `√(σ² + x²)` factor is commented out in the source).
//! * Both requantize by division: `q = clamp(nearest_int(x/(d·sc)), −32, 31) + 32`.

use super::fp16::{read_fp16, write_fp16};
use super::search::{nearest_int, qx_search, qx_search_sixteen, QxSearch, Weights, GROUP_MAX_EPS};
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
    let searches: [QxSearch; 16] = std::array::from_fn(|ib| {
        let weights = match qw {
            Some(q) => Weights::Given(&q[16 * ib..16 * ib + 16]),
            None => Weights::Squares,
        };
        // make_qx_quants' codes are only kept where the rounded scale is 0 (`store`).
        qx_search(32, &x[16 * ib..16 * ib + 16], weights)
    });
    store(x, &searches, out);
}

/// `quantize_row_q6_K_ref` on one super-block, its sixteen sub-block searches side by side
/// ([`qx_search_sixteen`]): the same bits as [`quantize_block`] without an imatrix, about three
/// times faster; it records no derivation steps.
#[inline(always)]
pub fn quantize_block_side_by_side(x: &[f32], out: &mut [u8]) {
    store(x, &qx_search_sixteen(32, x), out);
}

/// The super-block from its sub-blocks' searches: the int8 sub-scales against the largest,
/// `d`, and the codes requantized by division.
#[inline(always)]
fn store(x: &[f32], searches: &[QxSearch; 16], out: &mut [u8]) {
    let mut codes = [0i8; QK_K];
    let (mut max_scale, mut max_abs_scale) = (0.0f32, 0.0f32);
    for search in searches {
        let scale = search.scale;
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
    for (ib, search) in searches.iter().enumerate() {
        out[SCALES + ib] = nearest_int(iscale * search.scale).min(127) as i8 as u8;
    }
    let d_all = read_fp16(out, D);
    for (j, search) in searches.iter().enumerate() {
        let (x, codes) = (&x[16 * j..16 * j + 16], &mut codes[16 * j..16 * j + 16]);
        let d = d_all * (out[SCALES + j] as i8) as f32;
        if d == 0.0 {
            search.codes(32, x, codes);
            continue;
        }
        for (c, &v) in codes.iter_mut().zip(x) {
            *c = (nearest_int(v / d).clamp(-32, 31) + 32) as i8;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Super-blocks that exercise every branch of the search and of `store`: normal values
    /// with outliers, ties between magnitudes of both signs, whole numbers (rounding ties),
    /// sub-blocks below `GROUP_MAX_EPS`, all-zero super-blocks, subnormals, values large
    /// enough that `x²` overflows, and constant sub-blocks.
    fn super_blocks() -> Vec<Vec<f32>> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut uniform = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut blocks = Vec::new();
        for case in 0..400 {
            let block: Vec<f32> = (0..QK_K)
                .map(|i| {
                    let u = uniform() - 0.5;
                    let sub = i / 16;
                    match (case % 8, sub % 4) {
                        (0, _) => u * 0.04,
                        (1, _) => {
                            if i % 37 == 0 {
                                u * 3.0
                            } else {
                                u * 0.02
                            }
                        }
                        (2, _) => ((u * 64.0).round() - 0.5 * (i % 2) as f32) * 0.125,
                        (3, 0) => u * 1e-16,
                        (3, 1) => 0.0,
                        (3, _) => u,
                        (4, _) => {
                            if i % 3 == 0 {
                                -0.5
                            } else if i % 3 == 1 {
                                0.5
                            } else {
                                u * 0.5
                            }
                        }
                        (5, _) => u * 1e-40,
                        (6, _) => u * 3e19 * (1 + sub) as f32,
                        _ => {
                            if sub % 2 == 0 {
                                0.25
                            } else {
                                u * (case as f32 + 1.0)
                            }
                        }
                    }
                })
                .collect();
            blocks.push(block);
        }
        blocks.push(vec![0.0; QK_K]);
        blocks.push(vec![-0.0; QK_K]);
        blocks
    }

    #[test]
    fn the_side_by_side_search_stores_the_reference_bits() {
        for (k, x) in super_blocks().iter().enumerate() {
            let (mut reference, mut side_by_side) = ([0u8; BLOCK_BYTES], [0u8; BLOCK_BYTES]);
            quantize_block(x, None, &mut reference);
            quantize_block_side_by_side(x, &mut side_by_side);
            assert_eq!(reference, side_by_side, "super-block {k}: {:?}", &x[..4]);
        }
    }
}
