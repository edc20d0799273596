//! Work split over processes or machines: `model` and `diff` run on one **portion** of their
//! items (tensors, or pairs of weights) and [`merge`] puts the portions' documents together into
//! exactly the document one process prints.
//!
//! A [`Portion`] is portion `index` of `count` (from 0; the CLI's `--shard I/N`, Python's
//! `portion=(i, n)`). The items, in the order the whole command uses (checkpoint order for
//! `model`, pairing order for `diff`), are split into `count` contiguous ranges balanced by
//! their element counts ([`Portion::range`]): every process computes the same ranges from the
//! same files, so the portions cover each item exactly once.
//!
//! A portion's document is the command's `--json` document restricted to its rows, plus
//! `portion` ([`PortionInfo`]): where it lies, what it was computed from (command, files,
//! methods or imatrix, the number of items) and each row's rank key, written without loss
//! (JSON has no infinity; the keys keep what ordered the rows). [`merge`] checks that the
//! documents are the `count` portions of one piece of work, sorts their rows with the command's
//! own order ([`crate::model::rank_order`], [`crate::diff::rank_order`]) and keeps what every
//! portion holds (load errors, unpaired weights, the checkpoint-wide lint) once.

use crate::error::{Error, Result};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::ops::Range;

/// Portion `index` of `count` (from 0) of a command's items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Portion {
    pub index: usize,
    pub count: usize,
}

impl Portion {
    /// Portion `index` of `count`, refused unless `index < count`.
    pub fn new(index: usize, count: usize) -> Result<Portion> {
        if count == 0 || index >= count {
            return Err(Error::input(format!(
                "portion {index} of {count} does not exist: portions are numbered from 0 to \
                 N − 1, with N ≥ 1 (e.g. 0/4 … 3/4)"
            )));
        }
        Ok(Portion { index, count })
    }

    /// `I/N` (the CLI's `--shard I/N`): portion `I` of `N`, from 0.
    pub fn parse(text: &str) -> Result<Portion> {
        let parsed = text
            .split_once('/')
            .and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
        match parsed {
            Some((index, count)) => Portion::new(index, count),
            None => Err(Error::input(format!(
                "`{text}` is not a portion: write I/N, portion I of N counted from 0 (e.g. 0/4)"
            ))),
        }
    }

    /// The items of this portion among items costing `elements` each, in order: a contiguous
    /// range; the `count` portions' ranges follow one another and cover every item once.
    ///
    /// Item `k` (costing `w = elements[k] + 1`: an empty item still costs its visit) belongs
    /// to the portion its middle falls in, `⌊count·(2·s + w) / (2·W)⌋`, where `s` is the cost
    /// of the items before it and `W` the cost of all of them.
    pub fn range(&self, elements: &[u64]) -> Range<usize> {
        let cost = |e: u64| u128::from(e) + 1;
        let total: u128 = elements.iter().map(|&e| cost(e)).sum();
        let count = self.count as u128;
        let (mut start, mut end) = (elements.len(), elements.len());
        let mut before = 0u128;
        for (k, &e) in elements.iter().enumerate() {
            let w = cost(e);
            let owner = ((count * (2 * before + w)) / (2 * total)).min(count - 1) as usize;
            if owner >= self.index && start == elements.len() {
                start = k;
            }
            if owner > self.index {
                end = k;
                break;
            }
            before += w;
        }
        start.min(end)..end
    }
}

impl std::fmt::Display for Portion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A float written as text (Rust's shortest round-trip digits, `inf`, `-inf`, `NaN`), so that
/// non-finite values survive JSON.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exact(pub f64);

impl Serialize for Exact {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:?}", self.0))
    }
}

impl<'de> Deserialize<'de> for Exact {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map(Exact)
            .map_err(|_| D::Error::custom(format!("`{text}` is not a number")))
    }
}

/// One row's rank key in a portion's document: `[group, value, position]`. `model`'s key is
/// its [`crate::model::RankKey`]; `diff`'s `(Some(nmse), position)` is group 0 and `(None,
/// position)` group 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RowKey(pub u8, pub Exact, pub usize);

