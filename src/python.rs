//! The Python boundary (the only place with PyO3): the native module `quantscope._native`,
//! built into the Python package's wheel by maturin with the `python` feature.
//!
//! Every function converts its arguments, runs what the CLI runs ([`crate::commands`], the
//! engine's one driver) with the GIL released, and returns the document the CLI prints with
//! `--json`, as Python objects made by `pythonize` from the same serde values; a list of more than
//! [`LONG`] numbers comes as a numpy array instead (float64, int64 when every number is an
//! integer), and tensors as float32 numpy arrays of their shape.
//!
//! Data (`observe`, `formats`, `quantize`, `adaround`): a numpy array — float32 in C order is
//! borrowed for the call without a copy ([`crate::tensor::mapped::with_lent`], through this
//! module's global allocator), any other real dtype is decoded exactly as the `.npy` reader
//! decodes it —, anything with `__array__` (`numpy.asarray`: a CPU torch tensor, detached first
//! when it needs grad) or `__dlpack__` (`numpy.from_dlpack`), a path as the CLI takes it
//! (`file.npz:member`, `file.safetensors:tensor`), or (for `observe`) a list of those, the
//! calibration batches in order.
//!
//! Errors are Python exceptions carrying the engine's message: `OSError` for files
//! (`FileNotFoundError` when a path does not exist), `ValueError` for everything else (bad
//! parameters, data, or a framework's refusal); each carries the engine's `kind` and, where
//! they apply, the framework's `exception` and `stage` and the parameter at fault (`param`).
//! Nothing here panics on any input.

use crate::commands::{self, inputs};
use crate::engine::{ErrorInfo, NonFinitePolicy, Report};
use crate::error::{Error, Result};
use crate::model::{methods, Method};
use crate::params::Params;
use crate::portion::Portion;
use crate::quantizers::adaround::{optimise, AdaRoundConfig};
use crate::quantizers::apply::quantize as quantize_tensor;
use crate::tensor::mapped::{with_lent, Lent, MapAwareAllocator};
use crate::tensor::{DType, Tensor};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArrayDyn, PyUntypedArray};
use numpy::{PyUntypedArrayMethods, ToPyArray};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::{Number, Value};
use std::path::PathBuf;

/// The allocator that can lend a numpy array's buffer to the engine as a tensor's values (and
/// map `.npy`/`.safetensors` float32 data straight from files), as the CLI's is.
#[global_allocator]
static ALLOCATOR: MapAwareAllocator = MapAwareAllocator;

/// Lists of more numbers than this come to Python as numpy arrays (the page packs the same
/// per-slice arrays as Float64Array above this length).
pub const LONG: usize = 1024;

// ---------------------------------------------------------------------------------------------
// Errors

/// An engine error as a Python exception with the engine's message (see the module doc).
fn py_err(py: Python<'_>, e: &Error) -> PyErr {
    from_info(py, &ErrorInfo::from(e))
}

fn from_info(py: Python<'_>, info: &ErrorInfo) -> PyErr {
    let err = match info.kind.as_str() {
        "load" => PyOSError::new_err(info.message.clone()),
        _ => PyValueError::new_err(info.message.clone()),
    };
    let value = err.value(py);
    let attributes = [
        ("kind", Some(&info.kind)),
        ("exception", info.exception.as_ref()),
        ("stage", info.stage.as_ref()),
        ("param", info.param.as_ref()),
    ];
    for (name, v) in attributes {
        // An exception instance takes attributes; failing to set one only loses detail.
        let _ = value.setattr(name, v.map(String::as_str));
    }
    err
}

/// `value` as a `quantscope._tables.Table` (rows with `to_pandas()`), or, with `table`, as a
/// `TableDocument` whose rows are `value[table]`.
fn tabled<'py>(
    py: Python<'py>,
    value: Bound<'py, PyAny>,
    table: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let tables = py.import("quantscope._tables")?;
    match table {
        Some(key) => tables.getattr("TableDocument")?.call1((value, key)),
        None => tables.getattr("Table")?.call1((value,)),
    }
}

