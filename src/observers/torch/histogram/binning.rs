//! `torch.histc(x, bins, lo, hi)` on float32 data, bit-exact and fast.
//!
//! The bin of `v` is `⌊(v − lo)·bins/(hi − lo)⌋` in float32, `v == hi` goes to the last bin,
//! values outside `[lo, hi]` (and NaN) are dropped, and `lo == hi` widens to `[lo − 1, hi + 1]`
//! (same rule as [`crate::histogram::histc`]). PyTorch adds `1.0` to a float32 counter, which
//! stops growing at 2²⁴; counting in integers and converting with `min(count, 2²⁴)` gives the
//! same numbers. A vectorised pass computes the bins of a block of values, then the counts go
//! to four interleaved integer histograms so that runs of equal bins do not serialise on one
//! counter.

/// The largest value a float32 counter reaches by adding 1.0 (`2²⁴ + 1` rounds to `2²⁴`).
const F32_COUNT_LIMIT: u64 = 1 << 24;

/// `torch.histc(data, bins, lo, hi)` (one thread) as float32 counts.
pub fn histc(data: &[f32], bins: usize, lo: f32, hi: f32) -> Vec<f32> {
    count(data, bins, lo, hi)
        .into_iter()
        .map(|c| c.min(F32_COUNT_LIMIT) as f32)
        .collect()
}

/// Values per index pass (the pass is a plain loop the compiler vectorises).
const BLOCK: usize = 1024;
/// Interleaved sub-histograms.
const WAYS: usize = 4;

/// The geometry of one histc call.
#[derive(Clone, Copy)]
struct Bins {
    lo: f32,
    hi: f32,
    width: f32,
    nbins: f32,
    last: i32,
    /// Slot that collects dropped values.
    dump: i32,
}

impl Bins {
    /// Bin of `v`, or `dump` when histc drops it; branch-free.
    ///
    /// `⌊t⌋` of `t = (v − lo)·bins/(hi − lo)` is [`crate::quant::floor_small`] (float32 adds
    /// of 2²³) instead of a saturating float → int cast, so that the whole pass vectorises. For kept values `0 ≤ t ≤ bins < 2²³`; anything else is
    /// replaced by 0 and then dropped.
    #[inline(always)]
    fn index(&self, v: f32) -> u32 {
        let t = (v - self.lo) * self.nbins / self.width;
        let t = if (0.0..4_194_304.0).contains(&t) {
            t
        } else {
            0.0
        };
        let pos = crate::quant::floor_small(t) as i32;
        let pos = if pos > self.last { self.last } else { pos };
        let inside = (v >= self.lo) & (v <= self.hi);
        (if inside { pos } else { self.dump }) as u32
    }
}

/// Elements per parallel piece of [`count`]: few enough pieces that their sub-histograms cost
/// little to add up.
const PIECE: usize = 1 << 20;

/// Integer counts per bin, with histc's binning rule. Natively the data is cut into pieces
/// counted in parallel; integer counts add up to the same totals in any order.
pub fn count(data: &[f32], bins: usize, lo: f32, hi: f32) -> Vec<u64> {
    count_pieces::<false>(data, bins, lo, hi)
}

/// [`count`] of `|data|`, without materialising the absolute values (what observers that bin
/// `x.abs()` compute).
pub fn count_abs(data: &[f32], bins: usize, lo: f32, hi: f32) -> Vec<u64> {
    count_pieces::<true>(data, bins, lo, hi)
}

fn count_pieces<const ABS: bool>(data: &[f32], bins: usize, lo: f32, hi: f32) -> Vec<u64> {
    crate::parallel::sum_piece_counts(data, PIECE, bins, |piece| {
        count_piece::<ABS>(piece, bins, lo, hi)
    })
}

/// `torch.histc(data, bins, lo, hi)` together with the min and max of the finite values of
/// `data` (`None` when there are none), in one pass over the data.
pub fn histc_with_range(
    data: &[f32],
    bins: usize,
    lo: f32,
    hi: f32,
) -> (Vec<f32>, Option<(f32, f32)>) {
    let (counts, range) = count_impl::<true, false>(data, bins, lo, hi);
    (
        counts
            .into_iter()
            .map(|c| c.min(F32_COUNT_LIMIT) as f32)
            .collect(),
        range,
    )
}

/// Lanes of the fused min/max.
const LANES: usize = 8;

/// The counts of one piece, compiled for the widest vectors the CPU has (the same integer
/// counts).
fn count_piece<const ABS: bool>(data: &[f32], bins: usize, lo: f32, hi: f32) -> Vec<u64> {
    crate::simd::with_wide_vectors(
        #[inline(always)]
        || count_impl::<false, ABS>(data, bins, lo, hi).0,
    )
}

