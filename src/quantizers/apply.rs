//! One tensor through one quantizer, by id: any format family of the registry (`int`, `half`,
//! `minifloat`, `mx`, `bfp`, `bnb.*`, `ggml.*`) or one of Quark's ONNX fine-tuning quantizers
//! (`quark.INTQuantizer`, `quark.FPQuantizer`, `quark.AdaroundINTQuantizer`, see
//! [`super::quark_onnx`]) — what `quantscope quantize` runs.
//!
//! The result is the dequantized tensor (the input's shape, float32) with its storage cost and
//! error: `mse`, `max_abs_err`, `sqnr_db = 10·log10(Σx²/Σ(x̂ − x)²)` and the share of values
//! beyond what their scale can represent (`clipped_fraction`), over the finite input values.
//!
//! Quark's quantizers take their parameters as given (they do not observe the tensor):
//! `scale` and `zero_point` (a number, or one per index of `ch_axis`), `min_q`, `max_q`
//! (`quark.FPQuantizer` defaults to `±finfo(quant_type).max`), `ch_axis` (default 0), and
//! `quant_type` (`float16`/`bfloat16`) for the float one, `use_soft_rounding` for AdaRound's
//! (a fresh quantizer: `α` initialised from the tensor itself). Their bits per value: the integer
//! width `⌈log2(max_q − min_q + 1)⌉` (16 for the float one) plus a float32 scale and a zero point
//! of that width per scale; a value is clipped when it lies outside `[(min_q − zp)·s,
//! (max_q − zp)·s]` (the one definition of [`crate::qdq`]).

use super::quark_onnx::{AdaroundIntQuantizer, FpQuantizer, IntQuantizer, QuantParams};
use crate::codec;
use crate::error::{Error, Result};
use crate::formats::half_cast::HalfType;
use crate::params::{validate_declared, ParamSet, Params};
use crate::qdq::{measure_ranges, SliceRanges};
use crate::quant::QdqMetrics;
use crate::tensor::Tensor;
use serde::Serialize;

/// Ids of the Quark quantizers [`quantize`] accepts besides the format families.
pub const QUARK_QUANTIZERS: [&str; 3] = [
    "quark.INTQuantizer",
    "quark.FPQuantizer",
    "quark.AdaroundINTQuantizer",
];

/// A quantize–dequantized tensor and what it cost.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Quantized {
    /// The quantizer id.
    pub quantizer: String,
    /// A readable label (`ggml.Q4_K (imatrix)`, `int4 per channel`, …).
    pub format: String,
    /// Storage per value, every stored scale included.
    pub bits_per_value: f64,
    #[serde(flatten)]
    pub metrics: QdqMetrics,
    /// The input's shape.
    pub shape: Vec<usize>,
    /// The dequantized values, row-major.
    #[serde(skip)]
    pub values: Vec<f32>,
}

/// Quantize–dequantize `t` with quantizer `id` and its parameters (the library's own keys).
pub fn quantize(id: &str, params: &Params, t: &Tensor) -> Result<Quantized> {
    if t.is_empty() {
        return Err(Error::input(format!("`{id}`: the tensor is empty")));
    }
    let (format, bits_per_value, values, metrics) = if QUARK_QUANTIZERS.contains(&id) {
        let (format, bits_per_value, values, ranges) = quark(id, params, t)?;
        let metrics = measure_ranges(&t.data, &values, &ranges).finish();
        (format, bits_per_value, values, metrics)
    } else {
        let entry = codec::find(id).map_err(|_| Error::Unknown {
            what: "quantizer",
            name: id.to_string(),
            hint: format!(
                " (known: {}, {})",
                codec::codecs()
                    .iter()
                    .map(|f| f.id)
                    .collect::<Vec<_>>()
                    .join(", "),
                QUARK_QUANTIZERS.join(", ")
            ),
        })?;
        let q = entry.build(params, &t.shape)?;
        let out = codec::quantize_dequantize(q.as_ref(), t)?;
        (
            q.label(),
            q.bits_per_value(&t.shape),
            out.values,
            out.metrics,
        )
    };
    Ok(Quantized {
        quantizer: id.to_string(),
        format,
        bits_per_value,
        metrics,
        shape: t.shape.clone(),
        values,
    })
}

crate::declare_params! {
    /// Parameters of Quark's integer quantizers (`quark.INTQuantizer`).
    pub struct QuarkIntArgs {
        /// the scale: one number, or one per index of ch_axis (required)
        scale: Option<Vec<f64>> = None; vector(), Data;
        /// the zero point: one number, or one per index of ch_axis
        zero_point: Vec<f64> = vec![0.0]; vector(), Data;
        /// lowest code
        min_q: f64 = -128.0; float(-2147483648.0, 2147483647.0), Data;
        /// highest code
        max_q: f64 = 127.0; float(-2147483648.0, 2147483647.0), Data;
        /// axis of per-channel scales
        ch_axis: i64 = 0; int(-8, 7), Data;
    }
}

crate::declare_params! {
    /// Parameters of `quark.AdaroundINTQuantizer` (a fresh quantizer: α from the tensor).
    pub struct QuarkAdaroundArgs {
        /// soft (rectified sigmoid) rounding instead of the hard decision
        use_soft_rounding: bool = true; boolean(), Data;
    }
    include { int: QuarkIntArgs }
}

