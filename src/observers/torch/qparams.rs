//! `UniformQuantizationObserverBase._calculate_qparams` (torch 2.15), in float32.
//!
//! With `min⁻ = min(min_val, 0)` and `max⁺ = max(max_val, 0)`:
//! * affine: `s = max((max⁺ − min⁻)/(qmax − qmin), eps)`,
//!   `zp = clamp(qmin − int32(round_half_even(min⁻/s)), qmin, qmax)` (int32);
//! * symmetric: `s = max(max(−min⁻, max⁺) / ((qmax − qmin)/2), eps)`; `zp = 0` (int64), except
//!   quint8/uint8: 128, or `(qmin + qmax) // 2` with a custom range; uint16: 2¹⁵;
//! * `per_channel_affine_float_qparams`: `s = (max − min)/(qmax − qmin)`, replaced by 1.0 where
//!   `s <= eps`; `zp = −min/s` (float32, neither rounded nor clamped).
//!
//! `min == max` is not special-cased. An observer that saw nothing returns `([1.0], [0])`.

use super::config::{QDtype, QScheme, UniformConfig};
use crate::derivation::{self, Step};
use crate::error::{Error, Result, Stage};
use crate::kernels::torch::{f32_to_i32, maximum, minimum};
use crate::observer::{Grid, QParams, ZeroPoint};
use crate::params::Choice;
use serde_json::{Map, Value};

/// Scales and zero points as `_calculate_qparams` returns them.
#[derive(Debug, Clone, PartialEq)]
pub struct Computed {
    pub scale: Vec<f32>,
    pub zero_point: ZeroPoint,
    /// PyTorch's dtype of the zero point tensor (`int32`, `int64` or `float32`).
    pub zero_point_dtype: &'static str,
    /// False when the observer had no data and PyTorch's defaults were returned.
    pub observed: bool,
}

/// How the min/max buffers are shaped: a 0-d tensor (per-tensor observers) or a vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffers {
    Scalar,
    PerChannel,
}

/// `_calculate_qparams(min_val, max_val)` for `cfg`.
pub fn calculate(
    cfg: &UniformConfig,
    min_val: &[f32],
    max_val: &[f32],
    shape: Buffers,
) -> Result<Computed> {
    if !check_min_max_valid(min_val, max_val, shape)? {
        let computed = Computed {
            scale: vec![1.0],
            zero_point: ZeroPoint::Int(vec![0]),
            zero_point_dtype: "int64",
            observed: false,
        };
        derivation::record_qparams(
            || {
                Step::new(
                    "No data observed: PyTorch's default scale and zero point",
                    "min_val = +inf and max_val = −inf, so check_min_max_valid is false and \
                     _calculate_qparams returns s = 1.0, zp = 0",
                    CHECK_MIN_MAX_VALID,
                )
            },
            min_val,
            max_val,
            &computed.scale,
            &computed.zero_point,
        );
        return Ok(computed);
    }
    let computed = scale_and_zero_point(cfg, min_val, max_val);
    derivation::record_qparams(
        || {
            let formula = match cfg.qscheme {
                QScheme::PerTensorSymmetric | QScheme::PerChannelSymmetric => {
                    "s = max(max(−min(min_val, 0), max(max_val, 0)) / ((quant_max − quant_min) / 2), eps); \
                     zp = 0 (128 for quint8/uint8, (quant_min + quant_max) // 2 with a custom range, 2¹⁵ for uint16)"
                }
                QScheme::PerChannelAffineFloatQparams => {
                    "s = (max_val − min_val) / (quant_max − quant_min), 1.0 where s ≤ eps; zp = −min_val / s (float)"
                }
                QScheme::PerTensorAffine | QScheme::PerChannelAffine => {
                    "s = max((max(max_val, 0) − min(min_val, 0)) / (quant_max − quant_min), eps); \
                     zp = clamp(quant_min − round_half_even(min(min_val, 0) / s), quant_min, quant_max)"
                }
            };
            let mut step = Step::new("Scale and zero point", formula, CALCULATE_QPARAMS);
            if min_val.len() == 1 {
                step = step
                    .value("min_val", min_val[0])
                    .value("max_val", max_val[0]);
            }
            step.value("quant_min", cfg.quant_min)
                .value("quant_max", cfg.quant_max)
                .value("eps", cfg.eps)
        },
        min_val,
        max_val,
        &computed.scale,
        &computed.zero_point,
    );
    Ok(computed)
}

