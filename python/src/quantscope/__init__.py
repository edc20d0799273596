"""quantscope in notebooks: every quantization observer of PyTorch, AMD Quark, Horizon, ONNX
Runtime and NVIDIA ModelOpt, computed bit-exactly by quantscope's WebAssembly engine inside the
notebook page (JupyterLab, Notebook 7, VS Code, Colab, marimo).

    import quantscope
    explorer = quantscope.Explorer(x, ["torch.MinMaxObserver", "torch.HistogramObserver"])
    explorer                      # panels, sliders and the error curve
    explorer.results              # after it has rendered: scale, zero_point, min/max, metrics

    model = quantscope.Model("model.safetensors")   # every tensor ranked, worst first
    model.rows                    # after it has ranked: the rows of `quantscope model --json`

    diff = quantscope.Diff("model.safetensors", "model-Q4_K_M.gguf", imatrix="imatrix.gguf")
    diff.report                   # after it has compared: `quantscope diff --json`
"""

from importlib.metadata import PackageNotFoundError, version as _version

from ._explorer import Explorer
from ._diff import Diff
from ._model import Model
from ._capture import Activations, capture

try:
    __version__ = _version("quantscope")
except PackageNotFoundError:  # imported from a source tree
    __version__ = "0.0.0"

__all__ = ["Diff", "Explorer", "Model", "__version__"]
