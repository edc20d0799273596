//! Quark's quantize–dequantize (`quark.torch.kernel.scaled_fake_quantize`, CPU path), used as
//! the observers' `fake_quantize` so errors are measured the Quark way.
//!
//! * int, per tensor: `torch.fake_quantize_per_tensor_affine` —
//!   `(clamp(zp + round_half_even(x·(1/s)), qmin, qmax) − zp)·s`.
//! * int, per channel / per group: Quark's own `fake_quantize_per_channel_affine` — the same
//!   formula with `s` floored at the smallest normal float32; groups run along `ch_axis`
//!   (`group_size = −1`: the whole axis). A float zero point is truncated to int32 first.
//! * fp8: `q(clamp(x / s, ±fmax))·s` with the float8 cast rounding half to even; per-group
//!   scales of 0 become ε first.
//! * fp6/fp4: `x / s` through Quark's `fake_quantize_to_low_precision_fp` (round half to even,
//!   saturate at the format's max, ±inf/NaN passed through), `·s`; scales of 0 become ε. Per
//!   tensor raises `NotImplementedError` in Quark.
//! * float16/bfloat16: a cast there and back.

use super::qparams::EPS;
use super::spec::{QScheme, QuarkConfig};
use crate::error::{Error, Result, Stage};
use crate::formats::blocks::BlockLayout;
use crate::formats::ElementFormat;
use crate::observer::ZeroPoint;
use crate::quant::{round_half_even, ChannelIndexer};
use crate::tensor::Tensor;

/// `torch.fake_quantize_per_tensor_affine` on one value.
#[inline]
pub fn int_affine(x: f32, scale: f32, zp: f32, qmin: f32, qmax: f32) -> f32 {
    let inv = 1.0f32 / scale;
    ((zp + round_half_even(x * inv)).clamp(qmin, qmax) - zp) * scale
}

/// Quark's per-channel affine fake quantization of one value (scale floored at the smallest
/// normal float32).
#[inline]
pub fn int_per_channel(x: f32, scale: f32, zp: f32, qmin: f32, qmax: f32) -> f32 {
    let s = if scale < f32::MIN_POSITIVE {
        f32::MIN_POSITIVE
    } else {
        scale
    };
    let inv = 1.0f32 / s;
    ((round_half_even(x * inv) + zp).clamp(qmin, qmax) - zp) * s
}

/// fp8 fake quantization of one value: divide, clamp, cast, multiply.
#[inline]
pub fn fp8(x: f32, scale: f32, format: ElementFormat) -> f32 {
    format.quantize(x / scale) * scale
}

/// `fake_quantize_to_low_precision_fp` after dividing by the scale (fp6/fp4).
#[inline]
pub fn low_precision(x: f32, scale: f32, format: ElementFormat) -> f32 {
    let v = x / scale;
    let q = if v.is_finite() { format.quantize(v) } else { v };
    q * scale
}

#[inline]
fn eps_if_zero(s: f32) -> f32 {
    if s == 0.0 {
        EPS
    } else {
        s
    }
}

/// Integer zero points as float32 (float zero points truncated like `.to(torch.int32)`).
fn int_zero_points(zp: &ZeroPoint) -> Vec<f32> {
    match zp {
        ZeroPoint::Int(v) => v.iter().map(|&z| z as f32).collect(),
        ZeroPoint::Float(v) => v.iter().map(|&z| z.trunc()).collect(),
    }
}

/// How the scales of a spec map onto the elements of a tensor.
enum Slices {
    One,
    Channel(ChannelIndexer),
    Block(BlockLayout),
}

impl Slices {
    #[inline]
    fn of(&self, i: usize) -> usize {
        match self {
            Slices::One => 0,
            Slices::Channel(c) => c.channel(i),
            Slices::Block(b) => b.block_of(i),
        }
    }
}

/// The block layout of a per-group spec on `shape` (`group_size = −1`: one group per row).
pub fn group_layout(spec: &QuarkConfig, shape: &[usize]) -> Result<BlockLayout> {
    let axis = spec.axis_for(shape.len())?;
    let len = shape.get(axis).copied().unwrap_or(1);
    let gs = match spec.group_size {
        Some(g) if g > 0 => g as usize,
        _ => len.max(1),
    };
    BlockLayout::new(shape, axis as i64, gs)
}

/// The refusal of a per-block observer `class` without a positive block size.
pub fn require_block_size(class: &str, group_size: i64) -> Result<()> {
    if group_size < 1 {
        return Err(Error::param(
            "group_size",
            format!("{class} needs a positive block size"),
        ));
    }
    Ok(())
}

/// How many blocks a per-block observer's qparams have for batches of `shape` (the layout of
/// [`forward_block_layout`]); `None` when the spec does not fit the shape (`forward` says why).
pub fn block_count(spec: &QuarkConfig, shape: &[usize]) -> Option<usize> {
    let shape = if shape.is_empty() { &[1][..] } else { shape };
    Some(group_layout(spec, shape).ok()?.num_blocks())
}

