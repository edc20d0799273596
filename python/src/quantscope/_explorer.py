"""``quantscope.Explorer``: the explorer's observer panels as a notebook widget (anywidget)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Union

import anywidget
import traitlets

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
    ``explorer.params`` moves the sliders. After the front end has computed, ``explorer.results``
    holds one dict per observer: ``scale``, ``zero_point``, ``min_val``, ``max_val`` (the
    observer's state), ``clip_min``, ``clip_max`` (the clipping range chosen), ``grid_min``,
    ``grid_max``, ``metrics`` (``mse``, ``max_abs_err``, ``sqnr_db``, ``clipped_fraction``), ``ok``
    and ``error``. Per-tensor values are numbers, per-channel values lists.
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

    def load(self, data: Any, *, member: Optional[str] = None) -> None:
        """Replace the data (same forms as the constructor); every observer runs again."""
        batches = batches_from(data)
        with self.hold_sync():
            self.results = {}
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
