//! Listing an ONNX model (`.onnx`, a protobuf `ModelProto`) as a checkpoint: every initializer
//! of the main graph is an [`Entry`], and the graph's quantization (`DequantizeLinear` of an
//! initializer, `com.microsoft::MatMulNBits`, activation `QuantizeLinear`/`DequantizeLinear`
//! pairs) is recorded for the layout ([`qdq`]).
//!
//! **Reading headers only.** Protobuf has no header: the wire walker ([`wire`]) reads the
//! framing of `ModelProto → graph → node / initializer` through the [`ByteSource`] and skips the
//! payloads it does not need, so a tensor's `raw_data` is never read while listing: its entry is
//! the byte range of the payload in the file. prost ([`proto`]) decodes the small fields (nodes,
//! a tensor's name, dims, data type, external data).
//!
//! **Storage.** `raw_data` of a type quantscope reads is [`Storage::Plain`] (little-endian, as
//! ONNX stores it). Values stored in a typed field instead (`float_data`, `int32_data`,
//! `int64_data`, `double_data`, `uint64_data`, packed or not) are [`Storage::Onnx`] with the
//! field number: the range spans the field's occurrences and decoding picks them out. `int4` and
//! `uint4` (two per byte, low nibble first) are [`Storage::Onnx`] too; they decode to their
//! integer values, and a codec takes the packed bytes.
//!
//! **External data** (`data_location = EXTERNAL`): the entry lies in the file named by
//! `location`, relative to the model's folder. Locations that are absolute, carry a drive letter
//! or URL scheme, or leave the model's folder once normalised (`../x`, `a/../../x`, `..\x`) are
//! refused with a message saying which; `length` must be the tensor's size. The listing names the
//! external files it needs ([`OnnxListing::external`]) and [`super::assemble`] points each entry
//! at its file, checking `offset + length` against that file's size.
//!
//! Not read: sparse initializers, string tensors, segmented tensors, subgraphs (`If`/`Loop`
//! bodies) and `Constant` nodes' tensors.

pub mod proto;
pub mod qdq;
mod wire;

use super::source::{bytes, Parse, Stop};
use super::{decode_entry, ByteSource, Entry, EntryDType, Storage};
use crate::codec::Stored;
use crate::tensor::{ByteOrder, DType, Tensor};
use prost::Message;
use std::ops::Range;
use wire::{Field, Value};

pub use qdq::{ActivationQdq, ModelQdq, QdqWeight};

/// One `TensorProto.DataType`: its number, quantscope's name for it, the dtype quantscope decodes
/// it as (`None` for `int4`/`uint4`, which decode through [`Storage::Onnx`], and for types not
/// read), bits per element, and the typed field that holds its values outside `raw_data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataType {
    pub code: i32,
    pub name: &'static str,
    pub dtype: Option<DType>,
    pub bits: u32,
    pub field: u32,
    /// Whether quantscope reads it.
    pub read: bool,
}

/// The ONNX data type numbered `code`.
pub fn data_type(code: i32) -> Option<DataType> {
    let t = |name, dtype, bits, field, read| DataType {
        code,
        name,
        dtype,
        bits,
        field,
        read,
    };
    Some(match code {
        1 => t("float32", Some(DType::F32), 32, 4, true),
        2 => t("uint8", Some(DType::U8), 8, 5, true),
        3 => t("int8", Some(DType::I8), 8, 5, true),
        4 => t("uint16", Some(DType::U16), 16, 5, true),
        5 => t("int16", Some(DType::I16), 16, 5, true),
        6 => t("int32", Some(DType::I32), 32, 5, true),
        7 => t("int64", Some(DType::I64), 64, 7, true),
        8 => t("string", None, 0, 6, false),
        9 => t("bool", Some(DType::Bool), 8, 5, true),
        10 => t("float16", Some(DType::F16), 16, 5, true),
        11 => t("float64", Some(DType::F64), 64, 10, true),
        12 => t("uint32", Some(DType::U32), 32, 11, true),
        13 => t("uint64", Some(DType::U64), 64, 11, true),
        14 => t("complex64", None, 64, 4, false),
        15 => t("complex128", None, 128, 10, false),
        16 => t("bfloat16", Some(DType::BF16), 16, 5, true),
        17 => t("float8_e4m3", Some(DType::F8E4M3), 8, 5, true),
        18 => t("float8_e4m3fnuz", None, 8, 5, false),
        19 => t("float8_e5m2", Some(DType::F8E5M2), 8, 5, true),
        20 => t("float8_e5m2fnuz", None, 8, 5, false),
        21 => t("uint4", None, 4, 5, true),
        22 => t("int4", None, 4, 5, true),
        23 => t("float4_e2m1", None, 4, 5, false),
        24 => t("float8_e8m0", None, 8, 5, false),
        25 => t("uint2", None, 2, 5, false),
        26 => t("int2", None, 2, 5, false),
        _ => return None,
    })
}

