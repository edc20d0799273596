//! `torch.fake_quantize_per_tensor_affine` / `torch.fake_quantize_per_channel_affine` (CPU,
//! torch 2.15) as their kernels round, checked element by element against PyTorch — written
//! once, as the fused kernel ([`kernel`], see [`crate::qdq`]) that both the values
//! ([`crate::observer::ObserverKind::fake_quantize`]) and the error metrics run:
//!
//! * integer zero point: `q = int64(float32(zp) + round_half_even(x·(1/s)))`, clamped to
//!   `[qmin, qmax]`; per tensor the result is `float32(q − zp)·s` in float32, per channel
//!   `(q − zp)·s` in float64 rounded once to float32;
//! * float zero point: `q = lrint(fma(x, 1/s, zp))`, clamped, then `(q − zp)·s` in float64
//!   rounded to float32.
//!
//! Float → integer conversions follow x86 (out of range or NaN → `i64::MIN`, which the clamp
//! sends to `qmin`). The integers `q` are held in one of two [`Ints`]: int64 as PyTorch holds
//! them, or — whenever `qmin`, `qmax` (and the integer zero points) lie within
//! ±2²⁴, where float32 holds every integer exactly — float32, which gives the same bits and
//! lets the loops vectorise:
//!
//! * `t = float32(zp) + round_half_even(x·(1/s))` is integral (or ±∞/NaN); the int64 cast
//!   turns NaN and `t ≥ 2⁶³` into `i64::MIN`, which the clamp sends to `qmin`, and clamps
//!   everything else to `[qmin, qmax]` — the same as a float32 clamp once those two cases are
//!   mapped to `qmin`;
//! * per tensor, `float32(q − zp)` of integers within ±2²⁵ rounds like the float32 subtraction
//!   of their exact float32 values; per channel, `(q − zp)·s` is float64 either way.

use crate::observer::{QParams, ZeroPoint};
use crate::qdq::{PerChannel, PerTensor, QdqKernel};
use crate::quant::round_half_even;

/// Largest magnitude below which float32 holds every integer.
const EXACT: i64 = 1 << 24;
/// `2⁶³`: from here on (and for NaN) the int64 cast gives `i64::MIN`.
const INT64_LIMIT: f32 = 9_223_372_036_854_775_808.0;

/// The integers the quantized values `q` are held in.
trait Ints: Copy + Send + Sync + 'static {
    /// The integer `v` (exact for the values [`kernel`] converts).
    fn of(v: i64) -> Self;
    /// `clamp(static_cast<int64_t>(t), qmin, qmax)` for an integral float32 `t`.
    fn clamp(t: f32, qmin: Self, qmax: Self) -> Self;
    /// `float32(q − zp)`.
    fn difference_f32(q: Self, zp: Self) -> f32;
    /// `q` as float64.
    fn to_f64(q: Self) -> f64;
}

/// As PyTorch holds them.
impl Ints for i64 {
    fn of(v: i64) -> Self {
        v
    }

    #[inline(always)]
    fn clamp(t: f32, qmin: i64, qmax: i64) -> i64 {
        // `static_cast<int64_t>` / `lrintf` on x86 for an already integral value.
        let t = if (-INT64_LIMIT..INT64_LIMIT).contains(&t) {
            t as i64
        } else {
            i64::MIN
        };
        t.max(qmin).min(qmax)
    }

    #[inline(always)]
    fn difference_f32(q: i64, zp: i64) -> f32 {
        q.wrapping_sub(zp) as f32
    }

    #[inline(always)]
    fn to_f64(q: i64) -> f64 {
        q as f64
    }
}

/// Exact within ±2²⁴ (see the module documentation), and branch-free.
impl Ints for f32 {
    fn of(v: i64) -> Self {
        v as f32
    }

    #[inline(always)]
    fn clamp(t: f32, qmin: f32, qmax: f32) -> f32 {
        let t = if t < INT64_LIMIT { t } else { qmin };
        let t = if t < qmin { qmin } else { t };
        if t > qmax {
            qmax
        } else {
            t
        }
    }

