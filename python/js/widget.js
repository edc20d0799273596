// The quantscope notebook widget (anywidget): the explorer's side-by-side observer panels, their
// parameter controls (generated from the observer registry) and the error-versus-clipping curve,
// for one tensor or a list of calibration batches sent by Python as binary buffers.
//
// Model (synced with Python's `quantscope.Explorer`):
//   _batches  list of file bytes (.npy/.npz/.safetensors), one per calibration batch, in order
//   _names    their names;  member  the tensor to take from .npz/.safetensors files (null: first)
//   observers observer ids shown (empty: PyTorch's defaults, written back)
//   params    {observer id: {parameter: value}}, written by the sliders, read by the engine
//   bits, scheme, log_counts  the error curve's integer grid and the histograms' count scale
//   results   {observer id: {ok, error, scale, zero_point, min_val, max_val, clip_min, clip_max,
//             grid_min, grid_max, metrics, ...}} written here after every computation
//   summary   the tensor's shape, dtype, element count, range and non-finite counts
//   error     why the data could not be loaded ('' when it could)
//   available_observers  every observer id of the engine
//
// One Controller per model owns the loaded tensor and computes; each displayed view (the same
// widget may be shown twice) only draws what its controller computed.
import { engine } from './engine.js';

/** PyTorch's defaults, shown when Python names no observers (per-channel ones for ≥ 2-D data). */
const DEFAULT_OBSERVERS = ['torch.MinMaxObserver', 'torch.MovingAverageMinMaxObserver', 'torch.HistogramObserver'];
const DEFAULT_PER_CHANNEL = ['torch.PerChannelMinMaxObserver', 'torch.MovingAveragePerChannelMinMaxObserver'];
/** Results and parameters go back to Python at most this often while a slider moves. */
const PUBLISH_DELAY_MS = 40;

/** Bytes of a synced binary value: DataView (Jupyter, marimo), typed array, or base64 text. */
function toBytes(value, what) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof DataView || ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (typeof value === 'string') {
    const text = atob(value);
    const out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i += 1) out[i] = text.charCodeAt(i);
    return out;
  }
  throw new TypeError(`${what} did not arrive as binary data (got ${value === null ? 'null' : typeof value})`);
}

const sameJson = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** Parameters of observer `id` in `params`, without nulls ("auto" = the framework decides). */
function paramsOf(params, id) {
  const own = (params && typeof params === 'object' && params[id]) || {};
  return Object.fromEntries(Object.entries(own).filter(([, v]) => v !== null && v !== undefined));
}

/**
 * What Python sees of one observer's result: per-tensor values as numbers, per-channel/group/
 * block values as lists (the CLI's `--json` convention), metrics as computed on the tensor.
 */
function pythonResult(r) {
  const perTensor = r.granularity === 'per_tensor' || r.granularity === 'pass_through';
  const one = (a) => (a === undefined || a === null ? null : perTensor && a.length === 1 ? a[0] : Array.from(a));
  // The observer's state (min_val, max_val, amax) is float32 in the engine and crosses into JS as
  // its shortest decimal form (-11.15974 for the float32 -11.159740447998047): Math.fround
  // recovers the float32 exactly, as PyTorch's buffers hold it.
  const f32 = (a) => (a === undefined || a === null ? null : one(Array.from(a, (v) => (v === null ? null : Math.fround(v)))));
  const q = r.qparams || {};
  return {
    ok: Boolean(r.ok),
    error: r.ok ? null : (r.error && r.error.message) || 'failed',
    error_kind: r.ok ? null : (r.error && r.error.kind) || null,
    granularity: r.granularity,
    params: r.params || {},
    scale: one(r.scale),
    zero_point: one(r.zero_point),
    min_val: f32(q.min_val),
    max_val: f32(q.max_val),
    clip_min: one(r.clip_min),
    clip_max: one(r.clip_max),
    grid_min: one(r.grid_min),
    grid_max: one(r.grid_max),
    amax: q.amax ? f32(q.amax) : null,
    axis: q.axis === undefined ? null : q.axis,
    metrics: r.metrics || null,
    quirks: r.quirks || [],
  };
}

