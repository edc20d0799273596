//! Horizon `horizon_plugin_pytorch.quantization.observer_v2` (the published source as shipped
//! with OpenExplorer 3.0.x; its one compiled op, `scale_quanti`, reproduced from the source's
//! pure-Python helpers).
//!
//! Every observer is symmetric (`per_tensor_symmetric` or `per_channel_symmetric`), quantizes to
//! qint8 or qint16, keeps a *moving average* of per-batch ranges, and computes
//! `scale = max(−min, max) / ((qmax − qmin)/2)` (127.5 for qint8) — see [`base`]. The two
//! globals of the framework, the rounding of `scale_quanti` (`round_mode`) and power-of-two
//! scales (`pow_quantization`), are parameters here.
//!
//! Each observer is an [`ObserverKind`]: the state is what `forward()` leaves behind (the
//! moving-average min/max, plus KL's pooled histogram), `calculate_qparams()` is the pure
//! search over it. The `ObserverBase` arguments are declared once ([`config`]); dtype, range and
//! rounding only enter `calculate_qparams` — except where `forward()` itself searches: MSE and
//! Mix fake-quantize their candidates, and KL merges its histogram into `−qinfo(dtype).min`
//! levels, so for them those arguments are data parameters.
//!
//! Modules: [`config`] (arguments and constructor checks), [`base`] (scale, moving average,
//! `calculate_qparams`), [`channels`] (the per-channel view), [`scale_quanti`] (fake
//! quantization and its L2 error), [`crate::kernels::torch`] (PyTorch kernels KL's rounding depends on), one
//! module per observer.

/// The quantize–dequantize every Horizon observer shares, as the two [`ObserverKind`] methods:
/// `scale_quanti` ([`scale_quanti::fake_quantize`]) rounding by the configuration's
/// `round_mode`, and the same rounding as a fused kernel ([`qdq_kernel::kernel`]). The argument
/// is the field path from the observer's configuration to its
/// `QuantConfig` (`quant` or `base.quant`). `fake_quantize` is hand-written because no kernel
/// fits NormObserver's column scales (several scales without an axis); elsewhere it gives the
/// kernel's bits, through the same per-element [`scale_quanti::qdq_value`].
macro_rules! scale_quanti_qdq {
    ($($field:ident).+) => {
        fn fake_quantize(
            cfg: &Self::Config,
            x: &$crate::tensor::Tensor,
            q: &$crate::observer::QParams,
        ) -> $crate::error::Result<$crate::tensor::Tensor> {
            $crate::observers::horizon::scale_quanti::fake_quantize(x, q, cfg.$($field).+.round_mode)
        }

        fn qdq_kernel(
            cfg: &Self::Config,
            shape: &[usize],
            q: &$crate::observer::QParams,
        ) -> Option<Box<dyn $crate::qdq::QdqKernel>> {
            $crate::observers::horizon::qdq_kernel::kernel(shape, q, cfg.$($field).+.round_mode)
        }
    };
}

pub mod base;
pub mod channels;
pub mod config;
pub mod fixed;
pub mod kl;
pub mod minmax;
pub mod mix;
pub mod mse;
pub mod percentile;
pub mod qdq_kernel;
pub mod scale_quanti;
pub mod stats;

use crate::observer::{Family, Granularity, ObserverKind, ObserverSpec, Preset};

/// The framework version reproduced.
pub const VERSION: &str = "observer_v2 (OE 3.0.x)";

const SCALE_QUIRK: &str = "The qint8 scale divides max|x| by 127.5 (= (127 − (−128))/2), not 127: \
    +max|x| maps to 127.5 and is clipped to 127.";

fn spec<K: ObserverKind>(
    id: &'static str,
    granularity: Granularity,
    summary: &'static str,
) -> ObserverSpec {
    ObserverSpec::of::<K>(id, Family::Horizon, VERSION, granularity, summary)
}

