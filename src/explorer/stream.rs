//! Chunked loading of large `.npy` files and `.safetensors` members.
//!
//! The caller (the page's Web Worker) reads the file's header, asks for a [`Plan`] (which byte
//! range holds the values, how many there are), then pushes that range in chunks of any size.
//! Each chunk is decoded at once and appended to the tensor, so the whole file's raw bytes are
//! never held: memory stays at the decoded values plus one chunk. Decoding reuses the crate's own
//! loaders (each chunk is wrapped as a small one-dimensional file), except for little-endian
//! float32, which is copied directly. Files whose values exceed the session budget are refused
//! from their header alone.

use super::MemberInfo;
use crate::error::{Error, Result};
use crate::tensor::{
    element_count, encode_npy, npy_header, read_npy, read_safetensors, DType, Tensor,
};
use serde::Serialize;

/// Bytes the caller should read first so that [`header_size`] can tell the header's length.
pub const PROBE_BYTES: usize = 16;

/// Largest header accepted (safetensors allows 100 MB; numpy headers are tiny).
pub const MAX_HEADER_BYTES: usize = 100 << 20;

/// What to read for a chunked load.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Plan {
    /// Byte offset of the values in the file and their length.
    pub offset: u64,
    pub length: u64,
    /// Bytes per element (chunks may be any size; this is informative).
    pub element_bytes: usize,
    pub elements: usize,
    /// The member being read (`""` for `.npy`).
    pub member: String,
    /// Every member of the file (safetensors), so the user can pick another.
    pub members: Vec<MemberInfo>,
}

enum Decoder {
    /// Little-endian float32 copied as is.
    F32Le,
    /// Wrapped as a one-dimensional `.npy` with this `descr` and read with the npy loader.
    Npy(String),
    /// Wrapped as a one-dimensional safetensors file with this dtype.
    Safetensors(String),
}

/// A chunked load in progress.
pub struct Stream {
    file: String,
    member: String,
    shape: Vec<usize>,
    fortran: bool,
    decoder: Decoder,
    element_bytes: usize,
    elements: usize,
    expected_bytes: u64,
    received: u64,
    carry: Vec<u8>,
    data: Vec<f32>,
    dtype: Option<DType>,
}

/// How many bytes from the start of the file hold the whole header, given its first
/// [`PROBE_BYTES`] bytes.
pub fn header_size(probe: &[u8]) -> Result<usize> {
    if probe.starts_with(b"\x93NUMPY") {
        let major = *probe.get(6).ok_or_else(short)?;
        let size = if major == 1 {
            10 + u16::from_le_bytes([probe[8], *probe.get(9).ok_or_else(short)?]) as usize
        } else {
            let b = probe.get(8..12).ok_or_else(short)?;
            12 + u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
        };
        return Ok(size.min(MAX_HEADER_BYTES));
    }
    if probe.starts_with(b"PK") {
        return Err(Error::load(
            ".npz",
            "large .npz archives are not read in chunks; extract the member with numpy \
             (np.load(f)[name]) and load it as .npy",
        ));
    }
    let b = probe.get(0..8).ok_or_else(short)?;
    let n = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
    if n > MAX_HEADER_BYTES as u64 || probe.get(8) != Some(&b'{') {
        return Err(Error::load(
            "file",
            "not a .npy or .safetensors file (unrecognised header)",
        ));
    }
    Ok(8 + n as usize)
}

fn short() -> Error {
    Error::load("file", "the file is too short to hold a header")
}

impl Stream {
    /// Plan the chunked load of `member` (safetensors; default: the first in the file) of a
    /// file of `file_size` bytes whose header is in `head`.
    pub fn begin(
        name: &str,
        head: &[u8],
        file_size: u64,
        member: Option<&str>,
    ) -> Result<(Stream, Plan)> {
        if head.starts_with(b"\x93NUMPY") {
            Self::begin_npy(name, head, file_size)
        } else {
            Self::begin_safetensors(name, head, file_size, member)
        }
    }

