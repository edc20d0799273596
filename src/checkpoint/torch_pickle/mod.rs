//! PyTorch checkpoints (`torch.save`: `pytorch_model.bin`, `.pt`, `.pth`) read without running
//! any of their code.
//!
//! A PyTorch checkpoint is a **pickle** — a program for Python's object-building stack machine —
//! plus raw storages. Loading it with Python's `pickle` runs whatever the program names
//! (`os.system`, any class), so a downloaded checkpoint can execute code. quantscope runs the
//! program on a machine of its own ([`vm`]) that imports and calls nothing: only the opcodes and
//! names torch 2.15's `torch.load(weights_only=True)` accepts are run, each emulated
//! ([`opcodes`], [`allow`], [`calls`]); anything else — `os.system`, `subprocess.Popen`, a whole
//! pickled `nn.Module` and its class (`__main__.MiniLMHead`) — refuses the whole file with a
//! message naming it, and no tensor of a refused file is listed.
//!
//! **Two containers** ([`zip`], [`legacy`]). The zip format (torch ≥ 1.6): an uncompressed zip
//! with `<root>/data.pkl` and one record `<root>/data/<key>` per storage. The legacy format: five
//! pickles back to back (magic number, protocol version, system info, the object, the storage
//! keys), then each storage as an int64 element count and its elements. A file is recognised
//! by its bytes: a zip holding a `*/data.pkl` (whatever its name: not an `.npz`), or a pickle
//! starting with the protocol byte `0x80` and torch's magic `LONG1`; else by its extension
//! (`.pt`, `.pth`, `.bin`).
//!
//! **Tensors.** In the pickle a storage is a persistent id, `('storage', torch.FloatStorage,
//! key, location, numel)`, and a tensor is `torch._utils._rebuild_tensor_v2(storage,
//! storage_offset, size, stride, requires_grad, hooks)` — a strided view of the storage, in
//! elements ([`entries`]); a `Parameter` wraps one (`_rebuild_parameter`); dtypes without a legacy
//! storage class (float8, uint16, …) use `_rebuild_tensor_v3` on an `UntypedStorage` with a
//! dtype global ([`dtypes`]). Each tensor reachable from the object is an [`Entry`] named by its
//! dotted path ([`walk`]: dict keys and list or tuple indices joined with `.`, a state dict's
//! keys keeping their own dots: `encoder.layer.0.attention.self.query.weight`,
//! `optimizer.state.0.exp_avg`). A contiguous view is a plain byte range of its storage record
//! (memory-mappable); any other view (transposed, sliced, stride-0 expanded) is
//! [`crate::checkpoint::Storage::Strided`], gathered when read. Tensors sharing a storage share its bytes.
//! Non-tensor values (numbers, strings, optimizer hyper-parameters) are not listed.
//!
//! **Per tensor, not per file**: a storage record missing, compressed or of the wrong size, a
//! dtype quantscope does not decode (complex, quantized, float8 variants without a [`DType`]), a
//! quantized or sparse tensor, a view out of its storage. **Per file**: a refused opcode or
//! global, a malformed or truncated pickle, an unreadable zip directory.
//!
//! **Through the page's byte requests** ([`crate::checkpoint::CatalogBuilder`]): the zip's
//! central directory, then `data.pkl`, then the storage records' local headers in one round; a
//! legacy file's pickles in growing slices, then its count fields in one round; never a
//! storage's data.
//!
//! [`DType`]: crate::tensor::DType

mod allow;
mod calls;
mod dtypes;
mod entries;
mod legacy;
mod opcodes;
pub mod sample;
mod vm;
mod walk;
mod zip;

use super::source::{bytes, Parse};
use super::{ByteSource, Entry};

/// The first bytes of a legacy checkpoint: `PROTO 2`, then the magic number as a 10-byte
/// `LONG1` (`0x1950a86a20f9469cfc6c`, little-endian).
pub const LEGACY_MAGIC: [u8; 8] = [0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46];

/// Whether `prefix` (a file's first bytes) starts a legacy PyTorch checkpoint (any pickle
/// protocol byte).
pub fn is_legacy_prefix(prefix: &[u8]) -> bool {
    prefix.len() >= 8 && prefix[0] == 0x80 && prefix[2..8] == LEGACY_MAGIC[2..]
}

/// Whether the zip archive `src` is a PyTorch checkpoint (it holds a `*/data.pkl`).
pub(crate) fn is_torch_zip(src: &dyn ByteSource) -> Parse<bool> {
    zip::is_torch_zip(src)
}

/// Every tensor of the PyTorch checkpoint `src`, zip or legacy; a tensor saved on its own is
/// called `root_name`.
pub(crate) fn list(src: &dyn ByteSource, root_name: &str) -> Parse<Vec<Entry>> {
    let prefix = bytes(src, 0..src.len().min(4), "the first bytes")?;
    if prefix.starts_with(b"PK") {
        zip::list(src, root_name)
    } else {
        legacy::list(src, root_name)
    }
}
