//! Listing a GGUF file (versions 2 and 3), written from the public format specification.
//!
//! Layout, all little-endian:
//! * header: magic `GGUF`, `u32` version, `u64` tensor count, `u64` metadata key/value count;
//! * metadata: each a string key, a `u32` value type and the value. Types: 0 u8, 1 i8, 2 u16,
//!   3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 string, 9 array (`u32` element type, `u64` count,
//!   the elements), 10 u64, 11 i64, 12 f64. A string is a `u64` byte length then UTF-8 bytes.
//!   `general.alignment` (`u32`) sets the data alignment (default 32);
//! * tensor infos: string name, `u32` number of dimensions (at most 4), that many `u64`
//!   dimensions `ne[0..n]` (`ne[0]` varies fastest, so the numpy shape is `ne` reversed), `u32`
//!   GGML type, `u64` offset of the data relative to the data section;
//! * padding to the alignment, then the data section.
//!
//! GGML types store `block` elements in `type_size` bytes ([`ggml_type`]); a tensor's first
//! dimension must be a whole number of blocks. The plain types (F32, F16, BF16, I8..I64, F64)
//! are decoded as they are; a quantized type is decoded by its ggml codec (`ggml.<TYPE>`, the
//! stored array `blocks` being the tensor's bytes), and a type without one is listed with its
//! name and a reason.
//! Version 1 (32-bit counts) and big-endian files are refused with a message saying so.

use super::source::{Cursor, Parse, Stop};
use super::{validate, ByteSource, Entry, EntryDType, Storage};
use crate::tensor::{ByteOrder, DType};

/// The most dimensions a GGML tensor has.
pub const MAX_DIMS: u32 = 4;
/// Alignment of the data section when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// Name, elements per block, bytes per block, and our dtype (for the types quantscope decodes)
/// of GGML type number `t`, or `None` for numbers the format does not define.
pub fn ggml_type(t: u32) -> Option<(&'static str, u64, u64, Option<DType>)> {
    Some(match t {
        0 => ("F32", 1, 4, Some(DType::F32)),
        1 => ("F16", 1, 2, Some(DType::F16)),
        2 => ("Q4_0", 32, 18, None),
        3 => ("Q4_1", 32, 20, None),
        6 => ("Q5_0", 32, 22, None),
        7 => ("Q5_1", 32, 24, None),
        8 => ("Q8_0", 32, 34, None),
        9 => ("Q8_1", 32, 36, None),
        10 => ("Q2_K", 256, 84, None),
        11 => ("Q3_K", 256, 110, None),
        12 => ("Q4_K", 256, 144, None),
        13 => ("Q5_K", 256, 176, None),
        14 => ("Q6_K", 256, 210, None),
        15 => ("Q8_K", 256, 292, None),
        16 => ("IQ2_XXS", 256, 66, None),
        17 => ("IQ2_XS", 256, 74, None),
        18 => ("IQ3_XXS", 256, 98, None),
        19 => ("IQ1_S", 256, 50, None),
        20 => ("IQ4_NL", 32, 18, None),
        21 => ("IQ3_S", 256, 110, None),
        22 => ("IQ2_S", 256, 82, None),
        23 => ("IQ4_XS", 256, 136, None),
        24 => ("I8", 1, 1, Some(DType::I8)),
        25 => ("I16", 1, 2, Some(DType::I16)),
        26 => ("I32", 1, 4, Some(DType::I32)),
        27 => ("I64", 1, 8, Some(DType::I64)),
        28 => ("F64", 1, 8, Some(DType::F64)),
        29 => ("IQ1_M", 256, 56, None),
        30 => ("BF16", 1, 2, Some(DType::BF16)),
        31 => ("Q4_0_4_4", 32, 18, None),
        32 => ("Q4_0_4_8", 32, 18, None),
        33 => ("Q4_0_8_8", 32, 18, None),
        34 => ("TQ1_0", 256, 54, None),
        35 => ("TQ2_0", 256, 66, None),
        36 => ("IQ4_NL_4_4", 32, 18, None),
        37 => ("IQ4_NL_4_8", 32, 18, None),
        38 => ("IQ4_NL_8_8", 32, 18, None),
        39 => ("MXFP4", 32, 17, None),
        40 => ("NVFP4", 64, 36, None),
        41 => ("Q1_0", 128, 18, None),
        _ => return None,
    })
}

