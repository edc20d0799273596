//! `torch.fake_quantize_per_tensor_affine` / `torch.fake_quantize_per_channel_affine` (CPU,
//! torch 2.15) as their kernels round, checked element by element against PyTorch:
//!
//! * integer zero point: `q = int64(float32(zp) + round_half_even(x·(1/s)))`, clamped to
//!   `[qmin, qmax]`; per tensor the result is `float32(q − zp)·s` in float32, per channel
//!   `(q − zp)·s` in float64 rounded once to float32;
//! * float zero point (per channel): `q = lrint(fma(x, 1/s, zp))`, clamped, then
//!   `(q − zp)·s` in float64 rounded to float32.
//!
//! With 8-bit ranges these agree with the plain float32 formula of
//! [`crate::quant::fake_quantize_affine`]; with qint32 zero points near −2³¹ they do not.
//! Float → integer conversions follow x86 (out of range or NaN → `i64::MIN`).

use crate::error::{Error, Result};
use crate::observer::{QParams, ZeroPoint};
use crate::quant::{channel_indexer, check_scales, round_half_even};
use crate::tensor::Tensor;

/// `static_cast<int64_t>(float)` / `lrintf` on x86 for an already integral value.
#[inline]
fn to_i64(x: f32) -> i64 {
    const LIMIT: f32 = 9_223_372_036_854_775_808.0; // 2^63
    if !(-LIMIT..LIMIT).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// Fake-quantize `x` with `q` like PyTorch.
pub fn fake_quantize(x: &Tensor, q: &QParams) -> Result<Tensor> {
    let (quant_min, quant_max) = q
        .grid
        .int_range()
        .ok_or_else(|| Error::input("PyTorch's fake quantization needs an integer grid"))?;
    check_scales(q)?;
    let clamp = |v: i64| v.max(quant_min).min(quant_max);
    let data: Vec<f32> = match q.axis {
        None => {
            let s = q.scale[0];
            let inv = 1.0f32 / s;
            match &q.zero_point {
                ZeroPoint::Int(zp) => {
                    let zp = zp[0];
                    x.data
                        .iter()
                        .map(|&v| {
                            let qv = clamp(to_i64(zp as f32 + round_half_even(v * inv)));
                            (qv.wrapping_sub(zp)) as f32 * s
                        })
                        .collect()
                }
                ZeroPoint::Float(zp) => {
                    let zp = zp[0];
                    x.data
                        .iter()
                        .map(|&v| float_zp(v, inv, zp, s, &clamp))
                        .collect()
                }
            }
        }
        Some(axis) => {
            let ix = channel_indexer(x, q, axis)?;
            let inv: Vec<f32> = q.scale.iter().map(|&s| 1.0f32 / s).collect();
            match &q.zero_point {
                ZeroPoint::Int(zps) => x
                    .data
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        let c = ix.channel(i);
                        let zp = zps[c];
                        let qv = clamp(to_i64(zp as f32 + round_half_even(v * inv[c])));
                        ((qv as f64 - zp as f64) * q.scale[c] as f64) as f32
                    })
                    .collect(),
                ZeroPoint::Float(zps) => x
                    .data
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        let c = ix.channel(i);
                        float_zp(v, inv[c], zps[c], q.scale[c], &clamp)
                    })
                    .collect(),
            }
        }
    };
    Ok(x.with_data(data))
}

#[inline]
fn float_zp(v: f32, inv: f32, zp: f32, s: f32, clamp: &impl Fn(i64) -> i64) -> f32 {
    let qv = clamp(to_i64(round_half_even(v.mul_add(inv, zp))));
    ((qv as f64 - zp as f64) * s as f64) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qp(scale: Vec<f32>, zp: ZeroPoint, qmin: i64, qmax: i64, axis: Option<usize>) -> QParams {
        let mut q = QParams::int(scale, zp, qmin, qmax, vec![], vec![]);
        q.axis = axis;
        q
    }

    #[test]
    fn per_tensor_int32_zero_point_matches_torch() {
        // torch.fake_quantize_per_tensor_affine(x, 3e-9, 5, -2**31, 2**31-1) gives 1.8964889
        // for x = 1.8964888 (the difference q − zp is rounded to float32 before the product).
        let q = qp(
            vec![3e-9],
            ZeroPoint::Int(vec![5]),
            -(1 << 31),
            (1 << 31) - 1,
            None,
        );
        let y = fake_quantize(&Tensor::from_vec(vec![1.896_488_8, -0.193_951_17]), &q).unwrap();
        assert_eq!(y.data, vec![1.896_488_9, -0.193_951_17]);
    }

    #[test]
    fn clamps_and_rounds_half_to_even() {
        let q = qp(vec![0.5], ZeroPoint::Int(vec![2]), 0, 7, None);
        let y = fake_quantize(&Tensor::from_vec(vec![-5.0, 0.25, 0.75, 10.0]), &q).unwrap();
        assert_eq!(y.data, vec![-1.0, 0.0, 1.0, 2.5]);
        let q = qp(
            vec![1.0, 0.5],
            ZeroPoint::Float(vec![0.5, 0.0]),
            0,
            3,
            Some(0),
        );
        let x = Tensor::new(vec![2, 2], vec![0.0, 9.0, 0.3, -1.0]).unwrap();
        let y = fake_quantize(&x, &q).unwrap();
        // row 0: round(0 + 0.5) = 0 → -0.5; round(9.5) = 10 → 3 → 2.5. row 1: 0.6→1 → 0.5; -2 → 0.
        assert_eq!(y.data, vec![-0.5, 2.5, 0.5, 0.0]);
    }
}
