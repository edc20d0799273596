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

use super::base::{self, plot_state, MinMaxState, Scheme};
use super::channels::channel_rows;
use super::config::{BaseConfig, MseBaseArgs};
use super::scale_quanti::l2_losses;
use crate::error::{Error, Result, Stage};
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
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

crate::declare_params! {
    /// Arguments of `MSEObserver`.
    pub struct MseArgs {
        /// step through the 95 shrink factors 1.00, 0.99, … 0.06 (Horizon advises ≤ 20)
        stride: i64 = 1; int(1, NUM_ITER as i64), Data;
    }
    include { base: MseBaseArgs }
}

/// The configuration of an `MSEObserver`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MseConfig {
    pub base: BaseConfig,
    pub stride: usize,
    /// Apply the factor that won the search (the `.fixed` variant) instead of `1 − k·0.01`.
    pub corrected: bool,
}

/// The moving average, and what the last batch's search found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MseState {
    pub stats: MinMaxState,
    pub last: Option<MseSearch>,
}

/// Horizon's `MSEObserver(stride=1, averaging_constant=0.01, …)`: as published
/// (`CORRECTED = false`), or applying the factor that was actually evaluated.
pub struct Mse<const CORRECTED: bool>;

/// The candidates' losses on one batch: what the published observer and the `.fixed` variant
/// share (they differ only in the factor applied afterwards).
#[derive(Debug)]
struct Candidates {
    /// Batch min/max per channel.
    lo: Vec<f32>,
    hi: Vec<f32>,
    factors: Vec<f32>,
    /// `losses[k][c]`.
    losses: Vec<Vec<f32>>,
}

impl MseConfig {
    /// Every candidate's loss on `batch`, computed once per batch for both variants while the
    /// batch is registered ([`crate::shared_stats::shared_search`]): the key holds everything
    /// the losses depend on.
    fn candidates(&self, batch: &Tensor) -> Result<std::sync::Arc<Candidates>> {
        let key = format!(
            "horizon.MSEObserver {:?} {:?} stride {} shape {:?}",
            self.base.scheme, self.base.quant, self.stride, batch.shape
        );
        crate::shared_stats::shared_search(&batch.data, key, || self.evaluate(batch))
    }

    /// [`MseConfig::candidates`] computed.
    fn evaluate(&self, batch: &Tensor) -> Result<Candidates> {
        let quant = &self.base.quant;
        let (rows, channels) = match self.base.scheme {
            Scheme::PerTensor => (Cow::Borrowed(&batch.data[..]), 1),
            Scheme::PerChannel(axis) => channel_rows(batch, axis)?,
        };
        let row_len = rows.len() / channels.max(1);
        let row = |c: usize| &rows[c * row_len..(c + 1) * row_len];
        let (lo, hi): (Vec<f32>, Vec<f32>) = (0..channels).map(|c| base::min_max(row(c))).unzip();
        let factors: Vec<f32> = (0..NUM_ITER)
            .step_by(self.stride)
            .map(|i| (1.0 - i as f64 * 0.01) as f32)
            .collect();
        // Every candidate of a channel in blocked passes over its row ([`l2_losses`]).
        let per_channel: Vec<Vec<f32>> = crate::parallel::map_indices(channels, |c| {
            let scales: Vec<f32> = factors
                .iter()
                .map(|&f| quant.scale(lo[c] * f, hi[c] * f))
                .collect();
            l2_losses(row(c), quant, &scales)
        });
        let losses: Vec<Vec<f32>> = (0..factors.len())
            .map(|k| per_channel.iter().map(|l| l[k]).collect())
            .collect();
        Ok(Candidates {
            lo,
            hi,
            factors,
            losses,
        })
    }

