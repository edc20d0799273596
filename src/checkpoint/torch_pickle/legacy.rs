//! The legacy format (`torch.save(…, _use_new_zipfile_serialization=False)`, the default before
//! torch 1.6): five pickles back to back, then the raw storages.
//!
//! 1. the magic number `0x1950a86a20f9469cfc6c` (a `LONG1`);
//! 2. the protocol version `1001`;
//! 3. `sys_info` (`{'protocol_version': 1001, 'little_endian': True, 'type_sizes': {…}}`);
//! 4. the object, whose persistent ids are `('storage', class, key, location, numel, view)`
//!    (`view` is `None`, or `(view_key, offset, size)` for a slice of the storage);
//! 5. the list of storage keys in the order their data follows (sorted; the keys are memory
//!    addresses, opaque strings here).
//!
//! Then, for each key in that order, the storage's element count as an int64 and
//! `count × itemsize` bytes of elements.
//!
//! The storages' offsets follow from the element counts of the persistent ids; each count field
//! is read (8 bytes per storage, asked for in one round) and must equal its id's numel. A file
//! that is not a PyTorch checkpoint fails at its first pickle: a hostile one at its first
//! refused opcode or global, before anything is returned.

use super::entries::{self, Located};
use super::vm::{self, Fault, Input, Object, Parsed, Value, MAX_PICKLE};
use super::walk;
use crate::checkpoint::source::{bytes, Parse, Stop};
use crate::checkpoint::{validate, ByteSource, Entry};
use crate::tensor::ByteOrder;
use std::collections::HashMap;

/// The first pickle of a legacy file.
pub(crate) const MAGIC: i128 = 0x1950_a86a_20f9_469c_fc6c;
/// The second.
pub(crate) const PROTOCOL_VERSION: i128 = 1001;

/// The pickle at byte `start` of `src` and the byte after it. It is run over the bytes
/// available from `start` (natively, all of them); when it needs more, the next bytes are asked
/// for, twice as many as are held (the page supplies the file in growing slices; the result
/// does not depend on how the bytes came).
fn pickle_at(src: &dyn ByteSource, start: u64, which: &str) -> Parse<(Parsed, u64)> {
    let total = src.len().saturating_sub(start);
    if total == 0 {
        return Err(Stop::Bad(format!(
            "truncated file: it ends at byte {start}, where the {which} pickle should start"
        )));
    }
    // Enough for any run: it stops at MAX_PICKLE bytes, and one opcode reads at most
    // MAX_PICKLE more.
    let limit = total.min(2 * MAX_PICKLE + 64);
    let held = held_from(src, start, limit);
    if held > 0 {
        let data = bytes(src, start..start + held, "a pickle")?;
        match vm::run(Input {
            data,
            total,
            base: start,
            what: "the file",
            to_eof: true,
        }) {
            Ok(p) => {
                let end = start + p.len as u64;
                return Ok((p, end));
            }
            Err(Fault::Bad(reason)) => return Err(Stop::Bad(reason)),
            Err(Fault::NeedMore) if held < limit => {}
            Err(Fault::NeedMore) => {
                return Err(Stop::Bad(format!(
                    "internal error: the {which} pickle asks for more than {limit} bytes"
                )))
            }
        }
    }
    let want = held.saturating_mul(2).max(1 << 16).min(limit);
    Err(Stop::Need(start + held..start + want))
}

