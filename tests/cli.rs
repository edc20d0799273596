//! The CLI end to end: `quantscope observe … --json` on golden cases agrees with the reference
//! values, errors go to stderr with a non-zero exit code, and `list`/`inspect` work.
mod cli_run;
mod common;

use cli_run::quantscope;
use serde_json::Value;
use std::process::Command;

/// Run one golden case through the CLI and compare the JSON fields it prints.
fn run_case_via_cli(case: &common::Case) -> Result<(), String> {
    let params = Value::Object(case.params.0.clone()).to_string();
    let mut args: Vec<String> = vec!["observe".into()];
    args.extend(
        case.batches
            .iter()
            .map(|p| p.to_string_lossy().into_owned()),
    );
    args.extend([
        "--observer".into(),
        case.observer.clone(),
        "--params".into(),
        params,
        "--json".into(),
    ]);
    if let Some(attrs) = case.raw.get("set_attributes_after_init") {
        args.extend(["--set".into(), attrs.to_string()]);
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = quantscope(&argv);
    if case.expected.get("error").is_some() {
        return match code {
            0 => Err("expected a failure".into()),
            _ if stderr.starts_with("quantscope: ") && stdout.is_empty() => Ok(()),
            _ => Err(format!("error not reported on stderr: {stderr:?}")),
        };
    }
    if code != 0 {
        return Err(format!("exit {code}: {stderr}"));
    }
    let got: Value = serde_json::from_str(&stdout).map_err(|e| format!("bad JSON: {e}"))?;
    for field in ["min_val", "max_val", "scale", "zero_point", "amax"] {
        if let Some(want) = case
            .expected
            .get(field)
            .filter(|v| v.as_array().is_none_or(|a| !a.is_empty()))
        {
            let g = got
                .get(field)
                .ok_or_else(|| format!("{field} missing from JSON"))?;
            common::check_close(
                field,
                &common::numbers(g),
                &common::numbers(want),
                case.tolerance_for(field),
            )?;
        }
    }
    if let Some(want) = case.expected.get("qdq").filter(|v| v.is_object()) {
        for field in ["mse", "max_abs_err", "sqnr_db", "clipped_fraction"] {
            if let Some(w) = want.get(field).and_then(Value::as_f64) {
                let g = got["metrics"][field]
                    .as_f64()
                    .ok_or_else(|| format!("metrics.{field} missing"))?;
                common::check_close(
                    &format!("qdq.{field}"),
                    &[g],
                    &[w],
                    case.tolerance_for("qdq"),
                )?;
            }
        }
    }
    for key in ["observer", "params", "nonfinite"] {
        if got.get(key).is_none() {
            return Err(format!("`{key}` missing from JSON"));
        }
    }
    Ok(())
}

#[test]
fn observe_json_matches_the_golden_cases_of_every_family() {
    for family in common::OBSERVER_FAMILIES {
        // Cases of framework functions that are not observers (Quark's ONNX quantizers and
        // kernels) are checked by their family's own test.
        let cases = common::load_cases(family)
            .into_iter()
            .filter(|c| quantscope::registry::find(&c.observer).is_ok())
            .collect();
        common::run_cases(family, cases, run_case_via_cli, false);
    }
}

#[test]
fn errors_go_to_stderr_with_failure_status() {
    let (code, stdout, stderr) = quantscope(&["observe", "/definitely/not/here.npy"]);
    assert_ne!(code, 0);
    assert!(stdout.is_empty());
    assert!(stderr.contains("not/here.npy"), "{stderr}");

    let input = common::golden_dir().join("torch/inputs/normal_b0.npy");
    let input = input.to_string_lossy();
    let (code, _, stderr) = quantscope(&["observe", &input, "--observer", "torch.NoSuchObserver"]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("unknown observer `torch.NoSuchObserver`"),
        "{stderr}"
    );

    let (code, _, stderr) = quantscope(&[
        "observe",
        &input,
        "--observer",
        "torch.MinMaxObserver",
        "--params",
        "{oops",
    ]);
    assert_ne!(code, 0);
    assert!(stderr.contains("not valid JSON"), "{stderr}");

    let (code, _, stderr) = quantscope(&["observe", &input, "--observer", "quark.INTQuantizer"]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("is a quantizer") && stderr.contains("--quantizer quark.INTQuantizer"),
        "{stderr}"
    );

    // ONNX Runtime's call form is accepted, but its method must be the observer's.
    let (code, _, stderr) = quantscope(&[
        "observe",
        &input,
        "--observer",
        "ort.MinMaxCalibrater",
        "--params",
        r#"{"calibrate_method": "Entropy", "extra_options": {"symmetric": true}}"#,
    ]);
    assert_ne!(code, 0);
    assert!(stderr.contains("calibrate_method"), "{stderr}");
}

#[test]
fn list_names_every_registered_observer_and_preset() {
    let (code, stdout, _) = quantscope(&["list", "--json"]);
    assert_eq!(code, 0);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    let ids: Vec<&str> = doc["observers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["id"].as_str())
        .collect();
    for id in [
        "torch.MinMaxObserver",
        "torch.HistogramObserver",
        "torch.PerChannelMinMaxObserver",
    ] {
        assert!(ids.contains(&id), "{id} not listed");
    }
    let presets: Vec<&str> = doc["presets"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(presets.contains(&"default_weight_observer"));
    let (code, text, _) = quantscope(&["list"]);
    assert_eq!(code, 0);
    assert!(text.contains("PyTorch") && text.contains("torch.HistogramObserver"));
}

#[test]
fn inspect_lists_tensors_of_containers() {
    let npz = common::golden_dir().join("npy/two_arrays.npz");
    let (code, stdout, stderr) = quantscope(&["inspect", &npz.to_string_lossy(), "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["tensors"].as_array().unwrap().len(), 2);
}

#[test]
fn formats_compares_every_format_on_a_real_activation() {
    let file = common::shared_dir().join("samples/minilm/activations/l0_ffn_dense_out.npy");
    let (code, stdout, stderr) = quantscope(&["formats", &file.to_string_lossy(), "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<Value> = serde_json::from_str(&stdout).unwrap();
    let by_name = |name: &str| {
        rows.iter()
            .find(|r| r["format"] == name)
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    for name in [
        "int8",
        "uint8",
        "int4",
        "int4 per channel",
        "float16",
        "bfloat16",
        "fp8_e4m3",
        "fp8_e5m2",
        "fp6_e2m3",
        "fp4_e2m1",
        "mxfp8_e4m3",
        "mxfp4_e2m1",
        "mxint8",
        "bfp16 (block 8)",
    ] {
        assert!(by_name(name)["mse"].as_f64().unwrap() >= 0.0);
    }
    // More bits of the same kind cost less error; block scales beat one scale for this outlier-heavy tensor.
    let mse = |name: &str| by_name(name)["mse"].as_f64().unwrap();
    assert!(mse("float16") < mse("bfloat16") && mse("bfloat16") < mse("fp8_e4m3"));
    assert!(mse("mxfp4_e2m1") < mse("fp4_e2m1"));
    assert_eq!(
        by_name("mxfp4_e2m1")["bits_per_value"].as_f64().unwrap(),
        4.25
    );
}

/// `imatrix_mse`'s importance given as a `.npy` path gives the reference result of the case
/// whose importance came from that file.
#[test]
fn a_vector_parameter_is_read_from_a_npy_path() {
    let case = common::load_cases("llmcompressor")
        .into_iter()
        .find(|c| c.id == "imx-w-channel-int4-sym-weight")
        .expect("the imatrix case");
    let dir = common::golden_dir().join("llmcompressor");
    let importance = dir.join("inputs/imatrix_importance.npy");
    let weight = dir.join(&case.batches[0]);
    let params = serde_json::json!({
        "num_bits": 4, "type": "int", "symmetric": true, "strategy": "channel",
        "importance": importance.to_string_lossy(),
    })
    .to_string();
    let (code, stdout, stderr) = quantscope(&[
        "observe",
        &weight.to_string_lossy(),
        "--observer",
        "llmcompressor.imatrix_mse",
        "--params",
        &params,
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let got: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(got["extra"]["importance_used"], Value::Bool(true));
    common::check_close(
        "scale",
        &common::numbers(&got["scale"]),
        &common::numbers(&case.expected["scale"]),
        case.tolerance_for("scale"),
    )
    .unwrap();
    let (code, _, stderr) = quantscope(&[
        "observe",
        &weight.to_string_lossy(),
        "--observer",
        "llmcompressor.imatrix_mse",
        "--params",
        r#"{"importance": "/no/such/imatrix.npy"}"#,
    ]);
    assert_ne!(code, 0);
    assert!(stderr.contains("imatrix.npy"), "{stderr}");
}

#[test]
fn a_closed_pipe_ends_the_output_without_a_panic() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_quantscope"))
        .args(["list", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("quantscope starts");
    // The reader goes away before the registry (tens of KiB, more than a pipe buffer) is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("quantscope ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `observe --explain --json` adds the derivation, whose last step holds the scale and zero
/// point the report prints; `observe --explain` prints it as text, candidate table included.
#[test]
fn observe_explain_prints_the_derivation_ending_in_the_reports_numbers() {
    let case = common::load_cases("torch")
        .into_iter()
        .find(|c| c.observer == "torch.HistogramObserver" && c.expected.get("error").is_none())
        .expect("a HistogramObserver case");
    let input = case.batches[0].to_string_lossy().into_owned();
    let args = ["observe", &input, "--observer", "torch.HistogramObserver"];
    let (code, stdout, stderr) = quantscope(&[&args[..], &["--explain", "--json"]].concat());
    assert_eq!(code, 0, "{stderr}");
    let got: Value = serde_json::from_str(&stdout).unwrap();
    let steps = got["derivation"].as_array().expect("a derivation");
    let last = steps.last().unwrap();
    assert_eq!(last["values"]["scale"], got["scale"]);
    assert_eq!(last["values"]["zero_point"], got["zero_point"]);
    for step in steps {
        for key in ["title", "formula", "values", "source"] {
            assert!(step.get(key).is_some(), "{key} missing from {step}");
        }
    }
    let search = steps
        .iter()
        .find(|s| s.get("candidates").is_some())
        .expect("the search's candidates");
    let table = &search["candidates"];
    let picked = table["picked"].as_u64().unwrap() as usize;
    let row = &table["rows"][picked];
    assert_eq!(row[2], got["clip_range"][0][0]);
    assert_eq!(row[3], got["clip_range"][1][0]);
    // Without --explain, no derivation.
    let (_, plain, _) = quantscope(&[&args[..], &["--json"]].concat());
    assert!(serde_json::from_str::<Value>(&plain)
        .unwrap()
        .get("derivation")
        .is_none());
    // As text.
    let (code, text, stderr) = quantscope(&[&args[..], &["--explain"]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains("why this range"), "{text}");
    assert!(text.contains("Greedy search"), "{text}");
    assert!(text.contains("→"), "the pick is marked: {text}");
    assert!(
        text.contains("torch/ao/quantization/observer.py:349"),
        "{text}"
    );
}

/// `--rotate hadamard:SEED` runs on the rows rotated by the engine's randomized Hadamard rotation
/// as well: the `after` report is the report of the rotated tensor written to a file, and the
/// rotation leaves every row's length unchanged.
#[test]
fn observe_rotate_reports_before_and_after_a_hadamard_rotation() {
    use quantscope::rotation::Rotation;
    use quantscope::tensor::{encode_npy, npy_header, Tensor};
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<f32> = (0..8 * 96)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0 * if i % 96 == 7 { 40.0 } else { 1.0 })
        .collect();
    let write = |name: &str, t: &Tensor| {
        let path = dir.path().join(name);
        let body: Vec<u8> = t.data.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(
            &path,
            encode_npy(&npy_header("<f4", false, &t.shape), &body),
        )
        .unwrap();
        path.to_string_lossy().into_owned()
    };
    let w = Tensor::new(vec![8, 96], values).unwrap();
    let rotated = Rotation::new(96, 5).unwrap().rotate_rows(&w).unwrap();
    let (plain, turned) = (write("w.npy", &w), write("r.npy", &rotated));
    let observer = ["--observer", "torch.MinMaxObserver", "--json"];
    let run = |args: &[&str]| -> Value {
        let (code, stdout, stderr) = quantscope(args);
        assert_eq!(code, 0, "{stderr}");
        serde_json::from_str(&stdout).unwrap()
    };
    let both = run(&[
        &["observe", &plain, "--rotate", "hadamard:5"][..],
        &observer,
    ]
    .concat());
    assert_eq!(
        both["before"],
        run(&[&["observe", &plain][..], &observer].concat())
    );
    assert_eq!(
        both["after"],
        run(&[&["observe", &turned][..], &observer].concat())
    );
    assert!(
        both["rotation"].as_str().unwrap().contains("H_12"),
        "96 = 12·8: {}",
        both["rotation"]
    );
    // The outlier column is spread: per-tensor int8 gains.
    let sqnr = |r: &Value| r["metrics"]["sqnr_db"].as_f64().unwrap();
    assert!(sqnr(&both["after"]) > sqnr(&both["before"]) + 6.0);
    let (code, _, stderr) = quantscope(&["observe", &plain, "--rotate", "givens"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("hadamard"), "{stderr}");
}
