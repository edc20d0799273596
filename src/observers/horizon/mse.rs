//! `MSEObserver`: per batch, shrink the min/max by up to 94 % and keep the factor whose fake
//! quantisation has the smallest L2 error; then the moving average.
//!
//! Per batch (per tensor, or per channel of `x.transpose(0, ch_axis).flatten(1)`):
//! 1. `mn, mx = aminmax(x)`;
//! 2. candidates `i = 0, stride, 2·stride, … < 95` with factor `f_i = f32(1 − i·0.01)` (float64
//!    arithmetic, rounded): `s_i = scale(mn·f_i, mx·f_i)`, loss `‖scale_quanti(x, s_i) − x‖₂`;
//! 3. `k` = the **last** candidate with the smallest loss (`_mse` reverses the list before
//!    `argmin`), per channel;
//! 4. `cur = (mn, mx)·f32(1 − f32(k)·f32(0.01))`, then `v ← v + c·(cur − v)`.
//!
//! Step 4 is Horizon's bug: it uses the candidate *index* `k`, not `i = k·stride`, so with
//! `stride > 1` the applied factor is not the one that won (stride 2, k = 10: evaluated 0.80,
//! applied 0.90). Even at stride 1 the applied float32 factor can be 1 ulp away from the
//! evaluated one. The `.fixed` variant applies exactly the evaluated candidate.

use super::base::{self, MinMaxState, QuantConfig, Scheme};
use crate::error::{Error, Result, Stage};
use crate::observer::legacy::{Observer, Retune};
use crate::observer::{ObserverState, QParams};
use crate::params::Params;
use crate::tensor::Tensor;
use serde_json::{json, Value};
use std::borrow::Cow;

/// Number of shrink factors Horizon tries at stride 1 (1.00 down to 0.06).
pub const NUM_ITER: usize = 95;

/// What the last batch's search found.
#[derive(Debug, Clone, PartialEq)]
pub struct MseSearch {
    /// The evaluated factors `f32(1 − i·0.01)`.
    pub factors: Vec<f32>,
    /// `losses[k][c]`: L2 error of candidate `k` on channel `c` (one channel per tensor).
    pub losses: Vec<Vec<f32>>,
    /// Winning candidate index per channel.
    pub selected: Vec<usize>,
    /// The factor applied to the batch min/max per channel.
    pub applied: Vec<f32>,
}

/// Horizon's `MSEObserver` (faithful, or with the stride bug corrected).
#[derive(Debug, Clone)]
pub struct MseObserver {
    params: Params,
    scheme: Scheme,
    quant: QuantConfig,
    averaging_constant: f32,
    stride: usize,
    fixed: bool,
    state: MinMaxState,
    last: Option<MseSearch>,
}

impl MseObserver {
    /// `MSEObserver(stride=1, averaging_constant=0.01, …)` as published.
    pub fn new(params: &Params) -> Result<Self> {
        Self::build(params, false)
    }

    /// The same search, applying the factor that was actually evaluated.
    pub fn fixed(params: &Params) -> Result<Self> {
        Self::build(params, true)
    }

    fn build(params: &Params, fixed: bool) -> Result<Self> {
        let (scheme, quant, c) = base::base_from_params(params)?;
        let stride = params.i64_or("stride", 1)?;
        if stride == 0 {
            // torch.arange(0, 95, 0) in the constructor.
            return Err(Error::framework(
                "RuntimeError",
                "step must be nonzero",
                Stage::Init,
            ));
        }
        if stride < 0 {
            return Err(Error::framework(
                "RuntimeError",
                "upper bound and larger bound inconsistent with step sign",
                Stage::Init,
            ));
        }
        Ok(MseObserver {
            params: params.clone(),
            scheme,
            quant,
            averaging_constant: c,
            stride: stride as usize,
            fixed,
            state: MinMaxState::default(),
            last: None,
        })
    }

