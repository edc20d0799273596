//! From files to a [`Catalog`]: list each file ([`list_file`]), then put the listings together
//! ([`assemble`]): an index's shards in its place, tensors of missing shards with the reason.
//!
//! [`CatalogBuilder`] drives the listing without any I/O of its own, for the page's Web Worker:
//!
//! ```
//! use quantscope::checkpoint::{CatalogBuilder, Step};
//! # let file = quantscope::checkpoint::gguf::write(&[("w", 0, &[2], &[0u8; 8])]);
//! let mut builder = CatalogBuilder::new([("model.gguf".to_string(), file.len() as u64)]);
//! let catalog = loop {
//!     match builder.step() {
//!         // The page answers each request with `await file.slice(start, end).arrayBuffer()`.
//!         Step::Need(requests) => {
//!             for r in requests {
//!                 builder.supply(r.file, r.start, &file[r.start as usize..r.end as usize]);
//!             }
//!         }
//!         Step::Ready(catalog) => break catalog,
//!     }
//! };
//! assert_eq!(catalog.entries[0].name, "w");
//! // Then, for each tensor: bytes = file.slice(range.start, range.end), and
//! // `quantscope::checkpoint::decode_entry(&entry, &bytes)`.
//! ```

use super::index::{self, ShardIndex};
use super::source::{bytes, Parse, PartialBytes, Stop};
use super::{
    gguf, npy, npz, onnx, safetensors, torch_pickle, ByteSource, Catalog, CatalogFile,
    CheckpointKind, Entry, EntryDType, LoadError, OnnxModel,
};
use serde::Serialize;
use std::collections::HashMap;
use std::ops::Range;

/// What one file holds.
#[derive(Debug, Clone, PartialEq)]
pub enum FileListing {
    /// Its tensors (their `file` field is set by [`assemble`]).
    Tensors(Vec<Entry>),
    /// A shard index.
    Index(ShardIndex),
    /// An ONNX model: its initializers (some in the external data files it names) and its
    /// graph's quantization.
    Onnx(Box<onnx::OnnxListing>),
    /// The file cannot be listed; the reason.
    Failed(String),
}

/// List one file called `name` (its path or file name; the extension decides when there is no
/// magic): its listing, or the byte ranges that must be supplied first.
pub fn list_file(name: &str, src: &dyn ByteSource) -> Result<FileListing, Vec<Range<u64>>> {
    let outcome = (|| {
        let Some(kind) = file_kind(src, name)? else {
            return Err(Stop::Bad(
                "not a .safetensors, .npz, .npy, .gguf, .onnx, PyTorch (.pt, .pth, .bin) or .safetensors.index.json file (unrecognised magic bytes and extension)".into(),
            ));
        };
        Ok(match kind {
            CheckpointKind::Npy => FileListing::Tensors(npy::list(src, &tensor_name_of(name))?),
            CheckpointKind::Npz => FileListing::Tensors(npz::list(src)?),
            CheckpointKind::Safetensors => FileListing::Tensors(safetensors::list(src)?),
            CheckpointKind::Gguf => FileListing::Tensors(gguf::list(src)?),
            CheckpointKind::SafetensorsIndex => FileListing::Index(index::list(src)?),
            CheckpointKind::Onnx => FileListing::Onnx(Box::new(onnx::list(src)?)),
            CheckpointKind::Torch => {
                FileListing::Tensors(torch_pickle::list(src, &tensor_name_of(name))?)
            }
        })
    })();
    match outcome {
        Ok(listing) => Ok(listing),
        Err(Stop::Bad(reason)) => Ok(FileListing::Failed(reason)),
        Err(Stop::Need(range)) => Err(vec![range]),
        Err(Stop::NeedAll(ranges)) => Err(ranges),
    }
}

/// The kind of file `name` is: its magic bytes, then for a zip archive its members (one
/// holding `*/data.pkl` is a PyTorch checkpoint, whatever its name), then its extension.
fn file_kind(src: &dyn ByteSource, name: &str) -> Parse<Option<CheckpointKind>> {
    let prefix = bytes(src, 0..src.len().min(8), "the first bytes")?;
    let kind = CheckpointKind::detect(prefix, name);
    if kind != Some(CheckpointKind::Npz) || !prefix.starts_with(b"PK") {
        return Ok(kind);
    }
    match torch_pickle::is_torch_zip(src) {
        Ok(true) => Ok(Some(CheckpointKind::Torch)),
        Ok(false) => Ok(kind),
        // An unreadable directory: the listing says why, as the name suggests the format.
        Err(Stop::Bad(_)) => Ok(CheckpointKind::by_name(name)
            .filter(|k| *k == CheckpointKind::Torch)
            .or(kind)),
        Err(need) => Err(need),
    }
}

/// The kind of file `name` is, from the bytes of `src` available (its first bytes and name
/// when a zip's directory is not).
pub fn kind_of(src: &dyn ByteSource, name: &str) -> Option<CheckpointKind> {
    match file_kind(src, name) {
        Ok(kind) => kind,
        Err(_) => {
            let prefix = src.get(0..src.len().min(8)).unwrap_or_default();
            CheckpointKind::detect(prefix, name)
        }
    }
}

