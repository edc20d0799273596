//! Derivations: the steps and numbers by which an observer reached its quantization parameters,
//! recorded by the code that computes them.
//!
//! A derivation is not a second implementation. The observers' own searches call [`record`] at
//! the points where the framework decides something (the range it observed, each candidate of a
//! search and its loss, the rule that picked one, the formula that turned the range into a scale
//! and a zero point), with the values they are computing anyway. Recording is off unless the
//! caller asked for a derivation ([`capture`], which the driver calls around every search), and
//! then costs nothing but the closures' check.
//!
//! Recording happens on the thread that runs the search and only outside parallel sections: a
//! search evaluates its candidates in parallel and records the table afterwards. [`capture`]
//! gives every search its own recorder (or none), so a task that work-stealing runs on the same
//! thread while another search waits never writes into that search's derivation.
//!
//! The last step of every derivation is the one that formed the report's `scale` and
//! `zero_point`; its values hold them as the report gives them (a test checks this bit for bit for
//! every observer on every golden case).

use crate::qparams::ZeroPoint;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cell::RefCell;
use std::fmt;

/// One step of a derivation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[cfg_attr(target_arch = "wasm32", tsify(missing_as_null))]
pub struct Step {
    /// What the step does, in a few words.
    pub title: String,
    /// The computation in plain notation (`s = (max − min) / (qmax − qmin)`).
    pub formula: String,
    /// The values the step used and produced, in the order the formula reads them.
    #[cfg_attr(target_arch = "wasm32", tsify(type = "Record<string, unknown>"))]
    pub values: Values,
    /// A search's whole candidate table, when the step is a search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub candidates: Option<Candidates>,
    /// The framework's source this step reproduces: file, line and version followed.
    pub source: String,
}

/// The candidates a search evaluated: one row per candidate, in the order the search tried them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct Candidates {
    /// The columns' names: the candidate (a range end, a scale, a bin index…) first, then what
    /// was computed for it (`loss`, …).
    pub columns: Vec<String>,
    /// One row per candidate, each as long as `columns` (a non-finite loss, e.g. an infinite
    /// divergence, is `null` in JSON).
    #[serde(with = "finite_or_null")]
    pub rows: Vec<Vec<f64>>,
    /// The index of the row the search picked.
    pub picked: usize,
    /// The rule that picked it (first minimum, last minimum, patience, early stop…).
    pub rule: String,
    /// Which columns hold each candidate's clipping range, when the candidates are ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub range: Option<RangeColumns>,
    /// Whether the rows are candidates a search weighed (the page draws their losses), rather
    /// than one row per slice.
    #[serde(skip, default = "searched")]
    pub search: bool,
}

fn searched() -> bool {
    true
}

/// The columns of a candidate table that hold each candidate's clipping range `[lo, hi]`:
/// `lo` and `hi`, or `[−hi, hi]` for symmetric candidates (`lo` absent).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct RangeColumns {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub lo: Option<usize>,
    pub hi: usize,
}

impl RangeColumns {
    /// Row `row`'s range.
    pub fn of(&self, row: &[f64]) -> [f64; 2] {
        let hi = row.get(self.hi).copied().unwrap_or(f64::NAN);
        match self.lo {
            Some(lo) => [row.get(lo).copied().unwrap_or(f64::NAN), hi],
            None => [-hi, hi],
        }
    }
}