/// Run `f` without the GIL and turn its error into a Python exception.
fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T> + Send) -> PyResult<T> {
    py.detach(f).map_err(|e| py_err(py, &e))
}

// ---------------------------------------------------------------------------------------------
// Results

/// A serde value as Python objects (`pythonize`), with every list of more than [`LONG`]
/// numbers as a numpy array.
fn to_py<'py>(py: Python<'py>, mut value: Value) -> PyResult<Bound<'py, PyAny>> {
    let mut long = Vec::new();
    take_long(&mut value, &mut Vec::new(), &mut long);
    let out = pythonize::pythonize(py, &value)
        .map_err(|e| PyValueError::new_err(format!("could not convert a result: {e}")))?;
    for (path, numbers) in long {
        let array: Bound<'py, PyAny> = if numbers.iter().all(|n| n.is_i64()) {
            let ints: Vec<i64> = numbers.iter().filter_map(|n| n.as_i64()).collect();
            PyArray1::from_vec(py, ints).into_any()
        } else {
            let floats: Vec<f64> = numbers
                .iter()
                .map(|n| n.as_f64().unwrap_or(f64::NAN))
                .collect();
            PyArray1::from_vec(py, floats).into_any()
        };
        put(&out, &path, array)?;
    }
    Ok(out)
}

/// One step into a value: a key of an object or an index of an array.
#[derive(Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// Take every array of more than [`LONG`] numbers out of `value` (left null), with its path.
fn take_long(value: &mut Value, path: &mut Vec<Step>, out: &mut Vec<(Vec<Step>, Vec<Number>)>) {
    match value {
        Value::Array(items) if items.len() > LONG && items.iter().all(Value::is_number) => {
            let numbers = std::mem::take(items)
                .into_iter()
                .filter_map(|v| match v {
                    Value::Number(n) => Some(n),
                    _ => None,
                })
                .collect();
            out.push((path.clone(), numbers));
            *value = Value::Null;
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.push(Step::Index(i));
                take_long(item, path, out);
                path.pop();
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                path.push(Step::Key(key.clone()));
                take_long(item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Set the element at `path` of the Python object `root` (dicts and lists) to `item`.
fn put<'py>(root: &Bound<'py, PyAny>, path: &[Step], item: Bound<'py, PyAny>) -> PyResult<()> {
    let Some((last, parents)) = path.split_last() else {
        return Ok(());
    };
    let mut at = root.clone();
    for step in parents {
        at = match step {
            Step::Key(k) => at.get_item(k)?,
            Step::Index(i) => at.get_item(i)?,
        };
    }
    match last {
        Step::Key(k) => at.set_item(k, item),
        Step::Index(i) => at.set_item(i, item),
    }
}

/// A tensor as a float32 numpy array of its shape.
fn array<'py>(py: Python<'py>, t: Tensor) -> PyResult<Bound<'py, PyAny>> {
    let shape = t.shape.clone();
    let flat = PyArray1::from_vec(py, t.data);
    Ok(flat.reshape(shape)?.into_any())
}

// ---------------------------------------------------------------------------------------------
// Arguments

/// One batch of data as the engine will see it: borrowed from numpy, or read/decoded.
enum Batch<'py> {
    Borrowed(PyReadonlyArrayDyn<'py, f32>, DType),
    Owned(Tensor),
}

impl Batch<'_> {
    /// What the engine is lent: the numpy buffer itself, or the tensor (moved out).
    fn lent(&mut self) -> PyResult<Lent<'_>> {
        Ok(match self {
            Batch::Borrowed(array, dtype) => Lent::Borrowed {
                values: array
                    .as_slice()
                    .map_err(|e| PyValueError::new_err(e.to_string()))?,
                shape: array.shape().to_vec(),
                dtype: *dtype,
            },
            Batch::Owned(t) => Lent::Owned(std::mem::replace(t, Tensor::from_vec(Vec::new()))),
        })
    }
}

