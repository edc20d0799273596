//! Listing a `.npy` file from its header (see [`crate::tensor::read_npy`] for the format): one
//! tensor, named after the file, whose data follows the header.

use super::source::{bytes, Parse, Stop};
use super::{validate, ByteSource, Entry, EntryDType, Storage};
use crate::error::Error;
use crate::tensor::npy::{header_end, parse_header, shape_str, NpyHeader};

/// Bytes that hold the magic, version and header length of any version.
pub(crate) const PREAMBLE: u64 = 12;

/// The parsed header of a `.npy` file that starts at byte `start` of `src` and is `len` bytes
/// long (a file, or a stored zip member).
pub(crate) fn header_at(src: &dyn ByteSource, start: u64, len: u64) -> Parse<NpyHeader> {
    let prefix = bytes(src, start..start + PREAMBLE.min(len), "the .npy preamble")?;
    let end = header_end(prefix).map_err(reason)? as u64;
    if end > len {
        return Err(Stop::Bad(format!(
            "truncated: the .npy header needs {end} bytes but there are only {len}"
        )));
    }
    let header = bytes(src, start..start + end, "the .npy header")?;
    parse_header(header).map_err(reason)
}

/// The reason of a reader error, as a parse stop.
pub(crate) fn reason(e: Error) -> Stop {
    Stop::Bad(match e {
        Error::Load { reason, .. } => reason,
        other => other.to_string(),
    })
}

/// The one tensor of a `.npy` file called `name`.
pub(crate) fn list(src: &dyn ByteSource, name: &str) -> Parse<Vec<Entry>> {
    if src.is_empty() {
        return Err(Stop::Bad("empty file (0 bytes): not a .npy file".into()));
    }
    let h = header_at(src, 0, src.len())?;
    let start = h.data_offset as u64;
    let mut e = entry_of(name, &h, start..start + h.data_len as u64);
    let available = src.len().saturating_sub(start);
    if available > h.data_len as u64 {
        e.flag(format!(
            "header/shape mismatch: header shape {} of {} needs {} data bytes but the file holds {available} ({} trailing bytes)",
            shape_str(&h.shape),
            h.dtype.name(),
            h.data_len,
            available - h.data_len as u64
        ));
    }
    let mut entries = vec![e];
    validate::check_ranges(&mut entries, src.len(), start, 0);
    Ok(entries)
}

/// An entry for a `.npy` header whose elements occupy `range`.
pub(crate) fn entry_of(name: &str, h: &NpyHeader, range: std::ops::Range<u64>) -> Entry {
    Entry {
        name: name.to_string(),
        file: 0,
        shape: h.shape.clone(),
        dtype: EntryDType::Known(h.dtype),
        elements: crate::tensor::element_count(&h.shape).unwrap_or(0),
        range,
        storage: Storage::Plain {
            dtype: h.dtype,
            order: h.order,
            fortran: h.fortran_order,
        },
        problem: None,
    }
}
