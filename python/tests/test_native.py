"""The native module against the CLI: every function of ``quantscope`` on real data returns
exactly the document ``quantscope … --json`` prints for the same input (the numbers asserted are
the CLI's, run here), long vectors come as numpy arrays, any data form (arrays of any layout and
dtype, ``__array__``, DLPack, paths with ``:member``, lists of batches) gives the same report, and
errors are ``ValueError``/``OSError`` with the CLI's message."""

import json
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import quantscope

from conftest import GOLDEN, SHARED, cli_error, cli_json, cli_run, plain

TORCH = GOLDEN / "torch" / "inputs"
DRIFT = [TORCH / f"drift_b{i}.npy" for i in range(3)]
MINILM = SHARED / "samples" / "minilm"
FFN_WEIGHT = MINILM / "weights" / "l0_ffn_intermediate_dense_weight.npy"  # 1536 × 384
ATTN_W = MINILM / "weights" / "l0_attn_output_dense_weight.npy"  # 384 × 384
ATTN_X = MINILM / "activations" / "l0_attn_dense_in.npy"  # 560 × 384
GGUF = GOLDEN / "gguf_quant"
NPY = GOLDEN / "npy"

pytestmark = pytest.mark.skipif(not GOLDEN.is_dir() or not MINILM.is_dir(), reason="reference data not found")


# --- observe --------------------------------------------------------------------------------


def test_observe_is_the_clis_report():
    want = cli_json("observe", *DRIFT, "--observer", "torch.HistogramObserver", "--params", '{"bins": 256}', "--json")
    got = quantscope.observe([np.load(p) for p in DRIFT], "torch.HistogramObserver", bins=256)
    assert plain(got) == want
    assert got["batches"] == 3 and got["params"] == {"bins": 256}
    # The same with params=, and with the batches as paths.
    assert plain(quantscope.observe([str(p) for p in DRIFT], "torch.HistogramObserver", params={"bins": 256})) == want


def test_observe_explain_is_the_clis_derivation():
    """``explain=True`` adds ``derivation`` as ``observe --explain --json`` prints it; its last
    step holds the report's scale and zero point."""
    want = cli_json("observe", *DRIFT, "--observer", "torch.HistogramObserver", "--explain", "--json")
    got = plain(quantscope.observe([np.load(p) for p in DRIFT], "torch.HistogramObserver", explain=True))
    assert got == want
    last = got["derivation"][-1]
    assert last["values"]["scale"] == got["scale"] and last["values"]["zero_point"] == got["zero_point"]
    assert "derivation" not in quantscope.observe(np.load(DRIFT[0]), "torch.HistogramObserver")


def test_quantize_explain_is_the_clis_block_derivation():
    """``quantize(..., explain=True, block=N)`` adds ``derivation`` as ``quantize --explain
    --block N --json`` prints it: its last step holds the block's stored bytes, whose decoded
    values are the returned array's at that block."""
    want = cli_json("quantize", FFN_WEIGHT, "--quantizer", "ggml.Q4_K", "--explain", "--block", "7", "--json")
    got = quantscope.quantize(np.load(FFN_WEIGHT), "ggml.Q4_K", explain=True, block=7)
    values = got.pop("values")
    want.pop("out")
    assert plain(got) == want
    d = got["derivation"]
    assert d["block"] == 7 and d["steps"][-1]["title"] == "Stored block"
    decoded = np.array(d["steps"][-1]["values"]["decoded"], dtype=np.float32)
    np.testing.assert_array_equal(decoded, values.reshape(-1)[7 * 256 : 8 * 256])
    nf4 = quantscope.quantize(np.load(FFN_WEIGHT), "bnb.nf4", explain=True, block=3)["derivation"]
    assert plain(nf4) == cli_json("quantize", FFN_WEIGHT, "--quantizer", "bnb.nf4", "--explain", "--block", "3", "--json")["derivation"]
    with pytest.raises(ValueError, match="block 99999 does not exist"):
        quantscope.quantize(np.load(FFN_WEIGHT), "bnb.nf4", explain=True, block=99999)
    assert "derivation" not in quantscope.quantize(np.load(FFN_WEIGHT), "ggml.Q4_K")