/// A path argument (`str` or `os.PathLike`) as a string, or `None` for anything else.
fn path_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Some(s.extract::<String>()?));
    }
    if obj.hasattr("__fspath__")? {
        let p = obj.call_method0("__fspath__")?;
        if let Ok(s) = p.cast::<PyString>() {
            return Ok(Some(s.extract::<String>()?));
        }
    }
    Ok(None)
}

/// A tensor argument given as a path: read as the CLI reads it (`file.npz:member`);
/// `FileNotFoundError` when the file does not exist.
fn read_path(py: Python<'_>, spec: &str) -> PyResult<Tensor> {
    let (file, _) = crate::tensor::split_spec(spec);
    if !std::path::Path::new(file).exists() {
        return Err(PyFileNotFoundError::new_err(format!(
            "cannot read {file}: no such file"
        )));
    }
    let spec = spec.to_string();
    detached(py, move || inputs::read_tensor(&spec))
}

/// `obj` as a numpy array: itself, `numpy.asarray(obj)` for anything with `__array__` (a torch
/// tensor that needs grad or lives on another device is detached and moved to the CPU first),
/// or `numpy.from_dlpack(obj)`.
fn as_ndarray<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let numpy = py.import("numpy")?;
    let mut obj = obj.clone();
    if obj.hasattr("detach")? && obj.hasattr("cpu")? {
        obj = obj.call_method0("detach")?.call_method0("cpu")?;
    }
    let converted = if obj.hasattr("__array__")? {
        numpy.call_method1("asarray", (obj,))
    } else if obj.hasattr("__dlpack__")? {
        numpy.call_method1("from_dlpack", (obj,))
    } else {
        return Err(PyTypeError::new_err(format!(
            "cannot use a {} as data: pass a numpy array (or anything with __array__ or \
             __dlpack__, such as a torch tensor), a list of them, or a path",
            obj.get_type().name()?
        )));
    };
    let array = converted.map_err(|e| {
        PyValueError::new_err(format!("cannot convert the data to a numpy array: {e}"))
    })?;
    array
        .cast_into::<PyUntypedArray>()
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// One tensor argument (not a list).
fn batch<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Batch<'py>> {
    if let Some(spec) = path_of(obj)? {
        return Ok(Batch::Owned(read_path(py, &spec)?));
    }
    let array = as_ndarray(py, obj)?;
    let descr: String = array.dtype().getattr("str")?.extract()?;
    let (dtype, order) = crate::tensor::npy::interpret_descr(&descr)
        .map_err(|e| PyValueError::new_err(reason(&e)))?;
    if let Some(borrowed) = borrow_f32(&array, dtype) {
        return Ok(borrowed);
    }
    // Any other layout: a C-order copy (borrowed in turn when it is float32); any other dtype:
    // the copy's bytes decoded as the .npy reader decodes them.
    let numpy = py.import("numpy")?;
    let contiguous = numpy
        .call_method1("ascontiguousarray", (&array,))?
        .cast_into::<PyUntypedArray>()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    if let Some(borrowed) = borrow_f32(&contiguous, dtype) {
        return Ok(borrowed);
    }
    let shape = array.shape().to_vec();
    let bytes: PyReadonlyArray1<'_, u8> = contiguous
        .call_method1("reshape", (-1,))?
        .call_method1("view", ("u1",))?
        .extract()?;
    let raw = bytes
        .as_slice()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let data = py.detach(|| crate::tensor::decode::decode(dtype, order, raw));
    let mut t = Tensor::new(shape, data).map_err(|e| py_err(py, &e))?;
    t.dtype = dtype;
    Ok(Batch::Owned(t))
}

/// `array` borrowed as it is, when it is float32 in native byte order, C-contiguous and
/// aligned (and not mutably borrowed by other Rust code).
fn borrow_f32<'py>(array: &Bound<'py, PyUntypedArray>, dtype: DType) -> Option<Batch<'py>> {
    if dtype != DType::F32 || !array.is_c_contiguous() || !array.is_aligned() {
        return None;
    }
    let f32s = array.cast::<numpy::PyArrayDyn<f32>>().ok()?;
    Some(Batch::Borrowed(f32s.try_readonly().ok()?, DType::F32))
}

