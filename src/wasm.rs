//! The WebAssembly boundary (the only place with `wasm_bindgen`): a [`SessionHandle`] (JS `Session`) that owns
//! the loaded tensors and observer runs (used inside the page's Web Worker and by the npm
//! package), pure drawing functions for canvases (plotters-canvas, used by the thread that
//! draws), and SVG rendering that needs no DOM (Workers, Node, Deno).
//!
//! Values cross the boundary as JSON-shaped objects (histogram counts as `Float64Array`);
//! failures are thrown as `Error`s with a readable message, never as panics. A panic hook
//! reports any panic on the console and keeps its message for [`last_panic`], so the page can
//! show it and restart the worker.

use crate::curve::CurveRequest;
use crate::explorer::{self, Selection};
use crate::params::Params;
use crate::plot::svg::{adaround_svg, comparison_svg, formats_svg, panel_svg, Comparison};
use crate::plot::text::Measured;
use crate::plot::{
    self, AdaRoundView, ChannelView, CurveView, FormatsView, Hist, PanelView, Style,
};
use crate::qparams::{QParams, ZeroPoint};
use crate::registry;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs when the module is instantiated: installs the panic hook.
#[wasm_bindgen(start)]
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        let message = info.to_string();
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(message));
    }));
}

/// The message of the last panic, if any (the module must be re-instantiated after one).
#[wasm_bindgen(js_name = lastPanic)]
pub fn last_panic() -> Option<String> {
    LAST_PANIC.with(|p| p.borrow().clone())
}

/// Panic on purpose, to test that a host recovers (the page restarts its worker).
#[wasm_bindgen(js_name = debugPanic)]
pub fn debug_panic(message: &str) {
    panic!("{message}");
}

/// The crate version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Load a small synthetic file and run the default observers once on it so that the engine
/// optimises the loading code and their kernels before real data arrives (`crate::warm`); the
/// number of observers run. `part` `"loading"` or `"observers"` warms that part only (threads
/// sharing one module split the work: V8 shares the optimised code between them).
#[wasm_bindgen(js_name = warmUp)]
pub fn warm_up(
    #[wasm_bindgen(unchecked_param_type = "'loading' | 'observers' | undefined")] part: Option<
        String,
    >,
) -> Result<usize, JsError> {
    let (loading, observers) = match part.as_deref() {
        None => (true, true),
        Some("loading") => (true, false),
        Some("observers") => (false, true),
        Some(other) => {
            return Err(JsError::new(&format!(
                "warmUp: unknown part {other:?} (loading, observers or nothing)"
            )))
        }
    };
    if loading {
        crate::warm::warm_up_loading();
    }
    Ok(if observers { crate::warm::warm_up() } else { 0 })
}

/// Which build of the module this is: `"simd128"` (compiled with WebAssembly SIMD) or
/// `"baseline"` (for engines without it); `www/lib/wasm-flavour.js` picks one at run time.
#[wasm_bindgen(js_name = wasmFlavour)]
pub fn wasm_flavour() -> String {
    if cfg!(target_feature = "simd128") {
        "simd128"
    } else {
        "baseline"
    }
    .to_string()
}

fn js_err(e: impl std::fmt::Display) -> JsError {
    JsError::new(&e.to_string())
}

/// A Rust value as a JavaScript value: objects for maps, `null` for `None`, numbers exactly as
/// computed (a float32 scale arrives as that float32's exact value, ±∞ as ±Infinity).
fn to_js<T: Serialize + ?Sized>(v: &T) -> Result<JsValue, JsError> {
    let serializer = serde_wasm_bindgen::Serializer::new()
        .serialize_maps_as_objects(true)
        .serialize_missing_as_null(true);
    v.serialize(&serializer)
        .map_err(|e| JsError::new(&format!("could not encode a result: {e}")))
}

fn from_js<T: DeserializeOwned>(v: &JsValue, what: &str) -> Result<T, JsError> {
    serde_wasm_bindgen::from_value(v.clone())
        .map_err(|e| JsError::new(&format!("invalid {what}: {e}")))
}

/// Per-slice arrays of a panel view longer than this go to JS as Float64Array.
const PACKED_SLICES: usize = 1024;

/// A panel view as JS, with its per-slice arrays of more than [`PACKED_SLICES`] numbers (the
/// numbers of hundreds of thousands of blocks) as Float64Array: copied at once, where serde sets
/// a JS array number by number, and transferred from a worker to the page without a copy
/// (www/lib/rpc.js). Every reader of a view takes either form ([`channel_view_from_js`],
/// www/lib/panel.js).
fn packed_view_to_js(mut view: PanelView) -> Result<JsValue, JsError> {
    fn take_long<'a>(
        fields: impl IntoIterator<Item = (&'static str, &'a mut Vec<f64>)>,
    ) -> Vec<(&'static str, Vec<f64>)> {
        fields
            .into_iter()
            .filter(|(_, values)| values.len() > PACKED_SLICES)
            .map(|(name, values)| (name, std::mem::take(values)))
            .collect()
    }
    let s = &mut view.slices;
    let slices = take_long([
        ("clip_min", &mut s.clip_min),
        ("clip_max", &mut s.clip_max),
        ("grid_min", &mut s.grid_min),
        ("grid_max", &mut s.grid_max),
        ("scale", &mut s.scale),
        ("zero_point", &mut s.zero_point),
    ]);
    let channels = match view.channels.as_mut() {
        Some(ch) => take_long([
            ("min", &mut ch.min),
            ("max", &mut ch.max),
            ("grid_min", &mut ch.grid_min),
            ("grid_max", &mut ch.grid_max),
        ]),
        None => Vec::new(),
    };
    let js = to_js(&view)?;
    let invalid = |_| JsError::new("could not encode a panel view");
    for (group, arrays) in [("slices", slices), ("channels", channels)] {
        if arrays.is_empty() {
            continue;
        }
        let target = js_sys::Reflect::get(&js, &JsValue::from_str(group)).map_err(invalid)?;
        for (name, values) in arrays {
            let array = js_sys::Float64Array::from(&values[..]);
            js_sys::Reflect::set(&target, &JsValue::from_str(name), &array).map_err(invalid)?;
        }
    }
    Ok(js)
}

/// A report as JS; with `packed`, its per-slice arrays (`scale`, `zero_point`, `min_val`,
/// `max_val`, `amax`, both ends of `clip_range`) of more than [`PACKED_SLICES`] numbers are
/// Float64Array made at once, as [`packed_view_to_js`] makes the view's: for a per-block
/// observer on a large tensor, number-by-number encoding of its half a million scales costs the
/// worker more than the run, and the page more than drawing it. The numbers are those of the
/// plain report (a float32 as its exact float64, an integer zero point as that number).
fn report_to_js(report: &crate::engine::Report, packed: bool) -> Result<JsValue, JsError> {
    let long =
        |q: &QParams| q.scale.len().max(q.zero_point.len()).max(q.min_val.len()) > PACKED_SLICES;
    if !packed || !report.qparams.as_ref().is_some_and(long) {
        return to_js(report);
    }
    let mut lean = report.clone();
    let arrays = lean
        .qparams
        .as_mut()
        .map(take_long_arrays)
        .unwrap_or_default();
    let js = to_js(&lean)?;
    for (name, array) in arrays {
        js_sys::Reflect::set(&js, &JsValue::from_str(name), &array)
            .map_err(|_| JsError::new("could not encode a result"))?;
    }
    Ok(js)
}

