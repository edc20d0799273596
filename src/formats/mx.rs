//! OCP MX (microscaling) block formats: blocks of (by default) 32 elements along an axis share
//! one E8M0 power-of-two scale; each element is an fp8/fp6/fp4 value or, for MXINT8, an 8-bit
//! two's-complement fixed-point number with 6 fractional bits.
//!
//! Quantize–dequantize of an element `x` with shared scale `s`:
//! * float elements: `q(x / s) · s` where `q` is [`ElementFormat::quantize`] (round to nearest
//!   even, saturate) — `x / s` is a float32 division, as in the reference kernels;
//! * MXINT8: step `t = s / 64` (floored at the smallest normal float32), `clamp(round_half_even(x · (1/t)),
//!   −127, 127) · t` — the symmetric int8 range, so the largest magnitude is `127/64 · s`.
//!
//! Scales come from [`super::e8m0::shared_scale`] on each block's `amax`; a scale of 0
//! (`floor`/`ceil` on an all-zero block) is replaced by the float32 epsilon.

use super::blocks::BlockLayout;
use super::e8m0::{shared_scale, ScaleRounding};
use super::ElementFormat;
use crate::derivation::{self, Step};
use crate::error::{Error, Result};
use crate::quant::round_half_even;
use serde::Serialize;

/// Default MX block size.
pub const BLOCK_SIZE: usize = 32;

/// The element type of an MX format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MxElement {
    /// MXFP8/MXFP6/MXFP4.
    Float(ElementFormat),
    /// MXINT8.
    Int8,
}

impl MxElement {
    /// Every MX element type.
    pub const ALL: [MxElement; 6] = [
        MxElement::Float(ElementFormat::Fp8E4m3),
        MxElement::Float(ElementFormat::Fp8E5m2),
        MxElement::Float(ElementFormat::Fp6E2m3),
        MxElement::Float(ElementFormat::Fp6E3m2),
        MxElement::Float(ElementFormat::Fp4E2m1),
        MxElement::Int8,
    ];

    /// Name of the element type (`fp8_e4m3`, …, `int8`).
    pub fn name(self) -> &'static str {
        match self {
            MxElement::Float(f) => f.name(),
            MxElement::Int8 => "int8",
        }
    }

    /// Name of the MX format (`mxfp8_e4m3`, `mxfp4_e2m1`, `mxint8`, …).
    pub fn format_name(self) -> String {
        format!("mx{}", self.name())
    }

    /// Parse an element type name (see [`ElementFormat::from_name`], plus `int8`).
    pub fn from_name(name: &str) -> Option<Self> {
        if name.eq_ignore_ascii_case("int8") {
            Some(MxElement::Int8)
        } else {
            ElementFormat::from_name(name).map(MxElement::Float)
        }
    }

    /// Mantissa bits used by the `even` scale rounding (int8 counts as 8, as in Quark).
    pub fn mantissa_bits(self) -> u32 {
        match self {
            MxElement::Float(f) => f.mantissa_bits(),
            MxElement::Int8 => 8,
        }
    }

    /// `emax` subtracted from the block exponent (int8: 0).
    pub fn emax(self) -> i32 {
        match self {
            MxElement::Float(f) => f.emax(),
            MxElement::Int8 => 0,
        }
    }

    /// Largest element magnitude relative to the shared scale.
    pub fn max(self) -> f32 {
        match self {
            MxElement::Float(f) => f.max(),
            MxElement::Int8 => 127.0 / 64.0,
        }
    }

    /// Quantize–dequantize `x` with shared scale `scale`.
    #[inline]
    pub fn fake_quantize(self, x: f32, scale: f32) -> f32 {
        match self {
            MxElement::Float(f) => f.quantize(x / scale) * scale,
            MxElement::Int8 => Self::int8_code(x, scale) * Self::int8_step(scale),
        }
    }

    /// The MXINT8 step of a block with shared scale `scale`: `scale/64`, at least the smallest
    /// normal float32.
    #[inline]
    pub fn int8_step(scale: f32) -> f32 {
        super::at_least_min_normal(scale / 64.0)
    }

    /// The MXINT8 code of `x`: `clamp(round_half_even(x · (1/step)), −127, 127)`.
    #[inline]
    pub fn int8_code(x: f32, scale: f32) -> f32 {
        round_half_even(x * (1.0f32 / Self::int8_step(scale))).clamp(-127.0, 127.0)
    }

    /// The shared scale of a block with `amax` (0 replaced by the float32 epsilon).
    #[inline]
    pub fn block_scale(self, amax: f32, mode: ScaleRounding) -> f32 {
        let s = shared_scale(amax, self.mantissa_bits(), self.emax(), mode);
        let scale = if s == 0.0 { f32::EPSILON } else { s };
        derivation::record(|| self.scale_step(amax, mode, scale));
        scale
    }

    /// The derivation step of [`MxElement::block_scale`].
    fn scale_step(self, amax: f32, mode: ScaleRounding, scale: f32) -> Step {
        let rule = match mode {
            ScaleRounding::Even => format!(
                "even: amax rounded to {} mantissa bits (add 2^(22 − m) to its bits, keep sign and exponent), then s = 2^(exponent − emax)",
                self.mantissa_bits()
            ),
            ScaleRounding::Floor => "floor: s = 2^(⌊log2 amax⌋ − emax)".to_string(),
            ScaleRounding::Ceil => "ceil: s = 2^(⌈log2 amax⌉ − emax)".to_string(),
        };
        Step::new(
            "Shared scale",
            format!("{rule}, the exponent clamped to −127…127; a scale of 0 becomes the float32 epsilon"),
            "quark/torch/kernel/hw_emulation/hw_emulation_interface.py (amd-quark 0.13)",
        )
        .value("amax", amax)
        .value("m", self.mantissa_bits() as i64)
        .value("emax", self.emax() as i64)
        .value("scale", scale)
    }
}

