//! Every reference case produced by PyTorch 2.15 (`golden/torch/cases.json`) must pass within
//! its tolerance, including the fields only PyTorch's observers report (effective range,
//! zero-point dtype, `dst_nbins`, `upsample_rate`) and the stage at which an error is raised.
mod common;

use common::family_fields::{check_exact_extras, check_grid_range};
use common::Case;
use quantscope::engine::Report;
use quantscope::registry;

fn run_case(case: &Case) -> Result<(), String> {
    let Some(report) = common::run_standard_report(case)? else {
        return common::check_error_stage(case, "PyTorch", |stage| stage);
    };
    check_torch_fields(case, &report)
}

fn check_torch_fields(case: &Case, report: &Report) -> Result<(), String> {
    let exp = &case.expected;
    let q = report.qparams.as_ref().ok_or("no qparams")?;
    check_grid_range(case, q, false)?;
    check_exact_extras(case, q, &["dst_nbins", "upsample_rate", "zero_point_dtype"])?;
    if exp.get("histogram").is_some() {
        let hist = report
            .snapshot
            .histogram
            .as_ref()
            .ok_or("no histogram state")?;
        if hist.edges.len() != hist.counts.len() + 1 {
            return Err("histogram edges do not bracket the counts".into());
        }
        let clip = q.clip_range.as_ref().ok_or("no clip range")?;
        let search_min = exp["search_min"].as_f64().unwrap_or(f64::NAN);
        common::check_close(
            "clip_range.min",
            &[clip.0[0] as f64],
            &[search_min],
            case.tolerance_for("search_min_max"),
        )?;
    }
    Ok(())
}

#[test]
fn torch_golden_cases() {
    common::run_family("torch", run_case);
}

/// A case that names a preset passes exactly that preset's keyword arguments.
#[test]
fn golden_presets_match_the_registry() {
    let mut checked = 0;
    for case in common::load_cases("torch") {
        let Some(name) = &case.preset else { continue };
        let preset = registry::find_preset(name).unwrap_or_else(|e| panic!("{}: {e}", case.id));
        assert_eq!(preset.observer, case.observer, "{}", case.id);
        assert_eq!(preset.params, case.params, "{}: params differ", case.id);
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} preset cases");
}
