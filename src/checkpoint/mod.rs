//! Whole checkpoints: list every tensor of one or more files without reading tensor data, then
//! read any one tensor on its own.
//!
//! A [`Catalog`] lists each tensor as an [`Entry`]: its name, the file it lives in, its shape
//! (numpy order, C-contiguous), its dtype and the byte range that holds it. Inputs:
//!
//! * `.safetensors` files: one file or several shards, or a `model.safetensors.index.json` with
//!   its shards ([`index`]);
//! * `.npz` archives, listed from the zip central directory, one member at a time ([`npz`]);
//! * `.npy` files, e.g. a folder of activation dumps ([`npy`]);
//! * GGUF files, versions 2 and 3 ([`gguf`]): F32/F16/BF16 (and I8..I64/F64) tensors, and every
//!   quantized GGML type that has a codec, decoded through it ([`Storage::Coded`]);
//! * ONNX models (`.onnx`, [`onnx`]): every initializer, with external data files beside the
//!   model, and the graph's Q/DQ quantization for the layout;
//! * PyTorch checkpoints (`torch.save`: `pytorch_model.bin`, `.pt`, `.pth`, zip or legacy,
//!   [`torch_pickle`]): every tensor the pickled object reaches, by dotted path, read without
//!   running the pickle (an allow-list as `torch.load(weights_only=True)`'s).
//!
//! **Nothing holds a whole file.** Listing reads headers only, through a [`ByteSource`] that
//! answers "these bytes, or not yet": natively a memory map ([`native`]), in the browser a
//! [`CatalogBuilder`] to which the page supplies the byte ranges it asks for (`File.slice`).
//! Reading a tensor takes exactly its [`Entry::range`] ([`decode_entry`]).
//!
//! **Bad input is reported per tensor.** A tensor that cannot be read keeps its row with a
//! specific [`Entry::problem`] while the rest is listed: a shard missing from the index, a
//! truncated file, overlapping or out-of-file offsets, an unsupported dtype, a zero-element
//! tensor. A file whose header itself cannot be parsed becomes a [`LoadError`]. NaN/Inf values
//! are not a listing problem; they are counted when a tensor is read.

pub mod builder;
pub mod gguf;
pub mod imatrix;
pub mod in_memory;
pub mod index;
pub mod layouts;
#[cfg(not(target_arch = "wasm32"))]
pub mod native;
pub mod npy;
pub mod npz;
pub mod onnx;
mod read;
pub mod safetensors;
#[doc(hidden)]
pub mod selfcheck;
mod source;
pub mod torch_pickle;
mod validate;
pub mod weights;

use crate::tensor::{ByteOrder, DType};
use serde::Serialize;
use std::ops::Range;

pub use builder::{assemble, kind_of, list_file, ByteRequest, CatalogBuilder, FileListing, Step};
pub use read::{contiguous_bytes, decode_entry};
pub use source::{ByteSource, EntryBytes, InMemory, PartialBytes};

/// The kinds of file a catalogue reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointKind {
    Npy,
    Npz,
    Safetensors,
    /// `*.safetensors.index.json`: the map from tensor names to shard files.
    SafetensorsIndex,
    Gguf,
    /// An ONNX model (`.onnx`; protobuf has no magic, so by extension only).
    Onnx,
    /// A PyTorch checkpoint (`torch.save`): a zip holding `*/data.pkl`, or a legacy file.
    Torch,
}

impl CheckpointKind {
    /// Recognise a file by its first bytes (magic), then by its name. A zip archive is
    /// [`CheckpointKind::Npz`] here; whether it is a PyTorch checkpoint instead is said by its
    /// members (`*/data.pkl`), which [`list_file`] reads.
    pub fn detect(prefix: &[u8], name: &str) -> Option<Self> {
        if prefix.starts_with(b"\x93NUMPY") {
            return Some(Self::Npy);
        }
        if prefix.starts_with(b"PK\x03\x04") || prefix.starts_with(b"PK\x05\x06") {
            return Some(Self::Npz);
        }
        if prefix.starts_with(b"GGUF") {
            return Some(Self::Gguf);
        }
        if torch_pickle::is_legacy_prefix(prefix) {
            return Some(Self::Torch);
        }
        Self::by_name(name)
    }

