"""quantscope: every quantization observer and number format of PyTorch, AMD Quark, Horizon, ONNX
Runtime, NVIDIA ModelOpt, llm-compressor, torchao, bitsandbytes and llama.cpp, computed
bit-exactly by quantscope's Rust engine — natively in the Python process (the functions below),
and inside the notebook page by its WebAssembly build (the widgets).

    import quantscope
    r = quantscope.observe(x, "torch.HistogramObserver", bins=2048)   # observe --json, as a dict
    r["scale"], r["zero_point"], r["metrics"]["sqnr_db"]
    quantscope.quantize(w, "ggml.Q4_K")["values"]    # the dequantized array, and the metrics
    quantscope.tensors("model.safetensors")          # {name: float32 numpy array}
    quantscope.model("model.safetensors")["tensors"] # every tensor ranked, worst first
    acts = quantscope.capture(torch_model, batch)    # {module: activations} from forward hooks
    quantscope.model(acts)                           # ranked the same way
    quantscope.diff("original/", "model-Q4_K_M.gguf", imatrix="imatrix.gguf")["pairs"]
    with concurrent.futures.ProcessPoolExecutor() as pool:   # or Ray's, Dask's client.map, …
        quantscope.model("model.gguf", map=pool.map)     # the same document, work spread by map

    explorer = quantscope.Explorer(x, ["torch.MinMaxObserver", "torch.HistogramObserver"])
    explorer                      # panels, sliders and the error curve
    explorer.results              # after it has rendered: scale, zero_point, min/max, metrics

    model = quantscope.Model("model.safetensors")   # every tensor ranked, worst first
    model.rows                    # after it has ranked: the rows of `quantscope model --json`

    diff = quantscope.Diff("model.safetensors", "model-Q4_K_M.gguf", imatrix="imatrix.gguf")
    diff.report                   # after it has compared: `quantscope diff --json`
"""

from importlib.metadata import PackageNotFoundError, version as _version

from ._native import (
    adaround,
    formats,
    inspect,
    merge,
    observe,
    observers,
    presets,
    quantize,
    quantizers,
    save_safetensors,
    tensors,
)
from ._explorer import Explorer
from ._diff import Diff
from ._model import Model
from ._capture import Activations, capture
from ._portions import diff, model

try:
    __version__ = _version("quantscope")
except PackageNotFoundError:  # imported from a source tree
    __version__ = "0.0.0"

__all__ = [
    "Diff",
    "Explorer",
    "Activations",
    "Model",
    "__version__",
    "adaround",
    "capture",
    "diff",
    "formats",
    "inspect",
    "merge",
    "model",
    "observe",
    "observers",
    "presets",
    "quantize",
    "quantizers",
    "save_safetensors",
    "tensors",
]
