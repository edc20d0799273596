"""``quantscope.Diff``: the explorer's compare view (a quantized checkpoint against its original,
weight by weight) as a notebook widget (anywidget)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, List, Optional, Tuple

import anywidget
import traitlets

from ._explorer import _static

#: Files one side of a diff is made of: checkpoints and the configuration files that say a
#: quantized Hugging Face layout.
CHECKPOINT_SUFFIXES = (".safetensors", ".npz", ".npy", ".gguf")
CONFIG_FILES = ("config.json", "hf_quant_config.json", "quantize_config.json")


def _wanted(path: Path) -> bool:
    name = path.name.lower()
    return (
        name.endswith(".safetensors.index.json")
        or path.suffix.lower() in CHECKPOINT_SUFFIXES
        or path.name in CONFIG_FILES
    )


def side_files(data: Any, what: str) -> List[Tuple[str, bytes]]:
    """The files of one side as ``(name, bytes)``: a path (a file, or a folder whose checkpoint
    and configuration files are taken in path order, named ``folder/…``) or a list of paths."""
    if isinstance(data, (str, os.PathLike)):
        paths = [Path(data)]
    elif isinstance(data, (list, tuple)) and data:
        paths = [Path(p) for p in data]
    else:
        raise TypeError(f"quantscope.Diff takes a path or a list of paths for the {what} checkpoint")
    out: List[Tuple[str, bytes]] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _wanted(p))
            if not found:
                raise ValueError(f"{path}: the folder holds no checkpoint file")
            out.extend(
                (str(Path(path.name) / p.relative_to(path)).replace(os.sep, "/"), p.read_bytes())
                for p in found
            )
        elif path.is_file():
            out.append((path.name, path.read_bytes()))
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
    return out


class Diff(anywidget.AnyWidget):
    """A quantized checkpoint against its original, weight by weight (``quantscope diff``).

    ``Diff(original, quantized, imatrix=None)`` shows the explorer's compare view: the pairs of
    weights worst first (SQNR, round-to-nearest SQNR in the same format, NMSE, cosine, the
    imatrix-weighted error), the layer profile, the lint and the weights found on one side only;
    clicking a row draws that pair up close. ``original`` and ``quantized`` are paths (a file or
    a folder with its ``config.json`` and quantization config) or lists of paths; ``imatrix`` an
    importance matrix file (imatrix ``.gguf`` or legacy ``.dat``).

    After the front end has compared, ``diff.report`` is exactly ``quantscope diff --json``:
    ``pairs`` (worst first), ``unpaired``, ``lint``, ``files``; ``diff.state`` is ``done``.
    """

    _esm = _static("widget.js")
    _css = _static("widget.css")

    #: Tells the bundled module to mount the compare view.
    _view = traitlets.Unicode("diff").tag(sync=True)
    _original = traitlets.List(traitlets.Bytes()).tag(sync=True)
    _original_names = traitlets.List(traitlets.Unicode()).tag(sync=True)
    _quantized = traitlets.List(traitlets.Bytes()).tag(sync=True)
    _quantized_names = traitlets.List(traitlets.Unicode()).tag(sync=True)
    _imatrix = traitlets.List(traitlets.Bytes()).tag(sync=True)
    _imatrix_name = traitlets.List(traitlets.Unicode()).tag(sync=True)
    #: Written by the front end: the report (see the class documentation).
    report = traitlets.Dict().tag(sync=True)
    #: Written by the front end: ``idle``, ``running``, ``done``, ``cancelled`` or ``error``.
    state = traitlets.Unicode("idle").tag(sync=True)
    #: Written by the front end: why nothing could be compared ('' otherwise).
    error = traitlets.Unicode("").tag(sync=True)

    def __init__(self, original: Any, quantized: Any, imatrix: Optional[Any] = None, **kwargs: Any) -> None:
        o = side_files(original, "original")
        q = side_files(quantized, "quantized")
        im = side_files(imatrix, "importance matrix")[:1] if imatrix is not None else []
        super().__init__(
            _original=[b for _, b in o],
            _original_names=[n for n, _ in o],
            _quantized=[b for _, b in q],
            _quantized_names=[n for n, _ in q],
            _imatrix=[b for _, b in im],
            _imatrix_name=[n for n, _ in im],
            **kwargs,
        )

    @property
    def rows(self) -> list:
        """The pairs, worst first (the report's ``pairs``)."""
        return list(self.report.get("pairs", []))
