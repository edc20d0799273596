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
//! host's ([`DiffPlan`]: the entries each pair needs, then the pair compared from their bytes):
//! one pair at a time, so memory holds two weights whatever the checkpoint's size, natively
//! ([`native`], entries read from disk) and in the page (`File.slice`) alike.

pub mod csv;
pub mod experts;
pub mod lint;
pub mod names;
#[cfg(not(target_arch = "wasm32"))]
pub mod native;
pub mod rtn;
pub mod session;
pub mod view;

use crate::checkpoint::imatrix::Importance;
use crate::checkpoint::layouts::{Configs, Layout};
use crate::checkpoint::weights::{read_weight_stored, PartFrom, Weight, WeightSource};
use crate::checkpoint::{decode_entry, Catalog, Entry, EntryBytes, EntryDType, Storage};
use crate::codec::Encoded;
use crate::error::Result;
use crate::params::Params;
use crate::plot::{LayerProfileView, ProfileTensor};
use crate::portion::{with_portion, Portion, PortionInfo, RowKey};
use crate::tensor::Tensor;
use names::{GgufModel, GgufSide, Transform};
use serde::{Deserialize, Serialize};

/// The error of a quantized weight against its original.
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DiffMetrics {
    pub mse: f64,
    pub nmse: f64,
    /// `None` when the error is zero.
    pub sqnr_db: Option<f64>,
    pub max_abs_err: f64,
    pub cosine: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imatrix_weighted_mse: Option<f64>,
}

/// Lanes of the partial sums: element `j` of a row goes to lane `j mod 8`, so the loop
/// vectorises; the lanes are added in order 0..8 at the end.
const LANES: usize = 8;

/// The sums every metric comes from, one per lane.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    err2: [f64; LANES],
    x2: [f64; LANES],
    q2: [f64; LANES],
    qx: [f64; LANES],
    max_abs: [f64; LANES],
    weighted: [f64; LANES],
}

impl Sums {
    /// Add element `x`, `q` (weight `w` when `WEIGHTED`) to lane `k`.
    #[inline(always)]
    fn step<const WEIGHTED: bool>(&mut self, k: usize, x: f32, q: f32, w: f32) {
        let (x, q) = (f64::from(x), f64::from(q));
        let e = q - x;
        self.err2[k] += e * e;
        self.x2[k] += x * x;
        self.q2[k] += q * q;
        self.qx[k] += q * x;
        let a = e.abs();
        self.max_abs[k] = if a > self.max_abs[k] {
            a
        } else {
            self.max_abs[k]
        };
        if WEIGHTED {
            self.weighted[k] += f64::from(w) * e * e;
        }
    }

    /// Elements `x[k]`, `q[k]` (weights `w[k]` when `WEIGHTED`) into lanes `k`: [`Sums::step`]
    /// for each, written one operation across the eight lanes at a time so that each becomes
    /// one vector operation.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // lane by lane, as the vectoriser packs it
    fn group<const WEIGHTED: bool>(
        &mut self,
        x: &[f32; LANES],
        q: &[f32; LANES],
        w: &[f32; LANES],
    ) {
        let x = x.map(f64::from);
        let q = q.map(f64::from);
        let mut e = [0.0f64; LANES];
        for k in 0..LANES {
            e[k] = q[k] - x[k];
        }
        for k in 0..LANES {
            self.err2[k] += e[k] * e[k];
        }
        for k in 0..LANES {
            self.x2[k] += x[k] * x[k];
        }
        for k in 0..LANES {
            self.q2[k] += q[k] * q[k];
        }
        for k in 0..LANES {
            self.qx[k] += q[k] * x[k];
        }
        for k in 0..LANES {
            let a = e[k].abs();
            self.max_abs[k] = if a > self.max_abs[k] {
                a
            } else {
                self.max_abs[k]
            };
        }
        if WEIGHTED {
            for k in 0..LANES {
                self.weighted[k] += f64::from(w[k]) * e[k] * e[k];
            }
        }
    }

