//! `MinMaxCalibrater`: ReduceMin/ReduceMax of every batch, combined per `collect_data` call
//! with `np.nanmin`/`np.nanmax` (or, with `moving_average`, `np.nanmean` of the per-batch
//! minima/maxima: float32 pairwise sum divided in float64), made symmetric `±max(|min|, |max|)`
//! when asked, then merged across calls by `merge_range`: min/max, or with `moving_average`
//! `old + c·(new − old)` in float32 (`c` rounded to float32).

use super::qparams::{qparams_from_range, quantize_dequantize, QuantOptions};
use super::{flatten, minmax_params, quant_options, CollectMode};
use crate::error::{Error, Result, Stage};
use crate::numpy;
use crate::observer::legacy::{Observer, Retune};
use crate::observer::{ObserverState, QParams};
use crate::params::Params;
use crate::tensor::Tensor;
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Config {
    symmetric: bool,
    moving_average: bool,
    averaging_constant: f32,
    mode: CollectMode,
}

/// ORT's `MinMaxCalibrater` on one tensor.
#[derive(Debug, Clone)]
pub struct MinMaxCalibrater {
    cfg: Config,
    quant: QuantOptions,
    notes: Vec<String>,
    /// `per_batch`: the merged range after each call.
    range: Option<(f32, f32)>,
    /// `single_reader`: the per-batch ReduceMin/ReduceMax outputs of the one call.
    batch_min: Vec<f32>,
    batch_max: Vec<f32>,
    /// Observed data min/max (for display).
    data: Option<(f32, f32)>,
}

fn config(p: &Params) -> Result<(Config, QuantOptions, Vec<String>)> {
    let (p, notes) = flatten(p, "MinMax", &minmax_params())?;
    let cfg = Config {
        symmetric: p.bool_or("symmetric", false)?,
        moving_average: p.bool_or("moving_average", false)?,
        averaging_constant: p.f64_or("averaging_constant", 0.01)? as f32,
        mode: CollectMode::parse(&p)?,
    };
    if cfg.moving_average && !(0.0..=1.0).contains(&cfg.averaging_constant) {
        return Err(Error::framework(
            "ValueError",
            "Invalid averaging constant, which should not be < 0 or > 1.",
            Stage::Init,
        ));
    }
    Ok((cfg, quant_options(&p)?, notes))
}

/// Registry constructor.
pub fn build(p: &Params) -> Result<Box<dyn Observer>> {
    let (cfg, quant, notes) = config(p)?;
    Ok(Box::new(MinMaxCalibrater {
        cfg,
        quant,
        notes,
        range: None,
        batch_min: Vec::new(),
        batch_max: Vec::new(),
        data: None,
    }))
}

/// `np.nanmax([|lo|, |hi|])`.
fn abs_max(lo: f32, hi: f32) -> f32 {
    match (lo.is_nan(), hi.is_nan()) {
        (true, true) => f32::NAN,
        (true, false) => hi.abs(),
        (false, true) => lo.abs(),
        (false, false) => lo.abs().max(hi.abs()),
    }
}

/// `np.nanmean` of float32 values: float32 pairwise sum over the non-NaN values, divided by their
/// count in float64, cast back.
fn nanmean(v: &[f32]) -> f32 {
    let clean: Vec<f32> = v
        .iter()
        .map(|&x| if x.is_nan() { 0.0 } else { x })
        .collect();
    let count = v.iter().filter(|x| !x.is_nan()).count();
    (numpy::sum_f32(&clean) as f64 / count as f64) as f32
}

impl MinMaxCalibrater {
    /// `compute_data` over the minima/maxima of one call.
    fn compute_call(&self, mins: &[f32], maxs: &[f32]) -> (f32, f32) {
        let (lo, hi) = if self.cfg.moving_average {
            (nanmean(mins), nanmean(maxs))
        } else {
            let nan_min = mins
                .iter()
                .copied()
                .filter(|x| !x.is_nan())
                .fold(f32::NAN, f32::min);
            let nan_max = maxs
                .iter()
                .copied()
                .filter(|x| !x.is_nan())
                .fold(f32::NAN, f32::max);
            (nan_min, nan_max)
        };
        if self.cfg.symmetric {
            let m = abs_max(lo, hi);
            (-m, m)
        } else {
            (lo, hi)
        }
    }

    /// `merge_range(old, new)`.
    fn merge(&self, old: (f32, f32), new: (f32, f32)) -> (f32, f32) {
        if self.cfg.moving_average {
            let c = self.cfg.averaging_constant;
            (old.0 + c * (new.0 - old.0), old.1 + c * (new.1 - old.1))
        } else {
            let lo = if new.0 < old.0 { new.0 } else { old.0 };
            let hi = if new.1 > old.1 { new.1 } else { old.1 };
            (lo, hi)
        }
    }