crate::declare_params! {
    /// Parameters of `quark.FPQuantizer`.
    pub struct QuarkFpArgs {
        /// the half type
        quant_type: HalfType = HalfType::Float16; choice(), Data;
        /// the scale: one number, or one per index of ch_axis (required)
        scale: Option<Vec<f64>> = None; vector(), Data;
        /// the zero point: one number, or one per index of ch_axis
        zero_point: Vec<f64> = vec![0.0]; vector(), Data;
        /// lowest value (default −finfo(quant_type).max)
        min_q: Option<f64> = None; float(-3.5e38, 3.5e38), Data;
        /// highest value (default finfo(quant_type).max)
        max_q: Option<f64> = None; float(-3.5e38, 3.5e38), Data;
        /// axis of per-channel scales
        ch_axis: i64 = 0; int(-8, 7), Data;
    }
}

fn f32s(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// The scale a Quark quantizer needs: given, positive and finite.
fn required_scale(id: &str, scale: &Option<Vec<f64>>) -> Result<Vec<f32>> {
    let scale = scale
        .as_deref()
        .ok_or_else(|| Error::param("scale", format!("`{id}` needs a scale")))?;
    if let Some(s) = scale.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        return Err(Error::param(
            "scale",
            format!("must be positive and finite, got {s}"),
        ));
    }
    Ok(f32s(scale))
}

fn quark(id: &str, params: &Params, t: &Tensor) -> Result<(String, f64, Vec<f32>, SliceRanges)> {
    let specs = match id {
        "quark.FPQuantizer" => QuarkFpArgs::specs(),
        "quark.AdaroundINTQuantizer" => QuarkAdaroundArgs::specs(),
        _ => QuarkIntArgs::specs(),
    };
    validate_declared(&specs, params, id)?;
    let (half, soft_rounding, args) = match id {
        "quark.FPQuantizer" => {
            let a = QuarkFpArgs::from_params(params)?;
            let h = a.quant_type;
            let int = QuarkIntArgs {
                scale: a.scale,
                zero_point: a.zero_point,
                min_q: a.min_q.unwrap_or(-h.max() as f64),
                max_q: a.max_q.unwrap_or(h.max() as f64),
                ch_axis: a.ch_axis,
            };
            (Some(h), None, int)
        }
        "quark.AdaroundINTQuantizer" => {
            let a = QuarkAdaroundArgs::from_params(params)?;
            (None, Some(a.use_soft_rounding), a.int)
        }
        _ => (None, None, QuarkIntArgs::from_params(params)?),
    };
    let scale = required_scale(id, &args.scale)?;
    let zero_point = f32s(&args.zero_point);
    let (min_q, max_q, ch_axis) = (args.min_q as f32, args.max_q as f32, args.ch_axis);
    let qp = QuantParams::new(scale, zero_point, min_q, max_q, ch_axis)?;
    let slices = qp.scale.len().max(qp.zero_point.len()) as f64;
    let n = t.len() as f64;
    let (label, element_bits, values) = match half {
        Some(h) => {
            let q = FpQuantizer::new(qp.clone(), h);
            (
                format!("quark {} (scaled)", h.name()),
                16.0,
                q.quantize_dequantize(t)?.data,
            )
        }
        None => {
            let bits = ((max_q - min_q) as f64 + 1.0).log2().ceil().max(1.0);
            let values = if let Some(soft) = soft_rounding {
                let mut q = AdaroundIntQuantizer::new(qp.clone());
                q.use_soft_rounding = soft;
                q.quantize_dequantize(t)?.data
            } else {
                IntQuantizer::new(qp.clone()).quantize_dequantize(t)?.data
            };
            (format!("quark int{bits} [{min_q}, {max_q}]"), bits, values)
        }
    };
    let bits = element_bits + (32.0 + element_bits) * slices / n;
    Ok((label, bits, values, qp.ranges(&t.shape)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quark_int_quantizer_counts_clipping_and_scale_storage() {
        // scale 0.5, int4-like range −8..7: 5.0 → code 10 (clipped to 7 → 3.5), −1.2 → −2 → −1.0.
        let t = Tensor::from_vec(vec![5.0, -1.2, 0.26, -4.0]);
        let p = Params::from_json(r#"{"scale": 0.5, "min_q": -8, "max_q": 7}"#).unwrap();
        let q = quantize("quark.INTQuantizer", &p, &t).unwrap();
        assert_eq!(q.values, vec![3.5, -1.0, 0.5, -4.0]);
        assert_eq!(q.metrics.clipped_fraction, 0.25);
        // 4 bits + (32-bit scale + 4-bit zero point) over 4 values.
        assert_eq!(q.bits_per_value, 4.0 + 36.0 / 4.0);
        assert_eq!(q.format, "quark int4 [-8, 7]");
    }

    #[test]
    fn formats_and_errors_by_id() {
        let t = Tensor::new(vec![2, 32], (0..64).map(|i| i as f32 / 8.0 - 4.0).collect()).unwrap();
        let q = quantize("ggml.Q8_0", &Params::new(), &t).unwrap();
        assert_eq!(q.shape, vec![2, 32]);
        assert_eq!(q.bits_per_value, 8.5);
        assert!(q.metrics.mse < 1e-4);
        assert!(quantize("nope", &Params::new(), &t).is_err());
        assert!(quantize("quark.FPQuantizer", &Params::new(), &t).is_err());
        let empty = Tensor::new(vec![0], vec![]).unwrap();
        assert!(quantize("int", &Params::new(), &empty).is_err());
    }
}
