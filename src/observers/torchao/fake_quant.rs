//! torchao 0.18.0's quantize–dequantize (`quant_primitives.py`), one element at a time in
//! float32, with the scale and zero point of the element's block:
//!
//! * INT domain (`_quantize_affine_no_dtype_cast` + `_dequantize_affine_no_dtype_check`):
//!   `q = clamp(round_half_even(x · (1/s)) + zp, qmin, qmax)` — a **multiplication by the
//!   reciprocal** (computed in the scale's dtype), **rounded before adding the zero point**,
//!   clamped after — and `x̂ = (q − zp) · s`. `quantize_affine` then casts `q` to the target
//!   dtype: exact for integers, a **second rounding for float8** (integers above 16 are not all
//!   representable in E4M3);
//! * NONE domain: `q = clamp(round_half_even(x · (1/s)), qmin, qmax)`, `x̂ = q · s`;
//! * FLOAT domain (tinygemm): `mid = (qmax + qmin + 1)/2`, `q = clamp(round_half_even((x −
//!   (zp − s·mid)) / s), qmin, qmax)`, `x̂ = (q − mid) · s + zp`.

use super::args::{ScaleDtype, TargetDtype, ZeroPointDomain};
use super::qparams::cast_scale;
use crate::formats::ElementFormat;
use crate::quant::round_half_even;

/// How one element is quantized and dequantized.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kernel {
    pub domain: ZeroPointDomain,
    pub qmin: f32,
    pub qmax: f32,
    /// `mid = (qmax + qmin + 1)/2` of the FLOAT domain.
    pub mid: f32,
    /// The target dtype `quantize_affine` casts to (`None`: `_fake_quantize_affine`, no cast).
    pub cast: Option<TargetDtype>,
    /// The scale's dtype: `1/s` and `s·mid` are computed in it.
    pub scale_dtype: Option<ScaleDtype>,
}

impl Kernel {
    /// The kernel for a range and domain.
    pub fn new(domain: ZeroPointDomain, qmin: f64, qmax: f64, cast: Option<TargetDtype>) -> Self {
        Kernel {
            domain,
            qmin: qmin as f32,
            qmax: qmax as f32,
            mid: ((qmax + qmin + 1.0) / 2.0) as f32,
            cast,
            scale_dtype: None,
        }
    }

    /// The same kernel for scales of `dtype`.
    pub fn with_scale_dtype(mut self, dtype: Option<ScaleDtype>) -> Self {
        self.scale_dtype = dtype;
        self
    }

    /// ATen's clamp, `min(max(v, qmin), qmax)` with `std::max(a, b) = a < b ? b : a`: NaN
    /// stays NaN; selects, so that lanes vectorise.
    #[inline(always)]
    fn clamp(&self, v: f32) -> f32 {
        let low = if v < self.qmin { self.qmin } else { v };
        if self.qmax < low {
            self.qmax
        } else {
            low
        }
    }

    /// `x̂` of `x` with scale `s` and zero point `zp`.
    #[inline(always)]
    pub fn apply(&self, x: f32, s: f32, zp: f32) -> f32 {
        let inv = cast_scale(1.0 / s, self.scale_dtype);
        match self.domain {
            ZeroPointDomain::Float => {
                let min_val = zp - cast_scale(s * self.mid, self.scale_dtype);
                let q = self.clamp(round_half_even((x - min_val) / s));
                (q - self.mid) * s + zp
            }
            ZeroPointDomain::NoZeroPoint => self.cast(self.clamp(round_half_even(x * inv))) * s,
            _ => {
                let q = self.cast(self.clamp(round_half_even(x * inv) + zp));
                (q - zp) * s
            }
        }
    }

    #[inline(always)]
    fn cast(&self, q: f32) -> f32 {
        match self.cast {
            Some(TargetDtype::Float8E4m3fn) => ElementFormat::Fp8E4m3.quantize(q),
            Some(TargetDtype::Float8E5m2) => ElementFormat::Fp8E5m2.quantize(q),
            _ => q,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_and_the_float8_cast() {
        let int = Kernel::new(ZeroPointDomain::Int, -128.0, 127.0, None);
        // Rounded before the zero point: 2.5 → 2, + 3 → 5, (5 − 3)·1 = 2.
        assert_eq!(int.apply(2.5, 1.0, 3.0), 2.0);
        assert_eq!(int.apply(300.0, 1.0, 0.0), 127.0);
        let fp8 = Kernel::new(
            ZeroPointDomain::Int,
            -448.0,
            448.0,
            Some(TargetDtype::Float8E4m3fn),
        );
        assert_eq!(fp8.apply(17.0, 1.0, 0.0), 16.0);
        let tinygemm = Kernel::new(ZeroPointDomain::Float, 0.0, 15.0, None);
        // mid = 8: min_val = 1 − 8 = −7; q = round(0 + 7) = 7; x̂ = (7 − 8) + 1 = 0.
        assert_eq!(tinygemm.apply(0.0, 1.0, 1.0), 0.0);
        let none = Kernel::new(ZeroPointDomain::NoZeroPoint, -448.0, 448.0, None);
        assert_eq!(none.apply(1.26, 0.5, 0.0), 1.5);
    }
}
