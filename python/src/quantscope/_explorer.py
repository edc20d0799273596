"""``quantscope.Explorer``: the explorer's observer panels as a notebook widget (anywidget)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Union

import anywidget
import traitlets

from . import _native
from ._data import batches_from

_STATIC = Path(__file__).parent / "static"


def _static(name: str) -> Path:
    path = _STATIC / name
    if not path.is_file():
        raise RuntimeError(
            f"quantscope's bundled widget is missing ({path}); this installation is incomplete: "
            "reinstall the package, or rebuild it with scripts/build-python.sh"
        )
    return path


class Explorer(anywidget.AnyWidget):
    """Every chosen observer on one tensor, side by side, computed by quantscope's engine.

    ``Explorer(data, observers=None, params=None)`` shows one panel per observer (histogram,
    clipping range, representable grid, scale, zero point, error), its parameter controls and the
    error-versus-clipping curve. ``data`` is a numpy array (a torch tensor via ``.numpy()``), a
    list of arrays (calibration batches, observed in order), or a path to a ``.npy``, ``.npz`` or
    ``.safetensors`` file (or a list of paths). ``member`` picks a tensor of an ``.npz`` or
    ``.safetensors`` file (default: the first).

    ``observers`` is a list of observer ids (default: PyTorch's MinMax, MovingAverageMinMax and
    Histogram observers, plus the per-channel ones for tensors of two or more dimensions) and
    ``params`` maps an observer id to its parameters, with the frameworks' own names and spellings::

        Explorer(x, ["torch.HistogramObserver"], {"torch.HistogramObserver": {"bins": 256}})

    Both are synced both ways: moving a slider changes ``explorer.params``, and assigning
    ``explorer.params`` moves the sliders. ``explorer.results`` holds one dict per observer:
    ``scale``, ``zero_point``, ``min_val``, ``max_val`` (the observer's state), ``clip_min``,
    ``clip_max`` (the clipping range chosen), ``grid_min``, ``grid_max``, ``metrics`` (``mse``,
    ``max_abs_err``, ``sqnr_db``, ``clipped_fraction``), ``ok`` and ``error``; per-tensor values
    are numbers, per-channel values lists. For the observers named, the native engine fills it
    at once (no browser needed: scripts, headless kernels, papermill); the page, once it has
    computed, sends the same numbers, and sends them again whenever a slider moves. Without named
    observers (the page's defaults) it fills once the page has rendered.
    """

    _esm = _static("widget.js")
    _css = _static("widget.css")

    _batches = traitlets.List(traitlets.Bytes()).tag(sync=True)
    _names = traitlets.List(traitlets.Unicode()).tag(sync=True)
    member = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    observers = traitlets.List(traitlets.Unicode()).tag(sync=True)
    params = traitlets.Dict().tag(sync=True)
    #: Bits and grid (``"affine"`` or ``"symmetric"``) of the error-versus-clipping curve.
    bits = traitlets.Int(8, min=2, max=16).tag(sync=True)
    scheme = traitlets.Enum(["affine", "symmetric"], default_value="affine").tag(sync=True)
    #: Histogram counts on a logarithmic scale.
    log_counts = traitlets.Bool(True).tag(sync=True)
    #: Written by the front end: one dict per observer (see the class documentation).
    results = traitlets.Dict().tag(sync=True)
    #: Written by the front end: the tensor's name, shape, dtype, elements, batches, range.
    summary = traitlets.Dict().tag(sync=True)
    #: Written by the front end: why the data could not be loaded ('' when it could).
    error = traitlets.Unicode("").tag(sync=True)
    #: Written by the front end: every observer id its engine has (empty until it rendered).
    available_observers = traitlets.List(traitlets.Unicode()).tag(sync=True)

    def __init__(
        self,
        data: Any,
        observers: Optional[Union[str, Iterable[str]]] = None,
        params: Optional[Dict[str, Dict[str, Any]]] = None,
        *,
        member: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        batches = batches_from(data)
        super().__init__(
            _batches=[b.payload for b in batches],
            _names=[b.name for b in batches],
            member=member,
            observers=_observer_list(observers),
            params=params if params is not None else {},
            **kwargs,
        )
        self.results = _native_results(data, member, self.observers, self.params)

    def load(self, data: Any, *, member: Optional[str] = None) -> None:
        """Replace the data (same forms as the constructor); every observer runs again."""
        batches = batches_from(data)
        with self.hold_sync():
            self.results = _native_results(data, member, self.observers, self.params)
            self.member = member
            self._names = [b.name for b in batches]
            self._batches = [b.payload for b in batches]

    @traitlets.validate("observers")
    def _check_observers(self, proposal):
        return _observer_list(proposal["value"])

    @traitlets.validate("params")
    def _check_params(self, proposal):
        value = proposal["value"]
        for key, own in value.items():
            if not isinstance(key, str) or not isinstance(own, dict):
                raise traitlets.TraitError(
                    "params maps observer ids to dicts of parameters, e.g. "
                    '{"torch.HistogramObserver": {"bins": 256}}; '
                    f"got {key!r}: {own!r}"
                )
        return value


def _native_results(data: Any, member: Optional[str], observers: list, params: dict) -> dict:
    """``results`` computed by the native engine over the same batches as the page's (a path's
    ``member`` named as the CLI names it, ``file.npz:member``); empty when the data cannot be
    read natively as given (e.g. a container of several tensors without ``member``, which the
    page reads by taking the first): the page then fills it, and shows what went wrong."""
    if not observers:
        return {}

    def spec(item: Any) -> Any:
        if member is not None and isinstance(item, (str, os.PathLike)) and Path(item).suffix.lower() in (".npz", ".safetensors"):
            return f"{os.fspath(item)}:{member}"
        return item

    batches = [spec(b) for b in data] if isinstance(data, (list, tuple)) else spec(data)
    try:
        return _native.notebook_results(batches, observers, params)
    except (ValueError, TypeError, OSError):
        return {}


def _observer_list(observers: Any) -> list:
    if observers is None:
        return []
    if isinstance(observers, str):
        return [observers]
    ids = list(observers)
    for i in ids:
        if not isinstance(i, str):
            raise traitlets.TraitError(f"observer ids are strings such as 'torch.MinMaxObserver', got {i!r}")
    return ids
