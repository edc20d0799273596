// The explorer page: loading files and choosing the tensor (member, batches), the URL state,
// crash recovery and the one list of views (VIEWS below), which everything loops over. The
// engine runs in a pool of Web Workers (worker.js, each behind rpc.js's RemoteEngine, joined by
// lib/pool.js: the observers are spread over them); this thread only draws (the WebAssembly
// plotting code on canvases). `window.quantscope` is a thin layer over the views and the engine.
import init from './pkg/quantscope.js';
import { wasmUrl } from './lib/wasm-flavour.js';
import { RemoteEngine } from './lib/rpc.js';
import { EnginePool, poolSize } from './lib/pool.js';
import { Views } from './ui/view.js';
import { TensorView } from './ui/tensor.js';
import { ObserversView } from './ui/observers.js';
import { FormatsView } from './ui/formats.js';
import { AdaRoundView } from './ui/adaround.js';
import { ModelView } from './ui/model.js';
import { CompareView } from './ui/compare.js';
import { LearnView, isLessonHash } from './ui/learn.js';
import { encodeState, decodeState } from './ui/state.js';
import { rotationSpec, parseSeed, seedOf } from './ui/rotation.js';
import { h } from './lib/panel.js';
import { fmtShape } from './lib/format.js';

const DEMOS = {
  activation: 'demo/l0_layer_out.npy',
  weight: 'demo/l0_attn_output_dense_weight.npy',
};
/** The AdaRound view's demo layer: MiniLM layer 0's attention output projection and its inputs. */
const DEMO_LAYER = { w: 'demo/l0_attn_output_dense_weight.npy', x: 'demo/l0_attn_dense_in.npy' };

const $ = (sel) => document.querySelector(sel);

/** A view's root: `<div class="view" id=…>` appended to `#views` (in list order) at mount. */
const slot = (id) => () => $('#views').appendChild(h('div', { id, class: 'view' }));

/**
 * The page's views, in page order: the element each renders into and its context (a function of
 * `{registry}`, called once the engine is up). Everything the page does to its views loops over
 * this list: mounting, a new tensor, the URL state, crash recovery, `idle()` and
 * `window.quantscope`.
 */
const VIEWS = new Views([
  { view: new TensorView(), root: () => $('#tensor-info') },
  {
    view: new ObserversView(),
    root: slot('observers-view'),
    context: ({ registry }) => ({
      registry,
      main: true,
      // The full list fits beside the panels on wide screens; on laptops it opens on demand.
      pickerOpen: window.innerWidth >= 1800,
      exports: $('nav.exports'),
      onChange: (what) => what === 'state' && updateUrl(),
    }),
  },
  { view: new FormatsView(), root: slot('formats-view'), context: ({ registry }) => ({ registry, onChange: updateUrl }) },
  { view: new AdaRoundView(), root: slot('adaround-view'), context: ({ registry }) => ({ registry, demo: DEMO_LAYER }) },
  { view: new ModelView(), root: slot('model-view'), context: () => ({ openTensor: openModelTensor }) },
  { view: new CompareView(), root: slot('compare-view'), context: () => ({ openTensor: openModelTensor }) },
  { view: new LearnView(), root: slot('learn-view'), context: ({ registry }) => ({ registry, makeEngine: lessonEngine }) },
]);

const app = {
  engine: null,
  registry: null,
  specs: new Map(),
  version: '',
  demo: 'activation',
  /** The loaded File objects, their infos, the members asked for, the chosen batches. */
  files: [],
  fileInfos: [],
  members: {},
  selection: null,
  summary: null,
  hist: null,
  loading: false,
  loadController: null,
  /**
   * The rotation preview (the toolbar's "Rotate (Hadamard)" and its seed): every view shows its
   * numbers before and after a randomized Hadamard rotation of the tensor's rows.
   */
  rotation: { on: false, seed: 0 },
};

// ---------------------------------------------------------------------------------------------
// Messages

function showMessage(message, { info = false } = {}) {
  const el = $('#load-error');
  el.classList.toggle('info', info);
  el.textContent = message;
  el.hidden = !message;
}

function showProgress(fraction, label) {
  $('#progress').hidden = false;
  $('#progress-bar').value = fraction;
  $('#progress-label').textContent = `${label} — ${Math.round(fraction * 100)} %`;
}

// ---------------------------------------------------------------------------------------------
// Loading

