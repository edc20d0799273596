//! `quantscope merge PORTION.json...`: the documents of every portion of a `model` or `diff`
//! (`--shard I/N --json`) put together into the document the command prints when it runs whole
//! ([`quantscope::portion::merge`]).

use quantscope::diff::DiffRow;
use quantscope::error::{Error, Result};
use quantscope::model::ModelReport;
use quantscope::plot::svg::layer_profile_svg;
use quantscope::plot::Style;
use quantscope::portion::{self, Command, Merged};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Read every document, merge them, print JSON (or CSV), and write the layer profile to `svg`.
pub fn run(documents: &[PathBuf], csv: bool, svg: Option<&Path>) -> Result<()> {
    let docs = documents
        .iter()
        .map(|path| {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(path)
                .map_err(|e| Error::load(name.clone(), format!("cannot read: {e}")))?;
            serde_json::from_str::<Value>(&text)
                .map_err(|e| Error::load(name, format!("not a JSON document: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    let merged = portion::merge(&docs)
        .map_err(|e| Error::input(format!("{e} (documents: {})", names(documents))))?;
    if csv {
        print!("{}", csv_of(&merged)?);
    } else {
        super::output::print_json(&merged.document);
    }
    match svg {
        Some(path) => write_svg(&merged, path),
        None => Ok(()),
    }
}

fn names(documents: &[PathBuf]) -> String {
    documents
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{} = {}", i + 1, p.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn model_report(merged: &Merged) -> Result<ModelReport> {
    serde_json::from_value(merged.document.clone())
        .map_err(|e| Error::input(format!("the merged ranking cannot be read back: {e}")))
}

fn diff_rows(merged: &Merged) -> Result<Vec<DiffRow>> {
    serde_json::from_value(merged.document["pairs"].clone()).map_err(|e| {
        Error::input(format!(
            "the merged pairs cannot be read back (a metric that JSON writes as null?): {e}; \
             print them with --json"
        ))
    })
}

fn csv_of(merged: &Merged) -> Result<String> {
    Ok(match merged.command {
        Command::Model => quantscope::model::csv(&model_report(merged)?, &merged.settings),
        Command::Diff => quantscope::diff::csv::csv(&diff_rows(merged)?),
    })
}

fn write_svg(merged: &Merged, path: &Path) -> Result<()> {
    let view = match merged.command {
        Command::Model => {
            return super::model_cmd::write_profile_svg(
                &model_report(merged)?,
                &merged.settings,
                path,
            )
        }
        Command::Diff => quantscope::diff::layer_profile(&diff_rows(merged)?, None),
    };
    let doc = layer_profile_svg(&view, &Style::default(), (1200, 420)).map_err(Error::input)?;
    std::fs::write(path, doc)
        .map_err(|e| Error::input(format!("cannot write {}: {e}", path.display())))
}
