// quantscope for JavaScript: the same WebAssembly engine as the explorer page, as an ES module
// for browser pages, Observable, Deno and Node.
//
//   import * as qs from 'quantscope';
//   await qs.init();                       // browsers/Deno: fetches the .wasm next to this module;
//                                          // Node: reads it from disk (or qs.initSync(bytes))
//   const t = qs.loadTensor(npyBytes, { name: 'act.npy' });
//   const r = qs.observe(t, 'torch.HistogramObserver', { bins: 2048 });
//   qs.renderPanel(document.querySelector('#out'), r);   // browsers
//   const svg = qs.renderSvg(r);                          // anywhere, no DOM needed
import initWasm, * as wasm from '../pkg/quantscope.js';
import { createPanel, fillPanel, drawPanel } from './panel.js';
import { markLoaded, wasmUrl } from './wasm-flavour.js';
export { loadedFlavour } from './wasm-flavour.js';

let initialised = false;
let initPromise = null;

const isNode = typeof process !== 'undefined' && process.versions != null && process.versions.node != null && typeof window === 'undefined';

/**
 * Initialise the WebAssembly module (idempotent). `input` may be the .wasm bytes, a URL, a
 * Response or a WebAssembly.Module; by default the file next to this package is used.
 */
export function init(input) {
  if (initialised) return Promise.resolve();
  if (!initPromise) {
    initPromise = (async () => {
      let source = input;
      if (source === undefined) {
        // The SIMD128 or the baseline build, whichever this engine runs (wasm-flavour.js).
        source = wasmUrl();
        if (isNode) {
          const { readFile } = await import('node:fs/promises');
          source = await readFile(source);
        }
      }
      await initWasm({ module_or_path: source });
      markLoaded(wasm);
      initialised = true;
    })();
  }
  return initPromise;
}

/** Initialise synchronously from the .wasm bytes (or a compiled WebAssembly.Module). */
export function initSync(bytes) {
  if (initialised) return;
  wasm.initSync({ module: bytes });
  markLoaded(wasm);
  initialised = true;
}

function ready() {
  if (!initialised) {
    throw new Error('quantscope is not initialised: call `await init()` (or `initSync(wasmBytes)`) first');
  }
}

/** The crate version. */
export function version() {
  ready();
  return wasm.version();
}

/** Every observer (id, framework, granularity, parameters with ranges and defaults, quirks). */
export function observers() {
  ready();
  return wasm.registry().observers;
}

/** Named presets (e.g. PyTorch's default_weight_observer). */
export function presets() {
  ready();
  return wasm.registry().presets;
}

function toBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError('expected the bytes of a .npy/.npz/.safetensors file (Uint8Array or ArrayBuffer)');
}

/** A loaded tensor (or several calibration batches). */
export class Tensor {
  constructor(session, files, summary, histogram) {
    /** @private */
    this.session = session;
    this.files = files;
    this.name = summary.name;
    this.shape = summary.shape;
    this.dtype = summary.dtype;
    this.elements = summary.elements;
    this.batches = summary.batches;
    this.nonfinite = summary.nonfinite;
    this.min = summary.min;
    this.max = summary.max;
    this.mean = summary.mean;
    this.std = summary.std;
    this.histogram = histogram;
  }

  /** Free the WebAssembly memory held by this tensor. */
  free() {
    if (this.session) this.session.free();
    this.session = null;
  }
}

/**
 * Load a tensor from file bytes (.npy, .npz, .safetensors; the format is recognised from the
 * bytes), from a Float32Array of values with `{shape}`, or an array of those as calibration
 * batches in order.
 * @param data Uint8Array | ArrayBuffer | Float32Array | Array<...>
 * @param options {name, member, shape, split: {axis, count}}
 */
