"""quantscope against its references, measured side by side in one run (`npm run bench`).

Run by scripts/bench.sh in the PyTorch environment (target/torch-venv: torch 2.15.0, numpy
2.4.6) with the checkout's quantscope wheel installed. Every figure comes from this run: nothing
is typed in. On one 16M-element float32 .npy it times

* PyTorch in-process: `torch.ao.quantization.HistogramObserver` forward + calculate_qparams;
* quantscope from Python in the same process: `quantscope.observe(x, "torch.HistogramObserver")`
  on the numpy array (borrowed, not copied), against PyTorch and against the library's own
  in-process time for the same run (benches/engine.rs: what the CLI runs once it has read the
  file), so the Python layer's overhead shows;
* the peak memory a 1 GiB float32 array adds when it is observed from Python (a fresh process,
  `/proc/self/status`'s VmHWM over VmRSS; a copy of the array measured alike shows the method
  sees a copy);
* numpy in-process: MinMax qparams (PyTorch's quint8 affine formula), Q/DQ, MSE, SQNR, max error
  and clipped share;
* the quantscope CLI as a whole process (file read included): the same HistogramObserver run,
  MinMaxObserver with its metrics, the 23 per-tensor observers of the five original families
  and, in a row of their own, the LLM families' observers (the lists in
  scripts/bench/observers-*.txt, which the library and wasm timings read too);
* the library in-process (benches/engine.rs, printing JSON);
* the wasm package in Node (scripts/bench/wasm-node.mjs);
* the page in headless Chromium (e2e/bench-page.mjs, see `measure_page`): the 43 observers of the
  five original families with the slider, then every observer the page has
  (QUANTSCOPE_BENCH_PAGE=0 skips both).

Each timing is the median of several repetitions after a warm-up. It prints a table with the
ratios and writes target/bench.json (with the machine, the versions and the load average before
and after, since the machine may be shared).
"""

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.ao.quantization import HistogramObserver

import quantscope

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "target"
ELEMENTS = 1 << 24
REPEAT = int(os.environ.get("QUANTSCOPE_BENCH_REPEAT", "5"))


def listed(name: str) -> list:
    """The observer ids of scripts/bench/observers-NAME.txt (one a line, `#` comments)."""
    text = (ROOT / "scripts" / "bench" / f"observers-{name}.txt").read_text()
    ids = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [i for i in ids if i]


