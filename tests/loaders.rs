//! The tensor loaders against the reference fixtures written by numpy (`golden/npy`) and the
//! MiniLM samples (real `.safetensors` / `.npz` files): every file numpy accepts loads with the
//! recorded shape, dtype and values; every file that must be refused fails with a message that
//! names the problem.
mod common;

use quantscope::tensor::{pick, read_tensors, DType, NamedTensor, Tensor};
use serde_json::Value;
use std::path::Path;

/// The dtype a numpy type string such as `<f4` or `|b1` must load as.
fn dtype_of_descr(descr: &str) -> Option<DType> {
    Some(match descr.get(1..)? {
        "b1" => DType::Bool,
        "i1" => DType::I8,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "i8" => DType::I64,
        "u1" => DType::U8,
        "u2" => DType::U16,
        "u4" => DType::U32,
        "u8" => DType::U64,
        "f2" => DType::F16,
        "f4" => DType::F32,
        "f8" => DType::F64,
        _ => return None,
    })
}

/// The word a refusal message must contain, by fixture name.
fn expected_word(file: &str) -> Option<&'static [&'static str]> {
    Some(match file {
        "reject_object.npy" => &["object", "pickle"],
        "reject_structured.npy" => &["structured"],
        "reject_complex64.npy" => &["complex"],
        "reject_truncated.npy" => &["truncated"],
        "reject_bad_magic.npy" => &["magic"],
        "reject_shape_mismatch.npy" => &["shape"],
        "reject_bad_version.npy" => &["version"],
        _ => return None,
    })
}

fn shape_of(v: &Value) -> Vec<usize> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_u64)
                .map(|d| d as usize)
                .collect()
        })
        .unwrap_or_default()
}

/// Sum, min and max of a tensor in f64 (min/max `None` when empty).
fn stats(t: &Tensor) -> (f64, Option<f64>, Option<f64>) {
    let sum = t.data.iter().map(|&v| f64::from(v)).sum();
    let min = t.data.iter().copied().reduce(f32::min).map(f64::from);
    let max = t.data.iter().copied().reduce(f32::max).map(f64::from);
    (sum, min, max)
}

/// Compare a loaded tensor with a fixture description (`dtype`, `shape`, `values_f64`,
/// `values_int`, `sum_f64`, `min_f64`, `max_f64`). Returns the number of values compared.
fn check_tensor(t: &Tensor, desc: &Value) -> Result<usize, String> {
    let shape = shape_of(&desc["shape"]);
    if t.shape != shape {
        return Err(format!("shape {:?}, expected {shape:?}", t.shape));
    }
    if t.data.len() != shape.iter().product::<usize>() {
        return Err(format!("{} values for shape {shape:?}", t.data.len()));
    }
    if let Some(descr) = desc["dtype"].as_str() {
        let want = dtype_of_descr(descr).ok_or_else(|| format!("unknown descr {descr}"))?;
        if t.dtype != want {
            return Err(format!("dtype {:?}, expected {want:?} ({descr})", t.dtype));
        }
    }
    let mut compared = 0;
    if let Some(values) = desc["values_f64"].as_array() {
        if values.len() != t.data.len() {
            return Err(format!(
                "{} values, manifest lists {}",
                t.data.len(),
                values.len()
            ));
        }
        for (i, (v, &got)) in values.iter().zip(&t.data).enumerate() {
            let want = v.as_f64().ok_or("values_f64 entry is not a number")? as f32;
            let same = want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan());
            // Integers wider than f64's mantissa are compared through values_int below
            // (f64 then f32 may round twice).
            if !same && desc["values_int"].is_null() {
                return Err(format!(
                    "value {i}: {got:e}, expected {want:e} (f32 of {v})"
                ));
            }
            compared += 1;
        }
    }
    if let Some(ints) = desc["values_int"].as_array() {
        for (i, (v, &got)) in ints.iter().zip(&t.data).enumerate() {
            let want = match (v.as_i64(), v.as_u64()) {
                (Some(x), _) => x as f32,
                (None, Some(x)) => x as f32,
                _ => return Err(format!("values_int[{i}] = {v} is not an integer")),
            };
            if got.to_bits() != want.to_bits() {
                return Err(format!("int value {i}: {got:e}, expected {v} → {want:e}"));
            }
            if let Some(x) = v.as_i64().filter(|x| x.unsigned_abs() <= 1 << 24) {
                if got as i64 != x {
                    return Err(format!("int value {i}: {got} is not exactly {x}"));
                }
            }
        }
    }
    let (sum, min, max) = stats(t);
    let abs_sum: f64 = t.data.iter().map(|&v| f64::from(v).abs()).sum();
    if let Some(values) = desc["values_f64"].as_array() {
        // With every value known, the f64 sum of the f32-converted values must match exactly.
        let want: f64 = values
            .iter()
            .filter_map(Value::as_f64)
            .map(|v| f64::from(v as f32))
            .sum();
        if want.to_bits() != sum.to_bits() && !(want.is_nan() && sum.is_nan()) {
            return Err(format!("sum {sum:e}, expected {want:e}"));
        }
    }
    let want_sum = desc["sum_f64"].as_f64().ok_or("no sum_f64")?;
    if sum.is_finite() {
        // Each element's f32 rounding moves the sum by at most |x| * 2^-24.
        let tol = abs_sum * 2f64.powi(-24) + 1e-12;
        if (sum - want_sum).abs() > tol {
            return Err(format!("sum {sum:e}, expected {want_sum:e} ± {tol:e}"));
        }
    }
    for (name, got) in [("min_f64", min), ("max_f64", max)] {
        let want = desc[name].as_f64().map(|v| f64::from(v as f32));
        if got != want {
            return Err(format!("{name} {got:?}, expected {want:?}"));
        }
    }
    Ok(compared)
}

