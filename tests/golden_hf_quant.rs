//! Quantized Hugging Face checkpoints (`../shared/golden/hf_quant/`): every layout the libraries
//! wrote (compressed-tensors, bitsandbytes, DeepSeek FP8, gpt-oss MXFP4, GPTQ, AWQ, ModelOpt) is
//! recognised from its configuration and each quantized weight decodes, through its codec, to
//! the library's own dequantized values: the sha256 of the whole float32 tensor, sign of zero
//! included, and the `.npy` where one is stored. Unquantized tensors stay plain weights of the
//! same bytes.
//!
//! Driven by the data: a layout added to `cases.json` is checked as soon as it is there.
//! `HF_LAYOUTS=ct_,bnb_` restricts the run to layouts whose id starts with one of the prefixes
//! (while a family is being written); unset, every layout must pass.

mod common;

use common::golden_dir;
use quantscope::checkpoint::native::Checkpoint;
use quantscope::tensor::read_tensors;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn sha256_of(values: &[f32]) -> String {
    let mut h = Sha256::new();
    for v in values {
        h.update(v.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn wanted(id: &str) -> bool {
    match std::env::var("HF_LAYOUTS") {
        Ok(list) if !list.is_empty() => list.split(',').any(|p| id.starts_with(p)),
        _ => true,
    }
}

/// Check one layout; the failures, each naming the tensor.
fn check_layout(dir: &std::path::Path, layout: &Value) -> (usize, Vec<String>) {
    let id = layout["id"].as_str().unwrap();
    // The checkpoint's tensor files only: opening the folder would also list `expected/*.npy`,
    // whose entries carry the very names of the weights checked (and their expected values).
    let files: Vec<std::path::PathBuf> = layout["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["file"].as_str())
        .filter(|f| f.ends_with(".safetensors"))
        .map(|f| dir.join(f))
        .collect();
    let ck = Checkpoint::open(&files);
    let mut failures = Vec::new();
    for e in &ck.catalog.load_errors {
        failures.push(format!("{id}: load error {}: {}", e.file, e.error));
    }
    let found = ck.layout();
    if found.name.is_none() {
        failures.push(format!(
            "{id}: layout not recognised ({:?})",
            found.warnings
        ));
    }
    let mut checked = 0;
    for t in layout["tensors"].as_array().unwrap() {
        let name = t["original"].as_str().unwrap();
        let Some(weight) = found.weights.iter().find(|w| w.name == name) else {
            failures.push(format!("{id}: no weight named {name}"));
            continue;
        };
        let shape: Vec<usize> = t["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        if weight.shape != shape {
            failures.push(format!(
                "{id}: {name} has shape {:?}, expected {shape:?}",
                weight.shape
            ));
            continue;
        }
        let values = match ck.read_weight(weight) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{id}: {name}: {e}"));
                continue;
            }
        };
        let got = sha256_of(&values.data);
        if got != t["expected_sha256_f32le"].as_str().unwrap() {
            let canonical: Vec<f32> = values
                .data
                .iter()
                .map(|&v| if v == 0.0 { 0.0 } else { v })
                .collect();
            let zeros_only = sha256_of(&canonical)
                == t["expected_sha256_f32le_zeros_canonical"].as_str().unwrap();
            failures.push(format!(
                "{id}: {name}: sha256 differs{}",
                if zeros_only {
                    " (only in the sign of zeros)"
                } else {
                    ""
                }
            ));
            continue;
        }
        if let Some(npy) = t["expected"].as_str() {
            let path = dir.join(npy);
            let bytes = std::fs::read(&path).unwrap();
            let expected = read_tensors(&bytes, &path.to_string_lossy())
                .unwrap()
                .remove(0)
                .tensor;
            let same = expected.shape == values.shape
                && expected
                    .data
                    .iter()
                    .zip(&values.data)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
            if !same {
                failures.push(format!("{id}: {name}: differs from {npy}"));
                continue;
            }
        }
        checked += 1;
    }
    // Unquantized tensors are plain weights holding the original bytes.
    for p in layout["passthrough"].as_array().into_iter().flatten() {
        let name = p["name"].as_str().or(p["tensor"].as_str()).unwrap_or("");
        if !found.weights.iter().any(|w| w.name == name) {
            failures.push(format!("{id}: passthrough tensor {name} is not a weight"));
        }
    }
    (checked, failures)
}

#[test]
fn every_quantized_layout_decodes_to_the_librarys_values() {
    let dir = golden_dir().join("hf_quant");
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut layouts = 0;
    for layout in cases["layouts"].as_array().unwrap() {
        if !wanted(layout["id"].as_str().unwrap()) {
            continue;
        }
        layouts += 1;
        let (n, f) = check_layout(&dir, layout);
        checked += n;
        failures.extend(f);
    }
    eprintln!("hf_quant: {checked} weights of {layouts} layouts decoded exactly");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 0);
}

/// `quantscope diff original/ <layout>/`: every quantized weight pairs with its original by name
/// and its metrics equal the golden ones (rtol 1e-9); the round-to-nearest column equals the
/// golden `rtn` metrics wherever quantscope's encoder reproduces that format (every layout but
/// every layout here: a format whose encoder is not reproduced would say so in `rtn_error`).
#[test]
fn the_diff_of_every_layout_equals_the_golden_metrics() {
    let dir = golden_dir().join("hf_quant");
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let original = dir.join("original").join("model.safetensors");
    let mut failures = Vec::new();
    let (mut compared, mut rtn_compared, mut rtn_refused) = (0, 0, 0);
    for layout in cases["layouts"].as_array().unwrap() {
        let id = layout["id"].as_str().unwrap();
        if !wanted(id) {
            continue;
        }
        let report = quantscope::diff::native::diff_paths(
            std::slice::from_ref(&original),
            &[dir.join(layout["dir"].as_str().unwrap())],
            None,
        )
        .unwrap();
        for t in layout["tensors"].as_array().unwrap() {
            let name = t["original"].as_str().unwrap();
            let Some(row) = report.pairs.iter().find(|p| p.original == name) else {
                failures.push(format!("{id}: {name} is not paired"));
                continue;
            };
            if !common::page_diff::check_row(
                &mut failures,
                &format!("{id}: {name}"),
                row,
                &t["metrics"],
            ) {
                continue;
            }
            compared += 1;
            if t["rtn"].is_null() {
                // The golden data has no round-to-nearest for this weight (DeepSeek's padded
                // probes, which compressed-tensors' FP8_BLOCK refuses).
                continue;
            }
            match (&row.rtn, &row.rtn_error) {
                (Some(r), _) => {
                    failures.extend(common::page_diff::metrics_disagree(
                        &format!("{id}: {name}: rtn"),
                        &r.metrics,
                        &t["rtn"]["metrics"],
                    ));
                    rtn_compared += 1;
                }
                (None, Some(e)) if e.contains("not reproduced") => rtn_refused += 1,
                other => failures.push(format!("{id}: {name}: no round-to-nearest: {other:?}")),
            }
        }
        // Activation scales (ModelOpt's `input_scale`) quantize no weight and have no original.
        let unpaired: Vec<&String> = report
            .unpaired
            .quantized
            .iter()
            .filter(|n| !n.ends_with(".input_scale"))
            .collect();
        if !unpaired.is_empty() {
            failures.push(format!("{id}: unpaired quantized weights {unpaired:?}"));
        }
    }
    eprintln!(
        "hf_quant diff: {compared} pairs equal the golden metrics, {rtn_compared} round-to-nearest \
         columns equal the golden rtn, {rtn_refused} refused (encoder not reproduced)"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The page's driver (`DiffSession`, given the layout folder's files as a dropped folder gives
/// them: the tensor files and the configuration files) reports what the native diff reports.
#[test]
fn the_page_driver_equals_the_native_diff_on_every_layout() {
    let dir = golden_dir().join("hf_quant");
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let original = dir.join("original").join("model.safetensors");
    for layout in cases["layouts"].as_array().unwrap() {
        let folder = dir.join(layout["dir"].as_str().unwrap());
        // Every file of the folder, its `expected/*.npy` included (left out as on disk).
        let mut files: Vec<_> = std::fs::read_dir(&folder)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .flat_map(|p| match std::fs::read_dir(&p) {
                Ok(sub) => sub.flatten().map(|e| e.path()).collect(),
                Err(_) => vec![p],
            })
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        let native = quantscope::diff::native::diff_paths(
            std::slice::from_ref(&original),
            std::slice::from_ref(&folder),
            None,
        )
        .unwrap();
        let mut page = common::page_diff::page_diff(std::slice::from_ref(&original), &files);
        // The page names the files it was given; the native diff the files it listed.
        page.files = native.files.clone();
        let (a, b) = (
            serde_json::to_value(&page).unwrap(),
            serde_json::to_value(&native).unwrap(),
        );
        assert_eq!(a, b, "{}", layout["id"]);
    }
}

/// bitsandbytes packs 4-bit codes into a `quant_storage` tensor of any dtype (`bfloat16` or
/// `float32` for FSDP): the same bytes, as `[N·K/(2·itemsize), 1]` of that dtype. Every golden
/// 4-bit layout rewritten so (the header's dtype and shape changed, the data untouched) decodes
/// to the library's values as the uint8 file does.
#[test]
fn bitsandbytes_codes_in_another_quant_storage_decode_alike() {
    let dir = golden_dir().join("hf_quant");
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let tmp = std::env::temp_dir().join(format!("qs-bnb-storage-{}", std::process::id()));
    let mut failures = Vec::new();
    let mut checked = 0;
    for layout in cases["layouts"].as_array().unwrap() {
        let id = layout["id"].as_str().unwrap();
        if !(id.starts_with("bnb_nf4") || id.starts_with("bnb_fp4")) {
            continue;
        }
        for (dtype, size) in [("BF16", 2), ("F32", 4)] {
            let out = tmp.join(dtype).join(id);
            std::fs::create_dir_all(&out).unwrap();
            // The expected values are the golden ones.
            let expected = dir.join(id).join("expected");
            if expected.is_dir() && !out.join("expected").exists() {
                std::os::unix::fs::symlink(&expected, out.join("expected")).unwrap();
            }
            for f in layout["files"].as_array().unwrap() {
                let file = f["file"].as_str().unwrap();
                let bytes = std::fs::read(dir.join(file)).unwrap();
                let target = tmp.join(dtype).join(file);
                if !file.ends_with(".safetensors") {
                    std::fs::write(target, bytes).unwrap();
                    continue;
                }
                let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
                let mut header: serde_json::Map<String, Value> =
                    serde_json::from_slice(&bytes[8..8 + n]).unwrap();
                let packed: Vec<String> = header
                    .keys()
                    .filter(|k| k.contains(".quant_state.bitsandbytes__"))
                    .map(|k| k[..k.find(".quant_state.").unwrap()].to_string())
                    .collect();
                for name in packed {
                    let e = header.get_mut(&name).unwrap();
                    let len = e["shape"][0].as_u64().unwrap();
                    assert_eq!(len % size, 0, "{id}: {name}");
                    e["dtype"] = Value::from(dtype);
                    e["shape"] = serde_json::json!([len / size, 1]);
                }
                let mut text = serde_json::to_vec(&header).unwrap();
                text.resize(n.max(text.len()).next_multiple_of(8), b' ');
                let mut rewritten = (text.len() as u64).to_le_bytes().to_vec();
                rewritten.extend_from_slice(&text);
                rewritten.extend_from_slice(&bytes[8 + n..]);
                std::fs::write(target, rewritten).unwrap();
            }
            let (n, f) = check_layout(&tmp.join(dtype), layout);
            checked += n;
            failures.extend(f.into_iter().map(|f| format!("{dtype}: {f}")));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!("bitsandbytes quant_storage: {checked} weights decoded exactly");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 0);
}
