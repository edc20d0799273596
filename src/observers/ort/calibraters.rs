//! `EntropyCalibrater`, `PercentileCalibrater` and `DistributionCalibrater`: a [`Histogram`]
//! collected per `collect_data` call (its `Data` parameters), then the method's search on the
//! collector's final entry and ORT's `compute_scale_zp` (the `Search` parameters).
//!
//! * Entropy ([`entropy_threshold`]): the first minimum of the KL divergence over thresholds
//!   `num_quantized_bins/2 ..= num_bins/2` bins each side of zero, clamped to the data range.
//! * Percentile ([`percentile_range`]): the percentile of the `|x|` histogram (`symmetric`) or
//!   both tails of the signed one, clamped to the data range.
//! * Distribution ([`distribution`]): mean and standard deviation of the bin centres; the range
//!   is the histogram's `±threshold`.

use super::collector::{Collected, HistKind};
use super::entropy::entropy_threshold;
use super::histogram::{Collection, Histogram, ReaderArgs};
use super::percentile::{distribution, percentile_range, Scenario};
use super::qparams::{qparams_from_range, QuantArgs, QuantOptions};
use super::CollectMode;
use crate::error::Result;
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
use crate::params::ParamSet;
use crate::tensor::Tensor;
use serde_json::{json, Map, Value};
use std::fmt::Debug;
use std::marker::PhantomData;

crate::declare_params! {
    /// `extra_options` of `create_calibrator(calibrate_method=Entropy)`, plus how batches are
    /// collected and quantized.
    pub struct EntropyArgs {
        /// histogram bins (grows when later calls exceed the range)
        num_bins: i64 = 128; int(1, 1 << 20), Data;
        /// bins of the quantized distribution q; thresholds tried: num_quantized_bins/2 ..=
        /// num_bins/2 bins each side
        num_quantized_bins: i64 = 128; int(1, 1 << 20), Search;
        /// accepted but without effect: the entropy collector always histograms signed values
        symmetric: bool = false; boolean(), Search;
    }
    include { reader: ReaderArgs, quant: QuantArgs }
}

crate::declare_params! {
    /// `extra_options` of `create_calibrator(calibrate_method=Percentile)`, plus how batches are
    /// collected and quantized.
    pub struct PercentileArgs {
        /// histogram bins (grows with the data)
        num_bins: i64 = 2048; int(1, 1 << 20), Data;
        /// share of the data (in %) inside the range
        percentile: f64 = 99.999; float(0.0, 100.0), Search;
        /// true: histogram of |x| (from min|x|), range ±percentile clamped to the data; false:
        /// signed histogram, (100−p)/2 % cut on each side
        symmetric: bool = true; boolean(), Data;
    }
    include { reader: ReaderArgs, quant: QuantArgs }
}

crate::declare_params! {
    /// `extra_options` of `create_calibrator(calibrate_method=Distribution)`, plus how batches
    /// are collected and quantized.
    pub struct DistributionArgs {
        /// histogram bins; ORT refuses fewer than 512 (ValueError)
        num_bins: i64 = 2048; int(1, 1 << 20), Data;
        /// same: mean/std of the values; p3: of sign(v)·|v|^(1/3) (float 8 ~ X³)
        scenario: Scenario = Scenario::Same; choice(), Search;
    }
    include { reader: ReaderArgs, quant: QuantArgs }
}

/// One calibration method on the collector's entry.
pub trait Method: Send + Sync + 'static {
    /// The calibrater's parameters.
    type Args: ParamSet;
    /// The method's resolved search parameters.
    type Search: Clone + Debug + Send + Sync + 'static;

    /// What is collected, the search parameters and the quantizer's options.
    fn resolve(args: &Self::Args) -> (Collection, Self::Search, QuantOptions);

    /// The calibrated `(lowest, highest)` of `h` (collected as `collection`); the method's
    /// intermediate values go to `extra`.
    fn range(
        h: &Collected,
        collection: &Collection,
        search: &Self::Search,
        extra: &mut Map<String, Value>,
    ) -> Result<(f32, f32)>;
}

