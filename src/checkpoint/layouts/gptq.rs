//! GPTQ and AWQ checkpoints (`quant_method: gptq | awq`, as GPTQModel, AutoGPTQ and AutoAWQ
//! save them): each quantized Linear `M` stores `M.qweight`, `M.qzeros`, `M.scales` (and for
//! GPTQ `M.g_idx`), decoded by the codec `gptq.int` or `awq.gemm` into the weight `M.weight`
//! `[N, K]`. The codec's parameters come from `quantization_config` (`bits`, `group_size`,
//! `desc_act`, `sym`, `checkpoint_format`; AWQ's `zero_point` and `version`), the scales' dtype
//! from the `scales` entry.

use super::super::weights::{PartFrom, PartSource, Weight, WeightSource};
use super::super::{Catalog, Entry, EntryDType};
use super::Layout;
use crate::params::Params;
use crate::tensor::DType;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// A coded weight and the entries it takes.
pub(super) struct Coded {
    /// The entry it is listed in place of.
    pub anchor: usize,
    pub weight: Weight,
    pub taken: Vec<usize>,
}

/// Every entry's index by name.
pub(super) fn by_name(catalog: &Catalog) -> HashMap<&str, usize> {
    catalog
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.as_str(), i))
        .collect()
}

/// Bytes of an entry's range.
pub(super) fn entry_bytes(e: &Entry) -> u64 {
    e.range.end.saturating_sub(e.range.start)
}

/// The safetensors dtype of an entry, when known.
pub(super) fn dtype_of(e: &Entry) -> Option<DType> {
    match &e.dtype {
        EntryDType::Known(d) => Some(*d),
        EntryDType::Foreign(_) => None,
    }
}

/// The weights in catalogue order: each coded weight in place of its anchor entry, the entries
/// it takes left out, every other entry a plain weight.
pub(super) fn assemble(catalog: &Catalog, coded: Vec<Coded>) -> Vec<Weight> {
    let taken: HashSet<usize> = coded.iter().flat_map(|c| c.taken.clone()).collect();
    let mut at: HashMap<usize, Weight> = coded.into_iter().map(|c| (c.anchor, c.weight)).collect();
    (0..catalog.entries.len())
        .filter_map(|i| match at.remove(&i) {
            Some(w) => Some(w),
            None if taken.contains(&i) => None,
            None => Weight::of_entry(catalog, i),
        })
        .collect()
}

/// A coded weight's record, its bits per weight counted from the bytes of every part.
pub(super) fn coded_weight(catalog: &Catalog, mut weight: Weight) -> Weight {
    let elements = crate::tensor::element_count(&weight.shape).unwrap_or(0);
    let bytes: u64 = match &weight.source {
        WeightSource::Coded { parts, .. } => parts
            .iter()
            .map(|p| match &p.from {
                PartFrom::Entry(i) | PartFrom::EntryBytes(i) => {
                    catalog.entries.get(*i).map_or(0, entry_bytes)
                }
                PartFrom::Value { data, .. } => (data.len() * data.element_bytes()) as u64,
            })
            .sum(),
        WeightSource::Entry(i) => catalog.entries.get(*i).map_or(0, entry_bytes),
    };
    weight.bits_per_weight = if elements == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / elements as f64
    };
    weight
}

/// The first problem of the entries a weight is read from.
pub(super) fn entry_problem(catalog: &Catalog, parts: &[usize]) -> Option<String> {
    parts.iter().find_map(|&i| {
        let e = catalog.entries.get(i)?;
        e.problem.as_ref().map(|p| format!("`{}`: {p}", e.name))
    })
}

/// The configuration of a GPTQ or AWQ checkpoint.
struct Config {
    awq: bool,
    bits: i64,
    group_size: i64,
    desc_act: bool,
    sym: bool,
    v2: bool,
}

