//! `HistogramCalibrator` with `compute_amax("entropy" | "mse" | "percentile")`, and the
//! corrected MSE search.

use super::collect::{self, Hist};
use super::entropy::entropy_amax;
use super::mse::{mse_amax, percentile_amax, MseCall};
use super::quant::{fake_quantize, qparams_from_amax, QuantConfig};
use super::{histogram_params, quant_config, validate};
use crate::error::{Error, Result, Stage};
use crate::observer::legacy::{Observer, Retune};
use crate::observer::{HistogramState, ObserverState, QParams};
use crate::params::{Bits, Params};
use crate::tensor::Tensor;
use serde_json::json;

/// The `compute_amax` method and its keyword arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    Entropy {
        stride: usize,
        start_bin: usize,
    },
    Mse {
        stride: usize,
        start_bin: usize,
        call: MseCall,
    },
    Percentile {
        percentile: f64,
    },
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Entropy { .. } => "entropy",
            Method::Mse {
                call: MseCall::Faithful,
                ..
            } => "mse",
            Method::Mse {
                call: MseCall::Fixed,
                ..
            } => "mse.fixed",
            Method::Percentile { .. } => "percentile",
        }
    }
}

/// What the collected histogram depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Collection {
    num_bins: usize,
    skip_zeros: bool,
    torch_hist: bool,
}

/// ModelOpt's `HistogramCalibrator` followed by one `compute_amax` method.
#[derive(Debug, Clone)]
pub struct HistogramCalibrator {
    method: Method,
    collection: Collection,
    cfg: QuantConfig,
    hist: Option<Hist>,
    /// Largest |x| seen (for display).
    max_abs: f32,
}

fn parse(p: &Params, method: &str) -> Result<(Method, Collection, QuantConfig)> {
    let p = validate(p, &histogram_params(method))?;
    if p.has("axis") {
        return Err(Error::framework(
            "NotImplementedError",
            "Calibrator histogram collection only supports per tensor scaling",
            Stage::Init,
        ));
    }
    let stride = p.i64_or("stride", 1)?.max(1) as usize;
    let start_bin = p.i64_or("start_bin", 128)?.max(0) as usize;
    let m = match method {
        "entropy" => Method::Entropy { stride, start_bin },
        "mse" => Method::Mse {
            stride,
            start_bin,
            call: MseCall::Faithful,
        },
        "mse.fixed" => Method::Mse {
            stride,
            start_bin,
            call: MseCall::Fixed,
        },
        _ => Method::Percentile {
            percentile: p.f64_or("percentile", 99.99)?,
        },
    };
    let collection = Collection {
        num_bins: p.i64_or("num_bins", 2048)?.max(1) as usize,
        skip_zeros: p.bool_or("skip_zeros", false)?,
        torch_hist: p.bool_or("torch_hist", true)?,
    };
    Ok((m, collection, quant_config(&p)?))
}

fn build(p: &Params, method: &str) -> Result<Box<dyn Observer>> {
    let (method, collection, cfg) = parse(p, method)?;
    Ok(Box::new(HistogramCalibrator {
        method,
        collection,
        cfg,
        hist: None,
        max_abs: 0.0,
    }))
}

/// Registry constructor of `modelopt.HistogramCalibrator.entropy`.
pub fn build_entropy(p: &Params) -> Result<Box<dyn Observer>> {
    build(p, "entropy")
}

/// Registry constructor of `modelopt.HistogramCalibrator.mse`.
pub fn build_mse(p: &Params) -> Result<Box<dyn Observer>> {
    build(p, "mse")
}

/// Registry constructor of `modelopt.HistogramCalibrator.mse.fixed`.
pub fn build_mse_fixed(p: &Params) -> Result<Box<dyn Observer>> {
    build(p, "mse.fixed")
}

/// Registry constructor of `modelopt.HistogramCalibrator.percentile`.
pub fn build_percentile(p: &Params) -> Result<Box<dyn Observer>> {
    build(p, "percentile")
}

