//! Every reference case produced by torchao 0.18.0 (`golden/torchao/cases.json`) through the
//! one driver, within its tolerance, plus the fields only this family reports: the effective
//! range, the qparam shape, the block size, the effective eps, the zero-point dtype (or its
//! absence), the MSE search's selected step per qparam, the statistics after every batch, and
//! the stage at which an error is raised.
mod common;

use common::family_fields::{check_grid_range, check_trace, last_mse_search};
use common::Case;
use quantscope::engine::Report;
use serde_json::Value;

fn run_case(case: &Case) -> Result<(), String> {
    let Some(report) = common::run_standard_report(case)? else {
        return common::check_error_stage(case, "torchao", |stage| stage);
    };
    check_family_fields(case, &report)?;
    check_trace(case)
}

fn check_family_fields(case: &Case, report: &Report) -> Result<(), String> {
    let exp = &case.expected;
    let q = report.qparams.as_ref().ok_or("no qparams")?;
    check_grid_range(case, q, false)?;
    for field in ["qparam_shape", "zero_point_dtype", "eps_effective"] {
        if let Some(want) = exp.get(field) {
            let got = q.extra.get(field).unwrap_or(&Value::Null);
            let same = match (got.as_f64(), want.as_f64()) {
                (Some(a), Some(b)) => a == b,
                _ => got == want,
            };
            if !same {
                return Err(format!("{field}: got {got}, expected {want}"));
            }
        }
    }
    if let Some(blocks) = exp.get("block_size").and_then(Value::as_array) {
        // One per batch; the report holds the last batch's.
        let (got, want) = (q.extra.get("block_size"), blocks.last());
        if q.min_val.is_empty() {
            // Fixed qparams keep no block size.
        } else if got != want {
            return Err(format!("block_size: got {got:?}, expected {want:?}"));
        }
    }
    if exp.get("zero_point_is_none") == Some(&Value::Bool(true))
        && q.extra.get("zero_point_is_none") != Some(&Value::Bool(true))
    {
        return Err("the zero point should be None".into());
    }
    if let Some(last) = last_mse_search(case)? {
        let (got, want) = (q.extra.get("selected_step"), last.get("selected_step"));
        if got != want {
            return Err(format!(
                "mse_search.selected_step: got {got:?}, expected {want:?}"
            ));
        }
    }
    Ok(())
}

#[test]
fn torchao_golden_cases() {
    common::run_family("torchao", run_case);
}

/// The float8 case records `_fake_quantize_affine`'s metrics too (no cast to float8): they
/// differ from `quantize_affine`'s, which the observer's Q/DQ reproduces.
#[test]
fn float8_through_the_integer_path_rounds_twice() {
    let case = common::load_cases("torchao")
        .into_iter()
        .find(|c| c.id == "mm-tensor-sym-fp8-int-domain-laplace_outliers")
        .expect("the float8 case");
    let report = common::run_standard_report(&case).unwrap().unwrap();
    let mse = report.metrics.unwrap().mse;
    let without_cast = case.expected["qdq_fake_quantize_affine"]["mse"]
        .as_f64()
        .unwrap();
    assert!(
        (mse - without_cast).abs() > 1e-4 * without_cast,
        "{mse} vs {without_cast}"
    );
}