def make_data(path: Path) -> np.ndarray:
    """16M float32 values: standard normal with every 1,000,003rd value 40× (outliers), as a
    4096 × 4096 matrix (a weight's shape: per-channel observers in the page then see 4096
    channels, where a 1-D tensor would make every value a channel)."""
    if not path.exists():
        rng = np.random.default_rng(0)
        x = rng.standard_normal(ELEMENTS, dtype=np.float32)
        x[::1_000_003] *= 40
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, x.reshape(4096, ELEMENTS // 4096))
    return np.load(path)


def timed(f, repeat=REPEAT):
    """Median and every wall time (seconds) of `repeat` calls after one warm-up; last result."""
    result = f()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = f()
        runs.append(time.perf_counter() - start)
    return {"median_s": statistics.median(runs), "runs_s": runs}, result


def torch_histogram(x: np.ndarray):
    return timed(torch_histogram_run(x))


def interleaved(calls: dict, rounds: int):
    """Each function of `calls` (name → function returning `(seconds, result)`) once per round,
    in turn, after one warm-up each: per name the median and every time, and the last result.
    Taking turns spreads a shared machine's changing load over every contender alike."""
    for f in calls.values():
        f()
    runs = {name: [] for name in calls}
    last = {}
    for _ in range(rounds):
        for name, f in calls.items():
            seconds, last[name] = f()
            runs[name].extend(seconds if isinstance(seconds, list) else [seconds])
    return {name: ({"median_s": statistics.median(r), "runs_s": r}, last[name]) for name, r in runs.items()}


def wall(f):
    """`f` as a contender of `interleaved`: its wall time and its result."""

    def run():
        start = time.perf_counter()
        result = f()
        return time.perf_counter() - start, result

    return run


def torch_histogram_run(x: np.ndarray):
    t = torch.from_numpy(x)

    def run():
        obs = HistogramObserver()
        obs(t)
        scale, zp = obs.calculate_qparams()
        return float(scale[0]), int(zp[0])

    return run


def python_histogram_run(x: np.ndarray):
    """quantscope's native module from Python, in this process: the float32 array is lent to
    the engine without a copy."""

    def run():
        r = quantscope.observe(x, "torch.HistogramObserver")
        return float(r["scale"][0]), int(r["zero_point"][0])

    return run


def library_one(path: Path, observer: str, repeat: int):
    """benches/engine.rs --only: one observer's run in-process in Rust (what the CLI runs after
    reading the file), timed inside that process: its times and the process's report."""
    out = subprocess.run(
        ["cargo", "bench", "--locked", "--quiet", "--bench", "engine", "--", str(path), "--repeat", str(repeat),
         "--only", observer],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    return report["run"]["runs_s"], report


def status_bytes(key: str) -> int:
    """A `kB` field of /proc/self/status (VmRSS, VmHWM) in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def peak_memory_child(path: Path) -> None:
    """In a fresh process (`bench.py --peak-memory FILE.npy`): a 1 GiB float32 array (the 16M
    values sixteen times, written into one buffer, no temporary), then the peak memory that
    `quantscope.observe(big, "torch.HistogramObserver")` adds, and what a copy adds measured
    the same way. Prints JSON."""
    x = np.load(path).ravel()
    big = np.empty((16, x.size), dtype=np.float32)
    big[:] = x

    def added(f):
        try:
            Path("/proc/self/clear_refs").write_text("5")  # peak RSS := RSS
        except OSError:
            pass
        before = status_bytes("VmRSS")
        start = time.perf_counter()
        kept = f()
        seconds = time.perf_counter() - start
        return status_bytes("VmHWM") - before, seconds, kept

    observed, seconds, r = added(lambda: quantscope.observe(big, "torch.HistogramObserver"))
    copied, _, _ = added(lambda: big.copy())
    print(json.dumps({
        "array_bytes": big.nbytes,
        "observe_added_bytes": observed,
        "observe_s": seconds,
        "copy_added_bytes": copied,
        "scale": r["scale"],
    }))


def peak_memory(path: Path):
    out = subprocess.run([sys.executable, __file__, "--peak-memory", str(path)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def numpy_minmax_metrics(x: np.ndarray):
    """MinMaxObserver's default qparams (quint8, per-tensor affine) and the error of Q/DQ."""

    def run():
        lo = np.float32(min(x.min(), 0.0))
        hi = np.float32(max(x.max(), 0.0))
        scale = np.float32(max((hi - lo) / np.float32(255), np.finfo(np.float32).eps))
        zp = int(np.clip(-np.round(lo / scale), 0, 255))
        q = np.clip(np.round(x * (np.float32(1) / scale)) + zp, 0, 255)
        dq = ((q - zp) * scale).astype(np.float32)
        err = x.astype(np.float64) - dq
        sq = err * err
        mse = float(sq.mean())
        signal = float(np.square(x, dtype=np.float64).mean())
        grid_lo, grid_hi = (0 - zp) * float(scale), (255 - zp) * float(scale)
        clipped = float(np.count_nonzero((x < grid_lo) | (x > grid_hi))) / x.size
        return {
            "scale": float(scale),
            "zero_point": zp,
            "mse": mse,
            "sqnr_db": 10 * np.log10(signal / mse),
            "max_abs_err": float(np.abs(err).max()),
            "clipped_fraction": clipped,
        }

    return timed(run)


def cli(args, repeat=REPEAT):
    """The quantscope CLI as a whole process; its parsed JSON output (or text)."""
    exe = TARGET / "release" / "quantscope"

    def run():
        out = subprocess.run([str(exe), *args], check=True, capture_output=True, text=True).stdout
        return json.loads(out) if "--json" in args else out

    return timed(run, repeat)


def library(path: Path, repeat: int, threads=None):
    """benches/engine.rs: the library in-process."""
    env = dict(os.environ)
    if threads:
        env["RAYON_NUM_THREADS"] = str(threads)
    out = subprocess.run(
        ["cargo", "bench", "--locked", "--quiet", "--bench", "engine", "--", str(path), "--repeat", str(repeat)],
        cwd=ROOT, check=True, capture_output=True, text=True, env=env,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def wasm_node(path: Path, repeat: int, ids):
    """scripts/bench/wasm-node.mjs: the npm package (WebAssembly) in Node."""
    out = subprocess.run(
        ["node", str(ROOT / "scripts/bench/wasm-node.mjs"), str(path), str(repeat), *ids],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def wasm_node_cold(path: Path, ids, repeat: int = 3):
    """The npm package in fresh Node processes (`wasm-node.mjs --cold`): each process timed whole
    (start, import, init, file read, load and the list observed once with `observeMany`, one
    thread per core), median of `repeat`; the
    phases of the median run as the script reports them."""
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = subprocess.run(
            ["node", str(ROOT / "scripts/bench/wasm-node.mjs"), str(path), "1", "--cold", *ids],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stdout
        runs.append((time.perf_counter() - t, json.loads(out.strip().splitlines()[-1])))
    runs.sort(key=lambda r: r[0])
    seconds, phases = runs[len(runs) // 2]
    return {"median_s": seconds, "runs_s": [r[0] for r in runs], **phases}


def measure_page(path: Path, original: bool = True):
    """The page in headless Chromium (e2e/bench-page.mjs, Playwright with Debian's Chromium as in
    the end-to-end tests): the observers on `path` (with `original`, the 43 of the five original
    families; else every registered one, the LLM families' included), the time until all panels
    are ready, then the median and p95 of a histogram-only slider change (torch.HistogramObserver's
    search-only slider, moved 24 times, or once without `original`) as the page measures its own
    redraws. Returns its JSON, e.g. `{"all_panels_ready_s": …, "slider_p95_ms": …, "observers":
    43, …}`, or None when QUANTSCOPE_BENCH_PAGE=0 or the script is missing."""
    script = ROOT / "e2e" / "bench-page.mjs"
    if os.environ.get("QUANTSCOPE_BENCH_PAGE") == "0" or not script.exists():
        return None
    args = [str(path), "--original"] if original else [str(path), "1"]
    out = subprocess.run(["node", str(script), *args], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def machine():
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model or platform.processor(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "numpy": np.__version__,
        "rustc": subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip(),
        "node": subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip(),
    }


def main():
    path = TARGET / "bench" / "x16m_4096x4096.npy"
    x = make_data(path)
    load_before = os.getloadavg()
    print(f"quantscope benchmark: {x.size:,} float32 values ({path}); load average {load_before[0]:.2f}",
          file=sys.stderr)

    t_hist, torch_q = torch_histogram(x)
    # quantscope from Python against PyTorch in this process, then against the library's
    # in-process run of the same observer, each pair taking turns.
    turns = max(REPEAT, 7)
    same_process = interleaved({"torch": wall(torch_histogram_run(x)), "python": wall(python_histogram_run(x))},
                               turns)
    t_torch_turns, _ = same_process["torch"]
    t_py_hist, py_q = same_process["python"]
    python_run = python_histogram_run(x)
    against_library = interleaved({
        "python": lambda: ([t for t, _ in (wall(python_run)() for _ in range(3))], None),
        "library": lambda: library_one(path, "torch.HistogramObserver", 3),
    }, turns)
    t_py_turns, _ = against_library["python"]
    t_lib_turns, _ = against_library["library"]
    t_numpy, numpy_m = numpy_minmax_metrics(x)
    t_cli_hist, cli_hist = cli(["observe", str(path), "--observer", "torch.HistogramObserver", "--json"])
    t_cli_minmax, cli_minmax = cli(["observe", str(path), "--observer", "torch.MinMaxObserver", "--json"])
    ids = listed("per-tensor")
    llm_ids = listed("llm")
    t_cli_all, _ = cli(["observe", str(path), "--observer", ",".join(ids)], repeat=max(3, REPEAT // 2))
    t_cli_llm, _ = cli(["observe", str(path), "--observer", ",".join(llm_ids)], repeat=1)
    lib = library(path, REPEAT)
    lib_one = library(path, REPEAT, threads=1)
    assert lib["observers"] == ids and lib["llm_observers"] == llm_ids, "benches/engine.rs read other lists"
    memory = peak_memory(path)
    node = wasm_node(path, REPEAT, ids)
    node_cold = wasm_node_cold(path, ids)
    page = measure_page(path)
    # Every observer the page has: the LLM families' searches take the page minutes at this size.
    page_all = measure_page(path, original=False)
    load_after = os.getloadavg()

    n = x.size
    per_observer = len(ids) * n / t_cli_all["median_s"] / 1e6
    per_llm_observer = len(llm_ids) * n / t_cli_llm["median_s"] / 1e6
    wasm_all = node["all_observers"]["observe_median_s"]
    pooled = node["all_observers_workers"]
    native_all = lib["all_observers"]["median_s"]
    rows = [
        ("torch.HistogramObserver: whole CLI process vs PyTorch in-process",
         t_cli_hist["median_s"], t_hist["median_s"], t_hist["median_s"] / t_cli_hist["median_s"], "≥ 4×"),
        ("MinMax + Q/DQ + metrics: whole CLI process vs numpy",
         t_cli_minmax["median_s"], t_numpy["median_s"], t_numpy["median_s"] / t_cli_minmax["median_s"], "≥ 5×"),
        (f"the {len(ids)} per-tensor observers with metrics: whole CLI process",
         t_cli_all["median_s"], None, None, f"{per_observer:.0f} M elements/s per observer (≥ 400)"),
        (f"the {len(llm_ids)} LLM-family observers (llm-compressor, torchao): whole CLI process",
         t_cli_llm["median_s"], None, None, f"{per_llm_observer:.0f} M elements/s per observer"),
        (f"the {len(llm_ids)} LLM-family observers in-process: native library ({lib['threads']} threads)",
         lib["all_llm_observers"]["median_s"], None, None, "(one run)"),
        (f"the {len(ids)} observers in-process: wasm in Node (1 thread) vs native library ({lib['threads']} threads)",
         wasm_all, native_all, wasm_all / native_all, "(one thread against all: for reference)"),
        (f"the {len(ids)} observers in-process: wasm in Node vs native library (1 thread)",
         wasm_all, lib_one["all_observers"]["median_s"], wasm_all / lib_one["all_observers"]["median_s"], "(for reference)"),
        (f"the {len(ids)} observers, file read included: wasm in {pooled['workers']} Node worker_threads vs CLI",
         pooled["median_s"], t_cli_all["median_s"], pooled["median_s"] / t_cli_all["median_s"],
         "≤ 1.6× the native time (both on every core)" + ("" if pooled["identical"] else " (ANSWERS DIFFER)")),
        (f"the {len(ids)} observers in a fresh Node process, `observeMany` on {node_cold['threads']} threads (init "
         f"{node_cold['init_s']:.2f} s, load {node_cold['first_load_s']:.2f} s, observe {node_cold['first_observe_s']:.2f} s) "
         "vs the CLI, both whole processes",
         node_cold["median_s"], t_cli_all["median_s"], node_cold["median_s"] / t_cli_all["median_s"],
         "≤ 2×"),
    ]
    py_vs_torch = t_torch_turns["median_s"] / t_py_hist["median_s"]
    py_overhead = t_py_turns["median_s"] / t_lib_turns["median_s"] - 1
    py_overhead_min = min(t_py_turns["runs_s"]) / min(t_lib_turns["runs_s"]) - 1
    rows += [
        ("torch.HistogramObserver from Python: quantscope.observe vs PyTorch, same process, in turns",
         t_py_hist["median_s"], t_torch_turns["median_s"], py_vs_torch, "≥ 4×"),
        ("the same quantscope.observe vs the CLI's in-process run (benches/engine.rs --only), in turns",
         t_py_turns["median_s"], t_lib_turns["median_s"], t_py_turns["median_s"] / t_lib_turns["median_s"],
         f"overhead {py_overhead * 100:+.1f} % (< 5 %; fastest runs {py_overhead_min * 100:+.1f} %)"),
    ]
    if page is not None:
        rows += [
            (f"page in Chromium: all {page['observers']} observers, all panels ready",
             page["all_panels_ready_s"], None, None, "< 3 s"),
            ("page in Chromium: histogram-only slider change, p95 (median "
             f"{page['slider_median_ms'] or float('nan'):.1f} ms)",
             (page["slider_p95_ms"] or float("nan")) / 1e3, None, None, "< 16 ms"),
        ]
    if page_all is not None:
        rows.append((f"page in Chromium: every one of the {page_all['observers']} observers, all panels ready",
                     page_all["all_panels_ready_s"], None, None, "< 5 s"))
    same_hist = (cli_hist["scale"][0], cli_hist["zero_point"][0]) == torch_q
    same_py_hist = py_q == torch_q
    m = cli_minmax["metrics"]
    same_minmax = abs(m["mse"] - numpy_m["mse"]) <= 1e-9 * numpy_m["mse"] and cli_minmax["zero_point"][0] == numpy_m["zero_point"]

    print()
    print(f"{'work':78} {'quantscope':>11} {'reference':>11} {'ratio':>8}  target")
    for name, ours, ref, ratio, target in rows:
        ref_s = f"{ref * 1e3:9.1f} ms" if ref is not None else f"{'—':>11}"
        ratio_s = f"{ratio:7.2f}×" if ratio is not None else f"{'—':>8}"
        print(f"{name:78} {ours * 1e3:8.1f} ms {ref_s} {ratio_s}  {target}")
    print()
    print("library in-process (median):", ", ".join(
        f"{k} {lib[k]['median_s'] * 1e3:.1f} ms" for k in
        ["read_file", "histogram_observer", "minmax_qdq_metrics", "min_max_pass", "histc_2048", "all_observers"]))
    slow = sorted(lib["each_observer"].items(), key=lambda kv: -kv[1]["median_s"])
    print("slowest observers alone (ms):", ", ".join(f"{k} {v['median_s'] * 1e3:.0f}" for k, v in slow[:6]))
    print(f"wasm flavour in Node: {node.get('flavour') or 'not reported'}; tensor load in Node "
          f"{node['all_observers']['load_median_s'] * 1e3:.0f} ms")
    print(f"same qparams as PyTorch's HistogramObserver: CLI {'yes' if same_hist else 'NO'}, Python "
          f"{'yes' if same_py_hist else 'NO'} {torch_q}; same MinMax metrics as numpy: {'yes' if same_minmax else 'NO'}")
    mib = 1 << 20
    print(f"peak memory from Python: observing a {memory['array_bytes'] / mib:.0f} MiB float32 array "
          f"(torch.HistogramObserver, {memory['observe_s']:.2f} s) adds {memory['observe_added_bytes'] / mib:.1f} MiB "
          f"(target < 64 MiB); a copy of it adds {memory['copy_added_bytes'] / mib:.1f} MiB")
    if page is None:
        print("page in Chromium: not measured (QUANTSCOPE_BENCH_PAGE=0 or e2e/bench-page.mjs missing)")
    for run in (page, page_all):
        if run is not None and (run["panels_not_ready"] or run["page_errors"]):
            first = run["page_errors"][0].splitlines()[0] if run["page_errors"] else "none"
            print(f"page in Chromium: NOT VALID: {len(run['panels_not_ready'])} of {run['observers']} panels not "
                  f"ready, {len(run['page_errors'])} page errors (first: {first}); see target/bench.json")
    if page_all is not None:
        slow = page_all["slowest_observers_s"][:6]
        print("page, every observer: slowest panels inside their workers (s):",
              ", ".join(f"{name} {seconds:.1f}" for name, seconds, _ in slow))
    print(f"load average: {load_before[0]:.2f} before, {load_after[0]:.2f} after "
          f"({os.cpu_count()} cores; figures taken above 1.5 are not representative)")

    report = {
        "elements": n,
        "machine": machine(),
        "load_average": {"before": load_before, "after": load_after},
        "repeat": REPEAT,
        "reference": {
            "torch_histogram_observer": {**t_hist, "qparams": torch_q},
            "array_copy_added_bytes": memory["copy_added_bytes"],
            "numpy_minmax_qdq_metrics": {**t_numpy, "result": numpy_m},
        },
        "cli": {
            "histogram_observer": {**t_cli_hist, "scale": cli_hist["scale"], "zero_point": cli_hist["zero_point"]},
            "minmax_qdq_metrics": {**t_cli_minmax, "metrics": cli_minmax["metrics"]},
            "all_observers": t_cli_all,
            "llm_observers": t_cli_llm,
        },
        "python": {
            "histogram_observer_in_turns_with_torch": {**t_py_hist, "qparams": py_q},
            "torch_histogram_observer_in_turns": t_torch_turns,
            "histogram_observer_in_turns_with_library": t_py_turns,
            "library_histogram_observer_in_turns": t_lib_turns,
            "peak_memory": memory,
        },
        "library": lib,
        "library_one_thread": lib_one,
        "wasm_node": node,
        "wasm_node_cold": node_cold,
        "page": page,
        "page_all_observers": page_all,
        "ratios": {
            "histogram_vs_pytorch": rows[0][3],
            "minmax_metrics_vs_numpy": rows[1][3],
            "per_observer_melem_per_s": per_observer,
            "wasm_node_over_native": rows[5][3],
            "wasm_node_over_native_one_thread": rows[6][3],
            "wasm_node_workers_over_cli": rows[7][3],
            "wasm_node_cold_over_cli": rows[8][3],
            "per_llm_observer_melem_per_s": per_llm_observer,
            "python_histogram_vs_pytorch": py_vs_torch,
            "python_overhead_over_library": py_overhead,
            "python_overhead_over_library_fastest_runs": py_overhead_min,
            "python_observe_added_mib_for_1gib": memory["observe_added_bytes"] / (1 << 20),
        },
        "checks": {"same_histogram_qparams_as_pytorch": same_hist, "same_minmax_metrics_as_numpy": same_minmax,
                   "same_histogram_qparams_from_python": same_py_hist},
    }
    (TARGET / "bench.json").write_text(json.dumps(report, indent=2))
    print(f"wrote {TARGET / 'bench.json'}", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peak-memory"]:
        peak_memory_child(Path(sys.argv[2]))
    else:
        main()
