//! The generators' `qdq_metrics` (`common_data.qdq_metrics` of the format families' scripts),
//! recomputed in float64 from a tensor and its quantize-dequantize, and checked against a case.

use super::check_close;
use serde_json::Value;

/// `mse`, `max_abs_err` and, where the error and the signal are both non-zero, `sqnr_db =
/// 10·log10(Σx²/Σe²)`, all accumulated in float64.
pub fn qdq_metrics(x: &[f32], y: &[f32]) -> Vec<(&'static str, f64)> {
    let n = x.len() as f64;
    let (mut se, mut sx, mut max) = (0.0f64, 0.0f64, 0.0f64);
    for (&a, &b) in x.iter().zip(y) {
        let e = b as f64 - a as f64;
        se += e * e;
        sx += a as f64 * a as f64;
        max = max.max(e.abs());
    }
    let mut fields = vec![("mse", se / n), ("max_abs_err", max)];
    if se > 0.0 && sx > 0.0 {
        fields.push(("sqnr_db", 10.0 * (sx / se).log10()));
    }
    fields
}

/// Each of `fields` that `want` records, within `tol`; failures name the field after `prefix`.
pub fn check_metrics(
    fields: &[(&str, f64)],
    want: &Value,
    prefix: &str,
    tol: (f64, f64),
) -> Result<(), String> {
    for &(field, got) in fields {
        if let Some(w) = want.get(field).and_then(Value::as_f64) {
            check_close(&format!("{prefix}{field}"), &[got], &[w], tol)?;
        }
    }
    Ok(())
}
