//! Every reference case produced by AMD Quark 0.13 (`golden/quark/cases.json`) must pass within
//! its tolerance: the observers through the engine (with Quark-specific fields checked here),
//! the ONNX fine-tuning quantizers and the non-scaled MX-int8/BFP16 kernels directly.
mod common;

use common::family_fields::{check_bin_edges, check_extra_numbers};
use common::{check_close, f64s, numbers, qdq_metrics, Case};
use quantscope::engine::Run;
use quantscope::formats::{bfp, half_cast::HalfType, mx};
use quantscope::observer::Grid;
use quantscope::quantizers::quark_onnx::{
    round_half_to_even, AdaroundIntQuantizer, FpQuantizer, IntQuantizer, QuantParams,
};
use quantscope::tensor::{read_tensors, Tensor};
use serde_json::Value;

#[test]
fn quark_golden_cases() {
    common::run_family("quark", |case| match case.observer.as_str() {
        "quark.INTQuantizer" => int_quantizer(case),
        "quark.FPQuantizer" => fp_quantizer(case),
        "quark.AdaroundINTQuantizer" => adaround(case),
        "quark.RoundHalfToEven" => round_half(case),
        "quark.non_scaled_fake_quantize.mx_int8" => non_scaled(case, NonScaled::MxInt8),
        "quark.non_scaled_fake_quantize.bfp16" => non_scaled(case, NonScaled::Bfp16),
        _ => observer_case(case),
    });
}

fn load_npy(case: &Case, name: &str) -> Result<Tensor, String> {
    let path = common::golden_dir().join("quark").join(name);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut t = read_tensors(&bytes, name).map_err(|e| e.to_string())?;
    let _ = case;
    Ok(t.remove(0).tensor)
}

/// `qdq_metrics` of the generator: mse, max |err|, sqnr (float64).
fn check_metrics(case: &Case, x: &[f32], y: &[f32]) -> Result<(), String> {
    match case.expected.get("qdq") {
        Some(want) => qdq_metrics::check_metrics(
            &qdq_metrics::qdq_metrics(x, y),
            want,
            "qdq.",
            case.tolerance_for("qdq"),
        ),
        None => Ok(()),
    }
}

fn check_values(case: &Case, field: &str, got: &[f32]) -> Result<(), String> {
    match case.expected.get(field) {
        Some(w) => check_close(field, &f64s(got), &numbers(w), case.tolerance_for(field)),
        None => Err(format!("{field}: missing in the case")),
    }
}

fn observer_case(case: &Case) -> Result<(), String> {
    let batches = case.load_batches()?;
    let Some(report) = common::run_standard_report(case)? else {
        return Ok(());
    };
    let observer = Run::new(&case.observer, case.params.clone(), &batches)
        .and_then(|run| run.instance())
        .map_err(|e| e.to_string())?;
    let exp = &case.expected;
    let q = report.qparams.as_ref().ok_or("no qparams")?;
    if exp.get("min_max_never_updated") == Some(&Value::Bool(true))
        && !(q.min_val.is_empty() && q.max_val.is_empty())
    {
        return Err("min/max should never be updated".into());
    }
    if exp.get("qparams_is_none") == Some(&Value::Bool(true))
        && !(q.scale.is_empty() && q.zero_point.is_empty())
    {
        return Err("qparams should be None".into());
    }
    if exp.get("passthrough") == Some(&Value::Bool(true)) {
        // The observer returns its input; what Quark then does with float16 is a cast.
        match &q.grid {
            Grid::Float { format, .. } if format == "float16" => {}
            other => return Err(format!("placeholder grid {other:?}")),
        }
    }
    check_extra_numbers(case, q, &["num_bins_final"], |_| (0.0, 0.0))?;
    check_bin_edges(case, &report, case.tolerance_for("bin_edges"))?;
    check_extra_numbers(case, q, &["observed_min", "observed_max"], |field| {
        case.tolerance_for(field)
    })?;
    if let Some(name) = exp.get("qdq_output").and_then(Value::as_str) {
        let want = load_npy(case, name)?;
        let x = batches.first().ok_or("no batch")?;
        let got = observer
            .fake_quantize(x, q)
            .map_err(|e| format!("fake_quantize: {e}"))?;
        check_close(
            "qdq_output",
            &f64s(&got.data),
            &f64s(&want.data),
            (0.0, 0.0),
        )?;
    }
    Ok(())
}

fn number_or_list(v: Option<&Value>) -> Vec<f32> {
    v.map(numbers)
        .unwrap_or_default()
        .into_iter()
        .map(|x| x as f32)
        .collect()
}

