//! The ranking as CSV, the same from the CLI (`quantscope model --csv`) and the page's export.
//!
//! One line per tensor, worst first: `name`, `file`, `shape` (`560x384`), `dtype`, `elements`,
//! the non-finite counts (`nan`, `pos_inf`, `neg_inf`), the statistics (`min`, `max`, `mean`,
//! `std`, `kurtosis`, `absmax_over_std`), four columns per method (`<id> sqnr_db`, `<id> mse`,
//! `<id> max_abs_err`, `<id> clipped_fraction`; empty when the method does not apply) and
//! `error`: why the tensor was skipped, then each method's failure as `<id>: <reason>`, joined by
//! `; `. Numbers are written in Rust's shortest round-trip form; a field holding a comma, a quote
//! or a line break is quoted (RFC 4180).

use super::ModelReport;

/// The metric columns of each method, in order.
const METRICS: [&str; 4] = ["sqnr_db", "mse", "max_abs_err", "clipped_fraction"];

fn num(x: Option<f64>) -> String {
    x.map(|v| format!("{v}")).unwrap_or_default()
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn line(cells: &[String]) -> String {
    let mut out = cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(",");
    out.push('\n');
    out
}

/// The CSV document of `report`, with the metric columns of `methods` (method ids, in order).
pub fn csv(report: &ModelReport, methods: &[String]) -> String {
    let mut header: Vec<String> = [
        "name",
        "file",
        "shape",
        "dtype",
        "elements",
        "nan",
        "pos_inf",
        "neg_inf",
        "min",
        "max",
        "mean",
        "std",
        "kurtosis",
        "absmax_over_std",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for m in methods {
        header.extend(METRICS.iter().map(|metric| format!("{m} {metric}")));
    }
    header.push("error".into());
    let mut out = line(&header);
    for t in &report.tensors {
        let s = t.stats;
        let shape: Vec<String> = t.shape.iter().map(usize::to_string).collect();
        let mut cells = vec![
            t.name.clone(),
            t.file.clone(),
            shape.join("x"),
            t.dtype.clone(),
            t.elements.to_string(),
            t.nonfinite.nan.to_string(),
            t.nonfinite.pos_inf.to_string(),
            t.nonfinite.neg_inf.to_string(),
        ];
        for v in [
            s.and_then(|s| s.min),
            s.and_then(|s| s.max),
            s.and_then(|s| s.mean),
            s.and_then(|s| s.std),
            s.and_then(|s| s.kurtosis),
            s.and_then(|s| s.absmax_over_std),
        ] {
            cells.push(num(v));
        }
        for m in methods {
            match t.results.iter().find(|r| &r.id == m) {
                Some(r) => cells.extend([
                    num(r.sqnr_db),
                    num(r.mse),
                    num(r.max_abs_err),
                    num(r.clipped_fraction),
                ]),
                None => cells.extend(std::iter::repeat_n(String::new(), METRICS.len())),
            }
        }
        let errors: Vec<String> = t
            .error
            .iter()
            .cloned()
            .chain(
                t.results
                    .iter()
                    .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.id))),
            )
            .collect();
        cells.push(errors.join("; "));
        out += &line(&cells);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MethodResult, ResultKind, Stats, TensorRow};
    use crate::tensor::NonFiniteCounts;

    #[test]
    fn fields_are_quoted_and_missing_methods_are_empty() {
        let row = TensorRow {
            name: "a,\"b\"".into(),
            file: "m.safetensors".into(),
            shape: vec![2, 3],
            dtype: "float32".into(),
            elements: 6,
            byte_range: [0, 24],
            nonfinite: NonFiniteCounts {
                nan: 1,
                pos_inf: 0,
                neg_inf: 0,
            },
            stats: Some(Stats::of(&[1.0, 2.0, 3.0])),
            results: vec![MethodResult {
                id: "int8".into(),
                kind: ResultKind::Format,
                sqnr_db: Some(40.5),
                mse: Some(0.25),
                max_abs_err: Some(1.0),
                clipped_fraction: Some(0.0),
                error: None,
            }],
            error: None,
            position: 0,
            diagnosis: None,
        };
        let report = ModelReport {
            tensors: vec![row],
            load_errors: Vec::new(),
        };
        let text = csv(&report, &["int8".into(), "fp8_e4m3".into()]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].ends_with(
            "int8 sqnr_db,int8 mse,int8 max_abs_err,int8 clipped_fraction,fp8_e4m3 sqnr_db,\
             fp8_e4m3 mse,fp8_e4m3 max_abs_err,fp8_e4m3 clipped_fraction,error"
        ));
        assert!(lines[1].starts_with("\"a,\"\"b\"\"\",m.safetensors,2x3,float32,6,1,0,0,1,3,2,"));
        assert!(lines[1].ends_with(",40.5,0.25,1,0,,,,,"), "{}", lines[1]);
    }
}
