//! ggml's IQ3 quantizers, bit for bit: `quantize_row_iq3_xxs_impl(256, …)` (IQ3_XXS) and
//! `quantize_row_iq3_s_impl(32, …)` (IQ3_S), ggml-quants.c @ d99724f2, one super-block of 256
//! at a time. Layouts: [`super::iq`].
//!
//! Per super-block `σ² = 2·Σx²/256`; weights `w = qw·√(σ² + x²)` with an imatrix, `x²` without.
//! Each block of 32 in 8 groups of 4 values (levels `0…7`, magnitudes `q = 2l + 1`):
//!
//! * signs: IQ3_XXS stores 7 bits per 8 values with an even number of minus signs (the
//!   element of least `w·x²` keeps its sign in the magnitude when the count is odd,
//!   [`even_signs`]); IQ3_S stores full sign bytes;
//! * IQ3_XXS: `max < 1e-8` (`GROUP_MAX_EPS_IQ3_XXS`) is a zero block; start `max/15`,
//!   candidates `id = (15 + 0.2·is)/max`, `is = −15…15`, then the off-grid groups re-chosen;
//! * IQ3_S: only `max = 0` is a zero block; start `max/15`, `is = −9…9`, then, when some group
//!   was off the grid (the flags start false, so also when no candidate was accepted), every
//!   group re-chosen ([`lattice_search`]);
//! * a negative scale is negated with the signs flipped (IQ3_XXS: `~s & 127` of its first four
//!   sign codes, IQ3_S: `~s`).
//!
//! `d = max_scale/31`; stored `fp16(1.0125·d)` (IQ3_XXS) or `fp16(1.033·d)` (IQ3_S), block
//! codes `clamp(nearest_int(0.5·(s/d − 1)), 0, 15)` with the unfudged `d`.
//!
//! **IQ3_S quirk**: its grid-byte and sign-byte write positions advance only past blocks that
//! were quantized — after a zero block (`max = 0`) the next block's bytes land in the zero
//! block's slots, and the super-block's last slots stay 0 (the `qh` bits and scales keep their
//! true positions). quantscope writes them where ggml does.

use super::fp16::write_fp16;
use super::iq_lattice;
use super::iq_search::{
    c_max, even_signs, first_max, grid_index, imatrix_weights, lattice_search, plain_signs,
    record_super_block, record_zero_block, scale_code, sum_squares, Abort, Refine, Search,
    NAN_SCALE,
};
use super::QK_K;
use crate::derivation;

const SOURCE_XXS: &str = "ggml/src/ggml-quants.c quantize_row_iq3_xxs_impl (ggml d99724f2)";
const SOURCE_S: &str = "ggml/src/ggml-quants.c quantize_row_iq3_s_impl (ggml d99724f2)";

/// `GROUP_MAX_EPS_IQ3_XXS`.
const GROUP_MAX_EPS_IQ3_XXS: f32 = 1e-8;

/// The weights of one block of 32: `qw·√(σ² + x²)` or `x²`.
fn block_weights(xb: &[f32], qw: Option<&[f32]>, sigma2: f32, weight: &mut [f32; 32]) {
    match qw {
        Some(qw) => imatrix_weights(xb, qw, sigma2, weight),
        None => {
            for (w, &v) in weight.iter_mut().zip(xb) {
                *w = v * v;
            }
        }
    }
}

