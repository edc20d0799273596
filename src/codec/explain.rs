//! Codec derivations: how a number format stored one block of a tensor, recorded by the
//! codec's own quantizer.
//!
//! A codec has no single scale to explain: every block has its own. A derivation therefore
//! follows **one block** (by default the block holding the tensor's value of largest magnitude,
//! the one that sets the hardest scale) through the codec's encoder while
//! [`crate::derivation`] records: the searches the library runs (ggml's `make_qkx_quants`,
//! `make_qx_quants`, `make_qp_quants`, `make_q3_quants`, MX's shared-exponent rule) add their
//! steps with their candidate tables, exactly as they run for the whole tensor. Per-sub-block
//! searches are condensed: the sub-block holding the block's largest |x| in full, the others
//! as one table of their results.
//!
//! Codecs whose encoder runs no search (min–max and absmax scales, casts: `int`, `minifloat`,
//! `half`, `bfp`, bitsandbytes, the checkpoint codecs' round-to-nearest encoders) describe their
//! slices instead ([`Codec::stored_slices`]): which elements share stored numbers, what each
//! slice stores and the rule that formed it. [`explain_stored`] encodes the whole tensor with
//! the codec (the encoding the report measures) and follows the slice holding the largest |x|:
//! its values, its stored numbers beside the min, max and representable range they give, and
//! its elements' codes and decoded values.
//!
//! **What "equals the report" means for a codec.** The last step (`Stored block`) holds what
//! the one-block encoding stored (ggml: the block's bytes and the scales decoded from them; MX:
//! the E8M0 scale code and the element codes) and the values they decode to. A test checks
//! that these are, bit for bit, the bytes and values of the same block in the encoding of the
//! whole tensor (what `quantize` and the formats table report), for every codec that explains
//! and every golden ggml case.

use super::compare::clean;
use super::{find, Codec, Encoded, Stored};
use crate::derivation::{Candidates, Step, Value};
use crate::error::{Error, Result};
use crate::params::Params;
use crate::qdq::Slicing;
use crate::tensor::Tensor;
use serde::Serialize;

/// A codec's derivation of one block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockDerivation {
    /// The format's label (`ggml.Q4_K`, `mxfp4_e2m1`, …).
    pub format: String,
    /// The block followed (its index in the codec's block order).
    pub block: usize,
    /// How many blocks the tensor has.
    pub blocks: usize,
    pub steps: Vec<Step>,
}

/// The derivation of block `block` (default: the one holding the value of largest magnitude)
/// of `t` under format `id` with `params`.
pub fn explain(
    id: &str,
    params: &Params,
    t: &Tensor,
    block: Option<usize>,
) -> Result<BlockDerivation> {
    let codec = find(id)?.build(params, &t.shape)?;
    explain_codec(codec.as_ref(), t, block)
}

/// [`explain`] with a configured codec.
pub fn explain_codec(
    codec: &dyn Codec,
    t: &Tensor,
    block: Option<usize>,
) -> Result<BlockDerivation> {
    let clean = clean(t)?;
    let (index, blocks, steps) = codec.explain_block(&clean, block)?;
    Ok(BlockDerivation {
        format: codec.label(),
        block: index,
        blocks,
        steps,
    })
}

/// The slices of a codec whose encoder runs no search: which elements share stored numbers,
/// what each slice stores (read back from the encoding) and the rule that formed them.
#[derive(Debug, Clone)]
pub struct StoredSlices {
    /// Which slice each element belongs to.
    pub slicing: Slicing,
    /// How many slices.
    pub count: usize,
    /// What each slice stores, one column per stored number (`scale`, `zero_point`, `absmax`,
    /// …), one entry per slice.
    pub columns: Vec<(String, Vec<f64>)>,
    /// Each element's stored code, where the codes are packed (the codes of a part with one
    /// entry per element are read from it); every packed code fits 16 bits.
    pub codes: Option<Vec<i16>>,
    /// How a slice's stored numbers are formed from its values, and how an element is stored
    /// and decoded.
    pub rule: String,
    /// The library source the rule reproduces.
    pub source: String,
}

impl StoredSlices {
    /// `count` slices cut by `slicing`, formed by `rule` (from `source`).
    pub fn new(slicing: Slicing, count: usize, rule: impl Into<String>, source: &str) -> Self {
        StoredSlices {
            slicing,
            count,
            columns: Vec::new(),
            codes: None,
            rule: rule.into(),
            source: source.to_string(),
        }
    }

    /// With the stored number `name` of every slice.
    pub fn column(mut self, name: &str, values: impl IntoIterator<Item = f64>) -> Self {
        self.columns
            .push((name.to_string(), values.into_iter().collect()));
        self
    }

    /// With each element's code (for codes packed several per stored word).
    pub fn codes(mut self, codes: Vec<i16>) -> Self {
        self.codes = Some(codes);
        self
    }
}

/// The error of a codec that neither records a search nor describes its slices.
pub fn no_derivation(label: &str) -> Error {
    Error::input(format!(
        "{label} has no derivation yet: its encoder neither records a search nor describes its slices"
    ))
}