/// An error's reason without the `cannot read .npy:` a file's reader puts before it.
fn reason(e: &Error) -> String {
    match e {
        Error::Load { reason, .. } => format!("unsupported data: {reason}"),
        other => other.to_string(),
    }
}

/// The calibration batches of `data`: one tensor argument, or a list/tuple of them in order.
fn batches<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Vec<Batch<'py>>> {
    if data.is_instance_of::<PyList>() || data.is_instance_of::<PyTuple>() {
        let items: Vec<Bound<'py, PyAny>> = data.try_iter()?.collect::<PyResult<_>>()?;
        if items.is_empty() {
            return Err(PyValueError::new_err(
                "an empty list has no calibration batch: pass at least one array or path",
            ));
        }
        return items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                if item.is_instance_of::<PyList>() || item.is_instance_of::<PyTuple>() {
                    return Err(PyTypeError::new_err(format!(
                        "batch {i} is a {}: a list of batches holds arrays or paths, not lists \
                         (use numpy.asarray for nested lists of numbers)",
                        item.get_type().name()?
                    )));
                }
                batch(py, item)
            })
            .collect();
    }
    Ok(vec![batch(py, data)?])
}

/// One tensor argument (`formats`, `quantize`, `adaround`).
fn one_batch<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Batch<'py>> {
    if data.is_instance_of::<PyList>() || data.is_instance_of::<PyTuple>() {
        // A nested list of numbers is one tensor.
        return batch(py, &py.import("numpy")?.call_method1("asarray", (data,))?);
    }
    batch(py, data)
}

/// A parameter value as JSON: numpy arrays and anything with `__array__` flattened to a list of
/// numbers (vector parameters such as `importance`), numpy scalars as numbers, the rest as
/// `pythonize` reads it (tuples are lists: `num_bits=(4, 3)`).
fn param_value(py: Python<'_>, name: &str, v: &Bound<'_, PyAny>) -> PyResult<Value> {
    let numpy = py.import("numpy")?;
    let generic = numpy.getattr("generic")?;
    let v = if v.is_instance(&generic)? {
        v.call_method0("item")?
    } else if v.cast::<PyUntypedArray>().is_ok()
        || (v.hasattr("__array__")? && !v.is_instance_of::<PyString>())
    {
        numpy
            .call_method1("asarray", (v, "float64"))?
            .call_method0("ravel")?
            .call_method0("tolist")?
    } else {
        v.clone()
    };
    pythonize::depythonize::<Value>(&v)
        .map_err(|e| py_err(py, &Error::param(name, format!("cannot be read: {e}"))))
}

/// The parameters of a call: `params` (a dict) with `kwargs` over it.
fn params_of(
    py: Python<'_>,
    params: Option<&Bound<'_, PyDict>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Params> {
    let mut out = Params::new();
    for dict in [params, kwargs].into_iter().flatten() {
        for (k, v) in dict.iter() {
            let key: String = k.extract().map_err(|_| {
                PyTypeError::new_err(format!("parameter names are strings, got {k:?}"))
            })?;
            let value = param_value(py, &key, &v)?;
            out.0.insert(key, value);
        }
    }
    Ok(out)
}

/// Paths argument: one path or a list of them.
fn paths_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<PathBuf>> {
    if let Some(p) = path_of(obj)? {
        return Ok(vec![PathBuf::from(p)]);
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut out = Vec::new();
        for item in obj.try_iter()? {
            match path_of(&item?)? {
                Some(p) => out.push(PathBuf::from(p)),
                None => {
                    return Err(PyTypeError::new_err(format!(
                        "{what} is a path or a list of paths"
                    )))
                }
            }
        }
        if out.is_empty() {
            return Err(PyValueError::new_err(format!(
                "{what}: the list of paths is empty"
            )));
        }
        return Ok(out);
    }
    Err(PyTypeError::new_err(format!(
        "{what} is a path or a list of paths, not a {}",
        obj.get_type().name()?
    )))
}