    /// Run the search on one batch: `(cur_min, cur_max)` per channel.
    fn search(&self, batch: &Tensor) -> Result<(Vec<f32>, Vec<f32>, MseSearch)> {
        let candidates = self.candidates(batch)?;
        let Candidates {
            lo,
            hi,
            factors,
            losses,
        } = candidates.as_ref();
        let channels = lo.len();
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
                if self.corrected {
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
                factors: factors.clone(),
                losses: losses.clone(),
                selected,
                applied,
            },
        ))
    }

    /// The last batch's search as the derivation's step: per tensor its whole candidate table,
    /// per channel the spread of the winning candidates.
    fn record(&self, search: &MseSearch) {
        crate::derivation::record(|| {
            let rule = if self.corrected {
                "the last minimum, its own factor applied (quantscope's correction)"
            } else {
                "the last minimum; its index k is applied as factor 1 − k·0.01 (Horizon's stride \
                 mapping: the factor evaluated only when stride = 1)"
            };
            let mut step = crate::derivation::Step::new(
                "Shrink-factor search on the last batch",
                format!(
                    "for candidates i = 0, {stride}, 2·{stride}, … < 95: range f_i·(min, max) with \
                     f_i = 1 − i·0.01, loss = ‖Q(x) − x‖₂; {rule}. The observer's range is the \
                     running average of each batch's shrunk range",
                    stride = self.stride
                ),
                super::base::OBSERVER_V2,
            )
            .value("stride", self.stride);
            if let ([k], [applied]) = (&search.selected[..], &search.applied[..]) {
                let rows = search
                    .factors
                    .iter()
                    .zip(&search.losses)
                    .enumerate()
                    .map(|(i, (&f, row))| vec![i as f64, f64::from(f), f64::from(row[0])])
                    .collect();
                step = step
                    .value("evaluated factor", search.factors[*k])
                    .value("applied factor", *applied)
                    .candidates(crate::derivation::Candidates::new(
                        &["k", "factor", "loss"],
                        rows,
                        *k,
                        rule,
                    ));
            } else {
                let mut picked = search.selected.clone();
                picked.sort_unstable();
                if let (Some(&lo), Some(&hi)) = (picked.first(), picked.last()) {
                    step = step
                        .value("channels", picked.len())
                        .value("smallest winning k", lo)
                        .value("median winning k", picked[picked.len() / 2])
                        .value("largest winning k", hi);
                }
            }
            step
        });
    }

    /// The last search as report extras (one value per tensor, or a list per channel).
    fn extra(&self, search: &MseSearch, q: &mut QParams) {
        let per_tensor = self.base.scheme == Scheme::PerTensor;
        let pick = |v: Vec<Value>| {
            if per_tensor {
                v.into_iter().next().unwrap_or(Value::Null)
            } else {
                Value::Array(v)
            }
        };
        q.extra
            .insert("candidate_factors".into(), json!(search.factors));
        if per_tensor {
            let losses: Vec<f32> = search.losses.iter().map(|row| row[0]).collect();
            q.extra.insert("losses".into(), json!(losses));
        }
        q.extra.insert(
            "selected_candidate".into(),
            pick(search.selected.iter().map(|&k| json!(k)).collect()),
        );
        q.extra.insert(
            "evaluated_factor".into(),
            pick(
                search
                    .selected
                    .iter()
                    .map(|&k| json!(search.factors[k]))
                    .collect(),
            ),
        );
        q.extra.insert(
            "applied_factor".into(),
            pick(search.applied.iter().map(|&f| json!(f)).collect()),
        );
        if !self.corrected && self.stride > 1 {
            q.notes.push(format!(
                "Horizon's stride bug: the winning candidate index k is applied as factor 1 − k·0.01 \
                 instead of 1 − k·{stride}·0.01 (see horizon.MSEObserver.fixed).",
                stride = self.stride
            ));
        }
    }
}

impl<const CORRECTED: bool> ObserverKind for Mse<CORRECTED> {
    type Args = MseArgs;
    type Config = MseConfig;
    type State = MseState;

    /// `ObserverBase.__init__`, then the constructor's `torch.arange(0, 95, stride)`, which
    /// refuses a zero or negative step.
    fn resolve(args: &MseArgs, _unknown: &[String]) -> Result<MseConfig> {
        let base = BaseConfig::resolve(&args.base.base())?;
        let stride = match args.stride {
            0 => Err("step must be nonzero"),
            s if s < 0 => Err("upper bound and larger bound inconsistent with step sign"),
            s => Ok(s as usize),
        }
        .map_err(|message| Error::framework("RuntimeError", message, Stage::Init))?;
        Ok(MseConfig {
            base,
            stride,
            corrected: CORRECTED,
        })
    }

    fn init(_: &MseConfig) -> MseState {
        MseState::default()
    }

    fn feed(state: &mut MseState, cfg: &MseConfig, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let (lo, hi, search) = cfg.search(batch)?;
        state.stats.update(lo, hi, cfg.base.averaging_constant)?;
        state.last = Some(search);
        Ok(())
    }

    fn qparams(state: &MseState, cfg: &MseConfig) -> Result<QParams> {
        if let Some(search) = &state.last {
            cfg.record(search);
        }
        let mut q = state.stats.qparams(&cfg.base.quant, cfg.base.axis());
        if let Some(search) = &state.last {
            cfg.extra(search, &mut q);
        }
        Ok(q)
    }

