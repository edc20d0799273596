//! `torch.mean` of a contiguous float32 vector on CPU, with torch's summation order — the
//! offset bitsandbytes subtracts before double quantization is exactly this value.
//!
//! CPU `mean` is `sum(x)/n` in float32, and `sum` is `cascade_sum` (aten SumKernel.cpp),
//! accumulating in float32:
//! * `n ≥ 8` (the AVX2 build's vector width): the vector path. The first `8·⌊n/8⌋` values are
//!   read as `⌊n/8⌋` vectors of 8 lanes; these vectors are grouped 4 at a time (`ilp_factor`), and
//!   each of the 4 lanes-of-vectors accumulators sums its column with `multi_row_sum`: rows are
//!   added in chunks of `2^level_power` (`level_power = max(4, ⌈log2 rows⌉/4)`) into a 4-level
//!   cascade. Leftover vectors go into accumulator 0, accumulators 1–3 are added to it, then the
//!   scalar tail (`n mod 8` values) is summed from 0 and the 8 lanes are added to it in order.
//! * `n < 8`: the same `row_sum` on scalars (4 accumulators, tail into the first).
//!
//! Every `+` is one float32 rounding; accumulators start at `+0`.

/// Vector width of the AVX2 build (`Vectorized<float>::size()`).
const LANES: usize = 8;
/// `ilp_factor` of `row_sum`.
const ILP: usize = 4;
/// `num_levels` of `multi_row_sum`.
const LEVELS: usize = 4;

/// `utils::CeilLog2`.
fn ceil_log2(x: usize) -> usize {
    if x <= 2 {
        1
    } else {
        (usize::BITS - (x - 1).leading_zeros()) as usize
    }
}

/// A vector of `W` float32 lanes.
type Acc<const W: usize> = [f32; W];

fn add<const W: usize>(a: &mut Acc<W>, b: &Acc<W>) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += *y;
    }
}

/// `multi_row_sum<acc_t, ILP>`: `rows` rows of `ILP` elements (each an `Acc<W>`), returning the
/// `ILP` column sums.
fn multi_row_sum<const W: usize>(load: impl Fn(usize) -> Acc<W>, rows: usize) -> [Acc<W>; ILP] {
    let level_power = 4.max(ceil_log2(rows) / LEVELS);
    let level_step = 1usize << level_power;
    let level_mask = level_step - 1;
    let mut acc = [[[0.0f32; W]; ILP]; LEVELS];
    let add_row = |acc: &mut [Acc<W>; ILP], i: usize| {
        for (k, a) in acc.iter_mut().enumerate() {
            add(a, &load(i * ILP + k));
        }
    };
    let mut i = 0usize;
    while i + level_step <= rows {
        for _ in 0..level_step {
            add_row(&mut acc[0], i);
            i += 1;
        }
        for j in 1..LEVELS {
            let (lower, upper) = acc.split_at_mut(j);
            for (u, l) in upper[0].iter_mut().zip(lower[j - 1].iter_mut()) {
                add(u, l);
                *l = [0.0; W];
            }
            if i & (level_mask << (j * level_power)) != 0 {
                break;
            }
        }
    }
    while i < rows {
        add_row(&mut acc[0], i);
        i += 1;
    }
    let (first, rest) = acc.split_at_mut(1);
    for level in rest.iter() {
        for (a, u) in first[0].iter_mut().zip(level) {
            add(a, u);
        }
    }
    first[0]
}

/// `row_sum<acc_t>` over `size` elements (each an `Acc<W>`).
fn row_sum<const W: usize>(load: impl Fn(usize) -> Acc<W>, size: usize) -> Acc<W> {
    let rows = size / ILP;
    let mut partial = multi_row_sum(&load, rows);
    for i in rows * ILP..size {
        add(&mut partial[0], &load(i));
    }
    for k in 1..ILP {
        let p = partial[k];
        add(&mut partial[0], &p);
    }
    partial[0]
}

/// `torch.sum` of a contiguous float32 vector on CPU (AVX2 build).
pub fn torch_sum_f32(x: &[f32]) -> f32 {
    let n = x.len();
    if n < LANES {
        return row_sum::<1>(|i| [x[i]], n)[0];
    }
    let vectors = n / LANES;
    let lanes = row_sum::<LANES>(
        |i| {
            let mut v = [0.0f32; LANES];
            v.copy_from_slice(&x[i * LANES..(i + 1) * LANES]);
            v
        },
        vectors,
    );
    let mut total = 0.0f32;
    for &t in &x[vectors * LANES..] {
        total += t;
    }
    for l in lanes {
        total += l;
    }
    total
}

/// `torch.mean` of a contiguous float32 vector on CPU: `sum/n` in float32.
pub fn torch_mean_f32(x: &[f32]) -> f32 {
    torch_sum_f32(x) / x.len() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_small_and_exact_inputs_exactly() {
        assert_eq!(torch_sum_f32(&[]), 0.0);
        assert_eq!(torch_sum_f32(&[1.0, 2.0, 3.0]), 6.0);
        let x: Vec<f32> = (1..=1000).map(|i| i as f32).collect();
        assert_eq!(torch_sum_f32(&x), 500_500.0);
        assert_eq!(torch_mean_f32(&x), 500.5);
    }

    #[test]
    fn the_order_differs_from_a_sequential_sum() {
        // 1 followed by many tiny values: a sequential float32 sum loses every tiny value,
        // torch's lane-wise accumulation adds them among themselves first.
        let mut x = vec![1e-8f32; 64];
        x[0] = 1.0;
        let sequential = x.iter().fold(0.0f32, |a, &b| a + b);
        assert_eq!(sequential, 1.0);
        assert!(torch_sum_f32(&x) > 1.0);
    }
}
