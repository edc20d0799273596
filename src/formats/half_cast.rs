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

    /// Cast to this type and back.
    #[inline]
    pub fn round_trip(self, x: f32) -> f32 {
        match self {
            HalfType::Float16 => half::f16::from_f32(x).to_f32(),
            HalfType::Bfloat16 => half::bf16::from_f32(x).to_f32(),
        }
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