impl RowKey {
    /// The key of a `model` row.
    pub fn of_model(key: crate::model::RankKey) -> RowKey {
        RowKey(key.0, Exact(key.1), key.2)
    }

    /// The key of a `diff` row.
    pub fn of_diff(key: crate::diff::RankKey) -> RowKey {
        match key.0 {
            Some(nmse) => RowKey(0, Exact(nmse), key.1),
            None => RowKey(1, Exact(0.0), key.1),
        }
    }

    fn model(self) -> crate::model::RankKey {
        (self.0, self.1 .0, self.2)
    }

    fn diff(self) -> crate::diff::RankKey {
        ((self.0 == 0).then_some(self.1 .0), self.2)
    }
}

/// The `portion` of a portion's document: where it lies in the work and what the work is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortionInfo {
    pub index: usize,
    pub count: usize,
    /// `"model"` or `"diff"`.
    pub command: String,
    /// The files read, as the whole command lists them.
    pub files: Vec<String>,
    /// What else decides the rows: `model`'s method ids in order; `diff`'s imatrix file.
    pub settings: Vec<String>,
    /// Items of the whole work: tensors (`model`) or pairs (`diff`).
    pub items: usize,
    /// This portion's items, `[start, end)`.
    pub range: [usize; 2],
    /// Leading `lint` items every portion holds (`diff`: layout warnings, unreadable files).
    pub shared_lint: usize,
    /// Each row's [`RowKey`], in the document's row order.
    pub keys: Vec<RowKey>,
}

/// The commands whose work splits into portions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Model,
    Diff,
}

impl Command {
    fn of(name: &str) -> Result<Command> {
        match name {
            "model" => Ok(Command::Model),
            "diff" => Ok(Command::Diff),
            other => Err(Error::input(format!(
                "portions of `{other}` cannot be merged: only `model` and `diff` split into \
                 portions"
            ))),
        }
    }

    /// The document's key holding its rows.
    pub fn table(self) -> &'static str {
        match self {
            Command::Model => "tensors",
            Command::Diff => "pairs",
        }
    }

    fn order(self, a: RowKey, b: RowKey) -> Ordering {
        match self {
            Command::Model => crate::model::rank_order(a.model(), b.model()),
            Command::Diff => crate::diff::rank_order(a.diff(), b.diff()),
        }
    }
}

/// The documents of every portion put together.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    pub command: Command,
    /// The portions' `settings` (`model`'s method ids).
    pub settings: Vec<String>,
    /// Exactly the document the command prints with `--json` when it runs whole.
    pub document: Value,
}

/// `document` with its `portion` (a portion's document of `model` or `diff`).
pub fn with_portion(mut document: Value, info: &PortionInfo) -> Value {
    if let Value::Object(map) = &mut document {
        map.insert(
            "portion".into(),
            serde_json::to_value(info).unwrap_or_default(),
        );
    }
    document
}

/// One document read for [`merge`]: its portion and its other keys.
struct Part<'a> {
    info: PortionInfo,
    fields: &'a Map<String, Value>,
    rows: &'a [Value],
}

fn describe(i: usize) -> String {
    format!("document {}", i + 1)
}

fn read_part(i: usize, doc: &Value) -> Result<Part<'_>> {
    let fields = doc
        .as_object()
        .ok_or_else(|| Error::input(format!("{} is not a JSON object", describe(i))))?;
    let info = fields.get("portion").ok_or_else(|| {
        Error::input(format!(
            "{} is not a portion: it has no `portion` (write portions with `quantscope model|diff \
             --shard I/N --json`, or `portion=(i, n)` in Python)",
            describe(i)
        ))
    })?;
    let info: PortionInfo = serde_json::from_value(info.clone()).map_err(|e| {
        Error::input(format!(
            "{}: its `portion` cannot be read: {e}",
            describe(i)
        ))
    })?;
    let command = Command::of(&info.command)?;
    let rows = fields
        .get(command.table())
        .and_then(Value::as_array)
        .ok_or_else(|| {
            Error::input(format!(
                "{} has no `{}` list: not a `{}` document",
                describe(i),
                command.table(),
                info.command
            ))
        })?;
    Ok(Part { info, fields, rows })
}

