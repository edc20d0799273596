//! Quark's quantize–dequantize ([`super::kernels::scaled_fake_quantize`]) as fused kernels
//! ([`crate::qdq`]), built from the very same per-element functions: per tensor, integer
//! ([`int_affine`], PyTorch's `fake_quantize_per_tensor_affine` in float32), fp8 ([`fp8`]) and
//! the float16/bfloat16 round trip; per channel, integer ([`int_per_channel`]). Per-group specs
//! and per-channel floating-point ones keep the two-step path.

use super::kernels::{fp8, int_affine, int_per_channel, int_zero_points};
use super::spec::{QScheme, QuarkSpec};
use crate::observer::{QParams, ZeroPoint};
use crate::qdq::{PerChannel, PerTensor, QdqKernel};

/// The kernel of `scaled_fake_quantize(spec, x, q.scale, q.zero_point)` for tensors of `shape`
/// with integer per-channel qparams, when one applies: the channel axis is the one
/// `scaled_fake_quantize` takes from the spec (a 0-d tensor counts as `[1]`), and it must be
/// the axis the qparams were collected along.
pub fn per_channel_kernel(
    spec: &QuarkSpec,
    shape: &[usize],
    q: &QParams,
) -> Option<Box<dyn QdqKernel>> {
    if spec.qscheme != QScheme::PerChannel || !spec.dtype.is_int() {
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
    let (qmin, qmax) = spec.qrange();
    let (qmin, qmax) = (qmin as f32, qmax as f32);
    let zps = int_zero_points(&q.zero_point);
    if qmin > qmax || zps.len() != q.scale.len() {
        return None;
    }
    let params: Vec<(f32, f32)> = q.scale.iter().copied().zip(zps).collect();
    let kernel = PerChannel::new(q, &shape, axis, params, move |v: f32, p: &(f32, f32)| {
        int_per_channel(v, p.0, p.1, qmin, qmax)
    })?;
    Some(Box::new(kernel))
}

/// The kernel of `scaled_fake_quantize(spec, x, q.scale, q.zero_point)` with per-tensor qparams,
/// when one applies.
pub fn kernel(spec: &QuarkSpec, q: &QParams) -> Option<Box<dyn QdqKernel>> {
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
