//! `.safetensors` reader.
//!
//! Layout: a u64 little-endian header length, a JSON header mapping each tensor name to
//! `{dtype, shape, data_offsets}` (plus optional `__metadata__`), then the little-endian
//! element bytes. The `safetensors` crate parses and validates the header (offsets contiguous,
//! sizes consistent with shape and dtype, checked arithmetic, the data exactly filling the
//! file); the element bytes are converted here, FP8 by hand ([`super::f8_e4m3_to_f32`],
//! [`super::f8_e5m2_to_f32`]).

use super::decode::{self, ByteOrder};
use super::{DType, NamedTensor, Tensor};
use crate::error::{Error, Result};
use safetensors::{Dtype, SafeTensorError, SafeTensors};

fn err(reason: impl Into<String>) -> Error {
    Error::load(".safetensors", reason)
}

/// Parse every tensor of a `.safetensors` file, in the order of their data in the file.
pub fn read_safetensors(bytes: &[u8]) -> Result<Vec<NamedTensor>> {
    read_safetensors_with(bytes, |_| None)
}

/// Parse every tensor of a `.safetensors` file; F32 data is first offered to `zero_copy` (its
/// raw bytes), which may return the values without decoding them.
pub(crate) fn read_safetensors_with(
    bytes: &[u8],
    zero_copy: impl Fn(&[u8]) -> Option<Vec<f32>>,
) -> Result<Vec<NamedTensor>> {
    if bytes.is_empty() {
        return Err(err("empty file (0 bytes): not a .safetensors file"));
    }
    let (_, metadata) = SafeTensors::read_metadata(bytes).map_err(|e| explain(e, bytes))?;
    let file = SafeTensors::deserialize(bytes).map_err(|e| explain(e, bytes))?;
    let mut tensors = Vec::with_capacity(file.len());
    for name in metadata.offset_keys() {
        let view = file
            .tensor(&name)
            .map_err(|e| err(format!("tensor `{name}`: {e}")))?;
        let dtype = map_dtype(view.dtype()).map_err(|reason| Error::load(name.clone(), reason))?;
        let mapped = (dtype == DType::F32)
            .then(|| zero_copy(view.data()))
            .flatten();
        let data = match mapped {
            Some(values) => values,
            None => decode::decode(dtype, ByteOrder::Little, view.data()),
        };
        tensors.push(NamedTensor {
            name,
            tensor: Tensor {
                shape: view.shape().to_vec(),
                data,
                dtype,
            },
        });
    }
    Ok(tensors)
}

/// Our dtype for a safetensors dtype, or why it cannot be read.
fn map_dtype(dtype: Dtype) -> std::result::Result<DType, String> {
    Ok(match dtype {
        Dtype::BOOL => DType::Bool,
        Dtype::U8 => DType::U8,
        Dtype::I8 => DType::I8,
        Dtype::I16 => DType::I16,
        Dtype::U16 => DType::U16,
        Dtype::I32 => DType::I32,
        Dtype::U32 => DType::U32,
        Dtype::I64 => DType::I64,
        Dtype::U64 => DType::U64,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::F8_E4M3 => DType::F8E4M3,
        Dtype::F8_E5M2 => DType::F8E5M2,
        Dtype::C64 => {
            return Err(
                "complex dtype C64 is not supported: quantscope observes real numbers only".into(),
            )
        }
        other => {
            return Err(format!(
                "dtype {other:?} is not supported (quantscope reads BOOL, U8..U64, I8..I64, F16, BF16, F32, F64, F8_E4M3 and F8_E5M2)"
            ))
        }
    })
}

/// A load error naming what is wrong with the file.
fn explain(e: SafeTensorError, bytes: &[u8]) -> Error {
    let header_len = bytes
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes);
    let after_field = bytes.len().saturating_sub(8);
    let reason = match (e, header_len) {
        (SafeTensorError::HeaderTooSmall, _) => format!(
            "truncated: {} bytes, too short for the 8-byte header length",
            bytes.len()
        ),
        (SafeTensorError::HeaderTooLarge, Some(n)) => format!(
            "the header length field says {n} bytes, more than the format allows (100 MB); not a .safetensors file?"
        ),
        (SafeTensorError::InvalidHeaderLength, Some(n)) => format!(
            "truncated header (or not a .safetensors file): the header length field says {n} bytes but only {after_field} follow"
        ),
        (SafeTensorError::MetadataIncompleteBuffer, Some(n)) => {
            let available =
                after_field.saturating_sub(usize::try_from(n).unwrap_or(usize::MAX));
            match data_end(bytes, n) {
                Some(end) if end > available => format!(
                    "truncated data: the header's tensors need {end} data bytes but the file holds {available}"
                ),
                Some(end) => format!(
                    "header/data mismatch: the header's tensors need {end} data bytes but the file holds {available} ({} trailing bytes)",
                    available - end
                ),
                None => "header/data mismatch: the tensors' data does not end exactly at the end of the file".to_string(),
            }
        }
        (SafeTensorError::TensorInvalidInfo, _) => {
            "header/shape mismatch: a tensor's byte range does not match its shape and dtype"
                .to_string()
        }
        (SafeTensorError::ValidationOverflow, _) => {
            "a tensor's shape has more elements than this machine can address".to_string()
        }
        (SafeTensorError::InvalidHeaderDeserialization(e), _)
            if e.to_string().contains("unknown variant") =>
        {
            format!("unknown or unsupported dtype in the header: {e}")
        }
        (other, _) => other.to_string(),
    };
    err(reason)
}

