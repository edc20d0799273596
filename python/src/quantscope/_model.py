"""``quantscope.Model``: the explorer's model view (every tensor of a checkpoint ranked by what
quantization does to it) as a notebook widget (anywidget)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, List, Optional, Tuple

import anywidget
import traitlets

from ._data import _as_array, _npy_bytes
from ._explorer import _static

#: Files a checkpoint is made of (as ``quantscope model`` reads them).
CHECKPOINT_SUFFIXES = (".safetensors", ".npz", ".npy", ".gguf")
INDEX_SUFFIX = ".safetensors.index.json"


def _wanted(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(INDEX_SUFFIX) or path.suffix.lower() in CHECKPOINT_SUFFIXES


def _index_shards(index: Path) -> List[Path]:
    """The shard files an index names that exist next to it, in the order first named."""
    try:
        weight_map = json.loads(index.read_text()).get("weight_map", {})
    except (OSError, ValueError, AttributeError):
        return []  # the engine reports the unreadable index itself
    shards: List[Path] = []
    for shard in weight_map.values() if isinstance(weight_map, dict) else []:
        path = index.parent / str(shard)
        if path.is_file() and path not in shards:
            shards.append(path)
    return shards


def checkpoint_files(data: Any) -> List[Tuple[str, bytes]]:
    """The files of ``data`` as ``(name, bytes)``, named as ``quantscope model`` names them.

    ``data`` is a path (a file, an ``*.safetensors.index.json`` whose shards next to it are
    included, or a folder: its checkpoint files in path order, named ``folder/…``), a list of
    paths, or a dict of arrays (each becomes ``<name>.npy``, a tensor called ``name``).
    """
    if isinstance(data, dict):
        if not data:
            raise ValueError("an empty dict has no tensor: pass {name: array}")
        out = []
        for name, value in data.items():
            if not isinstance(name, str) or not name:
                raise TypeError(f"tensor names are non-empty strings, got {name!r}")
            out.append((f"{name}.npy", _npy_bytes(_as_array(value))))
        return out
    if isinstance(data, (str, os.PathLike)):
        paths = [Path(data)]
    elif isinstance(data, (list, tuple)):
        if not data:
            raise ValueError("an empty list has no checkpoint file")
        paths = [Path(p) for p in data]
    else:
        raise TypeError(
            f"quantscope.Model takes a path, a list of paths or a dict of arrays, not a {type(data).__name__}"
        )
    files: List[Tuple[Path, str]] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _wanted(p))
            if not found:
                raise ValueError(f"{path}: the folder holds no .safetensors, .npz, .npy or .gguf file")
            files.extend((p, str(Path(path.name) / p.relative_to(path)).replace(os.sep, "/")) for p in found)
        elif path.is_file():
            if not _wanted(path):
                raise ValueError(
                    f"{path}: quantscope reads .safetensors (and their index), .npz, .npy and .gguf files"
                )
            files.append((path, path.name))
            if path.name.lower().endswith(INDEX_SUFFIX):
                files.extend((s, s.name) for s in _index_shards(path))
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
    seen = set()
    out = []
    for path, name in files:
        key = path.resolve()
        if key in seen:
            continue
        seen.add(key)
        out.append((name, path.read_bytes()))
    return out


class Model(anywidget.AnyWidget):
    """Every tensor of a checkpoint ranked, worst first, by the SQNR quantization leaves.

    ``Model(data, methods=None)`` shows the explorer's model view: the layer profile (SQNR per
    tensor in checkpoint order, by layer) and a sortable table with one heat-coloured SQNR cell per
    method, the statistics and the reason any tensor was skipped. ``data`` is a path to a
    checkpoint file (``.safetensors``, an ``*.safetensors.index.json`` with its shards next to it,
    ``.npz``, ``.npy``, ``.gguf``), a folder of them (e.g. ``.npy`` activation dumps), a list of
    paths, or a dict of arrays (``{name: array}``). ``methods`` are observer ids and format labels
    (default: ``quantscope model``'s defaults); the first ranks.

    After the front end has ranked, ``model.rows`` holds the rows worst first, exactly as
    ``quantscope model --json`` prints its ``tensors``: ``name``, ``file``, ``shape``, ``dtype``,
    ``elements``, ``nonfinite``, ``stats``, ``results`` (``id``, ``kind``, ``sqnr_db``, ``mse``,
    ``max_abs_err``, ``clipped_fraction``) and ``error`` for a skipped tensor;
    ``model.load_errors`` lists the files that could not be read and ``model.state`` is ``done``.
    """

    _esm = _static("widget.js")
    _css = _static("widget.css")

    #: Tells the bundled module to mount the model view.
    _view = traitlets.Unicode("model").tag(sync=True)
    _files = traitlets.List(traitlets.Bytes()).tag(sync=True)
    _names = traitlets.List(traitlets.Unicode()).tag(sync=True)
    methods = traitlets.List(traitlets.Unicode()).tag(sync=True)
    #: Written by the front end: the rows, worst first (see the class documentation).
    rows = traitlets.List().tag(sync=True)
    #: Written by the front end: ``[{file, error}]`` for files that could not be listed.
    load_errors = traitlets.List().tag(sync=True)
    #: Written by the front end: ``idle``, ``running``, ``done``, ``cancelled`` or ``error``.
    state = traitlets.Unicode("idle").tag(sync=True)
    #: Written by the front end: why nothing could be ranked ('' otherwise).
    error = traitlets.Unicode("").tag(sync=True)

    def __init__(self, data: Any, methods: Optional[Iterable[str]] = None, **kwargs: Any) -> None:
        files = checkpoint_files(data)
        super().__init__(
            _files=[b for _, b in files],
            _names=[n for n, _ in files],
            methods=_method_list(methods),
            **kwargs,
        )

    @traitlets.validate("methods")
    def _check_methods(self, proposal):
        return _method_list(proposal["value"])


def _method_list(methods: Any) -> list:
    if methods is None:
        return []
    if isinstance(methods, str):
        return [methods]
    names = list(methods)
    for m in names:
        if not isinstance(m, str):
            raise traitlets.TraitError(
                f"methods are observer ids or format labels such as 'torch.MinMaxObserver' or 'ggml.Q4_K', got {m!r}"
            )
    return names
