//! Quark ONNX fine-tuning quantizers (`quark.onnx.algorithm.finetuning.create_torch.
//! base_qdq_quantizers`, Quark 0.13): the differentiable stand-ins for QuantizeLinear /
//! DequantizeLinear that AdaRound/AdaQuant train through. Forward passes only, in float32.
//!
//! * [`round_half_to_even`] — `RoundHalfToEven` (`torch.round`).
//! * [`IntQuantizer`] — `q = clamp(round(x / s) + zp, min_q, max_q)`, `x̂ = (q − zp)·s`; scale and
//!   zero point are one value (per tensor) or one per index of `ch_axis`.
//! * [`AdaroundIntQuantizer`] — rounding `⌊x/s⌋ + h(α)` with a per-element `α` initialised to
//!   `−ln((ζ − γ)/(frac(x/s) − γ) − 1)` (`γ = −0.1`, `ζ = 1.1`) and
//!   `h(α) = clamp(σ(α)(ζ − γ) + γ, 0, 1)` (soft) or `α ≥ 0` (hard). A fresh quantizer therefore
//!   reproduces `x/s` almost exactly instead of rounding it.
//! * [`FpQuantizer`] — `x/s + zp` cast to float16/bfloat16 (round to nearest even, overflow to
//!   ±inf), **then** clamped to `[min_q, max_q]`, cast back, `(q − zp)·s`.

use crate::error::{Error, Result};
use crate::formats::half_cast::HalfType;
use crate::quant::ChannelIndexer;
use crate::tensor::Tensor;

/// AdaRound's stretch parameters (`AdaroundConstants`).
pub const GAMMA: f64 = -0.1;
/// See [`GAMMA`].
pub const ZETA: f64 = 1.1;

/// `RoundHalfToEven.forward` (`torch.round`).
#[inline]
pub fn round_half_to_even(x: f32) -> f32 {
    crate::quant::round_half_even(x)
}

/// Scale and zero point, per tensor or per channel along `ch_axis`.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantParams {
    pub scale: Vec<f32>,
    pub zero_point: Vec<f32>,
    pub min_q: f32,
    pub max_q: f32,
    /// Channel axis for vector parameters (negative counts from the end); Quark's default 0.
    pub ch_axis: i64,
}

impl QuantParams {
    /// Validated parameters: one scale/zero point, or as many as a channel axis will have.
    pub fn new(
        scale: Vec<f32>,
        zero_point: Vec<f32>,
        min_q: f32,
        max_q: f32,
        ch_axis: i64,
    ) -> Result<Self> {
        if scale.is_empty() || zero_point.is_empty() {
            return Err(Error::param(
                "scale",
                "needs at least one scale and zero point",
            ));
        }
        if scale.len() != zero_point.len() && scale.len() != 1 && zero_point.len() != 1 {
            return Err(Error::param(
                "zero_point",
                format!(
                    "{} zero points for {} scales",
                    zero_point.len(),
                    scale.len()
                ),
            ));
        }
        if min_q.is_nan() || max_q.is_nan() || min_q > max_q {
            return Err(Error::param(
                "min_q",
                format!("min_q {min_q} exceeds max_q {max_q}"),
            ));
        }
        Ok(QuantParams {
            scale,
            zero_point,
            min_q,
            max_q,
            ch_axis,
        })
    }

    /// `(scale, zero point)` index of each element of a tensor of `shape` (`_broad_cast`).
    fn indexer(&self, shape: &[usize]) -> Result<Option<ChannelIndexer>> {
        let n = self.scale.len().max(self.zero_point.len());
        if n == 1 {
            return Ok(None);
        }
        let ndim = shape.len() as i64;
        let axis = if self.ch_axis < 0 {
            self.ch_axis + ndim
        } else {
            self.ch_axis
        };
        if axis < 0 || axis >= ndim {
            return Err(Error::input(format!(
                "ch_axis {} is out of range for a tensor of shape {shape:?}",
                self.ch_axis
            )));
        }
        let axis = axis as usize;
        if shape[axis] != n {
            return Err(Error::framework(
                "AssertionError",
                "",
                crate::error::Stage::Forward,
            ));
        }
        Ok(Some(ChannelIndexer::new(shape, axis)))
    }

    /// The representable range of each element of a tensor of `shape`: `[(min_q − zp)·s,
    /// (max_q − zp)·s]` of its channel.
    pub fn ranges(&self, shape: &[usize]) -> Result<crate::qdq::SliceRanges> {
        use crate::qdq::{SliceRanges, Slicing};
        let n = self.scale.len().max(self.zero_point.len());
        let slicing = match self.indexer(shape)? {
            Some(ix) => Slicing::Channel(ix),
            None => Slicing::Tensor,
        };
        let range = |c: usize| {
            let (s, zp) = (
                Self::at(&self.scale, c) as f64,
                Self::at(&self.zero_point, c) as f64,
            );
            Some(((self.min_q as f64 - zp) * s, (self.max_q as f64 - zp) * s))
        };
        Ok(SliceRanges::new(slicing, (0..n).map(range)))
    }

