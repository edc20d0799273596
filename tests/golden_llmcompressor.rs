//! Every reference case produced by llm-compressor 0.14.0.1 with compressed-tensors 0.19.0
//! (`golden/llmcompressor/cases.json`) through the one driver, within its tolerance, plus the
//! fields only this family reports: the effective range, the qparam shape, the zero-point
//! dtype, NVFP4's global scale, whether the imatrix importance was used, the MSE search's
//! selected step per qparam and steps evaluated, the statistics after every batch, and the
//! stage at which an error is raised.
mod common;

use common::library_params::flattened;
use common::Case;
use quantscope::engine::{Report, Run};
use quantscope::observer::{Grid, Instance};
use quantscope::registry;
use serde_json::Value;

fn run_case(case: &Case) -> Result<(), String> {
    let case = flattened(case)?;
    let Some(report) = common::run_standard_report(&case)? else {
        return check_stage(&case);
    };
    check_family_fields(&case, &report)?;
    check_trace(&case)
}

/// The stage the library raises at (`args` is the `QuantizationArgs` validation, i.e. before
/// the observer exists; `get_qparams` is `calculate_qparams`).
fn check_stage(case: &Case) -> Result<(), String> {
    let batches = case.load_batches()?;
    let report = Run::new(&case.observer, case.params.clone(), &batches)
        .map_err(|e| e.to_string())?
        .report();
    let got = report
        .error
        .as_ref()
        .and_then(|e| e.stage.clone())
        .unwrap_or_else(|| "none".into());
    let want = match case.expected.get("error_stage").and_then(Value::as_str) {
        Some("args") | Some("init") => "init",
        Some("get_qparams") => "calculate_qparams",
        Some(other) => other,
        None => return Ok(()),
    };
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "error raised at {got}, the library raises it at {want}"
        ))
    }
}

fn numbers(v: &Value) -> Vec<f64> {
    common::numbers(v)
}

fn check_family_fields(case: &Case, report: &Report) -> Result<(), String> {
    let exp = &case.expected;
    let q = report.qparams.as_ref().ok_or("no qparams")?;
    if let (Some(lo), Some(hi)) = (
        exp.get("quant_min").and_then(Value::as_f64),
        exp.get("quant_max").and_then(Value::as_f64),
    ) {
        let got = match &q.grid {
            Grid::Int {
                quant_min,
                quant_max,
            } => (*quant_min as f64, *quant_max as f64),
            Grid::Float { max, .. } => (-max, *max),
            Grid::None => return Err("no grid".into()),
        };
        if got != (lo, hi) {
            return Err(format!("range {got:?}, expected ({lo}, {hi})"));
        }
    }
    for field in ["qparam_shape", "zero_point_dtype", "importance_used"] {
        if let Some(want) = exp.get(field) {
            let got = q.extra.get(field);
            if got != Some(want) {
                return Err(format!("{field}: got {got:?}, expected {want}"));
            }
        }
    }
    if let Some(want) = exp.get("global_scale") {
        let got = q.extra.get("global_scale").ok_or("global_scale missing")?;
        common::check_close(
            "global_scale",
            &numbers(got),
            &numbers(want),
            case.tolerance_for("global_scale"),
        )?;
    }
    if let Some(search) = exp.get("mse_search") {
        // One entry per batch for multi-batch activations: the report holds the last search.
        let last = match search {
            Value::Array(all) => all.last().ok_or("empty mse_search")?,
            one => one,
        };
        for (field, key) in [
            ("selected_step", "selected_step"),
            ("steps_evaluated", "steps_evaluated"),
        ] {
            let (got, want) = (q.extra.get(key), last.get(field));
            if got != want {
                return Err(format!(
                    "mse_search.{field}: got {got:?}, expected {want:?}"
                ));
            }
        }
    }
    Ok(())
}

/// `min_val`/`max_val` after every batch of a multi-batch case.
fn check_trace(case: &Case) -> Result<(), String> {
    let Some(trace) = case.expected.get("trace").and_then(Value::as_array) else {
        return Ok(());
    };
    let spec = registry::find(&case.observer).map_err(|e| e.to_string())?;
    let mut observer = Instance::new(spec, &case.params).map_err(|e| e.to_string())?;
    for (i, (batch, want)) in case.load_batches()?.iter().zip(trace).enumerate() {
        observer.observe(batch).map_err(|e| e.to_string())?;
        let state = observer.plot();
        let f64s = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        common::check_close(
            &format!("trace[{i}].min_val"),
            &f64s(&state.min_val),
            &numbers(&want["min_val"]),
            case.tolerance_for("min_val"),
        )?;
        common::check_close(
            &format!("trace[{i}].max_val"),
            &f64s(&state.max_val),
            &numbers(&want["max_val"]),
            case.tolerance_for("max_val"),
        )?;
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
