//! Every reference case of ggml's C quantizers (`golden/ggml/cases.json`, ggml-org/ggml
//! d99724f2 = llama.cpp d3cf1f14): the raw blocks, the scales decoded from them and the
//! dequantized values must match bit for bit (`−0.0 == +0.0`), and the error metrics within
//! rtol 1e-6 — both from the kernels directly and through the quantizer registry.
mod common;

use common::{check_close, f64s, load_npy, qdq_metrics, Case};
use quantscope::codec;
use quantscope::formats::ggml::{self, GgmlType};
use quantscope::params::Params;
use serde_json::Value;

const FAMILY: &str = "ggml";

/// The numbers of a JSON value, nested lists flattened in order.
fn flat_numbers(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(items) => items.iter().flat_map(flat_numbers).collect(),
        other => vec![other.as_f64().unwrap_or(f64::NAN)],
    }
}

/// The imatrix named by the case (`params.imatrix`: a path, or null).
fn imatrix(case: &Case) -> Result<Option<Vec<f32>>, String> {
    match case.params.get("imatrix") {
        Some(Value::String(path)) => Ok(Some(load_npy(FAMILY, path)?.data)),
        _ => Ok(None),
    }
}

/// The float64 metrics of the generator (`common_data.qdq_metrics`, plus the imatrix-weighted
/// MSE over rows).
fn check_metrics(case: &Case, x: &[f32], y: &[f32], im: Option<&[f32]>) -> Result<(), String> {
    let exp = &case.expected;
    let mut fields = qdq_metrics::qdq_metrics(x, y);
    if let Some(im) = im {
        let cols = im.len();
        let weighted: f64 = x
            .iter()
            .zip(y)
            .enumerate()
            .map(|(i, (&a, &b))| (b as f64 - a as f64).powi(2) * im[i % cols] as f64)
            .sum();
        let total: f64 = im.iter().map(|&w| w as f64).sum();
        fields.push((
            "imatrix_weighted_mse",
            weighted / (total * (x.len() / cols) as f64),
        ));
    }
    qdq_metrics::check_metrics(&fields, exp, "", case.field_tolerance("metrics"))
}

/// The per-block scales the case lists, against those decoded from our blocks.
fn check_scales(case: &Case, ty: GgmlType, blocks: &[u8]) -> Result<(), String> {
    let exp = &case.expected;
    let mut d = Vec::new();
    let mut min = Vec::new();
    let mut sub_scales = Vec::new();
    let mut sub_mins = Vec::new();
    for b in blocks.chunks(ty.block_bytes()) {
        let s = ggml::block_scales(ty, b).map_err(|e| e.to_string())?;
        d.push(s.d as f64);
        min.extend(s.min.map(|m| m as f64));
        sub_scales.extend(s.sub_scales.iter().map(|&v| v as f64));
        sub_mins.extend(s.sub_mins.iter().map(|&v| v as f64));
    }
    let exact = (0.0, 0.0);
    let pairs: [(&str, &Vec<f64>); 6] = [
        ("d", &d),
        ("e", &d),
        ("m", &min),
        ("dmin", &min),
        ("sub_scales", &sub_scales),
        ("sub_mins", &sub_mins),
    ];
    for (field, got) in pairs {
        if let Some(want) = exp.get(field) {
            check_close(field, got, &flat_numbers(want), exact)?;
        }
    }
    Ok(())
}

fn run_case(case: &Case) -> Result<(), String> {
    let name = case.observer.strip_prefix("ggml.").unwrap_or_default();
    let ty = GgmlType::from_name(name).ok_or_else(|| format!("unknown type {name}"))?;
    let x = case.load_batches()?.remove(0);
    let im = imatrix(case)?;
    let exp = &case.expected;

    let blocks = ggml::quantize(ty, &x.data, im.as_deref()).map_err(|e| e.to_string())?;
    let want_blocks = load_npy(FAMILY, exp["blocks"].as_str().unwrap_or_default())?;
    let want_bytes: Vec<u8> = want_blocks.data.iter().map(|&v| v as u8).collect();
    if blocks != want_bytes {
        let at = blocks
            .iter()
            .zip(&want_bytes)
            .position(|(a, b)| a != b)
            .unwrap_or(blocks.len().min(want_bytes.len()));
        return Err(format!(
            "blocks differ first at byte {at} (block {}, byte {} of {}); {} vs {} bytes",
            at / ty.block_bytes(),
            at % ty.block_bytes(),
            ty.block_bytes(),
            blocks.len(),
            want_bytes.len()
        ));
    }
    check_scales(case, ty, &blocks)?;

    let y = ggml::dequantize(ty, &blocks).map_err(|e| e.to_string())?;
    let want = load_npy(FAMILY, exp["dequantized"].as_str().unwrap_or_default())?;
    check_close(
        "dequantized",
        &f64s(&y),
        &f64s(&want.data),
        case.field_tolerance("dequantized"),
    )?;
    if let Some(n) = exp.get("negative_zero_count").and_then(Value::as_u64) {
        let got = y
            .iter()
            .filter(|v| **v == 0.0 && v.is_sign_negative())
            .count();
        if got as u64 != n {
            return Err(format!("negative_zero_count: got {got}, expected {n}"));
        }
    }
    check_metrics(case, &x.data, &y, im.as_deref())?;
    via_registry(case, &x, im, &blocks, &want.data)
}

/// The same case through the codec registry (`ggml.<TYPE>` with `{"imatrix": [...]}`): the
/// codec stores ggml's block bytes and decodes them to its values bit for bit, and the metrics
/// `evaluate` reports are the case's within its tolerance.
fn via_registry(
    case: &Case,
    x: &quantscope::tensor::Tensor,
    im: Option<Vec<f32>>,
    want_blocks: &[u8],
    want: &[f32],
) -> Result<(), String> {
    let mut params = Params::new();
    if let Some(im) = im {
        params = params.with("imatrix", im);
    }
    let spec = codec::find(&case.observer).map_err(|e| e.to_string())?;
    let quantizer = spec.build(&params, &x.shape).map_err(|e| e.to_string())?;
    let out = codec::quantize_dequantize(quantizer.as_ref(), x).map_err(|e| e.to_string())?;
    if out.encoded.u8s("blocks").map_err(|e| e.to_string())? != want_blocks {
        return Err("the codec's stored blocks are not ggml's".into());
    }
    check_close(
        "registry dequantized",
        &f64s(&out.values),
        &f64s(want),
        case.field_tolerance("dequantized"),
    )?;
    let result = codec::evaluate(spec.id, &params, x).map_err(|e| e.to_string())?;
    let tol = case.field_tolerance("metrics");
    let exp = &case.expected;
    for (field, got) in [
        ("mse", Some(result.metrics.mse)),
        ("max_abs_err", Some(result.metrics.max_abs_err)),
        ("sqnr_db", result.metrics.sqnr_db),
    ] {
        if let Some(w) = exp.get(field).and_then(Value::as_f64) {
            let got = got.ok_or_else(|| format!("registry {field}: undefined"))?;
            check_close(&format!("registry {field}"), &[got], &[w], tol)?;
        }
    }
    let ty = GgmlType::from_name(&case.observer["ggml.".len()..]).unwrap_or(GgmlType::Q8_0);
    if result.bits_per_value != ty.bits_per_value() {
        return Err(format!("bits_per_value {}", result.bits_per_value));
    }
    Ok(())
}

#[test]
fn ggml_golden_cases() {
    common::run_family(FAMILY, run_case);
}