impl Config {
    fn of(q: &Value, method: &str) -> Result<Config, String> {
        let int = |key: &str| q.get(key).and_then(Value::as_i64);
        let flag = |key: &str| q.get(key).and_then(Value::as_bool);
        let text = |key: &str| q.get(key).and_then(Value::as_str);
        let awq = method == "awq";
        let bits = int("bits")
            .or(int("w_bit"))
            .ok_or("quantization_config has no `bits`")?;
        let group_size = int("group_size")
            .or(int("q_group_size"))
            .ok_or("quantization_config has no `group_size`")?;
        if awq {
            let version = text("version").or(text("format")).unwrap_or("gemm");
            if !version.eq_ignore_ascii_case("gemm") {
                return Err(format!(
                    "AWQ version `{version}` is not a layout quantscope reads (GEMM is)"
                ));
            }
        }
        let format = text("checkpoint_format")
            .or(text("format"))
            .unwrap_or("gptq");
        let v2 = !awq && format == "gptq_v2";
        if !awq && !matches!(format, "gptq" | "gptq_v2") {
            return Err(format!(
                "GPTQ checkpoint_format `{format}` is not a layout quantscope reads (gptq and gptq_v2 are)"
            ));
        }
        Ok(Config {
            awq,
            bits,
            group_size,
            desc_act: !awq && flag("desc_act").unwrap_or(false),
            sym: if awq {
                !flag("zero_point").unwrap_or(true)
            } else {
                flag("sym").unwrap_or(true)
            },
            v2,
        })
    }

    fn label(&self) -> String {
        let group = if self.group_size > 0 {
            format!(" g{}", self.group_size)
        } else {
            " per channel".to_string()
        };
        if self.awq {
            format!(
                "AWQ GEMM int{}{group}{}",
                self.bits,
                if self.sym { " sym" } else { "" }
            )
        } else {
            format!(
                "GPTQ int{}{group}{}{}{}",
                self.bits,
                if self.desc_act { " act-order" } else { "" },
                if self.sym { "" } else { " asym" },
                if self.v2 { " (v2)" } else { "" }
            )
        }
    }
}

/// The scales' dtype as the codecs' `dtype` parameter.
fn scales_dtype(e: &Entry) -> Result<&'static str, String> {
    match dtype_of(e) {
        Some(DType::F16) => Ok("float16"),
        Some(DType::BF16) => Ok("bfloat16"),
        Some(DType::F32) => Ok("float32"),
        _ => Err(format!(
            "`{}` holds {}, not float16, bfloat16 or float32 scales",
            e.name,
            e.dtype.name()
        )),
    }
}

/// The weights of a GPTQ (`method` `gptq`) or AWQ (`awq`) checkpoint.
pub fn weights(catalog: &Catalog, q: &Value, method: &str) -> Layout {
    let config = match Config::of(q, method) {
        Ok(c) => c,
        Err(warning) => {
            return Layout {
                name: None,
                weights: super::plain_weights(catalog),
                warnings: vec![format!("{warning}; its tensors are listed as stored")],
                ..Layout::default()
            }
        }
    };
    let names = by_name(catalog);
    let coded: Vec<Coded> = catalog
        .entries
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            let module = e.name.strip_suffix(".qweight")?;
            Some(one(catalog, &names, &config, module, i))
        })
        .collect();
    Layout {
        name: Some(if config.awq {
            "awq gemm".to_string()
        } else if config.v2 {
            "gptq (gptq_v2)".to_string()
        } else {
            "gptq".to_string()
        }),
        weights: assemble(catalog, coded),
        warnings: Vec::new(),
        ..Layout::default()
    }
}

