//! Listing an `.npz` archive from its zip directory, one entry per member.
//!
//! Zip layout (APPNOTE 6.3): members (`PK\3\4` local header, name, extra field, data), then the
//! central directory (`PK\1\2` records with each member's method, CRC-32, sizes and local
//! header offset), then the end-of-central-directory record `PK\5\6` (within the last 65,557
//! bytes: 22 bytes plus a comment of up to 65,535). Archives over 4 GiB or 65,535 members use
//! the ZIP64 records: a `PK\6\7` locator just before `PK\5\6` points to `PK\6\6`, and sizes and
//! offsets saturated at `0xFFFFFFFF` move to each record's ZIP64 extra field (id 1).
//!
//! Each member `<key>.npy` is a `.npy` file (stored or deflated). Listing reads the directory,
//! each member's local header and the start of its `.npy` header (inflating only that start
//! for deflated members); an entry's range is the member's (compressed) data, read on its own
//! later. Directory members are skipped; a member that is not a readable `.npy` is listed with
//! the reason.

use super::source::{bytes, Cursor, Parse, Stop};
use super::{npy, validate, ByteSource, Entry, EntryDType, Storage};
use crate::tensor::npy::{header_end, parse_header, shape_str};

const EOCD_SIG: u32 = 0x0605_4b50;
const EOCD64_LOCATOR_SIG: u32 = 0x0706_4b50;
const EOCD64_SIG: u32 = 0x0606_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const LOCAL_SIG: u32 = 0x0403_4b50;
/// Deflate cannot expand data by more than about 1032:1; a member claiming more is corrupt.
const MAX_DEFLATE_RATIO: u64 = 1032;

/// What the central directory says about one member.
pub(crate) struct Member {
    pub name: String,
    pub method: u16,
    pub flags: u16,
    pub crc32: u32,
    pub compressed: u64,
    pub size: u64,
    pub local_offset: u64,
}

/// Bytes of a local file header before its name and extra field.
pub(crate) const LOCAL_HEADER: u64 = 30;

/// Where member `m`'s data starts: after its local header, whose name and extra field (the
/// alignment padding PyTorch writes there) may differ in length from the directory's.
pub(crate) fn data_start(src: &dyn ByteSource, m: &Member) -> Parse<u64> {
    let mut c = Cursor::new(src, m.local_offset);
    if c.u32("a local file header")? != LOCAL_SIG {
        return Err(Stop::Bad(format!(
            "no local file header at byte {} (corrupt archive)",
            m.local_offset
        )));
    }
    c.take(22, "a local file header")?;
    let name_len = u64::from(c.u16("a local file header")?);
    let extra_len = u64::from(c.u16("a local file header")?);
    Ok(c.pos + name_len + extra_len)
}

/// Every member of an `.npz` archive, in directory order.
pub(crate) fn list(src: &dyn ByteSource) -> Parse<Vec<Entry>> {
    let members = directory(src)?;
    let mut entries = Vec::new();
    let mut needs = Vec::new();
    for m in members.iter().filter(|m| !m.name.ends_with('/')) {
        match member_entry(src, m) {
            Ok(e) => entries.push(e),
            Err(Stop::Need(r)) => needs.push(r),
            Err(Stop::NeedAll(rs)) => needs.extend(rs),
            Err(Stop::Bad(reason)) => entries.push(Entry::unreadable(
                key(&m.name),
                EntryDType::Foreign("?".into()),
                format!("member {}: {reason}", m.name),
            )),
        }
    }
    // Ask for every member's missing bytes at once: the caller fetches them in one round.
    if let Some(first) = needs.first().cloned() {
        let start = needs.iter().map(|r| r.start).min().unwrap_or(first.start);
        let end = needs.iter().map(|r| r.end).max().unwrap_or(first.end);
        // Several small requests are served by one span when they are close together.
        return Err(Stop::Need(if end - start <= 1 << 20 {
            start..end
        } else {
            first
        }));
    }
    validate::check_ranges(&mut entries, src.len(), 0, u64::MAX);
    Ok(entries)
}

/// The array key of a member: its name without `.npy`.
fn key(name: &str) -> String {
    name.strip_suffix(".npy").unwrap_or(name).to_string()
}

