// The AdaRound view: pick a layer's weight W and its inputs X among the loaded tensors (or open
// them here), set AdaRound's parameters (controls generated from the quantizer registry), and
// run it in the worker with a progress bar, a live loss chart and a cancel button. The result
// compares the learned rounding with round-to-nearest on the same scales.
import { drawAdaRound } from '../pkg/quantscope.js';
import { buildControls } from './controls.js';
import { h, fitCanvas } from '../lib/panel.js';
import { fmtNum, fmtShape, groupDigits } from '../lib/format.js';
import { View } from './view.js';

export class AdaRoundView extends View {
  /**
   * Render the view into `root`.
   * @param context {registry: the engine's registry (its `quantizers.optimisers`), prefix:
   *   element id prefix, demo: {w, x} URLs of a demo layer (or none)}
   */
  mount(root, engine, context = {}) {
    this.attach(root, engine, context);
    this.demo = context.demo || null;
    this.spec = context.registry.quantizers.optimisers.find((o) => o.id === 'adaround');
    this.params = {};
    /** Tensors of the explorer's files: [{file, member, shape, name, label}]. */
    this.loaded = [];
    /** Tensors of files opened in this view. */
    this.opened = [];
    this.history = [];
    this.running = false;
    this.controller = null;
    this.outcome = null;
    this.renderMarkup();
    this.section = this.$('adaround');
    if (!this.spec) {
      this.section.hidden = true;
      return this;
    }
    this.$('ada-controls').replaceChildren(buildControls(this.spec, this.params, (name, value) => {
      this.params[name] = value;
    }, { affects: false, idPrefix: this.prefix }));
    this.$('ada-run').addEventListener('click', () => this.run());
    this.$('ada-cancel').addEventListener('click', () => this.controller && this.controller.abort());
    this.$('ada-demo').addEventListener('click', () => this.openDemo().catch((e) => this.setError(e.message)));
    this.$('ada-files').addEventListener('change', (e) => {
      const files = [...e.target.files];
      e.target.value = '';
      this.open(files).catch((err) => this.setError(err.message));
    });
    this.renderPickers();
    return this;
  }

  renderMarkup() {
    const id = (n) => this.id(n);
    this.root.replaceChildren(
      h('section', { id: id('adaround'), class: 'adaround card', 'aria-labelledby': id('adaround-title'), 'data-state': 'idle' },
        h('div', { class: 'curve-head' }, h('h2', { id: id('adaround-title'), text: 'AdaRound: learned rounding for one linear layer' })),
        h('p', { class: 'muted curve-note', text: 'Given a layer\'s weight W [out, in] and inputs X [n, in] (leading axes of an activation become rows), AdaRound learns for every weight whether to round up or down so that X·W̃ᵀ stays close to X·Wᵀ (Nagel et al. 2020, with AMD Quark\'s defaults). Both roundings use the same min–max scales, so the comparison isolates the rounding. It runs in the background; the explorer stays usable.' }),
        h('div', { class: 'adaround-pick' },
          h('label', {}, 'weight W ', h('select', { id: id('ada-w') })),
          h('label', {}, 'inputs X ', h('select', { id: id('ada-x') })),
          h('label', { class: 'button', for: id('ada-files') }, 'open W and X files'),
          h('input', { type: 'file', id: id('ada-files'), multiple: true, accept: '.npy,.npz,.safetensors', class: 'visually-hidden' }),
          h('button', { type: 'button', id: id('ada-demo'), hidden: !this.demo, text: 'MiniLM layer-0 attention output (W and its X)' })),
        h('p', { id: id('ada-empty'), class: 'muted', text: 'No matrix is loaded: open a weight and its inputs, or use the MiniLM pair.' }),
        h('details', { class: 'adder' }, h('summary', { text: 'AdaRound parameters' }), h('div', { id: id('ada-controls') })),
        h('div', { class: 'adaround-actions' },
          h('button', { type: 'button', id: id('ada-run'), class: 'primary', text: 'Run AdaRound' }),
          h('div', { id: id('ada-progress'), class: 'progress inline', hidden: true },
            h('progress', { id: id('ada-progress-bar'), max: 1, value: 0 }),
            h('span', { id: id('ada-progress-label'), 'aria-live': 'polite' })),
          h('button', { type: 'button', id: id('ada-cancel'), hidden: true, text: 'Cancel' })),
        h('div', { id: id('ada-error'), class: 'alert', role: 'alert', hidden: true }),
        h('div', { id: id('ada-result'), class: 'ada-result', hidden: true },
          h('table', { id: id('ada-table'), class: 'data-table' }),
          h('div', { id: id('ada-summary'), class: 'ada-summary' })),
        h('canvas', { id: id('ada-chart'), class: 'ada-chart', role: 'img', 'aria-label': 'AdaRound optimisation: reconstruction loss, regulariser and share of decided roundings by iteration', hidden: true })),
    );
  }

