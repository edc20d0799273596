//! NVIDIA Model Optimizer 0.47 calibrators (`modelopt.torch.quantization.calib`): `MaxCalibrator`
//! and `HistogramCalibrator` with its three `compute_amax` methods.
//!
//! ModelOpt's native result is an **amax**: the quantizer maps `±amax` to `±max_bound`
//! (`2^(num_bits − 1 + unsigned) − 1`, 127 for int8; 448 for FP8 E4M3). quantscope reports it in
//! `QParams::amax` and, for comparison with other frameworks, `scale = amax/max_bound` with zero
//! point 0. Fake quantization is ModelOpt's own (`fake_tensor_quant` / `scaled_e4m3`).
//!
//! `num_bits`, `unsigned` and `narrow_range` are quantizer attributes: they shape the grid of the
//! fake quantization (and `num_bits`/`unsigned` the entropy and MSE searches).

mod collect;
mod entropy;
mod histogram;
mod max;
mod mse;
mod quant;
mod torch_ops;

pub use entropy::entropy_amax;
pub use mse::{mse_amax, percentile_amax, MseCall};
pub use quant::{round_e4m3fn, QuantConfig};

use crate::error::Result;
use crate::observer::{Family, Granularity, ObserverSpec, Preset};
use crate::params::{Bits, ParamSpec, Params};
use serde_json::Value;

/// The framework version reproduced.
pub const VERSION: &str = "nvidia-modelopt 0.47.0";

/// Check every declared parameter of `params` against `specs` (the registry does this too; the
/// observers repeat it for `retune`).
fn validate(params: &Params, specs: &[ParamSpec]) -> Result<Params> {
    for (k, v) in &params.0 {
        if let Some(spec) = specs.iter().find(|s| s.name == k) {
            spec.validate(v)?;
        }
    }
    Ok(params.clone())
}

fn quant_config(p: &Params) -> Result<QuantConfig> {
    Ok(QuantConfig {
        num_bits: p.opt_bits("num_bits")?.unwrap_or(Bits::Int(8)),
        unsigned: p.bool_or("unsigned", false)?,
        narrow_range: p.bool_or("narrow_range", true)?,
    })
}

fn quantizer_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::bits(
            "num_bits",
            1,
            16,
            &[[4, 3], [5, 2]],
            8,
            "integer bit width, or [4, 3] for FP8 E4M3",
        )
        .search_only(),
        ParamSpec::bool("unsigned", false, "unsigned grid 0..2^num_bits − 1").search_only(),
        ParamSpec::bool(
            "narrow_range",
            true,
            "signed grid −(2^(b−1) − 1)..2^(b−1) − 1 (otherwise down to −2^(b−1)); fake quantization only",
        )
        .search_only(),
    ]
}

fn max_params() -> Vec<ParamSpec> {
    let mut p = vec![ParamSpec::int(
        "axis",
        -64,
        63,
        Value::Null,
        "quantization axis (one amax per index along it); null = per tensor",
    )];
    p.extend(quantizer_params());
    p
}

fn histogram_params(method: &str) -> Vec<ParamSpec> {
    let mut p = vec![
        ParamSpec::int(
            "num_bins",
            1,
            1 << 20,
            2048,
            "histogram bins of |x| (grows with the data)",
        ),
        ParamSpec::bool(
            "skip_zeros",
            false,
            "leave exact zeros out of the histogram",
        ),
        ParamSpec::bool(
            "torch_hist",
            true,
            "bin with torch.histc from 0 (true) or np.histogram from min|x| (false)",
        ),
        ParamSpec::int(
            "axis",
            -64,
            63,
            Value::Null,
            "must stay null: histogram calibration is per tensor only (NotImplementedError)",
        ),
    ];
    match method {
        "percentile" => p.push(
            ParamSpec::float(
                "percentile",
                0.0,
                100.0,
                99.99,
                "share of |x| (in %) below amax",
            )
            .search_only(),
        ),
        _ => {
            p.push(
                ParamSpec::int("start_bin", 0, 1 << 24, 128, "first candidate bin").search_only(),
            );
            p.push(
                ParamSpec::int("stride", 1, 1 << 20, 1, "step between candidate bins")
                    .search_only(),
            );
        }
    }
    p.extend(quantizer_params());
    p
}

/// The ModelOpt calibrators.
pub fn observers() -> Vec<ObserverSpec> {
    vec![
        ObserverSpec::legacy(
            "modelopt.MaxCalibrator",
            Family::Modelopt,
            VERSION,
            Granularity::PerChannel,
            "amax = running max |x|, per tensor or per channel along `axis`; scale = amax/(2^(b−1) − 1)",
            max_params(),
            max::build,
        )
        .quirk("An axis outside the tensor's dimensions silently reduces everything (one per-tensor amax)"),
        ObserverSpec::legacy(
            "modelopt.HistogramCalibrator.entropy",
            Family::Modelopt,
            VERSION,
            Granularity::PerTensor,
            "amax minimising the KL divergence between the |x| histogram and its 2^(b−1)-level quantization (last minimum)",
            histogram_params("entropy"),
            histogram::build_entropy,
        )
        .quirk("Picks the LAST of equal minima, and replaces the zero bin's count with its neighbour's")
        .quirk("With torch_hist the histogram starts at 0; with numpy it starts at min|x| of the first batch"),
        ObserverSpec::legacy(
            "modelopt.HistogramCalibrator.mse",
            Family::Modelopt,
            VERSION,
            Granularity::PerTensor,
            "amax minimising the histogram-weighted MSE of fake-quantized bin centres — as broken in 0.47",
            histogram_params("mse"),
            histogram::build_mse,
        )
        .quirk("ModelOpt 0.47 passes num_bits where fake_tensor_quant now expects `bias`: every quantized centre becomes ≈ amax + num_bits, so the search returns centres[start_bin] for data below num_bits; FP8 (num_bits=[4, 3]) raises TypeError"),
        ObserverSpec::legacy(
            "modelopt.HistogramCalibrator.mse.fixed",
            Family::Modelopt,
            VERSION,
            Granularity::PerTensor,
            "amax minimising the histogram-weighted MSE of fake-quantized bin centres (the intended call)",
            histogram_params("mse.fixed"),
            histogram::build_mse_fixed,
        )
        .corrects("modelopt.HistogramCalibrator.mse"),
        ObserverSpec::legacy(
            "modelopt.HistogramCalibrator.percentile",
            Family::Modelopt,
            VERSION,
            Granularity::PerTensor,
            "amax = left edge of the |x| histogram bin where the cdf reaches the percentile",
            histogram_params("percentile"),
            histogram::build_percentile,
        ),
    ]
}

/// ModelOpt has no named calibrator presets here.
pub fn presets() -> Vec<Preset> {
    Vec::new()
}
