//! The code books of bitsandbytes 0.50.2 (functional.py): NF4, FP4 and the 8-bit dynamic map,
//! in float32 as the quantizers see them.
//!
//! * NF4 (`get_4bit_type("nf4")`, l. 788): 16 quantiles of N(0, 1) normalised to [−1, 1], sorted,
//!   with an exact 0 at index 7.
//! * FP4 (`get_4bit_type("fp4")`, l. 823): `[0, 0.0625, 8, 12, 4, 6, 2, 3]` and their negatives
//!   (nibble 8 is Python's `-0`, an integer, i.e. +0), divided by 12 in float32. The CPU
//!   dequantization kernel's table (`fp4_lut`, csrc/cpu_ops.cpp) has `−0.0` at nibble 8, so a
//!   value coded 8 comes back as `−0.0` (see [`fp4_dequant_table`]).
//! * The 8-bit dynamic map (`create_dynamic_map(signed=True, max_exponent_bits=7,
//!   total_bits=8)`, l. 296): for `i = 0…6`, `2^i + 1` points `torch.linspace(0.1, 1)` (float32,
//!   see [`torch_linspace_f32`]),
//!   the midpoints of neighbours `(b[k] + b[k+1])/2`, scaled by `10^(i−6)` (a float32 multiply)
//!   and mirrored; plus 0 and 1.0; sorted. 256 values from −0.99297 to 1.0 — asymmetric: its
//!   smallest value is not −1.

use crate::kernels::torch::linspace_fma;

/// NF4 as written in functional.py (Python floats), index = nibble.
const NF4_F64: [f64; 16] = [
    -1.0,
    -0.6961928009986877,
    -0.5250730514526367,
    -0.39491748809814453,
    -0.28444138169288635,
    -0.18477343022823334,
    -0.09105003625154495,
    0.0,
    0.07958029955625534,
    0.16093020141124725,
    0.24611230194568634,
    0.33791524171829224,
    0.44070982933044434,
    0.5626170039176941,
    0.7229568362236023,
    1.0,
];

/// NF4 in float32 (`torch.tensor(data)` rounds each Python float), index = nibble.
pub fn nf4() -> [f32; 16] {
    NF4_F64.map(|v| v as f32)
}

/// The FP4 values before normalisation, index = nibble.
const FP4_RAW: [f32; 16] = [
    0.0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0, 0.0, -0.0625, -8.0, -12.0, -4.0, -6.0, -2.0, -3.0,
];

/// FP4 as the quantizer sees it (`data.div_(data.abs().max())`), index = nibble.
pub fn fp4() -> [f32; 16] {
    FP4_RAW.map(|v| v / 12.0)
}

/// FP4 as the CPU dequantization kernel reads it: [`fp4`] with `−0.0` at nibble 8.
pub fn fp4_dequant_table() -> [f32; 16] {
    let mut t = fp4();
    t[8] = -0.0;
    t
}

/// `torch.argsort(code)` as bitsandbytes got it: the ascending order, equal values (FP4's two
/// zeros, nibbles 0 and 8) in index order — as a stable sort gives.
pub fn sort_order(code: &[f32; 16]) -> [usize; 16] {
    let mut order: [usize; 16] = std::array::from_fn(|i| i);
    order.sort_by(|&a, &b| {
        code[a]
            .partial_cmp(&code[b])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    order
}

/// `torch.linspace(start, end, steps)` in float32 as torch 2.15's CPU kernel computed it for
/// bitsandbytes: `start + step·i` (first half) or `end − step·(steps − 1 − i)` (second half)
/// with the multiply-add **fused** (one rounding), as the AVX2 build contracts it:
/// [`linspace_fma`]. (Separate roundings, or the vector path's `base + k·step`, miss 22–46 of
/// the 256 dynamic-map values.)
pub fn torch_linspace_f32(start: f32, end: f32, steps: usize) -> Vec<f32> {
    linspace_fma(start, end, steps)
}

/// `create_dynamic_map()` (signed, 7 exponent bits, 8 bits): the default 8-bit code book.
pub fn dynamic_map() -> [f32; 256] {
    let mut data: Vec<f32> = Vec::with_capacity(256);
    // `10 ** (i − 6)` as Python evaluates it, then rounded to float32 by the multiply.
    const POWERS: [f64; 7] = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0];
    for (i, &power) in POWERS.iter().enumerate() {
        let items = (1usize << i) + 1;
        let boundaries = torch_linspace_f32(0.1, 1.0, items);
        let factor = power as f32;
        let means: Vec<f32> = boundaries.windows(2).map(|w| (w[0] + w[1]) / 2.0).collect();
        data.extend(means.iter().map(|&m| factor * m));
        data.extend(means.iter().map(|&m| -factor * m));
    }
    data.push(0.0);
    data.push(1.0);
    data.sort_by(f32::total_cmp);
    let mut out = [0.0f32; 256];
    out.copy_from_slice(&data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp4_order_keeps_the_two_zeros_in_index_order() {
        assert_eq!(
            sort_order(&fp4()),
            [11, 10, 13, 12, 15, 14, 9, 0, 8, 1, 6, 7, 4, 5, 2, 3]
        );
        assert_eq!(sort_order(&nf4()), std::array::from_fn(|i| i));
    }

    #[test]
    fn dynamic_map_spans_minus_0_993_to_one() {
        let m = dynamic_map();
        assert_eq!(m[255], 1.0);
        assert_eq!(m[127], 0.0);
        assert!((m[0] + 0.99297).abs() < 1e-5, "{}", m[0]);
        assert!(m.windows(2).all(|w| w[0] < w[1]));
    }
}