    /// Run the search on one batch: `(cur_min, cur_max)` per channel.
    fn search(&self, batch: &Tensor) -> Result<(Vec<f32>, Vec<f32>, MseSearch)> {
        let (rows, channels) = match self.scheme {
            Scheme::PerTensor => (Cow::Borrowed(&batch.data[..]), 1),
            Scheme::PerChannel(axis) => base::channel_rows(batch, axis)?,
        };
        let row_len = rows.len() / channels.max(1);
        let row = |c: usize| &rows[c * row_len..(c + 1) * row_len];
        let (lo, hi): (Vec<f32>, Vec<f32>) = (0..channels).map(|c| base::min_max(row(c))).unzip();
        let mut factors = Vec::new();
        let mut losses = Vec::new();
        for i in (0..NUM_ITER).step_by(self.stride) {
            let f = (1.0 - i as f64 * 0.01) as f32;
            let candidate: Vec<f32> = (0..channels)
                .map(|c| {
                    let scale = self.quant.scale(lo[c] * f, hi[c] * f);
                    base::l2_loss(row(c), &self.quant, scale)
                })
                .collect();
            factors.push(f);
            losses.push(candidate);
        }
        // Last minimum per channel (`n − 1 − argmin(reversed)`); NaN wins like torch.argmin.
        let selected: Vec<usize> = (0..channels)
            .map(|c| {
                let (mut best, mut best_nan) = (0, false);
                for (k, row) in losses.iter().enumerate() {
                    let l = row[c];
                    if l.is_nan() {
                        (best, best_nan) = (k, true);
                    } else if !best_nan && l <= losses[best][c] {
                        best = k;
                    }
                }
                best
            })
            .collect();
        let applied: Vec<f32> = selected
            .iter()
            .map(|&k| {
                if self.fixed {
                    factors[k]
                } else {
                    1.0f32 - (k as f32 * 0.01f32)
                }
            })
            .collect();
        let cur_min = lo.iter().zip(&applied).map(|(&v, &f)| v * f).collect();
        let cur_max = hi.iter().zip(&applied).map(|(&v, &f)| v * f).collect();
        Ok((
            cur_min,
            cur_max,
            MseSearch {
                factors,
                losses,
                selected,
                applied,
            },
        ))
    }

    fn extra(&self, q: &mut QParams) {
        let Some(s) = &self.last else { return };
        let per_tensor = self.scheme == Scheme::PerTensor;
        let pick = |v: Vec<Value>| {
            if per_tensor {
                v.into_iter().next().unwrap_or(Value::Null)
            } else {
                Value::Array(v)
            }
        };
        q.extra.insert("candidate_factors".into(), json!(s.factors));
        if per_tensor {
            let losses: Vec<f32> = s.losses.iter().map(|row| row[0]).collect();
            q.extra.insert("losses".into(), json!(losses));
        }
        q.extra.insert(
            "selected_candidate".into(),
            pick(s.selected.iter().map(|&k| json!(k)).collect()),
        );
        q.extra.insert(
            "evaluated_factor".into(),
            pick(s.selected.iter().map(|&k| json!(s.factors[k])).collect()),
        );
        q.extra.insert(
            "applied_factor".into(),
            pick(s.applied.iter().map(|&f| json!(f)).collect()),
        );
        if !self.fixed && self.stride > 1 {
            q.notes.push(format!(
                "Horizon's stride bug: the winning candidate index k is applied as factor 1 − k·0.01 \
                 instead of 1 − k·{stride}·0.01 (see horizon.MSEObserver.fixed).",
                stride = self.stride
            ));
        }
    }
}

