//! `MinMaxObserver` and `ClipObserver`: moving-average min/max, the latter clamped to fixed
//! limits.
//!
//! Per batch: `cur = aminmax(x)` (per channel: `x.transpose(0, ch_axis).flatten(1)`), then
//! `v ← v + c·(cur − v)` in float32 (the first batch is copied). Unlike PyTorch's
//! `MinMaxObserver` this is a *moving average* (default `c = 0.01`); `c = 1.0` keeps the last
//! batch only. `ClipObserver` (default `c = 1.0`) then clamps the stored state,
//! `min ← max(min, xmin)`, `max ← min(max, xmax)`, after every batch, so the clamp feeds into
//! the next average.

use super::base::{self, MinMaxState, QuantConfig, Scheme};
use crate::error::Result;
use crate::observer::legacy::{Observer, Retune};
use crate::observer::{ObserverState, QParams};
use crate::params::Params;
use crate::tensor::Tensor;

/// Horizon's `MinMaxObserver` (and, with limits, `ClipObserver`).
#[derive(Debug, Clone)]
pub struct MinMaxObserver {
    params: Params,
    scheme: Scheme,
    quant: QuantConfig,
    averaging_constant: f32,
    /// `ClipObserver`'s `(xmin, xmax)`, as float32.
    clip: Option<(f32, f32)>,
    state: MinMaxState,
}

impl MinMaxObserver {
    /// `MinMaxObserver(averaging_constant=0.01, ch_axis=-1, dtype=qint8, qscheme=…)`.
    pub fn new(params: &Params) -> Result<Self> {
        let (scheme, quant, c) = base::base_from_params(params)?;
        Ok(MinMaxObserver {
            params: params.clone(),
            scheme,
            quant,
            averaging_constant: c,
            clip: None,
            state: MinMaxState::default(),
        })
    }

    /// `ClipObserver(xmin=-1.0, xmax=1.0, averaging_constant=1.0, …)`.
    pub fn clip(params: &Params) -> Result<Self> {
        let xmin = params.f64_or("xmin", -1.0)?;
        let xmax = params.f64_or("xmax", 1.0)?;
        base::ensure(xmin <= xmax, "xmin must less than or equal to xmax.")?;
        let (scheme, quant, _) = base::base_from_params(params)?;
        let c = params.f64_or("averaging_constant", 1.0)? as f32;
        Ok(MinMaxObserver {
            params: params.clone(),
            scheme,
            quant,
            averaging_constant: c,
            clip: Some((xmin as f32, xmax as f32)),
            state: MinMaxState::default(),
        })
    }

    fn rebuild(&self, params: &Params) -> Result<Self> {
        if self.clip.is_some() {
            Self::clip(params)
        } else {
            Self::new(params)
        }
    }

    fn axis(&self) -> Option<usize> {
        match self.scheme {
            Scheme::PerTensor => None,
            Scheme::PerChannel(a) => Some(a),
        }
    }
}

