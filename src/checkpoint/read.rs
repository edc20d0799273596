//! Reading one tensor from exactly the bytes of its [`Entry::range`].
//!
//! The element bytes are converted by the same code as the whole-file readers
//! ([`crate::tensor::read_tensors`]), so a tensor read here is bit-identical to the one
//! `quantscope observe FILE:TENSOR` reads.

use super::{Entry, Storage};
use crate::codec::{Encoded, Stored};
use crate::error::{Error, Result};
use crate::tensor::decode::{decode, item_size};
use crate::tensor::npy::fortran_to_c;
use crate::tensor::{ByteOrder, DType, Tensor};
use std::borrow::Cow;
use std::io::Read;

/// Decode the tensor of `entry` from `bytes`, which must be exactly the bytes of
/// `entry.range`. Fails with the entry's problem if it has one, and on corrupt data (a zip
/// member whose CRC-32 or size does not match).
pub fn decode_entry(entry: &Entry, bytes: &[u8]) -> Result<Tensor> {
    decode_entry_stored(entry, bytes).map(|(values, _)| values)
}

/// [`decode_entry`], also handing back what a codec decoded (for an entry stored by one, such
/// as a GGUF block type; `None` otherwise).
pub fn decode_entry_stored(entry: &Entry, bytes: &[u8]) -> Result<(Tensor, Option<Encoded>)> {
    let fail = |reason: String| Error::load(entry.name.clone(), reason);
    if let Some(problem) = &entry.problem {
        return Err(fail(problem.clone()));
    }
    let expected = entry.range.end.saturating_sub(entry.range.start);
    if bytes.len() as u64 != expected {
        return Err(fail(format!(
            "expected the {expected} bytes of its range {}..{}, got {}",
            entry.range.start,
            entry.range.end,
            bytes.len()
        )));
    }
    let values = match entry.storage {
        Storage::Plain {
            dtype,
            order,
            fortran,
        } => elements(entry, dtype, order, fortran, bytes).map_err(fail),
        Storage::ZipMember {
            deflated,
            size,
            crc32,
            header_len,
            dtype,
            order,
            fortran,
        } => {
            let inflated;
            let member = if deflated {
                inflated = inflate(bytes, size).map_err(fail)?;
                inflated.as_slice()
            } else {
                bytes
            };
            if member.len() as u64 != size {
                return Err(fail(format!(
                    "the zip member holds {} bytes, not its declared {size}",
                    member.len()
                )));
            }
            let actual = crc32fast::hash(member);
            if actual != crc32 {
                return Err(fail(format!(
                    "corrupt member data: CRC-32 {actual:08x}, the archive says {crc32:08x}"
                )));
            }
            let data = usize::try_from(header_len)
                .ok()
                .and_then(|h| member.get(h..))
                .ok_or_else(|| fail("the member is shorter than its .npy header".into()))?;
            elements(entry, dtype, order, fortran, data).map_err(fail)
        }
        Storage::Strided {
            dtype,
            order,
            ref strides,
        } => {
            let data = gather(entry, dtype, strides, bytes).map_err(fail)?;
            elements(entry, dtype, order, false, &data).map_err(fail)
        }
        Storage::Coded { ref codec, part } => {
            let (values, stored) = coded(entry, codec, part, bytes).map_err(fail)?;
            return Ok((values, Some(stored)));
        }
        Storage::Onnx { data_type, field } => {
            super::onnx::decode(entry, data_type, field, bytes).map_err(fail)
        }
        Storage::Unreadable => Err(fail("this tensor cannot be decoded".into())),
    };
    values.map(|values| (values, None))
}

/// The elements of `entry` as contiguous bytes in C order (in their stored byte order), from
/// exactly the bytes of its range: the range itself for a plain C-ordered entry, the elements
/// of a strided view gathered ([`Storage::Strided`]).
pub fn contiguous_bytes<'a>(entry: &Entry, bytes: &'a [u8]) -> Result<Cow<'a, [u8]>> {
    let fail = |reason: String| Error::load(entry.name.clone(), reason);
    if let Some(problem) = &entry.problem {
        return Err(fail(problem.clone()));
    }
    match entry.storage {
        Storage::Plain { fortran, .. } if !fortran || entry.shape.len() < 2 => {
            Ok(Cow::Borrowed(bytes))
        }
        Storage::Strided {
            dtype, ref strides, ..
        } => gather(entry, dtype, strides, bytes)
            .map(Cow::Owned)
            .map_err(fail),
        _ => Err(fail(format!(
            "its {} elements are not stored as plain C-ordered values",
            entry.dtype.name()
        ))),
    }
}