/// Shared scales of every block of `data` laid out by `layout`.
pub fn block_scales(
    layout: &BlockLayout,
    data: &[f32],
    element: MxElement,
    mode: ScaleRounding,
) -> Vec<f32> {
    layout
        .block_amax(data)
        .into_iter()
        .map(|a| element.block_scale(a, mode))
        .collect()
}

/// Quantize–dequantize `data` with one scale per block.
pub fn fake_quantize_with_scales(
    layout: &BlockLayout,
    data: &[f32],
    scales: &[f32],
    element: MxElement,
) -> Result<Vec<f32>> {
    if scales.len() != layout.num_blocks() {
        return Err(Error::input(format!(
            "{} scales for {} blocks",
            scales.len(),
            layout.num_blocks()
        )));
    }
    Ok(layout.map(data, |b, x| element.fake_quantize(x, scales[b])))
}

/// MX quantize–dequantize of a tensor (`data` in C order with `shape`): blocks of `block`
/// along `axis`, scales computed from the data itself with `mode`.
pub fn fake_quantize(
    data: &[f32],
    shape: &[usize],
    axis: i64,
    block: usize,
    element: MxElement,
    mode: ScaleRounding,
) -> Result<Vec<f32>> {
    let layout = BlockLayout::new(shape, axis, block)?;
    let scales = block_scales(&layout, data, element, mode);
    fake_quantize_with_scales(&layout, data, &scales, element)
}

