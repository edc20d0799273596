//! Quantized ONNX models (`../shared/golden/onnx_qdq/`, written by ONNX Runtime 1.31.1 and AMD
//! Quark 0.13 from a real MiniLM layer) read as checkpoints from the file alone: every
//! `DequantizeLinear` of an initializer and every `MatMulNBits` is a weight named by the float
//! initializer it replaces, and decodes through its codec to ONNX Runtime's own dequantized
//! output, bit for bit (the sha256 of the float32 values, and the `.npy` where one is stored);
//! every activation Q/DQ pair is listed with its scale, zero point, type and range; the float
//! model's initializers read to their stored bytes; the external-data model reads identically;
//! escaping external data locations are refused.
//!
//! Driven by `cases.json`: a model added there is checked without an edit here.

mod common;

use common::golden_dir;
use prost::Message;
use quantscope::checkpoint::native::Checkpoint;
use quantscope::checkpoint::onnx::proto::{
    GraphProto, ModelProto, NodeProto, OperatorSetIdProto, StringStringEntryProto, TensorProto,
};
use quantscope::tensor::read_tensors;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn sha256_of(bytes: impl IntoIterator<Item = u8>) -> String {
    let mut h = Sha256::new();
    h.update(bytes.into_iter().collect::<Vec<u8>>());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn f32_sha(values: &[f32]) -> String {
    sha256_of(values.iter().flat_map(|v| v.to_le_bytes()))
}

fn dir() -> PathBuf {
    golden_dir().join("onnx_qdq")
}

fn cases() -> Value {
    let text = std::fs::read_to_string(dir().join("cases.json")).expect("onnx_qdq/cases.json");
    serde_json::from_str(&text).unwrap()
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

/// Check one quantized model; `(weights checked, activations checked, failures)`.
fn check_model(model: &Value) -> (usize, usize, Vec<String>) {
    let id = model["id"].as_str().unwrap();
    let path = dir().join(model["file"].as_str().unwrap());
    let ck = Checkpoint::open(std::slice::from_ref(&path));
    let mut failures = Vec::new();
    for e in &ck.catalog.load_errors {
        failures.push(format!("{id}: load error {}: {}", e.file, e.error));
    }
    let layout = ck.layout();
    if layout.name.is_none() {
        failures.push(format!("{id}: no ONNX quantization found"));
    }
    let mut weights = 0;
    for w in model["weights"].as_array().unwrap() {
        let name = w["float_initializer"].as_str().unwrap();
        let Some(weight) = layout.weights.iter().find(|x| x.name == name) else {
            failures.push(format!("{id}: no weight named {name}"));
            continue;
        };
        let shape = usizes(&w["expected_shape"]);
        if weight.shape != shape {
            failures.push(format!(
                "{id}: {name}: shape {:?}, expected {shape:?}",
                weight.shape
            ));
        }
        let quantized = w["quantized_initializer"].as_str().unwrap();
        if !weight.stored_as.iter().any(|s| s == quantized) {
            failures.push(format!(
                "{id}: {name} is not stored as {quantized}: {:?}",
                weight.stored_as
            ));
        }
        let t = match ck.read_weight(weight) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{id}: {name}: {e}"));
                continue;
            }
        };
        let sha = f32_sha(&t.data);
        if sha != w["expected_sha256"].as_str().unwrap() {
            let samples: Vec<String> = w["samples"]
                .as_array()
                .unwrap()
                .iter()
                .take(6)
                .map(|s| {
                    let i = s[0].as_u64().unwrap() as usize;
                    format!(
                        "[{i}] {} vs {}",
                        t.data.get(i).copied().unwrap_or(f32::NAN),
                        s[1]
                    )
                })
                .collect();
            failures.push(format!(
                "{id}: {name}: sha256 differs; {}",
                samples.join(", ")
            ));
            continue;
        }
        if let Some(file) = w["expected_file"].as_str() {
            let path = dir().join("expected").join(id).join(file);
            let bytes = std::fs::read(&path).unwrap();
            let npy = read_tensors(&bytes, file).unwrap().remove(0).tensor;
            let same = npy.data.len() == t.data.len()
                && npy
                    .data
                    .iter()
                    .zip(&t.data)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
            if !same || npy.shape != t.shape {
                failures.push(format!("{id}: {name}: differs from {file}"));
                continue;
            }
        }
        weights += 1;
    }
    if layout
        .weights
        .iter()
        .filter(|w| w.stored_as.len() > 1)
        .count()
        != weights
        && failures.is_empty()
    {
        failures.push(format!(
            "{id}: more quantized weights listed than the golden data has"
        ));
    }
    let mut activations = 0;
    let listed = &layout.activations;
    if listed.len() != model["activations"].as_array().unwrap().len() {
        failures.push(format!(
            "{id}: {} activations listed, {} expected",
            listed.len(),
            model["activations"].as_array().unwrap().len()
        ));
    }
    for a in model["activations"].as_array().unwrap() {
        let tensor = a["tensor"].as_str().unwrap();
        let q_node = a["q_node"].as_str().unwrap();
        let Some(found) = listed
            .iter()
            .find(|x| x.tensor == tensor && x.q_node == q_node)
        else {
            failures.push(format!("{id}: activation {tensor} ({q_node}) not listed"));
            continue;
        };
        let scale: Vec<f32> = a["scale"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let zp: Vec<i64> = a["zero_point"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        let range: Vec<f64> = a["representable_range"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let dq: Vec<&str> = a["dq_nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut problems = Vec::new();
        if found
            .scale
            .iter()
            .map(|s| s.to_bits())
            .ne(scale.iter().map(|s| s.to_bits()))
        {
            problems.push(format!("scale {:?} vs {scale:?}", found.scale));
        }
        if found.zero_point != zp {
            problems.push(format!("zero point {:?} vs {zp:?}", found.zero_point));
        }
        if found.dtype != a["dtype"].as_str().unwrap() {
            problems.push(format!("dtype {} vs {}", found.dtype, a["dtype"]));
        }
        if found.representable_range.map(|r| r.to_vec()) != Some(range.clone()) {
            problems.push(format!(
                "range {:?} vs {range:?}",
                found.representable_range
            ));
        }
        if found.dq_nodes != dq {
            problems.push(format!("dq nodes {:?} vs {dq:?}", found.dq_nodes));
        }
        if problems.is_empty() {
            activations += 1;
        } else {
            failures.push(format!(
                "{id}: activation {tensor}: {}",
                problems.join("; ")
            ));
        }
    }
    (weights, activations, failures)
}

#[test]
fn every_quantized_weight_and_activation_matches_onnx_runtime() {
    let cases = cases();
    let (mut models, mut weights, mut activations, mut failures) = (0, 0, 0, Vec::new());
    for model in cases["models"].as_array().unwrap() {
        let (w, a, f) = check_model(model);
        models += 1;
        weights += w;
        activations += a;
        failures.extend(f);
    }
    eprintln!("onnx_qdq: {models} models, {weights} weights and {activations} activations match");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(models, 7);
    assert_eq!(weights, 108);
    assert_eq!(activations, 182);
}

#[test]
fn the_float_model_reads_as_a_plain_checkpoint() {
    let cases = cases();
    let float = &cases["float_model"];
    let ck = Checkpoint::open(&[dir().join(float["file"].as_str().unwrap())]);
    assert!(
        ck.catalog.load_errors.is_empty(),
        "{:?}",
        ck.catalog.load_errors
    );
    let layout = ck.layout();
    assert_eq!(layout.name, None);
    assert!(layout.activations.is_empty());
    let initializers = float["initializers"].as_array().unwrap();
    assert_eq!(ck.catalog.entries.len(), initializers.len());
    assert_eq!(layout.weights.len(), initializers.len());
    for i in initializers {
        let name = i["name"].as_str().unwrap();
        let e = ck.catalog.entries.iter().find(|e| e.name == name).unwrap();
        assert_eq!(e.problem, None, "{name}");
        assert_eq!(e.shape, usizes(&i["shape"]), "{name}");
        let bytes = ck.bytes(e).unwrap();
        assert_eq!(
            sha256_of(bytes.iter().copied()),
            i["sha256"].as_str().unwrap(),
            "{name}"
        );
        let t = ck.read(e).unwrap();
        if i["dtype"] == "float" {
            assert_eq!(e.dtype.name(), "float32");
            assert_eq!(f32_sha(&t.data), i["sha256"].as_str().unwrap(), "{name}");
        }
    }
}

#[test]
fn the_external_data_model_reads_from_its_data_file() {
    let cases = cases();
    let model = cases["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["external_data"].is_array())
        .expect("a model with external data");
    let path = dir().join(model["file"].as_str().unwrap());
    let ck = Checkpoint::open(std::slice::from_ref(&path));
    assert!(
        ck.catalog.load_errors.is_empty(),
        "{:?}",
        ck.catalog.load_errors
    );
    let external = model["external_data"].as_array().unwrap();
    for x in external {
        let name = x["tensor"].as_str().unwrap();
        let e = ck.catalog.entries.iter().find(|e| e.name == name).unwrap();
        assert_eq!(e.problem, None, "{name}");
        assert!(
            ck.catalog
                .file_name(e)
                .ends_with(x["location"].as_str().unwrap()),
            "{name}"
        );
        let start = x["offset"].as_u64().unwrap();
        assert_eq!(
            e.range,
            start..start + x["length"].as_u64().unwrap(),
            "{name}"
        );
    }
    let inline = model["inline_initializers"].as_array().unwrap();
    assert_eq!(ck.catalog.entries.len(), external.len() + inline.len());
    // Given as a folder, the data file is not listed on its own and nothing fails.
    let folder = Checkpoint::open(&[path.parent().unwrap().to_path_buf()]);
    assert!(folder.catalog.load_errors.is_empty());
    assert_eq!(folder.catalog.entries, ck.catalog.entries);
    // Without its data file, the external tensors say so and the rest reads.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(&path, tmp.path().join("model.onnx")).unwrap();
    let alone = Checkpoint::open(&[tmp.path().join("model.onnx")]);
    let missing: Vec<_> = alone
        .catalog
        .entries
        .iter()
        .filter(|e| e.problem.is_some())
        .collect();
    assert_eq!(missing.len(), external.len());
    assert!(missing[0]
        .problem
        .as_deref()
        .unwrap()
        .contains("model.onnx.data"));
}

// Small models written here: external data locations, typed fields, packing.

fn tensor(name: &str, dims: &[i64], data_type: i32) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type,
        ..TensorProto::default()
    }
}

fn external(mut t: TensorProto, location: &str, offset: u64, length: u64) -> TensorProto {
    let kv = |k: &str, v: String| StringStringEntryProto {
        key: k.into(),
        value: v,
    };
    t.data_location = 1;
    t.external_data = vec![
        kv("location", location.into()),
        kv("offset", offset.to_string()),
        kv("length", length.to_string()),
    ];
    t
}

fn model(initializer: Vec<TensorProto>, node: Vec<NodeProto>) -> Vec<u8> {
    ModelProto {
        ir_version: 10,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 21,
        }],
        producer_name: "quantscope-test".into(),
        graph: Some(GraphProto {
            name: "g".into(),
            node,
            initializer,
            ..GraphProto::default()
        }),
        ..ModelProto::default()
    }
    .encode_to_vec()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn escaping_external_locations_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // A data file outside the model's folder, which must never be read.
    write(root, "secret.bin", &[0u8; 64]);
    write(root, "m/ok.bin", &1.5f32.to_le_bytes().repeat(4));
    let cases = [
        ("../secret.bin", "leaves the model's folder"),
        ("a/../../secret.bin", "leaves the model's folder"),
        ("..\\secret.bin", "leaves the model's folder"),
        ("/etc/passwd", "absolute path"),
        ("\\\\server\\share\\x", "absolute path"),
        ("C:\\secret.bin", "drive letter"),
        ("c:secret.bin", "drive letter"),
        ("file:///etc/passwd", "URL scheme"),
        ("https://example.invalid/x.bin", "URL scheme"),
        ("", "empty"),
        (".", "names the model's folder"),
    ];
    let mut inits: Vec<TensorProto> = cases
        .iter()
        .enumerate()
        .map(|(i, (loc, _))| external(tensor(&format!("t{i}"), &[4], 1), loc, 0, 16))
        .collect();
    inits.push(external(tensor("ok", &[4], 1), "sub/../ok.bin", 0, 16));
    inits.push(external(tensor("beyond", &[4], 1), "ok.bin", 8, 16));
    inits.push(external(tensor("wrong_length", &[4], 1), "ok.bin", 0, 12));
    inits.push(external(tensor("no_file", &[4], 1), "absent.bin", 0, 16));
    let path = write(root, "m/model.onnx", &model(inits, vec![]));
    let ck = Checkpoint::open(std::slice::from_ref(&path));
    assert!(
        ck.catalog.load_errors.is_empty(),
        "{:?}",
        ck.catalog.load_errors
    );
    for (i, (loc, why)) in cases.iter().enumerate() {
        let e = &ck.catalog.entries[i];
        let p = e.problem.as_deref().unwrap_or_default();
        assert!(p.contains("refused") && p.contains(why), "`{loc}`: {p}");
        assert!(ck.read(e).is_err());
        assert!(!ck.catalog.file_name(e).ends_with("secret.bin"));
    }
    assert!(ck
        .catalog
        .files
        .iter()
        .all(|f| !f.name.ends_with("secret.bin")));
    let by = |n: &str| ck.catalog.entries.iter().find(|e| e.name == n).unwrap();
    let ok = by("ok");
    assert_eq!(ok.problem, None);
    assert_eq!(ck.read(ok).unwrap().data, vec![1.5; 4]);
    let beyond = by("beyond").problem.as_deref().unwrap();
    assert!(beyond.contains("beyond the end"), "{beyond}");
    let wrong = by("wrong_length").problem.as_deref().unwrap();
    assert!(wrong.contains("length 12"), "{wrong}");
    let absent = by("no_file").problem.as_deref().unwrap();
    assert!(absent.contains("missing"), "{absent}");
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_out_of_the_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let secret = write(root, "secret.bin", &1.5f32.to_le_bytes().repeat(4));
    std::fs::create_dir_all(root.join("m")).unwrap();
    std::os::unix::fs::symlink(&secret, root.join("m/link.bin")).unwrap();
    let inits = vec![external(tensor("t", &[4], 1), "link.bin", 0, 16)];
    let path = write(root, "m/model.onnx", &model(inits, vec![]));
    let ck = Checkpoint::open(std::slice::from_ref(&path));
    assert!(ck
        .catalog
        .files
        .iter()
        .all(|f| !f.name.ends_with("link.bin")));
    assert!(
        ck.catalog.load_errors[0].error.contains("symbolic link"),
        "{:?}",
        ck.catalog.load_errors
    );
    assert!(ck.catalog.entries[0].problem.is_some());
}

fn node(op: &str, domain: &str, inputs: &[&str], output: &str) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        domain: domain.into(),
        name: format!("{output}_node"),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.into()],
        ..NodeProto::default()
    }
}

