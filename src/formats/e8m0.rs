//! E8M0 shared scales: the power-of-two scale of an MX block, from the block's `amax`.
//!
//! E8M0 is an 8-bit biased exponent without sign or mantissa: code `c` is `2^(c − 127)`,
//! code 255 is NaN. An MX block's scale is `2^(E − emax)` where `E` is the block's exponent and
//! `emax = ⌊log2(element max)⌋`; the three ways of choosing `E` (as AMD Quark does):
//!
//! * `even` — round `amax`'s mantissa to the element's mantissa width first (add
//!   `2^(22 − mbits)` to the float32 bits and keep sign+exponent, so `[2^n·(2 − 2^−mbits), 2^(n+1))`
//!   carries into `2^(n+1)`), then `E = ⌊log2⌋`, clamped so that `E − emax ∈ [−127, 127]`.
//!   `amax = 0` gives `2^−126` before the subtraction.
//! * `floor` — `E = ⌊log2 amax⌋` (OCP's rule; the largest value may saturate).
//! * `ceil` — `E = ⌈log2 amax⌉` (never saturates, wastes up to one binade).
//!
//! For `floor`/`ceil`, `log2` is the float32 `log2` (rounded to float32 *before* flooring, as
//! `torch.log2` does, so values a hair below a power of two count as that power) and there is
//! no clamp: a zero block gives scale 0, which callers replace by their epsilon.

use super::floor_log2;
use serde::Serialize;

/// How a block's exponent is chosen from its `amax`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScaleRounding {
    Even,
    Floor,
    Ceil,
}

impl ScaleRounding {
    /// Every mode, in Quark's order.
    pub const ALL: [ScaleRounding; 3] = [
        ScaleRounding::Even,
        ScaleRounding::Floor,
        ScaleRounding::Ceil,
    ];

