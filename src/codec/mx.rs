//! `mx`: OCP Microscaling blocks, as AMD Quark computes them (see [`crate::formats::mx`]): blocks
//! of `block_size` along `axis` share a power-of-two scale `s` (from the block's amax, rounded
//! as `scale_rounding` says); an element is stored as the fp8/fp6/fp4 code of `x / s`, or for
//! MXINT8 as `clamp(round_half_even(x / (s/64)), −127, 127)`, and decoded as `element · s`
//! (MXINT8: `code · s/64`). A block represents `[−max_element·s, max_element·s]`.
//!
//! Stored: `scales`, one E8M0 byte per block (`2^(code − 127)`), blocks in the order of
//! [`BlockLayout`] (row by row, then along the axis), and `elements` in the tensor's shape, one
//! element's bit pattern per byte (MXINT8 as two's complement). A scale that E8M0 cannot hold
//! (below `2^−127`, possible with `floor`/`ceil` on subnormal data) makes `encode` fail with
//! its block; the quantize–dequantize itself keeps it, as Quark does.

use super::sharing::symmetric_ranges;
use super::{decoded, explain, Codec, CodecEntry, CodecFamily, Encoded, Stored};
use crate::derivation::{self, Step};
use crate::error::{Error, Result};
use crate::formats::blocks::BlockLayout;
use crate::formats::e8m0::{self, ScaleRounding};
use crate::formats::mx::{self, MxElement};
use crate::formats::ElementFormat;
use crate::qdq::{PerBlock, QdqKernel, SliceRanges, Slicing};
use crate::tensor::Tensor;

crate::declare_params! {
    /// OCP MX blocks.
    pub struct MxArgs {
        /// element type
        element: MxElement = MxElement::Float(ElementFormat::Fp4E2m1); choice(), Data;
        /// elements per shared scale
        block_size: i64 = 32; int(2, 1024), Data;
        /// axis along which blocks run
        axis: i64 = -1; int(-8, 7), Data;
        /// E8M0 scale rounding
        scale_rounding: ScaleRounding = ScaleRounding::Even; choice(), Data;
    }
}

/// The codec family `mx`.
pub struct MxFamily;

impl CodecFamily for MxFamily {
    type Args = MxArgs;
    fn build(a: &MxArgs, _: &[usize], _: &str) -> Result<Box<dyn Codec>> {
        Ok(Box::new(Mx {
            element: a.element,
            block: a.block_size as usize,
            axis: a.axis,
            rounding: a.scale_rounding,
        }))
    }
}

/// The registry entry.
pub fn entry() -> CodecEntry {
    CodecEntry::of::<MxFamily>("mx", "OCP MX: blocks sharing an E8M0 scale")
        .drawn(3, "MX (shared scale)")
}

/// A configured MX codec.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mx {
    pub element: MxElement,
    pub block: usize,
    pub axis: i64,
    pub rounding: ScaleRounding,
}

impl Mx {
    fn layout(&self, shape: &[usize]) -> Result<BlockLayout> {
        BlockLayout::new(shape, self.axis, self.block)
    }

    fn slice_ranges(&self, scales: &[f32]) -> Vec<Option<(f64, f64)>> {
        symmetric_ranges(self.element.max(), scales)
    }

    /// The stored scales, decoded.
    fn stored_scales(&self, e: &Encoded, layout: &BlockLayout) -> Result<Vec<f32>> {
        e.part_of_len("scales", layout.num_blocks())?;
        Ok(e.u8s("scales")?.iter().map(|&c| e8m0::decode(c)).collect())
    }
}

impl Codec for Mx {
    fn label(&self) -> String {
        if self.block == mx::BLOCK_SIZE {
            self.element.format_name()
        } else {
            format!("{} (block {})", self.element.format_name(), self.block)
        }
    }

    fn bits_per_value(&self, _: &[usize]) -> f64 {
        let bits = match self.element {
            MxElement::Float(f) => f.bits(),
            MxElement::Int8 => 8,
        };
        bits as f64 + 8.0 / self.block as f64
    }

    fn encode(&self, t: &Tensor) -> Result<Encoded> {
        let layout = self.layout(&t.shape)?;
        let scales = mx::block_scales(&layout, &t.data, self.element, self.rounding);
        let codes = scales
            .iter()
            .enumerate()
            .map(|(b, &s)| {
                e8m0::encode(s).ok_or_else(|| {
                    Error::input(format!(
                        "block {b}'s shared scale {s:e} is not a power of two E8M0 holds (2^−127 … 2^127)"
                    ))
                })
            })
            .collect::<Result<Vec<u8>>>()?;
        let element = self.element;
        let elements = layout.map(&t.data, |b, x| {
            let s = scales[b];
            (match element {
                MxElement::Float(f) => f.encode(x / s).unwrap_or(0),
                MxElement::Int8 => MxElement::int8_code(x, s) as i8 as u8,
            }) as f32
        });
        Ok(Encoded::new(&t.shape)
            .with_flat("scales", Stored::U8(codes))
            .with(
                "elements",
                t.shape.clone(),
                Stored::U8(elements.iter().map(|&c| c as u8).collect()),
            ))
    }

