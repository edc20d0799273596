//! What the layouts of compressed-tensors, DeepSeek FP8, gpt-oss MXFP4 and ModelOpt share:
//! entries found by name, a coded weight built from them (its label and bits from its codec
//! and entries), and the catalogue's remaining entries kept as plain weights.

use super::super::weights::{PartFrom, PartSource, Weight, WeightSource};
use super::super::{Catalog, EntryDType};
use super::Layout;
use crate::codec;
use crate::params::Params;
use crate::tensor::DType;
use std::collections::{HashMap, HashSet};

/// The catalogue's entries by name.
pub(super) struct Names<'a> {
    pub catalog: &'a Catalog,
    index: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Names<'a> {
    pub fn new(catalog: &'a Catalog) -> Self {
        let mut index: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, e) in catalog.entries.iter().enumerate() {
            index.entry(e.name.as_str()).or_default().push(i);
        }
        Names { catalog, index }
    }

    /// The index of entry `name` (the first, in checkpoint order, when a name is listed
    /// twice: shards, or a folder holding other files of the same names).
    pub fn get(&self, name: &str) -> Option<usize> {
        self.index.get(name)?.first().copied()
    }

    /// The first entry `name` whose dtype satisfies `want`, else the first of that name.
    pub fn pick(&self, name: &str, want: impl Fn(Option<DType>) -> bool) -> Option<usize> {
        let all = self.index.get(name)?;
        all.iter()
            .copied()
            .find(|&i| want(self.dtype(i)))
            .or_else(|| all.first().copied())
    }

    /// The dtype of entry `i`, when quantscope knows it.
    pub fn dtype(&self, i: usize) -> Option<DType> {
        match &self.catalog.entries.get(i)?.dtype {
            EntryDType::Known(d) => Some(*d),
            EntryDType::Foreign(_) => None,
        }
    }

    /// The shape of entry `i`.
    pub fn shape(&self, i: usize) -> &[usize] {
        self.catalog
            .entries
            .get(i)
            .map_or(&[][..], |e| e.shape.as_slice())
    }

    /// Every entry name ending with `suffix`, with the name's prefix before it.
    pub fn with_suffix(&self, suffix: &str) -> Vec<(String, usize)> {
        self.catalog
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                e.name
                    .strip_suffix(suffix)
                    .map(|prefix| (prefix.to_string(), i))
            })
            .collect()
    }
}

/// A weight decoded by codec `id` from entries, each named by the codec's part name.
pub(super) struct Coded {
    pub name: String,
    pub shape: Vec<usize>,
    pub codec: &'static str,
    pub params: Params,
    pub parts: Vec<(&'static str, usize)>,
    pub block: Option<usize>,
    /// Why it cannot be read (found while recognising it), if so.
    pub problem: Option<String>,
}

impl Coded {
    /// The weight: its label from the codec (or the codec id when it cannot be built), its
    /// bits from the entries' bytes.
    pub fn weight(self, catalog: &Catalog) -> Weight {
        let entries: Vec<_> = self
            .parts
            .iter()
            .filter_map(|&(_, i)| catalog.entries.get(i))
            .collect();
        let bytes: u64 = entries
            .iter()
            .map(|e| e.range.end.saturating_sub(e.range.start))
            .sum();
        let elements = crate::tensor::element_count(&self.shape).unwrap_or(0);
        let built = codec::find(self.codec).and_then(|c| c.build(&self.params, &self.shape));
        let (format, problem) = match built {
            Ok(c) => (c.label(), self.problem),
            Err(e) => (
                self.codec.to_string(),
                self.problem.or_else(|| Some(e.to_string())),
            ),
        };
        let problem = problem.or_else(|| entries.iter().find_map(|e| e.problem.clone()).map(|p| p));
        Weight {
            name: self.name,
            shape: self.shape,
            format,
            bits_per_weight: if elements == 0 {
                0.0
            } else {
                bytes as f64 * 8.0 / elements as f64
            },
            block: self.block,
            source: WeightSource::Coded {
                codec: self.codec.to_string(),
                params: self.params,
                parts: self
                    .parts
                    .iter()
                    .map(|&(part, i)| PartSource {
                        part,
                        from: PartFrom::Entry(i),
                    })
                    .collect(),
            },
            stored_as: entries.iter().map(|e| e.name.clone()).collect(),
            problem,
        }
    }
}

/// A weight that cannot be decoded (a scale entry missing, shapes that disagree), named by
/// the original parameter, listing the entries it would take.
pub(super) fn broken(
    names: &Names,
    name: String,
    shape: Vec<usize>,
    format: &str,
    entries: &[usize],
    problem: String,
) -> Weight {
    Weight {
        name,
        shape,
        format: format.to_string(),
        bits_per_weight: 0.0,
        block: None,
        source: WeightSource::Coded {
            codec: String::new(),
            params: Params::new(),
            parts: Vec::new(),
        },
        stored_as: entries
            .iter()
            .filter_map(|&i| names.catalog.entries.get(i))
            .map(|e| e.name.clone())
            .collect(),
        problem: Some(problem),
    }
}

/// The layout: the recognised weights, each placed where its first entry was, and every
/// entry none of them took as a plain weight.
pub(super) fn assemble(
    catalog: &Catalog,
    name: String,
    weights: Vec<Weight>,
    warnings: Vec<String>,
) -> Layout {
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, e) in catalog.entries.iter().enumerate() {
        index.entry(e.name.as_str()).or_insert(i);
    }
    let mut taken = HashSet::new();
    let mut anchored: HashMap<usize, Vec<Weight>> = HashMap::new();
    let mut loose = Vec::new();
    for w in weights {
        let entries: Vec<usize> = w
            .stored_as
            .iter()
            .filter_map(|n| index.get(n.as_str()).copied())
            .collect();
        taken.extend(entries.iter().copied());
        match entries.iter().min() {
            Some(&first) => anchored.entry(first).or_default().push(w),
            None => loose.push(w),
        }
    }
    let mut out = Vec::with_capacity(catalog.entries.len());
    for i in 0..catalog.entries.len() {
        if let Some(ws) = anchored.remove(&i) {
            out.extend(ws);
        }
        if !taken.contains(&i) {
            out.extend(Weight::of_entry(catalog, i));
        }
    }
    out.extend(loose);
    Layout {
        name: Some(name),
        weights: out,
        warnings,
    }
}

/// The dtype parameter of a codec whose values are rounded to the dtype of its scales
/// (`bfloat16`, `float16` or `float32`).
pub(super) fn scale_dtype(d: Option<DType>) -> Option<&'static str> {
    match d? {
        DType::BF16 => Some("bfloat16"),
        DType::F16 => Some("float16"),
        DType::F32 => Some("float32"),
        _ => None,
    }
}
