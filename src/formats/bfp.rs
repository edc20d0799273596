//! Block floating point (BFP): a block of values shares one exponent and stores `m`-bit
//! two's-complement mantissas.
//!
//! With `E = ⌊log2 amax⌋` (float32 `log2`, see [`super::e8m0::log2_f32`]) the step is
//! `s = 2^(E − (m − 2))` — for 8-bit mantissas `2^(E−6)`, so `amax / s ∈ [64, 128)` — and a value
//! becomes `clamp(round_half_even(x · (1/s)), −2^(m−1), 2^(m−1) − 1) · s`. Rounding can push the
//! largest mantissa to `2^(m−1)` (when `amax / s ≥ 127.5`): the **block adjustment** then doubles
//! the block's `amax` (one more exponent, half the resolution) so that it fits. A zero block gets
//! `s = ε` (float32 epsilon). This is AMD Quark's `bfp16` (`m = 8`, blocks of 8).

use super::blocks::BlockLayout;
use super::e8m0::{exp2_f32, log2_f32};
use crate::error::Result;
use crate::quant::round_half_even;

/// The step a block's scale quantizes with: the scale, at least the smallest normal float32 (as
/// the reference per-channel kernel floors it).
#[inline(always)]
pub fn step(scale: f32) -> f32 {
    super::at_least_min_normal(scale)
}

/// A BFP format with `mantissa_bits`-bit mantissas (sign included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bfp {
    pub mantissa_bits: u32,
}

/// Quark's `bfp16`: 8-bit mantissas (blocks of 8, see [`BFP16_BLOCK`]).
pub const BFP16: Bfp = Bfp { mantissa_bits: 8 };

/// Block size of Quark's `bfp16` (its kernel ignores the block size it is given).
pub const BFP16_BLOCK: usize = 8;

impl Bfp {
    /// Smallest mantissa, `−2^(m−1)`.
    pub fn qmin(self) -> f32 {
        -((1u64 << (self.mantissa_bits - 1)) as f32)
    }

    /// Largest mantissa, `2^(m−1) − 1`.
    pub fn qmax(self) -> f32 {
        ((1u64 << (self.mantissa_bits - 1)) - 1) as f32
    }

    /// The step `2^(⌊log2 amax⌋ − (m − 2))` of a block, ε for a zero block.
    pub fn scale(self, amax: f32) -> f32 {
        let s = exp2_f32(log2_f32(amax).floor() - (self.mantissa_bits as f32 - 2.0));
        if s == 0.0 {
            f32::EPSILON
        } else {
            s
        }
    }

    /// The mantissa of `x` with step `scale`, clamped to `[lo, hi]` (the step is floored at the
    /// smallest normal float32, as the reference per-channel kernel does).
    #[inline]
    fn mantissa(x: f32, scale: f32, lo: f32, hi: f32) -> f32 {
        round_half_even(x * (1.0f32 / step(scale))).clamp(lo, hi)
    }

    /// The stored mantissa of `x` with step `scale`.
    #[inline]
    pub fn code(self, x: f32, scale: f32) -> f32 {
        Self::mantissa(x, scale, self.qmin(), self.qmax())
    }

    /// Quantize–dequantize `x` with step `scale`.
    #[inline]
    pub fn fake_quantize(self, x: f32, scale: f32) -> f32 {
        self.code(x, scale) * step(scale)
    }

    /// Whether some value of a block overflows its mantissa range with step `scale`: rounded
    /// with the range widened by one on each side, a mantissa `≥ 2^(m−1)` or `< −2^(m−1)`.
    #[inline]
    pub fn overflows(self, x: f32, scale: f32) -> bool {
        let (lo, hi) = (self.qmin(), self.qmax());
        let q = Self::mantissa(x, scale, lo - 1.0, hi + 1.0);
        q > hi || q < lo
    }

    /// For each block: does any of its values overflow with that block's `scales` entry?
    pub fn block_overflows(self, layout: &BlockLayout, data: &[f32], scales: &[f32]) -> Vec<bool> {
        let mut over = vec![false; layout.num_blocks()];
        for (i, &x) in data.iter().enumerate() {
            let b = layout.block_of(i);
            if !over[b] && self.overflows(x, scales[b]) {
                over[b] = true;
            }
        }
        over
    }