impl Observer for MseObserver {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let (lo, hi, search) = self.search(batch)?;
        self.state.update(lo, hi, self.averaging_constant)?;
        self.last = Some(search);
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let axis = match self.scheme {
            Scheme::PerTensor => None,
            Scheme::PerChannel(a) => Some(a),
        };
        let mut q = self.state.qparams(&self.quant, axis);
        self.extra(&mut q);
        Ok(q)
    }

    fn reset(&mut self) {
        self.state = MinMaxState::default();
        self.last = None;
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

    fn retune(&mut self, params: &Params) -> Result<Retune> {
        // Every parameter enters the per-batch search; validate, then ask for the data.
        Self::build(&self.params.merged(params), self.fixed)?;
        Ok(Retune::NeedsData)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(json: &str) -> Params {
        Params::from_json(json).unwrap()
    }

    fn laplace_like() -> Tensor {
        // A bulk in [-1, 1] with two large outliers: clipping pays off.
        let mut v: Vec<f32> = (0..100_000).map(|i| (i as f32 * 0.7311).sin()).collect();
        v[7] = 30.0;
        v[900] = -20.0;
        Tensor::from_vec(v)
    }

    #[test]
    fn stride_one_applies_the_winning_factor_up_to_an_ulp() {
        let mut o = MseObserver::new(&Params::new()).unwrap();
        o.observe(&laplace_like()).unwrap();
        let s = o.last.clone().unwrap();
        let k = s.selected[0];
        assert!(k > 0, "outliers make clipping win");
        assert!((s.applied[0] - s.factors[k]).abs() <= f32::EPSILON);
        assert_eq!(o.qparams().unwrap().max_val, vec![30.0 * s.applied[0]]);
    }

    #[test]
    fn stride_bug_is_reproduced_and_fixed() {
        let x = laplace_like();
        let mut faithful = MseObserver::new(&p(r#"{"stride": 5}"#)).unwrap();
        let mut fixed = MseObserver::fixed(&p(r#"{"stride": 5}"#)).unwrap();
        faithful.observe(&x).unwrap();
        fixed.observe(&x).unwrap();
        let k = faithful.last.as_ref().unwrap().selected[0];
        assert_eq!(fixed.last.as_ref().unwrap().selected[0], k);
        assert_eq!(
            faithful.last.as_ref().unwrap().applied[0],
            1.0 - k as f32 * 0.01
        );
        assert_eq!(
            fixed.last.as_ref().unwrap().applied[0],
            (1.0 - (5 * k) as f64 * 0.01) as f32
        );
        assert_eq!(faithful.last.as_ref().unwrap().factors.len(), 19);
    }

    #[test]
    fn all_zero_input_ties_select_the_last_candidate() {
        let mut o = MseObserver::new(&Params::new()).unwrap();
        o.observe(&Tensor::from_vec(vec![0.0; 64])).unwrap();
        assert_eq!(o.last.as_ref().unwrap().selected, vec![94]);
        assert_eq!(o.qparams().unwrap().scale, vec![base::EPS]);
    }

    #[test]
    fn per_channel_selects_per_channel() {
        let mut o =
            MseObserver::new(&p(r#"{"qscheme": "per_channel_symmetric", "ch_axis": 0}"#)).unwrap();
        let x = laplace_like();
        let mut rows = x.data.clone();
        rows.extend(x.data.iter().map(|v| v * 0.25));
        o.observe(&Tensor::new(vec![2, 100_000], rows).unwrap())
            .unwrap();
        let q = o.qparams().unwrap();
        assert_eq!(q.scale.len(), 2);
        assert_eq!(q.axis, Some(0));
        let s = o.last.as_ref().unwrap();
        assert_eq!(
            s.selected[0], s.selected[1],
            "scaling a channel keeps its best factor"
        );
    }

    #[test]
    fn stride_zero_is_refused_like_torch_arange() {
        let e = MseObserver::new(&p(r#"{"stride": 0}"#)).unwrap_err();
        assert!(e.to_string().contains("step must be nonzero"));
    }
    proptest! {
        #[test]
        fn the_selected_candidate_has_the_smallest_loss(
            data in proptest::collection::vec(-10f32..10.0, 1..300),
            stride in 1i64..20,
            bpu in any::<bool>(),
        ) {
            let params = Params::new()
                .with("stride", stride)
                .with("round_mode", if bpu { "bpu_round" } else { "half_to_even" });
            let mut o = MseObserver::new(&params).unwrap();
            o.observe(&Tensor::from_vec(data.clone())).unwrap();
            let s = o.last.clone().unwrap();
            let k = s.selected[0];
            let best = s.losses[k][0];
            prop_assert!(s.losses.iter().all(|row| row[0] >= best));
            // the last of the minima
            prop_assert!(s.losses[k + 1..].iter().all(|row| row[0] > best));
            let applied = s.applied[0];
            prop_assert!(applied > 0.0 && applied <= 1.0);
            let q = o.qparams().unwrap();
            let hi = data.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            prop_assert_eq!(q.max_val[0], hi * applied);
        }
    }
}
