//! `MinMaxObserver` and `ClipObserver`: moving-average min/max, the latter clamped to fixed
//! limits.
//!
//! Per batch: `cur = aminmax(x)` (per channel: `x.transpose(0, ch_axis).flatten(1)`), then
//! `v ← v + c·(cur − v)` in float32 (the first batch is copied). Unlike PyTorch's
//! `MinMaxObserver` this is a *moving average* (default `c = 0.01`); `c = 1.0` keeps the last
//! batch only. `ClipObserver` (default `c = 1.0`) then clamps the stored state,
//! `min ← max(min, xmin)`, `max ← min(max, xmax)`, after every batch, so the clamp feeds into
//! the next average. dtype, range, round mode and power-of-two scales only enter
//! `calculate_qparams`.

use super::base::{plot_state, MinMaxState};
use super::channels::batch_min_max;
use super::config::{ensure, BaseConfig, ClipBaseArgs, MinMaxBaseArgs};
use crate::error::Result;
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
use crate::tensor::Tensor;

crate::declare_params! {
    /// Arguments of `ClipObserver`.
    pub struct ClipArgs {
        /// lower limit for the stored minimum
        xmin: f64 = -1.0; float(-1.0e6, 1.0e6), Data;
        /// upper limit for the stored maximum
        xmax: f64 = 1.0; float(-1.0e6, 1.0e6), Data;
    }
    include { base: ClipBaseArgs }
}

/// Horizon's `MinMaxObserver(averaging_constant=0.01, ch_axis=-1, dtype=qint8, qscheme=…)`.
pub struct MinMax;

impl ObserverKind for MinMax {
    type Args = MinMaxBaseArgs;
    type Config = BaseConfig;
    type State = MinMaxState;

    fn resolve(args: &MinMaxBaseArgs, _unknown: &[String]) -> Result<BaseConfig> {
        BaseConfig::resolve(&args.base())
    }

    fn init(_: &BaseConfig) -> MinMaxState {
        MinMaxState::default()
    }

    /// Empty batches are skipped.
    fn feed(state: &mut MinMaxState, cfg: &BaseConfig, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let (lo, hi) = batch_min_max(batch, cfg.scheme)?;
        state.update(lo, hi, cfg.averaging_constant)
    }

    fn qparams(state: &MinMaxState, cfg: &BaseConfig) -> Result<QParams> {
        Ok(state.qparams(&cfg.quant, cfg.axis()))
    }

    scale_quanti_qdq!(quant);

    fn plot(state: &MinMaxState) -> PlotSnapshot {
        plot_state(state, None)
    }
}

/// The configuration of a `ClipObserver`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClipConfig {
    pub base: BaseConfig,
    /// `(xmin, xmax)` as float32.
    pub limits: (f32, f32),
}

/// Horizon's `ClipObserver(xmin=-1.0, xmax=1.0, averaging_constant=1.0, …)`.
pub struct Clip;

impl ObserverKind for Clip {
    type Args = ClipArgs;
    type Config = ClipConfig;
    type State = MinMaxState;

    /// `xmin ≤ xmax` is asserted before `ObserverBase.__init__`.
    fn resolve(args: &ClipArgs, _unknown: &[String]) -> Result<ClipConfig> {
        ensure(
            args.xmin <= args.xmax,
            "xmin must less than or equal to xmax.",
        )?;
        Ok(ClipConfig {
            base: BaseConfig::resolve(&args.base.base())?,
            limits: (args.xmin as f32, args.xmax as f32),
        })
    }

    fn init(_: &ClipConfig) -> MinMaxState {
        MinMaxState::default()
    }

    /// No empty-batch check here: `aminmax` of an empty batch raises.
    fn feed(state: &mut MinMaxState, cfg: &ClipConfig, batch: &Tensor) -> Result<()> {
        let (lo, hi) = batch_min_max(batch, cfg.base.scheme)?;
        state.update(lo, hi, cfg.base.averaging_constant)?;
        let (xmin, xmax) = cfg.limits;
        for v in &mut state.min_val {
            if *v < xmin {
                *v = xmin;
            }
        }
        for v in &mut state.max_val {
            if *v > xmax {
                *v = xmax;
            }
        }
        Ok(())
    }

    fn qparams(state: &MinMaxState, cfg: &ClipConfig) -> Result<QParams> {
        Ok(state.qparams(&cfg.base.quant, cfg.base.axis()))
    }

    scale_quanti_qdq!(base.quant);