fn quant_params(case: &Case, min_q: f32, max_q: f32) -> Result<QuantParams, String> {
    let p = &case.params.0;
    QuantParams::new(
        number_or_list(p.get("scale")),
        number_or_list(p.get("zero_point")),
        min_q,
        max_q,
        p.get("ch_axis").and_then(Value::as_i64).unwrap_or(0),
    )
    .map_err(|e| e.to_string())
}

fn int_bounds(case: &Case) -> Result<(f32, f32), String> {
    let get = |k: &str| {
        case.params
            .0
            .get(k)
            .and_then(Value::as_f64)
            .map(|v| v as f32)
            .ok_or_else(|| format!("{k} missing"))
    };
    Ok((get("min_q")?, get("max_q")?))
}

fn first_batch(case: &Case) -> Result<Tensor, String> {
    case.load_batches()?
        .into_iter()
        .next()
        .ok_or_else(|| "no batch".to_string())
}

fn int_quantizer(case: &Case) -> Result<(), String> {
    let x = first_batch(case)?;
    let (lo, hi) = int_bounds(case)?;
    let q = IntQuantizer::new(quant_params(case, lo, hi)?);
    check_values(case, "scale", &q.params.scale)?;
    check_values(case, "zero_point", &q.params.zero_point)?;
    let y = q.quantize_dequantize(&x).map_err(|e| e.to_string())?;
    check_values(case, "qdq_values", &y.data)?;
    check_values(
        case,
        "quantized",
        &q.quantize(&x).map_err(|e| e.to_string())?.data,
    )?;
    check_metrics(case, &x.data, &y.data)
}

fn fp_quantizer(case: &Case) -> Result<(), String> {
    let mut x = first_batch(case)?;
    x.data.iter_mut().for_each(|v| *v *= 1000.0);
    let t = case
        .params
        .0
        .get("quant_type")
        .and_then(Value::as_str)
        .and_then(HalfType::from_name)
        .ok_or("quant_type")?;
    let q = FpQuantizer::new(quant_params(case, -t.max(), t.max())?, t);
    check_values(case, "scale", &q.params.scale)?;
    let y = q.quantize_dequantize(&x).map_err(|e| e.to_string())?;
    check_values(case, "qdq_values", &y.data)?;
    check_metrics(case, &x.data, &y.data)
}

fn adaround(case: &Case) -> Result<(), String> {
    let x = first_batch(case)?;
    let (lo, hi) = int_bounds(case)?;
    let mut q = AdaroundIntQuantizer::new(quant_params(case, lo, hi)?);
    let y = q.quantize_dequantize(&x).map_err(|e| e.to_string())?;
    let alpha = q.alpha.as_ref().ok_or("alpha not initialised")?;
    check_values(case, "alpha_first8", &alpha[..8.min(alpha.len())])?;
    check_values(case, "qdq_values", &y.data)?;
    check_metrics(case, &x.data, &y.data)
}

fn round_half(case: &Case) -> Result<(), String> {
    let input = number_or_list(case.expected.get("input_values"));
    let got: Vec<f32> = input.iter().map(|&v| round_half_to_even(v)).collect();
    check_values(case, "rounded", &got)
}

enum NonScaled {
    MxInt8,
    Bfp16,
}

fn non_scaled(case: &Case, which: NonScaled) -> Result<(), String> {
    let x = first_batch(case)?;
    let axis = case
        .params
        .0
        .get("ch_axis")
        .and_then(Value::as_i64)
        .unwrap_or(-1);
    let block = case
        .params
        .0
        .get("group_size")
        .and_then(Value::as_u64)
        .unwrap_or(32) as usize;
    let y = match which {
        NonScaled::MxInt8 => {
            let mode = case
                .params
                .0
                .get("scale_calculation_mode")
                .and_then(Value::as_str)
                .unwrap_or("even");
            let mode = quantscope::formats::e8m0::ScaleRounding::from_name(mode).ok_or("mode")?;
            mx::fake_quantize(&x.data, &x.shape, axis, block, mx::MxElement::Int8, mode)
        }
        NonScaled::Bfp16 => {
            bfp::fake_quantize(&x.data, &x.shape, axis, bfp::BFP16_BLOCK, bfp::BFP16)
        }
    }
    .map_err(|e| e.to_string())?;
    if let Some(name) = case.expected.get("qdq_output").and_then(Value::as_str) {
        let want = load_npy(case, name)?;
        check_close("qdq_output", &f64s(&y), &f64s(&want.data), (0.0, 0.0))?;
    }
    check_metrics(case, &x.data, &y)
}