/// The tensor name of a `.npy` file (or of a tensor saved alone by `torch.save`): its file
/// name without folder and extension.
fn tensor_name_of(file: &str) -> String {
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let lower = base.to_ascii_lowercase();
    let stem = [".npy", ".pt", ".pth", ".bin"]
        .iter()
        .find_map(|ext| lower.strip_suffix(ext));
    match stem {
        Some(stem) => base.get(..stem.len()).unwrap_or(base).to_string(),
        None => base.to_string(),
    }
}

/// The file name after the last `/` or `\`.
fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// Put listed files together into a catalogue. Files come in the order given; an index takes
/// its shards (found by their path next to the index, or else by file name) to its place, in
/// shard-name order, so a shard given both on its own and through its index is listed once.
pub fn assemble(files: Vec<(CatalogFile, FileListing)>) -> Catalog {
    let by_name: HashMap<&str, usize> = files
        .iter()
        .enumerate()
        .map(|(i, (f, _))| (f.name.as_str(), i))
        .collect();
    let by_base: HashMap<&str, usize> = files
        .iter()
        .enumerate()
        .map(|(i, (f, _))| (base_name(&f.name), i))
        .collect();
    // Which file each index shard is, and which files an index claims.
    let mut claimed = vec![false; files.len()];
    let mut shard_files: HashMap<(usize, &str), usize> = HashMap::new();
    for (i, (f, listing)) in files.iter().enumerate() {
        if let FileListing::Index(ix) = listing {
            for shard in &ix.shards {
                let path = index::shard_path(&f.name, shard);
                let found = by_name
                    .get(path.as_str())
                    .or_else(|| by_base.get(base_name(shard)))
                    .copied()
                    .filter(|&j| j != i && !claimed[j]);
                if let Some(j) = found {
                    claimed[j] = true;
                    shard_files.insert((i, shard.as_str()), j);
                }
            }
        }
    }
    // Which file each ONNX model's external data location is (a data file may serve several
    // models; it is not listed on its own).
    let mut external_files: HashMap<(usize, usize), usize> = HashMap::new();
    for (i, (f, listing)) in files.iter().enumerate() {
        if let FileListing::Onnx(l) = listing {
            for (k, location) in l.external.iter().enumerate() {
                let path = index::shard_path(&f.name, location);
                let found = by_name
                    .get(path.as_str())
                    .or_else(|| by_base.get(base_name(location)))
                    .copied()
                    .filter(|&j| j != i && !matches!(files[j].1, FileListing::Onnx(_)));
                if let Some(j) = found {
                    claimed[j] = true;
                    external_files.insert((i, k), j);
                }
            }
        }
    }
    let mut catalog = Catalog {
        files: files.iter().map(|(f, _)| f.clone()).collect(),
        ..Catalog::default()
    };
    let tensors_of = |j: usize, out: &mut Vec<Entry>| {
        if let Some((_, FileListing::Tensors(entries))) = files.get(j) {
            out.extend(entries.iter().cloned().map(|mut e| {
                e.file = j;
                e
            }));
        }
    };
    for (i, (f, listing)) in files.iter().enumerate() {
        if claimed[i] {
            continue;
        }
        match listing {
            FileListing::Tensors(_) => tensors_of(i, &mut catalog.entries),
            FileListing::Onnx(l) => {
                let first_entry = catalog.entries.len();
                for (k, e) in l.entries.iter().enumerate() {
                    let mut e = e.clone();
                    e.file = i;
                    if let Some(loc) = l.external_of.get(k).copied().flatten() {
                        let location = l.external.get(loc).map_or("", String::as_str);
                        match external_files.get(&(i, loc)) {
                            None => e.flag(format!(
                                "its external data file `{location}` (beside the model) is missing"
                            )),
                            Some(&j) => {
                                e.file = j;
                                let (name, len) = (&files[j].0.name, files[j].0.len);
                                if e.range.end > len {
                                    e.flag(format!(
                                        "external data bytes {}..{} lie beyond the end of `{name}` ({len} bytes)",
                                        e.range.start, e.range.end
                                    ));
                                }
                            }
                        }
                    }
                    catalog.entries.push(e);
                }
                catalog.onnx.push(OnnxModel {
                    file: i,
                    first_entry,
                    count: l.entries.len(),
                    qdq: l.qdq.clone(),
                });
            }
            FileListing::Failed(reason) => catalog.load_errors.push(LoadError {
                file: f.name.clone(),
                error: reason.clone(),
            }),
            FileListing::Index(ix) => {
                for shard in &ix.shards {
                    let wanted = ix.weight_map.iter().filter(|(_, s)| s == shard);
                    let missing = |reason: String| {
                        wanted.clone().map(move |(tensor, _)| {
                            let mut e = Entry::unreadable(
                                tensor.clone(),
                                EntryDType::Foreign("?".into()),
                                reason.clone(),
                            );
                            e.file = i;
                            e
                        })
                    };
                    match shard_files.get(&(i, shard.as_str())).copied() {
                        None => catalog.entries.extend(missing(format!(
                            "shard `{shard}` listed in the index is missing"
                        ))),
                        Some(j) => match &files[j].1 {
                            FileListing::Tensors(entries) => {
                                tensors_of(j, &mut catalog.entries);
                                let held: std::collections::HashSet<&str> =
                                    entries.iter().map(|e| e.name.as_str()).collect();
                                catalog.entries.extend(
                                    missing(format!(
                                        "listed in the index under shard `{shard}`, which does not hold it"
                                    ))
                                    .filter(|e| !held.contains(e.name.as_str())),
                                );
                            }
                            FileListing::Failed(reason) => {
                                catalog.load_errors.push(LoadError {
                                    file: files[j].0.name.clone(),
                                    error: reason.clone(),
                                });
                                catalog.entries.extend(missing(format!(
                                    "shard `{shard}` cannot be read: {reason}"
                                )));
                            }
                            FileListing::Index(_) => catalog.entries.extend(missing(format!(
                                "shard `{shard}` is an index, not a .safetensors file"
                            ))),
                            FileListing::Onnx(_) => catalog.entries.extend(missing(format!(
                                "shard `{shard}` is an ONNX model, not a .safetensors file"
                            ))),
                        },
                    }
                }
            }
        }
    }
    catalog
}