/// One value of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Int(i64),
    /// A float32 value of the computation, serialised as the report serialises its float32s
    /// (exactly, widened to float64).
    F32(#[serde(serialize_with = "crate::qparams::exact_f32::one")] f32),
    F64(f64),
    Ints(Vec<i64>),
    F32s(#[serde(serialize_with = "crate::qparams::exact_f32::serialize")] Vec<f32>),
    F64s(Vec<f64>),
    Text(String),
    /// What a non-finite number becomes through JSON (`null`).
    Absent,
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v.into())
    }
}
impl From<&[i32]> for Value {
    fn from(v: &[i32]) -> Self {
        Value::Ints(v.iter().map(|&x| x.into()).collect())
    }
}
impl From<f32> for Value {
    fn from(v: f32) -> Self {
        Value::F32(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::F64(v)
    }
}
impl From<Vec<i64>> for Value {
    fn from(v: Vec<i64>) -> Self {
        Value::Ints(v)
    }
}
impl From<Vec<f32>> for Value {
    fn from(v: Vec<f32>) -> Self {
        Value::F32s(v)
    }
}
impl From<&[f32]> for Value {
    fn from(v: &[f32]) -> Self {
        Value::F32s(v.to_vec())
    }
}
impl From<Vec<f64>> for Value {
    fn from(v: Vec<f64>) -> Self {
        Value::F64s(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}

impl fmt::Display for Value {
    /// Numbers as [`crate::plot::fmt_num`] writes them; lists of more than eight values shortened
    /// to their first and last three.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list<T: Copy>(
            f: &mut fmt::Formatter<'_>,
            items: &[T],
            one: impl Fn(T) -> String,
        ) -> fmt::Result {
            let shown: Vec<String> = if items.len() > 8 {
                let head = items[..3].iter().map(|&v| one(v));
                let tail = items[items.len() - 3..].iter().map(|&v| one(v));
                head.chain(std::iter::once("…".to_string()))
                    .chain(tail)
                    .collect()
            } else {
                items.iter().map(|&v| one(v)).collect()
            };
            write!(f, "[{}]", shown.join(", "))?;
            if items.len() > 8 {
                write!(f, " ({} values)", items.len())?;
            }
            Ok(())
        }
        let num = crate::plot::fmt_num;
        // Integers with the minus sign `fmt_num` writes.
        let int = |v: i64| v.to_string().replace('-', "−");
        match self {
            Value::Bool(v) => write!(f, "{v}"),
            Value::Int(v) => f.write_str(&int(*v)),
            Value::F32(v) => f.write_str(&num(f64::from(*v))),
            Value::F64(v) => f.write_str(&num(*v)),
            Value::Ints(v) => list(f, v, int),
            Value::F32s(v) => list(f, v, |x| num(f64::from(x))),
            Value::F64s(v) => list(f, v, num),
            Value::Text(v) => f.write_str(v),
            Value::Absent => f.write_str("—"),
        }
    }
}

/// A step's values: named, in order, serialised as a JSON object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Values(pub Vec<(String, Value)>);

impl Values {
    /// The value named `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

impl Serialize for Values {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Values {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Values;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of named values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Values, A::Error> {
                let mut values = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    values.push(entry);
                }
                Ok(Values(values))
            }
        }
        d.deserialize_map(InOrder)
    }
}

impl Step {
    /// A step titled `title` computing `formula`, reproducing `source`.
    pub fn new(title: impl Into<String>, formula: impl Into<String>, source: &str) -> Step {
        Step {
            title: title.into(),
            formula: formula.into(),
            values: Values::default(),
            candidates: None,
            source: source.to_string(),
        }
    }

    /// With the value `name`.
    pub fn value(mut self, name: &str, value: impl Into<Value>) -> Step {
        self.values.0.push((name.to_string(), value.into()));
        self
    }

    /// With a search's candidate table.
    pub fn candidates(mut self, candidates: Candidates) -> Step {
        self.candidates = Some(candidates);
        self
    }
}

impl From<&ZeroPoint> for Value {
    fn from(zp: &ZeroPoint) -> Self {
        match zp {
            ZeroPoint::Int(v) => Value::Ints(v.clone()),
            ZeroPoint::Float(v) => Value::F32s(v.clone()),
        }
    }
}

/// Record the step that forms the report's `scale` and `zero_point` from ranges `min`..`max`
/// (one per slice): `step` with the ranges and its own inputs, to which this adds `scale` and
/// `zero_point` as the report gives them. With more than one slice, a summary of the slices
/// comes first (see [`record_slices`]).
pub fn record_qparams(
    step: impl FnOnce() -> Step,
    min: &[f32],
    max: &[f32],
    scale: &[f32],
    zero_point: &ZeroPoint,
) {
    if !recording() {
        return;
    }
    let step = step();
    if scale.len() > 1 {
        record_slices(min, max, scale, &step.source);
    }
    record(|| step.value("scale", scale).value("zero_point", zero_point));
}

/// How many thresholds the comparison with the best clipping tries.
const OPTIMUM_POINTS: usize = 400;