/// How many bytes from `start` (at most `limit`) `src` holds in one piece.
fn held_from(src: &dyn ByteSource, start: u64, limit: u64) -> u64 {
    if src.get(start..start + limit).is_some() {
        return limit;
    }
    // Held prefixes are contiguous from `start`: search the longest.
    let (mut lo, mut hi) = (0u64, limit);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if src.get(start..start + mid).is_some() {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The integer a pickle returns.
fn int(p: &Parsed) -> Option<i128> {
    match p.root {
        Value::Int(i) => Some(i),
        _ => None,
    }
}

/// `sys_info['little_endian']` (true when absent).
fn little_endian(p: &Parsed) -> bool {
    let Value::Obj(id) = p.root else {
        return true;
    };
    let Some(Object::Dict(d)) = p.heap.get(id) else {
        return true;
    };
    !d.items.iter().any(|(k, v)| {
        matches!(k, Value::Str(s) if &**s == "little_endian") && matches!(v, Value::Bool(false))
    })
}

/// Every tensor of a legacy checkpoint; `root_name` names a tensor saved on its own.
pub(crate) fn list(src: &dyn ByteSource, root_name: &str) -> Parse<Vec<Entry>> {
    let (magic, at) = pickle_at(src, 0, "first")?;
    if int(&magic) != Some(MAGIC) {
        return Err(Stop::Bad(
            "not a PyTorch checkpoint: neither a zip archive nor a legacy file (its first pickle is not torch's magic number)".into(),
        ));
    }
    let (version, at) = pickle_at(src, at, "protocol version")?;
    match int(&version) {
        Some(PROTOCOL_VERSION) => {}
        v => {
            return Err(Stop::Bad(format!(
                "unsupported legacy protocol version {} (torch writes {PROTOCOL_VERSION})",
                v.map_or_else(|| "(not an integer)".into(), |v| v.to_string())
            )))
        }
    }
    let (sys_info, at) = pickle_at(src, at, "sys_info")?;
    let order = if little_endian(&sys_info) {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    };
    let (object, at) = pickle_at(src, at, "object")?;
    let (keys, data_start) = pickle_at(src, at, "storage keys")?;
    let keys: Vec<String> = match keys.root {
        Value::Obj(id) => match keys.heap.get(id) {
            Some(Object::List(items) | Object::Tuple(items)) => items
                .iter()
                .map(|k| match k {
                    Value::Str(s) => Some(s.to_string()),
                    _ => None,
                })
                .collect::<Option<Vec<String>>>(),
            _ => None,
        },
        _ => None,
    }
    .ok_or_else(|| {
        Stop::Bad("malformed legacy file: its fifth pickle is not a list of storage keys".into())
    })?;
    let named = walk::tensors(&object, root_name).map_err(Stop::Bad)?;

    // Where each storage's count field and data lie, in the order of the keys.
    let by_key: HashMap<&str, usize> = object
        .storages
        .iter()
        .enumerate()
        .map(|(i, s)| (s.key.as_str(), i))
        .collect();
    let mut placed: Vec<Option<(u64, u64)>> = vec![None; object.storages.len()];
    let mut lost: Option<String> = None;
    let mut offset = Some(data_start);
    for key in &keys {
        let Some(&i) = by_key.get(key.as_str()) else {
            // Never referenced: its size is unknown, and so is where the next one starts.
            lost.get_or_insert_with(|| key.clone());
            offset = None;
            continue;
        };
        if placed[i].is_some() {
            return Err(Stop::Bad(format!(
                "malformed legacy file: its storage list names `{key}` twice"
            )));
        }
        let nbytes = object.storages[i].nbytes();
        match (offset, nbytes) {
            (Some(at), Some(n)) => placed[i] = Some((at, n)),
            (_, None) => {
                lost.get_or_insert_with(|| key.clone());
            }
            _ => {}
        }
        offset = offset
            .and_then(|at| at.checked_add(8))
            .zip(nbytes)
            .and_then(|(at, n)| at.checked_add(n));
    }
    // The count fields, in one round.
    let needs: Vec<_> = placed
        .iter()
        .flatten()
        .map(|&(at, _)| at..at.saturating_add(8))
        .filter(|r| r.end <= src.len() && src.get(r.clone()).is_none())
        .collect();
    if !needs.is_empty() {
        return Err(Stop::NeedAll(needs));
    }
    let len = src.len();
    let located: Vec<Located> = object
        .storages
        .iter()
        .zip(&placed)
        .map(|(s, place)| {
            let key = &s.key;
            let Some((at, nbytes)) = *place else {
                return Located::failed(match (&lost, keys.contains(key)) {
                    (_, false) => format!("its storage `{key}` is not in the file's list of storages"),
                    (Some(before), true) if before != key => format!(
                        "storage `{key}` cannot be located: the size of storage `{before}` before it is unknown"
                    ),
                    (Some(_), true) => format!("storage `{key}` (of {}) has no known size", s.class),
                    (None, true) => format!("storage `{key}` (of {}) has no known size", s.class),
                });
            };
            let data = at.saturating_add(8);
            let end = data.saturating_add(nbytes);
            if at.saturating_add(8) > len {
                return Located::failed(format!(
                    "truncated file: it ends at byte {len}, before storage `{key}` (its count field at byte {at})"
                ));
            }
            let count = match bytes(src, at..at + 8, "a storage's element count") {
                Ok(b) => {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    if order == ByteOrder::Big {
                        i64::from_be_bytes(a)
                    } else {
                        i64::from_le_bytes(a)
                    }
                }
                Err(_) => return Located::failed(format!("the count field of storage `{key}` cannot be read")),
            };
            if u64::try_from(count).ok() != Some(s.numel) {
                return Located::failed(format!(
                    "storage `{key}`: its record's element count (byte {at}) says {count}, its persistent id {} ({})",
                    s.numel, s.class
                ));
            }
            if end > len {
                return Located::failed(format!(
                    "truncated file: it ends at byte {len}, {} bytes into storage `{key}` (bytes {data}..{end})",
                    len.saturating_sub(data)
                ));
            }
            Located {
                start: data,
                nbytes,
                order,
                problem: None,
            }
        })
        .collect();
    let mut entries: Vec<Entry> = named
        .iter()
        .map(|n| entries::entry(n, &object.storages, &located))
        .collect();
    entries::flag_duplicates(&mut entries);
    validate::flag_empty(&mut entries);
    Ok(entries)
}
