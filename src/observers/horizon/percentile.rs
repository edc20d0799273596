//! `PercentileObserver` (per tensor): a per-batch percentile clip of `|x|`, then the moving
//! average.
//!
//! Per batch, in float32:
//! 1. `mn, mx = aminmax(x)`, `R = max(−mn, mx)`;
//! 2. `hist = histc(|x|, bins, 0, R)` (PyTorch's binning);
//! 3. `i = searchsorted(cumsum(hist), f32(percentile/100 · numel))`, the first bin whose
//!    cumulative count reaches the target (`numel`, not the histogram total);
//! 4. `clip = (i + 0.5)·(R / bins)`, the centre of that bin;
//! 5. `cur = (max(mn, −clip), min(mx, clip))`, then `v ← v + c·(cur − v)`.
//!
//! The histogram is not kept between batches; quantscope keeps the last one for plotting.

use super::base::{self, plot_state, MinMaxState};
use super::config::{ensure, BaseConfig, PerTensorBaseArgs};
use crate::error::Result;
use crate::histogram::histc_abs;
use crate::observer::{HistogramState, ObserverKind, PlotSnapshot, QParams};
use crate::tensor::Tensor;

/// The histogram of `|x|` over `[0, R]` that Percentile and Mix search.
#[derive(Debug, Clone, PartialEq)]
pub struct AbsHistogram {
    /// `aminmax(x)`.
    pub min: f32,
    pub max: f32,
    /// `R = max(−min, max)`, the histogram's upper end.
    pub range: f32,
    /// `histc(|x|, bins, 0, R)`.
    pub counts: Vec<f32>,
    /// `cumsum(counts)`, accumulated in float64 and stored as float32 (PyTorch's CPU cumsum).
    pub cumsum: Vec<f32>,
}

impl AbsHistogram {
    /// Bin `|x|` of a non-empty batch.
    pub fn new(data: &[f32], bins: usize) -> Self {
        let (min, max) = base::min_max(data);
        let range = if (-min).is_nan() || max.is_nan() {
            f32::NAN
        } else {
            (-min).max(max)
        };
        let counts = histc_abs(data, bins, 0.0, range);
        let mut acc = 0.0f64;
        let cumsum = counts
            .iter()
            .map(|&c| {
                acc += c as f64;
                acc as f32
            })
            .collect();
        AbsHistogram {
            min,
            max,
            range,
            counts,
            cumsum,
        }
    }

    /// `searchsorted(cumsum, target)` (left): the first bin whose cumulative count is
    /// `≥ target`, or `bins` when none is.
    pub fn search(&self, target: f32) -> usize {
        self.cumsum.partition_point(|&c| c < target)
    }

    /// `(i + 0.5)·(R / bins)` in float32.
    pub fn clip_value(&self, i: usize) -> f32 {
        (i as f32 + 0.5) * (self.range / self.counts.len() as f32)
    }

    /// The candidate range `(max(mn, −clip), min(mx, clip))` (Python's `max`/`min`).
    pub fn clipped(&self, clip: f32) -> (f32, f32) {
        let lo = if -clip > self.min { -clip } else { self.min };
        let hi = if clip < self.max { clip } else { self.max };
        (lo, hi)
    }

    /// The histogram with its `linspace(0, R, bins + 1)` edges, for plotting.
    pub fn plot_state(&self) -> HistogramState {
        let n = self.counts.len();
        let (lo, hi) = if self.range == 0.0 {
            (-1.0, 1.0)
        } else {
            (0.0, self.range)
        };
        let step = (hi - lo) / n.max(1) as f32;
        HistogramState {
            counts: self.counts.clone(),
            edges: (0..=n).map(|i| lo + step * i as f32).collect(),
        }
    }
}

crate::declare_params! {
    /// Arguments of `PercentileObserver`. Both act per batch, before the moving average.
    pub struct PercentileArgs {
        /// share of |x| (in %) kept inside the clip, per batch
        percentile: f64 = 99.99; float(0.0, 100.0), Data;
        /// histogram bins of |x| per batch (the clip lands on a bin centre)
        bins: i64 = 2048; int(1, MAX_BINS), Data;
    }
    include { base: PerTensorBaseArgs }
}

/// Largest histogram quantscope builds per batch.
pub const MAX_BINS: i64 = 1 << 20;

/// The configuration of a `PercentileObserver`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PercentileConfig {
    pub base: BaseConfig,
    /// `percentile / 100` (float64, as in Python).
    pub threshold: f64,
    pub bins: usize,
}

/// The moving average, and the last batch's histogram (for plotting; Horizon keeps none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PercentileState {
    pub stats: MinMaxState,
    pub last: Option<AbsHistogram>,
}

/// Horizon's `PercentileObserver(percentile=99.99, bins=2048, averaging_constant=0.01, …)`.
pub struct Percentile;

impl ObserverKind for Percentile {
    type Args = PercentileArgs;
    type Config = PercentileConfig;
    type State = PercentileState;

