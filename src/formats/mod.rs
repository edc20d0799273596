//! Small number formats: OCP 8/6/4-bit floats, E8M0 shared scales, MX and BFP block formats,
//! and the float16/bfloat16 casts.
//!
//! Everything here is framework-independent: an [`ElementFormat`] knows its code points and
//! rounds a float32 to the nearest one (ties to even, saturating at `±max`), [`e8m0`] turns a
//! block's `amax` into a power-of-two scale, [`mx`] and [`bfp`] quantize–dequantize blocks of a
//! tensor along an axis ([`blocks`] maps elements to blocks). Framework modules (Quark, …)
//! compose these with their own conventions.

pub mod bfp;
pub mod blocks;
pub mod bnb;
pub mod e8m0;
pub mod ggml;
pub mod half_cast;
pub mod mx;

use crate::quant::round_half_even;
use serde::Serialize;

/// A small binary floating-point element format (sign, `e` exponent bits, `m` mantissa bits).
///
/// * `fp8_e4m3` is OCP E4M3 (`float8_e4m3fn`): no infinities, one NaN mantissa pattern
///   (`S.1111.111`), largest magnitude 448.
/// * `fp8_e5m2` is IEEE-like: exponent 31 encodes ±inf/NaN, largest finite 57344.
/// * `fp6_e2m3` (max 7.5), `fp6_e3m2` (max 28) and `fp4_e2m1` (max 6) have no inf/NaN codes.
///
/// [`ElementFormat::quantize`] rounds to nearest, ties to even, and saturates to `±max` (also
/// for ±inf); NaN stays NaN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ElementFormat {
    Fp8E4m3,
    Fp8E5m2,
    Fp6E2m3,
    Fp6E3m2,
    Fp4E2m1,
}

impl ElementFormat {
    /// Every element format.
    pub const ALL: [ElementFormat; 5] = [
        ElementFormat::Fp8E4m3,
        ElementFormat::Fp8E5m2,
        ElementFormat::Fp6E2m3,
        ElementFormat::Fp6E3m2,
        ElementFormat::Fp4E2m1,
    ];

