//! The scale searches of ggml's k-quants and imatrix paths (ggml-quants.c @ d99724f2), in
//! float32 with one rounding per operation and the C evaluation order (`a·b·c` is `(a·b)·c`,
//! sums accumulate left to right, no fused multiply-add).
//!
//! Notation: `x` the values of a sub-block, `w` their weights, `L` the integer codes, `nmax`
//! the largest code. Rounding is [`nearest_int`] (half to even) everywhere.
//!
//! * [`make_qx_quants`] (l. 628) — symmetric codes `l ∈ [−nmax, nmax − 1]`. Start from
//!   `iscale = −nmax/max` where `max` is the *signed* value of largest magnitude, then try
//!   `iscale = −(nmax + 0.1·is)/max` for `is = −9…9, is ≠ 0`; each candidate's least-squares
//!   scale `Σw·x·l / Σw·l²` is kept when `(Σw·x·l)² > best·Σw·l²` (strict). Returns that
//!   least-squares scale (not `1/iscale`); codes are stored as `l + nmax`.
//! * [`make_q3_quants`] (l. 697) — the same start with weights `x²`, then up to 5 passes of
//!   per-element coordinate descent: `new_l = nearest_int(x·Σl²'/Σxl')` with the element's own
//!   term removed, accepted when it raises `(Σw·x·l)²/Σw·l²`.
//! * `make_qkx2_quants` (l. 799) / `make_qkx3_quants` (l. 993) — asymmetric codes
//!   `l ∈ [0, nmax]` with a min `m ≤ 0`: `x ≈ scale·l + m`. Start from
//!   `iscale = nmax/(max − min)` (min clamped to ≤ 0), then for `is = 0…nstep` try
//!   `iscale = (rmin + rdelta·is + nmax)/(max − min)` and solve the weighted least squares
//!   `D = Σw·Σw·l² − (Σw·l)²`, `scale = (Σw·Σw·l·x − Σw·x·Σw·l)/D`,
//!   `min = (Σw·l²·Σw·x − Σw·l·Σw·l·x)/D` (a positive min is replaced by 0 and
//!   `scale = Σw·l·x/Σw·l²`); a candidate replaces the best only when its weighted error
//!   (absolute with `use_mad`, squared otherwise) is strictly smaller. Returns `(scale, −min)`.
//!   `qkx3` differs only in refusing `max ≤ min` rather than `max == min`.
//! * [`make_qp_quants`] (l. 1076) — non-negative codes `l ∈ [0, nmax]` for the sub-block
//!   scales themselves (`x ≥ 0`): `iscale = nmax/max`, 8 more candidates
//!   `(0.1·is + nmax)/max`, `is = −4…4`, chosen by weighted squared error (strict `<`), then
//!   5 passes of coordinate descent; returns `Σw·x·l / Σw·l²`.

use crate::derivation::{self, Candidates, Step};

/// Values of magnitude below this are "all zero" (`GROUP_MAX_EPS`, l. 20).
pub const GROUP_MAX_EPS: f32 = 1e-15;

/// `nearest_int` (l. 621): adds `1.5·2²³` and reads the low mantissa bits, i.e. float32
/// round-half-to-even for `|x| ≤ 4194303` (ggml asserts that range; outside it the bits are
/// returned as they fall, as a build without asserts does).
#[inline]
pub fn nearest_int(x: f32) -> i32 {
    let val = x + 12_582_912.0;
    ((val.to_bits() & 0x007F_FFFF) as i32) - 0x0040_0000
}

/// The weights a search uses: `x²` of the values themselves (`rmse_type == 1` without
/// quant weights) or given ones.
#[derive(Debug, Clone, Copy)]
pub enum Weights<'a> {
    Squares,
    Given(&'a [f32]),
}

impl Weights<'_> {
    #[inline(always)]
    fn at(&self, x: &[f32], i: usize) -> f32 {
        match self {
            Weights::Squares => x[i] * x[i],
            Weights::Given(w) => w[i],
        }
    }
}