    /// Recognise a file by its name alone.
    pub fn by_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".index.json") {
            return Some(Self::SafetensorsIndex);
        }
        [
            (".safetensors", Self::Safetensors),
            (".npy", Self::Npy),
            (".npz", Self::Npz),
            (".gguf", Self::Gguf),
            (".onnx", Self::Onnx),
            (".pt", Self::Torch),
            (".pth", Self::Torch),
            (".bin", Self::Torch),
        ]
        .into_iter()
        .find(|(ext, _)| lower.ends_with(ext))
        .map(|(_, kind)| kind)
    }

    /// True when a directory listing should pick up a file with this name. `.bin` is a common
    /// extension for anything (ONNX external data, older ggml files, `training_args.bin`): in a
    /// folder only Hugging Face's PyTorch weights are taken (`pytorch_model*.bin`,
    /// `adapter_model*.bin`); a `.bin` file given on its own is always read.
    pub fn wanted_in_directory(name: &str) -> bool {
        let lower = name.to_ascii_lowercase();
        let base = lower.rsplit(['/', '\\']).next().unwrap_or(&lower);
        if base.ends_with(".bin") {
            return base.starts_with("pytorch_model") || base.starts_with("adapter_model");
        }
        [
            ".safetensors",
            ".npy",
            ".npz",
            ".gguf",
            ".onnx",
            ".pt",
            ".pth",
            ".safetensors.index.json",
            ".bin.index.json",
        ]
        .iter()
        .any(|ext| lower.ends_with(ext))
    }
}

/// Which of `names` (the `/`- or `\`-separated paths of a folder's files) are PyTorch files
/// (`.pt`, `.pth`, `.bin`, `.bin.index.json`) beside `.safetensors` files in the same folder: a
/// Hugging Face folder holding both has every weight twice, and a folder is listed with its
/// safetensors only, as `transformers` loads them.
pub fn shadowed_torch_files(names: &[&str]) -> Vec<bool> {
    fn folder(n: &str) -> &str {
        n.rfind(['/', '\\']).map_or("", |i| &n[..i])
    }
    let lower: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
    let with_safetensors: std::collections::HashSet<&str> = names
        .iter()
        .zip(&lower)
        .filter(|(_, l)| l.ends_with(".safetensors") || l.ends_with(".safetensors.index.json"))
        .map(|(n, _)| folder(n))
        .collect();
    names
        .iter()
        .zip(&lower)
        .map(|(n, l)| {
            [".pt", ".pth", ".bin", ".bin.index.json"]
                .iter()
                .any(|ext| l.ends_with(ext))
                && with_safetensors.contains(folder(n))
        })
        .collect()
}

/// The element type of an entry: one quantscope decodes, or the file's own name for one it
/// does not (`Q4_K`, `F8_E8M0`, `C64`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryDType {
    Known(DType),
    Foreign(String),
}

impl EntryDType {
    /// The name shown to users (`float32`, `bfloat16`, `Q4_K`).
    pub fn name(&self) -> &str {
        match self {
            EntryDType::Known(d) => d.name(),
            EntryDType::Foreign(s) => s,
        }
    }
}

