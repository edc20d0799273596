//! A quantized checkpoint against its original: what quantization did to each weight.
//!
//! For every pair of weights ([`names`]) the quantized weight is decoded through its codec and
//! compared with the original, in float64 over every element:
//!
//! * `mse = Σ(q − x)² / n`, `nmse = Σ(q − x)² / Σx²`, `sqnr_db = 10·log10(Σx² / Σ(q − x)²)`
//!   (`None` when the error is zero), `max_abs_err`, `cosine = Σqx / √(Σq²·Σx²)`;
//! * with an importance matrix, `imatrix_weighted_mse = Σᵢⱼ wⱼ(q − x)²ᵢⱼ / (Σⱼ wⱼ · rows)`, `w`
//!   the importance of each column (llama.cpp's weighting of quantization error);
//! * "vs round-to-nearest" ([`rtn`]): the same format applied to the original by plain
//!   round-to-nearest through the codec's `encode`, so the row says whether GPTQ, AWQ or an
//!   imatrix did better than the simplest quantizer of that format.
//!
//! The lint ([`lint`]) lists what is wrong with the file rather than with the numbers: scales
//! that are missing, zero, non-finite or saturated, 2-D weights left unquantized, shapes that
//! disagree, weights that cannot be read.
//!
//! Rows are ranked worst first (largest NMSE; rows without a result last). Reading is the
//! host's ([`Reader`]): one pair at a time, so memory holds two weights whatever the
//! checkpoint's size.

pub mod lint;
pub mod names;
#[cfg(not(target_arch = "wasm32"))]
pub mod native;
pub mod rtn;

use crate::checkpoint::imatrix::Importance;
use crate::checkpoint::layouts::Layout;
use crate::checkpoint::weights::Weight;
use crate::error::Result;
use crate::plot::{LayerProfileView, ProfileTensor};
use crate::tensor::Tensor;
use names::{GgufModel, GgufSide, Transform};
use serde::Serialize;

/// The error of a quantized weight against its original.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DiffMetrics {
    pub mse: f64,
    pub nmse: f64,
    /// `None` when the error is zero.
    pub sqnr_db: Option<f64>,
    pub max_abs_err: f64,
    pub cosine: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub imatrix_weighted_mse: Option<f64>,
}

/// The sums every metric comes from, over one stretch of values.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    err2: f64,
    x2: f64,
    q2: f64,
    qx: f64,
    max_abs: f64,
    weighted: f64,
}

/// Compare `quantized` with `original` (same length, C order, rows of `columns` values);
/// `importance` (one weight per column) adds the imatrix-weighted error.
pub fn measure(
    original: &[f32],
    quantized: &[f32],
    columns: usize,
    importance: Option<&[f32]>,
) -> DiffMetrics {
    let columns = columns.max(1);
    let importance = importance.filter(|w| w.len() == columns);
    let mut s = Sums::default();
    for (row_x, row_q) in original.chunks(columns).zip(quantized.chunks(columns)) {
        for (j, (&x, &q)) in row_x.iter().zip(row_q).enumerate() {
            let (x, q) = (f64::from(x), f64::from(q));
            let e = q - x;
            s.err2 += e * e;
            s.x2 += x * x;
            s.q2 += q * q;
            s.qx += q * x;
            s.max_abs = s.max_abs.max(e.abs());
            if let Some(w) = importance {
                s.weighted += f64::from(w[j]) * e * e;
            }
        }
    }
    let n = original.len().max(1) as f64;
    let rows = (original.len() / columns) as f64;
    DiffMetrics {
        mse: s.err2 / n,
        nmse: s.err2 / s.x2,
        sqnr_db: (s.err2 > 0.0).then(|| 10.0 * (s.x2 / s.err2).log10()),
        max_abs_err: s.max_abs,
        cosine: s.qx / (s.q2 * s.x2).sqrt(),
        imatrix_weighted_mse: importance.map(|w| {
            let total: f64 = w.iter().map(|&v| f64::from(v)).sum();
            s.weighted / (total * rows)
        }),
    }
}