/// How many elements of a slice a derivation lists (a slice can be a whole tensor).
const LISTED: usize = 1024;

/// The derivation of a codec that describes its slices ([`Codec::stored_slices`]): the whole of
/// `clean` encoded by `codec` (the encoding the report measures), and slice `block` (default: the
/// one holding the largest |x|) followed through it.
pub fn explain_stored<C: Codec + ?Sized>(
    codec: &C,
    clean: &Tensor,
    block: Option<usize>,
) -> Result<(usize, usize, Vec<Step>)> {
    let encoded = codec.encode(clean)?;
    let slices = codec
        .stored_slices(&encoded)?
        .ok_or_else(|| no_derivation(&codec.label()))?;
    let decoded = codec.decode(&encoded)?.data;
    let ranges = codec.ranges(&encoded)?;
    let largest = slices.slicing.slice_of(largest_magnitude(&clean.data));
    let index = pick_block(block, largest, slices.count)?;
    // One pass over the slice's elements for what the steps say of all of them (a slice can be
    // the whole tensor: its members are not collected), a second for the elements listed.
    let of_slice = || (0..clean.data.len()).filter(|&i| slices.slicing.slice_of(i) == index);
    let mut seen = SliceSummary::default();
    for i in of_slice() {
        let (lo, hi) = ranges.of_element(i);
        seen.add(i, clean.data[i], decoded[i], lo, hi);
    }
    // A slice of a whole tensor or channel is listed in part: the elements around its largest |x|.
    let from = seen
        .largest_at
        .saturating_sub(LISTED / 2)
        .min(seen.count.saturating_sub(LISTED));
    let listed: Vec<usize> = of_slice().skip(from).take(LISTED).collect();
    let x: Vec<f32> = listed.iter().map(|&i| clean.data[i]).collect();
    let source = slices.source.as_str();
    let place = match seen.first {
        [None, _] => "no elements".to_string(),
        [Some(only), None] => format!("1 element (flat index {only})"),
        [Some(first), Some(second)] => format!(
            "{} elements sharing stored numbers (flat indices {first}, {second}, …)",
            seen.count
        ),
    };
    let mut first = block_step(index, slices.count, block.is_some(), &x, &place, source);
    if listed.len() < seen.count {
        first = first.value("listed", format!(
            "{} of its {} elements, from its element {from} (flat index {}): those around its largest |x|",
            listed.len(),
            seen.count,
            listed.first().copied().unwrap_or(0)
        ))
        .value("listed from", from);
    }
    let mut steps = vec![first];
    let (lo, hi) =
        seen.first[0].map_or((f32::NEG_INFINITY, f32::INFINITY), |i| ranges.of_element(i));
    let mut scale = Step::new("Its stored numbers", slices.rule.as_str(), source);
    if seen.count > 0 {
        scale = scale.value("min", seen.min).value("max", seen.max);
    }
    for (name, column) in &slices.columns {
        if let Some(&v) = column.get(index) {
            scale = scale.value(name, v);
        }
    }
    scale = scale.value("representable range", vec![lo, hi]);
    if slices.count > 1 {
        if let Some((name, column)) = slices.columns.first() {
            let mut sorted: Vec<f64> = column.iter().copied().filter(|v| v.is_finite()).collect();
            sorted.sort_by(f64::total_cmp);
            if let (Some(&a), Some(&b)) = (sorted.first(), sorted.last()) {
                scale = scale
                    .value(&format!("{name}: smallest of {} slices", slices.count), a)
                    .value(&format!("{name}: median"), sorted[sorted.len() / 2])
                    .value(&format!("{name}: largest"), b);
            }
        }
    }
    steps.push(scale);
    let mut stored = Step::new(
        "Stored block",
        "the codes the whole tensor's encoding stores for these elements, and the values they decode to",
        source,
    );
    let codes = match &slices.codes {
        Some(codes) => Some((
            "codes".to_string(),
            listed
                .iter()
                .map(|&i| codes.get(i).copied().unwrap_or(0) as i64)
                .collect(),
        )),
        None => element_codes(&encoded, &listed),
    };
    if let Some((name, codes)) = codes {
        stored = stored.value(&name, Value::Ints(codes));
    }
    let y: Vec<f32> = listed.iter().map(|&i| decoded[i]).collect();
    stored = stored
        .value("decoded", y)
        .value("largest |error|", seen.largest_error)
        .value("clipped", seen.clipped);
    steps.push(stored);
    Ok((index, slices.count, steps))
}

/// What the steps say of every element of the followed slice, gathered in one pass.
struct SliceSummary {
    count: usize,
    /// The first two elements' flat indices.
    first: [Option<usize>; 2],
    min: f32,
    max: f32,
    /// The position in the slice of its first value of largest magnitude, and that magnitude.
    largest_at: usize,
    largest: f32,
    largest_error: f32,
    clipped: usize,
}

impl Default for SliceSummary {
    fn default() -> Self {
        SliceSummary {
            count: 0,
            first: [None, None],
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
            largest_at: 0,
            largest: f32::NEG_INFINITY,
            largest_error: 0.0,
            clipped: 0,
        }
    }
}

