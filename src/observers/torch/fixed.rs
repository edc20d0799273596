//! `FixedQParamsObserver`: ignores the data and returns the scale (float32) and zero point
//! (int32) it was built with, on the grid `quant_min..quant_max` (0..255 by default). PyTorch
//! validates none of its arguments.

use super::config::{not_implemented, reject_unknown, QDtype, QScheme};
use crate::error::{Error, Result, Stage};
use crate::observer::{ObserverKind, PlotSnapshot, QParams, ZeroPoint};
use crate::params::Choice;
use crate::qdq::QdqKernel;
use crate::tensor::Tensor;
use serde_json::{Map, Value};

crate::declare_params! {
    /// Arguments of `FixedQParamsObserver` (`scale` and `zero_point` are required).
    pub struct FixedArgs {
        /// the fixed scale (required)
        scale: Option<f64> = None; log_float(0.0, f32::MAX as f64), Search;
        /// the fixed zero point (required)
        zero_point: Option<i64> = None; int(i32::MIN as i64, i32::MAX as i64), Search;
        /// quantized dtype (informative)
        dtype: QDtype = QDtype::QUInt8; choice(), Search;
        /// quantization scheme (informative)
        qscheme: QScheme = QScheme::PerTensorAffine; choice(), Search;
        /// lower end of the grid
        quant_min: i64 = 0; int(i32::MIN as i64, i32::MAX as i64), Search;
        /// upper end of the grid
        quant_max: i64 = 255; int(i32::MIN as i64, i32::MAX as i64), Search;
        /// marks the observer as a dynamic-quantization placeholder
        is_dynamic: bool = false; boolean(), Search;
    }
}

/// The fixed qparams.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedConfig {
    scale: f32,
    zero_point: i32,
    dtype: QDtype,
    qscheme: QScheme,
    quant_min: i64,
    quant_max: i64,
}

fn missing(what: &str) -> Error {
    Error::framework(
        "TypeError",
        format!("FixedQParamsObserver.__init__() missing {what}"),
        Stage::Init,
    )
}

/// PyTorch's `FixedQParamsObserver`.
pub struct FixedQParams;

impl ObserverKind for FixedQParams {
    type Args = FixedArgs;
    type Config = FixedConfig;
    type State = ();

    fn resolve(args: &FixedArgs, unknown: &[String]) -> Result<FixedConfig> {
        let (scale, zero_point) = match (args.scale, args.zero_point) {
            (Some(s), Some(z)) => (s, z),
            (None, None) => {
                return Err(missing(
                    "2 required positional arguments: 'scale' and 'zero_point'",
                ))
            }
            (None, _) => return Err(missing("1 required positional argument: 'scale'")),
            (_, None) => return Err(missing("1 required positional argument: 'zero_point'")),
        };
        if args.is_dynamic {
            return Err(not_implemented(
                "FixedQParamsObserver doesn't support dynamic quantization",
            ));
        }
        reject_unknown(unknown, "ObserverBase.__init__")?;
        let zero_point = i32::try_from(zero_point).map_err(|_| {
            Error::framework(
                "RuntimeError",
                format!("value cannot be converted to type int32_t without overflow: {zero_point}"),
                Stage::Init,
            )
        })?;
        Ok(FixedConfig {
            scale: scale as f32,
            zero_point,
            dtype: args.dtype,
            qscheme: args.qscheme,
            quant_min: args.quant_min,
            quant_max: args.quant_max,
        })
    }

    fn init(_: &FixedConfig) {}

    fn feed(_: &mut (), _: &FixedConfig, _: &Tensor) -> Result<()> {
        Ok(())
    }

    fn qparams(_: &(), cfg: &FixedConfig) -> Result<QParams> {
        let mut extra = Map::new();
        extra.insert("dtype".into(), Value::from(cfg.dtype.name()));
        extra.insert("qscheme".into(), Value::from(cfg.qscheme.name()));
        extra.insert("zero_point_dtype".into(), Value::from("int32"));
        crate::derivation::record_qparams(
            || {
                crate::derivation::Step::new(
                    "Fixed scale and zero point",
                    "the scale and zero point given; the data is not looked at",
                    "torch/ao/quantization/observer.py:1464 (torch 2.15.0)",
                )
            },
            &[],
            &[],
            &[cfg.scale],
            &ZeroPoint::Int(vec![cfg.zero_point as i64]),
        );
        Ok(QParams {
            extra,
            notes: vec!["fixed qparams: the observed data is ignored".into()],
            ..QParams::int(
                vec![cfg.scale],
                ZeroPoint::Int(vec![cfg.zero_point as i64]),
                cfg.quant_min,
                cfg.quant_max,
                Vec::new(),
                Vec::new(),
            )
        })
    }

    /// PyTorch's own fake-quantize kernels ([`super::fake_quant`]).
    fn qdq_kernel(_: &FixedConfig, shape: &[usize], q: &QParams) -> Option<Box<dyn QdqKernel>> {
        super::fake_quant::kernel(shape, q)
    }

    fn plot(_: &()) -> PlotSnapshot {
        PlotSnapshot::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::Instance;
    use crate::params::Params;
    use serde_json::json;

    fn new(p: &Params) -> Result<Instance> {
        Instance::new(crate::registry::find("torch.FixedQParamsObserver")?, p)
    }

    #[test]
    fn returns_its_arguments() {
        let p = Params::from_value(json!({"scale": 2.0 / 256.0, "zero_point": 128})).unwrap();
        let mut obs = new(&p).unwrap();
        obs.feed(&Tensor::from_vec(vec![100.0])).unwrap();
        let q = obs.qparams().unwrap();
        assert_eq!(q.scale, vec![0.0078125]);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![128]));
        assert_eq!(q.representable_range(0), Some((-1.0, 0.9921875)));
    }

    #[test]
    fn constructor_errors() {
        let err = |v| {
            new(&Params::from_value(v).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(json!({})),
            "TypeError: FixedQParamsObserver.__init__() missing 2 required positional arguments: 'scale' and 'zero_point'"
        );
        assert_eq!(
            err(json!({"scale": 0.1})),
            "TypeError: FixedQParamsObserver.__init__() missing 1 required positional argument: 'zero_point'"
        );
        assert_eq!(
            err(json!({"scale": 0.1, "zero_point": 0, "is_dynamic": true})),
            "NotImplementedError: FixedQParamsObserver doesn't support dynamic quantization"
        );
        assert_eq!(
            err(json!({"scale": 0.1, "zero_point": 0, "foo": 1})),
            "TypeError: ObserverBase.__init__() got an unexpected keyword argument 'foo'"
        );
    }
}
