//! Quark's quantize–dequantize ([`super::kernels::scaled_fake_quantize`]) as fused kernels
//! ([`crate::qdq`]), built from the very same per-element functions: per tensor, integer
//! ([`int_affine`], PyTorch's `fake_quantize_per_tensor_affine` in float32), fp8 ([`fp8`]) and
//! the float16/bfloat16 round trip; per channel and per group, every dtype through
//! [`slice_qdq`], the per-slice form `scaled_fake_quantize` itself uses.
//!
//! Some qparams have no kernel: a per-tensor FP4/MX dtype (Quark raises its
//! `NotImplementedError`, which the report shows), scales or zero points that do not fit the
//! spec's axis or group layout (Quark's own errors), per-tensor schemes of other dtypes. So the
//! Quark observers keep `scaled_fake_quantize` as their `fake_quantize`, which gives Quark's
//! values or errors there and the kernel's bits wherever a kernel applies
//! (`tests/qdq_kernels.rs`).

use super::kernels::{fp8, group_layout, int_affine, slice_qdq, SliceQdqUser};
use super::spec::{QScheme, QuarkConfig};
use crate::formats::blocks::BlockLayout;
use crate::observer::{QParams, ZeroPoint};
use crate::qdq::{PerBlock, PerChannel, PerTensor, QdqKernel};

/// Where the slices of a [`slice_qdq`] kernel lie: channels along an axis, or blocks.
enum Layout<'a> {
    Channels {
        shape: &'a [usize],
        axis: usize,
    },
    Blocks {
        shape: &'a [usize],
        layout: BlockLayout,
    },
}

/// [`SliceQdqUser`] making the fused kernel of a [`Layout`] (none when the qparams do not fit
/// it).
struct MakeKernel<'a> {
    q: &'a QParams,
    layout: Layout<'a>,
}

impl SliceQdqUser for MakeKernel<'_> {
    type Out = Option<Box<dyn QdqKernel>>;
    fn apply<F>(self, params: Vec<(f32, f32)>, map: F) -> Self::Out
    where
        F: Fn(f32, &(f32, f32)) -> f32 + Send + Sync + 'static,
    {
        Some(match self.layout {
            Layout::Channels { shape, axis } => {
                Box::new(PerChannel::new(self.q, shape, axis, params, map)?)
            }
            Layout::Blocks { shape, layout } => {
                Box::new(PerBlock::new(self.q, shape, layout, params, map)?)
            }
        })
    }
}

/// The kernel of `scaled_fake_quantize(spec, x, q.scale, q.zero_point)` for tensors of `shape`
/// with per-channel qparams, when one applies: the channel axis is the one
/// `scaled_fake_quantize` takes from the spec (a 0-d tensor counts as `[1]`), and it must be
/// the axis the qparams were collected along.
pub fn per_channel_kernel(
    spec: &QuarkConfig,
    shape: &[usize],
    q: &QParams,
) -> Option<Box<dyn QdqKernel>> {
    if spec.qscheme != QScheme::PerChannel {
        return None;
    }
    let shape: Vec<usize> = if shape.is_empty() {
        vec![1]
    } else {
        shape.to_vec()
    };
    let axis = spec.axis_for(shape.len()).ok()?;
    if q.axis != Some(axis) {
        return None;
    }
    let layout = Layout::Channels {
        shape: &shape,
        axis,
    };
    slice_qdq(
        spec,
        &q.scale,
        &q.zero_point,
        false,
        MakeKernel { q, layout },
    )
    .ok()?
}

/// The kernel of `scaled_fake_quantize(spec, x, q.scale, q.zero_point)` for tensors of `shape`
/// with per-group qparams (one per block of the spec's group layout, which must be the block
/// layout the qparams declare), when one applies ([`slice_qdq`] refuses the rest).
pub fn per_group_kernel(
    spec: &QuarkConfig,
    shape: &[usize],
    q: &QParams,
) -> Option<Box<dyn QdqKernel>> {
    if spec.qscheme != QScheme::PerGroup {
        return None;
    }
    let layout = Layout::Blocks {
        shape,
        layout: group_layout(spec, shape).ok()?,
    };
    slice_qdq(
        spec,
        &q.scale,
        &q.zero_point,
        true,
        MakeKernel { q, layout },
    )
    .ok()?
}

/// The kernel of `scaled_fake_quantize(spec, x, q.scale, q.zero_point)` with per-tensor qparams,
/// when one applies.
pub fn kernel(spec: &QuarkConfig, q: &QParams) -> Option<Box<dyn QdqKernel>> {
    if q.axis.is_some() || q.extra.contains_key("block_axis") {
        return None;
    }
    if let Some(half) = spec.dtype.half() {
        return Some(Box::new(PerTensor::new(q, move |v: f32| {
            half.round_trip(v)
        })));
    }
    if spec.qscheme != QScheme::PerTensor || q.scale.len() != 1 || q.zero_point.len() != 1 {
        return None;
    }
    let s = q.scale[0];
    if spec.dtype.is_int() {
        let (qmin, qmax) = spec.qrange();
        let (qmin, qmax) = (qmin as f32, qmax as f32);
        if qmin > qmax {
            return None;
        }
        // Float zero points are truncated like `.to(torch.int32)`.
        let zp = match &q.zero_point {
            ZeroPoint::Int(v) => v[0] as f32,
            ZeroPoint::Float(v) => v[0].trunc(),
        };
        return Some(Box::new(PerTensor::new(q, move |v: f32| {
            int_affine(v, s, zp, qmin, qmax)
        })));
    }
    if spec.dtype.is_fp8() {
        let format = spec.dtype.element()?;
        return Some(Box::new(PerTensor::new(q, move |v: f32| fp8(v, s, format))));
    }
    None
}
