//! `quantscope model PATH...`: rank every tensor of a checkpoint by what quantization does to
//! it, as a table, JSON or CSV.

use quantscope::error::{Error, Result};
use quantscope::model::methods::MethodKind;
use quantscope::model::{self, methods, Method, ModelReport};
use quantscope::params::Params;
use quantscope::plot::svg::layer_profile_svg;
use quantscope::plot::Style;
use quantscope::portion::Portion;
use serde_json::Value;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// How to print the ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

/// The methods named on the command line: the defaults when neither list is given, otherwise
/// exactly the observers and formats listed. Observers are registry ids; formats are quantizer
/// ids with their parameters, `ID` or `ID:JSON` (what `quantscope quantize --quantizer ID
/// --params JSON` takes), e.g. `int:{"bits": 4, "granularity": "per_group", "group_size": 32}`.
pub fn methods_from(observers: Option<&str>, formats: Option<&str>) -> Result<Vec<Method>> {
    if observers.is_none() && formats.is_none() {
        return Ok(model::default_methods());
    }
    let mut out = Vec::new();
    for id in split_list(observers.unwrap_or_default()) {
        out.push(methods::observer(id)?);
    }
    for item in split_list(formats.unwrap_or_default()) {
        out.push(format_method(item)?);
    }
    if out.is_empty() {
        return Err(Error::input(
            "no methods: name at least one observer (--observers) or format (--formats)",
        ));
    }
    Ok(out)
}

