//! Where listing reads header bytes from: "these bytes, or not yet".
//!
//! Parsers ask a [`ByteSource`] for byte ranges. A memory-mapped file (natively) always has
//! them; a [`PartialBytes`] (the page's view of a `File`) has only the ranges supplied so far,
//! and a parser that lacks some stops with [`Stop::Need`]; the caller fetches them and parses
//! again.
//! Header parsing is cheap, so starting over is simpler than suspending a parser.

use std::ops::Range;

/// Random access to the bytes of one file.
pub trait ByteSource {
    /// The file's size in bytes.
    fn len(&self) -> u64;

    /// True for an empty file.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of `range` (which lies within `0..len()`), or `None` when they are not
    /// available yet.
    fn get(&self, range: Range<u64>) -> Option<&[u8]>;
}

/// A whole file held in (or mapped into) memory.
#[derive(Debug, Clone, Copy)]
pub struct InMemory<'a>(pub &'a [u8]);

impl ByteSource for InMemory<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        let start = usize::try_from(range.start).ok()?;
        let end = usize::try_from(range.end).ok()?;
        self.0.get(start..end)
    }
}

/// Why a parser stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// These bytes are needed and not available yet.
    Need(Range<u64>),
    /// All these small ranges are needed and not available yet (fetched in one round, each as
    /// it is: the local headers of a zip's members, the count fields of a legacy PyTorch file).
    NeedAll(Vec<Range<u64>>),
    /// The file is malformed; the reason.
    Bad(String),
}

pub(crate) type Parse<T> = Result<T, Stop>;

/// `range` of `src`: its bytes, a request for them, or a truncation error naming `what`.
pub(crate) fn bytes<'a>(src: &'a dyn ByteSource, range: Range<u64>, what: &str) -> Parse<&'a [u8]> {
    if range.start > range.end || range.end > src.len() {
        return Err(Stop::Bad(format!(
            "truncated: {what} needs bytes {}..{} but the file has {} bytes",
            range.start,
            range.end,
            src.len()
        )));
    }
    match src.get(range.clone()) {
        Some(b) => Ok(b),
        None => Err(Stop::Need(range)),
    }
}

/// A cursor reading little-endian fields in sequence.
pub(crate) struct Cursor<'a> {
    pub src: &'a dyn ByteSource,
    pub pos: u64,
}

impl<'a> Cursor<'a> {
    pub fn new(src: &'a dyn ByteSource, pos: u64) -> Self {
        Cursor { src, pos }
    }

    /// The next `n` bytes (`what` names them in a truncation error).
    pub fn take(&mut self, n: u64, what: &str) -> Parse<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or_else(|| Stop::Bad(format!("{what} has an impossible length of {n} bytes")))?;
        let b = bytes(self.src, self.pos..end, what)?;
        self.pos = end;
        Ok(b)
    }

    pub fn u16(&mut self, what: &str) -> Parse<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub fn u32(&mut self, what: &str) -> Parse<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub fn u64(&mut self, what: &str) -> Parse<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn array<const N: usize>(&mut self, what: &str) -> Parse<[u8; N]> {
        let b = self.take(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }
}

/// The ranges of one file supplied so far (the page's view of a `File`). Adjacent and
/// overlapping ranges are merged, so a parser may ask for a range spanning several supplies.
#[derive(Debug, Clone, Default)]
pub struct PartialBytes {
    len: u64,
    /// Disjoint, non-adjacent chunks sorted by start.
    chunks: Vec<(u64, Vec<u8>)>,
}

impl PartialBytes {
    /// Nothing known yet of a file of `len` bytes.
    pub fn new(len: u64) -> Self {
        PartialBytes {
            len,
            chunks: Vec::new(),
        }
    }

    /// Record `data` as the bytes at `offset`; what lies past the file's end is ignored.
    pub fn supply(&mut self, offset: u64, data: &[u8]) {
        let room = self.len.saturating_sub(offset);
        let keep = usize::try_from(room).map_or(data.len(), |r| data.len().min(r));
        let Some(data) = data.get(..keep).filter(|d| !d.is_empty()) else {
            return;
        };
        let mut start = offset;
        let mut merged = data.to_vec();
        let mut end = start + merged.len() as u64;
        let mut kept = Vec::with_capacity(self.chunks.len() + 1);
        for (s, bytes) in std::mem::take(&mut self.chunks) {
            let e = s + bytes.len() as u64;
            if e < start || s > end {
                kept.push((s, bytes));
                continue;
            }
            // Overlapping or adjacent: the union, new bytes winning where they overlap.
            let new_start = start.min(s);
            let new_end = end.max(e);
            let mut union = vec![0u8; (new_end - new_start) as usize];
            let at = |x: u64| (x - new_start) as usize;
            union[at(s)..at(e)].copy_from_slice(&bytes);
            union[at(start)..at(end)].copy_from_slice(&merged);
            (start, end, merged) = (new_start, new_end, union);
        }
        kept.push((start, merged));
        kept.sort_by_key(|(s, _)| *s);
        self.chunks = kept;
    }

    /// Bytes held, over all chunks.
    pub fn held(&self) -> u64 {
        self.chunks.iter().map(|(_, b)| b.len() as u64).sum()
    }
}

impl ByteSource for PartialBytes {
    fn len(&self) -> u64 {
        self.len
    }

    fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        if range.start >= range.end {
            return Some(&[]);
        }
        let (start, bytes) = self
            .chunks
            .iter()
            .take_while(|(s, _)| *s <= range.start)
            .last()?;
        let from = usize::try_from(range.start - start).ok()?;
        let to = usize::try_from(range.end - start).ok()?;
        bytes.get(from..to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_bytes_merge_and_answer() {
        let file: Vec<u8> = (0..100u8).collect();
        let mut p = PartialBytes::new(100);
        assert_eq!(p.get(0..1), None);
        p.supply(10, &file[10..20]);
        p.supply(30, &file[30..40]);
        assert_eq!(p.get(12..15), Some(&file[12..15]));
        assert_eq!(p.get(15..35), None);
        p.supply(20, &file[20..30]);
        assert_eq!(p.get(15..35), Some(&file[15..35]));
        p.supply(5, &file[5..12]);
        assert_eq!(p.get(5..40), Some(&file[5..40]));
        p.supply(95, &file[95..100]);
        p.supply(99, &[99, 1, 2, 3]);
        assert_eq!(p.get(95..100), Some(&file[95..100]));
        assert_eq!(p.held(), 35 + 5);
        assert_eq!(p.get(40..41), None);
        let s: &dyn ByteSource = &p;
        assert!(matches!(bytes(s, 90..101, "x"), Err(Stop::Bad(_))));
        assert_eq!(bytes(s, 0..3, "x"), Err(Stop::Need(0..3)));
    }
}

/// The bytes of one entry's range as a reader hands them over to be decoded: borrowed from the
/// host that supplied them (the page), or read from the file into a buffer held while they are
/// decoded (the native checkpoint).
#[derive(Debug)]
pub enum EntryBytes<'a> {
    /// Bytes the caller holds.
    Borrowed(&'a [u8]),
    /// A range read from a file.
    Read(Vec<u8>),
}

impl std::ops::Deref for EntryBytes<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            EntryBytes::Borrowed(bytes) => bytes,
            EntryBytes::Read(bytes) => bytes,
        }
    }
}
