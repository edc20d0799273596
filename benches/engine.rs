//! The library in-process on one tensor file, timed and printed as JSON (no reference figures:
//! `scripts/bench.sh` measures PyTorch and numpy in the same run and computes the ratios).
//!
//! ```text
//! cargo bench --bench engine -- FILE.npy [--repeat N] [--only ID]
//! ```
//!
//! With `--only ID`, it times that one observer's run alone (`{"observer", "elements",
//! "threads", "run"}`) through the driver call the CLI's `observe` and Python's
//! `quantscope.observe` make (`commands::observe`, the tensor's statistics shared):
//! `scripts/bench/bench.py` interleaves it with the same run from Python.
//!
//! Prints one JSON object: the tensor's size, the median (and every) wall time in seconds of
//! reading the file, of `torch.HistogramObserver` and `torch.MinMaxObserver` runs (observe,
//! search and metrics), of each listed per-tensor observer alone
//! (`scripts/bench/observers-per-tensor.txt`), of all of them together (in parallel, as the CLI
//! runs them), of the LLM families' list (`observers-llm.txt`) together, and of the bare min/max
//! and 2048-bin histc passes, with the number of threads used (`RAYON_NUM_THREADS`).

use quantscope::commands;
use quantscope::engine::{NonFinitePolicy, Run};
use quantscope::histogram::histc;
use quantscope::parallel;
use quantscope::params::Params;
use quantscope::shared_stats::finite_min_max;
use quantscope::shared_stats::SharedStats;
use quantscope::tensor::{mapped, Tensor};
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Instant;

// With the `python` feature the library declares this same allocator (src/python.rs).
#[cfg(not(feature = "python"))]
#[global_allocator]
static ALLOCATOR: mapped::MapAwareAllocator = mapped::MapAwareAllocator;

/// Wall times of `repeat` calls of `f` (after one warm-up call) and their median.
fn time<R>(repeat: usize, mut f: impl FnMut() -> R) -> Value {
    black_box(f());
    let mut runs: Vec<f64> = (0..repeat.max(1))
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed().as_secs_f64()
        })
        .collect();
    let all = runs.clone();
    runs.sort_by(f64::total_cmp);
    json!({ "median_s": runs[runs.len() / 2], "runs_s": all })
}

/// The ids of a benchmark list (`scripts/bench/observers-*.txt`: one a line, `#` comments),
/// the lists the CLI and wasm timings read too.
fn listed(text: &'static str) -> Vec<&'static str> {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .filter(|id| !id.is_empty())
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let Some(path) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: cargo bench --bench engine -- FILE.npy [--repeat N]");
        std::process::exit(2);
    };
    let repeat = args
        .iter()
        .position(|a| a == "--repeat")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let read = || -> Tensor {
        let mut tensors = mapped::read_file(std::path::Path::new(path)).expect("read the tensor");
        tensors.swap_remove(0).tensor
    };
    let tensor = read();
    let batches = [tensor];
    let run = |id: &str| {
        Run::new(id, Params::new(), &batches)
            .expect("observer")
            .report()
    };
    if let Some(id) = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
    {
        // What `quantscope observe FILE --observer ID` and `quantscope.observe(x, ID)` run once
        // the tensor is in memory: the same driver call, statistics shared.
        let runs = [(id.clone(), Params::new())];
        let observe = || {
            commands::observe(&runs, &batches, None, NonFinitePolicy::Exclude, false)
                .expect("observer")
        };
        let out = json!({
            "observer": id,
            "elements": batches[0].data.len(),
            "threads": rayon::current_num_threads(),
            "run": time(repeat, observe),
        });
        println!("{out}");
        return;
    }
    let ids = listed(include_str!("../scripts/bench/observers-per-tensor.txt"));
    let llm_ids = listed(include_str!("../scripts/bench/observers-llm.txt"));
    let each: serde_json::Map<String, Value> = ids
        .iter()
        .map(|id| (id.to_string(), time(repeat.min(3), || run(id))))
        .collect();
    let all = time(repeat.min(3), || {
        let refs: Vec<&Tensor> = batches.iter().collect();
        let _shared = SharedStats::share(&refs);
        parallel::map_items(&ids, |id| run(id))
    });
    let llm_all = time(1, || {
        let refs: Vec<&Tensor> = batches.iter().collect();
        let _shared = SharedStats::share(&refs);
        parallel::map_items(&llm_ids, |id| run(id))
    });
    let data = &batches[0].data;
    let (lo, hi) = finite_min_max(data).unwrap_or((0.0, 1.0));
    let out = json!({
        "elements": data.len(),
        "threads": rayon::current_num_threads(),
        "read_file": time(repeat, read),
        "histogram_observer": time(repeat, || run("torch.HistogramObserver")),
        "minmax_qdq_metrics": time(repeat, || run("torch.MinMaxObserver")),
        "min_max_pass": time(repeat, || finite_min_max(data)),
        "histc_2048": time(repeat, || histc(data, 2048, lo, hi)),
        "observers": ids,
        "each_observer": each,
        "all_observers": all,
        "llm_observers": llm_ids,
        "all_llm_observers": llm_all,
    });
    println!("{out}");
}
