//! ggml's IQ2 quantizers, bit for bit: `quantize_row_iq2_xxs_impl`, `quantize_row_iq2_xs_impl`,
//! `quantize_row_iq2_s_impl` (ggml-quants.c @ d99724f2), one super-block of 256 at a time
//! (their super-blocks are independent: `σ²` is the super-block's). Layouts: [`super::iq`].
//!
//! Per super-block `σ² = Σx²/256` (IQ2_XXS, IQ2_XS) or `2·Σx²/256` (IQ2_S); weights
//! `w = qw·√(σ² + x²)` with an imatrix, or `σ²/4 + x²` for IQ2_S without one (IQ2_XXS and IQ2_XS
//! need an imatrix: `ggml_quantize_requires_imatrix`). Each block (32 values, or 16 for IQ2_XS
//! and IQ2_S) in groups of 8:
//!
//! * signs: IQ2_XXS/IQ2_XS store 7 sign bits per group and need an even number of minus
//!   signs, so with an odd count the element of least `w·x²` keeps its sign in the magnitude
//!   ([`even_signs`]); IQ2_S stores the full sign byte;
//! * `max = max xv`; below `GROUP_MAX_EPS` (`1e-15`; IQ2_S: `1e-8`) the block is zero (scale
//!   0, grid index 0 — IQ2_XXS also keeps its signs out, writing nothing);
//! * IQ2_XXS: the start is `make_qp_quants(nmax = 4, xv, w)`'s scale `s0`, `eff_max = 3·s0`
//!   (zero when `≤ 0`), candidates `id = (5 + 0.1·is)/eff_max`, `is = −6…6`, then every group
//!   re-chosen with `1/scale`;
//! * IQ2_XS / IQ2_S: start `max/5`, candidates `id = (5 + 0.1·is)/max`, `is = −9…9`, then the
//!   off-grid groups re-chosen ([`lattice_search`]);
//! * a negative scale (possible with a kept sign) is negated with every stored sign flipped.
//!
//! `d = max_scale/31`, stored `fp16(d)` (IQ2_S: `fp16(0.9875·d)`), block codes
//! `clamp(nearest_int(0.5·(s/d − 1)), 0, 15)` with the unfudged float32 `d`. A super-block
//! whose scales are all 0 stores zeros.

use super::fp16::write_fp16;
use super::iq_lattice::{self};
use super::iq_search::{
    c_max, even_signs, first_max, grid_index, imatrix_weights, lattice_search, plain_signs,
    record_super_block, record_zero_block, scale_code, sum_squares, Abort, Refine, Search,
    NAN_SCALE,
};
use super::search::{make_qp_quants, GROUP_MAX_EPS};
use super::QK_K;
use crate::derivation;

const SOURCE_XXS: &str = "ggml/src/ggml-quants.c quantize_row_iq2_xxs_impl (ggml d99724f2)";
const SOURCE_XS: &str = "ggml/src/ggml-quants.c quantize_row_iq2_xs_impl (ggml d99724f2)";
const SOURCE_S: &str = "ggml/src/ggml-quants.c quantize_row_iq2_s_impl (ggml d99724f2)";

/// `GROUP_MAX_EPS_IQ2_S`.
const GROUP_MAX_EPS_IQ2_S: f32 = 1e-8;