/// The central directory's records.
pub(crate) fn directory(src: &dyn ByteSource) -> Parse<Vec<Member>> {
    let len = src.len();
    if len < 22 {
        return Err(Stop::Bad(format!(
            "not a valid zip archive: {len} bytes, too short for the end-of-central-directory record"
        )));
    }
    let tail_start = len.saturating_sub(22 + 65_535);
    let tail = bytes(src, tail_start..len, "the end of the archive")?;
    let at = tail
        .windows(4)
        .rposition(|w| w == EOCD_SIG.to_le_bytes())
        .ok_or_else(|| {
            Stop::Bad(
                "not a valid zip archive: no end-of-central-directory record (truncated archive?)"
                    .into(),
            )
        })? as u64;
    let eocd = tail_start + at;
    let mut c = Cursor::new(src, eocd + 4);
    let disk = c.u16("the end-of-central-directory record")?;
    let cd_disk = c.u16("the end-of-central-directory record")?;
    let _on_disk = c.u16("the end-of-central-directory record")?;
    let mut count = u64::from(c.u16("the end-of-central-directory record")?);
    let mut cd_size = u64::from(c.u32("the end-of-central-directory record")?);
    let mut cd_offset = u64::from(c.u32("the end-of-central-directory record")?);
    if disk != 0 || cd_disk != 0 {
        return Err(Stop::Bad(
            "multi-disk (split) zip archives are not supported".into(),
        ));
    }
    if count == 0xFFFF || cd_size == 0xFFFF_FFFF || cd_offset == 0xFFFF_FFFF {
        let locator = eocd
            .checked_sub(20)
            .ok_or_else(|| Stop::Bad("ZIP64 archive without its locator record".into()))?;
        let mut l = Cursor::new(src, locator);
        if l.u32("the ZIP64 locator")? != EOCD64_LOCATOR_SIG {
            return Err(Stop::Bad(
                "the directory sizes are saturated but the ZIP64 locator is missing".into(),
            ));
        }
        let _disk = l.u32("the ZIP64 locator")?;
        let eocd64 = l.u64("the ZIP64 locator")?;
        let mut e = Cursor::new(src, eocd64);
        if e.u32("the ZIP64 end-of-central-directory record")? != EOCD64_SIG {
            return Err(Stop::Bad(format!(
                "the ZIP64 locator points to byte {eocd64}, which holds no ZIP64 end-of-central-directory record"
            )));
        }
        e.take(20, "the ZIP64 end-of-central-directory record")?;
        let _on_disk = e.u64("the ZIP64 end-of-central-directory record")?;
        count = e.u64("the ZIP64 end-of-central-directory record")?;
        cd_size = e.u64("the ZIP64 end-of-central-directory record")?;
        cd_offset = e.u64("the ZIP64 end-of-central-directory record")?;
    }
    let cd_end = cd_offset
        .checked_add(cd_size)
        .filter(|&end| end <= len)
        .ok_or_else(|| {
            Stop::Bad(format!(
                "the central directory (bytes {cd_offset}..{}) lies outside the {len}-byte archive (truncated archive?)",
                cd_offset.saturating_add(cd_size)
            ))
        })?;
    // One fetch for the whole directory.
    bytes(src, cd_offset..cd_end, "the central directory")?;
    let mut c = Cursor::new(src, cd_offset);
    let mut members = Vec::new();
    while c.pos < cd_end && (members.len() as u64) < count {
        members.push(central_record(&mut c)?);
    }
    if (members.len() as u64) < count {
        return Err(Stop::Bad(format!(
            "the central directory holds {} records but the archive declares {count}",
            members.len()
        )));
    }
    Ok(members)
}

/// One central-directory record at the cursor.
fn central_record(c: &mut Cursor<'_>) -> Parse<Member> {
    const WHAT: &str = "a central-directory record";
    if c.u32(WHAT)? != CENTRAL_SIG {
        return Err(Stop::Bad(format!(
            "corrupt central directory: no record signature at byte {}",
            c.pos - 4
        )));
    }
    c.take(4, WHAT)?; // versions
    let flags = c.u16(WHAT)?;
    let method = c.u16(WHAT)?;
    c.take(4, WHAT)?; // time, date
    let crc32 = c.u32(WHAT)?;
    let mut compressed = u64::from(c.u32(WHAT)?);
    let mut size = u64::from(c.u32(WHAT)?);
    let name_len = u64::from(c.u16(WHAT)?);
    let extra_len = u64::from(c.u16(WHAT)?);
    let comment_len = u64::from(c.u16(WHAT)?);
    c.take(8, WHAT)?; // disk, internal and external attributes
    let mut local_offset = u64::from(c.u32(WHAT)?);
    let name = String::from_utf8_lossy(c.take(name_len, "a member name")?).into_owned();
    let mut extra = Cursor::new(c.src, c.pos);
    let extra_end = c.pos + extra_len;
    c.take(extra_len, "a member's extra field")?;
    c.take(comment_len, "a member comment")?;
    while extra.pos + 4 <= extra_end {
        let id = extra.u16("an extra field")?;
        let field_len = u64::from(extra.u16("an extra field")?);
        let field_end = extra.pos + field_len;
        if field_end > extra_end {
            break;
        }
        if id == 1 {
            // ZIP64: the saturated fields, in this order.
            for value in [&mut size, &mut compressed, &mut local_offset] {
                if *value == 0xFFFF_FFFF && extra.pos + 8 <= field_end {
                    *value = extra.u64("a ZIP64 extra field")?;
                }
            }
        }
        extra.pos = field_end;
    }
    Ok(Member {
        name,
        method,
        flags,
        crc32,
        compressed,
        size,
        local_offset,
    })
}