/// The step that compares the chosen range with the best clipping threshold on this data (the
/// error-versus-clipping curve's minimum, [`crate::curve`], on the observer's own integer grid):
/// for per-tensor integer qparams with measured metrics; `None` otherwise.
pub fn best_clipping_step(
    q: &crate::qparams::QParams,
    metrics: Option<&crate::quant::QdqMetrics>,
    batches: &[&[f32]],
) -> Option<Step> {
    use crate::curve::{histogram_of, CurveScheme, DEFAULT_BINS};
    let (qmin, qmax) = q.grid.int_range()?;
    let metrics = metrics?;
    let ZeroPoint::Int(zero_points) = &q.zero_point else {
        return None;
    };
    let ([scale], [zero_point]) = (&q.scale[..], &zero_points[..]) else {
        return None;
    };
    let (lo, hi) = q.representable_range(0)?;
    let symmetric =
        *zero_point == (qmin + qmax + 1).div_euclid(2) && (lo + hi).abs() <= f64::from(*scale);
    let scheme = if symmetric {
        CurveScheme::Symmetric
    } else {
        CurveScheme::Affine
    };
    let histogram = histogram_of(batches, DEFAULT_BINS).ok()?;
    let (points, best) = histogram.points_on(qmin, qmax, scheme, OPTIMUM_POINTS);
    let best = &points[best?];
    Some(
        Step::new(
            "Against the best single-threshold clipping on this tensor",
            "the error-versus-clipping curve: for thresholds t up to max |x|, the same integer grid fitted \
             to the range clipped at t (symmetric: [−t, t]; affine: [max(min, −t), min(max, t)] ∪ {0}), \
             its MSE from a 65,536-bin moment histogram (exact up to bins straddling a rounding boundary)",
            "quantscope's error-versus-clipping curve (src/curve.rs), not a framework's",
        )
        .value("scheme", if symmetric { "symmetric" } else { "affine" })
        .value("this grid's range", vec![lo, hi])
        .value("this range's MSE", metrics.mse)
        .value("best threshold", best.threshold)
        .value("best range", vec![best.grid_min, best.grid_max])
        .value("best MSE", best.mse)
        .value("MSE / best MSE", metrics.mse / best.mse)
        .value("verdict", verdict(metrics.mse, best.mse)),
    )
}

/// How the chosen range's MSE compares with the best single-threshold clipping's, in words.
fn verdict(mse: f64, best: f64) -> String {
    let num = crate::plot::fmt_num;
    if !(best > 0.0 && mse.is_finite()) {
        return "no comparison: the best clipping has no error".to_string();
    }
    let ratio = mse / best;
    if ratio < 1.0 {
        format!(
            "{}% below the best single threshold: this range clips the two sides differently, \
             which one threshold cannot",
            num((1.0 - ratio) * 100.0)
        )
    } else if ratio <= 1.01 {
        "within 1% of the best single threshold".to_string()
    } else {
        format!(
            "{}× the MSE of the best single threshold (t = its best threshold above)",
            num(ratio)
        )
    }
}

/// Insert `step` before the last step of `steps` (which forms the scale and zero point and stays
/// last).
pub fn insert_before_last(steps: &mut Vec<Step>, step: Step) {
    let at = steps.len().saturating_sub(1);
    steps.insert(at, step);
}

/// How many of the widest slices a per-slice summary lists in full.
const WIDEST_SLICES: usize = 3;

/// The summary of per-slice ranges: how many slices, the spread of their scales, and the widest
/// slices (largest `max − min`) in full.
pub fn record_slices(min: &[f32], max: &[f32], scale: &[f32], source: &str) {
    record(|| {
        let width = |i: usize| f64::from(max[i]) - f64::from(min[i]);
        let n = min.len().min(max.len()).min(scale.len());
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| width(b).total_cmp(&width(a)).then(a.cmp(&b)));
        order.truncate(WIDEST_SLICES);
        let mut sorted: Vec<f32> = scale.to_vec();
        sorted.sort_by(f32::total_cmp);
        let mut step = Step::new(
            "One range per slice",
            "each slice (channel, group or block) gets its own range and scale",
            source,
        )
        .value("slices", n);
        if let (Some(&lo), Some(&hi)) = (sorted.first(), sorted.last()) {
            step = step
                .value("smallest scale", lo)
                .value("median scale", sorted[sorted.len() / 2])
                .value("largest scale", hi);
        }
        for i in order {
            step = step.value(
                &format!("slice {i}: min, max, scale"),
                vec![min[i], max[i], scale[i]],
            );
        }
        step
    });
}

