//! Element-wise ATen kernels whose special cases change the result.
//!
//! * [`pow_scalar`]: `torch.pow(x, e)` of a float32 tensor with a Python-number exponent
//!   (`pow_tensor_scalar_kernel`): `e = 0` fills 1, `e = 1` copies, `0.5` is `sqrt`, `−0.5` is
//!   `rsqrt`, `−1` is `1/x`, `2` is `x·x`, `3` is `x·x·x`, `−2` is `1/(x·x)`; any other exponent
//!   goes to `pow`. ATen's vector path there is SLEEF's `powf` (≤ 1 ulp); quantscope rounds the
//!   exact float64 `pow` to float32, which agrees with SLEEF except for rare 1-ulp cases.
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
}