def test_every_per_tensor_observer_of_the_clis_comparison():
    """`observe FILE --json` without --observer runs every per-tensor observer: each report is
    the module's for that observer."""
    reports = cli_json("observe", DRIFT[0], "--json")
    x = np.load(DRIFT[0])
    assert len(reports) >= 30
    for want in reports:
        if want.get("error"):
            with pytest.raises(ValueError) as e:
                quantscope.observe(x, want["observer"])
            assert str(e.value) == want["error"]["message"]
        else:
            assert plain(quantscope.observe(x, want["observer"])) == want, want["observer"]


def test_a_per_channel_report_carries_long_vectors_as_numpy_arrays():
    want = cli_json("observe", FFN_WEIGHT, "--observer", "torch.PerChannelMinMaxObserver", "--params", '{"ch_axis": 0}', "--json")
    got = quantscope.observe(np.load(FFN_WEIGHT), "torch.PerChannelMinMaxObserver", ch_axis=0)
    assert isinstance(got["scale"], np.ndarray) and got["scale"].shape == (1536,) and got["scale"].dtype == np.float64
    assert isinstance(got["zero_point"], np.ndarray) and got["zero_point"].dtype == np.int64
    assert plain(got) == want
    np.testing.assert_array_equal(got["scale"], np.array(want["scale"]))


def test_attributes_vectors_presets_and_strict_mode_as_the_cli_takes_them():
    x = np.load(DRIFT[0])
    want = cli_json("observe", DRIFT[0], "--observer", "torch.HistogramObserver", "--set", '{"upsample_rate": 32}', "--json")
    assert plain(quantscope.observe(x, "torch.HistogramObserver", attributes={"upsample_rate": 32})) == want
    # A vector parameter: an array, or a tensor file's path (as the CLI reads it).
    w = np.load(ATTN_W)
    importance = np.abs(np.load(ATTN_X)).mean(axis=0).astype(np.float32)
    params = {"strategy": "channel"}
    with_array = quantscope.observe(w, "llmcompressor.imatrix_mse", params, importance=importance)
    assert with_array["extra"]["importance_used"] is True
    assert plain(with_array)["scale"] == plain(quantscope.observe(w, "llmcompressor.imatrix_mse", params, importance=importance.tolist()))["scale"]
    y = x.copy()
    y[:3] = np.nan
    with pytest.raises(ValueError, match="strict mode refuses non-finite input"):
        quantscope.observe(y, "torch.MinMaxObserver", nonfinite="strict")
    assert quantscope.observe(y, "torch.MinMaxObserver")["nonfinite"] == {"nan": 3, "pos_inf": 0, "neg_inf": 0}


def test_split_axis_makes_the_batches_the_cli_makes():
    want = cli_json("observe", ATTN_X, "--observer", "torch.MovingAverageMinMaxObserver", "--split-axis", "0", "--json")
    got = quantscope.observe(np.load(ATTN_X), "torch.MovingAverageMinMaxObserver", split_axis=0)
    assert got["batches"] == 560 and plain(got) == want


# --- data forms -----------------------------------------------------------------------------


class ArrayLike:
    """Anything with __array__ (a torch tensor's interface), without torch."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a


class DLPackOnly:
    """Anything with __dlpack__ only."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_every_form_of_data_gives_the_same_report():
    x = np.load(ATTN_X)
    want = plain(quantscope.observe(x, "torch.PerChannelMinMaxObserver"))
    forms = {
        "path": str(ATTN_X),
        "fortran order": np.asfortranarray(x),
        "strided view": np.repeat(x, 2, axis=1)[:, ::2],
        "__array__": ArrayLike(x),
        "DLPack": DLPackOnly(x),
        "nested list": x.tolist(),
    }
    for name, data in forms.items():
        if name == "nested list":
            data = np.asarray(data, dtype=np.float32)
        assert plain(quantscope.observe(data, "torch.PerChannelMinMaxObserver")) == want, name


@pytest.mark.parametrize("name", ["f16", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "bool", "f32_be", "i32_be"])
def test_every_dtype_is_read_as_the_cli_reads_its_npy_file(name):
    path = NPY / f"{name}.npy"
    want = cli_json("observe", path, "--observer", "torch.MinMaxObserver", "--json")
    assert plain(quantscope.observe(np.load(path), "torch.MinMaxObserver")) == want
    assert plain(quantscope.observe(path, "torch.MinMaxObserver")) == want


