// quantscope for JavaScript: the same WebAssembly engine as the explorer page, as an ES module
// for browser pages, Observable, Deno and Node. A thin synchronous layer over the one engine
// façade (engine.js); results are the engine's Reports.
//
//   import * as qs from 'quantscope';
//   await qs.init();                       // browsers/Deno: fetches the .wasm next to this module;
//                                          // Node: reads it from disk (or qs.initSync(bytes))
//   const t = qs.loadTensor(npyBytes, { name: 'act.npy' });
//   const r = qs.observe(t, 'torch.HistogramObserver', { bins: 2048 });
//   qs.renderPanel(document.querySelector('#out'), r);   // browsers
//   const svg = qs.renderSvg(r);                          // anywhere, no DOM needed
import initWasm, * as wasm from '../pkg/quantscope.js';
import { adaroundSteps, diffSteps, loadedEngine } from './engine.js';
import { runAsync, runSync } from './steps.js';
import { createPanel, fillPanel, drawPanel } from './panel.js';
import { markLoaded, wasmUrl } from './wasm-flavour.js';
export { loadedFlavour } from './wasm-flavour.js';

export { Engine } from './engine.js';
export { serve, RemoteEngine, LocalEngine, EngineError } from './rpc.js';

let initialised = false;
let initPromise = null;
/** The compiled WebAssembly module, when this thread compiled it or was given it. */
let compiled = null;

const isNode = typeof process !== 'undefined' && process.versions != null && process.versions.node != null && typeof window === 'undefined';

/**
 * Initialise the WebAssembly module (idempotent). `input` may be the .wasm bytes, a URL, a
 * Response or a WebAssembly.Module; by default the file next to this package is used.
 * `warm` (default true) loads a small synthetic file and runs the default observers once on it
 * (about 0.2 s) so that the engine has optimised its loading code and their kernels before the
 * first real tensor: V8 runs a first call in baseline code, and a large tensor's first
 * observation would be about 1.5× slower (README, "Speed"). In Node, init also starts the
 * `threads − 1` worker threads of `observeMany` (`threads`: default one per core; idle until
 * then, they never keep the process alive), and they run the observers' warm-up while the
 * calling thread goes on: V8 shares the optimised code between the threads.
 */
export function init(input, { warm = true, threads } = {}) {
  checkThreads(threads);
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
      // Node: compiled here, so that `observeMany`'s worker threads instantiate this module.
      if (isNode && (ArrayBuffer.isView(source) || source instanceof ArrayBuffer)) source = await WebAssembly.compile(source);
      if (source instanceof WebAssembly.Module) compiled = source;
      await initWasm({ module_or_path: source });
      markLoaded(wasm);
      let helpers = 0;
      if (isNode && compiled) {
        const { startThreads, coreCount } = await threadsModule();
        helpers = startThreads(compiled, (threads ?? coreCount()) - 1, { warm }).length;
      }
      // With worker threads warming the observers, this thread warms its loading code only.
      if (warm) wasm.warmUp(helpers === 0 ? undefined : 'loading');
      initialised = true;
    })();
  }
  return initPromise;
}

/** Refuses a `threads` option that is not a whole number ≥ 1 (undefined: the default). */
function checkThreads(threads) {
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1)) {
    throw new RangeError(`threads must be a whole number ≥ 1, not ${threads}`);
  }
}