fn load(path: &Path) -> Result<Vec<NamedTensor>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    read_tensors(&bytes, &path.to_string_lossy()).map_err(|e| e.to_string())
}

#[test]
fn golden_npy_manifest() {
    let dir = common::shared_dir().join("golden").join("npy");
    let text = std::fs::read_to_string(dir.join("manifest.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("manifest.json").display()));
    let manifest: Value = serde_json::from_str(&text).expect("manifest.json is JSON");
    let entries = manifest["files"].as_array().expect("files list");
    let (mut ok, mut refused, mut members, mut values) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for entry in entries {
        let file = entry["file"].as_str().expect("file name");
        let path = dir.join(file);
        let result = load(&path);
        let outcome: Result<(), String> = match (entry["expect"].as_str(), result) {
            (Some("ok"), Err(e)) => Err(format!("refused: {e}")),
            (Some("ok"), Ok(tensors)) if file.ends_with(".npz") => (|| {
                let want = entry["members"].as_object().ok_or("no members")?;
                let order: Vec<String> = entry["members_in_zip"]
                    .as_array()
                    .ok_or("no members_in_zip")?
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|m| m.trim_end_matches(".npy").to_string())
                    .collect();
                let names: Vec<String> = tensors.iter().map(|t| t.name.clone()).collect();
                if names != order {
                    return Err(format!("members {names:?}, expected {order:?}"));
                }
                for t in &tensors {
                    let desc = want
                        .get(&t.name)
                        .ok_or(format!("unexpected member {}", t.name))?;
                    values +=
                        check_tensor(&t.tensor, desc).map_err(|e| format!("{}: {e}", t.name))?;
                    members += 1;
                }
                ok += 1;
                Ok(())
            })(),
            (Some("ok"), Ok(tensors)) => (|| {
                let [one] = tensors.as_slice() else {
                    return Err(format!("{} tensors in a .npy", tensors.len()));
                };
                if !one.name.is_empty() {
                    return Err(format!("a bare .npy is named {:?}", one.name));
                }
                values += check_tensor(&one.tensor, entry)?;
                ok += 1;
                Ok(())
            })(),
            (Some("error"), Ok(_)) => Err("loaded, but must be refused".to_string()),
            (Some("error"), Err(message)) => match expected_word(file) {
                None => Err(format!(
                    "no expected wording known for this refusal: {message}"
                )),
                Some(words) if words.iter().any(|w| message.contains(w)) => {
                    println!("refused {file}: {message}");
                    refused += 1;
                    Ok(())
                }
                Some(words) => Err(format!("message does not say {words:?}: {message}")),
            },
            (other, _) => Err(format!("unknown expectation {other:?}")),
        };
        if let Err(e) = outcome {
            failures.push(format!("{file}: {e}"));
        }
    }
    println!(
        "golden/npy: {} entries, {ok} loaded ({members} npz members, {values} values compared exactly), {refused} refused as expected, {} failures",
        entries.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(ok + refused, entries.len());
    assert!(
        ok >= 20 && refused >= 7,
        "the manifest shrank: {ok} ok, {refused} refused"
    );
}

/// Check a MiniLM file against its `manifest.json` members (shape, dtype, min, max, mean, std).
fn check_minilm(file: &str) -> Option<usize> {
    let dir = common::shared_dir().join("samples").join("minilm");
    let path = dir.join(file);
    if !path.exists() {
        println!("{} not present: skipped", path.display());
        return None;
    }
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let want = manifest["files"][file]["members"]
        .as_object()
        .unwrap_or_else(|| panic!("manifest lists no members for {file}"));
    let tensors = load(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(tensors.len(), want.len(), "{file}: number of tensors");
    for t in &tensors {
        let desc = want
            .get(&t.name)
            .unwrap_or_else(|| panic!("{file}: unexpected tensor {}", t.name));
        let ctx = format!("{file}:{}", t.name);
        assert_eq!(t.tensor.shape, shape_of(&desc["shape"]), "{ctx}");
        assert_eq!(Some(t.tensor.dtype.name()), desc["dtype"].as_str(), "{ctx}");
        let s = &desc["stats"];
        let (sum, min, max) = stats(&t.tensor);
        // The manifest's statistics are float64; a few differ from the f32 value by one f64
        // ulp, so compare after rounding to f32 (exact for every f32 value).
        let as_f32 = |v: Option<f64>| v.map(|v| v as f32);
        assert_eq!(as_f32(min), as_f32(s["min"].as_f64()), "{ctx}: min");
        assert_eq!(as_f32(max), as_f32(s["max"].as_f64()), "{ctx}: max");
        let n = t.tensor.len() as f64;
        let mean = sum / n;
        let var = t
            .tensor
            .data
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / n;
        let (want_mean, want_std) = (s["mean"].as_f64().unwrap(), s["std"].as_f64().unwrap());
        assert!(
            (mean - want_mean).abs() <= 1e-12 + 1e-9 * want_std,
            "{ctx}: mean {mean} vs {want_mean}"
        );
        assert!(
            (var.sqrt() - want_std).abs() <= 1e-9 * want_std,
            "{ctx}: std {} vs {want_std}",
            var.sqrt()
        );
    }
    println!("{file}: {} tensors match the manifest", tensors.len());
    Some(tensors.len())
}

#[test]
fn minilm_safetensors_sample() {
    let n = check_minilm("minilm_layer1_small.safetensors");
    assert!(n.is_none_or(|n| n == 11), "{n:?}");
    let dir = common::shared_dir().join("samples").join("minilm");
    if let Ok(bytes) = std::fs::read(dir.join("minilm_layer1_small.safetensors")) {
        let tensors = read_tensors(&bytes, "minilm_layer1_small.safetensors").unwrap();
        let q = pick(
            tensors.clone(),
            Some("encoder.layer.1.attention.self.query.weight"),
        )
        .unwrap();
        assert_eq!(
            (q.tensor.dtype, q.tensor.shape.as_slice()),
            (DType::F16, &[384, 384][..])
        );
        let k = pick(
            tensors.clone(),
            Some("encoder.layer.1.attention.self.key.weight"),
        )
        .unwrap();
        assert_eq!(k.tensor.dtype, DType::BF16);
        let missing = pick(tensors, Some("encoder.layer.1.nope"))
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("encoder.layer.1.nope") && missing.contains("query.weight"),
            "{missing}"
        );
    }
}

#[test]
fn minilm_whole_model_npz() {
    let n = check_minilm("minilm_whole_model.npz");
    assert!(n.is_none_or(|n| n == 28), "{n:?}");
}
