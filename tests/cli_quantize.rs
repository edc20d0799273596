//! `quantscope quantize` end to end on the golden inputs: for every bitsandbytes and ggml
//! reference case, the `.npy` the binary writes equals the library's dequantized output (the
//! case's tolerance: exact, `−0.0 == +0.0`) with the input's shape, and the `--json` metrics
//! match the reference metrics; Quark's INTQuantizer cases reproduce Quark's values; bad
//! arguments fail with a message on stderr.
mod cli_run;
mod common;

use cli_run::quantscope;
use common::{check_close, load_npy, Case};
use serde_json::Value;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("quantscope-cli-quantize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}

fn read(path: &PathBuf) -> Result<quantscope::tensor::Tensor, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut t = quantscope::tensor::read_tensors(&bytes, &path.to_string_lossy())
        .map_err(|e| e.to_string())?;
    Ok(t.remove(0).tensor)
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// Run `quantize` on the case's input with `params`; compare the written tensor and the JSON.
fn run(family: &str, case: &Case, params: Value) -> Result<(), String> {
    let input = case.batches.first().ok_or("no input")?;
    let out = scratch(&format!("{}.npy", case.id));
    let (input, params, out_path) = (
        input.to_string_lossy(),
        params.to_string(),
        out.to_string_lossy(),
    );
    let mut args = vec![
        "quantize",
        &input,
        "--quantizer",
        &case.observer,
        "--params",
        &params,
        "--out",
        &out_path,
        "--json",
    ];
    // ggml's types also explain a block: the one holding the largest magnitude.
    let explains = family == "ggml";
    if explains {
        args.push("--explain");
    }
    let (code, stdout, stderr) = quantscope(&args);
    if code != 0 {
        return Err(format!("exit {code}: {stderr}"));
    }
    let got = read(&out)?;
    let _ = std::fs::remove_file(&out);
    let want = load_npy(
        family,
        case.expected["dequantized"].as_str().unwrap_or_default(),
    )?;
    if got.shape != want.shape {
        return Err(format!("shape {:?}, expected {:?}", got.shape, want.shape));
    }
    check_close(
        "written .npy",
        &f64s(&got.data),
        &f64s(&want.data),
        case.field_tolerance("dequantized"),
    )?;
    let json: Value = serde_json::from_str(&stdout).map_err(|e| format!("bad JSON: {e}"))?;
    for field in ["bits_per_value", "clipped_fraction"] {
        if !json[field].is_number() {
            return Err(format!("{field} missing from the JSON"));
        }
    }
    for field in ["mse", "max_abs_err", "sqnr_db"] {
        if let Some(w) = case.expected.get(field).and_then(Value::as_f64) {
            let g = json[field]
                .as_f64()
                .ok_or_else(|| format!("{field} missing from the JSON"))?;
            check_close(field, &[g], &[w], case.field_tolerance("metrics"))?;
        }
    }
    if explains {
        check_explained_block(case, &json)?;
    }
    Ok(())
}

/// `quantize --explain --json`'s derivation ends in the bytes ggml stored for its block (the
/// golden blocks), and its decoded values are the golden dequantized values of that block.
fn check_explained_block(case: &Case, json: &Value) -> Result<(), String> {
    let d = &json["derivation"];
    let block = d["block"].as_u64().ok_or("derivation.block missing")? as usize;
    let last = d["steps"]
        .as_array()
        .and_then(|s| s.last())
        .ok_or("no steps")?;
    let blocks = load_npy("ggml", case.expected["blocks"].as_str().unwrap_or_default())?;
    let size = case.expected["block_bytes"].as_u64().ok_or("block_bytes")? as usize;
    let want: String = blocks.data[block * size..(block + 1) * size]
        .iter()
        .map(|&b| format!("{:02x}", b as u8))
        .collect();
    if last["values"]["bytes"] != want {
        return Err(format!(
            "block {block}: derived {}, ggml stored {want}",
            last["values"]["bytes"]
        ));
    }
    let n = case.expected["block_elems"].as_u64().ok_or("block_elems")? as usize;
    let values = load_npy(
        "ggml",
        case.expected["dequantized"].as_str().unwrap_or_default(),
    )?;
    let decoded: Vec<f64> = last["values"]["decoded"]
        .as_array()
        .ok_or("decoded missing")?
        .iter()
        .map(|v| v.as_f64().unwrap_or(f64::NAN))
        .collect();
    check_close(
        "decoded",
        &decoded,
        &f64s(&values.data[block * n..(block + 1) * n]),
        (0.0, 0.0),
    )
}

#[test]
fn every_ggml_case_through_the_cli() {
    let cases = common::load_cases("ggml");
    common::run_cases(
        "ggml-cli",
        cases,
        |case| {
            // `"imatrix": "path.npy"` — the CLI loads the file.
            let params = match case.params.get("imatrix") {
                Some(Value::String(p)) => serde_json::json!({
                    "imatrix": common::golden_dir().join("ggml").join(p).to_string_lossy()
                }),
                _ => serde_json::json!({}),
            };
            run("ggml", case, params)
        },
        false,
    );
}

#[test]
fn every_bnb_case_through_the_cli() {
    let cases = common::load_cases("bnb");
    common::run_cases(
        "bnb-cli",
        cases,
        |case| {
            // The library's own keys, minus what describes the run (input dtype, what double
            // quantization does inside).
            let mut params = case.params.0.clone();
            for key in ["dtype", "nested_code", "nested_blocksize"] {
                params.remove(key);
            }
            run("bnb", case, Value::Object(params))
        },
        false,
    );
}

#[test]
fn quark_int_quantizer_cases_through_the_cli() {
    let cases: Vec<Case> = common::load_cases("quark")
        .into_iter()
        .filter(|c| c.observer == "quark.INTQuantizer")
        .collect();
    assert!(!cases.is_empty());
    common::run_cases(
        "quark-int-cli",
        cases,
        |case| {
            let mut params = case.params.0.clone();
            params.remove("note");
            let params = Value::Object(params).to_string();
            let input = case.batches.first().ok_or("no input")?;
            let input = input.to_string_lossy();
            let quantize = |output: &[&str]| {
                let mut args = vec![
                    "quantize",
                    &input,
                    "--quantizer",
                    "quark.INTQuantizer",
                    "--params",
                    &params,
                ];
                args.extend_from_slice(output);
                quantscope(&args)
            };
            let (code, stdout, stderr) = quantize(&["--json"]);
            if code != 0 {
                return Err(format!("exit {code}: {stderr}"));
            }
            let json: Value = serde_json::from_str(&stdout).map_err(|e| e.to_string())?;
            let out = scratch(&format!("{}.npy", case.id));
            let (code, _, stderr) = quantize(&["--out", &out.to_string_lossy()]);
            if code != 0 {
                return Err(stderr);
            }
            let got = read(&out)?;
            let _ = std::fs::remove_file(&out);
            check_close(
                "qdq_values",
                &f64s(&got.data),
                &common::numbers(&case.expected["qdq_values"]),
                case.tolerance_for("qdq_values"),
            )?;
            if json["bits_per_value"].as_f64().is_none_or(|b| b <= 8.0) {
                return Err(format!("bits_per_value {}", json["bits_per_value"]));
            }
            Ok(())
        },
        false,
    );
}

#[test]
fn bad_arguments_fail_on_stderr() {
    let input = common::golden_dir().join("ggml/inputs/normal.npy");
    let input = input.to_string_lossy();
    for (args, needle) in [
        (
            vec!["--quantizer", "ggml.Q9_K"],
            "unknown quantizer `ggml.Q9_K`",
        ),
        (
            vec![
                "--quantizer",
                "bnb.nf4",
                "--params",
                r#"{"blocksize": 100}"#,
            ],
            "invalid blocksize 100",
        ),
        (
            vec![
                "--quantizer",
                "ggml.Q4_K",
                "--params",
                r#"{"imatrix": [1, 2, 3]}"#,
            ],
            "last axis has 512",
        ),
        (
            vec![
                "--quantizer",
                "ggml.Q4_K",
                "--params",
                r#"{"imatrix": "missing.npy"}"#,
            ],
            "missing.npy",
        ),
        (
            vec!["--quantizer", "ggml.Q4_K", "--params", r#"{"bits": 4}"#],
            "has no parameter `bits`",
        ),
        (
            vec!["--quantizer", "bnb.nf4", "--params", "[1]"],
            "JSON object",
        ),
        (vec!["--quantizer", "quark.INTQuantizer"], "needs a scale"),
        (
            vec![
                "--quantizer",
                "quark.INTQuantizer",
                "--params",
                r#"{"scale": 0.1, "note": "x"}"#,
            ],
            "has no parameter `note`",
        ),
    ] {
        let mut argv = vec!["quantize", &*input];
        argv.extend(args.iter().copied());
        let (code, stdout, stderr) = quantscope(&argv);
        assert_ne!(code, 0, "{argv:?}");
        assert!(stdout.is_empty(), "{argv:?}: {stdout}");
        assert!(
            stderr.starts_with("quantscope: ") && stderr.contains(needle),
            "{argv:?}: {stderr}"
        );
    }
    // A .npz member is picked as for `observe`, and the text report names the format.
    let (code, stdout, stderr) =
        quantscope(&["quantize", "/nonexistent.npz:w", "--quantizer", "ggml.Q8_0"]);
    assert_ne!(code, 0);
    assert!(
        stdout.is_empty() && stderr.contains("nonexistent.npz"),
        "{stderr}"
    );
}

#[test]
fn picks_a_member_of_an_npz() {
    let npz = common::shared_dir().join("samples/minilm/minilm_whole_model.npz");
    let member = "encoder.layer.0.output.dense.bias";
    let spec = format!("{}:{member}", npz.to_string_lossy());
    let out = scratch("member.npy");
    let (code, stdout, stderr) = quantscope(&[
        "quantize",
        &spec,
        "--quantizer",
        "ggml.Q8_0",
        "--out",
        &out.to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("ggml.Q8_0") && stdout.contains("8.5"),
        "{stdout}"
    );
    let got = read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let bytes = std::fs::read(&npz).unwrap();
    let tensors = quantscope::tensor::read_tensors(&bytes, &npz.to_string_lossy()).unwrap();
    let x = quantscope::tensor::pick(tensors, Some(member))
        .unwrap()
        .tensor;
    let ty = quantscope::formats::ggml::GgmlType::Q8_0;
    let blocks = quantscope::formats::ggml::quantize(ty, &x.data, None).unwrap();
    let want = quantscope::formats::ggml::dequantize(ty, &blocks).unwrap();
    assert_eq!(got.shape, vec![384]);
    assert_eq!(got.data, want);
}