def test_members_of_containers_by_the_clis_path_syntax():
    spec = f"{MINILM / 'minilm_layer1_small.safetensors'}:encoder.layer.1.attention.output.LayerNorm.bias"
    want = cli_json("observe", spec, "--observer", "torch.MinMaxObserver", "--json")
    assert plain(quantscope.observe(spec, "torch.MinMaxObserver")) == want
    spec = f"{NPY / 'two_arrays.npz'}:ids"
    assert plain(quantscope.observe(spec, "torch.MinMaxObserver")) == cli_json("observe", spec, "--observer", "torch.MinMaxObserver", "--json")


# --- formats, quantize, adaround --------------------------------------------------------------


def test_formats_is_the_clis_line_up():
    want = cli_json("formats", ATTN_X, "--json")
    assert plain(quantscope.formats(np.load(ATTN_X))) == want


def test_quantize_returns_the_dequantized_array_and_the_clis_document(tmp_path):
    out = tmp_path / "q.npy"
    want = cli_json("quantize", FFN_WEIGHT, "--quantizer", "ggml.Q4_K", "--out", out, "--json")
    got = quantscope.quantize(np.load(FFN_WEIGHT), "ggml.Q4_K")
    values = got.pop("values")
    assert values.dtype == np.float32 and values.shape == (1536, 384)
    np.testing.assert_array_equal(values.view(np.uint32), np.load(out).view(np.uint32))
    want.pop("out")
    assert plain(got) == want
    # Parameters as keywords or params=, and an importance vector as an array.
    rows = np.load(ATTN_X).reshape(-1, 512)  # ggml's rows: a multiple of 256 values
    np.save(tmp_path / "rows.npy", rows)
    imatrix = np.linspace(0.5, 2.0, 512, dtype=np.float32)
    np.save(tmp_path / "im.npy", imatrix)
    want = cli_json("quantize", tmp_path / "rows.npy", "--quantizer", "ggml.Q4_K", "--params", json.dumps({"imatrix": str(tmp_path / "im.npy")}), "--json")
    got = quantscope.quantize(rows, "ggml.Q4_K", imatrix=imatrix)
    got.pop("values")
    want.pop("out")
    assert plain(got) == want
    want = cli_json("quantize", ATTN_X, "--quantizer", "int", "--params", '{"bits": 4, "granularity": "per_channel"}', "--json")
    got = quantscope.quantize(ATTN_X, "int", {"bits": 4}, granularity="per_channel")
    got.pop("values")
    want.pop("out")
    assert plain(got) == want


def test_adaround_is_the_clis_run_with_the_learned_weights():
    want = cli_json("adaround", ATTN_W, ATTN_X, "--bits", "4", "--iters", "60", "--json")
    got = quantscope.adaround(np.load(ATTN_W), np.load(ATTN_X), bits=4, iterations=60)
    weights, nearest = got.pop("weights_adaround"), got.pop("weights_nearest")
    assert weights.shape == nearest.shape == (384, 384) and weights.dtype == np.float32
    assert int((weights != nearest).sum()) == want["flipped"]
    assert plain(got) == want


# --- checkpoints: inspect, tensors, model, diff -----------------------------------------------


def test_inspect_is_the_clis():
    for path in [GGUF / "model-Q4_K_M.gguf", GGUF / "original" / "model.safetensors", MINILM / "minilm_whole_model.npz"]:
        assert plain(quantscope.inspect(path)) == cli_json("inspect", path, "--json"), path


def test_tensors_decodes_every_tensor_as_the_cli_dequantizes_it(tmp_path):
    for path in [GGUF / "model-Q4_K_M.gguf", GGUF / "original" / "model.safetensors"]:
        out = tmp_path / path.stem
        done = cli_run("dequantize", path, "--out", out)
        assert done.returncode == 0, done.stderr
        got = quantscope.tensors(path)
        names = [t["name"] for t in cli_json("inspect", path, "--json")["tensors"]]
        assert list(got) == names
        for name, array in got.items():
            want = np.load(out / f"{name.replace('/', '_')}.npy")
            assert array.dtype == np.float32 and array.shape == want.shape, name
            np.testing.assert_array_equal(array.view(np.uint32), want.view(np.uint32))
    # bfloat16 comes back as float32 of the same values: the low 16 bits are zero.
    original = quantscope.tensors(GGUF / "original" / "model.safetensors")
    assert all(not (a.view(np.uint32) & 0xFFFF).any() for a in original.values())


