//! Float32 kernels of ATen (CPU, one thread) whose exact rounding the observers depend on.
//!
//! * [`sum_f32`]: `torch.sum` of a contiguous float32 vector — ATen's cascade sum
//!   (`SumKernel.cpp`): 8-lane vectors (the AVX2 kernel, which ATen also dispatches on AVX-512
//!   machines), four interleaved accumulator rows, chunks of `2^max(4, ⌈log2 n⌉/4)` rows folded
//!   through four levels, then the scalar tail and the eight lanes added in order.
//! * [`cumsum_f32`]: `torch.cumsum` — a running float64 sum stored as float32.
//! * [`linspace_f32`]: `torch.linspace` — `start + step·i` for the first half,
//!   `end − step·(n − 1 − i)` for the second, `step = (end − start)/(n − 1)` in float32, each
//!   value rounded once (ATen's x86 kernels are built with FMA contraction).
//! * [`div_floor`]: `torch.div(a, b, rounding_mode="floor")` (`c10::div_floor_floating`).
//! * [`f32_to_i32`]: float → int32 conversion as x86 does it (out of range or NaN → `i32::MIN`).

/// Four rows of `L` accumulator lanes.
type Rows<const L: usize> = [[f32; L]; 4];

/// `torch.sum(x)` for a contiguous float32 tensor (single thread).
pub fn sum_f32(x: &[f32]) -> f32 {
    const W: usize = 8;
    if x.len() < W {
        // Scalar inner sum: row_sum over lanes of width 1.
        let steps = x.len() / 4;
        let rows = multi_row_sum::<1>(|i| std::array::from_fn(|k| [x[i * 4 + k]]), steps);
        let mut total = rows[0][0];
        for &v in &x[steps * 4..] {
            total += v;
        }
        for row in &rows[1..] {
            total += row[0];
        }
        return total;
    }
    let vector = |v: usize| -> [f32; W] { std::array::from_fn(|lane| x[v * W + lane]) };
    let vecs = x.len() / W;
    let steps = vecs / 4;
    let rows = multi_row_sum::<W>(|i| std::array::from_fn(|k| vector(i * 4 + k)), steps);
    let mut lanes = rows[0];
    for v in steps * 4..vecs {
        add_lanes(&mut lanes, &vector(v));
    }
    for row in &rows[1..] {
        add_lanes(&mut lanes, row);
    }
    let mut total = 0.0f32;
    for &v in &x[vecs * W..] {
        total += v;
    }
    for lane in lanes {
        total += lane;
    }
    total
}

#[inline(always)]
fn add_lanes<const L: usize>(dst: &mut [f32; L], src: &[f32; L]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d += s;
    }
}

#[inline(always)]
fn add_rows<const L: usize>(dst: &mut Rows<L>, src: &Rows<L>) {
    for (d, s) in dst.iter_mut().zip(src) {
        add_lanes(d, s);
    }
}

/// ATen's `multi_row_sum` with 4 rows of `L` lanes; `load(i)` gives the rows of step `i`.
/// Partial sums are folded through four levels every `2^level_power` steps.
fn multi_row_sum<const L: usize>(load: impl Fn(usize) -> Rows<L>, size: usize) -> Rows<L> {
    const LEVELS: usize = 4;
    let level_power = 4usize.max(ceil_log2(size) / LEVELS);
    let level_step = 1usize << level_power;
    let level_mask = level_step - 1;
    let zero: Rows<L> = [[0.0; L]; 4];
    let mut acc = [zero; LEVELS];
    let mut i = 0usize;
    while i + level_step <= size {
        for _ in 0..level_step {
            add_rows(&mut acc[0], &load(i));
            i += 1;
        }
        for j in 1..LEVELS {
            let (lower, upper) = acc.split_at_mut(j);
            add_rows(&mut upper[0], &lower[j - 1]);
            lower[j - 1] = zero;
            if i & (level_mask << (j * level_power)) != 0 {
                break;
            }
        }
    }
    while i < size {
        add_rows(&mut acc[0], &load(i));
        i += 1;
    }
    let (first, rest) = acc.split_at_mut(1);
    for level in rest.iter() {
        add_rows(&mut first[0], level);
    }
    first[0]
}

/// `c10::llvm::CeilLog2`-style helper used by the cascade sum (`ceil_log2(x) = 1` for x ≤ 2).
fn ceil_log2(x: usize) -> usize {
    if x <= 2 {
        return 1;
    }
    (usize::BITS - (x - 1).leading_zeros()) as usize
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

/// `torch.linspace(start, end, steps)` in float32.
pub fn linspace_f32(start: f32, end: f32, steps: usize) -> Vec<f32> {
    if steps == 0 {
        return Vec::new();
    }
    if steps == 1 {
        return vec![start];
    }
    let step = (end - start) / (steps - 1) as f32;
    let halfway = steps / 2;
    // ATen's kernel is compiled with FMA contraction: `start + step·i` rounds once.
    (0..steps)
        .map(|i| {
            if i < halfway {
                step.mul_add(i as f32, start)
            } else {
                (-step).mul_add((steps - i - 1) as f32, end)
            }
        })
        .collect()
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
        let v = linspace_f32(-1.0, 2.0, 7);
        assert_eq!(v[0], -1.0);
        assert_eq!(v[6], 2.0);
        assert_eq!(v.len(), 7);
        assert_eq!(linspace_f32(0.3, 0.7, 1), vec![0.3]);
        // torch.linspace(-1.5, 2.25, 100): values a separate multiply and add would miss by 1 ulp.
        let v = linspace_f32(-1.5, 2.25, 100);
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
}