    #[inline]
    fn at(v: &[f32], c: usize) -> f32 {
        if v.len() == 1 {
            v[0]
        } else {
            v[c]
        }
    }

    /// Apply `f(x, scale, zero_point)` to every element.
    fn map(&self, x: &Tensor, f: impl Fn(usize, f32, f32, f32) -> f32) -> Result<Tensor> {
        let ix = self.indexer(&x.shape)?;
        let data = x
            .data
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let c = ix.map_or(0, |ix| ix.channel(i));
                f(
                    i,
                    v,
                    Self::at(&self.scale, c),
                    Self::at(&self.zero_point, c),
                )
            })
            .collect();
        Ok(x.with_data(data))
    }
}

/// `INTQuantizer`.
#[derive(Debug, Clone, PartialEq)]
pub struct IntQuantizer {
    pub params: QuantParams,
}

impl IntQuantizer {
    /// A quantizer with these parameters.
    pub fn new(params: QuantParams) -> Self {
        IntQuantizer { params }
    }

    /// `quantize`: `clamp(round(x / s) + zp, min_q, max_q)`.
    pub fn quantize(&self, x: &Tensor) -> Result<Tensor> {
        let (lo, hi) = (self.params.min_q, self.params.max_q);
        self.params.map(x, |_, v, s, z| {
            (round_half_to_even(v / s) + z).clamp(lo, hi)
        })
    }

    /// `dequantize`: `(q − zp)·s`.
    pub fn dequantize(&self, q: &Tensor) -> Result<Tensor> {
        self.params.map(q, |_, v, s, z| (v - z) * s)
    }

    /// `forward` = `quantize_dequantize`.
    pub fn quantize_dequantize(&self, x: &Tensor) -> Result<Tensor> {
        let (lo, hi) = (self.params.min_q, self.params.max_q);
        self.params.map(x, |_, v, s, z| {
            ((round_half_to_even(v / s) + z).clamp(lo, hi) - z) * s
        })
    }
}

/// `AdaroundINTQuantizer`: an [`IntQuantizer`] whose rounding is learned per element.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaroundIntQuantizer {
    pub params: QuantParams,
    /// `α`, one per element, once initialised.
    pub alpha: Option<Vec<f32>>,
    /// Soft (rectified sigmoid) or hard (`α ≥ 0`) rounding.
    pub use_soft_rounding: bool,
}

/// float32 `ln` (`torch.log`).
fn ln_f32(x: f32) -> f32 {
    (x as f64).ln() as f32
}

/// float32 `σ(x) = 1/(1 + e^−x)` (`torch.sigmoid`).
pub fn sigmoid_f32(x: f32) -> f32 {
    (1.0 / (1.0 + (-(x as f64)).exp())) as f32
}

/// The soft rounding `h(α) = clamp(σ(α)·(ζ − γ) + γ, 0, 1)` (the rectified sigmoid).
pub fn rectified_sigmoid(alpha: f32) -> f32 {
    (sigmoid_f32(alpha) * (ZETA - GAMMA) as f32 + GAMMA as f32).clamp(0.0, 1.0)
}

/// The `α` whose soft rounding equals `frac ∈ [0, 1)`:
/// `α = −ln((ζ−γ)/(frac − γ) − 1)` in float32, the division done as `reciprocal(·)·(ζ−γ)` as
/// PyTorch does for `number / tensor`.
pub fn initial_alpha(frac: f32) -> f32 {
    -ln_f32((1.0f32 / (frac - GAMMA as f32)) * (ZETA - GAMMA) as f32 - 1.0)
}

impl AdaroundIntQuantizer {
    /// A quantizer with soft rounding and no `α` yet.
    pub fn new(params: QuantParams) -> Self {
        AdaroundIntQuantizer {
            params,
            alpha: None,
            use_soft_rounding: true,
        }
    }

    /// `initialize_alpha(x)` (no-op once initialised): [`initial_alpha`] of `frac(x/s)`.
    pub fn initialize_alpha(&mut self, x: &Tensor) -> Result<()> {
        if self.alpha.is_some() {
            return Ok(());
        }
        let alpha = self.params.map(x, |_, v, s, _| {
            let y = v / s;
            initial_alpha(y - y.floor())
        })?;
        self.alpha = Some(alpha.data);
        Ok(())
    }

    /// `h(α)` for every element.
    pub fn h_alpha(&self) -> Option<Vec<f32>> {
        let alpha = self.alpha.as_ref()?;
        Some(
            alpha
                .iter()
                .map(|&a| {
                    if self.use_soft_rounding {
                        rectified_sigmoid(a)
                    } else if a >= 0.0 {
                        1.0
                    } else {
                        0.0
                    }
                })
                .collect(),
        )
    }

