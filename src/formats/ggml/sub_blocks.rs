//! The per-sub-block passes ggml's quantizers share (ggml-quants.c @ d99724f2), in float32 with
//! sums accumulated left to right as the C loops do:
//!
//! * [`sum_squares`]: `Σx²`, from which each `_impl` path derives its `σ²` (`Σx²/n` for Q2_K and
//!   the legacy types, `2·Σx²/256` for Q3_K…Q5_K);
//! * [`imatrix_weights`]: the importance weights of the `_impl` paths, `qw·√(σ² + x²)`;
//! * [`fit_asymmetric`]: [`make_qkx_quants`] on every sub-block of a Q2_K/Q4_K/Q5_K super-block,
//!   giving each sub-block's `(scale, min)` and the sum of its weights (what
//!   [`make_qp_quants`](super::search::make_qp_quants) weighs the scales by);
//! * [`requantize_asymmetric`]: every element again with the stored (fp16-rounded) scales, by
//!   **division**, `q = clamp(nearest_int((x + dmin·mn)/(d·sc)), 0, nmax)`; a sub-block with
//!   `d·sc = 0` keeps the search's codes.
//!
//! The golden sets `ggml/q2_k*`, `ggml/q4_k*`, `ggml/q5_k*` (reference and imatrix paths) pin
//! them byte for byte.

use super::search::{make_qkx_quants, nearest_int, Asymmetric, Grid};

/// `Σx²`, accumulated left to right.
pub fn sum_squares(x: &[f32]) -> f32 {
    let mut sum = 0.0f32;
    for &v in x {
        sum += v * v;
    }
    sum
}

/// `Σx`, accumulated left to right.
pub fn sum(x: &[f32]) -> f32 {
    let mut sum = 0.0f32;
    for &v in x {
        sum += v;
    }
    sum
}

/// The weights of the imatrix paths: `qw·√(σ² + x²)` per element of `x`.
pub fn imatrix_weights(x: &[f32], qw: &[f32], sigma2: f32) -> Vec<f32> {
    x.iter()
        .zip(qw)
        .map(|(&v, &q)| q * (sigma2 + v * v).sqrt())
        .collect()
}

/// The asymmetric fit of every sub-block of a super-block.
#[derive(Debug, Clone, PartialEq)]
pub struct AsymmetricFits {
    /// Per sub-block, the least-squares scale.
    pub scales: Vec<f32>,
    /// Per sub-block, `−min ≥ 0`.
    pub mins: Vec<f32>,
    /// Per sub-block, `Σw` of its weights.
    pub weight_sums: Vec<f32>,
}

/// The largest of `values` and 0 (`if (v > max) max = v;` from 0).
fn positive_max(values: &[f32]) -> f32 {
    values
        .iter()
        .fold(0.0f32, |max, &v| if v > max { v } else { max })
}

impl AsymmetricFits {
    /// The largest scale (0 when none is positive).
    pub fn max_scale(&self) -> f32 {
        positive_max(&self.scales)
    }

    /// The largest min (0 when none is positive).
    pub fn max_min(&self) -> f32 {
        positive_max(&self.mins)
    }
}

/// `make_qkx_quants(kind, nmax, ·, grid)` on every `size`-value sub-block `j` of `x`, weighted
/// by `weights(j, sub_block)`; the codes go to `codes`.
pub fn fit_asymmetric(
    x: &[f32],
    size: usize,
    kind: Asymmetric,
    nmax: i32,
    grid: Grid,
    codes: &mut [u8],
    weights: impl Fn(usize, &[f32]) -> Vec<f32>,
) -> AsymmetricFits {
    let count = x.len() / size;
    let mut fits = AsymmetricFits {
        scales: Vec::with_capacity(count),
        mins: Vec::with_capacity(count),
        weight_sums: Vec::with_capacity(count),
    };
    for (j, (xs, ls)) in x
        .chunks_exact(size)
        .zip(codes.chunks_exact_mut(size))
        .enumerate()
    {
        let w = weights(j, xs);
        let (scale, min) = make_qkx_quants(kind, nmax, xs, &w, ls, grid);
        fits.scales.push(scale);
        fits.mins.push(min);
        fits.weight_sums.push(sum(&w));
    }
    fits
}

/// Requantize every `size`-value sub-block `j` of `x` with its stored `(d·sc, dmin·mn)` =
/// `scale_min(j)`: `q = clamp(nearest_int((x + dmin·mn)/(d·sc)), 0, nmax)`, skipping sub-blocks
/// with `d·sc = 0`.
pub fn requantize_asymmetric(
    x: &[f32],
    size: usize,
    nmax: i32,
    codes: &mut [u8],
    scale_min: impl Fn(usize) -> (f32, f32),
) {
    for (j, (xs, ls)) in x
        .chunks_exact(size)
        .zip(codes.chunks_exact_mut(size))
        .enumerate()
    {
        let (d, dm) = scale_min(j);
        if d == 0.0 {
            continue;
        }
        for (l, &v) in ls.iter_mut().zip(xs) {
            *l = nearest_int((v + dm) / d).clamp(0, nmax) as u8;
        }
    }
}