/// ggml's name of a plain dtype (`F32`, `BF16`, `I8`…), the inverse of [`ggml_type`]'s.
pub fn ggml_name(dtype: DType) -> Option<&'static str> {
    (0..=30).find_map(|t| match ggml_type(t) {
        Some((name, 1, _, Some(d))) if d == dtype => Some(name),
        _ => None,
    })
}

/// Metadata value types.
const T_U8: u32 = 0;
const T_I8: u32 = 1;
const T_U16: u32 = 2;
const T_I16: u32 = 3;
const T_U32: u32 = 4;
const T_I32: u32 = 5;
const T_F32: u32 = 6;
const T_BOOL: u32 = 7;
const T_STRING: u32 = 8;
const T_ARRAY: u32 = 9;
const T_U64: u32 = 10;
const T_I64: u32 = 11;
const T_F64: u32 = 12;

fn string<'a>(c: &mut Cursor<'a>, what: &str) -> Parse<&'a [u8]> {
    let len = c.u64(what)?;
    c.take(len, what)
}

/// One scalar metadata value (arrays are skipped, not kept).
#[derive(Debug, Clone, PartialEq)]
pub enum MetaValue {
    Int(i128),
    Float(f64),
    Bool(bool),
    Text(String),
}

impl MetaValue {
    /// The value as an unsigned integer, if it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            MetaValue::Int(v) => u64::try_from(*v).ok(),
            _ => None,
        }
    }

    /// The value as text, if it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            MetaValue::Text(s) => Some(s),
            _ => None,
        }
    }
}

/// Read (scalars and strings) or skip (arrays) one metadata value of type `t`.
fn read_value(c: &mut Cursor<'_>, t: u32, depth: u32) -> Parse<Option<MetaValue>> {
    let fixed = |t: u32| match t {
        T_U8 | T_I8 | T_BOOL => Some(1),
        T_U16 | T_I16 => Some(2),
        T_U32 | T_I32 | T_F32 => Some(4),
        T_U64 | T_I64 | T_F64 => Some(8),
        _ => None,
    };
    match t {
        T_STRING => {
            let text = string(c, "a metadata string")?;
            Ok(Some(MetaValue::Text(
                String::from_utf8_lossy(text).into_owned(),
            )))
        }
        T_ARRAY => {
            if depth > 8 {
                return Err(Stop::Bad("metadata arrays nested too deeply".into()));
            }
            let et = c.u32("a metadata array type")?;
            let n = c.u64("a metadata array length")?;
            if let Some(size) = fixed(et) {
                let total = n.checked_mul(size).ok_or_else(|| {
                    Stop::Bad(format!(
                        "a metadata array of {n} elements is impossibly large"
                    ))
                })?;
                c.take(total, "a metadata array")?;
            } else {
                for _ in 0..n {
                    read_value(c, et, depth + 1)?;
                }
            }
            Ok(None)
        }
        _ => {
            let Some(size) = fixed(t) else {
                return Err(Stop::Bad(format!(
                    "unknown metadata value type {t} at byte {}",
                    c.pos - 4
                )));
            };
            let b = c.take(size, "a metadata value")?;
            let mut w = [0u8; 8];
            w[..b.len()].copy_from_slice(b);
            let u = u64::from_le_bytes(w);
            Ok(Some(match t {
                T_U8 | T_U16 | T_U32 | T_U64 => MetaValue::Int(i128::from(u)),
                T_I8 => MetaValue::Int(i128::from(b[0] as i8)),
                T_I16 => MetaValue::Int(i128::from(u as u16 as i16)),
                T_I32 => MetaValue::Int(i128::from(u as u32 as i32)),
                T_I64 => MetaValue::Int(i128::from(u as i64)),
                T_F32 => MetaValue::Float(f64::from(f32::from_bits(u as u32))),
                T_F64 => MetaValue::Float(f64::from_bits(u)),
                _ => MetaValue::Bool(b[0] != 0),
            }))
        }
    }
}

