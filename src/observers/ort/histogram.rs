//! `EntropyCalibrater`, `PercentileCalibrater` and `DistributionCalibrater`: a
//! [`HistogramCollector`](super::collector) fed per `collect_data` call, and the method's search
//! on the final histogram.
//!
//! In `single_reader` mode ORT's one `collect_data` call stacks every batch
//! (`np.asarray(list)`, which refuses batches of different lengths) and bins the concatenation
//! once, on the range of the whole union. A histogram of the union over the union's range cannot
//! be built from per-batch histograms, so — like ORT, which holds every output of the reader in
//! memory — this observer keeps the batches and bins them when qparams are asked for.

use super::collector::{self, Collected, HistKind};
use super::entropy::entropy_threshold;
use super::percentile::{distribution, percentile_range, Scenario};
use super::qparams::{qparams_from_range, quantize_dequantize, QuantOptions};
use super::{
    distribution_params, entropy_params, flatten, percentile_params, quant_options, CollectMode,
};
use crate::error::{Error, Result, Stage};
use crate::observer::legacy::{Observer, Retune};
use crate::observer::{HistogramState, ObserverState, QParams};
use crate::params::{ParamSpec, Params};
use crate::tensor::Tensor;
use serde_json::json;

/// The search run on the collected histogram, with its search-only parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Method {
    Entropy { num_quantized_bins: usize },
    Percentile { percentile: f64 },
    Distribution { scenario: Scenario },
}

/// What must stay the same for collected data to be reused.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Collection {
    kind: HistKind,
    num_bins: usize,
    mode: CollectMode,
    symmetric: bool,
}

/// One ORT histogram calibrater on one tensor.
#[derive(Debug, Clone)]
pub struct HistogramCalibrater {
    method: Method,
    collection: Collection,
    quant: QuantOptions,
    notes: Vec<String>,
    /// `per_batch`: the collector's entry after each call.
    collected: Option<Collected>,
    /// `single_reader`: the batches of the one call, concatenated, and their lengths.
    reader: Vec<f32>,
    reader_lens: Vec<usize>,
}

type Parsed = (Method, Collection, QuantOptions, Vec<String>);

fn parse(p: &Params, name: &str, specs: &[ParamSpec]) -> Result<Parsed> {
    let (p, notes) = flatten(p, name, specs)?;
    let mode = CollectMode::parse(&p)?;
    let quant = quant_options(&p)?;
    let bins =
        |default: i64| -> Result<usize> { Ok(p.i64_or("num_bins", default)?.max(0) as usize) };
    let parsed = match name {
        "Entropy" => {
            let nqb = p.i64_or("num_quantized_bins", 128)?.max(0) as usize;
            (
                Method::Entropy {
                    num_quantized_bins: nqb,
                },
                Collection {
                    kind: HistKind::Value,
                    num_bins: bins(128)?,
                    mode,
                    symmetric: p.bool_or("symmetric", false)?,
                },
            )
        }
        "Percentile" => {
            let symmetric = p.bool_or("symmetric", true)?;
            (
                Method::Percentile {
                    percentile: p.f64_or("percentile", 99.999)?,
                },
                Collection {
                    kind: if symmetric {
                        HistKind::Absolute
                    } else {
                        HistKind::Value
                    },
                    num_bins: bins(2048)?,
                    mode,
                    symmetric,
                },
            )
        }
        _ => {
            let scenario = match p.str_or("scenario", "same")? {
                "same" => Scenario::Same,
                "p3" => Scenario::P3,
                _ => {
                    return Err(Error::framework(
                        "ValueError",
                        "Invalid scenario. Must be in {'same', 'p3'}.",
                        Stage::CalculateQparams,
                    ))
                }
            };
            (
                Method::Distribution { scenario },
                Collection {
                    kind: HistKind::Value,
                    num_bins: bins(2048)?,
                    mode,
                    symmetric: false,
                },
            )
        }
    };
    Ok((parsed.0, parsed.1, quant, notes))
}

