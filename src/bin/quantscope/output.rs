//! Text tables and JSON documents printed by the CLI.

use quantscope::codec::FormatResult;
use quantscope::derivation;
use quantscope::engine::Report;
use quantscope::observer::ZeroPoint;
use quantscope::params::ParamKind;
use quantscope::registry::{self, Family};
use quantscope::tensor::Tensor;
use quantscope::Result;
use serde_json::{json, Value};
use std::fmt::Write;

/// Print a JSON value, pretty, on stdout.
pub fn print_json(value: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    );
}

/// A result rendered in the one form the command prints.
pub enum Shown {
    Json(Value),
    Text(String),
}

impl Shown {
    pub fn print(self) {
        match self {
            Shown::Json(value) => print_json(&value),
            Shown::Text(text) => print!("{text}"),
        }
    }

    pub fn text(self) -> String {
        match self {
            Shown::Json(value) => serde_json::to_string_pretty(&value).unwrap_or_default(),
            Shown::Text(text) => text,
        }
    }
}

/// A number with 6 significant digits, for the CLI's text tables (the page, panels and charts
/// write 4 with [`quantscope::plot::fmt_num`]).
pub fn fmt_num6(x: f64) -> String {
    if x == 0.0 || x.is_nan() || x.is_infinite() {
        return format!("{x}");
    }
    let a = x.abs();
    if (1e-3..1e6).contains(&a) {
        let digits = (5 - a.log10().floor() as i32).clamp(0, 9) as usize;
        let s = format!("{x:.digits$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        format!("{x:.5e}")
    }
}

/// A list of numbers: one value as itself, several as `[a, b, …]` (at most 6 shown).
fn fmt_list(values: impl ExactSizeIterator<Item = f64>) -> String {
    let n = values.len();
    let shown: Vec<String> = values.take(6).map(fmt_num6).collect();
    match n {
        0 => "-".to_string(),
        1 => shown[0].clone(),
        _ if n > 6 => format!("[{}, … {n} values]", shown.join(", ")),
        _ => format!("[{}]", shown.join(", ")),
    }
}

fn zero_points(zp: &ZeroPoint) -> String {
    match zp {
        ZeroPoint::Int(v) => fmt_list(v.iter().map(|&x| x as f64)),
        ZeroPoint::Float(v) => fmt_list(v.iter().map(|&x| x as f64)),
    }
}

fn f32s(values: &[f32]) -> impl ExactSizeIterator<Item = f64> + '_ {
    values.iter().map(|&x| x as f64)
}

/// The registry as JSON: observers (with parameters and quirks), presets and quantizers.
pub fn registry_json() -> Value {
    json!({
        "observers": registry::observers(),
        "presets": registry::presets(),
        "quantizers": quantscope::quantizers::registry(),
    })
}

fn param_range(kind: &ParamKind) -> String {
    match kind {
        ParamKind::Int { min, max } => format!("int {min}..={max}"),
        ParamKind::Float { min, max, .. } => {
            format!("float {}..={}", fmt_num6(*min), fmt_num6(*max))
        }
        ParamKind::Bool => "bool".to_string(),
        ParamKind::Text => "text".to_string(),
        ParamKind::Vector => "vector (.npy)".to_string(),
        ParamKind::Choice { options } => options.join("|"),
        ParamKind::Bits { min, max, formats } => {
            let floats: Vec<String> = formats.iter().map(|[e, m]| format!("[{e},{m}]")).collect();
            format!("bits {min}..={max}|{}", floats.join("|"))
        }
    }
}