    /// One row (`w` its columns' weights, read only when `WEIGHTED`).
    #[inline(always)]
    fn add_row<const WEIGHTED: bool>(&mut self, x: &[f32], q: &[f32], w: &[f32]) {
        let n = x.len().min(q.len());
        let body = n / LANES * LANES;
        let no_weights = [0.0f32; LANES];
        let weights = if WEIGHTED { w } else { &[] };
        let mut weights = crate::lanes::eights(weights);
        for (xc, qc) in crate::lanes::eights(&x[..body]).zip(crate::lanes::eights(&q[..body])) {
            let wc = weights.next().unwrap_or(&no_weights);
            self.group::<WEIGHTED>(xc, qc, wc);
        }
        for j in body..n {
            let wj = if WEIGHTED { w[j] } else { 0.0 };
            self.step::<WEIGHTED>(j - body, x[j], q[j], wj);
        }
    }

    /// Every row of `original`/`quantized` (rows of `columns` values).
    #[inline(always)]
    fn add_rows(&mut self, original: &[f32], quantized: &[f32], columns: usize, w: Option<&[f32]>) {
        let n = original.len().min(quantized.len());
        let mut start = 0;
        while start < n {
            let end = (start + columns).min(n);
            let (x, q) = (&original[start..end], &quantized[start..end]);
            match w {
                Some(w) => self.add_row::<true>(x, q, w),
                None => self.add_row::<false>(x, q, &[]),
            }
            start = end;
        }
    }

    /// [`Sums::add_rows`] compiled for the widest vectors the CPU has.
    fn add_rows_dispatch(
        &mut self,
        original: &[f32],
        quantized: &[f32],
        columns: usize,
        w: Option<&[f32]>,
    ) {
        crate::simd::with_wide_vectors(
            #[inline(always)]
            || self.add_rows(original, quantized, columns, w),
        )
    }

    /// The lanes added in order 0..8: `(Σe², Σx², Σq², Σqx, max|e|, Σwe²)`.
    fn total(&self) -> (f64, f64, f64, f64, f64, f64) {
        let sum = |a: &[f64; LANES]| a.iter().fold(0.0, |s, &v| s + v);
        let max_abs = self.max_abs.iter().fold(0.0f64, |m, &v| m.max(v));
        (
            sum(&self.err2),
            sum(&self.x2),
            sum(&self.q2),
            sum(&self.qx),
            max_abs,
            sum(&self.weighted),
        )
    }
}

/// Compare `quantized` with `original` (same length, C order, rows of `columns` values);
/// `importance` (one weight per column) adds the imatrix-weighted error. Sums are float64 in
/// eight lanes (element `j` of a row in lane `j mod 8`), added in lane order.
pub fn measure(
    original: &[f32],
    quantized: &[f32],
    columns: usize,
    importance: Option<&[f32]>,
) -> DiffMetrics {
    let columns = columns.max(1);
    let importance = importance.filter(|w| w.len() == columns);
    let mut s = Sums::default();
    s.add_rows_dispatch(original, quantized, columns, importance);
    let (err2, x2, q2, qx, max_abs, weighted) = s.total();
    let n = original.len().max(1) as f64;
    let rows = (original.len() / columns) as f64;
    DiffMetrics {
        mse: err2 / n,
        nmse: err2 / x2,
        sqnr_db: (err2 > 0.0).then(|| 10.0 * (x2 / err2).log10()),
        max_abs_err: max_abs,
        cosine: qx / (q2 * x2).sqrt(),
        imatrix_weighted_mse: importance.map(|w| {
            let total: f64 = w.iter().map(|&v| f64::from(v)).sum();
            weighted / (total * rows)
        }),
    }
}

