//! Checkpoints on disk: paths (files or folders) to a [`Catalog`], and reads of one tensor at a
//! time.
//!
//! Listing maps each file and touches only its header pages. Reading a tensor reads just its
//! byte range into a buffer, dropped once decoded, so the resident memory of a run is the
//! tensors being worked on, whatever the size of the checkpoint. A long plain range (more than
//! [`READ_WINDOW`]) is decoded a window at a time, each window mapped and unmapped.
//!
//! Why both: a map costs a page fault per 64 KiB and, when it is unmapped while another thread
//! runs, a TLB shootdown on every core; a read copies the bytes from the page cache. For the
//! many ranges of a few megabytes a diff reads, the maps took more system time than the copies
//! (3,492 pairs: 0.26–0.47 s against 0.21–0.29 s); for 16 MiB windows the copy costs more
//! (a 2 GiB checkpoint: 0.85 s read against 0.55 s mapped). (A file must not shrink while it
//! is mapped: a page past a file's new end would fault. Each read checks the file's length
//! first, and a read that finds the file shorter is an error.)

use super::builder::{assemble, list_file, FileListing};
use super::index::shard_path;
use super::layouts::{self, Configs, Layout};
use super::source::InMemory;
use super::weights::{read_weight, Weight};
use super::{decode_entry, Catalog, CatalogFile, CheckpointKind, Entry, EntryBytes, LoadError};
use crate::error::{Error, Result};
use crate::tensor::decode::{decode_to, item_size, ByteOrder};
use crate::tensor::{DType, Tensor};
use memmap2::{Mmap, MmapOptions};
use std::fs::File;
use std::path::{Path, PathBuf};

/// A catalogue of files on disk, able to read each of its tensors.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    pub catalog: Catalog,
    /// The configuration files found beside the tensor files (`config.json`, …).
    pub configs: Configs,
}

/// The largest configuration file read (a `config.json` is a few kilobytes).
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The configuration files of the first folder among `paths` (a folder given, or the folder of a
/// file given) that holds any; unreadable ones become load errors.
fn configs_of(paths: &[PathBuf], errors: &mut Vec<LoadError>) -> Configs {
    let mut configs = Configs::default();
    let folders = paths.iter().filter_map(|p| {
        if p.is_dir() {
            Some(p.clone())
        } else {
            p.parent().map(Path::to_path_buf)
        }
    });
    for folder in folders {
        let mut found = false;
        for name in Configs::FILES {
            let path = folder.join(name);
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            found = true;
            let outcome = if meta.len() > MAX_CONFIG_BYTES {
                Err(format!(
                    "{name} has {} bytes, more than a configuration file can ({MAX_CONFIG_BYTES})",
                    meta.len()
                ))
            } else {
                std::fs::read(&path)
                    .map_err(|e| format!("cannot read: {e}"))
                    .and_then(|text| configs.take(name, &text))
            };
            if let Err(error) = outcome {
                errors.push(LoadError {
                    file: path.to_string_lossy().into_owned(),
                    error,
                });
            }
        }
        if found {
            break;
        }
    }
    configs
}

/// Decode `bytes` into `out` (one place per element) in pieces side by side.
fn decode_pieces(dtype: DType, order: ByteOrder, bytes: &[u8], out: &mut [f32]) {
    use rayon::prelude::*;
    let piece = crate::parallel::CHUNK;
    out.par_chunks_mut(piece)
        .zip(bytes.par_chunks(piece * item_size(dtype)))
        .for_each(|(out, bytes)| decode_to(dtype, order, bytes, out));
}

/// Bytes of a plain range mapped at a time when it is decoded ([`Checkpoint::read`]).
const READ_WINDOW: u64 = 16 << 20;

/// A read-only map of `len` bytes of `file` from `offset` (`None` for an empty range, which
/// cannot be mapped).
fn map(file: &File, offset: u64, len: u64) -> std::io::Result<Option<Mmap>> {
    if len == 0 {
        return Ok(None);
    }
    let len = usize::try_from(len)
        .map_err(|_| std::io::Error::other("the range is larger than this machine can map"))?;
    // SAFETY: the map is read-only and private to this call; callers check the file's length
    // first. A file truncated by another process during the read would fault (documented in
    // the module docs), as with any memory-mapped reader.
    unsafe { MmapOptions::new().offset(offset).len(len).map(file) }.map(Some)
}

/// `len` bytes of `file` from `offset`, read into memory of their own (not zeroed first).
fn read_range(file: &File, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let size = usize::try_from(len)
        .map_err(|_| std::io::Error::other("the range is larger than this machine can address"))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(size)
        .map_err(|_| std::io::Error::other(format!("cannot allocate {size} bytes to read")))?;
    let mut file = file;
    file.seek(SeekFrom::Start(offset))?;
    file.take(len).read_to_end(&mut bytes)?;
    if bytes.len() != size {
        return Err(std::io::Error::other(format!(
            "the file ended {} bytes into a range of {size}",
            bytes.len()
        )));
    }
    Ok(bytes)
}

/// Files to list for `paths`: files as given, folders expanded recursively to the files a
/// checkpoint reader wants (sorted by path).
fn expand(paths: &[PathBuf]) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
        let Ok(read) = std::fs::read_dir(dir) else {
            out.push(dir.to_path_buf());
            return;
        };
        let mut found: Vec<(PathBuf, bool)> = read
            .flatten()
            .map(|e| (e.path(), e.file_type().is_ok_and(|t| t.is_dir())))
            .collect();
        found.sort();
        for (path, is_dir) in found {
            if is_dir && depth < 16 {
                walk(&path, out, depth + 1);
            } else if !is_dir
                && path.is_file()
                && CheckpointKind::wanted_in_directory(&path.to_string_lossy())
            {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            walk(p, &mut found, 0);
            out.extend(model_files_first(p, found));
        } else {
            out.push(p.clone());
        }
    }
    out
}

