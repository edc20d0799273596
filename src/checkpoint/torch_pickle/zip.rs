//! The zip format (`torch.save` since torch 1.6): an uncompressed zip whose members all sit
//! under one top folder — the file's stem when saved to a path (`pytorch_model/…`), `archive/`
//! when saved to a file object, so it is found, not assumed: the folder of the one
//! `*/data.pkl`.
//!
//! Members: `data.pkl` (the pickled object, protocol 2), `data/<key>` (one per storage: its raw
//! elements, `numel × itemsize` bytes), `byteorder` (`little` or `big`; absent in old files,
//! which are little-endian), `version`, `.format_version`, `.storage_alignment`,
//! `.data/serialization_id`. Each member's data starts on a 64-byte boundary (padding in its
//! local header's extra field), so a storage can be read where it lies.
//!
//! Listing reads the central directory (with the npz reader's zip code, [`crate::checkpoint::npz`]),
//! `data.pkl`, the local header of each storage record (30 bytes each, asked for in one round)
//! and `byteorder`; never a storage's data. Records must be stored: a compressed `data.pkl`
//! refuses the file, a compressed storage record is a problem of its tensors.

use super::entries::{self, Located};
use super::vm::{self, Fault, Input, MAX_PICKLE};
use super::walk;
use crate::checkpoint::npz::{self, Member, LOCAL_HEADER};
use crate::checkpoint::source::{bytes, Parse, Stop};
use crate::checkpoint::{validate, ByteSource, Entry};
use crate::tensor::ByteOrder;
use std::collections::HashMap;

/// The one `*/data.pkl` record among `members` (`None` when there is none).
pub(crate) fn data_pkl(members: &[Member]) -> Result<Option<&Member>, String> {
    let found: Vec<&Member> = members
        .iter()
        .filter(|m| {
            m.name
                .strip_suffix("/data.pkl")
                .is_some_and(|root| !root.is_empty())
        })
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one)),
        many => Err(format!(
            "the archive holds {} `*/data.pkl` records ({}, …); a PyTorch checkpoint has one",
            many.len(),
            many[0].name
        )),
    }
}

/// Whether the zip archive `src` is a PyTorch checkpoint (it holds a `*/data.pkl`).
pub(crate) fn is_torch_zip(src: &dyn ByteSource) -> Parse<bool> {
    let members = npz::directory(src)?;
    Ok(members.iter().any(|m| {
        m.name
            .strip_suffix("/data.pkl")
            .is_some_and(|root| !root.is_empty())
    }))
}

