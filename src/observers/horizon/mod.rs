//! Horizon `horizon_plugin_pytorch.quantization.observer_v2` (the published source as shipped
//! with OpenExplorer 3.0.x; its one compiled op, `scale_quanti`, reproduced from the source's
//! pure-Python helpers).
//!
//! Every observer is symmetric (`per_tensor_symmetric` or `per_channel_symmetric`), quantizes to
//! qint8 or qint16, keeps a *moving average* of per-batch ranges, and computes
//! `scale = max(−min, max) / ((qmax − qmin)/2)` (127.5 for qint8) — see [`base`]. The two
//! globals of the framework, the rounding of `scale_quanti` (`round_mode`) and power-of-two
//! scales (`pow_quantization`), are parameters here.

pub mod base;
pub mod fixed;
pub mod kl;
pub mod minmax;
pub mod mix;
pub mod mse;
pub mod percentile;
pub mod stats;
pub mod torch_ops;

use crate::error::Result;
use crate::observer::Observer;
use crate::params::{Affects, ParamSpec, Params};
use crate::registry::{Family, Granularity, ObserverSpec, Preset};

/// The framework version reproduced.
pub const VERSION: &str = "observer_v2 (OE 3.0.x)";

const SCALE_QUIRK: &str = "The qint8 scale divides max|x| by 127.5 (= (127 − (−128))/2), not 127: \
    +max|x| maps to 127.5 and is clipped to 127.";

fn boxed<O: Observer + 'static>(o: Result<O>) -> Result<Box<dyn Observer>> {
    o.map(|o| Box::new(o) as Box<dyn Observer>)
}

fn build_minmax(p: &Params) -> Result<Box<dyn Observer>> {
    boxed(minmax::MinMaxObserver::new(p))
}
fn build_clip(p: &Params) -> Result<Box<dyn Observer>> {
    boxed(minmax::MinMaxObserver::clip(p))
}
fn build_percentile(p: &Params) -> Result<Box<dyn Observer>> {
    boxed(percentile::PercentileObserver::new(p))
}
fn build_mse(p: &Params) -> Result<Box<dyn Observer>> {
    boxed(mse::MseObserver::new(p))
}
fn build_mse_fixed(p: &Params) -> Result<Box<dyn Observer>> {
    boxed(mse::MseObserver::fixed(p))
}
fn build_kl(p: &Params) -> Result<Box<dyn Observer>> {
    boxed(kl::KlObserver::new(p))
}
fn build_mix(p: &Params) -> Result<Box<dyn Observer>> {
    boxed(mix::MixObserver::new(p))
}
fn build_clip_std(p: &Params) -> Result<Box<dyn Observer>> {
    boxed(stats::MomentObserver::clip_std(p))
}
fn build_norm(p: &Params) -> Result<Box<dyn Observer>> {
    boxed(stats::MomentObserver::norm(p))
}
fn build_fixed(p: &Params) -> Result<Box<dyn Observer>> {
    boxed(fixed::FixedScaleObserver::new(p))
}

/// `own` parameters followed by the shared ones.
fn with_common(mut own: Vec<ParamSpec>, common: Vec<ParamSpec>) -> Vec<ParamSpec> {
    own.extend(common);
    own
}

fn mse_params() -> Vec<ParamSpec> {
    with_common(
        vec![ParamSpec::int(
            "stride",
            1,
            95,
            1,
            "step through the 95 shrink factors 1.00, 0.99, … 0.06 (Horizon advises ≤ 20)",
        )],
        base::common_params(0.01, false, false, false),
    )
}

fn percentile_params() -> Vec<ParamSpec> {
    with_common(
        vec![
            ParamSpec::float(
                "percentile",
                0.0,
                100.0,
                99.99,
                "share of |x| (in %) kept inside the clip, per batch",
            ),
            ParamSpec::int(
                "bins",
                1,
                percentile::MAX_BINS,
                2048,
                "histogram bins of |x| per batch (the clip lands on a bin centre)",
            ),
        ],
        base::common_params(0.01, true, true, true),
    )
}