/// `FileNotFoundError` for the first of `paths` that does not exist.
fn exist(paths: &[PathBuf]) -> PyResult<()> {
    match paths.iter().find(|p| !p.exists()) {
        Some(p) => Err(PyFileNotFoundError::new_err(format!(
            "cannot read {}: no such file or folder",
            p.display()
        ))),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// Functions

/// The crate's version.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Every observer of the registry (`quantscope list --json`'s `observers`): id, family,
/// framework version, granularity, summary, parameters with kind, range, default and doc, quirks.
#[pyfunction]
fn observers(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let rows = to_py(
        py,
        serde_json::to_value(crate::registry::observers()).unwrap_or_default(),
    )?;
    tabled(py, rows, None)
}

/// The presets (`quantscope list --json`'s `presets`).
#[pyfunction]
fn presets(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    to_py(
        py,
        serde_json::to_value(crate::registry::presets()).unwrap_or_default(),
    )
}

/// The quantizer registry (`quantscope list --json`'s `quantizers`): `formats` (every codec
/// with its parameters) and `optimisers` (AdaRound).
#[pyfunction]
fn quantizers(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    to_py(
        py,
        serde_json::to_value(crate::quantizers::registry()).unwrap_or_default(),
    )
}

/// Run `observer` over the calibration batches of `data` (`observe --json`; with `explain`,
/// `observe --explain --json`).
#[pyfunction]
#[pyo3(signature = (data, observer, params=None, *, attributes=None, nonfinite="exclude", split_axis=None, explain=false, **kwargs))]
#[allow(clippy::too_many_arguments)]
fn observe<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    observer: &str,
    params: Option<&Bound<'py, PyDict>>,
    attributes: Option<&Bound<'py, PyDict>>,
    nonfinite: &str,
    split_axis: Option<usize>,
    explain: bool,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let params = params_of(py, params, kwargs)?;
    let attributes = attributes
        .map(|a| params_of(py, Some(a), None))
        .transpose()?;
    let policy = match nonfinite {
        "exclude" => NonFinitePolicy::Exclude,
        "strict" => NonFinitePolicy::Strict,
        other => {
            return Err(PyValueError::new_err(format!(
                "nonfinite is \"exclude\" (NaN and ±Inf kept out of the statistics) or \"strict\" \
                 (refused), not {other:?}"
            )))
        }
    };
    let mut batches = batches(py, data)?;
    let parts = batches
        .iter_mut()
        .map(Batch::lent)
        .collect::<PyResult<Vec<_>>>()?;
    let runs = commands::observer_runs(&[observer.to_string()], None, &params)
        .map_err(|e| py_err(py, &e))?;
    let report: Report = detached(py, move || {
        with_lent(parts, |tensors| {
            let split;
            let tensors = match split_axis {
                Some(axis) => {
                    split = split_along(tensors, axis)?;
                    &split[..]
                }
                None => tensors,
            };
            commands::observe(&runs, tensors, attributes.as_ref(), policy, explain)
        })?
        .pop()
        .ok_or_else(|| Error::input("no report"))
    })?;
    if let Some(info) = &report.error {
        return Err(from_info(py, info));
    }
    to_py(py, commands::report_json(&report))
}

fn split_along(tensors: &[Tensor], axis: usize) -> Result<Vec<Tensor>> {
    let mut out = Vec::new();
    for t in tensors {
        out.extend(crate::engine::split_batches(t, axis, None)?);
    }
    Ok(out)
}

/// Each of `observers` over the batches of `data`, with its own parameters (`params`: id →
/// dict), as a notebook's `explorer.results` holds it (`display::notebook_result`, what the
/// widget sends from the page): `{id: result}`, failed runs included (`ok` false); ids that are
/// not in the registry are left out. Lists stay lists (the widget syncs them as JSON).
#[pyfunction]
#[pyo3(signature = (data, observers, params=None))]
fn notebook_results<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    observers: Vec<String>,
    params: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut runs = Vec::new();
    for id in observers {
        if crate::registry::find(&id).is_err()
            || runs.iter().any(|(r, _): &(String, Params)| *r == id)
        {
            continue;
        }
        let own =
            match params.map(|p| p.get_item(&id)).transpose()?.flatten() {
                Some(d) => Some(d.cast_into::<PyDict>().map_err(|_| {
                    PyTypeError::new_err(format!("the parameters of {id} are a dict"))
                })?),
                None => None,
            };
        runs.push((id, params_of(py, own.as_ref(), None)?));
    }
    let mut batches = batches(py, data)?;
    let parts = batches
        .iter_mut()
        .map(Batch::lent)
        .collect::<PyResult<Vec<_>>>()?;
    let reports = detached(py, move || {
        with_lent(parts, |tensors| {
            commands::observe(&runs, tensors, None, NonFinitePolicy::Exclude, false)
        })
    })?;
    let out = PyDict::new(py);
    for report in &reports {
        let result = crate::display::notebook_result(report);
        let value = pythonize::pythonize(py, &result)
            .map_err(|e| PyValueError::new_err(format!("could not convert a result: {e}")))?;
        out.set_item(&report.observer, value)?;
    }
    Ok(out)
}