/// The round-to-nearest comparison of one row.
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RtnResult {
    /// The codec applied (its label).
    pub format: String,
    pub metrics: DiffMetrics,
    /// True when round-to-nearest stores exactly the quantized weight's bits: no algorithm
    /// (GPTQ, AWQ, an importance matrix) changed this weight, and the metrics are the same.
    #[serde(default)]
    pub identical: bool,
}

/// One pair of weights.
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtn_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Position of the original weight in its checkpoint's weights (the layer profile's
    /// order), so that a report read back draws the same profile.
    #[serde(default)]
    pub position: usize,
    /// What quantization did to this weight, in words, from its metrics and round-to-nearest's
    /// ([`crate::diagnosis::diagnose_pair`]); `None` when the pair could not be compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub diagnosis: Option<String>,
}

/// Weights found on one side only.
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Unpaired {
    pub original: Vec<String>,
    pub quantized: Vec<String>,
}

/// One thing wrong with the quantized checkpoint.
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LintItem {
    pub tensor: String,
    /// `missing_scale`, `zero_scale`, `nonfinite_scale`, `saturated_scale`, `unquantized`,
    /// `shape`, `unreadable`, `nonfinite`, `layout`.
    pub kind: &'static str,
    pub message: String,
}

/// The whole comparison.
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
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
        layer_profile(&self.pairs, None)
    }
}

/// The layer profile of `rows` (any order): SQNR of the quantized weight and of
/// round-to-nearest, in the original checkpoint's order, emphasising the row whose original
/// weight is at `highlighted` (its [`DiffRow::position`]).
pub fn layer_profile(rows: &[DiffRow], highlighted: Option<usize>) -> LayerProfileView {
    let mut rows: Vec<&DiffRow> = rows.iter().collect();
    rows.sort_by_key(|r| r.position);
    LayerProfileView {
        methods: vec!["quantized".into(), "round-to-nearest".into()],
        highlighted: highlighted.and_then(|p| rows.iter().position(|r| r.position == p)),
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
    }
}

/// One side of a diff: a checkpoint's catalogue, its weights under its layout, and its GGUF
/// model facts when it is a GGUF file. Pure data: the host reads the bytes.
#[derive(Debug, Clone)]
pub struct Side {
    pub catalog: Catalog,
    pub layout: Layout,
    pub gguf: Option<GgufModel>,
}

impl Side {
    /// A side from its catalogue and configuration files; `gguf_header` is the first bytes of
    /// its GGUF file (the whole header), if it is one.
    pub fn new(mut catalog: Catalog, configs: &Configs, gguf_header: Option<&[u8]>) -> Side {
        let mut layout = crate::checkpoint::layouts::weights(&catalog, configs);
        let gguf = gguf_header
            .and_then(|h| crate::checkpoint::gguf::metadata(h).ok())
            .and_then(|kv| GgufModel::from_metadata(&kv));
        if gguf.is_some() {
            experts::split_stacked(&mut catalog, &mut layout);
        }
        Side {
            catalog,
            layout,
            gguf,
        }
    }

    /// The codec (id and parameters) `weight` is stored with, if any.
    pub fn codec(&self, weight: &Weight) -> Option<(String, Params)> {
        match &weight.source {
            WeightSource::Coded { codec, params, .. } => Some((codec.clone(), params.clone())),
            WeightSource::Entry(i) => match &self.catalog.entries.get(*i)?.storage {
                Storage::Coded { codec, .. } => Some((codec.clone(), Params::new())),
                _ => None,
            },
        }
    }
}

/// Which side of a diff (`0` the original, `1` the quantized checkpoint).
pub type SideIndex = usize;

/// The bytes of one entry a pair needs: side, entry index, file index and byte range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Need {
    pub side: SideIndex,
    pub entry: usize,
    pub file: usize,
    pub start: u64,
    pub end: u64,
}

/// One compared pair, with its lint.
#[derive(Debug, Clone, PartialEq)]
pub struct PairOutcome {
    pub row: DiffRow,
    pub lint: Vec<LintItem>,
}

