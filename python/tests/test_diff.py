"""The Python side of quantscope.Diff: each side's files (a file, a folder with its configuration
files, a list) become binary buffers named as the compare view names them; the widget is the
Explorer's bundle, told to mount the compare view."""

import os
from pathlib import Path

import pytest

import quantscope
from quantscope._diff import side_files

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("QUANTSCOPE_SHARED", REPO.parent / "shared"))
GOLDEN = SHARED / "golden" / "gguf_quant"


def test_both_sides_and_the_importance_matrix_are_sent_as_files():
    d = quantscope.Diff(GOLDEN / "original" / "model.safetensors", GOLDEN / "model-Q4_K_M.gguf", imatrix=GOLDEN / "imatrix.gguf")
    assert d._view == "diff"
    assert d._original_names == ["model.safetensors"] and d._quantized_names == ["model-Q4_K_M.gguf"]
    assert d._imatrix_name == ["imatrix.gguf"]
    assert d._quantized[0] == (GOLDEN / "model-Q4_K_M.gguf").read_bytes()
    assert d.report == {} and d.rows == [] and d.state == "idle"
    assert str(d._esm) == str(quantscope.Model(GOLDEN / "model-Q4_K_M.gguf")._esm)


def test_a_folder_brings_its_configuration_files_in_path_order(tmp_path):
    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"W")
    (folder / "config.json").write_text("{}")
    (folder / "quantize_config.json").write_text("{}")
    (folder / "README.md").write_text("not a checkpoint")
    assert [n for n, _ in side_files(folder, "quantized")] == ["q/config.json", "q/model.safetensors", "q/quantize_config.json"]


def test_bad_sides_say_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError):
        quantscope.Diff(tmp_path / "missing.safetensors", GOLDEN / "model-Q4_K_M.gguf")
    with pytest.raises(TypeError):
        quantscope.Diff(42, GOLDEN / "model-Q4_K_M.gguf")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError):
        side_files(tmp_path / "empty", "original")
