//! A tensor's diagnosis: what makes it hard to quantize and what helped, with its own numbers,
//! computed from the values and from the results of the methods that ran on it (never canned).
//!
//! * **Outliers**: values farther than [`OUTLIER_SIGMAS`] standard deviations from the mean; their
//!   share of the values and their share of the energy `Σx²`.
//! * **Extreme channels** (2-D tensors): along each axis, the slices whose largest magnitude is at
//!   least [`EXTREME_CHANNEL`] times the median slice's.
//! * **Kurtosis**: the excess kurtosis of [`crate::model::Stats`] (0 for a normal distribution).
//! * **Grid steps of the bulk**: how many of the 255 steps of a per-tensor MinMax int8 grid
//!   (`s = (max(max, 0) − min(min, 0)) / 255`) the middle 99 % of the values span
//!   (`(q₉₉.₅ − q₀.₅) / s`, quantiles from a 65,536-bin histogram).
//! * **What did best**: among the results given (observers and formats that ran on this tensor),
//!   the highest SQNR, and per-channel against per-tensor granularity where both ran.

use crate::curve::{histogram_of, DEFAULT_BINS};
use crate::model::Stats;
use crate::plot::fmt_num;
use serde::{Deserialize, Serialize};

/// A value is an outlier beyond this many standard deviations from the mean.
pub const OUTLIER_SIGMAS: f64 = 6.0;
/// A channel is extreme when its largest magnitude is this many times the median channel's.
pub const EXTREME_CHANNEL: f64 = 8.0;
/// The share of the values "the bulk" covers (centred).
const BULK: f64 = 0.99;

/// One method's result on the tensor, as the diagnosis weighs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Outcome {
    /// The method's id (an observer id, a format label).
    pub label: String,
    /// Whether it is a number format (else an observer).
    pub format: bool,
    /// Whether its parameters are per tensor (else per channel, group or block).
    pub per_tensor: bool,
    /// Its SQNR in dB (`None`: lossless or undefined).
    pub sqnr_db: Option<f64>,
}

impl Outcome {
    /// An observer's report as an outcome (`None` without metrics).
    pub fn of_report(report: &crate::engine::Report) -> Option<Outcome> {
        Outcome::observed(
            &report.observer,
            report.granularity,
            report.metrics.as_ref().map(|m| m.sqnr_db),
        )
    }

    /// The outcome of observer `observer` of granularity `granularity` whose metrics give
    /// `sqnr_db` (`None`: no metrics, and no outcome).
    fn observed(
        observer: &str,
        granularity: crate::observer::Granularity,
        sqnr_db: Option<Option<f64>>,
    ) -> Option<Outcome> {
        Some(Outcome {
            label: observer.to_string(),
            format: false,
            per_tensor: granularity == crate::observer::Granularity::PerTensor,
            sqnr_db: sqnr_db?,
        })
    }
}

/// What an outcome reads of a report, deserialized from the report as a host holds it (the
/// page's panels; every other field is left unread).
#[derive(Debug, Clone, Deserialize)]
pub struct ReportHead {
    pub observer: String,
    pub granularity: crate::observer::Granularity,
    #[serde(default)]
    pub metrics: Option<MetricsHead>,
}

/// What an outcome reads of a report's metrics.
#[derive(Debug, Clone, Deserialize)]
pub struct MetricsHead {
    #[serde(default)]
    pub sqnr_db: Option<f64>,
}

impl ReportHead {
    /// [`Outcome::of_report`] of the report this was read from.
    pub fn outcome(&self) -> Option<Outcome> {
        Outcome::observed(
            &self.observer,
            self.granularity,
            self.metrics.as_ref().map(|m| m.sqnr_db),
        )
    }
}

/// The diagnosis: its facts, name and value as written, and the paragraph that says them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Diagnosis {
    pub facts: Vec<(String, String)>,
    pub text: String,
}

