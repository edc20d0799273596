//! ModelOpt's fake quantization (`tensor_quant.py`) and the scale convention of its amax.
//!
//! * Integer (`_tensor_quant`, float32): `max_bound = 2^(num_bits − 1 + unsigned) − 1`,
//!   `min_bound = 0` (unsigned), `−max_bound` (narrow range) or `−max_bound − 1`;
//!   `scale = max_bound/amax`; `y = clamp(round_half_even(x·scale), min_bound, max_bound)/scale`;
//!   an `amax ≤ 2⁻²⁴` quantizes to 0. Unsigned quantization of negative values raises TypeError.
//! * FP8 E4M3 (`num_bits = (4, 3)`, `_fp8_eager`): `scale = 448/amax` (amax ≤ 2⁻²⁴ → 1),
//!   `y = e4m3fn(clamp(x·scale, ±448))·(1/scale)`, rounding to nearest even.
//! * The scale quantscope reports is `amax/max_bound` (`amax/448` for FP8), zero point 0.

use crate::derivation::{self, Step};
use crate::error::{Error, Result, Stage};
use crate::observer::{Grid, QParams, ZeroPoint};
use crate::params::Bits;
use crate::quant::{round_half_even, ChannelIndexer};
use crate::tensor::Tensor;

/// `1.0 / (1 << 24)`: amax at or below this quantizes everything to 0.
pub const EPSILON: f32 = 1.0 / (1 << 24) as f32;

/// The float formats `num_bits = (E, M)` that ModelOpt 0.47's `QuantizerAttributeConfig`
/// accepts without dynamic block quantization (which none of these calibrators do): FP8 E4M3 and
/// FP4 E2M1 (`validate_num_bits`; E5M2, E3M2, E2M3, E1M2, E0M3 and E3M0 need `block_sizes`
/// `type: dynamic`). Only E4M3 quantizes per tensor or per channel; E2M1 raises
/// `NotImplementedError("Only support E=4 & M=3 for now.")` in `ScaledE4M3Function.forward`.
pub const FLOAT_FORMATS: &[[i64; 2]] = &[[4, 3], [2, 1]];

crate::declare_params! {
    /// The quantizer attributes that shape ModelOpt's grid (`QuantizerAttributeConfig`). No
    /// calibrator collects anything differently for them: they are search parameters.
    pub struct QuantizerArgs {
        /// integer bit width, or [4, 3] for FP8 E4M3 ([2, 1], FP4 E2M1, is accepted by the
        /// configuration but not by the per-tensor quantizer)
        num_bits: Bits = Bits::Int(8); bits(1, 16, FLOAT_FORMATS), Search;
        /// unsigned grid 0..2^num_bits − 1
        unsigned: bool = false; boolean(), Search;
        /// signed grid −(2^(b−1) − 1)..2^(b−1) − 1 (otherwise down to −2^(b−1)); fake
        /// quantization only
        narrow_range: bool = true; boolean(), Search;
    }
}

/// torch.clamp(x, lo, hi) = min(max(x, lo), hi), NaN propagating.
fn torch_clamp(x: f32, lo: f32, hi: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    let y = if x < lo { lo } else { x };
    if y > hi {
        hi
    } else {
        y
    }
}

/// `max_bound` and `min_bound` of `_tensor_quant` for an integer bit width (float32).
pub fn bounds(num_bits: i64, unsigned: bool, narrow_range: bool) -> (f32, f32) {
    let max_bound = (2.0f64.powi((num_bits - 1 + unsigned as i64) as i32) - 1.0) as f32;
    let min_bound = if unsigned {
        0.0
    } else if narrow_range {
        -max_bound
    } else {
        -max_bound - 1.0
    };
    (min_bound, max_bound)
}

/// `_tensor_quant` of one value with one amax (float32), without the unsigned check.
pub fn tensor_quant_value(x: f32, amax: f32, min_bound: f32, max_bound: f32) -> f32 {
    let zero = amax <= EPSILON;
    let scale = if zero { 0.0 } else { max_bound / amax };
    let q = torch_clamp(round_half_even(x * scale), min_bound, max_bound);
    q / if zero { 1.0 } else { scale }
}

/// Round a float32 to the nearest FP8 E4M3FN value (ties to even); |x| ≤ 448 expected.
pub fn round_e4m3fn(x: f32) -> f32 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let a = x.abs();
    let exp = (((a.to_bits() >> 23) & 0xff) as i32 - 127).max(-6);
    let step = 2.0f32.powi(exp - 3);
    let r = round_half_even(a / step) * step;
    crate::quant::copysign(r, x)
}

/// `_fp8_eager(x, amax)` of one value.
pub fn e4m3_value(x: f32, amax: f32) -> f32 {
    let safe = if amax <= EPSILON { 1.0 } else { amax };
    let scale = 448.0f32 / safe;
    let inv = 1.0f32 / scale;
    round_e4m3fn((x * scale).clamp(-448.0, 448.0)) * inv
}