/// A diff to run: the two sides paired. The host reads each pair's [`DiffPlan::needs`] and
/// hands them to [`DiffPlan::compare`], in any order and on any thread, then puts the outcomes
/// together with [`DiffPlan::finish`].
#[derive(Debug, Clone)]
pub struct DiffPlan {
    pub original: Side,
    pub quantized: Side,
    pub pairs: Vec<names::Pair>,
    unpaired: Unpaired,
    gguf_side: Option<GgufSide>,
    importance: Option<Importance>,
    quantized_checkpoint: bool,
}

impl DiffPlan {
    /// Pair `quantized`'s weights with `original`'s.
    pub fn new(original: Side, quantized: Side, importance: Option<Importance>) -> DiffPlan {
        let o_names: Vec<&str> = original
            .layout
            .weights
            .iter()
            .map(|w| w.name.as_str())
            .collect();
        let q_names: Vec<&str> = quantized
            .layout
            .weights
            .iter()
            .map(|w| w.name.as_str())
            .collect();
        let gguf = match (&original.gguf, &quantized.gguf) {
            (_, Some(m)) => Some((m, GgufSide::Quantized)),
            (Some(m), None) => Some((m, GgufSide::Original)),
            (None, None) => None,
        };
        let mut pairing = names::pair(&o_names, &q_names, gguf);
        let sides = [&original.layout, &quantized.layout];
        names::by_position(&mut pairing, |side, i| {
            let layout = sides[side];
            layout
                .positions
                .get(&layout.weights[i].name)
                .map(String::as_str)
        });
        let unpaired = Unpaired {
            original: pairing
                .unpaired_original
                .iter()
                .map(|&i| original.layout.weights[i].name.clone())
                .collect(),
            quantized: pairing
                .unpaired_quantized
                .iter()
                .map(|&i| quantized.layout.weights[i].name.clone())
                .collect(),
        };
        let gguf_side = gguf.map(|(_, s)| s);
        let quantized_checkpoint = lint::is_quantized(&quantized.layout);
        // Pairs in the order of the original's bytes in its files: a portion of the pairs
        // (`crate::portion`) is then one stretch of each file, which a host reading through a
        // window (the page's workers) reads once.
        let mut pairs = pairing.pairs;
        let stored_at = |w: usize| {
            original.layout.weights[w]
                .entries()
                .into_iter()
                .filter_map(|i| original.catalog.entries.get(i))
                .map(|e| (e.file, e.range.start))
                .min()
        };
        pairs.sort_by_cached_key(|p| (stored_at(p.original), p.original));
        DiffPlan {
            pairs,
            unpaired,
            gguf_side,
            importance,
            quantized_checkpoint,
            original,
            quantized,
        }
    }

    fn side(&self, side: SideIndex) -> &Side {
        if side == 0 {
            &self.original
        } else {
            &self.quantized
        }
    }

    /// The entries pair `k` reads, original first.
    pub fn needs(&self, k: usize) -> Vec<Need> {
        let Some(pair) = self.pairs.get(k) else {
            return Vec::new();
        };
        [(0, pair.original), (1, pair.quantized)]
            .into_iter()
            .flat_map(|(side, w)| {
                let s = self.side(side);
                s.layout.weights[w]
                    .entries()
                    .into_iter()
                    .filter_map(move |i| {
                        // An entry that cannot be read is not asked for; reading the weight
                        // reports its problem.
                        let e = s.catalog.entries.get(i).filter(|e| e.problem.is_none())?;
                        Some(Need {
                            side,
                            entry: i,
                            file: e.file,
                            start: e.range.start,
                            end: e.range.end,
                        })
                    })
            })
            .collect()
    }