/// Extreme slices along one axis.
#[derive(Debug, Clone, PartialEq)]
struct Extremes {
    axis: usize,
    count: usize,
    slices: usize,
    worst: usize,
    ratio: f64,
}

/// The diagnosis of `values` (C order, `shape`) given the `outcomes` of the methods that ran.
pub fn diagnose(values: &[f32], shape: &[usize], outcomes: &[Outcome]) -> Diagnosis {
    let stats = Stats::of(values);
    let mut facts = Vec::new();
    let mut sentences = Vec::new();
    let (Some(mean), Some(std), Some(min), Some(max)) =
        (stats.mean, stats.std, stats.min, stats.max)
    else {
        return Diagnosis {
            facts,
            text: "No finite values: nothing to quantize.".to_string(),
        };
    };
    let (outliers, energy) = outlier_share(values, mean, std);
    facts.push((
        format!("values beyond {}σ", fmt_num(OUTLIER_SIGMAS)),
        format!("{}%", fmt_num(outliers * 100.0)),
    ));
    facts.push((
        "their share of Σx²".into(),
        format!("{}%", fmt_num(energy * 100.0)),
    ));
    if let Some(k) = stats.kurtosis {
        facts.push(("kurtosis".into(), fmt_num(k)));
    }
    if outliers > 0.0 {
        sentences.push(format!(
            "{}% of the values lie beyond {}σ and carry {}% of the energy{}.",
            fmt_num(outliers * 100.0),
            fmt_num(OUTLIER_SIGMAS),
            fmt_num(energy * 100.0),
            stats
                .kurtosis
                .map(|k| format!(" (kurtosis {})", fmt_num(k)))
                .unwrap_or_default()
        ));
    } else if let Some(k) = stats.kurtosis {
        sentences.push(format!(
            "No value lies beyond {}σ (kurtosis {}).",
            fmt_num(OUTLIER_SIGMAS),
            fmt_num(k)
        ));
    }
    for e in extreme_slices(values, shape) {
        facts.push((
            format!(
                "axis-{} slices ≥ {}× the median range",
                e.axis,
                fmt_num(EXTREME_CHANNEL)
            ),
            format!("{} of {}", e.count, e.slices),
        ));
        sentences.push(format!(
            "{} of {} slices along axis {} reach at least {}× the median slice's largest magnitude \
             (slice {}: {}×), so one scale per tensor is stretched by a few of them.",
            e.count,
            e.slices,
            e.axis,
            fmt_num(EXTREME_CHANNEL),
            e.worst,
            fmt_num(e.ratio)
        ));
    }
    if let Some(steps) = bulk_steps(values, min, max) {
        facts.push((
            "int8 MinMax steps the middle 99% uses".into(),
            format!("{steps:.0} of 255"),
        ));
        sentences.push(format!(
            "Under per-tensor MinMax int8 the middle 99% of the values span about {steps:.0} of \
             the 255 steps."
        ));
    }
    sentences.extend(best_of(outcomes, &mut facts));
    Diagnosis {
        facts,
        text: sentences.join(" "),
    }
}

/// The diagnosis of a checkpoint tensor from what ranking it computed anyway (no pass over its
/// values): its statistics (how many standard deviations its largest magnitude lies from zero,
/// its kurtosis) and its methods' results. The full diagnosis ([`diagnose`]: outlier share,
/// extreme channels, grid steps of the bulk) is the one shown when the tensor is opened.
pub fn diagnose_stats(stats: &Stats, outcomes: &[Outcome]) -> Diagnosis {
    let mut facts = Vec::new();
    let mut sentences = Vec::new();
    if let (Some(r), Some(k)) = (stats.absmax_over_std, stats.kurtosis) {
        facts.push(("max |x| / σ".into(), fmt_num(r)));
        facts.push(("kurtosis".into(), fmt_num(k)));
        sentences.push(format!(
            "Its largest magnitude is {}σ{} (kurtosis {}).",
            fmt_num(r),
            if r > OUTLIER_SIGMAS {
                ", so a per-tensor range is stretched by a few values"
            } else {
                ""
            },
            fmt_num(k)
        ));
    }
    sentences.extend(best_of(outcomes, &mut facts));
    Diagnosis {
        facts,
        text: sentences.join(" "),
    }
}