/// The signed value of largest magnitude (the first one on ties) and that magnitude.
///
/// ggml scans for the first strictly larger magnitude; for finite input (the quantizers refuse
/// anything else) that is the first value whose magnitude is the largest, found here after a
/// vectorised [`abs_max`].
#[inline(always)]
pub fn signed_max(x: &[f32]) -> (f32, f32) {
    let amax = abs_max(x);
    if amax == 0.0 {
        return (0.0, 0.0);
    }
    // The first index of that magnitude, as a minimum over indices (which vectorises, where a
    // search that stops at the first match does not).
    let first = x
        .iter()
        .zip(0u32..)
        .map(|(v, i)| if v.abs() == amax { i } else { u32::MAX })
        .min()
        .unwrap_or(u32::MAX);
    let max = x.get(first as usize).copied().unwrap_or(0.0);
    (max, amax)
}

/// The largest magnitude of finite values (0 for none), in eight lanes so that it vectorises
/// (a maximum does not depend on the order it is taken in).
#[inline(always)]
pub fn abs_max(x: &[f32]) -> f32 {
    let larger = |m: f32, v: f32| if v > m { v } else { m };
    let mut lanes = [0.0f32; 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..8 {
            lanes[k] = larger(lanes[k], c[k].abs());
        }
    }
    let body = lanes.iter().fold(0.0f32, |m, &v| larger(m, v));
    rest.iter().fold(body, |m, &v| larger(m, v.abs()))
}

/// `make_qx_quants(n, nmax, x, L, rmse_type = 1, qw)`; `codes` receives `l + nmax`.
pub fn make_qx_quants(nmax: i32, x: &[f32], codes: &mut [i8], weights: Weights) -> f32 {
    let search = qx_search(nmax, x, weights);
    search.codes(nmax, x, codes);
    search.scale
}

/// What [`make_qx_quants`] found: the least-squares scale it returns and the `iscale` whose
/// codes it stores (`None` for an all-zero group, whose codes are 0).
#[derive(Debug, Clone, Copy)]
pub struct QxSearch {
    pub scale: f32,
    iscale: Option<f32>,
}

impl QxSearch {
    /// The codes `l + nmax` of the chosen `iscale` (what ggml leaves in `L`).
    pub fn codes(&self, nmax: i32, x: &[f32], codes: &mut [i8]) {
        let Some(iscale) = self.iscale else {
            codes[..x.len()].fill(0);
            return;
        };
        for (c, &v) in codes.iter_mut().zip(x) {
            *c = (nearest_int(iscale * v).clamp(-nmax, nmax - 1) + nmax) as i8;
        }
    }
}

/// The search of [`make_qx_quants`] without writing codes (Q6_K recomputes them from the
/// rounded scales anyway).
#[inline(always)]
pub fn qx_search(nmax: i32, x: &[f32], weights: Weights) -> QxSearch {
    let (max, amax) = signed_max(x);
    if amax < GROUP_MAX_EPS {
        return QxSearch {
            scale: 0.0,
            iscale: None,
        };
    }
    // The first guess `iscale = −nmax/max` and the 18 candidates are independent sums: they
    // are computed side by side (one lane each, each summing over `i` in order as ggml does),
    // then compared in ggml's order; the codes are those of the last one kept.
    let sums = CandidateSums::of(nmax, max, x, weights);
    // Each lane's scale `Σw·x·l / Σw·l²` and `scale·Σw·x·l`, divided side by side: the values
    // ggml computes when it keeps that candidate (and the first guess's, 0 when `Σw·l² = 0`).
    let (mut scales, mut bests) = ([0.0f32; QX_LANES], [0.0f32; QX_LANES]);
    for k in 0..QX_LANES {
        let (sumlx, suml2) = (sums.sumlx[k], sums.suml2[k]);
        scales[k] = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
        bests[k] = scales[k] * sumlx;
    }
    let (mut scale, mut best) = (scales[FIRST_GUESS], bests[FIRST_GUESS]);
    let mut chosen = FIRST_GUESS;
    for k in 0..QX_CANDIDATES {
        let (sumlx, suml2) = (sums.sumlx[k], sums.suml2[k]);
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            (scale, best) = (scales[k], bests[k]);
            chosen = k;
        }
    }
    derivation::record(|| qx_step(nmax, max, &sums, &scales, &bests, chosen));
    QxSearch {
        scale,
        iscale: Some(sums.iscale[chosen]),
    }
}

/// All ones when `b`, else zero: a lane mask for [`pick`].
#[inline(always)]
pub fn mask(b: bool) -> u32 {
    0u32.wrapping_sub(b as u32)
}