/// The scalar and string metadata of a GGUF file (`general.architecture`,
/// `llama.attention.head_count`, …) by key, from its first bytes (the whole header); arrays are
/// left out.
pub fn metadata(bytes: &[u8]) -> Result<std::collections::BTreeMap<String, MetaValue>, String> {
    match header(&super::InMemory(bytes)) {
        Ok((_, _, kv)) => Ok(kv),
        Err(Stop::Bad(reason)) => Err(reason),
        Err(Stop::Need(r)) => Err(format!(
            "the header needs bytes {}..{}, beyond the {} given",
            r.start,
            r.end,
            bytes.len()
        )),
        Err(Stop::NeedAll(_)) => Err("the header needs bytes beyond those given".into()),
    }
}

/// The header up to the tensor infos: the cursor after the metadata, the tensor count and the
/// scalar metadata.
fn header(
    src: &dyn ByteSource,
) -> Parse<(u64, u64, std::collections::BTreeMap<String, MetaValue>)> {
    let mut c = Cursor::new(src, 0);
    if c.take(4, "the GGUF magic")? != b"GGUF" {
        return Err(Stop::Bad(
            "bad magic: a GGUF file starts with `GGUF`".into(),
        ));
    }
    let version = c.u32("the GGUF version")?;
    match version {
        2 | 3 => {}
        1 => return Err(Stop::Bad(
            "GGUF version 1 (32-bit counts) is not supported; quantscope reads versions 2 and 3"
                .into(),
        )),
        v if matches!(v.swap_bytes(), 2 | 3) => {
            return Err(Stop::Bad("big-endian GGUF files are not supported".into()))
        }
        v => {
            return Err(Stop::Bad(format!(
                "unsupported GGUF version {v} (quantscope reads versions 2 and 3)"
            )))
        }
    }
    let tensor_count = c.u64("the tensor count")?;
    let kv_count = c.u64("the metadata count")?;
    let mut kv = std::collections::BTreeMap::new();
    for _ in 0..kv_count {
        let key = String::from_utf8_lossy(string(&mut c, "a metadata key")?).into_owned();
        let t = c.u32("a metadata value type")?;
        let value = read_value(&mut c, t, 0)?;
        if key == "general.alignment"
            && !(t == T_U32
                && value
                    .as_ref()
                    .and_then(MetaValue::as_u64)
                    .is_some_and(|a| a > 0))
        {
            return Err(Stop::Bad("general.alignment must be a non-zero u32".into()));
        }
        if let Some(v) = value {
            kv.insert(key, v);
        }
    }
    Ok((c.pos, tensor_count, kv))
}

/// Every tensor of a GGUF file, in the order of the tensor infos.
pub(crate) fn list(src: &dyn ByteSource) -> Parse<Vec<Entry>> {
    let (pos, tensor_count, kv) = header(src)?;
    let alignment = kv
        .get("general.alignment")
        .and_then(MetaValue::as_u64)
        .unwrap_or(DEFAULT_ALIGNMENT);
    let mut c = Cursor::new(src, pos);
    let mut infos = Vec::new();
    for _ in 0..tensor_count {
        let name = String::from_utf8_lossy(string(&mut c, "a tensor name")?).into_owned();
        let n_dims = c.u32("a tensor's dimension count")?;
        if n_dims > MAX_DIMS {
            return Err(Stop::Bad(format!(
                "tensor `{name}` has {n_dims} dimensions; GGML tensors have at most {MAX_DIMS}"
            )));
        }
        let mut ne = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            ne.push(c.u64("a tensor dimension")?);
        }
        let t = c.u32("a tensor type")?;
        let offset = c.u64("a tensor offset")?;
        infos.push((name, ne, t, offset));
    }
    let data_start = c.pos.div_ceil(alignment).saturating_mul(alignment);
    let mut entries: Vec<Entry> = infos
        .into_iter()
        .map(|(name, ne, t, offset)| entry(name, &ne, t, data_start.saturating_add(offset)))
        .collect();
    validate::check_ranges(&mut entries, src.len(), data_start, alignment - 1);
    Ok(entries)
}

