"""``model`` and ``diff``, in this process or spread over any executor's ``map``.

With ``map=`` (``concurrent.futures``' ``executor.map``, ``multiprocessing.Pool.map``, Ray's
``ray.util.multiprocessing.Pool().map``, Dask's ``client.map``), the work is cut into
``portions`` by the engine — the tensors (``model``) or pairs of weights (``diff``) in checkpoint
order, in contiguous portions balanced by their element counts — and ``map`` runs
``_native.model(..., portion=(i, n))`` (or ``diff``) once per portion, wherever it runs its
calls; ``_native.merge`` puts the documents back together. The result is exactly the one this
process computes alone. The files must be readable at the same paths where the calls run (one
machine, or a shared file system).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Callable, Iterable, List, Mapping, Optional, Tuple

from . import _native


def _model_portion(args: Tuple[Any, Any, Optional[int], int, int]) -> dict:
    """One portion of ``model``: what ``map`` runs (a module-level function, so it pickles)."""
    paths, methods, jobs, index, count = args
    return dict(_native.model(paths, methods, jobs=jobs, portion=(index, count)))


def _diff_portion(args: Tuple[Any, Any, Any, int, int]) -> dict:
    """One portion of ``diff``: what ``map`` runs."""
    original, quantized, imatrix, index, count = args
    return dict(_native.diff(original, quantized, imatrix, portion=(index, count)))


def _count(portions: Optional[int]) -> int:
    if portions is None:
        return 2 * (os.cpu_count() or 1)
    if isinstance(portions, bool) or not isinstance(portions, int) or portions < 1:
        raise ValueError(f"portions is a positive integer, got {portions!r}")
    return portions


def _gathered(results: Iterable[Any]) -> List[Any]:
    """What ``map`` returned: results, or futures of them (Dask's ``client.map``)."""
    out = []
    for r in results:
        if not isinstance(r, Mapping) and callable(getattr(r, "result", None)):
            r = r.result()
        out.append(r)
    return out


def _spread(
    worker: Callable[[Any], dict], args: Tuple[Any, ...], map: Callable[..., Iterable[Any]], portions: Optional[int]
):
    n = _count(portions)
    documents = _gathered(map(worker, [(*args, i, n) for i in range(n)]))
    return _native.merge(documents)


def _no_portions_without_map(portions: Optional[int]) -> None:
    if portions is not None:
        raise ValueError("portions= cuts the work for map=: give map= too")


def _no_portion_with_map(portion: Optional[Tuple[int, int]]) -> None:
    if portion is not None:
        raise ValueError("portion= is one portion of the work, map= runs all of them: give one of the two")


def _methods(methods: Any) -> Any:
    """``methods`` as a list (it is sent to every portion), a single id kept as it is."""
    if methods is None or isinstance(methods, str):
        return methods
    return list(methods)


def model(
    paths: Any,
    methods: Any = None,
    *,
    jobs: Optional[int] = None,
    map: Optional[Callable[..., Iterable[Any]]] = None,
    portions: Optional[int] = None,
    portion: Optional[Tuple[int, int]] = None,
):
    """Rank every tensor worst first (``quantscope model --json``). ``paths``: a checkpoint
    file or folder, a list of them, or ``{name: array}`` such as :func:`capture` returns, which
    is written to a temporary ``.safetensors`` file and ranked like any checkpoint.

    ``map``: any executor's ``map`` (``pool.map``, ``client.map``); the tensors are cut into
    ``portions`` (default: twice this machine's cores) ranked by ``map``'s calls, each on ``jobs``
    threads, and merged: the same document as without ``map``. The files (and the temporary
    file of ``{name: array}``, which lives on this machine) must be readable where the calls run.
    ``portion=(i, n)`` ranks portion ``i`` of ``n`` only, for :func:`merge` (a batch job's
    share, as ``quantscope model --shard i/n --json``).
    """
    methods = _methods(methods)
    if isinstance(paths, Mapping):
        with tempfile.TemporaryDirectory(prefix="quantscope-") as folder:
            path = os.path.join(folder, "tensors.safetensors")
            _native.save_safetensors(path, dict(paths))
            return model(path, methods, jobs=jobs, map=map, portions=portions, portion=portion)
    if map is None:
        _no_portions_without_map(portions)
        return _native.model(paths, methods, jobs=jobs, portion=portion)
    _no_portion_with_map(portion)
    if not isinstance(paths, (str, os.PathLike)):
        paths = list(paths)
    return _spread(_model_portion, (paths, methods, jobs), map, portions)


def diff(
    original: Any,
    quantized: Any,
    imatrix: Any = None,
    *,
    map: Optional[Callable[..., Iterable[Any]]] = None,
    portions: Optional[int] = None,
    portion: Optional[Tuple[int, int]] = None,
):
    """A quantized checkpoint against its original, weight by weight (``quantscope diff
    --json``). ``map``: any executor's ``map``; the pairs are cut into ``portions`` (default:
    twice this machine's cores) compared by ``map``'s calls and merged: the same document as
    without ``map``. The files must be readable where the calls run. ``portion=(i, n)``
    compares portion ``i`` of ``n`` only, for :func:`merge`."""
    if map is None:
        _no_portions_without_map(portions)
        return _native.diff(original, quantized, imatrix, portion=portion)
    _no_portion_with_map(portion)
    return _spread(_diff_portion, (original, quantized, imatrix), map, portions)
