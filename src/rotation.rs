//! Randomized Hadamard rotations along the input dimension (QuaRot, SpinQuant).
//!
//! The rotation of a length-`n` vector `x` is `Q·x` with `Q = H·D / √n`: `D` a diagonal of
//! random signs (SplitMix64 from the seed) and `H` a Hadamard matrix of order `n`
//! (`H·Hᵀ = n·I`), so `Q` is orthogonal: rotating a weight's rows and the matching activation's
//! rows by the same `Q` leaves every product `w·x` unchanged, while spreading each outlier over
//! the whole row. The inverse is `Qᵀ·x = D·Hᵀ·x / √n`.
//!
//! **Which Hadamard matrix.** As in QuaRot's `get_hadK`, `n = m·2ᵏ` uses `H = H_m ⊗ H_{2ᵏ}`:
//! `H_{2ᵏ}` is Sylvester's, applied by the fast Walsh–Hadamard transform (`n log n`), and `H_m`
//! (`m > 1`) a small Hadamard matrix, here built by Paley's constructions rather than hard-coded:
//! Paley I gives order `q + 1` for a prime `q ≡ 3 (mod 4)` (12, 20, 24, 32, 44, 48, 60, …), Paley II
//! order `2(q + 1)` for a prime `q ≡ 1 (mod 4)` (12, 28, 36, 60, 76, …). The smallest `m` that works
//! is used. Sizes with no such factorisation (e.g. 11008 = 2⁸·43, for which QuaRot hard-codes a
//! matrix of order 172) are rotated block by block instead: a block-diagonal rotation over blocks of
//! the largest order that divides `n` and can be built; [`Rotation::blocks`] says so.

use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The largest small factor `m` searched for `n = m·2ᵏ`.
const LARGEST_FACTOR: usize = 256;

/// A seeded randomized Hadamard rotation of vectors of one length.
#[derive(Debug, Clone, PartialEq)]
pub struct Rotation {
    /// The vector length `n`.
    pub n: usize,
    /// The order of each diagonal block (`n` unless the size has no construction).
    pub block: usize,
    /// The small Hadamard factor `m` of `block = m·2ᵏ` (1 for a power of two).
    pub factor: usize,
    /// The random signs `D`, one per element.
    signs: Vec<f32>,
    /// `H_m`, row-major (`factor²` entries of ±1).
    small: Vec<f64>,
}