    /// The calibrated `(lowest, highest)`.
    fn calibrated(&self) -> Result<(f32, f32)> {
        match self.cfg.mode {
            CollectMode::PerBatch => self.range,
            CollectMode::SingleReader => (!self.batch_min.is_empty())
                .then(|| self.compute_call(&self.batch_min, &self.batch_max)),
        }
        .ok_or_else(|| {
            Error::framework(
                "ValueError",
                "No data is collected.",
                Stage::CalculateQparams,
            )
        })
    }
}

impl Observer for MinMaxCalibrater {
    fn observe(&mut self, batch: &Tensor) -> Result<()> {
        let (lo, hi) = numpy::min_max_ignore_nan(&batch.data).ok_or_else(|| {
            Error::input("ReduceMin/ReduceMax need at least one value in the batch")
        })?;
        self.data = Some(match self.data {
            Some((a, b)) => (a.min(lo), b.max(hi)),
            None => (lo, hi),
        });
        match self.cfg.mode {
            CollectMode::PerBatch => {
                let new = self.compute_call(&[lo], &[hi]);
                self.range = Some(match self.range {
                    Some(old) => self.merge(old, new),
                    None => new,
                });
            }
            CollectMode::SingleReader => {
                self.batch_min.push(lo);
                self.batch_max.push(hi);
            }
        }
        Ok(())
    }

    fn qparams(&self) -> Result<QParams> {
        let (lo, hi) = self.calibrated()?;
        let mut q = qparams_from_range(lo, hi, &self.quant);
        if let Some((a, b)) = self.data {
            q.extra.insert("data_min".into(), json!(a));
            q.extra.insert("data_max".into(), json!(b));
        }
        if self.cfg.mode == CollectMode::SingleReader {
            q.extra.insert("batch_min".into(), json!(self.batch_min));
            q.extra.insert("batch_max".into(), json!(self.batch_max));
        }
        q.notes.extend(self.notes.iter().cloned());
        Ok(q)
    }

    fn reset(&mut self) {
        self.range = None;
        self.batch_min.clear();
        self.batch_max.clear();
        self.data = None;
    }

    fn state(&self) -> ObserverState {
        let (lo, hi) = self.calibrated().unwrap_or((f32::NAN, f32::NAN));
        ObserverState {
            min_val: vec![lo],
            max_val: vec![hi],
            histogram: None,
        }
    }

    fn fake_quantize(&self, x: &Tensor, q: &QParams) -> Result<Tensor> {
        quantize_dequantize(x, q)
    }

    fn retune(&mut self, params: &Params) -> Result<Retune> {
        let (cfg, quant, notes) = config(params)?;
        if cfg != self.cfg {
            return Ok(Retune::NeedsData);
        }
        self.quant = quant;
        self.notes = notes;
        Ok(Retune::Applied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(p: &str, batches: &[Vec<f32>]) -> (f32, f32) {
        let mut o = build(&Params::from_json(p).unwrap()).unwrap();
        for b in batches {
            o.observe(&Tensor::from_vec(b.clone())).unwrap();
        }
        let q = o.qparams().unwrap();
        (q.min_val[0], q.max_val[0])
    }

    #[test]
    fn moving_average_depends_on_collect_mode() {
        let batches = [vec![-1.0, 1.0], vec![-3.0, 5.0], vec![-2.0, 0.0]];
        let ema = run(
            r#"{"moving_average": true, "averaging_constant": 0.5}"#,
            &batches,
        );
        // (−1, 1) → (−2, 3) → (−2, 1.5)
        assert_eq!(ema, (-2.0, 1.5));
        let mean = run(
            r#"{"moving_average": true, "averaging_constant": 0.5, "collect_mode": "single_reader"}"#,
            &batches,
        );
        assert_eq!(mean, (-2.0, 2.0));
        let plain = run(r#"{"collect_mode": "single_reader"}"#, &batches);
        assert_eq!(plain, (-3.0, 5.0));
    }

    #[test]
    fn symmetric_is_applied_per_call_before_merging() {
        let batches = [vec![-4.0, 1.0], vec![0.5, 2.0]];
        assert_eq!(run(r#"{"symmetric": true}"#, &batches), (-4.0, 4.0));
        let ema = run(
            r#"{"symmetric": true, "moving_average": true, "averaging_constant": 0.5}"#,
            &batches,
        );
        assert_eq!(ema, (-3.0, 3.0));
    }

    #[test]
    fn no_data_is_orts_value_error() {
        let o = build(&Params::new()).unwrap();
        assert_eq!(
            o.qparams().unwrap_err().to_string(),
            "ValueError: No data is collected."
        );
    }

    proptest::proptest! {
        #[test]
        fn global_min_max_does_not_depend_on_batching(
            batches in proptest::collection::vec(
                proptest::collection::vec(-1e3f32..1e3, 1..50), 1..8),
            symmetric: bool,
        ) {
            let sym = format!(r#"{{"symmetric": {symmetric}}}"#);
            let single = format!(r#"{{"symmetric": {symmetric}, "collect_mode": "single_reader"}}"#);
            proptest::prop_assert_eq!(run(&sym, &batches), run(&single, &batches));
        }
    }
}
