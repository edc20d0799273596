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
use std::io::Read;

/// Decode the tensor of `entry` from `bytes`, which must be exactly the bytes of
/// `entry.range`. Fails with the entry's problem if it has one, and on corrupt data (a zip
/// member whose CRC-32 or size does not match).
pub fn decode_entry(entry: &Entry, bytes: &[u8]) -> Result<Tensor> {
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
    match entry.storage {
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
        Storage::Coded { ref codec, part } => coded(entry, codec, part, bytes).map_err(fail),
        Storage::Onnx { data_type, field } => {
            super::onnx::decode(entry, data_type, field, bytes).map_err(fail)
        }
        Storage::Unreadable => Err(fail("this tensor cannot be decoded".into())),
    }
}

/// The tensor of an entry whose range is the one stored array `part` of codec `id`.
fn coded(
    entry: &Entry,
    id: &str,
    part: &'static str,
    bytes: &[u8],
) -> std::result::Result<Tensor, String> {
    let codec = crate::codec::find(id)
        .and_then(|c| c.build(&crate::params::Params::new(), &entry.shape))
        .map_err(|e| e.to_string())?;
    let encoded = Encoded::new(&entry.shape).with_flat(part, Stored::U8(bytes.to_vec()));
    codec.decode(&encoded).map_err(|e| e.to_string())
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