/// The resolved configuration of a histogram calibrater.
#[derive(Debug, Clone)]
pub struct Config<S> {
    pub collection: Collection,
    pub search: S,
    pub quant: QuantOptions,
}

/// An ORT histogram calibrater using `M`.
pub struct Calibrater<M>(PhantomData<fn() -> M>);

impl<M: Method> ObserverKind for Calibrater<M> {
    type Args = M::Args;
    type Config = Config<M::Search>;
    type State = Histogram;

    /// `extra_options` keys ORT does not know are ignored by `create_calibrator`; here they are
    /// left to the driver's refusal of undeclared keys.
    fn resolve(args: &M::Args, _unknown: &[String]) -> Result<Config<M::Search>> {
        let (collection, search, quant) = M::resolve(args);
        Ok(Config {
            collection,
            search,
            quant,
        })
    }

    fn init(cfg: &Config<M::Search>) -> Histogram {
        Histogram::new(cfg.collection)
    }

    fn feed(state: &mut Histogram, _: &Config<M::Search>, batch: &Tensor) -> Result<()> {
        state.feed(batch)
    }

    fn qparams(state: &Histogram, cfg: &Config<M::Search>) -> Result<QParams> {
        let h = state.collected()?;
        let mut extra = Map::new();
        let (lo, hi) = M::range(&h, &cfg.collection, &cfg.search, &mut extra)?;
        let mut q = qparams_from_range(lo, hi, &cfg.quant);
        extra.insert("data_min".into(), json!(h.min));
        extra.insert("data_max".into(), json!(h.max));
        extra.insert("num_bins_final".into(), json!(h.hist.len()));
        q.extra.extend(extra);
        if (lo, hi) != (h.min, h.max) {
            q.clip_range = Some((vec![lo], vec![hi]));
        }
        Ok(q)
    }

    fn qdq_kernel(
        _: &Config<M::Search>,
        _: &[usize],
        q: &QParams,
    ) -> Option<Box<dyn crate::qdq::QdqKernel>> {
        super::qparams::qdq_kernel(q)
    }

    fn plot(state: &Histogram) -> PlotSnapshot {
        state.plot()
    }
}

fn collection(num_bins: i64, kind: HistKind, mode: CollectMode) -> Collection {
    Collection {
        kind,
        num_bins: num_bins as usize,
        mode,
    }
}

/// `compute_entropy`: see [`entropy_threshold`].
pub struct EntropyMethod;

impl Method for EntropyMethod {
    type Args = EntropyArgs;
    /// `num_quantized_bins`.
    type Search = usize;

    fn resolve(args: &EntropyArgs) -> (Collection, usize, QuantOptions) {
        (
            collection(args.num_bins, HistKind::Value, args.reader.collect_mode),
            args.num_quantized_bins as usize,
            QuantOptions::resolve(&args.quant),
        )
    }

    fn range(
        h: &Collected,
        _: &Collection,
        &num_quantized_bins: &usize,
        extra: &mut Map<String, Value>,
    ) -> Result<(f32, f32)> {
        let s = entropy_threshold(&h.hist, &h.edges, h.min, h.max, num_quantized_bins)?;
        let (lows, highs): (Vec<f32>, Vec<f32>) = s.candidates.iter().copied().unzip();
        extra.insert("candidate_min".into(), json!(lows));
        extra.insert("candidate_max".into(), json!(highs));
        extra.insert("kl_divergence".into(), json!(s.divergence));
        extra.insert("best_candidate".into(), json!(s.best));
        Ok(s.range)
    }
}

/// `compute_percentile`: see [`percentile_range`].
pub struct PercentileMethod;

impl Method for PercentileMethod {
    type Args = PercentileArgs;
    /// `percentile`.
    type Search = f64;

