//! Every reference case produced by llm-compressor 0.14.0.1 with compressed-tensors 0.19.0
//! (`golden/llmcompressor/cases.json`) through the one driver, within its tolerance, plus the
//! fields only this family reports: the effective range, the qparam shape, the zero-point
//! dtype, NVFP4's global scale, whether the imatrix importance was used, the MSE search's
//! selected step per qparam and steps evaluated, the statistics after every batch, and the
//! stage at which an error is raised.
mod common;

use common::family_fields::{check_exact_extras, check_grid_range, check_trace, last_mse_search};
use common::Case;
use quantscope::engine::Report;
use quantscope::registry;

fn run_case(case: &Case) -> Result<(), String> {
    let Some(report) = common::run_standard_report(case)? else {
        return common::check_error_stage(case, "the library", library_stage);
    };
    check_family_fields(case, &report)?;
    check_trace(case)
}

/// The engine's name of the stage the library raises at (`args` is the `QuantizationArgs`
/// validation, i.e. before the observer exists; `get_qparams` is `calculate_qparams`).
fn library_stage(stage: &str) -> &str {
    match stage {
        "args" | "init" => "init",
        "get_qparams" => "calculate_qparams",
        other => other,
    }
}

fn check_family_fields(case: &Case, report: &Report) -> Result<(), String> {
    let exp = &case.expected;
    let q = report.qparams.as_ref().ok_or("no qparams")?;
    check_grid_range(case, q, true)?;
    check_exact_extras(
        case,
        q,
        &["qparam_shape", "zero_point_dtype", "importance_used"],
    )?;
    if let Some(want) = exp.get("global_scale") {
        let got = q.extra.get("global_scale").ok_or("global_scale missing")?;
        common::check_close(
            "global_scale",
            &common::numbers(got),
            &common::numbers(want),
            case.tolerance_for("global_scale"),
        )?;
    }
    if let Some(last) = last_mse_search(case)? {
        for field in ["selected_step", "steps_evaluated"] {
            let (got, want) = (q.extra.get(field), last.get(field));
            if got != want {
                return Err(format!(
                    "mse_search.{field}: got {got:?}, expected {want:?}"
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn llmcompressor_golden_cases() {
    common::run_family("llmcompressor", run_case);
}

/// The cases cover every observer the library registers on CPU.
#[test]
fn every_registered_observer_has_reference_cases() {
    let cases = common::load_cases("llmcompressor");
    for spec in registry::observers()
        .iter()
        .filter(|s| s.id.starts_with("llmcompressor."))
    {
        assert!(
            cases.iter().any(|c| c.observer == spec.id),
            "{} has no reference case",
            spec.id
        );
    }
}
