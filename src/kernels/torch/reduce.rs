//! `torch.sum(x, dim=dims)`, `torch.mean`, `torch.amin`/`torch.amax` of a contiguous float32
//! tensor, over any set of dims, as ATen computes them on CPU with one thread.
//!
//! The sum's float32 result depends on the order of additions, which ATen fixes in three steps:
//!
//! 1. **TensorIterator** (`TensorIterator.cpp`) orders the dims innermost first, moves the
//!    reduced dims (output stride 0) in front of the kept ones, sorts each group by ascending
//!    input stride (`reorder_dimensions`, an insertion sort with ambiguous comparisons), and
//!    merges neighbours that are contiguous in every operand (`coalesce_dimensions`).
//! 2. `serial_for_each` calls the 2-d loop on the first two dims for every index of the others
//!    (the third dim fastest); results accumulate into the zero-filled output.
//! 3. **`cascade_sum`** (`SumKernel.cpp`) puts a reduced dim first, then picks a kernel:
//!    a contiguous inner reduction ([`inner_row_sum`]: 8-lane vectors, four interleaved
//!    accumulator rows, the scalar tail and the eight lanes added in order), a contiguous outer
//!    reduction (blocks of 32 columns summed by one [`cascade`] each, then blocks of 8 and single
//!    columns by [`row_sum`]), or the scalar inner/outer variants.
//!
//! Every accumulator is one lane of ATen's `multi_row_sum`: partial sums folded through four
//! levels every `2^max(4, ⌈log2 n⌉/4)` steps ([`cascade`]). The float32 accumulator type is
//! `at::acc_type<float, /*is_cuda=*/true>` = float.
//!
//! `torch.mean` is that sum divided by the number of reduced elements (ATen's CPU `mean_out`).
//! `amin`/`amax` do not depend on order; NaN propagates.

use super::row_sum_of;

/// One lane of ATen's `multi_row_sum`: the values `load(0..size)` added into a level-0
/// accumulator, which is folded into the next level every `2^p` values (`p = max(4,
/// ⌈log2 size⌉/4)`), cascading further while the step count is a multiple of `2^(p·j)`; the
/// remainder is added to level 0 and the levels are summed in order.
pub fn cascade(size: usize, load: impl Fn(usize) -> f32) -> f32 {
    const LEVELS: usize = 4;
    let level_power = 4usize.max(ceil_log2(size) / LEVELS);
    let level_step = 1usize << level_power;
    let level_mask = level_step - 1;
    let mut acc = [0.0f32; LEVELS];
    let mut i = 0usize;
    while i + level_step <= size {
        for _ in 0..level_step {
            acc[0] += load(i);
            i += 1;
        }
        for j in 1..LEVELS {
            acc[j] += acc[j - 1];
            acc[j - 1] = 0.0;
            if i & (level_mask << (j * level_power)) != 0 {
                break;
            }
        }
    }
    while i < size {
        acc[0] += load(i);
        i += 1;
    }
    let mut total = acc[0];
    for level in &acc[1..] {
        total += level;
    }
    total
}

/// ATen's `row_sum` (scalar accumulators): the row read as `(−1, 4)`, four interleaved
/// [`cascade`]s, the leftover values added to the first, then the four added in order.
pub fn row_sum(size: usize, load: impl Fn(usize) -> f32) -> f32 {
    let quads = size / 4;
    let mut lanes: [f32; 4] = std::array::from_fn(|k| cascade(quads, |i| load(4 * i + k)));
    for i in quads * 4..size {
        lanes[0] += load(i);
    }
    let mut total = lanes[0];
    for lane in &lanes[1..] {
        total += lane;
    }
    total
}

/// Lanes of ATen's `Vectorized<float>` on AVX2.
pub const VEC: usize = 8;

/// ATen's `vectorized_inner_sum` for one contiguous row: `row_sum` over 8-lane vectors, then
/// `0 + tail values + lane 0 + … + lane 7` in order. The row is read once, front to back
/// ([`row_sum_of`]), so `load` may compute each value on the fly.
pub fn inner_row_sum(size: usize, load: impl Fn(usize) -> f32) -> f32 {
    let vectors = size / VEC;
    let lanes = row_sum_of::<f32, VEC>(vectors, |v| std::array::from_fn(|l| load(v * VEC + l)));
    let mut total = 0.0f32;
    for i in vectors * VEC..size {
        total += load(i);
    }
    for lane in lanes {
        total += lane;
    }
    total
}