/// Check that `parts` are the `count` portions of one piece of work, each once, in order.
fn check(parts: &mut [Part<'_>]) -> Result<()> {
    let first = parts[0].info.clone();
    for (i, p) in parts.iter().enumerate() {
        let same = |what: &str, a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| {
            let (a, b) = (format!("{a:?}"), format!("{b:?}"));
            if a == b {
                Ok(())
            } else {
                Err(Error::input(format!(
                    "{} and {} are portions of different work: {what} {a} against {b}",
                    describe(0),
                    describe(i)
                )))
            }
        };
        same("command", &first.command, &p.info.command)?;
        same("files", &first.files, &p.info.files)?;
        same(
            "settings (methods or imatrix)",
            &first.settings,
            &p.info.settings,
        )?;
        same("items", &first.items, &p.info.items)?;
        same("portion count", &first.count, &p.info.count)?;
    }
    let count = first.count;
    if count == 0 || parts.iter().any(|p| p.info.index >= count) {
        return Err(Error::input(format!(
            "a portion's index is outside 0..{count}"
        )));
    }
    parts.sort_by_key(|p| p.info.index);
    for pair in parts.windows(2) {
        if pair[0].info.index == pair[1].info.index {
            return Err(Error::input(format!(
                "portion {}/{count} is given twice",
                pair[0].info.index
            )));
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| parts.iter().all(|p| p.info.index != *i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        let (s, are) = if missing.len() == 1 {
            ("", "is")
        } else {
            ("s", "are")
        };
        return Err(Error::input(format!(
            "portion{s} {} {are} missing: merge needs all {count}",
            missing.join(", ")
        )));
    }
    let mut next = 0;
    for p in parts.iter() {
        let [start, end] = p.info.range;
        let name = format!("portion {}/{count}", p.info.index);
        if start != next || end < start {
            return Err(Error::input(format!(
                "{name} covers items {start}..{end}, but the portions before it end at {next}"
            )));
        }
        if p.rows.len() != end - start || p.info.keys.len() != p.rows.len() {
            return Err(Error::input(format!(
                "{name} has {} rows and {} keys for its {} items",
                p.rows.len(),
                p.info.keys.len(),
                end - start
            )));
        }
        next = end;
    }
    if next != first.items {
        return Err(Error::input(format!(
            "the portions cover {next} of the {} items",
            first.items
        )));
    }
    Ok(())
}

/// Put the documents of every portion of one `model` or `diff` together (in any order): the
/// rows of all, in the command's own order; what every portion holds (`load_errors`,
/// `unpaired`, `files`, the leading `shared_lint` lint items), once, refused unless the
/// portions agree on it; each portion's own lint in portion order. The result is the document
/// the command prints when it runs whole.
pub fn merge(documents: &[Value]) -> Result<Merged> {
    if documents.is_empty() {
        return Err(Error::input(
            "nothing to merge: give the documents of every portion",
        ));
    }
    let mut parts = documents
        .iter()
        .enumerate()
        .map(|(i, d)| read_part(i, d))
        .collect::<Result<Vec<_>>>()?;
    check(&mut parts)?;
    let command = Command::of(&parts[0].info.command)?;
    let table = command.table();
    let mut keyed: Vec<(RowKey, &Value)> = parts
        .iter()
        .flat_map(|p| p.info.keys.iter().copied().zip(p.rows))
        .collect();
    keyed.sort_by(|a, b| command.order(a.0, b.0));
    let mut out = Map::new();
    out.insert(
        table.into(),
        Value::Array(keyed.into_iter().map(|(_, row)| row.clone()).collect()),
    );
    let shared_lint = parts[0].info.shared_lint;
    for (key, value) in parts[0].fields {
        if key == table || key == "portion" {
            continue;
        }
        if key == "lint" {
            out.insert(key.clone(), merged_lint(&parts, shared_lint)?);
            continue;
        }
        if let Some(p) = parts.iter().find(|p| p.fields.get(key) != Some(value)) {
            return Err(Error::input(format!(
                "portions {}/{n} and {}/{n} disagree on `{key}`: were the files changed \
                 between them?",
                parts[0].info.index,
                p.info.index,
                n = parts[0].info.count
            )));
        }
        out.insert(key.clone(), value.clone());
    }
    if let Some(p) = parts
        .iter()
        .find(|p| p.fields.len() != parts[0].fields.len())
    {
        return Err(Error::input(format!(
            "portion {}/{} has other keys than portion {}/{}",
            p.info.index, p.info.count, parts[0].info.index, parts[0].info.count
        )));
    }
    Ok(Merged {
        command,
        settings: parts[0].info.settings.clone(),
        document: Value::Object(out),
    })
}

/// The lint of every portion: the `shared` leading items once (the same in every portion),
/// then each portion's own items in portion order.
fn merged_lint(parts: &[Part<'_>], shared: usize) -> Result<Value> {
    let mut out: Vec<Value> = Vec::new();
    for (n, p) in parts.iter().enumerate() {
        let lint = p
            .fields
            .get("lint")
            .and_then(Value::as_array)
            .filter(|l| l.len() >= shared && p.info.shared_lint == shared)
            .ok_or_else(|| {
                Error::input(format!(
                    "portion {}/{}: its `lint` does not start with the {shared} items every \
                     portion holds",
                    p.info.index, p.info.count
                ))
            })?;
        if n == 0 {
            out.extend_from_slice(&lint[..shared]);
        } else if lint[..shared] != out[..shared] {
            return Err(Error::input(format!(
                "portions {}/{n_all} and {}/{n_all} disagree on the checkpoints' lint: were the \
                 files changed between them?",
                parts[0].info.index,
                p.info.index,
                n_all = p.info.count
            )));
        }
        out.extend_from_slice(&lint[shared..]);
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(count: usize, elements: &[u64]) -> Vec<Range<usize>> {
        (0..count)
            .map(|i| Portion::new(i, count).unwrap().range(elements))
            .collect()
    }

    #[test]
    fn portions_tile_the_items_balanced_by_elements() {
        assert_eq!(ranges(2, &[10; 104]), vec![0..52, 52..104]);
        assert_eq!(ranges(3, &[10; 7]), vec![0..2, 2..5, 5..7]);
        // A large first item fills portion 0 alone.
        assert_eq!(ranges(2, &[100, 1, 1, 1, 1]), vec![0..1, 1..5]);
        // More portions than items: some are empty, and the others still tile.
        assert_eq!(ranges(4, &[5, 5]), vec![0..0, 0..1, 1..1, 1..2]);
        assert_eq!(ranges(3, &[]), vec![0..0, 0..0, 0..0]);
        assert_eq!(ranges(1, &[u64::MAX, u64::MAX]), vec![0..2]);
        for count in 1..9 {
            let elements: Vec<u64> = (0..37u64).map(|k| (k * 7919) % 101).collect();
            let r = ranges(count, &elements);
            assert_eq!(r[0].start, 0);
            assert_eq!(r[count - 1].end, 37);
            assert!(r.windows(2).all(|w| w[0].end == w[1].start), "{r:?}");
        }
    }

    #[test]
    fn portions_parse_and_refuse() {
        assert_eq!(
            Portion::parse("1/4").unwrap(),
            Portion { index: 1, count: 4 }
        );
        assert_eq!(Portion::parse(" 0 / 1 ").unwrap().to_string(), "0/1");
        for bad in ["4/4", "0/0", "1", "-1/2", "a/b", "1/2/3"] {
            assert!(Portion::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_keep_what_json_loses() {
        for v in [
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-300,
            -0.0,
            13.412345678901234,
        ] {
            let text = serde_json::to_string(&RowKey(0, Exact(v), 3)).unwrap();
            let back: RowKey = serde_json::from_str(&text).unwrap();
            assert_eq!(back.1 .0.to_bits(), v.to_bits(), "{text}");
        }
        let nan: RowKey = serde_json::from_str(r#"[0, "NaN", 1]"#).unwrap();
        assert!(nan.1 .0.is_nan());
        assert!(serde_json::from_str::<RowKey>(r#"[0, 1.5, 1]"#).is_err());
    }
}