export function loadTensor(data, { name = 'tensor.npy', member, shape, split = null } = {}) {
  ready();
  const session = new wasm.Session();
  try {
    const list = Array.isArray(data) ? data : [data];
    const files = list.map((d, i) => {
      const n = list.length > 1 ? `${name}[${i}]` : name;
      if (d instanceof Float32Array) {
        return session.addTensor(n, shape || [d.length], d);
      }
      return session.loadFile(n, toBytes(d));
    });
    const pick = (info) => {
      if (member === undefined) return info.members[0].name;
      if (!info.members.some((m) => m.name === member)) {
        throw new Error(`no tensor named ${JSON.stringify(member)} in ${info.name}; members: ${info.members.map((m) => m.name).join(', ')}`);
      }
      return member;
    };
    const summary = session.select({ batches: files.map((info, i) => ({ file: i, member: pick(info) })), split });
    return new Tensor(session, files, summary, session.histogram());
  } catch (err) {
    session.free();
    throw err;
  }
}

const RESULT_HIST = Symbol('histogram');
const RESULT_TENSOR = Symbol('tensor');

function decorate(result, tensor) {
  Object.defineProperty(result, RESULT_HIST, { value: tensor.histogram, enumerable: false });
  Object.defineProperty(result, RESULT_TENSOR, { value: tensor, enumerable: false });
  // Rich display in Deno's Jupyter kernel.
  Object.defineProperty(result, Symbol.for('Jupyter.display'), {
    value: () => ({
      'image/svg+xml': renderSvg(result),
      'text/plain': JSON.stringify({ observer: result.observer, scale: result.scale, zero_point: result.zero_point, metrics: result.metrics }),
    }),
    enumerable: false,
  });
  return result;
}

/**
 * Run observer `observerId` with `params` over `tensor` (all its batches, in order). Returns a
 * plain result object: `ok`, `error`, `qparams`, `metrics`, `clip_min`/`clip_max`,
 * `grid_min`/`grid_max`, `scale`, `zero_point`, `quirks`, `view`. Observer errors (e.g. invalid
 * parameter combinations) are reported in the result, not thrown.
 */
export function observe(tensor, observerId, params = {}) {
  ready();
  if (!tensor || !tensor.session) throw new TypeError('observe() needs a tensor from loadTensor()');
  const clean = Object.fromEntries(Object.entries(params).filter(([, v]) => v !== null && v !== undefined));
  return decorate(tensor.session.update(observerId, clean), tensor);
}

/**
 * Quantization error versus clipping threshold of `tensor` on an integer grid (`bits`,
 * `scheme` 'affine' | 'symmetric'), with a marker per result of `results`:
 * `{points: [[threshold, mse, sqnr_db], ...], best, label, markers}`.
 */
export function errorCurve(tensor, { bits = 8, scheme = 'affine', points = 200, results = [] } = {}) {
  ready();
  const ok = results.map((r, i) => [r, i]).filter(([r]) => r.ok);
  return tensor.session.curve({ bits, scheme, points }, ok.map(([r]) => r.observer), ok.map(([, i]) => i));
}

/**
 * Render `result` into `element` (browsers): the explorer's panel, with its machine-readable
 * contract (role="region", aria-label = observer id, data-clip-min, data-scale, …).
 */
export function renderPanel(element, result, { color = 0, logCounts = false } = {}) {
  ready();
  if (typeof document === 'undefined') throw new Error('renderPanel needs a DOM; use renderSvg() in Node');
  const panel = createPanel({ id: result.observer, granularity: result.granularity }, color);
  element.replaceChildren(panel);
  fillPanel(panel, result);
  drawPanel(panel, result, result[RESULT_HIST], { logCounts });
  return panel;
}

/**
 * SVG of one result (a panel), or of several results of the same tensor (a comparison, with
 * the error-versus-clipping curve unless `curve: false`). Needs no DOM.
 */
