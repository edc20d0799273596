// The observers view: the observer picker, one panel per selected observer (histogram with the
// clipping range, numbers, quirks, and controls generated from the registry), and the
// error-versus-clipping curve with each observer's choice marked. The page and the notebook
// widget mount the same view (a View, www/ui/view.js); it renders its own markup into the root it
// is given. In the page it also answers the export buttons (results as JSON and CSV, the
// comparison as SVG and PNG, a panel as PNG).
//
// Every panel has its own request queue: at most one engine call in flight; changes made
// meanwhile collapse into one that follows it. A change of search parameters only comes back
// twice (engine `updateDeferred`): the clipping range at once, then the error metrics, which a
// newer change of the same panel supersedes (its signal is aborted). A panel only ever shows the
// answer to the last request it sent; a panel that is (re)created always asks again.
//
// With the page's rotation preview on (the `rotate` state, www/ui/rotation.js), each panel also
// shows its observer's SQNR after rotation (engine `observeRotated`, the CLI's `observe --rotate`),
// asked once the panel's own report is complete, for the parameters of that report; any new
// request of the panel first clears it, and an answer to an older one is dropped.
import { drawCurve, renderPanelSvg, flatParams } from '../pkg/quantscope.js';
import { buildControls, tensorChoices } from './controls.js';
import { createPanel, fillPanel, drawPanel, measurePanel, viewOf, plainReport, h, fitCanvas, seriesColor, granularityLabel, renderDerivation } from '../lib/panel.js';
import { fmtNum, fmtShape } from '../lib/format.js';
import { View } from './view.js';
import { download, resultsJson, resultsCsv, svgToPng, safeName } from './exports.js';
import { rotationHelps, sqnrText, sqnrAttr } from './rotation.js';

/** PyTorch's defaults, shown first; per-channel ones are added when the tensor has a channel axis. */
const DEFAULT_OBSERVERS = ['torch.MinMaxObserver', 'torch.MovingAverageMinMaxObserver', 'torch.HistogramObserver'];
const DEFAULT_PER_CHANNEL = ['torch.PerChannelMinMaxObserver', 'torch.MovingAveragePerChannelMinMaxObserver'];
/** A panel shows its spinner only when an answer takes longer than this. */
const BUSY_DELAY_MS = 150;
/**
 * The curve is recomputed this long after the last result arrived; while other panels still wait
 * for their reports, after CURVE_BUSY_DELAY_MS (each computation passes over the data again: on a
 * large tensor, once per arriving report would keep a worker busy).
 */
const CURVE_DELAY_MS = 40;
const CURVE_BUSY_DELAY_MS = 1000;
const CURVE_POINTS = 200;
/**
 * A panel asks for its run after rotation this long after its own report is complete: a slider
 * dragged asks once, after its last move.
 */
const ROTATED_DELAY_MS = 120;

const now = () => performance.now();
const sameValue = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** A panel's report for a call that failed before the engine could report. */
function failure(id, message, kind) {
  return { observer: id, ok: false, error: { kind, message } };
}

export class ObserversView extends View {
  /**
   * Render the view into `root`.
   * @param context {
   *   registry      the engine's registry (`call('registry')`)
   *   prefix        prefix of the view's element ids ('' in the page, unique per widget)
   *   main          true: the panels are the page's <main> landmark
   *   pickerOpen    open the observer list at first
   *   exports       the element holding the page's export buttons (#export-json, #export-csv,
   *                 #export-svg, #export-png): the view answers them and gives each panel a PNG
   *                 button
   *   unknown       (id) => the message a panel of an id the registry lacks shows
   *   onChange      (what) => void: 'state' when the user changed the selection, a parameter or
   *                 a display setting; 'results' when a panel shows a new report
   * }
   */
  mount(root, engine, context = {}) {
    this.attach(root, engine, context);
    this.specs = new Map(context.registry.observers.map((o) => [o.id, o]));
    this.observers = [];
    this.params = {};
    this.customized = false;
    this.panels = new Map();
    this.colors = {};
    this.crashed = new Set();
    /** Observer id → the message of the engine failure its run after rotation caused (not asked again). */
    this.rotationCrashed = new Map();
    this.curve = { bits: 8, scheme: 'affine', metric: 'mse' };
    this.logCounts = true;
    /** The page's rotation preview: `'hadamard:SEED'`, or null when off (www/ui/rotation.js). */
    this.rotate = null;
    this.summary = null;
    this.hist = null;
    this.tensors = [];
    /** Vectors opened from files for vector parameters: [{value: number[], label}]. */
    this.opened = [];
    this.curveView = null;
    this.curvePending = 0;
    this.curveTimer = 0;
    this.latencies = [];
    this.render();
    this.buildPicker();
    this.bind();
    if (context.exports) this.bindExports(context.exports);
    return this;
  }