/// `UniformQuantizationObserverBase._calculate_qparams`, torch 2.15.0.
pub const CALCULATE_QPARAMS: &str = "torch/ao/quantization/observer.py:349 (torch 2.15.0)";
/// `torch.ao.quantization.utils.check_min_max_valid`, torch 2.15.0.
const CHECK_MIN_MAX_VALID: &str = "torch/ao/quantization/utils.py:414 (torch 2.15.0)";

/// The scales and zero points of valid ranges `min_val`..`max_val`.
fn scale_and_zero_point(cfg: &UniformConfig, min_val: &[f32], max_val: &[f32]) -> Computed {
    let (qmin, qmax) = (cfg.quant_min, cfg.quant_max);
    let span = (qmax - qmin) as f64;
    let eps = cfg.eps;
    let pairs = min_val.iter().zip(max_val);
    match cfg.qscheme {
        QScheme::PerTensorSymmetric | QScheme::PerChannelSymmetric => {
            let divisor = (span / 2.0) as f32;
            let scale: Vec<f32> = pairs
                .map(|(&lo, &hi)| {
                    let min_neg = minimum(lo, 0.0);
                    let max_pos = maximum(hi, 0.0);
                    maximum(maximum(-min_neg, max_pos) / divisor, eps)
                })
                .collect();
            let zp = match cfg.dtype {
                QDtype::QUInt8 | QDtype::UInt8 if cfg.has_customized_qrange => {
                    (qmin + qmax).div_euclid(2)
                }
                QDtype::QUInt8 | QDtype::UInt8 => 128,
                QDtype::UInt16 => 1 << 15,
                _ => 0,
            };
            Computed {
                zero_point: ZeroPoint::Int(vec![zp; scale.len()]),
                scale,
                zero_point_dtype: "int64",
                observed: true,
            }
        }
        QScheme::PerChannelAffineFloatQparams => {
            let divisor = span as f32;
            let (scale, zp): (Vec<f32>, Vec<f32>) = pairs
                .map(|(&lo, &hi)| {
                    let s = (hi - lo) / divisor;
                    let s = if s > eps { s } else { 1.0 };
                    (s, -lo / s)
                })
                .unzip();
            Computed {
                scale,
                zero_point: ZeroPoint::Float(zp),
                zero_point_dtype: "float32",
                observed: true,
            }
        }
        QScheme::PerTensorAffine | QScheme::PerChannelAffine => {
            let divisor = span as f32;
            let (scale, zp): (Vec<f32>, Vec<i64>) = pairs
                .map(|(&lo, &hi)| {
                    let min_neg = minimum(lo, 0.0);
                    let max_pos = maximum(hi, 0.0);
                    let s = maximum((max_pos - min_neg) / divisor, eps);
                    let rounded = f32_to_i32((min_neg / s).round_ties_even());
                    // `quant_min - int32 tensor` wraps in int32, then `clamp`.
                    let zp = (qmin as i32).wrapping_sub(rounded) as i64;
                    (s, zp.clamp(qmin, qmax))
                })
                .unzip();
            Computed {
                scale,
                zero_point: ZeroPoint::Int(zp),
                zero_point_dtype: "int32",
                observed: true,
            }
        }
    }
}

/// `torch.ao.quantization.utils.check_min_max_valid`: false for an observer that saw nothing,
/// `AssertionError` when a minimum exceeds its maximum.
fn check_min_max_valid(min_val: &[f32], max_val: &[f32], shape: Buffers) -> Result<bool> {
    if min_val.is_empty() || max_val.is_empty() {
        return Ok(false);
    }
    if shape == Buffers::Scalar {
        let (lo, hi) = (min_val[0], max_val[0]);
        if lo == f32::INFINITY && hi == f32::NEG_INFINITY {
            return Ok(false);
        }
    }
    if min_val.iter().zip(max_val).any(|(lo, hi)| lo > hi) {
        return Err(Error::framework(
            "AssertionError",
            format!(
                "min {} should be less than max {}",
                tensor_repr(min_val, shape),
                tensor_repr(max_val, shape)
            ),
            Stage::CalculateQparams,
        ));
    }
    Ok(true)
}