impl Rotation {
    /// The rotation of length-`n` vectors with the signs of `seed`.
    pub fn new(n: usize, seed: u64) -> Result<Rotation> {
        if n == 0 {
            return Err(Error::input(
                "a rotation needs vectors of at least one element",
            ));
        }
        let (block, factor) = largest_block(n);
        let small = hadamard_small(factor).ok_or_else(|| {
            Error::input(format!("no Hadamard matrix of order {factor} (internal)"))
        })?;
        let mut state = seed;
        let signs = (0..n)
            .map(|_| {
                if splitmix64(&mut state) >> 63 == 0 {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        Ok(Rotation {
            n,
            block,
            factor,
            signs,
            small,
        })
    }

    /// How many diagonal blocks the rotation has (1 when a Hadamard matrix of order `n` is
    /// built).
    pub fn blocks(&self) -> usize {
        self.n / self.block
    }

    /// A sentence saying which matrix rotates: its order, its factors, its blocks.
    pub fn describe(&self) -> String {
        let kind = if self.factor == 1 {
            format!("Sylvester order {}", self.block)
        } else {
            format!(
                "H_{} ⊗ Sylvester H_{} (order {})",
                self.factor,
                self.block / self.factor,
                self.block
            )
        };
        if self.blocks() == 1 {
            format!("randomized Hadamard, {kind}")
        } else {
            format!(
                "randomized Hadamard block by block: {} blocks of {kind}, as no Hadamard matrix of order {} is built here",
                self.blocks(),
                self.n
            )
        }
    }

    /// Rotate `x` (length `n`) in place: `x ← H·D·x / √block` block by block.
    pub fn apply(&self, x: &mut [f32]) {
        for (x, d) in x.iter_mut().zip(&self.signs) {
            *x *= d;
        }
        self.blockwise(x, false);
    }

    /// Undo [`Rotation::apply`]: `x ← D·Hᵀ·x / √block`.
    pub fn invert(&self, x: &mut [f32]) {
        self.blockwise(x, true);
        for (x, d) in x.iter_mut().zip(&self.signs) {
            *x *= d;
        }
    }

    /// `x ← H·x / √block` (or `Hᵀ`) on each block of `x`, in float64.
    fn blockwise(&self, x: &mut [f32], transpose: bool) {
        let norm = (self.block as f64).sqrt();
        let mut work = vec![0f64; self.block];
        for chunk in x.chunks_exact_mut(self.block) {
            for (w, &v) in work.iter_mut().zip(chunk.iter()) {
                *w = f64::from(v);
            }
            self.hadamard(&mut work, transpose);
            for (v, &w) in chunk.iter_mut().zip(&work) {
                *v = (w / norm) as f32;
            }
        }
    }

    /// `x ← (H_m ⊗ H_p)·x` (or its transpose) for one block, `x` read as an `m × p` matrix `X`:
    /// `H_m·X·H_pᵀ` (Sylvester's `H_p` is symmetric).
    fn hadamard(&self, x: &mut [f64], transpose: bool) {
        let m = self.factor;
        let p = self.block / m;
        for row in x.chunks_exact_mut(p) {
            walsh_hadamard(row);
        }
        if m > 1 {
            let mut column = vec![0f64; m];
            for j in 0..p {
                for (a, c) in column.iter_mut().enumerate() {
                    *c = (0..m)
                        .map(|b| {
                            let h = if transpose {
                                self.small[b * m + a]
                            } else {
                                self.small[a * m + b]
                            };
                            h * x[b * p + j]
                        })
                        .sum();
                }
                for (a, &c) in column.iter().enumerate() {
                    x[a * p + j] = c;
                }
            }
        }
    }

    /// `t` with every row (along its last axis, of length `n`) rotated.
    pub fn rotate_rows(&self, t: &Tensor) -> Result<Tensor> {
        let n = t.shape.last().copied().unwrap_or(t.data.len());
        if n != self.n {
            return Err(Error::input(format!(
                "the rotation is for rows of {} values, the tensor's last axis has {n}",
                self.n
            )));
        }
        let mut data = t.data.clone();
        for row in data.chunks_exact_mut(n) {
            self.apply(row);
        }
        Tensor::new(t.shape.clone(), data)
    }
}

/// `batches` with every row (along the last axis) rotated by the randomized Hadamard rotation
/// `spec` names (`hadamard` or `hadamard:SEED`, see the module docs), and the rotation's
/// description. Every batch must have rows of the same length.
pub fn rotate_batches(batches: &[Tensor], spec: &str) -> Result<(Vec<Tensor>, String)> {
    let seed = parse(spec)?;
    let row = |t: &Tensor| t.shape.last().copied().unwrap_or(t.data.len());
    let n = batches.first().map(row).unwrap_or(0);
    if let Some(other) = batches.iter().map(row).find(|&m| m != n) {
        return Err(Error::input(format!(
            "--rotate needs batches with rows of one length, not {n} and {other}"
        )));
    }
    let rotation = Rotation::new(n, seed)?;
    let rotated = batches
        .iter()
        .map(|t| rotation.rotate_rows(t))
        .collect::<Result<Vec<_>>>()?;
    Ok((
        rotated,
        format!(
            "{} along the last axis (n = {n}, seed {seed})",
            rotation.describe()
        ),
    ))
}

/// Parse `hadamard` or `hadamard:SEED` (the CLI's `--rotate`) into the seed (default 0).
pub fn parse(spec: &str) -> Result<u64> {
    match spec.split_once(':') {
        None if spec == "hadamard" => Ok(0),
        Some(("hadamard", seed)) => seed.parse().map_err(|_| {
            Error::input(format!(
                "--rotate hadamard:SEED takes a non-negative integer seed, not {seed:?}"
            ))
        }),
        _ => Err(Error::input(format!(
            "--rotate takes hadamard or hadamard:SEED, not {spec:?}"
        ))),
    }
}

/// A rotation's gain in SQNR (dB) below which it "does not help".
pub const NO_HELP_DB: f64 = 0.5;

/// Whether a rotation helped a method: its SQNR (dB) gained at least [`NO_HELP_DB`].
pub fn helps(before_db: f64, after_db: f64) -> bool {
    after_db - before_db >= NO_HELP_DB
}

/// What a rotation did to each method, in words: the methods it helped (SQNR gain of at least
/// [`NO_HELP_DB`]) and those it did not, from `(label, SQNR before, SQNR after)` rows.
pub fn verdict(rows: &[(String, Option<f64>, Option<f64>)]) -> String {
    let num = crate::plot::fmt_num;
    let measured: Vec<(&str, f64, f64)> = rows
        .iter()
        .filter_map(|(label, before, after)| Some((label.as_str(), (*before)?, (*after)?)))
        .collect();
    let list = |helped: bool| -> Vec<String> {
        measured
            .iter()
            .filter(|(_, before, after)| helps(*before, *after) == helped)
            .map(|(label, before, after)| {
                let g = after - before;
                format!("{label} ({}{} dB)", if g >= 0.0 { "+" } else { "" }, num(g))
            })
            .collect()
    };
    let (helped, not) = (list(true), list(false));
    let mut out = Vec::new();
    if !helped.is_empty() {
        out.push(format!("Rotation helps {}.", helped.join(", ")));
    }
    if !not.is_empty() {
        out.push(format!(
            "It does not help {}: their scales already follow the values (a scale per small \
             block, or a floating-point exponent per value), so an outlier spoils little but itself.",
            not.join(", ")
        ));
    }
    out.join(" ")
}

/// SplitMix64: the next value of the sequence at `state`.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The fast Walsh–Hadamard transform of `x` (length a power of two), unnormalised.
fn walsh_hadamard(x: &mut [f64]) {
    let n = x.len();
    let mut h = 1;
    while h < n {
        for start in (0..n).step_by(2 * h) {
            for i in start..start + h {
                let (a, b) = (x[i], x[i + h]);
                x[i] = a + b;
                x[i + h] = a - b;
            }
        }
        h *= 2;
    }
}

/// The largest block order `m·2ᵏ` dividing `n` for which a Hadamard matrix is built, and its
/// smallest factor `m`.
fn largest_block(n: usize) -> (usize, usize) {
    let power = 1usize << n.trailing_zeros();
    let odd = n / power;
    // The smallest m = odd·2ʲ with a construction gives a Hadamard matrix of order n.
    for m in (1..=LARGEST_FACTOR).filter(|m| m % odd == 0 && power.is_multiple_of(m / odd)) {
        if (m / odd).is_power_of_two() && hadamard_small(m).is_some() {
            return (n, m);
        }
    }
    // Otherwise the largest constructible divisor of n.
    let mut best = (power, 1);
    for m in (2..=LARGEST_FACTOR).filter(|&m| n.is_multiple_of(m)) {
        if hadamard_small(m).is_some() {
            let block = m * (1usize << (n / m).trailing_zeros());
            if block > best.0 {
                best = (block, m);
            }
        }
    }
    best
}

fn is_prime(q: usize) -> bool {
    q >= 2
        && (2..)
            .take_while(|d| d * d <= q)
            .all(|d| !q.is_multiple_of(d))
}

/// The quadratic character of `a` modulo the prime `q`: 0, 1 or −1.
fn chi(a: i64, q: i64) -> f64 {
    let a = a.rem_euclid(q);
    if a == 0 {
        return 0.0;
    }
    if (1..q).any(|x| (x * x) % q == a) {
        1.0
    } else {
        -1.0
    }
}

/// A Hadamard matrix of order `m` (row-major ±1) by Sylvester (`m = 1`), Paley I (`m = q + 1`,
/// `q ≡ 3 mod 4` prime) or Paley II (`m = 2(q + 1)`, `q ≡ 1 mod 4` prime); `None` otherwise.
fn hadamard_small(m: usize) -> Option<Vec<f64>> {
    if m == 1 {
        return Some(vec![1.0]);
    }
    if m == 2 {
        return Some(vec![1.0, 1.0, 1.0, -1.0]);
    }
    let q = m - 1;
    if is_prime(q) && q % 4 == 3 {
        // H = I + S, S = [[0, 1ᵀ], [−1, Q]] with the Jacobsthal matrix Q[i][j] = χ(j − i).
        let qi = q as i64;
        let mut h = vec![0.0; m * m];
        for i in 0..m {
            for j in 0..m {
                let s = match (i, j) {
                    (0, 0) => 0.0,
                    (0, _) => 1.0,
                    (_, 0) => -1.0,
                    _ => chi(j as i64 - i as i64, qi),
                };
                h[i * m + j] = s + if i == j { 1.0 } else { 0.0 };
            }
        }
        return Some(h);
    }
    if m.is_multiple_of(2) {
        let q = m / 2 - 1;
        if is_prime(q) && q % 4 == 1 {
            // C = [[0, 1ᵀ], [1, Q]] (symmetric conference matrix of order q + 1);
            // H = C ⊗ [[1, −1], [−1, −1]] + I ⊗ [[1, 1], [1, −1]].
            let (qi, c) = (q as i64, q + 1);
            let conference = |i: usize, j: usize| match (i, j) {
                (0, 0) => 0.0,
                (0, _) | (_, 0) => 1.0,
                _ => chi(j as i64 - i as i64, qi),
            };
            let mut h = vec![0.0; m * m];
            for i in 0..c {
                for j in 0..c {
                    let v = conference(i, j);
                    let (a, b) = if i == j { (1.0, 1.0) } else { (0.0, 0.0) };
                    let block = [[v + a, -v + b], [-v + b, -v - a]];
                    for (r, row) in block.iter().enumerate() {
                        for (s, &x) in row.iter().enumerate() {
                            h[(2 * i + r) * m + 2 * j + s] = x;
                        }
                    }
                }
            }
            return Some(h);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_hadamard(h: &[f64], m: usize) -> bool {
        (0..m).all(|i| {
            (0..m).all(|j| {
                let dot: f64 = (0..m).map(|k| h[i * m + k] * h[j * m + k]).sum();
                dot == if i == j { m as f64 } else { 0.0 }
            })
        })
    }

    #[test]
    fn paleys_constructions_give_hadamard_matrices() {
        let built: Vec<usize> = (1..=LARGEST_FACTOR)
            .filter(|&m| hadamard_small(m).is_some())
            .collect();
        for &m in &built {
            assert!(is_hadamard(&hadamard_small(m).unwrap(), m), "order {m}");
        }
        for m in [12, 20, 28, 36, 44, 60, 76, 108, 140] {
            assert!(built.contains(&m), "order {m} is built");
        }
        assert!(hadamard_small(172).is_none());
    }

    /// `Q·x` by the definition, `H` assembled densely in float64.
    fn dense(r: &Rotation, x: &[f32]) -> Vec<f64> {
        let (m, b) = (r.factor, r.block);
        let p = b / m;
        let sylvester = |i: usize, j: usize| {
            if (i & j).count_ones().is_multiple_of(2) {
                1.0
            } else {
                -1.0
            }
        };
        let h = |i: usize, j: usize| r.small[(i / p) * m + j / p] * sylvester(i % p, j % p);
        let dx: Vec<f64> = x
            .iter()
            .zip(&r.signs)
            .map(|(&v, &d)| f64::from(v * d))
            .collect();
        let mut out = vec![0.0; r.n];
        for start in (0..r.n).step_by(b) {
            for i in 0..b {
                out[start + i] =
                    (0..b).map(|j| h(i, j) * dx[start + j]).sum::<f64>() / (b as f64).sqrt();
            }
        }
        out
    }

    #[test]
    fn the_rotation_is_orthogonal_and_matches_the_dense_float64_product() {
        for (n, block) in [
            (64, 64),
            (384, 384),
            (96, 96),
            (1344, 1344),
            (11008, 256),
            (7, 1),
        ] {
            let r = Rotation::new(n, 7).unwrap();
            assert_eq!(r.block, block, "n = {n}: {}", r.describe());
            let x: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) * if i % 17 == 0 { 30.0 } else { 1.0 })
                .collect();
            let mut y = x.clone();
            r.apply(&mut y);
            let want = dense(&r, &x);
            let norm = |v: &[f64]| v.iter().map(|a| a * a).sum::<f64>().sqrt();
            let xs: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
            let scale = norm(&xs);
            // Against the dense float64 product: within float32 rounding of the result.
            let diff: Vec<f64> = y
                .iter()
                .zip(&want)
                .map(|(&a, b)| f64::from(a) - b)
                .collect();
            assert!(
                norm(&diff) <= 1e-6 * scale,
                "n = {n}: {}",
                norm(&diff) / scale
            );
            // Orthogonal: the norm is kept and the inverse returns x.
            let ys: Vec<f64> = y.iter().map(|&v| f64::from(v)).collect();
            assert!((norm(&ys) - scale).abs() <= 1e-6 * scale);
            // The inverse returns x within float32 rounding of the vector.
            r.invert(&mut y);
            for (a, b) in y.iter().zip(&x) {
                assert!(
                    f64::from((a - b).abs()) <= 1e-6 * scale,
                    "n = {n}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn rows_keep_their_products_and_the_seed_decides_the_signs() {
        let w = Tensor::new(vec![2, 12], (0..24).map(|i| i as f32 - 11.5).collect()).unwrap();
        let x = Tensor::new(vec![1, 12], (0..12).map(|i| (i as f32).sin()).collect()).unwrap();
        let r = Rotation::new(12, 3).unwrap();
        let (rw, rx) = (r.rotate_rows(&w).unwrap(), r.rotate_rows(&x).unwrap());
        for row in 0..2 {
            let dot = |a: &Tensor, b: &Tensor| -> f64 {
                (0..12)
                    .map(|k| f64::from(a.data[row * 12 + k]) * f64::from(b.data[k]))
                    .sum()
            };
            assert!((dot(&w, &x) - dot(&rw, &rx)).abs() < 1e-4);
        }
        assert_ne!(Rotation::new(12, 3).unwrap(), Rotation::new(12, 4).unwrap());
        assert_eq!(Rotation::new(12, 3).unwrap(), r);
        assert_eq!(parse("hadamard").unwrap(), 0);
        assert_eq!(parse("hadamard:42").unwrap(), 42);
        assert!(parse("hadamard:-1").is_err() && parse("givens").is_err());
        assert!(r.rotate_rows(&Tensor::from_vec(vec![1.0; 5])).is_err());
    }

    #[test]
    fn the_verdict_sorts_methods_by_their_gain() {
        let rows = [
            ("int4".to_string(), Some(1.8), Some(12.4)),
            ("mxfp4".to_string(), Some(18.9), Some(19.0)),
            ("nf4".to_string(), None, Some(20.0)),
        ];
        assert_eq!(
            verdict(&rows),
            "Rotation helps int4 (+10.6 dB). It does not help mxfp4 (+0.1 dB): their scales already \
             follow the values (a scale per small block, or a floating-point exponent per value), so \
             an outlier spoils little but itself."
        );
    }
}