impl SliceSummary {
    /// Element `i` of value `x`, decoded to `y`, in a slice representing `lo..=hi`.
    fn add(&mut self, i: usize, x: f32, y: f32, lo: f32, hi: f32) {
        if self.count < 2 {
            self.first[self.count] = Some(i);
        }
        (self.min, self.max) = (self.min.min(x), self.max.max(x));
        if x.abs() > self.largest {
            (self.largest_at, self.largest) = (self.count, x.abs());
        }
        self.largest_error = self.largest_error.max((x - y).abs());
        if x < lo || x > hi {
            self.clipped += 1;
        }
        self.count += 1;
    }
}

/// The codes of `members`, named after the first stored integer part with one entry per
/// element (`codes`, `weight`, `mantissas`, `values`); `None` when the codes are packed.
fn element_codes(e: &Encoded, members: &[usize]) -> Option<(String, Vec<i64>)> {
    let n = e.numel().ok()?;
    let part = e
        .parts
        .iter()
        .find(|p| p.data.len() == n && n > 0 && !matches!(p.data, Stored::F32(_)))?;
    let at = |i: usize| -> i64 {
        match &part.data {
            Stored::U8(v) => v[i] as i64,
            Stored::I8(v) => v[i] as i64,
            Stored::U16(v) => v[i] as i64,
            Stored::I16(v) => v[i] as i64,
            Stored::I32(v) => v[i] as i64,
            Stored::F32(_) => 0,
        }
    };
    let name = if part.name == "codes" {
        "codes".to_string()
    } else {
        format!("codes (`{}`)", part.name)
    };
    Some((name, members.iter().map(|&i| at(i)).collect()))
}

/// The index of the first value of largest magnitude (0 for an empty slice).
pub fn largest_magnitude(values: &[f32]) -> usize {
    let mut best = (0, f32::NEG_INFINITY);
    for (i, v) in values.iter().enumerate() {
        if v.abs() > best.1 {
            best = (i, v.abs());
        }
    }
    best.0
}

/// Block `block` of `count`, or the one `default` names; an error naming the range otherwise.
pub fn pick_block(block: Option<usize>, default: usize, count: usize) -> Result<usize> {
    match block {
        Some(b) if b < count => Ok(b),
        Some(b) => Err(Error::param(
            "block",
            format!(
                "block {b} does not exist: the tensor has {count} block{} (0…{})",
                if count == 1 { "" } else { "s" },
                count.saturating_sub(1)
            ),
        )),
        None => Ok(default.min(count.saturating_sub(1))),
    }
}

/// The first step: which block is followed, where it lies and its values.
pub fn block_step(
    index: usize,
    count: usize,
    chosen: bool,
    values: &[f32],
    place: &str,
    source: &str,
) -> Step {
    let why = if chosen {
        "the block you chose"
    } else {
        "the block holding the tensor's value of largest magnitude (the widest range to cover)"
    };
    let amax = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    Step::new(
        format!("Block {index} of {count}"),
        format!("{why}: {place}"),
        source,
    )
    .value("block", index)
    .value("values", values)
    .value("amax", amax)
}

/// Condense the steps a block's encoder recorded: a search that ran once per sub-block (the
/// same title `count` times in a row) is kept in full for sub-block `focus`, followed by one
/// table of every sub-block's result (`scale`, and `the_min` where the search has one).
pub fn condense(recorded: Vec<Step>, focus: usize) -> Vec<Step> {
    let mut out = Vec::new();
    let mut rest = recorded.into_iter().peekable();
    while let Some(first) = rest.next() {
        let mut run = vec![first];
        while rest.peek().is_some_and(|s| s.title == run[0].title) {
            run.extend(rest.next());
        }
        if run.len() == 1 {
            out.extend(run);
            continue;
        }
        let count = run.len();
        let shown = focus.min(count - 1);
        let number = |s: &Step, name: &str| match s.values.get(name) {
            Some(Value::F32(v)) => *v as f64,
            Some(Value::F64(v)) => *v,
            _ => f64::NAN,
        };
        let with_min = run.iter().any(|s| s.values.get("the_min").is_some());
        let mut columns = vec!["sub-block", "scale"];
        if with_min {
            columns.push("−min");
        }
        let rows = run
            .iter()
            .enumerate()
            .map(|(j, s)| {
                let mut row = vec![j as f64, number(s, "scale")];
                if with_min {
                    row.push(number(s, "the_min"));
                }
                row
            })
            .collect();
        let source = run[0].source.clone();
        let title = run[0].title.clone();
        let mut kept = run.swap_remove(shown);
        kept.title = format!("{title}, sub-block {shown} of {count}");
        out.push(kept);
        out.push(
            Step::new(
                format!("{title}: every sub-block"),
                "the same search on each sub-block; the one above in full",
                &source,
            )
            .candidates(
                Candidates::new(
                    &columns,
                    rows,
                    shown,
                    "marked: the sub-block holding the block's largest |x|, shown in full above",
                )
                .per_slice(),
            ),
        );
    }
    out
}