/** A result object for an observer the engine could not run at all. */
function failure(id, message, kind = 'input') {
  return { observer: id, ok: false, error: { kind, message }, quirks: [], view: { observer: id, notes: [], stats: [] } };
}

/** One per model: loads the data, runs the observers, publishes results to Python. */
class Controller {
  constructor(model, qs) {
    this.model = model;
    this.qs = qs;
    this.specs = new Map(qs.observers().map((o) => [o.id, o]));
    this.tensor = null;
    this.error = '';
    this.results = new Map();
    /** Parameters each result was computed with (JSON), to re-run only what changed. */
    this.ran = new Map();
    this.curve = null;
    this.views = new Set();
    this.publishTimer = 0;
    this.onData = () => this.reload();
    this.onSelection = () => this.sync();
    this.onCurve = () => {
      this.updateCurve();
      this.notify();
    };
    this.onStyle = () => this.notify();
    model.on('change:_batches', this.onData);
    model.on('change:_names', this.onData);
    model.on('change:member', this.onData);
    model.on('change:observers', this.onSelection);
    model.on('change:params', this.onSelection);
    model.on('change:bits', this.onCurve);
    model.on('change:scheme', this.onCurve);
    model.on('change:log_counts', this.onStyle);
    this.reload();
  }

  /** Registry entry of `id` (or a bare one for unknown ids). */
  spec(id) {
    return this.specs.get(id) || { id, params: [] };
  }

  /** The observers shown, in order. */
  observers() {
    const ids = this.model.get('observers');
    return Array.isArray(ids) ? ids : [];
  }

  /** (Re)load the tensor from the synced buffers and run every observer on it. */
  reload() {
    if (this.tensor) this.tensor.free();
    this.tensor = null;
    this.error = '';
    this.results.clear();
    this.ran.clear();
    try {
      const raw = this.model.get('_batches') || [];
      if (raw.length === 0) throw new Error('no data: pass an array, a list of arrays or a .npy/.npz/.safetensors path');
      const names = this.model.get('_names') || [];
      const bytes = raw.map((b, i) => toBytes(b, names[i] || `batch ${i}`));
      const member = this.model.get('member');
      // The engine names several batches name[0] … name[n − 1].
      const name = names.length > 1 ? 'batch' : names[0] || 'tensor.npy';
      this.tensor = this.qs.loadTensor(bytes.length === 1 ? bytes[0] : bytes, { name, member: member === null ? undefined : member });
    } catch (err) {
      this.error = err && err.message ? err.message : String(err);
    }
    if (this.tensor && this.observers().length === 0) {
      // Python named no observers: PyTorch's defaults, written back so Python sees them.
      let ids = DEFAULT_OBSERVERS.filter((id) => this.specs.has(id));
      if (this.tensor.shape.length >= 2) ids = ids.concat(DEFAULT_PER_CHANNEL.filter((id) => this.specs.has(id)));
      this.model.set('observers', ids);
    }
    this.sync();
  }

  /** Run every observer whose parameters changed; drop results of observers no longer shown. */
  sync() {
    const ids = this.observers();
    for (const id of [...this.results.keys()]) {
      if (!ids.includes(id)) {
        this.results.delete(id);
        this.ran.delete(id);
      }
    }
    if (this.tensor) {
      const params = this.model.get('params');
      for (const id of ids) {
        const own = paramsOf(params, id);
        const key = JSON.stringify(own);
        if (this.ran.get(id) === key) continue;
        this.ran.set(id, key);
        if (!this.specs.has(id)) {
          this.results.set(id, failure(id, `unknown observer ${JSON.stringify(id)}: explorer.available_observers lists the ${this.specs.size} observers`));
          continue;
        }
        try {
          this.results.set(id, this.qs.observe(this.tensor, id, own));
        } catch (err) {
          this.results.set(id, failure(id, err && err.message ? err.message : String(err), 'internal'));
        }
      }
    }
    this.updateCurve();
    this.notify();
    this.schedulePublish();
  }

