//! AMD Quark 0.13 observers (`quark.torch.quantization.observer`), with Quark's own
//! quantize–dequantize kernels.
//!
//! Ids are `quark.<Class>`; parameters are the fields of Quark's `QTensorConfig` each class
//! reads ([`mod@spec`]), plus the instance attributes some observers keep (`bins`, `percentile`, …),
//! declared once per class with [`config::quark_params!`](config). Each observer is an
//! [`ObserverKind`]: state collected from the data and a pure search over it. Quark bugs are
//! reproduced and listed as quirks; `.fixed` variants correct the percentile tail swap and the
//! MSE search (with aligned histogram merging).

pub mod bfp;
pub mod config;
pub mod dtype;
pub mod histogram;
pub mod histogram_pro;
pub mod kernels;
pub mod minmax;
pub mod mse;
pub mod mx;
pub mod percentile;
pub mod placeholder;
pub mod pow2;
pub mod qdq_kernel;
pub mod qparams;
pub mod spec;

use crate::derivation::{self, Step};
use crate::observer::{Family, Granularity, ObserverKind, ObserverSpec, Preset, QParams};
use crate::params::Params;
use qparams::ScaleZp;
use spec::QuarkConfig;

/// The Quark version reproduced.
pub const VERSION: &str = "0.13";

/// `torch.aminmax` of a non-empty slice (NaN propagates, ±inf count). Eight independent lanes
/// let the reduction vectorise.
pub fn aminmax(data: &[f32]) -> (f32, f32) {
    let mut lo = [f32::INFINITY; 8];
    let mut hi = [f32::NEG_INFINITY; 8];
    let mut nan = [false; 8];
    let chunks = data.chunks_exact(8);
    let rest = chunks.remainder();
    for chunk in chunks {
        for k in 0..8 {
            let v = chunk[k];
            nan[k] |= v.is_nan();
            lo[k] = if v < lo[k] { v } else { lo[k] };
            hi[k] = if v > hi[k] { v } else { hi[k] };
        }
    }
    for (k, &v) in rest.iter().enumerate() {
        nan[k] |= v.is_nan();
        lo[k] = if v < lo[k] { v } else { lo[k] };
        hi[k] = if v > hi[k] { v } else { hi[k] };
    }
    if nan.iter().any(|&n| n) {
        return (f32::NAN, f32::NAN);
    }
    let lo = lo.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = hi.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    (lo, hi)
}

/// QParams of a Quark spec from scales/zero points and the min/max buffers; `step` is the
/// derivation's step that formed them (its values get the scales and zero points).
pub fn build_qparams(
    spec: &QuarkConfig,
    (scale, zero_point): ScaleZp,
    min_val: Vec<f32>,
    max_val: Vec<f32>,
    step: impl FnOnce() -> Step,
) -> QParams {
    derivation::record_qparams(step, &min_val, &max_val, &scale, &zero_point);
    QParams {
        scale,
        zero_point,
        grid: spec.dtype.grid(),
        axis: None,
        min_val,
        max_val,
        clip_range: None,
        amax: None,
        extra: Default::default(),
        notes: Vec::new(),
    }
}

const SYMMETRIC_127_5: &str =
    "symmetric int scales divide amax by (qmax − qmin)/2 = 127.5 for int8, so +amax maps to 127.5 and is clipped to 127";
const LEFT_ALIGNED_MERGE: &str =
    "histogram merging adds the old counts left-aligned (hist[:old] += old) even when the range grew to the left, and rebuilds the edges with arange (which can drop the old last edge)";

fn spec<K: ObserverKind>(
    id: &'static str,
    granularity: Granularity,
    summary: &'static str,
) -> ObserverSpec {
    ObserverSpec::of::<K>(id, Family::Quark, VERSION, granularity, summary)
}