/// The weight of module `module`, whose `qweight` is entry `qweight`.
fn one(
    catalog: &Catalog,
    names: &HashMap<&str, usize>,
    config: &Config,
    module: &str,
    qweight: usize,
) -> Coded {
    let find = |suffix: &str| names.get(format!("{module}.{suffix}").as_str()).copied();
    let (qzeros, scales, g_idx) = (find("qzeros"), find("scales"), find("g_idx"));
    let g_idx = g_idx.filter(|_| !config.awq);
    let taken: Vec<usize> = [Some(qweight), qzeros, scales, g_idx]
        .into_iter()
        .flatten()
        .collect();
    let mut problem = None;
    let mut shape = Vec::new();
    let mut dtype = "float16";
    let pack = (32 / config.bits.clamp(1, 32)) as usize;
    let entry = |i: usize| &catalog.entries[i];
    match (qzeros, scales) {
        (None, _) => problem = Some(format!("missing `{module}.qzeros`")),
        (_, None) => problem = Some(format!("missing `{module}.scales`")),
        (Some(_), Some(s)) => {
            let (qw, sc) = (&entry(qweight).shape, &entry(s).shape);
            match (qw.as_slice(), sc.as_slice()) {
                ([rows, words], [_, n]) => {
                    // GPTQ: [K/p, N]; AWQ: [K, N/8].
                    let n_of_qweight = if config.awq { words * pack } else { *words };
                    let k = if config.awq {
                        *rows
                    } else {
                        g_idx.map_or(rows * pack, |g| entry(g).elements)
                    };
                    let agrees = if config.awq {
                        n.div_ceil(pack) == *words
                    } else {
                        n_of_qweight == *n
                    };
                    if agrees {
                        shape = vec![*n, k];
                    } else {
                        problem = Some(format!("qweight {qw:?} disagrees with scales {sc:?}"));
                    }
                }
                _ => problem = Some(format!("qweight {qw:?} and scales {sc:?} are not both 2-d")),
            }
            match scales_dtype(entry(s)) {
                Ok(d) => dtype = d,
                Err(e) => problem = problem.or(Some(e)),
            }
        }
    }
    let problem = problem.or_else(|| entry_problem(catalog, &taken));
    let params = if config.awq {
        Params::new()
            .with("bits", config.bits)
            .with("group_size", config.group_size)
            .with("zero_point", !config.sym)
            .with("dtype", dtype)
    } else {
        Params::new()
            .with("bits", config.bits)
            .with("group_size", config.group_size)
            .with("desc_act", config.desc_act)
            .with("sym", config.sym)
            .with(
                "checkpoint_format",
                if config.v2 { "gptq_v2" } else { "gptq" },
            )
            .with("dtype", dtype)
    };
    let mut parts = vec![PartSource {
        part: "qweight",
        from: PartFrom::Entry(qweight),
    }];
    for (part, index) in [("qzeros", qzeros), ("scales", scales), ("g_idx", g_idx)] {
        if let Some(i) = index {
            parts.push(PartSource {
                part,
                from: PartFrom::Entry(i),
            });
        }
    }
    let weight = coded_weight(
        catalog,
        Weight {
            name: format!("{module}.weight"),
            shape,
            format: config.label(),
            bits_per_weight: 0.0,
            block: usize::try_from(config.group_size).ok(),
            source: WeightSource::Coded {
                codec: if config.awq { "awq.gemm" } else { "gptq.int" }.to_string(),
                params,
                parts,
            },
            stored_as: taken.iter().map(|&i| entry(i).name.clone()).collect(),
            problem,
        },
    );
    Coded {
        anchor: qweight,
        weight,
        taken,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::super::{Catalog, Entry, EntryDType, Storage};
    use super::super::{weights as layout_of, Configs, Layout};
    use super::*;
    use crate::tensor::ByteOrder;
    use serde_json::json;

    /// A catalogue of entries `(name, dtype, shape)`, laid end to end in one file.
    pub fn catalog(entries: &[(&str, DType, &[usize])]) -> Catalog {
        let mut start = 0u64;
        let entries = entries
            .iter()
            .map(|&(name, dtype, shape)| {
                let elements: usize = shape.iter().product();
                let end = start + (elements * crate::tensor::decode::item_size(dtype)) as u64;
                let e = Entry {
                    name: name.to_string(),
                    file: 0,
                    shape: shape.to_vec(),
                    dtype: EntryDType::Known(dtype),
                    elements,
                    range: start..end,
                    storage: Storage::Plain {
                        dtype,
                        order: ByteOrder::Little,
                        fortran: false,
                    },
                    problem: None,
                };
                start = end;
                e
            })
            .collect();
        Catalog {
            entries,
            ..Catalog::default()
        }
    }

    pub fn with_config(q: Value) -> Configs {
        Configs {
            config: Some(json!({ "quantization_config": q })),
            ..Configs::default()
        }
    }

    fn names(l: &Layout) -> Vec<&str> {
        l.weights.iter().map(|w| w.name.as_str()).collect()
    }

    fn gptq(scales: &[usize], qzeros: bool) -> Catalog {
        let mut e: Vec<(&str, DType, &[usize])> = vec![
            ("layer.q.bias", DType::F16, &[384]),
            ("layer.q.g_idx", DType::I32, &[384]),
            ("layer.q.qweight", DType::I32, &[48, 384]),
            ("layer.q.scales", DType::F16, scales),
            ("norm.weight", DType::BF16, &[384]),
        ];
        if qzeros {
            e.push(("layer.q.qzeros", DType::I32, &[3, 48]));
        }
        catalog(&e)
    }

    #[test]
    fn a_gptq_module_is_one_weight_named_as_the_original() {
        let q = json!({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": true, "sym": true, "checkpoint_format": "gptq"});
        let l = layout_of(&gptq(&[3, 384], true), &with_config(q));
        assert_eq!(l.name.as_deref(), Some("gptq"));
        assert_eq!(names(&l), ["layer.q.bias", "layer.q.weight", "norm.weight"]);
        let w = &l.weights[1];
        assert_eq!(w.shape, vec![384, 384]);
        assert_eq!(w.format, "GPTQ int4 g128 act-order");
        assert_eq!(w.block, Some(128));
        assert_eq!(w.problem, None);
        assert_eq!(
            w.stored_as,
            [
                "layer.q.qweight",
                "layer.q.qzeros",
                "layer.q.scales",
                "layer.q.g_idx"
            ]
        );
        let bytes = 48 * 384 * 4 + 3 * 48 * 4 + 3 * 384 * 2 + 384 * 4;
        assert_eq!(w.bits_per_weight, bytes as f64 * 8.0 / (384.0 * 384.0));
        let WeightSource::Coded { codec, params, .. } = &w.source else {
            panic!()
        };
        assert_eq!(codec, "gptq.int");
        assert_eq!(params.get("dtype"), Some(&json!("float16")));
        assert_eq!(params.get("desc_act"), Some(&json!(true)));
    }

    #[test]
    fn bad_gptq_modules_get_a_problem_of_their_own() {
        let q = json!({"quant_method": "gptq", "bits": 4, "group_size": 128});
        let l = layout_of(&gptq(&[3, 385], true), &with_config(q.clone()));
        let w = l
            .weights
            .iter()
            .find(|w| w.name == "layer.q.weight")
            .unwrap();
        assert_eq!(
            w.problem.as_deref(),
            Some("qweight [48, 384] disagrees with scales [3, 385]")
        );
        assert_eq!(l.weights.len(), 3);
        let l = layout_of(&gptq(&[3, 384], false), &with_config(q));
        let w = l
            .weights
            .iter()
            .find(|w| w.name == "layer.q.weight")
            .unwrap();
        assert_eq!(w.problem.as_deref(), Some("missing `layer.q.qzeros`"));
        assert!(l
            .weights
            .iter()
            .any(|w| w.name == "norm.weight" && w.problem.is_none()));
    }

    #[test]
    fn awq_gemm_and_what_is_not_read() {
        let c = catalog(&[
            ("m.qweight", DType::I32, &[384, 48]),
            ("m.qzeros", DType::I32, &[3, 48]),
            ("m.scales", DType::BF16, &[3, 384]),
        ]);
        let q = json!({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm", "zero_point": true});
        let l = layout_of(&c, &with_config(q));
        assert_eq!(l.name.as_deref(), Some("awq gemm"));
        assert_eq!(names(&l), ["m.weight"]);
        assert_eq!(l.weights[0].shape, vec![384, 384]);
        assert_eq!(l.weights[0].format, "AWQ GEMM int4 g128");
        let WeightSource::Coded { params, .. } = &l.weights[0].source else {
            panic!()
        };
        assert_eq!(params.get("dtype"), Some(&json!("bfloat16")));
        let gemv = json!({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemv"});
        let l = layout_of(&c, &with_config(gemv));
        assert_eq!(l.name, None);
        assert_eq!(l.weights.len(), 3);
        assert!(
            l.warnings[0].contains("AWQ version `gemv`"),
            "{:?}",
            l.warnings
        );
        let no_bits = json!({"quant_method": "gptq", "group_size": 128});
        let l = layout_of(&c, &with_config(no_bits));
        assert!(l.warnings[0].contains("no `bits`"), "{:?}", l.warnings);
    }
}
