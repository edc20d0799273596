//! What the native front ends run: the CLI's commands (`src/bin/quantscope`) and the Python
//! module (`src/python.rs`) call these and only format (text, JSON) or convert (Python objects)
//! what they return, so both give the same documents: `observe --json` is [`report_json`],
//! `formats --json` [`formats_json`], `quantize --json` [`quantize_json`], `inspect --json`
//! [`inspect`], `model --json` a [`crate::model::ModelReport`], `diff --json` a
//! [`crate::diff::DiffReport`]; [`model_json`] and [`diff_json`] also write one portion of
//! the work (`--shard I/N`, [`crate::portion`]).
//!
//! Native only (files are memory-mapped, work is spread with rayon).

pub mod inputs;

use crate::checkpoint::layouts::Layout;
use crate::checkpoint::native::Checkpoint;
use crate::checkpoint::weights::Weight;
use crate::codec::{self, FormatResult};
use crate::diff::native::{diff_paths, diff_paths_portion};
use crate::diff::DiffReport;
use crate::engine::{NonFinitePolicy, Report, Run};
use crate::error::{Error, Result};
use crate::model::{self, Method, ModelReport};
use crate::parallel;
use crate::params::Params;
use crate::portion::{with_portion, Portion, PortionInfo, RowKey};
use crate::quantizers::apply::{self as quantize, Quantized};
use crate::registry;
use crate::shared_stats::SharedStats;
use crate::tensor::{NonFiniteCounts, Tensor};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The observer runs `quantscope observe` makes: each of `observers` with `params`; else the
/// `preset` with `params` merged over its own; else (neither given) every per-tensor observer
/// that corrects no other, with `params`. A quantizer's id is refused with the command that
/// runs it.
pub fn observer_runs(
    observers: &[String],
    preset: Option<&str>,
    params: &Params,
) -> Result<Vec<(String, Params)>> {
    if !observers.is_empty() {
        observers.iter().try_for_each(|id| refuse_a_quantizer(id))?;
        return Ok(observers
            .iter()
            .map(|id| (id.clone(), params.clone()))
            .collect());
    }
    if let Some(name) = preset {
        let preset = registry::find_preset(name)?;
        return Ok(vec![(
            preset.observer.to_string(),
            preset.params.merged(params),
        )]);
    }
    Ok(registry::default_observers()
        .map(|s| (s.id.to_string(), params.clone()))
        .collect())
}

/// `observe` is for observers: a quantizer's id (Quark's ONNX quantizers, a format family) is
/// refused with the command that runs it instead.
fn refuse_a_quantizer(id: &str) -> Result<()> {
    if registry::find(id).is_err()
        && (quantize::QUARK_QUANTIZERS.contains(&id) || codec::find(id).is_ok())
    {
        return Err(Error::input(format!(
            "`{id}` is a quantizer, not an observer: run it with \
             `quantscope quantize FILE --quantizer {id} --params '{{…}}'`"
        )));
    }
    Ok(())
}

/// Every run of `runs` over `batches` at once (rayon, natively), each batch's statistics
/// computed once; the reports come back in order and equal one-at-a-time runs bit for bit.
/// Vector parameters naming a tensor file are read from it ([`inputs::read_vector_params`]);
/// `attributes`, when given, are assigned after construction (the CLI's `--set`).
pub fn observe(
    runs: &[(String, Params)],
    batches: &[Tensor],
    attributes: Option<&Params>,
    policy: NonFinitePolicy,
    explain: bool,
) -> Result<Vec<Report>> {
    let batch_refs: Vec<&Tensor> = batches.iter().collect();
    let _shared = SharedStats::share(&batch_refs);
    parallel::map_items(runs, |(id, params)| {
        let params = inputs::read_vector_params(id, params.clone())?;
        let run = Run::new(id, params, batches)?
            .with_policy(policy)
            .explained(explain);
        Ok(match attributes {
            Some(a) => run.with_attributes(a.clone()),
            None => run,
        }
        .report())
    })
    .into_iter()
    .collect()
}

fn nonfinite_json(n: &NonFiniteCounts) -> Value {
    json!({"nan": n.nan, "pos_inf": n.pos_inf, "neg_inf": n.neg_inf})
}

/// One observer run as JSON (`observe --json`): `observer`, `params`, `min_val`, `max_val`,
/// `scale`, `zero_point`, `metrics`, `nonfinite`, plus `amax` and family extras where the
/// observer has them.
pub fn report_json(report: &Report) -> Value {
    let mut value = serde_json::to_value(report).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("nonfinite".into(), nonfinite_json(&report.nonfinite));
    }
    value
}

