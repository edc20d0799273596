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

/// Check `row`'s metrics against the golden `want` ([`metrics_disagree`]), adding what disagrees
/// to `failures` (a row without metrics: its error); whether the metrics were compared.
pub fn check_row(
    failures: &mut Vec<String>,
    what: &str,
    row: &quantscope::diff::DiffRow,
    want: &serde_json::Value,
) -> bool {
    let Some(m) = row.metrics else {
        failures.push(format!("{what}: {:?}", row.error));
        return false;
    };
    failures.extend(metrics_disagree(what, &m, want));
    true
}

/// The fields of `want` (golden `mse`, `max_abs_err`, `nmse`, `sqnr_db` and, when golden has
/// it, `imatrix_weighted_mse`) that `got` does not match to the golden tolerance (rtol 1e-9;
/// a null `sqnr_db` means exact), as messages prefixed by `what`.
pub fn metrics_disagree(
    what: &str,
    got: &quantscope::diff::DiffMetrics,
    want: &serde_json::Value,
) -> Vec<String> {
    let close = |g: f64, w: f64| g == w || (g - w).abs() <= 1e-9 * w.abs().max(g.abs());
    let mut fields = vec![
        ("mse", Some(got.mse)),
        ("max_abs_err", Some(got.max_abs_err)),
        ("nmse", Some(got.nmse)),
        ("sqnr_db", got.sqnr_db),
    ];
    if want.get("imatrix_weighted_mse").is_some() {
        fields.push(("imatrix_weighted_mse", got.imatrix_weighted_mse));
    }
    fields
        .into_iter()
        .filter_map(|(field, g)| {
            let w = want[field].as_f64();
            let ok = match (g, w) {
                (Some(g), Some(w)) => close(g, w),
                (None, None) => true,
                _ => false,
            };
            (!ok).then(|| format!("{what}: {field} {g:?}, golden {w:?}"))
        })
        .collect()
}
