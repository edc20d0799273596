//! Horizon's fake quantization, `torch.ops.horizon.scale_quanti` (emulated from the source's
//! pure-Python `_broadcast_scale_quant_*` helpers):
//! `x̂ = (clamp(R(x / s) + zp, qmin, qmax) − zp)·s` in float32 with a true division, where `R`
//! is round-half-to-even (`torch.round`) or the hardware's `⌊v + 0.5⌋` ("bpu_round", Horizon's
//! global `QuantRoundMode`); a scale with more than one element broadcasts along the channel
//! axis. MSE and Mix score their candidates with its L2 error ([`l2_loss`]).

use super::base::QuantConfig;
use super::config::RoundMode;
use crate::error::{Error, Result};
use crate::observer::QParams;
use crate::quant::round_half_even;
use crate::tensor::Tensor;

impl RoundMode {
    /// Round one value.
    #[inline]
    pub fn round(self, v: f32) -> f32 {
        match self {
            RoundMode::HalfToEven => round_half_even(v),
            // ⌊v + 0.5⌋: WebAssembly has `floor` as an instruction; elsewhere the round to
            // nearest steps back when it rounded up (the same bits, and it vectorises on SSE2).
            #[cfg(target_arch = "wasm32")]
            RoundMode::BpuRound => (v + 0.5).floor(),
            #[cfg(not(target_arch = "wasm32"))]
            RoundMode::BpuRound => {
                let y = v + 0.5;
                let r = round_half_even(y);
                r - if r > y { 1.0 } else { 0.0 }
            }
        }
    }
}

/// `scale_quanti` of one value with scale `s` and zero point `zp`, rounding with `round`.
#[inline(always)]
pub fn qdq_value(v: f32, s: f32, zp: f32, qmin: f32, qmax: f32, round: impl Fn(f32) -> f32) -> f32 {
    ((round(v / s) + zp).clamp(qmin, qmax) - zp) * s
}

/// Horizon's fake quantisation (`scale_quanti`) of `x` with `q`, rounding with `round_mode`.
/// One scale applies to the whole tensor; several broadcast along `q.axis`, or, without an
/// axis (NormObserver's column scales), along the flattened trailing dimensions.
pub fn fake_quantize(x: &Tensor, q: &QParams, round_mode: RoundMode) -> Result<Tensor> {
    let (quant_min, quant_max) = q
        .grid
        .int_range()
        .ok_or_else(|| Error::input("Horizon fake quantization needs an integer grid"))?;
    let (qmin, qmax) = (quant_min as f32, quant_max as f32);
    crate::quant::check_scales(q)?;
    let n = q.scale.len();
    let zps: Vec<f32> = (0..n).map(|i| q.zero_point.get_f64(i) as f32).collect();
    let one = |v: f32, s: f32, zp: f32| qdq_value(v, s, zp, qmin, qmax, |r| round_mode.round(r));
    let mut data = Vec::with_capacity(x.len());
    if n == 1 {
        data.extend(x.data.iter().map(|&v| one(v, q.scale[0], zps[0])));
    } else if let Some(axis) = q.axis {
        if axis >= x.ndim() || x.shape[axis] != n {
            return Err(Error::input(format!(
                "{n} per-channel scales do not fit axis {axis} of a tensor of shape {:?}",
                x.shape
            )));
        }
        let inner: usize = x.shape[axis + 1..].iter().product();
        if inner > 0 {
            for (k, run) in x.data.chunks_exact(inner).enumerate() {
                let c = k % n;
                data.extend(run.iter().map(|&v| one(v, q.scale[c], zps[c])));
            }
        }
    } else {
        let trailing: usize = x.shape.iter().skip(1).product();
        if trailing != n {
            return Err(Error::input(format!(
                "{n} scales do not fit the trailing dimensions of a tensor of shape {:?}",
                x.shape
            )));
        }
        for run in x.data.chunks_exact(n) {
            data.extend(
                run.iter()
                    .enumerate()
                    .map(|(c, &v)| one(v, q.scale[c], zps[c])),
            );
        }
    }
    Ok(x.with_data(data))
}