  changed(what) {
    if (this.context.onChange) this.context.onChange(what);
  }

  render() {
    const id = (n) => this.id(n);
    const key = (cls) => h('span', { class: `key ${cls}` });
    this.root.replaceChildren(
      h('section', { class: 'observers card', 'aria-labelledby': id('picker-title') },
        h('details', { id: id('picker-details'), class: 'picker-details' },
          h('summary', { class: 'picker-head' },
            h('h2', { id: id('picker-title'), text: 'Observers' }),
            h('span', { id: id('picker-count'), class: 'muted' }),
            h('span', { class: 'muted choose', text: 'choose from every framework' })),
          h('div', { id: id('picker'), class: 'picker' })),
        h('div', { class: 'legend-row' },
          h('p', { class: 'legend muted' },
            key('key-grid'), ' representable range of the grid',
            key('key-clip'), ' chosen clipping range',
            key('key-bar'), ' values kept',
            key('key-clipped'), ' values clipped'),
          h('span', { class: 'spacer' }),
          h('label', { class: 'toggle' }, h('input', { type: 'checkbox', id: id('log-counts'), checked: true }), ' log counts'))),
      h(this.context.main ? 'main' : 'div', { id: id('panels'), class: 'panels', 'aria-label': 'Observer results' }),
      h('section', { class: 'curve card', 'aria-labelledby': id('curve-title') },
        h('div', { class: 'curve-head' },
          h('h2', { id: id('curve-title'), text: 'Quantization error versus clipping threshold' }),
          h('span', { class: 'spacer' }),
          h('label', { for: id('curve-bits') }, 'bits = ', h('output', { id: id('curve-bits-value'), text: '8' })),
          h('input', { type: 'range', id: id('curve-bits'), min: 2, max: 16, step: 1, value: 8 }),
          h('label', {}, 'scheme ', h('select', { id: id('curve-scheme') }, h('option', { value: 'affine', text: 'affine' }), h('option', { value: 'symmetric', text: 'symmetric' }))),
          h('label', {}, 'show ', h('select', { id: id('curve-metric') }, h('option', { value: 'mse', text: 'MSE' }), h('option', { value: 'sqnr', text: 'SQNR' })))),
        h('p', { class: 'muted curve-note', text: 'For each threshold t the grid is fitted to [max(min, −t), min(max, t)] (affine) or [−t, t] (symmetric); dots mark each per-tensor observer\'s own choice at t = max(|clip min|, |clip max|) with its measured error, dashed lines the error of per-channel observers.' }),
        h('canvas', { id: id('curve'), class: 'curve-canvas', role: 'img', 'aria-label': 'Quantization error versus clipping threshold' }),
        h('table', { id: id('curve-table'), class: 'curve-table' }),
        h('h3', { text: 'Diagnosis: what makes this tensor hard, what helped' }),
        h('p', { id: id('diagnosis'), class: 'diagnosis', 'aria-live': 'polite' })),
    );
    this.$('picker-details').open = Boolean(this.context.pickerOpen);
  }