/** Initialise synchronously from the .wasm bytes (or a compiled WebAssembly.Module). */
export function initSync(bytes) {
  if (initialised) return;
  compiled = bytes instanceof WebAssembly.Module ? bytes : new WebAssembly.Module(bytes);
  wasm.initSync({ module: compiled });
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

/** What a report shows as a panel: the engine's one display function. */
export function panelView(report) {
  ready();
  return wasm.panelView(report);
}

let nextTensorKey = 1;
/**
 * Tensors smaller than this are observed in the calling thread unless an `observeMany` call
 * names its `threads`: starting a thread and copying the tensor to it costs more than it saves.
 */
const SPREAD_MIN_ELEMENTS = 1 << 20;
/** threads.js, once imported (Node only: `threadsModule`). */
let sideBySide = null;

/**
 * threads.js (Node only), imported by a computed URL: a bundler for browsers (the notebook
 * widget's) then leaves it, and the `node:` modules it imports, out of its bundle.
 */
function threadsModule() {
  sideBySide ||= import(new URL('./threads.js', import.meta.url).href);
  return sideBySide;
}

/** A loaded tensor (or several calibration batches), with the engine that holds it. */
export class Tensor {
  /** Mean, std and display histogram, once read (`statistics`). */
  #statistics = null;

  constructor(engine, files, summary, batches = [], split = null) {
    /** The engine holding the tensor (its own session). */
    this.engine = engine;
    /** This tensor among the process's (which one `observeMany`'s threads hold). */
    this.key = nextTensorKey++;
    /** How the batches were split (loadTensor's `split`). */
    this.split = split;
    this.files = files;
    /** The batches as loaded tensors of the engine: [{file, member}]. */
    this.batchRefs = batches;
    this.name = summary.name;
    this.shape = summary.shape;
    this.dtype = summary.dtype;
    this.elements = summary.elements;
    this.batches = summary.batches;
    this.nonfinite = summary.nonfinite;
    this.min = summary.min;
    this.max = summary.max;
  }

  /**
   * The mean, std and display histogram: computed on first use (a histogram of 65,536 bins
   * over every value, about 0.15 s at 16M values in WebAssembly, which observing does not need).
   */
  statistics() {
    if (!this.#statistics) {
      if (!this.engine) throw new Error('the tensor was freed');
      const { summary, hist } = this.engine.statistics();
      this.#statistics = { mean: summary.mean, std: summary.std, histogram: hist };
    }
    return this.#statistics;
  }

  /** Mean of the finite values. */
  get mean() {
    return this.statistics().mean;
  }

  /** Standard deviation of the finite values. */
  get std() {
    return this.statistics().std;
  }

  /** The histogram panels draw. */
  get histogram() {
    return this.statistics().histogram;
  }

  /** The values of the first batch (the whole tensor when there is one), row-major. */
  values() {
    if (!this.engine) throw new Error('the tensor was freed');
    return this.engine.tensorValues(this.batchRefs[0]);
  }

  /** Free the WebAssembly memory held by this tensor. */
  free() {
    // A report drawn later still needs the histogram.
    if (drawn.has(this) && this.engine) this.statistics();
    if (this.engine) this.engine.free();
    this.engine = null;
    if (sideBySide) sideBySide.then((threads) => threads.dropTensor(this.key));
  }
}

/**
 * Load a tensor from file bytes (.npy, .npz, .safetensors, or a checkpoint file held whole: a
 * torch.save pickle read through the allow-list, GGUF, ONNX; the format is recognised from the
 * bytes), from a Float32Array of values with `{shape}`, or an array of those as calibration
 * batches in order.
 * @param data Uint8Array | ArrayBuffer | Float32Array | Array<...>
 * @param options {name, member, shape, split: {axis, count}}
 */
export function loadTensor(data, { name = 'tensor.npy', member, shape, split = null } = {}) {
  ready();
  const list = Array.isArray(data) ? data : [data];
  const files = list.map((d) => (d instanceof Float32Array ? { data: d, shape: shape || [d.length] } : d));
  const names = list.map((_, i) => (list.length > 1 ? `${name}[${i}]` : name));
  const { engine, infos, batches, summary } = loadedEngine({ files, names, member, split });
  return new Tensor(engine, infos, summary, batches, split);
}

/** Tensors whose reports draw their histogram (`decorate`): it is kept when they are freed. */
const drawn = new WeakSet();
const RESULT_HIST = Symbol('histogram');
const RESULT_TENSOR = Symbol('tensor');

function decorate(report, tensor) {
  drawn.add(tensor);
  Object.defineProperty(report, RESULT_HIST, { get: () => tensor.histogram, enumerable: false });
  Object.defineProperty(report, RESULT_TENSOR, { value: tensor, enumerable: false });
  // Rich display in Deno's Jupyter kernel.
  Object.defineProperty(report, Symbol.for('Jupyter.display'), {
    value: () => ({
      'image/svg+xml': renderSvg(report),
      'text/plain': JSON.stringify({ observer: report.observer, scale: report.scale, zero_point: report.zero_point, metrics: report.metrics }),
    }),
    enumerable: false,
  });
  return report;
}

function tensorOf(tensor, what) {
  if (!tensor || !tensor.engine) throw new TypeError(`${what}() needs a tensor from loadTensor()`);
  return tensor.engine;
}

/**
 * Run observer `observerId` with `params` over `tensor` (all its batches, in order). Returns its
 * Report: `ok`, `error`, the qparams (`scale`, `zero_point`, `min_val`, `max_val`, `grid`,
 * `clip_range`, …), `metrics`. Observer errors (e.g. invalid parameter combinations) are
 * reported in the report, not thrown; `null` parameters take their defaults (except where a
 * framework's call gives `None` a meaning of its own, e.g. torchao's `zero_point_domain`).
 * With `{ explain: true }` the report also carries `derivation`: the steps and numbers by which
 * the observer reached its range and scale (as `quantscope observe --explain --json`).
 */
export function observe(tensor, observerId, params = {}, { explain = false } = {}) {
  ready();
  const engine = tensorOf(tensor, 'observe');
  return decorate(engine.observation({ id: observerId, params: plainParams(params), explain }), tensor);
}

/**
 * Run each observer of `list` (ids, or `{id, params}`) over `tensor`, as many `observe` calls
 * would, side by side: in Node the observations are shared out between the calling thread and
 * `threads − 1` worker threads (default: one thread per core), each holding a copy of the
 * values this thread loaded, as the CLI uses every core; elsewhere, and for tensors under 1M
 * values unless `threads` is given (SPREAD_MIN_ELEMENTS), they run one after the other in the
 * calling thread. Resolves to the reports in the order of `list`, each the one `observe`
 * returns (`state_reused` aside: it tells whether that thread had collected the state before).
 */
export async function observeMany(tensor, list, { threads, explain = false } = {}) {
  ready();
  const engine = tensorOf(tensor, 'observeMany');
  if (!Array.isArray(list)) throw new TypeError('observeMany() needs a list of observer ids or {id, params}');
  checkThreads(threads);
  const items = list.map((item) => (typeof item === 'string' ? { id: item, params: {} } : { id: item.id, params: plainParams(item.params) }));
  const observeHere = (item) => engine.observation({ ...item, explain });
  const spread = isNode && compiled && items.length > 1 && (threads ?? (tensor.elements >= SPREAD_MIN_ELEMENTS ? Infinity : 1)) > 1;
  let reports;
  if (spread) {
    const { observeSideBySide, coreCount } = await threadsModule();
    ({ reports } = await observeSideBySide({ module: compiled, tensor, items, explain, threads: threads ?? coreCount(), observe: observeHere }));
  } else {
    reports = items.map(observeHere);
  }
  return reports.map((report) => decorate(report, tensor));
}

/**
 * `params` as the engine takes them: `undefined` left out, `null` passed on (the engine reads
 * it as the default, or as Python's `None` where the framework's call does), and a vector
 * parameter given as a Tensor (its values), a typed array or an array of numbers as a plain
 * array of numbers.
 */
function plainParams(params) {
  const out = {};
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined) continue;
    if (v instanceof Tensor) out[k] = Array.from(v.values());
    else if (ArrayBuffer.isView(v)) out[k] = Array.from(v);
    else out[k] = v;
  }
  return out;
}