/// `torch.linalg.norm(scale_quanti(x, s) − x, ord=2, dim=-1)` of one contiguous row, in
/// float32 as PyTorch's vectorised last-dim kernel computes it: eight lanes accumulate the
/// squares (multiply, then add: no fused multiply-add), the lanes are added in order, then the
/// tail (under 8 elements) one by one, then the square root. This reproduces the reference
/// losses bit for bit, so near-ties are broken as Horizon breaks them.
pub fn l2_loss(row: &[f32], quant: &QuantConfig, scale: f32) -> f32 {
    l2_losses_group(row, quant, &[scale])[0]
}

/// The error of one value under `scale_quanti` with scale `s` (zero point 0, grid `[lo, hi]`).
#[inline(always)]
fn quant_error(v: f32, s: f32, lo: f32, hi: f32, round: &impl Fn(f32) -> f32) -> f32 {
    let r = round(v / s);
    let c = if r < lo { lo } else { r };
    (if c > hi { hi } else { c }) * s - v
}

/// Add the squared errors of `whole` (a multiple of 8 values) to the eight lanes, value `i`
/// into lane `i mod 8`, in order.
#[inline(always)]
fn add_squared_errors(
    lanes: &mut [f32; 8],
    whole: &[f32],
    s: f32,
    lo: f32,
    hi: f32,
    round: &impl Fn(f32) -> f32,
) {
    for chunk in whole.chunks_exact(8) {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            let d = quant_error(v, s, lo, hi, round);
            *lane += d * d;
        }
    }
}

/// The lanes added in order, then the tail of `row` (under 8 values) one by one, then √.
#[inline(always)]
fn finish_l2(
    lanes: [f32; 8],
    row: &[f32],
    s: f32,
    lo: f32,
    hi: f32,
    round: &impl Fn(f32) -> f32,
) -> f32 {
    let mut acc = lanes[0];
    for &lane in &lanes[1..] {
        acc += lane;
    }
    for &v in &row[row.len() / 8 * 8..] {
        let d = quant_error(v, s, lo, hi, round);
        acc += d * d;
    }
    acc.sqrt()
}

/// Values per block of [`l2_losses`]: a multiple of 8 whose 16 KiB stay in the L1 cache while
/// every candidate of a group runs over them.
const LOSS_BLOCK: usize = 4096;

/// Candidates per group of [`l2_losses`]: the groups run in parallel natively.
const LOSS_GROUP: usize = 8;

/// [`l2_loss`] of `row` for every scale of `scales`, bit for bit: each candidate's eight lanes
/// receive the same values in the same order, but a block of the row is read once for a whole
/// group of candidates (one pass over memory per group instead of per candidate), and the
/// groups run in parallel natively.
pub fn l2_losses(row: &[f32], quant: &QuantConfig, scales: &[f32]) -> Vec<f32> {
    let groups: Vec<&[f32]> = scales.chunks(LOSS_GROUP).collect();
    crate::parallel::map_items(&groups, |g| l2_losses_group(row, quant, g)).concat()
}

fn l2_losses_group(row: &[f32], quant: &QuantConfig, scales: &[f32]) -> Vec<f32> {
    crate::simd::with_wide_vectors(
        #[inline(always)]
        || l2_losses_group_lanes(row, quant, scales),
    )
}

#[inline(always)]
fn l2_losses_group_lanes(row: &[f32], quant: &QuantConfig, scales: &[f32]) -> Vec<f32> {
    let (lo, hi) = (quant.quant_min as f32, quant.quant_max as f32);
    match quant.round_mode {
        RoundMode::HalfToEven => blocked_losses(row, scales, lo, hi, &round_half_even),
        RoundMode::BpuRound => {
            blocked_losses(row, scales, lo, hi, &|v| RoundMode::BpuRound.round(v))
        }
    }
}

