"""quantscope in notebooks: every quantization observer of PyTorch, AMD Quark, Horizon, ONNX
Runtime and NVIDIA ModelOpt, computed bit-exactly by quantscope's WebAssembly engine inside the
notebook page (JupyterLab, Notebook 7, VS Code, Colab, marimo).

    import quantscope
    explorer = quantscope.Explorer(x, ["torch.MinMaxObserver", "torch.HistogramObserver"])
    explorer                      # panels, sliders and the error curve
    explorer.results              # after it has rendered: scale, zero_point, min/max, metrics

    model = quantscope.Model("model.safetensors")   # every tensor ranked, worst first
    model.rows                    # after it has ranked: the rows of `quantscope model --json`
"""

from importlib.metadata import PackageNotFoundError, version as _version

from ._explorer import Explorer
from ._model import Model

try:
    __version__ = _version("quantscope")
except PackageNotFoundError:  # imported from a source tree
    __version__ = "0.0.0"

__all__ = ["Explorer", "Model", "__version__"]