/// The registry as a readable listing grouped by framework.
pub fn registry_table() -> String {
    let mut out = String::new();
    let mut current: Option<Family> = None;
    for spec in registry::observers() {
        if current != Some(spec.family) {
            current = Some(spec.family);
            let _ = writeln!(out, "\n{} ({})", spec.family.framework(), spec.version);
        }
        let _ = writeln!(out, "  {:48} {}", spec.id, spec.summary);
        for p in &spec.params {
            let range = param_range(&p.kind);
            let _ = writeln!(
                out,
                "      {:22} {:32} default {}",
                p.name, range, p.default
            );
        }
        for q in &spec.quirks {
            let _ = writeln!(out, "      quirk: {q}");
        }
    }
    let _ = writeln!(
        out,
        "\nQuantizers (number formats, then rounding optimisers)"
    );
    let quantizers = quantscope::quantizers::registry();
    let entries = quantizers
        .formats
        .iter()
        .map(|f| (f.id, f.summary, &f.params))
        .chain(
            quantizers
                .optimisers
                .iter()
                .map(|o| (o.id, o.summary, &o.params)),
        );
    for (id, summary, params) in entries {
        let _ = writeln!(out, "  {:48} {}", id, summary);
        for p in params {
            let _ = writeln!(
                out,
                "      {:22} {:32} default {}",
                p.name,
                param_range(&p.kind),
                p.default
            );
        }
    }
    let _ = writeln!(out, "\nPresets");
    for p in registry::presets() {
        let _ = writeln!(
            out,
            "  {:48} {} {}",
            p.name,
            p.observer,
            Value::Object(p.params.0.clone())
        );
    }
    out
}

/// One observer run as readable text.
pub fn report_text(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "observer      {}", r.observer);
    if !r.params.0.is_empty() {
        let _ = writeln!(out, "params        {}", Value::Object(r.params.0.clone()));
    }
    let _ = writeln!(
        out,
        "input         {} batch(es), {} elements",
        r.batches, r.elements
    );
    let n = r.nonfinite;
    if n.total() > 0 {
        let _ = writeln!(
            out,
            "non-finite    {} NaN, {} +Inf, {} -Inf (excluded from statistics)",
            n.nan, n.pos_inf, n.neg_inf
        );
    }
    let Some(q) = &r.qparams else {
        let why = r
            .error
            .as_ref()
            .map_or("no qparams", |e| e.message.as_str());
        let _ = writeln!(out, "error         {why}");
        return out;
    };
    let _ = writeln!(out, "min_val       {}", fmt_list(f32s(&q.min_val)));
    let _ = writeln!(out, "max_val       {}", fmt_list(f32s(&q.max_val)));
    if let Some((lo, hi)) = &q.clip_range {
        let _ = writeln!(
            out,
            "clip range    {} .. {}",
            fmt_list(f32s(lo)),
            fmt_list(f32s(hi))
        );
    }
    if let Some(amax) = &q.amax {
        let _ = writeln!(out, "amax          {}", fmt_list(f32s(amax)));
    }
    let _ = writeln!(out, "scale         {}", fmt_list(f32s(&q.scale)));
    let _ = writeln!(out, "zero_point    {}", zero_points(&q.zero_point));
    let _ = writeln!(out, "grid          {}", grid_text(q));
    if let Some(m) = &r.metrics {
        let _ = writeln!(out, "mse           {}", fmt_num6(m.mse));
        let _ = writeln!(out, "sqnr          {}", quantscope::display::sqnr_text(m));
        let _ = writeln!(out, "max_abs_err   {}", fmt_num6(m.max_abs_err));
        let _ = writeln!(out, "clipped       {:.4}%", m.clipped_fraction * 100.0);
    }
    for quirk in r.spec().map(|s| s.quirks.as_slice()).unwrap_or_default() {
        let _ = writeln!(out, "note          framework quirk reproduced: {quirk}");
    }
    for note in &q.notes {
        let _ = writeln!(out, "note          {note}");
    }
    if !r.derivation.is_empty() {
        let _ = writeln!(
            out,
            "\nwhy this range\n{}",
            derivation::to_text(&r.derivation)
        );
    }
    out
}

