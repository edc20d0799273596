//! PyTorch CPU kernels (ATen, one thread, x86-64) whose exact rounding the observers depend on,
//! each named after the code path it reproduces and the golden set that pins it.
//!
//! * [`sum_f32`] / [`sum_f64`] — `torch.sum` of a contiguous vector: ATen's cascade sum
//!   (`SumKernel.cpp`): `L`-lane vectors (8 float32 / 4 float64, the AVX2 kernel, which ATen also
//!   dispatches on AVX-512 machines), four interleaved accumulator rows folded through four
//!   levels every `2^max(4, ⌈log2 n⌉/4)` rows, then the scalar tail and the lanes in order.
//!   Pinned by golden/torch (HistogramObserver's L2 search) and golden/horizon (KL divergences,
//!   ClipStd moments).
//! * [`cumsum_f32`] — `torch.cumsum` of float32: a running float64 sum stored as float32
//!   (golden/torch HistogramObserver).
//! * Three `torch.linspace` paths of float32 results, from three builds:
//!   [`linspace_fma`] — `start + step·i` / `end − step·(n−1−i)` with a float32 step, each value
//!   rounded once (ATen built with FMA contraction; golden/torch histogram edges, golden/quark);
//!   [`linspace_two_roundings`] — the same with the product and the sum rounded separately
//!   (golden/horizon KL clips); [`linspace_via_f64`] — step and values in float64, rounded once
//!   to float32 at the end (golden/modelopt `bin_edges`).
//! * Three `torch.arange` paths of float32 results: [`arange_chunked_f32`] — float32 values
//!   accumulated in float64 inside 8-lane vector chunks (golden/horizon KL); [`arange_via_f64`]
//!   — `start + step·i` in float64, rounded to float32 (golden/modelopt histogram growth);
//!   [`arange_via_f64_fma`] — the same with a fused multiply-add (golden/quark histogram edges).
//! * [`reduce`] — `torch.sum`/`mean`/`amin`/`amax` over any set of dims of a contiguous tensor in
//!   the order of ATen's TensorIterator and cascade-sum kernels (golden/llmcompressor and
//!   golden/torchao range searches); [`pointwise`] — `torch.pow(tensor, scalar)` and float →
//!   integer casts as compiled C++ does them on x86.
//! * [`div_floor`] — `torch.div(a, b, rounding_mode="floor")` (`c10::div_floor_floating`, the
//!   same steps as numpy's `npy_divmod`: golden/torch HistogramObserver, golden/ort entropy);
//!   [`f32_to_i32`] — float → int32 as x86 converts (out of range or NaN → `i32::MIN`);
//!   [`maximum`] / [`minimum`] — NaN-propagating `torch.maximum`/`torch.minimum`.
//! * [`add_left_aligned`] — `new[:len(old)] += old`, how Quark's and Horizon's histogram
//!   observers add a batch's counts to the old ones (golden/quark HistogramObserver, whose old
//!   counts land misplaced after the range grew; golden/horizon KLObserver).

pub mod pointwise;
pub mod reduce;

use crate::error::{Error, Result, Stage};

const F64_LANES: usize = 4;
const F32_LANES: usize = 8;

/// `torch.sum` of a contiguous float64 slice.
pub fn sum_f64(data: &[f64]) -> f64 {
    cascade_sum::<f64, F64_LANES>(data)
}

/// `torch.sum` of a contiguous float32 slice, accumulated in float32.
pub fn sum_f32(data: &[f32]) -> f32 {
    cascade_sum::<f32, F32_LANES>(data)
}

/// A float type the cascade sum works on.
trait Acc: Copy + Default + std::ops::AddAssign {}
impl Acc for f32 {}
impl Acc for f64 {}

/// `cascade_sum` of a contiguous vector: `vectorized_inner_sum` — the vector part by `row_sum`,
/// the scalar tail summed first, then the `L` lanes in order — or, below one vector,
/// `scalar_inner_sum` (`row_sum` over single elements).
fn cascade_sum<T: Acc, const L: usize>(data: &[T]) -> T {
    let n = data.len();
    if n < L {
        return row_sum_vec::<T, 1>(data, n)[0];
    }
    let vec_size = n / L;
    let lanes = row_sum_vec::<T, L>(data, vec_size);
    let mut total = T::default();
    for &v in &data[vec_size * L..] {
        total += v;
    }
    for lane in lanes {
        total += lane;
    }
    total
}