/// `a` where `mask` is all ones, `b` where it is zero, bit for bit.
#[inline(always)]
pub fn pick(mask: u32, a: f32, b: f32) -> f32 {
    f32::from_bits((a.to_bits() & mask) | (b.to_bits() & !mask))
}

/// [`signed_max`] of each lane of `rows` (`rows[i][s]` is value `i` of group `s`): per lane,
/// the value of largest magnitude (the first one on ties) and that magnitude, `(0, 0)` for a
/// lane of zeros.
#[inline(always)]
pub fn signed_max_lanes<const N: usize, const R: usize>(
    rows: &[[f32; N]; R],
) -> ([f32; N], [f32; N]) {
    let mut amax = [0.0f32; N];
    for row in rows {
        for s in 0..N {
            let v = row[s].abs();
            amax[s] = if v > amax[s] { v } else { amax[s] };
        }
    }
    let mut max = [0.0f32; N];
    for row in rows.iter().rev() {
        for s in 0..N {
            max[s] = pick(mask(row[s].abs() == amax[s]), row[s], max[s]);
        }
    }
    for s in 0..N {
        max[s] = pick(mask(amax[s] == 0.0), 0.0, max[s]);
    }
    (amax, max)
}

/// Sub-blocks searched side by side by [`qx_search_sixteen`].
pub const SIDE_BY_SIDE: usize = 16;

/// [`qx_search`] with the weights `x²` (`rmse_type == 1`) on the sixteen 16-value sub-blocks of
/// `x` (256 values), side by side: lane `s` of every array below is sub-block `s`, and each
/// lane computes exactly what [`qx_search`] computes for its sub-block (the signed maximum, the
/// 19 candidates' sums over `i` in ggml's order, the first strictly better candidate), so the
/// results are the same bits. The loops run across sub-blocks rather than across one
/// sub-block's candidates, which vectorises the per-sub-block work too (the range, the
/// choice, which [`qx_search`] does one sub-block at a time with a branch per candidate).
/// Q6_K's reference path; not recording (the derivation shows [`qx_search`]'s step).
#[inline(always)]
pub fn qx_search_sixteen(nmax: i32, x: &[f32]) -> [QxSearch; SIDE_BY_SIDE] {
    const N: usize = SIDE_BY_SIDE;
    type Lanes = [f32; N];
    // Transposed: xt[i][s] is value i of sub-block s.
    let mut xt = [[0.0f32; N]; 16];
    for (s, sub) in x[..16 * N].chunks_exact(16).enumerate() {
        for (i, &v) in sub.iter().enumerate() {
            xt[i][s] = v;
        }
    }
    let (amax, max) = signed_max_lanes(&xt);
    // The weights x² and the products w·x, once.
    let (mut w, mut wx) = ([[0.0f32; N]; 16], [[0.0f32; N]; 16]);
    for i in 0..16 {
        for s in 0..N {
            w[i][s] = xt[i][s] * xt[i][s];
            wx[i][s] = w[i][s] * xt[i][s];
        }
    }
    let nmax_f = nmax as f32;
    let (low, high) = (-nmax_f, nmax_f - 1.0);
    // Each candidate's iscale and sums, lane by lane ([`CandidateSums::of`]'s arithmetic).
    // Two candidates per pass over the values (the 20th, `QX_IS`'s padding, is computed and
    // never read), which halves the loads and gives the adds two independent chains.
    const PAIRED: usize = QX_CANDIDATES + 2;
    let mut iscale = [[0.0f32; N]; PAIRED];
    let mut sumlx = [[0.0f32; N]; PAIRED];
    let mut suml2 = [[0.0f32; N]; PAIRED];
    for k in 0..PAIRED {
        let numerator = -(nmax_f + 0.1f32 * QX_IS[k]);
        for s in 0..N {
            iscale[k][s] = numerator / max[s];
        }
    }
    for k in (0..PAIRED).step_by(2) {
        let (mut lx, mut l2): ([Lanes; 2], [Lanes; 2]) = ([[0.0; N]; 2], [[0.0; N]; 2]);
        for i in 0..16 {
            for s in 0..N {
                for (p, (lx, l2)) in lx.iter_mut().zip(&mut l2).enumerate() {
                    let l = clamped_code(iscale[k + p][s] * xt[i][s], low, high);
                    lx[s] += wx[i][s] * l;
                    l2[s] += w[i][s] * l * l;
                }
            }
        }
        (sumlx[k], suml2[k]) = (lx[0], l2[0]);
        (sumlx[k + 1], suml2[k + 1]) = (lx[1], l2[1]);
    }
    // The first guess, then the first strictly better candidate in ggml's order.
    let (mut scale, mut best, mut chosen): (Lanes, Lanes, Lanes) = ([0.0; N], [0.0; N], [0.0; N]);
    for s in 0..N {
        let (lx, l2) = (sumlx[FIRST_GUESS][s], suml2[FIRST_GUESS][s]);
        let quotient = lx / l2;
        scale[s] = if l2 != 0.0 { quotient } else { 0.0 };
        best[s] = scale[s] * lx;
        chosen[s] = iscale[FIRST_GUESS][s];
    }
    for k in 0..QX_CANDIDATES {
        for s in 0..N {
            // Selected by bit masks, so that the lanes vectorise (as `if`s the compiler turns
            // them back into branches around the division): a quotient by 0 is computed and
            // discarded.
            let (lx, l2) = (sumlx[k][s], suml2[k][s]);
            let candidate = pick(mask(l2 != 0.0), lx / l2, 0.0);
            let better = mask((l2 > 0.0) & (lx * lx > best[s] * l2));
            scale[s] = pick(better, candidate, scale[s]);
            best[s] = pick(better, candidate * lx, best[s]);
            chosen[s] = pick(better, iscale[k][s], chosen[s]);
        }
    }
    std::array::from_fn(|s| {
        if amax[s] < GROUP_MAX_EPS {
            QxSearch {
                scale: 0.0,
                iscale: None,
            }
        } else {
            QxSearch {
                scale: scale[s],
                iscale: Some(chosen[s]),
            }
        }
    })
}

