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
        let problem = problem.or_else(|| entries.iter().find_map(|e| e.problem.clone()));
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
        ..Layout::default()
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

#[cfg(test)]
pub(super) mod tests {
    //! Recognition of malformed checkpoints: each problem stays on its weight.
    use super::super::{weights, Configs};
    use crate::checkpoint::{Catalog, Entry, EntryDType, Storage};
    use crate::tensor::{ByteOrder, DType};
    use serde_json::json;

    /// A catalogue of header-only entries `(name, dtype, shape)`.
    pub fn catalog(entries: &[(&str, DType, &[usize])]) -> Catalog {
        let mut offset = 0u64;
        Catalog {
            entries: entries
                .iter()
                .map(|&(name, dtype, shape)| {
                    let elements: usize = shape.iter().product();
                    let size = crate::tensor::decode::item_size(dtype) * elements;
                    let start = offset;
                    offset += size as u64;
                    Entry {
                        name: name.to_string(),
                        file: 0,
                        shape: shape.to_vec(),
                        dtype: EntryDType::Known(dtype),
                        elements,
                        range: start..offset,
                        storage: Storage::Plain {
                            dtype,
                            order: ByteOrder::Little,
                            fortran: false,
                        },
                        problem: None,
                    }
                })
                .collect(),
            ..Catalog::default()
        }
    }

    fn configs(q: serde_json::Value) -> Configs {
        Configs {
            config: Some(json!({ "quantization_config": q })),
            ..Configs::default()
        }
    }

    #[test]
    fn fp8_missing_scale_is_a_problem_of_that_weight_only() {
        let c = catalog(&[
            ("a.weight", DType::F8E4M3, &[256, 256]),
            ("a.weight_scale_inv", DType::F32, &[2, 2]),
            ("b.weight", DType::F8E4M3, &[128, 128]),
            ("norm.weight", DType::BF16, &[128]),
        ]);
        let l = weights(
            &c,
            &configs(json!({"quant_method": "fp8", "weight_block_size": [128, 128]})),
        );
        assert_eq!(l.name.as_deref(), Some("FP8 block 128×128 (DeepSeek)"));
        let a = l.weights.iter().find(|w| w.name == "a.weight").unwrap();
        assert!(a.problem.is_none());
        assert_eq!(a.format, "FP8 E4M3 block 128×128");
        assert_eq!(a.block, Some(128 * 128));
        assert_eq!(
            a.bits_per_weight,
            (256.0 * 256.0 + 16.0) * 8.0 / (256.0 * 256.0)
        );
        let b = l.weights.iter().find(|w| w.name == "b.weight").unwrap();
        assert_eq!(
            b.problem.as_deref(),
            Some("missing scale entry `b.weight_scale_inv`")
        );
        assert!(l
            .weights
            .iter()
            .any(|w| w.name == "norm.weight" && w.problem.is_none()));
        assert_eq!(l.weights.len(), 3);
    }

    #[test]
    fn compressed_tensors_groups_formats_and_problems() {
        let c = catalog(&[
            ("q.weight_packed", DType::I32, &[384, 48]),
            ("q.weight_scale", DType::BF16, &[384, 3]),
            ("q.weight_shape", DType::I64, &[2]),
            ("k.weight_packed", DType::I32, &[384, 48]),
            ("k.weight_scale", DType::BF16, &[384, 3]),
            ("k.weight_shape", DType::I64, &[2]),
            ("lm_head.weight", DType::BF16, &[10, 384]),
            ("o.weight_packed", DType::I32, &[384, 48]),
            ("o.weight_shape", DType::I64, &[2]),
        ]);
        let group = |format: &str| {
            json!({"format": format, "targets": ["Linear"],
                   "weights": {"num_bits": 4, "strategy": "group", "group_size": 128,
                               "symmetric": false, "type": "int"}})
        };
        let q = json!({"quant_method": "compressed-tensors", "format": "pack-quantized",
                       "config_groups": {"group_0": group("pack-quantized"),
                                         "group_1": {"format": "int5-zigzag-quantized",
                                                     "targets": ["re:.*k$"],
                                                     "weights": {"num_bits": 4}}},
                       "ignore": ["lm_head"]});
        let l = weights(&c, &configs(q));
        let q = l.weights.iter().find(|w| w.name == "q.weight").unwrap();
        assert_eq!(q.shape, vec![384, 384]);
        assert_eq!(q.format, "compressed-tensors pack-quantized");
        assert_eq!(
            q.problem.as_deref(),
            Some("missing entry `q.weight_zero_point` (pack-quantized)")
        );
        assert!(
            l.warnings
                .iter()
                .any(|w| w.contains("`int5-zigzag-quantized`")),
            "{:?}",
            l.warnings
        );
        // `k` is targeted by the unknown format's pattern: listed as stored.
        assert!(l.weights.iter().any(|w| w.name == "k.weight_packed"));
        let o = l.weights.iter().find(|w| w.name == "o.weight").unwrap();
        assert_eq!(
            o.problem.as_deref(),
            Some("missing entry `o.weight_scale` (pack-quantized)")
        );
        assert!(l.weights.iter().any(|w| w.name == "lm_head.weight"));
    }

    #[test]
    fn gptoss_and_modelopt_missing_scales() {
        let c = catalog(&[
            ("e.gate_up_proj_blocks", DType::U8, &[4, 64, 2, 16]),
            ("e.gate_up_proj_scales", DType::U8, &[4, 64, 2]),
            ("f.weight_blocks", DType::U8, &[8, 2, 16]),
        ]);
        let l = weights(&c, &configs(json!({"quant_method": "mxfp4"})));
        let e = l
            .weights
            .iter()
            .find(|w| w.name == "e.gate_up_proj")
            .unwrap();
        assert_eq!(e.shape, vec![4, 64, 64]);
        assert!(e.problem.is_none());
        let f = l.weights.iter().find(|w| w.name == "f.weight").unwrap();
        assert_eq!(
            f.problem.as_deref(),
            Some("missing scale entry `f.weight_scales`")
        );
        let c = catalog(&[
            ("m.weight", DType::U8, &[8, 16]),
            ("m.weight_scale", DType::F8E4M3, &[8, 2]),
        ]);
        let h = Configs {
            hf_quant_config: Some(
                json!({"quantization": {"quant_algo": "NVFP4", "group_size": 16}}),
            ),
            ..Configs::default()
        };
        let l = weights(&c, &h);
        let m = l.weights.iter().find(|w| w.name == "m.weight").unwrap();
        assert_eq!(m.shape, vec![8, 32]);
        assert_eq!(
            m.problem.as_deref(),
            Some("missing scale entry `m.weight_scale_2`")
        );
        let h = Configs {
            hf_quant_config: Some(json!({"quantization": {"quant_algo": "W4A8_AWQ"}})),
            ..Configs::default()
        };
        assert!(weights(&c, &h).warnings[0].contains("`W4A8_AWQ`"));
    }
}