/// The largest end offset any tensor of the JSON header declares (called only after the
/// safetensors crate has parsed the header successfully).
fn data_end(bytes: &[u8], header_len: u64) -> Option<usize> {
    let end = usize::try_from(header_len).ok()?.checked_add(8)?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(bytes.get(8..end)?).ok()?;
    header
        .iter()
        .filter(|(k, _)| k.as_str() != "__metadata__")
        .filter_map(|(_, v)| v.get("data_offsets")?.get(1)?.as_u64())
        .max()
        .and_then(|m| usize::try_from(m).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file from `(name, dtype, shape, data)` entries, laid out in order.
    fn build(entries: &[(&str, &str, &[usize], &[u8])]) -> Vec<u8> {
        let mut offset = 0;
        let mut fields = Vec::new();
        let mut data = Vec::new();
        for (name, dtype, shape, bytes) in entries {
            fields.push(format!(
                "\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":{shape:?},\"data_offsets\":[{offset},{}]}}",
                offset + bytes.len()
            ));
            offset += bytes.len();
            data.extend_from_slice(bytes);
        }
        fields.push("\"__metadata__\":{\"k\":\"v\"}".to_string());
        raw(&format!("{{{}}}", fields.join(",")), &data)
    }

    fn raw(header: &str, data: &[u8]) -> Vec<u8> {
        let mut out = (header.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    fn reason(r: Result<Vec<NamedTensor>>) -> String {
        match r {
            Err(e) => e.to_string(),
            Ok(t) => panic!("expected an error, got {} tensors", t.len()),
        }
    }

    #[test]
    fn reads_every_dtype_in_file_order() {
        let f32s: Vec<u8> = [1.5f32, -2.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let f64s: Vec<u8> = 0.1f64.to_le_bytes().to_vec();
        let f16s = half::f16::from_f32(-3.5).to_le_bytes();
        let bf16s = half::bf16::from_f32(0.75).to_le_bytes();
        let i64s = (-7i64).to_le_bytes();
        let u64s = u64::MAX.to_le_bytes();
        let i32s = (-9i32).to_le_bytes();
        let u32s = 9u32.to_le_bytes();
        let i16s = (-300i16).to_le_bytes();
        let u16s = 65535u16.to_le_bytes();
        let bytes = build(&[
            ("z_first", "F32", &[2], &f32s),
            ("a_second", "F64", &[], &f64s),
            ("h", "F16", &[1], &f16s),
            ("bh", "BF16", &[1, 1], &bf16s),
            ("i64", "I64", &[1], &i64s),
            ("u64", "U64", &[1], &u64s),
            ("i32", "I32", &[1], &i32s),
            ("u32", "U32", &[1], &u32s),
            ("i16", "I16", &[1], &i16s),
            ("u16", "U16", &[1], &u16s),
            ("i8", "I8", &[2], &[0x80, 0x7F]),
            ("u8", "U8", &[1], &[200]),
            ("b", "BOOL", &[2], &[0, 1]),
            ("e4", "F8_E4M3", &[3], &[0x7E, 0x7F, 0x38]),
            ("e5", "F8_E5M2", &[3], &[0x7B, 0x7C, 0xFC]),
            ("empty", "F32", &[0, 3], &[]),
        ]);
        let t = read_safetensors(&bytes).unwrap();
        let names: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names[..2], ["z_first", "a_second"]);
        assert_eq!(names.len(), 16);
        let get = |n: &str| &t.iter().find(|t| t.name == n).unwrap().tensor;
        assert_eq!(get("z_first").data, vec![1.5, -2.0]);
        assert_eq!(
            (get("a_second").shape.len(), get("a_second").data[0]),
            (0, 0.1f64 as f32)
        );
        assert_eq!((get("h").dtype, get("h").data[0]), (DType::F16, -3.5));
        assert_eq!((get("bh").dtype, get("bh").data[0]), (DType::BF16, 0.75));
        assert_eq!(get("i64").data, vec![-7.0]);
        assert_eq!(get("u64").data, vec![u64::MAX as f32]);
        assert_eq!(get("i32").data, vec![-9.0]);
        assert_eq!(get("u32").data, vec![9.0]);
        assert_eq!(get("i16").data, vec![-300.0]);
        assert_eq!(get("u16").data, vec![65535.0]);
        assert_eq!(get("i8").data, vec![-128.0, 127.0]);
        assert_eq!(get("u8").data, vec![200.0]);
        assert_eq!(
            (get("b").dtype, get("b").data.clone()),
            (DType::Bool, vec![0.0, 1.0])
        );
        let e4 = get("e4");
        assert_eq!(
            (e4.dtype, e4.data[0], e4.data[2]),
            (DType::F8E4M3, 448.0, 1.0)
        );
        assert!(e4.data[1].is_nan());
        let e5 = get("e5");
        assert_eq!(e5.dtype, DType::F8E5M2);
        assert_eq!(e5.data, vec![57344.0, f32::INFINITY, f32::NEG_INFINITY]);
        assert_eq!(get("empty").shape, vec![0, 3]);
        assert!(read_safetensors(&raw("{}", &[])).unwrap().is_empty());
    }

    #[test]
    fn unsupported_dtypes_are_named() {
        let r = reason(read_safetensors(&build(&[("c", "C64", &[1], &[0; 8])])));
        assert!(r.starts_with("cannot read c: complex"), "{r}");
        let r = reason(read_safetensors(&build(&[("m", "F8_E8M0", &[1], &[0])])));
        assert!(
            r.starts_with("cannot read m:") && r.contains("F8_E8M0") && r.contains("not supported"),
            "{r}"
        );
        let r = reason(read_safetensors(&build(&[("q", "F4", &[2], &[0])])));
        assert!(r.contains("F4") && r.contains("not supported"), "{r}");
        let r = reason(read_safetensors(&build(&[("x", "Q4_K", &[1], &[0])])));
        assert!(r.contains("Q4_K") && r.contains("dtype"), "{r}");
    }

    #[test]
    fn refuses_hostile_files() {
        assert!(reason(read_safetensors(&[])).contains("empty"));
        assert!(reason(read_safetensors(&[1, 2, 3])).contains("truncated"));
        // Header length 2^60.
        let mut b = (1u64 << 60).to_le_bytes().to_vec();
        b.extend_from_slice(b"{}");
        let r = reason(read_safetensors(&b));
        assert!(r.contains("1152921504606846976"), "{r}");
        // Header length just past the end.
        let mut b = 10u64.to_le_bytes().to_vec();
        b.extend_from_slice(b"{}");
        let r = reason(read_safetensors(&b));
        assert!(
            r.contains("truncated header") && r.contains("only 2 follow"),
            "{r}"
        );
        // A shape of 2^60 elements over 4 bytes of data.
        let r = reason(read_safetensors(&raw(
            "{\"t\":{\"dtype\":\"F32\",\"shape\":[1152921504606846976],\"data_offsets\":[0,4]}}",
            &[0; 4],
        )));
        assert!(r.contains("mismatch") || r.contains("address"), "{r}");
        // Shape product overflow.
        let r = reason(read_safetensors(&raw(
            "{\"t\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}",
            &[0; 4],
        )));
        assert!(r.contains("address"), "{r}");
        // Offsets beyond the data; trailing bytes; overlapping offsets.
        let r = reason(read_safetensors(&raw(
            "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
            &[0; 4],
        )));
        assert!(
            r.contains("truncated") && r.contains("need 8") && r.contains("holds 4"),
            "{r}"
        );
        let r = reason(read_safetensors(&raw(
            "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
            &[0; 6],
        )));
        assert!(r.contains("mismatch") && r.contains("2 trailing"), "{r}");
        let r = reason(read_safetensors(&raw(
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
            &[0; 4],
        )));
        assert!(r.contains("offset"), "{r}");
        let r = reason(read_safetensors(&raw(
            "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
            &[0; 4],
        )));
        assert!(r.contains("shape"), "{r}");
        // Not JSON, deeply nested JSON, invalid UTF-8.
        assert!(reason(read_safetensors(&raw("not json", &[]))).contains("JSON"));
        let deep = "[".repeat(100_000);
        assert!(reason(read_safetensors(&raw(&deep, &[]))).contains("JSON"));
        let mut b = 2u64.to_le_bytes().to_vec();
        b.extend_from_slice(&[0xFF, 0xFE]);
        assert!(reason(read_safetensors(&b)).contains("UTF-8"));
    }
}
