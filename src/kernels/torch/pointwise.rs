//! Element-wise ATen kernels whose special cases change the result.
//!
//! * [`pow_scalar`]: `torch.pow(x, e)` of a float32 tensor with a Python-number exponent
//!   (`pow_tensor_scalar_kernel`): `e = 0` fills 1, `e = 1` copies, `0.5` is `sqrt`, `−0.5` is
//!   `rsqrt`, `−1` is `1/x`, `2` is `x·x`, `3` is `x·x·x`, `−2` is `1/(x·x)`; any other exponent
//!   goes to `pow`. ATen's vector path there is SLEEF's `powf` (≤ 1 ulp); quantscope rounds the
//!   exact float64 `pow` to float32, which agrees with SLEEF except for rare 1-ulp cases.
//!   [`Power`] is the same function for lanes of a fixed exponent, fast enough for a search
//!   that raises every element of a tensor once per candidate (see its documentation).
//! * [`float_to_int`]: `float → intN` as compiled C++ casts on x86 (`cvttss2si`: truncation,
//!   `0x80000000` for NaN or out-of-range values, then the low `N` bits), e.g. a NaN zero point
//!   cast to int8 becomes 0.

use super::f32_to_i32;

/// `torch.pow(x, exponent)` for one float32 element (see the module documentation).
pub fn pow_scalar(x: f32, exponent: f64) -> f32 {
    if exponent == 0.0 {
        1.0
    } else if exponent == 1.0 {
        x
    } else if exponent == 0.5 {
        x.sqrt()
    } else if exponent == -0.5 {
        1.0 / x.sqrt()
    } else if exponent == -1.0 {
        1.0 / x
    } else if exponent == 2.0 {
        x * x
    } else if exponent == 3.0 {
        x * x * x
    } else if exponent == -2.0 {
        1.0 / (x * x)
    } else {
        (x as f64).powf(exponent) as f32
    }
}

/// `torch.pow(x, e)` for a fixed exponent, on lanes: bit for bit [`pow_scalar`], fast.
///
/// The special exponents take their ATen shortcut. Any other exponent with `|e| ≤ 64` runs, for
/// a positive normal `x`, `2^(e·log2 x)` in float64 without a library call or a float64
/// division, so that the lanes vectorise:
/// * `x = 2^k·m` with `m ∈ [√½, √2)`, `ln m = 2·atanh(s)`, `s = (m − 1)/(m + 1)`;
/// * `1/(m + 1)` is a float32 quotient (relative error < 2⁻²³) refined by one Newton step in
///   float64, `r·(2 − (m + 1)·r)`, which squares the error (< 2⁻⁴⁶; `(m + 1)·r` is exact: 25 by
///   24 bits);
/// * `atanh` by its series to `s¹⁵` (|s| ≤ 0.172: truncation < 2⁻⁴⁴ of `ln m`);
/// * `y = e·k + e·log2(e)·ln m`; `2^y = 2^n·exp(f·ln 2)` with `n = round(y)`, `|f| ≤ ½`, by
///   Taylor to degree 11 (truncation < 2⁻⁴⁶).
///
/// Every rounding included, the float64 result is within 2⁻⁴³ of the true power at `|e| ≤ 4`
/// and within 2⁻³⁹ at `|e| ≤ 64` (relative, `|y| < 127`: the errors of `ln m` grow with `e`),
/// and `pow_scalar`'s correctly rounded float64 `pow` within 2⁻⁵³. Both round to the same float32
/// unless the value lies within 2⁻³⁷ of a float32 rounding midpoint, which the last step checks
/// (it needs the result within 2⁻³⁷). Such lanes — about one in 4,000 —, and zero, subnormal,
/// infinite or NaN inputs, and results outside float32's normal range, are recomputed by
/// [`pow_scalar`], as is every lane of a larger exponent. An exhaustive comparison over every
/// float32 is a test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Power {
    exponent: f64,
    /// `e·log2(e)`, the factor of `ln m` in `y`.
    exponent_log2_e: f64,
    /// Not one of the shortcut exponents, and at most 64 in magnitude: the float64 evaluation
    /// runs.
    general: bool,
}

impl Power {
    pub fn new(exponent: f64) -> Power {
        let shortcut = [0.0, 1.0, 0.5, -0.5, -1.0, 2.0, 3.0, -2.0].contains(&exponent);
        Power {
            exponent,
            exponent_log2_e: exponent * std::f64::consts::LOG2_E,
            general: !shortcut && exponent.abs() <= 64.0,
        }
    }

