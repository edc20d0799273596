//! The checkpoint commands: `inspect` (what is stored and how), `dequantize` (every stored
//! weight decoded to float) and `diff` (a quantized checkpoint against its original).

use quantscope::checkpoint::layouts::{Layout, StorageSummary};
use quantscope::checkpoint::native::Checkpoint;
use quantscope::checkpoint::weights::Weight;
use quantscope::diff::DiffReport;
use quantscope::error::{Error, Result};
use quantscope::plot::svg::layer_profile_svg;
use quantscope::plot::Style;
use quantscope::portion::Portion;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn paths(args: &[String]) -> Vec<PathBuf> {
    args.iter().map(PathBuf::from).collect()
}

/// `inspect PATH...` as a table.
pub fn inspect_table(checkpoint: &Checkpoint, layout: &Layout) -> String {
    let summary = layout.summary(&checkpoint.catalog);
    let width = layout
        .weights
        .iter()
        .map(|w| w.name.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 64);
    let mut out = String::new();
    let files: Vec<&str> = checkpoint
        .catalog
        .files
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    let _ = writeln!(
        out,
        "{}: {} tensor(s){}",
        files.join(", "),
        layout.weights.len(),
        layout
            .name
            .as_ref()
            .map(|n| format!(", layout {n}"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "  {:width$} {:18} {:34} {:>6} {:>9}",
        "name", "shape", "format", "block", "bits/w"
    );
    for w in &layout.weights {
        let _ = writeln!(
            out,
            "  {:width$} {:18} {:34} {:>6} {:>9.4}{}",
            w.name,
            format!("{:?}", w.shape),
            w.format,
            w.block.map(|b| b.to_string()).unwrap_or_default(),
            w.bits_per_weight,
            w.problem
                .as_ref()
                .map(|p| format!("  ! {p}"))
                .unwrap_or_default()
        );
    }
    summary_lines(&mut out, &summary);
    for w in &layout.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for e in &checkpoint.catalog.load_errors {
        let _ = writeln!(out, "cannot read {}: {}", e.file, e.error);
    }
    out
}

fn summary_lines(out: &mut String, s: &StorageSummary) {
    let _ = writeln!(
        out,
        "{} values in {} bytes: {:.4} bits per weight",
        s.elements, s.bytes, s.bits_per_weight
    );
    for (format, c) in &s.formats {
        let _ = writeln!(
            out,
            "  {format:34} {:>5} tensor(s) {:>12} values {:>12} bytes",
            c.tensors, c.elements, c.bytes
        );
    }
}

/// `inspect PATH... [--json]`.
pub fn inspect(args: &[String], as_json: bool) -> Result<()> {
    let (doc, checkpoint, layout) = quantscope::commands::inspect(&paths(args))?;
    if as_json {
        super::output::print_json(&doc);
    } else {
        print!("{}", inspect_table(&checkpoint, &layout));
    }
    Ok(())
}

/// The stored dtype of a dequantized checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutDtype {
    F32,
    F16,
    Bf16,
}

/// A file name for weight `name`: path separators and leading dots made harmless.
fn file_name_of(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | '\0') {
                '_'
            } else {
                c
            }
        })
        .collect();
    let trimmed = cleaned.trim_start_matches('.');
    if trimmed.is_empty() {
        "_".to_string()
    } else {
        trimmed.to_string()
    }
}