/// Every number format on one tensor (`formats --json`): one row per format, a row that could
/// not be computed with its `error`.
#[pyfunction]
fn formats<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let mut batch = one_batch(py, data)?;
    let part = batch.lent()?;
    let rows = detached(py, move || {
        Ok(with_lent(vec![part], |t| {
            commands::formats_json(&crate::codec::compare(&t[0]))
        }))
    })?;
    tabled(py, to_py(py, rows)?, None)
}

/// Quantize–dequantize one tensor with a format or quantizer (`quantize --json`, without
/// `out`) and its dequantized `values` (float32, the input's shape); with `explain`, how block
/// `block` (default: the one holding the largest magnitude) was stored (`quantize --explain
/// --json`'s `derivation`).
#[pyfunction]
#[pyo3(signature = (data, codec, params=None, *, explain=false, block=None, **kwargs))]
fn quantize<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    codec: &str,
    params: Option<&Bound<'py, PyDict>>,
    explain: bool,
    block: Option<usize>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let params = params_of(py, params, kwargs)?;
    let mut batch = one_batch(py, data)?;
    let part = batch.lent()?;
    let id = codec.to_string();
    let (q, derivation) = detached(py, move || {
        let params = inputs::resolve_vector_files(params)?;
        with_lent(vec![part], |t| {
            let q = quantize_tensor(&id, &params, &t[0])?;
            let derivation = explain
                .then(|| crate::codec::explain::explain(&id, &params, &t[0], block))
                .transpose()?;
            Ok((q, derivation))
        })
    })?;
    let mut doc = commands::quantize_json(&q, None, derivation.as_ref());
    if let Some(map) = doc.as_object_mut() {
        map.remove("out");
    }
    let out = to_py(py, doc)?;
    let values = Tensor {
        shape: q.shape,
        data: q.values,
        dtype: DType::F32,
    };
    out.set_item("values", array(py, values)?)?;
    Ok(out)
}

/// What a checkpoint stores (`inspect --json`): files, layout, every weight's shape, stored
/// format, block and bits per weight, the summary, warnings and files that could not be read.
#[pyfunction]
fn inspect<'py>(py: Python<'py>, path: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let paths = paths_of(path, "path")?;
    exist(&paths)?;
    let doc = detached(py, move || commands::inspect(&paths).map(|(doc, _, _)| doc))?;
    tabled(py, to_py(py, doc)?, Some("tensors"))
}

/// Every tensor of a checkpoint (any file or folder `inspect` reads), decoded to float32 numpy
/// arrays of their shapes, by name, in checkpoint order (bfloat16 and float16 widen exactly;
/// quantized weights are dequantized by their codec).
#[pyfunction]
fn tensors<'py>(py: Python<'py>, path: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let paths = paths_of(path, "path")?;
    exist(&paths)?;
    let all = detached(py, move || commands::tensors(&paths))?;
    let out = PyDict::new(py);
    for (name, t) in all {
        out.set_item(name, array(py, t)?)?;
    }
    Ok(out)
}