/// `row_sum` over `size` `L`-lane vectors: `multi_row_sum` with 4 interleaved rows, the
/// leftover vectors into row 0, then rows 1..4 added into row 0.
fn row_sum_vec<T: Acc, const L: usize>(data: &[T], size: usize) -> [T; L] {
    row_sum_of(size, |v| {
        let mut out = [T::default(); L];
        out.copy_from_slice(&data[v * L..(v + 1) * L]);
        out
    })
}

/// [`row_sum_vec`] of the vectors `load(0..size)`, read once in order (the vectors may be
/// computed on the fly: an element-wise expression and its sum in one pass).
#[inline(always)]
fn row_sum_of<T: Acc, const L: usize>(size: usize, load: impl Fn(usize) -> [T; L]) -> [T; L] {
    const ILP: usize = 4;
    let size_ilp = size / ILP;
    let mut partial = multi_row_sum::<T, L>(
        size_ilp,
        #[inline(always)]
        |row, k| load(row * ILP + k),
    );
    for v in size_ilp * ILP..size {
        add(&mut partial[0], &load(v));
    }
    let mut first = partial[0];
    for p in partial.iter().skip(1) {
        add(&mut first, p);
    }
    first
}

#[inline(always)]
fn add<T: Acc, const L: usize>(a: &mut [T; L], b: &[T; L]) {
    for l in 0..L {
        a[l] += b[l];
    }
}

/// `multi_row_sum` with 4 rows and 4 cascade levels.
#[inline(always)]
fn multi_row_sum<T: Acc, const L: usize>(
    size: usize,
    load: impl Fn(usize, usize) -> [T; L],
) -> [[T; L]; 4] {
    const NROWS: usize = 4;
    const LEVELS: usize = 4;
    let level_power = (ceil_log2(size) / LEVELS as u32).max(4);
    let level_step = 1usize << level_power;
    let level_mask = level_step - 1;
    let mut acc = [[[T::default(); L]; NROWS]; LEVELS];
    let mut i = 0usize;
    while i + level_step <= size {
        for _ in 0..level_step {
            for (k, a) in acc[0].iter_mut().enumerate() {
                add(a, &load(i, k));
            }
            i += 1;
        }
        for j in 1..LEVELS {
            let (lower, upper) = acc.split_at_mut(j);
            for (dst, src) in upper[0].iter_mut().zip(lower[j - 1].iter_mut()) {
                add(dst, src);
                *src = [T::default(); L];
            }
            let mask = level_mask << (j as u32 * level_power);
            if i & mask != 0 {
                break;
            }
        }
    }
    while i < size {
        for (k, a) in acc[0].iter_mut().enumerate() {
            add(a, &load(i, k));
        }
        i += 1;
    }
    let (first, rest) = acc.split_at_mut(1);
    for level in rest.iter() {
        for (dst, src) in first[0].iter_mut().zip(level) {
            add(dst, src);
        }
    }
    acc[0]
}

/// `c10::utils::CeilLog2`: 1 for x ≤ 2, else ⌈log2 x⌉.
#[inline(always)]
fn ceil_log2(x: usize) -> u32 {
    if x <= 2 {
        1
    } else {
        usize::BITS - (x - 1).leading_zeros()
    }
}

/// `torch.cumsum(x, 0)` for float32: accumulated in float64, each prefix stored as float32.
pub fn cumsum_f32(x: &[f32]) -> Vec<f32> {
    let mut acc = 0.0f64;
    x.iter()
        .map(|&v| {
            acc += v as f64;
            acc as f32
        })
        .collect()
}

/// `torch.linspace(start, end, steps)` in float32 from an ATen built with FMA contraction:
/// `step = (end − start)/(steps − 1)` in float32; `start + step·i` for the first half and
/// `end − step·(steps − 1 − i)` for the second, each rounded once.
pub fn linspace_fma(start: f32, end: f32, steps: usize) -> Vec<f32> {
    linspace_halves(
        start,
        end,
        steps,
        |step, i| step.mul_add(i, start),
        |step, k| (-step).mul_add(k, end),
    )
}

