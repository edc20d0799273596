//! Reading the CLI's tensor arguments (`FILE` or `FILE:member` of an `.npz`/`.safetensors`/
//! `.gguf`/`.onnx`/PyTorch `.pt`/`.pth`/`.bin`; GGUF, ONNX and PyTorch files through the
//! checkpoint catalogue, one memory-mapped tensor at a time),
//! loading vector parameters given as file names, and writing float32 `.npy` results.

use npyz::WriterBuilder;
use quantscope::checkpoint::native::Checkpoint;
use quantscope::engine::split_batches;
use quantscope::error::{Error, Result};
use quantscope::params::Params;
use quantscope::tensor::{pick, split_spec, NamedTensor, Tensor};
use serde_json::Value;
use std::path::PathBuf;

/// Every tensor of a file (a `:member` suffix, if any, is ignored here), read through a memory
/// map: float32 data without a copy where possible ([`quantscope::tensor::mapped`]).
pub fn read_file(arg: &str) -> Result<Vec<NamedTensor>> {
    let (path, _) = split_spec(arg);
    if through_catalogue(path) {
        return read_catalogue(path);
    }
    quantscope::tensor::mapped::read_file(std::path::Path::new(path))
}

/// GGUF, ONNX and PyTorch files are read through the checkpoint catalogue.
fn through_catalogue(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".gguf", ".onnx", ".pt", ".pth", ".bin"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// Every tensor of a GGUF, ONNX or PyTorch file through the checkpoint catalogue (an ONNX
/// model's external data files found beside it); a tensor that cannot be read is skipped with a
/// warning.
fn read_catalogue(path: &str) -> Result<Vec<NamedTensor>> {
    let checkpoint = Checkpoint::open(&[PathBuf::from(path)]);
    if let Some(e) = checkpoint.catalog.load_errors.first() {
        return Err(Error::load(path, e.error.clone()));
    }
    let mut out = Vec::new();
    for entry in &checkpoint.catalog.entries {
        match checkpoint.read(entry) {
            Ok(tensor) => out.push(NamedTensor {
                name: entry.name.clone(),
                tensor,
            }),
            Err(e) => eprintln!("quantscope: skipped {e}"),
        }
    }
    Ok(out)
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
    let tensors = read_file(arg)?;
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