/// Every tensor of a zip checkpoint; `root_name` names a tensor saved on its own.
pub(crate) fn list(src: &dyn ByteSource, root_name: &str) -> Parse<Vec<Entry>> {
    let members = npz::directory(src)?;
    let pkl = data_pkl(&members).map_err(Stop::Bad)?.ok_or_else(|| {
        Stop::Bad("a zip archive without a `*/data.pkl` record: not a PyTorch checkpoint".into())
    })?;
    let root = pkl.name.strip_suffix("/data.pkl").unwrap_or_default();
    if pkl.method != 0 {
        return Err(Stop::Bad(format!(
            "`{}` is compressed (zip method {}); PyTorch stores its records uncompressed",
            pkl.name, pkl.method
        )));
    }
    if pkl.flags & 1 != 0 {
        return Err(Stop::Bad(format!("`{}` is encrypted", pkl.name)));
    }
    if pkl.size != pkl.compressed {
        return Err(Stop::Bad(format!(
            "`{}` is stored with {} bytes but declares {} (corrupt archive)",
            pkl.name, pkl.compressed, pkl.size
        )));
    }
    if pkl.size > MAX_PICKLE {
        return Err(Stop::Bad(format!(
            "`{}` has {} bytes, more than the {MAX_PICKLE} quantscope reads",
            pkl.name, pkl.size
        )));
    }
    let start = npz::data_start(src, pkl)?;
    let end = start
        .checked_add(pkl.size)
        .filter(|&e| e <= src.len())
        .ok_or_else(|| {
            Stop::Bad(format!(
                "truncated file: `{}` lies at bytes {start}..{} but the file has {} bytes",
                pkl.name,
                start.saturating_add(pkl.size),
                src.len()
            ))
        })?;
    let data = bytes(src, start..end, "data.pkl")?;
    let parsed = match vm::run(Input {
        data,
        total: data.len() as u64,
        base: 0,
        what: "data.pkl",
        to_eof: false,
    }) {
        Ok(p) => p,
        Err(Fault::Bad(reason)) => return Err(Stop::Bad(reason)),
        Err(Fault::NeedMore) => {
            return Err(Stop::Bad(
                "internal error: data.pkl was read in part".into(),
            ))
        }
    };
    let named = walk::tensors(&parsed, root_name).map_err(Stop::Bad)?;

    // The local headers of the storage records and of `byteorder`, in one round.
    let by_name: HashMap<&str, &Member> = members.iter().map(|m| (m.name.as_str(), m)).collect();
    let record = |key: &str| format!("{root}/data/{key}");
    let byteorder = by_name
        .get(format!("{root}/byteorder").as_str())
        .copied()
        .filter(|m| m.method == 0 && m.size == m.compressed && m.size <= 16);
    let mut needs = Vec::new();
    for m in parsed
        .storages
        .iter()
        .filter_map(|s| by_name.get(record(&s.key).as_str()).copied())
        .chain(byteorder)
    {
        let header = m.local_offset..m.local_offset.saturating_add(LOCAL_HEADER);
        if header.end <= src.len() && src.get(header.clone()).is_none() {
            needs.push(header);
        }
    }
    if !needs.is_empty() {
        return Err(Stop::NeedAll(needs));
    }
    let order = match byteorder {
        None => ByteOrder::Little,
        Some(m) => {
            let at = npz::data_start(src, m)?;
            let text = bytes(src, at..at.saturating_add(m.size), "the byteorder record")?;
            match text {
                b"little" => ByteOrder::Little,
                b"big" => ByteOrder::Big,
                other => {
                    return Err(Stop::Bad(format!(
                        "the byteorder record says `{}`, not little or big",
                        String::from_utf8_lossy(other)
                    )))
                }
            }
        }
    };
    let located: Vec<Located> = parsed
        .storages
        .iter()
        .map(|s| {
            let name = record(&s.key);
            let Some(m) = by_name.get(name.as_str()) else {
                return Located::failed(format!(
                    "its storage record `{name}` is missing from the archive"
                ));
            };
            if m.method != 0 || m.flags & 1 != 0 {
                return Located::failed(format!(
                    "its storage record `{name}` is compressed (zip method {}): only stored records are read, as PyTorch writes them",
                    m.method
                ));
            }
            let start = match npz::data_start(src, m) {
                Ok(s) => s,
                Err(Stop::Bad(why)) => return Located::failed(format!("storage record `{name}`: {why}")),
                Err(_) => return Located::failed(format!("storage record `{name}`: its local header lies beyond the end of the file")),
            };
            let expected = s.nbytes();
            if m.size != m.compressed || expected.is_some_and(|n| n != m.size) {
                return Located::failed(format!(
                    "storage record `{name}` holds {} bytes but its persistent id declares {} × {} = {} bytes ({} elements of {})",
                    m.size,
                    s.numel,
                    s.dtype.map_or(0, |d| d.itemsize),
                    expected.map_or_else(|| "?".into(), |n| n.to_string()),
                    s.numel,
                    s.class
                ));
            }
            let end = start.saturating_add(m.size);
            if end > src.len() {
                return Located::failed(format!(
                    "truncated file: it ends at byte {}, before the end of storage record `{name}` (bytes {start}..{end})",
                    src.len()
                ));
            }
            Located {
                start,
                nbytes: m.size,
                order,
                problem: None,
            }
        })
        .collect();
    let mut entries: Vec<Entry> = named
        .iter()
        .map(|n| entries::entry(n, &parsed.storages, &located))
        .collect();
    entries::flag_duplicates(&mut entries);
    validate::flag_empty(&mut entries);
    Ok(entries)
}