    /// `even`, `floor` or `ceil`.
    pub fn name(self) -> &'static str {
        match self {
            ScaleRounding::Even => "even",
            ScaleRounding::Floor => "floor",
            ScaleRounding::Ceil => "ceil",
        }
    }

    /// Parse `even`, `floor` or `ceil`.
    pub fn from_name(name: &str) -> Option<Self> {
        ScaleRounding::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// `torch.log2` of a float32, rounded to float32.
#[inline]
pub fn log2_f32(x: f32) -> f32 {
    (x as f64).log2() as f32
}

/// `torch.pow(2, e)` for a float32 exponent: exact for integers, 0 below `2^−149`, inf above
/// `2^127`, NaN for NaN.
#[inline]
pub fn exp2_f32(e: f32) -> f32 {
    if e.is_nan() {
        f32::NAN
    } else if e >= 128.0 {
        f32::INFINITY
    } else if e < -149.0 {
        0.0
    } else if e.fract() == 0.0 {
        super::pow2(e as i32)
    } else {
        (e as f64).exp2() as f32
    }
}

/// The `even` scale: Quark's `even_round(amax, dtype)` for an element with `mbits` mantissa
/// bits and `emax`.
pub fn even_scale(amax: f32, mbits: u32, emax: i32) -> f32 {
    if amax.is_nan() {
        return f32::NAN;
    }
    let rounded = if amax == 0.0 {
        f32::from_bits(0x0080_0000) // 2^-126
    } else {
        let add = 1u32 << (23 - mbits - 1);
        f32::from_bits(amax.to_bits().wrapping_add(add) & 0xFF80_0000)
    };
    // `rounded` is ±0, a power of two, or ±inf (sign bit of a non-negative amax is 0).
    let e = if rounded == 0.0 {
        f32::NEG_INFINITY
    } else if rounded.is_infinite() {
        f32::INFINITY
    } else {
        floor_log2(rounded) as f32
    };
    exp2_f32((e - emax as f32).clamp(-127.0, 127.0))
}

/// The `floor` scale `2^(⌊log2 amax⌋ − emax)` (0 for a zero block).
pub fn floor_scale(amax: f32, emax: i32) -> f32 {
    exp2_f32(log2_f32(amax).floor() - emax as f32)
}

/// The `ceil` scale `2^(⌈log2 amax⌉ − emax)` (0 for a zero block).
pub fn ceil_scale(amax: f32, emax: i32) -> f32 {
    exp2_f32(log2_f32(amax).ceil() - emax as f32)
}

/// The shared scale of a block with `amax` for an element with `mbits` mantissa bits and
/// `emax`, under `mode`. `floor`/`ceil` may return 0 (zero block); see the module docs.
pub fn shared_scale(amax: f32, mbits: u32, emax: i32, mode: ScaleRounding) -> f32 {
    match mode {
        ScaleRounding::Even => even_scale(amax, mbits, emax),
        ScaleRounding::Floor => floor_scale(amax, emax),
        ScaleRounding::Ceil => ceil_scale(amax, emax),
    }
}

/// The E8M0 code of a power-of-two `scale` (`None` unless `scale = 2^k`, `−127 ≤ k ≤ 127`).
pub fn encode(scale: f32) -> Option<u8> {
    if scale.is_nan() || scale <= 0.0 || scale.is_infinite() {
        return None;
    }
    let k = floor_log2(scale);
    (super::pow2(k) == scale && (-127..=127).contains(&k)).then(|| (k + 127) as u8)
}

/// The value of E8M0 `code`: `2^(code − 127)`, NaN for 255.
pub fn decode(code: u8) -> f32 {
    if code == 255 {
        f32::NAN
    } else {
        super::pow2(code as i32 - 127)
    }
}

/// `ScaleRounding` as a choice parameter: the canonical names are offered, aliases accepted.
impl crate::params::Choice for ScaleRounding {
    const OPTIONS: &'static [&'static str] = &["even", "floor", "ceil"];
    fn name(self) -> &'static str {
        ScaleRounding::name(self)
    }
    fn from_name(text: &str) -> Option<Self> {
        ScaleRounding::from_name(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::{pow2, ElementFormat};

    #[test]
    fn even_rounding_carries_at_the_element_mantissa_width() {
        let fp4 = ElementFormat::Fp4E2m1;
        let (m, emax) = (fp4.mantissa_bits(), fp4.emax());
        // fp4 (1 mantissa bit): [2^n, 1.75·2^n) stays, [1.75·2^n, 2^(n+1)) rounds up.
        assert_eq!(even_scale(1.0, m, emax), 0.25);
        assert_eq!(even_scale(1.7499999, m, emax), 0.25);
        assert_eq!(even_scale(1.75, m, emax), 0.5);
        assert_eq!(even_scale(6.0, m, emax), 1.0);
        assert_eq!(even_scale(7.0, m, emax), 2.0);
        let e4m3 = ElementFormat::Fp8E4m3;
        // e4m3 (3 bits): carries from 1.9375·2^n.
        assert_eq!(even_scale(1.9374999, 3, e4m3.emax()), pow2(-8));
        assert_eq!(even_scale(1.9375, 3, e4m3.emax()), pow2(-7));
        assert_eq!(even_scale(448.0, 3, 8), 1.0);
        // Zero → 2^-126 − emax, clamped at 2^-127; huge → clamped at 2^127.
        assert_eq!(even_scale(0.0, 1, 2), pow2(-127));
        assert_eq!(even_scale(0.0, 3, 0), pow2(-126));
        assert_eq!(even_scale(1.5 * pow2(126), 1, 2), pow2(124));
        // Rounding f32::MAX up overflows the exponent into +inf, which the clamp keeps at 2^127.
        assert_eq!(even_scale(f32::MAX, 1, 2), pow2(127));
        assert_eq!(even_scale(f32::INFINITY, 1, 0), pow2(127));
        assert!(even_scale(f32::NAN, 1, 2).is_nan());
    }

    #[test]
    fn floor_and_ceil_use_float32_log2() {
        assert_eq!(floor_scale(6.0, 2), 1.0);
        assert_eq!(ceil_scale(6.0, 2), 2.0);
        assert_eq!(floor_scale(4.0, 2), 1.0);
        assert_eq!(ceil_scale(4.0, 2), 1.0);
        assert_eq!(floor_scale(0.0, 2), 0.0);
        assert_eq!(ceil_scale(0.0, 8), 0.0);
        // Just above 2^20: float32 log2 rounds to 20.0, so ceil does not go up.
        let x = f32::from_bits(pow2(20).to_bits() + 1);
        assert_eq!(ceil_scale(x, 0), pow2(20));
        // Just below 2^20: float32 log2 rounds to 20.0, floor gives 20 (not 19).
        let y = f32::from_bits(pow2(20).to_bits() - 1);
        assert_eq!(floor_scale(y, 0), pow2(20));
        // No clamp: tiny amax gives subnormal scales, then 0.
        assert_eq!(floor_scale(pow2(-140), 2), pow2(-142));
        assert_eq!(floor_scale(pow2(-149), 2), 0.0);
        assert_eq!(
            shared_scale(3.0, 1, 2, ScaleRounding::Floor),
            floor_scale(3.0, 2)
        );
    }

    #[test]
    fn e8m0_codes() {
        assert_eq!(encode(1.0), Some(127));
        assert_eq!(encode(pow2(-127)), Some(0));
        assert_eq!(encode(pow2(127)), Some(254));
        assert_eq!(encode(3.0), None);
        assert_eq!(encode(0.0), None);
        for code in 0..255u8 {
            assert_eq!(encode(decode(code)), Some(code));
        }
        assert!(decode(255).is_nan());
        assert_eq!(ScaleRounding::from_name("ceil"), Some(ScaleRounding::Ceil));
        assert_eq!(ScaleRounding::from_name("round"), None);
    }
}
