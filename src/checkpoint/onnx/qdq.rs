//! The quantization an ONNX graph holds, found from its nodes, and the checkpoint's weights under
//! it ([`layout`]).
//!
//! * **Weights.** Every `DequantizeLinear` (`ai.onnx` or `com.microsoft`) whose input 0 is an
//!   initializer is one weight decoded by the codec `onnx.dequantize_linear` from its `x`,
//!   `x_scale` and `x_zero_point` initializers, with the node's `axis` (default 1) and
//!   `block_size` (opset 21) and the granularity the scale's shape says (one element: per tensor;
//!   `block_size > 0`: blocked; otherwise per axis). Every `com.microsoft::MatMulNBits` is one
//!   weight `[K, N]` decoded by `onnx.matmul_nbits` from `B`, `scales` and `zero_points`.
//! * **Names.** A weight is named by the float initializer it reconstructs: ONNX Runtime and
//!   Quark name the codes `<w>_quantized` (so `<w>`), MatMulNBits `<w>_Q4` (`<w>`, the bits in
//!   the suffix); otherwise the `DequantizeLinear`'s output name (ONNX Runtime names a quantized
//!   LayerNorm bias's output after the float bias itself). Names are conventions, not contracts:
//!   a diff against a float model also pairs weights by graph position (below).
//! * **Activations.** Every `QuantizeLinear` whose input is not an initializer is an
//!   [`ActivationQdq`]: the tensor, scale, zero point, type, the `DequantizeLinear` nodes reading
//!   it, and the representable range `[(qmin − zp)·s, (qmax − zp)·s]` (float32, as the
//!   dequantization computes it).
//!
//! * **Graph positions.** Every weight also gets a [`Layout::positions`] key, `node:input`: the
//!   first node that reads it (a `DequantizeLinear`'s output for a quantized weight, the
//!   initializer itself for a float one) and the input index it is read at, Q/DQ nodes
//!   skipped. A `MatMulNBits` node stands for the `MatMul` it replaced: ONNX Runtime names it
//!   `<matmul>_Q<bits>`, so its key is `<matmul>:1`. The quantizers keep the float model's node
//!   names, so a weight whose name changed still meets its float initializer there.
//!
//! The scale, zero point and code initializers a weight or activation uses are not weights of
//! their own; every other initializer stays a plain weight.

use super::super::layouts::Layout;
use super::super::source::Parse;
use super::super::weights::{PartFrom, PartSource, Weight, WeightSource};
use super::super::Catalog;
use super::{data_type, Node, OnnxListing};
use crate::params::Params;
use serde::Serialize;
use std::collections::HashMap;

/// One quantized weight of an ONNX graph (entry indices local to its file).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QdqWeight {
    /// The float tensor it reconstructs.
    pub name: String,
    /// `DequantizeLinear` or `com.microsoft::MatMulNBits`, and the node's name.
    pub op: String,
    pub node: String,
    pub shape: Vec<usize>,
    pub codec: &'static str,
    #[serde(skip)]
    pub params: Params,
    /// The codec's stored arrays: `(part, local entry index)`.
    #[serde(skip)]
    pub parts: Vec<(&'static str, usize)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Its graph position, `node:input` (see the module's documentation).
    #[serde(skip)]
    pub position: Option<String>,
}

/// One activation quantize–dequantize pair of an ONNX graph.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
pub struct ActivationQdq {
    /// The float tensor quantized.
    pub tensor: String,
    /// The `QuantizeLinear` node and its domain (`ai.onnx`, `com.microsoft`).
    pub q_node: String,
    pub domain: String,
    /// The quantized type (`uint8`, `int16`, …).
    pub dtype: String,
    /// Scales and zero points as stored (empty when they could not be read while listing).
    pub scale: Vec<f32>,
    pub zero_point: Vec<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub axis: Option<i64>,
    /// The `DequantizeLinear` nodes that read the quantized tensor.
    pub dq_nodes: Vec<String>,
    /// `[(qmin − zp)·s, (qmax − zp)·s]` for a per-tensor integer quantization.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub representable_range: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Everything quantized in one ONNX model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelQdq {
    /// The operator sets imported, `(domain, version)` (`""` is `ai.onnx`).
    pub opsets: Vec<(String, i64)>,
    pub weights: Vec<QdqWeight>,
    pub activations: Vec<ActivationQdq>,
    /// Local entries a weight or an activation uses (codes, scales, zero points).
    #[serde(skip)]
    pub taken: Vec<usize>,
    /// The graph position of every local entry read by a node other than a Q/DQ one.
    #[serde(skip)]
    pub positions: HashMap<usize, String>,
    pub warnings: Vec<String>,
}

