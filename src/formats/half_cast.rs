//! float32 → float16 / bfloat16 → float32 casts (round to nearest even, overflow to ±inf,
//! subnormals kept), as `tensor.to(torch.float16)` / `.to(torch.bfloat16)` do.

use serde::Serialize;

/// A 16-bit float type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HalfType {
    Float16,
    Bfloat16,
}

impl HalfType {
    /// `float16` or `bfloat16`.
    pub fn name(self) -> &'static str {
        match self {
            HalfType::Float16 => "float16",
            HalfType::Bfloat16 => "bfloat16",
        }
    }

    /// Parse `float16`/`fp16`/`half` or `bfloat16`/`bf16`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "float16" | "fp16" | "half" => Some(HalfType::Float16),
            "bfloat16" | "bf16" => Some(HalfType::Bfloat16),
            _ => None,
        }
    }

    /// Largest finite value (`torch.finfo(t).max`): 65504 or 3.3895314e38.
    pub fn max(self) -> f32 {
        match self {
            HalfType::Float16 => half::f16::MAX.to_f32(),
            HalfType::Bfloat16 => half::bf16::MAX.to_f32(),
        }
    }

    /// Cast to this type and back: the bits of `half`'s `from_f32(x).to_f32()` for every `x`
    /// (NaN included), computed without branches so that a loop of them vectorises (the `half`
    /// casts are a software routine with branches where the CPU has no conversion
    /// instruction, as in WebAssembly).
    #[inline(always)]
    pub fn round_trip(self, x: f32) -> f32 {
        match self {
            HalfType::Float16 => float16_round_trip(x),
            HalfType::Bfloat16 => bfloat16_round_trip(x),
        }
    }
}

/// A NaN cast to a 16-bit type and back: quiet, with the top `kept` bits of its payload.
#[inline(always)]
fn nan_round_trip(bits: u32, kept_mask: u32) -> f32 {
    f32::from_bits((bits & kept_mask) | 0x7FC0_0000)
}

/// float32 → float16 → float32. The addition of `2^(e+13)` (`e`: the exponent of `|x|`, at least
/// float16's smallest normal one, −14, below which the step is the subnormals' 2⁻²⁴) leaves
/// float16's 10 mantissa bits of `|x|`, rounded to nearest even by the addition itself;
/// subtracting it back is exact. Past the largest float16 (65504) the result overflows to ∞
/// (65520 and above round to 65536, i.e. ∞, as the cast does); the sign is put back last.
#[inline(always)]
fn float16_round_trip(x: f32) -> f32 {
    let magnitude = x.abs();
    let bits = x.to_bits();
    // Exponents beyond 2¹⁶ all overflow: capped so that the shift stays finite.
    let exponent = ((magnitude.to_bits() >> 23) as i32).clamp(127 - 14, 127 + 16);
    let shift = f32::from_bits(((exponent + 13) as u32) << 23);
    let rounded = (magnitude + shift) - shift;
    let rounded = if rounded > 65504.0 {
        f32::INFINITY
    } else {
        rounded
    };
    let value = crate::quant::copysign(rounded, x);
    if x.is_nan() {
        nan_round_trip(bits, 0xFFFF_E000)
    } else {
        value
    }
}

/// float32 → bfloat16 → float32: the upper 16 bits rounded to nearest even (a carry into the
/// exponent is the next binade, or ∞ past the largest bfloat16).
#[inline(always)]
fn bfloat16_round_trip(x: f32) -> f32 {
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7FFF + ((bits >> 16) & 1)) & 0xFFFF_0000;
    if x.is_nan() {
        nan_round_trip(bits, 0xFFFF_0000)
    } else {
        f32::from_bits(rounded)
    }
}

/// `HalfType` as a choice parameter: the canonical names are offered, aliases accepted.
impl crate::params::Choice for HalfType {
    const OPTIONS: &'static [&'static str] = &["float16", "bfloat16"];
    fn name(self) -> &'static str {
        HalfType::name(self)
    }
    fn from_name(text: &str) -> Option<Self> {
        HalfType::from_name(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every 97th float32 bit pattern (all exponents, both signs, NaNs) and every pattern
    /// around float16's limits: the same bits as the `half` crate's casts.
    #[test]
    fn branch_free_casts_are_the_half_crates_bit_for_bit() {
        let around =
            |v: f32| (0..4096u32).map(move |d| v.to_bits().wrapping_sub(2048).wrapping_add(d));
        let limits = [
            65504.0f32,
            65520.0,
            2f32.powi(-14),
            2f32.powi(-24),
            2f32.powi(-25),
            3.389_531_4e38,
            f32::MIN_POSITIVE,
            1.0,
        ];
        let patterns = (0..=u32::MAX)
            .step_by(97)
            .chain(limits.into_iter().flat_map(around))
            .chain(limits.into_iter().flat_map(move |v| around(-v)));
        for bits in patterns {
            let x = f32::from_bits(bits);
            let want16 = half::f16::from_f32(x).to_f32();
            let want_bf16 = half::bf16::from_f32(x).to_f32();
            assert_eq!(
                HalfType::Float16.round_trip(x).to_bits(),
                want16.to_bits(),
                "{x:e} ({bits:#x})"
            );
            assert_eq!(
                HalfType::Bfloat16.round_trip(x).to_bits(),
                want_bf16.to_bits(),
                "{x:e} ({bits:#x})"
            );
        }
    }

    #[test]
    fn casts_round_to_nearest_even_and_overflow_to_infinity() {
        let f16 = HalfType::Float16;
        assert_eq!(f16.max(), 65504.0);
        assert_eq!(f16.round_trip(65519.0), 65504.0);
        assert_eq!(f16.round_trip(65520.0), f32::INFINITY);
        assert_eq!(f16.round_trip(1.0 + 2f32.powi(-11)), 1.0);
        assert_eq!(
            f16.round_trip(1.0 + 3.0 * 2f32.powi(-11)),
            1.0 + 2f32.powi(-9)
        );
        assert_eq!(f16.round_trip(2f32.powi(-24)), 2f32.powi(-24));
        assert_eq!(f16.round_trip(2f32.powi(-25)), 0.0);
        let bf16 = HalfType::Bfloat16;
        assert_eq!(bf16.max(), 3.389_531_4e38);
        assert_eq!(bf16.round_trip(1.0 + 2f32.powi(-8)), 1.0);
        assert_eq!(
            bf16.round_trip(1.0 + 3.0 * 2f32.powi(-8)),
            1.0 + 2f32.powi(-6)
        );
        assert!(bf16.round_trip(f32::NAN).is_nan());
        assert_eq!(HalfType::from_name("bf16"), Some(bf16));
    }
}