/// The per-slice arrays of `q` longer than [`PACKED_SLICES`], taken out (left empty) and made
/// Float64Array (a pair for `clip_range`), by their report names.
fn take_long_arrays(q: &mut QParams) -> Vec<(&'static str, JsValue)> {
    let widen = |values: Vec<f32>| {
        let numbers: Vec<f64> = values.into_iter().map(f64::from).collect();
        js_sys::Float64Array::from(&numbers[..])
    };
    let mut out: Vec<(&'static str, JsValue)> = Vec::new();
    for (name, values) in [
        ("scale", &mut q.scale),
        ("min_val", &mut q.min_val),
        ("max_val", &mut q.max_val),
    ] {
        if values.len() > PACKED_SLICES {
            out.push((name, widen(std::mem::take(values)).into()));
        }
    }
    if q.zero_point.len() > PACKED_SLICES {
        let numbers: Vec<f64> = match &mut q.zero_point {
            ZeroPoint::Int(v) => std::mem::take(v).into_iter().map(|z| z as f64).collect(),
            ZeroPoint::Float(v) => std::mem::take(v).into_iter().map(f64::from).collect(),
        };
        out.push((
            "zero_point",
            js_sys::Float64Array::from(&numbers[..]).into(),
        ));
    }
    if let Some(amax) = q.amax.as_mut().filter(|a| a.len() > PACKED_SLICES) {
        out.push(("amax", widen(std::mem::take(amax)).into()));
    }
    if let Some((lo, hi)) = q
        .clip_range
        .as_mut()
        .filter(|(lo, hi)| lo.len().max(hi.len()) > PACKED_SLICES)
    {
        let pair = js_sys::Array::of2(&widen(std::mem::take(lo)), &widen(std::mem::take(hi)));
        out.push(("clip_range", pair.into()));
    }
    out
}

/// A per-channel view from JS, its long arrays possibly Float64Array (as [`packed_view_to_js`]
/// sends them): those are copied at once, the rest read by serde.
fn channel_view_from_js(v: &JsValue) -> Result<ChannelView, JsError> {
    let invalid = |_| JsError::new("invalid channels: not an object");
    let plain = js_sys::Object::assign(&js_sys::Object::new(), v.unchecked_ref());
    let mut packed = Vec::new();
    for name in ["min", "max", "grid_min", "grid_max"] {
        let key = JsValue::from_str(name);
        let field = js_sys::Reflect::get(v, &key).map_err(invalid)?;
        if let Some(numbers) = field.dyn_ref::<js_sys::Float64Array>() {
            packed.push((name, numbers.to_vec()));
            js_sys::Reflect::set(&plain, &key, &js_sys::Array::new()).map_err(invalid)?;
        }
    }
    let mut view: ChannelView = from_js(&plain, "channels")?;
    for (name, numbers) in packed {
        *match name {
            "min" => &mut view.min,
            "max" => &mut view.max,
            "grid_min" => &mut view.grid_min,
            _ => &mut view.grid_max,
        } = numbers;
    }
    Ok(view)
}

fn params_from_js(v: &JsValue) -> Result<Params, JsError> {
    let value: serde_json::Value = from_js(v, "params")?;
    Params::from_value(value).map_err(js_err)
}

/// The registry: every observer and every named preset.
#[derive(Serialize, tsify::Tsify)]
pub struct Registry {
    observers: Vec<registry::ObserverEntry>,
    presets: &'static [registry::Preset],
}

/// Every observer of the registry with its framework, granularity, parameters (type, range,
/// default, `affects`), quirks and presets: `{observers: [...], presets: [...]}`.
#[wasm_bindgen(unchecked_return_type = "Registry")]
pub fn registry() -> Result<JsValue, JsError> {
    let observers = registry::observers()
        .iter()
        .cloned()
        .map(Into::into)
        .collect();
    to_js(&Registry {
        observers,
        presets: registry::presets(),
    })
}

/// `granularity` (`per_group`, …) as the page writes it (`per group`): the engine's label
/// ([`registry::Granularity::label`]); a string that names no granularity is returned as it is.
#[wasm_bindgen(js_name = granularityLabel)]
pub fn granularity_label(granularity: &str) -> String {
    serde_json::from_value::<registry::Granularity>(serde_json::Value::from(granularity))
        .map_or_else(|_| granularity.to_string(), |g| g.label().to_string())
}

/// The CSS colour of series `i` (the palette the charts draw with, [`plot::theme::series`]):
/// observer panels and the formats table's swatches take theirs from it.
#[wasm_bindgen(js_name = seriesColor)]
pub fn series_color(i: usize) -> String {
    plot::theme::css(plot::theme::series(i))
}

/// A number as every panel, table and chart writes it ([`plot::fmt_num`]): about four
/// significant digits, exponent form when very large or small, a real minus sign.
#[wasm_bindgen(js_name = fmtNum)]
pub fn fmt_num(value: f64) -> String {
    plot::fmt_num(value)
}

/// `params` of observer `id` with the frameworks' nested call forms made flat (ONNX Runtime's
/// `extra_options`, torchao's granularity objects, …): the values the page's controls show.
#[wasm_bindgen(js_name = flatParams, unchecked_return_type = "Record<string, unknown>")]
pub fn flat_params(id: &str, params: JsValue) -> Result<JsValue, JsError> {
    let spec = registry::find(id).map_err(js_err)?;
    let params = params_from_js(&params)?;
    to_js(&*spec.flat(&params).map_err(js_err)?)
}

/// The quantizer registry: `{formats: [...], optimisers: [...]}`, each with its parameters
/// (type, range, default), from which the page builds the formats and AdaRound controls.
#[wasm_bindgen(unchecked_return_type = "QuantizerRegistry")]
pub fn quantizers() -> Result<JsValue, JsError> {
    to_js(&crate::quantizers::registry())
}

/// Limits of the explorer: `{maxElements, displayBins, probeBytes}`.
/// `rotationHelpsDb`: the SQNR gain (dB) below which a rotation "does not help" (the CLI's
/// verdict under `--rotate`).
#[wasm_bindgen(
    unchecked_return_type = "{ maxElements: number; displayBins: number; probeBytes: number; rotationHelpsDb: number }"
)]
pub fn limits() -> Result<JsValue, JsError> {
    to_js(&serde_json::json!({
        "maxElements": explorer::MAX_ELEMENTS,
        "displayBins": explorer::DISPLAY_BINS,
        "probeBytes": explorer::stream::PROBE_BYTES,
        "rotationHelpsDb": crate::rotation::NO_HELP_DB,
    }))
}

/// Whether a rotation helped a method, from its SQNR before and after (dB), as the CLI's
/// verdict under `--rotate` decides it.
#[wasm_bindgen(js_name = rotationHelps)]
pub fn rotation_helps(before_db: f64, after_db: f64) -> bool {
    crate::rotation::helps(before_db, after_db)
}

/// Length of a `.npy`/`.safetensors` header given the file's first `probeBytes` bytes.
#[wasm_bindgen(js_name = headerSize)]
pub fn header_size(probe: &[u8]) -> Result<usize, JsError> {
    explorer::stream::header_size(probe).map_err(js_err)
}

/// The JS handle on the explorer session ([`explorer::Session`]: loaded files, the calibration
/// batches chosen from them, and one run per observer), exported to JS as `Session`.
#[wasm_bindgen(js_name = Session)]
pub struct SessionHandle {
    inner: explorer::Session,
}

impl Default for SessionHandle {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen(js_class = Session)]
impl SessionHandle {
    /// An empty session.
    #[wasm_bindgen(constructor)]
    pub fn new() -> SessionHandle {
        SessionHandle {
            inner: explorer::Session::new(),
        }
    }