fn is_standard(domain: &str) -> bool {
    matches!(domain, "" | "ai.onnx" | "com.microsoft")
}

fn attr_int(node: &Node, name: &str) -> Option<i64> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.i)
}

/// The codec's name for ONNX integer data type `code`.
fn qtype_name(code: i32) -> Option<&'static str> {
    Some(match code {
        2 => "uint8",
        3 => "int8",
        4 => "uint16",
        5 => "int16",
        6 => "int32",
        21 => "uint4",
        22 => "int4",
        _ => return None,
    })
}

/// `(qmin, qmax)` of ONNX integer data type `code`.
fn code_range(code: i32) -> Option<(i64, i64)> {
    Some(match code {
        2 => (0, 255),
        3 => (-128, 127),
        4 => (0, 65535),
        5 => (-32768, 32767),
        6 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        21 => (0, 15),
        22 => (-8, 7),
        _ => return None,
    })
}

/// Find the graph's quantization. `values(i)` reads the values of small local entry `i`.
pub(crate) fn analyse(
    nodes: &[Node],
    listing: &OnnxListing,
    opsets: &[(String, i64)],
    values: &mut dyn FnMut(usize) -> Parse<Option<Vec<f32>>>,
) -> Parse<ModelQdq> {
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    for (i, e) in listing.entries.iter().enumerate() {
        by_name.entry(e.name.as_str()).or_insert(i);
    }
    let init = |name: Option<&String>| {
        name.filter(|n| !n.is_empty())
            .and_then(|n| by_name.get(n.as_str()).copied())
    };
    let mut out = ModelQdq {
        opsets: opsets.to_vec(),
        ..ModelQdq::default()
    };
    let first_reader = first_readers(nodes);
    for (name, &i) in &by_name {
        if let Some(p) = first_reader.get(name) {
            out.positions.insert(i, p.clone());
        }
    }
    let mut seen_x: HashMap<usize, ()> = HashMap::new();
    for node in nodes {
        let domain = node.domain.as_str();
        match node.op_type.as_str() {
            "DequantizeLinear" if is_standard(domain) => {
                let Some(x) = init(node.input.first()) else {
                    continue;
                };
                if seen_x.insert(x, ()).is_some() {
                    continue;
                }
                let mut w = dq_weight(node, x, listing, &init);
                w.position = node
                    .output
                    .first()
                    .and_then(|o| first_reader.get(o.as_str()).cloned());
                out.weights.push(w);
            }
            "MatMulNBits" if domain == "com.microsoft" => {
                let Some(b) = init(node.input.get(1)) else {
                    continue;
                };
                if seen_x.insert(b, ()).is_some() {
                    continue;
                }
                let mut w = nbits_weight(node, b, listing, &init);
                w.position = replaced_matmul(node).map(|m| format!("{m}:1"));
                out.weights.push(w);
            }
            _ => {}
        }
    }
    for w in &out.weights {
        out.taken.extend(w.parts.iter().map(|&(_, i)| i));
    }
    for node in nodes {
        if node.op_type != "QuantizeLinear" || !is_standard(&node.domain) {
            continue;
        }
        let Some(tensor) = node.input.first() else {
            continue;
        };
        if init(Some(tensor)).is_some() {
            continue;
        }
        let mut a = ActivationQdq {
            tensor: tensor.clone(),
            q_node: node.name.clone(),
            domain: if node.domain.is_empty() {
                "ai.onnx".into()
            } else {
                node.domain.clone()
            },
            dtype: String::new(),
            scale: Vec::new(),
            zero_point: Vec::new(),
            axis: attr_int(node, "axis"),
            dq_nodes: Vec::new(),
            representable_range: None,
            problem: None,
        };
        if let Some(q) = node.output.first() {
            a.dq_nodes = nodes
                .iter()
                .filter(|d| {
                    d.op_type == "DequantizeLinear"
                        && is_standard(&d.domain)
                        && d.input.first() == Some(q)
                })
                .map(|d| d.name.clone())
                .collect();
        }
        let scale = init(node.input.get(1));
        let zp = init(node.input.get(2));
        let code = match zp {
            Some(z) => listing.types[z],
            // Opset 21's output_dtype, else uint8.
            None => attr_int(node, "output_dtype").map_or(2, |t| t as i32),
        };
        a.dtype =
            data_type(code).map_or_else(|| format!("ONNX data type {code}"), |d| d.name.into());
        match scale {
            Some(s) => {
                out.taken.push(s);
                match values(s)? {
                    Some(v) => a.scale = v,
                    None => a.problem = Some("its scale could not be read while listing".into()),
                }
            }
            None => {
                a.problem = Some(format!(
                    "its scale `{}` is not an initializer",
                    node.input.get(1).map_or("", String::as_str)
                ))
            }
        }
        match zp {
            Some(z) => {
                out.taken.push(z);
                match values(z)? {
                    Some(v) => a.zero_point = v.iter().map(|&x| x as i64).collect(),
                    None => {
                        a.problem.get_or_insert_with(|| {
                            "its zero point could not be read while listing".into()
                        });
                    }
                }
            }
            None => a.zero_point = vec![0; a.scale.len().max(1)],
        }
        if let ([s], [zp], Some((qmin, qmax))) = (
            a.scale.as_slice(),
            a.zero_point.as_slice(),
            code_range(code),
        ) {
            a.representable_range = Some([
                f64::from((qmin - zp) as f32 * s),
                f64::from((qmax - zp) as f32 * s),
            ]);
        }
        out.activations.push(a);
    }
    out.taken.sort_unstable();
    out.taken.dedup();
    Ok(out)
}

