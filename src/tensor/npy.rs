//! `.npy` reader (format versions 1.0, 2.0, 3.0).
//!
//! Layout: the magic `\x93NUMPY`, a major and a minor version byte, the header length
//! (u16 little-endian in 1.0, u32 in 2.0/3.0), the header — a Python dict literal
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }` padded with spaces and a
//! newline — then the raw element bytes.
//!
//! The header dict is read by a small non-recursive parser of our own (it never allocates more
//! than the header's own size, whatever the input); the dtype string is interpreted by npyz's
//! [`npyz::TypeStr`]. Every size is validated with checked arithmetic against the bytes actually
//! present before anything is allocated, so a header that lies can only produce an error.

use super::decode::{self, ByteOrder};
use super::{element_count, DType, Tensor};
use crate::error::{Error, Result};
use npyz::{Endianness, TypeChar, TypeStr};

const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// The most dimensions numpy itself allows (`NPY_MAXDIMS` in numpy 2).
const MAX_DIMS: usize = 64;

fn err(reason: impl Into<String>) -> Error {
    Error::load(".npy", reason)
}

/// What a `.npy` header says about the data that follows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NpyHeader {
    /// Format version `(major, minor)`.
    pub version: (u8, u8),
    /// Element type.
    pub dtype: DType,
    /// Byte order of multi-byte elements.
    pub order: ByteOrder,
    /// Shape; empty for a 0-d array.
    pub shape: Vec<usize>,
    /// True when the data is stored in Fortran (column-major) order.
    pub fortran_order: bool,
    /// Offset of the first data byte (the header's total length).
    pub data_offset: usize,
    /// Number of data bytes the header calls for.
    pub data_len: usize,
}

/// Parse a whole `.npy` file.
pub fn read_npy(bytes: &[u8]) -> Result<Tensor> {
    read_npy_with(bytes, |_| None)
}

/// Parse a whole `.npy` file; C-order float32 little-endian data is first offered to
/// `zero_copy` (its raw bytes), which may return the values without decoding them.
pub(crate) fn read_npy_with(
    bytes: &[u8],
    zero_copy: impl FnOnce(&[u8]) -> Option<Vec<f32>>,
) -> Result<Tensor> {
    let header = parse_header(bytes)?;
    let available = bytes.len().saturating_sub(header.data_offset);
    if available != header.data_len {
        let what = format!(
            "header shape {} of {} needs {} data bytes but the file holds {}",
            shape_str(&header.shape),
            header.dtype.name(),
            header.data_len,
            available
        );
        return Err(err(if available < header.data_len {
            format!("truncated data: {what}")
        } else {
            format!(
                "header/shape mismatch: {what} ({} trailing bytes)",
                available - header.data_len
            )
        }));
    }
    let raw = bytes.get(header.data_offset..).unwrap_or_default();
    let contiguous = !header.fortran_order || header.shape.len() <= 1;
    let mapped = (header.dtype == DType::F32 && header.order == ByteOrder::Little && contiguous)
        .then(|| zero_copy(raw))
        .flatten();
    let mut data = match mapped {
        Some(values) => values,
        None => decode::decode(header.dtype, header.order, raw),
    };
    if header.fortran_order && header.shape.len() > 1 {
        data = fortran_to_c(&header.shape, &data);
    }
    Ok(Tensor {
        shape: header.shape,
        data,
        dtype: header.dtype,
    })
}

/// Offset of the first data byte, from the magic, version and header-length fields at the start
/// of `prefix` (10 bytes suffice for version 1.0, 12 for 2.0/3.0).
pub(crate) fn header_end(prefix: &[u8]) -> Result<usize> {
    if prefix.is_empty() {
        return Err(err("empty file (0 bytes): not a .npy file"));
    }
    let magic_len = prefix.len().min(MAGIC.len());
    if prefix.get(..magic_len) != MAGIC.get(..magic_len) {
        let shown = prefix.get(..magic_len).unwrap_or_default();
        return Err(err(format!(
            "bad magic: a .npy file starts with \\x93NUMPY, this one with {}",
            escape_bytes(shown)
        )));
    }
    let (Some(&major), Some(&minor)) = (prefix.get(6), prefix.get(7)) else {
        return Err(err(format!(
            "truncated: {} bytes end inside the magic and version",
            prefix.len()
        )));
    };
    let len_bytes = match (major, minor) {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        _ => {
            return Err(err(format!(
            "unsupported .npy format version {major}.{minor} (quantscope reads 1.0, 2.0 and 3.0)"
        )))
        }
    };
    let Some(field) = prefix.get(8..8 + len_bytes) else {
        return Err(err(format!(
            "truncated: {} bytes end inside the header-length field",
            prefix.len()
        )));
    };
    let header_len = field
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    usize::try_from(header_len)
        .ok()
        .and_then(|h| h.checked_add(8 + len_bytes))
        .ok_or_else(|| err(format!("header length {header_len} is too large")))
}

/// Parse the preamble and header dict at the start of `bytes`; `bytes` must hold at least the
/// whole header (the data may be missing). Fails on any inconsistency, including a shape whose
/// byte size overflows.
pub(crate) fn parse_header(bytes: &[u8]) -> Result<NpyHeader> {
    let data_offset = header_end(bytes)?;
    let version = (bytes.get(6).copied(), bytes.get(7).copied());
    let version = (version.0.unwrap_or(0), version.1.unwrap_or(0));
    let text_start = if version.0 == 1 { 10 } else { 12 };
    let Some(text) = bytes.get(text_start..data_offset) else {
        return Err(err(format!(
            "truncated header: the header length says the header ends at byte {data_offset} but the file has only {} bytes",
            bytes.len()
        )));
    };
    let text = std::str::from_utf8(text)
        .map_err(|_| err("the header is not ASCII/UTF-8 text (corrupt file?)"))?;
    let dict = parse_dict(text)?;
    let (dtype, order) = interpret_descr(&dict.descr)?;
    let count = element_count(&dict.shape).ok_or_else(|| {
        err(format!(
            "header shape {} has more elements than this machine can address",
            shape_str(&dict.shape)
        ))
    })?;
    let data_len = count
        .checked_mul(decode::item_size(dtype))
        .filter(|n| n.checked_add(data_offset).is_some())
        .ok_or_else(|| {
            err(format!(
                "header shape {} of {} is larger than this machine can address",
                shape_str(&dict.shape),
                dtype.name()
            ))
        })?;
    Ok(NpyHeader {
        version,
        dtype,
        order,
        shape: dict.shape,
        fortran_order: dict.fortran_order,
        data_offset,
        data_len,
    })
}

/// Map a numpy type string to our dtype and byte order, refusing what has no f32 meaning.
pub(crate) fn interpret_descr(descr: &str) -> Result<(DType, ByteOrder)> {
    let ts: TypeStr = descr
        .parse()
        .map_err(|e| err(format!("invalid dtype descr '{descr}': {e}")))?;
    let size = ts.size_field();
    let unsupported = |what: &str| {
        err(format!(
            "{what} dtype '{descr}' is not supported (quantscope reads bool, int8..int64, uint8..uint64, float16, float32 and float64)"
        ))
    };
    let dtype = match ts.type_char() {
        TypeChar::Bool => DType::Bool,
        TypeChar::Int => match size {
            1 => DType::I8,
            2 => DType::I16,
            4 => DType::I32,
            8 => DType::I64,
            _ => return Err(unsupported("integer")),
        },
        TypeChar::Uint => match size {
            1 => DType::U8,
            2 => DType::U16,
            4 => DType::U32,
            8 => DType::U64,
            _ => return Err(unsupported("unsigned integer")),
        },
        TypeChar::Float => match size {
            2 => DType::F16,
            4 => DType::F32,
            8 => DType::F64,
            _ => return Err(unsupported("extended-precision float")),
        },
        TypeChar::Complex => {
            return Err(err(format!(
                "complex dtype '{descr}' is not supported: quantscope observes real numbers only"
            )))
        }
        TypeChar::Object => {
            return Err(err(format!(
                "object dtype '{descr}': the data is a Python pickle, which quantscope never loads (object arrays are refused, as numpy does with allow_pickle=False)"
            )))
        }
        TypeChar::ByteStr | TypeChar::UnicodeStr => return Err(unsupported("string")),
        TypeChar::TimeDelta | TypeChar::DateTime => return Err(unsupported("datetime")),
        TypeChar::RawData => return Err(unsupported("void (raw bytes / structured)")),
        _ => return Err(unsupported("this")),
    };
    let order = match ts.endianness() {
        Endianness::Big => ByteOrder::Big,
        Endianness::Little | Endianness::Irrelevant => ByteOrder::Little,
    };
    Ok((dtype, order))
}

/// The three entries of a `.npy` header dict.
struct HeaderDict {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// A cursor over the header text.
struct Scanner<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or_default()
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    /// Consume `c` (after whitespace) if it is next.
    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char, context: &str) -> Result<()> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.syntax(&format!("expected '{c}' {context}")))
        }
    }

    fn syntax(&self, what: &str) -> Error {
        let near: String = self.rest().chars().take(24).collect();
        err(format!(
            "malformed header: {what} at character {} (near {near:?})",
            self.pos
        ))
    }

    /// A single- or double-quoted Python string without escapes (numpy never writes any in
    /// the three keys or a plain dtype string).
    fn string(&mut self) -> Result<&'a str> {
        self.skip_ws();
        let quote = match self.peek() {
            Some(q @ ('\'' | '"')) => q,
            _ => return Err(self.syntax("expected a quoted string")),
        };
        let body = self.rest().get(1..).unwrap_or_default();
        let Some(end) = body.find(quote) else {
            return Err(self.syntax("unterminated string"));
        };
        let s = body.get(..end).unwrap_or_default();
        if s.contains('\\') {
            return Err(self.syntax("escape sequences are not supported in header strings"));
        }
        self.pos += end + 2;
        Ok(s)
    }

    /// `True` or `False`.
    fn boolean(&mut self) -> Result<bool> {
        self.skip_ws();
        for (word, value) in [("True", true), ("False", false)] {
            if self.rest().starts_with(word) {
                self.pos += word.len();
                return Ok(value);
            }
        }
        Err(self.syntax("'fortran_order' must be True or False"))
    }

    /// A tuple (or list) of non-negative integers, as numpy writes a shape: `()`, `(3,)`,
    /// `(3, 4)`; Python 2's `3L` suffix is accepted.
    fn shape(&mut self) -> Result<Vec<usize>> {
        self.skip_ws();
        let close = match self.peek() {
            Some('(') => ')',
            Some('[') => ']',
            _ => return Err(self.syntax("'shape' must be a tuple of integers")),
        };
        self.pos += 1;
        let mut dims = Vec::new();
        loop {
            if self.eat(close) {
                return Ok(dims);
            }
            if self.eat('-') {
                return Err(self.syntax("negative dimension in 'shape'"));
            }
            self.skip_ws();
            let digits = self.rest().bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(self.syntax("expected a dimension in 'shape'"));
            }
            let text = self.rest().get(..digits).unwrap_or_default();
            let dim = text.parse::<usize>().map_err(|_| {
                err(format!(
                    "header shape has dimension {text}, larger than this machine can address"
                ))
            })?;
            self.pos += digits;
            if matches!(self.peek(), Some('L' | 'l')) {
                self.pos += 1;
            }
            if dims.len() == MAX_DIMS {
                return Err(err(format!(
                    "header shape has more than {MAX_DIMS} dimensions"
                )));
            }
            dims.push(dim);
            if !self.eat(',') {
                self.expect(close, "after a dimension in 'shape'")?;
                return Ok(dims);
            }
        }
    }
}

/// Parse the header dict; it must hold exactly the keys `descr`, `fortran_order` and `shape`.
fn parse_dict(text: &str) -> Result<HeaderDict> {
    let mut s = Scanner { text, pos: 0 };
    s.expect('{', "at the start of the header dict")?;
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    loop {
        if s.eat('}') {
            break;
        }
        let key = s.string()?;
        s.expect(':', "after a key")?;
        match key {
            "descr" => {
                s.skip_ws();
                if matches!(s.peek(), Some('[' | '{' | '(')) {
                    return Err(err(
                        "structured (record) dtype: 'descr' is a list of fields, and quantscope reads plain numeric arrays only",
                    ));
                }
                set_once(&mut descr, s.string()?.to_string(), key)?;
            }
            "fortran_order" => set_once(&mut fortran_order, s.boolean()?, key)?,
            "shape" => set_once(&mut shape, s.shape()?, key)?,
            other => {
                return Err(err(format!(
                    "malformed header: unexpected key '{other}' (a .npy header has only 'descr', 'fortran_order' and 'shape')"
                )))
            }
        }
        if !s.eat(',') {
            s.expect('}', "after a value")?;
            break;
        }
    }
    s.skip_ws();
    if !s.rest().is_empty() {
        return Err(s.syntax("unexpected text after the header dict"));
    }
    let missing = |k: &str| err(format!("malformed header: the key '{k}' is missing"));
    Ok(HeaderDict {
        descr: descr.ok_or_else(|| missing("descr"))?,
        fortran_order: fortran_order.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
    })
}

fn set_once<T>(slot: &mut Option<T>, value: T, key: &str) -> Result<()> {
    if slot.is_some() {
        return Err(err(format!(
            "malformed header: the key '{key}' appears twice"
        )));
    }
    *slot = Some(value);
    Ok(())
}

/// Reorder column-major `data` of `shape` into row-major order. `data.len()` is the product of
/// `shape`; the innermost C axis is read with its Fortran stride.
pub(crate) fn fortran_to_c(shape: &[usize], data: &[f32]) -> Vec<f32> {
    let Some((&inner, outer_dims)) = shape.split_last() else {
        return data.to_vec();
    };
    if data.is_empty() {
        return Vec::new();
    }
    // Fortran strides: axis 0 is contiguous.
    let mut strides = Vec::with_capacity(shape.len());
    let mut stride = 1usize;
    for &d in shape {
        strides.push(stride);
        stride = stride.saturating_mul(d);
    }
    let inner_stride = strides.last().copied().unwrap_or(1).max(1);
    let mut out = Vec::with_capacity(data.len());
    let mut index = vec![0usize; outer_dims.len()];
    let mut base = 0usize;
    loop {
        out.extend(data.iter().skip(base).step_by(inner_stride).take(inner));
        // Advance the odometer over the outer axes, last axis fastest.
        let mut axis = outer_dims.len();
        loop {
            if axis == 0 {
                return out;
            }
            axis -= 1;
            let (Some(i), Some(&dim), Some(&st)) =
                (index.get_mut(axis), outer_dims.get(axis), strides.get(axis))
            else {
                return out;
            };
            *i += 1;
            base += st;
            if *i < dim {
                break;
            }
            base -= st * dim;
            *i = 0;
        }
    }
}

/// A shape as Python prints it: `()`, `(7,)`, `(2, 3)`.
pub(crate) fn shape_str(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

fn escape_bytes(bytes: &[u8]) -> String {
    bytes
        .iter()
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect()
}

/// The header dictionary numpy writes for elements `descr` (e.g. `<f4`), the order and
/// `shape`, a Python tuple (`()`, `(n,)`, `(a, b)`).
pub fn npy_header(descr: &str, fortran: bool, shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = match dims.as_slice() {
        [one] => format!("({one},)"),
        _ => format!("({})", dims.join(", ")),
    };
    let order = if fortran { "True" } else { "False" };
    format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}")
}

/// A `.npy` file of format 1.0: the magic, the version, the header length, the header
/// dictionary `dict` padded with spaces and ended by a newline so that the data starts at a
/// multiple of 64 bytes (as numpy pads it), then `body` as it is.
pub fn encode_npy(dict: &str, body: &[u8]) -> Vec<u8> {
    let pad = (64 - (MAGIC.len() + 4 + dict.len() + 1) % 64) % 64;
    let header_len = dict.len() + pad + 1;
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + header_len + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header_len as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + pad, b' ');
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy_v(major: u8, header_dict: &str, data: &[u8]) -> Vec<u8> {
        let text = format!("{header_dict}\n");
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[major, 0]);
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(data);
        out
    }

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn reason(result: Result<Tensor>) -> String {
        match result {
            Err(Error::Load { reason, .. }) => reason,
            other => panic!("expected a load error, got {other:?}"),
        }
    }

    #[test]
    fn reads_versions_1_2_3() {
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
        let data = f32_bytes(&[1.5, -2.0]);
        for bytes in [
            encode_npy(dict, &data),
            npy_v(2, dict, &data),
            npy_v(3, dict, &data),
        ] {
            let t = read_npy(&bytes).unwrap();
            assert_eq!(t.shape, vec![2]);
            assert_eq!(t.data, vec![1.5, -2.0]);
            assert_eq!(t.dtype, DType::F32);
        }
    }

    #[test]
    fn header_variants() {
        // Double quotes, a list shape, Python 2 long suffixes, no trailing comma, any key order.
        let bytes = encode_npy(
            "{\"shape\": [2L, 1L], \"fortran_order\": False, \"descr\": \"<i2\"}",
            &[1, 0, 2, 0],
        );
        let t = read_npy(&bytes).unwrap();
        assert_eq!(
            (t.shape.clone(), t.data.clone()),
            (vec![2, 1], vec![1.0, 2.0])
        );
        assert_eq!(t.dtype, DType::I16);
    }

    #[test]
    fn big_endian_and_fortran() {
        let data: Vec<u8> = [0.0f32, 3.0, 1.0, 4.0, 2.0, 5.0]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let bytes = encode_npy(
            "{'descr': '>f4', 'fortran_order': True, 'shape': (2, 3), }",
            &data,
        );
        let t = read_npy(&bytes).unwrap();
        assert_eq!(t.shape, vec![2, 3]);
        assert_eq!(t.data, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    }

    #[test]
    fn scalar_and_empty() {
        let s = read_npy(&encode_npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
            &2.5f64.to_le_bytes(),
        ))
        .unwrap();
        assert_eq!((s.shape.len(), s.data.clone()), (0, vec![2.5]));
        let e = read_npy(&encode_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }",
            &[],
        ))
        .unwrap();
        assert_eq!((e.shape.clone(), e.data.len()), (vec![0, 5], 0));
        // An empty array whose other dimension is huge still needs no bytes.
        let e = read_npy(&encode_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904), }",
            &[],
        ))
        .unwrap();
        assert!(e.data.is_empty());
    }

    #[test]
    fn refuses_hostile_headers() {
        // 2^60 elements: the data is not there, and nothing that size may be allocated.
        let r = reason(read_npy(&encode_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1152921504606846976,), }",
            &[0; 16],
        )));
        assert!(r.contains("truncated") || r.contains("larger"), "{r}");
        // Product overflows usize.
        let r = reason(read_npy(&encode_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }",
            &[],
        )));
        assert!(r.contains("shape"), "{r}");
        // Element count fits but the byte size does not.
        let r = reason(read_npy(&encode_npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }",
            &[],
        )));
        assert!(r.contains("larger than this machine"), "{r}");
        // A dimension beyond u64.
        let r = reason(read_npy(&encode_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
            &[],
        )));
        assert!(r.contains("dimension"), "{r}");
        // Header length pointing far beyond the file (version 2: u32 length).
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[2, 0, 0xFF, 0xFF, 0xFF, 0xFF, b'{']);
        assert!(reason(read_npy(&b)).contains("truncated header"));
        // Deep nesting is not recursion.
        let deep = format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': {}",
            "(".repeat(100_000)
        );
        assert!(reason(read_npy(&npy_v(2, &deep, &[]))).contains("malformed"));
        assert!(reason(read_npy(&encode_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
            &[]
        )))
        .contains("negative"));
        let many = format!(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}",
            "1,".repeat(65)
        );
        assert!(reason(read_npy(&encode_npy(&many, &[0; 4]))).contains("dimensions"));
    }

    #[test]
    fn named_errors() {
        assert!(reason(read_npy(&[])).contains("empty"));
        assert!(reason(read_npy(b"\x93NUMPZ\x01\x00")).contains("magic"));
        assert!(reason(read_npy(b"PK\x03\x04")).contains("magic"));
        assert!(reason(read_npy(b"\x93NUM")).contains("truncated"));
        assert!(reason(read_npy(b"\x93NUMPY\x07\x00\x10\x00")).contains("version 7.0"));
        assert!(reason(read_npy(b"\x93NUMPY\x01\x00\x10")).contains("truncated"));
        let dict = |d: &str| format!("{{'descr': {d}, 'fortran_order': False, 'shape': (1,), }}");
        let cases = [
            ("'|O'", "pickle"),
            ("'<c8'", "complex"),
            ("[('a', '<i4'), ('b', '<f4')]", "structured"),
            ("'<U3'", "string"),
            ("'<M8[s]'", "datetime"),
            ("'|V8'", "void"),
            ("'<f16'", "extended-precision"),
            ("'<x4'", "invalid dtype"),
            ("'=f4'", "invalid dtype"),
        ];
        for (descr, word) in cases {
            let r = reason(read_npy(&encode_npy(&dict(descr), &[0; 16])));
            assert!(r.contains(word), "{descr}: {r}");
        }
        let r = reason(read_npy(&encode_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
            &[0; 8],
        )));
        assert!(
            r.contains("truncated") && r.contains("(3,)") && r.contains("12"),
            "{r}"
        );
        let r = reason(read_npy(&encode_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
            &[0; 5],
        )));
        assert!(r.contains("mismatch") && r.contains("1 trailing"), "{r}");
        for bad in [
            "{'descr': '<f4', 'shape': (1,), }",
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
            "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk",
            "{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}",
            "['descr']",
        ] {
            assert!(
                reason(read_npy(&encode_npy(bad, &[0; 4]))).contains("header"),
                "{bad}"
            );
        }
        let mut latin = encode_npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
            &[0; 4],
        );
        latin[12] = 0xFF;
        assert!(reason(read_npy(&latin)).contains("not ASCII"));
    }

    #[test]
    fn random_garbage_never_panics() {
        // A cheap deterministic generator (xorshift) over a few thousand inputs, including
        // ones that start with a valid preamble.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for i in 0..4000 {
            let len = (next() % 200) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if i % 2 == 0 {
                // A valid preamble whose header text starts right but continues with garbage.
                let mut text = b"{'descr': '<f4', 'fortran_order': False, 'shape': (".to_vec();
                text.extend_from_slice(&bytes);
                let mut pre = MAGIC.to_vec();
                pre.extend_from_slice(&[1, 0]);
                pre.extend_from_slice(&(text.len() as u16).to_le_bytes());
                pre.extend_from_slice(&text);
                pre.extend_from_slice(&bytes);
                bytes = pre;
            }
            let _ = read_npy(&bytes);
        }
    }

    #[test]
    fn fortran_reorder_any_rank() {
        // Value at C index (i, j, k) of shape (2, 3, 4) is 100i + 10j + k; lay it out in
        // Fortran order (i fastest) and read it back.
        let shape = [2usize, 3, 4];
        let mut fortran = Vec::new();
        for k in 0..4 {
            for j in 0..3 {
                for i in 0..2 {
                    fortran.push((100 * i + 10 * j + k) as f32);
                }
            }
        }
        let c = fortran_to_c(&shape, &fortran);
        let want: Vec<f32> = (0..2)
            .flat_map(|i| {
                (0..3).flat_map(move |j| (0..4).map(move |k| (100 * i + 10 * j + k) as f32))
            })
            .collect();
        assert_eq!(c, want);
        assert_eq!(fortran_to_c(&[3], &[1.0, 2.0, 3.0]), vec![1.0, 2.0, 3.0]);
        assert_eq!(fortran_to_c(&[], &[5.0]), vec![5.0]);
        assert!(fortran_to_c(&[2, 0, 3], &[]).is_empty());
        assert_eq!(
            fortran_to_c(&[2, 1, 1, 2], &[1.0, 2.0, 3.0, 4.0]),
            vec![1.0, 3.0, 2.0, 4.0]
        );
    }

    #[test]
    fn shape_strings() {
        assert_eq!(shape_str(&[]), "()");
        assert_eq!(shape_str(&[7]), "(7,)");
        assert_eq!(shape_str(&[2, 3]), "(2, 3)");
    }
}