/// The diagnosis of the batches (one tensor, or all batches as one vector) given the observers'
/// reports, as a paragraph.
pub fn diagnosis_text(reports: &[Report], batches: &[Tensor]) -> String {
    use quantscope::diagnosis::{diagnose_batches, Outcome};
    let outcomes: Vec<Outcome> = reports.iter().filter_map(Outcome::of_report).collect();
    let batches: Vec<&Tensor> = batches.iter().collect();
    match diagnose_batches(&batches, &outcomes) {
        Some(d) => format!("\ndiagnosis: {}\n", d.text),
        None => String::new(),
    }
}

/// What the rotation did to each format (see [`quantscope::rotation::verdict`]).
pub fn rotation_verdict(before: &[Result<FormatResult>], after: &[Result<FormatResult>]) -> String {
    let sqnr = |r: &Result<FormatResult>| r.as_ref().ok().and_then(|r| r.metrics.sqnr_db);
    let rows: Vec<(String, Option<f64>, Option<f64>)> = before
        .iter()
        .zip(after)
        .filter_map(|(b, a)| Some((b.as_ref().ok()?.format.clone(), sqnr(b), sqnr(a))))
        .collect();
    quantscope::rotation::verdict(&rows)
}

/// The derivation of each of several reports (`observe --explain` with several observers).
pub fn derivations_text(reports: &[Report]) -> String {
    let mut out = String::new();
    for r in reports.iter().filter(|r| !r.derivation.is_empty()) {
        let _ = writeln!(
            out,
            "\nwhy this range: {}\n{}",
            r.observer,
            derivation::to_text(&r.derivation)
        );
    }
    out
}

fn grid_text(q: &quantscope::observer::QParams) -> String {
    use quantscope::observer::Grid;
    let axis = q
        .axis
        .map(|a| format!(", per channel along axis {a}"))
        .unwrap_or_default();
    match &q.grid {
        Grid::Int {
            quant_min,
            quant_max,
        } => format!("integers {quant_min}..={quant_max}{axis}"),
        Grid::Float { format, max } => format!("{format} (max {}){axis}", fmt_num6(*max)),
        Grid::None => "none (pass-through)".to_string(),
    }
}

/// Several observer runs as a JSON array (failed runs carry `error`).
pub fn comparison_json(reports: &[Report]) -> Value {
    Value::Array(
        reports
            .iter()
            .map(quantscope::commands::report_json)
            .collect(),
    )
}

/// Several observer runs side by side, one row each.
pub fn comparison_table(reports: &[Report], batches: &[Tensor]) -> String {
    let elements: usize = batches.iter().map(Tensor::len).sum();
    let mut out = format!("{} batch(es), {elements} elements\n", batches.len());
    let _ = writeln!(
        out,
        "{:46} {:>12} {:>12} {:>12} {:>6} {:>12} {:>9} {:>9}",
        "observer", "clip min", "clip max", "scale", "zp", "mse", "sqnr dB", "clipped%"
    );
    for r in reports {
        let id = &r.observer;
        match (&r.qparams, &r.error) {
            (Some(q), None) => {
                let (lo, hi) = q.representable_range(0).unwrap_or((f64::NAN, f64::NAN));
                let m = r.metrics.as_ref();
                let _ = writeln!(
                    out,
                    "{:46} {:>12} {:>12} {:>12} {:>6} {:>12} {:>9} {:>9}",
                    id,
                    fmt_num6(lo),
                    fmt_num6(hi),
                    fmt_list(f32s(&q.scale)),
                    zero_points(&q.zero_point),
                    m.map_or("-".into(), |m| fmt_num6(m.mse)),
                    m.and_then(|m| m.sqnr_db)
                        .map_or("-".into(), |s| format!("{s:.2}")),
                    m.map_or("-".into(), |m| format!("{:.4}", m.clipped_fraction * 100.0)),
                );
            }
            (_, error) => {
                let why = error.as_ref().map_or("no qparams", |e| e.message.as_str());
                let _ = writeln!(out, "{id:46} error: {why}");
            }
        }
    }
    out
}

