//! `bfp`: block floating point as AMD Quark's `bfp16` (see [`crate::formats::bfp`]): blocks of
//! `block_size` along `axis` share a step `s = 2^(⌊log2 amax⌋ − (m − 2))` (after the block
//! adjustment), and store `m`-bit mantissas `clamp(round_half_even(x · (1/s)), −2^(m−1),
//! 2^(m−1) − 1)`, decoded as `mantissa · s` (`s` at least the smallest normal float32). A block
//! represents `[−2^(m−1)·s, (2^(m−1) − 1)·s]`.
//!
//! Stored: `mantissas` in the tensor's shape (int8 up to 8 bits, int16 above) and `scales`, the
//! step of each block (float32: a power of two, or float32's epsilon for a zero block), blocks
//! in the order of [`BlockLayout`].

use super::explain::StoredSlices;
use super::{decoded, Codec, CodecEntry, CodecFamily, Encoded, Stored};
use crate::error::{Error, Result};
use crate::formats::bfp::{self, step, Bfp};
use crate::formats::blocks::BlockLayout;
use crate::qdq::{PerBlock, QdqKernel, SliceRanges, Slicing};
use crate::tensor::Tensor;

crate::declare_params! {
    /// Block floating point.
    pub struct BfpArgs {
        /// mantissa bits, sign included
        mantissa_bits: i64 = 8; int(2, 16), Data;
        /// elements per shared exponent
        block_size: i64 = bfp::BFP16_BLOCK as i64; int(2, 1024), Data;
        /// axis along which blocks run
        axis: i64 = -1; int(-8, 7), Data;
    }
}

/// The codec family `bfp`.
pub struct BfpFamily;

impl CodecFamily for BfpFamily {
    type Args = BfpArgs;
    fn build(a: &BfpArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(BlockFloat {
            format: Bfp {
                mantissa_bits: a.mantissa_bits as u32,
            },
            block: a.block_size as usize,
            axis: a.axis,
        }))
    }
}

/// The registry entry.
pub fn entry() -> CodecEntry {
    CodecEntry::of::<BfpFamily>(
        "bfp",
        "block floating point: shared 8-bit exponent, signed mantissas, block adjustment",
    )
    .drawn(4, "block floating point")
}

/// A configured BFP codec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockFloat {
    pub format: Bfp,
    pub block: usize,
    pub axis: i64,
}

impl BlockFloat {
    fn layout(&self, shape: &[usize]) -> Result<BlockLayout> {
        BlockLayout::new(shape, self.axis, self.block)
    }

    /// The step of every block of `data`, after the block adjustment.
    fn scales(&self, layout: &BlockLayout, data: &[f32]) -> Vec<f32> {
        self.format
            .adjusted_amax(layout, data)
            .into_iter()
            .map(|a| self.format.scale(a))
            .collect()
    }

    fn slice_ranges(&self, scales: &[f32]) -> Vec<Option<(f64, f64)>> {
        let (lo, hi) = (self.format.qmin() as f64, self.format.qmax() as f64);
        scales
            .iter()
            .map(|&s| {
                let s = step(s) as f64;
                Some((lo * s, hi * s))
            })
            .collect()
    }

    fn stored_scales<'a>(&self, e: &'a Encoded, layout: &BlockLayout) -> Result<&'a [f32]> {
        e.part_of_len("scales", layout.num_blocks())?;
        e.f32s("scales")
    }
}

impl Codec for BlockFloat {
    fn label(&self) -> String {
        format!(
            "bfp{} (block {})",
            self.format.mantissa_bits + 8,
            self.block
        )
    }

    fn bits_per_value(&self, _: &[usize]) -> f64 {
        self.format.mantissa_bits as f64 + 8.0 / self.block as f64
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let layout = self.layout(&t.shape)?;
        let scales = self.scales(&layout, &t.data);
        let format = self.format;
        let mantissas = layout.map(&t.data, |b, x| format.code(x, scales[b]));
        let mantissas = if format.mantissa_bits <= 8 {
            Stored::I8(mantissas.iter().map(|&m| m as i8).collect())
        } else {
            Stored::I16(mantissas.iter().map(|&m| m as i16).collect())
        };
        Ok(Encoded::new(&t.shape)
            .with("mantissas", t.shape.clone(), mantissas)
            .with_flat("scales", Stored::F32(scales)))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let layout = self.layout(&e.shape)?;
        let scales = self.stored_scales(e, &layout)?;
        let mantissas = e.integer_codes("mantissas", e.numel()?)?;
        let values = layout.map(&mantissas, |b, m| m * step(scales[b]));
        decoded(&e.shape, values)
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let layout = self.layout(&e.shape)?;
        let scales = self.stored_scales(e, &layout)?;
        let ranges = self.slice_ranges(scales);
        Ok(SliceRanges::new(Slicing::Block(layout), ranges))
    }

    fn stored_slices(&self, e: &Encoded) -> Result<Option<StoredSlices>> {
        let layout = self.layout(&e.shape)?;
        let scales = self.stored_scales(e, &layout)?;
        let m = self.format.mantissa_bits;
        let rule = format!(
            "s = 2^(⌊log2 amax⌋ − {}) with amax = max |x| of the block, doubled first when a \
             mantissa would overflow (the block adjustment; float32 ε for a zero block); \
             mantissa = clamp(round_half_even(x·(1/s)), {}, {}); x̂ = mantissa·s",
            m as i64 - 2,
            self.format.qmin(),
            self.format.qmax()
        );
        Ok(Some(
            StoredSlices::new(
                Slicing::Block(layout),
                scales.len(),
                rule,
                "quark/torch/kernel/hw_emulation/hw_emulation_interface.py (amd-quark 0.13), bfp16",
            )
            .column("scales", scales.iter().map(|&s| s as f64)),
        ))
    }

    fn qdq_kernel(&self, clean: &Tensor) -> Option<Result<Box<dyn QdqKernel>>> {
        let layout = match self.layout(&clean.shape) {
            Ok(l) => l,
            Err(e) => return Some(Err(e)),
        };
        let scales = self.scales(&layout, &clean.data);
        let ranges = self.slice_ranges(&scales);
        let format = self.format;
        Some(
            PerBlock::with_ranges(ranges, layout, scales, move |x, &s| {
                format.fake_quantize(x, s)
            })
            .map(|k| Box::new(k) as Box<dyn QdqKernel>)
            .ok_or_else(|| Error::input("one scale per block")),
        )
    }
}
