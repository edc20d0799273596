//! Every reference case produced by PyTorch 2.15 (`golden/torch/cases.json`) must pass within
//! its tolerance, including the fields only PyTorch's observers report (effective range,
//! zero-point dtype, `dst_nbins`, `upsample_rate`) and the stage at which an error is raised.
mod common;

use common::Case;
use quantscope::engine::{self, NonFinitePolicy, Report};
use quantscope::error::{Error, Stage};
use quantscope::params::Params;
use quantscope::registry;
use quantscope::tensor::Tensor;
use serde_json::Value;

/// Build, apply `set_attributes_after_init` (e.g. `upsample_rate = 128`), observe, report.
fn observe(case: &Case, batches: &[Tensor]) -> quantscope::Result<Report> {
    let attributes = Params::from_value(
        case.raw
            .get("set_attributes_after_init")
            .cloned()
            .unwrap_or(Value::Null),
    )?;
    engine::run_with_attributes(
        &case.observer,
        &case.params,
        &attributes,
        batches,
        NonFinitePolicy::Exclude,
    )
}

fn run_case(case: &Case) -> Result<(), String> {
    let batches = case.load_batches()?;
    let result = observe(case, &batches);
    if let Some(want) = case.expected.get("error").and_then(Value::as_str) {
        let error = match result {
            Ok(_) => return Err(format!("expected error `{want}`, got a result")),
            Err(e) => e,
        };
        common::check_error(&error, want)?;
        return check_stage(case, &error);
    }
    let report = result.map_err(|e| format!("unexpected error: {e}"))?;
    common::check_report(case, &report)?;
    check_torch_fields(case, &report)
}

fn check_stage(case: &Case, error: &Error) -> Result<(), String> {
    let want = case.expected.get("error_stage").and_then(Value::as_str);
    let got = match error {
        Error::Framework { stage, .. } => match stage {
            Stage::Init => "init",
            Stage::Forward => "forward",
            Stage::CalculateQparams => "calculate_qparams",
        },
        _ => "none",
    };
    match want {
        Some(w) if w != got => Err(format!("error raised at {got}, PyTorch raises it at {w}")),
        _ => Ok(()),
    }
}

fn check_torch_fields(case: &Case, report: &Report) -> Result<(), String> {
    let exp = &case.expected;
    let q = &report.qparams;
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