/// `torch.linspace(start, end, steps)` in float32 with the product and the sum rounded
/// separately: `start + f32(step·i)`, `end − f32(step·k)`.
pub fn linspace_two_roundings(start: f32, end: f32, steps: usize) -> Vec<f32> {
    linspace_halves(
        start,
        end,
        steps,
        |step, i| start + step * i,
        |step, k| end - step * k,
    )
}

/// ATen's two-sided linspace: `first(step, i)` below the halfway point, `second(step, n−1−i)`
/// from it on, with the float32 step `(end − start)/(steps − 1)`.
fn linspace_halves(
    start: f32,
    end: f32,
    steps: usize,
    first: impl Fn(f32, f32) -> f32,
    second: impl Fn(f32, f32) -> f32,
) -> Vec<f32> {
    match steps {
        0 => Vec::new(),
        1 => vec![start],
        _ => {
            let step = (end - start) / (steps - 1) as f32;
            let halfway = steps / 2;
            (0..steps)
                .map(|i| {
                    if i < halfway {
                        first(step, i as f32)
                    } else {
                        second(step, (steps - i - 1) as f32)
                    }
                })
                .collect()
        }
    }
}

/// `torch.linspace(start, end, steps)` computed in float64 (step and values) and rounded once
/// to float32.
pub fn linspace_via_f64(start: f32, end: f32, steps: usize) -> Vec<f32> {
    match steps {
        0 => Vec::new(),
        1 => vec![start],
        _ => {
            let (s, e) = (start as f64, end as f64);
            let step = (e - s) / (steps - 1) as f64;
            let halfway = steps / 2;
            (0..steps)
                .map(|i| {
                    if i < halfway {
                        (s + step * i as f64) as f32
                    } else {
                        (e - step * (steps - 1 - i) as f64) as f32
                    }
                })
                .collect()
        }
    }
}

/// `⌈(end − start)/step⌉` in float64: the number of elements of `torch.arange(start, end,
/// step)` before any check.
pub fn arange_count(start: f64, end: f64, step: f64) -> f64 {
    ((end - start) / step).ceil()
}

/// [`arange_count`] as a length: `None` when negative, not finite, or more than
/// [`super::numpy::MAX_ELEMENTS`] (quantscope never allocates such edge arrays).
pub fn arange_len(start: f64, end: f64, step: f64) -> Option<usize> {
    let n = arange_count(start, end, step);
    (n.is_finite() && n >= 0.0 && n <= super::numpy::MAX_ELEMENTS as f64).then_some(n as usize)
}

/// `torch.arange(0, end, step)` in float32 with `len` elements: float64 accumulation inside
/// 8-lane vector chunks (`f32(f32(i₀·step) + k·step)`, `i₀` the chunk start), `f32(i·step)` in
/// the scalar tail.
pub fn arange_chunked_f32(step: f32, len: usize) -> Vec<f32> {
    let step = step as f64;
    let mut out = Vec::with_capacity(len);
    let vec_end = len / (2 * F32_LANES) * (2 * F32_LANES);
    let mut idx = 0;
    while idx < vec_end {
        let base = (step * idx as f64) as f32;
        for k in 0..F32_LANES {
            out.push((base as f64 + k as f64 * step) as f32);
        }
        idx += F32_LANES;
    }
    for i in vec_end..len {
        out.push((step * i as f64) as f32);
    }
    out
}

/// `torch.arange(start, end, step)` of float32: `start + step·i` in float64, rounded once.
pub fn arange_via_f64(start: f64, end: f64, step: f64) -> Result<Vec<f32>> {
    let n = arange_len(start, end, step).ok_or_else(|| too_long(start, end, step))?;
    Ok((0..n).map(|i| (start + step * i as f64) as f32).collect())
}

/// `torch.arange(start, end, step)` of float32: `fma(step, i, start)` in float64, rounded once.
pub fn arange_via_f64_fma(start: f64, end: f64, step: f64) -> Result<Vec<f32>> {
    let n = arange_len(start, end, step).ok_or_else(|| too_long(start, end, step))?;
    Ok((0..n)
        .map(|i| step.mul_add(i as f64, start) as f32)
        .collect())
}

