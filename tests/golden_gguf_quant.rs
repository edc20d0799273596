//! Real GGUF files as a user opens them (`../shared/golden/gguf_quant/`): every tensor of every
//! file is read through the checkpoint reader (quantized types through their ggml codec) to
//! ggml's own dequantized values; each file's bits per weight and type counts equal the golden
//! summary; the diff against the bf16 original pairs every tensor (Hugging Face ↔ GGUF names)
//! and its metrics equal the golden per-tensor metrics (imatrix-weighted error included); the
//! importance matrices load as llama-quantize loads them, in both formats.

mod cli_run;
mod common;

use common::golden_dir;
use quantscope::checkpoint::imatrix;
use quantscope::checkpoint::native::Checkpoint;
use quantscope::diff::native::diff_paths;
use quantscope::tensor::read_tensors;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;

fn sha256_of(values: &[f32]) -> String {
    let mut h = Sha256::new();
    for v in values {
        h.update(v.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn cases() -> Value {
    let dir = golden_dir().join("gguf_quant");
    serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap()
}

fn close(got: f64, want: f64) -> bool {
    got == want || ((got - want).abs() <= 1e-9 * want.abs().max(got.abs()))
}

#[test]
fn every_gguf_tensor_reads_to_ggmls_values_and_files_summarise_as_golden() {
    let dir = golden_dir().join("gguf_quant");
    let mut failures = Vec::new();
    let mut read = 0;
    for file in cases()["files"].as_array().unwrap() {
        let name = file["file"].as_str().unwrap();
        let ck = Checkpoint::open(&[dir.join(name)]);
        let layout = ck.layout();
        let summary = layout.summary(&ck.catalog);
        if !close(
            summary.bits_per_weight,
            file["bits_per_weight"].as_f64().unwrap(),
        ) {
            failures.push(format!(
                "{name}: {} bits per weight, golden {}",
                summary.bits_per_weight, file["bits_per_weight"]
            ));
        }
        let counts: Value = serde_json::to_value(&summary.formats).unwrap();
        if counts != file["type_counts"] {
            failures.push(format!(
                "{name}: type counts {counts}, golden {}",
                file["type_counts"]
            ));
        }
        for t in file["tensors"].as_array().unwrap() {
            let gguf_name = t["gguf_name"].as_str().unwrap();
            let Some(w) = layout.weights.iter().find(|w| w.name == gguf_name) else {
                failures.push(format!("{name}: no tensor {gguf_name}"));
                continue;
            };
            if w.format != t["ggml_type"].as_str().unwrap() {
                failures.push(format!("{name}: {gguf_name} is listed as {}", w.format));
            }
            match ck.read_weight(w) {
                Ok(values) => {
                    if sha256_of(&values.data) != t["expected"]["sha256"].as_str().unwrap() {
                        failures.push(format!("{name}: {gguf_name} differs from ggml's values"));
                    } else {
                        read += 1;
                    }
                }
                Err(e) => failures.push(format!("{name}: {gguf_name}: {e}")),
            }
        }
    }
    eprintln!("gguf_quant: {read} tensors read exactly");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_diff_against_the_bf16_original_equals_the_golden_metrics() {
    let dir = golden_dir().join("gguf_quant");
    let original = dir.join("original").join("model.safetensors");
    let im = dir.join("imatrix.gguf");
    let mut failures = Vec::new();
    let mut compared = 0;
    for file in cases()["files"].as_array().unwrap() {
        let name = file["file"].as_str().unwrap();
        let report = diff_paths(
            std::slice::from_ref(&original),
            &[dir.join(name)],
            Some(&im),
        )
        .unwrap();
        let tensors = file["tensors"].as_array().unwrap();
        if report.pairs.len() != tensors.len() || !report.unpaired.quantized.is_empty() {
            failures.push(format!(
                "{name}: {} pairs for {} tensors; unpaired {:?}",
                report.pairs.len(),
                tensors.len(),
                report.unpaired.quantized
            ));
        }
        for t in tensors {
            let gguf_name = t["gguf_name"].as_str().unwrap();
            let Some(row) = report.pairs.iter().find(|p| p.quantized == gguf_name) else {
                failures.push(format!("{name}: {gguf_name} is not paired"));
                continue;
            };
            if row.original != t["hf_name"].as_str().unwrap() {
                failures.push(format!(
                    "{name}: {gguf_name} paired with {}, golden {}",
                    row.original, t["hf_name"]
                ));
            }
            let what = format!("{name}: {gguf_name}");
            if common::page_diff::check_row(
                &mut failures,
                &what,
                row,
                &t["metrics_vs_original_bf16"],
            ) {
                compared += 1;
            }
        }
    }
    eprintln!("gguf_quant diff: {compared} pairs equal the golden metrics");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn read_npy(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    read_tensors(&bytes, &path.to_string_lossy())
        .unwrap()
        .remove(0)
        .tensor
        .data
}

#[test]
fn importance_matrices_load_as_llama_quantize_loads_them() {
    let dir = golden_dir().join("gguf_quant");
    let c = cases();
    for (file, key) in [
        ("imatrix.gguf", "importance"),
        ("imatrix.dat", "importance_legacy"),
    ] {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let im = imatrix::read(file, &bytes).unwrap();
        let entries = c["imatrix"]["entries"].as_array().unwrap();
        assert_eq!(im.by_weight.len(), entries.len(), "{file}");
        for e in entries {
            let name = e["name"].as_str().unwrap();
            let want = read_npy(&dir.join(e[key].as_str().unwrap()));
            let got = im.of(name).unwrap_or_else(|| panic!("{file}: no {name}"));
            assert!(
                got.len() == want.len()
                    && got
                        .iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{file}: {name}"
            );
        }
    }
}

#[test]
fn the_cli_diff_pairs_every_tensor_of_the_q4_k_m_file() {
    let dir = golden_dir().join("gguf_quant");
    let out = cli_run::quantscope(&[
        "diff",
        &dir.join("original/model.safetensors").to_string_lossy(),
        &dir.join("model-Q4_K_M.gguf").to_string_lossy(),
        "--json",
    ]);
    assert_eq!(out.0, 0, "{}", out.2);
    let doc: Value = serde_json::from_str(&out.1).unwrap();
    assert_eq!(doc["pairs"].as_array().unwrap().len(), 36);
    assert_eq!(doc["unpaired"]["quantized"].as_array().unwrap().len(), 0);
    // Worst first, each quantized row with its round-to-nearest comparison.
    let nmse: Vec<f64> = doc["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metrics"]["nmse"].as_f64().unwrap())
        .collect();
    assert!(nmse.windows(2).all(|w| w[0] >= w[1]));
    let first = &doc["pairs"][0];
    assert_eq!(first["format"], "Q5_0");
    assert!(first["rtn"]["metrics"]["sqnr_db"].as_f64().unwrap() > 20.0);
    // Quantized without an importance matrix, every block-quantized weight is stored exactly as
    // ggml's round-to-nearest stores it, so its RTN column is the quantized one.
    let rounded: Vec<&Value> = doc["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["rtn"].is_null())
        .collect();
    assert!(
        rounded.len() >= 13,
        "{} rows with an RTN column",
        rounded.len()
    );
    for p in rounded {
        assert_eq!(p["rtn"]["identical"], true, "{}", p["quantized"]);
        assert_eq!(p["rtn"]["metrics"], p["metrics"], "{}", p["quantized"]);
    }
}

/// With an importance matrix, the types that use it (Q5_0, Q6_K here) store other codes than
/// round-to-nearest; Q8_0 ignores it and stays identical.
#[test]
fn the_cli_diff_tells_imatrix_weights_from_round_to_nearest() {
    let dir = golden_dir().join("gguf_quant");
    let out = cli_run::quantscope(&[
        "diff",
        &dir.join("original/model.safetensors").to_string_lossy(),
        &dir.join("model-Q4_K_M-imatrix.gguf").to_string_lossy(),
        "--json",
    ]);
    assert_eq!(out.0, 0, "{}", out.2);
    let doc: Value = serde_json::from_str(&out.1).unwrap();
    let (mut changed, mut same) = (0, 0);
    for p in doc["pairs"].as_array().unwrap() {
        if p["rtn"].is_null() {
            continue;
        }
        let identical = p["rtn"]["identical"].as_bool().unwrap();
        let name = p["quantized"].as_str().unwrap();
        let weighted = name.starts_with("blk.") && p["format"] != "Q8_0";
        assert_eq!(identical, !weighted, "{name} ({})", p["format"]);
        if identical {
            same += 1;
        } else {
            changed += 1;
            assert_ne!(p["rtn"]["metrics"], p["metrics"], "{name}");
        }
    }
    assert!(
        changed >= 10 && same >= 1,
        "{changed} changed, {same} identical"
    );
}

/// The page's driver (`DiffSession`: listing from supplied byte ranges, then each pair from the
/// bytes of its entries) gives the native diff's report.
#[test]
fn the_page_driver_equals_the_native_diff() {
    use quantscope::diff::session::DiffSession;
    let dir = golden_dir().join("gguf_quant");
    let original = dir.join("original/model.safetensors");
    let quantized = dir.join("model-mixed.gguf");
    let im = dir.join("imatrix.dat");
    let native = diff_paths(
        std::slice::from_ref(&original),
        std::slice::from_ref(&quantized),
        Some(&im),
    )
    .unwrap();
    let files = [
        std::fs::read(&original).unwrap(),
        std::fs::read(&quantized).unwrap(),
    ];
    let names =
        |i: usize, p: &Path| vec![(p.to_string_lossy().into_owned(), files[i].len() as u64)];
    let mut s = DiffSession::new(names(0, &original), names(1, &quantized));
    s.set_imatrix("imatrix.dat", &std::fs::read(&im).unwrap())
        .unwrap();
    loop {
        let requests = s.listing_requests();
        if requests.is_empty() {
            break;
        }
        for r in requests {
            let bytes = &files[r.side][r.start as usize..r.end as usize];
            s.supply(r.side, r.file, r.start, bytes);
        }
    }
    for k in 0..s.pair_count() {
        let bytes: Vec<&[u8]> = s
            .needs(k)
            .unwrap()
            .iter()
            .map(|n| &files[n.side][n.start as usize..n.end as usize])
            .collect();
        s.compare(k, &bytes).unwrap();
    }
    let page = s.report().unwrap();
    assert_eq!(page.pairs.len(), 12);
    assert_eq!(
        serde_json::to_value(&page).unwrap(),
        serde_json::to_value(&native).unwrap()
    );
}
