//! NVIDIA Model Optimizer 0.47 calibrators (`modelopt.torch.quantization.calib`): `MaxCalibrator`
//! and `HistogramCalibrator` with its three `compute_amax` methods.
//!
//! ModelOpt's native result is an **amax**: the quantizer maps `±amax` to `±max_bound`
//! (`2^(num_bits − 1 + unsigned) − 1`, 127 for int8; 448 for FP8 E4M3). quantscope reports it in
//! `QParams::amax` and, for comparison with other frameworks, `scale = amax/max_bound` with zero
//! point 0. Fake quantization is ModelOpt's own (`fake_tensor_quant` / `scaled_e4m3`).
//!
//! `num_bits`, `unsigned` and `narrow_range` are quantizer attributes (`quant.rs`):
//! they shape the grid of the fake quantization (and `num_bits`/`unsigned` the entropy and MSE
//! searches), never what is collected, so they are search parameters. `num_bits` is an integer
//! or a float format `[E, M]`: `[4, 3]` (FP8 E4M3) and `[2, 1]` (FP4 E2M1, which ModelOpt's
//! configuration accepts but its per-tensor quantizer refuses) — see `quant::FLOAT_FORMATS`.
//! What is collected depends on `axis` (MaxCalibrator) and on `num_bins`, `skip_zeros`,
//! `torch_hist` (HistogramCalibrator); `compute_amax`'s keyword arguments only search.

mod collect;
mod entropy;
mod histogram;
mod max;
mod mse;
mod quant;

use crate::observer::{Family, Granularity, ObserverKind, ObserverSpec, Preset};
use histogram::HistogramCalibrator;

/// The framework version reproduced.
pub const VERSION: &str = "nvidia-modelopt 0.47.0";

fn spec<K: ObserverKind>(
    id: &'static str,
    granularity: Granularity,
    summary: &'static str,
) -> ObserverSpec {
    ObserverSpec::of::<K>(id, Family::Modelopt, VERSION, granularity, summary)
}

/// The ModelOpt calibrators.
pub fn observers() -> Vec<ObserverSpec> {
    vec![
        spec::<max::Max>(
            "modelopt.MaxCalibrator",
            Granularity::PerChannel,
            "amax = running max |x|, per tensor or per channel along `axis`; scale = amax/(2^(b−1) − 1)",
        )
        .quirk("An axis outside the tensor's dimensions silently reduces everything (one per-tensor amax)"),
        spec::<HistogramCalibrator<histogram::Entropy>>(
            "modelopt.HistogramCalibrator.entropy",
            Granularity::PerTensor,
            "amax minimising the KL divergence between the |x| histogram and its 2^(b−1)-level quantization (last minimum)",
        )
        .quirk("Picks the LAST of equal minima, and replaces the zero bin's count with its neighbour's")
        .quirk("With torch_hist the histogram starts at 0; with numpy it starts at min|x| of the first batch"),
        spec::<HistogramCalibrator<histogram::Mse<false>>>(
            "modelopt.HistogramCalibrator.mse",
            Granularity::PerTensor,
            "amax minimising the histogram-weighted MSE of fake-quantized bin centres — as broken in 0.47",
        )
        .quirk("ModelOpt 0.47 passes num_bits where fake_tensor_quant now expects `bias`: every quantized centre becomes ≈ amax + num_bits, so the search returns centres[start_bin] for data below num_bits; FP8 (num_bits=[4, 3]) raises TypeError"),
        spec::<HistogramCalibrator<histogram::Mse<true>>>(
            "modelopt.HistogramCalibrator.mse.fixed",
            Granularity::PerTensor,
            "amax minimising the histogram-weighted MSE of fake-quantized bin centres (the intended call)",
        )
        .corrects("modelopt.HistogramCalibrator.mse"),
        spec::<HistogramCalibrator<histogram::Percentile>>(
            "modelopt.HistogramCalibrator.percentile",
            Granularity::PerTensor,
            "amax = left edge of the |x| histogram bin where the cdf reaches the percentile",
        ),
    ]
}

/// ModelOpt has no named calibrator presets here.
pub fn presets() -> Vec<Preset> {
    Vec::new()
}
