//! `half`: a float16 / bfloat16 cast and back, round to nearest even, overflow to ±∞,
//! subnormals kept (`tensor.to(torch.float16)`), see [`crate::formats::half_cast`].
//!
//! Stored: `values`, the 16-bit patterns (uint16) in the tensor's shape. Every value of the type
//! is represented; a value is clipped when `|x| > max` (65504 or 3.3895314e38).

use super::explain::StoredSlices;
use super::{decoded, Codec, CodecEntry, CodecFamily, Encoded, Stored};
use crate::error::Result;
use crate::formats::half_cast::HalfType;
use crate::qdq::{PerTensor, QdqKernel, SliceRanges, Slicing};
use crate::tensor::Tensor;

crate::declare_params! {
    /// A float16/bfloat16 cast.
    pub struct HalfArgs {
        /// half type
        dtype: HalfType = HalfType::Float16; choice(), Data;
    }
}

crate::choice_enum! {
    /// The dtype a dequantizer returns (bitsandbytes' `QuantState.dtype`, GPTQ/AWQ's scales'
    /// dtype): its float32 result rounded once to it, to nearest even.
    pub enum OutDType {
        Float32 = "float32",
        Bfloat16 = "bfloat16",
        Float16 = "float16",
    }
}

impl OutDType {
    /// `x` rounded to this dtype (and back to float32).
    #[inline(always)]
    pub fn round(self, x: f32) -> f32 {
        match self {
            OutDType::Float32 => x,
            OutDType::Bfloat16 => HalfType::Bfloat16.round_trip(x),
            OutDType::Float16 => HalfType::Float16.round_trip(x),
        }
    }

    /// Bits of one value.
    pub fn bits(self) -> u32 {
        match self {
            OutDType::Float32 => 32,
            _ => 16,
        }
    }
}

/// The codec family `half`.
pub struct HalfFamily;

impl CodecFamily for HalfFamily {
    type Args = HalfArgs;
    fn build(a: &HalfArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(Half(a.dtype)))
    }
}

/// The registry entry.
pub fn entry() -> CodecEntry {
    CodecEntry::of::<HalfFamily>("half", "float16 / bfloat16 cast, round to nearest even")
        .drawn(1, "float16 / bfloat16")
}

/// A configured half codec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Half(pub HalfType);

impl Half {
    fn range(&self) -> Option<(f64, f64)> {
        let max = self.0.max() as f64;
        Some((-max, max))
    }
}

impl Codec for Half {
    fn label(&self) -> String {
        self.0.name().to_string()
    }

    fn bits_per_value(&self, _: &[usize]) -> f64 {
        16.0
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let bits: Vec<u16> = match self.0 {
            HalfType::Float16 => t
                .data
                .iter()
                .map(|&x| half::f16::from_f32(x).to_bits())
                .collect(),
            HalfType::Bfloat16 => t
                .data
                .iter()
                .map(|&x| half::bf16::from_f32(x).to_bits())
                .collect(),
        };
        Ok(Encoded::new(&t.shape).with("values", t.shape.clone(), Stored::U16(bits)))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        e.part_of_len("values", e.numel()?)?;
        let bits = e.u16s("values")?;
        let values = match self.0 {
            HalfType::Float16 => bits
                .iter()
                .map(|&b| half::f16::from_bits(b).to_f32())
                .collect(),
            HalfType::Bfloat16 => bits
                .iter()
                .map(|&b| half::bf16::from_bits(b).to_f32())
                .collect(),
        };
        decoded(&e.shape, values)
    }

    fn ranges(&self, _: &Encoded) -> Result<SliceRanges> {
        Ok(SliceRanges::new(Slicing::Tensor, [self.range()]))
    }

    fn stored_slices(&self, _e: &Encoded) -> Result<Option<StoredSlices>> {
        let rule = format!(
            "no scale: each value is cast to {} (round to nearest even, overflow to ±∞, \
             subnormals kept) and stored as its 16-bit pattern",
            self.0.name()
        );
        Ok(Some(StoredSlices::new(
            Slicing::Tensor,
            1,
            rule,
            "torch.Tensor.to(torch.float16 / torch.bfloat16) (PyTorch 2.x, c10/util/Half.h, BFloat16.h)",
        )))
    }

    fn qdq_kernel(&self, _clean: &Tensor) -> Option<Result<Box<dyn QdqKernel>>> {
        let half = self.0;
        Some(Ok(Box::new(PerTensor::with_range(
            self.range(),
            move |x| half.round_trip(x),
        ))))
    }
}