    fn resolve(args: &PercentileArgs) -> (Collection, f64, QuantOptions) {
        let kind = if args.symmetric {
            HistKind::Absolute
        } else {
            HistKind::Value
        };
        (
            collection(args.num_bins, kind, args.reader.collect_mode),
            args.percentile,
            QuantOptions::resolve(&args.quant),
        )
    }

    fn range(
        h: &Collected,
        collection: &Collection,
        &percentile: &f64,
        extra: &mut Map<String, Value>,
    ) -> Result<(f32, f32)> {
        let symmetric = collection.kind == HistKind::Absolute;
        let s = percentile_range(&h.hist, &h.edges, h.min, h.max, percentile, symmetric)?;
        extra.insert("edge_index".into(), json!(s.indices));
        extra.insert(
            "tensordata_hist_bins".into(),
            json!([s.tensordata_hist_bins.0, s.tensordata_hist_bins.1]),
        );
        Ok(s.range)
    }
}

/// `compute_distribution`: see [`distribution`].
pub struct DistributionMethod;

impl Method for DistributionMethod {
    type Args = DistributionArgs;
    type Search = Scenario;

    fn resolve(args: &DistributionArgs) -> (Collection, Scenario, QuantOptions) {
        (
            collection(args.num_bins, HistKind::Value, args.reader.collect_mode),
            args.scenario,
            QuantOptions::resolve(&args.quant),
        )
    }

    fn range(
        h: &Collected,
        collection: &Collection,
        &scenario: &Scenario,
        extra: &mut Map<String, Value>,
    ) -> Result<(f32, f32)> {
        let d = distribution(&h.hist, &h.edges, collection.num_bins, scenario)?;
        extra.insert("avg".into(), json!(d.avg));
        extra.insert("std".into(), json!(d.std));
        Ok(d.range)
    }
}

/// `ort.EntropyCalibrater`.
pub type Entropy = Calibrater<EntropyMethod>;
/// `ort.PercentileCalibrater`.
pub type Percentile = Calibrater<PercentileMethod>;
/// `ort.DistributionCalibrater`.
pub type Distribution = Calibrater<DistributionMethod>;

#[cfg(test)]
mod tests {
    use crate::observer::Instance;
    use crate::params::Params;
    use crate::registry;
    use crate::tensor::Tensor;

    #[test]
    fn search_parameters_reuse_the_histogram() {
        let data: Vec<f32> = (0..10_000).map(|i| (i as f32 - 5000.0) / 1000.0).collect();
        let spec = registry::find("ort.PercentileCalibrater").unwrap();
        let mut o = Instance::new(spec, &Params::new()).unwrap();
        o.feed(&Tensor::from_vec(data)).unwrap();
        let before = o.qparams().unwrap();
        let tighter = Params::new().with("percentile", 90.0);
        assert_eq!(
            spec.data_key(&tighter).unwrap(),
            spec.data_key(&Params::new()).unwrap()
        );
        let searched = spec.resolve(&tighter).unwrap();
        let after = searched.qparams(o.state.as_ref()).unwrap();
        assert!(after.max_val[0] < before.max_val[0]);
        let rebinned = Params::new().with("num_bins", 512);
        assert_ne!(
            spec.data_key(&rebinned).unwrap(),
            spec.data_key(&Params::new()).unwrap()
        );
    }

    #[test]
    fn distribution_refuses_few_bins_after_collecting() {
        let spec = registry::find("ort.DistributionCalibrater").unwrap();
        let mut o = Instance::new(spec, &Params::new().with("num_bins", 128)).unwrap();
        o.feed(&Tensor::from_vec(vec![-1.0, 0.5, 2.0])).unwrap();
        assert_eq!(
            o.qparams().unwrap_err().to_string(),
            "ValueError: Invalid num_bins. Must be in range 512 <= num_bins."
        );
    }
}