    /// Canonical name (`fp8_e4m3`, `fp8_e5m2`, `fp6_e2m3`, `fp6_e3m2`, `fp4_e2m1`).
    pub fn name(self) -> &'static str {
        match self {
            ElementFormat::Fp8E4m3 => "fp8_e4m3",
            ElementFormat::Fp8E5m2 => "fp8_e5m2",
            ElementFormat::Fp6E2m3 => "fp6_e2m3",
            ElementFormat::Fp6E3m2 => "fp6_e3m2",
            ElementFormat::Fp4E2m1 => "fp4_e2m1",
        }
    }

    /// Parse a name; accepts the canonical names and the common aliases (`fp4`, `e4m3`,
    /// `float8_e4m3fn`, `float8_e5m2`, …).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "fp8_e4m3" | "e4m3" | "fp8e4m3" | "float8_e4m3fn" | "fp8_e4m3fn" => {
                ElementFormat::Fp8E4m3
            }
            "fp8_e5m2" | "e5m2" | "fp8e5m2" | "float8_e5m2" => ElementFormat::Fp8E5m2,
            "fp6_e2m3" | "e2m3" => ElementFormat::Fp6E2m3,
            "fp6_e3m2" | "e3m2" => ElementFormat::Fp6E3m2,
            "fp4_e2m1" | "fp4" | "e2m1" => ElementFormat::Fp4E2m1,
            _ => return None,
        })
    }

    /// Exponent bits.
    pub fn exponent_bits(self) -> u32 {
        match self {
            ElementFormat::Fp8E4m3 => 4,
            ElementFormat::Fp8E5m2 => 5,
            ElementFormat::Fp6E2m3 => 2,
            ElementFormat::Fp6E3m2 => 3,
            ElementFormat::Fp4E2m1 => 2,
        }
    }

    /// Explicit mantissa bits.
    pub fn mantissa_bits(self) -> u32 {
        match self {
            ElementFormat::Fp8E4m3 => 3,
            ElementFormat::Fp8E5m2 => 2,
            ElementFormat::Fp6E2m3 => 3,
            ElementFormat::Fp6E3m2 => 2,
            ElementFormat::Fp4E2m1 => 1,
        }
    }

    /// Total bits (sign included).
    pub fn bits(self) -> u32 {
        1 + self.exponent_bits() + self.mantissa_bits()
    }

    /// Exponent bias `2^(e−1) − 1`.
    pub fn bias(self) -> i32 {
        (1 << (self.exponent_bits() - 1)) - 1
    }

    /// Exponent of the smallest normal value, `1 − bias`.
    pub fn min_normal_exponent(self) -> i32 {
        1 - self.bias()
    }

    /// Largest finite magnitude.
    pub fn max(self) -> f32 {
        match self {
            ElementFormat::Fp8E4m3 => 448.0,
            ElementFormat::Fp8E5m2 => 57344.0,
            ElementFormat::Fp6E2m3 => 7.5,
            ElementFormat::Fp6E3m2 => 28.0,
            ElementFormat::Fp4E2m1 => 6.0,
        }
    }

    /// `⌊log2(max)⌋`, the "emax" the OCP MX specification subtracts from a block's exponent
    /// to get its shared scale (e4m3 8, e5m2 15, e2m3 2, e3m2 4, e2m1 2).
    pub fn emax(self) -> i32 {
        match self {
            ElementFormat::Fp8E4m3 => 8,
            ElementFormat::Fp8E5m2 => 15,
            ElementFormat::Fp6E2m3 => 2,
            ElementFormat::Fp6E3m2 => 4,
            ElementFormat::Fp4E2m1 => 2,
        }
    }

    /// Smallest normal magnitude.
    pub fn min_normal(self) -> f32 {
        pow2(self.min_normal_exponent())
    }

    /// Smallest subnormal magnitude.
    pub fn min_subnormal(self) -> f32 {
        pow2(self.min_normal_exponent() - self.mantissa_bits() as i32)
    }

    /// Whether some code decodes to ±infinity (only `fp8_e5m2`).
    pub fn has_infinity(self) -> bool {
        self == ElementFormat::Fp8E5m2
    }

    /// Whether some code decodes to NaN (the fp8 formats).
    pub fn has_nan(self) -> bool {
        matches!(self, ElementFormat::Fp8E4m3 | ElementFormat::Fp8E5m2)
    }

    /// Number of codes, `2^bits`.
    pub fn code_count(self) -> u16 {
        1 << self.bits()
    }

    /// Round `x` to the nearest representable value, ties to even, saturating to `±max`
    /// (±inf saturates too); NaN is returned unchanged and zero keeps its sign.
    ///
    /// Branch-free for every element format (see [`round_to_float_format`]), so that loops
    /// over it vectorise.
    #[inline(always)]
    pub fn quantize(self, x: f32) -> f32 {
        self.rounding().quantize(x)
    }

    /// The format's rounding constants, looked up once: a loop over many values calls
    /// [`FloatRounding::quantize`] on them so that no `match` on the format runs per value.
    #[inline]
    pub fn rounding(self) -> FloatRounding {
        FloatRounding {
            mbits: self.mantissa_bits(),
            emin: self.min_normal_exponent(),
            max: self.max(),
        }
    }

    /// The code of `quantize(x)`; NaN gives the format's canonical NaN code (`0x7F`/`0xFF`
    /// with the sign) or `None` for formats without NaN.
    pub fn encode(self, x: f32) -> Option<u8> {
        let sign_shift = self.bits() - 1;
        let sign = u8::from(x.is_sign_negative()) << sign_shift;
        if x.is_nan() {
            return match self {
                ElementFormat::Fp8E4m3 => Some(sign | 0x7F),
                ElementFormat::Fp8E5m2 => Some(sign | 0x7E),
                _ => None,
            };
        }
        let a = self.quantize(x).abs();
        if a == 0.0 {
            return Some(sign);
        }
        let m = self.mantissa_bits();
        let emin = self.min_normal_exponent();
        let e = floor_log2(a);
        let (exp_field, mantissa) = if e < emin {
            (0u32, (a * pow2(m as i32 - emin)) as u32)
        } else {
            let significand = (a * pow2(m as i32 - e)) as u32; // 2^m ..= 2^(m+1) − 1
            ((e - emin + 1) as u32, significand - (1 << m))
        };
        Some(sign | ((exp_field << m) | mantissa) as u8)
    }

    /// The value of `code` (only the low `bits()` bits are used).
    pub fn decode(self, code: u8) -> f32 {
        let bits = self.bits();
        let m = self.mantissa_bits();
        let code = code as u32 & ((1 << bits) - 1);
        let negative = code >> (bits - 1) == 1;
        let exp_field = (code >> m) & ((1 << self.exponent_bits()) - 1);
        let mantissa = code & ((1 << m) - 1);
        let max_exp_field = (1 << self.exponent_bits()) - 1;
        let magnitude = match self {
            ElementFormat::Fp8E4m3 if exp_field == max_exp_field && mantissa == (1 << m) - 1 => {
                f32::NAN
            }
            ElementFormat::Fp8E5m2 if exp_field == max_exp_field => {
                if mantissa == 0 {
                    f32::INFINITY
                } else {
                    f32::NAN
                }
            }
            _ if exp_field == 0 => mantissa as f32 * pow2(self.min_normal_exponent() - m as i32),
            _ => ((1 << m) + mantissa) as f32 * pow2(exp_field as i32 - self.bias() - m as i32),
        };
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }

    /// Every finite representable value, ascending, zero once: the quantization grid of the
    /// format (for plots and for "nearest code point" checks).
    pub fn code_points(self) -> Vec<f32> {
        let mut values: Vec<f32> = (0..self.code_count())
            .map(|c| self.decode(c as u8))
            .filter(|v| v.is_finite() && !(v.is_sign_negative() && *v == 0.0))
            .collect();
        values.sort_by(f32::total_cmp);
        values
    }
}

