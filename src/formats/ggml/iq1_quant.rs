//! ggml's IQ1 quantizers, bit for bit: `quantize_row_iq1_s_impl` (IQ1_S, blocks of 32, an
//! imatrix required) and `quantize_row_iq1_m_impl` (IQ1_M, blocks of 16, with or without an
//! imatrix), ggml-quants.c @ d99724f2, one super-block of 256 at a time. Layouts: [`super::iq`].
//!
//! Values are `s·(t + δ)` with `t ∈ {−1, 0, 1}` from an 8-value grid point of 2048
//! ([`super::iq_lattice::iq1`], levels `l = t + 1`) and a shift `δ = ±1/8`: the candidate values
//! are `x₊ = (−7/8, 1/8, 9/8)` or `x₋ = (−9/8, −1/8, 7/8)` per level. Per super-block
//! `σ² = 2·Σx²/256`, weights `w = qw·√(σ² + x²)` (IQ1_M without an imatrix: `x²`).
//!
//! **Exhaustive split.** A block with `max|x| < 1e-12` (IQ1_S) / `1e-7` (IQ1_M) is zero. Else the
//! values are sorted ascending (ggml's `qsort` is glibc's merge sort, stable: equal values keep
//! their order) and every pair of boundaries `0 ≤ i1 ≤ i2 ≤ n` puts the sorted values below `i1`
//! at level 0, those in `[i1, i2)` at level 1, the rest at level 2; each split's least-squares
//! scale `Σw·v·x / Σw·v²` (`v` the candidate value of the level) is kept when
//! `(Σw·v·x)² > best·Σw·v²` (strict, `best` from `−FLT_MAX`).
//! * IQ1_S tries both shifts, from prefix sums `S_i = Σ_{j<i} w·x`, `W_i = Σ_{j<i} w` of the
//!   sorted values: `Σw·v·x = (S_i1 − S_0)·v₀ + (S_i2 − S_i1)·v₁ + (S_n − S_i2)·v₂`, likewise
//!   `Σw·v² = (W_i1 − W_0)·v₀·v₀ + …` (x₊ first, then x₋).
//! * IQ1_M has one shift per group of 8, four combinations `(+,+), (+,−), (−,+), (−,−)`, each
//!   sum accumulated element by element in sorted order for every split (no prefix sums; the
//!   C re-adds the runs below `i1` and in `[i1, i2)` for every split, quantscope carries those
//!   partial sums — the same float32 additions in the same order).
//!
//! A negative scale flips the levels (`l → 2 − l`) and the shifts. A group whose levels are not
//! a grid point takes the neighbour of least `Σw·(s·v − x)²` (`iq1_find_best_neighbour2`, the
//! first strictly smaller from `FLT_MAX`), after which the scale is refitted over the block
//! (kept only when both sums are positive).
//!
//! **Scales.** `d = max_scale/15`, 3-bit block codes `clamp(nearest_int(0.5·(s/d − 1)), 0, 7)`.
//! IQ1_S stores `fp16(1.125·d)` and each code with its shift sign (bit 3) in bits 12–15 of the
//! block's `qh`. IQ1_M then refits `d` itself over the whole super-block with the stored codes,
//! `d = Σw·q·x / Σw·q²` with `q = v·(2·code + 1)` (kept when `Σw·q² > 0`), and stores
//! `fp16(1.1125·d)` spread over the top nibbles of its four scale words.
//!
//! ggml's fallback when no neighbour has a finite distance (a scan of all 2048 points) reads
//! `xval[i]` with `i` the point's index, past the group (undefined behaviour); quantscope reads
//! the group's own element. It runs only when every neighbour's distance is infinite or NaN
//! (overflowing values or importances); when the scan finds nothing either, ggml aborts
//! (`GGML_ASSERT(grid_index >= 0)`) and quantscope refuses the input.

use super::fp16::{fp32_to_fp16, write_fp16};
use super::iq_lattice::{self, Lattice, Lookup};
use super::iq_search::{
    c_max, record_super_block, record_zero_block, scale_code, sum_squares, Abort, NAN_SCALE,
    NO_NEIGHBOUR, OFF_GRID, SEARCH_TITLE,
};
use super::QK_K;
use crate::derivation::{self, Step};

