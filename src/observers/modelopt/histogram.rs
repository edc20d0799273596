//! `HistogramCalibrator` followed by one `compute_amax` method — `"entropy"`, `"mse"` (as
//! broken in 0.47, and the corrected call) or `"percentile"`.
//!
//! The collected `|x|` histogram ([`collect`]) depends only on `num_bins`, `skip_zeros` and
//! `torch_hist`; `compute_amax`'s keyword arguments and the quantizer's attributes only enter
//! the search on it. The amax is reported as the clipping range; the observer's `min_val` /
//! `max_val` are the data's `±max|x|`.

use super::collect::{self, CollectArgs, Hist};
use super::entropy::entropy_amax;
use super::mse::{mse_amax, percentile_amax, MseCall};
use super::quant::{fake_quantize, qparams_from_amax, QuantizerArgs};
use crate::error::{Error, Result, Stage};
use crate::observer::{HistogramState, ObserverKind, PlotSnapshot, QParams};
use crate::params::{Bits, ParamSet, ParamSpec, Params};
use crate::tensor::Tensor;
use serde_json::{json, Map, Value};
use std::marker::PhantomData;

crate::declare_params! {
    /// `compute_amax("entropy" | "mse", stride=, start_bin=)`.
    pub struct CandidateArgs {
        /// first candidate bin
        start_bin: i64 = 128; int(0, 1 << 24), Search;
        /// step between candidate bins
        stride: i64 = 1; int(1, 1 << 20), Search;
    }
}

crate::declare_params! {
    /// `compute_amax("percentile", percentile=)`.
    pub struct PercentileArgs {
        /// share of |x| (in %) below amax
        percentile: f64 = 99.99; float(0.0, 100.0), Search;
    }
}

/// The parameters of a histogram calibrator, in this order: the constructor's
/// ([`CollectArgs`]), `compute_amax`'s keyword arguments `S`, the quantizer's attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramArgs<S> {
    pub collection: CollectArgs,
    pub search: S,
    pub quantizer: QuantizerArgs,
}

impl<S: ParamSet> ParamSet for HistogramArgs<S> {
    fn declare(out: &mut Vec<ParamSpec>) {
        CollectArgs::declare(out);
        S::declare(out);
        QuantizerArgs::declare(out);
    }

    fn from_params(params: &Params) -> Result<Self> {
        Ok(HistogramArgs {
            collection: CollectArgs::from_params(params)?,
            search: S::from_params(params)?,
            quantizer: QuantizerArgs::from_params(params)?,
        })
    }

    fn write(&self, out: &mut Params) {
        self.collection.write(out);
        self.search.write(out);
        self.quantizer.write(out);
    }

    fn defaults() -> Self {
        HistogramArgs {
            collection: CollectArgs::defaults(),
            search: S::defaults(),
            quantizer: QuantizerArgs::defaults(),
        }
    }
}

/// One `compute_amax` method.
pub trait Method: Send + Sync + 'static {
    /// Its keyword arguments.
    type Args: ParamSet;
    /// A note every result of this method carries.
    const NOTE: Option<&'static str> = None;

    /// The amax of the histogram `counts`/`edges`; intermediate values go to `extra`.
    fn amax(
        counts: &[i64],
        edges: &[f64],
        args: &Self::Args,
        quantizer: &QuantizerArgs,
        extra: &mut Map<String, Value>,
    ) -> Result<f32>;
}

/// What a histogram calibrator collected.
#[derive(Debug, Clone, PartialEq)]
pub struct Collected {
    /// The histogram (`None` before any data).
    pub hist: Option<Hist>,
    /// Largest |x| seen (for display).
    pub max_abs: f32,
}

/// ModelOpt's `HistogramCalibrator` with `compute_amax` method `M`.
pub struct HistogramCalibrator<M>(PhantomData<fn() -> M>);

impl<M: Method> ObserverKind for HistogramCalibrator<M> {
    type Args = HistogramArgs<M::Args>;
    type Config = HistogramArgs<M::Args>;
    type State = Collected;

    /// The constructor's only check: `axis` must be `None`.
    fn resolve(args: &Self::Args, _unknown: &[String]) -> Result<Self::Config> {
        if args.collection.axis.is_some() {
            return Err(Error::framework(
                "NotImplementedError",
                "Calibrator histogram collection only supports per tensor scaling",
                Stage::Init,
            ));
        }
        Ok(args.clone())
    }

    fn init(_: &Self::Config) -> Collected {
        Collected {
            hist: None,
            max_abs: 0.0,
        }
    }

    fn feed(state: &mut Collected, cfg: &Self::Config, batch: &Tensor) -> Result<()> {
        let c = &cfg.collection;
        state.hist = Some(collect::collect(
            state.hist.take(),
            &batch.data,
            c.num_bins as usize,
            c.skip_zeros,
            c.torch_hist,
        )?);
        if let Some(m) = batch.data.iter().map(|v| v.abs()).reduce(f32::max) {
            state.max_abs = state.max_abs.max(m);
        }
        Ok(())
    }