    fn begin_npy(name: &str, head: &[u8], file_size: u64) -> Result<(Stream, Plan)> {
        let mut reader = head;
        let header = npyz::NpyHeader::from_reader(&mut reader)
            .map_err(|e| Error::load(name, format!("bad .npy header: {e}")))?;
        let offset = (head.len() - reader.len()) as u64;
        let ts = match header.dtype() {
            npyz::DType::Plain(ts) if !header.uses_pickled_array() => ts,
            other => {
                return Err(Error::load(
                    name,
                    format!(
                        "dtype {} is not a plain numeric type (structured or object arrays are not supported)",
                        other.descr()
                    ),
                ))
            }
        };
        let element_bytes = ts
            .num_bytes()
            .filter(|&b| b > 0)
            .ok_or_else(|| Error::load(name, format!("unsupported dtype {ts}")))?;
        let shape: Vec<usize> = header
            .shape()
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| Error::load(name, "shape too large"))?;
        let elements = element_count(&shape)
            .ok_or_else(|| Error::load(name, format!("shape {shape:?} has too many elements")))?;
        let length = (elements as u64)
            .checked_mul(element_bytes as u64)
            .ok_or_else(|| Error::load(name, "data size overflows"))?;
        let descr = ts.to_string();
        let decoder = if descr == "<f4" {
            Decoder::F32Le
        } else {
            Decoder::Npy(descr)
        };
        let stream = Stream {
            file: name.to_string(),
            member: String::new(),
            shape,
            fortran: header.order() == npyz::Order::Fortran,
            decoder,
            element_bytes,
            elements,
            expected_bytes: length,
            received: 0,
            carry: Vec::new(),
            data: Vec::new(),
            dtype: None,
        };
        let plan = Plan {
            offset,
            length,
            element_bytes,
            elements,
            member: String::new(),
            members: Vec::new(),
        };
        check_size(name, &plan, file_size)?;
        Ok((stream, plan))
    }

    fn begin_safetensors(
        name: &str,
        head: &[u8],
        file_size: u64,
        member: Option<&str>,
    ) -> Result<(Stream, Plan)> {
        let n = header_size(head)?;
        let text = head
            .get(8..n)
            .ok_or_else(|| Error::load(name, "the safetensors header is truncated"))?;
        let json: serde_json::Value = serde_json::from_slice(text)
            .map_err(|e| Error::load(name, format!("bad safetensors header: {e}")))?;
        let obj = json
            .as_object()
            .ok_or_else(|| Error::load(name, "the safetensors header is not a JSON object"))?;
        let mut members = Vec::new();
        for (key, v) in obj {
            if key == "__metadata__" {
                continue;
            }
            let dtype = v.get("dtype").and_then(|d| d.as_str()).unwrap_or("?");
            let shape: Vec<usize> = v
                .get("shape")
                .and_then(|s| s.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|d| d.as_u64())
                        .map(|d| d as usize)
                        .collect()
                })
                .unwrap_or_default();
            let offsets: Vec<u64> = v
                .get("data_offsets")
                .and_then(|s| s.as_array())
                .map(|a| a.iter().filter_map(|d| d.as_u64()).collect())
                .unwrap_or_default();
            members.push((key.clone(), dtype.to_string(), shape, offsets));
        }
        // File order: by data offset.
        members.sort_by_key(|m| m.3.first().copied().unwrap_or(u64::MAX));
        let infos: Vec<MemberInfo> = members
            .iter()
            .map(|(key, dtype, shape, _)| MemberInfo {
                name: key.clone(),
                shape: shape.clone(),
                dtype: st_dtype(dtype).map_or("unsupported", |(d, _)| d.name()),
                elements: element_count(shape).unwrap_or(usize::MAX),
            })
            .collect();
        let chosen = match member {
            Some(m) => members
                .iter()
                .find(|x| x.0 == m)
                .ok_or_else(|| Error::Unknown {
                    what: "tensor",
                    name: m.to_string(),
                    hint: format!(" in {name}"),
                })?,
            None => members
                .first()
                .ok_or_else(|| Error::load(name, "the file holds no tensors"))?,
        };
        let (key, dtype, shape, offsets) = chosen;
        let what = format!("{name}: {key}");
        let (dt, element_bytes) = st_dtype(dtype)
            .ok_or_else(|| Error::load(&what, format!("unsupported dtype {dtype}")))?;
        let [begin, end] = offsets[..] else {
            return Err(Error::load(&what, "bad data_offsets"));
        };
        let elements = element_count(shape)
            .ok_or_else(|| Error::load(&what, format!("shape {shape:?} has too many elements")))?;
        let length = end
            .checked_sub(begin)
            .ok_or_else(|| Error::load(&what, "bad data_offsets"))?;
        if Some(length) != (elements as u64).checked_mul(element_bytes as u64) {
            return Err(Error::load(
                &what,
                format!(
                    "data_offsets span {length} bytes but shape {shape:?} of {dtype} needs {}",
                    elements * element_bytes
                ),
            ));
        }
        let decoder = if dt == DType::F32 {
            Decoder::F32Le
        } else {
            Decoder::Safetensors(dtype.clone())
        };
        let plan = Plan {
            offset: n as u64 + begin,
            length,
            element_bytes,
            elements,
            member: key.clone(),
            members: infos,
        };
        check_size(&what, &plan, file_size)?;
        let stream = Stream {
            file: name.to_string(),
            member: key.clone(),
            shape: shape.clone(),
            fortran: false,
            decoder,
            element_bytes,
            elements,
            expected_bytes: length,
            received: 0,
            carry: Vec::new(),
            data: Vec::new(),
            dtype: Some(dt),
        };
        Ok((stream, plan))
    }

    /// Reserve memory for the values, failing cleanly when the tab cannot provide it.
    pub fn allocate(&mut self) -> Result<()> {
        self.data.try_reserve_exact(self.elements).map_err(|_| {
            Error::load(
                &self.file,
                format!(
                    "not enough memory for {} values ({})",
                    self.elements,
                    super::human_bytes(self.elements as f64 * 4.0)
                ),
            )
        })
    }

    /// Append the next chunk; returns the fraction received.
    pub fn push(&mut self, bytes: &[u8]) -> Result<f64> {
        self.received += bytes.len() as u64;
        if self.received > self.expected_bytes {
            return Err(Error::load(
                &self.file,
                "more data than the header announced",
            ));
        }
        let eb = self.element_bytes;
        let mut rest = bytes;
        if !self.carry.is_empty() {
            // Complete the element split across the previous chunk first.
            let take = (eb - self.carry.len()).min(rest.len());
            self.carry.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.carry.len() == eb {
                let element = std::mem::take(&mut self.carry);
                self.decode(&element)?;
            }
        }
        let cut = rest.len() - rest.len() % eb;
        self.decode(&rest[..cut])?;
        self.carry.extend_from_slice(&rest[cut..]);
        Ok(if self.expected_bytes == 0 {
            1.0
        } else {
            self.received as f64 / self.expected_bytes as f64
        })
    }

    fn decode(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let n = bytes.len() / self.element_bytes;
        match &self.decoder {
            Decoder::F32Le => {
                self.data.extend(
                    bytes
                        .chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                );
                self.dtype.get_or_insert(DType::F32);
            }
            Decoder::Npy(descr) => {
                let t = read_npy(&mini_npy(descr, n, bytes))
                    .map_err(|e| Error::load(&self.file, e.to_string()))?;
                self.dtype = Some(t.dtype);
                self.data.extend_from_slice(&t.data);
            }
            Decoder::Safetensors(dtype) => {
                let mut ts = read_safetensors(&mini_safetensors(dtype, n, bytes))
                    .map_err(|e| Error::load(&self.file, e.to_string()))?;
                let t = ts
                    .pop()
                    .map(|t| t.tensor)
                    .ok_or_else(|| Error::load(&self.file, "a chunk decoded to nothing"))?;
                self.dtype = Some(t.dtype);
                self.data.extend_from_slice(&t.data);
            }
        }
        Ok(())
    }

    /// The decoded tensor, with `(file name, member name)`.
    pub fn finish(self) -> Result<((String, String), Tensor)> {
        if self.received != self.expected_bytes || self.data.len() != self.elements {
            return Err(Error::load(
                &self.file,
                format!(
                    "the file ended after {} of {} bytes",
                    self.received, self.expected_bytes
                ),
            ));
        }
        let data = if self.fortran && self.shape.len() > 1 {
            let reversed: Vec<usize> = self.shape.iter().rev().copied().collect();
            let view = ndarray::ArrayViewD::from_shape(ndarray::IxDyn(&reversed), &self.data)
                .map_err(|e| Error::load(&self.file, e.to_string()))?;
            view.reversed_axes().iter().copied().collect()
        } else {
            self.data
        };
        let tensor = Tensor {
            shape: self.shape,
            data,
            dtype: self.dtype.unwrap_or(DType::F32),
        };
        Ok(((self.file, self.member), tensor))
    }
}

