"""quantscope.capture on a small real network built from MiniLM's layer-0 weights, run in the
torch environment (target/torch-venv) by scripts/test.sh."""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import quantscope

# The CLI runner and reference paths of the other Python tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import SHARED, cli_json, plain  # noqa: E402
MINILM = SHARED / "samples" / "minilm"


def weight(name):
    return torch.from_numpy(np.load(MINILM / "weights" / f"{name}.npy"))


class Attention(torch.nn.Module):
    """MiniLM's layer-0 self-attention and feed-forward up-projection, with its real weights
    (the sample has no biases, so none), 12 heads of 32."""

    def __init__(self):
        super().__init__()
        lin = lambda w: torch.nn.Linear(w.shape[1], w.shape[0], bias=False)  # noqa: E731
        self.query = lin(weight("l0_attn_query_weight"))
        self.key = lin(weight("l0_attn_key_weight"))
        self.value = lin(weight("l0_attn_value_weight"))
        self.dense = lin(weight("l0_attn_output_dense_weight"))
        self.intermediate = lin(weight("l0_ffn_intermediate_dense_weight"))
        with torch.no_grad():
            for m, w in [(self.query, "l0_attn_query_weight"), (self.key, "l0_attn_key_weight"),
                         (self.value, "l0_attn_value_weight"), (self.dense, "l0_attn_output_dense_weight"),
                         (self.intermediate, "l0_ffn_intermediate_dense_weight")]:
                m.weight.copy_(weight(w))

    def forward(self, x):
        t, h = x.shape[0], 12
        q, k, v = (m(x).reshape(t, h, 32).transpose(0, 1) for m in (self.query, self.key, self.value))
        context = torch.softmax(q @ k.transpose(1, 2) / 32**0.5, dim=-1) @ v
        y = self.dense(context.transpose(0, 1).reshape(t, 384))
        return torch.nn.functional.gelu(self.intermediate(y + x))


@pytest.fixture(scope="module")
def sentences():
    """The real layer-0 inputs of the attention output (560 tokens), one batch per sentence."""
    x = torch.from_numpy(np.load(MINILM / "activations" / "l0_attn_dense_in.npy"))
    starts = [s["row_start"] for s in json.loads((MINILM / "sentences.json").read_text())["sentences"]]
    ends = starts[1:] + [x.shape[0]]
    return [x[a:b] for a, b in zip(starts, ends)]


def hooked(model, batches, names):
    """What plain forward hooks registered here see (inputs), concatenated per module."""
    seen = {n: [] for n in names}
    modules = dict(model.named_modules())
    handles = [modules[n].register_forward_hook(lambda m, a, o, n=n: seen[n].append(a[0].detach().clone())) for n in names]
    with torch.no_grad():
        for b in batches:
            model(b)
    for h in handles:
        h.remove()
    return {n: torch.cat(v).numpy() for n, v in seen.items()}


def test_captures_every_linear_input_exactly(sentences):
    model = Attention().eval()
    acts = quantscope.capture(model, sentences)
    names = ["query", "key", "value", "dense", "intermediate"]
    assert list(acts) == names
    want = hooked(model, sentences, names)
    for n in names:
        assert acts[n].dtype == np.float32 and acts[n].shape == want[n].shape
        np.testing.assert_array_equal(acts[n], want[n])
    # The first module's input is the data itself, all 560 tokens in sentence order.
    np.testing.assert_array_equal(acts["query"], torch.cat(sentences).numpy())
    assert acts["dense"].shape == (560, 384) and acts["intermediate"].shape == (560, 384)
    assert not any(m._forward_hooks for m in model.modules()), "hooks are removed"


def test_outputs_max_rows_and_chosen_modules(sentences):
    model = Attention().eval()
    acts = quantscope.capture(model, sentences, ["dense", "intermediate"], outputs_of=True, max_rows=100)
    assert sorted(acts) == ["dense", "dense:output", "intermediate", "intermediate:output"]
    full = quantscope.capture(model, sentences, ["intermediate"], inputs_of=False, outputs_of=True)
    assert list(full) == ["intermediate:output"] and full["intermediate:output"].shape == (560, 1536)
    for k, v in acts.items():
        assert v.shape[0] == 100
    np.testing.assert_array_equal(acts["intermediate:output"], full["intermediate:output"][:100])
    with pytest.raises(ValueError, match="no module named 'nope'"):
        quantscope.capture(model, sentences, ["nope"])
    with pytest.raises(ValueError, match="max_rows"):
        quantscope.capture(model, sentences, max_rows=0)


def test_convolutions_put_channels_last():
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3))
    x = torch.arange(2 * 3 * 5 * 5, dtype=torch.float32).reshape(2, 3, 5, 5)
    acts = quantscope.capture(conv, x, outputs_of=True)
    np.testing.assert_array_equal(acts["0"], x.permute(0, 2, 3, 1).reshape(-1, 3).numpy())
    with torch.no_grad():
        y = conv(x)
    np.testing.assert_array_equal(acts["0:output"], y.permute(0, 2, 3, 1).reshape(-1, 4).numpy())


def test_model_ranks_the_captured_activations_and_save_round_trips(sentences, tmp_path):
    model = Attention().eval()
    acts = quantscope.capture(model, sentences[:16])
    report = quantscope.model(acts)
    assert sorted(r["name"] for r in report["tensors"]) == sorted(acts)
    # The same rows, every number, as `quantscope model --json` on the saved file.
    path = tmp_path / "acts.safetensors"
    acts.save(path)
    without_file = lambda rows: [{k: v for k, v in r.items() if k != "file"} for r in rows]  # noqa: E731
    assert without_file(plain(report["tensors"])) == without_file(cli_json("model", path, "--json")["tensors"])
    back = quantscope.tensors(str(path))
    assert sorted(back) == sorted(acts)
    for k in acts:
        np.testing.assert_array_equal(back[k], acts[k])
