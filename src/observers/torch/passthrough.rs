//! The observers that only carry a configuration: `PlaceholderObserver`, `RecordingObserver`,
//! `NoopObserver` and `ReuseInputObserver`. They observe nothing (RecordingObserver keeps
//! copies of its inputs in PyTorch; here it only counts them) and `calculate_qparams` raises
//! PyTorch's `Exception("calculate_qparams should not be called for <Class>")`.

use super::config::{unexpected_kwarg, unexpected_kwarg_error, QSCHEME_NAMES};
use crate::error::{Error, Result, Stage};
use crate::observer::{Observer, ObserverState, QParams};
use crate::params::{ParamSpec, Params};
use crate::tensor::Tensor;
use serde_json::Value;

/// Which pass-through class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Placeholder,
    Recording,
    Noop,
    ReuseInput,
}

impl Kind {
    /// PyTorch's class name.
    pub fn class(self) -> &'static str {
        match self {
            Kind::Placeholder => "PlaceholderObserver",
            Kind::Recording => "RecordingObserver",
            Kind::Noop => "NoopObserver",
            Kind::ReuseInput => "ReuseInputObserver",
        }
    }

    /// The keywords the class's `__init__` takes.
    fn kwargs(self) -> &'static [&'static str] {
        match self {
            Kind::Placeholder => &[
                "dtype",
                "custom_op_name",
                "compute_dtype",
                "quant_min",
                "quant_max",
                "qscheme",
                "eps",
                "is_dynamic",
            ],
            Kind::Recording => &["dtype"],
            Kind::Noop => &["dtype", "custom_op_name"],
            Kind::ReuseInput => &[],
        }
    }
}

/// A pass-through observer.
#[derive(Debug, Clone)]
pub struct PassThrough {
    kind: Kind,
    /// Number of `forward` calls seen.
    batches: usize,
}

impl PassThrough {
    /// `<Class>(**params)`.
    pub fn new(kind: Kind, params: &Params) -> Result<Self> {
        if let Some(key) = unexpected_kwarg(params, kind.kwargs()) {
            return Err(unexpected_kwarg_error(
                &format!("{}.__init__", kind.class()),
                key,
            ));
        }
        Ok(PassThrough { kind, batches: 0 })
    }

    /// Number of batches passed through.
    pub fn batches(&self) -> usize {
        self.batches
    }
}

impl Observer for PassThrough {
    fn observe(&mut self, _batch: &Tensor) -> Result<()> {
        self.batches += 1;
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        Err(Error::framework(
            "Exception",
            format!(
                "calculate_qparams should not be called for {}",
                self.kind.class()
            ),
            Stage::CalculateQparams,
        ))
    }

    fn reset(&mut self) {
        self.batches = 0;
    }

    fn state(&self) -> ObserverState {
        ObserverState::default()
    }
}

/// Dtypes a placeholder may name (any torch dtype; these are the useful ones).
const ANY_DTYPE: &[&str] = &[
    "float32", "float16", "bfloat16", "float64", "quint8", "qint8", "quint4x2", "qint32", "int8",
    "uint8", "int16", "int32", "uint16",
];

/// Registry parameters of a pass-through class.
pub fn params(kind: Kind) -> Vec<ParamSpec> {
    let dtype = |default: &'static str| {
        ParamSpec::choice(
            "dtype",
            ANY_DTYPE,
            default,
            "dtype handed to the quantized module",
        )
    };
    match kind {
        Kind::Placeholder => vec![
            dtype("float32"),
            ParamSpec::choice(
                "compute_dtype",
                ANY_DTYPE,
                Value::Null,
                "deprecated: marks dynamic quantization",
            ),
            ParamSpec::int(
                "quant_min",
                i32::MIN as i64,
                i32::MAX as i64,
                Value::Null,
                "carried quant_min",
            ),
            ParamSpec::int(
                "quant_max",
                i32::MIN as i64,
                i32::MAX as i64,
                Value::Null,
                "carried quant_max",
            ),
            ParamSpec::choice(
                "qscheme",
                QSCHEME_NAMES,
                Value::Null,
                "carried qscheme (per_tensor_affine when unset)",
            ),
            ParamSpec::float(
                "eps",
                0.0,
                f32::MAX as f64,
                Value::Null,
                "carried eps (float32 eps when unset)",
            ),
            ParamSpec::bool("is_dynamic", false, "use dynamic quantization"),
        ],
        Kind::Recording => vec![dtype("quint8")],
        Kind::Noop => vec![dtype("float16")],
        Kind::ReuseInput => Vec::new(),
    }
}

/// Registry constructor of `torch.PlaceholderObserver`.
pub fn build_placeholder(params: &Params) -> Result<Box<dyn Observer>> {
    Ok(Box::new(PassThrough::new(Kind::Placeholder, params)?))
}

/// Registry constructor of `torch.RecordingObserver`.
pub fn build_recording(params: &Params) -> Result<Box<dyn Observer>> {
    Ok(Box::new(PassThrough::new(Kind::Recording, params)?))
}

/// Registry constructor of `torch.NoopObserver`.
pub fn build_noop(params: &Params) -> Result<Box<dyn Observer>> {
    Ok(Box::new(PassThrough::new(Kind::Noop, params)?))
}

/// Registry constructor of `torch.ReuseInputObserver`.
pub fn build_reuse_input(params: &Params) -> Result<Box<dyn Observer>> {
    Ok(Box::new(PassThrough::new(Kind::ReuseInput, params)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn qparams_raise_pytorchs_exception() {
        for kind in [
            Kind::Placeholder,
            Kind::Recording,
            Kind::Noop,
            Kind::ReuseInput,
        ] {
            let mut obs = PassThrough::new(kind, &Params::new()).unwrap();
            obs.observe(&Tensor::from_vec(vec![1.0])).unwrap();
            assert_eq!(obs.batches(), 1);
            let err = obs.qparams().unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "Exception: calculate_qparams should not be called for {}",
                    kind.class()
                )
            );
        }
    }

    #[test]
    fn unknown_keywords_name_the_class() {
        let p = Params::from_value(json!({"foo": 1})).unwrap();
        let err = PassThrough::new(Kind::Recording, &p).unwrap_err();
        assert_eq!(
            err.to_string(),
            "TypeError: RecordingObserver.__init__() got an unexpected keyword argument 'foo'"
        );
        let p = Params::from_value(json!({"custom_op_name": "x", "is_dynamic": true})).unwrap();
        assert!(PassThrough::new(Kind::Placeholder, &p).is_ok());
    }
}
