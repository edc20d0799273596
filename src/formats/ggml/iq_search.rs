//! The pieces ggml's IQ2/IQ3 quantizers share (ggml-quants.c @ d99724f2:
//! `quantize_row_iq2_xxs_impl`, `quantize_row_iq2_xs_impl`, `quantize_row_iq2_s_impl`,
//! `quantize_row_iq3_xxs_impl`, `quantize_row_iq3_s_impl`), in float32 with one rounding per
//! operation and C's evaluation order (`w·x·q` is `(w·x)·q`; sums left to right; no fused
//! multiply-add).
//!
//! Notation: a block of `n` values `x` (32, or 16 for IQ2_XS/IQ2_S) with weights `w`, split
//! into groups of `N` (8 for IQ2, 4 for IQ3), each group one grid point of levels
//! `l ∈ 0…kmax−1` standing for the odd magnitudes `q = 2l + 1`; `xv = |x|` (with one sign
//! possibly kept, see [`even_signs`]). The value is `scale·q·sign`.
//!
//! **The lattice search** ([`lattice_search`]): for `is = −steps…steps` the inverse scale
//! `id = ((2·kmax − 1) + is·step)/max` gives levels `l = clamp(nearest_int(0.5·(id·xv − 1)),
//! 0, kmax − 1)`; a group whose packed levels are not a grid point takes, among its neighbours
//! ([`super::iq_lattice`]), the one of least `Σ √w·(s·q − xv)²` with `s = 1/id`
//! ([`best_neighbour`]: `iq2_find_best_neighbour` / `iq3_find_best_neighbour`, the first
//! strictly smaller). The candidate's least-squares scale `Σw·xv·q / Σw·q²` replaces the best
//! when `(Σw·xv·q)² > best·Σw·q²` (strict; `best` starts at 0 and becomes `scale·Σw·xv·q`).
//! Then, when some chosen group was off the grid (IQ2_XXS: always) and the scale is positive,
//! the groups are re-chosen once with `id = 1/scale` (the off-grid ones only, or all — per
//! type) and the scale refitted.
//!
//! **Super-block scale**: every block's scale `s_b ≥ 0`; `d = max_b s_b/31`, the 4-bit code
//! `clamp(nearest_int(0.5·(s_b/d − 1)), 0, 15)` computed with `1/d` of the float32 `d` while a
//! type may store `fp16(d·fudge)` ([`scale_code`]).

use super::iq_lattice::{Lattice, Lookup};
use super::search::nearest_int;
use crate::derivation::{self, Candidates, Step};

/// The title of every block's search step (a derivation keeps one block's in full and lists
/// the others' scales).
pub const SEARCH_TITLE: &str = "Lattice search of a block";

/// A `GGML_ASSERT` / `GGML_ABORT` ggml would hit on this input (it never does on finite,
/// reasonably scaled data): what failed, in ggml's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abort(pub &'static str);

/// No neighbour of an off-grid group has a finite distance (`GGML_ASSERT(grid_index >= 0)` in
/// `iq2_find_best_neighbour` / `iq3_find_best_neighbour`).
pub const NO_NEIGHBOUR: Abort = Abort("no grid neighbour has a finite weighted distance (GGML_ASSERT(grid_index >= 0) in iq*_find_best_neighbour)");
/// A block's scale is NaN (`GGML_ASSERT(scale >= 0)`).
pub const NAN_SCALE: Abort = Abort("a block scale is NaN (GGML_ASSERT(scale >= 0))");
/// The chosen levels are not a grid point (`GGML_ABORT` after "Oops: found point … not on grid").
pub const OFF_GRID: Abort =
    Abort("the chosen levels are not on the grid (GGML_ABORT \"Oops: found point not on grid\")");

/// `MAX(a, b)` of ggml: `a > b ? a : b`.
pub fn c_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// The level of magnitude `xv` for inverse scale `id`: `clamp(nearest_int(0.5·(id·xv − 1)),
/// 0, kmax − 1)`.
pub fn level(id: f32, xv: f32, kmax: i32) -> i8 {
    nearest_int(0.5 * (id * xv - 1.0)).clamp(0, kmax - 1) as i8
}

