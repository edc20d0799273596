//! Checks of where a file's tensors lie, shared by every format: ranges past the end of the file
//! (a truncated file, or offsets that point outside it), ranges that overlap, and tensors with
//! no elements. Each problem is recorded on the tensors it concerns; the others stay readable.

use super::Entry;

/// Flag the entries of one file (`entries`, all from a file of `file_len` bytes) whose ranges
/// leave the file or overlap another's, then the zero-element ones.
///
/// A range past the end is called a **truncated file** when the tensors' ranges tile the data
/// section in order from `data_start` (gaps of at most `max_gap` bytes of alignment padding),
/// i.e. the header is consistent and the file simply stops early; otherwise its offsets are
/// **out of the file**.
pub(crate) fn check_ranges(entries: &mut [Entry], file_len: u64, data_start: u64, max_gap: u64) {
    let mut order: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].range.start < entries[i].range.end)
        .collect();
    order.sort_by_key(|&i| (entries[i].range.start, entries[i].range.end));
    let tiled = {
        let mut expected = data_start;
        order.iter().all(|&i| {
            let r = &entries[i].range;
            let ok = r.start >= expected && r.start - expected <= max_gap;
            expected = r.end;
            ok
        })
    };
    for &i in &order {
        let r = entries[i].range.clone();
        if r.end > file_len {
            let reason = if tiled && r.start >= file_len {
                format!(
                    "truncated file: it ends at byte {file_len}, before this tensor's data (bytes {}..{})",
                    r.start, r.end
                )
            } else if tiled {
                format!(
                    "truncated file: it ends at byte {file_len}, {} bytes into this tensor's data (bytes {}..{})",
                    file_len - r.start,
                    r.start,
                    r.end
                )
            } else {
                format!(
                    "out-of-file offsets: the data lies at bytes {}..{} but the file has {file_len} bytes",
                    r.start, r.end
                )
            };
            entries[i].flag(reason);
        }
    }
    // Sweep in start order: a range starting before the furthest end seen so far overlaps the
    // tensor that reached that end.
    let mut furthest: Option<usize> = None;
    for &i in &order {
        if let Some(j) = furthest {
            let (ri, rj) = (entries[i].range.clone(), entries[j].range.clone());
            if ri.start < rj.end {
                let (ni, nj) = (entries[i].name.clone(), entries[j].name.clone());
                entries[i].flag(format!(
                    "overlapping offsets: bytes {}..{} overlap tensor `{nj}` (bytes {}..{})",
                    ri.start, ri.end, rj.start, rj.end
                ));
                entries[j].flag(format!(
                    "overlapping offsets: bytes {}..{} overlap tensor `{ni}` (bytes {}..{})",
                    rj.start, rj.end, ri.start, ri.end
                ));
            }
            if ri.end > rj.end {
                furthest = Some(i);
            }
        } else {
            furthest = Some(i);
        }
    }
    flag_empty(entries);
}

/// Flag tensors with no elements: there is nothing to quantize.
pub(crate) fn flag_empty(entries: &mut [Entry]) {
    for e in entries.iter_mut() {
        if e.elements == 0 && e.problem.is_none() {
            let shape = super::shape_text(&e.shape);
            e.flag(format!(
                "zero-element tensor (shape {shape}): nothing to quantize"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{EntryDType, Storage};
    use super::*;
    use crate::tensor::DType;

    fn entry(name: &str, start: u64, end: u64) -> Entry {
        Entry {
            name: name.into(),
            file: 0,
            shape: vec![((end - start) / 4) as usize],
            dtype: EntryDType::Known(DType::F32),
            elements: ((end - start) / 4) as usize,
            range: start..end,
            storage: Storage::Unreadable,
            problem: None,
        }
    }

    #[test]
    fn truncation_out_of_file_and_overlap() {
        let mut e = vec![entry("a", 8, 16), entry("b", 16, 32), entry("c", 32, 40)];
        check_ranges(&mut e, 20, 8, 0);
        assert_eq!(e[0].problem, None);
        assert!(e[1].problem.as_deref().unwrap().contains("4 bytes into"));
        assert!(e[2]
            .problem
            .as_deref()
            .unwrap()
            .contains("before this tensor"));

        let mut e = vec![entry("a", 8, 16), entry("b", 400, 408)];
        check_ranges(&mut e, 100, 8, 0);
        assert!(e[1].problem.as_deref().unwrap().starts_with("out-of-file"));

        let mut e = vec![entry("a", 8, 24), entry("b", 16, 20), entry("c", 24, 28)];
        check_ranges(&mut e, 100, 8, 0);
        assert!(e[0].problem.as_deref().unwrap().contains("`b`"));
        assert!(e[1].problem.as_deref().unwrap().contains("`a`"));
        assert_eq!(e[2].problem, None);

        let mut e = vec![entry("z", 8, 8)];
        check_ranges(&mut e, 8, 8, 0);
        assert!(e[0].problem.as_deref().unwrap().contains("zero-element"));
    }
}