/// For every tensor name, the graph position `node:input` of the first node that reads it,
/// quantize and dequantize nodes skipped (unnamed nodes have no position).
fn first_readers(nodes: &[Node]) -> HashMap<&str, String> {
    let mut first = HashMap::new();
    for node in nodes {
        let qdq = matches!(node.op_type.as_str(), "QuantizeLinear" | "DequantizeLinear");
        if qdq || node.name.is_empty() {
            continue;
        }
        for (k, input) in node.input.iter().enumerate() {
            if !input.is_empty() {
                first
                    .entry(input.as_str())
                    .or_insert_with(|| format!("{}:{k}", node.name));
            }
        }
    }
    first
}

/// The name of the `MatMul` a `MatMulNBits` node replaced: ONNX Runtime's quantizer names it
/// `<matmul>_Q<bits>`.
fn replaced_matmul(node: &Node) -> Option<&str> {
    let bits = attr_int(node, "bits").unwrap_or(4);
    node.name
        .strip_suffix(format!("_Q{bits}").as_str())
        .filter(|m| !m.is_empty())
}

/// The weight of `DequantizeLinear` `node` whose `x` is local entry `x`.
fn dq_weight(
    node: &Node,
    x: usize,
    listing: &OnnxListing,
    init: &dyn Fn(Option<&String>) -> Option<usize>,
) -> QdqWeight {
    let e = &listing.entries[x];
    let name = e
        .name
        .strip_suffix("_quantized")
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .or_else(|| node.output.first().filter(|o| !o.is_empty()).cloned())
        .unwrap_or_else(|| e.name.clone());
    let mut w = QdqWeight {
        name,
        op: if node.domain == "com.microsoft" {
            "com.microsoft::DequantizeLinear".into()
        } else {
            "DequantizeLinear".into()
        },
        node: node.name.clone(),
        shape: e.shape.clone(),
        codec: "onnx.dequantize_linear",
        params: Params::new(),
        parts: vec![("x", x)],
        block: None,
        problem: None,
        position: None,
    };
    let code = listing.types[x];
    let Some(qtype) = qtype_name(code) else {
        let name = data_type(code).map_or("an unknown type", |d| d.name);
        problem(
            &mut w,
            format!("DequantizeLinear of {name} codes is not decoded by quantscope (it decodes int4..int32)"),
        );
        return w;
    };
    let scale = init(node.input.get(1));
    let Some(scale) = scale else {
        problem(
            &mut w,
            format!(
                "its scale `{}` is not an initializer",
                node.input.get(1).map_or("", String::as_str)
            ),
        );
        return w;
    };
    w.parts.push(("x_scale", scale));
    if listing.types[scale] != 1 {
        let name = data_type(listing.types[scale]).map_or("an unknown type", |d| d.name);
        problem(
            &mut w,
            format!("its scale is {name}; quantscope decodes float32 scales"),
        );
    }
    match node.input.get(2).filter(|z| !z.is_empty()) {
        None => {}
        Some(z) => match init(Some(z)) {
            Some(zp) => {
                w.parts.push(("x_zero_point", zp));
                if listing.types[zp] != code {
                    problem(
                        &mut w,
                        "its zero point's type differs from the codes'".into(),
                    );
                }
            }
            None => problem(
                &mut w,
                format!("its zero point `{z}` is not an initializer"),
            ),
        },
    }
    let axis = attr_int(node, "axis").unwrap_or(1);
    let block_size = attr_int(node, "block_size").unwrap_or(0);
    let s = &listing.entries[scale];
    let granularity = if block_size > 0 {
        w.block = usize::try_from(block_size).ok();
        "blocked"
    } else if s.elements == 1 && s.shape.len() <= 1 {
        "per_tensor"
    } else {
        "per_axis"
    };
    if block_size < 0 {
        problem(&mut w, format!("block_size {block_size} is negative"));
    }
    w.params = Params::new()
        .with("dtype", qtype)
        .with("granularity", granularity)
        .with("axis", axis);
    if granularity == "blocked" {
        w.params = w.params.clone().with("block_size", block_size);
    }
    parts_problem(&mut w, listing);
    w
}

