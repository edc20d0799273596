//! Listing a `.safetensors` file from its header alone.
//!
//! Layout: `u64` little-endian header length `n`, `n` bytes of JSON mapping each tensor name to
//! `{"dtype", "shape", "data_offsets": [begin, end]}` (offsets relative to the data section at
//! byte `8 + n`) plus an optional `"__metadata__"`, then the data. Unlike a whole-file read,
//! each tensor is checked on its own: a bad entry, an unsupported dtype, a byte range that does
//! not match its shape, lies outside the file or overlaps another tensor marks that tensor only.

use super::source::{bytes, Parse, Stop};
use super::{validate, ByteSource, Entry, EntryDType, Storage};
use crate::tensor::decode::item_size;
use crate::tensor::{element_count, ByteOrder, DType};
use serde_json::{Map, Value};

/// The largest header the format allows (as the reference implementation: 100 MB).
pub const MAX_HEADER: u64 = 100_000_000;

/// Our dtype for a safetensors dtype name, or `None` when quantscope does not decode it.
pub fn dtype_of(name: &str) -> Option<DType> {
    Some(match name {
        "BOOL" => DType::Bool,
        "U8" => DType::U8,
        "I8" => DType::I8,
        "I16" => DType::I16,
        "U16" => DType::U16,
        "I32" => DType::I32,
        "U32" => DType::U32,
        "I64" => DType::I64,
        "U64" => DType::U64,
        "F16" => DType::F16,
        "BF16" => DType::BF16,
        "F32" => DType::F32,
        "F64" => DType::F64,
        "F8_E4M3" => DType::F8E4M3,
        "F8_E5M2" => DType::F8E5M2,
        _ => return None,
    })
}

/// Every tensor of a `.safetensors` file, in the order of their data.
pub(crate) fn list(src: &dyn ByteSource) -> Parse<Vec<Entry>> {
    if src.is_empty() {
        return Err(Stop::Bad(
            "empty file (0 bytes): not a .safetensors file".into(),
        ));
    }
    let field = bytes(src, 0..8, "the 8-byte header length")?;
    let n = u64::from_le_bytes(field.try_into().unwrap_or([0; 8]));
    if n > MAX_HEADER {
        return Err(Stop::Bad(format!(
            "the header length field says {n} bytes, more than the format allows ({MAX_HEADER}); not a .safetensors file?"
        )));
    }
    let header = bytes(src, 8..8 + n, "the JSON header")?;
    let text = std::str::from_utf8(header)
        .map_err(|e| Stop::Bad(format!("the header is not UTF-8 text: {e}")))?;
    let map: Map<String, Value> = serde_json::from_str(text)
        .map_err(|e| Stop::Bad(format!("the header is not a JSON object: {e}")))?;
    let data_start = 8 + n;
    let mut entries: Vec<Entry> = map
        .iter()
        .filter(|(k, _)| k.as_str() != "__metadata__")
        .map(|(name, info)| entry(name, info, data_start))
        .collect();
    entries.sort_by(|a, b| (a.range.start, &a.name).cmp(&(b.range.start, &b.name)));
    validate::check_ranges(&mut entries, src.len(), data_start, 0);
    Ok(entries)
}

/// One header entry; a malformed one becomes an unreadable entry with the reason.
fn entry(name: &str, info: &Value, data_start: u64) -> Entry {
    let bad = |reason: String| {
        Entry::unreadable(
            name.to_string(),
            EntryDType::Foreign("?".into()),
            format!("malformed header entry: {reason}"),
        )
    };
    let Some(dtype_name) = info.get("dtype").and_then(Value::as_str) else {
        return bad("no \"dtype\" string".into());
    };
    let Some(shape) = info
        .get("shape")
        .and_then(Value::as_array)
        .and_then(|dims| {
            dims.iter()
                .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                .collect::<Option<Vec<usize>>>()
        })
    else {
        return bad("\"shape\" is not a list of non-negative integers".into());
    };
    let Some([begin, end]) = info
        .get("data_offsets")
        .and_then(Value::as_array)
        .and_then(|o| o.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
        .and_then(|o| <[u64; 2]>::try_from(o).ok())
    else {
        return bad("\"data_offsets\" is not a pair of non-negative integers".into());
    };
    let dtype = dtype_of(dtype_name);
    let mut e = Entry {
        name: name.to_string(),
        file: 0,
        elements: element_count(&shape).unwrap_or(0),
        shape,
        dtype: dtype.map_or_else(|| EntryDType::Foreign(dtype_name.into()), EntryDType::Known),
        range: data_start.saturating_add(begin)..data_start.saturating_add(end),
        storage: dtype.map_or(Storage::Unreadable, |dtype| Storage::Plain {
            dtype,
            order: ByteOrder::Little,
            fortran: false,
        }),
        problem: None,
    };
    if begin > end {
        e.flag(format!(
            "malformed header entry: data_offsets [{begin}, {end}] end before they begin"
        ));
        e.range = e.range.start..e.range.start;
    }
    let Some(count) = element_count(&e.shape) else {
        e.flag(format!(
            "shape {} has more elements than this machine can address",
            super::shape_text(&e.shape)
        ));
        return e;
    };
    match dtype {
        None => e.flag(format!(
            "unsupported dtype {dtype_name} (quantscope reads BOOL, U8..U64, I8..I64, F16, BF16, F32, F64, F8_E4M3 and F8_E5M2)"
        )),
        Some(d) => {
            let need = (count as u128) * item_size(d) as u128;
            let have = u128::from(end.saturating_sub(begin));
            if need != have && begin <= end {
                e.flag(format!(
                    "header/shape mismatch: shape {} of {} needs {need} bytes but data_offsets [{begin}, {end}] hold {have}",
                    super::shape_text(&e.shape),
                    dtype_name
                ));
            }
        }
    }
    e
}
