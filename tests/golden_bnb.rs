//! Every reference case of bitsandbytes 0.50.2 on CPU (`golden/bnb/cases.json`): codes, absmax
//! and dequantized values bit for bit (`−0.0 == +0.0`), double quantization within the case's
//! tolerances, and the error metrics — from the kernels directly and through the quantizer
//! registry. The code books are checked against the tables the generator recorded.
mod common;

use common::{check_close, f64s, load_npy, qdq_metrics, Case};
use quantscope::codec::{self, bnb::Blockwise8Args, bnb::Nf4Args};
use quantscope::formats::bnb::{self, blockwise8, codes, double::DoubleQuant, QuantType};
use quantscope::params::{ParamSet, Params};
use serde_json::Value;

const FAMILY: &str = "bnb";

fn u8s(t: &quantscope::tensor::Tensor) -> Vec<u8> {
    t.data.iter().map(|&v| v as u8).collect()
}

fn expected_npy(case: &Case, field: &str) -> Result<quantscope::tensor::Tensor, String> {
    let path = case.expected[field]
        .as_str()
        .ok_or_else(|| format!("{field}: no file in the case"))?;
    load_npy(FAMILY, path)
}

/// The generator's float64 metrics (`common_data.qdq_metrics`).
fn check_metrics(case: &Case, x: &[f32], y: &[f32]) -> Result<(), String> {
    qdq_metrics::check_metrics(
        &qdq_metrics::qdq_metrics(x, y),
        &case.expected,
        "",
        case.field_tolerance("metrics"),
    )
}

fn check_double(case: &Case, d: &DoubleQuant) -> Result<(), String> {
    let exp = &case.expected;
    // The case allows rtol 1e-6 for implementations that sum in another order; quantscope
    // reproduces torch's order, so the offset (and everything after it) is exact.
    check_close(
        "absmax_offset",
        &[d.offset as f64],
        &[exp["absmax_offset"].as_f64().unwrap_or(f64::NAN)],
        (0.0, 0.0),
    )?;
    let codes = expected_npy(case, "absmax_codes")?;
    if d.codes != u8s(&codes) {
        return Err("absmax_codes differ".into());
    }
    check_close(
        "state2_absmax",
        &f64s(&d.absmax2),
        &common::numbers(&exp["state2_absmax"]),
        case.field_tolerance("state2_absmax"),
    )?;
    if exp["state2_blocksize"].as_u64() != Some(d.blocksize as u64) {
        return Err(format!("state2_blocksize: got {}", d.blocksize));
    }
    check_close(
        "absmax_dequantized",
        &f64s(&d.absmax_dequantized),
        &common::numbers(&exp["absmax_dequantized"]),
        case.field_tolerance("absmax_dequantized"),
    )
}

fn check_common(case: &Case, x: &[f32], y: &[f32], absmax: &[f32]) -> Result<(), String> {
    let want = expected_npy(case, "dequantized")?;
    check_close(
        "dequantized",
        &f64s(y),
        &f64s(&want.data),
        case.field_tolerance("dequantized"),
    )?;
    check_close(
        "absmax",
        &f64s(absmax),
        &common::numbers(&case.expected["absmax"]),
        case.field_tolerance("absmax"),
    )?;
    if let Some(n) = case.expected["negative_zero_count"].as_u64() {
        let got = y
            .iter()
            .filter(|v| **v == 0.0 && v.is_sign_negative())
            .count();
        if got as u64 != n {
            return Err(format!("negative_zero_count: got {got}, expected {n}"));
        }
    }
    check_metrics(case, x, y)
}

/// `p` without `quant_type` (which the case's id already names), so that the NF4 declaration
/// reads FP4 cases too.
fn without_quant_type(p: &Params) -> Params {
    let mut p = p.clone();
    p.0.remove("quant_type");
    p
}