/// The files of folder `dir` that make its checkpoint: when the folder holds a model (a
/// `.safetensors`, GGUF, ONNX or PyTorch file at its top level), `.npy`/`.npz` arrays in its
/// subfolders (reference outputs, calibration dumps) are not tensors of that model and are left
/// out; a folder of activation dumps keeps all of them. A Hugging Face folder with both
/// `.safetensors` weights and PyTorch ones (`pytorch_model.bin`, its index) holds the same
/// tensors twice: the PyTorch files of a folder that holds `.safetensors` files are left out
/// ([`super::shadowed_torch_files`]; the page's folders too).
fn model_files_first(dir: &Path, found: Vec<PathBuf>) -> Vec<PathBuf> {
    let lower = |p: &Path| p.to_string_lossy().to_ascii_lowercase();
    let is_array = |p: &Path| {
        let l = lower(p);
        l.ends_with(".npy") || l.ends_with(".npz")
    };
    let top = |p: &Path| p.parent() == Some(dir);
    let has_model = found.iter().any(|p| top(p) && !is_array(p));
    let names: Vec<String> = found
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let shadowed =
        super::shadowed_torch_files(&names.iter().map(String::as_str).collect::<Vec<_>>());
    found
        .into_iter()
        .zip(shadowed)
        .filter(|(p, shadowed)| !shadowed && (!has_model || top(p) || !is_array(p)))
        .map(|(p, _)| p)
        .collect()
}

/// Whether `path` (an ONNX model's external data file) resolves inside the folder of `model`,
/// symbolic links followed.
fn inside_folder_of(model: &Path, path: &Path) -> bool {
    let folder = match model.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (folder.canonicalize(), path.canonicalize()) {
        (Ok(root), Ok(target)) => target.starts_with(root),
        _ => false,
    }
}

/// List one file on disk.
fn list_path(path: &Path) -> (CatalogFile, FileListing) {
    let name = path.to_string_lossy().into_owned();
    let failed = |len: u64, reason: String| {
        (
            CatalogFile {
                name: name.clone(),
                len,
                kind: None,
            },
            FileListing::Failed(reason),
        )
    };
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) => return failed(0, format!("cannot open: {e}")),
    };
    let len = match file.metadata() {
        Ok(m) if m.is_file() => m.len(),
        Ok(_) => return failed(0, "not a regular file".into()),
        Err(e) => return failed(0, format!("cannot stat: {e}")),
    };
    let mapped = match map(&file, 0, len) {
        Ok(m) => m,
        Err(e) => return failed(len, format!("cannot map: {e}")),
    };
    let bytes: &[u8] = mapped.as_deref().unwrap_or_default();
    let src = InMemory(bytes);
    let listing = match list_file(&name, &src) {
        Ok(l) => l,
        // A mapped file has every byte; a request can only mean a reader bug.
        Err(r) => FileListing::Failed(format!("internal error: bytes {r:?} were asked for")),
    };
    let kind = super::kind_of(&src, &name);
    (CatalogFile { name, len, kind }, listing)
}

