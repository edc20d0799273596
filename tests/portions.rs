//! Work split into portions (`quantscope model|diff --shard I/N`, `portion=(i, n)` in Python)
//! and put back together (`quantscope merge`): for every number of portions, the merged
//! document is byte for byte the one a single process prints, on real checkpoints (the MiniLM
//! samples, the GGUF golden files with an imatrix, unpaired weights, lint, files that cannot be
//! read); documents that are not the portions of one piece of work are refused.
mod cli_run;
mod common;

use cli_run::quantscope;
use quantscope::commands;
use quantscope::model::{default_methods, methods, Method};
use quantscope::portion::{merge, Command, Portion};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn gguf_dir() -> PathBuf {
    common::golden_dir().join("gguf_quant")
}

fn minilm() -> PathBuf {
    common::shared_dir().join("samples/minilm")
}

fn model_doc(paths: &[PathBuf], methods: &[Method], portion: Option<Portion>) -> Value {
    commands::model_json(paths, methods, Some(2), portion, &|_, _| {}).unwrap()
}

fn diff_doc(
    original: &Path,
    quantized: &Path,
    imatrix: Option<&Path>,
    p: Option<Portion>,
) -> Value {
    commands::diff_json(original, quantized, imatrix, p).unwrap()
}

/// The portions `0/count … count−1/count` made by `portion_doc`, given to merge in reverse.
fn merged(count: usize, portion_doc: impl Fn(Portion) -> Value) -> (Value, Vec<Value>) {
    let mut docs: Vec<Value> = (0..count)
        .map(|i| portion_doc(Portion::new(i, count).unwrap()))
        .collect();
    docs.reverse();
    (merge(&docs).unwrap().document, docs)
}

/// Rows of each portion, in portion order.
fn rows_per_portion(docs: &[Value], table: &str) -> Vec<usize> {
    let mut counts: Vec<(u64, usize)> = docs
        .iter()
        .map(|d| {
            let index = d["portion"]["index"].as_u64().unwrap();
            (index, d[table].as_array().unwrap().len())
        })
        .collect();
    counts.sort();
    counts.into_iter().map(|(_, n)| n).collect()
}

#[test]
fn model_portions_merge_into_the_single_process_document() {
    let cases: Vec<(Vec<PathBuf>, Vec<Method>)> = vec![
        (
            vec![minilm().join("minilm_whole_model.npz")],
            default_methods(),
        ),
        (
            vec![gguf_dir().join("original/model.safetensors")],
            methods::resolve(&["torch.MinMaxObserver".into(), "ggml.Q4_K".into()]).unwrap(),
        ),
        (
            vec![minilm().join("weights"), minilm().join("activations")],
            default_methods(),
        ),
    ];
    for (paths, methods) in &cases {
        let whole = model_doc(paths, methods, None);
        let items = whole["tensors"].as_array().unwrap().len();
        assert!(items >= 10, "{paths:?}: {items} tensors");
        for count in [1, 2, 3, 5, items + 3] {
            let (got, docs) = merged(count, |p| model_doc(paths, methods, Some(p)));
            assert_eq!(got, whole, "{paths:?} in {count} portions");
            let rows = rows_per_portion(&docs, "tensors");
            assert_eq!(rows.iter().sum::<usize>(), items);
            assert!(
                docs.iter().all(|d| d["portion"]["items"] == items),
                "{paths:?}"
            );
            if count == 2 {
                eprintln!("{paths:?}: {items} tensors in portions of {rows:?}");
                assert!(rows.iter().all(|&n| n > 0), "{rows:?}");
            }
        }
    }
}