    /// `pow_scalar(x, e)` of every lane.
    #[inline(always)]
    pub fn lanes<const L: usize>(&self, x: [f32; L]) -> [f32; L] {
        self.lanes_by::<L, false>(x)
    }

    /// [`lanes`](Self::lanes) with the polynomials evaluated by fused multiply-adds: the same
    /// results, faster, but only where FMA is compiled in ([`crate::simd::with_fma`]).
    #[inline(always)]
    pub fn lanes_fused<const L: usize>(&self, x: [f32; L]) -> [f32; L] {
        self.lanes_by::<L, true>(x)
    }

    #[inline(always)]
    fn lanes_by<const L: usize, const FUSED: bool>(&self, x: [f32; L]) -> [f32; L] {
        if !self.general {
            // The shortcut chosen once for all lanes (`pow_scalar`'s cases).
            let e = self.exponent;
            return if e == 2.0 {
                x.map(|v| v * v)
            } else if e == 3.0 {
                x.map(|v| v * v * v)
            } else if e == 1.0 {
                x
            } else {
                x.map(|v| pow_scalar(v, e))
            };
        }
        let (mut out, certain) = self.fast::<L, FUSED>(x);
        for l in 0..L {
            if !certain[l] {
                out[l] = pow_scalar(x[l], self.exponent);
            }
        }
        out
    }

    /// The float64 evaluation of the power of every lane rounded to float32, and whether that
    /// rounding is certain. Branch-free and written a stage at a time over all lanes, so that
    /// the lanes vectorise and their dependency chains overlap.
    #[inline(always)]
    fn fast<const L: usize, const FUSED: bool>(&self, x: [f32; L]) -> ([f32; L], [bool; L]) {
        #[inline(always)]
        fn madd<const FUSED: bool>(a: f64, b: f64, c: f64) -> f64 {
            if FUSED {
                a.mul_add(b, c)
            } else {
                a * b + c
            }
        }
        const SQRT_2_MANTISSA: u32 = 0x3504F3; // mantissa bits of √2 as a float32 in [1, 2)
        let mut certain = [false; L];
        let mut k = [0.0f64; L];
        let mut s = [0.0f64; L];
        for l in 0..L {
            let bits = x[l].to_bits();
            certain[l] = (0x0080_0000..0x7F80_0000).contains(&bits); // positive, normal, finite
            let mantissa = bits & 0x007F_FFFF;
            let high = mantissa >= SQRT_2_MANTISSA;
            // m in [√½, √2): the mantissa with exponent 0 (or −1 above √2).
            let m_bits = mantissa | if high { 0x3F00_0000 } else { 0x3F80_0000 };
            let m32 = f32::from_bits(m_bits);
            let m = m32 as f64;
            k[l] = ((bits >> 23) as i32 - 127 + i32::from(high)) as f64;
            // s = (m − 1)·(1/(m + 1)): the float32 quotient, one Newton step in float64 (the
            // product (m + 1)·r is exact, so 1 − (m + 1)·r is the same fused or not).
            let sum = m + 1.0;
            let r = (1.0 / (m32 + 1.0)) as f64;
            let residual = madd::<FUSED>(-sum, r, 1.0);
            s[l] = (m - 1.0) * madd::<FUSED>(r, residual, r);
        }
        // 2·atanh(s) = 2s·(1 + s²/3 + s⁴/5 + … + s¹⁴/15)
        let s2 = s.map(|s| s * s);
        let mut series = [1.0 / 15.0; L];
        for d in [13.0, 11.0, 9.0, 7.0, 5.0, 3.0, 1.0] {
            for l in 0..L {
                series[l] = madd::<FUSED>(series[l], s2[l], 1.0 / d);
            }
        }
        // n = round(y) by adding 1.5·2⁵², whose float64 then holds n in its low bits (integer
        // lanes: no float → int64 conversion, which AVX2 lacks).
        const ROUNDER: f64 = 6_755_399_441_055_744.0;
        let mut n_int = [0i64; L];
        let mut t = [0.0f64; L];
        for l in 0..L {
            let ln_m = 2.0 * s[l] * series[l];
            let y = madd::<FUSED>(self.exponent, k[l], self.exponent_log2_e * ln_m);
            let in_range = (y > -125.0) & (y < 127.0);
            certain[l] &= in_range;
            let y = if in_range { y } else { 0.0 };
            let shifted = y + ROUNDER;
            n_int[l] = shifted.to_bits() as i64 - ROUNDER.to_bits() as i64;
            t[l] = (y - (shifted - ROUNDER)) * std::f64::consts::LN_2;
        }
        // exp(t), |t| ≤ ln2/2, Taylor to t¹¹/11!
        let mut exp = [1.0 / 39_916_800.0; L];
        for f in [
            3_628_800.0,
            362_880.0,
            40_320.0,
            5_040.0,
            720.0,
            120.0,
            24.0,
            6.0,
            2.0,
            1.0,
            1.0,
        ] {
            for l in 0..L {
                exp[l] = madd::<FUSED>(exp[l], t[l], 1.0 / f);
            }
        }
        let mut rounded = [0.0f32; L];
        for l in 0..L {
            let r = exp[l] * f64::from_bits(((n_int[l] + 1023) as u64) << 52);
            // Distance of r's float64 mantissa from a float32 rounding midpoint (29 extra bits).
            let low = (r.to_bits() & ((1 << 29) - 1)) as i64;
            let clear = (low - (1 << 28)).abs() > 1 << 16;
            rounded[l] = r as f32;
            let result_normal = (r >= f32::MIN_POSITIVE as f64) & (rounded[l] < f32::MAX);
            certain[l] &= clear & result_normal;
        }
        (rounded, certain)
    }
}