/// A byte range of one file that a [`CatalogBuilder`] needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct ByteRequest {
    /// Index of the file, in the order given to [`CatalogBuilder::new`].
    pub file: usize,
    pub start: u64,
    pub end: u64,
}

/// What a [`CatalogBuilder`] needs next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Supply these ranges, then step again.
    Need(Vec<ByteRequest>),
    /// Every file is listed.
    Ready(Catalog),
}

/// The smallest range a builder asks for: headers are read in generous slices, and each
/// further slice of a file is at least as large as what it already holds, so a header of any
/// size takes a logarithmic number of round trips.
pub const MIN_REQUEST: u64 = 64 << 10;

/// Lists files whose bytes the caller supplies on request (no I/O of its own; see the module
/// example).
#[derive(Debug, Clone, Default)]
pub struct CatalogBuilder {
    files: Vec<(CatalogFile, PartialBytes, Option<FileListing>)>,
}

impl CatalogBuilder {
    /// A builder for files given as `(name, size in bytes)`; names are paths within a dropped
    /// folder (`checkpoint/model.safetensors.index.json`) or plain file names.
    pub fn new(files: impl IntoIterator<Item = (String, u64)>) -> Self {
        CatalogBuilder {
            files: files
                .into_iter()
                .map(|(name, len)| {
                    let kind = CheckpointKind::detect(&[], &name);
                    (
                        CatalogFile { name, len, kind },
                        PartialBytes::new(len),
                        None,
                    )
                })
                .collect(),
        }
    }

    /// The bytes of file `file` at `offset` (an answer to a [`ByteRequest`]).
    pub fn supply(&mut self, file: usize, offset: u64, data: &[u8]) {
        if let Some((_, bytes, _)) = self.files.get_mut(file) {
            bytes.supply(offset, data);
        }
    }

    /// Bytes `range` of file `file`, if they have been supplied.
    pub fn held(&self, file: usize, range: Range<u64>) -> Option<&[u8]> {
        self.files.get(file)?.1.get(range)
    }

    /// List every file with the bytes supplied so far.
    pub fn step(&mut self) -> Step {
        let mut requests = Vec::new();
        for (i, (file, bytes, listing)) in self.files.iter_mut().enumerate() {
            if listing.is_some() {
                continue;
            }
            match list_file(&file.name, bytes) {
                Ok(l) => {
                    file.kind = kind_of(bytes, &file.name);
                    *listing = Some(l);
                }
                Err(needs) => match needs.as_slice() {
                    // A header of unknown size: a generous slice, growing with what is held.
                    [need] => {
                        let len = (need.end - need.start).max(MIN_REQUEST).max(bytes.held());
                        let end = need.start.saturating_add(len).min(file.len).max(need.end);
                        requests.push(ByteRequest {
                            file: i,
                            start: need.start,
                            end,
                        });
                    }
                    // Several small records of known size: each exactly.
                    _ => requests.extend(needs.iter().map(|r| ByteRequest {
                        file: i,
                        start: r.start,
                        end: r.end,
                    })),
                },
            }
        }
        if !requests.is_empty() {
            return Step::Need(requests);
        }
        Step::Ready(assemble(
            self.files
                .iter()
                .map(|(f, _, l)| {
                    (
                        f.clone(),
                        l.clone().unwrap_or(FileListing::Failed(String::new())),
                    )
                })
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_names_of_npy_files() {
        assert_eq!(tensor_name_of("a/b/l0_out.NPY"), "l0_out");
        assert_eq!(tensor_name_of("x.npy"), "x");
        assert_eq!(tensor_name_of("c:\\d\\y.npy"), "y");
        assert_eq!(tensor_name_of("ckpt/pytorch_model.bin"), "pytorch_model");
        assert_eq!(tensor_name_of("t.PT"), "t");
    }
}
