//! Tensors as the engine sees them: a shape, f32 values in C order, and where they came from.
//!
//! Loaders for `.npy`, `.npz` and `.safetensors` live in the submodules; every one of them maps
//! its dtype to f32 (as PyTorch does after `.to(float32)`) and keeps the original dtype in
//! [`Tensor::dtype`].

pub(crate) mod decode;
#[cfg(not(target_arch = "wasm32"))]
pub mod mapped;
pub(crate) mod npy;
mod npz;
mod safetensors_file;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

pub use decode::{f8_e4m3_to_f32, f8_e5m2_to_f32, ByteOrder};
pub use npy::{encode_npy, npy_header, read_npy};
pub use npz::read_npz;
pub use safetensors_file::read_safetensors;

/// The element type a tensor had in its file, before conversion to f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
    /// OCP FP8 E4M3 (safetensors `F8_E4M3`).
    F8E4M3,
    /// OCP FP8 E5M2 (safetensors `F8_E5M2`).
    F8E5M2,
}

impl DType {
    /// Short name, as numpy/safetensors users know it.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::F8E4M3 => "float8_e4m3",
            DType::F8E5M2 => "float8_e5m2",
        }
    }
}

/// Counts of values that are not finite. quantscope excludes them from statistics by default
/// and reports these counts (see [`crate::engine::NonFinitePolicy`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct NonFiniteCounts {
    pub nan: usize,
    pub pos_inf: usize,
    pub neg_inf: usize,
}

impl NonFiniteCounts {
    /// Values per block of [`NonFiniteCounts::of`]: only a block holding a non-finite value is
    /// classified value by value.
    pub(crate) const BLOCK: usize = 4096;

    /// 1 when `v` is NaN or ±∞ (its exponent bits all set), else 0: branch-free, so that a loop
    /// summing it vectorises.
    #[inline(always)]
    pub(crate) fn flag(v: f32) -> u32 {
        const EXPONENT: u32 = 0x7f80_0000;
        u32::from(v.to_bits() & EXPONENT == EXPONENT)
    }

    /// Count the non-finite values of `data`.
    #[inline(always)]
    pub fn of(data: &[f32]) -> Self {
        let mut counts = NonFiniteCounts::default();
        // A branch-free (vectorised) count per block first; only a block holding a non-finite
        // value is classified value by value.
        for block in data.chunks(Self::BLOCK) {
            let non_finite: u32 = block.iter().map(|&v| Self::flag(v)).sum();
            if non_finite == 0 {
                continue;
            }
            for &v in block.iter().filter(|v| !v.is_finite()) {
                if v.is_nan() {
                    counts.nan += 1;
                } else if v > 0.0 {
                    counts.pos_inf += 1;
                } else {
                    counts.neg_inf += 1;
                }
            }
        }
        counts
    }

    /// Total number of non-finite values.
    pub fn total(&self) -> usize {
        self.nan + self.pos_inf + self.neg_inf
    }
}

impl std::ops::Add for NonFiniteCounts {
    type Output = Self;

    fn add(self, other: Self) -> Self {
        NonFiniteCounts {
            nan: self.nan + other.nan,
            pos_inf: self.pos_inf + other.pos_inf,
            neg_inf: self.neg_inf + other.neg_inf,
        }
    }
}

/// A dense tensor of f32 values in C (row-major) order.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Dimensions; empty for a 0-d (scalar) tensor.
    pub shape: Vec<usize>,
    /// Values in C order; `data.len()` equals the product of `shape`.
    pub data: Vec<f32>,
    /// The dtype the values had in their file.
    pub dtype: DType,
}

impl Tensor {
    /// A tensor from a shape and C-order f32 values. Fails if the sizes disagree.
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Result<Self> {
        let expected = element_count(&shape)
            .ok_or_else(|| Error::input(format!("shape {shape:?} has too many elements")))?;
        if expected != data.len() {
            return Err(Error::input(format!(
                "shape {shape:?} needs {expected} values, got {}",
                data.len()
            )));
        }
        Ok(Tensor {
            shape,
            data,
            dtype: DType::F32,
        })
    }

