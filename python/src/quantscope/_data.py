"""Turns what a notebook user passes as data into the files the widget's engine reads.

Every calibration batch travels to the front end as the bytes of one file, sent as a binary
buffer (never as JSON numbers):

* a numpy array (or anything ``numpy.asarray`` accepts, such as a CPU torch tensor) becomes the
  bytes of a ``.npy`` file (``numpy.lib.format``), which keeps its dtype and shape;
* a path to a ``.npy``, ``.npz`` or ``.safetensors`` file is sent as the file's bytes;
* a list or tuple of those is a list of calibration batches, observed in order.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List

import numpy as np

#: File types the engine reads (it recognises the format from the bytes).
SUFFIXES = (".npy", ".npz", ".safetensors")

#: numpy dtype kinds the engine reads: bool, signed/unsigned integers, floats.
_KINDS = "biuf"


@dataclass(frozen=True)
class Batch:
    """One calibration batch: a display name and the bytes of a .npy/.npz/.safetensors file."""

    name: str
    payload: bytes


def batches_from(data: Any) -> List[Batch]:
    """The calibration batches of ``data`` (an array, a path, or a list/tuple of those).

    Raises ``TypeError`` for values that are neither, ``ValueError`` for empty lists, unsupported
    file types and dtypes, and ``FileNotFoundError`` for missing files.
    """
    if isinstance(data, (list, tuple)):
        if len(data) == 0:
            raise ValueError("an empty list has no calibration batch: pass at least one array or path")
        out = []
        for i, item in enumerate(data):
            if isinstance(item, (list, tuple)):
                raise TypeError(
                    f"batch {i} is a {type(item).__name__}: a list of batches holds arrays or paths, "
                    "not lists (use numpy.asarray for nested lists of numbers)"
                )
            out.append(_batch(item, f"batch{i}.npy"))
        return out
    return [_batch(data, "array.npy")]


def _batch(item: Any, default_name: str) -> Batch:
    if isinstance(item, (str, os.PathLike)):
        return _file_batch(Path(item))
    if isinstance(item, (bytes, bytearray, memoryview)):
        raise TypeError(
            "raw bytes are ambiguous: pass a numpy array, or a path to a .npy/.npz/.safetensors file"
        )
    return Batch(default_name, _npy_bytes(_as_array(item)))


def _file_batch(path: Path) -> Batch:
    if path.suffix.lower() not in SUFFIXES:
        raise ValueError(f"{path}: quantscope reads {', '.join(SUFFIXES)} files, not {path.suffix or 'files without a suffix'}")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return Batch(path.name, path.read_bytes())


def _as_array(item: Any) -> np.ndarray:
    # torch tensors: leave autograd and the device first (``Tensor.__array__`` refuses both).
    if hasattr(item, "detach") and hasattr(item, "cpu") and not isinstance(item, np.ndarray):
        item = item.detach().cpu()
    try:
        array = np.asarray(item)
    except Exception as err:  # numpy raises many types for unconvertible objects
        raise TypeError(f"cannot use a {type(item).__name__} as data: {err}") from err
    if array.dtype.kind not in _KINDS:
        raise ValueError(
            f"arrays of dtype {array.dtype} cannot be observed: quantscope reads bool, integer and "
            "floating-point arrays"
        )
    if array.ndim == 0:
        array = array.reshape(1)
    return array


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()
