"""The built wheel installs with pip into a fresh virtual environment (target/install-venv, made
once and kept: its dependencies come from PyPI the first time, then only the wheel is
reinstalled) and works there with neither Rust nor Node on the PATH and no browser: a script
observes, ranks a checkpoint and diffs one against its original with the native engine, giving
the CLI's numbers, and the package carries the widgets' bundle with the WebAssembly engine
inlined and of the package's version."""

import hashlib
import json
import re
import subprocess
import sys

import pytest

from conftest import GOLDEN, REPO, cli_json, plain

DIST = REPO / "target" / "python-dist"
VENV = REPO / "target" / "install-venv"
GGUF = GOLDEN / "gguf_quant"
DRIFT = [GOLDEN / "torch" / "inputs" / f"drift_b{i}.npy" for i in range(2)]

SCRIPT = r"""
import json, shutil, sys
from pathlib import Path
import numpy as np
import quantscope

for tool in ("node", "cargo", "rustc"):
    assert shutil.which(tool) is None, f"{tool} is reachable"
drift, original, quantized, imatrix = sys.argv[1:3], sys.argv[3], sys.argv[4], sys.argv[5]
observed = quantscope.observe([np.load(p) for p in drift], "torch.HistogramObserver", bins=256)
ranked = quantscope.model(original, ["torch.MinMaxObserver", "ggml.Q4_K"])
compared = quantscope.diff(original, quantized, imatrix=imatrix)
static = Path(quantscope.__file__).parent / "static"
print(json.dumps({
    "version": quantscope.__version__,
    "observe": observed,
    "model": ranked,
    "diff": compared,
    "static": sorted(p.name for p in static.iterdir()),
    "static_version": (static / "VERSION").read_text().strip(),
    "inline_wasm": "AGFzbQ" in str(quantscope.Explorer._esm),
    "esm": len(str(quantscope.Explorer._esm)),
}, default=lambda a: a.tolist()))
"""


def _wheel():
    wheels = sorted(DIST.glob("quantscope-*.whl"))
    if not wheels:
        pytest.skip(f"no wheel in {DIST}: run scripts/build-python.sh")
    assert len(wheels) == 1, wheels
    return wheels[0]


def _dependencies_key():
    text = (REPO / "python" / "pyproject.toml").read_text()
    deps = re.search(r"^dependencies = (.*)$", text, re.M).group(1)
    return hashlib.sha256(f"{sys.version_info[:2]} {deps}".encode()).hexdigest()


def _venv(wheel):
    """The install environment with `wheel` installed (its dependencies fetched once)."""
    python = VENV / "bin" / "python"
    stamp = VENV / ".dependencies.sha256"
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    if not python.exists() or not stamp.exists() or stamp.read_text() != _dependencies_key():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        subprocess.run([*pip, str(wheel)], check=True)
        stamp.write_text(_dependencies_key())
    subprocess.run([*pip, "--no-deps", "--force-reinstall", str(wheel)], check=True)
    return python


def test_the_wheel_works_in_a_fresh_environment_without_rust_node_or_a_browser(tmp_path):
    wheel = _wheel()
    assert re.fullmatch(r"quantscope-[^-]+-cp39-abi3-[a-z0-9_]+\.whl", wheel.name), wheel.name
    python = _venv(wheel)
    args = [*DRIFT, GGUF / "original" / "model.safetensors", GGUF / "model-Q4_K_M.gguf", GGUF / "imatrix.gguf"]
    done = subprocess.run(
        [str(python), "-c", SCRIPT, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": str(python.parent), "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    version = re.search(r'^version = "([^"]+)"', (REPO / "python" / "pyproject.toml").read_text(), re.M).group(1)
    assert out["version"] == version and out["static_version"] == version
    assert out["static"] == ["VERSION", "widget.css", "widget.js"]
    assert out["inline_wasm"] and out["esm"] > 1_000_000, "the bundled module holds the WebAssembly engine"
    assert out["observe"] == cli_json("observe", *DRIFT, "--observer", "torch.HistogramObserver", "--params", '{"bins": 256}', "--json")
    assert out["model"] == cli_json("model", GGUF / "original" / "model.safetensors", "--observers", "torch.MinMaxObserver", "--formats", "ggml.Q4_K", "--json")
    want = cli_json("diff", GGUF / "original" / "model.safetensors", GGUF / "model-Q4_K_M.gguf", "--imatrix", GGUF / "imatrix.gguf", "--json")
    assert out["diff"] == plain(want) and want["pairs"]
