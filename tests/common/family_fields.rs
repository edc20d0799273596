//! Checks of the fields some families report besides the common ones (effective range, extra
//! qparam fields, the statistics after every batch), shared by their golden tests.

use super::{check_close, f64s, numbers, Case};
use quantscope::engine::Report;
use quantscope::observer::{Grid, Instance, QParams};
use quantscope::registry;
use serde_json::Value;

/// The case's `quant_min`/`quant_max`, when it records them, against the grid's range: an
/// integer grid's bounds; a float grid's `±max` only where `float_grids` (llm-compressor records
/// its float formats' range too).
pub fn check_grid_range(case: &Case, q: &QParams, float_grids: bool) -> Result<(), String> {
    let exp = &case.expected;
    let (Some(lo), Some(hi)) = (
        exp.get("quant_min").and_then(Value::as_f64),
        exp.get("quant_max").and_then(Value::as_f64),
    ) else {
        return Ok(());
    };
    let got = match q.grid {
        Grid::Int {
            quant_min,
            quant_max,
        } => Some((quant_min as f64, quant_max as f64)),
        Grid::Float { max, .. } if float_grids => Some((-max, max)),
        _ => None,
    };
    if got == Some((lo, hi)) {
        Ok(())
    } else {
        Err(format!("grid {:?}, expected {lo}..{hi}", q.grid))
    }
}

/// Each of `fields` the case records equals the qparams' extra field of that name exactly.
pub fn check_exact_extras(case: &Case, q: &QParams, fields: &[&str]) -> Result<(), String> {
    for &field in fields {
        if let Some(want) = case.expected.get(field) {
            let got = q.extra.get(field);
            if got != Some(want) {
                return Err(format!("{field}: got {got:?}, expected {want}"));
            }
        }
    }
    Ok(())
}

/// The last search a case records under `mse_search` (one entry per batch for multi-batch
/// activations; the report holds the last batch's search).
pub fn last_mse_search(case: &Case) -> Result<Option<&Value>, String> {
    match case.expected.get("mse_search") {
        Some(Value::Array(all)) => all.last().map(Some).ok_or("empty mse_search".into()),
        other => Ok(other),
    }
}

/// `min_val`/`max_val` after every batch of a multi-batch case (its `trace`), from the
/// observer's plotted state.
pub fn check_trace(case: &Case) -> Result<(), String> {
    let Some(trace) = case.expected.get("trace").and_then(Value::as_array) else {
        return Ok(());
    };
    let spec = registry::find(&case.observer).map_err(|e| e.to_string())?;
    let mut observer = Instance::new(spec, &case.params).map_err(|e| e.to_string())?;
    for (i, (batch, want)) in case.load_batches()?.iter().zip(trace).enumerate() {
        observer.feed(batch).map_err(|e| e.to_string())?;
        let state = observer.plot();
        for (field, got) in [("min_val", &state.min_val), ("max_val", &state.max_val)] {
            check_close(
                &format!("trace[{i}].{field}"),
                &f64s(got),
                &numbers(&want[field]),
                case.tolerance_for(field),
            )?;
        }
    }
    Ok(())
}

/// Each of `fields` the case records against the qparams' extra field of that name, within `tol`
/// (numbers, or lists of numbers).
pub fn check_extra_numbers(
    case: &Case,
    q: &QParams,
    fields: &[&str],
    tol: impl Fn(&str) -> (f64, f64),
) -> Result<(), String> {
    for &field in fields {
        if let Some(w) = case.expected.get(field) {
            let got = q
                .extra
                .get(field)
                .ok_or_else(|| format!("{field}: the report has none"))?;
            check_close(field, &numbers(got), &numbers(w), tol(field))?;
        }
    }
    Ok(())
}

/// The histogram's `bin_edges`, when the case records them, within `tol`.
pub fn check_bin_edges(case: &Case, report: &Report, tol: (f64, f64)) -> Result<(), String> {
    let Some(w) = case.expected.get("bin_edges") else {
        return Ok(());
    };
    let h = report
        .snapshot
        .histogram
        .as_ref()
        .ok_or("bin_edges: no histogram")?;
    check_close("bin_edges", &f64s(&h.edges), &numbers(w), tol)
}
