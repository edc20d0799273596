//! Parallelism never changes a result: `quantscope observe FILE --json` (the default per-tensor
//! observers, run in parallel over observers and over chunks of the tensor, with their error
//! metrics) prints the same bytes on one thread and on two.
//!
//! The tensor is a real MiniLM activation of 860,160 values, so the chunked passes (64Ki
//! elements a piece, see `src/parallel.rs`) split it into 14 pieces that two threads share.

mod common;

use serde_json::Value;

const ACTIVATION: &str = "../shared/samples/minilm/activations/l0_ffn_gelu.npy";

/// The CLI's stdout for `args` with `RAYON_NUM_THREADS=threads`.
fn observe_with_threads(threads: usize, args: &[&str]) -> String {
    common::cli_stdout_with("RAYON_NUM_THREADS", &threads.to_string(), args)
}

#[test]
fn one_thread_and_two_threads_print_identical_reports() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(ACTIVATION);
    let path = path.to_string_lossy();
    let args = ["observe", path.as_ref(), "--json"];
    let one = observe_with_threads(1, &args);
    let two = observe_with_threads(2, &args);
    let reports: Value = serde_json::from_str(&one).expect("JSON report");
    let reports = reports.as_array().expect("one report per observer");
    let measured: Vec<&Value> = reports
        .iter()
        .filter(|r| r["metrics"].is_object())
        .collect();
    assert!(
        measured.len() >= 20,
        "only {} observers measured",
        measured.len()
    );
    for r in measured {
        let metrics = &r["metrics"];
        assert_eq!(metrics["count"], 860_160, "{}", r["observer"]);
        assert!(
            metrics["mse"].as_f64().is_some_and(|m| m > 0.0),
            "{}",
            r["observer"]
        );
    }
    assert!(one == two, "the reports differ between 1 and 2 threads");
}
