//! Reading the CLI's tensor arguments: `FILE` or `FILE:member` (`.npz`, `.safetensors`, `.gguf`).
//! GGUF files are read through the checkpoint catalogue (one memory-mapped tensor at a time).

use quantscope::checkpoint::native::Checkpoint;
use quantscope::engine::split_batches;
use quantscope::error::{Error, Result};
use quantscope::tensor::{pick, read_tensors, split_spec, NamedTensor, Tensor};
use std::path::PathBuf;

/// Every tensor of a file (a `:member` suffix, if any, is ignored here).
pub fn read_file(arg: &str) -> Result<Vec<NamedTensor>> {
    let (path, _) = split_spec(arg);
    let bytes = std::fs::read(path).map_err(|e| Error::load(path, e.to_string()))?;
    read_tensors(&bytes, path)
}

/// One tensor of a GGUF file through the checkpoint catalogue: the named one, or the only one.
fn read_gguf_tensor(path: &str, member: Option<&str>) -> Result<Tensor> {
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
                "name one of its {} tensors as `file.gguf:name`{}; available: {}",
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
    if path.to_ascii_lowercase().ends_with(".gguf") {
        return read_gguf_tensor(path, member);
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
                batches.extend(split_batches(tensor, axis)?);
            }
            Ok(batches)
        }
    }
}