/// The candidates `is = −9…9, is ≠ 0` of [`make_qx_quants`] are lanes `0..18`, its first
/// guess lane 18 (padded to a multiple of 8 lanes).
const QX_CANDIDATES: usize = 18;
const FIRST_GUESS: usize = QX_CANDIDATES;
const QX_LANES: usize = 24;

/// `is` of each candidate lane of [`make_qx_quants`] (the first guess's is 0).
const QX_IS: [f32; QX_LANES] = [
    -9.0, -8.0, -7.0, -6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0,
    9.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
];

/// The step of a [`make_qx_quants`] search: its candidates in ggml's order (the first guess,
/// then `is = −9…9`), the least-squares scale of each and the objective it maximises.
fn qx_step(
    nmax: i32,
    max: f32,
    sums: &CandidateSums,
    scales: &[f32; QX_LANES],
    bests: &[f32; QX_LANES],
    chosen: usize,
) -> Step {
    let order = std::iter::once(FIRST_GUESS).chain(0..QX_CANDIDATES);
    let rows = order
        .clone()
        .map(|k| {
            let valid = k == FIRST_GUESS || sums.suml2[k] > 0.0;
            vec![
                QX_IS[k] as f64,
                sums.iscale[k] as f64,
                if valid { scales[k] as f64 } else { f64::NAN },
                if valid { bests[k] as f64 } else { f64::NAN },
            ]
        })
        .collect();
    let picked = order.clone().position(|k| k == chosen).unwrap_or(0);
    Step::new(
        "Sub-block scale search (make_qx_quants)",
        "iscale = −(nmax + 0.1·is)/max for the first guess (is = 0) and is = −9…9; codes l = clamp(round(iscale·x), −nmax, nmax − 1); scale = Σw·x·l / Σw·l²; keep the candidate with the largest (Σw·x·l)²/Σw·l²",
        QX_SOURCE,
    )
    .value("nmax", nmax)
    .value("max", max)
    .value("scale", scales[chosen])
    .candidates(Candidates::new(
        &["is", "iscale", "scale", "(Σw·x·l)²/Σw·l²"],
        rows,
        picked,
        "largest (Σw·x·l)²/Σw·l², a later candidate only when strictly larger (the first maximum)",
    ))
}