fn check_size(what: &str, plan: &Plan, file_size: u64) -> Result<()> {
    if plan.offset.saturating_add(plan.length) > file_size {
        return Err(Error::load(
            what,
            format!(
                "the header announces {} bytes of data but the file has only {}",
                plan.length,
                file_size.saturating_sub(plan.offset)
            ),
        ));
    }
    Ok(())
}

/// safetensors dtype → (DType, bytes per element).
fn st_dtype(d: &str) -> Option<(DType, usize)> {
    Some(match d {
        "BOOL" => (DType::Bool, 1),
        "U8" => (DType::U8, 1),
        "I8" => (DType::I8, 1),
        "F8_E4M3" => (DType::F8E4M3, 1),
        "F8_E5M2" => (DType::F8E5M2, 1),
        "I16" => (DType::I16, 2),
        "U16" => (DType::U16, 2),
        "F16" => (DType::F16, 2),
        "BF16" => (DType::BF16, 2),
        "I32" => (DType::I32, 4),
        "U32" => (DType::U32, 4),
        "F32" => (DType::F32, 4),
        "I64" => (DType::I64, 8),
        "U64" => (DType::U64, 8),
        "F64" => (DType::F64, 8),
        _ => return None,
    })
}

/// A one-dimensional `.npy` (format 1.0) holding `n` elements of `descr` from `body`.
pub(crate) fn mini_npy(descr: &str, n: usize, body: &[u8]) -> Vec<u8> {
    encode_npy(&npy_header(descr, false, &[n]), body)
}

/// A safetensors file holding one tensor `t` of `n` elements of `dtype` from `body`.
pub(crate) fn mini_safetensors(dtype: &str, n: usize, body: &[u8]) -> Vec<u8> {
    let mut header = format!(
        "{{\"t\":{{\"dtype\":\"{dtype}\",\"shape\":[{n}],\"data_offsets\":[0,{}]}}}}",
        body.len()
    );
    header.push_str(&" ".repeat((8 - header.len() % 8) % 8));
    let mut out = Vec::with_capacity(8 + header.len() + body.len());
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(body);
    out
}