    fn plot(state: &MinMaxState) -> PlotSnapshot {
        plot_state(state, None)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::instance;
    use crate::observers::horizon::base;
    use crate::params::Params;
    use crate::tensor::Tensor;
    use proptest::prelude::*;

    #[test]
    fn moving_average_of_batch_extrema() {
        let mut o = instance("horizon.MinMaxObserver", r#"{"averaging_constant": 0.5}"#).unwrap();
        assert_eq!(o.qparams().unwrap().scale, vec![1.0], "no statistics yet");
        o.feed(&Tensor::from_vec(vec![-1.0, 2.0])).unwrap();
        o.feed(&Tensor::from_vec(vec![])).unwrap();
        o.feed(&Tensor::from_vec(vec![-3.0, 4.0])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.min_val, vec![-2.0]);
        assert_eq!(q.max_val, vec![3.0]);
        assert_eq!(q.scale, vec![3.0f32 / 127.5]);
    }

    #[test]
    fn per_channel_uses_the_channel_axis() {
        let mut o = instance(
            "horizon.MinMaxObserver",
            r#"{"qscheme": "per_channel_symmetric", "ch_axis": 1}"#,
        )
        .unwrap();
        let x = Tensor::new(vec![2, 2], vec![1.0, -8.0, -2.0, 4.0]).unwrap();
        o.feed(&x).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.min_val, vec![-2.0, -8.0]);
        assert_eq!(q.scale, vec![2.0f32 / 127.5, 8.0f32 / 127.5]);
        assert_eq!(q.axis, Some(1));
        let err = o.feed(&Tensor::from_vec(vec![1.0])).unwrap_err();
        assert!(err.to_string().starts_with("IndexError"), "{err}");
    }

    #[test]
    fn clip_clamps_the_stored_state() {
        let mut o = instance("horizon.ClipObserver", r#"{"xmin": -1.5, "xmax": 3.0}"#).unwrap();
        o.feed(&Tensor::from_vec(vec![-4.0, 1.0])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!((q.min_val[0], q.max_val[0]), (-1.5, 1.0));
        assert!(o.feed(&Tensor::from_vec(vec![])).is_err());
        let e = instance(
            "horizon.ClipObserver",
            r#"{"xmin": 2, "xmax": 1, "ch_axis": 0}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "AssertionError: xmin must less than or equal to xmax.",
            "the limits are checked before ObserverBase"
        );
    }

    proptest! {
        #[test]
        fn averaging_constant_one_keeps_the_last_batch(
            a in proptest::collection::vec(-1e3f32..1e3, 1..50),
            b in proptest::collection::vec(-1e3f32..1e3, 1..50),
        ) {
            let mut o = instance("horizon.MinMaxObserver", r#"{"averaging_constant": 1.0}"#).unwrap();
            o.feed(&Tensor::from_vec(a.clone())).unwrap();
            o.feed(&Tensor::from_vec(b.clone())).unwrap();
            let q = o.qparams().unwrap();
            let fold = |v: &[f32]| {
                let lo = v.iter().cloned().fold(f32::INFINITY, f32::min);
                let hi = v.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                (lo, hi)
            };
            let ((alo, ahi), (blo, bhi)) = (fold(&a), fold(&b));
            // old + 1·(cur − old) in float32: the last batch up to the rounding of cur − old.
            prop_assert_eq!(q.min_val[0], alo + (blo - alo));
            prop_assert_eq!(q.max_val[0], ahi + (bhi - ahi));
            prop_assert!((q.min_val[0] - blo).abs() <= alo.abs().max(blo.abs()) * f32::EPSILON);
            prop_assert!((q.max_val[0] - bhi).abs() <= ahi.abs().max(bhi.abs()) * f32::EPSILON);
        }

        #[test]
        fn scale_is_at_least_eps_and_covers_the_range(
            a in proptest::collection::vec(-1e3f32..1e3, 1..50),
            pow in any::<bool>(),
        ) {
            let params = Params::new().with("pow_quantization", pow);
            let spec = crate::registry::find("horizon.MinMaxObserver").unwrap();
            let mut o = crate::observer::Instance::new(spec, &params).unwrap();
            o.feed(&Tensor::from_vec(a.clone())).unwrap();
            let s = o.qparams().unwrap().scale[0];
            prop_assert!(s >= base::EPS);
            let amax = a.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            if !pow {
                prop_assert!((s * 127.5 - amax).abs() <= amax * 1e-6 + base::EPS * 127.5);
            }
        }
    }
}
