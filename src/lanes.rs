//! Reductions of a run of values whose result does not depend on the order of the values
//! (minimum, maximum, largest magnitude), computed in eight independent lanes (sixteen for
//! [`min_max_of`]) and then folded pairwise, so that they compile to vector instructions.
//! Per-group scales (groups of 16 or 32) call them once per group: a sequential fold would be
//! one long dependency chain.

/// Lanes per reduction: one AVX2 register of float32, two SSE2/SIMD128 ones.
const LANES: usize = 8;

/// `data` in groups of eight as arrays (the last `len mod 8` values left out), so that a loop
/// over a group's lanes has a fixed trip count and becomes vector operations.
#[inline(always)]
pub(crate) fn eights(data: &[f32]) -> std::slice::Iter<'_, [f32; 8]> {
    data.as_chunks::<8>().0.iter()
}

/// `lanes[0] ⊕ … ⊕ lanes[N − 1]` folded as a tree (halves, then quarters, …, then pairs; `N` a
/// power of two).
#[inline(always)]
fn fold<const N: usize>(mut lanes: [f32; N], op: impl Fn(f32, f32) -> f32) -> f32 {
    let mut width = N / 2;
    while width > 0 {
        for k in 0..width {
            lanes[k] = op(lanes[k], lanes[k + width]);
        }
        width /= 2;
    }
    lanes[0]
}

/// `step` applied to eight lanes started at `init` over `values` (element `k` into lane
/// `k mod 8`), then the lanes folded with `op`.
#[inline(always)]
fn reduce(
    values: &[f32],
    init: f32,
    step: impl Fn(f32, f32) -> f32,
    op: impl Fn(f32, f32) -> f32,
) -> f32 {
    let mut lanes = [init; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for k in 0..LANES {
            lanes[k] = step(lanes[k], chunk[k]);
        }
    }
    for (k, &v) in chunks.remainder().iter().enumerate() {
        lanes[k] = step(lanes[k], v);
    }
    fold(lanes, op)
}

/// The smaller of two values, `a` when `b` is NaN or they are equal (a compare and select).
#[inline(always)]
fn min_skip_nan(a: f32, b: f32) -> f32 {
    if b < a {
        b
    } else {
        a
    }
}

/// The larger of two values, `a` when `b` is NaN or they are equal.
#[inline(always)]
fn max_skip_nan(a: f32, b: f32) -> f32 {
    if b > a {
        b
    } else {
        a
    }
}

/// `(min, max)` of `values` with NaN skipped; `(+∞, −∞)` when there is no number. Bit for bit
/// the sequential scan `lo = if v < lo { v } else { lo }` (and the same for `hi`): the lanes
/// can only disagree with it on the sign of a zero result, and a zero result is looked up in
/// order (the scan keeps the first zero it meets).
pub fn min_max(values: &[f32]) -> (f32, f32) {
    min_max_of(values, |v| v)
}

/// [`min_max`] of `map(v)` for every `v` of `values` (for example non-finite values read as 0).
///
/// In sixteen lanes rather than eight: with eight, LLVM packs the minimum's and the maximum's
/// lanes into one 512-bit register and shuffles them in every step where AVX-512 is on; sixteen
/// fill a register each. The lanes hold no NaN, so the tree fold gives the minimum of the
/// numbers whatever the lane count, and a zero result is looked up in order below.
#[inline(always)]
pub fn min_max_of(values: &[f32], map: impl Fn(f32) -> f32 + Copy) -> (f32, f32) {
    const WIDE: usize = 2 * LANES;
    let (lo, hi) = crate::simd::with_wide_vectors(
        #[inline(always)]
        || {
            let mut lo = [f32::INFINITY; WIDE];
            let mut hi = [f32::NEG_INFINITY; WIDE];
            let mut chunks = values.chunks_exact(WIDE);
            for chunk in &mut chunks {
                for k in 0..WIDE {
                    let v = map(chunk[k]);
                    lo[k] = min_skip_nan(lo[k], v);
                    hi[k] = max_skip_nan(hi[k], v);
                }
            }
            for (k, &v) in chunks.remainder().iter().enumerate() {
                lo[k] = min_skip_nan(lo[k], map(v));
                hi[k] = max_skip_nan(hi[k], map(v));
            }
            (fold(lo, min_skip_nan), fold(hi, max_skip_nan))
        },
    );
    let first_zero = || {
        values
            .iter()
            .map(|&v| map(v))
            .find(|&v| v == 0.0)
            .unwrap_or(0.0)
    };
    (
        if lo == 0.0 { first_zero() } else { lo },
        if hi == 0.0 { first_zero() } else { hi },
    )
}

/// `max(0, max |x|)` over `values`, NaN as soon as one value is NaN (`torch.max`'s
/// propagation; the NaN returned is `f32::NAN`).
pub fn abs_max(values: &[f32]) -> f32 {
    let step = |lane: f32, v: f32| {
        let a = v.abs();
        let m = if a > lane { a } else { lane };
        // A NaN lane stays NaN (no comparison with it succeeds); a NaN value makes it NaN.
        if a.is_nan() {
            a
        } else {
            m
        }
    };
    let r = crate::simd::with_wide_vectors(
        #[inline(always)]
        || reduce(values, 0.0, step, step),
    );
    if r.is_nan() {
        f32::NAN
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_equal_the_sequential_folds() {
        let values: Vec<f32> = (0..1000)
            .map(|i| ((i * 7919) % 1009) as f32 - 500.0)
            .collect();
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 1000] {
            let v = &values[..n];
            let lo = v.iter().fold(f32::INFINITY, |a, &b| a.min(b));
            let hi = v.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            assert_eq!(min_max(v), (lo, hi), "{n}");
            assert_eq!(
                abs_max(v),
                v.iter().fold(0.0f32, |a, &b| a.max(b.abs())),
                "{n}"
            );
        }
        let mut with_nan = values[..20].to_vec();
        with_nan[13] = f32::NAN;
        let numbers = with_nan.iter().filter(|v| !v.is_nan());
        let lo = numbers.clone().fold(f32::INFINITY, |a, &b| a.min(b));
        let hi = numbers.fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        assert_eq!(min_max(&with_nan), (lo, hi));
        assert!(abs_max(&with_nan).is_nan());
        assert_eq!(min_max(&[f32::NAN]), (f32::INFINITY, f32::NEG_INFINITY));
        // The zero the sequential scan keeps is the first one.
        let zeros = [1.0, 0.0, -0.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, -0.0];
        assert_eq!(min_max(&zeros).0.to_bits(), 0.0f32.to_bits());
        let zeros = [-1.0, -0.0, 0.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, 0.0];
        assert_eq!(min_max(&zeros).1.to_bits(), (-0.0f32).to_bits());
        // Zeros of both signs in lanes that the sixteen-lane fold pairs (9 and 17 ≡ 1 mod 8).
        for (first, second) in [(-0.0f32, 0.0f32), (0.0, -0.0)] {
            let mut v = vec![1.0f32; 40];
            (v[9], v[17]) = (first, second);
            assert_eq!(min_max(&v).0.to_bits(), first.to_bits());
            let negated: Vec<f32> = v.iter().map(|x| -x).collect();
            assert_eq!(min_max(&negated).1.to_bits(), (-first).to_bits());
        }
    }
}