    /// A 1-d f32 tensor.
    pub fn from_vec(data: Vec<f32>) -> Self {
        Tensor {
            shape: vec![data.len()],
            data,
            dtype: DType::F32,
        }
    }

    /// A tensor of this one's shape and dtype holding `data` (a result of the same length,
    /// e.g. a quantize–dequantize of this tensor).
    pub fn with_data(&self, data: Vec<f32>) -> Tensor {
        Tensor {
            shape: self.shape.clone(),
            data,
            dtype: self.dtype,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// NaN/±Inf counts of this tensor.
    pub fn nonfinite(&self) -> NonFiniteCounts {
        NonFiniteCounts::of(&self.data)
    }

    /// A read-only ndarray view with this tensor's shape.
    pub fn view(&self) -> ndarray::ArrayViewD<'_, f32> {
        ndarray::ArrayViewD::from_shape(ndarray::IxDyn(&self.shape), &self.data)
            .expect("Tensor invariant: data.len() == product(shape)")
    }
}

/// Product of a shape's dimensions, or `None` on overflow.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// One tensor of a file, with the name it has there (`""` for a bare `.npy`).
#[derive(Debug, Clone, PartialEq)]
pub struct NamedTensor {
    pub name: String,
    pub tensor: Tensor,
}

/// The kinds of file quantscope reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Npy,
    Npz,
    Safetensors,
}

impl FileKind {
    /// Recognise a file by its first bytes (magic), falling back to its name's extension.
    pub fn detect(bytes: &[u8], file_name: &str) -> Option<Self> {
        if bytes.starts_with(b"\x93NUMPY") {
            return Some(FileKind::Npy);
        }
        if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
            return Some(FileKind::Npz);
        }
        let lower = file_name.to_ascii_lowercase();
        if lower.ends_with(".safetensors") {
            return Some(FileKind::Safetensors);
        }
        if lower.ends_with(".npy") {
            return Some(FileKind::Npy);
        }
        if lower.ends_with(".npz") {
            return Some(FileKind::Npz);
        }
        None
    }
}

/// Read every tensor of a `.npy`, `.npz` or `.safetensors` file held in memory.
pub fn read_tensors(bytes: &[u8], file_name: &str) -> Result<Vec<NamedTensor>> {
    match FileKind::detect(bytes, file_name) {
        Some(FileKind::Npy) => Ok(vec![NamedTensor {
            name: String::new(),
            tensor: read_npy(bytes).map_err(|e| rename_load_error(e, file_name))?,
        }]),
        Some(FileKind::Npz) => read_npz(bytes).map_err(|e| rename_load_error(e, file_name)),
        Some(FileKind::Safetensors) => {
            read_safetensors(bytes).map_err(|e| rename_load_error(e, file_name))
        }
        None => Err(Error::load(
            file_name,
            "not a .npy, .npz or .safetensors file (unrecognised magic bytes and extension)",
        )),
    }
}

/// Put the file name into a load error raised by a parser that only saw bytes.
pub(crate) fn rename_load_error(error: Error, file_name: &str) -> Error {
    match error {
        Error::Load { what, reason } if what.is_empty() || what == ".npy" => {
            Error::load(file_name, reason)
        }
        Error::Load { what, reason } => Error::load(format!("{file_name}: {what}"), reason),
        other => other,
    }
}

/// Split a tensor spec `path[:member]` into the file path and the member name. The member part
/// is recognised only after a `.npz`, `.safetensors`, `.gguf`, `.onnx` or PyTorch (`.pt`,
/// `.pth`, `.bin`) extension (`weights.npz:fc1`,
/// `model.safetensors:encoder.layer.1.attention.self.query.weight`,
/// `pytorch_model.bin:optimizer.state.0.exp_avg`), so paths with colons (`C:\data\x.npy`) stay
/// whole.
pub fn split_spec(spec: &str) -> (&str, Option<&str>) {
    let lower = spec.to_ascii_lowercase();
    for ext in [
        ".npz:",
        ".safetensors:",
        ".gguf:",
        ".onnx:",
        ".pt:",
        ".pth:",
        ".bin:",
    ] {
        if let Some(at) = lower.find(ext) {
            let split = at + ext.len() - 1;
            if let (Some(path), Some(member)) = (spec.get(..split), spec.get(split + 1..)) {
                return (path, Some(member));
            }
        }
    }
    (spec, None)
}