fn kl_params() -> Vec<ParamSpec> {
    let mut common = base::common_params(0.01, false, true, true);
    for p in &mut common {
        if p.name == "quant_min" || p.name == "quant_max" {
            p.affects = Affects::Search;
        }
    }
    with_common(
        vec![
            ParamSpec::int(
                "bins",
                1,
                kl::MAX_HIST_BINS as i64,
                512,
                "initial histogram bins of |x| (Horizon requires at least 256)",
            ),
            ParamSpec::int(
                "update_interval",
                1,
                1_000_000,
                1,
                "run the KL search every N batches on the pooled histogram (N = number of batches is Horizon's advice)",
            ),
        ],
        common,
    )
}

fn fixed_params() -> Vec<ParamSpec> {
    let own = vec![
        ParamSpec::float(
            "scale",
            0.0,
            1.0e6,
            1.0,
            "the scale to return (must be > 0)",
        ),
        ParamSpec::float(
            "zero_point",
            -32768.0,
            32767.0,
            0.0,
            "the zero point to return (truncated to an integer)",
        ),
    ];
    with_common(own, base::common_params(0.0, true, true, true))
        .into_iter()
        .map(ParamSpec::search_only)
        .collect()
}

/// The Horizon observers.
pub fn observers() -> Vec<ObserverSpec> {
    let h = |id, granularity, summary, params, build| {
        ObserverSpec::new(
            id,
            Family::Horizon,
            VERSION,
            granularity,
            summary,
            params,
            build,
        )
    };
    vec![
        h(
            "horizon.MinMaxObserver",
            Granularity::PerChannel,
            "moving average of per-batch min/max (per tensor or per channel), symmetric scale",
            base::common_params(0.01, true, true, true),
            build_minmax,
        )
        .quirk("A moving average (averaging_constant 0.01 by default), unlike PyTorch's running MinMaxObserver; averaging_constant 1.0 keeps the last batch only.")
        .quirk(SCALE_QUIRK),
        h(
            "horizon.PercentileObserver",
            Granularity::PerTensor,
            "per batch: clip |x| at the centre of the percentile bin of its histogram; moving average",
            percentile_params(),
            build_percentile,
        )
        .quirk("The percentile target is percentile/100 × numel rounded to float32 and compared with the cumulative histogram (searchsorted, left); the clip is the centre (i + 0.5) of that bin, not its edge.")
        .quirk(SCALE_QUIRK),
        h(
            "horizon.MSEObserver",
            Granularity::PerChannel,
            "per batch: the min/max shrink factor (1.00 … 0.06) with the smallest L2 fake-quant error; moving average",
            mse_params(),
            build_mse,
        )
        .quirk("Stride bug: with stride > 1 the winning candidate index k is applied as factor 1 − k·0.01 instead of 1 − k·stride·0.01, so the range applied is not the one that won (stride 2, k = 10: evaluated 0.80, applied 0.90). See horizon.MSEObserver.fixed.")
        .quirk("Ties go to the last (most clipped) factor: an all-zero batch selects factor 0.06.")
        .quirk("The applied factor is computed in float32 from the index and can be 1 ulp away from the evaluated one even at stride 1.")
        .quirk(SCALE_QUIRK),
        h(
            "horizon.MSEObserver.fixed",
            Granularity::PerChannel,
            "MSEObserver applying exactly the shrink factor that won the search",
            mse_params(),
            build_mse_fixed,
        )
        .corrects("horizon.MSEObserver"),
        h(
            "horizon.KLObserver",
            Granularity::PerTensor,
            "histogram of |x| pooled over update_interval batches; clip minimising a 9-bin-smoothed KL divergence; moving average",
            kl_params(),
            build_kl,
        )
        .quirk("The divergences are summed over 9-wide windows and the clip is edges[j + 128 + 4], the window centre taken as a bin edge; the last 10 candidate lengths are never chosen.")
        .quirk("hist[0] is replaced by hist[1] before the search; Q gets +1e-10 after normalisation.")
        .quirk("With update_interval larger than the number of batches no search runs and the scale stays 1.0.")
        .quirk(SCALE_QUIRK),
        h(
            "horizon.MixObserver",
            Granularity::PerTensor,
            "per batch: the best of nine percentile clips (99.9 … 99.9999 %) by L2 fake-quant error; moving average",
            base::common_params(0.01, false, false, false),
            build_mix,
        )
        .quirk("Despite its docstring ('multiple calibration methods'), Mix only compares nine percentile clips of a 2048-bin |x| histogram; no MinMax, KL or MSE candidate. Equal errors keep the earlier (smaller) clip.")
        .quirk(SCALE_QUIRK),
        h(
            "horizon.ClipObserver",
            Granularity::PerChannel,
            "moving average of min/max, then min ≥ xmin and max ≤ xmax after every batch",
            with_common(
                vec![
                    ParamSpec::float("xmin", -1.0e6, 1.0e6, -1.0, "lower limit for the stored minimum"),
                    ParamSpec::float("xmax", -1.0e6, 1.0e6, 1.0, "upper limit for the stored maximum"),
                ],
                base::common_params(1.0, true, true, true),
            ),
            build_clip,
        )
        .quirk("The limits clamp the stored state after every batch, so they feed into the next average; each side is clamped only towards the inside (data entirely above xmax still gives min > xmax).")
        .quirk(SCALE_QUIRK),
        h(
            "horizon.ClipStdObserver",
            Granularity::PerTensor,
            "per batch: min/max clamped to mean ∓ std_scale·std (unbiased); moving average",
            with_common(
                vec![ParamSpec::float(
                    "std_scale",
                    0.0,
                    100.0,
                    3.0,
                    "how many standard deviations around the mean to keep",
                )],
                base::common_params(0.01, true, true, true),
            ),
            build_clip_std,
        )
        .quirk(SCALE_QUIRK),
        h(
            "horizon.NormObserver",
            Granularity::PerChannel,
            "per batch: max = p-norm of |x| over dim 0, min = −max; moving average",
            with_common(
                vec![ParamSpec::float("norm", 0.0, 100.0, 2.0, "the order p of the norm")],
                base::common_params(0.01, true, true, true),
            ),
            build_norm,
        )
        .quirk("The norm reduces over dim 0 only: a [rows, cols] batch gives one scale per column although the observer is per-tensor.")
        .quirk(SCALE_QUIRK),
        h(
            "horizon.FixedScaleObserver",
            Granularity::PerTensor,
            "returns the configured scale and zero point, whatever the data",
            fixed_params(),
            build_fixed,
        )
        .quirk("zero_point is truncated towards zero to an integer."),
    ]
}