/// The formats comparison as JSON (`formats --json`; rows that could not be computed carry
/// `error`).
pub fn formats_json(results: &[Result<FormatResult>]) -> Value {
    Value::Array(
        results
            .iter()
            .map(|r| match r {
                Ok(row) => serde_json::to_value(row).unwrap_or(Value::Null),
                Err(e) => json!({"error": e.to_string()}),
            })
            .collect(),
    )
}

/// `quantize --json`: the quantizer, its storage cost and error, and where the values were
/// written (`out`, null when they were not).
pub fn quantize_json(
    q: &Quantized,
    out: Option<&str>,
    derivation: Option<&crate::codec::explain::BlockDerivation>,
) -> Value {
    let mut doc = serde_json::to_value(q).unwrap_or_default();
    if let Some(map) = doc.as_object_mut() {
        map.insert("out".into(), json!(out));
        if let Some(d) = derivation {
            map.insert("derivation".into(), json!(d));
        }
    }
    doc
}

/// A checkpoint of files or folders, refused when nothing in it could be listed.
fn open_checkpoint(paths: &[PathBuf]) -> Result<Checkpoint> {
    let checkpoint = Checkpoint::open(paths);
    if checkpoint.catalog.entries.is_empty() {
        if let Some(e) = checkpoint.catalog.load_errors.first() {
            return Err(Error::load(e.file.clone(), e.error.clone()));
        }
    }
    Ok(checkpoint)
}

/// `inspect PATH...` as JSON: `files`, `layout`, `tensors` (each weight: name, shape, format,
/// bits per weight, block, stored entries, elements), `summary`, `warnings`, `load_errors`;
/// with the checkpoint and its layout for a table.
pub fn inspect(paths: &[PathBuf]) -> Result<(Value, Checkpoint, Layout)> {
    let checkpoint = open_checkpoint(paths)?;
    let layout = checkpoint.layout();
    let summary = layout.summary(&checkpoint.catalog);
    let doc = json!({
        "files": checkpoint.catalog.files.iter().map(|f| &f.name).collect::<Vec<_>>(),
        "layout": layout.name,
        "tensors": layout.weights.iter().map(weight_json).collect::<Vec<_>>(),
        "summary": summary,
        "warnings": layout.warnings,
        "load_errors": checkpoint.catalog.load_errors,
    });
    Ok((doc, checkpoint, layout))
}

fn weight_json(w: &Weight) -> Value {
    let mut v = serde_json::to_value(w).unwrap_or_default();
    v["elements"] = json!(w.elements());
    v
}

/// Every weight of `paths` decoded to float32, in the checkpoint's order, named as `inspect`
/// names them (a quantized layout's weights decoded through their codecs; a GGUF file's
/// quantized tensors likewise). A weight that cannot be read fails the whole call with its
/// reason.
pub fn tensors(paths: &[PathBuf]) -> Result<Vec<(String, Tensor)>> {
    let checkpoint = open_checkpoint(paths)?;
    let layout = checkpoint.layout();
    if layout.weights.is_empty() {
        return Err(Error::input("no tensors found in the given paths"));
    }
    layout
        .weights
        .iter()
        .map(|w| {
            if let Some(problem) = &w.problem {
                return Err(Error::load(w.name.clone(), problem.clone()));
            }
            let mut t = checkpoint.read_weight(w)?;
            if t.shape.iter().product::<usize>() == t.data.len() && !w.shape.is_empty() {
                t.shape.clone_from(&w.shape);
            }
            Ok((w.name.clone(), t))
        })
        .collect()
}

