//! The arguments every Horizon `observer_v2` observer takes (`ObserverBase.__init__` plus the
//! two framework globals quantscope exposes as parameters) and their validation, in the source's
//! order.
//!
//! `ObserverBase.__init__` asserts, in this order: `ch_axis ≥ 0` under `per_channel_symmetric`
//! and `ch_axis < 0` otherwise; the dtype (qint8 or qint16) and qscheme (the two symmetric ones),
//! which the declarations already restrict; then `_set_quant_min_max`: when **both** bounds are
//! given, `quant_min < quant_max`, `quant_min ≤ 0 ≤ quant_max` and both inside the dtype's range
//! (a lone bound is ignored); otherwise the dtype's range (qint8 −128..127, qint16
//! −32768..32767). Violations raise the source's `AssertionError` at construction.
//!
//! The globals are `QuantRoundMode` (how `scale_quanti` rounds) and `pow_quantization()`
//! (power-of-two scales; march dependent in Horizon, a switch here).
//!
//! Which of these a change makes the observer see the data again depends on the observer: most
//! only use them in `calculate_qparams` (search parameters), but `MSEObserver` and `MixObserver`
//! fake-quantize inside `forward`, and `KLObserver` searches with `−qinfo(dtype).min` levels
//! inside `forward`. `observer_base_args!` declares the group once, with those choices per
//! observer.

use super::base::{QuantConfig, Scheme};
use crate::error::{Error, Result, Stage};

/// A framework `AssertionError` raised while constructing an observer.
pub fn assertion(message: &str) -> Error {
    Error::framework("AssertionError", message, Stage::Init)
}

/// Fail with Horizon's `AssertionError` when `condition` does not hold.
pub fn ensure(condition: bool, message: &str) -> Result<()> {
    if condition {
        Ok(())
    } else {
        Err(assertion(message))
    }
}

crate::choice_enum! {
    /// Horizon's quantized integer types.
    pub enum QDtype { Qint8 = "qint8", Qint16 = "qint16" }
}

impl QDtype {
    /// `qinfo(dtype).min`, `qinfo(dtype).max`.
    pub fn range(self) -> (i64, i64) {
        match self {
            QDtype::Qint8 => (-128, 127),
            QDtype::Qint16 => (-32768, 32767),
        }
    }
}

crate::choice_enum! {
    /// The two quantization schemes `ObserverBase` accepts.
    pub enum QScheme {
        PerTensorSymmetric = "per_tensor_symmetric",
        PerChannelSymmetric = "per_channel_symmetric",
    }
}

crate::choice_enum! {
    /// How `scale_quanti` rounds `x / scale` (the global `QuantRoundMode`).
    pub enum RoundMode {
        /// `torch.round`: ties to even.
        HalfToEven = "half_to_even",
        /// The BPU's `floor(v + 0.5)`: ties up.
        BpuRound = "bpu_round",
    }
}

/// The values of an `ObserverBase` argument group, whatever its declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseArgs {
    pub averaging_constant: f64,
    pub qscheme: QScheme,
    pub ch_axis: i64,
    pub dtype: QDtype,
    pub quant_min: Option<i64>,
    pub quant_max: Option<i64>,
    pub round_mode: RoundMode,
    pub pow_quantization: bool,
}