/// `_tensor_quant` (`scale = max_bound / amax`), nvidia-modelopt 0.47.0.
const TENSOR_QUANT: &str =
    "modelopt/torch/quantization/tensor_quant.py:607 (nvidia-modelopt 0.47.0); \
                            fp8: _fp8_eager at :46";

/// The [`QParams`] of amax values (one per tensor or per channel along `axis`).
pub fn qparams_from_amax(
    amax: Vec<f32>,
    axis: Option<usize>,
    cfg: &QuantizerArgs,
) -> Result<QParams> {
    let (grid, maxbound) = match cfg.num_bits {
        Bits::Int(b) => {
            let (lo, hi) = bounds(b, cfg.unsigned, cfg.narrow_range);
            (
                Grid::Int {
                    quant_min: lo as i64,
                    quant_max: hi as i64,
                },
                (2.0f64.powi((b - 1 + cfg.unsigned as i64) as i32) - 1.0) as f32,
            )
        }
        Bits::Float {
            exponent: 4,
            mantissa: 3,
        } => (
            Grid::Float {
                format: "fp8_e4m3".into(),
                max: 448.0,
            },
            448.0,
        ),
        Bits::Float { .. } => {
            return Err(Error::framework(
                "NotImplementedError",
                "Only support E=4 & M=3 for now.",
                Stage::CalculateQparams,
            ))
        }
    };
    let scale: Vec<f32> = amax.iter().map(|&a| a / maxbound).collect();
    let lo: Vec<f32> = amax
        .iter()
        .map(|&a| if cfg.unsigned { 0.0 } else { -a })
        .collect();
    let zero_point = ZeroPoint::Int(vec![0; scale.len()]);
    derivation::record_qparams(
        || {
            let mut step = Step::new(
                "Scale from amax",
                "ModelOpt quantizes x·(maxbound / amax); the equivalent scale is s = amax / maxbound \
                 (maxbound = 2^(bits − 1 + unsigned) − 1, or 448 for fp8 e4m3); zp = 0",
                TENSOR_QUANT,
            );
            if let [a] = amax[..] {
                step = step.value("amax", a);
            }
            step.value("maxbound", maxbound)
        },
        &lo,
        &amax,
        &scale,
        &zero_point,
    );
    Ok(QParams {
        zero_point,
        scale,
        grid,
        axis,
        min_val: lo,
        max_val: amax.clone(),
        clip_range: None,
        amax: Some(amax),
        extra: serde_json::Map::new(),
        notes: Vec::new(),
    })
}

/// The fused kernel of [`fake_quantize`] (see [`crate::qdq`]): the same per-element functions
/// per tensor, or per channel when `q` has an axis and several amax values. Unsigned integer
/// grids keep the two-step path, whose first step refuses negative inputs (ModelOpt's
/// `TypeError`, which the report shows): so the ModelOpt observers keep [`fake_quantize`].
pub fn qdq_kernel(
    shape: &[usize],
    q: &QParams,
    cfg: &QuantizerArgs,
) -> Option<Box<dyn crate::qdq::QdqKernel>> {
    use crate::qdq::{PerChannel, PerTensor};
    let amax = q.amax.as_ref().filter(|a| !a.is_empty())?;
    match cfg.num_bits {
        Bits::Int(b) if !cfg.unsigned => {
            let (lo, hi) = bounds(b, cfg.unsigned, cfg.narrow_range);
            match q.axis {
                None if amax.len() == 1 => {
                    let a = amax[0];
                    Some(Box::new(PerTensor::new(q, move |v: f32| {
                        tensor_quant_value(v, a, lo, hi)
                    })))
                }
                Some(axis) if amax.len() > 1 => {
                    let k =
                        PerChannel::new(q, shape, axis, amax.clone(), move |v: f32, a: &f32| {
                            tensor_quant_value(v, *a, lo, hi)
                        })?;
                    Some(Box::new(k))
                }
                _ => None,
            }
        }
        Bits::Float {
            exponent: 4,
            mantissa: 3,
        } => match q.axis {
            None if amax.len() == 1 => {
                let a = amax[0];
                Some(Box::new(PerTensor::new(q, move |v: f32| e4m3_value(v, a))))
            }
            Some(axis) if amax.len() > 1 => {
                let k = PerChannel::new(q, shape, axis, amax.clone(), |v: f32, a: &f32| {
                    e4m3_value(v, *a)
                })?;
                Some(Box::new(k))
            }
            _ => None,
        },
        _ => None,
    }
}

