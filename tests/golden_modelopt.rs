//! Every reference case produced by NVIDIA ModelOpt 0.47.0 (`golden/modelopt/cases.json`) must
//! pass within its tolerance: the standard fields (amax, scale, zero point, histogram, qdq), plus
//! `num_bins_final` and the histogram's `bin_edges`.
mod common;

use common::{check_close, check_error, check_report, numbers, Case};
use quantscope::engine::{self, NonFinitePolicy};
use serde_json::Value;

fn run_modelopt(case: &Case) -> Result<(), String> {
    let batches = case.load_batches()?;
    let result = engine::run(
        &case.observer,
        &case.params,
        &batches,
        NonFinitePolicy::Exclude,
    );
    if let Some(want) = case.expected.get("error").and_then(Value::as_str) {
        return match result {
            Ok(_) => Err(format!("expected error `{want}`, got a result")),
            Err(e) => check_error(&e, want),
        };
    }
    let report = result.map_err(|e| format!("unexpected error: {e}"))?;
    check_report(case, &report)?;
    let exp = &case.expected;
    if let Some(w) = exp.get("num_bins_final") {
        let got = report
            .qparams
            .extra
            .get("num_bins_final")
            .ok_or("num_bins_final: the report has none")?;
        check_close("num_bins_final", &numbers(got), &numbers(w), (0.0, 0.0))?;
    }
    if let Some(w) = exp.get("bin_edges") {
        let h = report
            .state
            .histogram
            .as_ref()
            .ok_or("bin_edges: no histogram")?;
        let got: Vec<f64> = h.edges.iter().map(|&e| e as f64).collect();
        check_close("bin_edges", &got, &numbers(w), (0.0, 0.0))?;
    }
    Ok(())
}

#[test]
fn modelopt_golden_cases() {
    common::run_family("modelopt", run_modelopt);
}