/// The round-to-nearest comparison of one row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RtnResult {
    /// The codec applied (its label).
    pub format: String,
    pub metrics: DiffMetrics,
}

/// One pair of weights.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffRow {
    /// The weight's name in the original checkpoint.
    pub original: String,
    /// Its name in the quantized checkpoint.
    pub quantized: String,
    /// The quantized weight's stored format.
    pub format: String,
    pub bits_per_weight: f64,
    pub shape: Vec<usize>,
    /// `None` when the pair could not be compared (see `error`).
    pub metrics: Option<DiffMetrics>,
    /// Round-to-nearest in the same format; `None` for formats without an encoder (plain
    /// dtypes, decode-only codecs) or when it failed (`rtn_error`).
    pub rtn: Option<RtnResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtn_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Position of the original weight in its checkpoint (the layer profile's order).
    #[serde(skip)]
    pub position: usize,
}

/// Weights found on one side only.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Unpaired {
    pub original: Vec<String>,
    pub quantized: Vec<String>,
}

/// One thing wrong with the quantized checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LintItem {
    pub tensor: String,
    /// `missing_scale`, `zero_scale`, `nonfinite_scale`, `saturated_scale`, `unquantized`,
    /// `shape`, `unreadable`, `nonfinite`, `layout`.
    pub kind: &'static str,
    pub message: String,
}

/// The whole comparison.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DiffReport {
    /// Ranked worst first.
    pub pairs: Vec<DiffRow>,
    pub unpaired: Unpaired,
    pub lint: Vec<LintItem>,
    /// The files of each side, original first.
    pub files: Vec<String>,
}

impl DiffReport {
    /// The layer profile of the rows: SQNR of the quantized weight and of round-to-nearest, in
    /// the original checkpoint's order.
    pub fn layer_profile(&self) -> LayerProfileView {
        let mut rows: Vec<&DiffRow> = self.pairs.iter().collect();
        rows.sort_by_key(|r| r.position);
        LayerProfileView {
            methods: vec!["quantized".into(), "round-to-nearest".into()],
            tensors: rows
                .iter()
                .map(|r| ProfileTensor {
                    name: r.original.clone(),
                    layer: crate::model::layers::layer_index(&r.original),
                    sqnr_db: vec![
                        r.metrics.and_then(|m| m.sqnr_db),
                        r.rtn.as_ref().and_then(|m| m.metrics.sqnr_db),
                    ],
                    skipped: r.error.is_some(),
                })
                .collect(),
            highlighted: None,
        }
    }
}

/// One side of a diff, as the host reads it.
pub trait Reader {
    /// Its weights under its layout.
    fn layout(&self) -> &Layout;
    /// Decode one of its weights.
    fn read(&self, weight: &Weight) -> Result<Tensor>;
    /// The GGUF model facts, when this side is a GGUF file.
    fn gguf(&self) -> Option<&GgufModel>;
    /// Its file names.
    fn files(&self) -> Vec<String>;
    /// The lint of its stored arrays (scales) for `weight`.
    fn lint_scales(&self, weight: &Weight) -> Vec<LintItem>;
    /// The codec (id and parameters) `weight` is stored with, if any.
    fn codec(&self, weight: &Weight) -> Option<(String, crate::params::Params)>;
}

