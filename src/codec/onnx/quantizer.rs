//! ONNX Runtime's weight quantizer (`quantize_static`, QDQ format), as
//! `onnxruntime/quantization/qdq_quantizer.py` `_calc_initializer_quant_params` and
//! `quant_utils.py` compute and store it, for the codec `onnx.dequantize_linear`.
//!
//! **Code range.** `(qmin, qmax)` is the type's range, except that symmetric `int8` and `int16`
//! give up their most negative code: `(−127, 127)`, `(−32767, 32767)`
//! (`get_qmin_qmax_for_qType`, `ONNX_INT_TYPE_SYMMETRIC_RANGE`).
//!
//! **Per tensor and per axis** (`compute_scale_zp`, once per tensor or per slice along `axis`):
//! * `rmin = min(min x, 0)`, `rmax = max(max x, 0)` in float32; symmetric:
//!   `rmax = max(|rmin|, |rmax|)`, `rmin = −rmax`;
//! * `s = (f64(rmax) − f64(rmin)) / (qmax − qmin)` in float64;
//! * `s < 2⁻¹²⁶` (float32's smallest normal): `s = 1`, `zp = 0`;
//! * otherwise `zp = round((qmin + qmax)/2)` (symmetric: 0, 128, 0, 32768, 0, 8 for int8, uint8,
//!   int16, uint16, int4, uint4) or `zp = round(qmin − rmin/s)` in float64, and `s` is stored
//!   as float32. `round` is numpy's, ties to even.
//!
//! **Blocked** (`compute_scale_zp_blocked`, rank-2 weights only): per block of `block_size`
//! along `axis` and per position on the other axis, the same `rmin`/`rmax`, but
//! `s = f32(f64(rmax − rmin) / (qmax − qmin))` — the range subtracted in float32 and the scale
//! rounded to float32 *before* the zero point `zp = clip(round(qmin − f64(rmin)/f64(s)), qmin,
//! qmax)` is computed from it; a degenerate block (`s < 2⁻¹²⁶`) stores `s = 1` and, when
//! asymmetric, `zp = 0`.
//!
//! **Codes** (`quantize_nparray`): `q = clip(round(f32(x) / s) + zp, qmin, qmax)`, the division
//! and the addition in float32, `round` ties to even, the clip to the type's full range.
//! `int4`/`uint4` codes and zero points are packed two per byte, low nibble first
//! (`pack_bytes_to_4bit`), an odd count's last high nibble 0.
//!
//! **Symmetric by default** (`BaseQuantizer.is_weight_symmetric`,
//! `_calc_initializer_quant_params`): per-axis weights always; per-tensor and blocked weights
//! when the type is signed (`int4`, `int8`, `int16`). Unsigned types are asymmetric unless
//! `WeightSymmetric` says otherwise — the `symmetric` parameter.
//!
//! `int32` is ONNX Runtime's bias type, whose scale is the input's scale times the weight's:
//! it cannot be computed from the tensor alone, and encoding to it is refused.

use super::{DequantizeLinear, DqGranularity, QType};
use crate::codec::{Encoded, Stored};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Where the rule is written.
pub const SOURCE: &str = "onnxruntime/quantization/qdq_quantizer.py _calc_initializer_quant_params, \
     quant_utils.py compute_scale_zp / compute_scale_zp_blocked / quantize_nparray (ONNX Runtime 1.31.1)";

/// Whether `quantize_static` quantizes a weight of `dtype` and `granularity` symmetrically
/// when `WeightSymmetric` is not given.
pub fn symmetric_by_default(dtype: QType, granularity: DqGranularity) -> bool {
    granularity == DqGranularity::PerAxis
        || matches!(dtype, QType::Int4 | QType::Int8 | QType::Int16)
}

/// `(qmin, qmax)` of `get_qmin_qmax_for_qType(dtype, symmetric=symmetric)`.
fn code_range(dtype: QType, symmetric: bool) -> (i64, i64) {
    match (dtype, symmetric) {
        (QType::Int8, true) => (-127, 127),
        (QType::Int16, true) => (-32767, 32767),
        _ => dtype.code_range(),
    }
}