impl DataType {
    /// Bytes of `n` elements as `raw_data` stores them (sub-byte types packed).
    pub fn raw_bytes(&self, n: usize) -> Option<usize> {
        n.checked_mul(self.bits as usize).map(|b| b.div_ceil(8))
    }

    /// Values a typed field holds for `n` elements (4-bit types: one per byte of packed pairs).
    fn typed_values(&self, n: usize) -> usize {
        if self.bits == 4 {
            n.div_ceil(2)
        } else {
            n
        }
    }
}

/// What listing one `.onnx` file gives.
#[derive(Debug, Clone, PartialEq)]
pub struct OnnxListing {
    /// Every initializer of the main graph, in file order.
    pub entries: Vec<Entry>,
    /// The ONNX data type of each entry.
    pub types: Vec<i32>,
    /// For each entry stored as external data: which of [`OnnxListing::external`] holds it.
    pub external_of: Vec<Option<usize>>,
    /// The external data files the model needs, relative to its folder, normalised (`a/b.data`).
    pub external: Vec<String>,
    /// The quantization the graph holds (entry indices local to this file).
    pub qdq: ModelQdq,
}

/// A decoded node: what the Q/DQ analysis needs of it.
pub type Node = proto::NodeProto;

/// The path of external data `location` relative to the model's folder, normalised, or why it is
/// refused.
pub fn external_location(location: &str) -> Result<String, String> {
    let refuse = |why: &str| {
        Err(format!(
            "external data location `{location}` is refused: {why}"
        ))
    };
    if location.is_empty() {
        return refuse("it is empty");
    }
    if location.contains('\0') {
        return refuse("it contains a NUL byte");
    }
    if location.starts_with(['/', '\\']) {
        return refuse("it is an absolute path; it must be relative to the model's folder");
    }
    let b = location.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return refuse("it starts with a drive letter; it must be relative to the model's folder");
    }
    if let Some(colon) = location.find(':') {
        let scheme = &location[..colon];
        if !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            return refuse("it has a URL scheme; only files beside the model are read");
        }
        return refuse("it contains `:` (a drive or stream separator)");
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in location.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return refuse("it leaves the model's folder");
                }
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return refuse("it names the model's folder, not a file");
    }
    Ok(parts.join("/"))
}

fn bad(what: &str) -> impl Fn(prost::DecodeError) -> Stop + '_ {
    move |e| Stop::Bad(format!("malformed protobuf in {what}: {e}"))
}

