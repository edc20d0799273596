//! Raw element bytes → f32, shared by the `.npy` and `.safetensors` readers.
//!
//! Every conversion is what `tensor.to(torch.float32)` / `array.astype(np.float32)` does:
//! integers and f64 round to the nearest f32 (ties to even, as Rust's `as` does), f16/bf16
//! widen exactly, bool is 0/1 (any non-zero byte is true), and the two OCP FP8 formats are
//! decoded by hand ([`f8_e4m3_to_f32`], [`f8_e5m2_to_f32`]).

use super::DType;

/// Size in bytes of one element of `dtype`.
pub(crate) fn item_size(dtype: DType) -> usize {
    match dtype {
        DType::Bool | DType::I8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => 1,
        DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
        DType::I32 | DType::U32 | DType::F32 => 4,
        DType::I64 | DType::U64 | DType::F64 => 8,
    }
}

/// Byte order of multi-byte elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
}

/// Decode `bytes` (a whole number of `dtype` elements, in `order`) to f32 values in the same
/// order. A trailing partial element, which callers rule out beforehand, is ignored.
pub(crate) fn decode(dtype: DType, order: ByteOrder, bytes: &[u8]) -> Vec<f32> {
    let mut out = Vec::with_capacity(bytes.len() / item_size(dtype));
    decode_into(dtype, order, bytes, &mut out);
    out
}

/// `$body` with `$it` bound to an iterator over the f32 values of `$bytes` (whole `$dtype`
/// elements in `$order`): one expansion per dtype, so that each loop is monomorphic.
macro_rules! with_values {
    ($dtype:expr, $order:expr, $bytes:expr, |$it:ident| $body:expr) => {{
        let (order, bytes) = ($order, $bytes);
        // The byte order is tested once, outside the loop, so that each loop is branch-free.
        macro_rules! conv {
            ($n:literal, |$a:ident| $conv:expr) => {{
                if order == ByteOrder::Big {
                    let $it = bytes.chunks_exact($n).map(|c| {
                        let mut $a = [0u8; $n];
                        $a.copy_from_slice(c);
                        $a.reverse();
                        $conv
                    });
                    $body
                } else {
                    let $it = bytes.chunks_exact($n).map(|c| {
                        let mut $a = [0u8; $n];
                        $a.copy_from_slice(c);
                        $conv
                    });
                    $body
                }
            }};
        }
        match $dtype {
            DType::Bool => {
                let $it = bytes.iter().map(|&b| f32::from(u8::from(b != 0)));
                $body
            }
            DType::U8 => {
                let $it = bytes.iter().map(|&b| f32::from(b));
                $body
            }
            DType::I8 => {
                let $it = bytes.iter().map(|&b| f32::from(b as i8));
                $body
            }
            DType::F8E4M3 => {
                let $it = bytes.iter().map(|&b| f8_e4m3_to_f32(b));
                $body
            }
            DType::F8E5M2 => {
                let $it = bytes.iter().map(|&b| f8_e5m2_to_f32(b));
                $body
            }
            DType::I16 => conv!(2, |a| f32::from(i16::from_le_bytes(a))),
            DType::U16 => conv!(2, |a| f32::from(u16::from_le_bytes(a))),
            DType::F16 => conv!(2, |a| half::f16::from_le_bytes(a).to_f32()),
            DType::BF16 => conv!(2, |a| bf16_to_f32(u16::from_le_bytes(a))),
            DType::I32 => conv!(4, |a| i32::from_le_bytes(a) as f32),
            DType::U32 => conv!(4, |a| u32::from_le_bytes(a) as f32),
            DType::F32 => conv!(4, |a| f32::from_le_bytes(a)),
            DType::I64 => conv!(8, |a| i64::from_le_bytes(a) as f32),
            DType::U64 => conv!(8, |a| u64::from_le_bytes(a) as f32),
            DType::F64 => conv!(8, |a| f64::from_le_bytes(a) as f32),
        }
    }};
}

/// [`decode`], appending to `out`.
pub(crate) fn decode_into(dtype: DType, order: ByteOrder, bytes: &[u8], out: &mut Vec<f32>) {
    with_values!(dtype, order, bytes, |values| out.extend(values))
}

/// [`decode`] into `out`, which holds one place per whole element of `bytes` (extra places are
/// left as they are): a reader that decodes pieces of a range side by side.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn decode_to(dtype: DType, order: ByteOrder, bytes: &[u8], out: &mut [f32]) {
    with_values!(dtype, order, bytes, |values| {
        for (o, v) in out.iter_mut().zip(values) {
            *o = v;
        }
    })
}

