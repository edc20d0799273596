//! `int`: `bits`-bit integers with min–max scales, Quark's formulas, rounding half to even.
//!
//! For a slice (the tensor, a channel or a group) with range `min⁻ = min(min, 0)`,
//! `max⁺ = max(max, 0)` and codes `[qmin, qmax]`:
//! * signed (symmetric): `s = max(|min⁻|, max⁺) / ((qmax − qmin)/2)`, `zp = 0`;
//! * unsigned (affine): `s = (max⁺ − min⁻)/(qmax − qmin)`,
//!   `zp = clamp(qmin − round(min⁻/s), qmin, qmax)`;
//!
//! `s` is at least float32's epsilon. A value is stored as
//! `q = clamp(round_half_even(x · (1/s)) + zp, qmin, qmax)` and decoded as `(q − zp)·s`; its
//! slice represents `[(qmin − zp)·s, (qmax − zp)·s]`.
//!
//! Stored: `codes` in the tensor's shape (int8/uint8 up to 8 bits, int16/uint16 above, one code
//! per element), `scale` (float32) and `zero_point` (int32), one per slice.

use super::explain::StoredSlices;
use super::{decoded, normalise_axis, Codec, CodecEntry, CodecFamily, Encoded, Sharing, Stored};
use crate::error::Result;
use crate::observers::quark::qparams::CALCULATE_QPARAMS;
use crate::qdq::{QdqKernel, SliceRanges};
use crate::quant::round_half_even;
use crate::tensor::Tensor;

crate::choice_enum! {
    /// How an integer format shares its scales.
    pub enum IntSharing {
        PerTensor = "per_tensor",
        PerChannel = "per_channel",
        PerGroup = "per_group",
    }
}

crate::declare_params! {
    /// Integers with min-max scales.
    pub struct IntArgs {
        /// bit width
        bits: i64 = 8; int(2, 16), Data;
        /// signed symmetric (true) or unsigned affine (false)
        signed: bool = true; boolean(), Data;
        /// how scales are shared
        granularity: IntSharing = IntSharing::PerTensor; choice(), Data;
        /// channel axis (per_channel)
        axis: i64 = 0; int(-8, 7), Data;
        /// elements per group (per_group)
        group_size: i64 = 32; int(1, 4096), Data;
        /// axis along which groups run (per_group)
        group_axis: i64 = -1; int(-8, 7), Data;
    }
}

/// A configured integer codec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Int {
    pub bits: u32,
    pub signed: bool,
    pub sharing: Sharing,
}

/// The codec family `int`.
pub struct IntFamily;

impl CodecFamily for IntFamily {
    type Args = IntArgs;
    fn build(a: &IntArgs, shape: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        let sharing = match a.granularity {
            IntSharing::PerTensor => Sharing::PerTensor,
            IntSharing::PerChannel => Sharing::PerChannel {
                axis: normalise_axis("axis", a.axis, shape)?,
            },
            IntSharing::PerGroup => Sharing::PerGroup {
                axis: normalise_axis("group_axis", a.group_axis, shape)?,
                size: a.group_size as usize,
            },
        };
        Ok(Box::new(Int {
            bits: a.bits as u32,
            signed: a.signed,
            sharing,
        }))
    }
}

/// The registry entry.
pub fn entry() -> CodecEntry {
    CodecEntry::of::<IntFamily>(
        "int",
        "integers with min-max scales (Quark's formula), half-to-even rounding",
    )
    .drawn(0, "integer")
}

/// The label's suffix for a sharing: ` per channel`, ` per group of 32`.
pub(super) fn sharing_label(s: Sharing) -> String {
    match s {
        Sharing::PerTensor => String::new(),
        Sharing::PerChannel { .. } => " per channel".to_string(),
        Sharing::PerGroup { size, .. } => format!(" per group of {size}"),
    }
}

impl Int {
    /// `(qmin, qmax)`.
    fn code_range(&self) -> (f32, f32) {
        if self.signed {
            (
                -((1i64 << (self.bits - 1)) as f32),
                ((1i64 << (self.bits - 1)) - 1) as f32,
            )
        } else {
            (0.0, ((1i64 << self.bits) - 1) as f32)
        }
    }

    /// `(scale, zero point)` of every slice of `t`.
    fn qparams(&self, t: &Tensor) -> Result<Vec<(f32, f32)>> {
        let (qmin, qmax) = self.code_range();
        Ok(self
            .sharing
            .ranges(t)?
            .into_iter()
            .map(|(lo, hi)| slice_qparams(lo, hi, qmin, qmax, self.signed))
            .collect())
    }

    /// The representable range of each slice.
    fn slice_ranges(&self, qparams: &[(f32, f32)]) -> Vec<Option<(f64, f64)>> {
        let (qmin, qmax) = self.code_range();
        qparams
            .iter()
            .map(|&(s, zp)| {
                let (s, zp) = (s as f64, zp as f64);
                Some(((qmin as f64 - zp) * s, (qmax as f64 - zp) * s))
            })
            .collect()
    }