    /// Block amaxes after the block adjustment (doubled where the block overflows).
    pub fn adjusted_amax(self, layout: &BlockLayout, data: &[f32]) -> Vec<f32> {
        let mut amax = layout.block_amax(data);
        let scales: Vec<f32> = amax.iter().map(|&a| self.scale(a)).collect();
        for (a, over) in amax
            .iter_mut()
            .zip(self.block_overflows(layout, data, &scales))
        {
            if over {
                *a *= 2.0;
            }
        }
        amax
    }
}

/// BFP quantize–dequantize of a tensor as Quark's `non_scaled_fake_quantize(x, "bfp16", …)`:
/// blocks of `block` along `axis`, NaN/±inf treated as 0 (they come out as 0), block
/// adjustment, then 8-bit mantissas.
pub fn fake_quantize(
    data: &[f32],
    shape: &[usize],
    axis: i64,
    block: usize,
    format: Bfp,
) -> Result<Vec<f32>> {
    let layout = BlockLayout::new(shape, axis, block)?;
    let clean: Vec<f32> = data
        .iter()
        .map(|&v| if v.is_finite() { v } else { 0.0 })
        .collect();
    let scales: Vec<f32> = format
        .adjusted_amax(&layout, &clean)
        .into_iter()
        .map(|a| format.scale(a))
        .collect();
    Ok(layout.map(&clean, |b, x| format.fake_quantize(x, scales[b])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::pow2;

    #[test]
    fn step_and_block_adjustment() {
        let f = BFP16;
        assert_eq!((f.qmin(), f.qmax()), (-128.0, 127.0));
        assert_eq!(f.scale(1.0), pow2(-6));
        assert_eq!(f.scale(1.99), pow2(-6));
        assert_eq!(f.scale(0.0), f32::EPSILON);
        // 1.99/2^-6 = 127.36 → 127: fits. 1.995/2^-6 = 127.68 → 128: overflows.
        assert!(!f.overflows(1.99, pow2(-6)));
        assert!(f.overflows(1.995, pow2(-6)));
        assert!(!f.overflows(-1.999, pow2(-6)));
        let layout = BlockLayout::new(&[2, 2], 1, 2).unwrap();
        let data = [1.995f32, 0.5, 1.99, -1.999];
        assert_eq!(f.adjusted_amax(&layout, &data), vec![3.99, 1.999]);
        let y = fake_quantize(&data, &[2, 2], 1, 2, f).unwrap();
        // Block 0 now has step 2^-5: 1.995 → 64·2^-5 = 2.0, 0.5 → 16·2^-5.
        assert_eq!(y[0], 2.0);
        assert_eq!(y[1], 0.5);
        // Block 1 keeps 2^-6: 1.99 → 127/64, −1.999 → −128/64.
        assert_eq!(y[2], 127.0 / 64.0);
        assert_eq!(y[3], -2.0);
    }

    #[test]
    fn non_finite_values_become_zero() {
        let y = fake_quantize(&[f32::NAN, 1.0, f32::INFINITY, -1.0], &[4], 0, 8, BFP16).unwrap();
        assert_eq!(y, vec![0.0, 1.0, 0.0, -1.0]);
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn adjusted_blocks_never_overflow(data in prop::collection::vec(-1e3f32..1e3, 1..40)) {
            let n = data.len();
            let layout = BlockLayout::new(&[n], 0, 8).unwrap();
            let amax = BFP16.adjusted_amax(&layout, &data);
            let scales: Vec<f32> = amax.iter().map(|&a| BFP16.scale(a)).collect();
            prop_assert!(BFP16.block_overflows(&layout, &data, &scales).iter().all(|o| !o));
            let y = fake_quantize(&data, &[n], 0, 8, BFP16).unwrap();
            // Every output is an in-range mantissa times its block's step.
            for (i, v) in y.iter().enumerate() {
                let s = scales[layout.block_of(i)];
                let q = v / s;
                prop_assert_eq!(q.fract(), 0.0);
                prop_assert!((-128.0..=127.0).contains(&q));
            }
        }
    }
}
