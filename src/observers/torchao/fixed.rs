//! `AffineQuantizedFixedQParamObserver` (torchao 0.18.0 `quantization/observer.py`): ignores
//! the data and returns the scale and zero point it was built with. Its constructor tests
//! `if not scale` / `if not zero_point`: a scale of `[0.0]` counts as missing and becomes
//! `[1.0]`, a zero point of `[0]` becomes `zeros_like(scale)` (float32), and a tensor of more
//! (or fewer) than one element raises `RuntimeError` (its truth value is ambiguous). The scale
//! is then cast to `scale_dtype`, the zero point to `zero_point_dtype` (when given; a zero
//! point passed in is an int32 tensor).

use super::args::{AffineArgs, AffineArgsFields, ZeroPointDomain, ZeroPointDtype};
use super::granularity::block_size;
use super::qparams::{cast_scale, cast_zero_point, Chosen};
use super::report;
use crate::error::{Error, Result, Stage};
use crate::observer::{Granularity, ObserverKind, PlotSnapshot, QParams};
use crate::tensor::Tensor;

crate::declare_params! {
    /// Arguments of `AffineQuantizedFixedQParamObserver`.
    pub struct FixedArgs {
        /// the fixed scale (one value; 0.0 or absent: 1.0)
        scale: Option<Vec<f64>> = None; vector(), Search;
        /// the fixed zero point (one integer; 0 or absent: a float32 0)
        zero_point: Option<Vec<f64>> = None; vector(), Search;
    }
    include { affine: AffineArgsFields }
}

/// The fixed qparams.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedConfig {
    pub args: AffineArgs,
    pub scale: f32,
    pub zero_point: f32,
    pub zero_point_dtype: ZeroPointDtype,
}

/// `bool(tensor)`: one element's truth value, or the `RuntimeError` of any other size.
fn truth(values: &[f64]) -> Result<bool> {
    match values {
        [v] => Ok(*v != 0.0),
        [] => Err(ambiguous("no values")),
        _ => Err(ambiguous("more than one value")),
    }
}

fn ambiguous(what: &str) -> Error {
    Error::framework(
        "RuntimeError",
        format!("Boolean value of Tensor with {what} is ambiguous"),
        Stage::Init,
    )
}

/// torchao's `AffineQuantizedFixedQParamObserver`.
pub struct AffineFixedQParam;

impl ObserverKind for AffineFixedQParam {
    type Args = FixedArgs;
    type Config = FixedConfig;
    type State = ();

    fn resolve(args: &FixedArgs, _: &[String]) -> Result<FixedConfig> {
        let affine = args.affine.resolve()?;
        let scale = match &args.scale {
            Some(v) if truth(v)? => v[0] as f32,
            _ => 1.0,
        };
        let (zero_point, dtype) = match &args.zero_point {
            Some(v) if truth(v)? => {
                if v[0].fract() != 0.0 || v[0].abs() > i32::MAX as f64 {
                    return Err(Error::param(
                        "zero_point",
                        format!("expected an int32 zero point, got {}", v[0]),
                    ));
                }
                (v[0] as f32, ZeroPointDtype::Int32)
            }
            _ => (0.0, ZeroPointDtype::Float32),
        };
        let dtype = affine.zero_point_dtype.unwrap_or(dtype);
        Ok(FixedConfig {
            scale: cast_scale(scale, affine.scale_dtype),
            zero_point: cast_zero_point(zero_point, dtype),
            zero_point_dtype: dtype,
            args: affine,
        })
    }

    fn init(_: &FixedConfig) {}

    fn feed(_: &mut (), _: &FixedConfig, _: &Tensor) -> Result<()> {
        Ok(())
    }

    fn qparams(_: &(), cfg: &FixedConfig) -> Result<QParams> {
        let chosen = Chosen {
            scale: vec![cfg.scale],
            zero_point: vec![cfg.zero_point],
            zero_point_dtype: cfg.zero_point_dtype,
        };
        let mut q = report::build(&cfg.args, chosen, false, &[1], &[1])?;
        report::record(&q, &cfg.args);
        q.notes
            .push("fixed qparams: the observed data is ignored".into());
        Ok(q)
    }

    /// Hand-written: torchao's observers have no fused kernel (see [`super::report::fake_quantize`]).
    /// `quantize_affine` with the batch's block size (one scale only fits `PerTensor`).
    fn fake_quantize(cfg: &FixedConfig, x: &Tensor, q: &QParams) -> Result<Tensor> {
        if cfg.args.zero_point_domain == ZeroPointDomain::NoZeroPoint {
            return Err(Error::framework(
                "ValueError",
                "zero_point should be None when zero_point_domain is NONE",
                Stage::Forward,
            ));
        }
        block_size(&x.shape, &cfg.args.granularity)?;
        report::fake_quantize(&cfg.args, x, q)
    }

    fn granularity(cfg: &FixedConfig) -> Option<Granularity> {
        Some(cfg.args.granularity.shape())
    }

    fn plot(_: &()) -> PlotSnapshot {
        PlotSnapshot::default()
    }
}