/// `dequantize PATH... [--tensor NAME]... --out DIR|FILE.safetensors [--dtype]`.
pub fn dequantize(args: &[String], tensors: &[String], out: &Path, dtype: OutDtype) -> Result<()> {
    let checkpoint = Checkpoint::open(&paths(args));
    let layout = checkpoint.layout();
    let chosen: Vec<&Weight> = if tensors.is_empty() {
        layout.weights.iter().collect()
    } else {
        tensors
            .iter()
            .map(|t| {
                layout.weights.iter().find(|w| &w.name == t).ok_or_else(|| {
                    Error::input(format!(
                        "no weight named `{t}`; `quantscope inspect` lists them"
                    ))
                })
            })
            .collect::<Result<_>>()?
    };
    if chosen.is_empty() {
        return Err(Error::input("no weights found in the given paths"));
    }
    let to_safetensors = out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("safetensors"));
    let started = std::time::Instant::now();
    let mut failures = Vec::new();
    if to_safetensors {
        write_safetensors(&checkpoint, &chosen, out, dtype, &mut failures)?;
    } else {
        if dtype != OutDtype::F32 {
            return Err(Error::input(
                "--dtype applies to a .safetensors output; .npy files are float32",
            ));
        }
        std::fs::create_dir_all(out)
            .map_err(|e| Error::input(format!("cannot create {}: {e}", out.display())))?;
        for w in &chosen {
            match checkpoint.read_weight(w) {
                Ok(t) => {
                    let path = out.join(format!("{}.npy", file_name_of(&w.name)));
                    quantscope::commands::inputs::write_npy_f32(
                        &path.to_string_lossy(),
                        &w.shape,
                        &t.data,
                    )?;
                }
                Err(e) => failures.push(format!("{}: {e}", w.name)),
            }
        }
    }
    eprintln!(
        "dequantized {} of {} weight(s) to {} in {:.2} s",
        chosen.len() - failures.len(),
        chosen.len(),
        out.display(),
        started.elapsed().as_secs_f64()
    );
    for f in &failures {
        eprintln!("skipped {f}");
    }
    Ok(())
}

/// Write `weights` decoded into one `.safetensors` file, one weight in memory at a time.
fn write_safetensors(
    checkpoint: &Checkpoint,
    weights: &[&Weight],
    out: &Path,
    dtype: OutDtype,
    failures: &mut Vec<String>,
) -> Result<()> {
    use safetensors::tensor::{Dtype, View};
    use std::borrow::Cow;
    struct Lazy<'a> {
        checkpoint: &'a Checkpoint,
        weight: &'a Weight,
        dtype: OutDtype,
    }
    impl View for &Lazy<'_> {
        fn dtype(&self) -> Dtype {
            match self.dtype {
                OutDtype::F32 => Dtype::F32,
                OutDtype::F16 => Dtype::F16,
                OutDtype::Bf16 => Dtype::BF16,
            }
        }
        fn shape(&self) -> &[usize] {
            &self.weight.shape
        }
        fn data(&self) -> Cow<'_, [u8]> {
            // Readability was checked before writing began.
            let values = self
                .checkpoint
                .read_weight(self.weight)
                .map(|t| t.data)
                .unwrap_or_else(|_| vec![0.0; self.weight.elements()]);
            Cow::Owned(match self.dtype {
                OutDtype::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
                OutDtype::F16 => values
                    .iter()
                    .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
                    .collect(),
                OutDtype::Bf16 => values
                    .iter()
                    .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
                    .collect(),
            })
        }
        fn data_len(&self) -> usize {
            let size = match self.dtype {
                OutDtype::F32 => 4,
                _ => 2,
            };
            self.weight.elements() * size
        }
    }
    // A weight that cannot be read is left out rather than written as zeros.
    let readable: Vec<Lazy> = weights
        .iter()
        .filter(|w| match &w.problem {
            Some(p) => {
                failures.push(format!("{}: {p}", w.name));
                false
            }
            None => true,
        })
        .map(|w| Lazy {
            checkpoint,
            weight: w,
            dtype,
        })
        .collect();
    let views: Vec<(String, &Lazy)> = readable
        .iter()
        .map(|l| (l.weight.name.clone(), l))
        .collect();
    safetensors::serialize_to_file(views, None, out)
        .map_err(|e| Error::input(format!("cannot write {}: {e}", out.display())))
}

/// How `diff` prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffFormat {
    Table,
    Json,
    Csv,
}