    /// Forget everything.
    pub fn clear(&mut self) {
        self.inner.clear();
    }

    /// Mark the current files as about to be replaced (they stop counting against the size
    /// limit); follow with `retainFiles` on success or `abandonReplace` on failure.
    #[wasm_bindgen(js_name = beginReplace)]
    pub fn begin_replace(&mut self) {
        self.inner.begin_replace();
    }

    /// Drop the files loaded since `beginReplace`; the current tensor and results stay.
    #[wasm_bindgen(js_name = abandonReplace)]
    pub fn abandon_replace(&mut self) {
        self.inner.abandon_replace();
    }

    /// Keep only the files with these indices (JSON array), in that order.
    #[wasm_bindgen(js_name = retainFiles, unchecked_return_type = "FileInfo[]")]
    pub fn retain_files(&mut self, keep: JsValue) -> Result<JsValue, JsError> {
        let keep: Vec<usize> = from_js(&keep, "file indices")?;
        to_js(&self.inner.retain_files(&keep))
    }

    /// Number of loaded files.
    #[wasm_bindgen(js_name = fileCount)]
    pub fn file_count(&self) -> usize {
        self.inner.file_count()
    }

    /// Parse a whole `.npy`/`.npz`/`.safetensors` file and add it; returns its members.
    #[wasm_bindgen(js_name = loadFile, unchecked_return_type = "FileInfo")]
    pub fn load_file(&mut self, name: &str, bytes: &[u8]) -> Result<JsValue, JsError> {
        let info = self.inner.load_file(name, bytes).map_err(js_err)?;
        to_js(&info)
    }

    /// Add a tensor from values: `shape` (JSON array) and C-order `data`.
    #[wasm_bindgen(js_name = addTensor, unchecked_return_type = "FileInfo")]
    pub fn add_tensor(
        &mut self,
        name: &str,
        shape: JsValue,
        data: Vec<f32>,
    ) -> Result<JsValue, JsError> {
        let shape: Vec<usize> = from_js(&shape, "shape")?;
        self.inner.check_budget(name, data.len()).map_err(js_err)?;
        let tensor = crate::tensor::Tensor::new(shape, data).map_err(js_err)?;
        to_js(&self.inner.add_file(
            name,
            vec![crate::tensor::NamedTensor {
                name: String::new(),
                tensor,
            }],
        ))
    }

    /// Plan a chunked load from the file's header bytes (see `headerSize`); returns
    /// `{offset, length, element_bytes, elements, member, members}`.
    #[wasm_bindgen(js_name = beginStream, unchecked_return_type = "Plan")]
    pub fn begin_stream(
        &mut self,
        name: &str,
        head: &[u8],
        file_size: f64,
        member: Option<String>,
    ) -> Result<JsValue, JsError> {
        let plan = self
            .inner
            .begin_stream(name, head, file_size as u64, member.as_deref())
            .map_err(js_err)?;
        to_js(&plan)
    }

    /// Feed the next chunk of the planned byte range; returns the fraction done.
    #[wasm_bindgen(js_name = pushChunk)]
    pub fn push_chunk(&mut self, bytes: &[u8]) -> Result<f64, JsError> {
        self.inner.push_chunk(bytes).map_err(js_err)
    }

    /// Finish a chunked load; returns the file's members.
    #[wasm_bindgen(js_name = finishStream, unchecked_return_type = "FileInfo")]
    pub fn finish_stream(&mut self) -> Result<JsValue, JsError> {
        let info = self.inner.finish_stream().map_err(js_err)?;
        to_js(&info)
    }

    /// Abandon a chunked load.
    #[wasm_bindgen(js_name = abortStream)]
    pub fn abort_stream(&mut self) {
        self.inner.abort_stream();
    }

    /// Choose the calibration batches: `{batches: [{file, member}], split: {axis, count} | null}`.
    /// Returns the tensor summary. Previous results are dropped.
    #[wasm_bindgen(unchecked_return_type = "TensorSummary")]
    pub fn select(&mut self, selection: JsValue) -> Result<JsValue, JsError> {
        let selection: Selection = from_js(&selection, "selection")?;
        let summary = self.inner.select(selection).map_err(js_err)?;
        to_js(&summary)
    }

    /// Choose the calibration batches as `select` does, without their moment histogram: the
    /// summary has no mean or std yet; `summary()` and `histogram()` compute it when asked.
    #[wasm_bindgen(js_name = selectLazily, unchecked_return_type = "TensorSummary")]
    pub fn select_lazily(&mut self, selection: JsValue) -> Result<JsValue, JsError> {
        let selection: Selection = from_js(&selection, "selection")?;
        let summary = self.inner.select_lazily(selection).map_err(js_err)?;
        to_js(&summary)
    }

