//! `MinMaxCalibrater`: ReduceMin/ReduceMax of every batch, combined per `collect_data` call
//! with `np.nanmin`/`np.nanmax` (or, with `moving_average`, `np.nanmean` of the per-batch
//! minima/maxima: float32 pairwise sum divided in float64), made symmetric `±max(|min|, |max|)`
//! when asked, then merged across calls by `merge_range`: min/max, or with `moving_average`
//! `old + c·(new − old)` in float32 (`c` rounded to float32).
//!
//! The state is the sequence of per-batch `(ReduceMin, ReduceMax)` outputs — all any
//! `collect_data` call ever sees of the data. `compute_data`/`merge_range` are a fold over that
//! sequence (one call per batch with `per_batch`, one call over all of them with
//! `single_reader`), so every parameter of this calibrater is a search parameter: the fold is
//! redone, with the same float32 steps in the same order, whenever qparams are asked for.

use super::qparams::{qparams_from_range, QuantArgs, QuantOptions};
use super::CollectMode;
use crate::error::{Error, Result, Stage};
use crate::kernels::numpy;
use crate::observer::{ObserverKind, PlotSnapshot, QParams};
use crate::tensor::Tensor;
use serde_json::json;

crate::declare_params! {
    /// `extra_options` of `create_calibrator(calibrate_method=MinMax)`, plus how batches are
    /// collected and quantized.
    pub struct MinMaxArgs {
        /// make each collected range symmetric: (−max|·|, +max|·|)
        symmetric: bool = false; boolean(), Search;
        /// average the per-batch minima/maxima instead of taking the global min/max
        moving_average: bool = false; boolean(), Search;
        /// moving-average smoothing factor c between collect_data calls: v += c·(new − v)
        averaging_constant: f64 = 0.01; float(0.0, 1.0), Search;
        /// per_batch: one collect_data() call per batch (ranges merge between calls, moving
        /// average is an EMA); single_reader: every batch in one call (moving average is a mean)
        collect_mode: CollectMode = CollectMode::PerBatch; choice(), Search;
    }
    include { quant: QuantArgs }
}

/// The resolved `MinMaxCalibrater`. ORT's own check — `ValueError("Invalid averaging constant,
/// which should not be < 0 or > 1.")` with `moving_average` — is the declared range of
/// `averaging_constant`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinMaxConfig {
    pub symmetric: bool,
    pub moving_average: bool,
    /// Float32, as it multiplies float32 ranges.
    pub averaging_constant: f32,
    pub mode: CollectMode,
    pub quant: QuantOptions,
}

/// Every batch's `(ReduceMin, ReduceMax)`, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reductions {
    pub min: Vec<f32>,
    pub max: Vec<f32>,
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

/// `np.nanmin` / `np.nanmax` of float32 values (NaN when all are NaN).
fn nan_extrema(mins: &[f32], maxs: &[f32]) -> (f32, f32) {
    let lo = mins
        .iter()
        .copied()
        .filter(|x| !x.is_nan())
        .fold(f32::NAN, f32::min);
    let hi = maxs
        .iter()
        .copied()
        .filter(|x| !x.is_nan())
        .fold(f32::NAN, f32::max);
    (lo, hi)
}

impl MinMaxConfig {
    /// `compute_data` over the minima/maxima of one call.
    fn compute_call(&self, mins: &[f32], maxs: &[f32]) -> (f32, f32) {
        let (lo, hi) = if self.moving_average {
            (nanmean(mins), nanmean(maxs))
        } else {
            nan_extrema(mins, maxs)
        };
        if self.symmetric {
            let m = abs_max(lo, hi);
            (-m, m)
        } else {
            (lo, hi)
        }
    }

    /// `merge_range(old, new)`.
    fn merge(&self, old: (f32, f32), new: (f32, f32)) -> (f32, f32) {
        if self.moving_average {
            let c = self.averaging_constant;
            (old.0 + c * (new.0 - old.0), old.1 + c * (new.1 - old.1))
        } else {
            let lo = if new.0 < old.0 { new.0 } else { old.0 };
            let hi = if new.1 > old.1 { new.1 } else { old.1 };
            (lo, hi)
        }
    }