impl Observer for MinMaxObserver {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        // MinMaxObserver skips empty tensors; ClipObserver has no such check and its
        // `aminmax` raises.
        if batch.is_empty() && self.clip.is_none() {
            return Ok(());
        }
        let (lo, hi) = base::batch_min_max(batch, self.scheme)?;
        self.state.update(lo, hi, self.averaging_constant)?;
        if let Some((xmin, xmax)) = self.clip {
            for v in &mut self.state.min_val {
                if *v < xmin {
                    *v = xmin;
                }
            }
            for v in &mut self.state.max_val {
                if *v > xmax {
                    *v = xmax;
                }
            }
        }
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        Ok(self.state.qparams(&self.quant, self.axis()))
    }

    fn reset(&mut self) {
        self.state = MinMaxState::default();
    }

    fn state(&self) -> ObserverState {
        ObserverState {
            min_val: self.state.min_val.clone(),
            max_val: self.state.max_val.clone(),
            histogram: None,
        }
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        base::fake_quantize(x, q, self.quant.round_mode)
    }

    /// dtype, range, round mode and power-of-two only enter `calculate_qparams`.
    fn retune(&mut self, params: &Params) -> Result<Retune> {
        let merged = self.params.merged(params);
        let fresh = self.rebuild(&merged)?;
        if fresh.scheme != self.scheme
            || fresh.averaging_constant != self.averaging_constant
            || fresh.clip != self.clip
        {
            return Ok(Retune::NeedsData);
        }
        self.quant = fresh.quant;
        self.params = merged;
        Ok(Retune::Applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(json: &str) -> Params {
        Params::from_json(json).unwrap()
    }

    #[test]
    fn moving_average_of_batch_extrema() {
        let mut o = MinMaxObserver::new(&p(r#"{"averaging_constant": 0.5}"#)).unwrap();
        o.observe(&Tensor::from_vec(vec![-1.0, 2.0])).unwrap();
        o.observe(&Tensor::from_vec(vec![-3.0, 4.0])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.min_val, vec![-2.0]);
        assert_eq!(q.max_val, vec![3.0]);
        assert_eq!(q.scale, vec![3.0f32 / 127.5]);
        o.reset();
        assert_eq!(o.qparams().unwrap().scale, vec![1.0]);
    }

    #[test]
    fn per_channel_uses_the_channel_axis() {
        let mut o =
            MinMaxObserver::new(&p(r#"{"qscheme": "per_channel_symmetric", "ch_axis": 1}"#))
                .unwrap();
        let x = Tensor::new(vec![2, 2], vec![1.0, -8.0, -2.0, 4.0]).unwrap();
        o.observe(&x).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.min_val, vec![-2.0, -8.0]);
        assert_eq!(q.scale, vec![2.0f32 / 127.5, 8.0f32 / 127.5]);
        assert_eq!(q.axis, Some(1));
        let err = o.observe(&Tensor::from_vec(vec![1.0])).unwrap_err();
        assert!(err.to_string().starts_with("IndexError"), "{err}");
    }

    #[test]
    fn clip_clamps_the_stored_state() {
        let mut o = MinMaxObserver::clip(&p(r#"{"xmin": -1.5, "xmax": 3.0}"#)).unwrap();
        o.observe(&Tensor::from_vec(vec![-4.0, 1.0])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!((q.min_val[0], q.max_val[0]), (-1.5, 1.0));
        assert!(o.observe(&Tensor::from_vec(vec![])).is_err());
        assert!(MinMaxObserver::clip(&p(r#"{"xmin": 2, "xmax": 1}"#)).is_err());
    }

    #[test]
    fn dtype_is_retuned_without_data_but_averaging_is_not() {
        let mut o = MinMaxObserver::new(&Params::new()).unwrap();
        o.observe(&Tensor::from_vec(vec![-1.0, 2.0])).unwrap();
        assert_eq!(
            o.retune(&p(r#"{"dtype": "qint16"}"#)).unwrap(),
            Retune::Applied
        );
        assert_eq!(o.qparams().unwrap().scale, vec![2.0f32 / 32767.5]);
        assert_eq!(
            o.retune(&p(r#"{"averaging_constant": 0.5}"#)).unwrap(),
            Retune::NeedsData
        );
    }

    proptest! {
        #[test]
        fn averaging_constant_one_keeps_the_last_batch(
            a in proptest::collection::vec(-1e3f32..1e3, 1..50),
            b in proptest::collection::vec(-1e3f32..1e3, 1..50),
        ) {
            let mut o = MinMaxObserver::new(&p(r#"{"averaging_constant": 1.0}"#)).unwrap();
            o.observe(&Tensor::from_vec(a.clone())).unwrap();
            o.observe(&Tensor::from_vec(b.clone())).unwrap();
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
            let mut o = MinMaxObserver::new(&params).unwrap();
            o.observe(&Tensor::from_vec(a.clone())).unwrap();
            let s = o.qparams().unwrap().scale[0];
            prop_assert!(s >= base::EPS);
            let amax = a.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            if !pow {
                prop_assert!((s * 127.5 - amax).abs() <= amax * 1e-6 + base::EPS * 127.5);
            }
        }
    }
}