/** Load `files` (File objects) as the new tensor set; on failure the current tensor stays. */
async function loadFiles(files, { members = {}, demo = null } = {}) {
  if (!files.length) return;
  app.loading = true;
  showMessage('');
  const names = files.map((f) => f.name).join(', ');
  showProgress(0, `reading ${names}`);
  const controller = new AbortController();
  app.loadController = controller;
  try {
    const infos = await app.engine.call('load', { files, members }, {
      onProgress: (p) => showProgress(p.fraction, p.label),
      signal: controller.signal,
    });
    app.files = files;
    app.members = members;
    app.fileInfos = infos;
    app.demo = demo;
    $('#demo').value = demo || '';
    await selectBatches(defaultSelection(infos));
  } catch (err) {
    if (err.restarted) return;
    if (err.cancelled) showMessage(`Loading of ${names} was cancelled; the previous tensor is still shown.`, { info: true });
    else showMessage(`Could not load ${names}: ${err.message}${app.summary ? '\nThe previous tensor is still shown.' : ''}`);
  } finally {
    app.loadController = null;
    app.loading = false;
    $('#progress').hidden = true;
  }
}

function defaultSelection(infos) {
  const first = infos[0].members[0].name;
  const batches = infos.map((info, i) => {
    const same = info.members.find((m) => m.name === first);
    return { file: i, member: same ? same.name : info.members[0].name };
  });
  return { batches, split: splitSetting(infos, batches) };
}

function splitSetting(infos, batches) {
  if (batches.length !== 1 || !$('#split-on').checked) return null;
  const m = infos[batches[0].file].members.find((x) => x.name === batches[0].member);
  const axis = Number($('#split-axis').value || 0);
  if (!m || axis >= m.shape.length) return null;
  return { axis, count: Math.max(1, Number($('#split-count').value) || 1) };
}

/** The loaded files as the views see them: infos with the File each came from. */
function viewFiles() {
  return app.fileInfos.map((info, i) => ({ ...info, source: app.files[i] }));
}

async function selectBatches(selection) {
  app.loading = true;
  try {
    const { summary, hist } = await app.engine.call('select', { selection });
    app.selection = selection;
    app.summary = summary;
    app.hist = hist;
    renderSelection();
    VIEWS.tensorChanged(summary, hist, viewFiles());
    updateUrl();
  } finally {
    app.loading = false;
  }
}

async function loadDemo(name) {
  const path = DEMOS[name] || DEMOS.activation;
  const res = await fetch(path);
  if (!res.ok) throw new Error(`demo ${path}: HTTP ${res.status}`);
  const file = new File([await res.arrayBuffer()], path.split('/').pop());
  await loadFiles([file], { demo: name in DEMOS ? name : 'activation' });
}

/** Show one tensor of a checkpoint (the model or compare view's) as the current tensor of every view. */
async function openModelTensor(source) {
  await loadFiles([source]);
  $('#views').scrollIntoView({ behavior: 'smooth', block: 'start' });
}

// ---------------------------------------------------------------------------------------------
// The selection (the tensor's facts are the tensor view's: ui/tensor.js)

/** The member choice and the batch split offered for the current files. */
function renderSelection() {
  const info = app.fileInfos[0];
  const member = app.selection.batches[0].member;
  // Member choice (npz/safetensors).
  const all = app.fileInfos.length === 1 ? info.allMembers : [];
  $('#member-box').hidden = all.length <= 1;
  if (all.length > 1) {
    $('#member').replaceChildren(...all.map((m) => h('option', { value: m.name, text: `${m.name}  ${fmtShape(m.shape)} ${m.dtype}`, selected: m.name === member })));
  }
  // Splitting one tensor into batches.
  const single = app.selection.batches.length === 1;
  $('#split-box').hidden = !single;
  if (single) {
    const m = info.members.find((x) => x.name === member) || info.members[0];
    const axisSel = $('#split-axis');
    const prev = axisSel.value;
    axisSel.replaceChildren(...m.shape.map((n, i) => h('option', { value: i, text: `${i} (${n})` })));
    if (prev && Number(prev) < m.shape.length) axisSel.value = prev;
  }
}

async function chooseMember(name) {
  const info = app.fileInfos[0];
  if (info.members.some((m) => m.name === name)) {
    const selection = { batches: [{ file: 0, member: name }], split: null };
    selection.split = splitSetting(app.fileInfos, selection.batches);
    await selectBatches(selection).catch((e) => showMessage(e.message));
  } else {
    // A large file read member by member: read the chosen one.
    await loadFiles(app.files, { members: { 0: name }, demo: app.demo });
  }
}

async function applySplit() {
  if (!app.selection) return;
  const batches = app.selection.batches;
  await selectBatches({ batches, split: splitSetting(app.fileInfos, batches) }).catch((e) => showMessage(e.message));
}

// ---------------------------------------------------------------------------------------------
// URL state

function currentState() {
  return { ...VIEWS.state(), demo: app.demo, rotate: rotateState() };
}

/** The rotation preview as the views and the URL take it: `'hadamard:SEED'`, or null when off. */
function rotateState() {
  return app.rotation.on ? rotationSpec(app.rotation.seed) : null;
}