/// The weight of `MatMulNBits` `node` whose `B` is local entry `b`.
fn nbits_weight(
    node: &Node,
    b: usize,
    listing: &OnnxListing,
    init: &dyn Fn(Option<&String>) -> Option<usize>,
) -> QdqWeight {
    let e = &listing.entries[b];
    let k = attr_int(node, "K").unwrap_or(0);
    let n = attr_int(node, "N").unwrap_or(0);
    let bits = attr_int(node, "bits").unwrap_or(4);
    let block_size = attr_int(node, "block_size").unwrap_or(0);
    let suffix = format!("_Q{bits}");
    let name = e
        .name
        .strip_suffix(suffix.as_str())
        .filter(|s| !s.is_empty())
        .unwrap_or(&e.name)
        .to_string();
    let mut w = QdqWeight {
        name,
        op: "com.microsoft::MatMulNBits".into(),
        node: node.name.clone(),
        shape: vec![
            usize::try_from(k).unwrap_or(0),
            usize::try_from(n).unwrap_or(0),
        ],
        codec: "onnx.matmul_nbits",
        params: Params::new()
            .with("bits", bits)
            .with("block_size", block_size),
        parts: vec![("B", b)],
        block: usize::try_from(block_size).ok(),
        problem: None,
        position: None,
    };
    if k <= 0 || n <= 0 || block_size <= 0 || !(2..=8).contains(&bits) {
        problem(
            &mut w,
            format!("attributes K={k}, N={n}, bits={bits}, block_size={block_size} are not a MatMulNBits weight quantscope decodes"),
        );
    }
    if listing.types[b] != 2 {
        problem(&mut w, "B is not uint8".into());
    }
    match init(node.input.get(2)) {
        Some(s) => {
            w.parts.push(("scales", s));
            if listing.types[s] != 1 {
                problem(&mut w, "its scales are not float32".into());
            }
        }
        None => problem(&mut w, "its scales are not an initializer".into()),
    }
    if let Some(z) = node.input.get(3).filter(|z| !z.is_empty()) {
        match init(Some(z)) {
            Some(zp) if listing.types[zp] == 2 => w.parts.push(("zero_points", zp)),
            Some(_) => problem(
                &mut w,
                "its zero points are not uint8 (float zero points are not decoded)".into(),
            ),
            None => problem(
                &mut w,
                format!("its zero points `{z}` are not an initializer"),
            ),
        }
    }
    if node.input.get(4).is_some_and(|g| !g.is_empty()) {
        problem(
            &mut w,
            "g_idx (act-order) is not decoded by quantscope".into(),
        );
    }
    parts_problem(&mut w, listing);
    w
}

