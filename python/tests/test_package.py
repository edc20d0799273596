"""The Python side of quantscope.Explorer: data become .npy/.npz/.safetensors bytes (binary
buffers, never JSON numbers), bad inputs get specific errors, the package carries the bundled
widget with its WebAssembly engine inlined, and its version is the crate's."""

import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import traitlets

import quantscope

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("QUANTSCOPE_SHARED", REPO.parent / "shared"))
TORCH = SHARED / "golden" / "torch" / "inputs"


def _npy(payload):
    return np.load(io.BytesIO(payload), allow_pickle=False)


def test_the_bundled_widget_is_the_packages_version():
    """What the wheel's build checks (scripts/build-python.sh), checked on the installed package."""
    static = Path(quantscope.__file__).parent / "static"
    assert sorted(p.name for p in static.iterdir()) == ["VERSION", "widget.css", "widget.js"]
    assert (static / "VERSION").read_text().strip() == quantscope.__version__


def test_version_is_the_crates():
    cargo = (REPO / "Cargo.toml").read_text()
    crate = re.search(r'^\[package\][^\[]*?^version\s*=\s*"([^"]+)"', cargo, re.M | re.S).group(1)
    assert quantscope.__version__ == crate
    pyproject = (REPO / "python" / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1) == crate


def test_the_widget_module_inlines_the_engine():
    esm = str(quantscope.Explorer._esm)  # anywidget holds the file's contents
    # "\0asm" in base64: the WebAssembly module is inside the ES module, not fetched from a URL.
    assert "AGFzbQ" in esm
    # One self-contained module: no static import of another file (a notebook page has no path
    # to serve it from).
    assert not re.search(r"""\bfrom\s*["'][./]""", esm)
    # Nor of Node's modules (the npm package's worker threads stay out of the browser bundle).
    assert not re.search(r"""\bfrom\s*["']node:""", esm)
    assert str(quantscope.Explorer._css).startswith("@keyframes") or ".quantscope-widget" in str(quantscope.Explorer._css)


def test_an_array_is_sent_as_npy_bytes():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    e = quantscope.Explorer(x)
    assert len(e._batches) == 1 and isinstance(e._batches[0], bytes)
    assert e._batches[0].startswith(b"\x93NUMPY")
    np.testing.assert_array_equal(_npy(e._batches[0]), x)
    assert e.observers == [] and e.params == {}


def test_dtypes_and_layouts_survive():
    x = np.asfortranarray(np.linspace(-1, 1, 24, dtype=np.float16).reshape(4, 6))
    back = _npy(quantscope.Explorer(x)._batches[0])
    assert back.dtype == np.float16 and back.shape == (4, 6)
    np.testing.assert_array_equal(back, x)
    assert _npy(quantscope.Explorer(np.float32(3.5))._batches[0]).shape == (1,)


def test_a_list_is_calibration_batches_in_order():
    batches = [np.full(5, i, dtype=np.float32) for i in range(3)]
    e = quantscope.Explorer(batches, "torch.MinMaxObserver")
    assert [float(_npy(b)[0]) for b in e._batches] == [0.0, 1.0, 2.0]
    assert e._names == ["batch0.npy", "batch1.npy", "batch2.npy"]
    assert e.observers == ["torch.MinMaxObserver"]


@pytest.mark.skipif(not TORCH.is_dir(), reason="golden inputs not found")
def test_a_path_is_sent_as_the_files_bytes():
    path = TORCH / "normal_b0.npy"
    e = quantscope.Explorer(str(path), ["torch.HistogramObserver"], {"torch.HistogramObserver": {"bins": 256}})
    assert e._batches == [path.read_bytes()]
    assert e._names == ["normal_b0.npy"]
    assert e.params == {"torch.HistogramObserver": {"bins": 256}}


def test_load_replaces_the_data():
    e = quantscope.Explorer(np.zeros(3, dtype=np.float32))
    e.load([np.ones(2, dtype=np.float32)] * 2, member=None)
    assert len(e._batches) == 2


@pytest.mark.parametrize(
    "data, error, message",
    [
        ([], ValueError, "empty list"),
        ([[1.0, 2.0]], TypeError, "not lists"),
        ("weights.txt", ValueError, "not .txt"),
        ("missing.npy", FileNotFoundError, "no such file"),
        (np.array(["a", "b"]), ValueError, "dtype <U1"),
        (np.array([1 + 2j]), ValueError, "complex128"),
        (b"\x93NUMPY", TypeError, "raw bytes"),
        (object(), ValueError, "dtype object"),
    ],
)
def test_bad_data_gets_a_specific_error(data, error, message):
    with pytest.raises(error, match=re.escape(message)):
        quantscope.Explorer(data)


def test_bad_observers_and_params_are_refused():
    x = np.zeros(4, dtype=np.float32)
    with pytest.raises(traitlets.TraitError, match="observer ids are strings"):
        quantscope.Explorer(x, [1])
    with pytest.raises(traitlets.TraitError, match="maps observer ids to dicts"):
        quantscope.Explorer(x, params={"torch.HistogramObserver": 256})
    with pytest.raises(traitlets.TraitError):
        quantscope.Explorer(x, scheme="log")


@pytest.mark.skipif(not TORCH.is_dir(), reason="golden inputs not found")
def test_explorer_results_are_filled_at_once_by_the_native_engine():
    """No front end has rendered: `explorer.results` already holds the numbers of the named
    observers, those of `quantscope observe … --json` (the page sends the same ones once it has
    computed: e2e/jupyter.test.mjs compares them)."""
    from conftest import cli_json

    paths = [TORCH / f"drift_b{i}.npy" for i in range(6)]
    params = {"torch.HistogramObserver": {"bins": 256}}
    e = quantscope.Explorer([np.load(p) for p in paths], ["torch.MinMaxObserver", "torch.HistogramObserver", "no.SuchObserver"], params)
    assert sorted(e.results) == ["torch.HistogramObserver", "torch.MinMaxObserver"]
    for observer in ["torch.MinMaxObserver", "torch.HistogramObserver"]:
        own = params.get(observer, {})
        want = cli_json("observe", *paths, "--observer", observer, "--params", json.dumps(own), "--json")
        got = e.results[observer]
        assert got["ok"] and got["error"] is None and got["params"] == own
        assert [got["scale"]] == want["scale"] and [got["zero_point"]] == want["zero_point"]
        assert [got["min_val"]] == want["min_val"] and [got["max_val"]] == want["max_val"]
        assert got["metrics"] == want["metrics"] and got["granularity"] == "per_tensor"
        assert got["clip_min"] <= got["clip_max"] and got["quirks"]
    # Per-channel values are lists; a refused run carries its error; the same after load().
    w = np.load(TORCH / "drift_b0.npy").reshape(64, -1)
    e.load(w)
    assert e.results["torch.MinMaxObserver"]["min_val"] == float(w.min())
    assert quantscope.Explorer(w).results == {}  # the page's default observers: the page fills them
    e = quantscope.Explorer(w, ["torch.PerChannelMinMaxObserver", "torch.HistogramObserver"], {"torch.HistogramObserver": {"bins": 0}})
    assert isinstance(e.results["torch.PerChannelMinMaxObserver"]["scale"], list)
    assert len(e.results["torch.PerChannelMinMaxObserver"]["scale"]) == 64
    refused = e.results["torch.HistogramObserver"]
    assert refused["ok"] is False and "bins" in refused["error"] and refused["error_kind"] == "param"
    e.load([w, w])
    assert sorted(e.results) == ["torch.HistogramObserver", "torch.PerChannelMinMaxObserver"]