impl std::fmt::Display for ElementFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `x`, or the smallest normal float32 when `x` is below it (a step or scale floored the way
/// Quark's kernels floor theirs; NaN stays NaN).
#[inline(always)]
pub fn at_least_min_normal(x: f32) -> f32 {
    if x < f32::MIN_POSITIVE {
        f32::MIN_POSITIVE
    } else {
        x
    }
}

/// `2^k` as f32 for `−149 ≤ k ≤ 127` (exact, subnormals included); 0 below, inf above.
#[inline]
pub fn pow2(k: i32) -> f32 {
    if k > 127 {
        f32::INFINITY
    } else if k >= -126 {
        f32::from_bits(((k + 127) as u32) << 23)
    } else if k >= -149 {
        f32::from_bits(1u32 << (k + 149))
    } else {
        0.0
    }
}

/// `⌊log2 |a|⌋` of a finite non-zero f32 (subnormals included), from its bits.
#[inline]
pub fn floor_log2(a: f32) -> i32 {
    let bits = a.to_bits() & 0x7FFF_FFFF;
    let exp_field = (bits >> 23) as i32;
    if exp_field == 0 {
        (31 - bits.leading_zeros() as i32) - 149
    } else {
        exp_field - 127
    }
}

/// Round `x` to a binary float format with `mbits` explicit mantissa bits and smallest normal
/// exponent `emin` (unbounded above), ties to even, then saturate to `±max`. NaN passes, ±inf
/// saturates, zero keeps its sign. Exact: every step is a power-of-two scaling or an integer
/// rounding.
///
/// For the element formats (`mbits ≥ 1`, `emin − mbits ≥ −126`) it is computed without a
/// branch, so that loops over it vectorise: the quantum is `2^q` with
/// `q = max(e, emin) − mbits`, `e` the input's exponent field less the bias (a zero or
/// subnormal input has field 0, so `e = −127 < emin`: its quantum is the format's subnormal
/// step, as [`floor_log2`] gives it). For finite input `q` then lies in `[−126, 126]`, so both
/// scalings are plain exponent patterns; `q` is clamped there so that ±inf (field 255) scales
/// to ±inf and saturates, and NaN is selected back at the end. The same value as the general
/// path for every input: `cargo test --release float_format_rounding_is_branch_free_everywhere
/// -- --ignored` checks every float32 bit pattern in every element format.
#[inline]
pub fn round_to_float_format(x: f32, mbits: u32, emin: i32, max: f32) -> f32 {
    if branch_free_applies(mbits, emin) {
        return round_branch_free(x, mbits, emin, max);
    }
    round_to_float_format_slow(x, mbits, emin, max)
}

/// An element format's rounding, its constants resolved ([`ElementFormat::rounding`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatRounding {
    mbits: u32,
    emin: i32,
    max: f32,
}