/// IQ2_XXS: `quantize_row_iq2_xxs_impl` on one super-block (an imatrix is required).
pub fn quantize_iq2_xxs_block(x: &[f32], qw: &[f32], out: &mut [u8]) -> Result<(), Abort> {
    let lattice = iq_lattice::iq2_xxs();
    let spec = Search {
        kmax: 3,
        steps: 6,
        step: 0.1,
        start_on_grid: true,
        refine: Refine::Always,
        source: SOURCE_XXS,
    };
    let sigma2 = sum_squares(&x[..QK_K]) / QK_K as f32;
    let mut q2 = [0u32; 16];
    let mut scales = [0.0f32; 8];
    let mut max_scale = 0.0f32;
    for ib in 0..QK_K / 32 {
        let xb = &x[32 * ib..32 * ib + 32];
        let mut weight = [0.0f32; 32];
        imatrix_weights(xb, &qw[32 * ib..32 * ib + 32], sigma2, &mut weight);
        let waux = weight.map(f32::sqrt);
        let mut xval = [0.0f32; 32];
        let mut signs = [0u8; 4];
        for (k, sign) in signs.iter_mut().enumerate() {
            let g = 8 * k..8 * k + 8;
            *sign = even_signs(&xb[g.clone()], &weight[g.clone()], &mut xval[g]);
        }
        let max = first_max(&xval);
        if max < GROUP_MAX_EPS {
            record_zero_block(SOURCE_XXS, max, "max |x| < 1e-15 (GROUP_MAX_EPS): scale 0");
            continue;
        }
        let mut codes = [0u8; 32];
        // The start scale (make_qp_quants' own derivation step would call it a sub-block
        // scale search; the block's search step lists it).
        let (start, _) =
            derivation::capture(false, || make_qp_quants(4, &xval, &mut codes, &weight));
        let eff_max = start * 3.0;
        if eff_max <= 0.0 {
            record_zero_block(SOURCE_XXS, max, "make_qp_quants' scale ≤ 0: scale 0");
            continue;
        }
        let mut l = [0i8; 32];
        let mut scale = lattice_search(
            lattice, &spec, &xval, &weight, &waux, eff_max, start, &mut l,
        )?;
        if scale < 0.0 {
            scale = -scale;
            signs = signs.map(|s| !s & 127);
        }
        for k in 0..4 {
            let index = grid_index(lattice, &l[8 * k..8 * k + 8])? as u32;
            q2[2 * ib] |= index << (8 * k);
            q2[2 * ib + 1] |= (signs[k] as u32) << (7 * k);
        }
        if scale.is_nan() || scale < 0.0 {
            return Err(NAN_SCALE);
        }
        scales[ib] = scale;
        max_scale = c_max(max_scale, scale);
    }
    out[..super::iq::IQ2_XXS_BYTES].fill(0);
    if max_scale == 0.0 {
        return Ok(());
    }
    let d = max_scale / 31.0;
    write_fp16(out, 0, d);
    let id = 1.0 / d;
    for ib in 0..8 {
        q2[2 * ib + 1] |= (scale_code(id, scales[ib], 15) as u32) << 28;
    }
    if derivation::recording() {
        let codes = scales
            .iter()
            .map(|&s| scale_code(id, s, 15) as i64)
            .collect();
        record_super_block(SOURCE_XXS, 31.0, 1.0, &scales, codes);
    }
    for (i, w) in q2.iter().enumerate() {
        out[2 + 4 * i..6 + 4 * i].copy_from_slice(&w.to_le_bytes());
    }
    Ok(())
}

/// Which of the two 16-value IQ2 types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Iq2By16 {
    Xs,
    S,
}

/// IQ2_XS: `quantize_row_iq2_xs_impl` on one super-block (an imatrix is required).
pub fn quantize_iq2_xs_block(x: &[f32], qw: &[f32], out: &mut [u8]) -> Result<(), Abort> {
    quantize_by_16(Iq2By16::Xs, x, Some(qw), out)
}

/// IQ2_S: `quantize_row_iq2_s_impl` on one super-block, with or without an imatrix.
pub fn quantize_iq2_s_block(x: &[f32], qw: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    quantize_by_16(Iq2By16::S, x, qw, out)
}