/// The entry of one tensor info whose data starts at byte `start` of the file.
fn entry(name: String, ne: &[u64], t: u32, start: u64) -> Entry {
    let shape: Option<Vec<usize>> = ne.iter().rev().map(|&d| usize::try_from(d).ok()).collect();
    let count = shape.as_deref().and_then(crate::tensor::element_count);
    let Some((type_name, block, type_size, dtype)) = ggml_type(t) else {
        let mut e = Entry::unreadable(
            name,
            EntryDType::Foreign(format!("GGML type {t}")),
            format!("unknown GGML type {t}: its size is unknown, so the tensor is skipped"),
        );
        e.shape = shape.unwrap_or_default();
        e.elements = count.unwrap_or(0);
        e.range = start..start;
        return e;
    };
    let mut e = Entry {
        name,
        file: 0,
        shape: shape.clone().unwrap_or_default(),
        dtype: dtype.map_or_else(|| EntryDType::Foreign(type_name.into()), EntryDType::Known),
        elements: count.unwrap_or(0),
        range: start..start,
        storage: match dtype {
            Some(dtype) => Storage::Plain {
                dtype,
                order: ByteOrder::Little,
                fortran: false,
            },
            None => codec_of(type_name).map_or(Storage::Unreadable, |codec| Storage::Coded {
                codec,
                part: "blocks",
            }),
        },
        problem: None,
    };
    let Some(count) = count else {
        e.flag(format!(
            "shape {ne:?} (ne) has more elements than this machine can address"
        ));
        return e;
    };
    let first = ne.first().copied().unwrap_or(1);
    if first % block != 0 {
        e.flag(format!(
            "{type_name} stores blocks of {block} values but the first dimension is {first}"
        ));
        return e;
    }
    let size = (count as u128 / u128::from(block)) * u128::from(type_size);
    match u64::try_from(size).ok().and_then(|s| start.checked_add(s)) {
        Some(end) => e.range = start..end,
        None => e.flag(format!("the tensor's {size} bytes lie beyond any file")),
    }
    if e.storage == Storage::Unreadable {
        e.flag(format!(
            "GGML type {type_name} has no codec in quantscope yet (it decodes F32, F16, BF16, I8..I64, F64 and {})",
            quantized_types_read()
        ));
    }
    e
}

/// The codec id of quantized GGML type `type_name`, when the registry has one.
fn codec_of(type_name: &str) -> Option<String> {
    let id = format!("ggml.{type_name}");
    crate::codec::find(&id).ok().map(|_| id)
}

/// The quantized GGML types quantscope decodes, for messages.
fn quantized_types_read() -> String {
    crate::formats::ggml::GgmlType::ALL
        .iter()
        .map(|t| t.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A GGUF v3 file holding `tensors` (name, GGML type, `ne` dimensions, raw data bytes), each
/// aligned to 32 bytes, with one string metadata entry: what the tests and fuzz seeds write.
pub fn write(tensors: &[(&str, u32, &[u64], &[u8])]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&1u64.to_le_bytes());
    let put_str = |out: &mut Vec<u8>, s: &str| {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    put_str(&mut out, "general.architecture");
    out.extend_from_slice(&T_STRING.to_le_bytes());
    put_str(&mut out, "quantscope-test");
    let mut offset = 0u64;
    let mut offsets = Vec::new();
    for (name, t, ne, data) in tensors {
        put_str(&mut out, name);
        out.extend_from_slice(&(ne.len() as u32).to_le_bytes());
        for d in *ne {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&t.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        offsets.push(offset);
        offset = (offset + data.len() as u64).div_ceil(DEFAULT_ALIGNMENT) * DEFAULT_ALIGNMENT;
    }
    let data_start = (out.len() as u64).div_ceil(DEFAULT_ALIGNMENT) * DEFAULT_ALIGNMENT;
    out.resize(data_start as usize, 0);
    for ((_, _, _, data), off) in tensors.iter().zip(offsets) {
        out.resize((data_start + off) as usize, 0);
        out.extend_from_slice(data);
    }
    out
}