  /** The error-versus-clipping curve of the tensor on the model's grid, with each result marked. */
  updateCurve() {
    this.curve = null;
    if (!this.tensor) return;
    const list = this.observers().map((id) => this.results.get(id) || failure(id, 'not computed'));
    try {
      const scheme = this.model.get('scheme') === 'symmetric' ? 'symmetric' : 'affine';
      this.curve = this.qs.errorCurve(this.tensor, { bits: Number(this.model.get('bits')) || 8, scheme, points: 200, results: list });
    } catch (err) {
      this.curve = { error: err && err.message ? err.message : String(err) };
    }
  }

  /** The tensor's summary as Python sees it. */
  summary() {
    const t = this.tensor;
    if (!t) return {};
    return { name: t.name, shape: t.shape, dtype: t.dtype, elements: t.elements, batches: t.batches, nonfinite: t.nonfinite, min: t.min, max: t.max, mean: t.mean, std: t.std };
  }

  schedulePublish() {
    clearTimeout(this.publishTimer);
    this.publishTimer = setTimeout(() => this.publish(), PUBLISH_DELAY_MS);
  }

  /** Send results, summary, error (and parameters the sliders changed) to Python. */
  publish() {
    const out = {};
    for (const id of this.observers()) {
      const r = this.results.get(id);
      if (r) out[id] = pythonResult(r);
    }
    this.model.set('results', out);
    this.model.set('summary', this.summary());
    this.model.set('error', this.error);
    if ((this.model.get('available_observers') || []).length !== this.specs.size) this.model.set('available_observers', [...this.specs.keys()]);
    this.model.save_changes();
  }

  /** A slider changed `name` of observer `id` (value null = automatic/default). */
  setParam(id, name, value) {
    const spec = this.spec(id);
    const p = spec.params.find((x) => x.name === name);
    const all = { ...(this.model.get('params') || {}) };
    const own = { ...(all[id] || {}) };
    if (value === null || (p && value === p.default)) delete own[name];
    else own[name] = value;
    if (Object.keys(own).length) all[id] = own;
    else delete all[id];
    this.model.set('params', all);
    this.sync();
  }

  setObservers(ids) {
    this.model.set('observers', ids);
    this.sync();
  }

  notify() {
    for (const v of this.views) v.update();
  }

  destroy() {
    clearTimeout(this.publishTimer);
    this.model.off('change:_batches', this.onData);
    this.model.off('change:_names', this.onData);
    this.model.off('change:member', this.onData);
    this.model.off('change:observers', this.onSelection);
    this.model.off('change:params', this.onSelection);
    this.model.off('change:bits', this.onCurve);
    this.model.off('change:scheme', this.onCurve);
    this.model.off('change:log_counts', this.onStyle);
    if (this.tensor) this.tensor.free();
    this.tensor = null;
  }
}

const controllers = new WeakMap();

function controllerOf(model, qs) {
  let c = controllers.get(model);
  if (!c) {
    c = new Controller(model, qs);
    controllers.set(model, c);
  }
  return c;
}

