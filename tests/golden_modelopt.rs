//! Every reference case produced by NVIDIA ModelOpt 0.47.0 (`golden/modelopt/cases.json`) must
//! pass within its tolerance: the standard fields (amax, scale, zero point, histogram, qdq), plus
//! `num_bins_final` and the histogram's `bin_edges`.
mod common;

use common::family_fields::{check_bin_edges, check_extra_numbers};
use common::Case;

fn run_modelopt(case: &Case) -> Result<(), String> {
    let Some(report) = common::run_standard_report(case)? else {
        return Ok(());
    };
    let q = report.qparams.as_ref().ok_or("no qparams")?;
    check_extra_numbers(case, q, &["num_bins_final"], |_| (0.0, 0.0))?;
    check_bin_edges(case, &report, (0.0, 0.0))
}

#[test]
fn modelopt_golden_cases() {
    common::run_family("modelopt", run_modelopt);
}
