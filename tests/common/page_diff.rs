//! The page's diff driver (`DiffSession`) run on files held in memory: listing from the byte
//! ranges it asks for, then each pair from the bytes of its entries, as the compare view's
//! worker does with `File.slice`.

use quantscope::diff::session::DiffSession;
use quantscope::diff::DiffReport;
use std::path::PathBuf;

/// The report of `DiffSession` over the `original` and `quantized` files.
pub fn page_diff(original: &[PathBuf], quantized: &[PathBuf]) -> DiffReport {
    let load = |paths: &[PathBuf]| -> Vec<(String, Vec<u8>)> {
        paths
            .iter()
            .map(|p| (p.to_string_lossy().into_owned(), std::fs::read(p).unwrap()))
            .collect()
    };
    let files = [load(original), load(quantized)];
    let listed = |side: usize| {
        files[side]
            .iter()
            .map(|(n, b)| (n.clone(), b.len() as u64))
            .collect()
    };
    let mut s = DiffSession::new(listed(0), listed(1));
    let slice = |side: usize, file: usize, start: u64, end: u64| -> &[u8] {
        &files[side][file].1[start as usize..end as usize]
    };
    for _ in 0..64 {
        let requests = s.listing_requests();
        if requests.is_empty() {
            break;
        }
        for r in requests {
            s.supply(
                r.side,
                r.file,
                r.start,
                slice(r.side, r.file, r.start, r.end),
            );
        }
    }
    for k in 0..s.pair_count() {
        let bytes: Vec<&[u8]> = s
            .needs(k)
            .unwrap()
            .iter()
            .map(|n| slice(n.side, n.file, n.start, n.end))
            .collect();
        s.compare(k, &bytes).unwrap();
    }
    s.report().unwrap()
}
