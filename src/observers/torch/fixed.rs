//! `FixedQParamsObserver`: ignores the data and returns the scale (float32) and zero point
//! (int32) it was built with, on the grid `quant_min..quant_max` (0..255 by default). PyTorch
//! validates none of its arguments.

use super::config::{
    not_implemented, specs, unexpected_kwarg, unexpected_kwarg_error, DTYPE_NAMES,
};
use crate::error::{Error, Result, Stage};
use crate::observer::{Grid, Observer, ObserverState, QParams, Retune, ZeroPoint};
use crate::params::{ParamSpec, Params};
use crate::tensor::Tensor;
use serde_json::{Map, Value};

/// PyTorch's `FixedQParamsObserver`.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedQParamsObserver {
    scale: f32,
    zero_point: i32,
    dtype: String,
    qscheme: String,
    quant_min: i64,
    quant_max: i64,
}

const KWARGS: &[&str] = &[
    "scale",
    "zero_point",
    "dtype",
    "qscheme",
    "quant_min",
    "quant_max",
    "is_dynamic",
];

impl FixedQParamsObserver {
    /// `FixedQParamsObserver(**params)`.
    pub fn new(params: &Params) -> Result<Self> {
        let scale = params.opt_f64("scale")?;
        let zero_point = params.opt_i64("zero_point")?;
        let (scale, zero_point) = match (scale, zero_point) {
            (Some(s), Some(z)) => (s, z),
            (None, None) => {
                return Err(missing(
                    "2 required positional arguments: 'scale' and 'zero_point'",
                ))
            }
            (None, _) => return Err(missing("1 required positional argument: 'scale'")),
            (_, None) => return Err(missing("1 required positional argument: 'zero_point'")),
        };
        if params.bool_or("is_dynamic", false)? {
            return Err(not_implemented(
                "FixedQParamsObserver doesn't support dynamic quantization",
            ));
        }
        if let Some(key) = unexpected_kwarg(params, KWARGS) {
            return Err(unexpected_kwarg_error("ObserverBase.__init__", key));
        }
        let zero_point = i32::try_from(zero_point).map_err(|_| {
            Error::framework(
                "RuntimeError",
                format!("value cannot be converted to type int32_t without overflow: {zero_point}"),
                Stage::Init,
            )
        })?;
        Ok(FixedQParamsObserver {
            scale: scale as f32,
            zero_point,
            dtype: params.str_or("dtype", "quint8")?.to_string(),
            qscheme: params.str_or("qscheme", "per_tensor_affine")?.to_string(),
            quant_min: params.i64_or("quant_min", 0)?,
            quant_max: params.i64_or("quant_max", 255)?,
        })
    }
}

fn missing(what: &str) -> Error {
    Error::framework(
        "TypeError",
        format!("FixedQParamsObserver.__init__() missing {what}"),
        Stage::Init,
    )
}

impl Observer for FixedQParamsObserver {
    fn observe(&mut self, _batch: &Tensor) -> Result<()> {
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let mut extra = Map::new();
        extra.insert("dtype".into(), Value::from(self.dtype.clone()));
        extra.insert("qscheme".into(), Value::from(self.qscheme.clone()));
        extra.insert("zero_point_dtype".into(), Value::from("int32"));
        Ok(QParams {
            scale: vec![self.scale],
            zero_point: ZeroPoint::Int(vec![self.zero_point as i64]),
            grid: Grid::Int {
                quant_min: self.quant_min,
                quant_max: self.quant_max,
            },
            axis: None,
            min_val: Vec::new(),
            max_val: Vec::new(),
            clip_range: None,
            amax: None,
            extra,
            notes: vec!["fixed qparams: the observed data is ignored".into()],
        })
    }

    /// PyTorch's own fake-quantize kernels ([`super::fake_quant`]).
    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        super::fake_quant::fake_quantize(x, q)
    }

    fn reset(&mut self) {}

    fn state(&self) -> ObserverState {
        ObserverState::default()
    }

    fn retune(&mut self, params: &Params) -> Result<Retune> {
        *self = FixedQParamsObserver::new(params)?;
        Ok(Retune::Applied)
    }
}

/// Registry parameters of `FixedQParamsObserver` (`scale` and `zero_point` are required).
pub fn params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::float(
            "scale",
            0.0,
            f32::MAX as f64,
            Value::Null,
            "the fixed scale (required)",
        )
        .log_scale()
        .search_only(),
        ParamSpec::int(
            "zero_point",
            i32::MIN as i64,
            i32::MAX as i64,
            Value::Null,
            "the fixed zero point (required)",
        )
        .search_only(),
        ParamSpec::choice(
            "dtype",
            DTYPE_NAMES,
            "quint8",
            "quantized dtype (informative)",
        )
        .search_only(),
        specs::qscheme("per_tensor_affine").search_only(),
        ParamSpec::int(
            "quant_min",
            i32::MIN as i64,
            i32::MAX as i64,
            0,
            "lower end of the grid",
        )
        .search_only(),
        ParamSpec::int(
            "quant_max",
            i32::MIN as i64,
            i32::MAX as i64,
            255,
            "upper end of the grid",
        )
        .search_only(),
        specs::is_dynamic(),
    ]
}

/// Registry constructor of `torch.FixedQParamsObserver`.
pub fn build(params: &Params) -> Result<Box<dyn Observer>> {
    Ok(Box::new(FixedQParamsObserver::new(params)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn returns_its_arguments() {
        let p = Params::from_value(json!({"scale": 2.0 / 256.0, "zero_point": 128})).unwrap();
        let mut obs = FixedQParamsObserver::new(&p).unwrap();
        obs.observe(&Tensor::from_vec(vec![100.0])).unwrap();
        let q = obs.qparams().unwrap();
        assert_eq!(q.scale, vec![0.0078125]);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![128]));
        assert_eq!(q.representable_range(0), Some((-1.0, 0.9921875)));
    }

    #[test]
    fn constructor_errors() {
        let err = |v| {
            FixedQParamsObserver::new(&Params::from_value(v).unwrap())
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