const QX_SOURCE: &str = "ggml/src/ggml-quants.c:628 make_qx_quants (ggml d99724f2)";
const QKX2_SOURCE: &str = "ggml/src/ggml-quants.c:799 make_qkx2_quants (ggml d99724f2)";
const QKX3_SOURCE: &str = "ggml/src/ggml-quants.c:993 make_qkx3_quants (ggml d99724f2)";
const QP_SOURCE: &str = "ggml/src/ggml-quants.c:1076 make_qp_quants (ggml d99724f2)";
const Q3_SOURCE: &str = "ggml/src/ggml-quants.c:697 make_q3_quants (ggml d99724f2)";

/// `nearest_int(v).clamp(low, high)` as a float, without leaving float lanes: `|v| ≤ nmax + 1`
/// in the searches, so `v + 1.5·2²³` rounds `v` half to even onto an integer (its unit in the
/// last place is 1) that subtracting the constant recovers exactly.
#[inline(always)]
fn clamped_code(v: f32, low: f32, high: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    let l = (v + MAGIC) - MAGIC;
    let l = if l < low { low } else { l };
    if l > high {
        high
    } else {
        l
    }
}

/// Each candidate's `iscale`, `Σw·x·l` and `Σw·l²`.
struct CandidateSums {
    iscale: [f32; QX_LANES],
    sumlx: [f32; QX_LANES],
    suml2: [f32; QX_LANES],
}

impl CandidateSums {
    /// (Inlined into its callers, which the Q6_K encoder compiles for wide vectors, `crate::simd`.)
    #[inline(always)]
    fn of(nmax: i32, max: f32, x: &[f32], weights: Weights) -> Self {
        let nmax_f = nmax as f32;
        // `is` per lane: −9…−1, 1…9, then 0 (the first guess −nmax/max, and the padding).
        let mut iscale = [0.0f32; QX_LANES];
        for k in 0..QX_LANES {
            iscale[k] = -(nmax_f + 0.1f32 * QX_IS[k]) / max;
        }
        let (low, high) = (-nmax_f, nmax_f - 1.0);
        let (mut sumlx, mut suml2) = ([0.0f32; QX_LANES], [0.0f32; QX_LANES]);
        for i in 0..x.len() {
            let (xi, w) = (x[i], weights.at(x, i));
            let wx = w * xi;
            for k in 0..QX_LANES {
                let l = clamped_code(iscale[k] * xi, low, high);
                sumlx[k] += wx * l;
                suml2[k] += w * l * l;
            }
        }
        Self {
            iscale,
            sumlx,
            suml2,
        }
    }
}

/// `make_q3_quants(n, nmax, x, L, do_rmse = true)`; `codes` receives `l + nmax`.
pub fn make_q3_quants(nmax: i32, x: &[f32], codes: &mut [i8]) -> f32 {
    let n = x.len();
    let (max, amax) = signed_max(x);
    if amax < GROUP_MAX_EPS {
        codes[..n].fill(0);
        return 0.0;
    }
    let clamp = |l: i32| l.clamp(-nmax, nmax - 1);
    let iscale = -(nmax as f32) / max;
    let mut sumlx = 0.0f32;
    let mut suml2 = 0.0f32;
    for i in 0..n {
        let l = clamp(nearest_int(iscale * x[i]));
        codes[i] = l as i8;
        let w = x[i] * x[i];
        let lf = l as f32;
        sumlx += w * x[i] * lf;
        suml2 += w * lf * lf;
    }
    for _ in 0..5 {
        let mut changed = 0;
        for i in 0..n {
            let w = x[i] * x[i];
            let li = codes[i] as f32;
            let mut slx = sumlx - w * x[i] * li;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * li * li;
                let new_l = clamp(nearest_int(x[i] * sl2 / slx));
                if new_l != codes[i] as i32 {
                    let nl = new_l as f32;
                    slx += w * x[i] * nl;
                    sl2 += w * nl * nl;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        codes[i] = new_l as i8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed += 1;
                    }
                }
            }
        }
        if changed == 0 {
            break;
        }
    }
    for c in codes[..n].iter_mut() {
        *c += nmax as i8;
    }
    let scale = if suml2 > 0.0 { sumlx / suml2 } else { 0.0 };
    derivation::record(|| {
        Step::new(
            "Sub-block scale by coordinate descent (make_q3_quants)",
            "start iscale = −nmax/max (max: the signed value of largest |x|), codes l = clamp(round(iscale·x), −nmax, nmax − 1); up to 5 passes: each code moves to round(x·Σw·l²/Σw·x·l) (its own term removed) when that raises (Σw·x·l)²/Σw·l², w = x²; scale = Σw·x·l / Σw·l²",
            Q3_SOURCE,
        )
        .value("nmax", nmax)
        .value("max", max)
        .value("start iscale", iscale)
        .value("scale", scale)
    });
    scale
}