/// The zero point of a symmetric range: `round((qmin + qmax) / 2)`, ties to even.
pub fn symmetric_zero_point(dtype: QType) -> i64 {
    let (qmin, qmax) = code_range(dtype, true);
    ((qmin + qmax) as f64 / 2.0).round_ties_even() as i64
}

/// One slice's scale and zero point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Qparams {
    pub scale: f32,
    pub zero_point: i64,
}

/// `rmin = min(lo, 0)`, `rmax = max(hi, 0)`, symmetrised when asked (float32).
fn rectified(lo: f32, hi: f32, symmetric: bool) -> (f32, f32) {
    let (rmin, rmax) = (lo.min(0.0), hi.max(0.0));
    if symmetric {
        let absmax = rmin.abs().max(rmax.abs());
        (-absmax, absmax)
    } else {
        (rmin, rmax)
    }
}

/// `compute_scale_zp` of the range `[lo, hi]` of a tensor or channel.
fn per_slice(lo: f32, hi: f32, dtype: QType, symmetric: bool) -> Qparams {
    let (qmin, qmax) = code_range(dtype, symmetric);
    let (rmin, rmax) = rectified(lo, hi, symmetric);
    let scale = (f64::from(rmax) - f64::from(rmin)) / (qmax as f64 - qmin as f64);
    if scale < f64::from(f32::MIN_POSITIVE) {
        return Qparams {
            scale: 1.0,
            zero_point: 0,
        };
    }
    let zero_point = if symmetric {
        symmetric_zero_point(dtype)
    } else {
        (qmin as f64 - f64::from(rmin) / scale).round_ties_even() as i64
    };
    Qparams {
        scale: scale as f32,
        zero_point,
    }
}

/// `compute_scale_zp_blocked` of the range `[lo, hi]` of one block.
fn per_block(lo: f32, hi: f32, dtype: QType, symmetric: bool) -> Qparams {
    let (qmin, qmax) = code_range(dtype, symmetric);
    let (rmin, rmax) = rectified(lo, hi, symmetric);
    let raw = (f64::from(rmax - rmin) / (qmax as f64 - qmin as f64)) as f32;
    let degenerate = raw < f32::MIN_POSITIVE;
    let scale = if degenerate { 1.0 } else { raw };
    let zero_point = if symmetric {
        symmetric_zero_point(dtype)
    } else if degenerate {
        0
    } else {
        (qmin as f64 - f64::from(rmin) / f64::from(scale))
            .round_ties_even()
            .clamp(qmin as f64, qmax as f64) as i64
    };
    Qparams { scale, zero_point }
}

/// `quantize_nparray`: `clip(round(x / s) + zp, qmin, qmax)` in float32 over the full range.
#[inline]
fn code(x: f32, q: Qparams, full: (i64, i64)) -> i64 {
    let v = (x / q.scale).round_ties_even() + q.zero_point as f32;
    v.clamp(full.0 as f32, full.1 as f32) as i64
}

/// The stored array of `codes` in `dtype` (4-bit types packed two per byte, low nibble first).
fn stored(dtype: QType, codes: &[i64]) -> Stored {
    match dtype {
        QType::Int8 => Stored::I8(codes.iter().map(|&q| q as i8).collect()),
        QType::Uint8 => Stored::U8(codes.iter().map(|&q| q as u8).collect()),
        QType::Int16 => Stored::I16(codes.iter().map(|&q| q as i16).collect()),
        QType::Uint16 => Stored::U16(codes.iter().map(|&q| q as u16).collect()),
        QType::Int32 => Stored::I32(codes.iter().map(|&q| q as i32).collect()),
        QType::Int4 | QType::Uint4 => Stored::U8(
            codes
                .chunks(2)
                .map(|pair| {
                    let lo = (pair[0] as u8) & 0x0f;
                    let hi = pair.get(1).map_or(0, |&q| (q as u8) & 0x0f);
                    lo | hi << 4
                })
                .collect(),
        ),
    }
}