/// The block layout a per-block observer's `forward` uses for `batch` (a 0-d tensor counts as
/// `[1]`); an axis beyond the tensor's dimensions raises Quark's `IndexError`.
pub fn forward_block_layout(spec: &QuarkConfig, batch: &Tensor) -> Result<BlockLayout> {
    let shape = if batch.shape.is_empty() {
        vec![1]
    } else {
        batch.shape.clone()
    };
    group_layout(spec, &shape).map_err(|_| {
        Error::framework(
            "IndexError",
            "Axis is larger than number of tensor dimensions",
            Stage::Forward,
        )
    })
}

fn slices(spec: &QuarkConfig, x: &Tensor, n_scales: usize) -> Result<Slices> {
    let mismatch = |what: &str, want: usize| {
        Err(Error::input(format!(
            "{n_scales} scales do not fit {what} of a tensor of shape {:?} ({want} expected)",
            x.shape
        )))
    };
    match spec.qscheme {
        QScheme::PerTensor => {
            if n_scales != 1 {
                return mismatch("per-tensor quantization", 1);
            }
            Ok(Slices::One)
        }
        QScheme::PerChannel => {
            let shape = if x.shape.is_empty() {
                vec![1]
            } else {
                x.shape.clone()
            };
            let axis = spec.axis_for(shape.len())?;
            if shape[axis] != n_scales {
                return mismatch("the channels", shape[axis]);
            }
            Ok(Slices::Channel(ChannelIndexer::new(&shape, axis)))
        }
        QScheme::PerGroup => {
            let layout = group_layout(spec, &x.shape)?;
            if layout.num_blocks() != n_scales {
                return mismatch("the groups", layout.num_blocks());
            }
            Ok(Slices::Block(layout))
        }
    }
}

/// What is done with the per-slice form of a quantize–dequantize ([`slice_qdq`]): each slice's
/// parameters `(scale, zero point)` and the element function `map(x, &params)`.
pub(super) trait SliceQdqUser {
    type Out;
    fn apply<F>(self, params: Vec<(f32, f32)>, map: F) -> Self::Out
    where
        F: Fn(f32, &(f32, f32)) -> f32 + Send + Sync + 'static;
}

/// Quark's per-channel and per-group quantize–dequantize as one element function and each
/// slice's parameters, handed to `user`: integer dtypes [`int_per_channel`] with the zero points
/// truncated to integers; fp8 [`fp8`]; fp6/fp4 [`low_precision`]; per-group scales of 0 become
/// ε for the floating-point dtypes (`grouped`), and always for fp6/fp4; an error for dtypes
/// without an element quantizer (float16/bfloat16 are a plain round trip, see
/// [`scaled_fake_quantize`]). Both the two-step
/// [`scaled_fake_quantize`] and the fused kernels ([`super::qdq_kernel`]) are built from it.
pub(super) fn slice_qdq<U: SliceQdqUser>(
    spec: &QuarkConfig,
    scale: &[f32],
    zero_point: &ZeroPoint,
    grouped: bool,
    user: U,
) -> Result<U::Out> {
    if spec.dtype.is_int() {
        let (qmin, qmax) = spec.qrange();
        let (qmin, qmax) = (qmin as f32, qmax as f32);
        let zps = int_zero_points(zero_point);
        if zps.len() != scale.len() {
            return Err(Error::input("scales and zero points differ in number"));
        }
        let params = scale.iter().copied().zip(zps).collect();
        return Ok(user.apply(params, move |v, p| int_per_channel(v, p.0, p.1, qmin, qmax)));
    }
    let format = spec
        .dtype
        .element()
        .ok_or_else(|| Error::input("no quantizer for this dtype"))?;
    let fp8_dtype = spec.dtype.is_fp8();
    let params = scale
        .iter()
        .map(|&s| {
            let s = if grouped || !fp8_dtype {
                eps_if_zero(s)
            } else {
                s
            };
            (s, 0.0)
        })
        .collect();
    Ok(if fp8_dtype {
        user.apply(params, move |v, p| fp8(v, p.0, format))
    } else {
        user.apply(params, move |v, p| low_precision(v, p.0, format))
    })
}

/// [`SliceQdqUser`] quantize–dequantizing a whole tensor, element `i` with slice `slices.of(i)`.
struct MapEach<'a> {
    x: &'a [f32],
    slices: &'a Slices,
}

impl SliceQdqUser for MapEach<'_> {
    type Out = Vec<f32>;
    fn apply<F>(self, params: Vec<(f32, f32)>, map: F) -> Vec<f32>
    where
        F: Fn(f32, &(f32, f32)) -> f32 + Send + Sync + 'static,
    {
        self.x
            .iter()
            .enumerate()
            .map(|(i, &v)| map(v, &params[self.slices.of(i)]))
            .collect()
    }
}