    /// The current tensor summary (or null).
    #[wasm_bindgen(unchecked_return_type = "TensorSummary | null")]
    pub fn summary(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.summary())
    }

    /// The display histogram `{lo, hi, counts: Float64Array}` (or null).
    #[wasm_bindgen(
        unchecked_return_type = "{ lo: number; hi: number; counts: Float64Array } | null"
    )]
    pub fn histogram(&self) -> Result<JsValue, JsError> {
        let Some(h) = self.inner.display_histogram() else {
            return Ok(JsValue::NULL);
        };
        let out = js_sys::Object::new();
        let set = |k: &str, v: &JsValue| js_sys::Reflect::set(&out, &k.into(), v);
        set("lo", &h.lo.into()).map_err(|_| JsError::new("histogram"))?;
        set("hi", &h.hi.into()).map_err(|_| JsError::new("histogram"))?;
        set("counts", &js_sys::Float64Array::from(&h.counts[..]).into())
            .map_err(|_| JsError::new("histogram"))?;
        Ok(out.into())
    }

    /// Run observer `id` with `params` (an object; missing keys take the registry defaults)
    /// over the current batches from scratch. Observer errors are reported in the report, not
    /// thrown.
    /// With `packed`, per-slice arrays of more than 1024 numbers come as Float64Array (see
    /// [`report_to_js`]).
    #[wasm_bindgen(unchecked_return_type = "Report")]
    pub fn observe(
        &mut self,
        id: &str,
        params: JsValue,
        packed: Option<bool>,
    ) -> Result<JsValue, JsError> {
        let params = params_from_js(&params)?;
        let r = self.inner.observe(id, params).map_err(js_err)?;
        report_to_js(&r, packed.unwrap_or(false))
    }

    /// Change observer `id`'s parameters: the configuration is rebuilt from all of `params`;
    /// when only search parameters changed, the state already collected is searched again
    /// without a pass over the data (`state_reused: true`). Equals a fresh run with `params`.
    /// `packed` as for `observe`.
    #[wasm_bindgen(unchecked_return_type = "Report")]
    pub fn update(
        &mut self,
        id: &str,
        params: JsValue,
        packed: Option<bool>,
    ) -> Result<JsValue, JsError> {
        let params = params_from_js(&params)?;
        let r = self.inner.update(id, params).map_err(js_err)?;
        report_to_js(&r, packed.unwrap_or(false))
    }

    /// Like `update`, but when the collected state is reused the report comes back at once
    /// without its error metrics (`metrics_pending: true`); call `complete(id)` for them.
    /// `packed` as for `observe`.
    #[wasm_bindgen(js_name = updateDeferred, unchecked_return_type = "Report")]
    pub fn update_deferred(
        &mut self,
        id: &str,
        params: JsValue,
        packed: Option<bool>,
    ) -> Result<JsValue, JsError> {
        let params = params_from_js(&params)?;
        let r = self.inner.update_deferred(id, params).map_err(js_err)?;
        report_to_js(&r, packed.unwrap_or(false))
    }

    /// The metrics a deferred update left pending (null if none); `packed` as for `observe`.
    #[wasm_bindgen(unchecked_return_type = "Report | null")]
    pub fn complete(&mut self, id: &str, packed: Option<bool>) -> Result<JsValue, JsError> {
        match self.inner.complete(id) {
            Some(report) => report_to_js(&report, packed.unwrap_or(false)),
            None => Ok(JsValue::NULL),
        }
    }

    /// The derivation of observer `id`'s last report (`Report.derivation`, the steps and numbers
    /// by which its search reached its range and scale), or null before it ran; its search runs
    /// again on the collected state, without a pass over the data.
    /// With `view`, the steps as the page shows them (`StepView[]`: numbers written, long
    /// tables shortened).
    #[wasm_bindgen(unchecked_return_type = "Step[] | StepView[] | null")]
    pub fn explain(&self, id: &str, view: Option<bool>) -> Result<JsValue, JsError> {
        match self.inner.explain(id) {
            Some(steps) if view.unwrap_or(false) => to_js(&crate::derivation::view(&steps)),
            Some(steps) => to_js(&steps),
            None => Ok(JsValue::NULL),
        }
    }

    /// What makes the selected tensor hard to quantize and what helped (`Diagnosis`: facts and a
    /// paragraph, with this tensor's numbers), given the `outcomes` (`Outcome[]`: label, format,
    /// per_tensor, sqnr_db) of the methods that ran on it and the `reports` (`Report[]`, as
    /// `observe` returned them; only their observer, granularity and SQNR are read) of observers
    /// that ran on it, each taken as the CLI takes it (`Outcome::of_report`); null before a
    /// selection.
    #[wasm_bindgen(unchecked_return_type = "Diagnosis | null")]
    pub fn diagnose(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Outcome[]")] outcomes: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Report[] | undefined")] reports: JsValue,
    ) -> Result<JsValue, JsError> {
        let mut outcomes: Vec<crate::diagnosis::Outcome> = serde_wasm_bindgen::from_value(outcomes)
            .map_err(|e| JsError::new(&format!("outcomes: {e}")))?;
        if !reports.is_undefined() && !reports.is_null() {
            let reports: Vec<crate::diagnosis::ReportHead> =
                serde_wasm_bindgen::from_value(reports)
                    .map_err(|e| JsError::new(&format!("reports: {e}")))?;
            outcomes.extend(reports.iter().filter_map(|r| r.outcome()));
        }
        match self.inner.diagnose(&outcomes) {
            Some(d) => to_js(&d),
            None => Ok(JsValue::NULL),
        }
    }

    /// Observer `id` with `params` on the current batches with every row rotated along its last
    /// axis by `rotate` (`hadamard[:SEED]`, as the CLI's `--rotate`): `{rotation, metrics,
    /// error}`, the error measured against the rotated values. The panel's run is unchanged.
    #[wasm_bindgen(js_name = observeRotated, unchecked_return_type = "Rotated")]
    pub fn observe_rotated(
        &self,
        id: &str,
        params: JsValue,
        rotate: &str,
    ) -> Result<JsValue, JsError> {
        let params = params_from_js(&params)?;
        to_js(
            &self
                .inner
                .observe_rotated(id, &params, rotate)
                .map_err(js_err)?,
        )
    }

    /// Forget observer `id`'s run.
    pub fn remove(&mut self, id: &str) {
        self.inner.remove(id);
    }

    /// What the panel of observer `id`'s last report displays (null before it ran): the same as
    /// `panelView(result(id))`, computed from the report where it lives instead of from a copy
    /// sent back in (which, for per-block observers with hundreds of thousands of scales, costs
    /// more than the view itself). Per-slice arrays of more than [`PACKED_SLICES`] numbers are
    /// Float64Array ([`packed_view_to_js`]).
    #[wasm_bindgen(js_name = panelViewOf, unchecked_return_type = "PanelView | null")]
    pub fn panel_view_of(&self, id: &str) -> Result<JsValue, JsError> {
        match self.inner.result(id) {
            Some(report) => packed_view_to_js(crate::display::panel_view(report)),
            None => Ok(JsValue::NULL),
        }
    }

    /// The last report of observer `id` (or null).
    #[wasm_bindgen(unchecked_return_type = "Report | null")]
    pub fn result(&self, id: &str) -> Result<JsValue, JsError> {
        to_js(&self.inner.result(id))
    }

    /// Every report.
    #[wasm_bindgen(unchecked_return_type = "Report[]")]
    pub fn results(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.results().collect::<Vec<_>>())
    }

    /// The tensor the formats view measures (the first selected one, whole) and the standard
    /// line-up of formats for its shape: `{name, shape, lineup: [[id, params], ...]}`.
    #[wasm_bindgen(js_name = formatLineup, unchecked_return_type = "FormatsTarget")]
    pub fn format_lineup(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.format_lineup().map_err(js_err)?)
    }

    /// Quantize–dequantize the formats view's tensor with format family `id` (see
    /// `quantizers()`) and `params`: `{format, bits_per_value, mse, sqnr_db, max_abs_err,
    /// clipped_fraction, ...}`. With `rotate` (`hadamard[:SEED]`, as the CLI's `--rotate`), on
    /// the tensor with every row rotated along its last axis, and `rotation` says how.
    #[wasm_bindgen(
        js_name = evaluateFormat,
        unchecked_return_type = "FormatResult & { rotation?: string }"
    )]
    pub fn evaluate_format(
        &self,
        id: &str,
        params: JsValue,
        rotate: Option<String>,
    ) -> Result<JsValue, JsError> {
        let params = params_from_js(&params)?;
        let Some(spec) = rotate else {
            return to_js(&self.inner.evaluate_format(id, &params).map_err(js_err)?);
        };
        let (row, rotation) = self
            .inner
            .evaluate_format_rotated(id, &params, &spec)
            .map_err(js_err)?;
        let mut doc = serde_json::to_value(&row).map_err(|e| JsError::new(&e.to_string()))?;
        if let Some(map) = doc.as_object_mut() {
            map.insert("rotation".into(), rotation.into());
        }
        to_js(&doc)
    }

    /// How format `id` with `params` stored one block of the formats view's tensor (`block`, by
    /// default the one holding its largest magnitude), recorded by the codec's own encoder:
    /// `{format, block, blocks, steps}`, the last step holding what the block stores and its
    /// decoded values (`quantize --explain --json`'s `derivation`). With `view`, the steps as
    /// the page shows them (`StepView[]`). Formats without a derivation throw, saying so.
    #[wasm_bindgen(
        js_name = explainFormat,
        unchecked_return_type = "{ format: string; block: number; blocks: number; steps: Step[] | StepView[] }"
    )]
    pub fn explain_format(
        &self,
        id: &str,
        params: JsValue,
        block: Option<usize>,
        view: Option<bool>,
    ) -> Result<JsValue, JsError> {
        let params = params_from_js(&params)?;
        let d = self
            .inner
            .explain_format(id, &params, block)
            .map_err(js_err)?;
        if view.unwrap_or(false) {
            return to_js(&serde_json::json!({
                "format": d.format,
                "block": d.block,
                "blocks": d.blocks,
                "steps": crate::derivation::view(&d.steps),
            }));
        }
        to_js(&d)
    }

    /// Quantize–dequantize the formats view's tensor with quantizer `id` (a format family of
    /// `quantizers()` or one of Quark's quantizers) and `params` (the library's own keys, as
    /// `quantscope quantize` takes them; a vector such as ggml's `imatrix` inline or as a
    /// loaded tensor `{file, member}`): `{quantizer, format, bits_per_value, mse, max_abs_err,
    /// sqnr_db, clipped_fraction, count, shape, values}`, `values` the dequantized tensor
    /// (row-major `Float32Array`).
    #[wasm_bindgen(unchecked_return_type = "Quantized & { values: Float32Array }")]
    pub fn quantize(&self, id: &str, params: JsValue) -> Result<JsValue, JsError> {
        let params = params_from_js(&params)?;
        let q = self.inner.quantize(id, &params).map_err(js_err)?;
        let out = to_js(&q)?;
        let values = js_sys::Float32Array::from(&q.values[..]);
        js_sys::Reflect::set(&out, &"values".into(), &values.into())
            .map_err(|_| JsError::new("could not encode the dequantized values"))?;
        Ok(out)
    }

    /// Copy the values of a loaded tensor (`{file, member}`) into `into`, which must hold
    /// exactly as many (a Float32Array, over shared memory or not): one copy, where
    /// `tensorValues` makes two.
    #[wasm_bindgen(js_name = copyTensorValues)]
    pub fn copy_tensor_values(
        &self,
        member: JsValue,
        into: &js_sys::Float32Array,
    ) -> Result<(), JsError> {
        let member: explorer::MemberRef = from_js(&member, "tensor reference")?;
        let values = self.inner.tensor_values(&member).map_err(js_err)?;
        if into.length() as usize != values.len() {
            return Err(JsError::new(&format!(
                "copyTensorValues: the tensor has {} values, the array {}",
                values.len(),
                into.length()
            )));
        }
        into.copy_from(values);
        Ok(())
    }

    /// The values of the loaded tensor `member` (`{file, member}`), row-major.
    #[wasm_bindgen(js_name = tensorValues)]
    pub fn tensor_values(&self, member: JsValue) -> Result<Vec<f32>, JsError> {
        let member: explorer::MemberRef = from_js(&member, "tensor reference")?;
        Ok(self.inner.tensor_values(&member).map_err(js_err)?.to_vec())
    }

    /// Start AdaRound for weight `w` and inputs `x` (each `{file, member}`) with registry
    /// parameters `params`; returns `{weight_shape, input_shape, config}`.
    #[wasm_bindgen(js_name = adaroundBegin, unchecked_return_type = "AdaRoundStart")]
    pub fn adaround_begin(
        &mut self,
        w: JsValue,
        x: JsValue,
        params: JsValue,
    ) -> Result<JsValue, JsError> {
        let w: explorer::MemberRef = from_js(&w, "weight")?;
        let x: explorer::MemberRef = from_js(&x, "inputs")?;
        let params = params_from_js(&params)?;
        to_js(&self.inner.adaround_begin(&w, &x, &params).map_err(js_err)?)
    }

    /// Run up to `count` more AdaRound iterations: `{iterations_run, iterations, done, points}`.
    #[wasm_bindgen(js_name = adaroundStep, unchecked_return_type = "AdaRoundStatus")]
    pub fn adaround_step(&mut self, count: usize) -> Result<JsValue, JsError> {
        to_js(&self.inner.adaround_step(count).map_err(js_err)?)
    }

    /// Conclude the AdaRound run with what it learned so far: nearest and AdaRound output
    /// error, flipped weights, final share of binary decisions, history.
    #[wasm_bindgen(js_name = adaroundFinish, unchecked_return_type = "AdaRoundOutcome")]
    pub fn adaround_finish(&mut self) -> Result<JsValue, JsError> {
        to_js(&self.inner.adaround_finish().map_err(js_err)?)
    }

    /// Drop the AdaRound run in progress.
    #[wasm_bindgen(js_name = adaroundAbort)]
    pub fn adaround_abort(&mut self) {
        self.inner.adaround_abort();
    }

    /// The error-versus-clipping chart data for `spec` (`{bits, scheme, points}`) with markers for
    /// observers `ids` in colours `colors` (JSON arrays).
    #[wasm_bindgen(unchecked_return_type = "CurveView | null")]
    pub fn curve(&self, spec: JsValue, ids: JsValue, colors: JsValue) -> Result<JsValue, JsError> {
        let spec: CurveRequest = from_js(&spec, "curve spec")?;
        let ids: Vec<String> = from_js(&ids, "observer ids")?;
        let colors: Vec<usize> = from_js(&colors, "colours")?;
        to_js(&self.inner.curve_view(spec, &ids, &colors))
    }

    /// The comparison figure's data (see `renderComparisonSvg`).
    pub fn comparison(
        &self,
        ids: JsValue,
        colors: JsValue,
        curve: JsValue,
    ) -> Result<JsValue, JsError> {
        let ids: Vec<String> = from_js(&ids, "observer ids")?;
        let colors: Vec<usize> = from_js(&colors, "colours")?;
        let curve: Option<CurveRequest> = from_js(&curve, "curve spec")?;
        to_js(&self.inner.comparison(&ids, &colors, curve))
    }

    /// The whole comparison as SVG.
    #[wasm_bindgen(js_name = comparisonSvg)]
    pub fn comparison_svg(
        &self,
        ids: JsValue,
        colors: JsValue,
        curve: JsValue,
        style: JsValue,
        width: u32,
    ) -> Result<String, JsError> {
        let ids: Vec<String> = from_js(&ids, "observer ids")?;
        let colors: Vec<usize> = from_js(&colors, "colours")?;
        let curve: Option<CurveRequest> = from_js(&curve, "curve spec")?;
        let style = style_from_js(&style)?;
        let c = self
            .inner
            .comparison(&ids, &colors, curve)
            .ok_or_else(|| JsError::new("no tensor loaded"))?;
        comparison_svg(&c, &style, width).map_err(js_err)
    }
}