/// The Horizon observers.
pub fn observers() -> Vec<ObserverSpec> {
    vec![
        spec::<minmax::MinMax>(
            "horizon.MinMaxObserver",
            Granularity::PerChannel,
            "moving average of per-batch min/max (per tensor or per channel), symmetric scale",
        )
        .quirk("A moving average (averaging_constant 0.01 by default), unlike PyTorch's running MinMaxObserver; averaging_constant 1.0 keeps the last batch only.")
        .quirk(SCALE_QUIRK),
        spec::<percentile::Percentile>(
            "horizon.PercentileObserver",
            Granularity::PerTensor,
            "per batch: clip |x| at the centre of the percentile bin of its histogram; moving average",
        )
        .quirk("The percentile target is percentile/100 × numel rounded to float32 and compared with the cumulative histogram (searchsorted, left); the clip is the centre (i + 0.5) of that bin, not its edge.")
        .quirk(SCALE_QUIRK),
        spec::<mse::Mse<false>>(
            "horizon.MSEObserver",
            Granularity::PerChannel,
            "per batch: the min/max shrink factor (1.00 … 0.06) with the smallest L2 fake-quant error; moving average",
        )
        .quirk("Stride bug: with stride > 1 the winning candidate index k is applied as factor 1 − k·0.01 instead of 1 − k·stride·0.01, so the range applied is not the one that won (stride 2, k = 10: evaluated 0.80, applied 0.90). See horizon.MSEObserver.fixed.")
        .quirk("Ties go to the last (most clipped) factor: an all-zero batch selects factor 0.06.")
        .quirk("The applied factor is computed in float32 from the index and can be 1 ulp away from the evaluated one even at stride 1.")
        .quirk(SCALE_QUIRK),
        spec::<mse::Mse<true>>(
            "horizon.MSEObserver.fixed",
            Granularity::PerChannel,
            "MSEObserver applying exactly the shrink factor that won the search",
        )
        .corrects("horizon.MSEObserver"),
        spec::<kl::Kl>(
            "horizon.KLObserver",
            Granularity::PerTensor,
            "histogram of |x| pooled over update_interval batches; clip minimising a 9-bin-smoothed KL divergence; moving average",
        )
        .quirk("The divergences are summed over 9-wide windows and the clip is edges[j + 128 + 4], the window centre taken as a bin edge; the last 10 candidate lengths are never chosen.")
        .quirk("hist[0] is replaced by hist[1] before the search; Q gets +1e-10 after normalisation.")
        .quirk("With update_interval larger than the number of batches no search runs and the scale stays 1.0.")
        .quirk(SCALE_QUIRK),
        spec::<mix::Mix>(
            "horizon.MixObserver",
            Granularity::PerTensor,
            "per batch: the best of nine percentile clips (99.9 … 99.9999 %) by L2 fake-quant error; moving average",
        )
        .quirk("Despite its docstring ('multiple calibration methods'), Mix only compares nine percentile clips of a 2048-bin |x| histogram; no MinMax, KL or MSE candidate. Equal errors keep the earlier (smaller) clip.")
        .quirk(SCALE_QUIRK),
        spec::<minmax::Clip>(
            "horizon.ClipObserver",
            Granularity::PerChannel,
            "moving average of min/max, then min ≥ xmin and max ≤ xmax after every batch",
        )
        .quirk("The limits clamp the stored state after every batch, so they feed into the next average; each side is clamped only towards the inside (data entirely above xmax still gives min > xmax).")
        .quirk(SCALE_QUIRK),
        spec::<stats::ClipStd>(
            "horizon.ClipStdObserver",
            Granularity::PerTensor,
            "per batch: min/max clamped to mean ∓ std_scale·std (unbiased); moving average",
        )
        .quirk(SCALE_QUIRK),
        spec::<stats::Norm>(
            "horizon.NormObserver",
            Granularity::PerChannel,
            "per batch: max = p-norm of |x| over dim 0, min = −max; moving average",
        )
        .quirk("The norm reduces over dim 0 only: a [rows, cols] batch gives one scale per column although the observer is per-tensor.")
        .quirk(SCALE_QUIRK),
        spec::<fixed::FixedScale>(
            "horizon.FixedScaleObserver",
            Granularity::PerTensor,
            "returns the configured scale and zero point, whatever the data",
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
    let preset = |name, params, doc| super::preset(name, "horizon.MinMaxObserver", params, doc);
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

/// Helpers for the family's unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use crate::error::Result;
    use crate::observer::{Instance, ObserverKind};
    use crate::params::{ParamSet, Params};
    use crate::tensor::Tensor;

    /// Observer `id` of the registry configured with the JSON `params`, before any data.
    pub fn instance(id: &str, params: &str) -> Result<Instance> {
        Instance::new(crate::registry::find(id)?, &Params::from_json(params)?)
    }

    /// Kind `K` configured with the JSON `params` and the state it collects from `batches`.
    pub fn collect<K: ObserverKind>(
        params: &str,
        batches: &[Tensor],
    ) -> Result<(K::Config, K::State)> {
        let config = K::resolve(&K::Args::from_params(&Params::from_json(params)?)?, &[])?;
        let mut state = K::init(&config);
        for batch in batches {
            K::feed(&mut state, &config, batch)?;
        }
        Ok((config, state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;

    use crate::tensor::Tensor;

    fn batch(seed: u32) -> Tensor {
        let data = (0..512u32)
            .map(|i| {
                let u = ((i.wrapping_mul(2654435761u32) ^ seed) % 10007) as f32 / 10007.0 - 0.5;
                u * u * u * 40.0 + (i % 7) as f32 * 0.01
            })
            .collect();
        Tensor::new(vec![8, 64], data).unwrap()
    }

    #[test]
    fn every_observer_builds_with_its_defaults_and_reports_qparams() {
        for spec in observers() {
            let mut o = crate::observer::Instance::new(&spec, &Params::new()).unwrap();
            assert_eq!(o.qparams().unwrap().scale.len(), 1, "{}", spec.id);
            o.feed(&batch(3)).unwrap();
            let q = o.qparams().unwrap();
            assert!(q.scale.iter().all(|&s| s > 0.0), "{}", spec.id);
            let y = o.fake_quantize(&batch(3), &q).unwrap();
            assert_eq!(y.shape, vec![8, 64]);
        }
    }
}
