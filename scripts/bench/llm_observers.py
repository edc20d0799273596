"""The LLM families' observers in their own libraries beside the quantscope CLI, in one run.

Run by scripts/bench.sh in target/llm-bench-venv (llmcompressor 0.14.0.1, torchao 0.18.0 and
the torch 2.14.0 they pin, numpy 2.4.6). On one generated 4096 × 4096 float32 weight it times,
for every case below,

* the library in-process, the tensor already in memory: llm-compressor builds the observer
  exactly as `Observer.load_from_registry` does, calls it on the weight and computes the qparams
  (`get_qparams`); torchao builds `AffineQuantizedMSEObserver`, calls it and `calculate_qparams`;
* the quantscope CLI as a whole process (`observe`, its table on stdout): the file read and the
  error metrics included. (`--json` adds the time to write every per-slice number as text: for
  NVFP4's million groups a 147 MB document, about 0.6 s more.)
* quantscope's Python module in the same process as the library (the checkout's wheel, which
  scripts/bench.sh installs into the venv), on the same array: what the CLI runs once it has
  read the file, metrics included.

imatrix observers get the same importance on both sides: the library's own forward-pre hook
accumulates it from 64 generated calibration rows (not timed), and the CLI reads it from a .npy.
Each figure is the median of QUANTSCOPE_BENCH_LLM_REPEAT runs (default 3) after a warm-up. It
prints a table with the ratios and writes target/bench-llm.json.
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

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "target"
WORK = TARGET / "bench-llm"
CLI = TARGET / "release" / "quantscope"
REPEAT = int(os.environ.get("QUANTSCOPE_BENCH_LLM_REPEAT", "3"))

INT4_GROUP = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128}
INT4_CHANNEL = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "channel"}
INT8_TENSOR = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "tensor"}
NVFP4 = {"num_bits": 4, "type": "float", "symmetric": True, "strategy": "tensor_group",
         "group_size": 16, "scale_dtype": "float8_e4m3fn", "zp_dtype": "float8_e4m3fn"}

# (label, llm-compressor observer name, QuantizationArgs) — the rows, every llm-compressor
# observer on int4 groups of 128 and NVFP4's tensor_group 16.
LLMCOMPRESSOR = [
    ("memoryless_minmax, group 128 int4", "memoryless_minmax", INT4_GROUP),
    ("memoryless_minmax, NVFP4 tensor_group 16", "memoryless_minmax", NVFP4),
    ("static_minmax, group 128 int4", "static_minmax", INT4_GROUP),
    ("minmax, group 128 int4", "minmax", INT4_GROUP),
    ("memoryless_mse, channel int4", "memoryless_mse", INT4_CHANNEL),
    ("memoryless_mse, tensor int8", "memoryless_mse", INT8_TENSOR),
    ("memoryless_mse, group 128 int4", "memoryless_mse", INT4_GROUP),
    ("mse, group 128 int4", "mse", INT4_GROUP),
    ("memoryless_mse, NVFP4 tensor_group 16", "memoryless_mse", NVFP4),
    ("imatrix_mse, group 128 int4", "imatrix_mse", INT4_GROUP),
    ("nvfp4_expanded_mse, NVFP4 tensor_group 16", "nvfp4_expanded_mse", NVFP4),
    ("nvfp4_expanded_imatrix, NVFP4 tensor_group 16", "nvfp4_expanded_imatrix", NVFP4),
]

# (label, target dtype, granularity) for torchao's AffineQuantizedMSEObserver, symmetric.
TORCHAO = [
    ("torchao AffineQuantizedMSEObserver, PerRow int8", "int8"),
    ("torchao AffineQuantizedMSEObserver, PerRow int4", "int4"),
]


def make_weight(path: Path) -> np.ndarray:
    """A 4096 × 4096 float32 weight: N(0, 0.02²) with 8 input columns 20× (outlier columns)."""
    if not path.exists():
        rng = np.random.default_rng(0)
        w = (rng.standard_normal((4096, 4096), dtype=np.float32) * np.float32(0.02))
        w[:, rng.integers(0, 4096, 8)] *= np.float32(20)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, w)
    return np.load(path)


def median_of(f, repeat=REPEAT):
    f()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), runs


def in_process(observer: str, params: dict):
    """quantscope's Python module on the array already in memory, if it is installed."""
    try:
        import quantscope
    except ImportError:
        return None

    def run(x):
        report = quantscope.observe(x, observer, params=params)
        assert report["ok"], report
    return run


def timed_in_process(observer: str, params: dict, w_np: np.ndarray):
    run = in_process(observer, params)
    if run is None:
        return None, None
    return median_of(lambda: run(w_np))


def cli_run(args):
    def run():
        subprocess.run([str(CLI), *args], check=True, stdout=subprocess.DEVNULL)
    return run


def importance_for(w: torch.Tensor, obs, calibration: torch.Tensor) -> np.ndarray:
    """The library's own forward-pre hook accumulates the importance of `calibration` through a
    bias-free Linear shaped like `w`; returns E[x²] per input column as the observer holds it."""
    linear = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)
    obs.attach(linear)
    with torch.no_grad():
        linear(calibration)
    obs.detach(linear)
    return (obs._imatrix_sum / obs._imatrix_count.float()).numpy().astype(np.float32)