    /// Compare pair `k`, reading each entry with `bytes_of(side, entry)` (exactly the bytes
    /// of the entry's range).
    pub fn compare<'b>(
        &self,
        k: usize,
        bytes_of: &mut dyn FnMut(SideIndex, &Entry) -> Result<EntryBytes<'b>>,
    ) -> PairOutcome {
        let pair = &self.pairs[k];
        let (ow, qw) = (
            &self.original.layout.weights[pair.original],
            &self.quantized.layout.weights[pair.quantized],
        );
        let forward = self.gguf_side == Some(GgufSide::Original);
        let imatrix = self.importance.as_ref().and_then(|im| {
            im.of(&qw.name).or_else(|| {
                let arch = self
                    .quantized
                    .gguf
                    .as_ref()
                    .or(self.original.gguf.as_ref())
                    .map_or("", |m| m.architecture.as_str());
                names::gguf_name(arch, &ow.name).and_then(|g| im.of(&g))
            })
        });
        let mut scale_lint = Vec::new();
        let row = {
            let mut read = |side: SideIndex, w: &Weight| {
                let s = self.side(side);
                read_weight_stored(&s.catalog, w, &mut |e| bytes_of(side, e))
            };
            let mut row = compare(
                &mut read,
                self.quantized.codec(qw),
                ow,
                qw,
                pair.transform,
                forward,
                imatrix,
            );
            if row.error.is_none() {
                scale_lint = self.lint_scales(qw, &mut |e| bytes_of(1, e));
            }
            row.position = pair.original;
            row
        };
        let mut lint = scale_lint;
        lint.extend(lint::of_pair(ow, qw, &row, self.quantized_checkpoint));
        PairOutcome { row, lint }
    }

    /// What pair `k` looks like up close ([`view::tensor_view`]): both weights' values, the
    /// error's distribution and the error per block of the quantized weight's format, reading
    /// each entry with `bytes_of(side, entry)` as [`DiffPlan::compare`] does.
    pub fn tensor_view<'b>(
        &self,
        k: usize,
        bytes_of: &mut dyn FnMut(SideIndex, &Entry) -> Result<EntryBytes<'b>>,
    ) -> Result<view::DiffTensorView> {
        let pair = self
            .pairs
            .get(k)
            .ok_or_else(|| crate::error::Error::input(format!("no pair {k}")))?;
        let (ow, qw) = (
            &self.original.layout.weights[pair.original],
            &self.quantized.layout.weights[pair.quantized],
        );
        let forward = self.gguf_side == Some(GgufSide::Original);
        let mut read = |side: SideIndex, w: &Weight| {
            let s = self.side(side);
            read_weight_stored(&s.catalog, w, &mut |e| bytes_of(side, e))
        };
        let (x, q, _) = read_pair(&mut read, ow, qw, pair.transform, forward)
            .map_err(|e| crate::error::Error::input(format!("{}: {e}", ow.name)))?;
        let columns = ow.shape.last().copied().unwrap_or(1);
        Ok(view::tensor_view(
            view::PairNames {
                original: &ow.name,
                quantized: &qw.name,
                format: &qw.format,
            },
            &ow.shape,
            &x.data,
            &q,
            columns,
            qw.block,
        ))
    }

    /// The lint of the stored scale arrays of quantized weight `weight`.
    fn lint_scales<'b>(
        &self,
        weight: &Weight,
        bytes_of: &mut dyn FnMut(&Entry) -> Result<EntryBytes<'b>>,
    ) -> Vec<LintItem> {
        let WeightSource::Coded { codec, parts, .. } = &weight.source else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in parts {
            let is_scale =
                (p.part.contains("scale") || p.part.contains("absmax")) && !p.part.contains("zero");
            let PartFrom::Entry(i) = p.from else {
                continue;
            };
            let Some(entry) = self.quantized.catalog.entries.get(i).filter(|_| is_scale) else {
                continue;
            };
            let EntryDType::Known(dtype) = entry.dtype else {
                continue;
            };
            let values = bytes_of(entry).and_then(|b| decode_entry(entry, &b));
            if let Ok(values) = values {
                out.extend(lint::of_scales(
                    &weight.name,
                    p.part,
                    codec,
                    dtype,
                    &values.data,
                ));
            }
        }
        out
    }

    /// The pairs of `portion`: the pairs in pairing order split into contiguous portions
    /// balanced by their elements ([`Portion::range`]), the same on every host.
    pub fn portion_range(&self, portion: Portion) -> std::ops::Range<usize> {
        let elements: Vec<u64> = self
            .pairs
            .iter()
            .map(|p| self.original.layout.weights[p.original].elements() as u64)
            .collect();
        portion.range(&elements)
    }

    /// The leading lint items of every report, whichever pairs it holds: the checkpoints'
    /// layout warnings and unreadable files.
    pub fn shared_lint(&self) -> usize {
        self.finish(Vec::new(), Vec::new()).lint.len()
    }

    /// The `diff --json` document of portion `portion` ([`crate::portion`]): `report` (the
    /// portion's pairs, finished by [`DiffPlan::finish`]) with its `portion`; `imatrix` names
    /// the importance matrix used, if any.
    pub fn portion_document(
        &self,
        report: &DiffReport,
        portion: Portion,
        imatrix: Option<String>,
    ) -> serde_json::Value {
        let range = self.portion_range(portion);
        let info = PortionInfo {
            index: portion.index,
            count: portion.count,
            command: "diff".into(),
            files: report.files.clone(),
            settings: imatrix.into_iter().collect(),
            items: self.pairs.len(),
            range: [range.start, range.end],
            shared_lint: self.shared_lint(),
            keys: report
                .pairs
                .iter()
                .map(|row| RowKey::of_diff(rank_key(row)))
                .collect(),
        };
        with_portion(serde_json::to_value(report).unwrap_or_default(), &info)
    }

    /// Put the outcomes of every pair together: ranked rows, lint, unpaired weights.
    pub fn finish(&self, outcomes: Vec<PairOutcome>, files: Vec<String>) -> DiffReport {
        let mut report = DiffReport {
            files,
            unpaired: self.unpaired.clone(),
            ..DiffReport::default()
        };
        for w in &self.quantized.layout.warnings {
            report.lint.push(LintItem {
                tensor: String::new(),
                kind: "layout",
                message: w.clone(),
            });
        }
        for side in [&self.original, &self.quantized] {
            for e in &side.catalog.load_errors {
                report.lint.push(LintItem {
                    tensor: String::new(),
                    kind: "unreadable",
                    message: format!("{}: {}", e.file, e.error),
                });
            }
        }
        for o in outcomes {
            report.pairs.push(o.row);
            report.lint.extend(o.lint);
        }
        rank(&mut report.pairs);
        report
    }
}