/// What the panel of `report` displays (clipping and grid ranges, per-channel chart, rows,
/// quirks, the numbers of its `data-*` contract): the one pure display function.
#[wasm_bindgen(js_name = panelView, unchecked_return_type = "PanelView")]
pub fn panel_view(
    #[wasm_bindgen(unchecked_param_type = "Report")] report: JsValue,
) -> Result<JsValue, JsError> {
    let report: crate::engine::Report = from_js(&report, "report")?;
    to_js(&crate::display::panel_view(&report))
}

fn style_from_js(v: &JsValue) -> Result<Style, JsError> {
    if v.is_undefined() || v.is_null() {
        return Ok(Style::default());
    }
    from_js(v, "style")
}

/// `report` as a notebook's `explorer.results[id]` holds it ([`crate::display::notebook_result`]:
/// the panel's numbers with the observer's state and metrics); the native Python module computes
/// the same.
#[wasm_bindgen(js_name = notebookResult, unchecked_return_type = "NotebookResult")]
pub fn notebook_result(
    #[wasm_bindgen(unchecked_param_type = "Report")] report: JsValue,
) -> Result<JsValue, JsError> {
    let report: crate::engine::Report = from_js(&report, "report")?;
    to_js(&crate::display::notebook_result(&report))
}

/// The whole comparison (as returned by `Session.comparison`) as SVG, `width` pixels wide.
#[wasm_bindgen(js_name = renderComparisonSvg)]
pub fn render_comparison_svg(
    comparison: JsValue,
    style: JsValue,
    width: u32,
) -> Result<String, JsError> {
    let c: Comparison = from_js(&comparison, "comparison")?;
    comparison_svg(&c, &style_from_js(&style)?, width).map_err(js_err)
}