/// `diff ORIGINAL QUANTIZED [--imatrix F] [--json|--csv] [--svg OUT] [--shard I/N]`; with
/// `portion`, only that portion's pairs, as its document (JSON).
pub fn diff(
    original: &str,
    quantized: &str,
    imatrix: Option<&Path>,
    portion: Option<Portion>,
    format: DiffFormat,
    svg: Option<&Path>,
) -> Result<()> {
    let started = std::time::Instant::now();
    if portion.is_some() {
        let (original, quantized) = (Path::new(original), Path::new(quantized));
        let doc = quantscope::commands::diff_json(original, quantized, imatrix, portion)?;
        super::output::print_json(&doc);
        eprintln!(
            "compared {} pair(s) of portion {} in {:.2} s",
            doc["pairs"].as_array().map_or(0, Vec::len),
            portion.map(|p| p.to_string()).unwrap_or_default(),
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let report = quantscope::commands::diff(Path::new(original), Path::new(quantized), imatrix)?;
    match format {
        DiffFormat::Json => {
            super::output::print_json(&serde_json::to_value(&report).unwrap_or_default())
        }
        DiffFormat::Csv => print!("{}", diff_csv(&report)),
        DiffFormat::Table => print!("{}", diff_table(&report)),
    }
    if let Some(path) = svg {
        let view = report.layer_profile();
        let doc = layer_profile_svg(&view, &Style::default(), (1200, 420)).map_err(Error::input)?;
        std::fs::write(path, doc)
            .map_err(|e| Error::input(format!("cannot write {}: {e}", path.display())))?;
    }
    eprintln!(
        "compared {} pair(s) in {:.2} s",
        report.pairs.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// How many of the worst pairs the diff table follows with their diagnosis.
const WORST_DIAGNOSED: usize = 3;

/// The diff as CSV: one row per pair, ranked worst first (shared with the page's export).
pub fn diff_csv(r: &DiffReport) -> String {
    quantscope::diff::csv::csv(&r.pairs)
}

/// The diff as a terminal table.
pub fn diff_table(r: &DiffReport) -> String {
    let mut out = String::new();
    let width = r
        .pairs
        .iter()
        .map(|p| p.original.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 60);
    let _ = writeln!(
        out,
        "{} pair(s), worst first; SQNR in dB, and round-to-nearest in the same format:",
        r.pairs.len()
    );
    let _ = writeln!(
        out,
        "  {:width$} {:40} {:>7} {:>8} {:>8} {:>10} {:>8}",
        "original", "format", "bits/w", "SQNR", "RTN", "NMSE", "cosine"
    );
    let db = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.2}"));
    for p in &r.pairs {
        let m = p.metrics;
        let _ = writeln!(
            out,
            "  {:width$} {:40} {:>7.3} {:>8} {:>8} {:>10} {:>8}{}",
            p.original,
            p.format,
            p.bits_per_weight,
            db(m.and_then(|m| m.sqnr_db)),
            db(p.rtn.as_ref().and_then(|r| r.metrics.sqnr_db)),
            m.map_or("-".into(), |m| format!("{:.3e}", m.nmse)),
            m.map_or("-".into(), |m| format!("{:.6}", m.cosine)),
            p.error
                .as_ref()
                .map(|e| format!("  ! {e}"))
                .unwrap_or_default()
        );
    }
    for (side, names) in [
        ("original", &r.unpaired.original),
        ("quantized", &r.unpaired.quantized),
    ] {
        if !names.is_empty() {
            let _ = writeln!(
                out,
                "only in the {side} ({}): {}",
                names.len(),
                names.join(", ")
            );
        }
    }
    if !r.lint.is_empty() {
        let _ = writeln!(out, "lint:");
        for l in &r.lint {
            let _ = writeln!(out, "  [{}] {}: {}", l.kind, l.tensor, l.message);
        }
    }
    // The worst pairs in words (every row's diagnosis is in --json).
    let worst: Vec<_> = r
        .pairs
        .iter()
        .filter_map(|t| Some((t, t.diagnosis.as_deref()?)))
        .take(WORST_DIAGNOSED)
        .collect();
    if !worst.is_empty() {
        let _ = writeln!(out, "the worst {}:", worst.len());
        for (t, text) in worst {
            let _ = writeln!(out, "  {}: {text}", t.original);
        }
    }
    out
}