/// The elements of a strided view of `bytes` (see [`Storage::Strided`]), contiguous.
fn gather(
    entry: &Entry,
    dtype: DType,
    strides: &[usize],
    bytes: &[u8],
) -> std::result::Result<Vec<u8>, String> {
    let shape = &entry.shape;
    let item = item_size(dtype);
    if strides.len() != shape.len() {
        return Err(format!(
            "{} strides for a shape of {} dimensions",
            strides.len(),
            shape.len()
        ));
    }
    let elements = crate::tensor::element_count(shape)
        .filter(|&n| n == entry.elements)
        .ok_or_else(|| {
            format!(
                "shape {} does not match its element count",
                super::shape_text(shape)
            )
        })?;
    if elements == 0 {
        return Ok(Vec::new());
    }
    // A dimension of size 1 never steps: its stride does not matter.
    let strides: Vec<usize> = shape
        .iter()
        .zip(strides)
        .map(|(&n, &s)| if n > 1 { s } else { 0 })
        .collect();
    // The last element's position: the view spans exactly the range.
    let span = shape
        .iter()
        .zip(&strides)
        .try_fold(0usize, |acc, (&n, &s)| {
            acc.checked_add((n - 1).checked_mul(s)?)
        });
    let need = span
        .and_then(|s| s.checked_add(1))
        .and_then(|n| n.checked_mul(item));
    if need != Some(bytes.len()) {
        return Err(format!(
            "the strided view of shape {} needs {} bytes, the range holds {}",
            super::shape_text(shape),
            need.map_or_else(|| "too many".into(), |n| n.to_string()),
            bytes.len()
        ));
    }
    let size = elements
        .checked_mul(item)
        .ok_or_else(|| "the view is too large".to_string())?;
    let mut out = Vec::new();
    out.try_reserve_exact(size)
        .map_err(|_| format!("cannot hold the view's {size} bytes"))?;
    let mut index = vec![0usize; shape.len()];
    let mut pos = 0usize;
    for _ in 0..elements {
        let at = pos * item;
        out.extend_from_slice(bytes.get(at..at + item).unwrap_or_default());
        // Next index in C order.
        for d in (0..shape.len()).rev() {
            index[d] += 1;
            pos += strides[d];
            if index[d] < shape[d] {
                break;
            }
            pos -= strides[d] * shape[d];
            index[d] = 0;
        }
    }
    Ok(out)
}

/// The tensor of an entry whose range is the one stored array `part` of codec `id`.
fn coded(
    entry: &Entry,
    id: &str,
    part: &'static str,
    bytes: &[u8],
) -> std::result::Result<(Tensor, Encoded), String> {
    let codec = crate::codec::find(id)
        .and_then(|c| c.build(&crate::params::Params::new(), &entry.shape))
        .map_err(|e| e.to_string())?;
    let encoded = Encoded::new(&entry.shape).with_flat(part, Stored::U8(bytes.to_vec()));
    let values = codec.decode(&encoded).map_err(|e| e.to_string())?;
    Ok((values, encoded))
}

/// The elements of `data` as a tensor of the entry's shape.
fn elements(
    entry: &Entry,
    dtype: DType,
    order: ByteOrder,
    fortran: bool,
    data: &[u8],
) -> std::result::Result<Tensor, String> {
    let need = entry.elements.checked_mul(item_size(dtype));
    if need != Some(data.len()) {
        return Err(format!(
            "shape {} of {} needs {} bytes, the range holds {}",
            super::shape_text(&entry.shape),
            dtype.name(),
            need.map_or_else(|| "too many".into(), |n| n.to_string()),
            data.len()
        ));
    }
    let mut values = decode(dtype, order, data);
    if fortran && entry.shape.len() > 1 {
        values = fortran_to_c(&entry.shape, &values);
    }
    Ok(Tensor {
        shape: entry.shape.clone(),
        data: values,
        dtype,
    })
}

/// Inflate a raw deflate stream that must decompress to exactly `size` bytes.
fn inflate(compressed: &[u8], size: u64) -> std::result::Result<Vec<u8>, String> {
    let size = usize::try_from(size).map_err(|_| format!("declared size {size} is too large"))?;
    let mut out = Vec::with_capacity(size.min(compressed.len().saturating_mul(1032) + 64));
    let mut decoder = flate2::read::DeflateDecoder::new(compressed);
    (&mut decoder)
        .take(size as u64)
        .read_to_end(&mut out)
        .map_err(|e| format!("corrupt deflated data: {e}"))?;
    let mut probe = [0u8; 1];
    match decoder.read(&mut probe) {
        Ok(0) => Ok(out),
        Ok(_) => Err(format!(
            "the member inflates to more than its declared {size} bytes"
        )),
        Err(e) => Err(format!("corrupt deflated data: {e}")),
    }
}