def test_model_ranks_as_the_cli_does():
    path = GGUF / "original" / "model.safetensors"
    assert plain(quantscope.model(path)) == cli_json("model", path, "--json")
    want = cli_json("model", path, "--observers", "torch.MinMaxObserver", "--formats", 'ggml.Q4_K,int:{"bits": 4, "granularity": "per_group", "group_size": 32}', "--json")
    got = quantscope.model([path], ["torch.MinMaxObserver", "ggml.Q4_K", ("int", {"bits": 4, "granularity": "per_group", "group_size": 32})])
    assert plain(got) == want
    assert plain(quantscope.model(path, ["torch.MinMaxObserver", "ggml.Q4_K", "int4 per group of 32"])) == want


def test_diff_is_the_clis():
    args = (GGUF / "original", GGUF / "model-Q4_K_M.gguf")
    want = cli_json("diff", *args, "--imatrix", GGUF / "imatrix.gguf", "--json")
    assert plain(quantscope.diff(*args, imatrix=GGUF / "imatrix.gguf")) == want
    assert want["pairs"] and plain(quantscope.diff(*args)) == cli_json("diff", *args, "--json")


# --- registry -------------------------------------------------------------------------------


def test_the_registry_is_the_clis_list():
    want = cli_json("list", "--json")
    assert plain(quantscope.observers()) == want["observers"]
    assert plain(quantscope.presets()) == want["presets"]
    assert plain(quantscope.quantizers()) == want["quantizers"]
    assert quantscope._native.version() == quantscope.__version__


# --- errors ---------------------------------------------------------------------------------


def test_bad_parameters_are_value_errors_with_the_clis_message():
    x = np.load(DRIFT[0])
    cases = [
        (("torch.HistogramObserver", {"bins": 0}), ["--observer", "torch.HistogramObserver", "--params", '{"bins": 0}']),
        (("torch.MinMaxObserver", {"bins": 8}), ["--observer", "torch.MinMaxObserver", "--params", '{"bins": 8}']),
        (("torch.NoSuchObserver", {}), ["--observer", "torch.NoSuchObserver"]),
        (("ggml.Q4_K", {}), ["--observer", "ggml.Q4_K"]),
        (("torch.MinMaxObserver", {"dtype": "qint3"}), ["--observer", "torch.MinMaxObserver", "--params", '{"dtype": "qint3"}']),
    ]
    for (observer, params), args in cases:
        with pytest.raises(ValueError) as e:
            quantscope.observe(x, observer, params)
        assert str(e.value) == cli_error("observe", DRIFT[0], *args), observer
    with pytest.raises(ValueError) as e:
        quantscope.observe(x, "torch.MinMaxObserver", bins=8)
    assert e.value.kind == "framework" and e.value.exception == "TypeError" and e.value.stage == "init"
    with pytest.raises(ValueError) as e:
        quantscope.quantize(x, "int", bits=99)
    assert str(e.value) == cli_error("quantize", DRIFT[0], "--quantizer", "int", "--params", '{"bits": 99}')
    assert e.value.kind == "param" and e.value.param == "bits"
    with pytest.raises(ValueError, match="no parameter `iters`"):
        quantscope.adaround(np.load(ATTN_W), np.load(ATTN_X), iters=3)
    with pytest.raises(ValueError, match="nonfinite"):
        quantscope.observe(x, "torch.MinMaxObserver", nonfinite="keep")


def test_bad_data_is_a_value_error():
    with pytest.raises(ValueError, match="complex dtype"):
        quantscope.observe(np.ones(4, np.complex64), "torch.MinMaxObserver")
    with pytest.raises(ValueError, match="empty list"):
        quantscope.observe([], "torch.MinMaxObserver")
    with pytest.raises(TypeError, match="not lists"):
        quantscope.observe([[1.0, 2.0]], "torch.MinMaxObserver")
    with pytest.raises(TypeError, match="cannot use a object"):
        quantscope.observe(object(), "torch.MinMaxObserver")
    # An empty tensor is observed as PyTorch observes it (its defaults), on every path.
    want = cli_json("observe", NPY / "f32_empty.npy", "--observer", "torch.MinMaxObserver", "--json")
    assert plain(quantscope.observe(np.zeros((0,), np.float32), "torch.MinMaxObserver")) == want
    with pytest.raises(ValueError, match="cannot split"):
        quantscope.observe(np.ones(4, np.float32), "torch.MinMaxObserver", split_axis=3)