impl DequantizeLinear {
    /// Whether this configuration quantizes symmetrically.
    pub fn is_symmetric(&self) -> bool {
        self.symmetric
            .unwrap_or_else(|| symmetric_by_default(self.dtype, self.granularity))
    }

    /// `quantize_static`'s weight: codes, scales and zero points as ONNX Runtime writes them.
    pub(super) fn quantize(&self, t: &Tensor) -> Result<Encoded> {
        if self.dtype == QType::Int32 {
            return Err(Error::param(
                "dtype",
                "ONNX Runtime quantizes to int32 only biases, with the input's scale times the weight's: \
                 that scale is not computed from the tensor, so encoding to int32 is not reproduced",
            ));
        }
        if t.data.is_empty() {
            return Err(Error::input(
                "ONNX Runtime's quantizer needs a non-empty tensor",
            ));
        }
        if let Some(bad) = t.data.iter().find(|v| !v.is_finite()) {
            return Err(Error::input(format!(
                "ONNX Runtime's quantizer needs finite values, the tensor holds {bad}"
            )));
        }
        let symmetric = self.is_symmetric();
        let shape = t.shape.clone();
        let scale_shape = match self.granularity {
            DqGranularity::PerTensor => Vec::new(),
            DqGranularity::PerAxis => {
                vec![shape.get(self.axis_index(&shape)?).copied().unwrap_or(1)]
            }
            DqGranularity::Blocked => {
                if shape.len() != 2 {
                    return Err(Error::input(format!(
                        "ONNX Runtime quantizes blocks (opset 21) only of rank-2 weights, not shape {shape:?}"
                    )));
                }
                let axis = self.axis_index(&shape)?;
                let mut s = shape.clone();
                s[axis] = shape[axis].div_ceil(self.block_size.max(1));
                s
            }
        };
        let (map, count) = self.scale_map(&shape, &scale_shape)?;
        // Each slice's range, then its scale and zero point.
        let mut lo = vec![f32::INFINITY; count];
        let mut hi = vec![f32::NEG_INFINITY; count];
        map.each(|i, s| {
            lo[s] = lo[s].min(t.data[i]);
            hi[s] = hi[s].max(t.data[i]);
        });
        let qparams: Vec<Qparams> = lo
            .iter()
            .zip(&hi)
            .map(|(&l, &h)| match self.granularity {
                DqGranularity::Blocked => per_block(l, h, self.dtype, symmetric),
                _ => per_slice(l, h, self.dtype, symmetric),
            })
            .collect();
        let full = self.dtype.code_range();
        let mut codes = vec![0i64; t.data.len()];
        map.each(|i, s| codes[i] = code(t.data[i], qparams[s], full));
        let zero_points: Vec<i64> = qparams.iter().map(|q| q.zero_point).collect();
        Ok(Encoded::new(&shape)
            .with("x", shape.clone(), stored(self.dtype, &codes))
            .with(
                "x_scale",
                scale_shape.clone(),
                Stored::F32(qparams.iter().map(|q| q.scale).collect()),
            )
            .with(
                "x_zero_point",
                scale_shape,
                stored(self.dtype, &zero_points),
            ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_zero_points_are_onnx_runtimes() {
        let zp: Vec<i64> = [
            QType::Int8,
            QType::Uint8,
            QType::Int16,
            QType::Uint16,
            QType::Int4,
            QType::Uint4,
        ]
        .map(symmetric_zero_point)
        .to_vec();
        assert_eq!(zp, [0, 128, 0, 32768, 0, 8]);
    }

    #[test]
    fn a_zero_range_stores_scale_one() {
        let q = per_slice(0.0, 0.0, QType::Uint8, true);
        assert_eq!((q.scale, q.zero_point), (1.0, 0));
        let q = per_block(0.0, 0.0, QType::Uint4, true);
        assert_eq!((q.scale, q.zero_point), (1.0, 8));
        let q = per_block(0.0, 0.0, QType::Uint4, false);
        assert_eq!((q.scale, q.zero_point), (1.0, 0));
    }
}