impl Observer for HistogramCalibrator {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        let c = self.collection;
        self.hist = Some(collect::collect(
            self.hist.take(),
            &batch.data,
            c.num_bins,
            c.skip_zeros,
            c.torch_hist,
        )?);
        if let Some(m) = batch.data.iter().map(|v| v.abs()).reduce(f32::max) {
            self.max_abs = self.max_abs.max(m);
        }
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let hist = self.hist.as_ref().ok_or_else(|| {
            Error::input(
                "HistogramCalibrator has not collected any data (compute_amax() returns None)",
            )
        })?;
        let counts = hist.counts();
        let edges = hist.edges();
        let mut extra = serde_json::Map::new();
        let amax = match self.method {
            Method::Entropy { stride, start_bin } => {
                let Bits::Int(b) = self.cfg.num_bits else {
                    return Err(Error::framework(
                        "TypeError",
                        "unsupported operand type(s) for -: 'tuple' and 'int'",
                        Stage::CalculateQparams,
                    ));
                };
                let s = entropy_amax(&counts, &edges, b, self.cfg.unsigned, stride, start_bin)?;
                let amaxes: Vec<f32> = s
                    .candidates
                    .iter()
                    .map(|&i| edges.get(i).copied().unwrap_or(f64::NAN) as f32)
                    .collect();
                extra.insert("candidate_amax".into(), json!(amaxes));
                extra.insert("kl_divergence".into(), json!(s.divergence));
                extra.insert("best_candidate".into(), json!(s.best));
                s.amax
            }
            Method::Mse {
                stride,
                start_bin,
                call,
            } => {
                let s = mse_amax(
                    &counts,
                    &edges,
                    self.cfg.num_bits,
                    self.cfg.unsigned,
                    stride,
                    start_bin,
                    call,
                )?;
                extra.insert("candidate_amax".into(), json!(s.candidates));
                extra.insert("mse".into(), json!(s.mse));
                extra.insert("best_candidate".into(), json!(s.best));
                s.amax
            }
            Method::Percentile { percentile } => {
                let (amax, idx) = percentile_amax(&counts, &edges, percentile)?;
                extra.insert("edge_index".into(), json!(idx));
                amax
            }
        };
        let mut q = qparams_from_amax(vec![amax], None, &self.cfg)?;
        extra.insert("num_bins_final".into(), json!(counts.len()));
        extra.insert("data_amax".into(), json!(self.max_abs));
        q.extra = extra;
        q.clip_range = Some((q.min_val.clone(), q.max_val.clone()));
        q.min_val = vec![if self.cfg.unsigned {
            0.0
        } else {
            -self.max_abs
        }];
        q.max_val = vec![self.max_abs];
        if self.method.name() == "mse" {
            q.notes.push(
                "ModelOpt 0.47's MSE search passes num_bits as the bias of fake_tensor_quant; the amax is usually the first candidate (see modelopt.HistogramCalibrator.mse.fixed)"
                    .into(),
            );
        }
        Ok(q)
    }

    fn reset(&mut self) {
        self.hist = None;
        self.max_abs = 0.0;
    }

    fn state(&self) -> ObserverState {
        let Some(hist) = &self.hist else {
            return ObserverState::default();
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
        ObserverState {
            min_val: vec![edges.first().copied().unwrap_or(0.0)],
            max_val: vec![self.max_abs],
            histogram: Some(HistogramState { counts, edges }),
        }
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        fake_quantize(x, q, &self.cfg)
    }

    fn retune(&mut self, params: &Params) -> Result<Retune> {
        let (method, collection, cfg) = parse(params, self.method.name())?;
        if collection != self.collection {
            return Ok(Retune::NeedsData);
        }
        self.method = method;
        self.cfg = cfg;
        Ok(Retune::Applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Tensor {
        Tensor::from_vec(
            (0..20_000)
                .map(|i| ((i as f32) * 0.61803).sin() * (1.0 + (i % 7) as f32))
                .collect(),
        )
    }

    #[test]
    fn faithful_mse_is_the_start_bin_centre_and_fixed_is_not() {
        let x = data();
        let mut bugged = build_mse(&Params::new()).unwrap();
        bugged.observe(&x).unwrap();
        let q = bugged.qparams().unwrap();
        let h = bugged.state().histogram.unwrap();
        let centre128 = (h.edges[129] + h.edges[128]) / 2.0;
        assert_eq!(q.amax, Some(vec![centre128]));
        let mut fixed = build_mse_fixed(&Params::new()).unwrap();
        fixed.observe(&x).unwrap();
        let f = fixed.qparams().unwrap();
        assert!(f.amax.unwrap()[0] > 4.0 * centre128);
    }

    #[test]
    fn axis_is_refused_and_entropy_needs_integer_bits() {
        let e = build_entropy(&Params::new().with("axis", 0)).err().unwrap();
        assert_eq!(
            e.to_string(),
            "NotImplementedError: Calibrator histogram collection only supports per tensor scaling"
        );
        let mut o = build_entropy(&Params::from_json(r#"{"num_bits": [4, 3]}"#).unwrap()).unwrap();
        o.observe(&data()).unwrap();
        assert!(o
            .qparams()
            .unwrap_err()
            .to_string()
            .starts_with("TypeError"));
    }

    #[test]
    fn retune_reuses_the_histogram() {
        let mut o = build_percentile(&Params::new()).unwrap();
        o.observe(&data()).unwrap();
        let a = o.qparams().unwrap().amax.unwrap()[0];
        assert_eq!(
            o.retune(&Params::new().with("percentile", 90.0)).unwrap(),
            Retune::Applied
        );
        let b = o.qparams().unwrap().amax.unwrap()[0];
        assert!(b < a);
        assert_eq!(
            o.retune(&Params::new().with("num_bins", 512)).unwrap(),
            Retune::NeedsData
        );
    }
}