const SOURCE_S: &str = "ggml/src/ggml-quants.c quantize_row_iq1_s_impl (ggml d99724f2)";
const SOURCE_M: &str = "ggml/src/ggml-quants.c quantize_row_iq1_m_impl (ggml d99724f2)";

/// Record (while a derivation records) one block's split search.
#[allow(clippy::too_many_arguments)]
fn record_split(
    source: &str,
    formula: &str,
    split: (usize, usize),
    shifts: &str,
    searched: f32,
    l: &[i8],
    on_grid: bool,
    scale: f32,
) {
    derivation::record(|| {
        Step::new(SEARCH_TITLE, formula, source)
            .value("i1", split.0)
            .value("i2", split.1)
            .value("shift", shifts)
            .value("split scale", searched)
            .value("levels", l.iter().map(|&v| v as i64).collect::<Vec<i64>>())
            .value("on the grid", on_grid)
            .value("scale", scale)
    });
}

const IQ1S_SPLIT: &str = "sort the block ascending (stable); for every 0 ≤ i1 ≤ i2 ≤ 32 and shift δ = ±1/8: levels 0 below i1, 1 up to i2, 2 above, values v = l − 1 + δ, scale = Σw·v·x / Σw·v² from prefix sums, kept when (Σw·v·x)² > best·Σw·v² (strict); a negative scale flips levels and δ; an off-grid group of 8 takes the neighbour of least Σw·(s·v − x)², then the scale is refitted";
const IQ1M_SPLIT: &str = "sort the block of 16 ascending (stable); for every 0 ≤ i1 ≤ i2 ≤ 16 and shift pair (δ₀, δ₁) for the two groups of 8: levels 0 below i1, 1 up to i2, 2 above, values v = l − 1 + δ, scale = Σw·v·x / Σw·v² summed in sorted order, kept when (Σw·v·x)² > best·Σw·v² (strict); a negative scale flips levels and shifts; off-grid groups take the neighbour of least Σw·(s·v − x)², then the scale is refitted";

/// `IQ1S_DELTA` = `IQ1M_DELTA`.
const DELTA: f32 = 0.125;
/// The candidate values of levels 0, 1, 2 with the shift `+δ`.
const X_P: [f32; 3] = [-1.0 + DELTA, DELTA, 1.0 + DELTA];
/// The same with `−δ`.
const X_M: [f32; 3] = [-1.0 - DELTA, -DELTA, 1.0 - DELTA];
/// `GROUP_MAX_EPS_IQ1_S`.
const GROUP_MAX_EPS_IQ1_S: f32 = 1e-12;
/// `GROUP_MAX_EPS_IQ1_M`.
const GROUP_MAX_EPS_IQ1_M: f32 = 1e-7;

/// `max|x|` by `MAX` from the first.
fn abs_max(xb: &[f32]) -> f32 {
    xb[1..].iter().fold(xb[0].abs(), |m, &v| c_max(m, v.abs()))
}

