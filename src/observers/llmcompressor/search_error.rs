//! One search candidate's error per qparam: `Σ |fake_quant(x) − x|^norm · w` over the qparam's
//! elements (the flattened batch's dims `(0, −1)`), float32, added in ATen's order.
//!
//! A batch of one observation (or reduced to one qparam) holds each qparam's elements in one
//! contiguous run ([`contiguous_runs`]), which ATen sums as a contiguous inner reduction. There
//! the error is computed 32 lanes at a time ([`inner_row_sum_of_lanes`]), with the rounding and
//! the power ([`Power`]) compiled into the loop, AVX2 and FMA used where the CPU has them, and
//! no index arithmetic per element. Other layouts
//! (activations of several observations, runs under eight values) go through the general
//! reduction ([`sum_dims_of`]) one element at a time. Both give the same bits.

use super::fake_quant::{cast_to_fp4, qdq, qdq_by, Rounding};
use crate::formats::ElementFormat;
use crate::kernels::torch::pointwise::Power;
use crate::kernels::torch::reduce::{
    contiguous_runs, inner_row_sum_of_lanes, short_inner_row_sum, sum_dims_of, RowLanes, BLOCK, VEC,
};
use crate::quant::round_half_even;

/// What every candidate of one search shares: the flattened batch, its reduced dims, the
/// per-element weights, the power and the fake quantization's range and rounding.
#[derive(Debug, Clone, Copy)]
pub struct ErrorTerms<'a> {
    pub data: &'a [f32],
    /// `(num_observations, *qparam_shape, group_size)`.
    pub shape: &'a [usize],
    pub dims: &'a [usize],
    /// Per-element weights repeating with their length: element `j` weighs
    /// `weights[j mod weights.len()]` (imatrix: one per column of a row-major weight, which
    /// the search then reads from cache rather than a tensor-sized copy from memory).
    pub weights: Option<&'a [f32]>,
    pub power: Power,
    pub range: (f32, f32),
    pub rounding: Rounding,
}

