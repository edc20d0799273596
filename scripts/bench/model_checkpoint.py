"""A generated bf16 checkpoint of LLM shapes, ranked by `quantscope model`.

Five llama-style layers (q/k/v/o 4096 × 4096, gate/up 11008 × 4096, down 4096 × 11008) and a
15360 × 4096 embedding: 36 tensors, exactly 2 GiB of bfloat16 in six .safetensors shards with a
`model.safetensors.index.json`. Values are N(0, 0.02²) with 8 outlier input columns per weight
scaled ×20 (the pattern that makes per-tensor observers clip), rounded to bfloat16 as PyTorch
rounds (to nearest, ties to even). The files are made once under target/bench-model (seeded; a
`.complete` marker says they are whole) and reused.

`quantscope model FOLDER` with its default methods is then timed as a whole process, reading
included, median of QUANTSCOPE_BENCH_REPEAT runs (default 3) with the files in the page cache;
throughput is checkpoint bytes per second and peak memory comes from /usr/bin/time -v (maximum
resident set size). Writes target/bench-model.json. Run by scripts/bench.sh, or on its own with
any Python that has numpy.
"""

import json
import os
import platform
import re
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "target" / "release" / "quantscope"
OUT = ROOT / "target" / "bench-model"
REPEAT = int(os.environ.get("QUANTSCOPE_BENCH_REPEAT", "3"))

HIDDEN, FFN, LAYERS, VOCAB = 4096, 11008, 5, 15360


def layer_shapes(i):
    p = f"model.layers.{i}."
    attn = [(p + f"self_attn.{n}_proj.weight", (HIDDEN, HIDDEN)) for n in "qkvo"]
    mlp = [
        (p + "mlp.gate_proj.weight", (FFN, HIDDEN)),
        (p + "mlp.up_proj.weight", (FFN, HIDDEN)),
        (p + "mlp.down_proj.weight", (HIDDEN, FFN)),
    ]
    return attn + mlp


def shards():
    """The tensors of each shard: the embedding, then one shard per layer."""
    return [[("model.embed_tokens.weight", (VOCAB, HIDDEN))]] + [
        layer_shapes(i) for i in range(LAYERS)
    ]


def bf16_bytes(x: np.ndarray) -> bytes:
    """float32 → bfloat16 bits, round to nearest even (finite values only, as generated)."""
    u = x.view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16).tobytes()


def weight(rng, shape):
    x = rng.standard_normal(shape, dtype=np.float32)
    x *= np.float32(0.02)
    cols = rng.choice(shape[1], size=8, replace=False)
    x[:, cols] *= np.float32(20.0)
    return x


def write_shard(path: Path, tensors, rng):
    header, offset = {}, 0
    for name, shape in tensors:
        size = 2 * shape[0] * shape[1]
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, shape in tensors:
            f.write(bf16_bytes(weight(rng, shape)))


def generate():
    marker = OUT / ".complete"
    if marker.exists():
        return
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2026)
    plan = shards()
    weight_map = {}
    for k, tensors in enumerate(plan):
        name = f"model-{k + 1:05d}-of-{len(plan):05d}.safetensors"
        write_shard(OUT / name, tensors, rng)
        weight_map.update({t: name for t, _ in tensors})
    (OUT / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    marker.write_text("")


def checkpoint_bytes():
    return sum(p.stat().st_size for p in OUT.glob("*.safetensors"))


def timed(args):
    """Wall seconds and peak resident MiB of one whole CLI process."""
    t = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", str(CLI), *args], capture_output=True, text=True
    )
    seconds = time.perf_counter() - t
    if done.returncode != 0:
        sys.exit(f"quantscope {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    peak_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    return seconds, peak_kib / 1024, done.stdout


def main():
    generate()
    size = checkpoint_bytes()
    for p in OUT.glob("*.safetensors"):  # into the page cache, as a second run finds it
        p.read_bytes()
    runs = [timed(["model", str(OUT), "--json"]) for _ in range(REPEAT)]
    seconds = statistics.median(r[0] for r in runs)
    peak = max(r[1] for r in runs)
    report = json.loads(runs[-1][2])
    ranked = sum(1 for t in report["tensors"] if not t.get("error"))
    row = {
        "work": "quantscope model FOLDER --json, default methods",
        "checkpoint_bytes": size,
        "tensors": len(report["tensors"]),
        "ranked": ranked,
        "seconds": seconds,
        "runs": [r[0] for r in runs],
        "gb_per_s": size / seconds / 1e9,
        "peak_mib": peak,
        "cores": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "load_before": os.getloadavg()[0],
    }
    print(
        f"model, {size / 2**30:.2f} GiB bf16 ({len(report['tensors'])} tensors): "
        f"{seconds:.2f} s = {row['gb_per_s']:.2f} GB/s (target ≥ 1), peak {peak:.0f} MiB "
        f"(target < 512)"
    )
    (ROOT / "target" / "bench-model.json").write_text(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