/// List the ONNX model in `src`.
pub(crate) fn list(src: &dyn ByteSource) -> Parse<OnnxListing> {
    let mut header = Vec::new();
    let mut graphs = Vec::new();
    wire::walk(src, 0..src.len(), "the model", &mut |f: Field| {
        match (f.number, &f.value) {
            (7, Value::Len(r)) => graphs.push(r.clone()),
            (7, _) => {
                return Err(Stop::Bad(
                    "malformed ONNX model: `graph` is not a message".into(),
                ))
            }
            (1 | 2 | 3 | 4 | 5 | 8, _) => {
                header.extend_from_slice(bytes(src, f.whole.clone(), "the model header")?)
            }
            _ => {}
        }
        Ok(())
    })?;
    let model = proto::ModelProto::decode(header.as_slice()).map_err(bad("the model header"))?;
    if graphs.is_empty() {
        return Err(Stop::Bad(
            "not an ONNX model: the protobuf has no graph (field 7 of ModelProto)".into(),
        ));
    }
    let mut nodes = Vec::new();
    let mut tensors = Vec::new();
    let mut sparse = 0usize;
    for g in graphs {
        wire::walk(src, g, "the graph", &mut |f: Field| {
            match (f.number, &f.value) {
                (1, Value::Len(r)) => {
                    let b = bytes(src, r.clone(), "a node")?;
                    nodes.push(proto::NodeProto::decode(b).map_err(bad("a node"))?);
                }
                (5, Value::Len(r)) => tensors.push(tensor(src, r.clone(), tensors.len())?),
                (15, _) => sparse += 1,
                (1 | 5, _) => {
                    return Err(Stop::Bad(
                        "malformed ONNX graph: a node or initializer is not a message".into(),
                    ))
                }
                _ => {}
            }
            Ok(())
        })?;
    }
    let mut listing = OnnxListing {
        entries: Vec::with_capacity(tensors.len()),
        types: Vec::with_capacity(tensors.len()),
        external_of: Vec::with_capacity(tensors.len()),
        external: Vec::new(),
        qdq: ModelQdq::default(),
    };
    for t in tensors {
        let (entry, code, location) = t;
        let ext = location.map(
            |loc| match listing.external.iter().position(|l| *l == loc) {
                Some(i) => i,
                None => {
                    listing.external.push(loc);
                    listing.external.len() - 1
                }
            },
        );
        listing.entries.push(entry);
        listing.types.push(code);
        listing.external_of.push(ext);
    }
    super::validate::flag_empty(&mut listing.entries);
    let opsets: Vec<(String, i64)> = model
        .opset_import
        .iter()
        .map(|o| (o.domain.clone(), o.version))
        .collect();
    let mut qdq = qdq::analyse(&nodes, &listing, &opsets, &mut |i| {
        small_values(src, &listing, i)
    })?;
    if sparse > 0 {
        qdq.warnings.push(format!(
            "{sparse} sparse initializer(s) are not read by quantscope"
        ));
    }
    listing.qdq = qdq;
    Ok(listing)
}

/// The values of inline entry `i` when it has at most 4096 elements and can be read (scales and
/// zero points of activations, read while listing).
fn small_values(src: &dyn ByteSource, listing: &OnnxListing, i: usize) -> Parse<Option<Vec<f32>>> {
    let Some(e) = listing.entries.get(i) else {
        return Ok(None);
    };
    if e.problem.is_some() || e.elements > 4096 || listing.external_of[i].is_some() {
        return Ok(None);
    }
    let b = bytes(src, e.range.clone(), "a scale or zero point")?;
    Ok(decode_entry(e, b).ok().map(|t| t.data))
}

