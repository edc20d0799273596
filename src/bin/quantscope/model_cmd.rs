//! `quantscope model PATH...`: rank every tensor of a checkpoint by what quantization does to
//! it, as a table, JSON or CSV.

use quantscope::checkpoint::native::Checkpoint;
use quantscope::error::{Error, Result};
use quantscope::model::{self, methods, Method, ModelReport};
use serde_json::Value;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;

/// How to print the ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

/// The methods named on the command line: the defaults when neither list is given, otherwise
/// exactly the observers and formats listed.
pub fn methods_from(observers: Option<&str>, formats: Option<&str>) -> Result<Vec<Method>> {
    if observers.is_none() && formats.is_none() {
        return Ok(model::default_methods());
    }
    let items = |list: Option<&str>| -> Vec<String> {
        list.unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let mut out = Vec::new();
    for id in items(observers) {
        out.push(methods::observer(&id)?);
    }
    for label in items(formats) {
        out.push(methods::format(&label)?);
    }
    if out.is_empty() {
        return Err(Error::input(
            "no methods: name at least one observer (--observers) or format (--formats)",
        ));
    }
    Ok(out)
}

/// Run the command.
pub fn run(
    paths: &[String],
    methods: &[Method],
    jobs: Option<usize>,
    format: Format,
) -> Result<()> {
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let checkpoint = Checkpoint::open(&paths);
    let catalog = &checkpoint.catalog;
    if catalog.entries.is_empty() {
        let reasons: Vec<String> = catalog
            .load_errors
            .iter()
            .map(|e| format!("{}: {}", e.file, e.error))
            .collect();
        return Err(Error::input(if reasons.is_empty() {
            "no tensors found in the given paths".to_string()
        } else {
            format!("no tensors could be listed; {}", reasons.join("; "))
        }));
    }
    let jobs = jobs
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1);
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(catalog.entries.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} tensors  {elapsed} (eta {eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let progress = |done: usize, _total: usize| {
        if let Some(bar) = &bar {
            bar.set_position(done as u64);
        }
    };
    let report = model::rank_checkpoint(&checkpoint, methods, jobs, &progress)?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    match format {
        Format::Json => super::output::print_json(&json(&report)),
        Format::Csv => print!("{}", csv(&report, methods)),
        Format::Table => print!("{}", table(&report, methods)),
    }
    Ok(())
}

/// The JSON document: `{"tensors": [...], "load_errors": [...]}`.
pub fn json(report: &ModelReport) -> Value {
    serde_json::to_value(report).unwrap_or_default()
}

fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{v}")).unwrap_or_default()
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One line per tensor, worst first: the tensor, its statistics, four columns per method
/// (`<id> sqnr_db`, `<id> mse`, `<id> max_abs_err`, `<id> clipped_fraction`), and the reason
/// a tensor was skipped.
pub fn csv(report: &ModelReport, methods: &[Method]) -> String {
    let mut header: Vec<String> = [
        "name",
        "file",
        "shape",
        "dtype",
        "elements",
        "nan",
        "pos_inf",
        "neg_inf",
        "min",
        "max",
        "mean",
        "std",
        "kurtosis",
        "absmax_over_std",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for m in methods {
        for metric in ["sqnr_db", "mse", "max_abs_err", "clipped_fraction"] {
            header.push(format!("{} {metric}", m.id));
        }
    }
    header.push("error".into());
    let mut out = header
        .iter()
        .map(|h| field(h))
        .collect::<Vec<_>>()
        .join(",")
        + "\n";
    for t in &report.tensors {
        let s = t.stats;
        let shape: Vec<String> = t.shape.iter().map(usize::to_string).collect();
        let mut cells = vec![
            t.name.clone(),
            t.file.clone(),
            shape.join("x"),
            t.dtype.clone(),
            t.elements.to_string(),
            t.nonfinite.nan.to_string(),
            t.nonfinite.pos_inf.to_string(),
            t.nonfinite.neg_inf.to_string(),
        ];
        for v in [
            s.and_then(|s| s.min),
            s.and_then(|s| s.max),
            s.and_then(|s| s.mean),
            s.and_then(|s| s.std),
            s.and_then(|s| s.kurtosis),
            s.and_then(|s| s.absmax_over_std),
        ] {
            cells.push(num(v));
        }
        for m in methods {
            match t.results.iter().find(|r| r.id == m.id) {
                Some(r) => cells.extend([
                    num(r.sqnr_db),
                    num(r.mse),
                    num(r.max_abs_err),
                    num(r.clipped_fraction),
                ]),
                None => cells.extend(std::iter::repeat_n(String::new(), 4)),
            }
        }
        let errors: Vec<String> = t
            .error
            .iter()
            .cloned()
            .chain(
                t.results
                    .iter()
                    .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.id))),
            )
            .collect();
        cells.push(errors.join("; "));
        out += &cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",");
        out.push('\n');
    }
    out
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
    out
}