#[test]
fn model_portions_carry_the_load_errors_once() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["l0_attn_key_weight.npy", "l0_attn_output_dense_weight.npy"] {
        std::fs::copy(minilm().join("weights").join(name), dir.path().join(name)).unwrap();
    }
    std::fs::write(dir.path().join("broken.npy"), b"\x93NUMPY not a header").unwrap();
    let paths = vec![dir.path().to_path_buf()];
    let whole = model_doc(&paths, &default_methods(), None);
    assert_eq!(whole["load_errors"].as_array().unwrap().len(), 1, "{whole}");
    assert_eq!(whole["tensors"].as_array().unwrap().len(), 2);
    for count in [2, 3] {
        let (got, _) = merged(count, |p| model_doc(&paths, &default_methods(), Some(p)));
        assert_eq!(got, whole);
    }
}

#[test]
fn diff_portions_merge_into_the_single_process_document() {
    let dir = gguf_dir();
    let original = dir.join("original");
    let imatrix = dir.join("imatrix.gguf");
    for (quantized, imatrix) in [
        (dir.join("model-Q4_K_M.gguf"), Some(imatrix.as_path())),
        (dir.join("model-Q4_K_M-imatrix.gguf"), None),
        // 12 pairs, 24 originals unpaired, lint on three pairs.
        (dir.join("model-mixed.gguf"), Some(imatrix.as_path())),
    ] {
        let whole = diff_doc(&original, &quantized, imatrix, None);
        let pairs = whole["pairs"].as_array().unwrap().len();
        for count in [1, 2, 3, 5, pairs + 2] {
            let (got, docs) = merged(count, |p| diff_doc(&original, &quantized, imatrix, Some(p)));
            assert_eq!(got, whole, "{quantized:?} in {count} portions");
            assert_eq!(
                rows_per_portion(&docs, "pairs").iter().sum::<usize>(),
                pairs
            );
        }
    }
    let mixed = diff_doc(&original, &dir.join("model-mixed.gguf"), None, None);
    assert_eq!(mixed["unpaired"]["original"].as_array().unwrap().len(), 24);
    assert_eq!(mixed["lint"].as_array().unwrap().len(), 3);
}

#[test]
fn the_checkpoints_lint_is_kept_once() {
    // A quantized folder with a file that cannot be listed: its lint item leads every portion's
    // lint and the merged document holds it once.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        gguf_dir().join("model-mixed.gguf"),
        dir.path().join("model-mixed.gguf"),
    )
    .unwrap();
    std::fs::write(dir.path().join("broken.safetensors"), [7u8; 5]).unwrap();
    let original = gguf_dir().join("original");
    let whole = diff_doc(&original, dir.path(), None, None);
    let lint = whole["lint"].as_array().unwrap();
    assert_eq!(lint[0]["kind"], "unreadable", "{lint:?}");
    assert_eq!(lint.len(), 4, "{lint:?}");
    for count in [2, 3, 4] {
        let (got, docs) = merged(count, |p| diff_doc(&original, dir.path(), None, Some(p)));
        assert_eq!(got, whole, "{count} portions");
        assert!(docs.iter().all(|d| d["portion"]["shared_lint"] == 1));
    }
}