/// An approximation of PyTorch's tensor repr (`tensor(0.5000)`, `tensor([1., 2.])`), used only
/// in error messages.
fn tensor_repr(values: &[f32], shape: Buffers) -> String {
    let integral = values.iter().all(|v| v.fract() == 0.0);
    let fmt = |v: &f32| {
        if integral {
            format!("{v}.")
        } else {
            format!("{v:.4}")
        }
    };
    match shape {
        Buffers::Scalar => format!("tensor({})", values.first().map(fmt).unwrap_or_default()),
        Buffers::PerChannel => format!(
            "tensor([{}])",
            values.iter().map(fmt).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Assemble the [`QParams`] of a uniform observer from its computed values and buffers.
pub fn to_qparams(
    cfg: &UniformConfig,
    computed: Computed,
    axis: Option<usize>,
    min_val: Vec<f32>,
    max_val: Vec<f32>,
) -> QParams {
    let mut extra = Map::new();
    extra.insert("dtype".into(), Value::from(cfg.dtype.name()));
    extra.insert("qscheme".into(), Value::from(cfg.qscheme.name()));
    extra.insert(
        "zero_point_dtype".into(),
        Value::from(computed.zero_point_dtype),
    );
    let mut notes = Vec::new();
    if !computed.observed {
        notes.push(
            "no data observed: PyTorch returns its default scale 1.0 and zero point 0".to_string(),
        );
    }
    if let ZeroPoint::Int(zps) = &computed.zero_point {
        if zps.iter().any(|&z| z < cfg.quant_min || z > cfg.quant_max) {
            notes.push(format!(
                "the zero point lies outside {}..{}: PyTorch's fake_quantize would refuse these qparams",
                cfg.quant_min, cfg.quant_max
            ));
        }
    }
    let per_channel = computed.observed && axis.is_some();
    QParams {
        scale: computed.scale,
        zero_point: computed.zero_point,
        grid: Grid::Int {
            quant_min: cfg.quant_min,
            quant_max: cfg.quant_max,
        },
        axis: if per_channel { axis } else { None },
        min_val,
        max_val,
        clip_range: None,
        amax: None,
        extra,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::torch::config::UniformArgs;
    use crate::params::{ParamSet, Params};
    use serde_json::json;

    fn cfg(mut p: Value, default: QScheme) -> UniformConfig {
        let qscheme = p
            .as_object_mut()
            .and_then(|o| o.remove("qscheme"))
            .and_then(|q| QScheme::from_name(q.as_str()?))
            .unwrap_or(default);
        let args = UniformArgs::from_params(&Params::from_value(p).unwrap()).unwrap();
        UniformConfig::resolve(&args, qscheme, &[]).unwrap()
    }

    fn per_tensor(p: Value, lo: f32, hi: f32) -> Computed {
        calculate(
            &cfg(p, QScheme::PerTensorAffine),
            &[lo],
            &[hi],
            Buffers::Scalar,
        )
        .unwrap()
    }

    #[test]
    fn affine_constant_and_zero_ranges_are_not_special_cased() {
        let c = per_tensor(json!({}), 0.75, 0.75);
        assert_eq!(c.scale, vec![0.75f32 / 255.0]);
        assert_eq!(c.zero_point, ZeroPoint::Int(vec![0]));
        let c = per_tensor(json!({}), 0.0, 0.0);
        assert_eq!(c.scale, vec![f32::EPSILON]);
        let c = per_tensor(json!({}), f32::INFINITY, f32::NEG_INFINITY);
        assert!(!c.observed);
        assert_eq!(c.scale, vec![1.0]);
    }

    #[test]
    fn affine_zero_point_rounds_half_to_even_and_clamps() {
        // min -1, max 1.55 → s = 2.55/255 = 0.01; -1/0.01 = -100 → zp 100.
        let c = per_tensor(json!({}), -1.0, 1.55);
        assert_eq!(c.zero_point, ZeroPoint::Int(vec![100]));
        // all positive: min⁻ = 0 → zp = qmin.
        let c = per_tensor(json!({"dtype": "qint8"}), 2.0, 3.0);
        assert_eq!(c.zero_point, ZeroPoint::Int(vec![-128]));
    }

    #[test]
    fn qint32_zero_points_wrap_like_pytorch() {
        // torch 2.15 MinMaxObserver(dtype=torch.qint32) on [lo, hi]: (scale, zero_point).
        let q = |lo, hi| per_tensor(json!({"dtype": "qint32"}), lo, hi);
        // -3000/scale leaves the int32 range: the conversion gives INT_MIN and 2^31 wraps to 0.
        let c = q(-3000.0, 10.0);
        assert_eq!(c.scale, vec![7.008_202_4e-7]);
        assert_eq!(c.zero_point, ZeroPoint::Int(vec![0]));
        assert_eq!(q(-5.0, 1e9).zero_point, ZeroPoint::Int(vec![-2147483627]));
        let c = q(-1e-3, 2.0);
        assert_eq!(c.scale, vec![f32::EPSILON]);
        assert_eq!(c.zero_point, ZeroPoint::Int(vec![-2147475259]));
    }

    #[test]
    fn symmetric_divisor_and_zero_points() {
        let c = per_tensor(
            json!({"dtype": "qint8", "qscheme": "per_tensor_symmetric"}),
            -2.0,
            1.0,
        );
        assert_eq!(c.scale, vec![2.0f32 / 127.5]);
        assert_eq!(c.zero_point, ZeroPoint::Int(vec![0]));
        let c = per_tensor(
            json!({"dtype": "qint8", "qscheme": "per_tensor_symmetric", "quant_min": -127, "quant_max": 127}),
            -2.0,
            1.0,
        );
        assert_eq!(c.scale, vec![2.0f32 / 127.0]);
        let c = per_tensor(json!({"qscheme": "per_tensor_symmetric"}), -2.0, 1.0);
        assert_eq!(c.zero_point, ZeroPoint::Int(vec![128]));
        let c = per_tensor(
            json!({"qscheme": "per_tensor_symmetric", "quant_min": 0, "quant_max": 15}),
            -2.0,
            1.0,
        );
        assert_eq!(c.zero_point, ZeroPoint::Int(vec![7]));
        let c = per_tensor(
            json!({"dtype": "uint16", "qscheme": "per_tensor_symmetric"}),
            -2.0,
            1.0,
        );
        assert_eq!(c.zero_point, ZeroPoint::Int(vec![32768]));
    }

    #[test]
    fn float_qparams_use_raw_range_and_unit_scale_for_flat_rows() {
        let c = cfg(
            json!({"qscheme": "per_channel_affine_float_qparams"}),
            QScheme::PerChannelAffine,
        );
        let out = calculate(&c, &[1.0, 0.5, 0.0], &[2.0, 0.5, 0.0], Buffers::PerChannel).unwrap();
        assert_eq!(out.scale, vec![1.0f32 / 255.0, 1.0, 1.0]);
        let ZeroPoint::Float(zp) = out.zero_point else {
            panic!("float zero points expected")
        };
        assert_eq!(zp[0], -1.0f32 / (1.0f32 / 255.0));
        assert_eq!(zp[1], -0.5);
        assert!(zp[2] == 0.0 && zp[2].is_sign_negative());
    }

    #[test]
    fn inverted_range_is_an_assertion() {
        let c = cfg(json!({}), QScheme::PerTensorAffine);
        let err = calculate(&c, &[2.0], &[1.0], Buffers::Scalar).unwrap_err();
        assert_eq!(
            err.to_string(),
            "AssertionError: min tensor(2.) should be less than max tensor(1.)"
        );
    }
}
