//! Reading the CLI's tensor arguments: `FILE` or `FILE:member`.

use quantscope::engine::split_batches;
use quantscope::error::{Error, Result};
use quantscope::tensor::{read_tensors, NamedTensor, Tensor};
use std::path::Path;

/// Every tensor of a file (the `:member` suffix, if any, is ignored here).
pub fn read_file(arg: &str) -> Result<Vec<NamedTensor>> {
    let (path, _) = split_member(arg);
    let bytes = std::fs::read(path).map_err(|e| Error::load(path, e.to_string()))?;
    read_tensors(&bytes, path)
}

/// One tensor per argument: the file's only tensor, or the named member.
pub fn read_tensor(arg: &str) -> Result<Tensor> {
    let (path, member) = split_member(arg);
    let tensors = read_file(arg)?;
    match member {
        Some(name) => tensors
            .into_iter()
            .find(|t| t.name == name || t.name.trim_end_matches(".npy") == name)
            .map(|t| t.tensor)
            .ok_or_else(|| Error::load(path, format!("has no tensor named `{name}`"))),
        None if tensors.len() == 1 => Ok(tensors
            .into_iter()
            .next()
            .map(|t| t.tensor)
            .expect("one tensor")),
        None => {
            let names: Vec<_> = tensors.iter().map(|t| t.name.as_str()).collect();
            Err(Error::load(
                path,
                format!(
                    "holds {} tensors; pick one with `{path}:NAME` (one of: {})",
                    names.len(),
                    names.join(", ")
                ),
            ))
        }
    }
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

/// `path:member` → (`path`, `Some(member)`) unless `path:member` is itself an existing file.
fn split_member(arg: &str) -> (&str, Option<&str>) {
    if Path::new(arg).exists() {
        return (arg, None);
    }
    match arg.rsplit_once(':') {
        Some((path, member)) if !path.is_empty() && !member.is_empty() => (path, Some(member)),
        _ => (arg, None),
    }
}