impl FloatRounding {
    /// [`ElementFormat::quantize`]: round to the nearest representable value, ties to even,
    /// saturating to `±max`; NaN unchanged, zero keeps its sign.
    #[inline(always)]
    pub fn quantize(self, x: f32) -> f32 {
        round_branch_free(x, self.mbits, self.emin, self.max)
    }
}

/// Whether [`round_branch_free`] is exact for a format: at least one mantissa bit, and every
/// quantum exponent of a finite input within `[−126, 126]`.
const fn branch_free_applies(mbits: u32, emin: i32) -> bool {
    mbits >= 1 && mbits <= 23 && emin - mbits as i32 >= -126 && emin <= 126
}

/// The branch-free path of [`round_to_float_format`], for formats where
/// [`branch_free_applies`].
#[inline(always)]
fn round_branch_free(x: f32, mbits: u32, emin: i32, max: f32) -> f32 {
    let a = x.abs();
    let e = (((a.to_bits() >> 23) as i32) - 127).max(emin);
    let q = (e - mbits as i32).clamp(-126, 126);
    let down = f32::from_bits(((127 - q) as u32) << 23);
    let up = f32::from_bits(((127 + q) as u32) << 23);
    let r = round_half_even(a * down) * up;
    let r = crate::quant::copysign(if r > max { max } else { r }, x);
    if x.is_nan() {
        x
    } else {
        r
    }
}

/// The general path of [`round_to_float_format`] (zero, subnormal, non-finite or extreme
/// exponents).
fn round_to_float_format_slow(x: f32, mbits: u32, emin: i32, max: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a == 0.0 {
        return x;
    }
    if a.is_infinite() {
        return crate::quant::copysign(max, x);
    }
    let quantum_exp = floor_log2(a).max(emin) - mbits as i32;
    let r = round_half_even(a * pow2(-quantum_exp)) * pow2(quantum_exp);
    let r = if r > max { max } else { r };
    crate::quant::copysign(r, x)
}

/// `ElementFormat` as a choice parameter: the canonical names are offered, aliases accepted.
impl crate::params::Choice for ElementFormat {
    const OPTIONS: &'static [&'static str] =
        &["fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1"];
    fn name(self) -> &'static str {
        ElementFormat::name(self)
    }
    fn from_name(text: &str) -> Option<Self> {
        ElementFormat::from_name(text)
    }
}

#[cfg(test)]
mod tests {

    const ELEMENT_FORMATS: [ElementFormat; 5] = [
        ElementFormat::Fp8E4m3,
        ElementFormat::Fp8E5m2,
        ElementFormat::Fp6E2m3,
        ElementFormat::Fp6E3m2,
        ElementFormat::Fp4E2m1,
    ];

    /// Every element format: the branch-free rounding against the general path on `x`.
    fn check_rounding_at(x: f32) {
        for f in ELEMENT_FORMATS {
            let (m, e, max) = (f.mantissa_bits(), f.min_normal_exponent(), f.max());
            let fast = round_to_float_format(x, m, e, max);
            let slow = round_to_float_format_slow(x, m, e, max);
            assert_eq!(
                fast.to_bits(),
                slow.to_bits(),
                "{f:?} at {x:e} ({:#x})",
                x.to_bits()
            );
        }
    }

    #[test]
    fn every_element_format_rounds_without_branches() {
        for f in ELEMENT_FORMATS {
            assert!(
                branch_free_applies(f.mantissa_bits(), f.min_normal_exponent()),
                "{f:?}"
            );
        }
    }

    #[test]
    fn float_format_rounding_is_the_general_path_on_samples() {
        // Every exponent with a spread of mantissas and both signs, plus the special values.
        for bits in (0..=u32::MAX).step_by(65_521) {
            check_rounding_at(f32::from_bits(bits));
        }
        for x in [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::MIN,
        ] {
            check_rounding_at(x);
        }
    }

    #[test]
    #[ignore = "every float32 bit pattern in five formats: about a minute in release"]
    fn float_format_rounding_is_branch_free_everywhere() {
        (0..=u32::MAX).for_each(|bits| check_rounding_at(f32::from_bits(bits)));
    }

    use super::*;

