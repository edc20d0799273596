//! Every reference case produced by PyTorch 2.15 (`golden/torch/cases.json`) must pass within
//! its tolerance, including the fields only PyTorch's observers report (effective range,
//! zero-point dtype, `dst_nbins`, `upsample_rate`) and the stage at which an error is raised.
mod common;

use common::Case;
use quantscope::engine::{Report, Run};
use quantscope::params::Params;
use quantscope::registry;
use serde_json::Value;

fn run_case(case: &Case) -> Result<(), String> {
    let Some(report) = common::run_standard_report(case)? else {
        return check_stage(case);
    };
    check_torch_fields(case, &report)
}

/// The stage at which the error of an error case is raised, as PyTorch raises it.
fn check_stage(case: &Case) -> Result<(), String> {
    let batches = case.load_batches()?;
    let attributes = Params::from_value(
        case.raw
            .get("set_attributes_after_init")
            .cloned()
            .unwrap_or(Value::Null),
    )
    .map_err(|e| e.to_string())?;
    let report = Run::new(&case.observer, case.params.clone(), &batches)
        .map_err(|e| e.to_string())?
        .with_attributes(attributes)
        .report();
    let got = report
        .error
        .as_ref()
        .and_then(|e| e.stage.clone())
        .unwrap_or_else(|| "none".into());
    match case.expected.get("error_stage").and_then(Value::as_str) {
        Some(w) if w != got => Err(format!("error raised at {got}, PyTorch raises it at {w}")),
        _ => Ok(()),
    }
}

fn check_torch_fields(case: &Case, report: &Report) -> Result<(), String> {
    let exp = &case.expected;
    let q = report.qparams.as_ref().ok_or("no qparams")?;
    if let (Some(lo), Some(hi)) = (
        exp.get("quant_min").and_then(Value::as_i64),
        exp.get("quant_max").and_then(Value::as_i64),
    ) {
        match q.grid {
            quantscope::observer::Grid::Int {
                quant_min,
                quant_max,
            } if (quant_min, quant_max) == (lo, hi) => {}
            ref other => return Err(format!("grid {other:?}, expected {lo}..{hi}")),
        }
    }
    for field in ["dst_nbins", "upsample_rate"] {
        if let Some(want) = exp.get(field) {
            let got = q.extra.get(field);
            if got != Some(want) {
                return Err(format!("{field}: got {got:?}, expected {want}"));
            }
        }
    }
    if let Some(want) = exp.get("zero_point_dtype") {
        let got = q.extra.get("zero_point_dtype");
        if got != Some(want) {
            return Err(format!("zero_point_dtype: got {got:?}, expected {want}"));
        }
    }
    if exp.get("histogram").is_some() {
        let hist = report
            .state
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
