//! Every reference case produced by NVIDIA ModelOpt 0.47.0 (`golden/modelopt/cases.json`) must
//! pass within its tolerance: the standard fields (amax, scale, zero point, histogram, qdq), plus
//! `num_bins_final` and the histogram's `bin_edges`.
mod common;

use common::{check_close, numbers, Case};

fn run_modelopt(case: &Case) -> Result<(), String> {
    let Some(report) = common::run_standard_report(case)? else {
        return Ok(());
    };
    let exp = &case.expected;
    if let Some(w) = exp.get("num_bins_final") {
        let got = report
            .qparams
            .as_ref()
            .ok_or("no qparams")?
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
