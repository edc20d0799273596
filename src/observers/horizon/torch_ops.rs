//! The few PyTorch CPU kernels whose rounding the KL search depends on, reproduced in their
//! evaluation order (x86-64 with AVX2, one thread, as the reference data were produced).
//!
//! * `torch.sum` of a contiguous float64 (or float32) vector: the "cascade sum" of
//!   `aten/src/ATen/native/cpu/SumKernel.cpp` — 4-lane (float32: 8-lane) vectors, four interleaved accumulators,
//!   flushed level by level every 16 rows, the scalar tail added first, then the lanes.
//! * `torch.linspace(0, end, n)` in float32: `step = f32(end/(n−1))`; element `i` is
//!   `f32(i·step)` in the first half and `f32(end − (n−1−i)·step)` in the second (checked bit for
//!   bit against the reference KL clips).
//! * `torch.arange(0, end, step)` in float32: accumulated in float64, so an element is
//!   `f32(f32(i₀·step) + k·step)` inside vector chunks (`i₀` the chunk start) and `f32(i·step)`
//!   in the scalar tail; the length is `⌈end/step⌉` computed in float64.

/// Vector widths of AVX2 for float64 and float32.
const F64_LANES: usize = 4;
const F32_LANES: usize = 8;

/// `torch.sum` of a contiguous float64 slice (CPU, AVX2, single thread).
pub fn sum_f64(data: &[f64]) -> f64 {
    cascade_sum::<f64, F64_LANES>(data)
}

/// `torch.sum` of a contiguous float32 slice, accumulated in float32 (CPU, AVX2, single
/// thread).
pub fn sum_f32(data: &[f32]) -> f32 {
    cascade_sum::<f32, F32_LANES>(data)
}

/// A float type the cascade sum works on.
trait Acc: Copy + Default + std::ops::AddAssign {}
impl Acc for f32 {}
impl Acc for f64 {}

/// `cascade_sum` → `vectorized_inner_sum`: the vector part by `row_sum`, the scalar tail
/// summed first, then the `L` lanes in order. Below one vector: a plain scalar loop.
fn cascade_sum<T: Acc, const L: usize>(data: &[T]) -> T {
    let n = data.len();
    let mut total = T::default();
    if n < L {
        for &v in data {
            total += v;
        }
        return total;
    }
    let vec_size = n / L;
    let lanes = row_sum_vec::<T, L>(data, vec_size);
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
    const ILP: usize = 4;
    let load = |v: usize| -> [T; L] {
        let mut out = [T::default(); L];
        out.copy_from_slice(&data[v * L..(v + 1) * L]);
        out
    };
    let size_ilp = size / ILP;
    let mut partial = multi_row_sum::<T, L>(size_ilp, |row, k| load(row * ILP + k));
    for v in size_ilp * ILP..size {
        add(&mut partial[0], &load(v));
    }
    let mut first = partial[0];
    for p in partial.iter().skip(1) {
        add(&mut first, p);
    }
    first
}

#[inline]
fn add<T: Acc, const L: usize>(a: &mut [T; L], b: &[T; L]) {
    for l in 0..L {
        a[l] += b[l];
    }
}

/// `multi_row_sum` with 4 rows and 4 cascade levels.
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
fn ceil_log2(x: usize) -> u32 {
    if x <= 2 {
        1
    } else {
        usize::BITS - (x - 1).leading_zeros()
    }
}

/// `torch.linspace(0, end, n)` in float32.
pub fn linspace_f32(end: f32, n: usize) -> Vec<f32> {
    if n == 0 {
        return Vec::new();
    }
    if n == 1 {
        return vec![0.0];
    }
    let start = 0.0f32;
    let step = (end - start) / (n - 1) as f32;
    let halfway = n / 2;
    let scalar = |idx: usize| -> f32 {
        if idx < halfway {
            start + step * idx as f32
        } else {
            end - step * (n - idx - 1) as f32
        }
    };
    (0..n).map(scalar).collect()
}

/// Number of elements of `torch.arange(0, end, step)`: `⌈end/step⌉` in float64.
pub fn arange_len(end: f32, step: f32) -> f64 {
    (end as f64 / step as f64).ceil()
}

/// `torch.arange(0, end, step)` in float32 with `len` elements (see [`arange_len`]).
pub fn arange_f32(step: f32, len: usize) -> Vec<f32> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let v = linspace_f32(3.7, 513);
        assert_eq!(v.len(), 513);
        assert_eq!(v[0], 0.0);
        assert_eq!(v[512], 3.7);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn arange_counts_in_float64() {
        assert_eq!(arange_len(1.0, 0.25), 4.0);
        let v = arange_f32(0.25, 4);
        assert_eq!(v, vec![0.0, 0.25, 0.5, 0.75]);
    }
}