/** Show the rotation preview's setting in its controls. */
function renderRotation() {
  $('#rotate-on').checked = app.rotation.on;
  $('#rotate-seed').value = String(app.rotation.seed);
}

/** Change the rotation preview (`{on}`, `{seed}`): every view shows it, and the URL keeps it. */
function setRotation(change) {
  app.rotation = { ...app.rotation, ...change };
  renderRotation();
  VIEWS.setState({ rotate: rotateState() });
  updateUrl();
}

/**
 * Write the state into the URL fragment once the page settles: `history.replaceState` costs
 * 2–4 ms on the main thread (and browsers throttle frequent calls), so a slider drag writes it
 * once, after its last move — never between a move and its redraw. `idle()`, `pagehide` and a
 * fragment edited by hand settle a pending write first.
 */
const URL_SETTLE_MS = 120;
let urlTimer = null;

function updateUrl() {
  clearTimeout(urlTimer);
  urlTimer = setTimeout(writeUrl, URL_SETTLE_MS);
}

function writeUrl() {
  clearTimeout(urlTimer);
  urlTimer = null;
  // A lesson's fragment is the learn view's; the explorer's state is written when it is left.
  if (isLessonHash(location.hash)) return;
  const hash = encodeState(currentState(), app.specs);
  if (hash !== location.hash) history.replaceState(null, '', hash);
}

/** Write a pending URL update now (before the page is left, or when asked whether it is idle). */
function flushUrl() {
  if (urlTimer !== null) writeUrl();
}

/** Apply a decoded fragment: what it leaves out goes back to the defaults (no added formats). */
function applyState(st) {
  if (st.demo && st.demo in DEMOS) app.demo = st.demo;
  app.rotation = st.rotate ? { on: true, seed: seedOf(st.rotate) } : { ...app.rotation, on: false };
  renderRotation();
  VIEWS.setState({
    ...st,
    rotate: rotateState(),
    observers: st.observers.length ? st.observers : undefined,
    curve: st.curve || undefined,
    formats: st.formats || [],
  });
}

function onHashChange() {
  // The fragment typed by hand wins over a write still waiting for the page to settle.
  clearTimeout(urlTimer);
  urlTimer = null;
  if (isLessonHash(location.hash)) return;
  const st = decodeState(location.hash, app.specs);
  // Back from a lesson to the explorer as it was: its state goes back into the URL.
  if (!st) updateUrl();
  if (!st || encodeState(currentState(), app.specs) === location.hash) return;
  const shown = app.demo;
  applyState(st);
  // A link (a lesson's "open in the explorer") may name another demo tensor, or add formats to
  // compare on the tensor shown.
  if (st.demo && st.demo in DEMOS && st.demo !== shown) loadDemo(st.demo).catch((err) => showMessage(err.message));
  else if (st.formats.length) VIEWS.list.find((v) => v instanceof FormatsView).refresh();
}

// ---------------------------------------------------------------------------------------------
// Sharing (the export buttons are the observers view's)

function bindShare() {
  $('#share').addEventListener('click', async () => {
    writeUrl();
    try {
      await navigator.clipboard.writeText(location.href);
      $('#share').textContent = 'Link copied';
    } catch {
      $('#share').textContent = 'Link in the address bar';
    }
    setTimeout(() => {
      $('#share').textContent = 'Copy link';
    }, 1600);
  });
}

// ---------------------------------------------------------------------------------------------
// Recovery after a crash of the worker

function onCrash(err) {
  if (app.engine.dead) {
    showMessage(`The computation engine stopped: ${err.message}`);
    return;
  }
  showMessage(`The computation engine stopped (${err.message}). It was restarted; your tensor is being reloaded.`);
  setTimeout(recover, 0);
}

/** Reload the files and the selection into the restarted worker; the views run again. */
async function recover() {
  if (!app.files.length || !app.selection) return;
  app.loading = true;
  try {
    await app.engine.call('load', { files: app.files, members: app.members });
    const { hist } = await app.engine.call('select', { selection: app.selection });
    app.hist = hist;
    VIEWS.refresh();
  } catch (e) {
    showMessage(`The engine could not reload the tensor: ${e.message}`);
  } finally {
    app.loading = false;
  }
}

// ---------------------------------------------------------------------------------------------
// Wiring

