// The explorer page: loading and the tensor's facts, the URL state, exports and the wiring of
// the three views (ui/observers.js, ui/formats.js, ui/adaround.js). The engine runs in a pool
// of Web Workers (worker.js, each behind rpc.js's RemoteEngine, joined by lib/pool.js: the
// observers are spread over them); this thread only draws (the WebAssembly plotting code on
// canvases). `window.quantscope` is a thin layer over the views and the engine.
import init, { flatParams } from './pkg/quantscope.js';
import { wasmUrl } from './lib/wasm-flavour.js';
import { RemoteEngine } from './lib/rpc.js';
import { EnginePool, poolSize } from './lib/pool.js';
import { ObserversView } from './ui/observers.js';
import { FormatsView } from './ui/formats.js';
import { AdaRoundView } from './ui/adaround.js';
import { ModelView } from './ui/model.js';
import { encodeState, decodeState } from './ui/state.js';
import { h } from './lib/panel.js';
import { fmtNum, groupDigits, fmtShape } from './lib/format.js';
import { download, resultsJson, resultsCsv, svgToPng, safeName } from './ui/exports.js';

const DEMOS = {
  activation: 'demo/l0_layer_out.npy',
  weight: 'demo/l0_attn_output_dense_weight.npy',
};
/** The AdaRound view's demo layer: MiniLM layer 0's attention output projection and its inputs. */
const DEMO_LAYER = { w: 'demo/l0_attn_output_dense_weight.npy', x: 'demo/l0_attn_dense_in.npy' };

const $ = (sel) => document.querySelector(sel);

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
  observers: new ObserversView(),
  formats: new FormatsView(),
  adaround: new AdaRoundView(),
  model: new ModelView(),
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
    renderTensor();
    const files = viewFiles();
    for (const view of [app.observers, app.formats, app.adaround]) view.tensorChanged(summary, hist, files);
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

/** Show one tensor of the model view's checkpoint in the observers view (and the others). */
async function openModelTensor(source) {
  await loadFiles([source]);
  $('#observers-view').scrollIntoView({ behavior: 'smooth', block: 'start' });
}

// ---------------------------------------------------------------------------------------------
// Tensor information

function fact(label, value, cls) {
  return h('div', {}, h('dt', { text: label }), h('dd', { class: cls, text: value }));
}

function renderTensor() {
  const s = app.summary;
  const dl = $('#tensor-info');
  dl.replaceChildren();
  if (!s) return;
  const files = app.fileInfos.map((f) => f.name);
  dl.append(fact(files.length > 1 ? 'files' : 'file', files.length > 1 ? `${files[0]} … ${files[files.length - 1]}` : files[0], 'name'));
  const info = app.fileInfos[0];
  const member = app.selection.batches[0].member;
  if (member) dl.append(fact('tensor', member, 'name'));
  dl.append(fact('shape', app.selection.batches.length > 1 ? s.batch_shapes.map(fmtShape).join(' ') : fmtShape(s.shape)));
  dl.append(fact('dtype', s.dtype));
  dl.append(fact('elements', groupDigits(s.elements)));
  if (s.batches > 1) dl.append(fact('batches', String(s.batches)));
  const nf = s.nonfinite;
  const nonfinite = nf.nan + nf.pos_inf + nf.neg_inf;
  dl.append(fact('NaN / ±Inf', nonfinite ? `${groupDigits(nf.nan)} / ${groupDigits(nf.pos_inf)} / ${groupDigits(nf.neg_inf)} (excluded)` : '0', nonfinite ? 'warn' : undefined));
  if (s.min !== null) dl.append(fact('range', `${fmtNum(s.min)} … ${fmtNum(s.max)}`));
  if (s.mean !== null) dl.append(fact('mean ± std', `${fmtNum(s.mean)} ± ${fmtNum(s.std)}`));

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
  return { ...app.observers.state(), demo: app.demo, formats: app.formats.state() };
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
  const hash = encodeState(currentState(), app.specs);
  if (hash !== location.hash) history.replaceState(null, '', hash);
}

/** Write a pending URL update now (before the page is left, or when asked whether it is idle). */
function flushUrl() {
  if (urlTimer !== null) writeUrl();
}

function applyState(st) {
  if (st.demo && st.demo in DEMOS) app.demo = st.demo;
  app.formats.setState(st.formats || []);
  app.observers.setState({
    observers: st.observers.length ? st.observers : undefined,
    params: st.params,
    curve: st.curve || undefined,
    logCounts: st.logCounts,
  });
}

function onHashChange() {
  // The fragment typed by hand wins over a write still waiting for the page to settle.
  clearTimeout(urlTimer);
  urlTimer = null;
  const st = decodeState(location.hash, app.specs);
  if (!st || encodeState(currentState(), app.specs) === location.hash) return;
  applyState(st);
}

// ---------------------------------------------------------------------------------------------
// Exports

