"""``quantscope.model`` and ``diff`` with ``map=``: the work cut into portions, run by an
executor's ``map`` in other processes, and merged, equals the single-process document exactly;
``portion=(i, n)`` and ``merge`` of the native module, and their refusals."""

import concurrent.futures
import multiprocessing
import random

import numpy as np
import pytest

import quantscope
from conftest import GOLDEN, SHARED, cli_json, plain

GGUF = GOLDEN / "gguf_quant"
NPZ = SHARED / "samples" / "minilm" / "minilm_whole_model.npz"


@pytest.fixture(scope="module")
def pool():
    # The platform's default start method (fork on Linux): the test process has already run
    # model and diff, so a child that used a thread pool inherited from it would hang.
    with concurrent.futures.ProcessPoolExecutor(2) as executor:
        yield executor


def test_model_with_a_process_pool_equals_one_process(pool):
    for paths, methods in [
        (GGUF / "original" / "model.safetensors", None),
        ([NPZ], ["torch.MinMaxObserver", "torch.HistogramObserver", ("int", {"bits": 4})]),
    ]:
        whole = quantscope.model(paths, methods)
        for portions in [1, 2, 3, 7, 40]:
            got = quantscope.model(paths, methods, map=pool.map, portions=portions)
            assert isinstance(got, quantscope._tables.TableDocument) and got.table == "tensors"
            assert plain(got) == plain(whole), (paths, portions)
        assert plain(quantscope.model(paths, methods, map=pool.map)) == plain(whole)
    path = GGUF / "original" / "model.safetensors"
    assert plain(quantscope.model(path, map=pool.map)) == cli_json("model", path, "--json")


def test_model_of_arrays_with_a_process_pool(pool):
    rng = np.random.default_rng(7)
    arrays = {f"layer{i}": rng.standard_normal((64, 48)).astype(np.float32) * (i + 1) for i in range(9)}
    arrays["outliers"] = np.concatenate([rng.standard_normal(500), [90.0, -70.0]]).astype(np.float32)
    whole = quantscope.model(arrays)
    got = quantscope.model(arrays, map=pool.map, portions=4)
    # Each call writes the arrays to a temporary file of its own: rows name it.
    for doc in (whole, got):
        assert len({row.pop("file") for row in doc["tensors"]}) == 1
    assert plain(got) == plain(whole)
    assert whole["tensors"][0]["name"] == "outliers"


def test_diff_with_a_process_pool_equals_one_process(pool):
    original = GGUF / "original"
    for quantized, imatrix in [
        (GGUF / "model-Q4_K_M.gguf", GGUF / "imatrix.gguf"),
        (GGUF / "model-mixed.gguf", None),  # unpaired weights and lint
    ]:
        whole = quantscope.diff(original, quantized, imatrix)
        for portions in [2, 5]:
            got = quantscope.diff(original, quantized, imatrix, map=pool.map, portions=portions)
            assert got.table == "pairs" and plain(got) == plain(whole), (quantized, portions)
    mixed = quantscope.diff(original, GGUF / "model-mixed.gguf", map=pool.map, portions=3)
    assert len(mixed["unpaired"]["original"]) == 24 and len(mixed["lint"]) == 3


def test_a_spawned_pool_and_futures_are_maps_too():
    path = GGUF / "original" / "model.safetensors"
    whole = quantscope.model(path, ["torch.MinMaxObserver"])
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=spawn) as executor:
        got = quantscope.model(path, ["torch.MinMaxObserver"], map=executor.map, portions=3)
        assert plain(got) == plain(whole)

        # A map that returns futures, as Dask's client.map does, in any order.
        def submit_all(fn, items):
            futures = [executor.submit(fn, item) for item in items]
            random.Random(3).shuffle(futures)
            return futures

        got = quantscope.model(path, ["torch.MinMaxObserver"], map=submit_all, portions=4)
        assert plain(got) == plain(whole)
    # The builtin map runs the portions one after another in this process.
    assert plain(quantscope.model(path, ["torch.MinMaxObserver"], map=map, portions=5)) == plain(whole)


def test_native_portions_merge_in_any_order():
    original, quantized = GGUF / "original", GGUF / "model-mixed.gguf"
    whole = quantscope.diff(original, quantized)
    parts = [quantscope.diff(original, quantized, portion=(i, 4)) for i in range(4)]
    assert [p["portion"]["index"] for p in parts] == [0, 1, 2, 3]
    assert sum(len(p["pairs"]) for p in parts) == len(whole["pairs"]) == parts[0]["portion"]["items"]
    assert "portion" not in whole
    parts.reverse()
    merged = quantscope.merge(parts)
    assert merged.table == "pairs" and plain(merged) == plain(whole)
    tensors = [quantscope.model(NPZ, portion=(i, 2)) for i in range(2)]
    assert plain(quantscope.merge(tensors)) == plain(quantscope.model(NPZ))


def test_portions_are_refused_clearly(pool):
    path = GGUF / "original" / "model.safetensors"
    with pytest.raises(ValueError, match="portion 2 of 2 does not exist"):
        quantscope.model(path, portion=(2, 2))
    with pytest.raises(TypeError, match=r"portion is a pair \(i, n\)"):
        quantscope.model(path, portion="0/2")
    with pytest.raises(ValueError, match="give map= too"):
        quantscope.model(path, portions=2)
    with pytest.raises(ValueError, match="portions is a positive integer"):
        quantscope.diff(GGUF / "original", GGUF / "model-mixed.gguf", map=pool.map, portions=0)
    with pytest.raises(FileNotFoundError):
        quantscope.model(GGUF / "no-such-file.safetensors", map=pool.map, portions=2)
    first = quantscope.model(path, portion=(0, 3))
    with pytest.raises(ValueError, match="portion 1/3 is missing"):
        quantscope.merge([first, quantscope.model(path, portion=(2, 3))])
    with pytest.raises(ValueError, match="document 2 is not a portion"):
        quantscope.merge([first, quantscope.model(path)])
    with pytest.raises(ValueError, match="portions of different work"):
        quantscope.merge([first, quantscope.model(path, ["torch.MinMaxObserver"], portion=(1, 3))])
