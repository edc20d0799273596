//! A checkpoint's *weights*: the tensors its model uses, each decoded from one or more stored
//! entries.
//!
//! A plain checkpoint stores each weight as one entry (`bfloat16` values, a GGUF tensor's ggml
//! blocks). A quantized Hugging Face checkpoint stores one weight as several arrays named after
//! it (`….weight_packed`, `….weight_scale`, `….weight_zero_point`; `qweight`/`qzeros`/`scales`;
//! bitsandbytes' `weight` with its `absmax` and `quant_map`), and the layout is said by the
//! `quantization_config` of `config.json` ([`super::layouts`]). A [`Weight`] names the weight as
//! the original model named it (`….weight`), gives its logical shape, and says how to decode it:
//! either one entry read as it is ([`WeightSource::Entry`]) or a codec fed with the stored
//! arrays ([`WeightSource::Coded`]), each taken from an entry or from a value the configuration
//! holds. No layout decodes with maths of its own: the codec does.
//!
//! Reading is the caller's I/O: [`read_weight`] asks for the bytes of each entry it needs
//! through a closure (natively a read of the file, in the page `File.slice`).

use super::read::decode_entry_stored;
use super::{shape_text, Catalog, Entry, EntryBytes, Storage};
use crate::codec::{self, Encoded, Stored};
use crate::error::{Error, Result};
use crate::params::Params;
use crate::tensor::{DType, Tensor};
use serde::Serialize;

/// One weight of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Weight {
    /// The name the original model gives it (a GGUF file's own name for GGUF tensors).
    pub name: String,
    /// Its logical shape (numpy / PyTorch order).
    pub shape: Vec<usize>,
    /// The stored format: a dtype (`bfloat16`), a ggml type (`Q4_K`) or a codec's label.
    pub format: String,
    /// Bits stored per value, every scale, zero point and code included (0 when unknown).
    pub bits_per_weight: f64,
    /// Values per group or block sharing a scale, when the format has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<usize>,
    #[serde(skip)]
    pub source: WeightSource,
    /// The entries it is stored in (their names).
    pub stored_as: Vec<String>,
    /// Why it cannot be read, if it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// How a weight's values are obtained.
#[derive(Debug, Clone, PartialEq)]
pub enum WeightSource {
    /// One catalogue entry (an index into [`Catalog::entries`]), decoded by [`super::decode_entry`].
    Entry(usize),
    /// A codec fed with its stored arrays.
    Coded {
        /// Registry id of the codec family.
        codec: String,
        /// The parameters it is built with (from the checkpoint's configuration).
        params: Params,
        parts: Vec<PartSource>,
    },
}

/// Where one stored array of a coded weight comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct PartSource {
    /// The codec's name for the array.
    pub part: &'static str,
    pub from: PartFrom,
}

/// The content of a stored array.
#[derive(Debug, Clone, PartialEq)]
pub enum PartFrom {
    /// The raw elements of a catalogue entry (floating-point 16-bit and 8-bit types as their
    /// bit patterns: see [`stored_elements`]).
    Entry(usize),
    /// The bytes of a catalogue entry as uint8, whatever its dtype: bitsandbytes packs its 4-bit
    /// codes into a `quant_storage` tensor of any dtype (bfloat16, float32, … for FSDP), whose
    /// bytes are the uint8 ones.
    EntryBytes(usize),
    /// A value written in the checkpoint's configuration rather than as a tensor (e.g.
    /// bitsandbytes' `nested_offset`).
    Value { shape: Vec<usize>, data: Stored },
}

impl Weight {
    /// The weight of one plain entry of the catalogue.
    pub fn of_entry(catalog: &Catalog, index: usize) -> Option<Weight> {
        let e = catalog.entries.get(index)?;
        let bytes = e.range.end.saturating_sub(e.range.start);
        Some(Weight {
            name: e.name.clone(),
            shape: e.shape.clone(),
            format: format_of(catalog, e),
            bits_per_weight: match &e.storage {
                _ if e.elements == 0 => 0.0,
                // A view's range spans the storage between its first and last elements.
                Storage::Strided { dtype, .. } => {
                    crate::tensor::decode::item_size(*dtype) as f64 * 8.0
                }
                _ => bytes as f64 * 8.0 / e.elements as f64,
            },
            block: block_of(e),
            source: WeightSource::Entry(index),
            stored_as: vec![e.name.clone()],
            problem: e.problem.clone(),
        })
    }