/**
 * Quantization error versus clipping threshold of `tensor` on an integer grid (`bits`,
 * `scheme` 'affine' | 'symmetric'), with a marker per report of `results`:
 * `{points: [[threshold, mse, sqnr_db], ...], best, label, markers}`.
 */
export function errorCurve(tensor, { bits = 8, scheme = 'affine', points = 200, results = [] } = {}) {
  ready();
  const engine = tensorOf(tensor, 'errorCurve');
  const ok = results.map((r, i) => [r, i]).filter(([r]) => r.ok);
  return engine.curve({ spec: { bits, scheme, points }, ids: ok.map(([r]) => r.observer), colors: ok.map(([, i]) => i) });
}

/**
 * Render `report` into `element` (browsers): the explorer's panel, with its machine-readable
 * contract (role="region", aria-label = observer id, data-clip-min, data-scale, …).
 */
export function renderPanel(element, report, { color = 0, logCounts = false } = {}) {
  ready();
  if (typeof document === 'undefined') throw new Error('renderPanel needs a DOM; use renderSvg() in Node');
  const panel = createPanel({ id: report.observer, granularity: report.granularity }, color);
  element.replaceChildren(panel);
  const view = fillPanel(panel, report);
  drawPanel(panel, view, report[RESULT_HIST], { logCounts });
  return panel;
}