    fn qparams(state: &Collected, cfg: &Self::Config) -> Result<QParams> {
        let hist = state.hist.as_ref().ok_or_else(|| {
            Error::input(
                "HistogramCalibrator has not collected any data (compute_amax() returns None)",
            )
        })?;
        let counts = hist.counts();
        let mut extra = Map::new();
        let amax = M::amax(
            &counts,
            &hist.edges(),
            &cfg.search,
            &cfg.quantizer,
            &mut extra,
        )?;
        let mut q = qparams_from_amax(vec![amax], None, &cfg.quantizer)?;
        extra.insert("num_bins_final".into(), json!(counts.len()));
        extra.insert("data_amax".into(), json!(state.max_abs));
        q.extra = extra;
        q.clip_range = Some((q.min_val.clone(), q.max_val.clone()));
        q.min_val = vec![if cfg.quantizer.unsigned {
            0.0
        } else {
            -state.max_abs
        }];
        q.max_val = vec![state.max_abs];
        q.notes.extend(M::NOTE.map(str::to_string));
        Ok(q)
    }

    /// Hand-written: no kernel fits some qparams (see [`super::quant::qdq_kernel`]).
    fn fake_quantize(cfg: &Self::Config, x: &Tensor, q: &QParams) -> Result<Tensor> {
        fake_quantize(x, q, &cfg.quantizer)
    }

    fn qdq_kernel(
        cfg: &Self::Config,
        shape: &[usize],
        q: &QParams,
    ) -> Option<Box<dyn crate::qdq::QdqKernel>> {
        super::quant::qdq_kernel(shape, q, &cfg.quantizer)
    }

    fn plot(state: &Collected) -> PlotSnapshot {
        let Some(hist) = &state.hist else {
            return PlotSnapshot::default();
        };
        let counts: Vec<f32> = match hist {
            Hist::Torch { hist, .. } => hist.clone(),
            Hist::Numpy { hist, .. } => hist.iter().map(|&c| c as f32).collect(),
        };
        // The torch path's arange edges need not number counts + 1: cut or extend by the width.
        let mut edges: Vec<f32> = hist.edges().iter().map(|&e| e as f32).collect();
        let width = match edges.as_slice() {
            [a, b, ..] => b - a,
            _ => 0.0,
        };
        edges.truncate(counts.len() + 1);
        while edges.len() < counts.len() + 1 {
            let last = edges.last().copied().unwrap_or(0.0);
            edges.push(last + width);
        }
        PlotSnapshot {
            min_val: vec![edges.first().copied().unwrap_or(0.0)],
            max_val: vec![state.max_abs],
            histogram: Some(HistogramState { counts, edges }),
        }
    }
}

/// `_compute_amax_entropy` ([`entropy_amax`]); a float `num_bits` fails on
/// `num_bits - 1` (TypeError).
pub struct Entropy;

impl Method for Entropy {
    type Args = CandidateArgs;

    fn amax(
        counts: &[i64],
        edges: &[f64],
        args: &CandidateArgs,
        quantizer: &QuantizerArgs,
        extra: &mut Map<String, Value>,
    ) -> Result<f32> {
        let Bits::Int(b) = quantizer.num_bits else {
            return Err(Error::framework(
                "TypeError",
                "unsupported operand type(s) for -: 'tuple' and 'int'",
                Stage::CalculateQparams,
            ));
        };
        let s = entropy_amax(
            counts,
            edges,
            b,
            quantizer.unsigned,
            args.stride as usize,
            args.start_bin as usize,
        )?;
        let amaxes: Vec<f32> = s
            .candidates
            .iter()
            .map(|&i| edges.get(i).copied().unwrap_or(f64::NAN) as f32)
            .collect();
        extra.insert("candidate_amax".into(), json!(amaxes));
        extra.insert("kl_divergence".into(), json!(s.divergence));
        extra.insert("best_candidate".into(), json!(s.best));
        Ok(s.amax)
    }
}

/// `_compute_amax_mse` ([`mse_amax`]): as ModelOpt 0.47 calls it (`num_bits` lands in
/// `bias`), or with `FIXED` as intended (`fake_tensor_quant(centers, amax, None, num_bits,
/// unsigned)`).
pub struct Mse<const FIXED: bool>;

