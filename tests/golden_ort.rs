//! Every reference case produced by ONNX Runtime 1.31.1 (`golden/ort/cases.json`) must pass
//! within its tolerance: the standard fields, plus ORT's own (`num_bins_final`, `bin_edges`,
//! `qmin_qmax`, `tensordata_hist_bins`, Distribution's `avg`/`std`).
mod common;

use common::{check_close, numbers, Case};

fn run_ort(case: &Case) -> Result<(), String> {
    let Some(report) = common::run_standard_report(case)? else {
        return Ok(());
    };
    let exp = &case.expected;
    let extra = &report.qparams.as_ref().ok_or("no qparams")?.extra;
    let exact = (0.0, 0.0);
    for field in ["num_bins_final", "qmin_qmax", "tensordata_hist_bins"] {
        if let Some(w) = exp.get(field) {
            let got = extra
                .get(field)
                .ok_or_else(|| format!("{field}: the report has none"))?;
            check_close(field, &numbers(got), &numbers(w), exact)?;
        }
    }
    for field in ["avg", "std"] {
        if let Some(w) = exp.get(field) {
            let got = extra
                .get(field)
                .ok_or_else(|| format!("{field}: the report has none"))?;
            check_close(field, &numbers(got), &numbers(w), case.tolerance_for(field))?;
        }
    }
    if let Some(w) = exp.get("bin_edges") {
        let h = report
            .state
            .histogram
            .as_ref()
            .ok_or("bin_edges: no histogram")?;
        let got: Vec<f64> = h.edges.iter().map(|&e| e as f64).collect();
        check_close("bin_edges", &got, &numbers(w), exact)?;
    }
    Ok(())
}

#[test]
fn ort_golden_cases() {
    common::run_family("ort", run_ort);
}