/// Compare every weight of `quantized` with its partner in `original`.
pub fn diff(
    original: &dyn Reader,
    quantized: &dyn Reader,
    importance: Option<&Importance>,
) -> DiffReport {
    let (o_layout, q_layout) = (original.layout(), quantized.layout());
    let o_names: Vec<&str> = o_layout.weights.iter().map(|w| w.name.as_str()).collect();
    let q_names: Vec<&str> = q_layout.weights.iter().map(|w| w.name.as_str()).collect();
    let gguf = match (original.gguf(), quantized.gguf()) {
        (_, Some(m)) => Some((m, GgufSide::Quantized)),
        (Some(m), None) => Some((m, GgufSide::Original)),
        (None, None) => None,
    };
    let pairing = names::pair(&o_names, &q_names, gguf);
    let mut report = DiffReport {
        files: [original.files(), quantized.files()].concat(),
        ..DiffReport::default()
    };
    for w in &q_layout.warnings {
        report.lint.push(LintItem {
            tensor: String::new(),
            kind: "layout",
            message: w.clone(),
        });
    }
    let quantized_checkpoint = lint::is_quantized(q_layout);
    for pair in &pairing.pairs {
        let (ow, qw) = (
            &o_layout.weights[pair.original],
            &q_layout.weights[pair.quantized],
        );
        let forward = matches!(gguf, Some((_, GgufSide::Original)));
        let imatrix = importance.and_then(|im| {
            im.of(&qw.name).or_else(|| {
                let arch = gguf.map(|(m, _)| m.architecture.as_str()).unwrap_or("");
                names::gguf_name(arch, &ow.name).and_then(|g| im.of(&g))
            })
        });
        let row = compare(
            original,
            quantized,
            ow,
            qw,
            pair.transform,
            forward,
            imatrix,
        );
        report.lint.extend(quantized.lint_scales(qw));
        report
            .lint
            .extend(lint::of_pair(ow, qw, &row, quantized_checkpoint));
        report.pairs.push(DiffRow {
            position: pair.original,
            ..row
        });
    }
    report.unpaired = Unpaired {
        original: pairing
            .unpaired_original
            .iter()
            .map(|&i| o_layout.weights[i].name.clone())
            .collect(),
        quantized: pairing
            .unpaired_quantized
            .iter()
            .map(|&i| q_layout.weights[i].name.clone())
            .collect(),
    };
    rank(&mut report.pairs);
    report
}

/// Worst first: largest NMSE, then rows without a result in checkpoint order.
fn rank(rows: &mut [DiffRow]) {
    rows.sort_by(|a, b| {
        let key = |r: &DiffRow| r.metrics.map(|m| m.nmse).filter(|v| !v.is_nan());
        match (key(a), key(b)) {
            (Some(x), Some(y)) => y.total_cmp(&x).then(a.position.cmp(&b.position)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.position.cmp(&b.position),
        }
    });
}

/// Compare one pair.
fn compare(
    original: &dyn Reader,
    quantized: &dyn Reader,
    ow: &Weight,
    qw: &Weight,
    transform: Transform,
    forward: bool,
    importance: Option<&[f32]>,
) -> DiffRow {
    let mut row = DiffRow {
        original: ow.name.clone(),
        quantized: qw.name.clone(),
        format: qw.format.clone(),
        bits_per_weight: qw.bits_per_weight,
        shape: qw.shape.clone(),
        metrics: None,
        rtn: None,
        rtn_error: None,
        error: None,
        position: 0,
    };
    if ow.elements() != qw.elements() {
        row.error = Some(format!(
            "shapes disagree: the original is {:?}, the quantized weight {:?}",
            ow.shape, qw.shape
        ));
        return row;
    }
    let q = match quantized.read(qw) {
        Ok(t) => t,
        Err(e) => {
            row.error = Some(e.to_string());
            return row;
        }
    };
    let x = match original.read(ow) {
        Ok(t) => t,
        Err(e) => {
            row.error = Some(format!("the original cannot be read: {e}"));
            return row;
        }
    };
    let mut q_values = q.data;
    if let Err(e) = names::apply(transform, &qw.shape, &mut q_values, forward) {
        row.error = Some(e);
        return row;
    }
    let columns = ow.shape.last().copied().unwrap_or(1);
    row.metrics = Some(measure(&x.data, &q_values, columns, importance));
    // Row-wise block formats are unchanged by the row permutation, so round-to-nearest is
    // computed on the original as it is.
    match rtn::round_to_nearest(quantized.codec(qw).as_ref(), &x, &qw.shape) {
        Ok(Some((format, values))) => {
            row.rtn = Some(RtnResult {
                format,
                metrics: measure(&x.data, &values, columns, importance),
            })
        }
        Ok(None) => {}
        Err(e) => row.rtn_error = Some(e.to_string()),
    }
    row
}