#[test]
fn typed_fields_and_packed_int4_decode() {
    let tmp = tempfile::tempdir().unwrap();
    // float_data, int32_data holding int8 codes, int64_data, and raw int4 of odd length.
    let mut f = tensor("f", &[3], 1);
    f.float_data = vec![1.0, -2.5, 3.25];
    let mut q = tensor("w_quantized", &[2, 3], 3);
    q.int32_data = vec![-128, -1, 0, 1, 2, 127];
    let mut s = tensor("w_scale", &[], 1);
    s.float_data = vec![0.5];
    let mut z = tensor("w_zero_point", &[], 3);
    z.int32_data = vec![-2];
    let mut i64s = tensor("shape", &[2], 7);
    i64s.int64_data = vec![-1, 384];
    // int4 [5]: -8, 7, -1, 0, 3 → nibbles 8, 7, f, 0, 3 → bytes 0x78, 0x0f, 0x03.
    let mut q4 = tensor("v_quantized", &[5], 22);
    q4.raw_data = vec![0x78, 0x0f, 0x03];
    let mut s4 = tensor("v_scale", &[], 1);
    s4.raw_data = 0.25f32.to_le_bytes().to_vec();
    let mut z4 = tensor("v_zero_point", &[], 22);
    z4.raw_data = vec![0x0f]; // -1
    let nodes = vec![
        node(
            "DequantizeLinear",
            "",
            &["w_quantized", "w_scale", "w_zero_point"],
            "w",
        ),
        node(
            "DequantizeLinear",
            "com.microsoft",
            &["v_quantized", "v_scale", "v_zero_point"],
            "v",
        ),
    ];
    let path = write(
        tmp.path(),
        "typed.onnx",
        &model(vec![f, q, s, z, i64s, q4, s4, z4], nodes),
    );
    let ck = Checkpoint::open(std::slice::from_ref(&path));
    assert!(
        ck.catalog.load_errors.is_empty(),
        "{:?}",
        ck.catalog.load_errors
    );
    let read = |n: &str| {
        let e = ck.catalog.entries.iter().find(|e| e.name == n).unwrap();
        assert_eq!(e.problem, None, "{n}");
        ck.read(e).unwrap().data
    };
    assert_eq!(read("f"), vec![1.0, -2.5, 3.25]);
    assert_eq!(
        read("w_quantized"),
        vec![-128.0, -1.0, 0.0, 1.0, 2.0, 127.0]
    );
    assert_eq!(read("shape"), vec![-1.0, 384.0]);
    assert_eq!(read("v_quantized"), vec![-8.0, 7.0, -1.0, 0.0, 3.0]);
    let layout = ck.layout();
    let weight = |n: &str| {
        let w = layout.weights.iter().find(|w| w.name == n).unwrap();
        ck.read_weight(w).unwrap().data
    };
    assert_eq!(weight("w"), vec![-63.0, 0.5, 1.0, 1.5, 2.0, 64.5]);
    assert_eq!(weight("v"), vec![-1.75, 2.0, 0.0, 0.25, 1.0]);
    // Plain weights: f and shape; the codes, scales and zero points are taken.
    let names: Vec<&str> = layout.weights.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["f", "w", "shape", "v"]);
}