fn too_long(start: f64, end: f64, step: f64) -> Error {
    Error::input(format!(
        "torch.arange({start}, {end}, {step}) has no valid length"
    ))
}

/// `torch.div(a, b, rounding_mode="floor")` for float32 (`c10::div_floor_floating`).
#[inline]
pub fn div_floor(a: f32, b: f32) -> f32 {
    if b == 0.0 {
        return a / b;
    }
    let rem = a % b; // fmod, exact
    let mut div = (a - rem) / b;
    if rem != 0.0 && (b < 0.0) != (rem < 0.0) {
        div -= 1.0;
    }
    if div != 0.0 {
        let mut floordiv = div.floor();
        if div - floordiv > 0.5 {
            floordiv += 1.0;
        }
        floordiv
    } else {
        0.0f32.copysign(a / b)
    }
}

/// `float → int32` as compiled C++ does on x86 (`cvttss2si`): truncation, and `i32::MIN` for
/// NaN or anything out of range.
#[inline]
pub fn f32_to_i32(x: f32) -> i32 {
    if !(-2147483648.0..2147483648.0).contains(&x) {
        i32::MIN
    } else {
        x as i32
    }
}

/// `new[:len(old)] += old` in a `forward()`: the old counts added left-aligned into the new
/// histogram; an `old` longer than `new` raises ATen's broadcasting error.
pub fn add_left_aligned(new: &mut [f32], old: &[f32]) -> Result<()> {
    if old.len() > new.len() {
        return Err(Error::framework(
            "RuntimeError",
            format!(
                "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension 0",
                new.len(),
                old.len()
            ),
            Stage::Forward,
        ));
    }
    for (h, &o) in new.iter_mut().zip(old) {
        *h += o;
    }
    Ok(())
}

/// `torch.maximum(a, b)` for float32 (NaN propagates).
#[inline]
pub fn maximum(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a > b {
        a
    } else {
        b
    }
}

