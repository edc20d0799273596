//! Every fuzz seed (`fuzz/seeds/<target>/`) and every input a fuzzer found to crash a reader
//! (`tests/fuzz_regressions/<target>/`, kept after the fix) through the fuzz targets' oracle
//! ([`quantscope::checkpoint::selfcheck`]): readers never panic, the catalogue and the
//! whole-file readers agree, and the page's builder lists what the native listing lists.

use quantscope::checkpoint::selfcheck::{
    check_file, check_imatrix, check_index, check_layout, check_native_input,
};
use std::path::Path;

/// The file name each target's oracle sees its input as.
const TARGETS: [(&str, &str); 10] = [
    ("npy", "fuzz.npy"),
    ("npz", "fuzz.npz"),
    ("safetensors", "fuzz.safetensors"),
    ("gguf", "fuzz.gguf"),
    ("onnx", "fuzz.onnx"),
    ("torch_pickle", "fuzz.pt"),
    ("index_json", ""),
    ("imatrix", ""),
    ("hf_layout", ""),
    ("native", ""),
];

fn inputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    files.sort();
    files
}

fn run(root: &str) -> usize {
    let mut count = 0;
    for (target, name) in TARGETS {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(root)
            .join(target);
        for (path, bytes) in inputs(&dir) {
            eprintln!("{path}");
            match target {
                "index_json" => check_index(&bytes),
                "imatrix" => check_imatrix(&bytes),
                "hf_layout" => check_layout(&bytes),
                "native" => check_native_input(&bytes),
                _ => check_file(name, &bytes),
            }
            count += 1;
        }
    }
    count
}

#[test]
fn fuzz_seeds() {
    assert!(run("fuzz/seeds") >= 10, "the seed corpus is missing");
}

#[test]
fn fuzz_crashes_stay_fixed() {
    run("tests/fuzz_regressions");
}