/// [`inner_row_sum`] fed in order instead of read: the row's values are pushed as whole
/// 8-lane vectors ([`push`](Self::push)), then the tail past the last whole vector is given to
/// [`finish`](Self::finish). The additions are those of [`inner_row_sum`] (`row_sum` of
/// `multi_row_sum` with four interleaved rows of vectors folded through four levels), so the
/// producer is free to compute many vectors at once.
#[derive(Debug, Clone)]
pub struct InnerRowSum {
    /// Vectors in the rows of four that `multi_row_sum` takes; the rest go to row 0 after.
    row_vectors: usize,
    level_power: u32,
    level_mask: usize,
    /// `acc[level][row]`.
    acc: [[[f32; VEC]; 4]; 4],
    pushed: usize,
}

impl InnerRowSum {
    /// The sum of a row of `size` values.
    #[inline(always)]
    pub fn new(size: usize) -> InnerRowSum {
        let vectors = size / VEC;
        let rows = vectors / 4;
        let level_power = (super::ceil_log2(rows) / 4).max(4);
        InnerRowSum {
            row_vectors: rows * 4,
            level_power,
            level_mask: (1usize << level_power) - 1,
            acc: [[[0.0; VEC]; 4]; 4],
            pushed: 0,
        }
    }

    /// The next vector of the row.
    #[inline(always)]
    pub fn push(&mut self, x: [f32; VEC]) {
        let v = self.pushed;
        self.pushed += 1;
        if v >= self.row_vectors {
            // Past the rows: into row 0, whose levels were folded when the rows ended.
            add_lanes(&mut self.acc[0][0], &x);
            return;
        }
        add_lanes(&mut self.acc[0][v % 4], &x);
        if v % 4 == 3 {
            let row = v / 4 + 1;
            if row & self.level_mask == 0 {
                self.cascade(row);
            }
        }
        if self.pushed == self.row_vectors {
            self.fold_levels();
        }
    }

    /// `multi_row_sum`'s carry after `row` complete rows (a multiple of the level step).
    fn cascade(&mut self, row: usize) {
        for j in 1..4 {
            let (lower, upper) = self.acc.split_at_mut(j);
            for (dst, src) in upper[0].iter_mut().zip(lower[j - 1].iter_mut()) {
                add_lanes(dst, src);
                *src = [0.0; VEC];
            }
            if row & (self.level_mask << (j as u32 * self.level_power)) != 0 {
                break;
            }
        }
    }

    /// The levels added into level 0, per row (`multi_row_sum`'s result).
    fn fold_levels(&mut self) {
        let (first, rest) = self.acc.split_at_mut(1);
        for level in rest.iter_mut() {
            for (dst, src) in first[0].iter_mut().zip(level.iter_mut()) {
                add_lanes(dst, src);
                *src = [0.0; VEC];
            }
        }
    }

    /// The sum, given the values past the last whole vector: `0 + tail + lane 0 + … + lane 7`
    /// of the four rows added in order.
    #[inline(always)]
    pub fn finish(mut self, tail: &[f32]) -> f32 {
        if self.pushed < self.row_vectors {
            self.fold_levels(); // a row that was never completed (not reached when fed whole)
        }
        let [first, rest @ ..] = self.acc[0];
        let mut lanes = first;
        for row in &rest {
            add_lanes(&mut lanes, row);
        }
        let mut total = 0.0f32;
        for &t in tail {
            total += t;
        }
        for lane in lanes {
            total += lane;
        }
        total
    }
}

/// [`InnerRowSum`] of a row of fewer than four whole vectors and no tail (NVFP4's groups of 16,
/// groups of 8 or 24), without its accumulator block: such a row never fills a row of four, so
/// every vector goes to row 0 (`0 + v₀ + v₁ + …` per lane), the three empty rows are added (+0,
/// which turns −0 into +0 as they do), then `0 + lane 0 + … + lane 7`.
#[inline(always)]
pub fn short_inner_row_sum(values: &[f32]) -> f32 {
    debug_assert!(values.len().is_multiple_of(VEC) && values.len() < 4 * VEC);
    let mut lanes = [0.0f32; VEC];
    for vector in values.chunks_exact(VEC) {
        for l in 0..VEC {
            lanes[l] += vector[l];
        }
    }
    let mut total = 0.0f32;
    for lane in lanes {
        total += lane + 0.0;
    }
    total
}

