"""``quantscope.model`` and ``diff`` with ``map=`` of Ray's ``multiprocessing.Pool`` on a local
Ray cluster of two workers: the portions run in Ray's worker processes and the merged document
equals the single-process one exactly."""

import os
import sys
from pathlib import Path

import pytest

# Nothing leaves the machine: no usage statistics, no dashboard.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
import ray  # noqa: E402
from ray.util.multiprocessing import Pool  # noqa: E402

import quantscope  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import GOLDEN, SHARED, plain  # noqa: E402

GGUF = GOLDEN / "gguf_quant"


@pytest.fixture(scope="module")
def pool():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        with Pool(2) as p:
            yield p
    finally:
        ray.shutdown()


def test_model_on_ray_equals_one_process(pool):
    for path in [GGUF / "original" / "model.safetensors", SHARED / "samples" / "minilm" / "minilm_whole_model.npz"]:
        whole = quantscope.model(path)
        for portions in [2, 5]:
            assert plain(quantscope.model(path, map=pool.map, portions=portions)) == plain(whole), (path, portions)


def test_diff_on_ray_equals_one_process(pool):
    original = GGUF / "original"
    for quantized, imatrix in [(GGUF / "model-Q4_K_M.gguf", GGUF / "imatrix.gguf"), (GGUF / "model-mixed.gguf", None)]:
        whole = quantscope.diff(original, quantized, imatrix)
        got = quantscope.diff(original, quantized, imatrix, map=pool.map, portions=4)
        assert plain(got) == plain(whole), quantized


def test_the_map_runs_in_rays_workers(pool):
    pids = set(pool.map(lambda _: os.getpid(), range(8)))
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