/// Which of the two asymmetric searches runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asymmetric {
    /// `make_qkx2_quants`: refuses `max == min`.
    Qkx2,
    /// `make_qkx3_quants`: refuses `max ≤ min`.
    Qkx3,
}

/// The candidate grid of an asymmetric search: `iscale = (rmin + rdelta·is + nmax)/(max − min)`
/// for `is = 0…nstep`.
#[derive(Debug, Clone, Copy)]
pub struct Grid {
    pub rmin: f32,
    pub rdelta: f32,
    pub nstep: i32,
    /// Absolute (true) or squared (false) error.
    pub use_mad: bool,
}

/// `make_qkx2_quants` / `make_qkx3_quants(n, nmax, x, w, L, &the_min, Laux, rmin, rdelta,
/// nstep, use_mad)`: returns `(scale, the_min)` with `the_min = −min ≥ 0` (or `−0.0`).
pub fn make_qkx_quants(
    kind: Asymmetric,
    nmax: i32,
    x: &[f32],
    weights: &[f32],
    codes: &mut [u8],
    grid: Grid,
) -> (f32, f32) {
    let n = x.len();
    let mut min = x[0];
    let mut max = x[0];
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..n {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        let w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    let degenerate = match kind {
        Asymmetric::Qkx2 => max == min,
        Asymmetric::Qkx3 => max <= min,
    };
    let source = match kind {
        Asymmetric::Qkx2 => QKX2_SOURCE,
        Asymmetric::Qkx3 => QKX3_SOURCE,
    };
    if degenerate {
        codes[..n].fill(0);
        derivation::record(|| {
            Step::new(
                "Sub-block scale and min search (make_qkx_quants)",
                "every value equal: scale = 0, codes 0, the min stored as −min",
                source,
            )
            .value("min", min)
            .value("max", max)
            .value("scale", 0.0f32)
            .value("the_min", -min)
        });
        return (0.0, -min);
    }
    let nmax_f = nmax as f32;
    let err = |d: f32| if grid.use_mad { d.abs() } else { d * d };
    let mut iscale = nmax_f / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0.0f32;
    for i in 0..n {
        let l = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
        codes[i] = l as u8;
        let diff = scale * codes[i] as f32 + min - x[i];
        best_error += weights[i] * err(diff);
    }
    // The candidate table, kept only while a derivation records: the start, then each `is`.
    let mut table = derivation::recording().then(|| QkxTable {
        start: (min, max),
        rows: vec![vec![
            f64::NAN,
            iscale as f64,
            scale as f64,
            min as f64,
            best_error as f64,
        ]],
        picked: 0,
    });
    if grid.nstep < 1 {
        if let Some(t) = table {
            derivation::record(|| t.step(kind, nmax, grid, scale, -min));
        }
        return (scale, -min);
    }
    let mut aux = [0u8; 256];
    for is in 0..=grid.nstep {
        iscale = (grid.rmin + grid.rdelta * is as f32 + nmax_f) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0.0f32, 0.0f32, 0.0f32);
        for i in 0..n {
            let l = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
            aux[i] = l as u8;
            let w = weights[i];
            let lf = l as f32;
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        let d = sum_w * sum_l2 - sum_l * sum_l;
        if d > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / d;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / d;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0.0f32;
            for i in 0..n {
                let diff = this_scale * aux[i] as f32 + this_min - x[i];
                cur_error += weights[i] * err(diff);
            }
            if let Some(t) = table.as_mut() {
                t.rows.push(vec![
                    is as f64,
                    iscale as f64,
                    this_scale as f64,
                    this_min as f64,
                    cur_error as f64,
                ]);
            }
            if cur_error < best_error {
                codes[..n].copy_from_slice(&aux[..n]);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
                if let Some(t) = table.as_mut() {
                    t.picked = t.rows.len() - 1;
                }
            }
        } else if let Some(t) = table.as_mut() {
            t.rows
                .push(vec![is as f64, iscale as f64, f64::NAN, f64::NAN, f64::NAN]);
        }
    }
    if let Some(t) = table {
        derivation::record(|| t.step(kind, nmax, grid, scale, -min));
    }
    (scale, -min)
}

