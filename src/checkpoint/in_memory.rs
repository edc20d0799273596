//! A whole checkpoint file held in memory read as tensors: what the explorer (the page, the npm
//! package's `loadTensor`) does with a file that is not a `.npy`, `.npz` or `.safetensors`
//! (a PyTorch pickle, a GGUF file, an ONNX model). The file is listed by the checkpoint reader
//! (for a pickle: the allow-listed virtual machine, nothing executed) and every tensor decoded,
//! quantized ones through their codecs.

use super::builder::{assemble, list_file};
use super::source::InMemory;
use super::{decode_entry, CatalogFile, CheckpointKind};
use crate::error::{Error, Result};
use crate::tensor::{rename_load_error, NamedTensor, Tensor};

/// The kinds [`read`] is for: checkpoints the explorer's own readers do not parse.
pub fn is_checkpoint_only(bytes: &[u8], name: &str) -> bool {
    matches!(
        super::builder::kind_of(&InMemory(bytes), name),
        Some(CheckpointKind::Torch | CheckpointKind::Gguf | CheckpointKind::Onnx)
    )
}

/// Every tensor of the checkpoint file `name` held whole in `bytes`, named as the checkpoint
/// names them (a pickle's dotted paths, GGUF names, ONNX initializers), in file order; a tensor
/// without elements is kept, empty. A file that cannot be listed (a refused pickle names the
/// global it met), or a tensor that cannot be decoded, is an error naming it.
pub fn read(name: &str, bytes: &[u8]) -> Result<Vec<NamedTensor>> {
    let listing = list_file(name, &InMemory(bytes))
        .map_err(|_| Error::load(name, "the file is shorter than its header says"))?;
    let file = CatalogFile {
        name: name.to_string(),
        len: bytes.len() as u64,
        kind: None,
    };
    let catalog = assemble(vec![(file, listing)]);
    if let Some(e) = catalog.load_errors.first() {
        return Err(Error::load(name, e.error.clone()));
    }
    catalog
        .entries
        .iter()
        .map(|e| {
            if e.elements == 0 {
                // Listed with a problem (nothing to quantize), but a tensor of the file all the
                // same, as the explorer's own readers keep it.
                return Ok(NamedTensor {
                    name: e.name.clone(),
                    tensor: Tensor::new(e.shape.clone(), Vec::new())?,
                });
            }
            let what = || format!("{name}: {}", e.name);
            let raw = usize::try_from(e.range.start)
                .ok()
                .zip(usize::try_from(e.range.end).ok())
                .and_then(|(start, end)| bytes.get(start..end))
                .ok_or_else(|| Error::load(what(), "its bytes lie outside the file"))?;
            let tensor = decode_entry(e, raw).map_err(|err| rename_load_error(err, name))?;
            Ok(NamedTensor {
                name: e.name.clone(),
                tensor,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_not_a_checkpoint_is_not_taken() {
        assert!(!is_checkpoint_only(b"\x93NUMPY\x01\x00", "x.npy"));
        assert!(is_checkpoint_only(b"GGUF\x03\x00\x00\x00", "m.gguf"));
    }

    #[test]
    fn a_truncated_gguf_is_an_error_naming_the_file() {
        let err = read("m.gguf", b"GGUF\x03\x00\x00\x00")
            .unwrap_err()
            .to_string();
        assert!(err.contains("m.gguf"), "{err}");
    }
}
