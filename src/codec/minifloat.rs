//! `minifloat`: fp8/fp6/fp4 elements with a float32 amax scale per tensor or channel.
//!
//! `s = amax / max_element` (float32 epsilon for a zero slice); a value is stored as the
//! element code of `x / s` (round to nearest even, saturating to `±max_element`, see
//! [`ElementFormat::quantize`]) and decoded as `element(code) · s`; its slice represents
//! `[−max_element·s, max_element·s]`.
//!
//! Stored: `codes` in the tensor's shape, one element's bit pattern per byte (fp8 e4m3fn /
//! e5m2 as `torch.float8_*` stores them, fp6 and fp4 in the low bits), and `scale` (float32),
//! one per slice.

use super::explain::StoredSlices;
use super::int::sharing_label;
use super::sharing::symmetric_ranges;
use super::{decoded, normalise_axis, Codec, CodecEntry, CodecFamily, Encoded, Sharing, Stored};
use crate::error::{Error, Result};
use crate::formats::ElementFormat;
use crate::observers::quark::qparams::CALCULATE_QPARAMS;
use crate::qdq::{QdqKernel, SliceRanges};
use crate::tensor::Tensor;

crate::choice_enum! {
    /// How a small-float format shares its scales.
    pub enum ElementSharing {
        PerTensor = "per_tensor",
        PerChannel = "per_channel",
    }
}

crate::declare_params! {
    /// fp8/fp6/fp4 elements with a float32 amax scale.
    pub struct ElementArgs {
        /// element format
        element: ElementFormat = ElementFormat::Fp8E4m3; choice(), Data;
        /// how scales are shared
        granularity: ElementSharing = ElementSharing::PerTensor; choice(), Data;
        /// channel axis (per_channel)
        axis: i64 = 0; int(-8, 7), Data;
    }
}

/// The codec family `minifloat`.
pub struct MinifloatFamily;

impl CodecFamily for MinifloatFamily {
    type Args = ElementArgs;
    fn build(a: &ElementArgs, shape: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        let sharing = match a.granularity {
            ElementSharing::PerTensor => Sharing::PerTensor,
            ElementSharing::PerChannel => Sharing::PerChannel {
                axis: normalise_axis("axis", a.axis, shape)?,
            },
        };
        Ok(Box::new(Minifloat {
            element: a.element,
            sharing,
        }))
    }
}

/// The registry entry.
pub fn entry() -> CodecEntry {
    CodecEntry::of::<MinifloatFamily>(
        "minifloat",
        "fp8/fp6/fp4 elements with a float32 amax scale",
    )
    .drawn(2, "minifloat")
}

/// A configured small-float codec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Minifloat {
    pub element: ElementFormat,
    pub sharing: Sharing,
}

impl Minifloat {
    fn scales(&self, t: &Tensor) -> Result<Vec<f32>> {
        let max = self.element.max();
        Ok(self
            .sharing
            .ranges(t)?
            .into_iter()
            .map(|(lo, hi)| {
                let s = lo.abs().max(hi.abs()) / max;
                if s > 0.0 && s.is_finite() {
                    s
                } else {
                    f32::EPSILON
                }
            })
            .collect())
    }

    fn slice_ranges(&self, scales: &[f32]) -> Vec<Option<(f64, f64)>> {
        symmetric_ranges(self.element.max(), scales)
    }

    fn stored_scales<'a>(&self, e: &'a Encoded) -> Result<&'a [f32]> {
        e.part_of_len("scale", self.sharing.count(&e.shape))?;
        e.f32s("scale")
    }
}

impl Codec for Minifloat {
    fn label(&self) -> String {
        format!("{}{}", self.element.name(), sharing_label(self.sharing))
    }

    fn bits_per_value(&self, shape: &[usize]) -> f64 {
        let n = shape.iter().product::<usize>().max(1) as f64;
        self.element.bits() as f64 + 32.0 * self.sharing.count(shape) as f64 / n
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let scales = self.scales(t)?;
        let element = self.element;
        let mut unencodable = 0usize;
        let codes = self
            .sharing
            .map(t, &scales, |x, &s| match element.encode(x / s) {
                Some(c) => c as f32,
                None => {
                    unencodable += 1;
                    0.0
                }
            })?;
        if unencodable > 0 {
            return Err(Error::input(format!(
                "{unencodable} values have no {} code (NaN)",
                element.name()
            )));
        }
        Ok(Encoded::new(&t.shape)
            .with(
                "codes",
                t.shape.clone(),
                Stored::U8(codes.iter().map(|&c| c as u8).collect()),
            )
            .with_flat("scale", Stored::F32(scales)))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let scales = self.stored_scales(e)?;
        e.part_of_len("codes", e.numel()?)?;
        let codes = Tensor::new(
            e.shape.clone(),
            e.u8s("codes")?.iter().map(|&c| c as f32).collect(),
        )?;
        let element = self.element;
        let values = self
            .sharing
            .map(&codes, scales, |c, &s| element.decode(c as u8) * s)?;
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let scales = self.stored_scales(e)?;
        Ok(SliceRanges::new(
            self.sharing.slicing(&e.shape)?,
            self.slice_ranges(scales),
        ))
    }

    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let scales = self.stored_scales(e)?;
        let rule = format!(
            "s = max(|min|, |max|) / {max} ({name}'s largest value; float32 ε for a zero slice); \
             code = {name}(x / s), round to nearest even, saturating; x̂ = {name}(code)·s",
            max = crate::plot::fmt_num(self.element.max() as f64),
            name = self.element.name()
        );
        Ok(Some(
            StoredSlices::new(
                self.sharing.slicing(&e.shape)?,
                scales.len(),
                rule,
                CALCULATE_QPARAMS,
            )
            .column("scale", scales.iter().map(|&s| s as f64)),
        ))
    }

    fn qdq_kernel(&self, clean: &Tensor) -> Option<Result<Box<dyn QdqKernel>>> {
        let rounding = self.element.rounding();
        Some(self.scales(clean).and_then(|scales| {
            let ranges = self.slice_ranges(&scales);
            self.sharing
                .kernel(&clean.shape, scales, ranges, move |x, &s| {
                    rounding.quantize(x / s) * s
                })
        }))
    }
}
