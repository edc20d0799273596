//! Every reference case produced by torchao 0.18.0 (`golden/torchao/cases.json`) through the
//! one driver, within its tolerance, plus the fields only this family reports: the effective
//! range, the qparam shape, the block size, the effective eps, the zero-point dtype (or its
//! absence), the MSE search's selected step per qparam, the statistics after every batch, and
//! the stage at which an error is raised.
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
    match case.expected.get("error_stage").and_then(Value::as_str) {
        Some(want) if want != got => Err(format!(
            "error raised at {got}, torchao raises it at {want}"
        )),
        _ => Ok(()),
    }
}

fn check_family_fields(case: &Case, report: &Report) -> Result<(), String> {
    let exp = &case.expected;
    let q = report.qparams.as_ref().ok_or("no qparams")?;
    if let (Some(lo), Some(hi)) = (
        exp.get("quant_min").and_then(Value::as_f64),
        exp.get("quant_max").and_then(Value::as_f64),
    ) {
        match q.grid {
            Grid::Int {
                quant_min,
                quant_max,
            } if (quant_min as f64, quant_max as f64) == (lo, hi) => {}
            ref other => return Err(format!("grid {other:?}, expected {lo}..{hi}")),
        }
    }
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
    if let Some(search) = exp.get("mse_search") {
        let last = match search {
            Value::Array(all) => all.last().ok_or("empty mse_search")?,
            one => one,
        };
        let (got, want) = (q.extra.get("selected_step"), last.get("selected_step"));
        if got != want {
            return Err(format!(
                "mse_search.selected_step: got {got:?}, expected {want:?}"
            ));
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
    let f64s = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    for (i, (batch, want)) in case.load_batches()?.iter().zip(trace).enumerate() {
        observer.observe(batch).map_err(|e| e.to_string())?;
        let state = observer.plot();
        for (field, got) in [("min_val", &state.min_val), ("max_val", &state.max_val)] {
            common::check_close(
                &format!("trace[{i}].{field}"),
                &f64s(got),
                &common::numbers(&want[field]),
                case.tolerance_for(field),
            )?;
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
    let case = flattened(&case).unwrap();
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