/// What quantization did to one weight of a quantized checkpoint, in words: its stored format
/// and cost, its SQNR and cosine against the original, and what the quantizer's own algorithm
/// (GPTQ, AWQ, an importance matrix) gained or lost against round-to-nearest in the same format.
pub fn diagnose_pair(
    format: &str,
    bits_per_weight: f64,
    metrics: &crate::diff::DiffMetrics,
    rtn: Option<&crate::diff::RtnResult>,
) -> String {
    let db = |m: &crate::diff::DiffMetrics| {
        m.sqnr_db
            .map_or("∞ (exact)".into(), |d| format!("{} dB", fmt_num(d)))
    };
    let mut text = format!(
        "Stored as {format} ({} bits per weight): SQNR {} against the original, cosine {}.",
        fmt_num(bits_per_weight),
        db(metrics),
        fmt_num(metrics.cosine)
    );
    match rtn {
        Some(r) if r.identical => text.push_str(&format!(
            " Its bits are round-to-nearest's in {}: no algorithm changed this weight.",
            r.format
        )),
        Some(r) => match (metrics.sqnr_db, r.metrics.sqnr_db) {
            (Some(q), Some(n)) => text.push_str(&format!(
                " Round-to-nearest in {} gives {} dB: the quantizer's algorithm {} {} dB.",
                r.format,
                fmt_num(n),
                if q >= n { "gained" } else { "lost" },
                fmt_num((q - n).abs())
            )),
            _ => text.push_str(&format!(
                " Round-to-nearest in {} gives {}.",
                r.format,
                db(&r.metrics)
            )),
        },
        None => {}
    }
    text
}

/// The diagnosis of calibration `batches`: one tensor with its shape, several as one vector
/// (`None` for no batch).
pub fn diagnose_batches(
    batches: &[&crate::tensor::Tensor],
    outcomes: &[Outcome],
) -> Option<Diagnosis> {
    Some(match batches {
        [] => return None,
        [one] => diagnose(&one.data, &one.shape, outcomes),
        all => {
            let values: Vec<f32> = all.iter().flat_map(|b| b.data.iter().copied()).collect();
            diagnose(&values, &[values.len()], outcomes)
        }
    })
}

/// The share of finite values beyond [`OUTLIER_SIGMAS`] from `mean`, and their share of `Σx²`.
fn outlier_share(values: &[f32], mean: f64, std: f64) -> (f64, f64) {
    let bound = OUTLIER_SIGMAS * std;
    let (mut n, mut far, mut energy, mut far_energy) = (0usize, 0usize, 0f64, 0f64);
    for &v in values.iter().filter(|v| v.is_finite()) {
        let x = f64::from(v);
        n += 1;
        energy += x * x;
        if (x - mean).abs() > bound {
            far += 1;
            far_energy += x * x;
        }
    }
    let share = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    (share(far as f64, n as f64), share(far_energy, energy))
}

/// Along each axis of a 2-D tensor, the slices whose largest magnitude is at least
/// [`EXTREME_CHANNEL`] times the median slice's.
fn extreme_slices(values: &[f32], shape: &[usize]) -> Vec<Extremes> {
    let &[rows, cols] = shape else {
        return Vec::new();
    };
    if rows * cols != values.len() || rows < 2 || cols < 2 {
        return Vec::new();
    }
    let mut row_max = vec![0f32; rows];
    let mut col_max = vec![0f32; cols];
    for (r, row) in values.chunks_exact(cols).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            if v.is_finite() {
                let a = v.abs();
                row_max[r] = row_max[r].max(a);
                col_max[c] = col_max[c].max(a);
            }
        }
    }
    [(0, row_max), (1, col_max)]
        .into_iter()
        .filter_map(|(axis, maxima)| {
            let mut sorted = maxima.clone();
            sorted.sort_by(f32::total_cmp);
            let median = f64::from(sorted[sorted.len() / 2]);
            if median <= 0.0 {
                return None;
            }
            let ratio = |i: usize| f64::from(maxima[i]) / median;
            let count = (0..maxima.len())
                .filter(|&i| ratio(i) >= EXTREME_CHANNEL)
                .count();
            let worst = (0..maxima.len()).max_by(|&a, &b| ratio(a).total_cmp(&ratio(b)))?;
            (count > 0).then(|| Extremes {
                axis,
                count,
                slices: maxima.len(),
                worst,
                ratio: ratio(worst),
            })
        })
        .collect()
}