/// The weights of `catalog` when it holds ONNX models: quantized ones decoded by their codec,
/// every other entry plain; `None` when it holds no ONNX model.
pub fn layout(catalog: &Catalog) -> Option<Layout> {
    if catalog.onnx.is_empty() {
        return None;
    }
    let mut anchors: HashMap<usize, Weight> = HashMap::new();
    let mut taken = std::collections::HashSet::new();
    let mut activations = Vec::new();
    let mut warnings = Vec::new();
    let mut kinds = Vec::new();
    let mut positions = std::collections::BTreeMap::new();
    let mut entry_positions = HashMap::new();
    for m in &catalog.onnx {
        let global = |i: usize| m.first_entry + i;
        taken.extend(m.qdq.taken.iter().map(|&i| global(i)));
        entry_positions.extend(m.qdq.positions.iter().map(|(&i, p)| (global(i), p)));
        for w in &m.qdq.weights {
            if let Some(p) = &w.position {
                positions.insert(w.name.clone(), p.clone());
            }
        }
        activations.extend(m.qdq.activations.iter().cloned());
        warnings.extend(m.qdq.warnings.iter().cloned());
        for w in &m.qdq.weights {
            let kind = if w.codec == "onnx.matmul_nbits" {
                "MatMulNBits"
            } else {
                "Q/DQ"
            };
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
            let Some(&(_, anchor)) = w.parts.first() else {
                continue;
            };
            anchors.insert(global(anchor), coded_weight(catalog, w, &global));
        }
    }
    let weights = (0..catalog.entries.len())
        .filter_map(|g| match anchors.remove(&g) {
            Some(w) => Some(w),
            None if taken.contains(&g) => None,
            None => {
                let w = Weight::of_entry(catalog, g)?;
                if let Some(&p) = entry_positions.get(&g) {
                    positions.insert(w.name.clone(), p.clone());
                }
                Some(w)
            }
        })
        .collect();
    let name = (!kinds.is_empty()).then(|| format!("ONNX {}", kinds.join(" + ")));
    let mut layout = Layout {
        name,
        weights,
        warnings,
        positions,
        ..Layout::default()
    };
    layout.activations = activations;
    Some(layout)
}

fn coded_weight(catalog: &Catalog, w: &QdqWeight, global: &dyn Fn(usize) -> usize) -> Weight {
    let stored: u64 = w
        .parts
        .iter()
        .filter_map(|&(_, i)| catalog.entries.get(global(i)))
        .map(|e| e.range.end.saturating_sub(e.range.start))
        .sum();
    let elements = crate::tensor::element_count(&w.shape).unwrap_or(0);
    let codec = crate::codec::find(w.codec).and_then(|c| c.build(&w.params, &w.shape));
    let format = codec
        .as_ref()
        .map_or_else(|_| w.codec.to_string(), |c| c.label());
    let mut problem = w.problem.clone();
    if let Err(e) = &codec {
        problem.get_or_insert_with(|| e.to_string());
    }
    Weight {
        name: w.name.clone(),
        shape: w.shape.clone(),
        format,
        bits_per_weight: if elements == 0 {
            0.0
        } else {
            stored as f64 * 8.0 / elements as f64
        },
        block: w.block,
        source: WeightSource::Coded {
            codec: w.codec.to_string(),
            params: w.params.clone(),
            parts: w
                .parts
                .iter()
                .map(|&(part, i)| PartSource {
                    part,
                    from: PartFrom::Entry(global(i)),
                })
                .collect(),
        },
        stored_as: w
            .parts
            .iter()
            .filter_map(|&(_, i)| catalog.entries.get(global(i)))
            .map(|e| e.name.clone())
            .collect(),
        problem,
    }
}

/// Record `p` unless the weight already has a problem.
fn problem(w: &mut QdqWeight, p: String) {
    w.problem.get_or_insert(p);
}

/// The first problem of the entries a weight is stored in.
fn parts_problem(w: &mut QdqWeight, listing: &OnnxListing) {
    let found = w.parts.iter().find_map(|&(_, i)| {
        let e = &listing.entries[i];
        e.problem.as_ref().map(|p| format!("`{}`: {p}", e.name))
    });
    if let Some(p) = found {
        problem(w, p);
    }
}