fn run_case(case: &Case) -> Result<(), String> {
    let x = case.load_batches()?.remove(0);
    let p = &case.params;
    let last_dim_odd = x.shape.last().is_some_and(|d| d % 2 == 1);
    match case.observer.as_str() {
        "bnb.nf4" | "bnb.fp4" => {
            let qt = if case.observer == "bnb.nf4" {
                QuantType::Nf4
            } else {
                QuantType::Fp4
            };
            // The library's own keys, read through the format's declared parameters.
            let a = Nf4Args::from_params(&without_quant_type(p)).map_err(|e| e.to_string())?;
            let (blocksize, dq) = (a.blocksize as usize, a.compress_statistics);
            let q = bnb::quantize_4bit(&x.data, qt, blocksize, dq).map_err(|e| e.to_string())?;
            let want_codes = expected_npy(case, "codes")?;
            if q.packed != u8s(&want_codes) {
                let at = q
                    .packed
                    .iter()
                    .zip(u8s(&want_codes))
                    .position(|(a, b)| *a != b);
                return Err(format!("packed codes differ (first at byte {at:?})"));
            }
            if let Some(d) = &q.double {
                check_double(case, d)?;
            }
            check_common(case, &x.data, &q.dequantize(last_dim_odd), &q.absmax)?;
            via_registry(case, &x)
        }
        "bnb.blockwise8" => {
            let a = Blockwise8Args::from_params(p).map_err(|e| e.to_string())?;
            let (blocksize, nested) = (a.blocksize as usize, a.nested);
            let q =
                bnb::quantize_blockwise(&x.data, blocksize, nested).map_err(|e| e.to_string())?;
            let want_codes = expected_npy(case, "codes")?;
            if q.codes != u8s(&want_codes) {
                let at = q
                    .codes
                    .iter()
                    .zip(u8s(&want_codes))
                    .position(|(a, b)| *a != b);
                return Err(format!("codes differ (first at element {at:?})"));
            }
            if let Some(d) = &q.double {
                check_double(case, d)?;
            }
            check_common(case, &x.data, &q.dequantize(), &q.absmax)?;
            via_registry(case, &x)
        }
        other => Err(format!("unknown quantizer {other}")),
    }
}

/// Keys of the cases' `params` that describe the run rather than being arguments of
/// `quantize_4bit`/`quantize_blockwise`: the input dtype and what the library does inside
/// double quantization.
const DESCRIPTIVE: [&str; 3] = ["dtype", "nested_code", "nested_blocksize"];

/// The same case through the quantizer registry with the case's own (bitsandbytes) keys: the
/// dequantized values within the case's tolerance, the metrics `evaluate` reports.
fn via_registry(case: &Case, x: &quantscope::tensor::Tensor) -> Result<(), String> {
    let mut params = Params::new();
    for (k, v) in &case.params.0 {
        if !DESCRIPTIVE.contains(&k.as_str()) {
            params = params.with(k, v.clone());
        }
    }
    let spec = codec::find(&case.observer).map_err(|e| e.to_string())?;
    let quantizer = spec.build(&params, &x.shape).map_err(|e| e.to_string())?;
    let out = codec::quantize_dequantize(quantizer.as_ref(), x).map_err(|e| e.to_string())?;
    // What the codec stores is what bitsandbytes stores: the codes (4-bit: packed) bit for bit.
    let want_codes = expected_npy(case, "codes")?;
    if out.encoded.u8s("weight").map_err(|e| e.to_string())? != u8s(&want_codes) {
        return Err("the codec's stored codes are not bitsandbytes'".into());
    }
    let want = expected_npy(case, "dequantized")?;
    check_close(
        "registry dequantized",
        &f64s(&out.values),
        &f64s(&want.data),
        case.field_tolerance("dequantized"),
    )?;
    let result = codec::evaluate(spec.id, &params, x).map_err(|e| e.to_string())?;
    let tol = case.field_tolerance("metrics");
    for (field, got) in [
        ("mse", Some(result.metrics.mse)),
        ("max_abs_err", Some(result.metrics.max_abs_err)),
        ("sqnr_db", result.metrics.sqnr_db),
    ] {
        if let Some(w) = case.expected.get(field).and_then(Value::as_f64) {
            let got = got.ok_or_else(|| format!("registry {field}: undefined"))?;
            check_close(&format!("registry {field}"), &[got], &[w], tol)?;
        }
    }
    Ok(())
}

#[test]
fn bnb_golden_cases() {
    common::run_family(FAMILY, run_case);
}

/// The code books against the tables the generator dumped from bitsandbytes itself.
#[test]
fn code_books_are_bitsandbytes_own() {
    let path = common::golden_dir().join(FAMILY).join("cases.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let tables = &doc["tables"];
    let exact = (0.0, 0.0);
    check_close(
        "nf4",
        &f64s(&codes::nf4()),
        &common::numbers(&tables["nf4"]),
        exact,
    )
    .unwrap();
    check_close(
        "fp4",
        &f64s(&codes::fp4()),
        &common::numbers(&tables["fp4"]),
        exact,
    )
    .unwrap();
    let order: Vec<f64> = codes::sort_order(&codes::fp4())
        .iter()
        .map(|&i| i as f64)
        .collect();
    check_close(
        "fp4 order",
        &order,
        &common::numbers(&tables["fp4_sorted_order_used_by_bucketize"]),
        exact,
    )
    .unwrap();
    let map = load_npy(FAMILY, tables["dynamic_map"].as_str().unwrap()).unwrap();
    let ours = blockwise8::dynamic_code().code;
    for (i, (a, b)) in ours.iter().zip(&map.data).enumerate() {
        assert_eq!(
            a.to_bits(),
            b.to_bits(),
            "dynamic map [{i}]: {a:e} vs {b:e}"
        );
    }
}
