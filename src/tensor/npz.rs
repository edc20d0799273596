//! `.npz` reader (zip of `.npy` members, stored or deflated), as `np.savez` and
//! `np.savez_compressed` write it: member `<key>.npy` holds the array saved under `key`.
//!
//! Zip bombs cannot make it allocate more than the archive justifies: each member's declared
//! uncompressed size must agree with its own `.npy` header (read first, from a few bytes), must
//! be within deflate's maximum ratio of its compressed size, and the total stays under
//! [`MAX_TOTAL_BYTES`]; decompression never reads past the declared size.

use super::{npy, NamedTensor, Tensor};
use crate::error::{Error, Result};
use std::io::{Cursor, Read};
use zip::CompressionMethod;

/// The most decompressed bytes one archive may hold (2 GiB).
pub const MAX_TOTAL_BYTES: u64 = 2 << 30;
/// Deflate cannot expand data by more than about 1032:1; anything claiming more is corrupt.
const MAX_DEFLATE_RATIO: u64 = 1032;
/// Bytes read before the header length is known (preamble of a version 2.0/3.0 file).
const PREAMBLE: usize = 12;

/// Parse every member of an `.npz` archive, in archive order, named by their key (the member
/// name without `.npy`).
pub fn read_npz(bytes: &[u8]) -> Result<Vec<NamedTensor>> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| Error::load(".npz", format!("not a valid zip archive: {e}")))?;
    let mut tensors = Vec::new();
    let mut total = 0u64;
    for index in 0..archive.len() {
        let member = archive
            .by_index(index)
            .map_err(|e| Error::load(".npz", format!("cannot open member #{index}: {e}")))?;
        let name = String::from_utf8_lossy(member.name_raw()).into_owned();
        if member.is_dir() {
            continue;
        }
        total = total.saturating_add(member.size());
        if total > MAX_TOTAL_BYTES {
            return Err(Error::load(
                ".npz",
                format!(
                    "the members decompress to more than {MAX_TOTAL_BYTES} bytes (declared sizes), quantscope's limit for one archive"
                ),
            ));
        }
        let tensor = read_member(member).map_err(|e| match e {
            Error::Load { reason, .. } => Error::load(name.clone(), reason),
            other => other,
        })?;
        let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
        tensors.push(NamedTensor { name: key, tensor });
    }
    Ok(tensors)
}

/// Decompress and parse one member, checking its declared size against its `.npy` header
/// before allocating for the data.
fn read_member<R: Read>(mut member: zip::read::ZipFile<'_, R>) -> Result<Tensor> {
    let declared = member.size();
    let compressed = member.compressed_size();
    let method = member.compression();
    let plausible = match method {
        CompressionMethod::Stored => declared == compressed,
        CompressionMethod::Deflated => {
            declared
                <= compressed
                    .saturating_mul(MAX_DEFLATE_RATIO)
                    .saturating_add(64)
        }
        other => {
            return Err(Error::load(
                "",
                format!(
                "compression method {other:?} is not supported (only stored and deflated members)"
            ),
            ))
        }
    };
    if !plausible {
        return Err(Error::load(
            "",
            format!(
                "declared size {declared} bytes is impossible for {compressed} {method:?} bytes (corrupt archive or zip bomb)"
            ),
        ));
    }
    let declared = usize::try_from(declared)
        .map_err(|_| Error::load("", format!("declared size {declared} bytes is too large")))?;
    let mut buf = Vec::with_capacity(PREAMBLE.min(declared));
    fill(&mut member, &mut buf, PREAMBLE.min(declared))?;
    let header_end = npy::header_end(&buf)?;
    if header_end > declared {
        return Err(Error::load(
            "",
            format!("truncated: the .npy header needs {header_end} bytes but the member holds {declared}"),
        ));
    }
    fill(&mut member, &mut buf, header_end)?;
    let header = npy::parse_header(&buf)?;
    let needed = header.data_offset.checked_add(header.data_len);
    if needed != Some(declared) {
        let what = format!(
            "its .npy header (shape {} of {}) needs {} bytes but the zip entry declares {declared}",
            npy::shape_str(&header.shape),
            header.dtype.name(),
            needed.map_or_else(|| "too many".to_string(), |n| n.to_string()),
        );
        return Err(Error::load(
            "",
            if needed.is_none_or(|n| n > declared) {
                format!("truncated data: {what}")
            } else {
                format!("header/shape mismatch: {what}")
            },
        ));
    }
    buf.reserve_exact(declared.saturating_sub(buf.len()));
    fill(&mut member, &mut buf, declared)?;
    // Reading to the end lets the zip reader verify the CRC.
    let mut probe = [0u8; 1];
    match member.read(&mut probe) {
        Ok(0) => {}
        Ok(_) => {
            return Err(Error::load(
                "",
                format!("the member holds more than its declared {declared} bytes"),
            ))
        }
        Err(e) => return Err(Error::load("", format!("corrupt member data: {e}"))),
    }
    npy::read_npy(&buf)
}