  bind() {
    this.$('log-counts').addEventListener('change', (e) => {
      this.logCounts = e.target.checked;
      this.redraw();
      this.changed('state');
    });
    this.$('curve-bits').addEventListener('input', (e) => {
      this.curve.bits = Number(e.target.value);
      this.$('curve-bits-value').textContent = e.target.value;
      this.scheduleCurve();
      this.changed('state');
    });
    this.$('curve-scheme').addEventListener('change', (e) => {
      this.curve.scheme = e.target.value;
      this.scheduleCurve();
      this.changed('state');
    });
    this.$('curve-metric').addEventListener('change', (e) => {
      this.curve.metric = e.target.value;
      this.drawCurveCanvas();
      this.changed('state');
    });
    let resizeTimer = 0;
    this.resize = new ResizeObserver(() => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => this.redraw(), 80);
    });
    this.resize.observe(this.$('panels'));
  }

  /** Stop observing the page (the view's root is about to go). */
  unmount() {
    if (this.resize) this.resize.disconnect();
    clearTimeout(this.curveTimer);
    for (const p of this.panels.values()) this.dropPanel(p);
    this.panels.clear();
  }

  // -------------------------------------------------------------------------------------------
  // Picker

  buildPicker() {
    const picker = this.$('picker');
    const groups = new Map();
    for (const o of this.specs.values()) {
      if (!groups.has(o.framework)) groups.set(o.framework, { version: o.framework_version, list: [] });
      groups.get(o.framework).list.push(o);
    }
    if (groups.size === 0) picker.append(h('p', { class: 'empty', text: 'No observers are registered in this build.' }));
    for (const [framework, { version, list }] of groups) {
      const fs = h('fieldset', {}, h('legend', {}, framework, h('span', { class: 'version', text: version })));
      for (const o of list) {
        const cb = h('input', { type: 'checkbox', value: o.id, 'data-observer': o.id });
        cb.addEventListener('change', () => this.toggle(o.id, cb.checked));
        fs.append(h('label', { title: `${o.id}\n${o.summary}` }, cb, h('span', { text: o.name }), h('span', { class: 'gran', text: o.granularity_label }), o.corrects ? h('span', { class: 'fixed', text: 'fixed' }) : null));
      }
      picker.append(fs);
    }
  }

  syncPicker() {
    for (const cb of this.$('picker').querySelectorAll('input[type=checkbox]')) cb.checked = this.observers.includes(cb.value);
    this.$('picker-count').textContent = `${this.observers.length} of ${this.specs.size} selected`;
  }

  /** The user (un)ticked observer `id`. */
  toggle(id, on) {
    const ids = on ? [...this.observers.filter((x) => x !== id), id] : this.observers.filter((x) => x !== id);
    this.customized = true;
    this.setObservers(ids);
    this.changed('state');
  }

  // -------------------------------------------------------------------------------------------
  // State

  /** The observers shown, their parameters (only those that differ from the default), the curve and the count scale. */
  state() {
    return {
      observers: [...this.observers],
      params: Object.fromEntries(this.observers.map((id) => [id, { ...(this.params[id] || {}) }])),
      curve: { ...this.curve },
      logCounts: this.logCounts,
    };
  }

  /**
   * Apply (part of) a state: observers, params ({id: {name: value}}), curve, logCounts, and the
   * page's rotation preview `rotate` (kept by the page, not by this view). Panels whose
   * parameters changed get controls showing the new values and run again.
   */
  setState({ observers, params, curve, logCounts, rotate } = {}) {
    if (rotate !== undefined && rotate !== this.rotate) {
      this.rotate = rotate;
      this.rotationCrashed.clear();
      for (const p of this.panels.values()) {
        // A panel still waiting for its report asks once it is shown.
        if (p.report && !p.inflight && !p.pending && !p.completing) this.scheduleRotated(p);
        else this.clearRotated(p);
      }
    }
    const changed = new Set();
    if (params) {
      const next = {};
      for (const [id, values] of Object.entries(params)) next[id] = { ...values };
      for (const id of new Set([...Object.keys(next), ...Object.keys(this.params)])) {
        if (!sameValue(next[id] || {}, this.params[id] || {})) changed.add(id);
      }
      this.params = next;
    }
    if (curve) {
      this.curve = { ...this.curve, ...curve };
      this.$('curve-bits').value = this.curve.bits;
      this.$('curve-bits-value').textContent = String(this.curve.bits);
      this.$('curve-scheme').value = this.curve.scheme;
      this.$('curve-metric').value = this.curve.metric;
      this.scheduleCurve();
    }
    if (logCounts !== undefined && logCounts !== this.logCounts) {
      this.logCounts = logCounts;
      this.$('log-counts').checked = logCounts;
      this.redraw();
    }
    if (observers && observers.length) this.customized = true;
    if (observers || params) this.syncPanels(observers || this.observers, changed);
  }

  /** Show exactly the observers `ids`, in this order. */
  setObservers(ids) {
    this.setState({ observers: ids });
  }

  /** Show observer `id` with exactly `params` (the others at their defaults) and run it afresh. */
  setParams(id, params) {
    this.params[id] = { ...params };
    this.customized = true;
    this.syncPanels(this.observers.includes(id) ? this.observers : [...this.observers, id], new Set([id]));
  }

  /**
   * Make the panels match `ids`: drop the others, and (re)create the missing ones and those in
   * `changed` (their controls show the current values); every panel made runs. Returns the ids
   * of the panels made.
   */
  syncPanels(ids, changed = new Set()) {
    this.observers = [...new Set(ids)];
    const keep = new Set(this.observers);
    for (const [id, p] of this.panels) {
      if (keep.has(id) && !changed.has(id)) continue;
      this.dropPanel(p);
      this.panels.delete(id);
      if (!keep.has(id)) {
        delete this.colors[id];
        if (this.specs.has(id)) this.engine.call('remove', { id }).catch(() => {});
      }
    }
    const made = new Set();
    for (const id of this.observers) {
      if (this.panels.has(id)) continue;
      const p = this.makePanel(id);
      this.panels.set(id, p);
      made.add(id);
      this.request(p, { fresh: true });
    }
    // Re-inserting a panel makes the page lay it out and style it from scratch: only when the
    // panels or their order changed (a new tensor keeps them).
    const wanted = this.observers.map((id) => this.panels.get(id).el);
    const container = this.$('panels');
    const current = container.children;
    if (current.length !== wanted.length || wanted.some((el, i) => current[i] !== el)) container.replaceChildren(...wanted);
    this.syncPicker();
    this.scheduleCurve();
    return made;
  }

  /** The observers a tensor opens with until the user chooses: PyTorch's defaults. */
  defaultObservers(summary) {
    const known = (id) => this.specs.has(id);
    let ids = DEFAULT_OBSERVERS.filter(known);
    if (summary && summary.shape.length >= 2) ids = ids.concat(DEFAULT_PER_CHANNEL.filter(known));
    if (ids.length === 0) ids = [...this.specs.keys()].slice(0, 3);
    return ids;
  }

  // -------------------------------------------------------------------------------------------
  // Tensor

  /**
   * A new tensor is selected (the engine dropped every run): every panel runs afresh. `files`
   * (the loaded files' infos) give the tensors a vector parameter may take. No summary (nothing
   * could be loaded): the panels stay as they are.
   */
  tensorChanged(summary, hist, files = []) {
    if (!summary) return;
    this.summary = summary;
    this.hist = hist;
    this.crashed.clear();
    this.rotationCrashed.clear();
    const tensors = tensorChoices(files);
    const vectorsChanged = !sameValue(tensors, this.tensors);
    this.tensors = tensors;
    const ids = this.customized ? this.observers : this.defaultObservers(summary);
    const rebuild = new Set();
    if (vectorsChanged) {
      for (const id of ids) if ((this.specs.get(id)?.params || []).some((p) => p.type === 'vector')) rebuild.add(id);
    }
    const made = this.syncPanels(ids, rebuild);
    for (const p of this.panels.values()) if (!made.has(p.id)) this.request(p, { fresh: true });
  }

  /** The engine was restarted with the same tensor: run every panel again except those that crashed it. */
  refresh() {
    for (const p of this.panels.values()) {
      p.inflight = null;
      p.completing = null;
      p.pending = null;
      if (!this.crashed.has(p.id)) this.request(p, { fresh: true });
    }
    this.scheduleCurve();
  }

  // -------------------------------------------------------------------------------------------
  // Panels

  colorOf(id) {
    if (!(id in this.colors)) {
      const used = new Set(Object.values(this.colors));
      let c = 0;
      while (used.has(c)) c++;
      this.colors[id] = c;
    }
    return this.colors[id];
  }

  makePanel(id) {
    const spec = this.specs.get(id) || { id, params: [] };
    const controls = buildControls(spec, this.params[id] || {}, (name, value, { final }) => this.onParam(id, name, value, final), {
      idPrefix: this.prefix,
      tensors: [...this.tensors, ...this.opened],
      openVector: (file) => this.openVector(file),
    });
    const close = h('button', { type: 'button', title: 'Remove this observer', 'aria-label': `Remove ${id}`, text: '×', onclick: () => this.toggle(id, false) });
    const extra = this.context.exports ? [h('button', { type: 'button', title: 'Export this panel as PNG', text: 'PNG', onclick: () => this.exportPanelPng(id) })] : [];
    const el = createPanel(spec, this.colorOf(id), { slot: controls, actions: [...extra, close] });
    // The run after rotation, under the panel's numbers (shown while the rotation preview is on).
    el.querySelector('.stats').after(h('p', { class: 'rotated', 'aria-live': 'polite', hidden: !this.rotate }));
    const p = {
      id, el, gen: 0, inflight: null, completing: null, pending: null, sentKey: null, sentParams: null, busyTimer: 0, report: null, view: null,
      // The run after rotation: the generation of its request, its delay and its call.
      rotGen: 0, rotTimer: 0, rotCall: null,
    };
    el.querySelector('.why').addEventListener('toggle', () => this.explain(p));
    if (!this.specs.has(id)) {
      const message = this.context.unknown ? this.context.unknown(id) : `unknown observer ${JSON.stringify(id)}`;
      this.show(p, failure(id, message, 'unknown'), now(), 'full');
    }
    return p;
  }

  /**
   * Read a vector parameter's values from `file` (its first tensor, flattened); the vector is
   * then offered to every vector parameter. Resolves to {value, label}.
   */
  async openVector(file) {
    const v = await this.engine.call('readVector', { file });
    const entry = { value: Array.from(v.values), label: `${v.name}${v.member ? `: ${v.member}` : ''} ${fmtShape(v.shape)} (opened)` };
    this.opened.push(entry);
    return entry;
  }

  /** Forget panel `p`: its requests are no longer wanted. */
  dropPanel(p) {
    p.gen += 1;
    this.clearRotated(p);
    for (const c of [p.inflight, p.completing]) if (c) c.abort();
    p.inflight = null;
    p.completing = null;
    p.pending = null;
    clearTimeout(p.busyTimer);
    p.el.remove();
  }

  onParam(id, name, value, final) {
    const spec = this.specs.get(id);
    const param = spec && spec.params.find((x) => x.name === name);
    const own = (this.params[id] ||= {});
    if (value === null || value === undefined || (param && sameValue(value, param.default))) delete own[name];
    else own[name] = value;
    const p = this.panels.get(id);
    if (p) this.request(p, { t0: now() });
    if (final) this.changed('state');
  }

  /** The parameters observer `id` runs with (the engine reads null as the default). */
  paramsFor(id) {
    return Object.fromEntries(Object.entries(this.params[id] || {}).filter(([, v]) => v !== undefined));
  }

  /** Ask for panel `p`'s report; at most one request per panel is in flight (see the header). */
  request(p, { fresh = false, t0 = now() } = {}) {
    if (!this.summary || !this.specs.has(p.id)) return;
    const key = JSON.stringify(this.paramsFor(p.id));
    // The same parameters as the request in flight (a slider's `change` after its `input`).
    if (!fresh && !p.pending && key === p.sentKey) return;
    if (p.inflight) {
      p.pending = { fresh: fresh || Boolean(p.pending && p.pending.fresh), t0: p.pending ? p.pending.t0 : t0 };
      return;
    }
    this.send(p, this.paramsFor(p.id), key, fresh, t0);
  }

  /**
   * Send the queued change of panel `p`, if any; true when one was sent. Changes that came back
   * to the parameters already sent need no new request.
   */
  sendPending(p) {
    if (!p.pending) return false;
    const { fresh, t0 } = p.pending;
    p.pending = null;
    const params = this.paramsFor(p.id);
    const key = JSON.stringify(params);
    if (!fresh && key === p.sentKey) return false;
    this.send(p, params, key, fresh, t0);
    return true;
  }

  send(p, params, key, fresh, t0) {
    if (p.completing) p.completing.abort();
    p.completing = null;
    const gen = ++p.gen;
    const controller = new AbortController();
    p.inflight = controller;
    p.sentKey = key;
    p.sentParams = params;
    // The run after rotation shown was of the parameters before.
    this.clearRotated(p);
    p.el.dataset.status = 'busy';
    clearTimeout(p.busyTimer);
    p.busyTimer = setTimeout(() => {
      if (p.gen === gen) p.el.querySelector('.busy').hidden = false;
    }, BUSY_DELAY_MS);
    const current = () => p.gen === gen && this.panels.get(p.id) === p;
    /** This request no longer holds the panel's queue; true when the queued change was sent. */
    const release = () => {
      if (p.inflight === controller) p.inflight = null;
      return this.sendPending(p);
    };
    let partial = false;
    const onProgress = (report) => {
      const received = now();
      if (!current()) return;
      partial = true;
      this.show(p, report, t0, 'partial', received);
      p.completing = controller;
      release();
    };
    const method = fresh ? 'observe' : 'updateDeferred';
    this.engine
      .call(method, { id: p.id, params, view: true, packed: true }, { onProgress, signal: controller.signal })
      .then(
        (report) => {
          if (!current() || release()) return;
          p.completing = null;
          this.show(p, report, t0, partial ? 'metrics' : 'full');
        },
        (err) => {
          if (err.restarted) {
            if (p.inflight === controller) p.inflight = null;
            p.pending = null;
            return;
          }
          if (!current() || release()) return;
          p.completing = null;
          if (err.panic) this.crashed.add(p.id);
          this.show(p, failure(p.id, err.message, err.panic ? 'panic' : 'internal'), t0, 'full');
        },
      );
  }

  /**
   * Fill panel `p`'s "Why this range?" with the derivation of its current report, when the
   * disclosure is open (the engine runs the search again on the state it collected).
   */
  async explain(p) {
    const why = p.el.querySelector('.why');
    if (!why.open || !p.report || p.report.metrics_pending) return;
    if (p.report.ok === false) {
      const message = p.report.error?.message || 'see the error above';
      renderDerivation(p.el, null, `No derivation: the run failed (${message}).`);
      return;
    }
    const shown = p.report;
    try {
      const steps = await this.engine.call('explain', { id: p.id, view: true });
      if (p.report === shown) renderDerivation(p.el, steps, undefined, { onPreview: (range) => this.preview(p, range) });
    } catch (e) {
      if (p.report === shown) renderDerivation(p.el, null);
    }
  }

  /** Fill and draw panel `p` with `report` at once (before the next frame is painted). */
  show(p, report, t0, kind, received = now()) {
    clearTimeout(p.busyTimer);
    p.el.querySelector('.busy').hidden = true;
    // The engine sends the panel's view with the report (computed where the report lives).
    const { view, ...plain } = report;
    p.report = plain;
    const d0 = now();
    // Read the canvas sizes, draw, and only then change the panel's text: setting a canvas font
    // resolves styles, so drawing after the DOM changed would force a style recalculation.
    const sizes = measurePanel(p.el);
    p.view = view || viewOf(plain);
    this.draw(p, sizes);
    fillPanel(p.el, report, p.view);
    const done = now();
    this.latencies.push({
      id: p.id,
      ms: done - t0,
      // time until the engine's answer arrived, and spent drawing it
      received: received - t0,
      draw: done - d0,
      stateReused: Boolean(report.state_reused),
      // partial: clipping range drawn, metrics pending; metrics: the same change completed;
      // full: everything at once.
      kind,
    });
    if (this.latencies.length > 200) this.latencies.shift();
    if (kind !== 'partial') {
      this.scheduleCurve();
      this.explain(p);
      this.scheduleRotated(p);
    }
    this.changed('results');
  }

  // -------------------------------------------------------------------------------------------
  // The run after rotation

  /**
   * Forget panel `p`'s run after rotation (its answer, if one is coming, is dropped): the line
   * says it is being computed while the preview is on, and the panel carries no rotated number.
   */
  clearRotated(p) {
    p.rotGen += 1;
    clearTimeout(p.rotTimer);
    p.rotTimer = 0;
    if (p.rotCall) p.rotCall.abort();
    p.rotCall = null;
    for (const k of ['rotatedSqnr', 'rotatedError', 'rotationHelps']) delete p.el.dataset[k];
    const line = p.el.querySelector('.rotated');
    if (!line) return;
    line.hidden = !this.rotate;
    line.classList.remove('failed');
    line.removeAttribute('title');
    line.textContent = this.rotate ? 'after rotation: computing…' : '';
  }

  /** Ask for panel `p`'s run after rotation, for the parameters of the report it shows. */
  scheduleRotated(p) {
    this.clearRotated(p);
    if (!this.rotate) return;
    if (!this.summary || !this.specs.has(p.id) || this.crashed.has(p.id) || this.rotationCrashed.has(p.id)) {
      const failed = this.rotationCrashed.get(p.id);
      if (failed) this.showRotated(p, { rotation: this.rotate, metrics: null, error: { message: failed } });
      else p.el.querySelector('.rotated').textContent = 'after rotation: —';
      return;
    }
    const gen = p.rotGen;
    p.rotTimer = setTimeout(() => {
      p.rotTimer = 0;
      if (p.rotGen === gen) this.sendRotated(p, gen);
    }, ROTATED_DELAY_MS);
  }

  sendRotated(p, gen) {
    const controller = new AbortController();
    p.rotCall = controller;
    const rotate = this.rotate;
    const args = { id: p.id, params: p.sentParams || this.paramsFor(p.id), rotate };
    const current = () => p.rotGen === gen && this.panels.get(p.id) === p;
    const done = () => {
      if (p.rotCall === controller) p.rotCall = null;
    };
    this.engine.call('observeRotated', args, { signal: controller.signal }).then(
      (rotated) => {
        done();
        if (current()) this.showRotated(p, rotated);
      },
      (err) => {
        done();
        // A restarted engine runs the panel again, and it asks again (unless this call crashed it).
        if (err.panic && !err.restarted) this.rotationCrashed.set(p.id, err.message);
        if (!current() || err.restarted || err.cancelled) return;
        this.showRotated(p, { rotation: rotate, metrics: null, error: { message: err.message } });
      },
    );
  }

  /**
   * Show the engine's run after rotation `rotated` ({rotation, metrics, error}) under panel `p`'s
   * numbers, beside the SQNR of the report the panel shows; `data-rotated-sqnr` (or
   * `data-rotated-error`) and `data-rotation-helps` say the same.
   */
  showRotated(p, rotated) {
    const line = p.el.querySelector('.rotated');
    const before = p.report && p.report.ok !== false ? p.report.metrics : null;
    line.hidden = false;
    line.title = `rotated: ${rotated.rotation}`;
    if (rotated.error) {
      p.el.dataset.rotatedError = rotated.error.message;
      line.classList.add('failed');
      line.textContent = `after rotation: ${rotated.error.message}`;
      return;
    }
    const after = rotated.metrics;
    if (!after) {
      line.textContent = 'after rotation: no error metrics (the observer passes the values through)';
      return;
    }
    p.el.dataset.rotatedSqnr = sqnrAttr(after.sqnr_db);
    const helps = rotationHelps(before?.sqnr_db, after.sqnr_db);
    if (helps !== null) p.el.dataset.rotationHelps = String(helps);
    line.textContent = `after rotation: SQNR ${sqnrText(after)}${before ? ` (before ${sqnrText(before)})` : ''}${helps === false ? ' — rotation does not help here' : ''}`;
  }

  /** True while a panel's run after rotation is asked for or awaited. */
  rotatedWaiting() {
    for (const p of this.panels.values()) if (p.rotTimer || p.rotCall) return true;
    return false;
  }

  /**
   * Draw panel `p`'s histogram with a search candidate's clipping range `range` ([lo, hi]) in
   * place of the chosen one, or as chosen again (`null`).
   */
  preview(p, range) {
    if (!p.view || !this.root.isConnected) return;
    p.el.dataset.preview = range ? range.join(',') : '';
    try {
      drawPanel(p.el, range ? { ...p.view, clip: range } : p.view, this.hist, { logCounts: this.logCounts });
    } catch (err) {
      console.error(err);
    }
  }

  draw(p, sizes = null) {
    if (!p.view || !this.root.isConnected) return;
    try {
      drawPanel(p.el, p.view, this.hist, { logCounts: this.logCounts, sizes });
    } catch (err) {
      console.error(err);
    }
  }

  redraw() {
    for (const p of this.panels.values()) this.draw(p);
    this.drawCurveCanvas();
  }

  /**
   * The reports of the panels shown, by observer id, with plain arrays (a panel keeps its report
   * packed as the engine sent it: long per-slice arrays as Float64Array).
   */
  results() {
    const out = {};
    for (const id of this.observers) {
      const p = this.panels.get(id);
      if (p && p.report) out[id] = plainReport(p.report);
    }
    return out;
  }

  /** True while a panel waits for the engine. */
  panelsWaiting() {
    for (const p of this.panels.values()) if (p.inflight || p.pending || p.completing) return true;
    return false;
  }

  /** True while a panel, its run after rotation or the curve waits for the engine. */
  get busy() {
    return this.curvePending > 0 || this.panelsWaiting() || this.rotatedWaiting();
  }

  // -------------------------------------------------------------------------------------------
  // Error versus clipping threshold

  scheduleCurve() {
    clearTimeout(this.curveTimer);
    if (!this.summary) return;
    this.curvePending += 1;
    this.curveTimer = setTimeout(() => {
      this.updateCurve().finally(() => {
        this.curvePending = Math.max(0, this.curvePending - 1);
      });
    }, this.panelsWaiting() ? CURVE_BUSY_DELAY_MS : CURVE_DELAY_MS);
  }

  /** The observers with a report, in order, and their colours. */
  marked() {
    const ids = this.observers.filter((id) => {
      const p = this.panels.get(id);
      return p && p.report && p.report.ok && this.specs.has(id);
    });
    return { ids, colors: ids.map((id) => this.colorOf(id)) };
  }

  async updateCurve() {
    this.curvePending = 1;
    const { ids, colors } = this.marked();
    const spec = { bits: this.curve.bits, scheme: this.curve.scheme, points: CURVE_POINTS };
    try {
      this.curveView = await this.engine.call('curve', { spec, ids, colors });
      requestAnimationFrame(() => this.drawCurveCanvas());
      await this.updateDiagnosis(ids);
    } catch (err) {
      if (!err.restarted) console.error(err);
    }
  }

  /** The tensor's diagnosis from the engine, given the reports of observers `ids`. */
  async updateDiagnosis(ids) {
    const reports = ids.map((id) => this.panels.get(id).report);
    const d = await this.engine.call('diagnose', { reports });
    this.$('diagnosis').textContent = d ? d.text : '';
  }

  drawCurveCanvas() {
    const canvas = this.$('curve');
    if (!this.curveView || !this.root.isConnected) return;
    const ratio = fitCanvas(canvas);
    try {
      drawCurve(canvas, this.curveView, { sqnr: this.curve.metric === 'sqnr', logCounts: false, pixelRatio: ratio, legend: false });
      canvas.dataset.drawn = String(Number(canvas.dataset.drawn || 0) + 1);
    } catch (err) {
      console.error(err);
    }
    this.renderCurveTable();
  }

  renderCurveTable() {
    const v = this.curveView;
    const table = this.$('curve-table');
    table.replaceChildren();
    if (!v) return;
    const db = (x) => (x === null ? '—' : `${fmtNum(x)} dB`);
    const best = v.best !== null && v.best !== undefined ? v.points[v.best] : null;
    const head = h('thead', {}, h('tr', {}, h('th', { text: 'observer' }), h('th', { text: 'threshold' }), h('th', { text: 'MSE' }), h('th', { text: 'SQNR' })));
    const rows = v.markers.map((m) =>
      h('tr', {},
        h('td', {}, h('span', { class: 'swatch', style: { display: 'inline-block', marginRight: '6px', background: seriesColor(m.color) } }), m.observer),
        h('td', { text: m.threshold === null ? granularityLabel(this.panels.get(m.observer)?.report?.granularity || 'per_channel') : fmtNum(m.threshold) }),
        h('td', { text: fmtNum(m.mse) }),
        h('td', { text: db(m.sqnr_db) })));
    if (best) rows.unshift(h('tr', {}, h('td', { text: `best of ${v.label}` }), h('td', { text: fmtNum(best[0]) }), h('td', { text: fmtNum(best[1]) }), h('td', { text: db(best[2]) })));
    table.append(head, h('tbody', {}, ...rows));
  }

  // -------------------------------------------------------------------------------------------
  // Figures

  /** The whole comparison (histogram, panels, curve) as SVG. */
  comparisonSvg() {
    const ids = this.observers.filter((id) => this.panels.get(id)?.report && this.specs.has(id));
    return this.engine.call('comparisonSvg', {
      ids,
      colors: ids.map((id) => this.colorOf(id)),
      curve: { bits: this.curve.bits, scheme: this.curve.scheme, points: CURVE_POINTS },
      style: { logCounts: this.logCounts, sqnr: this.curve.metric === 'sqnr', pixelRatio: 1 },
      width: 1400,
    });
  }

  /** Panel `id` as SVG (null before it has a report). */
  panelSvg(id) {
    const p = this.panels.get(id);
    if (!p || !p.view || !this.hist) return null;
    const view = { ...p.view, color: this.colorOf(id) };
    const height = (view.channels ? 700 : 520) + 22 * (view.notes || []).length;
    return renderPanelSvg(this.hist.lo, this.hist.hi, this.hist.counts, view, { logCounts: this.logCounts, pixelRatio: 1 }, 560, height);
  }

  // -------------------------------------------------------------------------------------------
  // Exports

  /** The reports of the panels shown, in panel order. */
  orderedResults() {
    const results = this.results();
    return this.observers.filter((id) => results[id]).map((id) => results[id]);
  }

  /** The file name exports start with: the tensor's name. */
  baseName() {
    return safeName(this.summary ? this.summary.name.replace(/\.(npy|npz|safetensors)/, '') : 'quantscope');
  }

  async exportPanelPng(id) {
    const svg = this.panelSvg(id);
    if (svg) download(`${this.baseName()}-${safeName(id)}.png`, await svgToPng(svg, 2));
  }

  /** Answer the page's export buttons, found in `bar`. */
  bindExports(bar) {
    const button = (name) => bar.querySelector(`#${name}`);
    button('export-json').addEventListener('click', () => {
      const json = resultsJson({ version: this.context.registry.version, summary: this.summary, curve: this.curve, results: this.orderedResults() });
      download(`${this.baseName()}-quantscope.json`, json, 'application/json');
    });
    button('export-csv').addEventListener('click', () => {
      download(`${this.baseName()}-quantscope.csv`, resultsCsv(this.orderedResults()), 'text/csv');
    });
    button('export-svg').addEventListener('click', async () => {
      download(`${this.baseName()}-quantscope.svg`, await this.comparisonSvg(), 'image/svg+xml');
    });
    button('export-png').addEventListener('click', async () => {
      download(`${this.baseName()}-quantscope.png`, await svgToPng(await this.comparisonSvg(), 1.5));
    });
  }

  // -------------------------------------------------------------------------------------------
  // window.quantscope

  api(page) {
    return {
      /**
       * Show observer `id` with exactly `params` (others at their defaults; flat or in the
       * framework's nested call form, which the controls show flat) and return its report.
       */
      observe: async (id, params = {}) => {
        if (!this.specs.has(id)) throw new Error(`unknown observer ${id}`);
        this.setParams(id, flatParams(id, params));
        page.updateUrl();
        await page.idle();
        return this.results()[id];
      },
      /** Select exactly these observers. */
      setObservers: async (ids) => {
        this.setObservers(ids.filter((id) => this.specs.has(id)));
        page.updateUrl();
        await page.idle();
      },
      results: () => this.results(),
      curve: () => this.curveView,
      latencies: () => [...this.latencies],
      comparisonSvg: () => this.comparisonSvg(),
    };
  }
}