/// `half::bf16::to_f32` without its branch, so that a loop of it vectorises: the bits moved
/// to the top half, a NaN made quiet (its top mantissa bit set).
#[inline(always)]
fn bf16_to_f32(bits: u16) -> f32 {
    let quiet = u32::from(bits & 0x7FFF > 0x7F80) << 22;
    f32::from_bits((u32::from(bits) << 16) | quiet)
}

/// OCP FP8 E4M3 ("E4M3FN"): 1 sign, 4 exponent (bias 7), 3 mantissa bits. No infinities;
/// `S.1111.111` is NaN; the largest finite magnitude is `1.75 * 2^8 = 448`; exponent field 0
/// holds subnormals `m/8 * 2^-6`.
pub fn f8_e4m3_to_f32(code: u8) -> f32 {
    let sign = u32::from(code >> 7) << 31;
    let exp = u32::from((code >> 3) & 0x0F);
    let man = u32::from(code & 0x07);
    let magnitude = if exp == 0x0F && man == 0x07 {
        f32::NAN.to_bits()
    } else if exp == 0 {
        // m/8 * 2^-6 = m * 2^-9, exact in f32.
        (man as f32 * f32::from_bits(0x3B00_0000)).to_bits()
    } else {
        // Rebias 7 → 127 and widen the 3-bit mantissa to 23 bits.
        ((exp + 120) << 23) | (man << 20)
    };
    f32::from_bits(sign | magnitude)
}

