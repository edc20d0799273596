// The explorer page. The main thread only draws: loading and observing happen in a Web Worker
// (worker.js) that owns the WebAssembly session; this module keeps the UI state, generates the
// controls from the registry, and draws results with the wasm plotting code (plotters on canvas).
import init, { drawCurve } from './pkg/quantscope.js';
import { WorkerClient } from './ui/client.js';
import { buildControls } from './ui/controls.js';
import { encodeState, decodeState } from './ui/state.js';
import { createPanel, fillPanel, drawPanel, setContract, h, fitCanvas, seriesColor } from './lib/panel.js';
import { fmtNum, groupDigits, fmtShape, humanBytes } from './lib/format.js';
import { download, resultsJson, resultsCsv, svgToPng, safeName } from './ui/exports.js';
import { FormatsView } from './ui/formats.js';
import { AdaRoundView } from './ui/adaround.js';

const DEMOS = {
  activation: 'demo/l0_layer_out.npy',
  weight: 'demo/l0_attn_output_dense_weight.npy',
};
/** PyTorch's defaults, shown first; per-channel ones are added when the tensor has a channel axis. */
const DEFAULT_OBSERVERS = ['torch.MinMaxObserver', 'torch.MovingAverageMinMaxObserver', 'torch.HistogramObserver'];
const DEFAULT_PER_CHANNEL = ['torch.PerChannelMinMaxObserver', 'torch.MovingAveragePerChannelMinMaxObserver'];
const BUSY_DELAY_MS = 150;

const $ = (sel) => document.querySelector(sel);

const app = {
  registry: null,
  specs: new Map(),
  version: '',
  observers: [],
  params: {},
  colors: {},
  customized: false,
  curve: { bits: 8, scheme: 'affine', metric: 'mse' },
  logCounts: true,
  demo: 'activation',
  files: [],
  members: {},
  fileInfos: [],
  selection: null,
  summary: null,
  hist: null,
  results: new Map(),
  panels: new Map(),
  crashed: new Set(),
  curveView: null,
  curvePending: 0,
  loading: false,
  lastLatency: null,
  latencies: [],
  /** The formats view and the AdaRound view (ui/formats.js, ui/adaround.js). */
  formats: null,
  adaround: null,
  pendingFormats: [],
};

let client;

// ---------------------------------------------------------------------------------------------
// Messages

function showError(message) {
  const el = $('#load-error');
  el.classList.remove('info');
  el.textContent = message;
  el.hidden = false;
}

function showInfo(message) {
  const el = $('#load-error');
  el.classList.add('info');
  el.textContent = message;
  el.hidden = false;
}

function clearError() {
  const el = $('#load-error');
  el.textContent = '';
  el.hidden = true;
}

function showProgress(fraction, label) {
  $('#progress').hidden = false;
  $('#progress-bar').value = fraction;
  $('#progress-label').textContent = `${label} — ${Math.round(fraction * 100)} %`;
}

function hideProgress() {
  $('#progress').hidden = true;
}

// ---------------------------------------------------------------------------------------------
// Loading