/// The formats comparison as a table, sorted by bits per value.
pub fn formats_table(file: &str, tensor: &Tensor, results: &[Result<FormatResult>]) -> String {
    let mut out = format!(
        "{file}: shape {:?}, {} elements\n",
        tensor.shape,
        tensor.len()
    );
    let _ = writeln!(
        out,
        "{:28} {:>9} {:>12} {:>9} {:>12} {:>9}",
        "format", "bits/val", "mse", "sqnr dB", "max |err|", "clipped%"
    );
    let mut rows: Vec<&FormatResult> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    rows.sort_by(|a, b| a.bits_per_value.total_cmp(&b.bits_per_value));
    for r in rows {
        let m = &r.metrics;
        let _ = writeln!(
            out,
            "{:28} {:>9.3} {:>12} {:>9} {:>12} {:>9.4}",
            r.format,
            r.bits_per_value,
            fmt_num6(m.mse),
            m.sqnr_db.map_or("-".into(), |s| format!("{s:.2}")),
            fmt_num6(m.max_abs_err),
            m.clipped_fraction * 100.0
        );
    }
    for e in results.iter().filter_map(|r| r.as_ref().err()) {
        let _ = writeln!(out, "(skipped: {e})");
    }
    out
}

/// An AdaRound run as readable text.
pub fn adaround_text(o: &quantscope::quantizers::adaround::AdaRoundOutcome) -> String {
    let mut out = String::new();
    let c = &o.config;
    let _ = writeln!(
        out,
        "AdaRound, {} bits {:?}, {} of {} iterations, {} weights",
        c.bits, c.scheme, o.iterations_run, c.iterations, o.weights
    );
    let _ = writeln!(out, "{:22} {:>14} {:>12}", "", "output mse", "sqnr dB");
    for (name, rounding) in [("round to nearest", &o.nearest), ("adaround", &o.adaround)] {
        let _ = writeln!(
            out,
            "{:22} {:>14} {:>12.3}",
            name,
            fmt_num6(rounding.output_mse),
            rounding.output_sqnr_db
        );
    }
    let _ = writeln!(
        out,
        "output mse reduced by  {:.1}%",
        o.mse_reduction * 100.0
    );
    let _ = writeln!(
        out,
        "rounded the other way  {} weights ({:.2}%)",
        o.flipped,
        100.0 * o.flipped as f64 / o.weights.max(1) as f64
    );
    let _ = writeln!(
        out,
        "soft decisions binary  {:.2}% at the end",
        o.final_binary_fraction * 100.0
    );
    out
}

/// `quantize`: the same as a few lines of text.
pub fn quantize_text(
    file: &str,
    q: &quantscope::quantizers::apply::Quantized,
    out: Option<&str>,
) -> String {
    let m = &q.metrics;
    let mut s = String::new();
    let _ = writeln!(s, "{file} {:?} → {} ({})", q.shape, q.format, q.quantizer);
    let _ = writeln!(s, "  bits per value   {}", fmt_num6(q.bits_per_value));
    let _ = writeln!(s, "  mse              {}", fmt_num6(m.mse));
    let _ = writeln!(s, "  max |error|      {}", fmt_num6(m.max_abs_err));
    let _ = writeln!(
        s,
        "  sqnr             {}",
        m.sqnr_db
            .map_or("undefined".to_string(), |d| format!("{} dB", fmt_num6(d)))
    );
    let _ = writeln!(s, "  clipped          {}", fmt_num6(m.clipped_fraction));
    if let Some(path) = out {
        let _ = writeln!(s, "  written to       {path}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::fmt_num6;

    #[test]
    fn numbers_are_short() {
        assert_eq!(fmt_num6(0.036180686205625534), "0.0361807");
        assert_eq!(fmt_num6(124.0), "124");
        assert_eq!(fmt_num6(1.1920929e-07), "1.19209e-7");
        assert_eq!(fmt_num6(-4.494117259979248), "-4.49412");
    }
}