def llmcompressor_rows(w_np: np.ndarray, weight_path: Path):
    from compressed_tensors.quantization import QuantizationArgs
    from llmcompressor.observers import Observer

    w = torch.from_numpy(w_np)
    rng = np.random.default_rng(1)
    calibration = torch.from_numpy(
        rng.standard_normal((64, w.shape[1]), dtype=np.float32)
        * np.exp2(rng.uniform(-2, 2, w.shape[1])).astype(np.float32))
    importance_path = WORK / "importance.npy"
    rows = []
    for label, name, args_kw in LLMCOMPRESSOR:
        kw = dict(args_kw)
        torch_kw = {k: getattr(torch, v) if k in ("scale_dtype", "zp_dtype") else v for k, v in kw.items()}
        imatrix = "imatrix" in name

        def build():
            args = QuantizationArgs(**torch_kw, observer=name, observer_kwargs={})
            return Observer.load_from_registry(name, base_name="weight", args=args)

        params = {"base_name": "weight", **kw}
        if imatrix:
            obs = build()
            np.save(importance_path, importance_for(w, obs, calibration))
            params["importance"] = str(importance_path)
            state = {k: getattr(obs, k) for k in ("_imatrix_sum", "_imatrix_count")}

        def library():
            obs = build()
            if imatrix:
                for k, v in state.items():
                    setattr(obs, k, v.clone())
            obs(w)
            obs.get_qparams()

        lib_s, lib_runs = median_of(library)
        state = {"torch_threads": torch.get_num_threads(), "grad_enabled": torch.is_grad_enabled()}
        cli_s, cli_runs = median_of(cli_run(
            ["observe", str(weight_path), "--observer", f"llmcompressor.{name}",
             "--params", json.dumps(params)]))
        module_params = dict(params)
        if imatrix:
            module_params["importance"] = np.load(importance_path)
        py_s, py_runs = timed_in_process(f"llmcompressor.{name}", module_params, w_np)
        rows.append({"work": f"llm-compressor {label}", "library_s": lib_s, "library_runs_s": lib_runs, **state,
                     "quantscope_s": cli_s, "quantscope_runs_s": cli_runs,
                     "python_module_s": py_s, "python_module_runs_s": py_runs})
        print(f"  {rows[-1]['work']}: library {lib_s:.3f} s, CLI {cli_s:.3f} s", file=sys.stderr)
    return rows


def torchao_rows(w_np: np.ndarray, weight_path: Path):
    from torchao.quantization.granularity import PerRow
    from torchao.quantization.observer import AffineQuantizedMSEObserver
    from torchao.quantization.quant_primitives import MappingType

    w = torch.from_numpy(w_np)
    dtypes = {"int8": torch.int8, "int4": torch.int4}
    rows = []
    for label, target in TORCHAO:
        def library():
            obs = AffineQuantizedMSEObserver(MappingType.SYMMETRIC, dtypes[target], PerRow())
            obs(w)
            obs.calculate_qparams()

        lib_s, lib_runs = median_of(library)
        state = {"torch_threads": torch.get_num_threads(), "grad_enabled": torch.is_grad_enabled()}
        params = {"mapping_type": "SYMMETRIC", "target_dtype": target, "granularity": "PerRow"}
        cli_s, cli_runs = median_of(cli_run(
            ["observe", str(weight_path), "--observer", "torchao.AffineQuantizedMSEObserver",
             "--params", json.dumps(params)]))
        py_s, py_runs = timed_in_process("torchao.AffineQuantizedMSEObserver", params, w_np)
        rows.append({"work": label, "library_s": lib_s, "library_runs_s": lib_runs, **state,
                     "quantscope_s": cli_s, "quantscope_runs_s": cli_runs,
                     "python_module_s": py_s, "python_module_runs_s": py_runs})
        print(f"  {label}: library {lib_s:.3f} s, CLI {cli_s:.3f} s", file=sys.stderr)
    return rows


def main():
    import llmcompressor
    import torchao

    assert not torch.cuda.is_available(), "the library must run on the CPU"
    weight_path = WORK / "weight-4096x4096.npy"
    w = make_weight(weight_path)
    load_before = os.getloadavg()
    # torchao first: in one run, torchao's observer measured 10× faster after llm-compressor's
    # observers had run in the same process (state their imports or calls leave behind), so it is
    # timed in the state a fresh process has; torch's threads and grad mode are recorded per row.
    rows = torchao_rows(w, weight_path) + llmcompressor_rows(w, weight_path)
    # The floor of a whole process: reading the file (page cache) in a process that does nothing else.
    read_s, _ = median_of(lambda: subprocess.run(["cat", str(weight_path)], check=True,
                                                 stdout=subprocess.DEVNULL))
    for row in rows:
        row["ratio"] = row["library_s"] / row["quantscope_s"]
        py = row["python_module_s"]
        row["ratio_in_process"] = row["library_s"] / py if py else None
    print(f"\n{'LLM observer, 4096 × 4096 float32':50} {'CLI':>9} {'module':>9} {'library':>9} "
          f"{'CLI ×':>7} {'module ×':>8}  target")
    for row in rows:
        py = row["python_module_s"]
        py_s = f"{py * 1e3:6.0f} ms" if py else f"{'—':>9}"
        ratio_py = f"{row['ratio_in_process']:7.2f}×" if py else f"{'—':>8}"
        print(f"{row['work']:50} {row['quantscope_s'] * 1e3:6.0f} ms {py_s} {row['library_s'] * 1e3:6.0f} ms "
              f"{row['ratio']:6.2f}× {ratio_py}  ≥ 5× (CLI)")
    print(f"(reading the 64 MiB file with cat, a whole process: {read_s * 1e3:.0f} ms)")
    document = {
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "load_before": load_before, "load_after": os.getloadavg()},
        "versions": {"torch": torch.__version__, "llmcompressor": llmcompressor.__version__,
                     "torchao": torchao.__version__, "numpy": np.__version__,
                     "torch_threads": torch.get_num_threads()},
        "repeat": REPEAT,
        "cat_file_s": read_s,
        "rows": rows,
    }
    (TARGET / "bench-llm.json").write_text(json.dumps(document, indent=1))


if __name__ == "__main__":
    main()
