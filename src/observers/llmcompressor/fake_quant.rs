//! compressed-tensors 0.19.0 fake quantization (`lifecycle/forward_helpers.py`
//! `_quantize_dequantize`, the CPU path), one element at a time, all float32:
//!
//! `s' = s / global_scale` (when there is one), `v = x / s'` — a **true division**, not a
//! multiplication by the reciprocal —, `v += zp`, **clamp to `[qmin, qmax]` before rounding**,
//! then round: integers half to even (`torch.round`), FP8 to the nearest E4M3 value (ties to
//! even), FP4 by the CPU `cast_to_fp4` threshold table on `|v|` (`≤ 0.25 → 0`, `< 0.75 → 0.5`,
//! `≤ 1.25 → 1`, `< 1.75 → 1.5`, `≤ 2.5 → 2`, `< 3.5 → 3`, `≤ 5 → 4`, else 6: half to even on
//! the E2M1 grid); finally `x̂ = (v − zp) · s'`.

use super::args::{QuantArgs, QuantizationType};
use crate::formats::ElementFormat;
use crate::quant::round_half_even;

/// How a clamped value is rounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rounding {
    /// `torch.round` (half to even).
    Integer,
    /// `.to(torch.float8_e4m3fn)`.
    Fp8,
    /// `cast_to_fp4` (CPU).
    Fp4,
}

impl Rounding {
    /// The rounding of `args` (float widths other than 4 and 8 never get here: their range
    /// raises first).
    pub fn of(args: &QuantArgs) -> Rounding {
        match (args.qtype, args.num_bits) {
            (QuantizationType::Int, _) => Rounding::Integer,
            (QuantizationType::Float, 4) => Rounding::Fp4,
            (QuantizationType::Float, _) => Rounding::Fp8,
        }
    }

    #[inline]
    fn apply(self, v: f32) -> f32 {
        match self {
            Rounding::Integer => round_half_even(v),
            Rounding::Fp8 => ElementFormat::Fp8E4m3.quantize(v),
            Rounding::Fp4 => cast_to_fp4(v),
        }
    }
}

/// `cast_to_fp4` on CPU: sequential masked assignments on `|v|`, times `sign(v)` (written as
/// selects, so that lanes vectorise).
#[inline(always)]
pub fn cast_to_fp4(v: f32) -> f32 {
    let a = v.abs();
    let mut r = 0.0;
    r = if a > 0.25 { 0.5 } else { r };
    r = if a >= 0.75 { 1.0 } else { r };
    r = if a > 1.25 { 1.5 } else { r };
    r = if a >= 1.75 { 2.0 } else { r };
    r = if a > 2.5 { 3.0 } else { r };
    r = if a >= 3.5 { 4.0 } else { r };
    r = if a > 5.0 { 6.0 } else { r };
    let r = if a.is_nan() { a } else { r }; // NaN stays NaN
    let sign = if v > 0.0 {
        1.0
    } else if v < 0.0 {
        -1.0
    } else {
        0.0
    };
    r * sign
}

/// One element's quantize–dequantize (see the module documentation). `scale` already divided
/// by the global scale.
#[inline]
pub fn qdq(x: f32, scale: f32, zero_point: f32, qmin: f32, qmax: f32, rounding: Rounding) -> f32 {
    qdq_by(x, scale, zero_point, (qmin, qmax), |v| rounding.apply(v))
}

/// [`qdq`] with the rounding given as a function ([`round_half_even`], [`cast_to_fp4`] or
/// FP8's `quantize`), for loops compiled per rounding.
#[inline(always)]
pub fn qdq_by(
    x: f32,
    scale: f32,
    zero_point: f32,
    (qmin, qmax): (f32, f32),
    round: impl Fn(f32) -> f32,
) -> f32 {
    let v = x / scale + zero_point;
    // ATen's clamp: `min(max(v, qmin), qmax)` with `std::max(a, b) = a < b ? b : a`, so NaN
    // stays NaN (and −0 stays −0); selects, no branch.
    let low = if v < qmin { qmin } else { v };
    let clamped = if qmax < low { qmax } else { low };
    (round(clamped) - zero_point) * scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp4_ties_and_division() {
        let fp4 = |v| qdq(v, 1.0, 0.0, -6.0, 6.0, Rounding::Fp4);
        let got: Vec<f32> = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 5.1, 9.0, -0.3]
            .into_iter()
            .map(fp4)
            .collect();
        assert_eq!(got, [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, 6.0, -0.5]);
        // Clamped before rounding; zero point added before the clamp.
        assert_eq!(
            qdq(300.0, 1.0, 0.0, -128.0, 127.0, Rounding::Integer),
            127.0
        );
        assert_eq!(qdq(2.5, 1.0, 3.0, -8.0, 7.0, Rounding::Integer), 3.0);
        assert_eq!(qdq(17.0, 1.0, 0.0, -448.0, 448.0, Rounding::Fp8), 16.0);
    }
}