function orderedResults() {
  const results = app.observers.results();
  return app.observers.observers.filter((id) => results[id]).map((id) => results[id]);
}

function baseName() {
  return safeName(app.summary ? app.summary.name.replace(/\.(npy|npz|safetensors)/, '') : 'quantscope');
}

async function exportPanelPng(id) {
  const svg = app.observers.panelSvg(id);
  if (svg) download(`${baseName()}-${safeName(id)}.png`, await svgToPng(svg, 2));
}

function bindExports() {
  $('#export-json').addEventListener('click', () => {
    download(`${baseName()}-quantscope.json`, resultsJson({ version: app.version, summary: app.summary, curve: app.observers.curve, results: orderedResults() }), 'application/json');
  });
  $('#export-csv').addEventListener('click', () => {
    download(`${baseName()}-quantscope.csv`, resultsCsv(orderedResults()), 'text/csv');
  });
  $('#export-svg').addEventListener('click', async () => {
    download(`${baseName()}-quantscope.svg`, await app.observers.comparisonSvg(), 'image/svg+xml');
  });
  $('#export-png').addEventListener('click', async () => {
    download(`${baseName()}-quantscope.png`, await svgToPng(await app.observers.comparisonSvg(), 1.5));
  });
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
    app.observers.restarted(hist);
    app.formats.tensorChanged(app.summary);
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
  window.addEventListener('hashchange', onHashChange);
  window.addEventListener('pagehide', flushUrl);
}

/** Resolves when nothing is loading, computing or waiting to be drawn. */
function idle() {
  return new Promise((resolve) => {
    const check = () => {
      const busy = app.loading || app.observers.busy || app.model.busy || app.engine.busy > 0;
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
    /**
     * Show observer `id` with exactly `params` (others at their defaults; flat or in the
     * framework's nested call form, which the controls show flat) and return its report.
     */
    async observe(id, params = {}) {
      if (!app.specs.has(id)) throw new Error(`unknown observer ${id}`);
      app.observers.setParams(id, flatParams(id, params));
      updateUrl();
      await idle();
      return app.observers.results()[id];
    },
    /** Select exactly these observers. */
    async setObservers(ids) {
      app.observers.setObservers(ids.filter((id) => app.specs.has(id)));
      updateUrl();
      await idle();
    },
    results: () => app.observers.results(),
    summary: () => app.summary,
    state: currentState,
    curve: () => app.observers.curveView,
    /** The formats view's rows (one per format; {error} for a format that does not apply). */
    formats: () => app.formats.rows,
    /** Add format `id` with `params` to the formats view, as its "Add" button does; its rows after. */
    async addFormat(id, params = {}) {
      await app.formats.addFormat(id, params);
      return app.formats.rows;
    },
    /** Replace the formats added to the formats view ([{id, params}]) and compare again; its rows after. */
    async setFormats(list) {
      app.formats.setState(list);
      updateUrl();
      app.formats.tensorChanged(app.summary);
      await idle();
      return app.formats.rows;
    },
    /**
     * The selected tensor through quantizer `id` with `params` (the library's keys; a vector
     * inline or as a loaded tensor {file, member}), in the page's engine: cost, metrics and
     * the dequantized `values` (Float32Array).
     */
    quantize: (id, params = {}) => app.engine.call('quantize', { id, params }),
    /** The last AdaRound outcome (null before a run). */
    adaround: () => app.adaround.outcome,
    /** The model view's rows, worst first (the CLI's `model --json` tensors; while ranking, those ranked so far). */
    model: () => app.model.rows(),
    idle,
    latencies: () => [...app.observers.latencies],
    /** The number of Web Workers the engine pool runs. */
    workers: () => app.engine.size,
    comparisonSvg: () => app.observers.comparisonSvg(),
    debugPanic: (message) => app.engine.call('debugPanic', { message }).catch((e) => e.message),
  };
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
  const onChange = (what) => {
    if (what === 'state') updateUrl();
  };
  app.observers.mount($('#observers-view'), app.engine, {
    registry,
    main: true,
    // The full list fits beside the panels on wide screens; on laptops it opens on demand.
    pickerOpen: window.innerWidth >= 1800,
    panelActions: (id) => [h('button', { type: 'button', title: 'Export this panel as PNG', text: 'PNG', onclick: () => exportPanelPng(id) })],
    onChange,
  });
  app.formats.mount($('#formats-view'), app.engine, { registry, onChange: updateUrl });
  app.adaround.mount($('#adaround-view'), app.engine, { registry, demo: DEMO_LAYER });
  app.model.mount($('#model-view'), app.engine, { openTensor: openModelTensor });
  const st = decodeState(location.hash, app.specs);
  if (st) applyState(st);
  bindInputs();
  bindExports();
  await loadDemo(app.demo);
  await idle();
}

const ready = main().catch((err) => {
  showMessage(`The explorer could not start: ${err.message}`);
  throw err;
});
exposeApi(ready);