  api() {
    /** The last AdaRound outcome (null before a run). */
    return { adaround: () => this.outcome };
  }

  /**
   * The explorer loaded new files: offer their matrices. `files` are the loaded files' infos
   * with `source` (the File read) and `allMembers`.
   */
  tensorChanged(summary, hist, files = []) {
    this.loaded = candidates(files.map((f) => f.source), files.map((f) => f.allMembers || f.members));
    this.renderPickers();
  }

  /** Read the members of `files` and offer them (W first, then X, is the usual order). */
  async open(files) {
    if (!files.length) return;
    this.setError(null);
    const value = await this.engine.call('inspect', { files });
    this.opened = candidates(files, value.map((v) => v.members));
    this.renderPickers({ preferOpened: true });
  }

  async openDemo() {
    const fetchFile = async (path) => {
      const res = await fetch(path);
      if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
      return new File([await res.arrayBuffer()], path.split('/').pop());
    };
    const files = await Promise.all([fetchFile(this.demo.w), fetchFile(this.demo.x)]);
    await this.open(files);
  }

  get all() {
    return [...this.opened, ...this.loaded];
  }

  renderPickers({ preferOpened = false } = {}) {
    const all = this.all;
    const wSel = this.$('ada-w');
    const xSel = this.$('ada-x');
    const option = (c, i) => h('option', { value: i, text: c.label });
    const previous = { w: all.indexOf(this.pick?.w), x: all.indexOf(this.pick?.x) };
    wSel.replaceChildren(...all.map((c, i) => (c.shape.length === 2 ? option(c, i) : null)).filter(Boolean));
    xSel.replaceChildren(...all.map(option));
    const pool = preferOpened && this.opened.length ? this.opened : all;
    let w = previous.w >= 0 && !preferOpened ? all[previous.w] : guessWeight(pool);
    let x = previous.x >= 0 && !preferOpened ? all[previous.x] : guessInputs(pool, w);
    if (!w) w = guessWeight(all);
    if (!x) x = guessInputs(all, w);
    if (w) wSel.value = String(all.indexOf(w));
    if (x) xSel.value = String(all.indexOf(x));
    this.pick = { w, x };
    wSel.onchange = () => {
      this.pick.w = all[Number(wSel.value)];
      this.updateRunButton();
    };
    xSel.onchange = () => {
      this.pick.x = all[Number(xSel.value)];
      this.updateRunButton();
    };
    if (!x) xSel.selectedIndex = -1;
    this.updateRunButton();
    this.$('ada-empty').hidden = all.length > 0;
  }

  updateRunButton() {
    const { w, x } = this.pick || {};
    this.$('ada-run').disabled = this.running || !w || !x;
  }

  setError(message) {
    const el = this.$('ada-error');
    el.textContent = message || '';
    el.hidden = !message;
  }

  async run() {
    const { w, x } = this.pick || {};
    if (!w || !x || this.running) return;
    this.running = true;
    this.history = [];
    this.outcome = null;
    this.iterations = this.params.iterations ?? this.spec.params.find((p) => p.name === 'iterations').default;
    this.warmStart = this.params.warm_start ?? this.spec.params.find((p) => p.name === 'warm_start').default;
    this.setError(null);
    this.section.dataset.state = 'running';
    this.$('ada-run').disabled = true;
    this.$('ada-cancel').hidden = false;
    this.$('ada-result').hidden = true;
    this.showProgress(0, 'starting');
    const t0 = performance.now();
    const controller = new AbortController();
    this.controller = controller;
    try {
      const value = await this.engine.call('adaround', {
        w: { file: w.file, member: w.member },
        x: { file: x.file, member: x.member },
        params: { ...this.params },
      }, {
        background: true,
        signal: controller.signal,
        onProgress: (p) => {
          this.showProgress(p.fraction, p.label);
          if (p.points && p.points.length) {
            this.history.push(...p.points);
            this.draw();
          }
        },
      });
      this.outcome = { ...value, seconds: (performance.now() - t0) / 1000, w: w.name, x: x.name };
      this.history = value.history;
      this.section.dataset.state = value.cancelled ? 'cancelled' : 'done';
      this.renderResult();
    } catch (err) {
      this.section.dataset.state = 'error';
      if (!err.restarted || err.message) this.setError(`AdaRound could not run: ${err.message}`);
    } finally {
      this.controller = null;
      this.running = false;
      this.$('ada-progress').hidden = true;
      this.$('ada-cancel').hidden = true;
      this.updateRunButton();
      this.draw();
    }
  }

  showProgress(fraction, label) {
    this.$('ada-progress').hidden = false;
    this.$('ada-progress-bar').value = fraction;
    this.$('ada-progress-label').textContent = `${label} — ${Math.round(fraction * 100)} %`;
  }