/// A row's place in the worst-first order: its NMSE (`None`: no result, or NaN) and its
/// position in the original checkpoint.
pub type RankKey = (Option<f64>, usize);

/// The [`RankKey`] of `row`.
pub fn rank_key(row: &DiffRow) -> RankKey {
    (
        row.metrics.map(|m| m.nmse).filter(|v| !v.is_nan()),
        row.position,
    )
}

/// Worst first: largest NMSE, then rows without a result, ties in checkpoint order.
pub fn rank_order(a: RankKey, b: RankKey) -> std::cmp::Ordering {
    match (a.0, b.0) {
        (Some(x), Some(y)) => y.total_cmp(&x).then(a.1.cmp(&b.1)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.1.cmp(&b.1),
    }
}

/// Rows worst first ([`rank_order`]).
fn rank(rows: &mut [DiffRow]) {
    rows.sort_by(|a, b| rank_order(rank_key(a), rank_key(b)));
}

/// Decodes a weight of a side: its values, and what its codec decoded (`None` for a plain
/// dtype).
type ReadWeight<'r> = dyn FnMut(SideIndex, &Weight) -> Result<(Tensor, Option<Encoded>)> + 'r;

/// The two weights of a pair as they are compared: the original, and the quantized weight
/// decoded and put in the original's order (`forward`: the permutation is applied rather than
/// undone). The error says why they cannot be.
fn read_pair(
    read: &mut ReadWeight<'_>,
    ow: &Weight,
    qw: &Weight,
    transform: Transform,
    forward: bool,
) -> std::result::Result<(Tensor, Vec<f32>, Option<Encoded>), String> {
    if ow.elements() != qw.elements() {
        return Err(format!(
            "shapes disagree: the original is {:?}, the quantized weight {:?}",
            ow.shape, qw.shape
        ));
    }
    let (q, stored) = read(1, qw).map_err(|e| e.to_string())?;
    let (x, _) = read(0, ow).map_err(|e| format!("the original cannot be read: {e}"))?;
    let mut q_values = q.data;
    names::apply(transform, &qw.shape, &mut q_values, forward)?;
    Ok((x, q_values, stored))
}

/// Compare one pair; `read(side, weight)` decodes a weight of a side.
fn compare(
    read: &mut ReadWeight<'_>,
    codec: Option<(String, Params)>,
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
        diagnosis: None,
    };
    let (mut x, q_values, stored) = match read_pair(read, ow, qw, transform, forward) {
        Ok(pair) => pair,
        Err(e) => {
            row.error = Some(e);
            return row;
        }
    };
    let columns = ow.shape.last().copied().unwrap_or(1);
    let metrics = measure(&x.data, &q_values, columns, importance);
    row.metrics = Some(metrics);
    drop(q_values);
    // Row-wise block formats are unchanged by the row permutation, so round-to-nearest is
    // computed on the original as it is.
    match rtn::round_to_nearest(codec.as_ref(), &mut x, &qw.shape, stored.as_ref()) {
        Ok(Some(rounded)) => {
            let identical = rounded.values.is_none();
            row.rtn = Some(RtnResult {
                format: rounded.format,
                metrics: match rounded.values {
                    Some(values) => measure(&x.data, &values, columns, importance),
                    None => metrics,
                },
                identical,
            })
        }
        Ok(None) => {}
        Err(e) => row.rtn_error = Some(e.to_string()),
    }
    row.diagnosis = Some(crate::diagnosis::diagnose_pair(
        &row.format,
        row.bits_per_weight,
        &metrics,
        row.rtn.as_ref(),
    ));
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sum of rows fed eight lanes at a time ([`Sums::group`]) is the same bits as the
    /// elements fed one by one ([`Sums::step`]), non-finite values and weights included.
    #[test]
    fn lanes_fed_eight_at_a_time_equal_lanes_fed_one_by_one() {
        let columns = 29;
        let x: Vec<f32> = (0..columns * 5)
            .map(|i| (i as f32 * 0.61).sin() * 7.0)
            .collect();
        let mut q: Vec<f32> = x.iter().map(|v| (v * 2.0).round() / 2.0).collect();
        q[3] = f32::NAN;
        q[40] = f32::INFINITY;
        q[77] = -0.0;
        let w: Vec<f32> = (0..columns).map(|j| 0.25 + j as f32 * 0.5).collect();
        for weights in [None, Some(&w[..])] {
            let mut grouped = Sums::default();
            grouped.add_rows(&x, &q, columns, weights);
            let mut one_by_one = Sums::default();
            for (row_x, row_q) in x.chunks(columns).zip(q.chunks(columns)) {
                for (j, (&a, &b)) in row_x.iter().zip(row_q).enumerate() {
                    let wj = weights.map_or(0.0, |w| w[j]);
                    match weights {
                        Some(_) => one_by_one.step::<true>(j % LANES, a, b, wj),
                        None => one_by_one.step::<false>(j % LANES, a, b, wj),
                    }
                }
            }
            let bits = |s: &Sums| {
                [s.err2, s.x2, s.q2, s.qx, s.max_abs, s.weighted]
                    .map(|lanes| lanes.map(f64::to_bits))
            };
            assert_eq!(bits(&grouped), bits(&one_by_one), "weights {weights:?}");
        }
    }
}
