# Generated from the registries' parameter declarations by src/stubs.rs: do not edit.
# `QUANTSCOPE_WRITE_STUBS=1 cargo test --test python_stub` rewrites it; the test fails when it
# differs from what the engine declares.
"""quantscope's native engine: the functions of the CLI, on numpy arrays and files.

Every function returns the document the CLI prints with ``--json`` as plain Python objects
(dicts, lists, floats); a list of more than 1,024 numbers is a numpy array (float64, or int64
when every number is an integer) and a tensor a float32 numpy array of its shape.

``data`` is a numpy array (float32 in C order is read without a copy), anything with
``__array__`` or ``__dlpack__`` (a torch tensor), a path as the CLI takes it (``file.npy``,
``file.npz:member``, ``file.safetensors:tensor``, ``model.gguf:name``), or — for ``observe`` —
a list of those, the calibration batches in order.

Errors: ``OSError`` (``FileNotFoundError``) for files, ``ValueError`` for parameters, data and a
framework's refusal, with the engine's message and its ``kind``, ``exception``, ``stage`` and
``param`` attributes.
"""

from os import PathLike
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

Path = Union[str, "PathLike[str]"]
#: One tensor: an array (or anything ``numpy.asarray`` / ``numpy.from_dlpack`` takes) or a path.
Data = Union[npt.ArrayLike, Path]
#: Calibration batches: one tensor or a list of them, in order.
Batches = Union[Data, Sequence[Data]]
#: A vector parameter: numbers (an array) or a tensor file's path.
Vector = Union[npt.ArrayLike, str]
#: A JSON document of the CLI as Python objects.
Document = Dict[str, Any]

class Table(List[Document]):
    """Rows of a result; ``to_pandas()`` is a DataFrame of them (pandas installed)."""
    def to_pandas(self) -> Any: ...

class TableDocument(Dict[str, Any]):
    """A CLI document whose rows are ``self[self.table]``; ``to_pandas()`` a DataFrame of them."""
    table: str
    def rows(self) -> List[Document]: ...
    def to_pandas(self) -> Any: ...

def version() -> str:
    """The engine's version (the crate's)."""

def observers() -> Table:
    """Every observer of the registry (``quantscope list --json``'s ``observers``)."""

def presets() -> List[Document]:
    """The presets (``quantscope list --json``'s ``presets``)."""

def quantizers() -> Document:
    """The quantizer registry: ``formats`` and ``optimisers`` (``quantscope list --json``)."""

def formats(data: Data) -> Table:
    """Every number format of the line-up on one tensor (``quantscope formats --json``)."""

def inspect(path: Union[Path, Sequence[Path]]) -> TableDocument:
    """What a checkpoint stores (``quantscope inspect --json``)."""

def tensors(path: Union[Path, Sequence[Path]]) -> Dict[str, "np.ndarray[Any, np.dtype[np.float32]]"]:
    """Every tensor of a checkpoint decoded to float32 arrays, by name, in checkpoint order."""

def save_safetensors(path: Path, tensors: Mapping[str, Any]) -> None:
    """Write ``{name: array}`` as one float32 ``.safetensors`` file."""

def model(
    paths: Union[Path, Sequence[Path]],
    methods: Optional[Sequence[Union[str, Tuple[str, Mapping[str, Any]]]]] = None,
    *,
    jobs: Optional[int] = None,
    portion: Optional[Tuple[int, int]] = None,
) -> TableDocument:
    """Every tensor of a checkpoint ranked, worst first (``quantscope model --json``).

    ``methods``: observer ids and format labels (as ``quantscope.Model`` takes them) or
    ``(format id, params)`` pairs; default: ``quantscope model``'s defaults. ``portion=(i, n)``:
    only portion ``i`` of ``n`` (from 0) of the tensors, with its ``portion``, for ``merge``
    (``quantscope model --shard i/n --json``).
    """

def diff(
    original: Path,
    quantized: Path,
    imatrix: Optional[Path] = None,
    *,
    portion: Optional[Tuple[int, int]] = None,
) -> TableDocument:
    """A quantized checkpoint against its original, weight by weight (``quantscope diff --json``).

    ``portion=(i, n)``: only portion ``i`` of ``n`` (from 0) of the pairs, with its ``portion``,
    for ``merge`` (``quantscope diff --shard i/n --json``).
    """

def merge(documents: Sequence[Mapping[str, Any]]) -> TableDocument:
    """The documents of every portion of one ``model`` or ``diff`` (any order) put together:
    exactly the document of the call without ``portion`` (``quantscope merge``)."""

def notebook_results(
    data: Batches, observers: Sequence[str], params: Optional[Mapping[str, Mapping[str, Any]]] = None
) -> Dict[str, Document]:
    """Each observer's result as ``quantscope.Explorer.results`` holds it (what the widget sends)."""