impl Checkpoint {
    /// List every tensor of `paths`: `.safetensors` files or shards, a
    /// `*.safetensors.index.json` (its shards are found next to it), `.npz`, `.npy`, GGUF, ONNX
    /// files (their external data files are found next to them) and PyTorch checkpoints
    /// (`.pt`, `.pth`, `.bin`), and folders of them. Files that cannot be listed become
    /// [`Catalog::load_errors`].
    pub fn open(paths: &[PathBuf]) -> Checkpoint {
        let mut files: Vec<PathBuf> = expand(paths);
        let mut listed: Vec<(CatalogFile, FileListing)> = Vec::new();
        let mut escaped = Vec::new();
        let mut i = 0;
        while i < files.len() {
            let entry = list_path(&files[i]);
            let (needed, external): (&[String], bool) = match &entry.1 {
                FileListing::Index(ix) => (&ix.shards, false),
                // External data files (their locations were checked not to leave the folder).
                FileListing::Onnx(l) => (&l.external, true),
                _ => (&[], false),
            };
            for shard in needed {
                let path = PathBuf::from(shard_path(&entry.0.name, shard));
                if !path.is_file() || files.contains(&path) {
                    continue;
                }
                if external && !inside_folder_of(&files[i], &path) {
                    escaped.push(LoadError {
                        file: path.to_string_lossy().into_owned(),
                        error: "external data file refused: through a symbolic link it lies outside the model's folder".into(),
                    });
                    continue;
                }
                files.push(path);
            }
            listed.push(entry);
            i += 1;
        }
        let mut catalog = assemble(listed);
        catalog.load_errors.extend(escaped);
        let configs = configs_of(paths, &mut catalog.load_errors);
        let mut checkpoint = Checkpoint { catalog, configs };
        for i in layouts::json_entries(&checkpoint.catalog) {
            let entry = &checkpoint.catalog.entries[i];
            let bytes = checkpoint
                .bytes(entry)
                .map(|b| b.to_vec())
                .map_err(|e| e.to_string());
            checkpoint.configs.take_entry(&entry.name, bytes);
        }
        checkpoint
    }

    /// The weights of this checkpoint under its layout ([`layouts::weights`]).
    pub fn layout(&self) -> Layout {
        layouts::weights(&self.catalog, &self.configs)
    }

    /// Decode `weight` (one of [`Checkpoint::layout`]'s), reading each entry it needs in turn.
    pub fn read_weight(&self, weight: &Weight) -> Result<Tensor> {
        read_weight(&self.catalog, weight, &mut |e| self.bytes(e))
    }

    /// Read the tensor of `entry` (from this checkpoint's catalogue): read its byte range,
    /// decode.
    pub fn read(&self, entry: &Entry) -> Result<Tensor> {
        self.read_reusing(entry, Vec::new())
    }

    /// [`Checkpoint::read`], decoding plain ranges into `buffer`'s memory when it is large
    /// enough (a reader that ranks tensor after tensor hands back the previous one's values).
    pub fn read_reusing(&self, entry: &Entry, buffer: Vec<f32>) -> Result<Tensor> {
        if let Some(problem) = &entry.problem {
            return Err(Error::load(entry.name.clone(), problem.clone()));
        }
        if let super::Storage::Plain {
            dtype,
            order,
            fortran: false,
        } = entry.storage
        {
            let size = entry.range.end - entry.range.start;
            let whole = (entry.elements as u64).checked_mul(item_size(dtype) as u64);
            if size > READ_WINDOW && whole == Some(size) {
                return self.read_windows(entry, dtype, order, buffer, READ_WINDOW);
            }
        }
        self.with_range(entry, |bytes| decode_entry(entry, bytes))
    }