/// One initializer: its entry, its ONNX data type, and its external location if it has one.
fn tensor(
    src: &dyn ByteSource,
    range: Range<u64>,
    index: usize,
) -> Parse<(Entry, i32, Option<String>)> {
    let mut small = Vec::new();
    let mut raw: Option<Range<u64>> = None;
    let mut typed: Option<(u32, Range<u64>)> = None;
    let mut conflict = None;
    let mut segment = false;
    let mut strings = false;
    wire::walk(src, range.clone(), "an initializer", &mut |f: Field| {
        match f.number {
            1 | 2 | 8 | 12 | 13 | 14 => {
                small.extend_from_slice(bytes(src, f.whole.clone(), "an initializer")?)
            }
            3 => segment = true,
            6 => strings = true,
            9 => match &f.value {
                Value::Len(r) => raw = Some(r.clone()),
                _ => conflict = Some("raw_data is not a byte string".to_string()),
            },
            4 | 5 | 7 | 10 | 11 => match &mut typed {
                Some((n, span)) if *n == f.number => span.end = f.whole.end,
                Some((n, _)) => {
                    conflict = Some(format!("values in two typed fields ({n} and {})", f.number))
                }
                None => typed = Some((f.number, f.whole.clone())),
            },
            _ => {}
        }
        Ok(())
    })?;
    let fallback = format!("initializer #{index}");
    let t = match proto::TensorProto::decode(small.as_slice()) {
        Ok(t) => t,
        Err(e) => {
            let mut e = Entry::unreadable(
                fallback,
                EntryDType::Foreign("?".into()),
                format!("malformed TensorProto: {e}"),
            );
            e.range = range.start..range.start;
            return Ok((e, 0, None));
        }
    };
    let name = if t.name.is_empty() {
        fallback
    } else {
        t.name.clone()
    };
    let info = data_type(t.data_type);
    let dtype_name = info.map_or_else(
        || EntryDType::Foreign(format!("ONNX data type {}", t.data_type)),
        |d| match d.dtype {
            Some(dt) if d.read => EntryDType::Known(dt),
            _ => EntryDType::Foreign(d.name.to_string()),
        },
    );
    let shape: Option<Vec<usize>> = t.dims.iter().map(|&d| usize::try_from(d).ok()).collect();
    let count = shape.as_deref().and_then(crate::tensor::element_count);
    let mut e = Entry {
        name,
        file: 0,
        shape: shape.clone().unwrap_or_default(),
        dtype: dtype_name,
        elements: count.unwrap_or(0),
        range: range.start..range.start,
        storage: Storage::Unreadable,
        problem: None,
    };
    let mut location = None;
    let Some(info) = info else {
        e.flag(format!("unknown ONNX data type {}", t.data_type));
        return Ok((e, t.data_type, None));
    };
    if shape.is_none() {
        e.flag(format!("dims {:?} are not a valid shape", t.dims));
    } else if count.is_none() {
        e.flag(format!(
            "dims {:?} have more elements than this machine can address",
            t.dims
        ));
    }
    let n = e.elements;
    let size = info.raw_bytes(n).unwrap_or(usize::MAX) as u64;
    let plain = match info.dtype {
        Some(dtype) if info.read => Storage::Plain {
            dtype,
            order: ByteOrder::Little,
            fortran: false,
        },
        _ => Storage::Onnx {
            data_type: t.data_type,
            field: None,
        },
    };
    if let Some(c) = conflict {
        e.flag(c);
    }
    if segment {
        e.flag("segmented tensors (TensorProto.segment) are not read by quantscope");
    }
    if t.data_location == 1 {
        let get = |key: &str| {
            t.external_data
                .iter()
                .rev()
                .find(|kv| kv.key == key)
                .map(|kv| kv.value.as_str())
        };
        e.storage = plain;
        match get("location").map(external_location) {
            None => e.flag("external data without a `location`"),
            Some(Err(why)) => e.flag(why),
            Some(Ok(loc)) => location = Some(loc),
        }
        let number = |key: &str| -> Result<Option<u64>, String> {
            get(key)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| format!("external data `{key}` is `{v}`, not a byte count"))
                })
                .transpose()
        };
        match (number("offset"), number("length")) {
            (Err(why), _) | (_, Err(why)) => e.flag(why),
            (Ok(offset), Ok(length)) => {
                let offset = offset.unwrap_or(0);
                if let Some(length) = length.filter(|&l| l != size) {
                    e.flag(format!(
                        "external data length {length} does not match the {size} bytes of shape {} of {}",
                        super::shape_text(&e.shape),
                        info.name
                    ));
                }
                match offset.checked_add(size) {
                    Some(end) if location.is_some() => e.range = offset..end,
                    Some(_) => {}
                    None => e.flag(format!("external data offset {offset} is impossibly large")),
                }
            }
        }
    } else if let Some(r) = raw {
        e.storage = plain;
        e.range = r.clone();
        if r.end - r.start != size && e.problem.is_none() {
            e.flag(format!(
                "raw_data holds {} bytes, shape {} of {} needs {size}",
                r.end - r.start,
                super::shape_text(&e.shape),
                info.name
            ));
        }
    } else if let Some((field, span)) = typed {
        e.storage = Storage::Onnx {
            data_type: t.data_type,
            field: Some(field),
        };
        e.range = span;
        if field != info.field {
            e.flag(format!(
                "{} values are stored in typed field {field}, which ONNX uses for other types (expected field {})",
                info.name, info.field
            ));
        }
    } else if strings {
        e.flag("string tensors are not read by quantscope");
    } else if n > 0 {
        e.flag("the initializer holds no data (no raw_data, typed values or external data)");
    }
    if !info.read {
        e.storage = Storage::Unreadable;
        e.flag(format!(
            "ONNX data type {} is not read by quantscope",
            info.name
        ));
    }
    Ok((e, t.data_type, location))
}