@overload
def observe(
    data: Batches,
    observer: Literal["torch.MinMaxObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    qscheme: Literal["per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric", "per_channel_affine_float_qparams"] = ...,
    dtype: Literal["quint8", "qint8", "quint4x2", "qint32", "int8", "uint8", "int16", "int32", "uint16"] = ...,
    reduce_range: bool = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    eps: float = ...,
    is_dynamic: bool = ...,
) -> Document:
    """PyTorch torch.ao.quantization 2.15.0 (per tensor): running min/max of all batches; affine s = (max⁺ − min⁻)/(qmax − qmin), symmetric s = max|x|/((qmax − qmin)/2)

    Parameters (the framework's keywords and defaults):

    - ``qscheme``: quantization scheme (MinMaxObserver accepts only the per-tensor ones); default ``"per_tensor_affine"``.
    - ``dtype``: quantized dtype; sets the default integer range; default ``"quint8"``.
    - ``reduce_range``: halve the default 8-bit range (0..127 / -64..63); deprecated in PyTorch; default ``False``.
    - ``quant_min``: custom lower end of the integer range (used only with quant_max) (-2147483648..=2147483647); default ``None``.
    - ``quant_max``: custom upper end of the integer range (used only with quant_min) (-2147483648..=2147483647); default ``None``.
    - ``eps``: smallest scale (stored as a float32 buffer) (0..=3.4028234663852886e38); default ``1.1920928955078125e-7``.
    - ``is_dynamic``: marks the observer as a dynamic-quantization placeholder; default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torch.MovingAverageMinMaxObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    averaging_constant: float = ...,
    qscheme: Literal["per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric", "per_channel_affine_float_qparams"] = ...,
    dtype: Literal["quint8", "qint8", "quint4x2", "qint32", "int8", "uint8", "int16", "int32", "uint16"] = ...,
    reduce_range: bool = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    eps: float = ...,
    is_dynamic: bool = ...,
) -> Document:
    """PyTorch torch.ao.quantization 2.15.0 (per tensor): exponential moving average of each batch's min/max (v += c·(cur − v), float32), then MinMax's qparams

    Parameters (the framework's keywords and defaults):

    - ``averaging_constant``: weight c of the new batch in the running average v += c·(cur − v) (0..=1); default ``0.01``.
    - ``qscheme``: quantization scheme (per-tensor only); default ``"per_tensor_affine"``.
    - ``dtype``: quantized dtype; sets the default integer range; default ``"quint8"``.
    - ``reduce_range``: halve the default 8-bit range (0..127 / -64..63); deprecated in PyTorch; default ``False``.
    - ``quant_min``: custom lower end of the integer range (used only with quant_max) (-2147483648..=2147483647); default ``None``.
    - ``quant_max``: custom upper end of the integer range (used only with quant_min) (-2147483648..=2147483647); default ``None``.
    - ``eps``: smallest scale (stored as a float32 buffer) (0..=3.4028234663852886e38); default ``1.1920928955078125e-7``.
    - ``is_dynamic``: marks the observer as a dynamic-quantization placeholder; default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torch.PerChannelMinMaxObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    ch_axis: int = ...,
    qscheme: Literal["per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric", "per_channel_affine_float_qparams"] = ...,
    dtype: Literal["quint8", "qint8", "quint4x2", "qint32", "int8", "uint8", "int16", "int32", "uint16"] = ...,
    reduce_range: bool = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    eps: float = ...,
    is_dynamic: bool = ...,
) -> Document:
    """PyTorch torch.ao.quantization 2.15.0 (per channel): running min/max per index of ch_axis, then MinMax's qparams per channel (or float qparams: s = (max − min)/(qmax − qmin), zp = −min/s)

    Parameters (the framework's keywords and defaults):

    - ``ch_axis``: channel axis (negative counts from the end) (-64..=63); default ``0``.
    - ``qscheme``: quantization scheme (per-channel ones only); default ``"per_channel_affine"``.
    - ``dtype``: quantized dtype; sets the default integer range; default ``"quint8"``.
    - ``reduce_range``: halve the default 8-bit range (0..127 / -64..63); deprecated in PyTorch; default ``False``.
    - ``quant_min``: custom lower end of the integer range (used only with quant_max) (-2147483648..=2147483647); default ``None``.
    - ``quant_max``: custom upper end of the integer range (used only with quant_min) (-2147483648..=2147483647); default ``None``.
    - ``eps``: smallest scale (stored as a float32 buffer) (0..=3.4028234663852886e38); default ``1.1920928955078125e-7``.
    - ``is_dynamic``: marks the observer as a dynamic-quantization placeholder; default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torch.MovingAveragePerChannelMinMaxObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    averaging_constant: float = ...,
    ch_axis: int = ...,
    qscheme: Literal["per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric", "per_channel_affine_float_qparams"] = ...,
    dtype: Literal["quint8", "qint8", "quint4x2", "qint32", "int8", "uint8", "int16", "int32", "uint16"] = ...,
    reduce_range: bool = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    eps: float = ...,
    is_dynamic: bool = ...,
) -> Document:
    """PyTorch torch.ao.quantization 2.15.0 (per channel): moving average of each channel's min/max (v += c·(cur − v), float32), then per-channel qparams

    Parameters (the framework's keywords and defaults):

    - ``averaging_constant``: weight c of the new batch in the running average v += c·(cur − v) (0..=1); default ``0.01``.
    - ``ch_axis``: channel axis (negative counts from the end) (-64..=63); default ``0``.
    - ``qscheme``: quantization scheme (per-channel ones only); default ``"per_channel_affine"``.
    - ``dtype``: quantized dtype; sets the default integer range; default ``"quint8"``.
    - ``reduce_range``: halve the default 8-bit range (0..127 / -64..63); deprecated in PyTorch; default ``False``.
    - ``quant_min``: custom lower end of the integer range (used only with quant_max) (-2147483648..=2147483647); default ``None``.
    - ``quant_max``: custom upper end of the integer range (used only with quant_min) (-2147483648..=2147483647); default ``None``.
    - ``eps``: smallest scale (stored as a float32 buffer) (0..=3.4028234663852886e38); default ``1.1920928955078125e-7``.
    - ``is_dynamic``: marks the observer as a dynamic-quantization placeholder; default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torch.HistogramObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    bins: int = ...,
    upsample_rate: int = ...,
    qscheme: Literal["per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric", "per_channel_affine_float_qparams"] = ...,
    dtype: Literal["quint8", "qint8", "quint4x2", "qint32", "int8", "uint8", "int16", "int32", "uint16"] = ...,
    reduce_range: bool = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    eps: float = ...,
    is_dynamic: bool = ...,
) -> Document:
    """PyTorch torch.ao.quantization 2.15.0 (per tensor): running float32 histogram (histc, re-binned by 16× upsampling when the range grows); a greedy search shrinks the range while an L2 quantization-error estimate decreases

    Parameters (the framework's keywords and defaults):

    - ``bins``: number of histogram bins (1..=65536); default ``2048``.
    - ``upsample_rate``: upsampling of the old histogram when the range grows (an attribute in torch 2.15, not a constructor argument) (1..=4096); default ``16``; an attribute set after construction.
    - ``qscheme``: quantization scheme (per-tensor only); default ``"per_tensor_affine"``.
    - ``dtype``: quantized dtype; sets the default integer range; default ``"quint8"``.
    - ``reduce_range``: halve the default 8-bit range (0..127 / -64..63); deprecated in PyTorch; default ``False``.
    - ``quant_min``: custom lower end of the integer range (used only with quant_max) (-2147483648..=2147483647); default ``None``.
    - ``quant_max``: custom upper end of the integer range (used only with quant_min) (-2147483648..=2147483647); default ``None``.
    - ``eps``: smallest scale (stored as a float32 buffer) (0..=3.4028234663852886e38); default ``1.1920928955078125e-7``.
    - ``is_dynamic``: marks the observer as a dynamic-quantization placeholder; default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torch.FixedQParamsObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    scale: Optional[float] = ...,
    zero_point: Optional[int] = ...,
    dtype: Literal["quint8", "qint8", "quint4x2", "qint32", "int8", "uint8", "int16", "int32", "uint16"] = ...,
    qscheme: Literal["per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric", "per_channel_affine_float_qparams"] = ...,
    quant_min: int = ...,
    quant_max: int = ...,
    is_dynamic: bool = ...,
) -> Document:
    """PyTorch torch.ao.quantization 2.15.0 (per tensor): returns the scale and zero point it was built with; the data is ignored

    Parameters (the framework's keywords and defaults):

    - ``scale``: the fixed scale (required) (0..=3.4028234663852886e38); default ``None``.
    - ``zero_point``: the fixed zero point (required) (-2147483648..=2147483647); default ``None``.
    - ``dtype``: quantized dtype (informative); default ``"quint8"``.
    - ``qscheme``: quantization scheme (informative); default ``"per_tensor_affine"``.
    - ``quant_min``: lower end of the grid (-2147483648..=2147483647); default ``0``.
    - ``quant_max``: upper end of the grid (-2147483648..=2147483647); default ``255``.
    - ``is_dynamic``: marks the observer as a dynamic-quantization placeholder; default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torch.PlaceholderObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["float32", "float16", "bfloat16", "float64", "quint8", "qint8", "quint4x2", "qint32", "int8", "uint8", "int16", "int32", "uint16"] = ...,
    custom_op_name: str = ...,
    compute_dtype: Optional[Literal["float32", "float16", "bfloat16", "float64", "quint8", "qint8", "quint4x2", "qint32", "int8", "uint8", "int16", "int32", "uint16"]] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    qscheme: Optional[Literal["per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric", "per_channel_affine_float_qparams"]] = ...,
    eps: Optional[float] = ...,
    is_dynamic: bool = ...,
) -> Document:
    """PyTorch torch.ao.quantization 2.15.0 (pass-through): carries dtype/qscheme/range to the quantized module (float16 or dynamic quantization); computes nothing

    Parameters (the framework's keywords and defaults):

    - ``dtype``: dtype handed to the quantized module; default ``"float32"``.
    - ``custom_op_name``: name of a custom op (carried); default ``""``.
    - ``compute_dtype``: deprecated: marks dynamic quantization; default ``None``.
    - ``quant_min``: carried quant_min (-2147483648..=2147483647); default ``None``.
    - ``quant_max``: carried quant_max (-2147483648..=2147483647); default ``None``.
    - ``qscheme``: carried qscheme (per_tensor_affine when unset); default ``None``.
    - ``eps``: carried eps (float32 eps when unset) (0..=3.4028234663852886e38); default ``None``.
    - ``is_dynamic``: use dynamic quantization; default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torch.RecordingObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["float32", "float16", "bfloat16", "float64", "quint8", "qint8", "quint4x2", "qint32", "int8", "uint8", "int16", "int32", "uint16"] = ...,
) -> Document:
    """PyTorch torch.ao.quantization 2.15.0 (pass-through): debug observer that records its inputs; computes nothing

    Parameters (the framework's keywords and defaults):

    - ``dtype``: dtype handed to the quantized module; default ``"quint8"``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torch.NoopObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["float32", "float16", "bfloat16", "float64", "quint8", "qint8", "quint4x2", "qint32", "int8", "uint8", "int16", "int32", "uint16"] = ...,
    custom_op_name: str = ...,
) -> Document:
    """PyTorch torch.ao.quantization 2.15.0 (pass-through): passes its dtype (float16 by default) to the quantized module; computes nothing

    Parameters (the framework's keywords and defaults):

    - ``dtype``: dtype handed to the quantized module; default ``"float16"``.
    - ``custom_op_name``: name of a custom op (carried); default ``""``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torch.ReuseInputObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
) -> Document:
    """PyTorch torch.ao.quantization 2.15.0 (pass-through): reuses the observer of the operator's input (FX graph mode); computes nothing

    No parameters.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerTensorMinMaxObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int4", "uint4", "int8", "uint8", "int16", "fp8_e4m3", "fp8_e5m2"] = ...,
    qscheme: Literal["per_tensor"] = ...,
    symmetric: bool = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
) -> Document:
    """AMD Quark 0.13 (per tensor): running min/max of the whole tensor → int, fp8 or fp4 scale (symmetric int: amax/127.5)

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_tensor"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``True``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerChannelMinMaxObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int4", "uint4", "int8", "uint8", "int16", "fp8_e4m3", "fp8_e5m2", "fp4"] = ...,
    qscheme: Literal["per_channel"] = ...,
    symmetric: bool = ...,
    ch_axis: int = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
) -> Document:
    """AMD Quark 0.13 (per channel): running min/max per channel along ch_axis

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_channel"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``False``.
    - ``ch_axis``: channel axis (per-channel) or axis the groups/blocks run along; Quark has no default (-16..=15); default ``0``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerGroupMinMaxObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int4", "uint4", "int8", "uint8", "int16", "fp8_e4m3", "fp8_e5m2"] = ...,
    qscheme: Literal["per_group"] = ...,
    symmetric: bool = ...,
    ch_axis: int = ...,
    group_size: int = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
) -> Document:
    """AMD Quark 0.13 (per group): min/max per group of group_size elements along ch_axis (weights)

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_group"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``True``.
    - ``ch_axis``: channel axis (per-channel) or axis the groups/blocks run along; Quark has no default (-16..=15); default ``1``.
    - ``group_size``: elements per group/block (-1: the whole axis) (-1..=1048576); default ``128``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerTensorHistogramObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int4", "uint4", "int8", "uint8", "int16", "fp8_e4m3", "fp8_e5m2"] = ...,
    qscheme: Literal["per_tensor"] = ...,
    symmetric: bool = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
    bins: int = ...,
    skip_zeros: bool = ...,
) -> Document:
    """AMD Quark 0.13 (per tensor): collects a 2048-bin histogram (|x| when symmetric); its qparams are Quark's defaults

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_tensor"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``True``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    - ``bins``: initial number of bins (Quark's _num_bins instance attribute; grows with the range) (1..=1048576); default ``2048``.
    - ``skip_zeros``: drop exact zeros before binning (Quark's _skip_zeros instance attribute); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerTensorPercentileObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int4", "uint4", "int8", "uint8", "int16", "fp8_e4m3", "fp8_e5m2"] = ...,
    qscheme: Literal["per_tensor"] = ...,
    symmetric: bool = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
    bins: int = ...,
    skip_zeros: bool = ...,
    percentile: float = ...,
) -> Document:
    """AMD Quark 0.13 (per tensor): 4200-bin histogram without zeros; range at the percentile of the cdf (left bin edge)

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_tensor"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``True``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    - ``bins``: initial number of bins (Quark's _num_bins instance attribute; grows with the range) (1..=1048576); default ``4200``.
    - ``skip_zeros``: drop exact zeros before binning (Quark's _skip_zeros instance attribute); default ``True``.
    - ``percentile``: percentile kept (Quark's .percentile instance attribute, not in its config) (0..=100); default ``99.99999999``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerTensorPercentileObserver.fixed"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int4", "uint4", "int8", "uint8", "int16", "fp8_e4m3", "fp8_e5m2"] = ...,
    qscheme: Literal["per_tensor"] = ...,
    symmetric: bool = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
    bins: int = ...,
    skip_zeros: bool = ...,
    percentile: float = ...,
) -> Document:
    """AMD Quark 0.13 (per tensor): percentile observer with the asymmetric tails the right way round and aligned histogram merging

    Corrects a bug of ``quark.PerTensorPercentileObserver``.

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_tensor"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``True``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    - ``bins``: initial number of bins (Quark's _num_bins instance attribute; grows with the range) (1..=1048576); default ``4200``.
    - ``skip_zeros``: drop exact zeros before binning (Quark's _skip_zeros instance attribute); default ``True``.
    - ``percentile``: percentile kept (Quark's .percentile instance attribute, not in its config) (0..=100); default ``99.99999999``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerTensorMSEObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int4", "uint4", "int8", "uint8", "fp8_e4m3", "fp8_e5m2"] = ...,
    qscheme: Literal["per_tensor"] = ...,
    symmetric: bool = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
    bins: int = ...,
    skip_zeros: bool = ...,
    start_bin: int = ...,
    stride: int = ...,
) -> Document:
    """AMD Quark 0.13 (per tensor): 2048-bin histogram; amax = the bin centre with the least fake-quantization MSE, min 0

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_tensor"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``True``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    - ``bins``: initial number of bins (Quark's _num_bins instance attribute; grows with the range) (1..=1048576); default ``2048``.
    - ``skip_zeros``: drop exact zeros before binning (Quark's _skip_zeros instance attribute); default ``False``.
    - ``start_bin``: first bin centre tried as amax (default of get_min_max_by_mse) (0..=16777216); default ``2045``.
    - ``stride``: step between tried bins (1..=1048576); default ``1``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerTensorMSEObserver.fixed"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int4", "uint4", "int8", "uint8", "fp8_e4m3", "fp8_e5m2"] = ...,
    qscheme: Literal["per_tensor"] = ...,
    symmetric: bool = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
    bins: int = ...,
    skip_zeros: bool = ...,
    start_bin: int = ...,
    stride: int = ...,
) -> Document:
    """AMD Quark 0.13 (per tensor): MSE observer searching from bin 128 (as the calibrator it follows) with aligned histogram merging

    Corrects a bug of ``quark.PerTensorMSEObserver``.

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_tensor"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``True``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    - ``bins``: initial number of bins (Quark's _num_bins instance attribute; grows with the range) (1..=1048576); default ``2048``.
    - ``skip_zeros``: drop exact zeros before binning (Quark's _skip_zeros instance attribute); default ``False``.
    - ``start_bin``: first bin centre tried as amax (default of get_min_max_by_mse) (0..=16777216); default ``128``.
    - ``stride``: step between tried bins (1..=1048576); default ``1``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerTensorHistogramObserverPro"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int8", "uint8", "uint4"] = ...,
    qscheme: Literal["per_tensor"] = ...,
    symmetric: bool = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
    bins: int = ...,
    reduce_range: bool = ...,
    upsample_rate: int = ...,
) -> Document:
    """AMD Quark 0.13 (per tensor): PyTorch's HistogramObserver (256 bins, L2 search) with Quark's dtype ranges

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_tensor"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``True``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    - ``bins``: histogram bins of torch's HistogramObserver (1..=65536); default ``256``.
    - ``reduce_range``: torch's reduce_range; default ``False``.
    - ``upsample_rate``: Quark's argument, ignored: torch ≥ 2.5 removed it (torch upsamples by its own fixed rate) (1..=4096); default ``384``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerTensorPowOf2MinMaxObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int8", "uint8"] = ...,
    qscheme: Literal["per_tensor"] = ...,
    symmetric: bool = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
    qparams_every_batch: bool = ...,
) -> Document:
    """AMD Quark 0.13 (per tensor): min/max range → power-of-two scale 2^−round(−log2 s); most common (scale, zp) of the calls

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_tensor"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``True``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    - ``qparams_every_batch``: compute qparams after every batch as Quark's calibration loop does (the most common result wins); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerTensorPowOf2MinMSEObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int8", "uint8"] = ...,
    qscheme: Literal["per_tensor"] = ...,
    symmetric: bool = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
    qparams_every_batch: bool = ...,
) -> Document:
    """AMD Quark 0.13 (per tensor): power-of-two scale: the best of 2^−(pos−2..pos+2) by squared error on the last batch

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_tensor"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``True``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    - ``qparams_every_batch``: compute qparams after every batch as Quark's calibration loop does (the most common result wins); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerBlockMXObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4"] = ...,
    qscheme: Literal["per_group"] = ...,
    symmetric: Optional[bool] = ...,
    ch_axis: int = ...,
    group_size: int = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Literal["e8m0", "float32"] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
) -> Document:
    """AMD Quark 0.13 (per block): OCP MX: one E8M0 power-of-two scale per block of 32 (even/floor/ceil), fp8/fp6/fp4 elements

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"fp4"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_group"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``None``.
    - ``ch_axis``: channel axis (per-channel) or axis the groups/blocks run along; Quark has no default (-16..=15); default ``-1``.
    - ``group_size``: elements per group/block (-1: the whole axis) (-1..=1048576); default ``32``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``True``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``"e8m0"``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PerBlockBFPObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["int8"] = ...,
    qscheme: Literal["per_group"] = ...,
    symmetric: bool = ...,
    ch_axis: int = ...,
    group_size: int = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
) -> Document:
    """AMD Quark 0.13 (per block): block floating point: shared exponent per block, int8 mantissas, exponent raised when a mantissa would reach 128

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"int8"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_group"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``True``.
    - ``ch_axis``: channel axis (per-channel) or axis the groups/blocks run along; Quark has no default (-16..=15); default ``-1``.
    - ``group_size``: elements per group/block (-1: the whole axis) (-1..=1048576); default ``8``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["quark.PlaceholderObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    dtype: Literal["float16", "bfloat16"] = ...,
    qscheme: Literal["per_tensor"] = ...,
    symmetric: Optional[bool] = ...,
    scale_type: Literal["float", "pof2", "float32", "float16", "bfloat16"] = ...,
    zero_point_type: Literal["int32", "float32"] = ...,
    is_dynamic: bool = ...,
    round_method: Literal["half_even", "round", "floor"] = ...,
    scale_format: Optional[Literal["e8m0", "float32"]] = ...,
    scale_calculation_mode: Literal["even", "floor", "ceil"] = ...,
) -> Document:
    """AMD Quark 0.13 (pass-through): no statistics and no qparams: float16/bfloat16 is a cast there and back

    Parameters (the framework's keywords and defaults):

    - ``dtype``: Quark Dtype of the quantized values; default ``"float16"``.
    - ``qscheme``: QSchemeType (fixed by the observer class); default ``"per_tensor"``.
    - ``symmetric``: symmetric range around zero (int dtypes require it); default ``None``.
    - ``scale_type``: dtype the scale is cast to (float/pof2/float32 keep float32); default ``"float"``.
    - ``zero_point_type``: int32 zero point (range includes 0) or float32 (raw min/max); default ``"int32"``.
    - ``is_dynamic``: dynamic: keep only the last batch's statistics; default ``False``.
    - ``round_method``: rounding of the GPU kernels; on CPU Quark always rounds half to even; default ``"half_even"``.
    - ``scale_format``: scale format for fp4/MX scales; default ``None``.
    - ``scale_calculation_mode``: E8M0 scale rounding: even (round amax's mantissa first), floor, ceil; default ``"even"``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["horizon.MinMaxObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    averaging_constant: float = ...,
    qscheme: Literal["per_tensor_symmetric", "per_channel_symmetric"] = ...,
    ch_axis: int = ...,
    dtype: Literal["qint8", "qint16"] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    is_sync_quantize: bool = ...,
    round_mode: Literal["half_to_even", "bpu_round"] = ...,
    pow_quantization: bool = ...,
) -> Document:
    """Horizon observer_v2 observer_v2 (OE 3.0.x) (per channel): moving average of per-batch min/max (per tensor or per channel), symmetric scale

    Parameters (the framework's keywords and defaults):

    - ``averaging_constant``: weight of each new batch in the moving average of min/max (1.0 = last batch only) (0..=1); default ``0.01``.
    - ``qscheme``: one scale for the tensor, or one per channel along ch_axis; default ``"per_tensor_symmetric"``.
    - ``ch_axis``: channel axis: negative for per-tensor, the axis index for per-channel (-16..=15); default ``-1``.
    - ``dtype``: quantized type: qint8 (−128..127) or qint16 (−32768..32767); default ``"qint8"``.
    - ``quant_min``: custom lowest quantized value (used only together with quant_max) (-32768..=32767); default ``None``.
    - ``quant_max``: custom highest quantized value (used only together with quant_min) (-32768..=32767); default ``None``.
    - ``is_sync_quantize``: all-reduce min/max across processes in calculate_qparams (only under torch.distributed: no effect in one process); default ``False``.
    - ``round_mode``: rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5) (Horizon's global QuantRoundMode); default ``"half_to_even"``.
    - ``pow_quantization``: round scales to a power of two, 2^-1 … 2^-14 (Horizon's global pow_quantization); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["horizon.PercentileObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    percentile: float = ...,
    bins: int = ...,
    averaging_constant: float = ...,
    qscheme: Literal["per_tensor_symmetric", "per_channel_symmetric"] = ...,
    ch_axis: int = ...,
    dtype: Literal["qint8", "qint16"] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    is_sync_quantize: bool = ...,
    round_mode: Literal["half_to_even", "bpu_round"] = ...,
    pow_quantization: bool = ...,
) -> Document:
    """Horizon observer_v2 observer_v2 (OE 3.0.x) (per tensor): per batch: clip |x| at the centre of the percentile bin of its histogram; moving average

    Parameters (the framework's keywords and defaults):

    - ``percentile``: share of |x| (in %) kept inside the clip, per batch (0..=100); default ``99.99``.
    - ``bins``: histogram bins of |x| per batch (the clip lands on a bin centre) (1..=1048576); default ``2048``.
    - ``averaging_constant``: weight of each new batch in the moving average of min/max (1.0 = last batch only) (0..=1); default ``0.01``.
    - ``qscheme``: one scale for the tensor, or one per channel along ch_axis; default ``"per_tensor_symmetric"``.
    - ``ch_axis``: channel axis: negative for per-tensor, the axis index for per-channel (-16..=15); default ``-1``.
    - ``dtype``: quantized type: qint8 (−128..127) or qint16 (−32768..32767); default ``"qint8"``.
    - ``quant_min``: custom lowest quantized value (used only together with quant_max) (-32768..=32767); default ``None``.
    - ``quant_max``: custom highest quantized value (used only together with quant_min) (-32768..=32767); default ``None``.
    - ``is_sync_quantize``: all-reduce min/max across processes in calculate_qparams (only under torch.distributed: no effect in one process); default ``False``.
    - ``round_mode``: rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5) (Horizon's global QuantRoundMode); default ``"half_to_even"``.
    - ``pow_quantization``: round scales to a power of two, 2^-1 … 2^-14 (Horizon's global pow_quantization); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["horizon.MSEObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    stride: int = ...,
    averaging_constant: float = ...,
    qscheme: Literal["per_tensor_symmetric", "per_channel_symmetric"] = ...,
    ch_axis: int = ...,
    dtype: Literal["qint8", "qint16"] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    is_sync_quantize: bool = ...,
    round_mode: Literal["half_to_even", "bpu_round"] = ...,
    pow_quantization: bool = ...,
) -> Document:
    """Horizon observer_v2 observer_v2 (OE 3.0.x) (per channel): per batch: the min/max shrink factor (1.00 … 0.06) with the smallest L2 fake-quant error; moving average

    Parameters (the framework's keywords and defaults):

    - ``stride``: step through the 95 shrink factors 1.00, 0.99, … 0.06 (Horizon advises ≤ 20) (1..=95); default ``1``.
    - ``averaging_constant``: weight of each new batch in the moving average of min/max (1.0 = last batch only) (0..=1); default ``0.01``.
    - ``qscheme``: one scale for the tensor, or one per channel along ch_axis; default ``"per_tensor_symmetric"``.
    - ``ch_axis``: channel axis: negative for per-tensor, the axis index for per-channel (-16..=15); default ``-1``.
    - ``dtype``: quantized type: qint8 (−128..127) or qint16 (−32768..32767); default ``"qint8"``.
    - ``quant_min``: custom lowest quantized value (used only together with quant_max) (-32768..=32767); default ``None``.
    - ``quant_max``: custom highest quantized value (used only together with quant_min) (-32768..=32767); default ``None``.
    - ``is_sync_quantize``: all-reduce min/max across processes in calculate_qparams (only under torch.distributed: no effect in one process); default ``False``.
    - ``round_mode``: rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5) (Horizon's global QuantRoundMode); default ``"half_to_even"``.
    - ``pow_quantization``: round scales to a power of two, 2^-1 … 2^-14 (Horizon's global pow_quantization); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["horizon.MSEObserver.fixed"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    stride: int = ...,
    averaging_constant: float = ...,
    qscheme: Literal["per_tensor_symmetric", "per_channel_symmetric"] = ...,
    ch_axis: int = ...,
    dtype: Literal["qint8", "qint16"] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    is_sync_quantize: bool = ...,
    round_mode: Literal["half_to_even", "bpu_round"] = ...,
    pow_quantization: bool = ...,
) -> Document:
    """Horizon observer_v2 observer_v2 (OE 3.0.x) (per channel): MSEObserver applying exactly the shrink factor that won the search

    Corrects a bug of ``horizon.MSEObserver``.

    Parameters (the framework's keywords and defaults):

    - ``stride``: step through the 95 shrink factors 1.00, 0.99, … 0.06 (Horizon advises ≤ 20) (1..=95); default ``1``.
    - ``averaging_constant``: weight of each new batch in the moving average of min/max (1.0 = last batch only) (0..=1); default ``0.01``.
    - ``qscheme``: one scale for the tensor, or one per channel along ch_axis; default ``"per_tensor_symmetric"``.
    - ``ch_axis``: channel axis: negative for per-tensor, the axis index for per-channel (-16..=15); default ``-1``.
    - ``dtype``: quantized type: qint8 (−128..127) or qint16 (−32768..32767); default ``"qint8"``.
    - ``quant_min``: custom lowest quantized value (used only together with quant_max) (-32768..=32767); default ``None``.
    - ``quant_max``: custom highest quantized value (used only together with quant_min) (-32768..=32767); default ``None``.
    - ``is_sync_quantize``: all-reduce min/max across processes in calculate_qparams (only under torch.distributed: no effect in one process); default ``False``.
    - ``round_mode``: rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5) (Horizon's global QuantRoundMode); default ``"half_to_even"``.
    - ``pow_quantization``: round scales to a power of two, 2^-1 … 2^-14 (Horizon's global pow_quantization); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["horizon.KLObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    bins: int = ...,
    update_interval: int = ...,
    averaging_constant: float = ...,
    qscheme: Literal["per_tensor_symmetric", "per_channel_symmetric"] = ...,
    ch_axis: int = ...,
    dtype: Literal["qint8", "qint16"] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    is_sync_quantize: bool = ...,
    round_mode: Literal["half_to_even", "bpu_round"] = ...,
    pow_quantization: bool = ...,
) -> Document:
    """Horizon observer_v2 observer_v2 (OE 3.0.x) (per tensor): histogram of |x| pooled over update_interval batches; clip minimising a 9-bin-smoothed KL divergence; moving average

    Parameters (the framework's keywords and defaults):

    - ``bins``: initial histogram bins of |x| (Horizon requires at least 256) (1..=65536); default ``512``.
    - ``update_interval``: run the KL search every N batches on the pooled histogram (N = number of batches is Horizon's advice) (1..=1000000); default ``1``.
    - ``averaging_constant``: weight of each new batch in the moving average of min/max (1.0 = last batch only) (0..=1); default ``0.01``.
    - ``qscheme``: one scale for the tensor, or one per channel along ch_axis; default ``"per_tensor_symmetric"``.
    - ``ch_axis``: channel axis: negative for per-tensor, the axis index for per-channel (-16..=15); default ``-1``.
    - ``dtype``: quantized type: qint8 (−128..127) or qint16 (−32768..32767); default ``"qint8"``.
    - ``quant_min``: custom lowest quantized value (used only together with quant_max) (-32768..=32767); default ``None``.
    - ``quant_max``: custom highest quantized value (used only together with quant_min) (-32768..=32767); default ``None``.
    - ``is_sync_quantize``: all-reduce min/max across processes in calculate_qparams (only under torch.distributed: no effect in one process); default ``False``.
    - ``round_mode``: rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5) (Horizon's global QuantRoundMode); default ``"half_to_even"``.
    - ``pow_quantization``: round scales to a power of two, 2^-1 … 2^-14 (Horizon's global pow_quantization); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["horizon.MixObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    averaging_constant: float = ...,
    qscheme: Literal["per_tensor_symmetric", "per_channel_symmetric"] = ...,
    ch_axis: int = ...,
    dtype: Literal["qint8", "qint16"] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    is_sync_quantize: bool = ...,
    round_mode: Literal["half_to_even", "bpu_round"] = ...,
    pow_quantization: bool = ...,
) -> Document:
    """Horizon observer_v2 observer_v2 (OE 3.0.x) (per tensor): per batch: the best of nine percentile clips (99.9 … 99.9999 %) by L2 fake-quant error; moving average

    Parameters (the framework's keywords and defaults):

    - ``averaging_constant``: weight of each new batch in the moving average of min/max (1.0 = last batch only) (0..=1); default ``0.01``.
    - ``qscheme``: one scale for the tensor, or one per channel along ch_axis; default ``"per_tensor_symmetric"``.
    - ``ch_axis``: channel axis: negative for per-tensor, the axis index for per-channel (-16..=15); default ``-1``.
    - ``dtype``: quantized type: qint8 (−128..127) or qint16 (−32768..32767); default ``"qint8"``.
    - ``quant_min``: custom lowest quantized value (used only together with quant_max) (-32768..=32767); default ``None``.
    - ``quant_max``: custom highest quantized value (used only together with quant_min) (-32768..=32767); default ``None``.
    - ``is_sync_quantize``: all-reduce min/max across processes in calculate_qparams (only under torch.distributed: no effect in one process); default ``False``.
    - ``round_mode``: rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5) (Horizon's global QuantRoundMode); default ``"half_to_even"``.
    - ``pow_quantization``: round scales to a power of two, 2^-1 … 2^-14 (Horizon's global pow_quantization); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["horizon.ClipObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    xmin: float = ...,
    xmax: float = ...,
    averaging_constant: float = ...,
    qscheme: Literal["per_tensor_symmetric", "per_channel_symmetric"] = ...,
    ch_axis: int = ...,
    dtype: Literal["qint8", "qint16"] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    is_sync_quantize: bool = ...,
    round_mode: Literal["half_to_even", "bpu_round"] = ...,
    pow_quantization: bool = ...,
) -> Document:
    """Horizon observer_v2 observer_v2 (OE 3.0.x) (per channel): moving average of min/max, then min ≥ xmin and max ≤ xmax after every batch

    Parameters (the framework's keywords and defaults):

    - ``xmin``: lower limit for the stored minimum (-1e6..=1e6); default ``-1.0``.
    - ``xmax``: upper limit for the stored maximum (-1e6..=1e6); default ``1.0``.
    - ``averaging_constant``: weight of each new batch in the moving average of min/max (1.0 = last batch only) (0..=1); default ``1.0``.
    - ``qscheme``: one scale for the tensor, or one per channel along ch_axis; default ``"per_tensor_symmetric"``.
    - ``ch_axis``: channel axis: negative for per-tensor, the axis index for per-channel (-16..=15); default ``-1``.
    - ``dtype``: quantized type: qint8 (−128..127) or qint16 (−32768..32767); default ``"qint8"``.
    - ``quant_min``: custom lowest quantized value (used only together with quant_max) (-32768..=32767); default ``None``.
    - ``quant_max``: custom highest quantized value (used only together with quant_min) (-32768..=32767); default ``None``.
    - ``is_sync_quantize``: all-reduce min/max across processes in calculate_qparams (only under torch.distributed: no effect in one process); default ``False``.
    - ``round_mode``: rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5) (Horizon's global QuantRoundMode); default ``"half_to_even"``.
    - ``pow_quantization``: round scales to a power of two, 2^-1 … 2^-14 (Horizon's global pow_quantization); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["horizon.ClipStdObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    std_scale: float = ...,
    averaging_constant: float = ...,
    qscheme: Literal["per_tensor_symmetric", "per_channel_symmetric"] = ...,
    ch_axis: int = ...,
    dtype: Literal["qint8", "qint16"] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    is_sync_quantize: bool = ...,
    round_mode: Literal["half_to_even", "bpu_round"] = ...,
    pow_quantization: bool = ...,
) -> Document:
    """Horizon observer_v2 observer_v2 (OE 3.0.x) (per tensor): per batch: min/max clamped to mean ∓ std_scale·std (unbiased); moving average

    Parameters (the framework's keywords and defaults):

    - ``std_scale``: how many standard deviations around the mean to keep (0..=100); default ``3.0``.
    - ``averaging_constant``: weight of each new batch in the moving average of min/max (1.0 = last batch only) (0..=1); default ``0.01``.
    - ``qscheme``: one scale for the tensor, or one per channel along ch_axis; default ``"per_tensor_symmetric"``.
    - ``ch_axis``: channel axis: negative for per-tensor, the axis index for per-channel (-16..=15); default ``-1``.
    - ``dtype``: quantized type: qint8 (−128..127) or qint16 (−32768..32767); default ``"qint8"``.
    - ``quant_min``: custom lowest quantized value (used only together with quant_max) (-32768..=32767); default ``None``.
    - ``quant_max``: custom highest quantized value (used only together with quant_min) (-32768..=32767); default ``None``.
    - ``is_sync_quantize``: all-reduce min/max across processes in calculate_qparams (only under torch.distributed: no effect in one process); default ``False``.
    - ``round_mode``: rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5) (Horizon's global QuantRoundMode); default ``"half_to_even"``.
    - ``pow_quantization``: round scales to a power of two, 2^-1 … 2^-14 (Horizon's global pow_quantization); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["horizon.NormObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    norm: float = ...,
    averaging_constant: float = ...,
    qscheme: Literal["per_tensor_symmetric", "per_channel_symmetric"] = ...,
    ch_axis: int = ...,
    dtype: Literal["qint8", "qint16"] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    is_sync_quantize: bool = ...,
    round_mode: Literal["half_to_even", "bpu_round"] = ...,
    pow_quantization: bool = ...,
) -> Document:
    """Horizon observer_v2 observer_v2 (OE 3.0.x) (per channel): per batch: max = p-norm of |x| over dim 0, min = −max; moving average

    Parameters (the framework's keywords and defaults):

    - ``norm``: the order p of the norm (0..=100); default ``2.0``.
    - ``averaging_constant``: weight of each new batch in the moving average of min/max (1.0 = last batch only) (0..=1); default ``0.01``.
    - ``qscheme``: one scale for the tensor, or one per channel along ch_axis; default ``"per_tensor_symmetric"``.
    - ``ch_axis``: channel axis: negative for per-tensor, the axis index for per-channel (-16..=15); default ``-1``.
    - ``dtype``: quantized type: qint8 (−128..127) or qint16 (−32768..32767); default ``"qint8"``.
    - ``quant_min``: custom lowest quantized value (used only together with quant_max) (-32768..=32767); default ``None``.
    - ``quant_max``: custom highest quantized value (used only together with quant_min) (-32768..=32767); default ``None``.
    - ``is_sync_quantize``: all-reduce min/max across processes in calculate_qparams (only under torch.distributed: no effect in one process); default ``False``.
    - ``round_mode``: rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5) (Horizon's global QuantRoundMode); default ``"half_to_even"``.
    - ``pow_quantization``: round scales to a power of two, 2^-1 … 2^-14 (Horizon's global pow_quantization); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["horizon.FixedScaleObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    scale: float = ...,
    zero_point: float = ...,
    averaging_constant: float = ...,
    qscheme: Literal["per_tensor_symmetric", "per_channel_symmetric"] = ...,
    ch_axis: int = ...,
    dtype: Literal["qint8", "qint16"] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    is_sync_quantize: bool = ...,
    round_mode: Literal["half_to_even", "bpu_round"] = ...,
    pow_quantization: bool = ...,
) -> Document:
    """Horizon observer_v2 observer_v2 (OE 3.0.x) (per tensor): returns the configured scale and zero point, whatever the data

    Parameters (the framework's keywords and defaults):

    - ``scale``: the scale to return (must be > 0) (0..=1e6); default ``1.0``.
    - ``zero_point``: the zero point to return (truncated to an integer) (-32768..=32767); default ``0.0``.
    - ``averaging_constant``: weight of each new batch in the moving average of min/max (1.0 = last batch only) (0..=1); default ``0.0``.
    - ``qscheme``: one scale for the tensor, or one per channel along ch_axis; default ``"per_tensor_symmetric"``.
    - ``ch_axis``: channel axis: negative for per-tensor, the axis index for per-channel (-16..=15); default ``-1``.
    - ``dtype``: quantized type: qint8 (−128..127) or qint16 (−32768..32767); default ``"qint8"``.
    - ``quant_min``: custom lowest quantized value (used only together with quant_max) (-32768..=32767); default ``None``.
    - ``quant_max``: custom highest quantized value (used only together with quant_min) (-32768..=32767); default ``None``.
    - ``is_sync_quantize``: all-reduce min/max across processes in calculate_qparams (only under torch.distributed: no effect in one process); default ``False``.
    - ``round_mode``: rounding of the fake quantization: ties to even, or the BPU's floor(x + 0.5) (Horizon's global QuantRoundMode); default ``"half_to_even"``.
    - ``pow_quantization``: round scales to a power of two, 2^-1 … 2^-14 (Horizon's global pow_quantization); default ``False``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["ort.MinMaxCalibrater"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    symmetric: bool = ...,
    moving_average: bool = ...,
    averaging_constant: float = ...,
    collect_mode: Literal["per_batch", "single_reader"] = ...,
    quant_type: Literal["uint8", "int8", "uint16", "int16", "uint4", "int4"] = ...,
    qdq_symmetric: bool = ...,
    min_real_range: Optional[float] = ...,
) -> Document:
    """ONNX Runtime onnxruntime 1.31.1 (per tensor): Global min/max of the per-batch ReduceMin/ReduceMax (or their moving average), made symmetric on request; ORT's float64 scale

    Parameters (the framework's keywords and defaults):

    - ``symmetric``: make each collected range symmetric: (−max|·|, +max|·|); default ``False``.
    - ``moving_average``: average the per-batch minima/maxima instead of taking the global min/max; default ``False``.
    - ``averaging_constant``: moving-average smoothing factor c between collect_data calls: v += c·(new − v) (0..=1); default ``0.01``.
    - ``collect_mode``: per_batch: one collect_data() call per batch (ranges merge between calls, moving average is an EMA); single_reader: every batch in one call (moving average is a mean); default ``"per_batch"``.
    - ``quant_type``: activation type the range is quantized to (ORT's default QUInt8); default ``"uint8"``.
    - ``qdq_symmetric``: ActivationSymmetric: symmetric compute_scale_zp (int8 then uses −127..127); default ``False``.
    - ``min_real_range``: MinimumRealRange: enforce rmax − rmin ≥ this before computing the scale (0..=1e30); default ``None``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["ort.EntropyCalibrater"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    num_bins: int = ...,
    num_quantized_bins: int = ...,
    symmetric: bool = ...,
    collect_mode: Literal["per_batch", "single_reader"] = ...,
    quant_type: Literal["uint8", "int8", "uint16", "int16", "uint4", "int4"] = ...,
    qdq_symmetric: bool = ...,
    min_real_range: Optional[float] = ...,
) -> Document:
    """ONNX Runtime onnxruntime 1.31.1 (per tensor): KL-divergence threshold search on a ±max|x| histogram (first minimum), clamped to the data range

    Parameters (the framework's keywords and defaults):

    - ``num_bins``: histogram bins (grows when later calls exceed the range) (1..=1048576); default ``128``.
    - ``num_quantized_bins``: bins of the quantized distribution q; thresholds tried: num_quantized_bins/2 ..= num_bins/2 bins each side (1..=1048576); default ``128``.
    - ``symmetric``: accepted but without effect: the entropy collector always histograms signed values; default ``False``.
    - ``collect_mode``: per_batch: one collect_data() call per batch (histograms merge between calls); single_reader: every batch in one call (their concatenation is binned once); default ``"per_batch"``.
    - ``quant_type``: activation type the range is quantized to (ORT's default QUInt8); default ``"uint8"``.
    - ``qdq_symmetric``: ActivationSymmetric: symmetric compute_scale_zp (int8 then uses −127..127); default ``False``.
    - ``min_real_range``: MinimumRealRange: enforce rmax − rmin ≥ this before computing the scale (0..=1e30); default ``None``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["ort.PercentileCalibrater"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    num_bins: int = ...,
    percentile: float = ...,
    symmetric: bool = ...,
    collect_mode: Literal["per_batch", "single_reader"] = ...,
    quant_type: Literal["uint8", "int8", "uint16", "int16", "uint4", "int4"] = ...,
    qdq_symmetric: bool = ...,
    min_real_range: Optional[float] = ...,
) -> Document:
    """ONNX Runtime onnxruntime 1.31.1 (per tensor): Percentile of the |x| histogram (symmetric) or both tails of the signed histogram, clamped to the observed min/max

    Parameters (the framework's keywords and defaults):

    - ``num_bins``: histogram bins (grows with the data) (1..=1048576); default ``2048``.
    - ``percentile``: share of the data (in %) inside the range (0..=100); default ``99.999``.
    - ``symmetric``: true: histogram of |x| (from min|x|), range ±percentile clamped to the data; false: signed histogram, (100−p)/2 % cut on each side; default ``True``.
    - ``collect_mode``: per_batch: one collect_data() call per batch (histograms merge between calls); single_reader: every batch in one call (their concatenation is binned once); default ``"per_batch"``.
    - ``quant_type``: activation type the range is quantized to (ORT's default QUInt8); default ``"uint8"``.
    - ``qdq_symmetric``: ActivationSymmetric: symmetric compute_scale_zp (int8 then uses −127..127); default ``False``.
    - ``min_real_range``: MinimumRealRange: enforce rmax − rmin ≥ this before computing the scale (0..=1e30); default ``None``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["ort.DistributionCalibrater"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    num_bins: int = ...,
    scenario: Literal["same", "p3"] = ...,
    collect_mode: Literal["per_batch", "single_reader"] = ...,
    quant_type: Literal["uint8", "int8", "uint16", "int16", "uint4", "int4"] = ...,
    qdq_symmetric: bool = ...,
    min_real_range: Optional[float] = ...,
) -> Document:
    """ONNX Runtime onnxruntime 1.31.1 (per tensor): Mean and standard deviation of the signed histogram (for float 8); the range reported is ±max|x|

    Parameters (the framework's keywords and defaults):

    - ``num_bins``: histogram bins; ORT refuses fewer than 512 (ValueError) (1..=1048576); default ``2048``.
    - ``scenario``: same: mean/std of the values; p3: of sign(v)·|v|^(1/3) (float 8 ~ X³); default ``"same"``.
    - ``collect_mode``: per_batch: one collect_data() call per batch (histograms merge between calls); single_reader: every batch in one call (their concatenation is binned once); default ``"per_batch"``.
    - ``quant_type``: activation type the range is quantized to (ORT's default QUInt8); default ``"uint8"``.
    - ``qdq_symmetric``: ActivationSymmetric: symmetric compute_scale_zp (int8 then uses −127..127); default ``False``.
    - ``min_real_range``: MinimumRealRange: enforce rmax − rmin ≥ this before computing the scale (0..=1e30); default ``None``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["modelopt.MaxCalibrator"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    axis: Optional[int] = ...,
    num_bits: Union[int, Tuple[int, int]] = ...,
    unsigned: bool = ...,
    narrow_range: bool = ...,
) -> Document:
    """NVIDIA Model Optimizer nvidia-modelopt 0.47.0 (per channel): amax = running max |x|, per tensor or per channel along `axis`; scale = amax/(2^(b−1) − 1)

    Parameters (the framework's keywords and defaults):

    - ``axis``: quantization axis (one amax per index along it); null = per tensor (-64..=63); default ``None``.
    - ``num_bits``: integer bit width, or [4, 3] for FP8 E4M3 ([2, 1], FP4 E2M1, is accepted by the configuration but not by the per-tensor quantizer) (1..=16 or (4, 3), (2, 1)); default ``8``.
    - ``unsigned``: unsigned grid 0..2^num_bits − 1; default ``False``.
    - ``narrow_range``: signed grid −(2^(b−1) − 1)..2^(b−1) − 1 (otherwise down to −2^(b−1)); fake quantization only; default ``True``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["modelopt.HistogramCalibrator.entropy"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    num_bins: int = ...,
    skip_zeros: bool = ...,
    torch_hist: bool = ...,
    axis: Optional[int] = ...,
    start_bin: int = ...,
    stride: int = ...,
    num_bits: Union[int, Tuple[int, int]] = ...,
    unsigned: bool = ...,
    narrow_range: bool = ...,
) -> Document:
    """NVIDIA Model Optimizer nvidia-modelopt 0.47.0 (per tensor): amax minimising the KL divergence between the |x| histogram and its 2^(b−1)-level quantization (last minimum)

    Parameters (the framework's keywords and defaults):

    - ``num_bins``: histogram bins of |x| (grows with the data) (1..=1048576); default ``2048``.
    - ``skip_zeros``: leave exact zeros out of the histogram; default ``False``.
    - ``torch_hist``: bin with torch.histc from 0 (true) or np.histogram from min|x| (false); default ``True``.
    - ``axis``: must stay null: histogram calibration is per tensor only (NotImplementedError) (-64..=63); default ``None``.
    - ``start_bin``: first candidate bin (0..=16777216); default ``128``.
    - ``stride``: step between candidate bins (1..=1048576); default ``1``.
    - ``num_bits``: integer bit width, or [4, 3] for FP8 E4M3 ([2, 1], FP4 E2M1, is accepted by the configuration but not by the per-tensor quantizer) (1..=16 or (4, 3), (2, 1)); default ``8``.
    - ``unsigned``: unsigned grid 0..2^num_bits − 1; default ``False``.
    - ``narrow_range``: signed grid −(2^(b−1) − 1)..2^(b−1) − 1 (otherwise down to −2^(b−1)); fake quantization only; default ``True``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["modelopt.HistogramCalibrator.mse"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    num_bins: int = ...,
    skip_zeros: bool = ...,
    torch_hist: bool = ...,
    axis: Optional[int] = ...,
    start_bin: int = ...,
    stride: int = ...,
    num_bits: Union[int, Tuple[int, int]] = ...,
    unsigned: bool = ...,
    narrow_range: bool = ...,
) -> Document:
    """NVIDIA Model Optimizer nvidia-modelopt 0.47.0 (per tensor): amax minimising the histogram-weighted MSE of fake-quantized bin centres — as broken in 0.47

    Parameters (the framework's keywords and defaults):

    - ``num_bins``: histogram bins of |x| (grows with the data) (1..=1048576); default ``2048``.
    - ``skip_zeros``: leave exact zeros out of the histogram; default ``False``.
    - ``torch_hist``: bin with torch.histc from 0 (true) or np.histogram from min|x| (false); default ``True``.
    - ``axis``: must stay null: histogram calibration is per tensor only (NotImplementedError) (-64..=63); default ``None``.
    - ``start_bin``: first candidate bin (0..=16777216); default ``128``.
    - ``stride``: step between candidate bins (1..=1048576); default ``1``.
    - ``num_bits``: integer bit width, or [4, 3] for FP8 E4M3 ([2, 1], FP4 E2M1, is accepted by the configuration but not by the per-tensor quantizer) (1..=16 or (4, 3), (2, 1)); default ``8``.
    - ``unsigned``: unsigned grid 0..2^num_bits − 1; default ``False``.
    - ``narrow_range``: signed grid −(2^(b−1) − 1)..2^(b−1) − 1 (otherwise down to −2^(b−1)); fake quantization only; default ``True``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["modelopt.HistogramCalibrator.mse.fixed"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    num_bins: int = ...,
    skip_zeros: bool = ...,
    torch_hist: bool = ...,
    axis: Optional[int] = ...,
    start_bin: int = ...,
    stride: int = ...,
    num_bits: Union[int, Tuple[int, int]] = ...,
    unsigned: bool = ...,
    narrow_range: bool = ...,
) -> Document:
    """NVIDIA Model Optimizer nvidia-modelopt 0.47.0 (per tensor): amax minimising the histogram-weighted MSE of fake-quantized bin centres (the intended call)

    Corrects a bug of ``modelopt.HistogramCalibrator.mse``.

    Parameters (the framework's keywords and defaults):

    - ``num_bins``: histogram bins of |x| (grows with the data) (1..=1048576); default ``2048``.
    - ``skip_zeros``: leave exact zeros out of the histogram; default ``False``.
    - ``torch_hist``: bin with torch.histc from 0 (true) or np.histogram from min|x| (false); default ``True``.
    - ``axis``: must stay null: histogram calibration is per tensor only (NotImplementedError) (-64..=63); default ``None``.
    - ``start_bin``: first candidate bin (0..=16777216); default ``128``.
    - ``stride``: step between candidate bins (1..=1048576); default ``1``.
    - ``num_bits``: integer bit width, or [4, 3] for FP8 E4M3 ([2, 1], FP4 E2M1, is accepted by the configuration but not by the per-tensor quantizer) (1..=16 or (4, 3), (2, 1)); default ``8``.
    - ``unsigned``: unsigned grid 0..2^num_bits − 1; default ``False``.
    - ``narrow_range``: signed grid −(2^(b−1) − 1)..2^(b−1) − 1 (otherwise down to −2^(b−1)); fake quantization only; default ``True``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["modelopt.HistogramCalibrator.percentile"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    num_bins: int = ...,
    skip_zeros: bool = ...,
    torch_hist: bool = ...,
    axis: Optional[int] = ...,
    percentile: float = ...,
    num_bits: Union[int, Tuple[int, int]] = ...,
    unsigned: bool = ...,
    narrow_range: bool = ...,
) -> Document:
    """NVIDIA Model Optimizer nvidia-modelopt 0.47.0 (per tensor): amax = left edge of the |x| histogram bin where the cdf reaches the percentile

    Parameters (the framework's keywords and defaults):

    - ``num_bins``: histogram bins of |x| (grows with the data) (1..=1048576); default ``2048``.
    - ``skip_zeros``: leave exact zeros out of the histogram; default ``False``.
    - ``torch_hist``: bin with torch.histc from 0 (true) or np.histogram from min|x| (false); default ``True``.
    - ``axis``: must stay null: histogram calibration is per tensor only (NotImplementedError) (-64..=63); default ``None``.
    - ``percentile``: share of |x| (in %) below amax (0..=100); default ``99.99``.
    - ``num_bits``: integer bit width, or [4, 3] for FP8 E4M3 ([2, 1], FP4 E2M1, is accepted by the configuration but not by the per-tensor quantizer) (1..=16 or (4, 3), (2, 1)); default ``8``.
    - ``unsigned``: unsigned grid 0..2^num_bits − 1; default ``False``.
    - ``narrow_range``: signed grid −(2^(b−1) − 1)..2^(b−1) − 1 (otherwise down to −2^(b−1)); fake quantization only; default ``True``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["llmcompressor.memoryless_minmax"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    base_name: Literal["weight", "input", "output"] = ...,
    num_bits: int = ...,
    type: Literal["int", "float"] = ...,
    symmetric: bool = ...,
    strategy: Optional[Literal["tensor", "channel", "group", "block", "token", "tensor_group"]] = ...,
    group_size: Optional[int] = ...,
    block_structure: Optional[str] = ...,
    dynamic: bool = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16", "float8_e4m3fn", "uint8"]] = ...,
    zp_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float8_e4m3fn", "float16", "bfloat16", "float32"]] = ...,
) -> Document:
    """llm-compressor 0.14.0.1 (compressed-tensors 0.19.0) (per tensor): the last batch's min/max per qparam (tensor, output row, group, block, sequence position); symmetric s = absmax/(bit_range/2), asymmetric s = (max⁺ − min⁻)/bit_range, zp = qmin − min/s

    Parameters (the framework's keywords and defaults):

    - ``base_name``: observed tensor: a Linear weight [out, in] (observed once) or an activation [batch, seq, hidden]; default ``"weight"``.
    - ``num_bits``: bits of the quantized values (float: 4 = FP4 E2M1, 8 = FP8 E4M3) (1..=32); default ``8``.
    - ``type``: integer or float quantized values; default ``"int"``.
    - ``symmetric``: symmetric (zero point 0) or asymmetric range; default ``True``.
    - ``strategy``: tensor, channel (weights: per output row), group, block, token (activations: per sequence position), tensor_group (NVFP4); unset: inferred from group_size; default ``None``.
    - ``group_size``: columns per group (group/tensor_group; −1 infers channel) (-1..=65536); default ``None``.
    - ``block_structure``: block shape "RxC" (block strategy, weights); default ``None``.
    - ``dynamic``: dynamic quantization (only validated: token strategy requires it); default ``False``.
    - ``scale_dtype``: dtype the scales are rounded to (uint8 with group 32 and float 4/8 bits: MX E8M0 exponents); default ``None``.
    - ``zp_dtype``: dtype of the zero points (default from num_bits and type); default ``None``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["llmcompressor.static_minmax"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    base_name: Literal["weight", "input", "output"] = ...,
    num_bits: int = ...,
    type: Literal["int", "float"] = ...,
    symmetric: bool = ...,
    strategy: Optional[Literal["tensor", "channel", "group", "block", "token", "tensor_group"]] = ...,
    group_size: Optional[int] = ...,
    block_structure: Optional[str] = ...,
    dynamic: bool = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16", "float8_e4m3fn", "uint8"]] = ...,
    zp_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float8_e4m3fn", "float16", "bfloat16", "float32"]] = ...,
) -> Document:
    """llm-compressor 0.14.0.1 (compressed-tensors 0.19.0) (per tensor): running element-wise min/max of every batch's per-qparam min/max, then compressed-tensors' qparams

    Parameters (the framework's keywords and defaults):

    - ``base_name``: observed tensor: an activation [batch, seq, hidden] or a Linear weight [out, in] (observed once); default ``"input"``.
    - ``num_bits``: bits of the quantized values (float: 4 = FP4 E2M1, 8 = FP8 E4M3) (1..=32); default ``8``.
    - ``type``: integer or float quantized values; default ``"int"``.
    - ``symmetric``: symmetric (zero point 0) or asymmetric range; default ``True``.
    - ``strategy``: tensor, channel (weights: per output row), group, block, token (activations: per sequence position), tensor_group (NVFP4); unset: inferred from group_size; default ``None``.
    - ``group_size``: columns per group (group/tensor_group; −1 infers channel) (-1..=65536); default ``None``.
    - ``block_structure``: block shape "RxC" (block strategy, weights); default ``None``.
    - ``dynamic``: dynamic quantization (only validated: token strategy requires it); default ``False``.
    - ``scale_dtype``: dtype the scales are rounded to (uint8 with group 32 and float 4/8 bits: MX E8M0 exponents); default ``None``.
    - ``zp_dtype``: dtype of the zero points (default from num_bits and type); default ``None``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["llmcompressor.minmax"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    base_name: Literal["weight", "input", "output"] = ...,
    averaging_constant: float = ...,
    num_bits: int = ...,
    type: Literal["int", "float"] = ...,
    symmetric: bool = ...,
    strategy: Optional[Literal["tensor", "channel", "group", "block", "token", "tensor_group"]] = ...,
    group_size: Optional[int] = ...,
    block_structure: Optional[str] = ...,
    dynamic: bool = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16", "float8_e4m3fn", "uint8"]] = ...,
    zp_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float8_e4m3fn", "float16", "bfloat16", "float32"]] = ...,
) -> Document:
    """llm-compressor 0.14.0.1 (compressed-tensors 0.19.0) (per tensor): moving average v ← v·(1 − c) + v_batch·c of every batch's per-qparam min/max (c = 0.01), then compressed-tensors' qparams

    Parameters (the framework's keywords and defaults):

    - ``base_name``: observed tensor: an activation [batch, seq, hidden] or a Linear weight [out, in] (observed once); default ``"input"``.
    - ``averaging_constant``: weight c of the new batch: v ← v·(1 − c) + v_batch·c (observer_kwargs) (0..=1); default ``0.01``.
    - ``num_bits``: bits of the quantized values (float: 4 = FP4 E2M1, 8 = FP8 E4M3) (1..=32); default ``8``.
    - ``type``: integer or float quantized values; default ``"int"``.
    - ``symmetric``: symmetric (zero point 0) or asymmetric range; default ``True``.
    - ``strategy``: tensor, channel (weights: per output row), group, block, token (activations: per sequence position), tensor_group (NVFP4); unset: inferred from group_size; default ``None``.
    - ``group_size``: columns per group (group/tensor_group; −1 infers channel) (-1..=65536); default ``None``.
    - ``block_structure``: block shape "RxC" (block strategy, weights); default ``None``.
    - ``dynamic``: dynamic quantization (only validated: token strategy requires it); default ``False``.
    - ``scale_dtype``: dtype the scales are rounded to (uint8 with group 32 and float 4/8 bits: MX E8M0 exponents); default ``None``.
    - ``zp_dtype``: dtype of the zero points (default from num_bits and type); default ``None``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["llmcompressor.memoryless_mse"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    base_name: Literal["weight", "input", "output"] = ...,
    num_bits: int = ...,
    type: Literal["int", "float"] = ...,
    symmetric: bool = ...,
    strategy: Optional[Literal["tensor", "channel", "group", "block", "token", "tensor_group"]] = ...,
    group_size: Optional[int] = ...,
    block_structure: Optional[str] = ...,
    dynamic: bool = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16", "float8_e4m3fn", "uint8"]] = ...,
    zp_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float8_e4m3fn", "float16", "bfloat16", "float32"]] = ...,
    maxshrink: float = ...,
    patience: int = ...,
    grid: float = ...,
    norm: float = ...,
    expand: float = ...,
) -> Document:
    """llm-compressor 0.14.0.1 (compressed-tensors 0.19.0) (per tensor): per qparam, the shrunk range p·[min, max], p = 1 − i/100 (i < 20), minimising Σ|x̂ − x|^2.4 of the last batch, with patience 5

    Parameters (the framework's keywords and defaults):

    - ``base_name``: observed tensor: a Linear weight [out, in] (observed once) or an activation [batch, seq, hidden]; default ``"weight"``.
    - ``num_bits``: bits of the quantized values (float: 4 = FP4 E2M1, 8 = FP8 E4M3) (1..=32); default ``8``.
    - ``type``: integer or float quantized values; default ``"int"``.
    - ``symmetric``: symmetric (zero point 0) or asymmetric range; default ``True``.
    - ``strategy``: tensor, channel (weights: per output row), group, block, token (activations: per sequence position), tensor_group (NVFP4); unset: inferred from group_size; default ``None``.
    - ``group_size``: columns per group (group/tensor_group; −1 infers channel) (-1..=65536); default ``None``.
    - ``block_structure``: block shape "RxC" (block strategy, weights); default ``None``.
    - ``dynamic``: dynamic quantization (only validated: token strategy requires it); default ``False``.
    - ``scale_dtype``: dtype the scales are rounded to (uint8 with group 32 and float 4/8 bits: MX E8M0 exponents); default ``None``.
    - ``zp_dtype``: dtype of the zero points (default from num_bits and type); default ``None``.
    - ``maxshrink``: largest shrink of the (expanded) range tried: int(maxshrink·grid) candidates (0..=1); default ``0.2``.
    - ``patience``: stop after this many consecutive candidates in which no qparam improved (0..=10000); default ``5``.
    - ``grid``: resolution of the shrink factors p = 1 − i/grid (0..=1000); default ``100.0``.
    - ``norm``: exponent of the error Σ|x̂ − x|^norm (2.4 by default) (0..=16); default ``2.4``.
    - ``expand``: factor applied to the raw range before searching (at least 1) (0..=10); default ``1.0``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["llmcompressor.mse"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    base_name: Literal["weight", "input", "output"] = ...,
    averaging_constant: float = ...,
    num_bits: int = ...,
    type: Literal["int", "float"] = ...,
    symmetric: bool = ...,
    strategy: Optional[Literal["tensor", "channel", "group", "block", "token", "tensor_group"]] = ...,
    group_size: Optional[int] = ...,
    block_structure: Optional[str] = ...,
    dynamic: bool = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16", "float8_e4m3fn", "uint8"]] = ...,
    zp_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float8_e4m3fn", "float16", "bfloat16", "float32"]] = ...,
    maxshrink: float = ...,
    patience: int = ...,
    grid: float = ...,
    norm: float = ...,
    expand: float = ...,
) -> Document:
    """llm-compressor 0.14.0.1 (compressed-tensors 0.19.0) (per tensor): moving average (c = 0.01) of the range each batch's MSE search (norm 2.4, 20 shrink steps, patience 5) finds

    Parameters (the framework's keywords and defaults):

    - ``base_name``: observed tensor: an activation [batch, seq, hidden] or a Linear weight [out, in] (observed once); default ``"input"``.
    - ``averaging_constant``: weight c of the new batch's searched range: v ← v·(1 − c) + v_batch·c (0..=1); default ``0.01``.
    - ``num_bits``: bits of the quantized values (float: 4 = FP4 E2M1, 8 = FP8 E4M3) (1..=32); default ``8``.
    - ``type``: integer or float quantized values; default ``"int"``.
    - ``symmetric``: symmetric (zero point 0) or asymmetric range; default ``True``.
    - ``strategy``: tensor, channel (weights: per output row), group, block, token (activations: per sequence position), tensor_group (NVFP4); unset: inferred from group_size; default ``None``.
    - ``group_size``: columns per group (group/tensor_group; −1 infers channel) (-1..=65536); default ``None``.
    - ``block_structure``: block shape "RxC" (block strategy, weights); default ``None``.
    - ``dynamic``: dynamic quantization (only validated: token strategy requires it); default ``False``.
    - ``scale_dtype``: dtype the scales are rounded to (uint8 with group 32 and float 4/8 bits: MX E8M0 exponents); default ``None``.
    - ``zp_dtype``: dtype of the zero points (default from num_bits and type); default ``None``.
    - ``maxshrink``: largest shrink of the (expanded) range tried: int(maxshrink·grid) candidates (0..=1); default ``0.2``.
    - ``patience``: stop after this many consecutive candidates in which no qparam improved (0..=10000); default ``5``.
    - ``grid``: resolution of the shrink factors p = 1 − i/grid (0..=1000); default ``100.0``.
    - ``norm``: exponent of the error Σ|x̂ − x|^norm (2.4 by default) (0..=16); default ``2.4``.
    - ``expand``: factor applied to the raw range before searching (at least 1) (0..=10); default ``1.0``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["llmcompressor.imatrix_mse"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    base_name: Literal["weight", "input", "output"] = ...,
    num_bits: int = ...,
    type: Literal["int", "float"] = ...,
    symmetric: bool = ...,
    strategy: Optional[Literal["tensor", "channel", "group", "block", "token", "tensor_group"]] = ...,
    group_size: Optional[int] = ...,
    block_structure: Optional[str] = ...,
    dynamic: bool = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16", "float8_e4m3fn", "uint8"]] = ...,
    zp_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float8_e4m3fn", "float16", "bfloat16", "float32"]] = ...,
    maxshrink: float = ...,
    patience: int = ...,
    grid: float = ...,
    norm: float = ...,
    strict: bool = ...,
    expand: float = ...,
    importance: Optional[Vector] = ...,
) -> Document:
    """llm-compressor 0.14.0.1 (compressed-tensors 0.19.0) (per tensor): per qparam, the shrunk range p·[min, max], p = 1 − i/20 (i = 0…19), minimising Σ|ŵ − w|³·E[x²]_col/mean(E[x²]) with the layer input's importance

    Parameters (the framework's keywords and defaults):

    - ``base_name``: observed tensor: a Linear weight [out, in] (activations fall back to the plain search); default ``"weight"``.
    - ``num_bits``: bits of the quantized values (float: 4 = FP4 E2M1, 8 = FP8 E4M3) (1..=32); default ``8``.
    - ``type``: integer or float quantized values; default ``"int"``.
    - ``symmetric``: symmetric (zero point 0) or asymmetric range; default ``True``.
    - ``strategy``: tensor, channel (weights: per output row), group, block, token (activations: per sequence position), tensor_group (NVFP4); unset: inferred from group_size; default ``None``.
    - ``group_size``: columns per group (group/tensor_group; −1 infers channel) (-1..=65536); default ``None``.
    - ``block_structure``: block shape "RxC" (block strategy, weights); default ``None``.
    - ``dynamic``: dynamic quantization (only validated: token strategy requires it); default ``False``.
    - ``scale_dtype``: dtype the scales are rounded to (uint8 with group 32 and float 4/8 bits: MX E8M0 exponents); default ``None``.
    - ``zp_dtype``: dtype of the zero points (default from num_bits and type); default ``None``.
    - ``maxshrink``: largest shrink of the (expanded) range tried: max(1, int(maxshrink·grid)) + 1 candidates (0..=1); default ``0.95``.
    - ``patience``: stop after this many consecutive candidates without improvement (0: never) (0..=10000); default ``5``.
    - ``grid``: resolution of the shrink factors p = 1 − i/grid (0..=1000); default ``20.0``.
    - ``norm``: exponent of the weighted error Σ|ŵ − w|^norm·importance (0..=16); default ``3.0``.
    - ``strict``: raise instead of falling back to the unweighted search; default ``False``.
    - ``expand``: factor applied to the raw range before searching (0..=10); default ``1.0``.
    - ``importance``: the mean of x² of the layer input per input channel (in_features values; a tensor or .npy) (numbers, or a tensor file); default ``None``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["llmcompressor.nvfp4_expanded_mse"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    base_name: Literal["weight", "input", "output"] = ...,
    num_bits: int = ...,
    type: Literal["int", "float"] = ...,
    symmetric: bool = ...,
    strategy: Optional[Literal["tensor", "channel", "group", "block", "token", "tensor_group"]] = ...,
    group_size: Optional[int] = ...,
    block_structure: Optional[str] = ...,
    dynamic: bool = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16", "float8_e4m3fn", "uint8"]] = ...,
    zp_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float8_e4m3fn", "float16", "bfloat16", "float32"]] = ...,
    maxshrink: float = ...,
    patience: int = ...,
    grid: float = ...,
    norm: float = ...,
    expand: float = ...,
) -> Document:
    """llm-compressor 0.14.0.1 (compressed-tensors 0.19.0) (per tensor): MSE search from 1.8× the range down to 0.8× (p = 1 − i/200, 111 steps, norm 2.4, no early stop), tuned for NVFP4

    Parameters (the framework's keywords and defaults):

    - ``base_name``: observed tensor: a Linear weight [out, in] (observed once); default ``"weight"``.
    - ``num_bits``: bits of the quantized values (float: 4 = FP4 E2M1, 8 = FP8 E4M3) (1..=32); default ``8``.
    - ``type``: integer or float quantized values; default ``"int"``.
    - ``symmetric``: symmetric (zero point 0) or asymmetric range; default ``True``.
    - ``strategy``: tensor, channel (weights: per output row), group, block, token (activations: per sequence position), tensor_group (NVFP4); unset: inferred from group_size; default ``None``.
    - ``group_size``: columns per group (group/tensor_group; −1 infers channel) (-1..=65536); default ``None``.
    - ``block_structure``: block shape "RxC" (block strategy, weights); default ``None``.
    - ``dynamic``: dynamic quantization (only validated: token strategy requires it); default ``False``.
    - ``scale_dtype``: dtype the scales are rounded to (uint8 with group 32 and float 4/8 bits: MX E8M0 exponents); default ``None``.
    - ``zp_dtype``: dtype of the zero points (default from num_bits and type); default ``None``.
    - ``maxshrink``: largest shrink of the (expanded) range tried: int(maxshrink·grid) candidates (0..=1); default ``0.5555555555555556``.
    - ``patience``: stop after this many consecutive candidates in which no qparam improved (0..=10000); default ``1000``.
    - ``grid``: resolution of the shrink factors p = 1 − i/grid (0..=1000); default ``200.0``.
    - ``norm``: exponent of the error Σ|x̂ − x|^norm (2.4 by default) (0..=16); default ``2.4``.
    - ``expand``: factor applied to the raw range before searching (at least 1) (0..=10); default ``1.8``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["llmcompressor.fouroversix"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    base_name: Literal["weight", "input", "output"] = ...,
    num_bits: int = ...,
    type: Literal["int", "float"] = ...,
    symmetric: bool = ...,
    strategy: Optional[Literal["tensor", "channel", "group", "block", "token", "tensor_group"]] = ...,
    group_size: Optional[int] = ...,
    block_structure: Optional[str] = ...,
    dynamic: bool = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16", "float8_e4m3fn", "uint8"]] = ...,
    zp_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float8_e4m3fn", "float16", "bfloat16", "float32"]] = ...,
    maxshrink: float = ...,
    patience: int = ...,
    grid: float = ...,
    norm: float = ...,
    expand: float = ...,
) -> Document:
    """llm-compressor 0.14.0.1 (compressed-tensors 0.19.0) (per tensor): deprecated alias of nvfp4_expanded_mse (the same search, with a UserWarning)

    Parameters (the framework's keywords and defaults):

    - ``base_name``: observed tensor: a Linear weight [out, in] (observed once); default ``"weight"``.
    - ``num_bits``: bits of the quantized values (float: 4 = FP4 E2M1, 8 = FP8 E4M3) (1..=32); default ``8``.
    - ``type``: integer or float quantized values; default ``"int"``.
    - ``symmetric``: symmetric (zero point 0) or asymmetric range; default ``True``.
    - ``strategy``: tensor, channel (weights: per output row), group, block, token (activations: per sequence position), tensor_group (NVFP4); unset: inferred from group_size; default ``None``.
    - ``group_size``: columns per group (group/tensor_group; −1 infers channel) (-1..=65536); default ``None``.
    - ``block_structure``: block shape "RxC" (block strategy, weights); default ``None``.
    - ``dynamic``: dynamic quantization (only validated: token strategy requires it); default ``False``.
    - ``scale_dtype``: dtype the scales are rounded to (uint8 with group 32 and float 4/8 bits: MX E8M0 exponents); default ``None``.
    - ``zp_dtype``: dtype of the zero points (default from num_bits and type); default ``None``.
    - ``maxshrink``: largest shrink of the (expanded) range tried: int(maxshrink·grid) candidates (0..=1); default ``0.5555555555555556``.
    - ``patience``: stop after this many consecutive candidates in which no qparam improved (0..=10000); default ``1000``.
    - ``grid``: resolution of the shrink factors p = 1 − i/grid (0..=1000); default ``200.0``.
    - ``norm``: exponent of the error Σ|x̂ − x|^norm (2.4 by default) (0..=16); default ``2.4``.
    - ``expand``: factor applied to the raw range before searching (at least 1) (0..=10); default ``1.8``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["llmcompressor.nvfp4_expanded_imatrix"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    base_name: Literal["weight", "input", "output"] = ...,
    num_bits: int = ...,
    type: Literal["int", "float"] = ...,
    symmetric: bool = ...,
    strategy: Optional[Literal["tensor", "channel", "group", "block", "token", "tensor_group"]] = ...,
    group_size: Optional[int] = ...,
    block_structure: Optional[str] = ...,
    dynamic: bool = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16", "float8_e4m3fn", "uint8"]] = ...,
    zp_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float8_e4m3fn", "float16", "bfloat16", "float32"]] = ...,
    maxshrink: float = ...,
    patience: int = ...,
    grid: float = ...,
    norm: float = ...,
    strict: bool = ...,
    expand: float = ...,
    importance: Optional[Vector] = ...,
) -> Document:
    """llm-compressor 0.14.0.1 (compressed-tensors 0.19.0) (per tensor): importance-weighted search from 1.8× the range down to 0.8× (p = 1 − i/200, 112 candidates, norm 2.4), tuned for NVFP4

    Parameters (the framework's keywords and defaults):

    - ``base_name``: observed tensor: a Linear weight [out, in]; default ``"weight"``.
    - ``num_bits``: bits of the quantized values (float: 4 = FP4 E2M1, 8 = FP8 E4M3) (1..=32); default ``8``.
    - ``type``: integer or float quantized values; default ``"int"``.
    - ``symmetric``: symmetric (zero point 0) or asymmetric range; default ``True``.
    - ``strategy``: tensor, channel (weights: per output row), group, block, token (activations: per sequence position), tensor_group (NVFP4); unset: inferred from group_size; default ``None``.
    - ``group_size``: columns per group (group/tensor_group; −1 infers channel) (-1..=65536); default ``None``.
    - ``block_structure``: block shape "RxC" (block strategy, weights); default ``None``.
    - ``dynamic``: dynamic quantization (only validated: token strategy requires it); default ``False``.
    - ``scale_dtype``: dtype the scales are rounded to (uint8 with group 32 and float 4/8 bits: MX E8M0 exponents); default ``None``.
    - ``zp_dtype``: dtype of the zero points (default from num_bits and type); default ``None``.
    - ``maxshrink``: largest shrink of the (expanded) range tried: max(1, int(maxshrink·grid)) + 1 candidates (0..=1); default ``0.5555555555555556``.
    - ``patience``: stop after this many consecutive candidates without improvement (0: never) (0..=10000); default ``1000``.
    - ``grid``: resolution of the shrink factors p = 1 − i/grid (0..=1000); default ``200.0``.
    - ``norm``: exponent of the weighted error Σ|ŵ − w|^norm·importance (0..=16); default ``2.4``.
    - ``strict``: raise instead of falling back to the unweighted search; default ``False``.
    - ``expand``: factor applied to the raw range before searching (0..=10); default ``1.8``.
    - ``importance``: the mean of x² of the layer input per input channel (in_features values; a tensor or .npy) (numbers, or a tensor file); default ``None``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torchao.AffineQuantizedMinMaxObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    keepdim: bool = ...,
    mapping_type: Literal["SYMMETRIC", "SYMMETRIC_NO_CLIPPING_ERR", "ASYMMETRIC"] = ...,
    target_dtype: Literal["int8", "uint8", "int16", "int32", "int1", "int2", "int3", "int4", "int5", "int6", "int7", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "float8_e4m3fn", "float8_e5m2"] = ...,
    granularity: Literal["PerTensor", "PerAxis", "PerGroup", "PerRow", "PerToken", "PerBlock"] = ...,
    axis: int = ...,
    group_size: int = ...,
    dim: int = ...,
    block_size: Optional[str] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    eps: Optional[float] = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16"]] = ...,
    zero_point_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float32", "float16", "bfloat16"]] = ...,
    preserve_zero: bool = ...,
    zero_point_domain: Literal["INT", "FLOAT", "NONE", "None"] = ...,
) -> Document:
    """torchao 0.18.0 (per tensor): running element-wise min/max per block (PerTensor, PerAxis, PerGroup, PerRow, PerToken, PerBlock), then choose_qparams_affine_with_min_max

    Parameters (the framework's keywords and defaults):

    - ``keepdim``: keep the reduced dims (as 1s) in min_val/max_val; default ``False``.
    - ``mapping_type``: SYMMETRIC, SYMMETRIC_NO_CLIPPING_ERR or ASYMMETRIC; default ``"SYMMETRIC"``.
    - ``target_dtype``: quantized dtype (sets the default range: int8 −128..127, uint4 0..15, float8 ±448, …); default ``"int8"``.
    - ``granularity``: PerTensor, PerAxis(axis), PerGroup(group_size), PerRow(dim), PerToken or PerBlock(block_size); default ``"PerTensor"``.
    - ``axis``: PerAxis: the axis kept (one qparam per index along it) (-8..=7); default ``0``.
    - ``group_size``: PerGroup: elements per group along the last dim (1..=65536); default ``128``.
    - ``dim``: PerRow: the dim reduced (−1: one qparam per row) (-8..=7); default ``-1``.
    - ``block_size``: PerBlock: block shape "AxB" (left-padded with 1s); default ``None``.
    - ``quant_min``: lower end of the range (default from target_dtype) (-2147483648..=2147483647); default ``None``.
    - ``quant_max``: upper end of the range (default from target_dtype) (-2147483648..=2147483647); default ``None``.
    - ``eps``: smallest scale (a clamp; default finfo(float32).smallest_normal) (0..=3.4028234663852886e38); default ``None``.
    - ``scale_dtype``: dtype the scale is cast to (default float32); default ``None``.
    - ``zero_point_dtype``: dtype of the zero point (default: float32 when symmetric, int32 when asymmetric); default ``None``.
    - ``preserve_zero``: deprecated: False only warns; default ``True``.
    - ``zero_point_domain``: INT (integer zero point), FLOAT (tinygemm offset, deprecated) or NONE (no zero point); default ``"INT"``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torchao.AffineQuantizedMSEObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    steps: int = ...,
    run_once: bool = ...,
    mapping_type: Literal["SYMMETRIC", "SYMMETRIC_NO_CLIPPING_ERR", "ASYMMETRIC"] = ...,
    target_dtype: Literal["int8", "uint8", "int16", "int32", "int1", "int2", "int3", "int4", "int5", "int6", "int7", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "float8_e4m3fn", "float8_e5m2"] = ...,
    granularity: Literal["PerTensor", "PerAxis", "PerGroup", "PerRow", "PerToken", "PerBlock"] = ...,
    axis: int = ...,
    group_size: int = ...,
    dim: int = ...,
    block_size: Optional[str] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    eps: Optional[float] = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16"]] = ...,
    zero_point_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float32", "float16", "bfloat16"]] = ...,
    preserve_zero: bool = ...,
    zero_point_domain: Literal["INT", "FLOAT", "NONE", "None"] = ...,
) -> Document:
    """torchao 0.18.0 (per tensor): per block, the symmetric threshold t = range·i/steps (i = 1…100) with the least mean squared Q/DQ error; every batch replaces the last

    Parameters (the framework's keywords and defaults):

    - ``steps``: number of thresholds t_i = range/steps·i tried per block (1..=10000); default ``100``.
    - ``run_once``: search the first batch only; default ``False``.
    - ``mapping_type``: SYMMETRIC, SYMMETRIC_NO_CLIPPING_ERR or ASYMMETRIC; default ``"SYMMETRIC"``.
    - ``target_dtype``: quantized dtype (sets the default range: int8 −128..127, uint4 0..15, float8 ±448, …); default ``"int8"``.
    - ``granularity``: PerTensor, PerAxis(axis), PerGroup(group_size), PerRow(dim), PerToken or PerBlock(block_size); default ``"PerTensor"``.
    - ``axis``: PerAxis: the axis kept (one qparam per index along it) (-8..=7); default ``0``.
    - ``group_size``: PerGroup: elements per group along the last dim (1..=65536); default ``128``.
    - ``dim``: PerRow: the dim reduced (−1: one qparam per row) (-8..=7); default ``-1``.
    - ``block_size``: PerBlock: block shape "AxB" (left-padded with 1s); default ``None``.
    - ``quant_min``: lower end of the range (default from target_dtype) (-2147483648..=2147483647); default ``None``.
    - ``quant_max``: upper end of the range (default from target_dtype) (-2147483648..=2147483647); default ``None``.
    - ``eps``: smallest scale (a clamp; default finfo(float32).smallest_normal) (0..=3.4028234663852886e38); default ``None``.
    - ``scale_dtype``: dtype the scale is cast to (default float32); default ``None``.
    - ``zero_point_dtype``: dtype of the zero point (default: float32 when symmetric, int32 when asymmetric); default ``None``.
    - ``preserve_zero``: deprecated: False only warns; default ``True``.
    - ``zero_point_domain``: INT (integer zero point), FLOAT (tinygemm offset, deprecated) or NONE (no zero point); default ``"INT"``.
    """

@overload
def observe(
    data: Batches,
    observer: Literal["torchao.AffineQuantizedFixedQParamObserver"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    scale: Optional[Vector] = ...,
    zero_point: Optional[Vector] = ...,
    mapping_type: Literal["SYMMETRIC", "SYMMETRIC_NO_CLIPPING_ERR", "ASYMMETRIC"] = ...,
    target_dtype: Literal["int8", "uint8", "int16", "int32", "int1", "int2", "int3", "int4", "int5", "int6", "int7", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "float8_e4m3fn", "float8_e5m2"] = ...,
    granularity: Literal["PerTensor", "PerAxis", "PerGroup", "PerRow", "PerToken", "PerBlock"] = ...,
    axis: int = ...,
    group_size: int = ...,
    dim: int = ...,
    block_size: Optional[str] = ...,
    quant_min: Optional[int] = ...,
    quant_max: Optional[int] = ...,
    eps: Optional[float] = ...,
    scale_dtype: Optional[Literal["float32", "float16", "bfloat16"]] = ...,
    zero_point_dtype: Optional[Literal["int8", "uint8", "int16", "int32", "float32", "float16", "bfloat16"]] = ...,
    preserve_zero: bool = ...,
    zero_point_domain: Literal["INT", "FLOAT", "NONE", "None"] = ...,
) -> Document:
    """torchao 0.18.0 (per tensor): returns the scale and zero point it was built with; the data is ignored

    Parameters (the framework's keywords and defaults):

    - ``scale``: the fixed scale (one value; 0.0 or absent: 1.0) (numbers, or a tensor file); default ``None``.
    - ``zero_point``: the fixed zero point (one integer; 0 or absent: a float32 0) (numbers, or a tensor file); default ``None``.
    - ``mapping_type``: SYMMETRIC, SYMMETRIC_NO_CLIPPING_ERR or ASYMMETRIC; default ``"SYMMETRIC"``.
    - ``target_dtype``: quantized dtype (sets the default range: int8 −128..127, uint4 0..15, float8 ±448, …); default ``"int8"``.
    - ``granularity``: PerTensor, PerAxis(axis), PerGroup(group_size), PerRow(dim), PerToken or PerBlock(block_size); default ``"PerTensor"``.
    - ``axis``: PerAxis: the axis kept (one qparam per index along it) (-8..=7); default ``0``.
    - ``group_size``: PerGroup: elements per group along the last dim (1..=65536); default ``128``.
    - ``dim``: PerRow: the dim reduced (−1: one qparam per row) (-8..=7); default ``-1``.
    - ``block_size``: PerBlock: block shape "AxB" (left-padded with 1s); default ``None``.
    - ``quant_min``: lower end of the range (default from target_dtype) (-2147483648..=2147483647); default ``None``.
    - ``quant_max``: upper end of the range (default from target_dtype) (-2147483648..=2147483647); default ``None``.
    - ``eps``: smallest scale (a clamp; default finfo(float32).smallest_normal) (0..=3.4028234663852886e38); default ``None``.
    - ``scale_dtype``: dtype the scale is cast to (default float32); default ``None``.
    - ``zero_point_dtype``: dtype of the zero point (default: float32 when symmetric, int32 when asymmetric); default ``None``.
    - ``preserve_zero``: deprecated: False only warns; default ``True``.
    - ``zero_point_domain``: INT (integer zero point), FLOAT (tinygemm offset, deprecated) or NONE (no zero point); default ``"INT"``.
    """

@overload
def observe(
    data: Batches,
    observer: str,
    params: Optional[Mapping[str, Any]] = None,
    *,
    attributes: Optional[Mapping[str, Any]] = None,
    nonfinite: Literal["exclude", "strict"] = "exclude",
    split_axis: Optional[int] = None,
    explain: bool = False,
    **kwargs: Any,
) -> Document:
    """Run an observer over calibration batches (``quantscope observe --json``): ``scale``,
    ``zero_point``, ``min_val``, ``max_val``, ``metrics``, ``nonfinite``, … Parameters are
    keywords or ``params``, with the framework's own names and spellings (nested forms such as
    ONNX Runtime's ``extra_options`` included); ``attributes`` are assigned after construction;
    ``nonfinite="strict"`` refuses NaN/±Inf; ``split_axis`` splits each tensor into batches;
    ``explain=True`` adds ``derivation``, the steps and numbers by which the observer reached its
    range and scale (``observe --explain --json``).
    """

@overload
def quantize(
    data: Data,
    codec: Literal["int"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    bits: int = ...,
    signed: bool = ...,
    granularity: Literal["per_tensor", "per_channel", "per_group"] = ...,
    axis: int = ...,
    group_size: int = ...,
    group_axis: int = ...,
) -> Document:
    """quantscope min–max scales with Quark's formulas: integers with min-max scales (Quark's formula), half-to-even rounding

    Parameters (the framework's keywords and defaults):

    - ``bits``: bit width (2..=16); default ``8``.
    - ``signed``: signed symmetric (true) or unsigned affine (false); default ``True``.
    - ``granularity``: how scales are shared; default ``"per_tensor"``.
    - ``axis``: channel axis (per_channel) (-8..=7); default ``0``.
    - ``group_size``: elements per group (per_group) (1..=4096); default ``32``.
    - ``group_axis``: axis along which groups run (per_group) (-8..=7); default ``-1``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["half"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    dtype: Literal["float16", "bfloat16"] = ...,
) -> Document:
    """quantscope min–max scales with Quark's formulas: float16 / bfloat16 cast, round to nearest even

    Parameters (the framework's keywords and defaults):

    - ``dtype``: half type; default ``"float16"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["minifloat"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    element: Literal["fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1"] = ...,
    granularity: Literal["per_tensor", "per_channel"] = ...,
    axis: int = ...,
) -> Document:
    """quantscope min–max scales with Quark's formulas: fp8/fp6/fp4 elements with a float32 amax scale

    Parameters (the framework's keywords and defaults):

    - ``element``: element format; default ``"fp8_e4m3"``.
    - ``granularity``: how scales are shared; default ``"per_tensor"``.
    - ``axis``: channel axis (per_channel) (-8..=7); default ``0``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["mx"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    element: Literal["fp8_e4m3", "fp8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4_e2m1", "int8"] = ...,
    block_size: int = ...,
    axis: int = ...,
    scale_rounding: Literal["even", "floor", "ceil"] = ...,
) -> Document:
    """quantscope min–max scales with Quark's formulas: OCP MX: blocks sharing an E8M0 scale

    Parameters (the framework's keywords and defaults):

    - ``element``: element type; default ``"fp4_e2m1"``.
    - ``block_size``: elements per shared scale (2..=1024); default ``32``.
    - ``axis``: axis along which blocks run (-8..=7); default ``-1``.
    - ``scale_rounding``: E8M0 scale rounding; default ``"even"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["bfp"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    mantissa_bits: int = ...,
    block_size: int = ...,
    axis: int = ...,
) -> Document:
    """quantscope min–max scales with Quark's formulas: block floating point: shared 8-bit exponent, signed mantissas, block adjustment

    Parameters (the framework's keywords and defaults):

    - ``mantissa_bits``: mantissa bits, sign included (2..=16); default ``8``.
    - ``block_size``: elements per shared exponent (2..=1024); default ``8``.
    - ``axis``: axis along which blocks run (-8..=7); default ``-1``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["bnb.nf4"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    quant_type: Literal["nf4"] = ...,
    blocksize: int = ...,
    compress_statistics: bool = ...,
    quant_storage: Literal["uint8", "int8", "float16", "bfloat16", "float32"] = ...,
    dtype: Literal["float32", "bfloat16", "float16"] = ...,
) -> Document:
    """bitsandbytes 0.50.2 (CPU): bitsandbytes NF4: 4-bit normal-float code book, float32 absmax per block

    Parameters (the framework's keywords and defaults):

    - ``quant_type``: 4-bit data type; default ``"nf4"``.
    - ``blocksize``: values per absmax: 32, 64, …, 4096 (powers of two) (32..=4096); default ``64``.
    - ``compress_statistics``: double quantization: the absmax values themselves in 8 bits (QLoRA's DQ); default ``False``.
    - ``quant_storage``: dtype the packed bytes are stored as (a reinterpretation: values unchanged); default ``"uint8"``.
    - ``dtype``: dtype `dequantize_4bit` returns (`QuantState.dtype`, the quantized weights' dtype): the float32 product rounded once to it; default ``"float32"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["bnb.fp4"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    quant_type: Literal["fp4"] = ...,
    blocksize: int = ...,
    compress_statistics: bool = ...,
    quant_storage: Literal["uint8", "int8", "float16", "bfloat16", "float32"] = ...,
    dtype: Literal["float32", "bfloat16", "float16"] = ...,
) -> Document:
    """bitsandbytes 0.50.2 (CPU): bitsandbytes FP4: 4-bit float (bias 2) code book, float32 absmax per block

    Parameters (the framework's keywords and defaults):

    - ``quant_type``: 4-bit data type; default ``"fp4"``.
    - ``blocksize``: values per absmax: 32, 64, …, 4096 (powers of two) (32..=4096); default ``64``.
    - ``compress_statistics``: double quantization: the absmax values themselves in 8 bits (QLoRA's DQ); default ``False``.
    - ``quant_storage``: dtype the packed bytes are stored as (a reinterpretation: values unchanged); default ``"uint8"``.
    - ``dtype``: dtype `dequantize_4bit` returns (`QuantState.dtype`, the quantized weights' dtype): the float32 product rounded once to it; default ``"float32"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["bnb.blockwise8"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    blocksize: int = ...,
    nested: bool = ...,
    code: Literal["dynamic"] = ...,
) -> Document:
    """bitsandbytes 0.50.2 (CPU): bitsandbytes 8-bit dynamic blockwise (the 8-bit optimizers' and LLM.int8 state format)

    Parameters (the framework's keywords and defaults):

    - ``blocksize``: values per absmax (1..=65536); default ``4096``.
    - ``nested``: double-quantize the absmax values (blocks of the same size); default ``False``.
    - ``code``: the code book; default ``"dynamic"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["bnb.int8"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    weight_format: Literal["row"] = ...,
) -> Document:
    """bitsandbytes 0.50.2 (CPU): bitsandbytes LLM.int8 weights: int8 codes per row with a float32 absmax (SCB) per row

    Parameters (the framework's keywords and defaults):

    - ``weight_format``: how the int8 weights are laid out: by rows (`weight_format` 0, the only one stored); default ``"row"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["gptq.int"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    bits: int = ...,
    group_size: int = ...,
    desc_act: bool = ...,
    sym: bool = ...,
    checkpoint_format: Literal["gptq", "gptq_v2"] = ...,
    dtype: Literal["float32", "bfloat16", "float16"] = ...,
) -> Document:
    """GPTQModel 7.7.0 (TorchLinear, CPU): GPTQ packed integers: int32 words of codes, zeros and float16 scales per group, act-order g_idx

    Parameters (the framework's keywords and defaults):

    - ``bits``: bits per code: 2, 4 or 8 (3-bit packs across words and is not read) (2..=8); default ``4``.
    - ``group_size``: input columns per group (−1: one group over all columns) (-1..=65536); default ``128``.
    - ``desc_act``: act-order: g_idx orders the groups (decoded from g_idx; refused by encode); default ``False``.
    - ``sym``: symmetric (zero at 2^(bits−1)) or asymmetric min–max; default ``True``.
    - ``checkpoint_format``: gptq (v1: zeros stored minus one) or gptq_v2 (zeros as they are); default ``"gptq"``.
    - ``dtype``: dtype of the stored scales, and of the dequantized values; default ``"float16"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["awq.gemm"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    bits: int = ...,
    group_size: int = ...,
    zero_point: bool = ...,
    dtype: Literal["float32", "bfloat16", "float16"] = ...,
) -> Document:
    """GPTQModel 7.7.0 (AwqTorchLinear, dequantize_gemm): AWQ GEMM: 4-bit codes interleaved eight per int32 along the output dim, zeros and float16 scales per group

    Parameters (the framework's keywords and defaults):

    - ``bits``: bits per code (the GEMM layout's interleave is 4-bit) (4..=4); default ``4``.
    - ``group_size``: input columns per group (−1: one group over all columns) (-1..=65536); default ``128``.
    - ``zero_point``: asymmetric min–max with a zero point (true), or symmetric; default ``True``.
    - ``dtype``: dtype of the stored scales, and of the dequantized values; default ``"float16"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.Q4_0"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp Q4_0: blocks of 32, fp16 scale, 4-bit codes (4.5 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.Q4_1"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp Q4_1: blocks of 32, fp16 scale and min, 4-bit codes (5 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.Q5_0"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp Q5_0: blocks of 32, fp16 scale, 5-bit codes (5.5 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.Q5_1"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp Q5_1: blocks of 32, fp16 scale and min, 5-bit codes (6 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.Q8_0"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp Q8_0: blocks of 32, fp16 scale, int8 codes (8.5 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.Q2_K"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp Q2_K: super-blocks of 256, 4-bit sub-scales and mins, 2-bit codes (2.625 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.Q3_K"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp Q3_K: super-blocks of 256, 6-bit sub-scales, 3-bit codes (3.4375 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.Q4_K"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp Q4_K: super-blocks of 256, 6-bit sub-scales and mins, 4-bit codes (4.5 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.Q5_K"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp Q5_K: super-blocks of 256, 6-bit sub-scales and mins, 5-bit codes (5.5 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.Q6_K"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp Q6_K: super-blocks of 256, int8 sub-scales, 6-bit codes (6.5625 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.MXFP4"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: ggml MXFP4: blocks of 32, E8M0 scale, E2M1 codes (4.25 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.IQ4_NL"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp IQ4_NL: blocks of 32, fp16 scale, non-linear 4-bit table (4.5 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.IQ4_XS"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp IQ4_XS: super-blocks of 256, 6-bit sub-scales, non-linear 4-bit table (4.25 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.IQ2_XXS"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp IQ2_XXS: super-blocks of 256, 8 values per 8-bit grid index, 4-bit scales per 32 (2.0625 bits; needs an imatrix)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.IQ2_XS"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp IQ2_XS: super-blocks of 256, 8 values per 9-bit grid index, 4-bit scales per 16 (2.3125 bits; needs an imatrix)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.IQ2_S"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp IQ2_S: super-blocks of 256, 8 values per 10-bit grid index, 4-bit scales per 16 (2.5625 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.IQ3_XXS"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp IQ3_XXS: super-blocks of 256, 4 values per 8-bit grid index, 4-bit scales per 32 (3.0625 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.IQ3_S"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp IQ3_S: super-blocks of 256, 4 values per 9-bit grid index, 4-bit scales per 32 (3.4375 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.IQ1_S"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp IQ1_S: super-blocks of 256, 8 ternary values per 11-bit grid index, 3-bit scales per 32 (1.5625 bits; needs an imatrix)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.IQ1_M"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp IQ1_M: super-blocks of 256, 8 ternary values per 11-bit grid index, 3-bit scales per 16 (1.75 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.TQ1_0"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp TQ1_0: super-blocks of 256, fp16 scale, ternary codes five per byte (1.6875 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.TQ2_0"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: llama.cpp TQ2_0: super-blocks of 256, fp16 scale, ternary 2-bit codes (2.0625 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.NVFP4"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: ggml NVFP4: blocks of 64, UE4M3 scales per 16, E2M1 codes (4.5 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ggml.Q1_0"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    imatrix: Optional[Vector] = ...,
) -> Document:
    """ggml d99724f2 = llama.cpp d3cf1f14: ggml Q1_0: blocks of 128, fp16 scale, sign bits (1.125 bits)

    Parameters (the framework's keywords and defaults):

    - ``imatrix``: importance of each column (llama-imatrix), length = the last axis; none: the reference quantizer (types without an imatrix path accept and ignore it, as ggml does) (numbers, or a tensor file); default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ct.pack_quantized"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    num_bits: int = ...,
    strategy: Literal["tensor", "channel", "group", "block"] = ...,
    group_size: int = ...,
    symmetric: bool = ...,
    dtype: Literal["bfloat16", "float16", "float32"] = ...,
) -> Document:
    """compressed-tensors 0.19.0: compressed-tensors pack-quantized: 1..8-bit integers bit-packed in int32 rows, scales per tensor/channel/group, zero points packed along the rows

    Parameters (the framework's keywords and defaults):

    - ``num_bits``: bits per integer (`num_bits`) (1..=8); default ``4``.
    - ``strategy``: how scales are shared (`strategy`: tensor, channel or group); default ``"group"``.
    - ``group_size``: elements per group along the input dimension (`group_size`) (1..=1048576); default ``128``.
    - ``symmetric``: symmetric (no zero point) or asymmetric (`symmetric`); default ``True``.
    - ``dtype``: the weights' and scales' dtype, to which the dequantized values are rounded; default ``"bfloat16"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ct.int_quantized"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    num_bits: int = ...,
    strategy: Literal["tensor", "channel", "group", "block"] = ...,
    group_size: int = ...,
    block_rows: int = ...,
    block_cols: int = ...,
    symmetric: bool = ...,
    dtype: Literal["bfloat16", "float16", "float32"] = ...,
) -> Document:
    """compressed-tensors 0.19.0: compressed-tensors int-quantized / naive-quantized: int8 weights with scales (and zero points)

    Parameters (the framework's keywords and defaults):

    - ``num_bits``: bits per integer (`num_bits`; stored as int8) (2..=8); default ``8``.
    - ``strategy``: how scales are shared (`strategy`); default ``"channel"``.
    - ``group_size``: elements per group along the input dimension (group strategy) (1..=1048576); default ``128``.
    - ``block_rows``: block rows (`block_structure[0]`, block strategy) (1..=1048576); default ``128``.
    - ``block_cols``: block columns (`block_structure[1]`, block strategy) (1..=1048576); default ``128``.
    - ``symmetric``: symmetric (no zero point) or asymmetric (`symmetric`); default ``True``.
    - ``dtype``: the weights' and scales' dtype, to which the dequantized values are rounded; default ``"bfloat16"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ct.float_quantized"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    strategy: Literal["tensor", "channel", "group", "block"] = ...,
    group_size: int = ...,
    block_rows: int = ...,
    block_cols: int = ...,
    dtype: Literal["bfloat16", "float16", "float32"] = ...,
) -> Document:
    """compressed-tensors 0.19.0: compressed-tensors float-quantized: FP8 E4M3 weights with scales per tensor, channel, group or block

    Parameters (the framework's keywords and defaults):

    - ``strategy``: how scales are shared (`strategy`); default ``"channel"``.
    - ``group_size``: elements per group along the input dimension (group strategy) (1..=1048576); default ``128``.
    - ``block_rows``: block rows (`block_structure[0]`, block strategy) (1..=1048576); default ``128``.
    - ``block_cols``: block columns (`block_structure[1]`, block strategy) (1..=1048576); default ``128``.
    - ``dtype``: the weights' and scales' dtype, to which the dequantized values are rounded; default ``"bfloat16"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ct.nvfp4"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    group_size: int = ...,
) -> Document:
    """compressed-tensors 0.19.0: compressed-tensors nvfp4-pack-quantized: E2M1 pairs per byte, FP8 scale per 16, divided by a float32 global scale

    Parameters (the framework's keywords and defaults):

    - ``group_size``: elements per FP8 scale along the input dimension (`group_size`) (2..=1048576); default ``16``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["ct.mxfp4"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    group_size: int = ...,
) -> Document:
    """compressed-tensors 0.19.0: compressed-tensors mxfp4-pack-quantized: E2M1 pairs per byte, E8M0 scale per 32

    Parameters (the framework's keywords and defaults):

    - ``group_size``: elements per E8M0 scale along the input dimension (`group_size`) (2..=1048576); default ``32``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["deepseek.fp8_block"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    block_rows: int = ...,
    block_cols: int = ...,
    dtype: Literal["bfloat16", "float16", "float32"] = ...,
) -> Document:
    """DeepSeek-V3 (inference/kernel.py) / transformers transformers 5.17.0 finegrained_fp8: DeepSeek-V3 FP8: E4M3 weights with a float32 multiplier (weight_scale_inv) per 128×128 block

    Parameters (the framework's keywords and defaults):

    - ``block_rows``: block rows (`weight_block_size[0]`) (1..=1048576); default ``128``.
    - ``block_cols``: block columns (`weight_block_size[1]`) (1..=1048576); default ``128``.
    - ``dtype``: dtype the dequantized values are rounded to; default ``"bfloat16"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["gptoss.mxfp4"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    dtype: Literal["bfloat16", "float16", "float32"] = ...,
) -> Document:
    """transformers / triton_kernels transformers 5.17.0 integrations/mxfp4.py; triton_kernels mxfp.py @ 018a674f: gpt-oss MXFP4: *_blocks (E2M1 pairs, 16 bytes per 32 values) and *_scales (E8M0)

    Parameters (the framework's keywords and defaults):

    - ``dtype``: dtype the dequantized values are stored in (`dtype` of convert_moe_packed_tensors); default ``"bfloat16"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["modelopt.nvfp4"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    block_size: int = ...,
    dtype: Literal["bfloat16", "float16", "float32"] = ...,
) -> Document:
    """nvidia-modelopt 0.47.0: ModelOpt NVFP4: E2M1 pairs per byte, FP8 scale per 16, times a float32 weight_scale_2

    Decode-only: ModelOpt's block-scale rounding is not reproduced yet; decoding is exact.

    Parameters (the framework's keywords and defaults):

    - ``block_size``: elements per FP8 block scale (`block_sizes[-1]`, `group_size`) (2..=1048576); default ``16``.
    - ``dtype``: dtype the dequantized values are rounded to; default ``"bfloat16"``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["onnx.dequantize_linear"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    dtype: Literal["int8", "uint8", "int16", "uint16", "int32", "int4", "uint4"] = ...,
    granularity: Literal["per_tensor", "per_axis", "blocked"] = ...,
    axis: int = ...,
    block_size: int = ...,
    symmetric: Optional[bool] = ...,
) -> Document:
    """ONNX Runtime 1.31.1: ONNX DequantizeLinear: integer codes with float32 scales and zero points, per tensor, per axis or blocked (int4..int32)

    Parameters (the framework's keywords and defaults):

    - ``dtype``: stored integer type of x; default ``"int8"``.
    - ``granularity``: how scales are shared; default ``"per_tensor"``.
    - ``axis``: the axis attribute (per_axis, blocked; default 1, negative counts from the end) (-64..=63); default ``1``.
    - ``block_size``: the block_size attribute (blocked) (1..=1048576); default ``32``.
    - ``symmetric``: encoding: symmetric ranges (WeightSymmetric); unset: per_axis and signed types symmetric, unsigned types not; default ``None``.
    """

@overload
def quantize(
    data: Data,
    codec: Literal["onnx.matmul_nbits"],
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    bits: int = ...,
    block_size: int = ...,
    symmetric: bool = ...,
) -> Document:
    """ONNX Runtime 1.31.1: ONNX Runtime MatMulNBits (com.microsoft): blockwise 2..8-bit weights along K with float32 scales

    Parameters (the framework's keywords and defaults):

    - ``bits``: bits per code (2..=8); default ``4``.
    - ``block_size``: block_size attribute: codes per scale along K (1..=1048576); default ``32``.
    - ``symmetric``: encoding: symmetric blocks without stored zero points (is_symmetric); default ``False``.
    """

@overload
def quantize(
    data: Data,
    codec: str,
    params: Optional[Mapping[str, Any]] = None,
    *,
    explain: bool = False,
    block: Optional[int] = None,
    **kwargs: Any,
) -> Document:
    """Quantize–dequantize one tensor with a format or quantizer (``quantscope quantize
    --json``): ``values`` (the dequantized float32 array, the input's shape), ``format``,
    ``bits_per_value``, ``mse``, ``max_abs_err``, ``sqnr_db``, ``clipped_fraction``.

    ``explain=True`` adds ``derivation``: how block ``block`` (default: the one holding the
    largest magnitude) was stored, step by step with the quantizer's own search tables
    (``quantscope quantize --explain --json``; ggml's types and MX).
    """

def adaround(
    w: Data,
    x: Data,
    params: Optional[Mapping[str, Any]] = None,
    *,
    bits: int = ...,
    scheme: Literal["per_channel_symmetric", "per_tensor_symmetric", "per_channel_affine", "per_tensor_affine"] = ...,
    iterations: int = ...,
    learning_rate: float = ...,
    reg_param: float = ...,
    warm_start: float = ...,
    beta_start: float = ...,
    beta_end: float = ...,
    batch_rows: int = ...,
    seed: int = ...,
) -> Document:
    """AdaRound on one linear layer (weight ``w`` ``[out, in]``, its inputs ``x``
    ``[n, in]``) against round-to-nearest on the same scales (``quantscope adaround --json``),
    with the dequantized ``weights_adaround`` and ``weights_nearest``.

    Parameters (the framework's keywords and defaults):

    - ``bits``: weight bit width (signed grid) (2..=16); default ``4``.
    - ``scheme``: how the weight's min-max scales are shared; default ``"per_channel_symmetric"``.
    - ``iterations``: Adam steps (1..=100000); default ``1000``.
    - ``learning_rate``: Adam learning rate (1e-4..=10); default ``0.1``.
    - ``reg_param``: λ, weight of the rounding regulariser (0..=1); default ``0.01``.
    - ``warm_start``: share of iterations before the regulariser starts (0..=0.95); default ``0.2``.
    - ``beta_start``: β after the warm start (0.5..=100); default ``20.0``.
    - ``beta_end``: β at the last iteration (0.5..=100); default ``2.0``.
    - ``batch_rows``: rows of X per step (1..=65536); default ``64``.
    - ``seed``: seed of the mini-batch sampling (0..=9007199254740991); default ``1705472343``.
    """