/// OCP FP8 E5M2: 1 sign, 5 exponent (bias 15), 2 mantissa bits, IEEE-like. Exponent field 31
/// is ±Inf (mantissa 0) or NaN; the largest finite magnitude is `1.75 * 2^15 = 57344`;
/// exponent field 0 holds subnormals `m/4 * 2^-14`.
pub fn f8_e5m2_to_f32(code: u8) -> f32 {
    let sign = u32::from(code >> 7) << 31;
    let exp = u32::from((code >> 2) & 0x1F);
    let man = u32::from(code & 0x03);
    let magnitude = if exp == 0x1F {
        if man == 0 {
            f32::INFINITY.to_bits()
        } else {
            f32::NAN.to_bits()
        }
    } else if exp == 0 {
        // m/4 * 2^-14 = m * 2^-16, exact in f32.
        (man as f32 * f32::from_bits(0x3780_0000)).to_bits()
    } else {
        // Rebias 15 → 127 and widen the 2-bit mantissa to 23 bits.
        ((exp + 112) << 23) | (man << 21)
    };
    f32::from_bits(sign | magnitude)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_decodes_as_the_half_crate_does_every_pattern() {
        for bits in 0..=u16::MAX {
            assert_eq!(
                bf16_to_f32(bits).to_bits(),
                half::bf16::from_bits(bits).to_f32().to_bits(),
                "{bits:#06x}"
            );
        }
    }

    /// Independent reference: value = (-1)^s * 2^(e - bias) * (1 + m / 2^mbits) for normals,
    /// (-1)^s * 2^(1 - bias) * (m / 2^mbits) for subnormals, computed in f64 with powi.
    fn reference(code: u8, ebits: u32, mbits: u32, bias: i32) -> f64 {
        let s = if code & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = i32::from((code >> mbits) & ((1u8 << ebits) - 1));
        let m = f64::from(code & ((1u8 << mbits) - 1));
        let scale = f64::from(1u32 << mbits);
        if e == 0 {
            s * 2f64.powi(1 - bias) * (m / scale)
        } else {
            s * 2f64.powi(e - bias) * (1.0 + m / scale)
        }
    }

    #[test]
    fn e4m3_all_codes() {
        let mut nans = 0;
        for code in 0..=255u8 {
            let got = f8_e4m3_to_f32(code);
            if code & 0x7F == 0x7F {
                assert!(got.is_nan(), "code {code:#04x} must be NaN, got {got}");
                nans += 1;
                continue;
            }
            let want = reference(code, 4, 3, 7);
            assert!(
                got.is_finite(),
                "E4M3 has no infinities: {code:#04x} gave {got}"
            );
            assert_eq!(f64::from(got), want, "code {code:#04x}");
            assert_eq!(
                got.is_sign_negative(),
                code & 0x80 != 0,
                "sign of {code:#04x}"
            );
        }
        assert_eq!(nans, 2);
        assert_eq!(f8_e4m3_to_f32(0x7E), 448.0);
        assert_eq!(f8_e4m3_to_f32(0xFE), -448.0);
        assert_eq!(f8_e4m3_to_f32(0x01), 2f32.powi(-9));
        assert_eq!(f8_e4m3_to_f32(0x08), 2f32.powi(-6));
        assert_eq!(f8_e4m3_to_f32(0x38), 1.0);
        assert_eq!(f8_e4m3_to_f32(0x80).to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn e5m2_all_codes() {
        let (mut nans, mut infs) = (0, 0);
        for code in 0..=255u8 {
            let got = f8_e5m2_to_f32(code);
            if (code >> 2) & 0x1F == 0x1F {
                if code & 0x03 == 0 {
                    assert!(got.is_infinite(), "code {code:#04x} must be Inf, got {got}");
                    assert_eq!(got.is_sign_negative(), code & 0x80 != 0);
                    infs += 1;
                } else {
                    assert!(got.is_nan(), "code {code:#04x} must be NaN, got {got}");
                    nans += 1;
                }
                continue;
            }
            let want = reference(code, 5, 2, 15);
            assert_eq!(f64::from(got), want, "code {code:#04x}");
            assert_eq!(
                got.is_sign_negative(),
                code & 0x80 != 0,
                "sign of {code:#04x}"
            );
        }
        assert_eq!((nans, infs), (6, 2));
        assert_eq!(f8_e5m2_to_f32(0x7B), 57344.0);
        assert_eq!(f8_e5m2_to_f32(0xFB), -57344.0);
        assert_eq!(f8_e5m2_to_f32(0x01), 2f32.powi(-16));
        assert_eq!(f8_e5m2_to_f32(0x04), 2f32.powi(-14));
        assert_eq!(f8_e5m2_to_f32(0x3C), 1.0);
    }

    #[test]
    fn e5m2_is_the_top_byte_of_f16() {
        // E5M2 shares f16's exponent layout: code c is the f16 with bits c << 8.
        for code in 0..=255u8 {
            let via_f16 = half::f16::from_bits(u16::from(code) << 8).to_f32();
            let got = f8_e5m2_to_f32(code);
            assert!(
                got.to_bits() == via_f16.to_bits() || (got.is_nan() && via_f16.is_nan()),
                "code {code:#04x}: {got} vs {via_f16}"
            );
        }
    }

    #[test]
    fn decodes_every_dtype_both_orders() {
        let le = decode(DType::I16, ByteOrder::Little, &[0x00, 0x80, 0x01, 0x00]);
        assert_eq!(le, vec![-32768.0, 1.0]);
        let be = decode(DType::I16, ByteOrder::Big, &[0x80, 0x00, 0x00, 0x01]);
        assert_eq!(be, vec![-32768.0, 1.0]);
        let f = decode(DType::F32, ByteOrder::Big, &1.5f32.to_be_bytes());
        assert_eq!(f, vec![1.5]);
        let d = decode(DType::F64, ByteOrder::Little, &0.1f64.to_le_bytes());
        assert_eq!(d, vec![0.1f64 as f32]);
        let u = decode(DType::U64, ByteOrder::Little, &u64::MAX.to_le_bytes());
        assert_eq!(u, vec![u64::MAX as f32]);
        let i = decode(DType::I64, ByteOrder::Big, &(-3i64).to_be_bytes());
        assert_eq!(i, vec![-3.0]);
        let u32s = decode(DType::U32, ByteOrder::Little, &u32::MAX.to_le_bytes());
        assert_eq!(u32s, vec![4294967296.0]);
        let h = decode(DType::F16, ByteOrder::Little, &[0x00, 0x3C]);
        assert_eq!(h, vec![1.0]);
        let b = decode(DType::BF16, ByteOrder::Little, &[0x80, 0x3F]);
        assert_eq!(b, vec![1.0]);
        assert_eq!(
            decode(DType::Bool, ByteOrder::Little, &[0, 1, 2]),
            vec![0.0, 1.0, 1.0]
        );
        assert_eq!(decode(DType::I8, ByteOrder::Little, &[0xFF]), vec![-1.0]);
        assert_eq!(decode(DType::U8, ByteOrder::Little, &[0xFF]), vec![255.0]);
        for dt in [DType::I32, DType::U16, DType::F8E4M3, DType::F8E5M2] {
            assert_eq!(decode(dt, ByteOrder::Little, &[]), Vec::<f32>::new());
        }
    }
}
