"""The Python side of quantscope.Model: checkpoint files and dicts of arrays become the files the
model view ranks (binary buffers, named as `quantscope model` names them), bad inputs get specific
errors, and the widget is the Explorer's bundle (one module, one WebAssembly instance a page)."""

import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
import traitlets

import quantscope
from quantscope._model import checkpoint_files

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("QUANTSCOPE_SHARED", REPO.parent / "shared"))
MINILM = SHARED / "samples" / "minilm"


def test_a_folder_is_its_checkpoint_files_in_path_order_named_by_the_folder():
    m = quantscope.Model(MINILM / "activations")
    assert m._view == "model"
    assert len(m._names) == 24
    assert m._names == sorted(m._names, key=lambda n: n.split("/"))
    assert all(n.startswith("activations/") and n.endswith(".npy") for n in m._names)
    first = MINILM / "activations" / Path(m._names[0]).relative_to("activations")
    assert m._files[0] == first.read_bytes()
    assert m.methods == [] and m.rows == [] and m.state == "idle"


def test_an_index_brings_the_shards_next_to_it(tmp_path):
    (tmp_path / "a.safetensors").write_bytes(b"A")
    (tmp_path / "b.safetensors").write_bytes(b"B")
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"x": "b.safetensors", "y": "a.safetensors", "z": "missing.safetensors"}}))
    files = checkpoint_files(index)
    assert [n for n, _ in files] == ["model.safetensors.index.json", "b.safetensors", "a.safetensors"]
    # A shard also named explicitly is sent once.
    assert [n for n, _ in checkpoint_files([index, tmp_path / "a.safetensors"])] == [n for n, _ in files]


def test_a_dict_of_arrays_becomes_npy_files_named_after_the_keys():
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = quantscope.Model({"layer.0.weight": w, "layer.0.bias": np.ones(4, np.float16)}, ["torch.MinMaxObserver", "ggml.Q4_K"])
    assert m._names == ["layer.0.weight.npy", "layer.0.bias.npy"]
    np.testing.assert_array_equal(np.load(io.BytesIO(m._files[0])), w)
    assert np.load(io.BytesIO(m._files[1])).dtype == np.float16
    assert m.methods == ["torch.MinMaxObserver", "ggml.Q4_K"]


def test_bad_inputs_say_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        quantscope.Model(tmp_path / "nope.safetensors")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="reads .safetensors"):
        quantscope.Model(tmp_path / "notes.txt")
    with pytest.raises(ValueError, match="holds no .safetensors"):
        quantscope.Model(tmp_path)
    with pytest.raises(ValueError, match="empty dict"):
        quantscope.Model({})
    with pytest.raises(TypeError, match="a path, a list of paths or a dict of arrays"):
        quantscope.Model(42)
    with pytest.raises(traitlets.TraitError, match="format labels"):
        quantscope.Model({"x": np.ones(3)}, [1])


def test_the_model_widget_is_the_explorers_bundle():
    assert str(quantscope.Model._esm) == str(quantscope.Explorer._esm)
    assert "AGFzbQ" in str(quantscope.Model._esm)