    /// `ObserverBase.__init__`, then the percentile's range, then the per-tensor scheme.
    fn resolve(args: &PercentileArgs, _unknown: &[String]) -> Result<PercentileConfig> {
        let base = BaseConfig::resolve(&args.base.base())?;
        ensure(
            (0.0..=100.0).contains(&args.percentile),
            "Percentile must be in range [0, 100].",
        )?;
        base.require_per_tensor("Percentile observer only support per_tensor_symmetric qscheme.")?;
        if !(1..=MAX_BINS).contains(&args.bins) {
            return Err(crate::Error::param(
                "bins",
                format!("the histogram needs 1..={MAX_BINS} bins, got {}", args.bins),
            ));
        }
        Ok(PercentileConfig {
            base,
            threshold: args.percentile / 100.0,
            bins: args.bins as usize,
        })
    }

    fn init(_: &PercentileConfig) -> PercentileState {
        PercentileState::default()
    }

    fn feed(state: &mut PercentileState, cfg: &PercentileConfig, batch: &Tensor) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let hist = AbsHistogram::new(&batch.data, cfg.bins);
        let target = (cfg.threshold * batch.len() as f64) as f32;
        let clip = hist.clip_value(hist.search(target));
        let (lo, hi) = hist.clipped(clip);
        state
            .stats
            .update(vec![lo], vec![hi], cfg.base.averaging_constant)?;
        state.last = Some(hist);
        Ok(())
    }

    fn qparams(state: &PercentileState, cfg: &PercentileConfig) -> Result<QParams> {
        Ok(state.stats.qparams(&cfg.base.quant, None))
    }

    scale_quanti_qdq!(base.quant);

    fn plot(state: &PercentileState) -> PlotSnapshot {
        plot_state(
            &state.stats,
            state.last.as_ref().map(AbsHistogram::plot_state),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::instance;
    use super::*;
    use crate::params::Params;
    use proptest::prelude::*;

    const ID: &str = "horizon.PercentileObserver";

    #[test]
    fn clips_at_the_centre_of_the_percentile_bin() {
        // 100 values 0.01..=1.00 and one outlier at -10: R = 10, bins of width 0.1.
        let mut data: Vec<f32> = (1..=100).map(|i| i as f32 / 100.0).collect();
        data.push(-10.0);
        let mut o = instance(ID, r#"{"percentile": 99.0, "bins": 100}"#).unwrap();
        o.feed(&Tensor::from_vec(data)).unwrap();
        // target f32(0.99·101) = 99.99: bins 0..=9 hold 0.01..0.99 (99 values), bin 10 holds
        // 1.0 → i = 10 → clip = 10.5·(10/100).
        let clip = 10.5f32 * (10.0f32 / 100.0);
        let q = o.qparams().unwrap();
        assert_eq!(q.max_val, vec![1.0]);
        assert_eq!(q.min_val, vec![-clip]);
    }

    #[test]
    fn all_zero_input_bins_over_minus_one_to_one() {
        let mut o = instance(ID, "{}").unwrap();
        o.feed(&Tensor::from_vec(vec![0.0; 16])).unwrap();
        let q = o.qparams().unwrap();
        assert_eq!((q.min_val[0], q.max_val[0]), (0.0, 0.0));
        assert_eq!(q.scale, vec![base::EPS]);
        let h = o.plot().histogram.unwrap();
        assert_eq!(h.counts[1024], 16.0);
    }

    #[test]
    fn rejects_per_channel_and_bad_percentiles() {
        let e = instance(ID, r#"{"qscheme": "per_channel_symmetric", "ch_axis": 0}"#).unwrap_err();
        assert!(e.to_string().contains("only support per_tensor"), "{e}");
        let e = instance(ID, r#"{"percentile": 101}"#).unwrap_err();
        assert!(e.to_string().contains("100"), "{e}");
    }

    #[test]
    fn searchsorted_is_left_sided() {
        let h = AbsHistogram::new(&[0.1, 0.2, 0.9, 1.0], 4);
        assert_eq!(h.cumsum, vec![2.0, 2.0, 2.0, 4.0]);
        assert_eq!(h.search(2.0), 0);
        assert_eq!(h.search(2.5), 3);
        assert_eq!(h.search(5.0), 4);
    }
    proptest! {
        #[test]
        fn the_clip_stays_inside_the_batch_range(
            data in proptest::collection::vec(-50f32..50.0, 1..400),
            percentile in 0.0f64..=100.0,
            bins in 1i64..600,
        ) {
            let params = Params::new().with("percentile", percentile).with("bins", bins);
            let mut o = crate::observer::Instance::new(crate::registry::find(ID).unwrap(), &params).unwrap();
            o.feed(&Tensor::from_vec(data.clone())).unwrap();
            let q = o.qparams().unwrap();
            let lo = data.iter().cloned().fold(f32::INFINITY, f32::min);
            let hi = data.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            prop_assert!(q.min_val[0] >= lo && q.max_val[0] <= hi);
            prop_assert!(q.scale[0] >= base::EPS);
            // The clip is a bin centre of [0, R]: never beyond R.
            let r = (-lo).max(hi);
            prop_assert!(-q.min_val[0] <= r && q.max_val[0] <= r);
        }
    }
}