/// Quark's `scaled_fake_quantize(dtype, x, scale, zero_point, ch_axis, group_size, qmin, qmax,
/// …, qscheme)` for the observers' specs.
pub fn scaled_fake_quantize(
    spec: &QuarkConfig,
    x: &Tensor,
    scale: &[f32],
    zero_point: &ZeroPoint,
) -> Result<Tensor> {
    if let Some(h) = spec.dtype.half() {
        return Ok(x.with_data(x.data.iter().map(|&v| h.round_trip(v)).collect()));
    }
    if scale.is_empty() {
        return Err(Error::input("no scale to quantize with"));
    }
    let slices = slices(spec, x, scale.len())?;
    let per_tensor = matches!(slices, Slices::One);
    if per_tensor && spec.dtype.is_int() {
        let (qmin, qmax) = spec.qrange();
        let (qmin, qmax) = (qmin as f32, qmax as f32);
        let zps = int_zero_points(zero_point);
        if zps.len() != scale.len() {
            return Err(Error::input("scales and zero points differ in number"));
        }
        let (s, z) = (scale[0], zps[0]);
        let data = x
            .data
            .iter()
            .map(|&v| int_affine(v, s, z, qmin, qmax))
            .collect();
        return Ok(x.with_data(data));
    }
    if per_tensor && !spec.dtype.is_int() && !spec.dtype.is_fp8() && spec.dtype.element().is_some()
    {
        return Err(Error::framework(
            "NotImplementedError",
            "FP4 per-tensor fake quantization is not yet implemented. Use per-group quantization (QSchemeType.per_group) instead.",
            Stage::CalculateQparams,
        ));
    }
    let grouped = matches!(slices, Slices::Block(_));
    let data = slice_qdq(
        spec,
        scale,
        zero_point,
        grouped,
        MapEach {
            x: &x.data,
            slices: &slices,
        },
    )?;
    Ok(x.with_data(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::quark::dtype::QuarkDtype;
    use crate::observers::quark::spec::ScaleFormat;

    #[test]
    fn per_group_and_per_channel_layouts() {
        let spec = QuarkConfig {
            qscheme: QScheme::PerGroup,
            ch_axis: Some(1),
            group_size: Some(2),
            ..QuarkConfig::for_tests(QuarkDtype::Int8)
        };
        let x = Tensor::new(vec![2, 4], vec![1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]).unwrap();
        let y = scaled_fake_quantize(
            &spec,
            &x,
            &[0.5, 0.3, 0.25, 0.4],
            &ZeroPoint::Int(vec![0; 4]),
        )
        .unwrap();
        assert_eq!(y.data[0], 1.0);
        assert_eq!(y.data[2], 0.3f32 * 3.0);
        assert_eq!(y.data[4], 1.0);
        assert_eq!(y.data[6], 0.4f32 * 2.0);
        assert!(scaled_fake_quantize(&spec, &x, &[0.5], &ZeroPoint::Int(vec![0])).is_err());
        let fp4 = QuarkConfig {
            dtype: QuarkDtype::Fp4,
            ..spec.clone()
        };
        let y = scaled_fake_quantize(
            &fp4,
            &x,
            &[0.0, 1.0, 0.4, 1.0],
            &ZeroPoint::Float(vec![0.0; 4]),
        )
        .unwrap();
        // Scale 0 → eps: 1/eps saturates at 6 → 6·eps.
        assert_eq!(y.data[0], 6.0 * EPS);
        assert_eq!(y.data[2], 1.0);
        // 1/0.4 = 2.5 is a tie between 2 and 3: even mantissa → 2.
        assert_eq!(y.data[4], 2.0 * 0.4f32);
        let per_tensor = QuarkConfig {
            scale_format: Some(ScaleFormat::E8m0),
            ..QuarkConfig::for_tests(QuarkDtype::Fp4)
        };
        let err = scaled_fake_quantize(&per_tensor, &x, &[1.0], &ZeroPoint::Float(vec![0.0]))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("NotImplementedError"), "{err}");
    }

    #[test]
    fn value_kernels() {
        assert_eq!(int_affine(0.26, 0.5, 2.0, 0.0, 7.0), 0.5);
        assert_eq!(
            int_per_channel(1.0, 0.0, 0.0, -128.0, 127.0),
            127.0 * f32::MIN_POSITIVE
        );
        assert_eq!(fp8(500.0, 1.0, ElementFormat::Fp8E4m3), 448.0);
        assert_eq!(
            low_precision(f32::INFINITY, 1.0, ElementFormat::Fp4E2m1),
            f32::INFINITY
        );
        assert_eq!(low_precision(7.0, 1.0, ElementFormat::Fp4E2m1), 6.0);
        assert_eq!(
            int_zero_points(&ZeroPoint::Float(vec![-1.7, 2.9])),
            vec![-1.0, 2.0]
        );
    }
}