/// A row's values, computed any number of lanes at a time.
pub trait RowLanes {
    /// Values `at … at + L − 1`.
    fn lanes<const L: usize>(&self, at: usize) -> [f32; L];
}

/// Lanes computed at once by [`inner_row_sum_of_lanes`]: four vectors, so that long dependency
/// chains (a power's polynomials) of different vectors overlap.
pub const BLOCK: usize = 4 * VEC;

/// [`inner_row_sum`] of the `size` values of `row`, computed [`BLOCK`] lanes at a time, then
/// vector by vector, then one by one for the tail, and pushed in order into [`InnerRowSum`].
#[inline(always)]
pub fn inner_row_sum_of_lanes(size: usize, row: &impl RowLanes) -> f32 {
    let mut sum = InnerRowSum::new(size);
    let whole = size / VEC * VEC;
    let mut at = 0;
    while at + BLOCK <= whole {
        let block = row.lanes::<BLOCK>(at);
        for c in 0..BLOCK / VEC {
            let mut vector = [0.0; VEC];
            vector.copy_from_slice(&block[c * VEC..(c + 1) * VEC]);
            sum.push(vector);
        }
        at += BLOCK;
    }
    while at < whole {
        sum.push(row.lanes::<VEC>(at));
        at += VEC;
    }
    let mut tail = [0.0f32; VEC];
    for (i, t) in (whole..size).zip(tail.iter_mut()) {
        *t = row.lanes::<1>(i)[0];
    }
    sum.finish(&tail[..size - whole])
}

/// When reducing a contiguous tensor of `shape` over `dims` makes output `k` the reduction of
/// the run of elements `k·run … k·run + run − 1` (the reduced dims, with any of size 1, are
/// trailing): `run`. A sum over runs of at least [`VEC`] values is then ATen's contiguous inner
/// reduction, [`inner_row_sum`] of each run.
pub fn contiguous_runs(shape: &[usize], dims: &[usize]) -> Option<usize> {
    let reduced = |d: usize| dims.contains(&d);
    let mut run = 1usize;
    let mut d = shape.len();
    while d > 0 && (reduced(d - 1) || shape[d - 1] == 1) {
        run *= shape[d - 1];
        d -= 1;
    }
    ((0..d).all(|e| !reduced(e) || shape[e] == 1)).then_some(run)
}

#[inline(always)]
fn add_lanes(a: &mut [f32; VEC], b: &[f32; VEC]) {
    for l in 0..VEC {
        a[l] += b[l];
    }
}

/// One iteration dimension of a TensorIterator: its size and the stride of each operand in
/// elements (`out` is 0 along reduced dims).
#[derive(Debug, Clone, Copy)]
struct Dim {
    size: usize,
    out: usize,
    input: usize,
}

/// `reorder_dimensions`'s comparison for a reduction (output first, then input): 1 if `a`
/// must come after `b`, −1 if before, 0 when ambiguous.
fn should_swap(a: Dim, b: Dim) -> i32 {
    // Output operand: reduced dims first, then ascending strides.
    if (a.out == 0) != (b.out == 0) {
        return if b.out == 0 { 1 } else { -1 };
    }
    for (s0, s1) in [(a.out, b.out), (a.input, b.input)] {
        if s0 == 0 || s1 == 0 {
            continue;
        }
        if s0 < s1 {
            return -1;
        }
        if s0 > s1 {
            return 1;
        }
        if a.size > b.size {
            return 1;
        }
    }
    0
}

/// The row-major stride of each dim of `shape` in the output of a reduction over `reduced`
/// (0 for a reduced dim), and the output's element count.
fn output_strides(shape: &[usize], reduced: &[bool]) -> (Vec<usize>, usize) {
    let mut out_stride = vec![0usize; shape.len()];
    let mut count = 1usize;
    for d in (0..shape.len()).rev() {
        if !reduced[d] {
            out_stride[d] = count;
            count *= shape[d];
        }
    }
    (out_stride, count)
}