/// The order of `xb` ascending, equal values in index order (glibc's stable merge sort).
fn sorted_order<const N: usize>(xb: &[f32]) -> [usize; N] {
    let mut idx: [usize; N] = std::array::from_fn(|i| i);
    idx.sort_by(|&a, &b| {
        xb[a]
            .partial_cmp(&xb[b])
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    idx
}

/// `iq1_find_best_neighbour2`: among `neighbours`, the point of least `Σw·(scale·v − x)²` with
/// `v = xx[l]`; its levels go to `l`.
fn best_neighbour2(
    lattice: &Lattice<8>,
    neighbours: &[u16],
    xb: &[f32],
    weight: &[f32],
    scale: f32,
    xx: &[f32; 3],
    l: &mut [i8],
) -> Result<usize, Abort> {
    let distance = |k: usize| {
        let p = lattice.point(k);
        let mut d2 = 0.0f32;
        for i in 0..8 {
            let q = xx[((p[i] - 1) / 2) as usize];
            let diff = scale * q - xb[i];
            d2 += weight[i] * diff * diff;
        }
        d2
    };
    let mut best = f32::MAX;
    let mut index = None;
    for &k in neighbours {
        let d2 = distance(k as usize);
        if d2 < best {
            best = d2;
            index = Some(k as usize);
        }
    }
    if index.is_none() {
        for k in 0..lattice.len() {
            let d2 = distance(k);
            if d2 < best {
                best = d2;
                index = Some(k);
            }
        }
    }
    let k = index.ok_or(NO_NEIGHBOUR)?;
    for (li, &g) in l.iter_mut().zip(lattice.point(k)) {
        *li = (g - 1) / 2;
    }
    Ok(k)
}

/// A group's grid index: its own point, or the best neighbour (rewriting `l`); and whether it
/// was on the grid.
fn resolve(
    lattice: &Lattice<8>,
    l: &mut [i8],
    xb: &[f32],
    weight: &[f32],
    scale: f32,
    xx: &[f32; 3],
) -> Result<(usize, bool), Abort> {
    match lattice.lookup(lattice.pack(l)).ok_or(OFF_GRID)? {
        Lookup::OnGrid(k) => Ok((k, true)),
        Lookup::Neighbours(nb) => Ok((
            best_neighbour2(lattice, nb, xb, weight, scale, xx, l)?,
            false,
        )),
    }
}

/// Add one group's `Σw·q·x` and `Σw·q²` to `sums`, for grid point `point` with the values
/// `xx`: `q = v = xx[l]`, or `q = v·mult` (IQ1_M's refit of `d`, `mult = 2·code + 1`).
fn add_group_sums(
    sums: &mut (f32, f32),
    point: &[i8; 8],
    xx: &[f32; 3],
    xb: &[f32],
    weight: &[f32],
    mult: Option<f32>,
) {
    for j in 0..8 {
        let w = weight[j];
        let v = xx[((point[j] - 1) / 2) as usize];
        let q = match mult {
            Some(m) => v * m,
            None => v,
        };
        sums.0 += w * q * xb[j];
        sums.1 += w * q * q;
    }
}

/// Levels of a block from the sorted order and the split `(i1, i2)`.
fn split_levels(order: &[usize], i1: usize, i2: usize, l: &mut [i8]) {
    for (j, &i) in order.iter().enumerate() {
        l[i] = if j < i1 {
            0
        } else if j < i2 {
            1
        } else {
            2
        };
    }
}

/// IQ1_S: `quantize_row_iq1_s_impl` on one super-block (an imatrix is required).
pub fn quantize_iq1_s_block(x: &[f32], qw: &[f32], out: &mut [u8]) -> Result<(), Abort> {
    const N: usize = 32;
    let lattice = iq_lattice::iq1();
    let out = &mut out[..super::iq::IQ1_S_BYTES];
    out.fill(0);
    let sigma2 = 2.0 * sum_squares(&x[..QK_K]) / QK_K as f32;
    let mut qh = [0u16; 8];
    let mut scales = [0.0f32; 8];
    let mut shifts = [1i8; 8];
    let mut max_scale = 0.0f32;
    for ib in 0..QK_K / N {
        let xb = &x[N * ib..N * ib + N];
        let qwb = &qw[N * ib..N * ib + N];
        let weight: [f32; N] = std::array::from_fn(|i| qwb[i] * (sigma2 + xb[i] * xb[i]).sqrt());
        let max = abs_max(xb);
        if max < GROUP_MAX_EPS_IQ1_S {
            record_zero_block(
                SOURCE_S,
                max,
                "max |x| < 1e-12 (GROUP_MAX_EPS_IQ1_S): scale 0",
            );
            scales[ib] = 0.0;
            shifts[ib] = 1;
            continue;
        }
        let order: [usize; N] = sorted_order(xb);
        let mut sumx = [0.0f32; N + 1];
        let mut sumw = [0.0f32; N + 1];
        for (j, &i) in order.iter().enumerate() {
            sumx[j + 1] = sumx[j] + weight[i] * xb[i];
            sumw[j + 1] = sumw[j] + weight[i];
        }
        let mut best_score = -f32::MAX;
        let mut scale = max;
        let mut best: Option<(usize, usize, i8)> = None;
        for i1 in 0..=N {
            for i2 in i1..=N {
                for (xs, shift) in [(&X_P, 1i8), (&X_M, -1)] {
                    let sumqx = (sumx[i1] - sumx[0]) * xs[0]
                        + (sumx[i2] - sumx[i1]) * xs[1]
                        + (sumx[N] - sumx[i2]) * xs[2];
                    let sumq2 = (sumw[i1] - sumw[0]) * xs[0] * xs[0]
                        + (sumw[i2] - sumw[i1]) * xs[1] * xs[1]
                        + (sumw[N] - sumw[i2]) * xs[2] * xs[2];
                    if sumq2 > 0.0 && sumqx * sumqx > best_score * sumq2 {
                        scale = sumqx / sumq2;
                        best_score = scale * sumqx;
                        best = Some((i1, i2, shift));
                    }
                }
            }
        }
        let Some((i1, i2, mut shift)) = best else {
            record_zero_block(SOURCE_S, max, "no split has Σw·v² > 0: scale 0");
            scales[ib] = 0.0;
            shifts[ib] = 1;
            continue;
        };
        let searched = scale;
        let mut l = [0i8; N];
        split_levels(&order, i1, i2, &mut l);
        if scale < 0.0 {
            l = l.map(|v| 2 - v);
            scale = -scale;
            shift = -shift;
        }
        let xx = if shift == 1 { &X_P } else { &X_M };
        let mut index = [0usize; N / 8];
        let mut all_on_grid = true;
        for (k, slot) in index.iter_mut().enumerate() {
            let g = 8 * k..8 * k + 8;
            let (i, on) = resolve(
                lattice,
                &mut l[g.clone()],
                &xb[g.clone()],
                &weight[g],
                scale,
                xx,
            )?;
            *slot = i;
            all_on_grid &= on;
        }
        if !all_on_grid {
            let mut sums = (0.0f32, 0.0f32);
            for (k, &i) in index.iter().enumerate() {
                let g = 8 * k..8 * k + 8;
                add_group_sums(
                    &mut sums,
                    lattice.point(i),
                    xx,
                    &xb[g.clone()],
                    &weight[g],
                    None,
                );
            }
            if sums.0 > 0.0 && sums.1 > 0.0 {
                scale = sums.0 / sums.1;
            }
        }
        let mut h = 0u16;
        for (k, &i) in index.iter().enumerate() {
            out[2 + (N / 8) * ib + k] = i as u8;
            h |= ((i >> 8) << (3 * k)) as u16;
        }
        qh[ib] = h;
        record_split(
            SOURCE_S,
            IQ1S_SPLIT,
            (i1, i2),
            if shift == 1 { "+1/8" } else { "−1/8" },
            searched,
            &l,
            all_on_grid,
            scale,
        );
        if scale.is_nan() || scale < 0.0 {
            return Err(NAN_SCALE);
        }
        scales[ib] = scale;
        shifts[ib] = shift;
        max_scale = c_max(max_scale, scale);
    }
    if max_scale != 0.0 {
        let d = max_scale / 15.0;
        write_fp16(out, 0, d * 1.125);
        let id = 1.0 / d;
        for ib in 0..8 {
            let mut l = scale_code(id, scales[ib], 7) as u16;
            if shifts[ib] == -1 {
                l |= 8;
            }
            qh[ib] |= l << 12;
        }
        if derivation::recording() {
            let codes = scales
                .iter()
                .map(|&s| scale_code(id, s, 7) as i64)
                .collect();
            record_super_block(SOURCE_S, 15.0, 1.125, &scales, codes);
        }
    }
    for (ib, h) in qh.iter().enumerate() {
        out[34 + 2 * ib..36 + 2 * ib].copy_from_slice(&h.to_le_bytes());
    }
    Ok(())
}

/// IQ1_M's four shift combinations per block of 16 (`best_k`): the values of the first and
/// the second group of 8.
fn iq1m_values(combination: usize, group: usize) -> &'static [f32; 3] {
    let plus = if group == 0 {
        combination < 2
    } else {
        combination.is_multiple_of(2)
    };
    if plus {
        &X_P
    } else {
        &X_M
    }
}

/// `qh` bits of IQ1_M's shift combinations (`masks`): bit 3 for the first group, 7 for the
/// second, set for `−δ`.
const IQ1M_MASKS: [u8; 4] = [0x00, 0x80, 0x08, 0x88];

/// IQ1_M's running sums of one split: `Σw·v·x` and `Σw·v²` for the four combinations.
#[derive(Clone, Copy)]
struct Sums4 {
    qx: [f32; 4],
    q2: [f32; 4],
}

impl Sums4 {
    /// Add element `i` (of the block of 16) at level `r`, as the C's per-element updates do:
    /// combinations whose group value is `x₊` get the `x₊` terms.
    fn add(&mut self, i: usize, r: usize, weight: &[f32], xb: &[f32]) {
        let w = weight[i];
        let (p, m) = (X_P[r], X_M[r]);
        let (pqx, mqx) = (w * p * xb[i], w * m * xb[i]);
        let (pq2, mq2) = (w * p * p, w * m * m);
        let plus: [bool; 4] = if i < 8 {
            [true, true, false, false]
        } else {
            [true, false, true, false]
        };
        for (k, &plus) in plus.iter().enumerate() {
            if plus {
                self.qx[k] += pqx;
                self.q2[k] += pq2;
            } else {
                self.qx[k] += mqx;
                self.q2[k] += mq2;
            }
        }
    }
}

/// The weights of an IQ1_M block of 16: `qw·√(σ² + x²)` or `x²`.
fn iq1m_weights(xb: &[f32], qw: Option<&[f32]>, sigma2: f32) -> [f32; 16] {
    std::array::from_fn(|i| match qw {
        Some(qw) => qw[i] * (sigma2 + xb[i] * xb[i]).sqrt(),
        None => xb[i] * xb[i],
    })
}

/// IQ1_M: `quantize_row_iq1_m_impl` on one super-block, with or without an imatrix.
pub fn quantize_iq1_m_block(x: &[f32], qw: Option<&[f32]>, out: &mut [u8]) -> Result<(), Abort> {
    const N: usize = 16;
    let lattice = iq_lattice::iq1();
    let out = &mut out[..super::iq::IQ1_M_BYTES];
    out.fill(0);
    let sigma2 = 2.0 * sum_squares(&x[..QK_K]) / QK_K as f32;
    let mut scales = [0.0f32; 16];
    let mut shifts = [0usize; 16];
    let mut max_scale = 0.0f32;
    for ib in 0..QK_K / N {
        let xb = &x[N * ib..N * ib + N];
        let weight = iq1m_weights(xb, qw.map(|q| &q[N * ib..N * ib + N]), sigma2);
        let max = abs_max(xb);
        if max < GROUP_MAX_EPS_IQ1_M {
            record_zero_block(
                SOURCE_M,
                max,
                "max |x| < 1e-7 (GROUP_MAX_EPS_IQ1_M): scale 0",
            );
            scales[ib] = 0.0;
            shifts[ib] = 0;
            continue;
        }
        let order: [usize; N] = sorted_order(xb);
        let mut best_score = -f32::MAX;
        let mut scale = max;
        let mut best: Option<(usize, usize, usize)> = None;
        // The C sums every split from scratch in sorted order: below i1 at level 0, then
        // [i1, i2) at level 1, then the rest at level 2. The partial sums after the first
        // (and second) run are the same for every later boundary, so they are carried.
        let mut below = Sums4 {
            qx: [0.0; 4],
            q2: [0.0; 4],
        };
        for i1 in 0..=N {
            if i1 > 0 {
                below.add(order[i1 - 1], 0, &weight, xb);
            }
            let mut middle = below;
            for i2 in i1..=N {
                if i2 > i1 {
                    middle.add(order[i2 - 1], 1, &weight, xb);
                }
                let mut all = middle;
                for &i in &order[i2..] {
                    all.add(i, 2, &weight, xb);
                }
                for k in 0..4 {
                    if all.q2[k] > 0.0 && all.qx[k] * all.qx[k] > best_score * all.q2[k] {
                        scale = all.qx[k] / all.q2[k];
                        best_score = scale * all.qx[k];
                        best = Some((i1, i2, k));
                    }
                }
            }
        }
        let Some((i1, i2, mut best_k)) = best else {
            record_zero_block(SOURCE_M, max, "no split has Σw·v² > 0: scale 0");
            scales[ib] = 0.0;
            shifts[ib] = 0;
            continue;
        };
        let searched = scale;
        let mut l = [0i8; N];
        split_levels(&order, i1, i2, &mut l);
        if scale < 0.0 {
            l = l.map(|v| 2 - v);
            scale = -scale;
            best_k = 3 - best_k;
        }
        let mut index = [0usize; 2];
        let mut all_on_grid = true;
        for (k, slot) in index.iter_mut().enumerate() {
            let g = 8 * k..8 * k + 8;
            let xx = iq1m_values(best_k, k);
            let (i, on) = resolve(
                lattice,
                &mut l[g.clone()],
                &xb[g.clone()],
                &weight[g],
                scale,
                xx,
            )?;
            *slot = i;
            all_on_grid &= on;
        }
        if !all_on_grid {
            let mut sums = (0.0f32, 0.0f32);
            for (k, &i) in index.iter().enumerate() {
                let g = 8 * k..8 * k + 8;
                let xx = iq1m_values(best_k, k);
                add_group_sums(
                    &mut sums,
                    lattice.point(i),
                    xx,
                    &xb[g.clone()],
                    &weight[g],
                    None,
                );
            }
            if sums.0 > 0.0 && sums.1 > 0.0 {
                scale = sums.0 / sums.1;
            }
        }
        out[2 * ib] = index[0] as u8;
        out[2 * ib + 1] = index[1] as u8;
        out[32 + ib] = ((index[0] >> 8) | ((index[1] >> 8) << 4)) as u8;
        record_split(
            SOURCE_M,
            IQ1M_SPLIT,
            (i1, i2),
            [
                "(+1/8, +1/8)",
                "(+1/8, −1/8)",
                "(−1/8, +1/8)",
                "(−1/8, −1/8)",
            ][best_k],
            searched,
            &l,
            all_on_grid,
            scale,
        );
        if scale.is_nan() || scale < 0.0 {
            return Err(NAN_SCALE);
        }
        scales[ib] = scale;
        shifts[ib] = best_k;
        max_scale = c_max(max_scale, scale);
    }
    if max_scale == 0.0 {
        return Ok(());
    }
    let mut sc = [0u16; 4];
    let mut d = max_scale / 15.0;
    let id = 1.0 / d;
    let mut sums = (0.0f32, 0.0f32);
    for ib in 0..QK_K / N {
        let l = scale_code(id, scales[ib], 7);
        sc[ib / 4] |= (l as u16) << (3 * (ib % 4));
        out[32 + ib] |= IQ1M_MASKS[shifts[ib]];
        let xb = &x[N * ib..N * ib + N];
        let weight = iq1m_weights(xb, qw.map(|q| &q[N * ib..N * ib + N]), sigma2);
        let qh = out[32 + ib] as usize;
        for k in 0..2 {
            let xx = iq1m_values(shifts[ib], k);
            let i = out[2 * ib + k] as usize + ((qh << (8 - 4 * k)) & 0x700);
            let g = 8 * k..8 * k + 8;
            let mult = (2 * l as i32 + 1) as f32;
            add_group_sums(
                &mut sums,
                lattice.point(i),
                xx,
                &xb[g.clone()],
                &weight[g],
                Some(mult),
            );
        }
    }
    let first_d = d;
    if sums.1 > 0.0 {
        d = sums.0 / sums.1;
    }
    derivation::record(|| {
        Step::new(
            "Super-block scale",
            "d = max_scale/15; block codes clamp(nearest_int(0.5·(s/d − 1)), 0, 7); then d = Σw·q·x / Σw·q² over the super-block with q = v·(2·code + 1) (when Σw·q² > 0), stored fp16(1.1125·d) in the top nibbles of the scale words",
            SOURCE_M,
        )
        .value("block scales", &scales[..])
        .value(
            "codes",
            scales
                .iter()
                .map(|&s| scale_code(id, s, 7) as i64)
                .collect::<Vec<i64>>(),
        )
        .value("max_scale/15", first_d)
        .value("refitted d", d)
    });
    let s = fp32_to_fp16(d * 1.1125);
    sc[0] |= (s & 0x000f) << 12;
    sc[1] |= (s & 0x00f0) << 8;
    sc[2] |= (s & 0x0f00) << 4;
    sc[3] |= s & 0xf000;
    for (k, w) in sc.iter().enumerate() {
        out[48 + 2 * k..50 + 2 * k].copy_from_slice(&w.to_le_bytes());
    }
    Ok(())
}