/// `fake_tensor_quant(x, amax, None, num_bits, unsigned, narrow_range)` or
/// `scaled_e4m3(x, amax, None, 4, 3)` with the amax of `q`.
pub fn fake_quantize(x: &Tensor, q: &QParams, cfg: &QuantizerArgs) -> Result<Tensor> {
    let amax = q
        .amax
        .as_ref()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| Error::input("ModelOpt fake quantization needs an amax"))?;
    let indexer = match q.axis {
        Some(axis) if amax.len() > 1 => {
            if axis >= x.ndim() || x.shape[axis] != amax.len() {
                return Err(Error::input(format!(
                    "per-channel amax has {} values but axis {axis} of shape {:?} does not match",
                    amax.len(),
                    x.shape
                )));
            }
            Some(ChannelIndexer::new(&x.shape, axis))
        }
        _ => None,
    };
    let channel = |i: usize| indexer.map_or(0, |ix| ix.channel(i));
    let data: Vec<f32> = match cfg.num_bits {
        Bits::Int(b) => {
            if cfg.unsigned && x.data.iter().any(|&v| v < 0.0) {
                return Err(Error::framework(
                    "TypeError",
                    "Negative values encountered in unsigned quantization.",
                    Stage::Forward,
                ));
            }
            let (lo, hi) = bounds(b, cfg.unsigned, cfg.narrow_range);
            x.data
                .iter()
                .enumerate()
                .map(|(i, &v)| tensor_quant_value(v, amax[channel(i)], lo, hi))
                .collect()
        }
        Bits::Float {
            exponent: 4,
            mantissa: 3,
        } => x
            .data
            .iter()
            .enumerate()
            .map(|(i, &v)| e4m3_value(v, amax[channel(i)]))
            .collect(),
        Bits::Float { .. } => {
            return Err(Error::framework(
                "NotImplementedError",
                "Only support E=4 & M=3 for now.",
                Stage::Forward,
            ))
        }
    };
    Ok(x.with_data(data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_fake_quant_scales_by_maxbound_over_amax() {
        let (lo, hi) = bounds(8, false, true);
        assert_eq!((lo, hi), (-127.0, 127.0));
        assert_eq!(bounds(8, false, false), (-128.0, 127.0));
        assert_eq!(bounds(8, true, true), (0.0, 255.0));
        assert_eq!(bounds(4, false, true), (-7.0, 7.0));
        // amax 127: the grid is the integers.
        assert_eq!(tensor_quant_value(2.5, 127.0, lo, hi), 2.0);
        assert_eq!(tensor_quant_value(-300.0, 127.0, lo, hi), -127.0);
        // amax ≤ 2^-24 → 0.
        assert_eq!(tensor_quant_value(5.0, 0.0, lo, hi), 0.0);
    }

    #[test]
    fn e4m3_rounds_to_nearest_even_with_subnormals() {
        assert_eq!(round_e4m3fn(1.0625), 1.0); // halfway between 1 and 1.125 → even
        assert_eq!(round_e4m3fn(1.1875), 1.25);
        assert_eq!(round_e4m3fn(300.0), 288.0);
        assert_eq!(round_e4m3fn(-0.0009), 0.0); // below half the smallest subnormal
        assert_eq!(round_e4m3fn(0.0015), 0.001953125); // 2^-9
        assert_eq!(round_e4m3fn(448.0), 448.0);
        assert_eq!(e4m3_value(448.0, 448.0), 448.0);
    }

    #[test]
    fn scale_is_amax_over_maxbound() {
        let cfg = QuantizerArgs {
            num_bits: Bits::Int(8),
            unsigned: false,
            narrow_range: true,
        };
        let q = qparams_from_amax(vec![120.0], None, &cfg).unwrap();
        assert_eq!(q.scale[0] as f64, 0.9448819160461426);
        let fp8 = QuantizerArgs {
            num_bits: Bits::Float {
                exponent: 4,
                mantissa: 3,
            },
            ..cfg
        };
        assert_eq!(
            qparams_from_amax(vec![448.0], None, &fp8).unwrap().scale,
            vec![1.0]
        );
        let unsigned = QuantizerArgs {
            unsigned: true,
            ..cfg
        };
        let x = Tensor::from_vec(vec![-1.0]);
        let q = qparams_from_amax(vec![1.0], None, &unsigned).unwrap();
        assert!(fake_quantize(&x, &q, &unsigned).is_err());
    }

    proptest::proptest! {
        #[test]
        fn e4m3_rounding_is_idempotent_and_nearest(x in -448f32..448.0) {
            let r = round_e4m3fn(x);
            proptest::prop_assert_eq!(round_e4m3fn(r), r);
            let exp = (((x.abs().to_bits() >> 23) & 0xff) as i32 - 127).max(-6);
            let half_step = 2f32.powi(exp - 4);
            proptest::prop_assert!((r - x).abs() <= half_step, "{} -> {}", x, r);
            proptest::prop_assert!(r.abs() <= 448.0);
        }

        #[test]
        fn integer_fake_quant_stays_within_amax(x in -1e3f32..1e3, amax in 1e-3f32..1e3, bits in 2i64..9) {
            let (lo, hi) = bounds(bits, false, true);
            let y = tensor_quant_value(x, amax, lo, hi);
            proptest::prop_assert!(y.abs() <= amax * (1.0 + 1e-6));
        }
    }
}