/// `MxElement` as a choice parameter: the canonical names are offered, aliases accepted.
impl crate::params::Choice for MxElement {
    const OPTIONS: &'static [&'static str] = &[
        "fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1", "int8",
    ];
    fn name(self) -> &'static str {
        MxElement::name(self)
    }
    fn from_name(text: &str) -> Option<Self> {
        MxElement::from_name(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::pow2;

    #[test]
    fn mxfp4_block_quantizes_against_its_shared_scale() {
        // amax 5.0 → even scale 2^(2−2) = 1: elements land on the fp4 grid.
        let x = [5.0f32, -0.3, 1.25, 2.6, 0.0, -6.5, 0.74, 3.0];
        let fp4 = MxElement::Float(ElementFormat::Fp4E2m1);
        let y = fake_quantize(&x, &[8], 0, 8, fp4, ScaleRounding::Even).unwrap();
        assert_eq!(y, vec![4.0, -0.5, 1.0, 3.0, 0.0, -6.0, 0.5, 3.0]);
        // A block of 1.9 with ceil: scale 2^(1−2) = 0.5 → 1.9/0.5 = 3.8 → 4 → 2.0.
        let y = fake_quantize(&[1.9], &[1], 0, 32, fp4, ScaleRounding::Ceil).unwrap();
        assert_eq!(y, vec![2.0]);
        // floor on a zero block: scale 0 → epsilon, values stay 0.
        let y = fake_quantize(&[0.0, 0.0], &[2], 0, 32, fp4, ScaleRounding::Floor).unwrap();
        assert_eq!(y, vec![0.0, 0.0]);
    }

    #[test]
    fn mxint8_has_six_fraction_bits_and_a_symmetric_range() {
        let el = MxElement::Int8;
        // amax 1.0 → scale 1, step 1/64.
        assert_eq!(el.block_scale(1.0, ScaleRounding::Even), 1.0);
        assert_eq!(el.fake_quantize(0.5 + 1.0 / 128.0, 1.0), 0.5);
        assert_eq!(el.fake_quantize(1.99, 1.0), 127.0 / 64.0);
        assert_eq!(el.fake_quantize(-3.0, 1.0), -127.0 / 64.0);
        // Tiny scales are floored at the smallest normal float.
        assert_eq!(el.fake_quantize(pow2(-126), pow2(-127)), pow2(-126));
        assert_eq!(MxElement::from_name("int8"), Some(MxElement::Int8));
        assert_eq!(MxElement::Int8.format_name(), "mxint8");
        assert_eq!(
            MxElement::Float(ElementFormat::Fp8E4m3).format_name(),
            "mxfp8_e4m3"
        );
    }

    #[test]
    fn scales_follow_the_layout() {
        let layout = BlockLayout::new(&[2, 4], 1, 2).unwrap();
        let data = [1.0f32, 3.0, 0.5, 0.25, 8.0, 8.0, 0.0, 0.0];
        let el = MxElement::Float(ElementFormat::Fp8E4m3);
        let s = block_scales(&layout, &data, el, ScaleRounding::Floor);
        assert_eq!(
            s,
            vec![pow2(1 - 8), pow2(-1 - 8), pow2(3 - 8), f32::EPSILON]
        );
        assert!(fake_quantize_with_scales(&layout, &data, &s[..3], el).is_err());
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    fn any_element() -> impl Strategy<Value = MxElement> {
        prop::sample::select(MxElement::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn fixed_scale_quantization_is_idempotent_and_monotone(
            el in any_element(),
            k in -20i32..20,
            a in -1e4f32..1e4,
            b in -1e4f32..1e4,
        ) {
            let s = crate::formats::pow2(k);
            let qa = el.fake_quantize(a, s);
            prop_assert_eq!(el.fake_quantize(qa, s), qa);
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(el.fake_quantize(lo, s) <= el.fake_quantize(hi, s));
            prop_assert!(qa.abs() <= el.max() * s);
        }

        #[test]
        fn block_amax_never_exceeds_the_largest_element(
            el in any_element(),
            data in prop::collection::vec(-100f32..100.0, 1..80),
            mode in prop::sample::select(ScaleRounding::ALL.to_vec()),
        ) {
            let n = data.len();
            let y = fake_quantize(&data, &[n], 0, 32, el, mode).unwrap();
            prop_assert_eq!(y.len(), n);
            let amax = data.iter().fold(0f32, |m, v| m.max(v.abs()));
            // Rounding can carry up to the next code point, never past 2·amax.
            for v in y {
                prop_assert!(v.abs() <= 2.0 * amax.max(f32::MIN_POSITIVE));
            }
        }
    }
}
