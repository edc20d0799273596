//! Throughput of the engine's hot paths on a 16M-element float32 tensor, printed as ratios
//! against fixed reference figures (PyTorch 2.15 on these machines, memory speed) and against a
//! saved baseline of a previous run.
//!
//! ```text
//! cargo bench --bench engine                 # run, compare with target/bench-baseline.json if present
//! QUANTSCOPE_BENCH_SAVE=1 cargo bench ...    # also save this run as the baseline
//! QUANTSCOPE_BENCH_ELEMENTS=1000000 ...      # smaller tensor for a quick look
//! ```

use quantscope::engine;
use quantscope::histogram::{finite_min_max, histc};
use quantscope::params::Params;
use quantscope::registry;
use quantscope::tensor::Tensor;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Deterministic Laplace-like data with a few outliers (no external RNG needed).
fn synthetic(n: usize) -> Vec<f32> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let u = ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            let v = if u < 0.5 {
                (2.0 * u).ln()
            } else {
                -(2.0 * (1.0 - u)).ln()
            };
            let outlier = if i % 1_000_003 == 0 { 40.0 } else { 1.0 };
            (v * outlier) as f32
        })
        .collect()
}

/// Best-of-`runs` wall time of `f` (after one warm-up call).
fn time<R>(runs: usize, mut f: impl FnMut() -> R) -> Duration {
    black_box(f());
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

struct Row {
    name: &'static str,
    value: f64,
    unit: &'static str,
    reference: Option<(f64, &'static str)>,
    higher_is_better: bool,
}

fn main() {
    let n: usize = std::env::var("QUANTSCOPE_BENCH_ELEMENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16 << 20);
    let data = synthetic(n);
    let tensor = Tensor::from_vec(data.clone());
    let channels = 256;
    let per_channel = Tensor::new(
        vec![channels, n / channels],
        data[..channels * (n / channels)].to_vec(),
    )
    .expect("shape");
    let melem = |d: Duration| n as f64 / d.as_secs_f64() / 1e6;
    let mut rows = Vec::new();

    let (lo, hi) = finite_min_max(&data).expect("finite data");
    rows.push(Row {
        name: "min/max",
        value: melem(time(5, || finite_min_max(&data))),
        unit: "M elem/s",
        reference: Some((1000.0, "memory speed target (1 G elem/s)")),
        higher_is_better: true,
    });
    rows.push(Row {
        name: "histogram 2048 bins (histc)",
        value: melem(time(3, || histc(&data, 2048, lo, hi))),
        unit: "M elem/s",
        reference: None,
        higher_is_better: true,
    });

    if let Ok(spec) = registry::find("torch.HistogramObserver") {
        let params = Params::new().with("bins", 2048);
        let forward = time(3, || {
            let mut observer = quantscope::observer::Instance::new(spec, &params).expect("resolve");
            observer.observe(&tensor).expect("observe");
            observer
        });
        rows.push(Row {
            name: "torch.HistogramObserver forward (2048 bins)",
            value: melem(forward),
            unit: "M elem/s",
            reference: Some((33.0, "PyTorch 2.15, 2 threads (≥10× wanted)")),
            higher_is_better: true,
        });
        let mut observer = quantscope::observer::Instance::new(spec, &params).expect("resolve");
        observer.observe(&tensor).expect("observe");
        let search = time(20, || observer.qparams().expect("qparams"));
        rows.push(Row {
            name: "torch.HistogramObserver qparams search (2048 bins)",
            value: search.as_secs_f64() * 1e3,
            unit: "ms",
            reference: Some((45.0, "PyTorch 2.15: 30–60 ms (<1 ms wanted)")),
            higher_is_better: false,
        });
    }
    if let Ok(spec) = registry::find("torch.PerChannelMinMaxObserver") {
        let params = Params::new()
            .with("ch_axis", 0)
            .with("qscheme", "per_channel_affine");
        let d = time(3, || {
            let mut observer = quantscope::observer::Instance::new(spec, &params).expect("resolve");
            observer.observe(&per_channel).expect("observe");
            observer
        });
        rows.push(Row {
            name: "per-channel min/max (256 channels)",
            value: melem(d),
            unit: "M elem/s",
            reference: Some((1000.0, "memory speed target")),
            higher_is_better: true,
        });
    }
    if registry::find("torch.MinMaxObserver").is_ok() {
        let batches = [tensor.clone()];
        let d = time(3, || {
            engine::run(
                "torch.MinMaxObserver",
                &Params::new(),
                &batches,
                Default::default(),
            )
            .expect("run")
        });
        rows.push(Row {
            name: "MinMax observe + Q/DQ + metrics",
            value: melem(d),
            unit: "M elem/s",
            reference: None,
            higher_is_better: true,
        });
    }

    let baseline_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-baseline.json");
    let baseline: BTreeMap<String, f64> = std::fs::read_to_string(&baseline_path)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    println!("quantscope engine benchmark: {n} float32 elements, one thread");
    println!(
        "{:52} {:>12} {:10} {:>10} {:>10}  reference",
        "path", "value", "unit", "×ref", "×baseline"
    );
    for row in &rows {
        let ratio = |reference: f64| {
            if row.higher_is_better {
                row.value / reference
            } else {
                reference / row.value
            }
        };
        let vs_ref = row
            .reference
            .map_or("-".to_string(), |(r, _)| format!("{:.1}×", ratio(r)));
        let vs_base = baseline
            .get(row.name)
            .map_or("-".to_string(), |&b| format!("{:.2}×", ratio(b)));
        println!(
            "{:52} {:>12.3} {:10} {:>10} {:>10}  {}",
            row.name,
            row.value,
            row.unit,
            vs_ref,
            vs_base,
            row.reference.map_or("", |(_, what)| what)
        );
    }
    if std::env::var("QUANTSCOPE_BENCH_SAVE").is_ok() {
        let map: BTreeMap<&str, f64> = rows.iter().map(|r| (r.name, r.value)).collect();
        if let Ok(text) = serde_json::to_string_pretty(&map) {
            let _ = std::fs::write(&baseline_path, text);
            println!("saved baseline to {}", baseline_path.display());
        }
    }
}