    /// The nearest code point by brute force, ties to the even code (even mantissa).
    fn nearest_by_search(format: ElementFormat, x: f32) -> f32 {
        let max = format.max();
        if x.abs() >= max {
            return max.copysign(x);
        }
        let mut best: Option<(f64, u8)> = None;
        for c in 0..format.code_count() {
            let c = c as u8;
            let v = format.decode(c);
            if !v.is_finite() || (v.is_sign_negative() != x.is_sign_negative() && v != 0.0) {
                continue;
            }
            let d = (v as f64 - x as f64).abs();
            best = match best {
                None => Some((d, c)),
                Some((bd, bc)) if d < bd || (d == bd && c & 1 == 0 && bc & 1 == 1) => Some((d, c)),
                keep => keep,
            };
        }
        let v = format.decode(best.unwrap().1);
        v.abs().copysign(x)
    }

    #[test]
    fn every_code_point_round_trips() {
        for format in ElementFormat::ALL {
            let mut finite = 0;
            for code in 0..format.code_count() {
                let code = code as u8;
                let v = format.decode(code);
                if v.is_nan() {
                    assert!(format.has_nan(), "{format}: {code:#x}");
                    let back = format.encode(v).expect("fp8 formats encode NaN");
                    assert!(format.decode(back).is_nan(), "{format}: {code:#x}");
                    assert_eq!(back & 0x80, code & 0x80, "{format}: NaN keeps its sign");
                    continue;
                }
                if v.is_infinite() {
                    assert!(format.has_infinity());
                    assert_eq!(format.quantize(v), format.max().copysign(v));
                    continue;
                }
                finite += 1;
                assert_eq!(
                    format.quantize(v).to_bits(),
                    v.to_bits(),
                    "{format} {code:#x}"
                );
                assert_eq!(format.encode(v), Some(code), "{format} {code:#x} = {v}");
            }
            let expected_finite = match format {
                ElementFormat::Fp8E4m3 => 254,
                ElementFormat::Fp8E5m2 => 248,
                ElementFormat::Fp6E2m3 | ElementFormat::Fp6E3m2 => 64,
                ElementFormat::Fp4E2m1 => 16,
            };
            assert_eq!(finite, expected_finite, "{format}");
            let grid = format.code_points();
            assert_eq!(grid.len(), expected_finite - 1, "{format}: zero once");
            assert_eq!(*grid.last().unwrap(), format.max());
            assert_eq!(grid[grid.len() / 2], 0.0);
            assert_eq!(grid[grid.len() / 2 + 1], format.min_subnormal());
        }
    }