/// Select one tensor of a file by name. With `None` the file must hold exactly one tensor.
/// A `.npz` member may also be named with its `.npy` suffix. When the name is missing, the
/// error lists the names that exist.
pub fn pick(mut tensors: Vec<NamedTensor>, name: Option<&str>) -> Result<NamedTensor> {
    let position = match name {
        None if tensors.len() == 1 => Some(0),
        None => {
            return Err(Error::input(format!(
                "the file holds {} tensors; name one as `file:name`. Available: {}",
                tensors.len(),
                list_names(&tensors)
            )))
        }
        Some(wanted) => tensors.iter().position(|t| t.name == wanted).or_else(|| {
            let bare = wanted.strip_suffix(".npy")?;
            tensors.iter().position(|t| t.name == bare)
        }),
    };
    match position {
        Some(i) => Ok(tensors.swap_remove(i)),
        None => Err(Error::Unknown {
            what: "tensor",
            name: name.unwrap_or_default().to_string(),
            hint: format!(" in this file; available: {}", list_names(&tensors)),
        }),
    }
}

/// The names of `tensors`, comma-separated, at most 50 of them.
fn list_names(tensors: &[NamedTensor]) -> String {
    const SHOWN: usize = 50;
    if tensors.is_empty() {
        return "none (the file holds no tensors)".to_string();
    }
    let mut list: Vec<&str> = tensors
        .iter()
        .take(SHOWN)
        .map(|t| t.name.as_str())
        .collect();
    let more = tensors.len().saturating_sub(SHOWN);
    let more = if more > 0 {
        format!(" … and {more} more")
    } else {
        String::new()
    };
    list.iter_mut()
        .filter(|n| n.is_empty())
        .for_each(|n| *n = "(unnamed)");
    format!("{}{more}", list.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(names: &[&str]) -> Vec<NamedTensor> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| NamedTensor {
                name: n.to_string(),
                tensor: Tensor::from_vec(vec![i as f32]),
            })
            .collect()
    }

    #[test]
    fn splits_specs() {
        assert_eq!(split_spec("a/b.npz:weights"), ("a/b.npz", Some("weights")));
        assert_eq!(
            split_spec("m.SafeTensors:enc.layer:1"),
            ("m.SafeTensors", Some("enc.layer:1"))
        );
        assert_eq!(split_spec("C:\\data\\x.npy"), ("C:\\data\\x.npy", None));
        assert_eq!(split_spec("x.npz"), ("x.npz", None));
        assert_eq!(split_spec("x.npz:"), ("x.npz", Some("")));
        assert_eq!(split_spec("m.gguf:blk.0.w"), ("m.gguf", Some("blk.0.w")));
        assert_eq!(
            split_spec("ckpt/pytorch_model.bin:encoder.layer.0.output.dense.bias"),
            (
                "ckpt/pytorch_model.bin",
                Some("encoder.layer.0.output.dense.bias")
            )
        );
        assert_eq!(split_spec("a.pth:m.0"), ("a.pth", Some("m.0")));
    }

    #[test]
    fn picks_by_name() {
        let t = pick(named(&["a", "b", "c"]), Some("b")).unwrap();
        assert_eq!((t.name.as_str(), t.tensor.data[0]), ("b", 1.0));
        assert_eq!(pick(named(&["w"]), Some("w.npy")).unwrap().name, "w");
        assert_eq!(pick(named(&[""]), None).unwrap().tensor.data, vec![0.0]);
        let e = pick(named(&["a", "b"]), Some("z")).unwrap_err().to_string();
        assert!(e.contains("`z`") && e.contains("a, b"), "{e}");
        let e = pick(named(&["a", "b"]), None).unwrap_err().to_string();
        assert!(e.contains("2 tensors") && e.contains("a, b"), "{e}");
        let many: Vec<String> = (0..60).map(|i| format!("t{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let e = pick(named(&many), Some("x")).unwrap_err().to_string();
        assert!(e.contains("and 10 more"), "{e}");
        let e = pick(Vec::new(), None).unwrap_err().to_string();
        assert!(e.contains("no tensors"), "{e}");
    }

    #[test]
    fn read_tensors_names_the_file() {
        let e = read_tensors(b"", "x.bin").unwrap_err().to_string();
        assert!(e.contains("x.bin"), "{e}");
        let e = read_tensors(b"\x93NUMPY\x09\x00", "a.npy")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cannot read a.npy:") && e.contains("version 9.0"),
            "{e}"
        );
    }
}