impl Serialize for EntryDType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// How the bytes of an entry's range turn into values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// The range holds exactly the elements, in `order`, C order (or Fortran order when
    /// `fortran`, as `.npy` allows).
    Plain {
        dtype: DType,
        order: ByteOrder,
        fortran: bool,
    },
    /// The range holds a zip member (stored or deflated) whose content is a `.npy` file:
    /// `header_len` header bytes, then the elements.
    ZipMember {
        deflated: bool,
        /// Size of the member once decompressed (header included).
        size: u64,
        /// CRC-32 of the decompressed member.
        crc32: u32,
        header_len: u64,
        dtype: DType,
        order: ByteOrder,
        fortran: bool,
    },
    /// The range holds a codec's one stored array (`part`), e.g. a GGUF tensor's ggml blocks:
    /// decoded by the codec `codec` (a registry id such as `ggml.Q4_K`) with its default
    /// parameters.
    Coded { codec: String, part: &'static str },
    /// An ONNX tensor that is not plain little-endian elements ([`onnx`]): `int4`/`uint4` packed
    /// two per byte (`field: None`), or values in the typed field numbered `field` of the
    /// `TensorProto` (`float_data`, `int32_data`, …), which the range spans. `data_type` is the
    /// ONNX `TensorProto.DataType`.
    Onnx { data_type: i32, field: Option<u32> },
    /// A strided view of elements (PyTorch's `as_strided`, [`torch_pickle`]): the range holds
    /// the elements from the view's first to its last, of which element `(i₀, i₁, …)` of the
    /// tensor (C order of `shape`) is number `Σ iₖ·strides[k]`. Strides may be 0 (`expand`) and
    /// in any order (a transpose); [`contiguous_bytes`] gathers them.
    Strided {
        dtype: DType,
        order: ByteOrder,
        strides: Vec<usize>,
    },
    /// Nothing quantscope can decode (see [`Entry::problem`]).
    Unreadable,
}

/// One tensor of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// Its name in the file (a `.npy` file's name without the extension).
    pub name: String,
    /// Index of its file in [`Catalog::files`].
    #[serde(skip)]
    pub file: usize,
    /// Dimensions in numpy order (GGUF's `ne[]` reversed).
    pub shape: Vec<usize>,
    pub dtype: EntryDType,
    /// Number of elements (0 when the shape overflows).
    pub elements: usize,
    /// The bytes to read for this tensor, `start..end` in its file.
    #[serde(serialize_with = "range_as_pair")]
    pub range: Range<u64>,
    #[serde(skip)]
    pub storage: Storage,
    /// Why this tensor cannot be read, if it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

fn range_as_pair<S: serde::Serializer>(r: &Range<u64>, s: S) -> Result<S::Ok, S::Error> {
    [r.start, r.end].serialize(s)
}

impl Entry {
    /// An entry that cannot be read, with the reason.
    pub fn unreadable(name: String, dtype: EntryDType, reason: String) -> Self {
        Entry {
            name,
            file: 0,
            shape: Vec::new(),
            dtype,
            elements: 0,
            range: 0..0,
            storage: Storage::Unreadable,
            problem: Some(reason),
        }
    }

    /// Record `reason` unless an earlier problem is already recorded.
    pub(crate) fn flag(&mut self, reason: impl Into<String>) {
        if self.problem.is_none() {
            self.problem = Some(reason.into());
        }
    }
}

/// One input file of a catalogue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CatalogFile {
    /// The path (natively) or name (in the page) it was given as.
    pub name: String,
    /// Size in bytes.
    pub len: u64,
    pub kind: Option<CheckpointKind>,
}

/// A file that could not be listed at all (its header is unreadable), with the reason.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct LoadError {
    pub file: String,
    pub error: String,
}

/// Every tensor of a set of files.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Catalog {
    pub files: Vec<CatalogFile>,
    /// Tensors in checkpoint order: files in the order given (an index's shards in its place,
    /// by shard name), tensors in file order (safetensors by data offset).
    pub entries: Vec<Entry>,
    pub load_errors: Vec<LoadError>,
    /// The ONNX models among the files, with the quantization their graphs hold.
    #[serde(skip)]
    pub onnx: Vec<OnnxModel>,
}

/// One ONNX model of a catalogue: where its initializers are, and its graph's quantization.
#[derive(Debug, Clone, PartialEq)]
pub struct OnnxModel {
    /// Index of the `.onnx` file in [`Catalog::files`].
    pub file: usize,
    /// Its initializers are `entries[first_entry..first_entry + count]`, in file order.
    pub first_entry: usize,
    pub count: usize,
    pub qdq: onnx::ModelQdq,
}

impl Catalog {
    /// The name of the file `entry` lives in.
    pub fn file_name(&self, entry: &Entry) -> &str {
        self.files.get(entry.file).map_or("", |f| f.name.as_str())
    }
}

/// A shape as `[a, b]`, for messages.
pub(crate) fn shape_text(shape: &[usize]) -> String {
    format!("{shape:?}")
}