/** One displayed copy of the widget. */
class View {
  constructor(root, controller) {
    const { h } = controller.qs;
    this.c = controller;
    this.qs = controller.qs;
    this.root = root;
    this.panels = new Map();
    root.classList.add('quantscope-widget');
    this.facts = h('dl', { class: 'facts' });
    this.alert = h('p', { class: 'alert', role: 'alert', hidden: true });
    this.adder = h('select', { class: 'qs-add', 'aria-label': 'Add an observer' });
    this.adder.addEventListener('change', () => {
      const id = this.adder.value;
      this.adder.value = '';
      if (id && !this.c.observers().includes(id)) this.c.setObservers([...this.c.observers(), id]);
    });
    this.panelBox = h('div', { class: 'panels qs-panels' });
    this.curveCanvas = h('canvas', { class: 'qs-curve-canvas', role: 'img', 'aria-label': 'Quantization error against the clipping threshold' });
    this.curveNote = h('p', { class: 'curve-note muted' });
    const bits = h('input', { type: 'range', min: 2, max: 16, step: 1, value: controller.model.get('bits'), 'aria-label': 'bits of the error curve' });
    this.bitsOut = h('output', { text: String(controller.model.get('bits')) });
    bits.addEventListener('input', () => {
      this.bitsOut.textContent = bits.value;
      this.c.model.set('bits', Number(bits.value));
      this.c.model.save_changes();
    });
    const scheme = h('select', { 'aria-label': 'grid of the error curve' }, ...['affine', 'symmetric'].map((s) => h('option', { value: s, text: s, selected: s === controller.model.get('scheme') })));
    scheme.addEventListener('change', () => {
      this.c.model.set('scheme', scheme.value);
      this.c.model.save_changes();
    });
    this.bitsInput = bits;
    this.schemeInput = scheme;
    root.replaceChildren(
      h('div', { class: 'qs-head' }, h('strong', { class: 'qs-brand', text: 'quantscope' }), this.facts, h('span', { class: 'spacer' }), this.adder),
      this.alert,
      this.panelBox,
      h(
        'section',
        { class: 'curve qs-curve', 'aria-label': 'Error against clipping' },
        h('div', { class: 'curve-head' }, h('h3', { text: 'Error against clipping' }), h('label', {}, 'bits ', bits, this.bitsOut), h('label', {}, 'grid ', scheme)),
        this.curveCanvas,
        this.curveNote,
      ),
    );
    this.fillAdder();
    this.resize = new ResizeObserver(() => {
      clearTimeout(this.resizeTimer);
      this.resizeTimer = setTimeout(() => this.draw(), 60);
    });
    this.resize.observe(root);
    this.update();
  }

  fillAdder() {
    const { h } = this.qs;
    const groups = new Map();
    for (const spec of this.c.specs.values()) {
      if (!groups.has(spec.framework)) groups.set(spec.framework, []);
      groups.get(spec.framework).push(spec);
    }
    this.adder.replaceChildren(
      h('option', { value: '', text: 'add an observer…' }),
      ...[...groups].map(([framework, list]) => h('optgroup', { label: framework }, ...list.map((s) => h('option', { value: s.id, text: s.id })))),
    );
  }

  /** Rebuild what changed: facts, error, the panel list, each panel's controls and numbers. */
  update() {
    const { h, fmtNum, fmtShape, groupDigits } = this.qs;
    const c = this.c;
    const t = c.tensor;
    this.root.dataset.status = c.error ? 'error' : t ? 'ready' : 'loading';
    this.alert.hidden = !c.error;
    this.alert.textContent = c.error ? `quantscope could not load the data: ${c.error}` : '';
    this.facts.replaceChildren();
    if (t) {
      const fact = (k, v) => h('div', {}, h('dt', { text: k }), h('dd', { text: v }));
      this.facts.append(fact('tensor', t.name), fact('shape', fmtShape(t.shape)), fact('dtype', t.dtype), fact('values', groupDigits(t.elements)));
      if (t.batches > 1) this.facts.append(fact('batches', String(t.batches)));
      if (t.min !== null) this.facts.append(fact('range', `${fmtNum(t.min)} … ${fmtNum(t.max)}`));
      const nf = t.nonfinite;
      if (nf.nan + nf.pos_inf + nf.neg_inf > 0) this.facts.append(fact('NaN / ±Inf', `${nf.nan} / ${nf.pos_inf} / ${nf.neg_inf} (excluded)`));
    }
    const ids = c.observers();
    for (const [id, p] of this.panels) {
      if (!ids.includes(id)) {
        p.el.remove();
        this.panels.delete(id);
      }
    }
    const params = c.model.get('params');
    ids.forEach((id, color) => {
      let p = this.panels.get(id);
      const own = paramsOf(params, id);
      if (p && (p.color !== color || !sameJson(p.params, own))) {
        // Moved, or parameters changed from Python: rebuild its controls with the new values.
        p.el.remove();
        this.panels.delete(id);
        p = null;
      }
      if (!p) {
        p = this.makePanel(id, color, own);
        this.panels.set(id, p);
      }
      const r = c.results.get(id);
      if (r && r !== p.result) {
        p.result = r;
        this.qs.fillPanel(p.el, r);
      }
    });
    const order = ids.map((id) => this.panels.get(id).el);
    if (order.some((el, i) => this.panelBox.children[i] !== el) || this.panelBox.children.length !== order.length) {
      this.panelBox.replaceChildren(...order);
    }
    if (Number(this.bitsInput.value) !== Number(c.model.get('bits'))) {
      this.bitsInput.value = c.model.get('bits');
      this.bitsOut.textContent = String(c.model.get('bits'));
    }
    if (this.schemeInput.value !== c.model.get('scheme')) this.schemeInput.value = c.model.get('scheme');
    this.draw();
  }

