//! Tensor arguments read from files, as the CLI and the Python module take them: `FILE` or
//! `FILE:member` of an `.npz`/`.safetensors`/`.gguf`/`.onnx`/PyTorch `.pt`/`.pth`/`.bin` (GGUF,
//! ONNX and PyTorch files through the checkpoint catalogue, one tensor read at a time);
//! vector parameters given as file names; float32 `.npy` results written.

use crate::checkpoint::native::Checkpoint;
use crate::engine::split_batches;
use crate::error::{Error, Result};
use crate::params::{ParamKind, Params};
use crate::registry;
use crate::tensor::{pick, split_spec, Tensor};
use npyz::WriterBuilder;
use serde_json::Value;
use std::path::PathBuf;

/// GGUF, ONNX and PyTorch files are read through the checkpoint catalogue.
fn through_catalogue(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".gguf", ".onnx", ".pt", ".pth", ".bin"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// One tensor of a GGUF, ONNX or PyTorch file through the checkpoint catalogue: the named one,
/// or the only one.
fn read_catalogue_tensor(path: &str, member: Option<&str>) -> Result<Tensor> {
    let checkpoint = Checkpoint::open(&[PathBuf::from(path)]);
    let catalog = &checkpoint.catalog;
    if let Some(e) = catalog.load_errors.first() {
        return Err(Error::load(path, e.error.clone()));
    }
    let names: Vec<&str> = catalog.entries.iter().map(|e| e.name.as_str()).collect();
    let entry = match member {
        Some(name) => catalog.entries.iter().find(|e| e.name == name),
        None if catalog.entries.len() == 1 => catalog.entries.first(),
        None => None,
    };
    let Some(entry) = entry else {
        return Err(Error::load(
            path,
            format!(
                "name one of its {} tensors as `file:name`{}; available: {}",
                names.len(),
                member
                    .map(|m| format!(" (`{m}` is not one)"))
                    .unwrap_or_default(),
                names.join(", ")
            ),
        ));
    };
    checkpoint.read(entry)
}

/// One tensor per argument: the file's only tensor, or the named member.
pub fn read_tensor(arg: &str) -> Result<Tensor> {
    let (path, member) = split_spec(arg);
    if through_catalogue(path) {
        return read_catalogue_tensor(path, member);
    }
    let tensors = crate::tensor::mapped::read_file(std::path::Path::new(path))?;
    pick(tensors, member)
        .map(|named| named.tensor)
        .map_err(|e| match e {
            Error::Input(reason) => Error::load(path, reason),
            other => other,
        })
}

/// The calibration batches named on the command line, optionally split along an axis.
pub fn read_batches(args: &[String], split_axis: Option<usize>) -> Result<Vec<Tensor>> {
    let tensors = args
        .iter()
        .map(|a| read_tensor(a))
        .collect::<Result<Vec<_>>>()?;
    match split_axis {
        None => Ok(tensors),
        Some(axis) => {
            let mut batches = Vec::new();
            for tensor in &tensors {
                batches.extend(split_batches(tensor, axis, None)?);
            }
            Ok(batches)
        }
    }
}

/// Parameters that take a vector of numbers (`imatrix`) may name a tensor file instead
/// (`"imatrix": "imatrix.npy"` or `"FILE.npz:member"`): load it, flattened, as the array.
pub fn resolve_vector_files(params: Params) -> Result<Params> {
    let mut map = params.0;
    for key in ["imatrix"] {
        if let Some(Value::String(spec)) = map.get(key).cloned() {
            let t = read_tensor(&spec).map_err(|e| Error::param(key, e.to_string()))?;
            map.insert(key.to_string(), Value::from(t.data));
        }
    }
    Ok(Params(map))
}

/// Write `values` as a float32 little-endian `.npy` of `shape`.
pub fn write_npy_f32(path: &str, shape: &[usize], values: &[f32]) -> Result<()> {
    let fail = |e: std::io::Error| Error::load(path, format!("cannot write: {e}"));
    let file = std::fs::File::create(path).map_err(fail)?;
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&shape)
        .writer(std::io::BufWriter::new(file))
        .begin_nd()
        .map_err(fail)?;
    writer.extend(values.iter().copied()).map_err(fail)?;
    writer.finish().map_err(fail)
}

/// `params` with every vector parameter of observer `id` (kind `vector`, e.g.
/// `llmcompressor.imatrix_mse`'s `importance`) that names a tensor file — `"imatrix.npy"` or
/// `"stats.npz:member"` — replaced by the file's values in C order (an unknown observer is left
/// to the driver to refuse).
pub fn read_vector_params(id: &str, mut params: Params) -> Result<Params> {
    let Ok(spec) = registry::find(id) else {
        return Ok(params);
    };
    for p in spec.params.iter().filter(|p| p.kind == ParamKind::Vector) {
        let Some(Value::String(path)) = params.0.get(p.name) else {
            continue;
        };
        let tensor = read_tensor(path)?;
        let bad = tensor.data.iter().filter(|v| !v.is_finite()).count();
        if bad > 0 {
            return Err(Error::param(
                p.name,
                format!(
                    "{path} holds {bad} NaN/Inf values; `{}` takes finite numbers",
                    p.name
                ),
            ));
        }
        let values: Vec<f64> = tensor.data.iter().map(|&v| v as f64).collect();
        params.0.insert(p.name.to_string(), Value::from(values));
    }
    Ok(params)
}