    #[test]
    fn known_values() {
        use ElementFormat::*;
        assert_eq!(Fp4E2m1.code_points(), {
            let p = [0.5f32, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
            let mut v: Vec<f32> = p.iter().rev().map(|x| -x).collect();
            v.push(0.0);
            v.extend(p);
            v
        });
        assert_eq!(Fp8E4m3.min_subnormal(), 2f32.powi(-9));
        assert_eq!(Fp8E5m2.min_subnormal(), 2f32.powi(-16));
        assert_eq!(Fp6E2m3.max(), 7.5);
        assert_eq!(Fp6E3m2.max(), 28.0);
        for (f, max_code) in [
            (Fp8E4m3, 0x7E),
            (Fp8E5m2, 0x7B),
            (Fp6E2m3, 0x1F),
            (Fp6E3m2, 0x1F),
            (Fp4E2m1, 0x7),
        ] {
            assert_eq!(f.emax(), floor_log2(f.max()), "{f}");
            assert_eq!(f.decode(max_code), f.max(), "{f}");
            assert_eq!(f.encode(f.max()), Some(max_code), "{f}");
        }
        // Ties to even, carries into the next binade, saturation.
        assert_eq!(Fp4E2m1.quantize(2.5), 2.0);
        assert_eq!(Fp4E2m1.quantize(3.5), 4.0);
        assert_eq!(Fp4E2m1.quantize(5.0), 4.0);
        assert_eq!(Fp4E2m1.quantize(5.0001), 6.0);
        assert_eq!(Fp4E2m1.quantize(7.0), 6.0);
        assert_eq!(Fp4E2m1.quantize(-1e30), -6.0);
        assert_eq!(Fp4E2m1.quantize(0.25), 0.0);
        assert_eq!(Fp4E2m1.quantize(0.2500001), 0.5);
        assert_eq!(Fp4E2m1.quantize(0.75), 1.0);
        assert_eq!(Fp8E4m3.quantize(464.0), 448.0);
        assert_eq!(Fp8E4m3.quantize(f32::INFINITY), 448.0);
        assert_eq!(Fp8E4m3.quantize(1.0625), 1.0);
        assert_eq!(Fp8E4m3.quantize(1.1875), 1.25);
        assert_eq!(Fp8E4m3.quantize(2f32.powi(-10)), 0.0);
        assert_eq!(Fp8E4m3.quantize(3.0 * 2f32.powi(-11)), 2f32.powi(-9));
        assert_eq!(Fp8E5m2.quantize(61440.0), 57344.0);
        assert!(Fp8E5m2.quantize(f32::NAN).is_nan());
        assert_eq!(Fp6E3m2.quantize(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(Fp8E4m3.encode(-0.0), Some(0x80));
        assert_eq!(Fp4E2m1.encode(f32::NAN), None);
        assert_eq!(Fp4E2m1.encode(6.0), Some(0x7));
        assert_eq!(Fp4E2m1.encode(-0.5), Some(0x9));
        assert_eq!(ElementFormat::from_name("fp4"), Some(Fp4E2m1));
        assert_eq!(ElementFormat::from_name("float8_e4m3fn"), Some(Fp8E4m3));
        assert_eq!(ElementFormat::from_name("int8"), None);
    }

    #[test]
    fn rounding_matches_nearest_code_point_search() {
        // A deterministic sweep over many magnitudes, including exact midpoints.
        for format in ElementFormat::ALL {
            let grid = format.code_points();
            let mut xs: Vec<f32> = Vec::new();
            for w in grid.windows(2) {
                let mid = (w[0] + w[1]) / 2.0;
                xs.extend([w[0], mid, f32::from_bits(mid.to_bits() + 1), w[1]]);
                if mid.to_bits() > 0 {
                    xs.push(f32::from_bits(mid.to_bits() - 1));
                }
            }
            let mut state = 0x9E37_79B9u32;
            for _ in 0..20_000 {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let e = (state % 40) as i32 - 20;
                let frac = (state >> 8) as f32 / (1u32 << 24) as f32;
                let x = (1.0 + frac) * pow2(e) * if state & 1 == 0 { 1.0 } else { -1.0 };
                xs.push(x);
            }
            for x in xs {
                assert_eq!(
                    format.quantize(x),
                    nearest_by_search(format, x),
                    "{format}: x = {x:e}"
                );
            }
        }
    }

    #[test]
    fn pow2_and_floor_log2_cover_subnormals() {
        assert_eq!(pow2(-149), f32::from_bits(1));
        assert_eq!(pow2(-127), f32::from_bits(1 << 22));
        assert_eq!(pow2(0), 1.0);
        assert_eq!(pow2(127), 2f32.powi(127));
        assert_eq!(pow2(-150), 0.0);
        assert_eq!(pow2(128), f32::INFINITY);
        assert_eq!(floor_log2(f32::from_bits(1)), -149);
        assert_eq!(floor_log2(0.75), -1);
        assert_eq!(floor_log2(f32::MAX), 127);
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    fn any_format() -> impl Strategy<Value = ElementFormat> {
        prop::sample::select(ElementFormat::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn quantize_is_idempotent(format in any_format(), x in any::<f32>()) {
            let q = format.quantize(x);
            prop_assert_eq!(format.quantize(q).to_bits(), q.to_bits());
        }

        #[test]
        fn quantize_is_monotone_and_odd(format in any_format(), a in -1e6f32..1e6, b in -1e6f32..1e6) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(format.quantize(lo) <= format.quantize(hi));
            prop_assert_eq!(format.quantize(-a), -format.quantize(a));
        }

        #[test]
        fn quantized_values_are_code_points(format in any_format(), x in -1e5f32..1e5) {
            let q = format.quantize(x);
            prop_assert!(q.abs() <= format.max());
            let code = format.encode(q).unwrap();
            prop_assert_eq!(format.decode(code), q);
            prop_assert_eq!(format.encode(x), Some(code));
        }
    }
}