/// `static_cast<intN_t>(float)` as x86 executes it: `cvttss2si` (truncate toward zero;
/// `i32::MIN` for NaN and values outside int32), then the low `bits` bits, sign-extended when
/// `signed`.
pub fn float_to_int(x: f32, bits: u32, signed: bool) -> i64 {
    let wide = f32_to_i32(x);
    if bits >= 32 {
        return if signed {
            wide as i64
        } else {
            wide as u32 as i64
        };
    }
    let mask = (1u32 << bits) - 1;
    let low = wide as u32 & mask;
    if signed && low >> (bits - 1) == 1 {
        low as i64 - (1i64 << bits)
    } else {
        low as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_exponents_and_casts() {
        assert_eq!(pow_scalar(3.0, 2.0), 9.0);
        assert_eq!(pow_scalar(0.5, 3.0), 0.125);
        assert_eq!(pow_scalar(0.0, 0.0), 1.0);
        assert_eq!(pow_scalar(2.0, 2.4), 2f64.powf(2.4) as f32);
        assert_eq!(float_to_int(f32::NAN, 8, true), 0);
        assert_eq!(float_to_int(f32::NAN, 32, true), i32::MIN as i64);
        assert_eq!(float_to_int(-3.0, 8, true), -3);
        assert_eq!(float_to_int(200.0, 8, true), -56);
        assert_eq!(float_to_int(200.0, 8, false), 200);
    }

    /// [`Power`] against [`pow_scalar`] on every `stride`-th float32 bit pattern (both signs,
    /// NaN, infinities and subnormals included), eight lanes at a time.
    fn power_agrees(exponent: f64, stride: usize) {
        let power = Power::new(exponent);
        let patterns: Vec<u32> = (0..=u32::MAX).step_by(stride).collect();
        for chunk in patterns.chunks(8) {
            let mut x = [0.0f32; 8];
            for (lane, &b) in x.iter_mut().zip(chunk) {
                *lane = f32::from_bits(b);
            }
            let got = power.lanes(x);
            let fused = crate::simd::with_fma(
                #[inline(always)]
                || power.lanes_fused(x),
                #[inline(always)]
                || power.lanes(x),
            );
            assert_eq!(got.map(f32::to_bits), fused.map(f32::to_bits));
            for (g, v) in got.iter().zip(x) {
                let want = pow_scalar(v, exponent);
                assert!(
                    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                    "{v:e}^{exponent}: {g:e} != {want:e}"
                );
            }
        }
    }

    #[test]
    fn power_is_pow_scalar_on_sampled_floats() {
        for (exponent, stride) in [
            (2.4, 97),
            (3.0, 4099),
            (0.7, 1013),
            (4.5, 1021),
            (16.0, 1031),
            (-3.7, 1039),
            (64.0, 1033), // the largest exponent evaluated in float64
            (-64.0, 1049),
            (100.0, 4111), // recomputed by pow_scalar
        ] {
            power_agrees(exponent, stride);
        }
        // Around 1 and the error magnitudes a search meets, densely.
        let power = Power::new(2.4);
        for b in (0x3000_0000u32..0x3F90_0000).step_by(7) {
            let x = f32::from_bits(b);
            assert_eq!(
                power.lanes([x])[0].to_bits(),
                pow_scalar(x, 2.4).to_bits(),
                "{x:e}"
            );
        }
    }

    /// Every float32 (a minute on two cores at `--release`): `cargo test --release
    /// power_is_pow_scalar_everywhere -- --ignored`.
    #[test]
    #[ignore]
    fn power_is_pow_scalar_everywhere() {
        power_agrees(2.4, 1);
    }
}
