//! Reading the CLI's tensor arguments: `FILE` or `FILE:member` (`.npz`, `.safetensors`).

use quantscope::engine::split_batches;
use quantscope::error::{Error, Result};
use quantscope::tensor::{pick, read_tensors, split_spec, NamedTensor, Tensor};

/// Every tensor of a file (a `:member` suffix, if any, is ignored here).
pub fn read_file(arg: &str) -> Result<Vec<NamedTensor>> {
    let (path, _) = split_spec(arg);
    let bytes = std::fs::read(path).map_err(|e| Error::load(path, e.to_string()))?;
    read_tensors(&bytes, path)
}

/// One tensor per argument: the file's only tensor, or the named member.
pub fn read_tensor(arg: &str) -> Result<Tensor> {
    let (path, member) = split_spec(arg);
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
