//! Every reference case produced by ONNX Runtime 1.31.1 (`golden/ort/cases.json`) must pass
//! within its tolerance: the standard fields, plus ORT's own (`num_bins_final`, `bin_edges`,
//! `qmin_qmax`, `tensordata_hist_bins`, Distribution's `avg`/`std`).
mod common;

use common::family_fields::{check_bin_edges, check_extra_numbers};
use common::Case;

fn run_ort(case: &Case) -> Result<(), String> {
    let Some(report) = common::run_standard_report(case)? else {
        return Ok(());
    };
    let q = report.qparams.as_ref().ok_or("no qparams")?;
    let exact = |_: &str| (0.0, 0.0);
    check_extra_numbers(
        case,
        q,
        &["num_bins_final", "qmin_qmax", "tensordata_hist_bins"],
        exact,
    )?;
    check_extra_numbers(case, q, &["avg", "std"], |field| case.tolerance_for(field))?;
    check_bin_edges(case, &report, (0.0, 0.0))
}

#[test]
fn ort_golden_cases() {
    common::run_family("ort", run_ort);
}