    /// Number of elements (0 when the shape overflows).
    pub fn elements(&self) -> usize {
        crate::tensor::element_count(&self.shape).unwrap_or(0)
    }

    /// The catalogue entries it is read from.
    pub fn entries(&self) -> Vec<usize> {
        match &self.source {
            WeightSource::Entry(i) => vec![*i],
            WeightSource::Coded { parts, .. } => parts
                .iter()
                .filter_map(|p| match p.from {
                    PartFrom::Entry(i) | PartFrom::EntryBytes(i) => Some(i),
                    PartFrom::Value { .. } => None,
                })
                .collect(),
        }
    }

    /// Bytes stored for it in `catalog`'s files (every part's range).
    pub fn stored_bytes(&self, catalog: &Catalog) -> u64 {
        self.entries()
            .iter()
            .filter_map(|&i| catalog.entries.get(i))
            .map(|e| e.range.end.saturating_sub(e.range.start))
            .sum()
    }
}

/// The stored format of a plain entry: its dtype, spelled as ggml spells it in a GGUF file
/// (`F32`, `F16`, `BF16`, `Q4_K`) and as numpy does elsewhere (`float32`, `bfloat16`).
fn format_of(catalog: &Catalog, e: &Entry) -> String {
    let gguf = catalog
        .files
        .get(e.file)
        .is_some_and(|f| f.kind == Some(super::CheckpointKind::Gguf));
    match (&e.dtype, gguf) {
        (super::EntryDType::Known(d), true) => {
            super::gguf::ggml_name(*d).unwrap_or(d.name()).to_string()
        }
        _ => e.dtype.name().to_string(),
    }
}

/// Values per block of a GGUF entry decoded by a ggml codec.
fn block_of(e: &Entry) -> Option<usize> {
    match &e.storage {
        Storage::Coded { codec, .. } => crate::formats::ggml::GgmlType::from_id(codec)
            .map(|t| t.block_elems())
            .filter(|&b| b > 1),
        _ => None,
    }
}

/// Every entry of `catalog` as a weight of its own: what a checkpoint without a quantization
/// layout is.
pub fn plain_weights(catalog: &Catalog) -> Vec<Weight> {
    (0..catalog.entries.len())
        .filter_map(|i| Weight::of_entry(catalog, i))
        .collect()
}

