//! The observers that only carry a configuration: `PlaceholderObserver`, `RecordingObserver`,
//! `NoopObserver` and `ReuseInputObserver`. They observe nothing (RecordingObserver keeps
//! copies of its inputs in PyTorch; here it only counts them) and `calculate_qparams` raises
//! PyTorch's `Exception("calculate_qparams should not be called for <Class>")`.

use super::config::{reject_unknown, QScheme};
use crate::error::{Error, Result, Stage};
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
use crate::params::ParamSet;
use crate::tensor::Tensor;
use std::marker::PhantomData;

crate::choice_enum! {
    /// Dtypes a pass-through observer may carry (any torch dtype; these are the useful ones).
    pub enum AnyDtype {
        Float32 = "float32",
        Float16 = "float16",
        BFloat16 = "bfloat16",
        Float64 = "float64",
        QUInt8 = "quint8",
        QInt8 = "qint8",
        QUInt4x2 = "quint4x2",
        QInt32 = "qint32",
        Int8 = "int8",
        UInt8 = "uint8",
        Int16 = "int16",
        Int32 = "int32",
        UInt16 = "uint16",
    }
}

crate::declare_params! {
    /// Arguments of `PlaceholderObserver`.
    pub struct PlaceholderArgs {
        /// dtype handed to the quantized module
        dtype: AnyDtype = AnyDtype::Float32; choice(), Search;
        /// name of a custom op (carried)
        custom_op_name: String = String::new(); text(), Search;
        /// deprecated: marks dynamic quantization
        compute_dtype: Option<AnyDtype> = None; choice(), Search;
        /// carried quant_min
        quant_min: Option<i64> = None; int(i32::MIN as i64, i32::MAX as i64), Search;
        /// carried quant_max
        quant_max: Option<i64> = None; int(i32::MIN as i64, i32::MAX as i64), Search;
        /// carried qscheme (per_tensor_affine when unset)
        qscheme: Option<QScheme> = None; choice(), Search;
        /// carried eps (float32 eps when unset)
        eps: Option<f64> = None; log_float(0.0, f32::MAX as f64), Search;
        /// use dynamic quantization
        is_dynamic: bool = false; boolean(), Search;
    }
}

crate::declare_params! {
    /// Arguments of `RecordingObserver`.
    pub struct RecordingArgs {
        /// dtype handed to the quantized module
        dtype: AnyDtype = AnyDtype::QUInt8; choice(), Search;
    }
}

crate::declare_params! {
    /// Arguments of `NoopObserver`.
    pub struct NoopArgs {
        /// dtype handed to the quantized module
        dtype: AnyDtype = AnyDtype::Float16; choice(), Search;
        /// name of a custom op (carried)
        custom_op_name: String = String::new(); text(), Search;
    }
}

/// One pass-through class: its arguments and PyTorch's name.
pub trait PassThroughClass: Send + Sync + 'static {
    /// The constructor's arguments.
    type Args: ParamSet;
    /// PyTorch's class name.
    const CLASS: &'static str;
}

/// `PlaceholderObserver`.
pub struct Placeholder;
impl PassThroughClass for Placeholder {
    type Args = PlaceholderArgs;
    const CLASS: &'static str = "PlaceholderObserver";
}

/// `RecordingObserver`.
pub struct Recording;
impl PassThroughClass for Recording {
    type Args = RecordingArgs;
    const CLASS: &'static str = "RecordingObserver";
}

/// `NoopObserver`.
pub struct Noop;
impl PassThroughClass for Noop {
    type Args = NoopArgs;
    const CLASS: &'static str = "NoopObserver";
}

/// `ReuseInputObserver`.
pub struct ReuseInput;
impl PassThroughClass for ReuseInput {
    type Args = ();
    const CLASS: &'static str = "ReuseInputObserver";
}

/// A pass-through observer of class `C`; its state counts the batches passed through.
pub struct PassThrough<C>(PhantomData<C>);

impl<C: PassThroughClass> ObserverKind for PassThrough<C> {
    type Args = C::Args;
    type Config = ();
    type State = usize;

    fn resolve(_: &C::Args, unknown: &[String]) -> Result<()> {
        reject_unknown(unknown, &format!("{}.__init__", C::CLASS))
    }

    fn init(_: &()) -> usize {
        0
    }

    fn feed(batches: &mut usize, _: &(), _: &Tensor) -> Result<()> {
        *batches += 1;
        Ok(())
    }

    fn qparams(_: &usize, _: &()) -> Result<QParams> {
        Err(Error::framework(
            "Exception",
            format!("calculate_qparams should not be called for {}", C::CLASS),
            Stage::CalculateQparams,
        ))
    }

    fn plot(_: &usize) -> PlotSnapshot {
        PlotSnapshot::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::Instance;
    use crate::params::Params;
    use crate::registry;
    use serde_json::{json, Value};

    fn new(class: &str, p: Value) -> Result<Instance> {
        Instance::new(
            registry::find(&format!("torch.{class}"))?,
            &Params::from_value(p)?,
        )
    }

    #[test]
    fn qparams_raise_pytorchs_exception() {
        for class in [
            Placeholder::CLASS,
            Recording::CLASS,
            Noop::CLASS,
            ReuseInput::CLASS,
        ] {
            let mut obs = new(class, json!({})).unwrap();
            obs.feed(&Tensor::from_vec(vec![1.0])).unwrap();
            let err = obs.qparams().unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("Exception: calculate_qparams should not be called for {class}")
            );
        }
    }

    #[test]
    fn unknown_keywords_name_the_class() {
        let err = new(Recording::CLASS, json!({"foo": 1})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "TypeError: RecordingObserver.__init__() got an unexpected keyword argument 'foo'"
        );
        assert!(new(
            Placeholder::CLASS,
            json!({"custom_op_name": "x", "is_dynamic": true})
        )
        .is_ok());
    }
}