/** Load `files` (File objects) as the new tensor set; on failure the current tensor stays. */
async function loadFiles(files, { members = {}, demo = null } = {}) {
  if (!files.length) return;
  app.loading = true;
  clearError();
  const names = files.map((f) => f.name).join(', ');
  showProgress(0, `reading ${names}`);
  try {
    const { value: infos } = await client.call('load', { files, members }, {
      onProgress: (p) => showProgress(p.fraction, p.label),
    });
    app.files = files;
    app.members = members;
    app.fileInfos = infos;
    app.demo = demo;
    $('#demo').value = demo || '';
    app.adaround.filesChanged(files, infos);
    await selectBatches(defaultSelection(infos));
  } catch (err) {
    if (err.restarted) return;
    if (err.cancelled) {
      showInfo(`Loading of ${names} was cancelled; the previous tensor is still shown.`);
    } else {
      showError(`Could not load ${names}: ${err.message}${app.summary ? '\nThe previous tensor is still shown.' : ''}`);
    }
  } finally {
    app.loading = false;
    hideProgress();
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

async function selectBatches(selection) {
  app.loading = true;
  try {
    const { value } = await client.call('select', { selection });
    app.selection = selection;
    app.summary = value.summary;
    app.hist = value.hist;
    app.results.clear();
    app.crashed.clear();
    renderTensor();
    if (!app.customized) app.observers = defaultObservers();
    syncPicker();
    rebuildPanels();
    for (const id of app.observers) requestRun(id, { fresh: true });
    scheduleCurve();
    app.formats.tensorChanged(app.summary);
    updateUrl();
  } finally {
    app.loading = false;
  }
}

function defaultObservers() {
  const has = (id) => app.specs.has(id);
  let ids = DEFAULT_OBSERVERS.filter(has);
  if (app.summary && app.summary.shape.length >= 2) ids = ids.concat(DEFAULT_PER_CHANNEL.filter(has));
  if (ids.length === 0) ids = app.registry.observers.slice(0, 3).map((o) => o.id);
  return ids;
}

async function loadDemo(name) {
  const path = DEMOS[name] || DEMOS.activation;
  const res = await fetch(path);
  if (!res.ok) throw new Error(`demo ${path}: HTTP ${res.status}`);
  const file = new File([await res.arrayBuffer()], path.split('/').pop());
  await loadFiles([file], { demo: name in DEMOS ? name : 'activation' });
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
  const box = $('#member-box');
  box.hidden = all.length <= 1;
  if (all.length > 1) {
    const sel = $('#member');
    sel.replaceChildren(
      ...all.map((m) => h('option', { value: m.name, text: `${m.name}  ${fmtShape(m.shape)} ${m.dtype}`, selected: m.name === member })),
    );
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
    await selectBatches(selection).catch((e) => showError(e.message));
  } else {
    // A large file read member by member: read the chosen one.
    await loadFiles(app.files, { members: { 0: name }, demo: app.demo });
  }
}

async function applySplit() {
  if (!app.selection) return;
  const batches = app.selection.batches;
  const selection = { batches, split: splitSetting(app.fileInfos, batches) };
  await selectBatches(selection).catch((e) => showError(e.message));
}

// ---------------------------------------------------------------------------------------------
// Observer picker

function buildPicker() {
  const picker = $('#picker');
  picker.replaceChildren();
  const groups = new Map();
  for (const o of app.registry.observers) {
    const key = o.framework;
    if (!groups.has(key)) groups.set(key, { version: o.framework_version, list: [] });
    groups.get(key).list.push(o);
  }
  if (groups.size === 0) {
    picker.append(h('p', { class: 'empty', text: 'No observers are registered in this build.' }));
  }
  for (const [framework, { version, list }] of groups) {
    const fs = h('fieldset', {}, h('legend', {}, framework, h('span', { class: 'version', text: version })));
    for (const o of list) {
      const cb = h('input', { type: 'checkbox', value: o.id, 'data-observer': o.id });
      cb.addEventListener('change', () => toggleObserver(o.id, cb.checked));
      const short = o.id.slice(o.id.indexOf('.') + 1);
      fs.append(
        h('label', { title: `${o.id}\n${o.summary}` }, cb, h('span', { text: short }), h('span', { class: 'gran', text: o.granularity.replace('_', ' ') }), o.corrects ? h('span', { class: 'fixed', text: 'fixed' }) : null),
      );
    }
    picker.append(fs);
  }
}

function syncPicker() {
  for (const cb of document.querySelectorAll('#picker input[type=checkbox]')) {
    cb.checked = app.observers.includes(cb.value);
  }
  $('#picker-count').textContent = `${app.observers.length} of ${app.registry.observers.length} selected`;
}

function toggleObserver(id, on) {
  app.customized = true;
  if (on && !app.observers.includes(id)) app.observers.push(id);
  if (!on) app.observers = app.observers.filter((x) => x !== id);
  syncPicker();
  rebuildPanels();
  if (on) requestRun(id, { fresh: true });
  else {
    app.results.delete(id);
    client.call('remove', { id }).catch(() => {});
  }
  scheduleCurve();
  updateUrl();
}

// ---------------------------------------------------------------------------------------------
// Panels

function colorOf(id) {
  if (!(id in app.colors)) {
    const used = new Set(Object.values(app.colors));
    let c = 0;
    while (used.has(c)) c++;
    app.colors[id] = c;
  }
  return app.colors[id];
}

function rebuildPanels() {
  const main = $('#panels');
  const keep = new Set(app.observers);
  for (const [id, p] of app.panels) {
    if (!keep.has(id)) {
      p.el.remove();
      app.panels.delete(id);
      delete app.colors[id];
    }
  }
  for (const id of app.observers) {
    if (!app.panels.has(id)) app.panels.set(id, makePanel(id));
  }
  main.replaceChildren(...app.observers.map((id) => app.panels.get(id).el));
}

function makePanel(id) {
  const spec = app.specs.get(id) || { id, params: [] };
  const color = colorOf(id);
  const controls = buildControls(spec, app.params[id] || {}, (name, value, { final }) => onParam(id, name, value, final));
  const png = h('button', { type: 'button', title: 'Export this panel as PNG', text: 'PNG', onclick: () => exportPanelPng(id) });
  const close = h('button', { type: 'button', title: 'Remove this observer', 'aria-label': `Remove ${id}`, text: '×', onclick: () => toggleObserver(id, false) });
  const el = createPanel(spec, color, { slot: controls, actions: [png, close] });
  return { id, el, inflight: false, pending: null, busyTimer: 0, result: null };
}

function onParam(id, name, value, final) {
  const spec = app.specs.get(id);
  const p = spec && spec.params.find((x) => x.name === name);
  const params = (app.params[id] ||= {});
  if (p && value === p.default) delete params[name];
  else params[name] = value;
  requestRun(id, { t0: performance.now() });
  if (final) updateUrl();
}

function paramsFor(id) {
  const out = {};
  for (const [k, v] of Object.entries(app.params[id] || {})) {
    if (v !== null && v !== undefined) out[k] = v;
  }
  return out;
}

/** Ask the worker for observer `id`'s result; at most one request per panel is in flight. */
function requestRun(id, { fresh = false, t0 = performance.now() } = {}) {
  const p = app.panels.get(id);
  if (!p || !app.summary) return;
  const params = paramsFor(id);
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  if (p.inflight) {
    if (!fresh && !p.pending && same(params, p.sent)) return;
    p.pending = { params, fresh: Boolean(p.pending && p.pending.fresh) || fresh, t0: p.pending ? p.pending.t0 : t0 };
    return;
  }
  if (!fresh && p.sent && same(params, p.sent)) return;
  send(p, params, fresh, t0);
}

async function send(p, params, fresh, t0) {
  p.gen = (p.gen || 0) + 1;
  const gen = p.gen;
  p.inflight = true;
  p.sent = params;
  p.el.dataset.status = 'busy';
  clearTimeout(p.busyTimer);
  p.busyTimer = setTimeout(() => {
    if (p.gen === gen) p.el.querySelector('.busy').hidden = false;
  }, BUSY_DELAY_MS);
  let shownPartial = false;
  // Let the next queued change go (after a partial result, or at the end).
  const release = () => {
    if (!p.inflight || p.gen !== gen) return false;
    p.inflight = false;
    if (p.pending) {
      const q = p.pending;
      p.pending = null;
      send(p, q.params, q.fresh, q.t0);
      return true;
    }
    return false;
  };
  const onPartial = (partial) => {
    const received = performance.now();
    if (p.gen !== gen || app.panels.get(p.id) !== p) return;
    clearTimeout(p.busyTimer);
    p.el.querySelector('.busy').hidden = true;
    show(p, partial, t0, null, 'partial', received);
    shownPartial = true;
    release();
  };
  let result = null;
  let workerMs = null;
  try {
    const op = fresh ? 'observe' : 'update';
    const { value, ms, superseded } = await client.call(op, { id: p.id, params }, { onPartial });
    if (superseded || value === null) return;
    result = value;
    workerMs = ms;
  } catch (err) {
    if (err.restarted) return;
    result = {
      observer: p.id,
      ok: false,
      error: { kind: err.panic ? 'panic' : 'internal', message: err.message },
      quirks: [],
      view: { observer: p.id, notes: [], stats: [] },
    };
    if (err.panic) app.crashed.add(p.id);
  }
  if (app.panels.get(p.id) !== p || p.gen !== gen) return;
  clearTimeout(p.busyTimer);
  if (release()) return;
  p.el.querySelector('.busy').hidden = true;
  show(p, result, t0, workerMs, shownPartial ? 'metrics' : 'full');
  scheduleCurve();
}

/** Fill and draw a panel at once (the canvas is updated before the next frame is painted). */
function show(p, result, t0, workerMs, kind, received = performance.now()) {
  p.result = result;
  app.results.set(p.id, result);
  const d0 = performance.now();
  fillPanel(p.el, result);
  drawOne(p);
  const now = performance.now();
  app.lastLatency = now - t0;
  app.latencies.push({
    id: p.id,
    ms: now - t0,
    worker: workerMs,
    // time until the worker's answer arrived, and spent drawing it
    received: received - t0,
    draw: now - d0,
    retuned: Boolean(result.retuned),
    // partial: clipping range drawn, metrics pending; metrics: the same change completed;
    // full: everything at once.
    kind,
  });
  if (app.latencies.length > 200) app.latencies.shift();
}

function drawOne(p) {
  try {
    drawPanel(p.el, p.result, app.hist, { logCounts: app.logCounts });
  } catch (err) {
    console.error(err);
  }
}

function redrawAll() {
  for (const p of app.panels.values()) if (p.result) drawOne(p);
  drawCurveCanvas();
}

// ---------------------------------------------------------------------------------------------
// Error versus clipping threshold

let curveTimer = 0;
function scheduleCurve() {
  clearTimeout(curveTimer);
  app.curvePending += 1;
  curveTimer = setTimeout(() => {
    updateCurve().finally(() => {
      app.curvePending = Math.max(0, app.curvePending - 1);
    });
  }, 40);
}

async function updateCurve() {
  app.curvePending = 1;
  if (!app.summary) return;
  const ids = app.observers.filter((id) => app.results.get(id) && app.results.get(id).ok);
  const spec = { bits: app.curve.bits, scheme: app.curve.scheme, points: 200 };
  try {
    const { value } = await client.call('curve', { spec, ids, colors: ids.map(colorOf) });
    app.curveView = value;
    requestAnimationFrame(drawCurveCanvas);
  } catch (err) {
    if (!err.restarted) console.error(err);
  }
}

function drawCurveCanvas() {
  const canvas = $('#curve');
  if (!app.curveView) return;
  const ratio = fitCanvas(canvas);
  try {
    drawCurve(canvas, app.curveView, { sqnr: app.curve.metric === 'sqnr', logCounts: false, pixelRatio: ratio, legend: false });
    canvas.dataset.drawn = String(Number(canvas.dataset.drawn || 0) + 1);
  } catch (err) {
    console.error(err);
  }
  renderCurveTable();
}

function renderCurveTable() {
  const v = app.curveView;
  const table = $('#curve-table');
  table.replaceChildren();
  if (!v) return;
  const best = v.best !== null && v.best !== undefined ? v.points[v.best] : null;
  const head = h('thead', {}, h('tr', {}, h('th', { text: 'observer' }), h('th', { text: 'threshold' }), h('th', { text: 'MSE' }), h('th', { text: 'SQNR' })));
  const rows = v.markers.map((m) =>
    h('tr', {},
      h('td', {}, h('span', { class: 'swatch', style: { display: 'inline-block', marginRight: '6px', background: seriesColor(m.color) } }), m.observer),
      h('td', { text: m.threshold === null ? 'per channel' : fmtNum(m.threshold) }),
      h('td', { text: fmtNum(m.mse) }),
      h('td', { text: m.sqnr_db === null ? '—' : `${fmtNum(m.sqnr_db)} dB` })));
  if (best) {
    rows.unshift(h('tr', {}, h('td', { text: `best of ${v.label}` }), h('td', { text: fmtNum(best[0]) }), h('td', { text: fmtNum(best[1]) }), h('td', { text: best[2] === null ? '—' : `${fmtNum(best[2])} dB` })));
  }
  table.append(head, h('tbody', {}, ...rows));
}

// ---------------------------------------------------------------------------------------------
// URL state

function currentState() {
  return {
    observers: [...app.observers],
    params: Object.fromEntries(app.observers.map((id) => [id, { ...(app.params[id] || {}) }])),
    curve: { ...app.curve },
    logCounts: app.logCounts,
    demo: app.demo,
    formats: app.formats ? app.formats.state : app.pendingFormats,
  };
}

function updateUrl() {
  const hash = encodeState(currentState());
  if (hash !== location.hash) history.replaceState(null, '', hash);
}

function applyState(st) {
  if (st.observers.length) {
    app.observers = st.observers;
    app.customized = true;
  }
  app.params = st.params;
  if (st.curve) app.curve = st.curve;
  app.logCounts = st.logCounts;
  if (st.demo && st.demo in DEMOS) app.demo = st.demo;
  app.pendingFormats = st.formats || [];
  if (app.formats) app.formats.setExtra(app.pendingFormats);
  $('#log-counts').checked = app.logCounts;
  $('#curve-bits').value = app.curve.bits;
  $('#curve-bits-value').textContent = String(app.curve.bits);
  $('#curve-scheme').value = app.curve.scheme;
  $('#curve-metric').value = app.curve.metric;
}

function onHashChange() {
  const st = decodeState(location.hash, app.specs);
  if (!st) return;
  const hash = encodeState(currentState());
  if (hash === location.hash) return;
  applyState(st);
  // Controls reflect the new parameters: rebuild every panel.
  for (const p of app.panels.values()) p.el.remove();
  app.panels.clear();
  syncPicker();
  rebuildPanels();
  for (const id of app.observers) requestRun(id, { fresh: true });
  scheduleCurve();
}

// ---------------------------------------------------------------------------------------------
// Exports

function orderedResults() {
  return app.observers.map((id) => app.results.get(id)).filter(Boolean);
}

function baseName() {
  return safeName(app.summary ? app.summary.name.replace(/\.(npy|npz|safetensors)/, '') : 'quantscope');
}

async function comparisonSvg() {
  const ids = app.observers.filter((id) => app.results.get(id));
  const { value } = await client.call('comparisonSvg', {
    ids,
    colors: ids.map(colorOf),
    curve: { bits: app.curve.bits, scheme: app.curve.scheme, points: 200 },
    style: { logCounts: app.logCounts, sqnr: app.curve.metric === 'sqnr', pixelRatio: 1 },
    width: 1400,
  });
  return value;
}

async function exportPanelPng(id) {
  const { renderPanelSvg } = await import('./pkg/quantscope.js');
  const p = app.panels.get(id);
  if (!p || !p.result || !app.hist) return;
  const view = { ...p.result.view, color: colorOf(id) };
  const height = view.channels ? 700 : 520;
  const svg = renderPanelSvg(app.hist.lo, app.hist.hi, app.hist.counts, view, { logCounts: app.logCounts, pixelRatio: 1 }, 560, height + 22 * (view.notes || []).length);
  download(`${baseName()}-${safeName(id)}.png`, await svgToPng(svg, 2));
}

function bindExports() {
  $('#export-json').addEventListener('click', () => {
    download(`${baseName()}-quantscope.json`, resultsJson({ version: app.version, summary: app.summary, curve: app.curve, results: orderedResults() }), 'application/json');
  });
  $('#export-csv').addEventListener('click', () => {
    download(`${baseName()}-quantscope.csv`, resultsCsv(orderedResults()), 'text/csv');
  });
  $('#export-svg').addEventListener('click', async () => {
    download(`${baseName()}-quantscope.svg`, await comparisonSvg(), 'image/svg+xml');
  });
  $('#export-png').addEventListener('click', async () => {
    download(`${baseName()}-quantscope.png`, await svgToPng(await comparisonSvg(), 1.5));
  });
  $('#share').addEventListener('click', async () => {
    updateUrl();
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
  if (client.dead) {
    showError(`The computation engine stopped: ${err.message}`);
    return;
  }
  showError(`The computation engine stopped (${err.message}). It was restarted; your tensor is being reloaded.`);
  setTimeout(recover, 0);
}

async function recover() {
  for (const p of app.panels.values()) {
    p.inflight = false;
    p.pending = null;
  }
  if (!app.files.length || !app.selection) return;
  try {
    await client.call('load', { files: app.files, members: app.members });
    const { value } = await client.call('select', { selection: app.selection });
    app.hist = value.hist;
    for (const id of app.observers) {
      if (!app.crashed.has(id)) requestRun(id, { fresh: true });
    }
    scheduleCurve();
    app.formats.tensorChanged(app.summary);
  } catch (e) {
    showError(`The engine could not reload the tensor: ${e.message}`);
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
  $('#cancel').addEventListener('click', () => client.cancel());
  $('#demo').addEventListener('change', (e) => {
    if (e.target.value) loadDemo(e.target.value).catch((err) => showError(err.message));
  });
  $('#member').addEventListener('change', (e) => chooseMember(e.target.value));
  $('#split-on').addEventListener('change', applySplit);
  $('#split-count').addEventListener('change', () => $('#split-on').checked && applySplit());
  $('#split-axis').addEventListener('change', () => $('#split-on').checked && applySplit());
  $('#log-counts').addEventListener('change', (e) => {
    app.logCounts = e.target.checked;
    for (const p of app.panels.values()) if (p.result) drawOne(p);
    updateUrl();
  });
  $('#curve-bits').addEventListener('input', (e) => {
    app.curve.bits = Number(e.target.value);
    $('#curve-bits-value').textContent = e.target.value;
    scheduleCurve();
    updateUrl();
  });
  $('#curve-scheme').addEventListener('change', (e) => {
    app.curve.scheme = e.target.value;
    scheduleCurve();
    updateUrl();
  });
  $('#curve-metric').addEventListener('change', (e) => {
    app.curve.metric = e.target.value;
    drawCurveCanvas();
    updateUrl();
  });
  window.addEventListener('hashchange', onHashChange);
  let resizeTimer = 0;
  new ResizeObserver(() => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(redrawAll, 80);
  }).observe($('#panels'));
}

/** Resolves when nothing is loading, computing or waiting to be drawn. */
function idle() {
  return new Promise((resolve) => {
    const check = () => {
      const busy = app.loading || app.curvePending > 0 || [...app.panels.values()].some((p) => p.inflight || p.pending) || client.busy > 0;
      if (busy) setTimeout(check, 15);
      else requestAnimationFrame(() => requestAnimationFrame(resolve));
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
    /** Show observer `id` with exactly `params` (others at their defaults) and return its result. */
    async observe(id, params = {}) {
      if (!app.specs.has(id)) throw new Error(`unknown observer ${id}`);
      app.params[id] = { ...params };
      if (!app.observers.includes(id)) {
        app.customized = true;
        app.observers.push(id);
        syncPicker();
        rebuildPanels();
        requestRun(id, { fresh: true });
      } else {
        const p = app.panels.get(id);
        p.el.remove();
        app.panels.delete(id);
        rebuildPanels();
        requestRun(id, { fresh: true });
      }
      updateUrl();
      await idle();
      return app.results.get(id);
    },
    /** Select exactly these observers. */
    async setObservers(ids) {
      app.customized = true;
      app.observers = ids.filter((id) => app.specs.has(id));
      syncPicker();
      rebuildPanels();
      for (const id of app.observers) if (!app.results.has(id)) requestRun(id, { fresh: true });
      updateUrl();
      await idle();
    },
    results: () => Object.fromEntries(app.observers.filter((id) => app.results.has(id)).map((id) => [id, app.results.get(id)])),
    summary: () => app.summary,
    state: currentState,
    curve: () => app.curveView,
    /** The formats view's rows (one per format; {error} for a format that does not apply). */
    formats: () => app.formats.rows,
    /** The last AdaRound outcome (null before a run). */
    adaround: () => app.adaround.outcome,
    idle,
    latencies: () => [...app.latencies],
    comparisonSvg,
    debugPanic: (message) => client.call('debugPanic', { message }).catch((e) => e.message),
  };
}

async function main() {
  await init();
  client = new WorkerClient(new URL('./worker.js', import.meta.url), { onCrash });
  const { value: reg } = await client.call('registry');
  app.registry = reg;
  app.version = reg.version;
  $('#version').textContent = reg.version;
  for (const o of reg.observers) app.specs.set(o.id, o);
  buildPicker();
  app.formats = new FormatsView({ client, registry: reg.quantizers, onChange: updateUrl });
  app.adaround = new AdaRoundView({ client, registry: reg.quantizers });
  // The full list fits beside the panels on wide screens; on laptops it opens on demand.
  $('#picker-details').open = window.innerWidth >= 1800;
  const st = decodeState(location.hash, app.specs);
  if (st) applyState(st);
  bindInputs();
  bindExports();
  await loadDemo(app.demo);
  await idle();
}

const ready = main().catch((err) => {
  showError(`The explorer could not start: ${err.message}`);
  throw err;
});
exposeApi(ready);
void humanBytes;