/// One panel (title, numbers, notes, histogram and per-channel chart) as SVG.
#[wasm_bindgen(js_name = renderPanelSvg)]
pub fn render_panel_svg(
    lo: f64,
    hi: f64,
    counts: &[f64],
    view: JsValue,
    style: JsValue,
    width: u32,
    height: u32,
) -> Result<String, JsError> {
    let hist = Hist {
        lo,
        hi,
        counts: counts.to_vec(),
    };
    let view: PanelView = from_js(&view, "panel view")?;
    panel_svg(&hist, &view, &style_from_js(&style)?, (width, height)).map_err(js_err)
}

/// The 2D context of `canvas` and a measure function backed by its `measureText`.
fn context(canvas: &HtmlCanvasElement) -> Result<CanvasRenderingContext2d, JsError> {
    canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
        .ok_or_else(|| JsError::new("the canvas has no 2D context"))
}

fn with_canvas(
    canvas: HtmlCanvasElement,
    draw: impl FnOnce(
        &DrawingArea<Measured<'_, CanvasBackend>, plotters::coord::Shift>,
    ) -> plot::DrawResult,
) -> Result<(), JsError> {
    let ctx = context(&canvas)?;
    let measure = move |text: &str, px: f64, family: &str| -> (u32, u32) {
        ctx.set_font(&format!("{px}px {family}"));
        let width = ctx.measure_text(text).map(|m| m.width()).unwrap_or(0.0);
        (width.ceil() as u32, (px * 1.15).ceil() as u32)
    };
    let backend = CanvasBackend::with_canvas_object(canvas)
        .ok_or_else(|| JsError::new("the canvas has no 2D context"))?;
    let backend = Measured::with_measure(backend, &measure);
    let area = backend.into_drawing_area();
    plot::clear(&area).map_err(js_err)?;
    draw(&area).map_err(js_err)?;
    area.present().map_err(js_err)
}

/// Draw a panel's histogram (counts over `[lo, hi]`), clipping lines, grid extent and clipped
/// values on `canvas`, at the canvas' pixel size.
#[wasm_bindgen(js_name = drawHistogram)]
pub fn draw_histogram(
    canvas: HtmlCanvasElement,
    lo: f64,
    hi: f64,
    counts: &[f64],
    view: JsValue,
    style: JsValue,
) -> Result<(), JsError> {
    let hist = Hist {
        lo,
        hi,
        counts: counts.to_vec(),
    };
    let view: PanelView = from_js(&view, "panel view")?;
    let style = style_from_js(&style)?;
    with_canvas(canvas, |area| {
        plot::draw_histogram(area, &hist, &view, &style)
    })
}

/// Draw a search's candidates (`CandidateChart`, from a derivation's view) on `canvas`, with
/// candidate `hovered` emphasised. Returns where the x axis lies, `[left, right, x at left, x
/// at right]` in canvas pixels, so that the page maps the pointer to a candidate.
#[wasm_bindgen(js_name = drawCandidates)]
pub fn draw_candidates(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(unchecked_param_type = "CandidateChart")] chart: JsValue,
    hovered: Option<usize>,
    style: JsValue,
) -> Result<Vec<f64>, JsError> {
    let chart: crate::derivation::CandidateChart = from_js(&chart, "candidate chart")?;
    let style = style_from_js(&style)?;
    let mut mapping = [0.0; 4];
    with_canvas(canvas, |area| {
        mapping = plot::draw_candidates(area, &chart, hovered, &style)?;
        Ok(())
    })?;
    Ok(mapping.to_vec())
}

/// Draw a per-channel range chart on `canvas`.
#[wasm_bindgen(js_name = drawChannels)]
pub fn draw_channels(
    canvas: HtmlCanvasElement,
    channels: JsValue,
    color: usize,
    style: JsValue,
) -> Result<(), JsError> {
    let ch = channel_view_from_js(&channels)?;
    let style = style_from_js(&style)?;
    with_canvas(canvas, |area| plot::draw_channels(area, &ch, color, &style))
}

/// Draw the error-versus-clipping chart on `canvas`.
#[wasm_bindgen(js_name = drawCurve)]
pub fn draw_curve(
    canvas: HtmlCanvasElement,
    curve: JsValue,
    style: JsValue,
) -> Result<(), JsError> {
    let view: CurveView = from_js(&curve, "curve")?;
    let style = style_from_js(&style)?;
    with_canvas(canvas, |area| plot::draw_curve(area, &view, &style))
}

/// Draw the number-formats chart (SQNR against bits per value) on `canvas`. `view` is
/// `{points: [{label, kind, bits_per_value, sqnr_db, highlighted?}]}`; `sqnr_db` may be
/// `Infinity` (lossless) or `NaN`/`null` (not drawn).
#[wasm_bindgen(js_name = drawFormats)]
pub fn draw_formats(
    canvas: HtmlCanvasElement,
    view: JsValue,
    style: JsValue,
) -> Result<(), JsError> {
    let view: FormatsView = from_js(&view, "formats view")?;
    let style = style_from_js(&style)?;
    with_canvas(canvas, |area| plot::draw_formats(area, &view, &style))
}

/// Draw the AdaRound optimisation history on `canvas`. `view` is `{history: [{iteration,
/// recon_loss, round_loss, beta, binary_fraction}], iterations, warm_start_end}`.
#[wasm_bindgen(js_name = drawAdaRound)]
pub fn draw_adaround(
    canvas: HtmlCanvasElement,
    view: JsValue,
    style: JsValue,
) -> Result<(), JsError> {
    let view: AdaRoundView = from_js(&view, "AdaRound view")?;
    let style = style_from_js(&style)?;
    with_canvas(canvas, |area| plot::draw_adaround(area, &view, &style))
}

/// The number-formats chart as an SVG document of `width` × `height` pixels.
#[wasm_bindgen(js_name = renderFormatsSvg)]
pub fn render_formats_svg(
    view: JsValue,
    style: JsValue,
    width: u32,
    height: u32,
) -> Result<String, JsError> {
    let view: FormatsView = from_js(&view, "formats view")?;
    formats_svg(&view, &style_from_js(&style)?, (width, height)).map_err(js_err)
}

/// The AdaRound optimisation history chart as an SVG document of `width` × `height` pixels.
#[wasm_bindgen(js_name = renderAdaRoundSvg)]
pub fn render_adaround_svg(
    view: JsValue,
    style: JsValue,
    width: u32,
    height: u32,
) -> Result<String, JsError> {
    let view: AdaRoundView = from_js(&view, "AdaRound view")?;
    adaround_svg(&view, &style_from_js(&style)?, (width, height)).map_err(js_err)
}

// -------------------------------------------------------------------------------------------
// The model view: ranking every tensor of a checkpoint (`crate::model`).

/// A file of a checkpoint as the page gives it: its name (folder path included) and size.
#[derive(serde::Deserialize)]
struct CheckpointFile {
    name: String,
    size: f64,
}

/// A checkpoint being listed from byte ranges the caller supplies (`File.slice`), then ranked
/// one tensor at a time (see `crate::model::ranking`), exported to JS as `ModelSession`.
#[wasm_bindgen(js_name = ModelSession)]
pub struct CheckpointRankingHandle {
    inner: crate::model::CheckpointRanking,
}