    /// [`Checkpoint::read`] with a plain range decoded `window` bytes at a time whatever its
    /// length (the fuzz oracle checks the windowed read with windows far smaller than
    /// [`READ_WINDOW`], see [`crate::checkpoint::selfcheck::check_native`]); other storages are
    /// read whole.
    #[doc(hidden)]
    pub fn read_in_windows(&self, entry: &Entry, window: u64) -> Result<Tensor> {
        if let (
            None,
            super::Storage::Plain {
                dtype,
                order,
                fortran: false,
            },
        ) = (&entry.problem, &entry.storage)
        {
            let (dtype, order) = (*dtype, *order);
            let size = entry.range.end - entry.range.start;
            let whole = (entry.elements as u64).checked_mul(item_size(dtype) as u64);
            if whole == Some(size) && window >= item_size(dtype) as u64 {
                return self.read_windows(entry, dtype, order, Vec::new(), window);
            }
        }
        self.read(entry)
    }

    /// A long plain range decoded `window` bytes at a time ([`READ_WINDOW`]), each window mapped
    /// and unmapped in turn: the process holds the decoded values and one window of the file,
    /// rather than the whole range beside its decoding.
    fn read_windows(
        &self,
        entry: &Entry,
        dtype: DType,
        order: ByteOrder,
        mut values: Vec<f32>,
        window: u64,
    ) -> Result<Tensor> {
        let (file, fail) = self.open_entry_file(entry)?;
        // The file holds every byte of the range, so the count is backed by data.
        if values.capacity() / 2 > entry.elements {
            values = Vec::new(); // do not keep a far larger tensor's memory for a small one
        }
        // Every element is decoded below, so the previous tensor's values are only
        // overwritten: the buffer is neither cleared nor zeroed (zeroing 180 MB cost as much as
        // decoding it), only grown where it is too short.
        values.truncate(entry.elements);
        values.resize(entry.elements, 0.0);
        let item = item_size(dtype);
        let step = window - window % item as u64;
        let mut at = entry.range.start;
        let mut filled = 0;
        while at < entry.range.end {
            let n = step.min(entry.range.end - at);
            if let Some(window) = map(&file, at, n).map_err(|e| fail(e.to_string()))? {
                let out = &mut values[filled..filled + window.len() / item];
                decode_pieces(dtype, order, &window, out);
                filled += window.len() / item;
            }
            at += n;
        }
        Ok(Tensor {
            shape: entry.shape.clone(),
            data: values,
            dtype,
        })
    }

    /// The bytes of `entry`'s range, read into a buffer of their own.
    pub fn bytes(&self, entry: &Entry) -> Result<EntryBytes<'static>> {
        self.read_bytes(entry).map(EntryBytes::Read)
    }

    /// Read `entry`'s byte range, hand it to `f`, drop it.
    fn with_range<T>(&self, entry: &Entry, f: impl FnOnce(&[u8]) -> Result<T>) -> Result<T> {
        f(&self.read_bytes(entry)?)
    }

    /// `entry`'s file, opened and checked to still hold every byte of its range, with the
    /// error a failure to read it then gives.
    fn open_entry_file<'a>(
        &'a self,
        entry: &'a Entry,
    ) -> Result<(File, impl Fn(String) -> Error + 'a)> {
        let name = self.catalog.file_name(entry);
        let fail = move |reason: String| Error::load(format!("{name}: {}", entry.name), reason);
        let file = File::open(name).map_err(|e| fail(format!("cannot open: {e}")))?;
        let len = file
            .metadata()
            .map_err(|e| fail(format!("cannot stat: {e}")))?
            .len();
        if entry.range.end > len {
            return Err(fail(format!(
                "the file now has {len} bytes, fewer than the {} it had when listed",
                entry.range.end
            )));
        }
        Ok((file, fail))
    }

    /// `entry`'s byte range, read.
    fn read_bytes(&self, entry: &Entry) -> Result<Vec<u8>> {
        let (file, fail) = self.open_entry_file(entry)?;
        read_range(
            &file,
            entry.range.start,
            entry.range.end - entry.range.start,
        )
        .map_err(|e| fail(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A range is read whole; a range past the file's end is an error naming how far the file
    /// went, not a short read.
    #[test]
    fn a_range_is_read_whole_or_refused() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&(0u8..100).collect::<Vec<_>>()).unwrap();
        assert_eq!(read_range(&file, 10, 5).unwrap(), [10, 11, 12, 13, 14]);
        assert!(read_range(&file, 0, 0).unwrap().is_empty());
        let error = read_range(&file, 90, 20).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the file ended 10 bytes into a range of 20"
        );
    }
}