/// Declare an `ObserverBase` argument group (a [`crate::params::ParamSet`]) with this
/// observer's default `averaging_constant` and, for each part, whether a change needs the data
/// again (`Data`) or only `calculate_qparams` (`Search`):
///
/// * `averaging_constant` — the moving average's weight;
/// * `scheme` — `qscheme` and `ch_axis` (what `forward` reduces over);
/// * `dtype` — `dtype` (`KLObserver` searches with its number of levels in `forward`);
/// * `range` — `quant_min` and `quant_max`;
/// * `rounding` — the globals `round_mode` and `pow_quantization`.
///
/// `is_sync_quantize` is always a search parameter: it does nothing in one process.
/// (`factory_kwargs=None` is accepted as any key given as `null` is: not given.)
macro_rules! observer_base_args {
    (
        $(#[$meta:meta])*
        $name:ident {
            averaging_constant: $c:expr, $c_affects:ident;
            scheme: $scheme:ident;
            dtype: $dtype:ident;
            range: $range:ident;
            rounding: $rounding:ident;
        }
    ) => {
        crate::declare_params! {
            $(#[$meta])*
            pub struct $name {
                /// weight of each new batch in the moving average of min/max (1.0 = last batch
                /// only)
                averaging_constant: f64 = $c; float(0.0, 1.0), $c_affects;
                /// one scale for the tensor, or one per channel along ch_axis
                qscheme: QScheme = QScheme::PerTensorSymmetric; choice(), $scheme;
                /// channel axis: negative for per-tensor, the axis index for per-channel
                ch_axis: i64 = -1; int(-16, 15), $scheme;
                /// quantized type: qint8 (−128..127) or qint16 (−32768..32767)
                dtype: QDtype = QDtype::Qint8; choice(), $dtype;
                /// custom lowest quantized value (used only together with quant_max)
                quant_min: Option<i64> = None; int(-32768, 32767), $range;
                /// custom highest quantized value (used only together with quant_min)
                quant_max: Option<i64> = None; int(-32768, 32767), $range;
                /// all-reduce min/max across processes in calculate_qparams (only under
                /// torch.distributed: no effect in one process)
                is_sync_quantize: bool = false; boolean(), Search;
                /// rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5)
                /// (Horizon's global QuantRoundMode)
                round_mode: RoundMode = RoundMode::HalfToEven; choice(), $rounding;
                /// round scales to a power of two, 2^-1 … 2^-14 (Horizon's global
                /// pow_quantization)
                pow_quantization: bool = false; boolean(), $rounding;
            }
        }

        impl $name {
            /// The values, for [`BaseConfig::resolve`].
            pub fn base(&self) -> BaseArgs {
                BaseArgs {
                    averaging_constant: self.averaging_constant,
                    qscheme: self.qscheme,
                    ch_axis: self.ch_axis,
                    dtype: self.dtype,
                    quant_min: self.quant_min,
                    quant_max: self.quant_max,
                    round_mode: self.round_mode,
                    pow_quantization: self.pow_quantization,
                }
            }
        }
    };
}

observer_base_args! {
    /// `ObserverBase` arguments of the observers whose `forward` reduces per channel and uses
    /// nothing else (`MinMaxObserver`).
    MinMaxBaseArgs {
        averaging_constant: 0.01, Data;
        scheme: Data;
        dtype: Search;
        range: Search;
        rounding: Search;
    }
}

observer_base_args! {
    /// `ObserverBase` arguments of `ClipObserver` (which averages with weight 1.0 by default).
    ClipBaseArgs {
        averaging_constant: 1.0, Data;
        scheme: Data;
        dtype: Search;
        range: Search;
        rounding: Search;
    }
}

observer_base_args! {
    /// `ObserverBase` arguments of the per-tensor-only observers whose `forward` uses none of
    /// them but the averaging constant (`PercentileObserver`, `ClipStdObserver`,
    /// `NormObserver`): the scheme is only checked.
    PerTensorBaseArgs {
        averaging_constant: 0.01, Data;
        scheme: Search;
        dtype: Search;
        range: Search;
        rounding: Search;
    }
}

observer_base_args! {
    /// `ObserverBase` arguments of `KLObserver`: its `forward` runs the KL search with
    /// `−qinfo(dtype).min` levels, so the dtype needs the data again; the range and rounding
    /// only enter `calculate_qparams`.
    KlBaseArgs {
        averaging_constant: 0.01, Data;
        scheme: Search;
        dtype: Data;
        range: Search;
        rounding: Search;
    }
}

observer_base_args! {
    /// `ObserverBase` arguments of `MSEObserver`: its `forward` fake-quantizes every candidate
    /// per tensor or per channel, so every argument needs the data again.
    MseBaseArgs {
        averaging_constant: 0.01, Data;
        scheme: Data;
        dtype: Data;
        range: Data;
        rounding: Data;
    }
}

observer_base_args! {
    /// `ObserverBase` arguments of `MixObserver`: its `forward` fake-quantizes every candidate
    /// (per tensor only, the scheme is only checked).
    MixBaseArgs {
        averaging_constant: 0.01, Data;
        scheme: Search;
        dtype: Data;
        range: Data;
        rounding: Data;
    }
}

observer_base_args! {
    /// `ObserverBase` arguments of `FixedScaleObserver`, which ignores the data (its averaging
    /// constant defaults to 0 and is never used).
    FixedBaseArgs {
        averaging_constant: 0.0, Search;
        scheme: Search;
        dtype: Search;
        range: Search;
        rounding: Search;
    }
}

/// What every observer derives from its `ObserverBase` arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BaseConfig {
    pub scheme: Scheme,
    /// The quantization target: dtype, range, rounding, power-of-two scales.
    pub quant: QuantConfig,
    /// `averaging_constant`, rounded to float32 as the moving average uses it.
    pub averaging_constant: f32,
}

impl BaseConfig {
    /// `ObserverBase.__init__`: the scheme's assertion, then `_set_quant_min_max`'s, then the
    /// buffers' factory options.
    pub fn resolve(args: &BaseArgs) -> Result<Self> {
        let scheme = match args.qscheme {
            QScheme::PerChannelSymmetric => {
                ensure(
                    args.ch_axis >= 0,
                    "ch_axis should be non-negative when using per_channel_symmetric qcsheme",
                )?;
                Scheme::PerChannel(args.ch_axis as usize)
            }
            QScheme::PerTensorSymmetric => {
                ensure(
                    args.ch_axis < 0,
                    "ch_axis should be negative when using per_tensor_symmetric qcsheme",
                )?;
                Scheme::PerTensor
            }
        };
        let (dmin, dmax) = args.dtype.range();
        let (quant_min, quant_max) = match (args.quant_min, args.quant_max) {
            (Some(lo), Some(hi)) => {
                ensure(
                    lo < hi,
                    "qmin must be strictly less than qmax for user-specified quantization range.",
                )?;
                ensure(
                    lo <= 0 && 0 <= hi,
                    "Used-specified quantization range must include 0.",
                )?;
                ensure(dmin <= lo, "quant_min out of bound")?;
                ensure(hi <= dmax, "quant_max out of bound")?;
                (lo, hi)
            }
            // Horizon ignores a lone quant_min or quant_max.
            _ => (dmin, dmax),
        };
        Ok(BaseConfig {
            scheme,
            quant: QuantConfig {
                dtype: args.dtype,
                quant_min,
                quant_max,
                round_mode: args.round_mode,
                pow: args.pow_quantization,
            },
            averaging_constant: args.averaging_constant as f32,
        })
    }

    /// Require `per_tensor_symmetric`, failing with the observer's own assertion `message`.
    pub fn require_per_tensor(&self, message: &str) -> Result<()> {
        ensure(self.scheme == Scheme::PerTensor, message)
    }

    /// The channel axis of per-channel qparams.
    pub fn axis(&self) -> Option<usize> {
        match self.scheme {
            Scheme::PerTensor => None,
            Scheme::PerChannel(a) => Some(a),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::params::{Affects, ParamSet, Params};

    fn resolve(json: &str) -> Result<BaseConfig> {
        BaseConfig::resolve(&MinMaxBaseArgs::from_params(&Params::from_json(json)?)?.base())
    }

    #[test]
    fn user_ranges_are_checked_like_horizon() {
        let err = |json: &str| resolve(json).unwrap_err().to_string();
        assert!(err(r#"{"quant_min": 5, "quant_max": 5}"#).contains("strictly less"));
        assert!(err(r#"{"quant_min": 1, "quant_max": 5}"#).contains("include 0"));
        assert!(err(r#"{"quant_min": -200, "quant_max": 5}"#).contains("quant_min out of bound"));
        assert!(err(r#"{"quant_min": -2, "quant_max": 200}"#).contains("quant_max out of bound"));
        let q16 = resolve(r#"{"dtype": "qint16", "quant_min": -200, "quant_max": 5}"#).unwrap();
        assert_eq!((q16.quant.quant_min, q16.quant.quant_max), (-200, 5));
        // a lone bound is ignored
        assert_eq!(
            resolve(r#"{"quant_min": -5}"#).unwrap().quant.quant_min,
            -128
        );
        let spec = crate::registry::find("horizon.MinMaxObserver").unwrap();
        let through_spec = |json: &str| spec.resolve(&Params::from_json(json).unwrap());
        assert!(
            through_spec(r#"{"factory_kwargs": null}"#).is_ok(),
            "null means not given"
        );
        let refused = through_spec(r#"{"factory_kwargs": "cuda"}"#)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("factory_kwargs"), "{refused}");
    }

    #[test]
    fn schemes_assert_the_sign_of_ch_axis() {
        assert_eq!(resolve("{}").unwrap().scheme, Scheme::PerTensor);
        let pc = resolve(r#"{"qscheme": "per_channel_symmetric", "ch_axis": 1}"#).unwrap();
        assert_eq!((pc.scheme, pc.axis()), (Scheme::PerChannel(1), Some(1)));
        let e = resolve(r#"{"qscheme": "per_channel_symmetric", "ch_axis": -1}"#).unwrap_err();
        assert!(matches!(e, Error::Framework { ref kind, .. } if kind == "AssertionError"));
        // The scheme is asserted before the range.
        let e = resolve(r#"{"ch_axis": 0, "quant_min": 1, "quant_max": 5}"#).unwrap_err();
        assert!(e.to_string().contains("ch_axis should be negative"), "{e}");
    }

    #[test]
    fn each_group_marks_what_forward_reads() {
        let affects = |specs: Vec<crate::params::ParamSpec>, name: &str| {
            specs.iter().find(|p| p.name == name).map(|p| p.affects)
        };
        use Affects::{Data, Search};
        let minmax = MinMaxBaseArgs::specs();
        assert_eq!(affects(minmax.clone(), "ch_axis"), Some(Data));
        assert_eq!(affects(minmax.clone(), "dtype"), Some(Search));
        assert_eq!(affects(minmax, "round_mode"), Some(Search));
        let kl = KlBaseArgs::specs();
        assert_eq!(affects(kl.clone(), "dtype"), Some(Data));
        assert_eq!(affects(kl.clone(), "quant_max"), Some(Search));
        assert_eq!(affects(kl, "pow_quantization"), Some(Search));
        let mse = MseBaseArgs::specs();
        assert_eq!(affects(mse.clone(), "round_mode"), Some(Data));
        assert_eq!(affects(mse, "is_sync_quantize"), Some(Search));
        assert_eq!(affects(MixBaseArgs::specs(), "qscheme"), Some(Search));
        let clip = ClipBaseArgs::specs();
        assert_eq!(clip[0].default, serde_json::json!(1.0));
        assert_eq!(
            affects(FixedBaseArgs::specs(), "averaging_constant"),
            Some(Search)
        );
    }
}
