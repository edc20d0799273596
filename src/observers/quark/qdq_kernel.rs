//! Quark's per-tensor quantize–dequantize ([`super::kernels::scaled_fake_quantize`]) as fused
//! kernels ([`crate::qdq`]), built from the very same per-element functions: integer
//! ([`int_affine`], PyTorch's `fake_quantize_per_tensor_affine` in float32), fp8 ([`fp8`]) and
//! the float16/bfloat16 round trip. Per-channel and per-group specs keep the two-step path.

use super::kernels::{fp8, int_affine};
use super::spec::{QScheme, QuarkSpec};
use crate::observer::{QParams, ZeroPoint};
use crate::qdq::{PerTensor, QdqKernel};

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