/// Write float32 tensors `(name, shape, values)` as one `.safetensors` file at `path` (what
/// `quantscope.capture(...).save(path)` writes for the page, the CLI and `model`).
pub fn save_safetensors(path: &Path, tensors: &[(String, Vec<usize>, Vec<f32>)]) -> Result<()> {
    use safetensors::tensor::{Dtype, TensorView};
    let bytes: Vec<Vec<u8>> = tensors
        .iter()
        .map(|(_, _, values)| values.iter().flat_map(|v| v.to_le_bytes()).collect())
        .collect();
    let views = tensors
        .iter()
        .zip(&bytes)
        .map(|((name, shape, _), data)| {
            TensorView::new(Dtype::F32, shape.clone(), data)
                .map(|view| (name.clone(), view))
                .map_err(|e| Error::input(format!("{name}: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    safetensors::serialize_to_file(views, None, path)
        .map_err(|e| Error::load(path.display().to_string(), format!("cannot write: {e}")))
}

/// Rank every tensor of the checkpoint at `paths` with `methods` on `jobs` threads
/// (`model --json`); `progress(done, total)` after each tensor.
pub fn model(
    paths: &[PathBuf],
    methods: &[Method],
    jobs: Option<usize>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<ModelReport> {
    Ok(rank_model(paths, methods, jobs, None, progress)?.0)
}

/// The `model --json` document of [`model()`]; with `portion`, that portion's tensors only and
/// its `portion` ([`crate::portion`]: `--shard I/N`), for [`crate::portion::merge`].
pub fn model_json(
    paths: &[PathBuf],
    methods: &[Method],
    jobs: Option<usize>,
    portion: Option<Portion>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Value> {
    let (report, info) = rank_model(paths, methods, jobs, portion, progress)?;
    let doc = serde_json::to_value(&report).unwrap_or_default();
    Ok(match info {
        Some(info) => with_portion(doc, &info),
        None => doc,
    })
}

fn rank_model(
    paths: &[PathBuf],
    methods: &[Method],
    jobs: Option<usize>,
    portion: Option<Portion>,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(ModelReport, Option<PortionInfo>)> {
    let checkpoint = Checkpoint::open(paths);
    let catalog = &checkpoint.catalog;
    if catalog.entries.is_empty() {
        return Err(match catalog.load_errors.as_slice() {
            [] => Error::input("no tensors found in the given paths"),
            [one] => Error::load(one.file.clone(), one.error.clone()),
            all => Error::load(
                all.iter()
                    .map(|e| e.file.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                format!(
                    "no tensors could be listed; {}",
                    all.iter()
                        .map(|e| format!("{}: {}", e.file, e.error))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            ),
        });
    }
    let jobs = jobs
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1);
    let Some(portion) = portion else {
        let report = model::rank_checkpoint(&checkpoint, methods, jobs, progress)?;
        return Ok((report, None));
    };
    let elements: Vec<u64> = catalog.entries.iter().map(|e| e.elements as u64).collect();
    let range = portion.range(&elements);
    let report = model::rank_positions(&checkpoint, range.clone(), methods, jobs, progress)?;
    let info = PortionInfo {
        index: portion.index,
        count: portion.count,
        command: "model".into(),
        files: catalog.files.iter().map(|f| f.name.clone()).collect(),
        settings: methods.iter().map(|m| m.id.clone()).collect(),
        items: catalog.entries.len(),
        range: [range.start, range.end],
        shared_lint: 0,
        keys: report
            .tensors
            .iter()
            .map(|row| RowKey::of_model(model::rank_key(row, methods)))
            .collect(),
    };
    Ok((report, Some(info)))
}

/// Run `f` on a rayon pool of its own (one thread per core), not on rayon's global pool: the
/// global pool's threads do not survive a `fork`, and a process forked after it has started
/// (Python's `multiprocessing` and `ProcessPoolExecutor` fork on Linux) would wait for them
/// forever. `model` ranks on a pool of its own likewise ([`model::rank_checkpoint`]).
fn on_own_pool<T: Send>(f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    rayon::ThreadPoolBuilder::new()
        .build()
        .map_err(|e| Error::input(format!("cannot start worker threads: {e}")))?
        .install(f)
}

/// A quantized checkpoint against its original (`diff --json`), refused when there is nothing
/// to compare.
pub fn diff(original: &Path, quantized: &Path, imatrix: Option<&Path>) -> Result<DiffReport> {
    let report = on_own_pool(|| diff_paths(&[original.into()], &[quantized.into()], imatrix))?;
    if report.pairs.is_empty() && report.unpaired.quantized.is_empty() {
        return Err(nothing_to_compare(original, quantized));
    }
    Ok(report)
}

fn nothing_to_compare(original: &Path, quantized: &Path) -> Error {
    Error::input(format!(
        "no weights to compare in {} and {}",
        original.display(),
        quantized.display()
    ))
}

/// The `diff --json` document of [`diff`]; with `portion`, that portion's pairs only (with the
/// unpaired weights and the checkpoints' lint, as every portion has them) and its `portion`
/// ([`crate::portion`]: `--shard I/N`), for [`crate::portion::merge`].
pub fn diff_json(
    original: &Path,
    quantized: &Path,
    imatrix: Option<&Path>,
    portion: Option<Portion>,
) -> Result<Value> {
    let Some(portion) = portion else {
        let report = diff(original, quantized, imatrix)?;
        return Ok(serde_json::to_value(&report).unwrap_or_default());
    };
    let part = on_own_pool(|| {
        diff_paths_portion(&[original.into()], &[quantized.into()], imatrix, portion)
    })?;
    if part.pairs == 0 && part.report.unpaired.quantized.is_empty() {
        return Err(nothing_to_compare(original, quantized));
    }
    Ok(part.document)
}