#[wasm_bindgen(js_class = ModelSession)]
impl CheckpointRankingHandle {
    /// A session over `files` (`[{name, size}]`, in the order given) ranked with the methods
    /// named in `methods` (observer ids or format labels; empty or null: the defaults).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "{ name: string; size: number }[]")] files: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string[] | null | undefined")] methods: JsValue,
    ) -> Result<CheckpointRankingHandle, JsError> {
        let files: Vec<CheckpointFile> = from_js(&files, "files")?;
        let names: Vec<String> = if methods.is_undefined() || methods.is_null() {
            Vec::new()
        } else {
            from_js(&methods, "methods")?
        };
        let methods = crate::model::methods::resolve(&names).map_err(js_err)?;
        let files = files
            .into_iter()
            .map(|f| (f.name, f.size.max(0.0) as u64))
            .collect();
        Ok(CheckpointRankingHandle {
            inner: crate::model::CheckpointRanking::new(files, methods),
        })
    }

    /// The ids of the methods, in ranking order.
    pub fn methods(&self) -> Vec<String> {
        self.inner.method_ids()
    }

    /// Refuse (as skipped rows) tensors with more than `limit` elements.
    #[wasm_bindgen(js_name = setMaxElements)]
    pub fn set_max_elements(&mut self, limit: Option<f64>) {
        self.inner
            .set_max_elements(limit.map(|l| l.max(0.0) as usize));
    }

    /// The byte ranges still needed to list the files; empty once the listing is ready.
    #[wasm_bindgen(js_name = listingRequests, unchecked_return_type = "ByteRequest[]")]
    pub fn listing_requests(&mut self) -> Result<JsValue, JsError> {
        to_js(&self.inner.listing_requests())
    }

    /// The bytes of file `file` from `offset`, answering a listing request.
    pub fn supply(&mut self, file: usize, offset: f64, bytes: &[u8]) {
        self.inner.supply(file, offset.max(0.0) as u64, bytes);
    }

    /// The tensors in checkpoint order and the files that could not be listed (null until
    /// `listingRequests()` returns no request).
    #[wasm_bindgen(unchecked_return_type = "Listing | null")]
    pub fn listing(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.listing())
    }

    /// The byte range to read for tensor `index` (null: it is skipped without reading).
    #[wasm_bindgen(js_name = tensorRequest, unchecked_return_type = "ByteRequest | null")]
    pub fn tensor_request(&self, index: usize) -> Result<JsValue, JsError> {
        to_js(&self.inner.tensor_request(index))
    }

    /// Rank tensor `index` from the bytes of its request (empty for a tensor without one).
    #[wasm_bindgen(unchecked_return_type = "TensorRow")]
    pub fn rank(&mut self, index: usize, bytes: &[u8]) -> Result<JsValue, JsError> {
        let row = self.inner.rank(index, bytes).map_err(js_err)?;
        to_js(row)
    }

    /// Record tensor `index` as skipped because its bytes could not be read (`reason`).
    #[wasm_bindgen(unchecked_return_type = "TensorRow")]
    pub fn fail(&mut self, index: usize, reason: &str) -> Result<JsValue, JsError> {
        let row = self.inner.fail(index, reason).map_err(js_err)?;
        to_js(row)
    }

    /// Every tensor ranked so far, worst first: `{tensors, load_errors}` (the CLI's `--json`).
    #[wasm_bindgen(unchecked_return_type = "ModelReport")]
    pub fn report(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.report())
    }
}

// -------------------------------------------------------------------------------------------
// The compare view: a quantized checkpoint against its original (`crate::diff`).

/// A diff being listed from byte ranges the caller supplies (`File.slice`), then compared one
/// pair of weights at a time (see `crate::diff::session`), exported to JS as `DiffSession`.
#[wasm_bindgen(js_name = DiffSession)]
pub struct DiffSessionHandle {
    inner: crate::diff::session::DiffSession,
}

#[wasm_bindgen(js_class = DiffSession)]
impl DiffSessionHandle {
    /// A diff of `original`'s files against `quantized`'s (each `[{name, size}]`; folder paths
    /// in the names; `config.json` and its siblings say a layout).
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "{ name: string; size: number }[]")]
        original: JsValue,
        #[wasm_bindgen(unchecked_param_type = "{ name: string; size: number }[]")]
        quantized: JsValue,
    ) -> Result<DiffSessionHandle, JsError> {
        let side = |v: &JsValue, what| -> Result<Vec<(String, u64)>, JsError> {
            let files: Vec<CheckpointFile> = from_js(v, what)?;
            Ok(files
                .into_iter()
                .map(|f| (f.name, f.size.max(0.0) as u64))
                .collect())
        };
        Ok(DiffSessionHandle {
            inner: crate::diff::session::DiffSession::new(
                side(&original, "original files")?,
                side(&quantized, "quantized files")?,
            ),
        })
    }

    /// Weight the error by an importance matrix (imatrix GGUF or legacy `.dat`).
    #[wasm_bindgen(js_name = setImatrix)]
    pub fn set_imatrix(&mut self, name: &str, bytes: &[u8]) -> Result<(), JsError> {
        self.inner.set_imatrix(name, bytes).map_err(js_err)
    }

    /// The byte ranges still needed to list both sides; empty once the pairs are known.
    #[wasm_bindgen(js_name = listingRequests, unchecked_return_type = "SideRequest[]")]
    pub fn listing_requests(&mut self) -> Result<JsValue, JsError> {
        to_js(&self.inner.listing_requests())
    }

    /// The bytes of file `file` of side `side` (0 original, 1 quantized) from `offset`.
    pub fn supply(&mut self, side: usize, file: usize, offset: f64, bytes: &[u8]) {
        self.inner.supply(side, file, offset.max(0.0) as u64, bytes);
    }

    /// Number of pairs of weights (0 until listed).
    #[wasm_bindgen(js_name = pairCount)]
    pub fn pair_count(&self) -> usize {
        self.inner.pair_count()
    }

    /// The byte ranges pair `k` reads.
    #[wasm_bindgen(unchecked_return_type = "SideRequest[]")]
    pub fn needs(&self, k: usize) -> Result<JsValue, JsError> {
        to_js(&self.inner.needs(k).map_err(js_err)?)
    }

    /// Compare pair `k` from the bytes of its `needs(k)`, in that order.
    #[wasm_bindgen(unchecked_return_type = "DiffRow")]
    pub fn compare(
        &mut self,
        k: usize,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array[]")] bytes: Vec<js_sys::Uint8Array>,
    ) -> Result<JsValue, JsError> {
        let owned: Vec<Vec<u8>> = bytes.iter().map(|b| b.to_vec()).collect();
        let slices: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let row = self.inner.compare(k, &slices).map_err(js_err)?;
        to_js(row)
    }

    /// Every pair compared so far, worst first, with the lint and the unpaired weights (the
    /// CLI's `diff --json`).
    #[wasm_bindgen(unchecked_return_type = "DiffReport")]
    pub fn report(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.report().map_err(js_err)?)
    }

    /// The pairs portion `index` of `count` compares, `[start, end)` (the CLI's `--shard`
    /// split, balanced by elements): what one of several workers compares.
    #[wasm_bindgen(js_name = portionRange, unchecked_return_type = "[number, number]")]
    pub fn portion_range(&self, index: usize, count: usize) -> Result<JsValue, JsError> {
        let portion = crate::portion::Portion::new(index, count).map_err(js_err)?;
        let range = self.inner.portion_range(portion).map_err(js_err)?;
        to_js(&[range.start, range.end])
    }

    /// The pairs compared so far as portion `index` of `count`'s document (the CLI's `diff
    /// --shard I/N --json`), for `mergePortions`.
    #[wasm_bindgen(js_name = portionReport, unchecked_return_type = "DiffReport")]
    pub fn portion_report(&self, index: usize, count: usize) -> Result<JsValue, JsError> {
        let portion = crate::portion::Portion::new(index, count).map_err(js_err)?;
        to_js(&self.inner.portion_document(portion).map_err(js_err)?)
    }

    /// Pair `k` up close (both weights' values, the error, the error per block) from the bytes
    /// of its `needs(k)`, in that order.
    #[wasm_bindgen(js_name = tensorView, unchecked_return_type = "DiffTensorView")]
    pub fn tensor_view(
        &self,
        k: usize,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array[]")] bytes: Vec<js_sys::Uint8Array>,
    ) -> Result<JsValue, JsError> {
        let owned: Vec<Vec<u8>> = bytes.iter().map(|b| b.to_vec()).collect();
        let slices: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        to_js(&self.inner.tensor_view(k, &slices).map_err(js_err)?)
    }

    /// The index of the pair of weights `original` and `quantized` (undefined: no such pair).
    #[wasm_bindgen(js_name = pairIndex)]
    pub fn pair_index(&self, original: &str, quantized: &str) -> Option<usize> {
        self.inner.pair_index(original, quantized)
    }
}