/// The candidates of one [`make_qkx_quants`] search, while a derivation records.
struct QkxTable {
    /// The sub-block's `(min, max)`, min clamped to ≤ 0.
    start: (f32, f32),
    /// `[is, iscale, scale, min, error]`; the start's `is` is NaN.
    rows: Vec<Vec<f64>>,
    picked: usize,
}

impl QkxTable {
    fn step(self, kind: Asymmetric, nmax: i32, grid: Grid, scale: f32, the_min: f32) -> Step {
        let (source, refuses) = match kind {
            Asymmetric::Qkx2 => (QKX2_SOURCE, "max = min"),
            Asymmetric::Qkx3 => (QKX3_SOURCE, "max ≤ min"),
        };
        let error = if grid.use_mad { "Σw·|e|" } else { "Σw·e²" };
        Step::new(
            "Sub-block scale and min search (make_qkx_quants)",
            format!(
                "start iscale = nmax/(max − min) (first row); then iscale = (rmin + rdelta·is + nmax)/(max − min) for is = 0…nstep; codes l = clamp(round(iscale·(x − min)), 0, nmax); weighted least squares for (scale, min), min ≤ 0; error {error} with e = scale·l + min − x (refuses {refuses})"
            ),
            source,
        )
        .value("nmax", nmax)
        .value("min", self.start.0)
        .value("max", self.start.1)
        .value("rmin", grid.rmin)
        .value("rdelta", grid.rdelta)
        .value("nstep", grid.nstep)
        .value("scale", scale)
        .value("the_min", the_min)
        .candidates(Candidates::new(
            &["is", "iscale", "scale", "min", "error"],
            self.rows,
            self.picked,
            "a candidate replaces the best only when its error is strictly smaller (the first minimum); a candidate whose least-squares determinant is ≤ 0 is skipped",
        ))
    }
}