/// Read from `r` until `buf` holds `len` bytes; fewer available is a truncation error.
fn fill(r: &mut impl Read, buf: &mut Vec<u8>, len: usize) -> Result<()> {
    let missing = len.saturating_sub(buf.len()) as u64;
    r.take(missing)
        .read_to_end(buf)
        .map_err(|e| Error::load("", format!("corrupt member data: {e}")))?;
    if buf.len() < len {
        return Err(Error::load(
            "",
            format!(
                "truncated: the member ends after {} of its {len} bytes",
                buf.len()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use zip::write::SimpleFileOptions;

    fn npy_f32(shape: &[usize], values: &[f32]) -> Vec<u8> {
        let body: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        crate::tensor::encode_npy(&crate::tensor::npy_header("<f4", false, shape), &body)
    }

    fn zip_of(members: &[(&str, &[u8])], method: CompressionMethod) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = SimpleFileOptions::default().compression_method(method);
        for (name, data) in members {
            w.start_file(*name, options).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn reason(r: Result<Vec<NamedTensor>>) -> String {
        match r {
            Err(e) => e.to_string(),
            Ok(t) => panic!("expected an error, got {} tensors", t.len()),
        }
    }

    #[test]
    fn reads_stored_and_deflated() {
        let a = npy_f32(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let b = npy_f32(&[], &[7.5]);
        for method in [CompressionMethod::Stored, CompressionMethod::Deflated] {
            let bytes = zip_of(&[("w.npy", &a), ("s.npy", &b)], method);
            let t = read_npz(&bytes).unwrap();
            assert_eq!(t.len(), 2);
            assert_eq!(
                (t[0].name.as_str(), t[0].tensor.shape.as_slice()),
                ("w", &[2, 2][..])
            );
            assert_eq!(t[0].tensor.data, vec![1.0, 2.0, 3.0, 4.0]);
            assert_eq!(
                (t[1].name.as_str(), t[1].tensor.data.as_slice()),
                ("s", &[7.5][..])
            );
        }
        assert!(read_npz(&zip_of(&[], CompressionMethod::Stored))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn header_must_agree_with_declared_size() {
        // The header claims 2^40 floats; the member holds 8 bytes of data.
        let lying = npy_f32(&[1099511627776], &[1.0, 2.0]);
        for method in [CompressionMethod::Stored, CompressionMethod::Deflated] {
            let r = reason(read_npz(&zip_of(&[("x.npy", &lying)], method)));
            assert!(
                r.contains("x.npy") && r.contains("truncated") && r.contains("declares"),
                "{r}"
            );
        }
        let mut extra = npy_f32(&[1], &[1.0]);
        extra.extend_from_slice(&[0; 4]);
        let r = reason(read_npz(&zip_of(
            &[("y.npy", &extra)],
            CompressionMethod::Deflated,
        )));
        assert!(r.contains("mismatch"), "{r}");
        let r = reason(read_npz(&zip_of(
            &[("z.npy", b"hello")],
            CompressionMethod::Stored,
        )));
        assert!(r.contains("z.npy") && r.contains("magic"), "{r}");
        let r = reason(read_npz(&zip_of(
            &[("e.npy", b"")],
            CompressionMethod::Stored,
        )));
        assert!(r.contains("empty"), "{r}");
    }

    #[test]
    fn declared_size_beyond_deflate_ratio_is_refused() {
        // A real deflated member of zeros, then its central-directory size patched upwards.
        let data = npy_f32(&[4096], &[0.0; 4096]);
        let mut bytes = zip_of(&[("b.npy", &data)], CompressionMethod::Deflated);
        let cd = bytes.windows(4).position(|w| w == b"PK\x01\x02").unwrap();
        bytes[cd + 24..cd + 28].copy_from_slice(&100_000_000u32.to_le_bytes());
        let r = reason(read_npz(&bytes));
        assert!(r.contains("b.npy") && r.contains("impossible"), "{r}");
        bytes[cd + 24..cd + 28].copy_from_slice(&u32::MAX.to_le_bytes());
        let r = reason(read_npz(&bytes));
        assert!(r.contains("limit"), "{r}");
    }

    #[test]
    fn corrupt_data_is_detected() {
        let data = npy_f32(&[16], &[3.0; 16]);
        let mut bytes = zip_of(&[("c.npy", &data)], CompressionMethod::Stored);
        // Flip a data byte of the stored member: the CRC no longer matches.
        let at = bytes
            .windows(4)
            .position(|w| w == 3.0f32.to_le_bytes())
            .unwrap();
        bytes[at] ^= 0xFF;
        let r = reason(read_npz(&bytes));
        assert!(r.contains("c.npy"), "{r}");
        assert!(reason(read_npz(b"PK\x03\x04garbage")).contains("zip"));
        assert!(reason(read_npz(&[])).contains("zip"));
    }
}