/// The iteration dims of reducing `shape` over `reduced` (innermost first), reordered and
/// coalesced like TensorIterator does.
fn iteration_dims(shape: &[usize], reduced: &[bool]) -> Vec<Dim> {
    let n = shape.len();
    let mut in_stride = vec![1usize; n];
    for d in (0..n.saturating_sub(1)).rev() {
        in_stride[d] = in_stride[d + 1] * shape[d + 1];
    }
    let (out_stride, _) = output_strides(shape, reduced);
    // TensorIterator's dim 0 is the tensor's last dim.
    let mut dims: Vec<Dim> = (0..n)
        .rev()
        .map(|d| Dim {
            size: shape[d],
            out: out_stride[d],
            input: in_stride[d],
        })
        .collect();
    // Insertion sort with ambiguous comparisons (`reorder_dimensions`).
    for i in 1..dims.len() {
        let mut dim1 = i;
        for dim0 in (0..i).rev() {
            match should_swap(dims[dim0], dims[dim1]) {
                c if c > 0 => {
                    dims.swap(dim0, dim1);
                    dim1 = dim0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    coalesce(dims)
}

/// `coalesce_dimensions`: merge neighbours of size 1 or contiguous in every operand.
fn coalesce(mut dims: Vec<Dim>) -> Vec<Dim> {
    if dims.len() <= 1 {
        return dims;
    }
    let mut prev = 0usize;
    for d in 1..dims.len() {
        let (a, b) = (dims[prev], dims[d]);
        let can =
            a.size == 1 || b.size == 1 || (a.size * a.out == b.out && a.size * a.input == b.input);
        if can {
            if a.size == 1 {
                dims[prev].out = b.out;
                dims[prev].input = b.input;
            }
            dims[prev].size *= b.size;
        } else {
            prev += 1;
            if prev != d {
                dims[prev] = b;
            }
        }
    }
    dims.truncate(prev + 1);
    dims
}

/// `torch.sum(x, dim=dims)` of a contiguous tensor of `shape` (dims may repeat-free appear in
/// any order); the result in row-major order of the kept dims. An empty `dims` sums nothing
/// (an element-wise copy), as ATen's "not a true reduction" path does.
pub fn sum_dims(data: &[f32], shape: &[usize], dims: &[usize]) -> Vec<f32> {
    sum_dims_of(shape, dims, |k| data[k])
}

/// [`sum_dims`] of the tensor whose element at flat (row-major) index `k` is `value(k)`, with
/// the additions in the same order and no tensor materialised: an element-wise expression and
/// its sum fused into one pass (`value` is called once per element, `shape`'s product times).
pub fn sum_dims_of(shape: &[usize], dims: &[usize], value: impl Fn(usize) -> f32) -> Vec<f32> {
    let mut reduced = vec![false; shape.len()];
    for &d in dims {
        if let Some(r) = reduced.get_mut(d) {
            *r = true;
        }
    }
    let out_len: usize = shape
        .iter()
        .zip(&reduced)
        .filter(|(_, r)| !**r)
        .map(|(s, _)| *s)
        .product();
    let mut out = vec![0.0f32; out_len];
    if shape.iter().product::<usize>() == 0 {
        return out;
    }
    let iter = iteration_dims(shape, &reduced);
    let first = iter.first().copied().unwrap_or(Dim {
        size: 1,
        out: 0,
        input: 0,
    });
    let second = iter.get(1).copied().unwrap_or(Dim {
        size: 1,
        out: 0,
        input: 0,
    });
    let outer = iter.get(2..).unwrap_or(&[]);
    let mut index = vec![0usize; outer.len()];
    loop {
        let in_base: usize = outer.iter().zip(&index).map(|(d, i)| d.input * i).sum();
        let out_base: usize = outer.iter().zip(&index).map(|(d, i)| d.out * i).sum();
        loop_2d(&value, &mut out, in_base, out_base, first, second);
        // Advance the outer counter, the first outer dim fastest.
        let mut k = 0;
        loop {
            if k == outer.len() {
                return out;
            }
            index[k] += 1;
            if index[k] < outer[k].size {
                break;
            }
            index[k] = 0;
            k += 1;
        }
    }
}

/// The 2-d loop of `cascade_sum` on dims `d0` (inner) and `d1`, accumulating into `out`.
fn loop_2d(
    value: &impl Fn(usize) -> f32,
    out: &mut [f32],
    in_base: usize,
    out_base: usize,
    d0: Dim,
    d1: Dim,
) {
    let (mut a, mut b) = (d0, d1);
    if a.out != 0 && b.out == 0 {
        std::mem::swap(&mut a, &mut b);
    }
    let load = |i: usize, j: usize| value(in_base + i * a.input + j * b.input);
    if a.out != 0 && b.out != 0 {
        // Not a true reduction: out += in, element-wise.
        for j in 0..b.size {
            for i in 0..a.size {
                out[out_base + i * a.out + j * b.out] += load(i, j);
            }
        }
        return;
    }
    let mut store = |j: usize, value: f32| out[out_base + j * b.out] += value;
    if a.input == 1 && a.size >= VEC {
        // Contiguous inner reduction.
        for j in 0..b.size {
            store(j, inner_row_sum(a.size, |i| load(i, j)));
        }
    } else if b.input == 1 && b.size >= VEC {
        // Contiguous outer reduction (`vectorized_outer_sum`).
        let mut j = 0;
        while j + 4 * VEC <= b.size {
            for c in j..j + 4 * VEC {
                store(c, cascade(a.size, |i| load(i, c)));
            }
            j += 4 * VEC;
        }
        while j + VEC <= b.size {
            for c in j..j + VEC {
                store(c, row_sum(a.size, |i| load(i, c)));
            }
            j += VEC;
        }
        for c in j..b.size {
            store(c, row_sum(a.size, |i| load(i, c)));
        }
    } else if a.input < b.input {
        for j in 0..b.size {
            store(j, row_sum(a.size, |i| load(i, j)));
        }
    } else {
        // `scalar_outer_sum`: four columns at a time, one cascade each.
        let mut j = 0;
        while j + 3 < b.size {
            for c in j..j + 4 {
                store(c, cascade(a.size, |i| load(i, c)));
            }
            j += 4;
        }
        for c in j..b.size {
            store(c, row_sum(a.size, |i| load(i, c)));
        }
    }
}

/// `torch.mean(x, dim=dims)` on CPU: [`sum_dims`] divided (float32) by the number of reduced
/// elements.
pub fn mean_dims(data: &[f32], shape: &[usize], dims: &[usize]) -> Vec<f32> {
    mean_dims_of(shape, dims, |k| data[k])
}

/// [`mean_dims`] of the tensor whose element at flat index `k` is `value(k)` (see
/// [`sum_dims_of`]).
pub fn mean_dims_of(shape: &[usize], dims: &[usize], value: impl Fn(usize) -> f32) -> Vec<f32> {
    let count: usize = dims.iter().filter_map(|&d| shape.get(d)).product();
    let n = count as f32;
    sum_dims_of(shape, dims, value)
        .into_iter()
        .map(|s| s / n)
        .collect()
}

/// `(torch.amin(x, dims), torch.amax(x, dims))`, row-major over the kept dims; NaN propagates.
/// Reducing an empty dim gives ±inf (torch raises there; callers check first).
pub fn min_max_dims(data: &[f32], shape: &[usize], dims: &[usize]) -> (Vec<f32>, Vec<f32>) {
    let n = shape.len();
    let reduced: Vec<bool> = (0..n).map(|d| dims.contains(&d)).collect();
    if let Some(run) = contiguous_runs(shape, dims).filter(|&r| r > 0 && !data.is_empty()) {
        return min_max_runs(data, run);
    }
    let (out_stride, acc) = output_strides(shape, &reduced);
    let mut lo = vec![f32::INFINITY; acc];
    let mut hi = vec![f32::NEG_INFINITY; acc];
    let mut coord = vec![0usize; n];
    for &v in data {
        let o: usize = coord.iter().zip(&out_stride).map(|(c, s)| c * s).sum();
        if v.is_nan() || lo[o].is_nan() {
            lo[o] = f32::NAN;
        } else if v < lo[o] {
            lo[o] = v;
        }
        if v.is_nan() || hi[o].is_nan() {
            hi[o] = f32::NAN;
        } else if v > hi[o] {
            hi[o] = v;
        }
        for d in (0..n).rev() {
            coord[d] += 1;
            if coord[d] < shape[d] {
                break;
            }
            coord[d] = 0;
        }
    }
    (lo, hi)
}

/// [`min_max_dims`] where output `k` reduces the run `data[k·run ..][.. run]`: eight lanes at
/// a time, NaN tracked on the side. A zero result is recomputed in order, so that the sign of
/// a zero is the one the sequential scan keeps (the first of equal values).
fn min_max_runs(data: &[f32], run: usize) -> (Vec<f32>, Vec<f32>) {
    #[inline(always)]
    fn scan(values: &[f32]) -> (f32, f32) {
        let mut lo = [f32::INFINITY; 8];
        let mut hi = [f32::NEG_INFINITY; 8];
        let mut nan = [false; 8];
        let (chunks, rest) = values.split_at(values.len() / 8 * 8);
        for chunk in chunks.chunks_exact(8) {
            for l in 0..8 {
                let v = chunk[l];
                lo[l] = if v < lo[l] { v } else { lo[l] };
                hi[l] = if v > hi[l] { v } else { hi[l] };
                nan[l] |= v.is_nan();
            }
        }
        let (mut lo_all, mut hi_all) = (f32::INFINITY, f32::NEG_INFINITY);
        let mut any_nan = nan.iter().any(|&b| b);
        for l in 0..8 {
            lo_all = if lo[l] < lo_all { lo[l] } else { lo_all };
            hi_all = if hi[l] > hi_all { hi[l] } else { hi_all };
        }
        for &v in rest {
            lo_all = if v < lo_all { v } else { lo_all };
            hi_all = if v > hi_all { v } else { hi_all };
            any_nan |= v.is_nan();
        }
        if any_nan {
            (f32::NAN, f32::NAN)
        } else {
            (lo_all, hi_all)
        }
    }
    fn in_order(values: &[f32]) -> (f32, f32) {
        values
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
                (if v < lo { v } else { lo }, if v > hi { v } else { hi })
            })
    }
    crate::simd::with_wide_vectors(
        #[inline(always)]
        || {
            data.chunks(run)
                .map(|values| {
                    let (lo, hi) = scan(values);
                    if lo == 0.0 || hi == 0.0 {
                        let (lo_seq, hi_seq) = in_order(values);
                        (
                            if lo == 0.0 { lo_seq } else { lo },
                            if hi == 0.0 { hi_seq } else { hi },
                        )
                    } else {
                        (lo, hi)
                    }
                })
                .unzip()
        },
    )
}

/// `c10`'s `CeilLog2` as the cascade sum uses it (`1` for `x ≤ 2`).
fn ceil_log2(x: usize) -> usize {
    if x <= 2 {
        return 1;
    }
    (usize::BITS - (x - 1).leading_zeros()) as usize
}

#[cfg(test)]
mod tests {
    use super::super::sum_f32;
    use super::*;

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n as u32)
            .map(|i| {
                let u = (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32
                    / (1u32 << 24) as f32;
                (u - 0.37) * (1.0 + (i % 7) as f32 * 1e3)
            })
            .collect()
    }

    struct Values<'a>(&'a [f32]);
    impl RowLanes for Values<'_> {
        fn lanes<const L: usize>(&self, at: usize) -> [f32; L] {
            std::array::from_fn(|l| self.0[at + l])
        }
    }

    #[test]
    fn sums_over_contiguous_runs_are_inner_row_sums() {
        let x = values(6 * 5 * 40, 9);
        for (shape, dims, run) in [
            (vec![1, 30, 40], vec![0, 2], Some(40)),
            (vec![6, 5, 40], vec![1, 2], Some(200)),
            (vec![6, 5, 40], vec![2], Some(40)),
            (vec![6, 5, 40], vec![0, 1, 2], Some(1200)),
            (vec![6, 1, 200], vec![1, 2], Some(200)),
            (vec![6, 5, 40], vec![0, 2], None),
            (vec![6, 5, 40], vec![1], None),
        ] {
            assert_eq!(contiguous_runs(&shape, &dims), run, "{shape:?} {dims:?}");
            let Some(run) = run else { continue };
            let want = sum_dims(&x, &shape, &dims);
            let got: Vec<f32> = x
                .chunks(run)
                .map(|r| inner_row_sum_of_lanes(r.len(), &Values(r)))
                .collect();
            assert_eq!(
                got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "{shape:?} {dims:?}"
            );
        }
        for n in [1, 7, 8, 31, 32, 33, 100, 4096, 70_001] {
            let x = values(n, 4);
            assert_eq!(
                inner_row_sum_of_lanes(n, &Values(&x)).to_bits(),
                sum_f32(&x).to_bits(),
                "{n}"
            );
        }
    }

    /// The short sum is the fed sum's bits on rows of one to three vectors, −0 included.
    #[test]
    fn short_rows_sum_as_the_fed_sum_does() {
        for n in [8, 16, 24] {
            for seed in 0..50 {
                let mut x = values(n, seed);
                if seed % 3 == 0 {
                    x.iter_mut().step_by(2).for_each(|v| *v = -0.0);
                }
                if seed % 5 == 0 {
                    x.fill(-0.0);
                }
                let mut fed = InnerRowSum::new(n);
                for v in x.chunks_exact(VEC) {
                    fed.push(v.try_into().unwrap());
                }
                assert_eq!(
                    short_inner_row_sum(&x).to_bits(),
                    fed.finish(&[]).to_bits(),
                    "{n} {seed}"
                );
                assert_eq!(short_inner_row_sum(&x).to_bits(), sum_f32(&x).to_bits());
            }
        }
    }

    #[test]
    fn min_max_of_runs_is_the_sequential_scan() {
        let mut x = values(4 * 37, 5);
        x[3] = -0.0;
        x[70] = 0.0;
        x[71] = -0.0;
        x[100] = f32::NAN;
        for (shape, dims) in [
            (vec![1, 4, 37], vec![0, 2]),
            (vec![4, 37], vec![1]),
            (vec![4 * 37], vec![0]),
            (vec![2, 2, 37], vec![0, 1, 2]),
        ] {
            let (lo, hi) = min_max_dims(&x, &shape, &dims);
            let run = x.len() / lo.len();
            for (k, values) in x.chunks(run).enumerate() {
                let mut want = (f32::INFINITY, f32::NEG_INFINITY);
                for &v in values {
                    if v.is_nan() || want.0.is_nan() {
                        want = (f32::NAN, f32::NAN);
                    } else {
                        want.0 = if v < want.0 { v } else { want.0 };
                        want.1 = if v > want.1 { v } else { want.1 };
                    }
                }
                assert_eq!(lo[k].to_bits(), want.0.to_bits(), "{shape:?} {k}");
                assert_eq!(hi[k].to_bits(), want.1.to_bits(), "{shape:?} {k}");
            }
        }
    }

    #[test]
    fn a_full_reduction_is_the_contiguous_cascade_sum() {
        for n in [1, 3, 7, 8, 9, 31, 64, 100, 257, 4096, 16384, 70_001] {
            let x = values(n, 3);
            assert_eq!(
                sum_dims(&x, &[n], &[0])[0].to_bits(),
                sum_f32(&x).to_bits(),
                "{n}"
            );
            // A 2-d tensor reduced over both dims coalesces into the same loop.
            if n % 4 == 0 {
                let s = sum_dims(&x, &[4, n / 4], &[0, 1])[0];
                assert_eq!(s.to_bits(), sum_f32(&x).to_bits(), "{n} as 2-d");
            }
        }
    }

    #[test]
    fn inner_reductions_sum_each_row_like_a_vector() {
        let x = values(64 * 256, 5);
        let rows = sum_dims(&x, &[64, 256], &[1]);
        for (r, got) in rows.iter().enumerate() {
            assert_eq!(got.to_bits(), sum_f32(&x[r * 256..(r + 1) * 256]).to_bits());
        }
    }

    #[test]
    fn outer_and_mixed_reductions_follow_the_column_kernels() {
        let x = values(37 * 40, 9);
        // Dim 0 reduced: blocks of 32 columns by cascade, 8 columns by row_sum.
        let cols = sum_dims(&x, &[37, 40], &[0]);
        for (c, got) in cols.iter().enumerate() {
            let want = if c < 32 {
                cascade(37, |i| x[i * 40 + c])
            } else {
                row_sum(37, |i| x[i * 40 + c])
            };
            assert_eq!(got.to_bits(), want.to_bits(), "column {c}");
        }
        // (B, S, H) over (0, 2): every (b, s) row summed, accumulated over b in order.
        let x = values(3 * 5 * 16, 1);
        let per_s = sum_dims(&x, &[3, 5, 16], &[0, 2]);
        for (s, got) in per_s.iter().enumerate() {
            let mut want = 0.0f32;
            for b in 0..3 {
                want += sum_f32(&x[(b * 5 + s) * 16..(b * 5 + s + 1) * 16]);
            }
            assert_eq!(got.to_bits(), want.to_bits(), "position {s}");
        }
        assert_eq!(
            mean_dims(&[1.0, 2.0, 3.0, 6.0], &[2, 2], &[1]),
            vec![1.5, 4.5]
        );
        let (lo, hi) = min_max_dims(&[1.0, -2.0, 3.0, 0.5], &[2, 2], &[0]);
        assert_eq!((lo, hi), (vec![1.0, -2.0], vec![3.0, 0.5]));
    }
}