/// The documents of every portion of one diff or model ranking put together (the CLI's
/// `merge`): exactly the document of the whole work.
#[wasm_bindgen(js_name = mergePortions)]
pub fn merge_portions(
    #[wasm_bindgen(unchecked_param_type = "object[]")] documents: JsValue,
) -> Result<JsValue, JsError> {
    let documents: Vec<serde_json::Value> = from_js(&documents, "portion documents")?;
    to_js(&crate::portion::merge(&documents).map_err(js_err)?.document)
}

/// The rows of a diff report (what the CSV and the layer profile read of it).
#[derive(serde::Deserialize)]
struct DiffPairs {
    pairs: Vec<crate::diff::DiffRow>,
}

/// A diff report (the CLI's `diff --json`) as CSV: what `quantscope diff --csv` prints.
#[wasm_bindgen(js_name = diffCsv)]
pub fn diff_csv(
    #[wasm_bindgen(unchecked_param_type = "DiffReport")] report: JsValue,
) -> Result<String, JsError> {
    let report: DiffPairs = from_js(&report, "diff report")?;
    Ok(crate::diff::csv::csv(&report.pairs))
}

/// The layer profile of a diff report (quantized and round-to-nearest SQNR in the original's
/// order), emphasising the pair whose original weight is at `highlighted` (a row's `position`).
#[wasm_bindgen(js_name = diffLayerProfile, unchecked_return_type = "LayerProfileView")]
pub fn diff_layer_profile(
    #[wasm_bindgen(unchecked_param_type = "DiffReport")] report: JsValue,
    highlighted: Option<usize>,
) -> Result<JsValue, JsError> {
    let report: DiffPairs = from_js(&report, "diff report")?;
    to_js(&crate::diff::layer_profile(&report.pairs, highlighted))
}

/// Draw one chart of a pair's `DiffTensorView` on `canvas`: `part` is `values` (both
/// histograms overlaid), `error` (the error's histogram) or `blocks` (the MSE per block).
#[wasm_bindgen(js_name = drawDiffTensor)]
pub fn draw_diff_tensor(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(unchecked_param_type = "DiffTensorView")] view: JsValue,
    #[wasm_bindgen(unchecked_param_type = "'values' | 'error' | 'blocks'")] part: &str,
    style: JsValue,
) -> Result<(), JsError> {
    let view: crate::diff::view::DiffTensorView = from_js(&view, "diff tensor view")?;
    let style = style_from_js(&style)?;
    match part {
        "values" => with_canvas(canvas, |area| plot::draw_diff_values(area, &view, &style)),
        "error" => with_canvas(canvas, |area| plot::draw_diff_error(area, &view, &style)),
        "blocks" => with_canvas(canvas, |area| plot::draw_diff_blocks(area, &view, &style)),
        other => Err(JsError::new(&format!(
            "no diff chart {other:?}: values, error or blocks"
        ))),
    }
}

#[wasm_bindgen(js_class = Session)]
impl SessionHandle {
    /// Add tensor `index` of a listed checkpoint, decoded from the bytes of its request, as a
    /// file called `name` holding that one tensor (its original dtype kept).
    #[wasm_bindgen(js_name = addCheckpointTensor, unchecked_return_type = "FileInfo")]
    pub fn add_checkpoint_tensor(
        &mut self,
        name: &str,
        model: &CheckpointRankingHandle,
        index: usize,
        bytes: &[u8],
    ) -> Result<JsValue, JsError> {
        let entry = model.inner.entry(index).map_err(js_err)?;
        self.inner
            .check_budget(name, entry.elements)
            .map_err(js_err)?;
        let tensor = model.inner.read(index, bytes).map_err(js_err)?;
        let member = crate::tensor::NamedTensor {
            name: entry.name.clone(),
            tensor,
        };
        to_js(&self.inner.add_file(name, vec![member]))
    }
}

/// The methods a checkpoint can be ranked by: `{defaults, observers, formats}` (names).
#[wasm_bindgen(js_name = modelMethods, unchecked_return_type = "MethodChoices")]
pub fn model_methods() -> Result<JsValue, JsError> {
    to_js(&crate::model::methods::choices())
}

/// A ranking as CSV (what `quantscope model --csv` prints), with the columns of `methods`.
#[wasm_bindgen(js_name = modelCsv)]
pub fn model_csv(
    #[wasm_bindgen(unchecked_param_type = "ModelReport")] report: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string[]")] methods: JsValue,
) -> Result<String, JsError> {
    let report: crate::model::ModelReport = from_js(&report, "model report")?;
    let methods: Vec<String> = from_js(&methods, "methods")?;
    Ok(crate::model::csv(&report, &methods))
}

/// The layer-profile chart's data for ranked `rows` (any order) and `methods` (ids, the
/// ranking's first), emphasising the row at checkpoint `position` `highlighted`.
#[wasm_bindgen(js_name = layerProfile, unchecked_return_type = "LayerProfileView")]
pub fn layer_profile(
    #[wasm_bindgen(unchecked_param_type = "TensorRow[]")] rows: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string[]")] methods: JsValue,
    highlighted: Option<usize>,
) -> Result<JsValue, JsError> {
    let rows: Vec<crate::model::TensorRow> = from_js(&rows, "rows")?;
    let methods: Vec<String> = from_js(&methods, "methods")?;
    to_js(&crate::model::layer_profile(&rows, &methods, highlighted))
}

/// Draw the layer profile (see `layerProfile`) on `canvas`.
#[wasm_bindgen(js_name = drawLayerProfile)]
pub fn draw_layer_profile(
    canvas: HtmlCanvasElement,
    #[wasm_bindgen(unchecked_param_type = "LayerProfileView")] view: JsValue,
    style: JsValue,
) -> Result<(), JsError> {
    let view: plot::LayerProfileView = from_js(&view, "layer profile")?;
    let style = style_from_js(&style)?;
    with_canvas(canvas, |area| plot::draw_layer_profile(area, &view, &style))
}

/// The layer profile as an SVG document of `width` × `height` pixels.
#[wasm_bindgen(js_name = renderLayerProfileSvg)]
pub fn render_layer_profile_svg(
    #[wasm_bindgen(unchecked_param_type = "LayerProfileView")] view: JsValue,
    style: JsValue,
    width: u32,
    height: u32,
) -> Result<String, JsError> {
    let view: plot::LayerProfileView = from_js(&view, "layer profile")?;
    crate::plot::svg::layer_profile_svg(&view, &style_from_js(&style)?, (width, height))
        .map_err(js_err)
}
