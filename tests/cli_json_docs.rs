//! The README's table of the CLI's JSON output (between `<!-- cli-json:start -->` and
//! `<!-- cli-json:end -->`) cannot drift from what the CLI prints: every command it lists is run
//! on small tensors, and the keys it names are compared with the keys printed, both ways, at
//! every level the table describes (a key's own keys are written in brackets after it:
//! `` `metrics` (`mse`, `sqnr_db`) ``; brackets without a key in them are prose).
mod cli_run;

use cli_run::quantscope;
use quantscope::tensor::{encode_npy, npy_header};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The keys of one level: each with the keys of its value, when the table lists them.
#[derive(Debug, Default)]
struct Keys(BTreeMap<String, Option<Keys>>);

/// The keys named in `text`, a comma-separated list of `` `key` `` each optionally followed by
/// a bracket (its own keys when the bracket names some, else prose).
fn parse_keys(text: &str) -> Keys {
    let mut keys = Keys::default();
    let mut last: Option<String> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '`' => {
                let end = text[i + 1..].find('`').expect("a closing backtick") + i + 1;
                let key = text[i + 1..end].to_string();
                keys.0.insert(key.clone(), None);
                last = Some(key);
                while chars.peek().is_some_and(|&(j, _)| j <= end) {
                    chars.next();
                }
            }
            '(' => {
                let mut depth = 1;
                let mut end = i;
                for (j, d) in chars.by_ref() {
                    depth += match d {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    if depth == 0 {
                        end = j;
                        break;
                    }
                }
                let inner = &text[i + 1..end];
                if let (Some(key), true) = (last.take(), inner.contains('`')) {
                    keys.0.insert(key, Some(parse_keys(inner)));
                }
            }
            ',' => last = None,
            _ => {}
        }
    }
    keys
}

/// The README's table: command (`list`, `observe`, …) → the keys its `--json` prints.
fn documented() -> BTreeMap<String, Keys> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let start = readme
        .find("<!-- cli-json:start -->")
        .expect("the table's start marker");
    let end = readme
        .find("<!-- cli-json:end -->")
        .expect("the table's end marker");
    readme[start..end]
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
            let command = cells.first()?.trim().strip_prefix("`quantscope ")?;
            Some((
                command.trim_end_matches('`').to_string(),
                parse_keys(cells.get(1)?),
            ))
        })
        .collect()
}

/// The objects of `values` (arrays are looked into).
fn objects<'a>(values: &[&'a Value], out: &mut Vec<&'a serde_json::Map<String, Value>>) {
    for v in values {
        match v {
            Value::Object(map) => out.push(map),
            Value::Array(items) => objects(&items.iter().collect::<Vec<_>>(), out),
            _ => {}
        }
    }
}

/// Compare `keys` with the objects of `values` (outputs of the same kind): every key printed is
/// named, and every key named is printed by at least one of them; then the same one level down.
fn compare(path: &str, keys: &Keys, values: &[&Value], problems: &mut Vec<String>) {
    let mut maps = Vec::new();
    objects(values, &mut maps);
    if maps.is_empty() {
        problems.push(format!("{path}: no object printed to compare with"));
        return;
    }
    let printed: BTreeSet<&str> = maps
        .iter()
        .flat_map(|m| m.keys())
        .map(String::as_str)
        .collect();
    for key in &printed {
        if !keys.0.contains_key(*key) {
            problems.push(format!("{path}: `{key}` is printed but not documented"));
        }
    }
    for (key, inner) in &keys.0 {
        if !printed.contains(key.as_str()) {
            problems.push(format!("{path}: `{key}` is documented but never printed"));
            continue;
        }
        if let Some(inner) = inner {
            let children: Vec<&Value> = maps
                .iter()
                .filter_map(|m| m.get(key))
                .filter(|v| !v.is_null())
                .collect();
            compare(&format!("{path}.{key}"), inner, &children, problems);
        }
    }
}

/// A float32 `.npy` file of `values` with `shape`.
fn write_npy(path: &Path, values: &[f32], shape: &[usize]) {
    let body: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, encode_npy(&npy_header("<f4", false, shape), &body)).unwrap();
}