    scale_quanti_qdq!(base.quant);

    fn plot(state: &MseState) -> PlotSnapshot {
        plot_state(&state.stats, None)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::collect;
    use super::*;
    use crate::params::{ParamSet, Params};
    use proptest::prelude::*;

    type Faithful = Mse<false>;

    fn laplace_like() -> Tensor {
        // A bulk in [-1, 1] with two large outliers: clipping pays off.
        let mut v: Vec<f32> = (0..100_000).map(|i| (i as f32 * 0.7311).sin()).collect();
        v[7] = 30.0;
        v[900] = -20.0;
        Tensor::from_vec(v)
    }

    /// The last search and the qparams after `batches`.
    fn search<K: ObserverKind<Config = MseConfig, State = MseState>>(
        json: &str,
        batches: &[Tensor],
    ) -> (MseSearch, QParams) {
        let (cfg, state) = collect::<K>(json, batches).unwrap();
        let q = K::qparams(&state, &cfg).unwrap();
        (state.last.unwrap(), q)
    }

    #[test]
    fn stride_one_applies_the_winning_factor_up_to_an_ulp() {
        let (s, q) = search::<Faithful>("{}", &[laplace_like()]);
        let k = s.selected[0];
        assert!(k > 0, "outliers make clipping win");
        assert!((s.applied[0] - s.factors[k]).abs() <= f32::EPSILON);
        assert_eq!(q.max_val, vec![30.0 * s.applied[0]]);
        assert_eq!(q.extra["selected_candidate"], json!(k));
    }

    #[test]
    fn stride_bug_is_reproduced_and_fixed() {
        let x = [laplace_like()];
        let (faithful, q) = search::<Faithful>(r#"{"stride": 5}"#, &x);
        let (fixed, q_fixed) = search::<Mse<true>>(r#"{"stride": 5}"#, &x);
        let k = faithful.selected[0];
        assert_eq!(fixed.selected[0], k);
        assert_eq!(faithful.applied[0], 1.0 - k as f32 * 0.01);
        assert_eq!(fixed.applied[0], (1.0 - (5 * k) as f64 * 0.01) as f32);
        assert_eq!(faithful.factors.len(), 19);
        assert!(q.notes.iter().any(|n| n.contains("stride bug")));
        assert!(q_fixed.notes.is_empty());
    }

    #[test]
    fn all_zero_input_ties_select_the_last_candidate() {
        let (s, q) = search::<Faithful>("{}", &[Tensor::from_vec(vec![0.0; 64])]);
        assert_eq!(s.selected, vec![94]);
        assert_eq!(q.scale, vec![base::EPS]);
    }

    #[test]
    fn per_channel_selects_per_channel() {
        let x = laplace_like();
        let mut rows = x.data.clone();
        rows.extend(x.data.iter().map(|v| v * 0.25));
        let (s, q) = search::<Faithful>(
            r#"{"qscheme": "per_channel_symmetric", "ch_axis": 0}"#,
            &[Tensor::new(vec![2, 100_000], rows).unwrap()],
        );
        assert_eq!(q.scale.len(), 2);
        assert_eq!(q.axis, Some(0));
        assert_eq!(
            s.selected[0], s.selected[1],
            "scaling a channel keeps its best factor"
        );
    }

    #[test]
    fn stride_zero_is_refused_like_torch_arange() {
        let args = MseArgs {
            stride: 0,
            ..MseArgs::from_params(&Params::new()).unwrap()
        };
        let e = Faithful::resolve(&args, &[]).unwrap_err();
        assert_eq!(e.to_string(), "RuntimeError: step must be nonzero");
    }

    proptest! {
        #[test]
        fn the_selected_candidate_has_the_smallest_loss(
            data in proptest::collection::vec(-10f32..10.0, 1..300),
            stride in 1i64..20,
            bpu in any::<bool>(),
        ) {
            let round = if bpu { "bpu_round" } else { "half_to_even" };
            let json = format!(r#"{{"stride": {stride}, "round_mode": "{round}"}}"#);
            let (s, q) = search::<Faithful>(&json, &[Tensor::from_vec(data.clone())]);
            let k = s.selected[0];
            let best = s.losses[k][0];
            prop_assert!(s.losses.iter().all(|row| row[0] >= best));
            // the last of the minima
            prop_assert!(s.losses[k + 1..].iter().all(|row| row[0] > best));
            let applied = s.applied[0];
            prop_assert!(applied > 0.0 && applied <= 1.0);
            let hi = data.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            prop_assert_eq!(q.max_val[0], hi * applied);
        }
    }
}