fn build(p: &Params, name: &str, specs: &[ParamSpec]) -> Result<Box<dyn Observer>> {
    let (method, collection, quant, notes) = parse(p, name, specs)?;
    Ok(Box::new(HistogramCalibrater {
        method,
        collection,
        quant,
        notes,
        collected: None,
        reader: Vec::new(),
        reader_lens: Vec::new(),
    }))
}

/// Registry constructor of `ort.EntropyCalibrater`.
pub fn build_entropy(p: &Params) -> Result<Box<dyn Observer>> {
    build(p, "Entropy", &entropy_params())
}

/// Registry constructor of `ort.PercentileCalibrater`.
pub fn build_percentile(p: &Params) -> Result<Box<dyn Observer>> {
    build(p, "Percentile", &percentile_params())
}

/// Registry constructor of `ort.DistributionCalibrater`.
pub fn build_distribution(p: &Params) -> Result<Box<dyn Observer>> {
    build(p, "Distribution", &distribution_params())
}

impl HistogramCalibrater {
    fn method_name(&self) -> &'static str {
        match self.method {
            Method::Entropy { .. } => "Entropy",
            Method::Percentile { .. } => "Percentile",
            Method::Distribution { .. } => "Distribution",
        }
    }

    fn specs(&self) -> Vec<ParamSpec> {
        match self.method {
            Method::Entropy { .. } => entropy_params(),
            Method::Percentile { .. } => percentile_params(),
            Method::Distribution { .. } => distribution_params(),
        }
    }

    /// The collector's entry as ORT holds it when `compute_data()` runs.
    fn histogram(&self) -> Result<Collected> {
        let c = &self.collection;
        match c.mode {
            CollectMode::PerBatch => self.collected.clone().ok_or_else(|| {
                Error::framework(
                    "ValueError",
                    "No collector created and can't generate calibration data.",
                    Stage::CalculateQparams,
                )
            }),
            CollectMode::SingleReader => {
                let Some(&first) = self.reader_lens.first() else {
                    return Err(Error::framework(
                        "ValueError",
                        "No collector created and can't generate calibration data.",
                        Stage::CalculateQparams,
                    ));
                };
                if self.reader_lens.iter().any(|&n| n != first) {
                    return Err(Error::framework(
                        "ValueError",
                        format!(
                            "setting an array element with a sequence. The requested array has an inhomogeneous shape after 1 dimensions. The detected shape was ({},) + inhomogeneous part.",
                            self.reader_lens.len()
                        ),
                        Stage::Forward,
                    ));
                }
                collector::collect(None, &self.reader, c.kind, c.num_bins)
            }
        }
    }
}