#[inline(always)]
fn blocked_losses(
    row: &[f32],
    scales: &[f32],
    lo: f32,
    hi: f32,
    round: &impl Fn(f32) -> f32,
) -> Vec<f32> {
    let mut lanes = vec![[0.0f32; 8]; scales.len()];
    for block in row[..row.len() / 8 * 8].chunks(LOSS_BLOCK) {
        for (acc, &s) in lanes.iter_mut().zip(scales) {
            // The lanes in registers for the block, not in memory for every value.
            let mut local = *acc;
            add_squared_errors(&mut local, block, s, lo, hi, round);
            *acc = local;
        }
    }
    lanes
        .into_iter()
        .zip(scales)
        .map(|(acc, &s)| finish_l2(acc, row, s, lo, hi, round))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::ZeroPoint;
    use crate::observers::horizon::config::QDtype;
    use proptest::prelude::*;

    fn quant(dtype: QDtype, round_mode: RoundMode) -> QuantConfig {
        let (quant_min, quant_max) = dtype.range();
        QuantConfig {
            dtype,
            quant_min,
            quant_max,
            round_mode,
            pow: false,
        }
    }

    #[test]
    fn fast_rounding_matches_libm_everywhere_it_matters() {
        let special = [
            0.0f32,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            0.49999997,
            -0.49999997,
            8388607.5,
            -8388607.5,
            8388608.0,
            16777217.0,
            1e30,
            -1e30,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE,
            1e-40,
        ];
        let mut bits = 0x0000_0001u32;
        let mut values: Vec<f32> = special.to_vec();
        // A sweep over every exponent with varied mantissas, both signs.
        while bits < 0x7f80_0000 {
            values.push(f32::from_bits(bits));
            values.push(-f32::from_bits(bits));
            bits = bits.wrapping_add(0x0001_3579);
        }
        for v in values {
            let bpu = RoundMode::BpuRound.round(v);
            let want = (v + 0.5).floor();
            assert!(
                bpu == want || (bpu == 0.0 && want == 0.0),
                "{v:e}: {bpu} vs {want}"
            );
        }
    }

    #[test]
    fn round_modes_differ_on_ties() {
        assert_eq!(RoundMode::HalfToEven.round(2.5), 2.0);
        assert_eq!(RoundMode::BpuRound.round(2.5), 3.0);
        assert_eq!(RoundMode::HalfToEven.round(-2.5), -2.0);
        assert_eq!(RoundMode::BpuRound.round(-2.5), -2.0);
        assert_eq!(RoundMode::BpuRound.round(-2.6), -3.0);
    }

    /// The loss as PyTorch's kernel sums it, written plainly (the reference of the blocked
    /// pass): eight lanes over the whole row in order, the lanes added, the tail, the root.
    fn one_pass_l2(row: &[f32], q: &QuantConfig, s: f32) -> f32 {
        let (lo, hi) = (q.quant_min as f32, q.quant_max as f32);
        let err = |v: f32| {
            let r = q.round_mode.round(v / s);
            r.clamp(lo, hi) * s - v
        };
        let full = row.len() / 8 * 8;
        let mut lanes = [0.0f32; 8];
        for (i, &v) in row[..full].iter().enumerate() {
            let d = err(v);
            lanes[i % 8] += d * d;
        }
        let mut acc = lanes[0];
        for &lane in &lanes[1..] {
            acc += lane;
        }
        for &v in &row[full..] {
            let d = err(v);
            acc += d * d;
        }
        acc.sqrt()
    }

    #[test]
    fn blocked_losses_equal_one_pass_per_candidate_bit_for_bit() {
        // Lengths around the block and lane boundaries, heavy tails, both round modes, the 95
        // candidates of MSEObserver: every loss must have the bits of `l2_loss`.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for len in [0, 5, 8, 4095, 4096, 4103, 3 * 4096 + 17, 40_000] {
            let row: Vec<f32> = (0..len)
                .map(|_| next() * 8.0 / (0.05 + next().abs()))
                .collect();
            for mode in [RoundMode::HalfToEven, RoundMode::BpuRound] {
                let q = quant(QDtype::Qint8, mode);
                let amax = row.iter().fold(1e-3f32, |m, v| m.max(v.abs()));
                let scales: Vec<f32> = (0..95)
                    .map(|i| {
                        q.scale(
                            -amax * (1.0 - i as f32 * 0.01),
                            amax * (1.0 - i as f32 * 0.01),
                        )
                    })
                    .collect();
                let one: Vec<u32> = scales
                    .iter()
                    .map(|&s| one_pass_l2(&row, &q, s).to_bits())
                    .collect();
                let blocked: Vec<u32> = l2_losses(&row, &q, &scales)
                    .iter()
                    .map(|l| l.to_bits())
                    .collect();
                assert_eq!(blocked, one, "len {len}, {mode:?}");
                let single: Vec<u32> = scales
                    .iter()
                    .map(|&s| l2_loss(&row, &q, s).to_bits())
                    .collect();
                assert_eq!(single, one, "len {len}, {mode:?}: l2_loss");
            }
        }
    }

    #[test]
    fn l2_loss_accumulates_eight_lanes_then_the_tail() {
        let q = quant(QDtype::Qint8, RoundMode::HalfToEven);
        // With scale 1 every integer is exact and every x.5 rounds to even: errors of 0.5.
        let row: Vec<f32> = (0..11).map(|i| i as f32 + 0.5).collect();
        assert_eq!(l2_loss(&row, &q, 1.0), (11.0f32 * 0.25).sqrt());
        assert_eq!(l2_loss(&[3.0, -2.0], &q, 1.0), 0.0);
    }

    #[test]
    fn fake_quant_divides_and_clamps() {
        let qp = QParams::int(
            vec![0.5],
            ZeroPoint::Int(vec![0]),
            -128,
            127,
            vec![],
            vec![],
        );
        let x = Tensor::from_vec(vec![0.25, 100.0, -100.0]);
        let y = fake_quantize(&x, &qp, RoundMode::BpuRound).unwrap();
        assert_eq!(y.data, vec![0.5, 63.5, -64.0]);
        let y = fake_quantize(&x, &qp, RoundMode::HalfToEven).unwrap();
        assert_eq!(y.data[0], 0.0, "0.5 ties to even");
    }

    proptest! {
        #[test]
        fn fake_quantization_lands_on_the_grid(
            x in proptest::collection::vec(-1e4f32..1e4, 1..100),
            s in 1e-3f32..10.0,
            bpu in any::<bool>(),
            qint16 in any::<bool>(),
        ) {
            let q = quant(
                if qint16 { QDtype::Qint16 } else { QDtype::Qint8 },
                if bpu { RoundMode::BpuRound } else { RoundMode::HalfToEven },
            );
            let qp = QParams::int(vec![s], ZeroPoint::Int(vec![0]), q.quant_min, q.quant_max, vec![], vec![]);
            let y = fake_quantize(&Tensor::from_vec(x.clone()), &qp, q.round_mode).unwrap();
            for (&v, &w) in x.iter().zip(&y.data) {
                let level = q.round_mode.round(v / s).clamp(q.quant_min as f32, q.quant_max as f32);
                prop_assert_eq!(w, level * s);
            }
            let loss = l2_loss(&x, &q, s) as f64;
            let exact: f64 = x.iter().zip(&y.data).map(|(&a, &b)| ((b - a) as f64).powi(2)).sum::<f64>().sqrt();
            prop_assert!((loss - exact).abs() <= exact * 1e-5 + 1e-30);
        }
    }
}