/// The bytes `raw_data` would hold for `entry` (stored as `data_type`, in typed field `field`
/// when `Some`), from exactly the bytes of its range.
fn canonical<'a>(
    entry: &Entry,
    data_type: i32,
    field: Option<u32>,
    bytes: &'a [u8],
) -> Result<(DataType, std::borrow::Cow<'a, [u8]>), String> {
    let info = data_type_or_err(data_type)?;
    let Some(field) = field else {
        let want = info.raw_bytes(entry.elements);
        if want != Some(bytes.len()) {
            return Err(format!(
                "shape {} of {} needs {} bytes, the range holds {}",
                super::shape_text(&entry.shape),
                info.name,
                want.map_or_else(|| "too many".into(), |w| w.to_string()),
                bytes.len()
            ));
        }
        return Ok((info, bytes.into()));
    };
    let count = info.typed_values(entry.elements);
    let width = match (field, info.bits) {
        (5, 4) | (5, 8) => 1,
        (5, 16) => 2,
        (4 | 5, 32) | (11, 32) => 4,
        (7 | 10 | 11, 64) => 8,
        _ => {
            return Err(format!(
                "{} values cannot be stored in typed field {field}",
                info.name
            ))
        }
    };
    let mut out: Vec<u8> = Vec::with_capacity(count.saturating_mul(width).min(bytes.len() * 8));
    let too_many = || {
        format!(
            "the typed field holds more than the {count} values of shape {}",
            super::shape_text(&entry.shape)
        )
    };
    let push = |v: u64, out: &mut Vec<u8>| -> Result<(), String> {
        if out.len() / width >= count {
            return Err(too_many());
        }
        out.extend_from_slice(&v.to_le_bytes()[..width]);
        Ok(())
    };
    wire::walk_slice(bytes, |number, value, payload| {
        if number != field {
            return Ok(());
        }
        match value {
            Value::Varint(v) if matches!(field, 5 | 7 | 11) => push(v, &mut out),
            Value::Fixed32(v) if field == 4 => push(u64::from(v), &mut out),
            Value::Fixed64(v) if field == 10 => push(v, &mut out),
            Value::Len(_) => {
                if field == 4 || field == 10 {
                    let w = if field == 4 { 4 } else { 8 };
                    if payload.len() % w != 0 {
                        return Err(format!(
                            "packed typed field {field} has {} bytes, not a multiple of {w}",
                            payload.len()
                        ));
                    }
                    for c in payload.chunks_exact(w) {
                        let mut a = [0u8; 8];
                        a[..w].copy_from_slice(c);
                        push(u64::from_le_bytes(a), &mut out)?;
                    }
                } else {
                    let mut at = 0;
                    while at < payload.len() {
                        let v = wire::varint(payload, &mut at)
                            .ok_or_else(|| format!("a bad varint in typed field {field}"))?;
                        push(v, &mut out)?;
                    }
                }
                Ok(())
            }
            _ => Err(format!("typed field {field} has the wrong wire type")),
        }
    })?;
    if out.len() / width != count {
        return Err(format!(
            "the typed field holds {} values, shape {} of {} needs {count}",
            out.len() / width,
            super::shape_text(&entry.shape),
            info.name
        ));
    }
    Ok((info, out.into()))
}

fn data_type_or_err(code: i32) -> Result<DataType, String> {
    data_type(code)
        .filter(|d| d.read)
        .ok_or_else(|| format!("ONNX data type {code} is not read by quantscope"))
}

/// Decode an entry of [`Storage::Onnx`] from exactly the bytes of its range.
pub(crate) fn decode(
    entry: &Entry,
    data_type: i32,
    field: Option<u32>,
    bytes: &[u8],
) -> Result<Tensor, String> {
    let (info, raw) = canonical(entry, data_type, field, bytes)?;
    let data = match info.dtype {
        Some(dtype) => crate::tensor::decode::decode(dtype, ByteOrder::Little, &raw),
        None => (0..entry.elements)
            .map(|i| {
                let nibble = (raw[i / 2] >> (4 * (i % 2))) & 0x0f;
                if info.code == 22 {
                    f32::from(((nibble << 4) as i8) >> 4)
                } else {
                    f32::from(nibble)
                }
            })
            .collect(),
    };
    Ok(Tensor {
        shape: entry.shape.clone(),
        data,
        dtype: info.dtype.unwrap_or(DType::I8),
    })
}