/// The non-empty items of a comma-separated list, split only at commas outside JSON objects,
/// arrays and strings (`int:{"bits": 4, "signed": false},ggml.Q4_K` is two items).
fn split_list(list: &str) -> Vec<&str> {
    let (mut items, mut depth, mut in_string, mut escaped, mut start) =
        (Vec::new(), 0usize, false, false, 0);
    for (i, c) in list.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' | '[' if !in_string => depth += 1,
            '}' | ']' if !in_string => depth = depth.saturating_sub(1),
            ',' if !in_string && depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&list[start..]);
    items
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// One `--formats` item, `ID` or `ID:JSON`. A label of `quantscope formats` (the former
/// spelling) is refused with the id and parameters that name it.
fn format_method(item: &str) -> Result<Method> {
    let (id, params) = match item.split_once(':') {
        Some((id, json)) => (id.trim(), Params::from_json(json)?),
        None => (item, Params::new()),
    };
    methods::format_by_id(id, params).map_err(|e| match methods::format(item) {
        Ok(Method {
            id: label,
            kind: MethodKind::Format { family, params, .. },
        }) if !item.contains(':') => {
            let spelled = if params.keys().next().is_none() {
                family.to_string()
            } else {
                format!(
                    "{family}:{}",
                    serde_json::to_string(&params).unwrap_or_default()
                )
            };
            Error::input(format!(
                "`{item}` is the label of a format ({label}), not an id: name it `{spelled}`"
            ))
        }
        _ => e,
    })
}

/// Run the command; with `portion`, rank that portion only and print its document (JSON).
pub fn run(
    paths: &[String],
    methods: &[Method],
    jobs: Option<usize>,
    portion: Option<Portion>,
    format: Format,
    svg: Option<&Path>,
) -> Result<()> {
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} tensors  {elapsed} (eta {eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let progress = |done: usize, total: usize| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    };
    if portion.is_some() {
        let doc = quantscope::commands::model_json(&paths, methods, jobs, portion, &progress)?;
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        super::output::print_json(&doc);
        return Ok(());
    }
    let report = quantscope::commands::model(&paths, methods, jobs, &progress)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    match format {
        Format::Json => super::output::print_json(&json(&report)),
        Format::Csv => print!("{}", csv(&report, methods)),
        Format::Table => print!("{}", table(&report, methods)),
    }
    match svg {
        Some(path) => write_svg(&report, methods, path),
        None => Ok(()),
    }
}

/// The JSON document: `{"tensors": [...], "load_errors": [...]}`.
pub fn json(report: &ModelReport) -> Value {
    serde_json::to_value(report).unwrap_or_default()
}

/// The CSV document (see [`quantscope::model::csv`]).
pub fn csv(report: &ModelReport, methods: &[Method]) -> String {
    let ids: Vec<String> = methods.iter().map(|m| m.id.clone()).collect();
    model::csv(report, &ids)
}

/// Write the layer profile of `report` to `path` as SVG.
fn write_svg(report: &ModelReport, methods: &[Method], path: &Path) -> Result<()> {
    let ids: Vec<String> = methods.iter().map(|m| m.id.clone()).collect();
    write_profile_svg(report, &ids, path)
}

/// Write the layer profile of `report`, ranked with the methods `ids`, to `path` as SVG.
pub fn write_profile_svg(report: &ModelReport, ids: &[String], path: &Path) -> Result<()> {
    let view = model::layer_profile(&report.tensors, ids, None);
    let svg = layer_profile_svg(&view, &Style::default(), (1200, 420)).map_err(Error::input)?;
    std::fs::write(path, svg)
        .map_err(|e| Error::input(format!("cannot write {}: {e}", path.display())))
}

/// A terminal table: SQNR (dB) per method, worst tensor first.
pub fn table(report: &ModelReport, methods: &[Method]) -> String {
    let mut out = String::new();
    let ranked = report.tensors.iter().filter(|t| t.error.is_none()).count();
    let _ = writeln!(
        out,
        "{} tensors ({ranked} ranked), worst first by the SQNR of [1]; SQNR in dB:",
        report.tensors.len()
    );
    for (i, m) in methods.iter().enumerate() {
        let _ = writeln!(out, "  [{}] {}", i + 1, m.id);
    }
    let width = report
        .tensors
        .iter()
        .map(|t| t.name.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 60);
    let _ = write!(out, "{:width$} {:16} {:9}", "name", "shape", "dtype");
    for i in 0..methods.len() {
        let _ = write!(out, " {:>7}", format!("[{}]", i + 1));
    }
    let _ = writeln!(out, " {:>9} {:>9}", "absmax/σ", "kurtosis");
    for t in &report.tensors {
        let _ = write!(
            out,
            "{:width$} {:16} {:9}",
            t.name,
            format!("{:?}", t.shape),
            t.dtype
        );
        if let Some(e) = &t.error {
            let _ = writeln!(out, " skipped: {e}");
            continue;
        }
        for m in methods {
            let cell = match t.results.iter().find(|r| r.id == m.id) {
                None => "-".to_string(),
                Some(r) if r.error.is_some() => "error".to_string(),
                Some(r) => r.sqnr_db.map_or("∞".to_string(), |v| format!("{v:.1}")),
            };
            let _ = write!(out, " {cell:>7}");
        }
        let stat = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        let s = t.stats;
        let _ = write!(
            out,
            " {:>9} {:>9}",
            stat(s.and_then(|s| s.absmax_over_std)),
            stat(s.and_then(|s| s.kurtosis))
        );
        if t.nonfinite.total() > 0 {
            let _ = write!(out, "  ({} non-finite)", t.nonfinite.total());
        }
        out.push('\n');
        for r in t.results.iter().filter(|r| r.error.is_some()) {
            let _ = writeln!(
                out,
                "    {}: {}",
                r.id,
                r.error.as_deref().unwrap_or_default()
            );
        }
    }
    for e in &report.load_errors {
        let _ = writeln!(out, "cannot read {}: {}", e.file, e.error);
    }
    // The worst tensors in words (every row's diagnosis is in --json).
    let worst: Vec<_> = report
        .tensors
        .iter()
        .filter_map(|t| Some((t, t.diagnosis.as_deref()?)))
        .take(WORST_DIAGNOSED)
        .collect();
    if !worst.is_empty() {
        let _ = writeln!(out, "\nThe worst {}:", worst.len());
        for (t, text) in worst {
            let _ = writeln!(out, "  {}: {text}", t.name);
        }
    }
    out
}

/// How many of the worst tensors the table follows with their diagnosis.
const WORST_DIAGNOSED: usize = 3;