impl ErrorTerms<'_> {
    /// The error of the candidate with these qparams (one scale and zero point per qparam,
    /// the global scale already divided out), one per qparam.
    pub fn errors(&self, scale: &[f32], zero_point: &[f32]) -> Vec<f32> {
        let qcount = scale.len();
        let runs = contiguous_runs(self.shape, self.dims).filter(|&run| {
            run >= VEC
                && zero_point.len() == qcount
                && qcount.checked_mul(run) == Some(self.data.len())
                && self.weights.is_none_or(|w| w.len() % run == 0)
        });
        let Some(group) = runs else {
            return self.errors_by_element(scale, zero_point);
        };
        match self.rounding {
            Rounding::Integer => self.errors_by_runs(scale, zero_point, group, round_half_even),
            Rounding::Fp8 => self.errors_by_runs(scale, zero_point, group, |v| {
                ElementFormat::Fp8E4m3.quantize(v)
            }),
            Rounding::Fp4 => self.errors_by_runs(scale, zero_point, group, cast_to_fp4),
        }
    }

    /// Qparam `k`'s elements are `data[k·group ..][.. group]`, summed as one contiguous row.
    fn errors_by_runs(
        &self,
        scale: &[f32],
        zero_point: &[f32],
        group: usize,
        round: impl Fn(f32) -> f32 + Copy,
    ) -> Vec<f32> {
        #[inline(always)]
        fn all_runs<const FUSED: bool>(
            terms: &ErrorTerms<'_>,
            (scale, zero_point): (&[f32], &[f32]),
            group: usize,
            round: impl Fn(f32) -> f32 + Copy,
        ) -> Vec<f32> {
            let mut out = Vec::with_capacity(scale.len());
            // Runs shorter than a block (NVFP4's 16, groups of 8) a block of runs at a time, so
            // that the power's chains still overlap.
            // (A block is read from one period of the weights.)
            let period = terms.weights.map_or(BLOCK, <[f32]>::len);
            let per_block = match group {
                g if g < BLOCK
                    && BLOCK.is_multiple_of(g)
                    && g % VEC == 0
                    && period.is_multiple_of(BLOCK) =>
                {
                    BLOCK / g
                }
                _ => 0,
            };
            let mut done = 0;
            while per_block > 0 && done + per_block <= scale.len() {
                let at = done * group;
                let mut qparams = ([0.0f32; BLOCK], [0.0f32; BLOCK]);
                for r in 0..per_block {
                    qparams.0[r * group..(r + 1) * group].fill(scale[done + r]);
                    qparams.1[r * group..(r + 1) * group].fill(zero_point[done + r]);
                }
                let w = terms.weights.map(|w| read::<BLOCK>(w, at % w.len()));
                let raised =
                    raised_errors::<BLOCK, FUSED>(terms, read(terms.data, at), w, qparams, round);
                for run in raised.chunks_exact(group) {
                    out.push(short_inner_row_sum(run));
                }
                done += per_block;
            }
            for (k, (&s, &z)) in scale.iter().zip(zero_point).enumerate().skip(done) {
                let x = &terms.data[k * group..(k + 1) * group];
                let w = terms.weights.map(|w| {
                    let at = k * group % w.len();
                    &w[at..at + group]
                });
                let run = Run::<_, FUSED> {
                    terms,
                    x,
                    w,
                    qparams: (s, z),
                    round,
                };
                out.push(inner_row_sum_of_lanes(group, &run));
            }
            out
        }
        let qparams = (scale, zero_point);
        crate::simd::with_fma(
            #[inline(always)]
            || all_runs::<true>(self, qparams, group, round),
            #[inline(always)]
            || all_runs::<false>(self, qparams, group, round),
        )
    }

    /// Any layout: element `j` belongs to qparam `(j / group) mod qparams`.
    fn errors_by_element(&self, scale: &[f32], zero_point: &[f32]) -> Vec<f32> {
        let group = self.shape.last().copied().unwrap_or(1).max(1);
        let slots = scale.len().max(1);
        let (qmin, qmax) = self.range;
        sum_dims_of(self.shape, self.dims, |j| {
            let x = self.data[j];
            let k = (j / group) % slots;
            let y = qdq(x, scale[k], zero_point[k], qmin, qmax, self.rounding);
            let v = self.power.lanes([(y - x).abs()])[0];
            match self.weights {
                Some(w) => v * w[j % w.len()],
                None => v,
            }
        })
    }
}

/// One run's raised errors under one qparam's `(s, z)`.
struct Run<'a, R, const FUSED: bool> {
    terms: &'a ErrorTerms<'a>,
    x: &'a [f32],
    w: Option<&'a [f32]>,
    qparams: (f32, f32),
    round: R,
}

impl<R: Fn(f32) -> f32 + Copy, const FUSED: bool> RowLanes for Run<'_, R, FUSED> {
    #[inline(always)]
    fn lanes<const L: usize>(&self, at: usize) -> [f32; L] {
        let (s, z) = self.qparams;
        raised_errors::<L, FUSED>(
            self.terms,
            read(self.x, at),
            self.w.map(|w| read(w, at)),
            ([s; L], [z; L]),
            self.round,
        )
    }
}

/// Values `at … at + L − 1` of `d` (zeros past its end, which callers never reach).
#[inline(always)]
fn read<const L: usize>(d: &[f32], at: usize) -> [f32; L] {
    d.get(at..)
        .and_then(|d| d.first_chunk::<L>())
        .copied()
        .unwrap_or([0.0; L])
}