function bindInputs() {
  $('#file').addEventListener('change', (e) => {
    const files = [...e.target.files];
    e.target.value = '';
    loadFiles(files);
  });
  let depth = 0;
  window.addEventListener('dragenter', (e) => {
    e.preventDefault();
    depth += 1;
    document.body.classList.add('dragging');
  });
  window.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) document.body.classList.remove('dragging');
  });
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    depth = 0;
    document.body.classList.remove('dragging');
    const files = [...(e.dataTransfer ? e.dataTransfer.files : [])];
    if (files.length) loadFiles(files);
  });
  $('#cancel').addEventListener('click', () => app.loadController && app.loadController.abort());
  $('#demo').addEventListener('change', (e) => {
    if (e.target.value) loadDemo(e.target.value).catch((err) => showMessage(err.message));
  });
  $('#member').addEventListener('change', (e) => chooseMember(e.target.value));
  $('#split-on').addEventListener('change', applySplit);
  $('#split-count').addEventListener('change', () => $('#split-on').checked && applySplit());
  $('#split-axis').addEventListener('change', () => $('#split-on').checked && applySplit());
  $('#rotate-on').addEventListener('change', (e) => setRotation({ on: e.target.checked }));
  $('#rotate-seed').addEventListener('change', (e) => {
    const seed = parseSeed(e.target.value);
    if (seed === null) renderRotation(); // not a seed: the one in use stays
    else if (seed !== app.rotation.seed) setRotation({ seed });
  });
  window.addEventListener('hashchange', onHashChange);
  window.addEventListener('pagehide', flushUrl);
}

/** Resolves when nothing is loading, computing or waiting to be drawn. */
function idle() {
  return new Promise((resolve) => {
    const check = () => {
      const busy = app.loading || VIEWS.busy || app.engine.busy > 0;
      if (busy) return setTimeout(check, 15);
      flushUrl();
      requestAnimationFrame(() => requestAnimationFrame(resolve));
    };
    check();
  });
}

function exposeApi(ready) {
  window.quantscope = {
    ready,
    get version() {
      return app.version;
    },
    /** The page's engine (a pool of RemoteEngines): `call(method, args, {onProgress, signal})`. */
    get engine() {
      return app.engine;
    },
    registry: () => app.registry.observers,
    /** Load bytes (ArrayBuffer/typed array/Blob, or an array of them as batches) like a dropped file. */
    async load(data, { name = 'tensor.npy' } = {}) {
      const list = Array.isArray(data) ? data : [data];
      const names = Array.isArray(name) ? name : list.map((_, i) => (list.length > 1 ? `${i}_${name}` : name));
      const files = list.map((d, i) => (d instanceof File ? d : new File([d], names[i])));
      await loadFiles(files);
      await idle();
      return app.summary;
    },
    summary: () => app.summary,
    state: currentState,
    /**
     * The selected tensor through quantizer `id` with `params` (the library's keys; a vector
     * inline or as a loaded tensor {file, member}), in the page's engine: cost, metrics and
     * the dequantized `values` (Float32Array).
     */
    quantize: async (id, params = {}, { explain = false, block = null } = {}) => {
      const result = await app.engine.call('quantize', { id, params });
      if (explain) result.derivation = await app.engine.call('explainFormat', { id, params, block });
      return result;
    },
    idle,
    /** The number of Web Workers the engine pool runs. */
    workers: () => app.engine.size,
    debugPanic: (message) => app.engine.call('debugPanic', { message }).catch((e) => e.message),
    // The views' own members (observe, results, formats, model, …).
    ...VIEWS.api({ updateUrl, idle }),
  };
}

/**
 * The learn view's engine: one Web Worker of its own, so that lessons never replace the
 * explorer's tensor; `onRestart` is called after it crashed and was restarted.
 */
function lessonEngine(onRestart) {
  return new RemoteEngine(new URL('./worker.js', import.meta.url), { onCrash: onRestart });
}

/**
 * The engines the explorer computes with: a pool of Web Workers, one per logical core
 * (`?workers=N` in the URL sets the number, for tests and measurements).
 */
function enginePool() {
  const asked = Number(new URLSearchParams(location.search).get('workers'));
  const size = Number.isInteger(asked) && asked >= 1 ? Math.min(asked, 16) : poolSize();
  const worker = new URL('./worker.js', import.meta.url);
  return new EnginePool(Array.from({ length: size }, () => new RemoteEngine(worker, { onCrash })));
}

async function main() {
  await init({ module_or_path: wasmUrl() });
  app.engine = enginePool();
  const [registry] = await Promise.all(app.engine.members.map((m, i) => m.call(i === 0 ? 'registry' : 'limits')));
  app.registry = registry;
  app.version = registry.version;
  $('#version').textContent = registry.version;
  for (const o of registry.observers) app.specs.set(o.id, o);
  VIEWS.mount(app.engine, { registry });
  const st = isLessonHash(location.hash) ? null : decodeState(location.hash, app.specs);
  if (st) applyState(st);
  bindInputs();
  bindShare();
  await loadDemo(app.demo);
  await idle();
}

const ready = main().catch((err) => {
  showMessage(`The explorer could not start: ${err.message}`);
  throw err;
});
exposeApi(ready);