/// IQ2_XS and IQ2_S: blocks of 16, two groups each.
fn quantize_by_16(ty: Iq2By16, x: &[f32], qw: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    let (lattice, eps, bytes, source) = match ty {
        Iq2By16::Xs => (
            iq_lattice::iq2_xs(),
            GROUP_MAX_EPS,
            super::iq::IQ2_XS_BYTES,
            SOURCE_XS,
        ),
        Iq2By16::S => (
            iq_lattice::iq2_s(),
            GROUP_MAX_EPS_IQ2_S,
            super::iq::IQ2_S_BYTES,
            SOURCE_S,
        ),
    };
    let spec = Search {
        kmax: 3,
        steps: 9,
        step: 0.1,
        start_on_grid: true,
        refine: Refine::OffGridOnly,
        source,
    };
    let sumx2 = sum_squares(&x[..QK_K]);
    let sigma2 = match ty {
        Iq2By16::Xs => sumx2 / QK_K as f32,
        Iq2By16::S => 2.0 * sumx2 / QK_K as f32,
    };
    let out = &mut out[..bytes];
    out.fill(0);
    let mut scales = [0.0f32; 16];
    let mut max_scale = 0.0f32;
    for ib in 0..QK_K / 16 {
        let xb = &x[16 * ib..16 * ib + 16];
        let mut weight = [0.0f32; 16];
        match qw {
            Some(qw) => imatrix_weights(xb, &qw[16 * ib..16 * ib + 16], sigma2, &mut weight),
            None => {
                for (w, &v) in weight.iter_mut().zip(xb) {
                    *w = 0.25 * sigma2 + v * v;
                }
            }
        }
        let waux = weight.map(f32::sqrt);
        let mut xval = [0.0f32; 16];
        let mut signs = [0u8; 2];
        for (k, sign) in signs.iter_mut().enumerate() {
            let g = 8 * k..8 * k + 8;
            *sign = match ty {
                Iq2By16::Xs => even_signs(&xb[g.clone()], &weight[g.clone()], &mut xval[g]),
                Iq2By16::S => plain_signs(&xb[g.clone()], &mut xval[g]),
            };
        }
        let max = first_max(&xval);
        if max < eps {
            // Nothing is written for the block: its codes stay 0.
            record_zero_block(source, max, "max |x| below GROUP_MAX_EPS: scale 0");
            continue;
        }
        let mut l = [0i8; 16];
        let mut scale = lattice_search(
            lattice,
            &spec,
            &xval,
            &weight,
            &waux,
            max,
            max / 5.0,
            &mut l,
        )?;
        if scale < 0.0 {
            scale = -scale;
            signs = match ty {
                Iq2By16::Xs => signs.map(|s| !s & 127),
                Iq2By16::S => signs.map(|s| !s),
            };
        }
        for k in 0..2 {
            let index = grid_index(lattice, &l[8 * k..8 * k + 8])?;
            let i8 = 2 * ib + k;
            match ty {
                Iq2By16::Xs => {
                    let v = (index as u16) | ((signs[k] as u16) << 9);
                    out[2 + 2 * i8..4 + 2 * i8].copy_from_slice(&v.to_le_bytes());
                }
                Iq2By16::S => {
                    out[2 + i8] = index as u8;
                    out[66 + i8 / 4] |= ((index >> 8) << (2 * (i8 % 4))) as u8;
                    out[34 + i8] = signs[k];
                }
            }
        }
        if scale.is_nan() || scale < 0.0 {
            return Err(NAN_SCALE);
        }
        scales[ib] = scale;
        max_scale = c_max(max_scale, scale);
    }
    if max_scale == 0.0 {
        // IQ2_XS clears its codes (they were never written: the same zeros).
        if ty == Iq2By16::Xs {
            out.fill(0);
        }
        return Ok(());
    }
    let d = max_scale / 31.0;
    // IQ2_XS stores fp16(d) (d·1 is d exactly).
    let (fudge, scales_at) = match ty {
        Iq2By16::Xs => (1.0f32, 66),
        Iq2By16::S => (0.9875, 74),
    };
    write_fp16(out, 0, d * fudge);
    let id = 1.0 / d;
    for ib in 0..16 {
        let l = scale_code(id, scales[ib], 15);
        out[scales_at + ib / 2] |= if ib % 2 == 0 { l } else { l << 4 };
    }
    if derivation::recording() {
        let codes = scales
            .iter()
            .map(|&s| scale_code(id, s, 15) as i64)
            .collect();
        record_super_block(source, 31.0, fudge, &scales, codes);
    }
    Ok(())
}