#[test]
fn malformed_files_are_load_errors_not_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let good = model(vec![tensor("a", &[1], 1)], vec![]);
    for (i, bytes) in [
        b"not a protobuf at all".to_vec(),
        vec![0xff; 32],
        good[..good.len() - 3].to_vec(),
        Vec::new(),
    ]
    .iter()
    .enumerate()
    {
        let path = write(tmp.path(), &format!("bad{i}.onnx"), bytes);
        let ck = Checkpoint::open(&[path]);
        assert!(
            !ck.catalog.load_errors.is_empty()
                || ck.catalog.entries.iter().all(|e| e.problem.is_some())
        );
    }
}

/// `quantscope diff float.onnx <model>` of golden model `model`.
fn diff_against_float(model: &Value) -> quantscope::diff::DiffReport {
    diff_against(&dir().join("float.onnx"), model)
}

/// `quantscope diff <float> <model>` of golden model `model`.
fn diff_against(float: &Path, model: &Value) -> quantscope::diff::DiffReport {
    quantscope::diff::native::diff_paths(
        &[float.to_path_buf()],
        &[dir().join(model["file"].as_str().unwrap())],
        None,
    )
    .unwrap()
}

/// Every golden weight's row of `report` (found by `original_name` of its float initializer)
/// has the golden `metrics_vs_float`; what disagrees, and how many rows were compared.
fn golden_metrics_disagree(
    id: &str,
    model: &Value,
    report: &quantscope::diff::DiffReport,
    original_name: &dyn Fn(&str) -> String,
) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let mut compared = 0;
    for w in model["weights"].as_array().unwrap() {
        let name = w["float_initializer"].as_str().unwrap();
        let original = original_name(name);
        let Some(row) = report.pairs.iter().find(|p| p.original == original) else {
            failures.push(format!("{id}: {original} is not paired"));
            continue;
        };
        let what = format!("{id}: {name}");
        if common::page_diff::check_row(&mut failures, &what, row, &w["metrics_vs_float"]) {
            compared += 1;
        }
    }
    (failures, compared)
}