/// `|fake_quant(x) − x|^norm · w` of every lane, lane `l` under the qparams `(s[l], z[l])`.
#[inline(always)]
fn raised_errors<const L: usize, const FUSED: bool>(
    terms: &ErrorTerms<'_>,
    x: [f32; L],
    w: Option<[f32; L]>,
    (s, z): ([f32; L], [f32; L]),
    round: impl Fn(f32) -> f32 + Copy,
) -> [f32; L] {
    let mut lanes = [0.0f32; L];
    for l in 0..L {
        lanes[l] = (qdq_by(x[l], s[l], z[l], terms.range, round) - x[l]).abs();
    }
    let mut raised = if FUSED {
        terms.power.lanes_fused(lanes)
    } else {
        terms.power.lanes(lanes)
    };
    if let Some(w) = w {
        for l in 0..L {
            raised[l] *= w[l];
        }
    }
    raised
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n as u32)
            .map(|i| {
                let u = (i.wrapping_mul(2_654_435_761).wrapping_add(seed) >> 8) as f32
                    / (1u32 << 24) as f32;
                (u - 0.45) * (1.0 + (i % 13) as f32 * 0.7)
            })
            .collect()
    }

    /// Weights given once per column (repeating) give the bits of the same weights written out
    /// for every element, on the block path (groups of 16), the run path (groups of 128) and
    /// the general path (a period the runs do not divide).
    #[test]
    fn repeating_weights_weigh_as_written_out() {
        for (qcount, group, period, rounding, range) in [
            (64, 16, 128, Rounding::Fp4, (-6.0, 6.0)),
            (12, 128, 256, Rounding::Integer, (-8.0, 7.0)),
            (30, 16, 40, Rounding::Fp4, (-6.0, 6.0)),
        ] {
            let data = values(qcount * group, 3);
            let columns: Vec<f32> = values(period, 5).into_iter().map(f32::abs).collect();
            let written: Vec<f32> = (0..data.len()).map(|j| columns[j % period]).collect();
            let shape = [1, qcount, group];
            let scale: Vec<f32> = (0..qcount).map(|k| 0.05 + 0.01 * k as f32).collect();
            let zp = vec![0.0; qcount];
            let terms = |weights| ErrorTerms {
                data: &data,
                shape: &shape,
                dims: &[0, 2],
                weights: Some(weights),
                power: Power::new(2.4),
                range,
                rounding,
            };
            let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let want = bits(terms(&written).errors_by_element(&scale, &zp));
            assert_eq!(bits(terms(&columns).errors(&scale, &zp)), want, "{group}");
            assert_eq!(bits(terms(&written).errors(&scale, &zp)), want, "{group}");
        }
    }

    /// The run kernel gives the general reduction's bits, for every rounding, with and
    /// without weights, on runs with and without a tail.
    #[test]
    fn runs_match_the_general_reduction() {
        for (observations, qcount, group) in [
            (1, 1, 1000),
            (1, 3, 128),
            (1, 5, 13),
            (1, 2, 8),
            (1, 9, 16), // blocks of two runs and one left over
            (1, 13, 8),
            (1, 1, 70_001),
            (37, 1, 64), // an activation reduced to one qparam
        ] {
            let data = values(observations * qcount * group, 7);
            let weights = values(observations * qcount * group, 11)
                .into_iter()
                .map(f32::abs)
                .collect::<Vec<_>>();
            let shape = [observations, qcount, group];
            let scale: Vec<f32> = (0..qcount).map(|k| 0.05 + 0.01 * k as f32).collect();
            for (rounding, range, zero) in [
                (Rounding::Integer, (-8.0, 7.0), 0.0),
                (Rounding::Integer, (0.0, 15.0), 8.0),
                (Rounding::Fp4, (-6.0, 6.0), 0.0),
                (Rounding::Fp8, (-448.0, 448.0), 0.0),
            ] {
                for weighted in [false, true] {
                    for norm in [2.4, 2.0, 3.0] {
                        let terms = ErrorTerms {
                            data: &data,
                            shape: &shape,
                            dims: &[0, 2],
                            weights: weighted.then_some(weights.as_slice()),
                            power: Power::new(norm),
                            range,
                            rounding,
                        };
                        let zp = vec![zero; qcount];
                        let fast = terms.errors(&scale, &zp);
                        let general = terms.errors_by_element(&scale, &zp);
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&fast), bits(&general), "{qcount}×{group} {rounding:?}");
                    }
                }
            }
        }
    }
}