impl Observer for HistogramCalibrater {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        match self.collection.mode {
            CollectMode::PerBatch => {
                let c = self.collection;
                self.collected = Some(collector::collect(
                    self.collected.take(),
                    &batch.data,
                    c.kind,
                    c.num_bins,
                )?);
            }
            CollectMode::SingleReader => {
                self.reader.extend_from_slice(&batch.data);
                self.reader_lens.push(batch.len());
            }
        }
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let h = self.histogram()?;
        let mut extra = serde_json::Map::new();
        let (lo, hi) = match self.method {
            Method::Entropy { num_quantized_bins } => {
                let s = entropy_threshold(&h.hist, &h.edges, h.min, h.max, num_quantized_bins)?;
                extra.insert(
                    "candidate_min".into(),
                    json!(s.candidates.iter().map(|c| c.0).collect::<Vec<_>>()),
                );
                extra.insert(
                    "candidate_max".into(),
                    json!(s.candidates.iter().map(|c| c.1).collect::<Vec<_>>()),
                );
                extra.insert("kl_divergence".into(), json!(s.divergence));
                extra.insert("best_candidate".into(), json!(s.best));
                s.range
            }
            Method::Percentile { percentile } => {
                let s = percentile_range(
                    &h.hist,
                    &h.edges,
                    h.min,
                    h.max,
                    percentile,
                    self.collection.symmetric,
                )?;
                extra.insert("edge_index".into(), json!(s.indices));
                extra.insert(
                    "tensordata_hist_bins".into(),
                    json!([s.tensordata_hist_bins.0, s.tensordata_hist_bins.1]),
                );
                s.range
            }
            Method::Distribution { scenario } => {
                let d = distribution(&h.hist, &h.edges, self.collection.num_bins, scenario)?;
                extra.insert("avg".into(), json!(d.avg));
                extra.insert("std".into(), json!(d.std));
                d.range
            }
        };
        let mut q = qparams_from_range(lo, hi, &self.quant);
        extra.insert("data_min".into(), json!(h.min));
        extra.insert("data_max".into(), json!(h.max));
        extra.insert("num_bins_final".into(), json!(h.hist.len()));
        q.extra.extend(extra);
        if (lo, hi) != (h.min, h.max) {
            q.clip_range = Some((vec![lo], vec![hi]));
        }
        q.notes.extend(self.notes.iter().cloned());
        Ok(q)
    }

    fn reset(&mut self) {
        self.collected = None;
        self.reader.clear();
        self.reader_lens.clear();
    }

    fn state(&self) -> ObserverState {
        match self.histogram() {
            Ok(h) => ObserverState {
                min_val: vec![h.min],
                max_val: vec![h.max],
                histogram: Some(HistogramState {
                    counts: h.hist.iter().map(|&c| c as f32).collect(),
                    edges: h.edges,
                }),
            },
            Err(_) => ObserverState::default(),
        }
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        quantize_dequantize(x, q)
    }

    fn retune(&mut self, params: &Params) -> Result<Retune> {
        let (method, collection, quant, notes) = parse(params, self.method_name(), &self.specs())?;
        if collection != self.collection {
            return Ok(Retune::NeedsData);
        }
        self.method = method;
        self.quant = quant;
        self.notes = notes;
        Ok(Retune::Applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_reader_bins_the_union_once() {
        let a = Tensor::from_vec(vec![-1.0, 0.0, 0.5, 1.0]);
        let b = Tensor::from_vec(vec![-3.0, 0.0, 2.0, 3.0]);
        let single =
            Params::from_json(r#"{"collect_mode": "single_reader", "num_bins": 4}"#).unwrap();
        let mut o = build_entropy(&single).unwrap();
        o.observe(&a).unwrap();
        o.observe(&b).unwrap();
        let h = o.state().histogram.unwrap();
        // One histogram of the union over ±3: edges −3, −1.5, 0, 1.5, 3.
        assert_eq!(h.edges, vec![-3.0, -1.5, 0.0, 1.5, 3.0]);
        assert_eq!(h.counts, vec![1.0, 1.0, 4.0, 2.0]);
        // Per batch, the second call grows the first histogram instead.
        let per = Params::from_json(r#"{"num_bins": 4}"#).unwrap();
        let mut o = build_entropy(&per).unwrap();
        o.observe(&a).unwrap();
        o.observe(&b).unwrap();
        assert_eq!(o.state().histogram.unwrap().counts.len(), 14);
    }

    #[test]
    fn single_reader_refuses_ragged_batches_like_numpy() {
        let p = Params::from_json(r#"{"collect_mode": "single_reader"}"#).unwrap();
        let mut o = build_percentile(&p).unwrap();
        o.observe(&Tensor::from_vec(vec![1.0, 2.0])).unwrap();
        o.observe(&Tensor::from_vec(vec![1.0])).unwrap();
        let err = o.qparams().unwrap_err().to_string();
        assert!(
            err.starts_with("ValueError: setting an array element"),
            "{err}"
        );
    }

    #[test]
    fn retune_keeps_the_histogram_for_search_parameters() {
        let mut o = build_percentile(&Params::new()).unwrap();
        let data: Vec<f32> = (0..10_000).map(|i| (i as f32 - 5000.0) / 1000.0).collect();
        o.observe(&Tensor::from_vec(data)).unwrap();
        let before = o.qparams().unwrap();
        let tighter = Params::new().with("percentile", 90.0);
        assert_eq!(o.retune(&tighter).unwrap(), Retune::Applied);
        let after = o.qparams().unwrap();
        assert!(after.max_val[0] < before.max_val[0]);
        let rebinned = Params::new().with("num_bins", 512);
        assert_eq!(o.retune(&rebinned).unwrap(), Retune::NeedsData);
    }
}