    /// The calibrated `(lowest, highest)` after every `collect_data` call.
    fn calibrated(&self, r: &Reductions) -> Result<(f32, f32)> {
        if r.min.is_empty() {
            return Err(Error::framework(
                "ValueError",
                "No data is collected.",
                Stage::CalculateQparams,
            ));
        }
        Ok(match self.mode {
            CollectMode::PerBatch => r
                .min
                .iter()
                .zip(&r.max)
                .map(|(&lo, &hi)| self.compute_call(&[lo], &[hi]))
                .reduce(|old, new| self.merge(old, new))
                .unwrap_or((f32::NAN, f32::NAN)),
            CollectMode::SingleReader => self.compute_call(&r.min, &r.max),
        })
    }
}

/// ORT's `MinMaxCalibrater` on one tensor.
pub struct MinMax;

impl ObserverKind for MinMax {
    type Args = MinMaxArgs;
    type Config = MinMaxConfig;
    type State = Reductions;

    /// `extra_options` keys ORT does not know are ignored by `create_calibrator`; here they are
    /// left to the driver's refusal of undeclared keys.
    fn resolve(args: &MinMaxArgs, _unknown: &[String]) -> Result<MinMaxConfig> {
        Ok(MinMaxConfig {
            symmetric: args.symmetric,
            moving_average: args.moving_average,
            averaging_constant: args.averaging_constant as f32,
            mode: args.collect_mode,
            quant: QuantOptions::resolve(&args.quant),
        })
    }

    fn init(_: &MinMaxConfig) -> Reductions {
        Reductions::default()
    }

    fn feed(state: &mut Reductions, _: &MinMaxConfig, batch: &Tensor) -> Result<()> {
        let (lo, hi) = numpy::min_max_ignore_nan(&batch.data).ok_or_else(|| {
            Error::input("ReduceMin/ReduceMax need at least one value in the batch")
        })?;
        state.min.push(lo);
        state.max.push(hi);
        Ok(())
    }

    fn qparams(state: &Reductions, cfg: &MinMaxConfig) -> Result<QParams> {
        let (lo, hi) = cfg.calibrated(state)?;
        let mut q = qparams_from_range(lo, hi, &cfg.quant);
        let (data_min, data_max) = nan_extrema(&state.min, &state.max);
        q.extra.insert("data_min".into(), json!(data_min));
        q.extra.insert("data_max".into(), json!(data_max));
        if cfg.mode == CollectMode::SingleReader {
            q.extra.insert("batch_min".into(), json!(state.min));
            q.extra.insert("batch_max".into(), json!(state.max));
        }
        Ok(q)
    }

    fn qdq_kernel(
        _: &MinMaxConfig,
        _: &[usize],
        q: &QParams,
    ) -> Option<Box<dyn crate::qdq::QdqKernel>> {
        super::qparams::qdq_kernel(q)
    }

    /// The observed data range (the calibrated range depends on the search parameters and is in
    /// the qparams).
    fn plot(state: &Reductions) -> PlotSnapshot {
        if state.min.is_empty() {
            return PlotSnapshot::default();
        }
        let (lo, hi) = nan_extrema(&state.min, &state.max);
        PlotSnapshot {
            min_val: vec![lo],
            max_val: vec![hi],
            histogram: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::Instance;
    use crate::params::Params;
    use crate::registry;

    fn run(p: &str, batches: &[Vec<f32>]) -> (f32, f32) {
        let spec = registry::find("ort.MinMaxCalibrater").unwrap();
        let mut o = Instance::new(spec, &Params::from_json(p).unwrap()).unwrap();
        for b in batches {
            o.feed(&Tensor::from_vec(b.clone())).unwrap();
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
        let spec = registry::find("ort.MinMaxCalibrater").unwrap();
        let o = Instance::new(spec, &Params::new()).unwrap();
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