/// The Quark observers.
pub fn observers() -> Vec<ObserverSpec> {
    use Granularity::*;
    vec![
        spec::<minmax::PerTensorMinMax>(
            "quark.PerTensorMinMaxObserver",
            PerTensor,
            "running min/max of the whole tensor → int, fp8 or fp4 scale (symmetric int: amax/127.5)",
        )
        .quirk(SYMMETRIC_127_5),
        spec::<minmax::PerChannelMinMax>(
            "quark.PerChannelMinMaxObserver",
            PerChannel,
            "running min/max per channel along ch_axis",
        )
        .quirk(SYMMETRIC_127_5)
        .quirk("a batch with a different number of channels silently restarts the statistics"),
        spec::<minmax::PerGroupMinMax>(
            "quark.PerGroupMinMaxObserver",
            PerGroup,
            "min/max per group of group_size elements along ch_axis (weights)",
        )
        .quirk(SYMMETRIC_127_5)
        .quirk("no accumulation over batches: every batch overwrites min/max (the last batch wins)"),
        spec::<histogram::PerTensorHistogram>(
            "quark.PerTensorHistogramObserver",
            PerTensor,
            "collects a 2048-bin histogram (|x| when symmetric); its qparams are Quark's defaults",
        )
        .quirk("never sets min_val/max_val, so calculate_qparams returns the defaults scale 1.0, zero point 0 (fp8: eps)")
        .quirk(LEFT_ALIGNED_MERGE),
        spec::<percentile::PerTensorPercentile<false>>(
            "quark.PerTensorPercentileObserver",
            PerTensor,
            "4200-bin histogram without zeros; range at the percentile of the cdf (left bin edge)",
        )
        .quirk("asymmetric: the quantiles are swapped — max is taken where the cdf first reaches (100 − p)/200 (the low tail) and min where it is ≤ 1 − that (bin 0)")
        .quirk("percentile is an instance attribute (default 99.99999999), not part of Quark's configuration")
        .quirk(LEFT_ALIGNED_MERGE),
        spec::<percentile::PerTensorPercentile<true>>(
            "quark.PerTensorPercentileObserver.fixed",
            PerTensor,
            "percentile observer with the asymmetric tails the right way round and aligned histogram merging",
        )
        .corrects("quark.PerTensorPercentileObserver"),
        spec::<mse::QuarkMse>(
            "quark.PerTensorMSEObserver",
            PerTensor,
            "2048-bin histogram; amax = the bin centre with the least fake-quantization MSE, min 0",
        )
        .quirk("start_bin defaults to 2045: with 2048 bins only the last 3 bin centres are tried")
        .quirk("min is forced to 0, also for asymmetric configurations")
        .quirk("fp8: the int64 zero min turns eps into 0, so an all-zero tensor gets scale 0")
        .quirk(LEFT_ALIGNED_MERGE),
        spec::<mse::FixedMse>(
            "quark.PerTensorMSEObserver.fixed",
            PerTensor,
            "MSE observer searching from bin 128 (as the calibrator it follows) with aligned histogram merging",
        )
        .corrects("quark.PerTensorMSEObserver"),
        spec::<histogram_pro::PerTensorHistogramPro>(
            "quark.PerTensorHistogramObserverPro",
            PerTensor,
            "PyTorch's HistogramObserver (256 bins, L2 search) with Quark's dtype ranges",
        )
        .quirk("upsample_rate is accepted but ignored (torch ≥ 2.5 removed the argument)"),
        spec::<pow2::PowOf2MinMax>(
            "quark.PerTensorPowOf2MinMaxObserver",
            PerTensor,
            "min/max range → power-of-two scale 2^−round(−log2 s); most common (scale, zp) of the calls",
        )
        .quirk("returns the most common of every (scale, zero point) ever computed, so the result depends on how often qparams were asked for"),
        spec::<pow2::PowOf2MinMse>(
            "quark.PerTensorPowOf2MinMSEObserver",
            PerTensor,
            "power-of-two scale: the best of 2^−(pos−2..pos+2) by squared error on the last batch",
        )
        .quirk("the squared-error search sees only the last batch, and keeps the zero point of the min/max scale for every candidate")
        .quirk("returns the most common of every (scale, zero point) ever computed"),
        spec::<mx::PerBlockMx>(
            "quark.PerBlockMXObserver",
            PerBlock,
            "OCP MX: one E8M0 power-of-two scale per block of 32 (even/floor/ceil), fp8/fp6/fp4 elements",
        ),
        spec::<bfp::PerBlockBfp>(
            "quark.PerBlockBFPObserver",
            PerBlock,
            "block floating point: shared exponent per block, int8 mantissas, exponent raised when a mantissa would reach 128",
        )
        .quirk("the running amax of a block is doubled in every batch in which one of its values overflows"),
        spec::<placeholder::Placeholder>(
            "quark.PlaceholderObserver",
            PassThrough,
            "no statistics and no qparams: float16/bfloat16 is a cast there and back",
        ),
    ]
}

fn preset(name: &'static str, observer: &'static str, params: Params, doc: &'static str) -> Preset {
    Preset {
        name,
        observer,
        params,
        doc,
    }
}