/// Write `{name: array}` as one float32 `.safetensors` file at `path` (arrays are converted
/// with `numpy.asarray(..., dtype=float32)`; their shapes are kept).
#[pyfunction]
fn save_safetensors(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    tensors: &Bound<'_, PyDict>,
) -> PyResult<()> {
    let Some(path) = path_of(path)? else {
        return Err(PyTypeError::new_err("save_safetensors takes a path"));
    };
    let numpy = py.import("numpy")?;
    let mut out = Vec::new();
    for (name, value) in tensors.iter() {
        let name: String = name
            .extract()
            .map_err(|_| PyTypeError::new_err(format!("tensor names are strings, not {name:?}")))?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("dtype", "float32")?;
        let array = numpy.call_method("ascontiguousarray", (value,), Some(&kwargs))?;
        let array: PyReadonlyArrayDyn<'_, f32> = array.extract()?;
        let values = array
            .as_slice()
            .map_err(|e| PyValueError::new_err(format!("{name}: {e}")))?
            .to_vec();
        out.push((name, array.shape().to_vec(), values));
    }
    let path = PathBuf::from(path);
    detached(py, move || commands::save_safetensors(&path, &out))
}

/// The methods of `model`: observer ids and format labels (what `quantscope.Model` takes), or
/// `(format id, {params})` pairs (what `quantscope model --formats ID:JSON` takes).
fn methods_of(py: Python<'_>, given: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Method>> {
    let Some(given) = given else {
        return Ok(crate::model::default_methods());
    };
    let items: Vec<Bound<'_, PyAny>> = if given.is_instance_of::<PyString>() {
        vec![given.clone()]
    } else {
        given.try_iter()?.collect::<PyResult<_>>()?
    };
    let mut names = Vec::new();
    let mut out: Vec<Method> = Vec::new();
    for item in &items {
        if let Ok(name) = item.extract::<String>() {
            names.push(name);
            continue;
        }
        let pair: (String, Bound<'_, PyDict>) = item.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "a method is an observer id or format label (a string) or a (format id, params) \
                 pair, not {item:?}"
            ))
        })?;
        let params = params_of(py, Some(&pair.1), None)?;
        out.push(methods::format_by_id(&pair.0, params).map_err(|e| py_err(py, &e))?);
    }
    if !names.is_empty() {
        let named = methods::resolve(&names).map_err(|e| py_err(py, &e))?;
        out.splice(0..0, named);
    }
    if out.is_empty() {
        return Ok(crate::model::default_methods());
    }
    Ok(out)
}

/// `portion=(i, n)`: portion `i` of `n` of a command's work ([`crate::portion`]).
fn portion_of(py: Python<'_>, given: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Portion>> {
    let Some(given) = given.filter(|g| !g.is_none()) else {
        return Ok(None);
    };
    let (index, count): (usize, usize) = given.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "portion is a pair (i, n) of integers, portion i of n counted from 0, not {given:?}"
        ))
    })?;
    Portion::new(index, count)
        .map(Some)
        .map_err(|e| py_err(py, &e))
}

/// Rank every tensor of a checkpoint, worst first (`model --json`: `tensors`, `load_errors`);
/// with `portion=(i, n)`, only portion `i` of `n` of the tensors, with its `portion` (for
/// `merge`).
#[pyfunction]
#[pyo3(signature = (paths, methods=None, *, jobs=None, portion=None))]
fn model<'py>(
    py: Python<'py>,
    paths: &Bound<'py, PyAny>,
    methods: Option<&Bound<'py, PyAny>>,
    jobs: Option<usize>,
    portion: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let paths = paths_of(paths, "paths")?;
    exist(&paths)?;
    let methods = methods_of(py, methods)?;
    let portion = portion_of(py, portion)?;
    let doc = detached(py, move || {
        commands::model_json(&paths, &methods, jobs, portion, &|_, _| {})
    })?;
    tabled(py, to_py(py, doc)?, Some("tensors"))
}