impl Candidates {
    /// A table of `columns`, its `rows`, the `picked` row and the `rule` that picked it.
    pub fn new(columns: &[&str], rows: Vec<Vec<f64>>, picked: usize, rule: &str) -> Candidates {
        Candidates {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows,
            picked,
            rule: rule.to_string(),
            range: None,
            search: true,
        }
    }

    /// One row per slice (sub-block, block) rather than candidates a search weighed: the page
    /// draws no loss chart for it.
    pub fn per_slice(mut self) -> Candidates {
        self.search = false;
        self
    }

    /// Each candidate is the clipping range `[row[lo], row[hi]]`.
    pub fn ranges_in(mut self, lo: usize, hi: usize) -> Candidates {
        self.range = Some(RangeColumns { lo: Some(lo), hi });
        self
    }

    /// Each candidate is the symmetric clipping range `[−row[amax], row[amax]]`.
    pub fn symmetric_ranges_in(mut self, amax: usize) -> Candidates {
        self.range = Some(RangeColumns { lo: None, hi: amax });
        self
    }
}

/// Rows of numbers with NaN and ±Inf written as `null` (JSON has no such numbers) and read back
/// as NaN.
mod finite_or_null {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(rows: &[Vec<f64>], s: S) -> Result<S::Ok, S::Error> {
        let rows: Vec<Vec<Option<f64>>> = rows
            .iter()
            .map(|row| row.iter().map(|&v| v.is_finite().then_some(v)).collect())
            .collect();
        rows.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<f64>>, D::Error> {
        let rows = Vec::<Vec<Option<f64>>>::deserialize(d)?;
        Ok(rows
            .into_iter()
            .map(|row| row.into_iter().map(|v| v.unwrap_or(f64::NAN)).collect())
            .collect())
    }
}

thread_local! {
    /// The steps recorded by the search running on this thread, when its caller asked for them.
    static RECORDER: RefCell<Option<Vec<Step>>> = const { RefCell::new(None) };
}

/// True when the search running on this thread is recording its derivation: a search checks it
/// before assembling a candidate table.
pub fn recording() -> bool {
    RECORDER.with(|r| r.borrow().is_some())
}

/// Record the step `step()` builds, when the search running on this thread is recording.
pub fn record(step: impl FnOnce() -> Step) {
    RECORDER.with(|r| {
        if let Some(steps) = r.borrow_mut().as_mut() {
            steps.push(step());
        }
    });
}

/// Run `f` with its own recorder (with `enabled`) or none, and return its result with the steps
/// it recorded. The recorder of any search that was running on this thread is set aside and
/// restored.
pub fn capture<R>(enabled: bool, f: impl FnOnce() -> R) -> (R, Vec<Step>) {
    struct Restore(Option<Vec<Step>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            RECORDER.with(|r| *r.borrow_mut() = outer);
        }
    }
    let outer = RECORDER.with(|r| r.replace(enabled.then(Vec::new)));
    let restore = Restore(outer);
    let result = f();
    let steps = RECORDER.with(|r| r.borrow_mut().take()).unwrap_or_default();
    drop(restore);
    (result, steps)
}

/// A step as the page shows it: every number written by [`crate::plot::fmt_num`], long lists and
/// long candidate tables shortened the way the CLI's text shortens them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct StepView {
    pub title: String,
    pub formula: String,
    /// `[name, value]` pairs, in order.
    pub values: Vec<(String, String)>,
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub candidates: Option<CandidatesView>,
    pub source: String,
}

/// A candidate table as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct CandidatesView {
    pub columns: Vec<String>,
    /// The rows shown: the row's index in the search, its cells, whether it is the pick; `None`
    /// stands for rows left out.
    pub rows: Vec<Option<(usize, Vec<String>, bool)>>,
    /// How many candidates the search evaluated.
    pub total: usize,
    pub picked: usize,
    pub rule: String,
    /// Every candidate's loss, for the chart (`None` for a table of slices).
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub chart: Option<CandidateChart>,
}

