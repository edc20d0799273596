//! `MixObserver` (per tensor): per batch, nine percentile clips compete on the L2 error of
//! their fake quantisation; the winner enters the moving average.
//!
//! Per batch: the `|x|` histogram of `PercentileObserver` with 2048 bins; targets
//! `f32(p)·f32(numel)` in float32 for p ∈ {0.999, 0.9995, 0.9999, 0.99993, 0.99995, 0.99997,
//! 0.99999, 0.999995, 0.999999}; bins `i = searchsorted(cumsum, target)`, de-duplicated and
//! sorted (`torch.unique`); each clip `(i + 0.5)·(R/2048)` gives a candidate
//! `(max(mn, −clip), min(mx, clip))`, scored by `‖scale_quanti(x, s) − x‖₂`. A candidate replaces
//! the best only if strictly better, so the first one wins ties. Despite its docstring, Mix
//! tries no MinMax, KL or MSE candidate.

use super::base::{plot_state, MinMaxState, QuantConfig};
use super::config::{BaseConfig, MixBaseArgs};
use super::percentile::AbsHistogram;
use super::scale_quanti::l2_loss;
use crate::error::{Error, Result, Stage};
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
use crate::tensor::Tensor;
use serde_json::json;

/// Histogram bins Mix always uses.
pub const MIX_BINS: usize = 2048;

/// The nine percentiles (as fractions) Mix tries; PyTorch holds them in a float32 tensor.
pub const MIX_PERCENTILES: [f64; 9] = [
    0.999, 0.9995, 0.9999, 0.99993, 0.99995, 0.99997, 0.99999, 0.999995, 0.999999,
];

/// The same percentiles in percent, for display.
pub const MIX_PERCENTS: [f64; 9] = [
    99.9, 99.95, 99.99, 99.993, 99.995, 99.997, 99.999, 99.9995, 99.9999,
];

/// One of the batch's candidates.
#[derive(Debug, Clone, PartialEq)]
pub struct MixCandidate {
    /// Histogram bin of the clip.
    pub bin: usize,
    /// The percentiles (in percent) that landed in this bin.
    pub percentiles: Vec<f64>,
    pub clip: f32,
    pub min: f32,
    pub max: f32,
    pub scale: f32,
    /// L2 norm of the fake-quantization error over the batch (float32, as PyTorch).
    pub l2_error: f32,
}

/// What the last batch's competition found.
#[derive(Debug, Clone, PartialEq)]
pub struct MixRound {
    /// The candidates in the order they were tried.
    pub candidates: Vec<MixCandidate>,
    /// Index of the winner.
    pub winner: usize,
    /// The batch's `|x|` histogram (for plotting).
    pub hist: AbsHistogram,
}

/// The moving average, and the last batch's competition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MixState {
    pub stats: MinMaxState,
    pub last: Option<MixRound>,
}

/// The candidates of one batch, in the order they are tried.
pub fn candidates(data: &[f32], quant: &QuantConfig) -> (Vec<MixCandidate>, AbsHistogram) {
    let hist = AbsHistogram::new(data, MIX_BINS);
    let numel = data.len() as f32;
    let mut found: Vec<(usize, Vec<f64>)> = Vec::new();
    for (&p, &percent) in MIX_PERCENTILES.iter().zip(&MIX_PERCENTS) {
        let bin = hist.search(p as f32 * numel);
        match found.iter_mut().find(|(b, _)| *b == bin) {
            Some((_, ps)) => ps.push(percent),
            None => found.push((bin, vec![percent])),
        }
    }
    found.sort_by_key(|(b, _)| *b);
    let candidates = found
        .into_iter()
        .map(|(bin, percentiles)| {
            let clip = hist.clip_value(bin);
            let (min, max) = hist.clipped(clip);
            let scale = quant.scale(min, max);
            MixCandidate {
                bin,
                percentiles,
                clip,
                min,
                max,
                scale,
                l2_error: l2_loss(data, quant, scale),
            }
        })
        .collect();
    (candidates, hist)
}

/// Horizon's `MixObserver(averaging_constant=0.01, …)`.
pub struct Mix;

impl ObserverKind for Mix {
    type Args = MixBaseArgs;
    type Config = BaseConfig;
    type State = MixState;