    /// The stored code of `x` (an integer in `[qmin, qmax]`).
    #[inline(always)]
    fn code(x: f32, (s, zp): (f32, f32), qmin: f32, qmax: f32) -> f32 {
        (round_half_even(x * (1.0 / s)) + zp).clamp(qmin, qmax)
    }

    /// The stored parameters read back: `(scale, zero point)` per slice.
    fn stored_qparams(&self, e: &Encoded) -> Result<Vec<(f32, f32)>> {
        let slices = self.sharing.count(&e.shape);
        e.part_of_len("scale", slices)?;
        e.part_of_len("zero_point", slices)?;
        Ok(e.f32s("scale")?
            .iter()
            .zip(e.i32s("zero_point")?)
            .map(|(&s, &zp)| (s, zp as f32))
            .collect())
    }
}

/// Quark's integer qparams for a slice with range `lo..hi` (returned as `(scale, zero_point)`).
fn slice_qparams(lo: f32, hi: f32, qmin: f32, qmax: f32, symmetric: bool) -> (f32, f32) {
    let (min_neg, max_pos) = (lo.min(0.0), hi.max(0.0));
    if symmetric {
        let amax = (-min_neg).max(max_pos);
        ((amax / ((qmax - qmin) / 2.0)).max(f32::EPSILON), 0.0)
    } else {
        let s = ((max_pos - min_neg) / (qmax - qmin)).max(f32::EPSILON);
        (s, (qmin - round_half_even(min_neg / s)).clamp(qmin, qmax))
    }
}

impl Codec for Int {
    fn label(&self) -> String {
        format!(
            "{}int{}{}",
            if self.signed { "" } else { "u" },
            self.bits,
            sharing_label(self.sharing)
        )
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let n = shape.iter().product::<usize>().max(1) as f64;
        let per_slice = if self.signed { 32.0 } else { 64.0 };
        self.bits as f64 + per_slice * self.sharing.count(shape) as f64 / n
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let (qmin, qmax) = self.code_range();
        let qparams = self.qparams(t)?;
        let codes = self
            .sharing
            .map(t, &qparams, |x, &p| Self::code(x, p, qmin, qmax))?;
        let codes = match (self.signed, self.bits <= 8) {
            (true, true) => Stored::I8(codes.iter().map(|&q| q as i8).collect()),
            (false, true) => Stored::U8(codes.iter().map(|&q| q as u8).collect()),
            (true, false) => Stored::I16(codes.iter().map(|&q| q as i16).collect()),
            (false, false) => Stored::U16(codes.iter().map(|&q| q as u16).collect()),
        };
        let (scale, zero_point): (Vec<f32>, Vec<i32>) =
            qparams.iter().map(|&(s, zp)| (s, zp as i32)).unzip();
        Ok(Encoded::new(&t.shape)
            .with("codes", t.shape.clone(), codes)
            .with_flat("scale", Stored::F32(scale))
            .with_flat("zero_point", Stored::I32(zero_point)))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let qparams = self.stored_qparams(e)?;
        let codes = e.integer_codes("codes", e.numel()?)?;
        let codes = Tensor::new(e.shape.clone(), codes)?;
        let values = self
            .sharing
            .map(&codes, &qparams, |q, &(s, zp)| (q - zp) * s)?;
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let qparams = self.stored_qparams(e)?;
        Ok(SliceRanges::new(
            self.sharing.slicing(&e.shape)?,
            self.slice_ranges(&qparams),
        ))
    }

    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let qparams = self.stored_qparams(e)?;
        let (qmin, qmax) = self.code_range();
        let scale = if self.signed {
            "s = max(|min⁻|, max⁺) / ((qmax − qmin)/2), zp = 0"
        } else {
            "s = (max⁺ − min⁻) / (qmax − qmin), zp = clamp(qmin − round_half_even(min⁻/s), qmin, qmax)"
        };
        let rule = format!(
            "{scale}, with min⁻ = min(min, 0), max⁺ = max(max, 0), qmin = {qmin}, qmax = {qmax}, \
             s at least float32 ε; q = clamp(round_half_even(x·(1/s)) + zp, qmin, qmax); x̂ = (q − zp)·s"
        );
        Ok(Some(
            StoredSlices::new(
                self.sharing.slicing(&e.shape)?,
                qparams.len(),
                rule,
                CALCULATE_QPARAMS,
            )
            .column("scale", qparams.iter().map(|&(s, _)| s as f64))
            .column("zero_point", qparams.iter().map(|&(_, zp)| zp as f64)),
        ))
    }

    fn qdq_kernel(&self, clean: &Tensor) -> Option<Result<Box<dyn QdqKernel>>> {
        let (qmin, qmax) = self.code_range();
        Some(self.qparams(clean).and_then(|qparams| {
            let ranges = self.slice_ranges(&qparams);
            self.sharing
                .kernel(&clean.shape, qparams, ranges, move |x, &p| {
                    let (s, zp) = p;
                    (Self::code(x, p, qmin, qmax) - zp) * s
                })
        }))
    }
}