def test_files_are_os_errors_with_the_clis_message(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        quantscope.observe(tmp_path / "missing.npy", "torch.MinMaxObserver")
    for name in ["reject_bad_magic.npy", "reject_truncated.npy", "reject_object.npy"]:
        with pytest.raises(OSError) as e:
            quantscope.observe(NPY / name, "torch.MinMaxObserver")
        assert str(e.value) == cli_error("observe", NPY / name, "--observer", "torch.MinMaxObserver"), name
        assert e.value.kind == "load"
    # A member that is not in the file is a bad argument, not a bad file.
    with pytest.raises(ValueError) as e:
        quantscope.observe(f"{NPY / 'two_arrays.npz'}:nope", "torch.MinMaxObserver")
    assert str(e.value) == cli_error("observe", f"{NPY / 'two_arrays.npz'}:nope", "--observer", "torch.MinMaxObserver")
    (tmp_path / "junk.safetensors").write_bytes(b"\x01\x02")
    for call in [lambda p: quantscope.inspect(p), lambda p: quantscope.model(p), lambda p: quantscope.tensors(p)]:
        with pytest.raises(OSError):
            call(tmp_path / "junk.safetensors")
        with pytest.raises(FileNotFoundError):
            call(tmp_path / "nope")
    with pytest.raises(FileNotFoundError):
        quantscope.diff(tmp_path / "a.safetensors", GGUF / "model-Q4_K_M.gguf")


# --- the GIL and copies ---------------------------------------------------------------------


def test_the_gil_is_released_during_compute():
    x = np.random.default_rng(1).standard_normal(1 << 22).astype(np.float32)
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.0005)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        t0 = time.perf_counter()
        before = ticks
        quantscope.observe(x, "horizon.MSEObserver")
        elapsed = time.perf_counter() - t0
        during = ticks - before
    finally:
        done.set()
        counter.join()
    # With the GIL held the counter could not run at all while the engine computes.
    assert elapsed < 0.05 or during >= 10, f"{during} ticks in {elapsed:.3f} s"


def test_a_float32_array_is_not_copied():
    """Peak memory of observing a 256 MiB float32 array stays far below a copy of it."""
    script = """
import resource, sys, numpy as np, quantscope
x = np.ones(64 << 20, np.float32)
x[::7] = -2.0
quantscope.observe(x[:10], "torch.MinMaxObserver")  # the module loaded and warm
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
r = quantscope.observe(x, "torch.MinMaxObserver")
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert r["min_val"] == [-2.0] and r["elements"] == 64 << 20
print((after - before) // 1024)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    grew_mib = int(done.stdout.strip())
    assert grew_mib < 64, f"peak memory grew by {grew_mib} MiB observing a 256 MiB array"


# --- tables as DataFrames -------------------------------------------------------------------


def test_tables_come_as_pandas_dataframes():
    import pandas
    path = GGUF / "original" / "model.safetensors"
    report = quantscope.model(path)
    frame = report.to_pandas()
    want = cli_json("model", path, "--json")["tensors"]
    assert isinstance(frame, pandas.DataFrame) and len(frame) == len(want)
    assert list(frame["name"]) == [r["name"] for r in want]
    pairs = quantscope.diff(GGUF / "original", GGUF / "model-Q4_K_M.gguf").to_pandas()
    want = cli_json("diff", GGUF / "original", GGUF / "model-Q4_K_M.gguf", "--json")["pairs"]
    assert list(pairs["original"]) == [p["original"] for p in want]
    # A zero error's SQNR (None in the JSON) is NaN in the DataFrame.
    sqnr = [np.nan if p["metrics"]["sqnr_db"] is None else p["metrics"]["sqnr_db"] for p in want]
    np.testing.assert_array_equal(pairs["metrics.sqnr_db"].to_numpy(dtype=float), sqnr)
    lineup = quantscope.formats(np.load(ATTN_X)).to_pandas()
    assert list(lineup["format"]) == [r["format"] for r in cli_json("formats", ATTN_X, "--json")]
    assert len(quantscope.observers().to_pandas()) == len(cli_json("list", "--json")["observers"])
    assert quantscope.inspect(path).to_pandas()["name"].tolist() == [t["name"] for t in cli_json("inspect", path, "--json")["tensors"]]