/// How many steps of a per-tensor MinMax int8 grid the middle [`BULK`] of the values spans.
fn bulk_steps(values: &[f32], min: f64, max: f64) -> Option<f64> {
    let scale = (max.max(0.0) - min.min(0.0)) / 255.0;
    if scale <= 0.0 {
        return None;
    }
    let histogram = histogram_of(&[values], DEFAULT_BINS).ok()?;
    let (lo, hi) = histogram.range();
    let width = (hi - lo) / histogram.bins() as f64;
    let total = histogram.total();
    let tail = total * (1.0 - BULK) / 2.0;
    let mut seen = 0.0;
    let (mut low, mut high) = (None, None);
    for (i, &count) in histogram.counts().iter().enumerate() {
        seen += count;
        if low.is_none() && seen > tail {
            low = Some(lo + width * i as f64);
        }
        if high.is_none() && seen >= total - tail {
            high = Some(lo + width * (i + 1) as f64);
        }
    }
    Some(((high? - low?) / scale).clamp(0.0, 255.0))
}

/// The sentences and facts about the best outcomes: the best observer and format, and what
/// per-channel parameters gained over per-tensor ones.
fn best_of(outcomes: &[Outcome], facts: &mut Vec<(String, String)>) -> Vec<String> {
    let best = |pick: &dyn Fn(&Outcome) -> bool| {
        outcomes
            .iter()
            .filter(|o| pick(o))
            .filter_map(|o| o.sqnr_db.map(|s| (o, s)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    let mut sentences = Vec::new();
    let mut named = Vec::new();
    if let Some((o, s)) = best(&|o| !o.format) {
        facts.push((
            "best observer".into(),
            format!("{} ({} dB)", o.label, fmt_num(s)),
        ));
        named.push(format!("{} ({} dB)", o.label, fmt_num(s)));
    }
    if let Some((o, s)) = best(&|o| o.format) {
        facts.push((
            "best format".into(),
            format!("{} ({} dB)", o.label, fmt_num(s)),
        ));
        named.push(format!("the format {} ({} dB)", o.label, fmt_num(s)));
    }
    if !named.is_empty() {
        sentences.push(format!("Best here: {}.", named.join("; ")));
    }
    if let (Some((t, ts)), Some((c, cs))) = (
        best(&|o| !o.format && o.per_tensor),
        best(&|o| !o.format && !o.per_tensor),
    ) {
        let gain = cs - ts;
        facts.push((
            "per-channel gain over per-tensor".into(),
            format!("{} dB", fmt_num(gain)),
        ));
        sentences.push(if gain > 0.0 {
            format!(
                "Finer granularity helps: {} beats the best per-tensor observer, {}, by {} dB.",
                c.label,
                t.label,
                fmt_num(gain)
            )
        } else {
            format!(
                "Finer granularity does not help here: the best per-tensor observer, {}, is {} dB \
                 ahead of {}.",
                t.label,
                fmt_num(-gain),
                c.label
            )
        });
    }
    sentences
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_read_back_from_its_json_gives_the_outcome_the_report_gives() {
        let t = crate::tensor::Tensor::new(vec![64, 32], tensor()).unwrap();
        let batches = [t];
        for id in [
            "torch.MinMaxObserver",
            "torch.PerChannelMinMaxObserver",
            "torch.HistogramObserver",
        ] {
            let report = crate::engine::run(
                id,
                &crate::params::Params::new(),
                &batches,
                crate::engine::NonFinitePolicy::Exclude,
            )
            .unwrap();
            let json = serde_json::to_value(&report).unwrap();
            let head: ReportHead = serde_json::from_value(json).unwrap();
            let outcome = head.outcome();
            assert!(
                outcome.as_ref().is_some_and(|o| o.sqnr_db.is_some()),
                "{id}"
            );
            assert_eq!(outcome, Outcome::of_report(&report), "{id}");
        }
        // A report without metrics (a failed run) is no outcome either way.
        let head: ReportHead = serde_json::from_value(serde_json::json!({
            "observer": "torch.MinMaxObserver", "granularity": "per_tensor", "metrics": null
        }))
        .unwrap();
        assert_eq!(head.outcome(), None);
    }

    /// 64×32 values within ±1.1, except column 5 of the first four rows, ×50.
    fn tensor() -> Vec<f32> {
        (0..64 * 32)
            .map(|i| {
                let v = if i % 3 == 0 { 1.0 } else { -0.5 } * ((i % 7) as f32 / 7.0 + 0.1);
                if i % 32 == 5 && i / 32 < 4 {
                    v * 50.0
                } else {
                    v
                }
            })
            .collect()
    }

    #[test]
    fn outliers_are_counted_against_a_brute_force_pass() {
        let x = tensor();
        let s = Stats::of(&x);
        let (mean, std) = (s.mean.unwrap(), s.std.unwrap());
        let far: Vec<f64> = x
            .iter()
            .map(|&v| f64::from(v))
            .filter(|v| (v - mean).abs() > 6.0 * std)
            .collect();
        let (share, energy) = outlier_share(&x, mean, std);
        assert_eq!(share, far.len() as f64 / x.len() as f64);
        let total: f64 = x.iter().map(|&v| f64::from(v).powi(2)).sum();
        let far_energy: f64 = far.iter().map(|v| v * v).sum();
        assert!((energy - far_energy / total).abs() < 1e-12);
    }

    #[test]
    fn the_outlier_column_is_found_with_its_ratio() {
        let x = tensor();
        let found = extreme_slices(&x, &[64, 32]);
        let columns = found.iter().find(|e| e.axis == 1).expect("axis 1");
        assert_eq!((columns.count, columns.slices, columns.worst), (1, 32, 5));
        assert!(columns.ratio > 40.0, "{}", columns.ratio);
        // The four rows that hold those values stand out too.
        let rows = found.iter().find(|e| e.axis == 0).expect("axis 0");
        assert_eq!((rows.count, rows.slices), (4, 64));
        assert!(rows.worst < 4);
    }

    #[test]
    fn the_bulk_uses_few_steps_when_a_column_stretches_the_range() {
        let x = tensor();
        let s = Stats::of(&x);
        let steps = bulk_steps(&x, s.min.unwrap(), s.max.unwrap()).unwrap();
        // The bulk spans about [−0.55, 1.1] of a range stretched by the ×50 values: a few steps.
        assert!((1.0..=10.0).contains(&steps), "{steps}");
    }

    #[test]
    fn the_best_methods_and_the_granularity_gain_come_from_the_outcomes() {
        let outcomes = [
            Outcome {
                label: "a".into(),
                format: false,
                per_tensor: true,
                sqnr_db: Some(20.0),
            },
            Outcome {
                label: "b".into(),
                format: false,
                per_tensor: false,
                sqnr_db: Some(31.5),
            },
            Outcome {
                label: "int4".into(),
                format: true,
                per_tensor: true,
                sqnr_db: Some(12.0),
            },
            Outcome {
                label: "c".into(),
                format: false,
                per_tensor: true,
                sqnr_db: None,
            },
        ];
        let d = diagnose(&tensor(), &[64, 32], &outcomes);
        assert!(
            d.text
                .contains("Best here: b (31.5 dB); the format int4 (12 dB)."),
            "{}",
            d.text
        );
        assert!(
            d.text
                .contains("b beats the best per-tensor observer, a, by 11.5 dB"),
            "{}",
            d.text
        );
        assert!(d.text.contains("1 of 32 slices along axis 1"), "{}", d.text);
        assert!(d.text.contains("4 of 64 slices along axis 0"), "{}", d.text);
        let empty = diagnose(&[f32::NAN], &[1], &[]);
        assert_eq!(empty.text, "No finite values: nothing to quantize.");
    }

    #[test]
    fn a_checkpoint_row_is_diagnosed_from_its_statistics_and_results() {
        let values = tensor();
        let stats = Stats::of(&values);
        let outcomes = [
            Outcome {
                label: "minmax".into(),
                format: false,
                per_tensor: true,
                sqnr_db: Some(18.0),
            },
            Outcome {
                label: "per-channel".into(),
                format: false,
                per_tensor: false,
                sqnr_db: Some(30.0),
            },
        ];
        let d = diagnose_stats(&stats, &outcomes);
        let sigmas = stats.absmax_over_std.unwrap();
        assert!(sigmas > OUTLIER_SIGMAS, "{sigmas}");
        assert!(
            d.text.starts_with(&format!(
                "Its largest magnitude is {}σ, so a per-tensor range is stretched by a few values (kurtosis {}).",
                fmt_num(sigmas),
                fmt_num(stats.kurtosis.unwrap())
            )),
            "{}",
            d.text
        );
        assert!(
            d.text
                .contains("per-channel beats the best per-tensor observer, minmax, by 12 dB"),
            "{}",
            d.text
        );
        // Without outliers the sentence does not say the range is stretched.
        let calm: Vec<f32> = (0..1000).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
        let d = diagnose_stats(&Stats::of(&calm), &[]);
        assert!(!d.text.contains("stretched"), "{}", d.text);
    }

    #[test]
    fn a_quantized_pair_says_what_its_algorithm_gained_over_round_to_nearest() {
        use crate::diff::{DiffMetrics, RtnResult};
        let metrics = |sqnr_db: Option<f64>| DiffMetrics {
            mse: 1e-4,
            nmse: 1e-3,
            sqnr_db,
            max_abs_err: 0.1,
            cosine: 0.9995,
            imatrix_weighted_mse: None,
        };
        let rtn = |sqnr_db, identical| RtnResult {
            format: "ggml.Q4_K".into(),
            metrics: metrics(sqnr_db),
            identical,
        };
        let text = diagnose_pair(
            "Q4_K",
            4.5,
            &metrics(Some(24.5)),
            Some(&rtn(Some(23.0), false)),
        );
        assert_eq!(
            text,
            "Stored as Q4_K (4.5 bits per weight): SQNR 24.5 dB against the original, cosine 0.9995. \
             Round-to-nearest in ggml.Q4_K gives 23 dB: the quantizer's algorithm gained 1.5 dB."
        );
        let text = diagnose_pair(
            "Q4_K",
            4.5,
            &metrics(Some(22.0)),
            Some(&rtn(Some(23.0), false)),
        );
        assert!(
            text.ends_with("the quantizer's algorithm lost 1 dB."),
            "{text}"
        );
        let text = diagnose_pair(
            "Q4_K",
            4.5,
            &metrics(Some(23.0)),
            Some(&rtn(Some(23.0), true)),
        );
        assert!(
            text.ends_with(
                "Its bits are round-to-nearest's in ggml.Q4_K: no algorithm changed this weight."
            ),
            "{text}"
        );
        let text = diagnose_pair("F16", 16.0, &metrics(None), None);
        assert_eq!(text, "Stored as F16 (16 bits per weight): SQNR ∞ (exact) against the original, cosine 0.9995.");
    }
}