/// What the chart of a search draws: every candidate's loss (the table's last column) against
/// the candidate (its range's upper end when the candidates are ranges, else its number), the
/// pick, and the best single clipping threshold on this tensor where it is comparable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct CandidateChart {
    pub x_label: String,
    pub loss_label: String,
    /// `[x, loss]` per candidate, in the order tried (a non-finite loss is `null`).
    #[serde(with = "finite_or_null")]
    pub points: Vec<Vec<f64>>,
    pub picked: usize,
    /// Each candidate's clipping range `[lo, hi]`, when the candidates are ranges (the page
    /// previews it on the histogram).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub ranges: Option<Vec<[f64; 2]>>,
    /// The best single clipping threshold on this tensor (the error-versus-clipping curve's
    /// optimum), when the candidates are ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", tsify(optional))]
    pub optimum: Option<f64>,
}

impl CandidateChart {
    /// The chart of `table`; `optimum` is the best threshold of the derivation's comparison
    /// step, if it has one.
    pub fn of(table: &Candidates, optimum: Option<f64>) -> CandidateChart {
        let loss = |row: &Vec<f64>| row.last().copied().unwrap_or(f64::NAN);
        // Candidates that are thresholds (symmetric ranges `[−t, t]`) are drawn against `t`, on
        // the axis of the best single threshold; two-ended ranges (a search moving both ends)
        // by their number, in the order tried.
        let symmetric = table.range.filter(|r| {
            table.rows.iter().all(|row| {
                let [lo, hi] = r.of(row);
                // (ORT's bin edges are symmetric up to float32 rounding.)
                (lo + hi).abs() <= 1e-4 * (hi - lo) || !(lo.is_finite() && hi.is_finite())
            })
        });
        let (x_label, points) = match &symmetric {
            Some(r) => (
                table.columns.get(r.hi).cloned().unwrap_or_default(),
                table
                    .rows
                    .iter()
                    .map(|row| vec![r.of(row)[1], loss(row)])
                    .collect(),
            ),
            None => (
                "candidate #".to_string(),
                table
                    .rows
                    .iter()
                    .enumerate()
                    .map(|(i, row)| vec![i as f64, loss(row)])
                    .collect(),
            ),
        };
        CandidateChart {
            x_label,
            loss_label: table.columns.last().cloned().unwrap_or_default(),
            points,
            picked: table.picked,
            ranges: table
                .range
                .map(|r| table.rows.iter().map(|row| r.of(row)).collect()),
            optimum: optimum.filter(|_| symmetric.is_some()),
        }
    }
}

/// The view of `steps` (see [`StepView`]).
pub fn view(steps: &[Step]) -> Vec<StepView> {
    let optimum = steps
        .iter()
        .find_map(|s| match s.values.get("best threshold") {
            Some(Value::F64(t)) => Some(*t),
            Some(Value::F32(t)) => Some(*t as f64),
            _ => None,
        });
    steps
        .iter()
        .map(|step| StepView {
            title: step.title.clone(),
            formula: step.formula.clone(),
            values: step
                .values
                .0
                .iter()
                .map(|(n, v)| (n.clone(), v.to_string()))
                .collect(),
            candidates: step.candidates.as_ref().map(|table| {
                let mut rows = Vec::new();
                let mut previous = None;
                for i in shown_rows(table) {
                    if previous.is_some_and(|p: usize| i > p + 1) {
                        rows.push(None);
                    }
                    let cells = table.rows[i]
                        .iter()
                        .map(|&v| crate::plot::fmt_num(v))
                        .collect();
                    rows.push(Some((i, cells, i == table.picked)));
                    previous = Some(i);
                }
                CandidatesView {
                    columns: table.columns.clone(),
                    rows,
                    total: table.rows.len(),
                    picked: table.picked,
                    rule: table.rule.clone(),
                    chart: table.search.then(|| CandidateChart::of(table, optimum)),
                }
            }),
            source: step.source.clone(),
        })
        .collect()
}

/// The rows of a candidate table worth showing: all of them up to twelve, else the first two,
/// the three around the pick on either side and the last two.
fn shown_rows(table: &Candidates) -> Vec<usize> {
    if table.rows.len() <= 12 {
        return (0..table.rows.len()).collect();
    }
    let around = table.picked.saturating_sub(3)..(table.picked + 4).min(table.rows.len());
    let mut shown: Vec<usize> = (0..2).chain(around).collect();
    shown.extend(table.rows.len() - 2..table.rows.len());
    shown.sort_unstable();
    shown.dedup();
    shown
}