/// The stored elements of an entry of [`Storage::Onnx`] as a codec takes them: as
/// [`super::weights::stored_elements`] gives plain entries, 4-bit types as their packed bytes.
pub(crate) fn stored(
    entry: &Entry,
    data_type: i32,
    field: Option<u32>,
    bytes: &[u8],
) -> Result<Stored, String> {
    let (info, raw) = canonical(entry, data_type, field, bytes)?;
    let Some(dtype) = info.dtype else {
        return Ok(Stored::U8(raw.into_owned()));
    };
    let plain = Entry {
        storage: Storage::Plain {
            dtype,
            order: ByteOrder::Little,
            fortran: false,
        },
        range: 0..raw.len() as u64,
        ..entry.clone()
    };
    super::weights::stored_elements(&plain, &raw).map_err(|e| e.to_string())
}

/// A small quantized ONNX model, what the tests and the fuzz seeds write: a float32 initializer
/// in `raw_data` and one in `float_data`, an int8 weight per axis with zero points (codes in
/// `int32_data`), an int4 weight in blocks of 2 along axis 0, a `MatMulNBits` weight, an
/// activation Q/DQ pair on the input `x`, and one tensor in the external file `w.bin` when
/// `external` (the file itself is not written).
pub fn sample_model(external: bool) -> Vec<u8> {
    use proto::*;
    let t = |name: &str, dims: &[i64], data_type: i32, raw: Vec<u8>| TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type,
        raw_data: raw,
        ..TensorProto::default()
    };
    let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let node =
        |op: &str, domain: &str, inputs: &[&str], output: &str, attrs: &[(&str, i64)]| NodeProto {
            op_type: op.into(),
            domain: domain.into(),
            name: format!("{output}_node"),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.into()],
            attribute: attrs
                .iter()
                .map(|&(name, i)| AttributeProto {
                    name: name.into(),
                    r#type: 2,
                    i,
                    ..AttributeProto::default()
                })
                .collect(),
            ..NodeProto::default()
        };
    let mut typed = t("bias", &[2], 1, Vec::new());
    typed.float_data = vec![0.5, -0.25];
    let mut codes = t("a_quantized", &[2, 3], 3, Vec::new());
    codes.int32_data = vec![-128, -1, 0, 1, 2, 127];
    let mut initializer = vec![
        t("ln.weight", &[3], 1, f32s(&[1.0, 2.0, -3.0])),
        typed,
        codes,
        t("a_scale", &[3], 1, f32s(&[0.5, 0.25, 2.0])),
        t("a_zero_point", &[3], 3, vec![0, 1, 0xff]),
        t("b_quantized", &[4, 2], 22, vec![0x78, 0x0f, 0x03, 0x9a]),
        t("b_scale", &[2, 2], 1, f32s(&[0.5, 0.25, 1.0, 2.0])),
        t("c_Q4", &[2, 1, 16], 2, (0u8..32).collect()),
        t("c_scales", &[2, 1], 1, f32s(&[0.125, 0.5])),
        t("c_zero_points", &[2, 1], 2, vec![0x07, 0x09]),
        t("x_scale", &[], 1, f32s(&[0.0625])),
        t("x_zero_point", &[], 2, vec![128]),
    ];
    if external {
        let mut e = t("ext", &[2], 1, Vec::new());
        e.data_location = 1;
        e.external_data = vec![
            StringStringEntryProto {
                key: "location".into(),
                value: "w.bin".into(),
            },
            StringStringEntryProto {
                key: "length".into(),
                value: "8".into(),
            },
        ];
        initializer.push(e);
    }
    let nodes = vec![
        node(
            "QuantizeLinear",
            "",
            &["x", "x_scale", "x_zero_point"],
            "x_q",
            &[],
        ),
        node(
            "DequantizeLinear",
            "",
            &["x_q", "x_scale", "x_zero_point"],
            "x_dq",
            &[],
        ),
        node(
            "DequantizeLinear",
            "",
            &["a_quantized", "a_scale", "a_zero_point"],
            "a",
            &[("axis", -1)],
        ),
        node(
            "DequantizeLinear",
            "",
            &["b_quantized", "b_scale"],
            "b",
            &[("axis", 0), ("block_size", 2)],
        ),
        node(
            "MatMulNBits",
            "com.microsoft",
            &["x_dq", "c_Q4", "c_scales", "c_zero_points"],
            "y",
            &[("K", 32), ("N", 2), ("bits", 4), ("block_size", 32)],
        ),
    ];
    ModelProto {
        ir_version: 10,
        opset_import: vec![
            OperatorSetIdProto {
                domain: String::new(),
                version: 21,
            },
            OperatorSetIdProto {
                domain: "com.microsoft".into(),
                version: 1,
            },
        ],
        producer_name: "quantscope".into(),
        graph: Some(GraphProto {
            name: "sample".into(),
            node: nodes,
            initializer,
            ..GraphProto::default()
        }),
        ..ModelProto::default()
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::super::{assemble, list_file, CatalogFile, FileListing, InMemory};
    use super::*;

    fn catalog(bytes: &[u8]) -> super::super::Catalog {
        let listing = list_file("m.onnx", &InMemory(bytes)).unwrap();
        let file = CatalogFile {
            name: "m.onnx".into(),
            len: bytes.len() as u64,
            kind: None,
        };
        assemble(vec![(file, listing)])
    }

    #[test]
    fn locations_are_normalised_or_refused() {
        assert_eq!(external_location("a/./b/../c.bin").unwrap(), "a/c.bin");
        assert_eq!(external_location("a\\c.bin").unwrap(), "a/c.bin");
        for bad in [
            "../x",
            "a/../../x",
            "..\\x",
            "/x",
            "\\x",
            "C:x",
            "s3://b/x",
            "a:b",
            "",
        ] {
            assert!(external_location(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_sample_model_decodes_every_weight() {
        let bytes = sample_model(false);
        let c = catalog(&bytes);
        assert!(c.load_errors.is_empty(), "{:?}", c.load_errors);
        let layout = super::super::layouts::weights(&c, &Default::default());
        let read = |name: &str| {
            let w = layout.weights.iter().find(|w| w.name == name).unwrap();
            super::super::weights::read_weight(&c, w, &mut |e| {
                Ok(crate::checkpoint::EntryBytes::Borrowed(
                    &bytes[e.range.start as usize..e.range.end as usize],
                ))
            })
            .unwrap()
            .data
        };
        assert_eq!(read("a"), [-64.0, -0.5, 2.0, 0.5, 0.25, 256.0]);
        // int4 [4, 2]: codes -8 7 / -1 0 / 3 0 / -6 -7, blocks of 2 rows.
        assert_eq!(read("b"), [-4.0, 1.75, -0.5, 0.0, 3.0, 0.0, -6.0, -14.0]);
        let c_weight = read("c");
        assert_eq!(c_weight.len(), 64);
        // W[k, n]: column 0 codes 0, 0, 1 (bytes 0, 1), zero point 7, scale 1/8; column 1 codes
        // 0, 1, 1 (bytes 0x10, 0x11), zero point 9, scale 1/2.
        assert_eq!(&c_weight[..6], [-0.875, -4.5, -0.875, -4.0, -0.75, -4.0]);
        assert_eq!(layout.activations.len(), 1);
        let a = &layout.activations[0];
        assert_eq!(
            (a.scale.as_slice(), a.zero_point.as_slice()),
            ([0.0625f32].as_slice(), [128i64].as_slice())
        );
        assert_eq!(a.representable_range, Some([-8.0, 7.9375]));
        assert_eq!(a.dq_nodes, ["x_dq_node"]);
    }

    #[test]
    fn the_oracle_holds_on_the_sample_and_its_damage() {
        for external in [false, true] {
            let bytes = sample_model(external);
            crate::checkpoint::selfcheck::check_file("m.onnx", &bytes);
            for cut in (0..bytes.len()).step_by(7) {
                crate::checkpoint::selfcheck::check_file("m.onnx", &bytes[..cut]);
            }
            for i in (0..bytes.len()).step_by(3) {
                let mut damaged = bytes.clone();
                damaged[i] ^= 0x5a;
                crate::checkpoint::selfcheck::check_file("m.onnx", &damaged);
            }
        }
        assert!(matches!(
            list_file("m.onnx", &InMemory(b"\x08")),
            Ok(FileListing::Failed(_))
        ));
    }
}