  renderResult() {
    const o = this.outcome;
    const box = this.$('ada-result');
    box.hidden = false;
    const s = this.section.dataset;
    s.nearestMse = o.nearest.output_mse;
    s.adaroundMse = o.adaround.output_mse;
    s.flipped = o.flipped;
    s.weights = o.weights;
    s.binary = o.final_binary_fraction;
    s.iterations = o.iterations_run;
    // No output error at all: an infinite SQNR.
    const db = (v) => (v === null || v === Infinity ? '∞ (lossless)' : `${fmtNum(v)} dB`);
    const table = this.$('ada-table');
    table.replaceChildren(
      h('thead', {}, h('tr', {}, h('th', { text: 'rounding' }), h('th', { class: 'num', text: 'output MSE' }), h('th', { class: 'num', text: 'output SQNR' }))),
      h('tbody', {},
        h('tr', { 'data-rounding': 'nearest' }, h('td', { text: 'round to nearest' }), h('td', { class: 'num', text: fmtNum(o.nearest.output_mse) }), h('td', { class: 'num', text: db(o.nearest.output_sqnr_db) })),
        h('tr', { 'data-rounding': 'adaround' }, h('td', { text: 'AdaRound' }), h('td', { class: 'num', text: fmtNum(o.adaround.output_mse) }), h('td', { class: 'num', text: db(o.adaround.output_sqnr_db) }))),
    );
    const finite = (v) => typeof v === 'number' && Number.isFinite(v);
    const gain = finite(o.nearest.output_sqnr_db) && finite(o.adaround.output_sqnr_db) ? o.adaround.output_sqnr_db - o.nearest.output_sqnr_db : null;
    const pct = (v) => `${fmtNum(v * 100)} %`;
    const lines = [
      `${o.cancelled ? `Cancelled after ${groupDigits(o.iterations_run)} of ${groupDigits(o.config.iterations)} iterations; the rounding learned so far gives` : 'AdaRound gives'} an output MSE ${o.mse_reduction >= 0 ? `${pct(o.mse_reduction)} lower` : `${pct(-o.mse_reduction)} higher`} than round-to-nearest${gain === null ? '' : ` (${gain >= 0 ? '+' : '−'}${fmtNum(Math.abs(gain))} dB)`}.`,
      `${groupDigits(o.flipped)} of ${groupDigits(o.weights)} weights (${pct(o.flipped / o.weights)}) are rounded the other way; ${pct(o.final_binary_fraction)} of the soft decisions ended exactly 0 or 1.`,
      `W ${o.w} ${fmtShape(o.weight_shape)}, X ${o.x} as ${fmtShape(o.input_shape)}; ${o.config.bits} bits ${o.config.scheme.replace(/_/g, ' ')}, same min-max scales for both; ${groupDigits(o.iterations_run)} iterations in ${fmtNum(o.seconds)} s.`,
    ];
    this.$('ada-summary').replaceChildren(...lines.map((t) => h('p', { text: t })));
  }

  draw() {
    const canvas = this.$('ada-chart');
    canvas.hidden = !this.history.length;
    if (!this.history.length) return;
    const ratio = fitCanvas(canvas);
    const iterations = this.outcome ? this.outcome.config.iterations : this.iterations;
    const warmStart = this.outcome ? this.outcome.config.warm_start : this.warmStart;
    try {
      drawAdaRound(canvas, { history: this.history, iterations, warm_start_end: Math.round(iterations * warmStart) }, { pixelRatio: ratio });
      canvas.dataset.drawn = String(Number(canvas.dataset.drawn || 0) + 1);
    } catch (err) {
      console.error(err);
    }
  }
}

/** Every tensor with at least two axes in `files` (members per file from `memberLists`). */
function candidates(files, memberLists) {
  const out = [];
  files.forEach((file, i) => {
    for (const m of memberLists[i] || []) {
      if (m.shape.length < 2) continue;
      const name = m.name ? `${file.name}: ${m.name}` : file.name;
      out.push({ file, member: m.name, shape: m.shape, name, label: `${name} ${fmtShape(m.shape)}` });
    }
  });
  return out;
}

/** A weight: a matrix whose name says so, else the first matrix. */
function guessWeight(list) {
  const matrices = list.filter((c) => c.shape.length === 2);
  return matrices.find((c) => /weight|\.w\b|kernel/i.test(c.label)) || matrices[0] || null;
}

/** Inputs for `w`: another tensor whose last axis has W's input size. */
function guessInputs(list, w) {
  if (!w) return list[0] || null;
  const inFeatures = w.shape[1];
  return list.find((c) => c !== w && c.shape[c.shape.length - 1] === inFeatures) || null;
}