/// `make_qp_quants(n, nmax, x, L, quant_weights)` for non-negative `x` (sub-block scales or
/// mins); codes are stored as `u8` exactly as C stores its `int` codes (wrapping).
pub fn make_qp_quants(nmax: i32, x: &[f32], codes: &mut [u8], weights: &[f32]) -> f32 {
    let n = x.len();
    let mut max = 0.0f32;
    for &v in x {
        max = if max > v { max } else { v }; // MAX(max, x[i])
    }
    if max < GROUP_MAX_EPS {
        codes[..n].fill(0);
        return 0.0;
    }
    let nmax_f = nmax as f32;
    let mut iscale = nmax_f / max;
    for i in 0..n {
        codes[i] = nearest_int(iscale * x[i]) as u8;
    }
    let scale = 1.0 / iscale;
    let mut best_mse = 0.0f32;
    for i in 0..n {
        let diff = x[i] - scale * codes[i] as f32;
        best_mse += weights[i] * diff * diff;
    }
    let mut table =
        derivation::recording().then(|| (vec![vec![0.0, iscale as f64, best_mse as f64]], 0usize));
    for is in -4..=4 {
        if is == 0 {
            continue;
        }
        let iscale_is = (0.1f32 * is as f32 + nmax_f) / max;
        let scale_is = 1.0 / iscale_is;
        let mut mse = 0.0f32;
        for i in 0..n {
            let l = nearest_int(iscale_is * x[i]).min(nmax);
            let diff = x[i] - scale_is * l as f32;
            mse += weights[i] * diff * diff;
        }
        if let Some((rows, _)) = table.as_mut() {
            rows.push(vec![is as f64, iscale_is as f64, mse as f64]);
        }
        if mse < best_mse {
            best_mse = mse;
            iscale = iscale_is;
            if let Some((rows, picked)) = table.as_mut() {
                *picked = rows.len() - 1;
            }
        }
    }
    let mut sumlx = 0.0f32;
    let mut suml2 = 0.0f32;
    for i in 0..n {
        let l = nearest_int(iscale * x[i]).min(nmax);
        codes[i] = l as u8;
        let w = weights[i];
        let lf = l as f32; // the int, not the stored byte
        sumlx += w * x[i] * lf;
        suml2 += w * lf * lf;
    }
    for _ in 0..5 {
        let mut changed = 0;
        for i in 0..n {
            let w = weights[i];
            let li = codes[i] as f32;
            let mut slx = sumlx - w * x[i] * li;
            let mut sl2 = suml2 - w * li * li;
            if slx > 0.0 && sl2 > 0.0 {
                let new_l = nearest_int(x[i] * sl2 / slx).min(nmax);
                if new_l != codes[i] as i32 {
                    let nl = new_l as f32;
                    slx += w * x[i] * nl;
                    sl2 += w * nl * nl;
                    if slx * slx * suml2 > sumlx * sumlx * sl2 {
                        codes[i] = new_l as u8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed += 1;
                    }
                }
            }
        }
        if changed == 0 {
            break;
        }
    }
    let scale = if suml2 > 0.0 { sumlx / suml2 } else { 0.0 };
    if let Some((rows, picked)) = table {
        derivation::record(|| {
            Step::new(
                "Scales of the sub-block scales (make_qp_quants)",
                "iscale = (nmax + 0.1·is)/max for is = 0 (first row) and ±1…±4; codes l = min(nmax, round(iscale·x)), weighted squared error; then up to 5 passes of coordinate descent on the codes; scale = Σw·x·l / Σw·l²",
                QP_SOURCE,
            )
            .value("nmax", nmax)
            .value("max", max)
            .value("codes", codes[..n].iter().map(|&c| c as i64).collect::<Vec<i64>>())
            .value("scale", scale)
            .candidates(Candidates::new(
                &["is", "iscale", "Σw·e²"],
                rows,
                picked,
                "a candidate replaces the best only when its error is strictly smaller (the first minimum)",
            ))
        });
    }
    scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_int_rounds_half_to_even() {
        let cases = [
            (0.5f32, 0),
            (1.5, 2),
            (2.5, 2),
            (-0.5, 0),
            (-1.5, -2),
            (-2.5, -2),
            (2.4999998, 2),
            (-7.6, -8),
            (4_194_303.0, 4_194_303),
            (-4_194_303.0, -4_194_303),
        ];
        for (x, want) in cases {
            assert_eq!(nearest_int(x), want, "{x}");
        }
    }

    #[test]
    fn qx_quants_recovers_an_exact_grid() {
        // Values on a grid of step 0.25 with the negative extreme first: the least-squares
        // scale is the grid step with a sign (codes are l + nmax).
        let x: Vec<f32> = (0..16).map(|i| (i as f32 - 8.0) * 0.25).collect();
        let mut codes = [0i8; 16];
        let scale = make_qx_quants(8, &x, &mut codes, Weights::Squares);
        let back: Vec<f32> = codes.iter().map(|&c| (c as f32 - 8.0) * scale).collect();
        for (a, b) in x.iter().zip(&back) {
            assert!((a - b).abs() < 1e-6, "{x:?} → {back:?}");
        }
    }

    #[test]
    fn qkx_quants_handles_constant_and_positive_blocks() {
        let mut codes = [7u8; 8];
        let x = [0.0f32; 8];
        let w = [1.0f32; 8];
        let grid = Grid {
            rmin: -1.0,
            rdelta: 0.1,
            nstep: 20,
            use_mad: false,
        };
        assert_eq!(
            make_qkx_quants(Asymmetric::Qkx2, 15, &x, &w, &mut codes, grid),
            (0.0, -0.0)
        );
        assert_eq!(codes, [0; 8]);
        // All positive: the starting min is clamped to 0; the least-squares min may go below
        // it (the_min ≥ 0) but never above, and the reconstruction stays within half a step.
        let x: Vec<f32> = (1..=8).map(|i| i as f32).collect();
        let (scale, the_min) = make_qkx_quants(Asymmetric::Qkx3, 15, &x, &w, &mut codes, grid);
        assert!(scale > 0.0 && the_min >= 0.0, "{scale} {the_min}");
        for (&c, &v) in codes.iter().zip(&x) {
            assert!((scale * c as f32 - the_min - v).abs() <= scale / 2.0 + 1e-6);
        }
    }
}