/// Quark's data-type specs (`quark.torch.quantization.config.config`) as presets.
pub fn presets() -> Vec<Preset> {
    let p = Params::new;
    vec![
        preset(
            "Int8PerTensorSpec",
            "quark.PerTensorMinMaxObserver",
            p().with("dtype", "int8").with("symmetric", true),
            "Int8PerTensorSpec(observer_method=\"min_max\"): symmetric int8, static",
        ),
        preset(
            "Uint8PerTensorSpec",
            "quark.PerTensorMinMaxObserver",
            p().with("dtype", "uint8").with("symmetric", false),
            "Uint8PerTensorSpec(observer_method=\"min_max\"): asymmetric uint8, static",
        ),
        preset(
            "Int8PerChannelSpec",
            "quark.PerChannelMinMaxObserver",
            p().with("dtype", "int8")
                .with("symmetric", false)
                .with("ch_axis", 0),
            "Int8PerChannelSpec(ch_axis=0): asymmetric int8 per output channel",
        ),
        preset(
            "Int4PerGroupSpec",
            "quark.PerGroupMinMaxObserver",
            p().with("dtype", "int4")
                .with("symmetric", true)
                .with("ch_axis", 1)
                .with("group_size", 128),
            "Int4PerGroupSpec(ch_axis=1, group_size=128): symmetric int4 weight groups",
        ),
        preset(
            "FP8E4M3PerTensorSpec",
            "quark.PerTensorMinMaxObserver",
            p().with("dtype", "fp8_e4m3"),
            "FP8E4M3PerTensorSpec(observer_method=\"min_max\"): amax/448",
        ),
        preset(
            "OCP_MXFP4Spec",
            "quark.PerBlockMXObserver",
            p().with("dtype", "fp4").with("ch_axis", -1),
            "OCP_MXFP4Spec(ch_axis=-1): blocks of 32, E8M0 scales, even rounding, dynamic",
        ),
        preset(
            "OCP_MXFP6E2M3Spec",
            "quark.PerBlockMXObserver",
            p().with("dtype", "fp6_e2m3").with("ch_axis", -1),
            "OCP_MXFP6E2M3Spec(ch_axis=-1)",
        ),
        preset(
            "OCP_MXFP6E3M2Spec",
            "quark.PerBlockMXObserver",
            p().with("dtype", "fp6_e3m2").with("ch_axis", -1),
            "OCP_MXFP6E3M2Spec(ch_axis=-1)",
        ),
        preset(
            "OCP_MXFP8E4M3Spec",
            "quark.PerBlockMXObserver",
            p().with("dtype", "fp8_e4m3").with("ch_axis", -1),
            "OCP_MXFP8E4M3Spec(ch_axis=-1)",
        ),
        preset(
            "OCP_MXFP8E5M2Spec",
            "quark.PerBlockMXObserver",
            p().with("dtype", "fp8_e5m2").with("ch_axis", -1),
            "OCP_MXFP8E5M2Spec(ch_axis=-1)",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_observer_builds_with_its_defaults() {
        for spec in observers() {
            let built = spec.resolve(&Params::new());
            assert!(built.is_ok(), "{}: {:?}", spec.id, built.err());
        }
        assert_eq!(aminmax(&[1.0, -2.0, 3.0]), (-2.0, 3.0));
        assert!(aminmax(&[1.0, f32::NAN]).0.is_nan());
    }

    #[test]
    fn every_preset_resolves() {
        for p in presets() {
            let spec = crate::registry::find(p.observer).unwrap();
            spec.resolve(&p.params)
                .unwrap_or_else(|e| panic!("{}: {e}", p.name));
        }
    }

    #[test]
    fn out_of_range_parameters_are_refused_with_their_name() {
        let refused = |id: &str, params: Params, word: &str| {
            let spec = crate::registry::find(id).unwrap();
            let err = spec
                .resolve(&params)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(word), "{id}: `{err}` should mention {word}");
        };
        let pct = "quark.PerTensorPercentileObserver";
        refused(pct, Params::new().with("percentile", 100.5), "percentile");
        refused(pct, Params::new().with("bins", 0), "bins");
        refused(pct, Params::new().with("dtype", "fp4"), "dtype");
        refused(
            "quark.PerGroupMinMaxObserver",
            Params::new().with("group_size", 0),
            "group_size",
        );
        refused(
            "quark.PerChannelMinMaxObserver",
            Params::new().with("ch_axis", 99),
            "ch_axis",
        );
        refused(
            "quark.PerBlockMXObserver",
            Params::new().with("scale_calculation_mode", "round"),
            "scale_calculation_mode",
        );
        refused(
            "quark.PerBlockMXObserver",
            Params::new().with("dtype", "int8"),
            "dtype",
        );
        refused(
            "quark.PerTensorMinMaxObserver",
            Params::new().with("symmetric", "yes"),
            "symmetric",
        );
        refused(
            "quark.PerTensorMSEObserver",
            Params::new().with("stride", 0),
            "stride",
        );
        refused(
            "quark.PerTensorPowOf2MinMaxObserver",
            Params::new().with("dtype", "fp8_e4m3"),
            "dtype",
        );
        refused(
            "quark.PlaceholderObserver",
            Params::new().with("dtype", "int8"),
            "dtype",
        );
    }
}