    /// `ObserverBase.__init__`, then the per-tensor scheme.
    fn resolve(args: &MixBaseArgs, _unknown: &[String]) -> Result<BaseConfig> {
        let base = BaseConfig::resolve(&args.base())?;
        base.require_per_tensor("Mix observer only support per_tensor_symmetric qscheme.")?;
        Ok(base)
    }

    fn init(_: &BaseConfig) -> MixState {
        MixState::default()
    }

    fn feed(state: &mut MixState, cfg: &BaseConfig, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let (candidates, hist) = candidates(&batch.data, &cfg.quant);
        let mut best: Option<(usize, f32)> = None;
        for (k, c) in candidates.iter().enumerate() {
            let similarity = -c.l2_error;
            if similarity > best.map_or(f32::NEG_INFINITY, |(_, s)| s) {
                best = Some((k, similarity));
            }
        }
        let Some((winner, _)) = best else {
            // Every similarity was NaN or −inf: Python never binds `best_min`.
            return Err(Error::framework(
                "UnboundLocalError",
                "cannot access local variable 'best_min' where it is not associated with a value",
                Stage::Forward,
            ));
        };
        let best = &candidates[winner];
        state
            .stats
            .update(vec![best.min], vec![best.max], cfg.averaging_constant)?;
        state.last = Some(MixRound {
            candidates,
            winner,
            hist,
        });
        Ok(())
    }

    fn qparams(state: &MixState, cfg: &BaseConfig) -> Result<QParams> {
        let mut q = state.stats.qparams(&cfg.quant, None);
        if let Some(round) = &state.last {
            let list: Vec<_> = round
                .candidates
                .iter()
                .map(|c| {
                    json!({
                        "percentiles": c.percentiles,
                        "bin": c.bin,
                        "clip": c.clip,
                        "min": c.min,
                        "max": c.max,
                        "scale": c.scale,
                        "l2_error": c.l2_error,
                    })
                })
                .collect();
            q.extra.insert("candidates".into(), json!(list));
            q.extra
                .insert("selected_candidate".into(), json!(round.winner));
        }
        Ok(q)
    }

    scale_quanti_qdq!(quant);

    fn plot(state: &MixState) -> PlotSnapshot {
        let histogram = state.last.as_ref().map(|r| r.hist.plot_state());
        plot_state(&state.stats, histogram)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{collect, instance};
    use super::*;

    fn heavy_tailed(n: usize) -> Tensor {
        Tensor::from_vec(
            (0..n)
                .map(|i| {
                    let u = (i as f32 + 0.5) / n as f32;
                    let v = (u / (1.0 - u)).ln();
                    v * v * v.signum()
                })
                .collect(),
        )
    }

    #[test]
    fn candidates_are_unique_sorted_bins_and_the_best_wins() {
        let x = heavy_tailed(20000);
        let (cfg, state) = collect::<Mix>("{}", std::slice::from_ref(&x)).unwrap();
        let (cands, _) = candidates(&x.data, &cfg.quant);
        assert!(!cands.is_empty() && cands.len() <= 9);
        assert!(cands.windows(2).all(|w| w[0].bin < w[1].bin));
        assert_eq!(cands.iter().map(|c| c.percentiles.len()).sum::<usize>(), 9);
        let q = Mix::qparams(&state, &cfg).unwrap();
        let k = q.extra["selected_candidate"].as_u64().unwrap() as usize;
        let best = cands
            .iter()
            .map(|c| c.l2_error)
            .fold(f32::INFINITY, f32::min);
        assert_eq!(cands[k].l2_error, best);
        assert_eq!(q.max_val, vec![cands[k].max]);
        assert_eq!(q.extra["candidates"].as_array().unwrap().len(), cands.len());
    }

    #[test]
    fn tiny_batches_collapse_to_one_candidate() {
        let (_, state) = collect::<Mix>("{}", &[heavy_tailed(100)]).unwrap();
        let round = state.last.unwrap();
        assert_eq!(round.candidates.len(), 1);
        assert_eq!(round.winner, 0);
        assert_eq!(round.candidates[0].bin, MIX_BINS - 1);
    }

    #[test]
    fn per_channel_is_refused() {
        let e = instance(
            "horizon.MixObserver",
            r#"{"qscheme": "per_channel_symmetric", "ch_axis": 0}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "AssertionError: Mix observer only support per_tensor_symmetric qscheme."
        );
    }
}
