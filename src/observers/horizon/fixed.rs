//! `FixedScaleObserver`: ignores the data and returns the configured scale and zero point
//! (`scale` as float32, `zero_point` truncated to an integer as `torch.tensor(zp, dtype=long)`
//! does). It keeps no min/max, so every argument is a search parameter.

use super::config::{ensure, BaseConfig, FixedBaseArgs};
use crate::error::Result;
use crate::observer::{ObserverKind, PlotSnapshot, QParams, ZeroPoint};
use crate::tensor::Tensor;

crate::declare_params! {
    /// Arguments of `FixedScaleObserver`.
    pub struct FixedScaleArgs {
        /// the scale to return (must be > 0)
        scale: f64 = 1.0; float(0.0, 1.0e6), Search;
        /// the zero point to return (truncated to an integer)
        zero_point: f64 = 0.0; float(-32768.0, 32767.0), Search;
    }
    include { base: FixedBaseArgs }
}

/// The configuration of a `FixedScaleObserver`: what it returns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixedScaleConfig {
    pub base: BaseConfig,
    pub scale: f32,
    pub zero_point: i64,
}

/// Horizon's `FixedScaleObserver(scale=1, zero_point=0, averaging_constant=0, …)`.
pub struct FixedScale;

impl ObserverKind for FixedScale {
    type Args = FixedScaleArgs;
    type Config = FixedScaleConfig;
    type State = ();

    /// `scale > 0` is asserted before `ObserverBase.__init__`.
    fn resolve(args: &FixedScaleArgs, _unknown: &[String]) -> Result<FixedScaleConfig> {
        ensure(args.scale > 0.0, "scale must bigger than 0")?;
        Ok(FixedScaleConfig {
            base: BaseConfig::resolve(&args.base.base())?,
            scale: args.scale as f32,
            zero_point: args.zero_point.trunc() as i64,
        })
    }

    fn init(_: &FixedScaleConfig) {}

    fn feed(_: &mut (), _: &FixedScaleConfig, _: &Tensor) -> Result<()> {
        Ok(())
    }

    fn qparams(_: &(), cfg: &FixedScaleConfig) -> Result<QParams> {
        let quant = &cfg.base.quant;
        let q = QParams::int(
            vec![cfg.scale],
            ZeroPoint::Int(vec![cfg.zero_point]),
            quant.quant_min,
            quant.quant_max,
            Vec::new(),
            Vec::new(),
        );
        crate::derivation::record_qparams(
            || {
                crate::derivation::Step::new(
                    "Fixed scale",
                    "the scale and zero point given; the data is not looked at",
                    super::base::OBSERVER_V2,
                )
            },
            &[],
            &[],
            &q.scale,
            &q.zero_point,
        );
        Ok(q)
    }

    scale_quanti_qdq!(base.quant);

    fn plot(_: &()) -> PlotSnapshot {
        PlotSnapshot::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::instance;
    use crate::observer::ZeroPoint;
    use crate::tensor::Tensor;

    const ID: &str = "horizon.FixedScaleObserver";

    #[test]
    fn returns_the_configured_scale_and_truncated_zero_point() {
        let mut o = instance(ID, r#"{"scale": 0.5, "zero_point": 3.7}"#).unwrap();
        o.feed(&Tensor::from_vec(vec![100.0])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.scale, vec![0.5]);
        assert_eq!(q.zero_point, ZeroPoint::Int(vec![3]));
        assert!(q.min_val.is_empty());
        let dq = o
            .fake_quantize(&Tensor::from_vec(vec![1.25, 100.0]), &q)
            .unwrap();
        // 1.25/0.5 = 2.5 → 2 (ties to even) → (2 + 3 − 3)·0.5; 100 clamps at 127 − 3.
        assert_eq!(dq.data, vec![1.0, 62.0]);
    }

    #[test]
    fn zero_scale_is_refused_before_the_base_checks() {
        let e = instance(ID, r#"{"scale": 0.0, "ch_axis": 0}"#).unwrap_err();
        assert_eq!(e.to_string(), "AssertionError: scale must bigger than 0");
    }
}