/// A quantized checkpoint against its original, weight by weight (`diff --json`: `pairs` worst
/// first, `unpaired`, `lint`, `files`); with `portion=(i, n)`, only portion `i` of `n` of the
/// pairs, with its `portion` (for `merge`).
#[pyfunction]
#[pyo3(signature = (original, quantized, imatrix=None, *, portion=None))]
fn diff<'py>(
    py: Python<'py>,
    original: &Bound<'py, PyAny>,
    quantized: &Bound<'py, PyAny>,
    imatrix: Option<&Bound<'py, PyAny>>,
    portion: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let one = |obj: &Bound<'py, PyAny>, what: &str| -> PyResult<PathBuf> {
        match path_of(obj)? {
            Some(p) => Ok(PathBuf::from(p)),
            None => Err(PyTypeError::new_err(format!("{what} is a path"))),
        }
    };
    let original = one(original, "original")?;
    let quantized = one(quantized, "quantized")?;
    let imatrix = imatrix.map(|i| one(i, "imatrix")).transpose()?;
    exist(&[original.clone(), quantized.clone()])?;
    exist(imatrix.as_slice())?;
    let portion = portion_of(py, portion)?;
    let doc = detached(py, move || {
        commands::diff_json(&original, &quantized, imatrix.as_deref(), portion)
    })?;
    tabled(py, to_py(py, doc)?, Some("pairs"))
}

/// The documents of every portion of one `model` or `diff` (any order) put together: the
/// document the call without `portion` returns (`quantscope merge`).
#[pyfunction]
fn merge<'py>(py: Python<'py>, documents: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let docs = documents
        .try_iter()?
        .enumerate()
        .map(|(i, doc)| {
            pythonize::depythonize::<Value>(&doc?).map_err(|e| {
                PyValueError::new_err(format!("document {} cannot be read: {e}", i + 1))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let merged = detached(py, move || crate::portion::merge(&docs))?;
    let table = merged.command.table();
    tabled(py, to_py(py, merged.document)?, Some(table))
}

/// AdaRound on one linear layer: weight `w` `[out, in]`, its inputs `x` `[n, in]`, AdaRound's
/// declared parameters (Quark's defaults); `adaround --json` plus the learned weights
/// (`weights_adaround`) and round-to-nearest's (`weights_nearest`), dequantized.
#[pyfunction]
#[pyo3(signature = (w, x, params=None, **kwargs))]
fn adaround<'py>(
    py: Python<'py>,
    w: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    params: Option<&Bound<'py, PyDict>>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let params = params_of(py, params, kwargs)?;
    let config = AdaRoundConfig::from_params(&params).map_err(|e| py_err(py, &e))?;
    let (mut w, mut x) = (one_batch(py, w)?, one_batch(py, x)?);
    let parts = vec![w.lent()?, x.lent()?];
    let outcome = detached(py, move || {
        with_lent(parts, |t| optimise(&t[0], &t[1], &config, &mut |_| true))
    })?;
    let out = to_py(py, serde_json::to_value(&outcome).unwrap_or_default())?;
    for (name, weights) in [
        ("weights_adaround", &outcome.weights_adaround),
        ("weights_nearest", &outcome.weights_nearest),
    ] {
        out.set_item(name, weights.to_pyarray(py))?;
    }
    Ok(out)
}

/// `quantscope._native`: the engine as a Python module (see the module documentation).
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(observers, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(quantizers, m)?)?;
    m.add_function(wrap_pyfunction!(observe, m)?)?;
    m.add_function(wrap_pyfunction!(notebook_results, m)?)?;
    m.add_function(wrap_pyfunction!(formats, m)?)?;
    m.add_function(wrap_pyfunction!(quantize, m)?)?;
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(tensors, m)?)?;
    m.add_function(wrap_pyfunction!(save_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(model, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(adaround, m)?)?;
    Ok(())
}
