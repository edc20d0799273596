//! The protobuf wire format, walked field by field over a [`ByteSource`] without reading the
//! payloads it does not need: the framing only (keys, varints, lengths), every field's byte
//! range. What a field means is decoded by prost ([`super::proto`]) from the field's own bytes.
//!
//! A key is a varint `field_number << 3 | wire_type`; wire types 0 (varint), 1 (8 bytes),
//! 2 (varint length, then that many bytes), 5 (4 bytes). Groups (3, 4) are obsolete and refused.

use super::super::source::{bytes, Parse, Stop};
use super::super::ByteSource;
use std::ops::Range;

/// The payload of one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    /// A length-delimited payload: its byte range.
    Len(Range<u64>),
}

/// One field of a message: its number, its whole byte range (key included) and its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub number: u32,
    pub whole: Range<u64>,
    pub value: Value,
}

/// A varint from `data` at `*at`, moving past it.
pub fn varint(data: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in 0..10 {
        let b = *data.get(*at)?;
        *at += 1;
        if shift == 9 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << (7 * shift);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A varint of `src` at `pos` (within `..end`): its value and the position after it.
fn varint_at(src: &dyn ByteSource, pos: u64, end: u64, what: &str) -> Parse<(u64, u64)> {
    let take = (end - pos).min(10);
    let b = bytes(src, pos..pos + take, what)?;
    let mut at = 0;
    match varint(b, &mut at) {
        Some(v) => Ok((v, pos + at as u64)),
        None => Err(Stop::Bad(format!(
            "malformed protobuf: bad varint in {what} at byte {pos}"
        ))),
    }
}

/// Every field of the message occupying `range` of `src`, in order, calling `each` for each.
pub fn walk(
    src: &dyn ByteSource,
    range: Range<u64>,
    what: &str,
    each: &mut dyn FnMut(Field) -> Parse<()>,
) -> Parse<()> {
    let mut pos = range.start;
    while pos < range.end {
        let start = pos;
        let (key, next) = varint_at(src, pos, range.end, what)?;
        pos = next;
        let number = u32::try_from(key >> 3).unwrap_or(0);
        if number == 0 {
            return Err(Stop::Bad(format!(
                "malformed protobuf: field number 0 in {what} at byte {start}"
            )));
        }
        let value = match key & 7 {
            0 => {
                let (v, next) = varint_at(src, pos, range.end, what)?;
                pos = next;
                Value::Varint(v)
            }
            1 | 5 => {
                let n = if key & 7 == 1 { 8 } else { 4 };
                if range.end - pos < n {
                    return Err(Stop::Bad(format!(
                        "malformed protobuf: {what} ends inside a fixed-size field at byte {pos}"
                    )));
                }
                let b = bytes(src, pos..pos + n, what)?;
                pos += n;
                let mut v = 0u64;
                for (i, &x) in b.iter().enumerate() {
                    v |= u64::from(x) << (8 * i);
                }
                if n == 8 {
                    Value::Fixed64(v)
                } else {
                    Value::Fixed32(v as u32)
                }
            }
            2 => {
                let (len, next) = varint_at(src, pos, range.end, what)?;
                pos = next;
                if len > range.end - pos {
                    return Err(Stop::Bad(format!(
                        "malformed protobuf: a field of {len} bytes at byte {pos} runs past the end of {what} (byte {})",
                        range.end
                    )));
                }
                let payload = pos..pos + len;
                pos += len;
                Value::Len(payload)
            }
            t => {
                return Err(Stop::Bad(format!(
                    "malformed protobuf: wire type {t} (field {number}) in {what} at byte {start}"
                )))
            }
        };
        each(Field {
            number,
            whole: start..pos,
            value,
        })?;
    }
    Ok(())
}

/// Walk the fields of a message held in `data` (a field payload already read).
pub fn walk_slice(
    data: &[u8],
    mut each: impl FnMut(u32, Value, &[u8]) -> Result<(), String>,
) -> Result<(), String> {
    let src = super::super::InMemory(data);
    let mut out = Ok(());
    let walked = walk(&src, 0..data.len() as u64, "the field", &mut |f| {
        let payload = match &f.value {
            Value::Len(r) => data
                .get(r.start as usize..r.end as usize)
                .unwrap_or_default(),
            _ => &[],
        };
        if let Err(e) = each(f.number, f.value.clone(), payload) {
            out = Err(e);
            return Err(Stop::Bad(String::new()));
        }
        Ok(())
    });
    out?;
    walked.map_err(|s| match s {
        Stop::Bad(r) => r,
        Stop::Need(r) => format!("bytes {}..{} are missing", r.start, r.end),
        Stop::NeedAll(rs) => format!("{} byte ranges are missing", rs.len()),
    })
}