    #[inline(always)]
    fn difference_f32(q: f32, zp: f32) -> f32 {
        q - zp
    }

    #[inline(always)]
    fn to_f64(q: f32) -> f64 {
        q as f64
    }
}

/// One value with an integer zero point: `(1/s, float32(zp), zp, s)`; per tensor
/// (`PER_CHANNEL = false`) the difference is rounded to float32 before the product, per channel
/// the product is float64.
#[inline(always)]
fn int_zero_point<I: Ints, const PER_CHANNEL: bool>(
    v: f32,
    (inv, zp32, zp, s): (f32, f32, I, f32),
    qmin: I,
    qmax: I,
) -> f32 {
    let q = I::clamp(zp32 + round_half_even(v * inv), qmin, qmax);
    if PER_CHANNEL {
        ((I::to_f64(q) - I::to_f64(zp)) * s as f64) as f32
    } else {
        I::difference_f32(q, zp) * s
    }
}

/// One value with a float zero point: `(1/s, zp, s)`.
#[inline(always)]
fn float_zero_point<I: Ints>(v: f32, (inv, zp, s): (f32, f32, f32), qmin: I, qmax: I) -> f32 {
    let q = I::clamp(round_half_even(v.mul_add(inv, zp)), qmin, qmax);
    ((I::to_f64(q) - zp as f64) * s as f64) as f32
}

/// The kernel of PyTorch's fake quantization with `q` on tensors of `shape`; `None` when the
/// qparams do not fit (no integer grid, no scale, zero points not one per scale, or per channel
/// an axis out of range or of another length than the scales).
pub fn kernel(shape: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
    let (qmin, qmax) = q.grid.int_range()?;
    if q.scale.is_empty() || q.zero_point.len() != q.scale.len() {
        return None;
    }
    let exact = |v: i64| (-EXACT..=EXACT).contains(&v);
    let zp_exact = match &q.zero_point {
        ZeroPoint::Int(zps) => zps.iter().all(|&zp| exact(zp)),
        ZeroPoint::Float(_) => true,
    };
    if exact(qmin) && exact(qmax) && qmin <= qmax && zp_exact {
        with_ints::<f32>(shape, q, qmin, qmax)
    } else {
        with_ints::<i64>(shape, q, qmin, qmax)
    }
}

