//! The diff as CSV, one row per pair in the order given (a report's are worst first): what
//! `quantscope diff --csv` prints and the compare view exports (wasm `diffCsv`).

use super::DiffRow;
use std::fmt::Write as _;

/// The CSV header.
pub const HEADER: &str = "original,quantized,format,bits_per_weight,shape,mse,nmse,sqnr_db,max_abs_err,cosine,imatrix_weighted_mse,rtn_format,rtn_nmse,rtn_sqnr_db,error";

/// A number in exponent form (Rust's shortest round-trip digits); empty when absent.
fn num(v: Option<f64>) -> String {
    v.map(|x| format!("{x:e}")).unwrap_or_default()
}

/// A text field, quoted when it holds a comma, a quote or a line break.
fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `rows` as CSV: the header, then one line per row.
pub fn csv(rows: &[DiffRow]) -> String {
    let mut out = format!("{HEADER}\n");
    for p in rows {
        let m = p.metrics;
        let shape: Vec<String> = p.shape.iter().map(|d| d.to_string()).collect();
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            quote(&p.original),
            quote(&p.quantized),
            quote(&p.format),
            p.bits_per_weight,
            shape.join("x"),
            num(m.map(|m| m.mse)),
            num(m.map(|m| m.nmse)),
            num(m.and_then(|m| m.sqnr_db)),
            num(m.map(|m| m.max_abs_err)),
            num(m.map(|m| m.cosine)),
            num(m.and_then(|m| m.imatrix_weighted_mse)),
            quote(p.rtn.as_ref().map_or("", |r| r.format.as_str())),
            num(p.rtn.as_ref().map(|r| r.metrics.nmse)),
            num(p.rtn.as_ref().and_then(|r| r.metrics.sqnr_db)),
            quote(p.error.as_deref().unwrap_or("")),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_names_and_leaves_missing_numbers_empty() {
        let row = DiffRow {
            original: "a,b".into(),
            quantized: "q".into(),
            format: "Q4_K".into(),
            bits_per_weight: 4.5,
            shape: vec![2, 3],
            metrics: None,
            rtn: None,
            rtn_error: None,
            error: Some("say \"no\"".into()),
            position: 0,
            diagnosis: None,
        };
        let text = csv(&[row]);
        let line = text.lines().nth(1).unwrap_or_default();
        assert_eq!(line, "\"a,b\",q,Q4_K,4.5,2x3,,,,,,,,,,\"say \"\"no\"\"\"");
    }
}