impl<const FIXED: bool> Method for Mse<FIXED> {
    type Args = CandidateArgs;
    const NOTE: Option<&'static str> = if FIXED {
        None
    } else {
        Some("ModelOpt 0.47's MSE search passes num_bits as the bias of fake_tensor_quant; the amax is usually the first candidate (see modelopt.HistogramCalibrator.mse.fixed)")
    };

    fn amax(
        counts: &[i64],
        edges: &[f64],
        args: &CandidateArgs,
        quantizer: &QuantizerArgs,
        extra: &mut Map<String, Value>,
    ) -> Result<f32> {
        let call = if FIXED {
            MseCall::Fixed
        } else {
            MseCall::Faithful
        };
        let s = mse_amax(
            counts,
            edges,
            quantizer.num_bits,
            quantizer.unsigned,
            args.stride as usize,
            args.start_bin as usize,
            call,
        )?;
        extra.insert("candidate_amax".into(), json!(s.candidates));
        extra.insert("mse".into(), json!(s.mse));
        extra.insert("best_candidate".into(), json!(s.best));
        Ok(s.amax)
    }
}

/// `_compute_amax_percentile` ([`percentile_amax`]).
pub struct Percentile;

impl Method for Percentile {
    type Args = PercentileArgs;

    fn amax(
        counts: &[i64],
        edges: &[f64],
        args: &PercentileArgs,
        _: &QuantizerArgs,
        extra: &mut Map<String, Value>,
    ) -> Result<f32> {
        let (amax, idx) = percentile_amax(counts, edges, args.percentile)?;
        extra.insert("edge_index".into(), json!(idx));
        Ok(amax)
    }
}

#[cfg(test)]
mod tests {
    use crate::error::Result;
    use crate::observer::Instance;
    use crate::params::Params;
    use crate::registry;
    use crate::tensor::Tensor;

    fn data() -> Tensor {
        Tensor::from_vec(
            (0..20_000)
                .map(|i| ((i as f32) * 0.61803).sin() * (1.0 + (i % 7) as f32))
                .collect(),
        )
    }

    fn observed(id: &str, p: Params) -> Result<Instance> {
        let mut o = Instance::new(registry::find(id)?, &p)?;
        o.feed(&data())?;
        Ok(o)
    }

    #[test]
    fn faithful_mse_is_the_start_bin_centre_and_fixed_is_not() {
        let bugged = observed("modelopt.HistogramCalibrator.mse", Params::new()).unwrap();
        let q = bugged.qparams().unwrap();
        let h = bugged.plot().histogram.unwrap();
        let centre128 = (h.edges[129] + h.edges[128]) / 2.0;
        assert_eq!(q.amax, Some(vec![centre128]));
        assert_eq!(q.notes.len(), 1);
        let fixed = observed("modelopt.HistogramCalibrator.mse.fixed", Params::new()).unwrap();
        let f = fixed.qparams().unwrap();
        assert!(f.amax.unwrap()[0] > 4.0 * centre128);
        assert!(f.notes.is_empty());
    }

    #[test]
    fn axis_is_refused_and_entropy_needs_integer_bits() {
        let id = "modelopt.HistogramCalibrator.entropy";
        let e = observed(id, Params::new().with("axis", 0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "NotImplementedError: Calibrator histogram collection only supports per tensor scaling"
        );
        let o = observed(id, Params::from_json(r#"{"num_bits": [4, 3]}"#).unwrap()).unwrap();
        assert!(o
            .qparams()
            .unwrap_err()
            .to_string()
            .starts_with("TypeError"));
    }

    #[test]
    fn search_parameters_reuse_the_histogram() {
        let spec = registry::find("modelopt.HistogramCalibrator.percentile").unwrap();
        let o = observed(spec.id, Params::new()).unwrap();
        let a = o.qparams().unwrap().amax.unwrap()[0];
        let tighter = Params::new().with("percentile", 90.0);
        assert_eq!(
            spec.data_key(&tighter).unwrap(),
            spec.data_key(&Params::new()).unwrap()
        );
        let b = spec.resolve(&tighter).unwrap().qparams(o.state.as_ref());
        assert!(b.unwrap().amax.unwrap()[0] < a);
        let rebinned = Params::new().with("num_bins", 512);
        assert_ne!(
            spec.data_key(&rebinned).unwrap(),
            spec.data_key(&Params::new()).unwrap()
        );
    }

    #[test]
    fn fp4_is_accepted_by_the_configuration_but_not_quantized_per_tensor() {
        let o = observed(
            "modelopt.HistogramCalibrator.percentile",
            Params::from_json(r#"{"num_bits": [2, 1]}"#).unwrap(),
        )
        .unwrap();
        assert_eq!(
            o.qparams().unwrap_err().to_string(),
            "NotImplementedError: Only support E=4 & M=3 for now."
        );
        let spec = registry::find("modelopt.MaxCalibrator").unwrap();
        let e5m2 = Params::from_json(r#"{"num_bits": [5, 2]}"#).unwrap();
        assert!(Instance::new(spec, &e5m2).is_err());
    }
}