export function renderSvg(results, { width, height, logCounts = false, sqnr = false, curve = true, bits = 8, scheme = 'affine', title } = {}) {
  ready();
  const style = { logCounts, sqnr, pixelRatio: 1 };
  if (!Array.isArray(results)) {
    const r = results;
    const hist = r[RESULT_HIST];
    if (!hist) throw new TypeError('renderSvg() needs a result from observe()');
    const h = height || (r.view.channels ? 700 : 520) + 22 * (r.view.notes || []).length;
    return wasm.renderPanelSvg(hist.lo, hist.hi, hist.counts, r.view, style, width || 560, h);
  }
  if (results.length === 0) throw new Error('renderSvg() needs at least one result');
  const tensor = results[0][RESULT_TENSOR];
  const hist = results[0][RESULT_HIST];
  if (!tensor || !hist) throw new TypeError('renderSvg() needs results from observe()');
  const curveView = curve && tensor.session ? errorCurve(tensor, { bits, scheme, results }) : null;
  const shape = `[${tensor.shape.join(', ')}]`;
  const comparison = {
    title: title || tensor.name,
    subtitle: `shape ${shape} · ${tensor.dtype} · ${tensor.elements} values`,
    hist: { lo: hist.lo, hi: hist.hi, counts: Array.from(hist.counts) },
    panels: results.map((r, i) => ({ ...r.view, color: i })),
    curve: curveView,
  };
  return wasm.renderComparisonSvg(comparison, style, width || 1400);
}

/**
 * The quantizer registry: number format families and rounding optimisers (AdaRound), each
 * with its parameters (type, range, default) — `{formats: [...], optimisers: [...]}`.
 */
export function quantizers() {
  ready();
  return wasm.quantizers();
}

/**
 * What `tensor` (its first batch, whole) loses in every number format of the standard line-up
 * plus `extra` formats (`[{id, params}]`, ids from `quantizers().formats`): one row per format
 * with `format`, `bits_per_value` (shared scales included), `mse`, `sqnr_db`, `max_abs_err`,
 * `clipped_fraction`; a format that does not apply gives `{id, params, error}`.
 */
export function compareFormats(tensor, { extra = [] } = {}) {
  ready();
  if (!tensor || !tensor.session) throw new TypeError('compareFormats() needs a tensor from loadTensor()');
  const target = tensor.session.formatLineup();
  const jobs = target.lineup.map(([id, params]) => ({ id, params })).concat(extra);
  return jobs.map(({ id, params }) => {
    try {
      return tensor.session.evaluateFormat(id, params || {});
    } catch (err) {
      return { id, params, error: err.message };
    }
  });
}

/** A tensor source for `adaround`: file bytes, or `{data: Float32Array, shape, member?}`. */
function addSource(session, source, name) {
  if (source && source.data instanceof Float32Array) {
    return session.addTensor(name, source.shape || [source.data.length], source.data).members[0].name;
  }
  const bytes = source && source.bytes !== undefined ? source.bytes : source;
  const info = session.loadFile(name, toBytes(bytes));
  const member = source && source.member !== undefined ? source.member : info.members[0].name;
  if (!info.members.some((m) => m.name === member)) {
    throw new Error(`no tensor named ${JSON.stringify(member)} in ${name}; members: ${info.members.map((m) => m.name).join(', ')}`);
  }
  return member;
}

/**
 * AdaRound for one linear layer: weight `W` [out, in] and its inputs `X` [n, in] (leading axes
 * flattened into rows), each as file bytes or `{data: Float32Array, shape}` (with `member` to
 * pick a tensor of an .npz/.safetensors). `params` are those of `quantizers().optimisers`
 * (Quark's defaults). `onProgress(status)` sees `{iterations_run, iterations, points}` about
 * every 1% and may return `false` to stop early. Returns round-to-nearest and AdaRound output
 * error, flipped weights, the final share of binary decisions and the history.
 */
export function adaround(weight, inputs, params = {}, { onProgress } = {}) {
  ready();
  const session = new wasm.Session();
  try {
    const w = addSource(session, weight, 'W');
    const x = addSource(session, inputs, 'X');
    const start = session.adaroundBegin({ file: 0, member: w }, { file: 1, member: x }, params);
    let cancelled = false;
    for (;;) {
      const status = session.adaroundStep(Math.max(1, Math.floor(start.config.iterations / 100)));
      if (onProgress && onProgress(status) === false && !status.done) cancelled = true;
      if (status.done || cancelled) break;
    }
    return { ...session.adaroundFinish(), ...start, cancelled };
  } finally {
    session.free();
  }
}