/// The stored elements of a plain entry from exactly the bytes of its range, as a codec takes
/// them: integers as they are, `float16`/`bfloat16` as their `u16` bit patterns, FP8 as bytes,
/// `float32` as values.
pub fn stored_elements(entry: &Entry, bytes: &[u8]) -> Result<Stored> {
    let fail = |reason: String| Error::load(entry.name.clone(), reason);
    if let Some(problem) = &entry.problem {
        return Err(fail(problem.clone()));
    }
    if let Storage::Onnx { data_type, field } = entry.storage {
        return super::onnx::stored(entry, data_type, field, bytes).map_err(fail);
    }
    let (dtype, order, bytes) = match entry.storage {
        Storage::Plain {
            dtype,
            order,
            fortran,
        } => {
            if fortran && entry.shape.len() > 1 {
                return Err(fail(
                    "a Fortran-ordered array cannot be a codec's stored array".into(),
                ));
            }
            (dtype, order, std::borrow::Cow::Borrowed(bytes))
        }
        Storage::Strided { dtype, order, .. } => {
            (dtype, order, super::contiguous_bytes(entry, bytes)?)
        }
        _ => {
            return Err(fail(format!(
                "a {} entry cannot be a codec's stored array",
                entry.dtype.name()
            )))
        }
    };
    let bytes: &[u8] = &bytes;
    let size = crate::tensor::decode::item_size(dtype);
    if entry.elements.checked_mul(size) != Some(bytes.len()) {
        return Err(fail(format!(
            "shape {} of {} needs {} bytes, the range holds {}",
            shape_text(&entry.shape),
            dtype.name(),
            entry
                .elements
                .checked_mul(size)
                .map_or_else(|| "too many".into(), |n| n.to_string()),
            bytes.len()
        )));
    }
    let big = order == crate::tensor::ByteOrder::Big;
    macro_rules! words {
        ($ty:ty, $n:expr) => {
            bytes
                .chunks_exact($n)
                .map(|c| {
                    let mut a = [0u8; $n];
                    a.copy_from_slice(c);
                    if big {
                        <$ty>::from_be_bytes(a)
                    } else {
                        <$ty>::from_le_bytes(a)
                    }
                })
                .collect()
        };
    }
    Ok(match dtype {
        DType::U8 | DType::Bool | DType::F8E4M3 | DType::F8E5M2 => Stored::U8(bytes.to_vec()),
        DType::I8 => Stored::I8(bytes.iter().map(|&b| b as i8).collect()),
        DType::U16 | DType::F16 | DType::BF16 => Stored::U16(words!(u16, 2)),
        DType::I16 => Stored::I16(words!(i16, 2)),
        DType::I32 => Stored::I32(words!(i32, 4)),
        DType::F32 => Stored::F32(words!(f32, 4)),
        // Small int64 arrays (compressed-tensors' `weight_shape`) as int32, refused when a
        // value does not fit.
        DType::I64 => {
            let wide: Vec<i64> = words!(i64, 8);
            Stored::I32(
                wide.iter()
                    .map(|&v| i32::try_from(v))
                    .collect::<std::result::Result<Vec<i32>, _>>()
                    .map_err(|_| {
                        fail("int64 values beyond int32 cannot be a codec's stored array".into())
                    })?,
            )
        }
        other => {
            return Err(fail(format!(
                "{} cannot be a codec's stored array",
                other.name()
            )))
        }
    })
}

/// Decode `weight` of `catalog`, reading each entry it needs with `bytes_of` (which must return
/// exactly the bytes of the entry's range).
pub fn read_weight<'b>(
    catalog: &Catalog,
    weight: &Weight,
    bytes_of: &mut dyn FnMut(&Entry) -> Result<EntryBytes<'b>>,
) -> Result<Tensor> {
    read_weight_stored(catalog, weight, bytes_of).map(|(values, _)| values)
}

/// [`read_weight`], also handing back what the codec decoded (`None` for a plain dtype).
pub fn read_weight_stored<'b>(
    catalog: &Catalog,
    weight: &Weight,
    bytes_of: &mut dyn FnMut(&Entry) -> Result<EntryBytes<'b>>,
) -> Result<(Tensor, Option<Encoded>)> {
    if let Some(problem) = &weight.problem {
        return Err(Error::load(weight.name.clone(), problem.clone()));
    }
    let entry = |i: usize| {
        catalog.entries.get(i).ok_or_else(|| {
            Error::load(
                weight.name.clone(),
                format!("internal error: no entry {i} in the catalogue"),
            )
        })
    };
    match &weight.source {
        WeightSource::Entry(i) => {
            let e = entry(*i)?;
            decode_entry_stored(e, &bytes_of(e)?)
        }
        WeightSource::Coded {
            codec,
            params,
            parts,
        } => {
            let mut encoded = Encoded::new(&weight.shape);
            for p in parts {
                encoded = match &p.from {
                    PartFrom::Entry(i) => {
                        let e = entry(*i)?;
                        let data = stored_elements(e, &bytes_of(e)?)?;
                        encoded.with(p.part, e.shape.clone(), data)
                    }
                    PartFrom::EntryBytes(i) => {
                        let e = entry(*i)?;
                        let data = stored_elements(e, &bytes_of(e)?)?.to_le_bytes();
                        encoded.with(p.part, vec![data.len()], Stored::U8(data))
                    }
                    PartFrom::Value { shape, data } => {
                        encoded.with(p.part, shape.clone(), data.clone())
                    }
                };
            }
            let fail = |e: Error| Error::load(weight.name.clone(), e.to_string());
            let c = codec::find(codec)
                .and_then(|c| c.build(params, &weight.shape))
                .map_err(fail)?;
            let values = c.decode(&encoded).map_err(fail)?;
            Ok((values, Some(encoded)))
        }
    }
}