#[test]
fn merge_refuses_what_is_not_every_portion_of_one_work() {
    let path = vec![minilm().join("minilm_whole_model.npz")];
    let minmax = methods::resolve(&["torch.MinMaxObserver".into()]).unwrap();
    let part = |i, n, m: &[Method]| model_doc(&path, m, Some(Portion::new(i, n).unwrap()));
    let defaults = default_methods();
    let error = |docs: &[Value]| merge(docs).unwrap_err().to_string();
    let (p0, p1, p2) = (
        part(0, 3, &defaults),
        part(1, 3, &defaults),
        part(2, 3, &defaults),
    );
    assert!(error(&[]).contains("nothing to merge"));
    assert!(error(&[p0.clone(), p2.clone()]).contains("portion 1/3 is missing"));
    assert!(error(std::slice::from_ref(&p0)).contains("portions 1/3, 2/3 are missing"));
    assert!(error(&[p0.clone(), p1.clone(), p1.clone(), p2.clone()]).contains("1/3 is given twice"));
    let other = part(1, 3, &minmax);
    assert!(error(&[p0.clone(), other, p2.clone()]).contains("portions of different work"));
    assert!(error(&[p0.clone(), part(1, 2, &defaults)]).contains("portion count"));
    let whole = model_doc(&path, &defaults, None);
    assert!(error(&[p0.clone(), whole]).contains("document 2 is not a portion"));
    let mut tampered = p1.clone();
    tampered["tensors"].as_array_mut().unwrap().pop();
    assert!(error(&[p0.clone(), tampered, p2.clone()]).contains("rows"));
    let mut moved = p1.clone();
    moved["portion"]["range"][0] = Value::from(0);
    assert!(error(&[p0.clone(), moved, p2.clone()]).contains("covers items 0.."));
    let mut changed = p2.clone();
    changed["load_errors"] = serde_json::json!([{"file": "x", "error": "y"}]);
    assert!(error(&[p0.clone(), p1.clone(), changed]).contains("disagree on `load_errors`"));
    let ok = merge(&[p2, p0, p1]).unwrap();
    assert_eq!(ok.command, Command::Model);
    assert_eq!(ok.settings.len(), defaults.len());
}

/// The CLI: `--shard 0/2` and `--shard 1/2`, then `merge`, print what the unsplit command
/// prints, as JSON and as CSV.
#[test]
fn the_cli_shards_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let npz = minilm().join("minilm_whole_model.npz");
    let npz = npz.to_str().unwrap();
    let g = gguf_dir();
    let (original, quantized, imatrix) = (
        g.join("original"),
        g.join("model-Q4_K_M.gguf"),
        g.join("imatrix.gguf"),
    );
    let diff_args = [
        "diff",
        original.to_str().unwrap(),
        quantized.to_str().unwrap(),
        "--imatrix",
        imatrix.to_str().unwrap(),
    ];
    for (name, args) in [
        (
            "model",
            vec![
                "model",
                npz,
                "--observers",
                "torch.MinMaxObserver,torch.HistogramObserver",
            ],
        ),
        ("diff", diff_args.to_vec()),
    ] {
        let run = |extra: &[&str]| {
            let argv: Vec<&str> = args.iter().chain(extra).copied().collect();
            let (code, stdout, stderr) = quantscope(&argv);
            assert_eq!(code, 0, "{argv:?}: {stderr}");
            stdout
        };
        let whole = run(&["--json"]);
        let whole_csv = run(&["--csv"]);
        let mut files = Vec::new();
        for i in 0..2 {
            let file = dir.path().join(format!("{name}-{i}.json"));
            std::fs::write(&file, run(&["--json", "--shard", &format!("{i}/2")])).unwrap();
            files.push(file.to_str().unwrap().to_string());
        }
        let merge_args = |extra: &[&str]| -> Vec<String> {
            let mut a = vec!["merge".to_string()];
            a.extend(files.iter().rev().cloned());
            a.extend(extra.iter().map(|s| s.to_string()));
            a
        };
        for (extra, want) in [
            (&[][..], &whole),
            (&["--json"][..], &whole),
            (&["--csv"][..], &whole_csv),
        ] {
            let argv = merge_args(extra);
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            let (code, stdout, stderr) = quantscope(&argv);
            assert_eq!(code, 0, "{argv:?}: {stderr}");
            assert_eq!(&stdout, want, "{name} {extra:?}");
        }
        let (code, _, stderr) = quantscope(&["merge", &files[0]]);
        assert_ne!(code, 0);
        assert!(stderr.contains("portion 1/2 is missing"), "{stderr}");
    }
    let (code, _, stderr) = quantscope(&["model", npz, "--shard", "0/2"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("--json"), "{stderr}");
    let (code, _, stderr) = quantscope(&["model", npz, "--json", "--shard", "2/2"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("portion 2 of 2 does not exist"), "{stderr}");
}
