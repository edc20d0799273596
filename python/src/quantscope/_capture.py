"""Activations of a live PyTorch model, recorded with forward hooks (torch is optional: it is
imported only when ``capture`` runs).

``capture(model, inputs)`` runs the model on ``inputs`` once and returns what the chosen modules
saw, as ``{name: numpy.ndarray}`` (an :class:`Activations`, a plain ``dict`` with ``save``):

* the **input** of module ``name`` is stored under ``name`` (``inputs_of=True``, the default: the
  tensor an activation observer calibrates), its **output** under ``name:output``
  (``outputs_of=True``);
* every array is 2-D, ``[rows, features]``: a ``Linear``'s ``[..., features]`` flattened to rows,
  a ``Conv``'s ``[N, C, *spatial]`` with its channels moved last (``rows = N·spatial``), so that
  per-channel observers see the channels as columns, as quantscope's other activation files do;
* calls to the same module (several forward passes, or a module used twice) are concatenated in
  call order, and at most ``max_rows`` rows are kept per name: memory stays bounded whatever the
  number of batches;
* values are float32 copies on the CPU, taken as the hooks see them, before the next module runs.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

#: The key suffix of a module's output.
OUTPUT_SUFFIX = ":output"


class Activations(dict):
    """``{name: numpy.ndarray}`` of captured activations; :meth:`save` writes them for the page."""

    def save(self, path: str) -> None:
        """Write every array to ``path`` as a ``.safetensors`` file (float32), which the
        explorer page, the CLI (``FILE.safetensors:name``) and :func:`quantscope.model` read."""
        from . import _native

        _native.save_safetensors(str(path), dict(self))


def _torch():
    try:
        import torch  # noqa: PLC0415 (optional dependency)
    except ImportError as e:  # pragma: no cover - exercised only without torch
        raise ImportError("quantscope.capture needs PyTorch: pip install torch") from e
    return torch


def _default_modules(torch, model) -> List[str]:
    kinds = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)
    return [name for name, m in model.named_modules() if name and isinstance(m, kinds)]


def _rows(torch, module, t) -> np.ndarray:
    """``t`` as ``[rows, features]`` float32 on the CPU (channels last for convolutions)."""
    t = t.detach()
    if isinstance(module, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)) and t.dim() >= 3:
        t = t.movedim(1, -1)
    if t.dim() == 0:
        t = t.reshape(1, 1)
    elif t.dim() == 1:
        t = t.reshape(1, -1)
    else:
        t = t.reshape(-1, t.shape[-1])
    return t.to(device="cpu", dtype=torch.float32).contiguous().numpy().copy()


def _first_tensor(torch, value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (list, tuple)):
        for v in value:
            found = _first_tensor(torch, v)
            if found is not None:
                return found
    if isinstance(value, dict):
        for v in value.values():
            found = _first_tensor(torch, v)
            if found is not None:
                return found
    return None


def _run(model, batch):
    if isinstance(batch, dict):
        return model(**batch)
    if isinstance(batch, tuple):
        return model(*batch)
    return model(batch)


def capture(
    model: Any,
    inputs: Union[Any, List[Any]],
    modules: Optional[Sequence[str]] = None,
    *,
    inputs_of: bool = True,
    outputs_of: bool = False,
    max_rows: Optional[int] = None,
) -> Activations:
    """Record what ``modules`` of ``model`` see when it runs on ``inputs``.

    ``inputs`` is one batch or a ``list`` of batches, each a tensor (``model(x)``), a ``tuple``
    (``model(*args)``) or a ``dict`` (``model(**kwargs)``, e.g. a tokenizer's output).
    ``modules`` names the modules (``model.named_modules()`` names); by default every
    ``Linear`` and ``Conv1d/2d/3d``. The model runs under ``torch.no_grad()`` in the mode it is in
    (call ``model.eval()`` first for inference behaviour). The hooks are removed afterwards, even
    when the model raises.
    """
    torch = _torch()
    if not inputs_of and not outputs_of:
        raise ValueError("capture needs inputs_of=True or outputs_of=True: nothing would be recorded")
    if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 1):
        raise ValueError(f"max_rows must be a positive integer, got {max_rows!r}")
    named = dict(model.named_modules())
    chosen = list(modules) if modules is not None else _default_modules(torch, model)
    unknown = [n for n in chosen if n not in named]
    if unknown:
        raise ValueError(f"the model has no module named {', '.join(map(repr, unknown))}")
    if not chosen:
        raise ValueError("the model has no Linear or Conv module: name the modules to capture")

    pieces: Dict[str, List[np.ndarray]] = {}
    kept: Dict[str, int] = {}

    def record(key: str, module, value) -> None:
        t = _first_tensor(torch, value)
        if t is None or not t.is_floating_point():
            return
        have = kept.get(key, 0)
        if max_rows is not None and have >= max_rows:
            return
        rows = _rows(torch, module, t)
        if max_rows is not None:
            rows = rows[: max_rows - have]
        pieces.setdefault(key, []).append(rows)
        kept[key] = have + rows.shape[0]

    def hook_for(name: str):
        def hook(module, args, output):
            if inputs_of:
                record(name, module, args)
            if outputs_of:
                record(name + OUTPUT_SUFFIX, module, output)

        return hook

    handles = [named[n].register_forward_hook(hook_for(n)) for n in chosen]
    try:
        batches: Iterable[Any] = inputs if isinstance(inputs, list) else [inputs]
        with torch.no_grad():
            for batch in batches:
                _run(model, batch)
    finally:
        for h in handles:
            h.remove()

    out = Activations()
    for n in chosen:
        for key in ([n] if inputs_of else []) + ([n + OUTPUT_SUFFIX] if outputs_of else []):
            if key not in pieces:
                continue
            parts = pieces[key]
            widths = {p.shape[1] for p in parts}
            if len(widths) > 1:
                raise ValueError(
                    f"{key}: the calls saw different feature widths {sorted(widths)}; capture them separately"
                )
            out[key] = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)
    return out