    /// `forward(x)`: initialise `α` if needed, then `((⌊x/s⌋ + h(α) + zp) clamped − zp)·s`.
    pub fn quantize_dequantize(&mut self, x: &Tensor) -> Result<Tensor> {
        self.initialize_alpha(x)?;
        let h = self.h_alpha().unwrap_or_default();
        if h.len() != x.len() {
            return Err(Error::input(format!(
                "alpha has {} values for a tensor of {}",
                h.len(),
                x.len()
            )));
        }
        let (lo, hi) = (self.params.min_q, self.params.max_q);
        self.params.map(x, |i, v, s, z| {
            (((v / s).floor() + h[i] + z).clamp(lo, hi) - z) * s
        })
    }
}

/// `FPQuantizer` (float16/bfloat16 "quantization" with a scale and zero point).
#[derive(Debug, Clone, PartialEq)]
pub struct FpQuantizer {
    pub params: QuantParams,
    pub quant_type: HalfType,
}

impl FpQuantizer {
    /// A quantizer; `min_q`/`max_q` are usually `±finfo(quant_type).max`.
    pub fn new(params: QuantParams, quant_type: HalfType) -> Self {
        FpQuantizer { params, quant_type }
    }

    /// `quantize`: `clamp(cast(x/s + zp), min_q, max_q)` (values of the half type, as f32).
    pub fn quantize(&self, x: &Tensor) -> Result<Tensor> {
        let (lo, hi) = (self.params.min_q, self.params.max_q);
        let t = self.quant_type;
        self.params.map(x, |_, v, s, z| {
            t.round_trip(t.round_trip(v / s + z).clamp(lo, hi))
        })
    }

    /// `dequantize`: `(q − zp)·s`.
    pub fn dequantize(&self, q: &Tensor) -> Result<Tensor> {
        self.params.map(q, |_, v, s, z| (v - z) * s)
    }

    /// `forward`: quantize then dequantize.
    pub fn quantize_dequantize(&self, x: &Tensor) -> Result<Tensor> {
        let q = self.quantize(x)?;
        self.dequantize(&q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[f32]) -> Tensor {
        Tensor::from_vec(v.to_vec())
    }

    #[test]
    fn int_quantizer_per_tensor_and_per_channel() {
        let q = IntQuantizer::new(QuantParams::new(vec![0.5], vec![2.0], 0.0, 7.0, 0).unwrap());
        let x = t(&[-5.0, 0.25, 0.75, 10.0]);
        assert_eq!(q.quantize(&x).unwrap().data, vec![0.0, 2.0, 4.0, 7.0]);
        assert_eq!(
            q.quantize_dequantize(&x).unwrap().data,
            vec![-1.0, 0.0, 1.0, 2.5]
        );
        let pc = IntQuantizer::new(
            QuantParams::new(vec![1.0, 0.1], vec![0.0, 0.0], -128.0, 127.0, 0).unwrap(),
        );
        let x = Tensor::new(vec![2, 2], vec![1.4, 2.6, 0.14, 0.26]).unwrap();
        let y = pc.quantize_dequantize(&x).unwrap().data;
        assert_eq!(y[..2], [1.0, 3.0]);
        assert!((y[2] - 0.1).abs() < 1e-7 && (y[3] - 0.3).abs() < 1e-7);
        let bad = Tensor::new(vec![3, 1], vec![1.0; 3]).unwrap();
        assert!(pc.quantize(&bad).is_err());
        assert_eq!(round_half_to_even(-2.5), -2.0);
        assert_eq!(round_half_to_even(126.5), 126.0);
    }

    #[test]
    fn adaround_starts_next_to_the_unrounded_value() {
        let mut q = AdaroundIntQuantizer::new(
            QuantParams::new(vec![0.05], vec![0.0], -128.0, 127.0, 0).unwrap(),
        );
        let x = t(&[0.0123, -0.4567, 1.0, 100.0]);
        let y = q.quantize_dequantize(&x).unwrap().data;
        assert!((y[0] - 0.0123).abs() < 1e-6, "{}", y[0]);
        assert!((y[1] + 0.4567).abs() < 1e-6, "{}", y[1]);
        assert_eq!(y[3], 127.0 * 0.05f32);
        // frac = 0 → α = −ln(1.2/0.1 − 1) = −ln 11, h = 0.
        let a = q.alpha.as_ref().unwrap()[2];
        assert!((a + 11f32.ln()).abs() < 1e-5, "{a}");
        q.use_soft_rounding = false;
        let hard = q.quantize_dequantize(&x).unwrap().data;
        assert_eq!(hard[2], 1.0);
        assert!((hard[0] - 0.0).abs() < 1e-9 || (hard[0] - 0.05).abs() < 1e-7);
    }

    #[test]
    fn fp_quantizer_casts_then_clamps() {
        let max = HalfType::Float16.max();
        let q = FpQuantizer::new(
            QuantParams::new(vec![0.01], vec![0.0], -max, max, 0).unwrap(),
            HalfType::Float16,
        );
        let y = q
            .quantize_dequantize(&t(&[1000.0, -1e6, 0.123456]))
            .unwrap()
            .data;
        assert_eq!(y[0], 100000.0f32.min(65504.0) * 0.01);
        assert_eq!(y[1], -65504.0 * 0.01f32);
        assert_eq!(y[2], half::f16::from_f32(0.123456 / 0.01).to_f32() * 0.01);
    }
}