/// Arbitrary and mutated inputs never panic a reader: every outcome is a tensor or an error.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod never_panic {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn valid_npy() -> Vec<u8> {
        let text = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }          \n";
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&(text.len() as u16).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
        out.extend((0..6).flat_map(|i| (i as f32).to_le_bytes()));
        out
    }

    fn valid_npz(method: zip::CompressionMethod) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default().compression_method(method);
        for name in ["a.npy", "b.npy"] {
            w.start_file(name, options).unwrap();
            w.write_all(&valid_npy()).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn valid_safetensors() -> Vec<u8> {
        let header = r#"{"a":{"dtype":"F16","shape":[2,2],"data_offsets":[0,8]},"b":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[8,12]},"__metadata__":{"x":"y"}}"#;
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(&[0x00, 0x3C, 0x00, 0xC0, 0, 0, 0, 0, 0x7E, 0x7F, 0x01, 0x80]);
        out
    }

    /// Every reader on `bytes`: no panic, and a tensor that loads keeps its invariant.
    fn all_readers(bytes: &[u8]) {
        let check = |t: &Tensor| assert_eq!(element_count(&t.shape), Some(t.data.len()));
        if let Ok(t) = read_npy(bytes) {
            check(&t);
        }
        for ts in [read_npz(bytes), read_safetensors(bytes)]
            .into_iter()
            .flatten()
        {
            ts.iter().for_each(|t| check(&t.tensor));
        }
        for name in ["x.npy", "x.npz", "x.safetensors", "x"] {
            let _ = read_tensors(bytes, name);
        }
    }

    fn mutate(mut base: Vec<u8>, edits: &[(usize, u8)], cut: Option<usize>) -> Vec<u8> {
        for &(at, byte) in edits {
            let len = base.len();
            if len > 0 {
                base[at % len] = byte;
            }
        }
        if let Some(cut) = cut {
            base.truncate(cut % (base.len() + 1));
        }
        base
    }

    #[test]
    fn the_valid_bases_load() {
        assert_eq!(
            read_npy(&valid_npy()).unwrap().data,
            vec![0.0, 2.0, 4.0, 1.0, 3.0, 5.0]
        );
        for m in [
            zip::CompressionMethod::Stored,
            zip::CompressionMethod::Deflated,
        ] {
            assert_eq!(read_npz(&valid_npz(m)).unwrap().len(), 2);
        }
        assert_eq!(read_safetensors(&valid_safetensors()).unwrap().len(), 2);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
            all_readers(&bytes);
        }

        #[test]
        fn arbitrary_bytes_after_each_magic(
            which in 0..4usize,
            tail in proptest::collection::vec(any::<u8>(), 0..512),
        ) {
            let magic: &[u8] = [&b"\x93NUMPY\x01\x00"[..], b"\x93NUMPY\x02\x00", b"PK\x03\x04", b"PK\x05\x06"][which];
            let mut bytes = magic.to_vec();
            bytes.extend_from_slice(&tail);
            all_readers(&bytes);
        }

        #[test]
        fn arbitrary_npy_header_text(text in "[ -~]{0,200}", data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
            bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
            bytes.extend_from_slice(text.as_bytes());
            bytes.extend_from_slice(&data);
            all_readers(&bytes);
        }

        #[test]
        fn mutated_valid_files(
            which in 0..4usize,
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8),
            cut in proptest::option::of(any::<usize>()),
        ) {
            let base = match which {
                0 => valid_npy(),
                1 => valid_npz(zip::CompressionMethod::Stored),
                2 => valid_npz(zip::CompressionMethod::Deflated),
                _ => valid_safetensors(),
            };
            all_readers(&mutate(base, &edits, cut));
        }
    }
}