/// `quantscope args… --json`, parsed.
fn json(args: &[&str]) -> Value {
    let mut argv = args.to_vec();
    argv.push("--json");
    let (code, stdout, stderr) = quantscope(&argv);
    assert_eq!(code, 0, "quantscope {argv:?}: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("quantscope {argv:?}: {e}"))
}

#[test]
fn the_readme_names_every_key_of_the_cli_json_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    // A weight-like tensor with a NaN, a 100-value vector (no whole ggml block) and, in a
    // checkpoint folder, a file truncated inside its data.
    let mut weight: Vec<f32> = (0..512)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
        .collect();
    weight[5] = f32::NAN;
    let w = path("w.npy");
    write_npy(Path::new(&w), &weight, &[4, 128]);
    let folder = dir.path().join("checkpoint");
    std::fs::create_dir(&folder).unwrap();
    write_npy(&folder.join("a.npy"), &weight, &[4, 128]);
    let short: Vec<f32> = (0..100).map(|i| i as f32 / 10.0 - 5.0).collect();
    write_npy(&folder.join("short.npy"), &short, &[100]);
    let mut truncated = std::fs::read(folder.join("a.npy")).unwrap();
    truncated.truncate(truncated.len() - 100);
    std::fs::write(folder.join("truncated.npy"), truncated).unwrap();
    std::fs::write(folder.join("broken.npy"), b"\x93NUMPY").unwrap();
    let folder = folder.to_string_lossy().into_owned();
    // A quantized GGUF of the folder's weights: `a` in Q8_0, `short` with another shape.
    let a = quantscope::tensor::Tensor::new(
        vec![4, 128],
        weight
            .iter()
            .map(|v| if v.is_nan() { 0.0 } else { *v })
            .collect(),
    )
    .unwrap();
    let q8 = quantscope::codec::find("ggml.Q8_0")
        .unwrap()
        .build(&quantscope::params::Params::new(), &a.shape)
        .unwrap()
        .encode(&a)
        .unwrap();
    let blocks = match &q8.part("blocks").unwrap().data {
        quantscope::codec::Stored::U8(b) => b.clone(),
        _ => unreachable!(),
    };
    let original = path("original");
    std::fs::create_dir(&original).unwrap();
    write_npy(&Path::new(&original).join("a.npy"), &a.data, &[4, 128]);
    write_npy(&Path::new(&original).join("short.npy"), &short, &[100]);
    let short64: Vec<u8> = short[..64].iter().flat_map(|v| v.to_le_bytes()).collect();
    let gguf = path("q.gguf");
    std::fs::write(
        &gguf,
        quantscope::checkpoint::gguf::write(&[
            ("a", 8, &[128, 4], &blocks),
            ("short", 0, &[64], &short64),
        ]),
    )
    .unwrap();
    // A legacy llama.cpp importance matrix for `a` (128 columns, ncall 1).
    let mut dat = 1i32.to_le_bytes().to_vec();
    dat.extend(1i32.to_le_bytes());
    dat.extend(b"a");
    dat.extend(1i32.to_le_bytes());
    dat.extend(128i32.to_le_bytes());
    for j in 0..128 {
        dat.extend((1.0f32 + j as f32 / 64.0).to_le_bytes());
    }
    let imatrix = path("imatrix.dat");
    std::fs::write(&imatrix, dat).unwrap();

    let outputs: BTreeMap<&str, Vec<Value>> = BTreeMap::from([
        ("list", vec![json(&["list"])]),
        (
            "inspect",
            vec![json(&["inspect", &w]), json(&["inspect", &folder, &gguf])],
        ),
        (
            "diff",
            vec![
                json(&["diff", &original, &gguf, "--imatrix", &imatrix]),
                // The NaN in `a` makes round-to-nearest fail (`rtn_error`).
                json(&["diff", &folder, &gguf]),
                // One portion of the pairs (`portion`).
                json(&["diff", &original, &gguf, "--shard", "1/2"]),
            ],
        ),
        (
            "observe",
            vec![
                json(&["observe", &w, "--observer", "torch.MinMaxObserver"]),
                // With its derivation.
                json(&[
                    "observe",
                    &w,
                    "--observer",
                    "torch.HistogramObserver",
                    "--explain",
                ]),
                // Before and after a rotation.
                json(&[
                    "observe",
                    &w,
                    "--observer",
                    "torch.MinMaxObserver",
                    "--rotate",
                    "hadamard:1",
                ]),
                // amax and a note (the axis is outside the tensor: one amax, per tensor).
                json(&[
                    "observe",
                    &w,
                    "--observer",
                    "modelopt.MaxCalibrator",
                    "--params",
                    r#"{"axis": 5}"#,
                ]),
                // Two failures side by side: a parameter out of range, a framework's TypeError.
                json(&[
                    "observe",
                    &w,
                    "--observer",
                    "torch.HistogramObserver,torch.MinMaxObserver",
                    "--params",
                    r#"{"bins": 0}"#,
                ]),
            ],
        ),
        (
            "formats",
            vec![
                json(&["formats", &w]),
                json(&["formats", &w, "--rotate", "hadamard"]),
            ],
        ),
        (
            "quantize",
            vec![
                json(&[
                    "quantize",
                    &w,
                    "--quantizer",
                    "int",
                    "--params",
                    r#"{"bits": 4}"#,
                    "--out",
                    &path("w_int4.npy"),
                ]),
                json(&["quantize", &w, "--quantizer", "ggml.Q4_K", "--explain"]),
            ],
        ),
        (
            "model",
            vec![
                json(&[
                    "model",
                    &folder,
                    "--observers",
                    "torch.MinMaxObserver",
                    "--formats",
                    "ggml.Q4_K",
                ]),
                json(&["model", &folder, "--shard", "0/2"]),
            ],
        ),
    ]);
    let table = documented();
    let mut problems = Vec::new();
    for command in table.keys() {
        if !outputs.contains_key(command.as_str()) {
            problems.push(format!(
                "`{command}`: documented, but this test does not run it"
            ));
        }
    }
    for (command, values) in &outputs {
        match table.get(*command) {
            Some(keys) => compare(
                command,
                keys,
                &values.iter().collect::<Vec<_>>(),
                &mut problems,
            ),
            None => problems.push(format!("`{command}`: missing from the README's table")),
        }
    }
    assert!(
        problems.is_empty(),
        "README.md's JSON output table and the CLI disagree:\n{}",
        problems.join("\n")
    );
}

#[test]
fn key_lists_parse_with_their_own_keys_and_prose() {
    let keys = parse_keys("`a` (prose, no keys), `b` (of it: `c`, `d` (`e`)), `f`, `g` (`h`)");
    let names: Vec<&str> = keys.0.keys().map(String::as_str).collect();
    assert_eq!(names, ["a", "b", "f", "g"]);
    assert!(keys.0["a"].is_none() && keys.0["f"].is_none());
    let b = keys.0["b"].as_ref().unwrap();
    assert_eq!(b.0.keys().collect::<Vec<_>>(), ["c", "d"]);
    assert_eq!(
        b.0["d"].as_ref().unwrap().0.keys().collect::<Vec<_>>(),
        ["e"]
    );
    assert_eq!(
        keys.0["g"].as_ref().unwrap().0.keys().collect::<Vec<_>>(),
        ["h"]
    );
}