/// Counts of `data` (of `|data|` when `ABS`) and, when `RANGE`, the finite min/max of `data`.
#[inline(always)]
fn count_impl<const RANGE: bool, const ABS: bool>(
    data: &[f32],
    bins: usize,
    lo: f32,
    hi: f32,
) -> (Vec<u64>, Option<(f32, f32)>) {
    let mut totals = vec![0u64; bins];
    let mut low = [f32::INFINITY; LANES];
    let mut high = [f32::NEG_INFINITY; LANES];
    let mut track = |chunk: &[f32]| {
        for (k, &v) in chunk.iter().enumerate() {
            let finite = v.is_finite();
            let lane = k % LANES;
            low[lane] = if finite & (v < low[lane]) {
                v
            } else {
                low[lane]
            };
            high[lane] = if finite & (v > high[lane]) {
                v
            } else {
                high[lane]
            };
        }
    };
    if bins == 0 {
        if RANGE {
            track(data);
        }
        return (totals, fold_range(&low, &high));
    }
    let (lo, hi) = if lo == hi {
        (lo - 1.0, hi + 1.0)
    } else {
        (lo, hi)
    };
    let geometry = Bins {
        lo,
        hi,
        width: hi - lo,
        nbins: bins as f32,
        last: (bins - 1) as i32,
        dump: bins as i32,
    };
    let stride = bins + 1;
    let mut sub = vec![0u32; stride * WAYS];
    let mut idx = [0u32; BLOCK];
    // Super-blocks small enough that no u32 sub-counter can overflow.
    for part in data.chunks(1 << 30) {
        for block in part.chunks(BLOCK) {
            let idx = &mut idx[..block.len()];
            for (slot, &v) in idx.iter_mut().zip(block) {
                *slot = geometry.index(if ABS { v.abs() } else { v });
            }
            if RANGE {
                track(block);
            }
            let quads = idx.chunks_exact(WAYS);
            let rest = quads.remainder();
            for quad in quads {
                for (way, &i) in quad.iter().enumerate() {
                    sub[way * stride + i as usize] += 1;
                }
            }
            for &i in rest {
                sub[i as usize] += 1;
            }
        }
        for way in sub.chunks_exact_mut(stride) {
            for (total, c) in totals.iter_mut().zip(way.iter_mut()) {
                *total += *c as u64;
                *c = 0;
            }
        }
    }
    (totals, fold_range(&low, &high))
}

fn fold_range(low: &[f32; LANES], high: &[f32; LANES]) -> Option<(f32, f32)> {
    let lo = low.iter().fold(f32::INFINITY, |a, &b| a.min(b));
    let hi = high.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    (lo <= hi).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// histc's definition, one value at a time (`crate::histogram::histc` counts through this
    /// module's kernel, so it is no reference for it).
    fn one_at_a_time(data: &[f32], bins: usize, lo: f32, hi: f32) -> Vec<f32> {
        let mut counts = vec![0.0; bins];
        crate::histogram::histc_accumulate_sequential(data, lo, hi, &mut counts);
        counts
    }

    #[test]
    fn matches_the_reference_kernel() {
        let mut state = 0x2545f491u32;
        let data: Vec<f32> = (0..10_007)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state as f32 / u32::MAX as f32 - 0.3) * 7.0
            })
            .collect();
        for &(bins, lo, hi) in &[
            (2048, -2.1f32, 4.9f32),
            (7, -1.0, 1.0),
            (1, 0.0, 0.0),
            (256, 0.5, 0.5),
        ] {
            assert_eq!(
                histc(&data, bins, lo, hi),
                one_at_a_time(&data, bins, lo, hi),
                "bins {bins} [{lo}, {hi}]"
            );
        }
    }

    #[test]
    fn bin_edges_and_their_neighbours_match_the_reference_kernel() {
        let (lo, hi, bins) = (-3.7f32, 11.3f32, 2048usize);
        let step = (hi - lo) / bins as f32;
        let mut data = Vec::new();
        for k in 0..=bins {
            let edge = lo + step * k as f32;
            data.extend([
                edge,
                f32::from_bits(edge.to_bits() + 1),
                f32::from_bits(edge.to_bits().saturating_sub(1)),
            ]);
        }
        data.extend([hi, lo, f32::from_bits(hi.to_bits() + 1), -0.0, 1e30, -1e30]);
        assert_eq!(
            histc(&data, bins, lo, hi),
            one_at_a_time(&data, bins, lo, hi)
        );
        assert_eq!(
            histc(&data, 65536, lo, hi),
            one_at_a_time(&data, 65536, lo, hi)
        );
    }

    #[test]
    fn fused_range_is_the_finite_min_max() {
        let data = [
            3.0,
            f32::NAN,
            -2.0,
            f32::INFINITY,
            0.5,
            7.25,
            f32::NEG_INFINITY,
            1.0,
            -1.0,
        ];
        let (counts, range) = histc_with_range(&data, 4, 0.0, 4.0);
        assert_eq!(range, crate::shared_stats::finite_min_max(&data));
        assert_eq!(counts, histc(&data, 4, 0.0, 4.0));
        assert_eq!(histc_with_range(&[f32::NAN], 4, 0.0, 1.0).1, None);
        assert_eq!(histc_with_range(&[2.0], 0, 0.0, 1.0).1, Some((2.0, 2.0)));
    }

    #[test]
    fn counts_saturate_like_a_float32_counter() {
        assert_eq!(histc(&[], 3, 0.0, 1.0), vec![0.0; 3]);
        let many = vec![0.25f32; 20];
        assert_eq!(histc(&many, 2, 0.0, 1.0), vec![20.0, 0.0]);
        assert_eq!(
            histc(&[1.0, f32::NAN, f32::INFINITY], 2, 0.0, 1.0),
            vec![0.0, 1.0]
        );
        assert_eq!(16_777_217u64.min(F32_COUNT_LIMIT) as f32, 16_777_216.0);
    }
}