/// Horizon has no named observer presets in `observer_v2`.
///
/// `horizon_plugin_pytorch.quantization.MovingAverageMinMaxObserver` and
/// `MovingAveragePerChannelMinMaxObserver` are documented with the same moving-average min/max
/// as `observer_v2.MinMaxObserver` (per-tensor symmetric, and per-channel symmetric along
/// axis 0); they are offered as configurations of `horizon.MinMaxObserver`. No reference run of
/// them exists.
pub fn presets() -> Vec<Preset> {
    let preset = |name, params: serde_json::Value, doc| Preset {
        name,
        observer: "horizon.MinMaxObserver",
        params: Params::from_value(params).unwrap_or_default(),
        doc,
    };
    vec![
        preset(
            "horizon.MovingAverageMinMaxObserver",
            serde_json::json!({"averaging_constant": 0.01, "qscheme": "per_tensor_symmetric", "dtype": "qint8"}),
            "horizon_plugin_pytorch.quantization.MovingAverageMinMaxObserver: moving-average min/max, per-tensor symmetric",
        ),
        preset(
            "horizon.MovingAveragePerChannelMinMaxObserver",
            serde_json::json!({"averaging_constant": 0.01, "qscheme": "per_channel_symmetric", "ch_axis": 0, "dtype": "qint8"}),
            "horizon_plugin_pytorch.quantization.MovingAveragePerChannelMinMaxObserver: moving-average min/max per channel (axis 0), symmetric",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::Retune;
    use crate::params::ParamKind;
    use crate::tensor::Tensor;
    use serde_json::Value;

    fn batch(seed: u32) -> Tensor {
        let data = (0..512u32)
            .map(|i| {
                let u = ((i.wrapping_mul(2654435761u32) ^ seed) % 10007) as f32 / 10007.0 - 0.5;
                u * u * u * 40.0 + (i % 7) as f32 * 0.01
            })
            .collect();
        Tensor::new(vec![8, 64], data).unwrap()
    }

    /// A valid value different from the default.
    fn other_value(p: &ParamSpec) -> Value {
        match (&p.kind, &p.default) {
            (ParamKind::Choice { options }, d) => {
                Value::from(*options.iter().find(|o| d.as_str() != Some(**o)).unwrap())
            }
            (ParamKind::Bool, d) => Value::from(!d.as_bool().unwrap_or(false)),
            (ParamKind::Int { .. }, Value::Null) if p.name == "quant_min" => Value::from(-100),
            (ParamKind::Int { .. }, Value::Null) if p.name == "quant_max" => Value::from(100),
            (ParamKind::Int { min, max }, d) => {
                let d = d.as_i64().unwrap();
                Value::from(if d < *max {
                    d + 1
                } else {
                    min.max(&(d - 1)).to_owned()
                })
            }
            (ParamKind::Float { max, .. }, d) => {
                let d = d.as_f64().unwrap();
                Value::from(if d + 0.5 <= *max { d + 0.5 } else { d / 2.0 })
            }
            (ParamKind::Bits { .. } | ParamKind::Floats, _) => {
                unreachable!("Horizon has no bit-width or vector parameters")
            }
        }
    }

    #[test]
    fn search_only_params_really_retune_and_data_params_do_not() {
        for spec in observers() {
            for p in &spec.params {
                if p.name == "qscheme" || p.name == "ch_axis" {
                    continue; // changing one alone violates Horizon's assertions
                }
                let mut changed = Params::new().with(p.name, other_value(p));
                if p.name == "quant_min" {
                    changed = changed.with("quant_max", 100);
                }
                if p.name == "quant_max" {
                    changed = changed.with("quant_min", -100);
                }
                let mut o = spec.build(&Params::new()).unwrap();
                o.observe(&batch(1)).unwrap();
                o.observe(&batch(2)).unwrap();
                let outcome = o.retune(&changed).unwrap();
                let expect = if p.affects == Affects::Search {
                    Retune::Applied
                } else {
                    Retune::NeedsData
                };
                assert_eq!(outcome, expect, "{} {}", spec.id, p.name);
                if outcome == Retune::Applied {
                    let mut fresh = spec.build(&changed).unwrap();
                    fresh.observe(&batch(1)).unwrap();
                    fresh.observe(&batch(2)).unwrap();
                    assert_eq!(
                        o.qparams().unwrap().scale,
                        fresh.qparams().unwrap().scale,
                        "{} {}",
                        spec.id,
                        p.name
                    );
                }
            }
        }
    }

    #[test]
    fn every_observer_builds_with_its_defaults_and_reports_qparams() {
        for spec in observers() {
            let mut o = spec.build(&Params::new()).unwrap();
            assert_eq!(o.qparams().unwrap().scale.len(), 1, "{}", spec.id);
            o.observe(&batch(3)).unwrap();
            let q = o.qparams().unwrap();
            assert!(q.scale.iter().all(|&s| s > 0.0), "{}", spec.id);
            let y = o.fake_quantize(&batch(3), &q).unwrap();
            assert_eq!(y.shape, vec![8, 64]);
            o.reset();
        }
    }
}