/// The code of block scale `s` against `1/d`: `clamp(nearest_int(0.5·(id·s − 1)), 0, top)`.
pub fn scale_code(id: f32, s: f32, top: i32) -> u8 {
    nearest_int(0.5 * (id * s - 1.0)).clamp(0, top) as u8
}

/// `Σx²` of a super-block, left to right.
pub fn sum_squares(x: &[f32]) -> f32 {
    x.iter().fold(0.0f32, |s, &v| s + v * v)
}

/// The imatrix weights `qw·√(σ² + x²)`.
pub fn imatrix_weights(x: &[f32], qw: &[f32], sigma2: f32, weight: &mut [f32]) {
    for ((w, &v), &q) in weight.iter_mut().zip(x).zip(qw) {
        *w = q * (sigma2 + v * v).sqrt();
    }
}

/// Magnitudes and sign bits of a group of 8 with an **even** number of minus signs (the
/// 7-bit sign codes of IQ2_XXS, IQ2_XS, IQ3_XXS): `xv = |x|`, and when the count of negatives is
/// odd the element of least `w·x·x` (the first on a tie) keeps its sign: its `xv` is `−|x|`
/// and its bit is cleared. Returns the low 7 bits (the eighth follows from the parity).
pub fn even_signs(xb: &[f32], weight: &[f32], xval: &mut [f32]) -> u8 {
    let mut s = plain_signs(xb, xval);
    if s.count_ones() % 2 == 1 {
        let mut imin = 0;
        let mut min = weight[0] * xb[0] * xb[0];
        for i in 1..8 {
            let ax = weight[i] * xb[i] * xb[i];
            if ax < min {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s ^= 1 << imin;
    }
    s & 127
}

/// Magnitudes and the full sign byte of a group of 8 (IQ2_S, IQ3_S): bit `i` set when
/// `x_i < 0` (`−0.0` counts as positive, as `x >= 0` does in C).
pub fn plain_signs(xb: &[f32], xval: &mut [f32]) -> u8 {
    let mut s = 0u8;
    for (i, (&v, xv)) in xb.iter().zip(xval.iter_mut()).enumerate().take(8) {
        if v >= 0.0 {
            *xv = v;
        } else {
            *xv = -v;
            s |= 1 << i;
        }
    }
    s
}

/// The largest of `xval` by `MAX` from the first.
pub fn first_max(xval: &[f32]) -> f32 {
    xval[1..].iter().fold(xval[0], |m, &v| c_max(m, v))
}

/// `(Σw·xv·q, Σw·q²)` with `q = 2l + 1`.
pub fn sums(weight: &[f32], xval: &[f32], l: &[i8]) -> (f32, f32) {
    let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
    for ((&w, &x), &li) in weight.iter().zip(xval).zip(l) {
        let q = (2 * li as i32 + 1) as f32;
        sumqx += w * x * q;
        sumq2 += w * q * q;
    }
    (sumqx, sumq2)
}

/// `iq2_find_best_neighbour` / `iq3_find_best_neighbour`: the neighbour `g` of least
/// `Σ w_i·(scale·g_i − xv_i)²` (`w` = `√weight`, float32 in order, the first strictly
/// smaller from `FLT_MAX`); its levels `(g − 1)/2` go to `l`.
pub fn best_neighbour<const N: usize>(
    lattice: &Lattice<N>,
    neighbours: &[u16],
    xval: &[f32],
    waux: &[f32],
    scale: f32,
    l: &mut [i8],
) -> Result<usize, Abort> {
    let mut best_d2 = f32::MAX;
    let mut index = None;
    for &k in neighbours {
        let p = lattice.point(k as usize);
        let mut d2 = 0.0f32;
        for i in 0..N {
            let diff = scale * p[i] as f32 - xval[i];
            d2 += waux[i] * diff * diff;
        }
        if d2 < best_d2 {
            best_d2 = d2;
            index = Some(k as usize);
        }
    }
    let k = index.ok_or(NO_NEIGHBOUR)?;
    set_levels(lattice.point(k), l);
    Ok(k)
}

/// `l_i = (g_i − 1)/2` of grid point `g`.
pub fn set_levels(point: &[i8], l: &mut [i8]) {
    for (li, &g) in l.iter_mut().zip(point) {
        *li = (g - 1) / 2;
    }
}

/// The grid index of a group's levels `l`: the point itself, or the best neighbour for
/// `scale` (which rewrites `l`). Also whether it was on the grid.
pub fn resolve<const N: usize>(
    lattice: &Lattice<N>,
    l: &mut [i8],
    xval: &[f32],
    waux: &[f32],
    scale: f32,
) -> Result<(usize, bool), Abort> {
    match lattice.lookup(lattice.pack(l)).ok_or(OFF_GRID)? {
        Lookup::OnGrid(k) => Ok((k, true)),
        Lookup::Neighbours(nb) => Ok((best_neighbour(lattice, nb, xval, waux, scale, l)?, false)),
    }
}

/// The grid index of a group's final levels, which must be a grid point.
pub fn grid_index<const N: usize>(lattice: &Lattice<N>, l: &[i8]) -> Result<usize, Abort> {
    lattice.index_of(lattice.pack(l)).ok_or(OFF_GRID)
}

/// Which groups the refinement after the search re-chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refine {
    /// Every group, whenever the scale is positive (IQ2_XXS).
    Always,
    /// Every group, when some chosen group was off the grid (IQ3_S: its `continue` for on-grid
    /// groups is commented out, and its flags start false).
    AllIfAnyOffGrid,
    /// Only the off-grid groups, when there are some (IQ2_XS, IQ2_S, IQ3_XXS).
    OffGridOnly,
}

/// The constants of one type's search.
#[derive(Debug, Clone, Copy)]
pub struct Search {
    /// Levels `0…kmax−1` (`kMaxQ`: 3 for IQ2, 8 for IQ3).
    pub kmax: i32,
    /// Candidates `is = −steps…steps`.
    pub steps: i32,
    /// `id` step per `is` (0.1 for IQ2, 0.2 for IQ3).
    pub step: f32,
    /// What the "on the grid" flags start as (IQ3_S: false).
    pub start_on_grid: bool,
    pub refine: Refine,
    /// The C function, for derivations.
    pub source: &'static str,
}

/// Record (while a derivation records) a block the search skipped: all magnitudes below
/// `eps`, scale 0, nothing stored for it.
pub fn record_zero_block(source: &str, max: f32, why: &str) {
    derivation::record(|| {
        Step::new(SEARCH_TITLE, why, source)
            .value("max", max)
            .value("scale", 0.0f32)
    });
}

/// The lattice search of one block (see the module doc): `max` is the reference magnitude of
/// the candidates (`max|x|`, or IQ2_XXS's `3·scale`), `scale` the starting scale kept when no
/// candidate is accepted. Fills `l` and returns the final scale.
#[allow(clippy::too_many_arguments)]
pub fn lattice_search<const N: usize>(
    lattice: &Lattice<N>,
    spec: &Search,
    xval: &[f32],
    weight: &[f32],
    waux: &[f32],
    max: f32,
    mut scale: f32,
    l: &mut [i8],
) -> Result<f32, Abort> {
    let n = xval.len();
    let groups = n / N;
    let mut laux_all = [0i8; 32];
    let laux = &mut laux_all[..n];
    let mut on_grid = [spec.start_on_grid; 8];
    let mut on_grid_aux = [true; 8];
    let mut best = 0.0f32;
    let top = (2 * spec.kmax - 1) as f32;
    let start = scale;
    // The candidate table, while a derivation records.
    let mut table: Option<(Vec<Vec<f64>>, usize)> =
        derivation::recording().then(|| (Vec::new(), 0));
    for is in -spec.steps..=spec.steps {
        let id = (top + is as f32 * spec.step) / max;
        let this_scale = 1.0 / id;
        for (k, flag) in on_grid_aux[..groups].iter_mut().enumerate() {
            let g = k * N..(k + 1) * N;
            for i in g.clone() {
                laux[i] = level(id, xval[i], spec.kmax);
            }
            let (_, on) = resolve(
                lattice,
                &mut laux[g.clone()],
                &xval[g.clone()],
                &waux[g],
                this_scale,
            )?;
            *flag = on;
        }
        let (sumqx, sumq2) = sums(weight, xval, laux);
        let accepted = sumq2 > 0.0 && sumqx * sumqx > best * sumq2;
        if accepted {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            l.copy_from_slice(laux);
            on_grid[..groups].copy_from_slice(&on_grid_aux[..groups]);
        }
        if let Some((rows, picked)) = table.as_mut() {
            let off = on_grid_aux[..groups].iter().filter(|&&on| !on).count();
            rows.push(vec![
                is as f64,
                id as f64,
                sumqx as f64,
                sumq2 as f64,
                (sumqx / sumq2) as f64,
                off as f64,
            ]);
            if accepted {
                *picked = rows.len() - 1;
            }
        }
    }
    let searched = scale;
    let any_off_grid = on_grid[..groups].iter().any(|&on| !on);
    let refine = spec.refine == Refine::Always || any_off_grid;
    if refine && scale > 0.0 {
        let id = 1.0 / scale;
        for (k, &on) in on_grid[..groups].iter().enumerate() {
            if spec.refine == Refine::OffGridOnly && on {
                continue;
            }
            let g = k * N..(k + 1) * N;
            for i in g.clone() {
                l[i] = level(id, xval[i], spec.kmax);
            }
            resolve(
                lattice,
                &mut l[g.clone()],
                &xval[g.clone()],
                &waux[g],
                scale,
            )?;
        }
        let (sumqx, sumq2) = sums(weight, xval, l);
        if sumq2 > 0.0 {
            scale = sumqx / sumq2;
        }
    }
    if let Some((rows, picked)) = table {
        record_search(spec, max, start, searched, scale, l, rows, picked);
    }
    Ok(scale)
}

/// The derivation step of one block's [`lattice_search`].
#[allow(clippy::too_many_arguments)]
fn record_search(
    spec: &Search,
    max: f32,
    start: f32,
    searched: f32,
    scale: f32,
    l: &[i8],
    rows: Vec<Vec<f64>>,
    picked: usize,
) {
    let refine = match spec.refine {
        Refine::Always => "every group re-chosen with id = 1/scale",
        Refine::AllIfAnyOffGrid => {
            "when a chosen group was off the grid, every group re-chosen with id = 1/scale"
        }
        Refine::OffGridOnly => "the off-grid groups re-chosen with id = 1/scale",
    };
    derivation::record(|| {
        Step::new(
            SEARCH_TITLE,
            format!(
                "for is = −{n}…{n}: id = ({top} + {step}·is)/max, levels l = clamp(nearest_int(0.5·(id·|x| − 1)), 0, {kmax1}), q = 2l + 1; a group off the grid takes the neighbour of least Σ√w·(q/id − |x|)²; scale = Σw·|x|·q / Σw·q²; then {refine} and the scale refitted",
                n = spec.steps,
                top = 2 * spec.kmax - 1,
                step = spec.step,
                kmax1 = spec.kmax - 1,
            ),
            spec.source,
        )
        .value("max", max)
        .value("start scale", start)
        .value("searched scale", searched)
        .value("levels", l.iter().map(|&v| v as i64).collect::<Vec<i64>>())
        .value("scale", scale)
        .candidates(Candidates::new(
            &["is", "id", "Σw·|x|·q", "Σw·q²", "scale", "off-grid groups"],
            rows,
            picked,
            "a candidate replaces the best only when (Σw·|x|·q)² > best·Σw·q² (strict; best starts at 0, then scale·Σw·|x|·q)",
        ))
    });
}

/// Record (while a derivation records) how a super-block's block scales became its stored
/// `d` and 4-/3-bit codes.
pub fn record_super_block(source: &str, divisor: f32, fudge: f32, scales: &[f32], codes: Vec<i64>) {
    derivation::record(|| {
        Step::new(
            "Super-block scale",
            format!(
                "d = max_scale/{divisor}; stored fp16({fudge}·d); block codes clamp(nearest_int(0.5·(s/d − 1)), 0, {}) with the float32 d",
                if divisor == 31.0 { 15 } else { 7 }
            ),
            source,
        )
        .value("block scales", scales)
        .value("codes", codes)
    });
}