/// The text `observe --explain` prints for `steps`: each step's title, formula, values, the
/// candidate table around its pick, and its source.
pub fn to_text(steps: &[Step]) -> String {
    let mut out = String::new();
    for (i, step) in view(steps).iter().enumerate() {
        out.push_str(&format!("  {}. {}\n", i + 1, step.title));
        out.push_str(&format!("     {}\n", step.formula));
        for (name, value) in &step.values {
            out.push_str(&format!("     {name} = {value}\n"));
        }
        if let Some(table) = &step.candidates {
            out.push_str(&format!(
                "     {} candidates; picked #{} by {}\n",
                table.total, table.picked, table.rule
            ));
            out.push_str(&format!("       #  {}\n", table.columns.join("  ")));
            for row in &table.rows {
                match row {
                    None => out.push_str("       …\n"),
                    Some((i, cells, picked)) => {
                        let mark = if *picked { "→" } else { " " };
                        out.push_str(&format!("     {mark} {i:>2}  {}\n", cells.join("  ")));
                    }
                }
            }
        }
        out.push_str(&format!("     source: {}\n", step.source));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_chart_draws_thresholds_against_the_best_one_and_other_candidates_by_number() {
        let rows = vec![
            vec![0.0, 1.0, 5.0],
            vec![1.0, 2.0, 3.0],
            vec![2.0, 3.0, f64::INFINITY],
        ];
        // Symmetric candidates: x is the threshold, the optimum is drawn, ranges are [−t, t].
        let table = Candidates::new(&["bin", "amax", "mse"], rows.clone(), 1, "first minimum")
            .symmetric_ranges_in(1);
        let chart = CandidateChart::of(&table, Some(2.5));
        assert_eq!(chart.x_label, "amax");
        assert_eq!(chart.loss_label, "mse");
        assert_eq!(chart.points[1], vec![2.0, 3.0]);
        assert!(chart.points[2][1].is_infinite());
        assert_eq!(
            chart.ranges.as_deref(),
            Some(&[[-1.0, 1.0], [-2.0, 2.0], [-3.0, 3.0]][..])
        );
        assert_eq!(chart.optimum, Some(2.5));
        // Two-ended ranges: by number, no optimum, the ranges kept for the preview.
        let table =
            Candidates::new(&["min", "max", "loss"], rows.clone(), 0, "greedy").ranges_in(0, 1);
        let chart = CandidateChart::of(&table, Some(2.5));
        assert_eq!(chart.x_label, "candidate #");
        assert_eq!(chart.points[2][0], 2.0);
        assert_eq!(
            chart.ranges.as_deref(),
            Some(&[[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]][..])
        );
        assert_eq!(chart.optimum, None);
        // No ranges: by number, nothing to preview.
        let chart = CandidateChart::of(&Candidates::new(&["k", "loss"], rows, 0, ""), Some(2.5));
        assert_eq!((chart.ranges, chart.optimum), (None, None));
        // A JSON round trip keeps the infinite loss as null → NaN.
        let json = serde_json::to_string(&table).unwrap();
        assert!(json.contains("\"range\":{\"lo\":0,\"hi\":1}"), "{json}");
    }

    #[test]
    fn only_a_capturing_caller_receives_steps_and_nesting_keeps_them_apart() {
        record(|| Step::new("ignored", "", ""));
        let (inner, outer) = capture(true, || {
            record(|| Step::new("outer 1", "", ""));
            let ((), inner) = capture(true, || record(|| Step::new("inner", "", "")));
            let ((), none) = capture(false, || record(|| Step::new("dropped", "", "")));
            assert!(none.is_empty());
            assert!(recording());
            record(|| Step::new("outer 2", "", ""));
            inner
        });
        let titles = |s: &[Step]| s.iter().map(|s| s.title.clone()).collect::<Vec<_>>();
        assert_eq!(titles(&inner), ["inner"]);
        assert_eq!(titles(&outer), ["outer 1", "outer 2"]);
        assert!(!recording());
    }

    #[test]
    fn values_keep_their_order_through_json() {
        let step = Step::new("t", "f", "s")
            .value("zeta", 0.1f32)
            .value("alpha", vec![1i64, 2])
            .value("rule", "first minimum");
        let json = serde_json::to_string(&step).unwrap();
        assert!(json.contains(
            r#""values":{"zeta":0.10000000149011612,"alpha":[1,2],"rule":"first minimum"}"#
        ));
        let back: Step = serde_json::from_str(&json).unwrap();
        let names: Vec<&str> = back.values.0.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha", "rule"]);
    }
}