  makePanel(id, color, own) {
    const { h } = this.qs;
    const spec = this.c.spec(id);
    const entry = { id, color, params: own, result: null, el: null };
    const controls = this.qs.buildControls(spec, own, (name, value) => {
      // Remember what the controls now show, so the change coming back does not rebuild them.
      const next = { ...entry.params };
      const p = spec.params.find((x) => x.name === name);
      if (value === null || (p && value === p.default)) delete next[name];
      else next[name] = value;
      entry.params = next;
      this.c.setParam(id, name, value);
    });
    const close = h('button', {
      type: 'button',
      title: 'Remove this observer',
      'aria-label': `Remove ${id}`,
      text: '×',
      onclick: () => this.c.setObservers(this.c.observers().filter((x) => x !== id)),
    });
    entry.el = this.qs.createPanel(spec, color, { slot: controls, actions: [close] });
    return entry;
  }

  /** Draw the panels' canvases and the curve at the current size. */
  draw() {
    const c = this.c;
    if (!c.tensor || !this.root.isConnected) return;
    const logCounts = Boolean(c.model.get('log_counts'));
    for (const p of this.panels.values()) {
      if (!p.result) continue;
      try {
        this.qs.drawPanel(p.el, p.result, c.tensor.histogram, { logCounts });
      } catch (err) {
        console.error('quantscope: drawing', p.id, err);
      }
    }
    const view = c.curve;
    if (view && !view.error) {
      try {
        const ratio = this.qs.fitCanvas(this.curveCanvas);
        this.qs.drawCurve(this.curveCanvas, view, { sqnr: false, logCounts: false, pixelRatio: ratio, legend: false });
        this.curveCanvas.dataset.drawn = String(Number(this.curveCanvas.dataset.drawn || 0) + 1);
        const best = view.best !== null && view.best !== undefined ? view.points[view.best] : null;
        this.curveNote.textContent = best ? `Lowest MSE of ${view.label}: clipping at ±${this.qs.fmtNum(best[0])} (MSE ${this.qs.fmtNum(best[1])}); each observer's choice is marked.` : '';
      } catch (err) {
        console.error('quantscope: drawing the curve', err);
      }
    } else {
      this.curveNote.textContent = view && view.error ? view.error : '';
    }
  }

  destroy() {
    this.resize.disconnect();
    clearTimeout(this.resizeTimer);
    this.c.views.delete(this);
  }
}

/**
 * anywidget: one controller per model, created as soon as the model exists; the returned
 * clean-up frees the tensor's WebAssembly memory when the model goes away.
 */
async function initialize({ model }) {
  const qs = await engine();
  const controller = controllerOf(model, qs);
  return () => {
    controller.destroy();
    controllers.delete(model);
  };
}

/** anywidget: draw the model into `el`; returns the clean-up. */
async function render({ model, el }) {
  let qs;
  try {
    qs = await engine();
  } catch (err) {
    el.textContent = `quantscope could not start its WebAssembly engine: ${err && err.message ? err.message : err}`;
    el.setAttribute('role', 'alert');
    return undefined;
  }
  const controller = controllerOf(model, qs);
  const view = new View(el, controller);
  controller.views.add(view);
  // The first results go to Python even when no model change follows.
  controller.schedulePublish();
  return () => view.destroy();
}

export default { initialize, render };
