//! The type stubs of the Python module `quantscope._native` (`python/src/quantscope/_native.pyi`),
//! generated from the registries' parameter declarations — the [`ParamSpec`]s that the CLI's
//! `list`, the page's controls and the TypeScript types (`ParamSpec`/`ParamKind`, through tsify)
//! are made from: one `observe` overload per observer, one `quantize` overload per format, and
//! `adaround`'s, each parameter typed by its kind and documented with its doc line, range and
//! default. `tests/python_stub.rs` checks the committed file is this text
//! (`QUANTSCOPE_WRITE_STUBS=1 cargo test --test python_stub` rewrites it).

use crate::params::{ParamKind, ParamSpec};
use serde_json::Value;
use std::fmt::Write as _;

/// Python's reserved words: a parameter so named can only be passed in `params={...}`.
const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Keyword arguments of the functions themselves (an observer parameter of the same name would
/// be shadowed: it goes in `params={...}`).
const OWN: &[&str] = &[
    "data",
    "observer",
    "codec",
    "params",
    "attributes",
    "nonfinite",
    "split_axis",
    "explain",
    "block",
    "w",
    "x",
];

const HEADER: &str = r#"# Generated from the registries' parameter declarations by src/stubs.rs: do not edit.
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
"#;

/// A parameter's Python type.
fn py_type(p: &ParamSpec) -> String {
    let base = match &p.kind {
        ParamKind::Int { .. } => "int".to_string(),
        ParamKind::Float { .. } => "float".to_string(),
        ParamKind::Bool => "bool".to_string(),
        ParamKind::Text => "str".to_string(),
        ParamKind::Vector => "Vector".to_string(),
        ParamKind::Choice { options } => format!(
            "Literal[{}]",
            options
                .iter()
                .map(|o| format!("{o:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ParamKind::Bits { formats, .. } if formats.is_empty() => "int".to_string(),
        ParamKind::Bits { .. } => "Union[int, Tuple[int, int]]".to_string(),
    };
    if p.default.is_null() {
        format!("Optional[{base}]")
    } else {
        base
    }
}

/// A declared default as Python writes it.
fn py_value(v: &Value) -> String {
    match v {
        Value::Null => "None".to_string(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => format!(
            "({})",
            items.iter().map(py_value).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

/// A bound of a float range: plain, or in exponent form when very large or small.
fn bound(x: f64) -> String {
    if x != 0.0 && !(1e-3..1e6).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// The range a kind admits, for the doc line.
fn range(kind: &ParamKind) -> String {
    match kind {
        ParamKind::Int { min, max } => format!("{min}..={max}"),
        ParamKind::Float { min, max, .. } => format!("{}..={}", bound(*min), bound(*max)),
        ParamKind::Bits { min, max, formats } => {
            let floats: Vec<String> = formats.iter().map(|[e, m]| format!("({e}, {m})")).collect();
            if floats.is_empty() {
                format!("{min}..={max}")
            } else {
                format!("{min}..={max} or {}", floats.join(", "))
            }
        }
        ParamKind::Vector => "numbers, or a tensor file".to_string(),
        _ => String::new(),
    }
}

/// The parameters that can be keyword arguments, as signature lines.
fn keyword_lines(params: &[ParamSpec], out: &mut String) {
    for p in params.iter().filter(|p| passable(p.name)) {
        let _ = writeln!(out, "    {}: {} = ...,", p.name, py_type(p));
    }
}

fn passable(name: &str) -> bool {
    !KEYWORDS.contains(&name) && !OWN.contains(&name)
}

/// The docstring lines documenting `params`.
fn param_docs(params: &[ParamSpec], out: &mut String) {
    if params.is_empty() {
        let _ = writeln!(out, "\n    No parameters.");
        return;
    }
    let _ = writeln!(
        out,
        "\n    Parameters (the framework's keywords and defaults):\n"
    );
    for p in params {
        let range = range(&p.kind);
        let mut line = format!("    - ``{}``: {}", p.name, p.doc);
        if !range.is_empty() {
            let _ = write!(line, " ({range})");
        }
        let _ = write!(line, "; default ``{}``", py_value(&p.default));
        if p.attribute {
            line.push_str("; an attribute set after construction");
        }
        if !passable(p.name) {
            line.push_str("; pass it in ``params={...}``");
        }
        let _ = writeln!(out, "{line}.");
    }
}

/// Text as the inside of a docstring line (no closing quotes, no backslashes).
fn doc_text(s: &str) -> String {
    let text = s.replace('\\', "\\\\").replace("\"\"\"", "'''");
    if text.ends_with('"') {
        format!("{text} ")
    } else {
        text
    }
}

/// The stub file's text.
pub fn python_stub() -> String {
    let mut out = String::from(HEADER);
    for spec in crate::registry::observers() {
        let _ = writeln!(
            out,
            "\n@overload\ndef observe(\n    data: Batches,\n    observer: Literal[{:?}],\n    params: Optional[Mapping[str, Any]] = None,\n    *,\n    attributes: Optional[Mapping[str, Any]] = None,\n    nonfinite: Literal[\"exclude\", \"strict\"] = \"exclude\",\n    split_axis: Optional[int] = None,\n    explain: bool = False,",
            spec.id
        );
        keyword_lines(&spec.params, &mut out);
        let _ = writeln!(
            out,
            ") -> Document:\n    \"\"\"{} {} ({}): {}",
            spec.family.framework(),
            spec.version,
            spec.granularity.label(),
            doc_text(spec.summary)
        );
        if let Some(fixed) = spec.corrects {
            let _ = writeln!(out, "\n    Corrects a bug of ``{fixed}``.");
        }
        param_docs(&spec.params, &mut out);
        let _ = writeln!(out, "    \"\"\"");
    }
    out.push_str(
        r#"
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
"#,
    );
    for entry in crate::codec::codecs() {
        let _ = writeln!(
            out,
            "\n@overload\ndef quantize(\n    data: Data,\n    codec: Literal[{:?}],\n    params: Optional[Mapping[str, Any]] = None,\n    *,\n    explain: bool = False,\n    block: Optional[int] = None,",
            entry.id
        );
        keyword_lines(&entry.params, &mut out);
        let _ = writeln!(
            out,
            ") -> Document:\n    \"\"\"{} {}: {}",
            entry.library,
            entry.version,
            doc_text(entry.summary)
        );
        if let Some(why) = entry.decode_only {
            let _ = writeln!(out, "\n    Decode-only: {}.", doc_text(why));
        }
        param_docs(&entry.params, &mut out);
        let _ = writeln!(out, "    \"\"\"");
    }
    out.push_str(
        r#"
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
"#,
    );
    let adaround = crate::quantizers::adaround::params();
    out.push_str(
        "\ndef adaround(\n    w: Data,\n    x: Data,\n    params: Optional[Mapping[str, Any]] = None,\n    *,\n",
    );
    keyword_lines(&adaround, &mut out);
    out.push_str(
        ") -> Document:\n    \"\"\"AdaRound on one linear layer (weight ``w`` ``[out, in]``, its inputs ``x``\n    ``[n, in]``) against round-to-nearest on the same scales (``quantscope adaround --json``),\n    with the dequantized ``weights_adaround`` and ``weights_nearest``.\n",
    );
    param_docs(&adaround, &mut out);
    out.push_str("    \"\"\"\n");
    out
}
