//! ggml's float32 → float16 conversion (`ggml_compute_fp32_to_fp16`, ggml-impl.h l. 419, the
//! software path used when the CPU has no F16C), and float16 → float32.
//!
//! The conversion rounds to nearest, ties to even, subnormals included, overflows to ±inf and
//! maps NaN to `0x7E00`. It is written with float arithmetic rather than bit manipulation:
//! `base = (|f| · 2¹¹²) · 2⁻¹¹⁰` pushes the value into a range where adding
//! `2^(e + 15 − 10)`-ish (`bias`, at least `2⁻¹⁴` so subnormals round on the fp16 subnormal grid)
//! makes the float32 adder do the rounding; the fp16 exponent and mantissa are then read from
//! the sum's bits. Every float scale a ggml block stores goes through this function.

/// `ggml_compute_fp32_to_fp16(f)`: the fp16 bits of `f`.
pub fn fp32_to_fp16(f: f32) -> u16 {
    let scale_to_inf = f32::from_bits(0x7780_0000); // 2^112
    let scale_to_zero = f32::from_bits(0x0880_0000); // 2^-110
    let mut base = (f.abs() * scale_to_inf) * scale_to_zero;

    let w = f.to_bits();
    let shl1_w = w.wrapping_add(w);
    let sign = w & 0x8000_0000;
    let bias = (shl1_w & 0xFF00_0000).max(0x7100_0000);

    base += f32::from_bits((bias >> 1) + 0x0780_0000);
    let bits = base.to_bits();
    let exp_bits = (bits >> 13) & 0x0000_7C00;
    let mantissa_bits = bits & 0x0000_0FFF;
    let nonsign = exp_bits + mantissa_bits;
    let magnitude = if shl1_w > 0xFF00_0000 {
        0x7E00
    } else {
        nonsign
    };
    ((sign >> 16) | magnitude) as u16
}

/// The float32 value of fp16 bits (exact).
pub fn fp16_to_fp32(h: u16) -> f32 {
    half::f16::from_bits(h).to_f32()
}

/// `f` rounded to float16 and back.
pub fn round_fp16(f: f32) -> f32 {
    fp16_to_fp32(fp32_to_fp16(f))
}

/// Little-endian fp16 at `bytes[at..at + 2]`.
pub fn read_fp16(bytes: &[u8], at: usize) -> f32 {
    fp16_to_fp32(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

/// Store `f` as little-endian fp16 at `bytes[at..at + 2]`.
pub fn write_fp16(bytes: &mut [u8], at: usize, f: f32) {
    bytes[at..at + 2].copy_from_slice(&fp32_to_fp16(f).to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_to_nearest_even_like_the_ieee_conversion() {
        // Against the `half` crate's IEEE conversion on a spread of values, subnormals,
        // halfway cases and overflow included.
        let mut values = vec![
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            65504.0,
            65519.0,
            65520.0,
            1e9,
            -1e9,
            f32::INFINITY,
            f32::NEG_INFINITY,
            2f32.powi(-24),
            2f32.powi(-25),
            3.0 * 2f32.powi(-25),
            2f32.powi(-26),
            1.0 + 2f32.powi(-11),
            1.0 + 3.0 * 2f32.powi(-11),
            6.1e-5,
            1e-8,
        ];
        let mut x = 1.234_567e-9f32;
        while x < 1e6 {
            values.push(x);
            values.push(-x * 1.000_123);
            x *= 1.618_034;
        }
        for v in values {
            assert_eq!(
                fp32_to_fp16(v),
                half::f16::from_f32(v).to_bits(),
                "{v:e} ({:#010x})",
                v.to_bits()
            );
        }
        assert_eq!(fp32_to_fp16(f32::NAN), 0x7E00);
        assert_eq!(fp32_to_fp16(-f32::NAN), 0xFE00);
    }

    #[test]
    fn fp16_round_trip_in_byte_buffers() {
        let mut b = [0u8; 4];
        write_fp16(&mut b, 2, 0.1);
        assert_eq!(read_fp16(&b, 2), half::f16::from_f32(0.1).to_f32());
        // Just above half the smallest subnormal (2⁻²⁵) rounds up to it.
        assert_eq!(round_fp16(3.0e-8), 2f32.powi(-24));
    }
}