/// The entry of one member: its local header, then the start of its `.npy` header.
fn member_entry(src: &dyn ByteSource, m: &Member) -> Parse<Entry> {
    let deflated = match m.method {
        0 => false,
        8 => true,
        other => {
            return Err(Stop::Bad(format!(
                "compression method {other} is not supported (only stored and deflated members)"
            )))
        }
    };
    if m.flags & 1 != 0 {
        return Err(Stop::Bad("encrypted members are not supported".into()));
    }
    let data_start = data_start(src, m)?;
    let range = data_start..data_start.saturating_add(m.compressed);
    let plausible = if deflated {
        m.size
            <= m.compressed
                .saturating_mul(MAX_DEFLATE_RATIO)
                .saturating_add(64)
    } else {
        m.size == m.compressed
    };
    if !plausible {
        return Err(Stop::Bad(format!(
            "declared size {} bytes is impossible for {} {} bytes (corrupt archive or zip bomb)",
            m.size,
            m.compressed,
            if deflated { "deflated" } else { "stored" }
        )));
    }
    if range.end > src.len() {
        // The data is missing: report it on the entry, without reading the header.
        let mut e = Entry::unreadable(key(&m.name), EntryDType::Foreign("?".into()), String::new());
        e.problem = None;
        e.range = range;
        validate::check_ranges(std::slice::from_mut(&mut e), src.len(), data_start, 0);
        return Ok(e);
    }
    let prefix = if deflated {
        inflated_prefix(src, range.clone(), m.size)?
    } else {
        let head = npy::header_at(src, data_start, m.size)?;
        bytes(
            src,
            data_start..data_start + head.data_offset as u64,
            "a member's .npy header",
        )?
        .to_vec()
    };
    let header = parse_header(&prefix).map_err(npy::reason)?;
    let needed = (header.data_offset as u64).checked_add(header.data_len as u64);
    let mut e = npy::entry_of(&key(&m.name), &header, range);
    e.storage = Storage::ZipMember {
        deflated,
        size: m.size,
        crc32: m.crc32,
        header_len: header.data_offset as u64,
        dtype: header.dtype,
        order: header.order,
        fortran: header.fortran_order,
    };
    if needed != Some(m.size) {
        let what = format!(
            "its .npy header (shape {} of {}) needs {} bytes but the zip entry declares {}",
            shape_str(&header.shape),
            header.dtype.name(),
            needed.map_or_else(|| "too many".to_string(), |n| n.to_string()),
            m.size
        );
        e.flag(if needed.is_none_or(|n| n > m.size) {
            format!("truncated data: {what}")
        } else {
            format!("header/shape mismatch: {what}")
        });
    }
    Ok(e)
}

/// The decompressed start of a deflated member, up to the end of its `.npy` header. Inflates
/// growing prefixes of the compressed data (4 KiB, doubling) until the header is complete.
fn inflated_prefix(src: &dyn ByteSource, range: std::ops::Range<u64>, size: u64) -> Parse<Vec<u8>> {
    let total = range.end - range.start;
    let mut take = total.min(4096);
    loop {
        let compressed = bytes(src, range.start..range.start + take, "a member's data")?;
        let mut out = Vec::new();
        let limit = size.min(1 << 20) as usize;
        let mut inflater = flate2::Decompress::new(false);
        out.reserve(limit.min(64 * 1024));
        let mut chunk = vec![0u8; 16 * 1024];
        let mut consumed = 0usize;
        let ended = loop {
            let before_in = inflater.total_in();
            let before_out = inflater.total_out();
            let status = inflater
                .decompress(
                    compressed.get(consumed..).unwrap_or_default(),
                    &mut chunk,
                    flate2::FlushDecompress::None,
                )
                .map_err(|e| Stop::Bad(format!("corrupt deflated data: {e}")))?;
            consumed += (inflater.total_in() - before_in) as usize;
            let produced = (inflater.total_out() - before_out) as usize;
            out.extend_from_slice(chunk.get(..produced).unwrap_or_default());
            if status == flate2::Status::StreamEnd {
                break true;
            }
            if out.len() >= limit || (produced == 0 && consumed >= compressed.len()) {
                break false;
            }
            if produced == 0 && inflater.total_in() == before_in {
                break false;
            }
        };
        let enough = match header_end(&out) {
            Ok(end) => out.len() >= end,
            Err(_) if out.len() >= npy::PREAMBLE as usize => true,
            Err(_) => false,
        };
        if enough || ended || take == total || out.len() >= limit {
            return Ok(out);
        }
        take = (take * 2).min(total);
    }
}