    fn decode(&self, e: &Encoded) -> Result<Tensor> {
        let layout = self.layout(&e.shape)?;
        let scales = self.stored_scales(e, &layout)?;
        e.part_of_len("elements", e.numel()?)?;
        let codes: Vec<f32> = e.u8s("elements")?.iter().map(|&c| c as f32).collect();
        let element = self.element;
        let values = layout.map(&codes, |b, c| {
            let s = scales[b];
            match element {
                MxElement::Float(f) => f.decode(c as u8) * s,
                MxElement::Int8 => (c as u8 as i8) as f32 * MxElement::int8_step(s),
            }
        });
        decoded(&e.shape, values)
    }

    /// One block encoded on its own (its scale depends on its amax alone) while the shared
    /// scale's rule records; the last step holds the E8M0 byte, the element codes and the
    /// decoded values.
    fn explain_block(&self, t: &Tensor, block: Option<usize>) -> Result<(usize, usize, Vec<Step>)> {
        let layout = self.layout(&t.shape)?;
        let count = layout.num_blocks();
        let largest = layout.block_of(explain::largest_magnitude(&t.data));
        let index = explain::pick_block(block, largest, count)?;
        let members: Vec<usize> = (0..t.data.len())
            .filter(|&i| layout.block_of(i) == index)
            .collect();
        let x: Vec<f32> = members.iter().map(|&i| t.data[i]).collect();
        let alone = Mx { axis: 0, ..*self };
        let block_tensor = Tensor::new(vec![x.len()], x.clone())?;
        let (encoded, recorded) = derivation::capture(true, || alone.encode(&block_tensor));
        let encoded = encoded?;
        let decoded = alone.decode(&encoded)?.data;
        let source = "quark/torch/kernel/hw_emulation (amd-quark 0.13), OCP MX v1.0";
        let place = format!(
            "{} elements along axis {} (flat indices {}, {}, …)",
            x.len(),
            self.axis,
            members.first().copied().unwrap_or(0),
            members.get(1).copied().unwrap_or(0)
        );
        let mut steps = vec![explain::block_step(
            index,
            count,
            block.is_some(),
            &x,
            &place,
            source,
        )];
        steps.extend(recorded);
        let code = encoded.u8s("scales")?[0];
        let elements = encoded.u8s("elements")?;
        let largest_error = x
            .iter()
            .zip(&decoded)
            .fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        let formula = match self.element {
            MxElement::Float(f) => format!("x = {}(code)·s, s = 2^(E8M0 byte − 127)", f.name()),
            MxElement::Int8 => "x = code·(s/64), s = 2^(E8M0 byte − 127)".to_string(),
        };
        steps.push(
            Step::new("Stored block", formula, source)
                .value("scale code", code as i64)
                .value("scale", e8m0::decode(code))
                .value(
                    "codes",
                    elements.iter().map(|&c| c as i64).collect::<Vec<i64>>(),
                )
                .value("decoded", decoded)
                .value("largest |error|", largest_error),
        );
        Ok((index, count, steps))
    }

    fn ranges(&self, e: &Encoded) -> Result<SliceRanges> {
        let layout = self.layout(&e.shape)?;
        let scales = self.stored_scales(e, &layout)?;
        Ok(SliceRanges::new(
            Slicing::Block(layout),
            self.slice_ranges(&scales),
        ))
    }

    fn qdq_kernel(&self, clean: &Tensor) -> Option<Result<Box<dyn QdqKernel>>> {
        let layout = match self.layout(&clean.shape) {
            Ok(l) => l,
            Err(e) => return Some(Err(e)),
        };
        let scales = mx::block_scales(&layout, &clean.data, self.element, self.rounding);
        let ranges = self.slice_ranges(&scales);
        // One kernel per element kind, so that the per-element loop holds no `match`.
        fn kernel<F: Fn(f32, &f32) -> f32 + Send + Sync + 'static>(
            ranges: Vec<Option<(f64, f64)>>,
            layout: BlockLayout,
            scales: Vec<f32>,
            map: F,
        ) -> Result<Box<dyn QdqKernel>> {
            let kernel = PerBlock::with_ranges(ranges, layout, scales, map)
                .ok_or_else(|| Error::input("one scale per block"))?;
            Ok(Box::new(kernel))
        }
        Some(match self.element {
            MxElement::Float(f) => {
                let rounding = f.rounding();
                kernel(ranges, layout, scales, move |x, &s| {
                    rounding.quantize(x / s) * s
                })
            }
            int8 => kernel(ranges, layout, scales, move |x, &s| {
                int8.fake_quantize(x, s)
            }),
        })
    }
}