fn with_ints<I: Ints>(
    shape: &[usize],
    q: &QParams,
    qmin: i64,
    qmax: i64,
) -> Option<Box<dyn QdqKernel>> {
    let (qmin, qmax) = (I::of(qmin), I::of(qmax));
    let int_params = |zps: &[i64]| -> Vec<(f32, f32, I, f32)> {
        let scales = q.scale.iter();
        scales
            .zip(zps)
            .map(|(&s, &zp)| (1.0f32 / s, zp as f32, I::of(zp), s))
            .collect()
    };
    let float_params = |zps: &[f32]| -> Vec<(f32, f32, f32)> {
        let scales = q.scale.iter();
        scales
            .zip(zps)
            .map(|(&s, &zp)| (1.0f32 / s, zp, s))
            .collect()
    };
    match (q.axis, &q.zero_point) {
        (None, ZeroPoint::Int(zps)) => {
            let p = int_params(&zps[..1])[0];
            Some(Box::new(PerTensor::new(q, move |v: f32| {
                int_zero_point::<I, false>(v, p, qmin, qmax)
            })))
        }
        (None, ZeroPoint::Float(zps)) => {
            let p = float_params(&zps[..1])[0];
            Some(Box::new(PerTensor::new(q, move |v: f32| {
                float_zero_point(v, p, qmin, qmax)
            })))
        }
        (Some(axis), ZeroPoint::Int(zps)) => {
            let map =
                move |v: f32, p: &(f32, f32, I, f32)| int_zero_point::<I, true>(v, *p, qmin, qmax);
            let k = PerChannel::new(q, shape, axis, int_params(zps), map)?;
            Some(Box::new(k))
        }
        (Some(axis), ZeroPoint::Float(zps)) => {
            let map = move |v: f32, p: &(f32, f32, f32)| float_zero_point(v, *p, qmin, qmax);
            let k = PerChannel::new(q, shape, axis, float_params(zps), map)?;
            Some(Box::new(k))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Tensor;

    fn qp(scale: Vec<f32>, zp: ZeroPoint, qmin: i64, qmax: i64, axis: Option<usize>) -> QParams {
        let mut q = QParams::int(scale, zp, qmin, qmax, vec![], vec![]);
        q.axis = axis;
        q
    }

    fn fake_quantize(x: &Tensor, q: &QParams) -> Vec<f32> {
        crate::qdq::fake_quantize(x, kernel(&x.shape, q).unwrap().as_ref()).data
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
        let y = fake_quantize(&Tensor::from_vec(vec![1.896_488_8, -0.193_951_17]), &q);
        assert_eq!(y, vec![1.896_488_9, -0.193_951_17]);
    }

    #[test]
    fn clamps_and_rounds_half_to_even() {
        let q = qp(vec![0.5], ZeroPoint::Int(vec![2]), 0, 7, None);
        let y = fake_quantize(&Tensor::from_vec(vec![-5.0, 0.25, 0.75, 10.0]), &q);
        assert_eq!(y, vec![-1.0, 0.0, 1.0, 2.5]);
        let q = qp(
            vec![1.0, 0.5],
            ZeroPoint::Float(vec![0.5, 0.0]),
            0,
            3,
            Some(0),
        );
        let x = Tensor::new(vec![2, 2], vec![0.0, 9.0, 0.3, -1.0]).unwrap();
        // row 0: round(0 + 0.5) = 0 → -0.5; round(9.5) = 10 → 3 → 2.5. row 1: 0.6→1 → 0.5; -2 → 0.
        assert_eq!(fake_quantize(&x, &q), vec![-0.5, 2.5, 0.5, 0.0]);
    }

    /// Float32 integers give the bits of int64 ones wherever [`kernel`] chooses them.
    #[test]
    fn float32_integers_give_the_bits_of_int64() {
        let specials = [
            0.0,
            -0.0,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e30,
            -1e30,
            f32::MIN_POSITIVE,
            1e-40,
        ];
        let x: Vec<f32> = (0..4000)
            .map(|i| match i % 13 {
                0 => specials[(i / 13) % specials.len()],
                k => ((i as f32) * 0.618).sin() * 40.0 + k as f32 * 0.125,
            })
            .collect();
        let x = Tensor::new(vec![40, 100], x).unwrap();
        let zps = |v: &[i64]| ZeroPoint::Int(v.to_vec());
        let cases = [
            qp(vec![0.07], zps(&[3]), -128, 127, None),
            qp(vec![0.3], zps(&[-(1 << 24)]), -(1 << 24), 1 << 24, None),
            qp(vec![0.07], ZeroPoint::Float(vec![0.3]), 0, 255, None),
            qp(vec![0.05; 100], zps(&[7; 100]), 0, 15, Some(1)),
            qp(
                vec![0.05; 40],
                ZeroPoint::Float(vec![1.5; 40]),
                0,
                15,
                Some(0),
            ),
        ];
        for q in cases {
            let (qmin, qmax) = q.grid.int_range().unwrap();
            let float = with_ints::<f32>(&x.shape, &q, qmin, qmax).unwrap();
            let int = with_ints::<i64>(&x.shape, &q, qmin, qmax).unwrap();
            let bits = |k: &dyn QdqKernel| -> Vec<u32> {
                let y = crate::qdq::fake_quantize(&x, k).data;
                y.iter().map(|v| v.to_bits()).collect()
            };
            assert_eq!(bits(float.as_ref()), bits(int.as_ref()), "{q:?}");
        }
    }
}