/// IQ3_XXS: `quantize_row_iq3_xxs_impl(256, …)` on one super-block.
pub fn quantize_iq3_xxs_block(x: &[f32], qw: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    let lattice = iq_lattice::iq3_xxs();
    let spec = Search {
        kmax: 8,
        steps: 15,
        step: 0.2,
        start_on_grid: true,
        refine: Refine::OffGridOnly,
        source: SOURCE_XXS,
    };
    let sigma2 = 2.0 * sum_squares(&x[..QK_K]) / QK_K as f32;
    let mut grid = [0u8; 64];
    let mut scales_and_signs = [0u32; 8];
    let mut scales = [0.0f32; 8];
    let mut max_scale = 0.0f32;
    for ib in 0..QK_K / 32 {
        let xb = &x[32 * ib..32 * ib + 32];
        let mut weight = [0.0f32; 32];
        block_weights(
            xb,
            qw.map(|q| &q[32 * ib..32 * ib + 32]),
            sigma2,
            &mut weight,
        );
        let waux = weight.map(f32::sqrt);
        let mut xval = [0.0f32; 32];
        let mut signs = [0u8; 4];
        for (k, sign) in signs.iter_mut().enumerate() {
            let g = 8 * k..8 * k + 8;
            *sign = even_signs(&xb[g.clone()], &weight[g.clone()], &mut xval[g]);
        }
        let max = first_max(&xval);
        if max < GROUP_MAX_EPS_IQ3_XXS {
            record_zero_block(
                SOURCE_XXS,
                max,
                "max |x| < 1e-8 (GROUP_MAX_EPS_IQ3_XXS): scale 0",
            );
            continue;
        }
        let mut l = [0i8; 32];
        let mut scale = lattice_search(
            lattice,
            &spec,
            &xval,
            &weight,
            &waux,
            max,
            max / 15.0,
            &mut l,
        )?;
        if scale < 0.0 {
            scale = -scale;
            signs = signs.map(|s| !s & 127);
        }
        for k in 0..8 {
            grid[8 * ib + k] = grid_index(lattice, &l[4 * k..4 * k + 4])? as u8;
        }
        scales_and_signs[ib] = signs
            .iter()
            .enumerate()
            .fold(0u32, |a, (k, &s)| a | (s as u32) << (7 * k));
        if scale.is_nan() || scale < 0.0 {
            return Err(NAN_SCALE);
        }
        scales[ib] = scale;
        max_scale = c_max(max_scale, scale);
    }
    let out = &mut out[..super::iq::IQ3_XXS_BYTES];
    out.fill(0);
    if max_scale == 0.0 {
        return Ok(());
    }
    let d = max_scale / 31.0;
    write_fp16(out, 0, d * 1.0125);
    let id = 1.0 / d;
    for ib in 0..8 {
        scales_and_signs[ib] |= (scale_code(id, scales[ib], 15) as u32) << 28;
    }
    if derivation::recording() {
        let codes = scales
            .iter()
            .map(|&s| scale_code(id, s, 15) as i64)
            .collect();
        record_super_block(SOURCE_XXS, 31.0, 1.0125, &scales, codes);
    }
    out[2..66].copy_from_slice(&grid);
    for (ib, w) in scales_and_signs.iter().enumerate() {
        out[66 + 4 * ib..70 + 4 * ib].copy_from_slice(&w.to_le_bytes());
    }
    Ok(())
}

/// IQ3_S: `quantize_row_iq3_s_impl(32, …)` on one super-block.
pub fn quantize_iq3_s_block(x: &[f32], qw: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    let lattice = iq_lattice::iq3_s();
    let spec = Search {
        kmax: 8,
        steps: 9,
        step: 0.2,
        start_on_grid: false,
        refine: Refine::AllIfAnyOffGrid,
        source: SOURCE_S,
    };
    let out = &mut out[..super::iq::IQ3_S_BYTES];
    out.fill(0);
    let sigma2 = 2.0 * sum_squares(&x[..QK_K]) / QK_K as f32;
    // Where the next block's grid bytes and sign bytes go (`qs`, `signs` pointers of the C).
    let (mut qs_at, mut signs_at) = (2usize, 74usize);
    let mut scales = [0.0f32; 8];
    let mut max_scale = 0.0f32;
    for ib in 0..QK_K / 32 {
        let xb = &x[32 * ib..32 * ib + 32];
        let mut weight = [0.0f32; 32];
        block_weights(
            xb,
            qw.map(|q| &q[32 * ib..32 * ib + 32]),
            sigma2,
            &mut weight,
        );
        let waux = weight.map(f32::sqrt);
        let mut xval = [0.0f32; 32];
        let mut signs = [0u8; 4];
        for (k, sign) in signs.iter_mut().enumerate() {
            let g = 8 * k..8 * k + 8;
            *sign = plain_signs(&xb[g.clone()], &mut xval[g]);
        }
        let max = first_max(&xval);
        if max == 0.0 {
            record_zero_block(
                SOURCE_S,
                max,
                "max |x| = 0: scale 0, and the next block's bytes take this block's slots",
            );
            continue;
        }
        let mut l = [0i8; 32];
        let mut scale = lattice_search(
            lattice,
            &spec,
            &xval,
            &weight,
            &waux,
            max,
            max / 15.0,
            &mut l,
        )?;
        if scale < 0.0 {
            scale = -scale;
            signs = signs.map(|s| !s);
        }
        for k in 0..8 {
            let index = grid_index(lattice, &l[4 * k..4 * k + 4])?;
            out[qs_at + k] = index as u8;
            let bit = ib * 8 + k;
            out[66 + bit / 8] |= ((index >> 8) << (bit % 8)) as u8;
        }
        qs_at += 8;
        out[signs_at..signs_at + 4].copy_from_slice(&signs);
        signs_at += 4;
        if scale.is_nan() || scale < 0.0 {
            return Err(NAN_SCALE);
        }
        scales[ib] = scale;
        max_scale = c_max(max_scale, scale);
    }
    if max_scale == 0.0 {
        return Ok(());
    }
    let d = max_scale / 31.0;
    write_fp16(out, 0, d * 1.033);
    let id = 1.0 / d;
    for ib in (0..8).step_by(2) {
        let l1 = scale_code(id, scales[ib], 15);
        let l2 = scale_code(id, scales[ib + 1], 15);
        out[106 + ib / 2] = l1 | (l2 << 4);
    }
    if derivation::recording() {
        let codes = scales
            .iter()
            .map(|&s| scale_code(id, s, 15) as i64)
            .collect();
        record_super_block(SOURCE_S, 31.0, 1.033, &scales, codes);
    }
    Ok(())
}