/** Height of a panel's SVG: taller with a per-channel chart, one line per note. */
function panelHeight(view) {
  return (view.channels ? 700 : 520) + 22 * (view.notes || []).length;
}

/**
 * SVG of one report (a panel), or of several reports of the same tensor (a comparison, with
 * the error-versus-clipping curve unless `curve: false`). Needs no DOM.
 */
export function renderSvg(results, { width, height, logCounts = false, sqnr = false, curve = true, bits = 8, scheme = 'affine', title } = {}) {
  ready();
  const style = { logCounts, sqnr, pixelRatio: 1 };
  if (!Array.isArray(results)) {
    const hist = results[RESULT_HIST];
    if (!hist) throw new TypeError('renderSvg() needs a report from observe()');
    const view = wasm.panelView(results);
    return wasm.renderPanelSvg(hist.lo, hist.hi, hist.counts, view, style, width || 560, height || panelHeight(view));
  }
  if (results.length === 0) throw new Error('renderSvg() needs at least one report');
  const tensor = results[0][RESULT_TENSOR];
  const hist = results[0][RESULT_HIST];
  if (!tensor || !hist) throw new TypeError('renderSvg() needs reports from observe()');
  const curveView = curve && tensor.engine ? errorCurve(tensor, { bits, scheme, results }) : null;
  const comparison = {
    title: title || tensor.name,
    subtitle: `shape [${tensor.shape.join(', ')}] · ${tensor.dtype} · ${tensor.elements} values`,
    hist: { lo: hist.lo, hi: hist.hi, counts: Array.from(hist.counts) },
    panels: results.map((r, i) => ({ ...wasm.panelView(r), color: i })),
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
  return runSync(tensorOf(tensor, 'compareFormats').formatSteps({ extra })).rows;
}

/**
 * Quantize–dequantize `tensor` (its first batch, whole) with quantizer `id` — a format of
 * `quantizers().formats` (`bnb.nf4`, `ggml.Q4_K`, `mx`, `int`, …) or one of Quark's quantizers
 * (`quark.INTQuantizer`, …) — and `params`, the library's own keys (e.g. `{quant_type: 'nf4',
 * blocksize: 64, compress_statistics: true}`; ggml's `imatrix` as a Tensor, typed array or
 * array of one importance per column), exactly as `quantscope quantize` applies it. Returns
 * `{quantizer, format, bits_per_value, mse, max_abs_err, sqnr_db, clipped_fraction, count,
 * shape, values}`, `values` the dequantized tensor (Float32Array, row-major). Throws on
 * parameters or shapes the quantizer refuses. With `{ explain: true }` the result also carries
 * `derivation`: how block `block` (default: the one holding the largest magnitude) was stored,
 * step by step with the quantizer's own search tables (as `quantscope quantize --explain
 * --json`; ggml's types and MX, others throw saying so).
 */
export function quantize(tensor, id, params = {}, { explain = false, block = null } = {}) {
  ready();
  const engine = tensorOf(tensor, 'quantize');
  const result = engine.quantize({ id, params: plainParams(params) });
  if (explain) result.derivation = engine.explainFormat({ id, params: plainParams(params), block });
  return result;
}

/** One side of `adaround`: file bytes, `{bytes, member}`, or `{data: Float32Array, shape}`. */
function adaroundSide(source, name) {
  if (source && source.data instanceof Float32Array) return { file: source, name };
  if (source && source.bytes !== undefined && !ArrayBuffer.isView(source)) return { file: source.bytes, member: source.member, name };
  return { file: source, name };
}

/**
 * AdaRound for one linear layer: weight `W` [out, in] and its inputs `X` [n, in] (leading axes
 * flattened into rows), each as file bytes or `{data: Float32Array, shape}` (with `member` to
 * pick a tensor of an .npz/.safetensors). `params` are those of `quantizers().optimisers`
 * (Quark's defaults). `onProgress(status)` sees `{iterations_run, iterations, done, points}`
 * after every slice of about 30 ms and may return `false` to stop early. Returns round-to-nearest
 * and AdaRound output error, flipped weights, the final share of binary decisions and the
 * history.
 */
export function adaround(weight, inputs, params = {}, { onProgress } = {}) {
  ready();
  const w = adaroundSide(weight, 'W');
  const x = adaroundSide(inputs, 'X');
  return runSync(adaroundSteps({ w, x, params }), { onProgress });
}

/**
 * The files one side of `diff` names: a path string (a file, or a folder whose checkpoint and
 * configuration files are taken in path order, named by their path inside it) in Node and
 * Deno, anything else as the engine takes it (a File/Blob, `{blob, name}`, bytes, `{name,
 * size, read(start, end)}`); a list is several files. Paths are opened with `node:fs` (which
 * Deno provides too); `opened` collects the descriptors to close.
 */
async function diffInput(input, opened) {
  const list = Array.isArray(input) ? input : [input];
  const out = [];
  for (const item of list) {
    if (typeof item !== 'string') {
      out.push(item);
      continue;
    }
    const fs = await import('node:fs');
    const file = (name, full) => {
      const { size } = fs.statSync(full);
      let fd = null;
      return {
        name,
        size,
        read(start, end) {
          if (fd === null) {
            fd = fs.openSync(full, 'r');
            opened.push(fd);
          }
          const bytes = new Uint8Array(end - start);
          let got = 0;
          while (got < bytes.length) {
            const n = fs.readSync(fd, bytes, got, bytes.length - got, start + got);
            if (n === 0) throw new Error(`${name}: the file ended at byte ${start + got}, before ${end}`);
            got += n;
          }
          return bytes;
        },
      };
    };
    if (fs.statSync(item).isDirectory()) {
      const names = fs.readdirSync(item, { recursive: true })
        .map(String)
        .map((n) => n.replaceAll('\\', '/'))
        .filter((n) => fs.statSync(`${item}/${n}`).isFile())
        .sort((a, b) => {
          const pa = a.split('/');
          const pb = b.split('/');
          for (let i = 0; i < Math.min(pa.length, pb.length); i += 1) if (pa[i] !== pb[i]) return pa[i] < pb[i] ? -1 : 1;
          return pa.length - pb.length;
        });
      if (!names.length) throw new Error(`${item}: the folder holds no checkpoint file`);
      // Named with their folder, as a dropped folder names them, so the engine knows them as
      // a folder's files (and leaves out those no reader takes).
      out.push(...names.map((n) => file(`${item}/${n}`, `${item}/${n}`)));
    } else {
      out.push(file(item, item));
    }
  }
  return out;
}

/**
 * Compare a quantized checkpoint with its original, weight by weight, exactly as `quantscope
 * diff ORIGINAL QUANTIZED [--imatrix F]` does. `original`, `quantized`: a file path or folder
 * path (Node, Deno), a File/Blob (browsers), bytes, or a list of them (a side's files, with its
 * `config.json` and quantization config for a quantized Hugging Face folder); `imatrix`: an
 * importance matrix the same way (imatrix GGUF or legacy `.dat`). Only the headers and one pair
 * of weights are read at a time. `onProgress(p)` sees `{fraction, label, pairs, row}` after
 * every pair; an aborted `signal` rejects with `cancelled`. Resolves to the report, the CLI's
 * `diff --json` document: `{pairs (worst first), unpaired, lint, files}`.
 */
export async function diff(original, quantized, { imatrix = null, onProgress, signal } = {}) {
  ready();
  const opened = [];
  try {
    const args = {
      original: await diffInput(original, opened),
      quantized: await diffInput(quantized, opened),
      imatrix: imatrix === null || imatrix === undefined ? null : (await diffInput(imatrix, opened))[0],
    };
    return await runAsync(diffSteps(args), { onProgress, signal });
  } finally {
    if (opened.length) {
      const fs = await import('node:fs');
      for (const fd of opened) fs.closeSync(fd);
    }
  }
}