/// `torch.minimum(a, b)` for float32 (NaN propagates).
#[inline]
pub fn minimum(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else if a < b {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cascade_sum_matches_torch() {
        // Values of torch.sum (torch 2.15, one thread) of the same float32 inputs.
        let x: Vec<f32> = (0..2048).map(|i| 1.0 / (i as f32 + 1.0)).collect();
        assert_eq!(sum_f32(&x), 8.202_079);
        let ramp = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|i| ((i * 7919 % 2003) as f32 - 1000.0) / 7.0)
                .collect()
        };
        assert_eq!(sum_f32(&ramp(37)), 459.285_7);
        assert_eq!(sum_f32(&ramp(2048)), 162.428_62);
        assert_eq!(sum_f32(&ramp(5)), 297.428_6);
        assert_eq!(sum_f32(&[0.1, 0.2, 0.3]), 0.6);
        assert_eq!(sum_f32(&[]), 0.0);
    }

    #[test]
    fn linspace_is_symmetric_from_both_ends() {
        let v = linspace_fma(-1.0, 2.0, 7);
        assert_eq!(v[0], -1.0);
        assert_eq!(v[6], 2.0);
        assert_eq!(v.len(), 7);
        assert_eq!(linspace_fma(0.3, 0.7, 1), vec![0.3]);
        // torch.linspace(-1.5, 2.25, 100): values a separate multiply and add would miss by 1 ulp.
        let v = linspace_fma(-1.5, 2.25, 100);
        assert_eq!(v[11], -1.083_333_4);
        assert_eq!(v[27], -0.477_272_7);
        assert_eq!(v[60], 0.772_727_25);
        assert_eq!(v[99], 2.25);
    }

    #[test]
    fn floor_division_is_pythonic() {
        assert_eq!(div_floor(7.0, 2.0), 3.0);
        assert_eq!(div_floor(-7.0, 2.0), -4.0);
        assert_eq!(div_floor(-0.5, 2.0), -1.0);
        assert_eq!(div_floor(0.5, 2.0), 0.0);
        assert!(div_floor(-0.0, 2.0).is_sign_negative());
        assert_eq!(div_floor(6.0, 2.0), 3.0);
        assert_eq!(div_floor(0.3, 0.1), 3.0); // float32 0.3/0.1 is just above 3
    }

    #[test]
    fn float_to_int_saturates_like_x86() {
        assert_eq!(f32_to_i32(-3.9), -3);
        assert_eq!(f32_to_i32(3e9), i32::MIN);
        assert_eq!(f32_to_i32(-3e9), i32::MIN);
        assert_eq!(f32_to_i32(f32::NAN), i32::MIN);
    }

    #[test]
    fn sums_agree_with_exact_arithmetic_on_integers() {
        for n in [0usize, 1, 3, 4, 9, 17, 100, 385, 1000, 5000] {
            let v: Vec<f64> = (0..n).map(|i| (i % 97) as f64).collect();
            let exact: f64 = v.iter().sum();
            assert_eq!(sum_f64(&v), exact, "n = {n}");
        }
    }

    #[test]
    fn nine_element_sum_pairs_lanes() {
        // ((((x8 + (x0+x4)) + (x1+x5)) + (x2+x6)) + (x3+x7))
        let x = [1e16, 1.0, 1.0, 1.0, -1e16, 1.0, 1.0, 1.0, 1.0];
        let expect = (((x[8] + (x[0] + x[4])) + (x[1] + x[5])) + (x[2] + x[6])) + (x[3] + x[7]);
        assert_eq!(sum_f64(&x), expect);
        assert_eq!(sum_f64(&x), 7.0);
    }

    #[test]
    fn ceil_log2_matches_c10() {
        assert_eq!(ceil_log2(1), 1);
        assert_eq!(ceil_log2(2), 1);
        assert_eq!(ceil_log2(3), 2);
        assert_eq!(ceil_log2(16), 4);
        assert_eq!(ceil_log2(17), 5);
    }

    #[test]
    fn linspace_ends_exactly() {
        let v = linspace_two_roundings(0.0, 3.7, 513);
        assert_eq!(v.len(), 513);
        assert_eq!(v[0], 0.0);
        assert_eq!(v[512], 3.7);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn arange_counts_in_float64() {
        assert_eq!(arange_count(0.0, 1.0, 0.25), 4.0);
        let v = arange_chunked_f32(0.25, 4);
        assert_eq!(v, vec![0.0, 0.25, 0.5, 0.75]);
    }

    #[test]
    fn linspace_meets_both_ends_exactly() {
        let y = linspace_via_f64(0.0, 3.9455497, 2049);
        assert_eq!(y[0], 0.0);
        assert_eq!(y[2048], 3.9455497);
        assert_eq!(y[1024], (3.9455497f32 as f64 / 2.0) as f32);
        assert!(y.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn arange_counts_like_torch() {
        assert_eq!(
            arange_via_f64(0.0, 1.0, 0.25).unwrap(),
            vec![0.0, 0.25, 0.5, 0.75]
        );
        assert_eq!(arange_via_f64(0.0, 1.1, 0.25).unwrap().len(), 5);
    }

    #[test]
    fn linspace_endpoints_are_exact_and_halves_meet() {
        let v = linspace_fma(-1.3, 7.9, 2049);
        assert_eq!(v.len(), 2049);
        assert_eq!(v[0], -1.3f32);
        assert_eq!(v[2048], 7.9f32);
        let step = (7.9f32 - -1.3f32) / 2048.0;
        assert_eq!(v[1], step.mul_add(1.0, -1.3f32));
        assert_eq!(v[2047], (-step).mul_add(1.0, 7.9f32));
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(linspace_fma(0.0, 1.0, 3), vec![0.0, 0.5, 1.0]);
        assert_eq!(linspace_fma(2.0, 3.0, 1), vec![2.0]);
    }

    #[test]
    fn arange_counts_in_double() {
        assert_eq!(arange_len(0.0, 1.0, 0.25), Some(4));
        assert_eq!(arange_len(0.0, 1.0000001, 0.25), Some(5));
        assert_eq!(arange_len(1.0, 0.0, 0.25), None);
        let v = arange_via_f64_fma(0.1, 3.0, 0.1).unwrap();
        assert_eq!(v.len(), 29);
        assert_eq!(v[0], 0.1f32);
        assert_eq!(v[28], (0.1f64 + 0.1 * 28.0) as f32);
    }
}