/// `quantscope diff float.onnx <model>`: every quantized weight pairs with the float initializer
/// it replaces and its metrics equal the golden `metrics_vs_float` (rtol 1e-9).
#[test]
fn the_diff_against_the_float_model_equals_the_golden_metrics() {
    let mut failures = Vec::new();
    let mut compared = 0;
    for model in cases()["models"].as_array().unwrap() {
        let id = model["id"].as_str().unwrap();
        let report = diff_against_float(model);
        let (f, n) = golden_metrics_disagree(id, model, &report, &|name| name.to_string());
        failures.extend(f);
        compared += n;
    }
    eprintln!("onnx_qdq diff: {compared} pairs equal the golden metrics");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The float model with every initializer renamed (`w` → `renamed/<index>`, the nodes' inputs
/// rewritten alike), as an exporter that names weights differently from the quantized model
/// writes it. Names pair nothing; graph positions pair every golden weight with its float
/// initializer, and the metrics are the golden ones. Nothing is left unpaired on the
/// quantized side but what has no float counterpart by name either.
#[test]
fn weights_renamed_in_the_float_model_pair_by_graph_position() {
    let bytes = std::fs::read(dir().join("float.onnx")).unwrap();
    let mut float = ModelProto::decode(bytes.as_slice()).unwrap();
    let graph = float.graph.as_mut().unwrap();
    let renamed: std::collections::HashMap<String, String> = graph
        .initializer
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.clone(), format!("renamed/{i}")))
        .collect();
    for t in &mut graph.initializer {
        t.name = renamed[&t.name].clone();
    }
    for node in &mut graph.node {
        for input in &mut node.input {
            if let Some(r) = renamed.get(input) {
                *input = r.clone();
            }
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), "float-renamed.onnx", &float.encode_to_vec());
    let mut failures = Vec::new();
    let mut compared = 0;
    for model in cases()["models"].as_array().unwrap() {
        let id = model["id"].as_str().unwrap();
        let by_name = diff_against_float(model);
        let report = diff_against(&path, model);
        let (f, n) = golden_metrics_disagree(id, model, &report, &|name| renamed[name].clone());
        failures.extend(f);
        compared += n;
        // The renamed model pairs exactly what the float model pairs by name.
        let pairs = |r: &quantscope::diff::DiffReport| {
            let mut p: Vec<String> = r.pairs.iter().map(|p| p.quantized.clone()).collect();
            p.sort();
            p
        };
        // The page's driver pairs alike.
        let file = dir().join(model["file"].as_str().unwrap());
        let mut dropped = vec![file.clone()];
        let data = PathBuf::from(format!("{}.data", file.display()));
        if data.is_file() {
            dropped.push(data);
        }
        let mut page = common::page_diff::page_diff(std::slice::from_ref(&path), &dropped);
        page.files = report.files.clone();
        if serde_json::to_value(&page).unwrap() != serde_json::to_value(&report).unwrap() {
            failures.push(format!("{id}: the page's driver reports otherwise"));
        }
        if pairs(&report) != pairs(&by_name) {
            failures.push(format!(
                "{id}: by position {} pairs, by name {}; unpaired {:?}",
                report.pairs.len(),
                by_name.pairs.len(),
                report.unpaired
            ));
        }
    }
    eprintln!("onnx_qdq diff of the renamed float model: {compared} golden pairs by position");
    assert!(compared > 0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The page's driver (`DiffSession`) reports what the native diff reports on every model, the
/// external-data model given with its data file as a dropped folder gives it.
#[test]
fn the_page_driver_equals_the_native_diff_on_every_model() {
    for model in cases()["models"].as_array().unwrap() {
        let file = dir().join(model["file"].as_str().unwrap());
        let mut quantized = vec![file.clone()];
        let data = PathBuf::from(format!("{}.data", file.display()));
        if data.is_file() {
            quantized.push(data);
        }
        let original = [dir().join("float.onnx")];
        let native = quantscope::diff::native::diff_paths(&original, &[file], None).unwrap();
        let mut page = common::page_diff::page_diff(&original, &quantized);
        page.files = native.files.clone();
        assert_eq!(
            serde_json::to_value(&page).unwrap(),
            serde_json::to_value(&native).unwrap(),
            "{}",
            model["id"]
        );
    }
}

/// The "vs round-to-nearest" column of an ONNX Runtime model is ONNX Runtime's own quantizer
/// run on the float initializer: `quantize_static`'s min–max weights (per tensor, per axis,
/// int4 blocks; the Add biases quantized as uint8/int16 activations; scalar constants) and
/// `MatMulNBitsQuantizer`'s MLAS blocks give the very arrays the file stores, every one. The
/// int32 LayerNorm biases, whose scale is the input's times gamma's, are refused with that
/// reason. AMD Quark's power-of-two scales come from its own search: none of its weights is
/// ONNX Runtime's min–max.
#[test]
fn onnx_runtimes_quantizer_writes_the_arrays_every_model_stores() {
    let mut failures = Vec::new();
    let (mut identical, mut expected) = (0, 0);
    for model in cases()["models"].as_array().unwrap() {
        let id = model["id"].as_str().unwrap();
        let report = diff_against_float(model);
        for w in model["weights"].as_array().unwrap() {
            let name = w["float_initializer"].as_str().unwrap();
            let row = report.pairs.iter().find(|p| p.original == name).unwrap();
            let same = row.rtn.as_ref().is_some_and(|r| r.identical);
            let quark = id.starts_with("quark");
            expected += usize::from(!quark && w["dtype"] != "int32");
            if w["dtype"] == "int32" {
                let refused = row.rtn_error.as_deref().unwrap_or("");
                if !refused.contains("int32") {
                    failures.push(format!("{id}: {name}: int32 bias not refused: {refused:?}"));
                }
            } else if same == quark {
                failures.push(format!(
                    "{id}: {name}: round-to-nearest identical = {same} ({:?})",
                    row.rtn_error
                ));
            } else if same {
                identical += 1;
            }
        }
    }
    eprintln!("onnx_qdq: {identical} weights encoded to the file's arrays bit for bit");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(identical, expected);
    assert!(identical > 0);
}
