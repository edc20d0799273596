// The AdaRound view: pick a layer's weight W and its inputs X among the loaded tensors (or open
// them here), set AdaRound's parameters (controls generated from the quantizer registry), and
// run it in the worker with a progress bar, a live loss chart and a cancel button. The result
// compares the learned rounding with round-to-nearest on the same scales.
import { drawAdaRound } from '../pkg/quantscope.js';
import { buildControls } from './controls.js';
import { h, fitCanvas } from '../lib/panel.js';
import { fmtNum, fmtShape, groupDigits } from '../lib/format.js';

const $ = (sel) => document.querySelector(sel);

/** The demo layer: MiniLM layer 0's attention output projection and its real inputs. */
const DEMO_PAIR = { w: 'demo/l0_attn_output_dense_weight.npy', x: 'demo/l0_attn_dense_in.npy' };

export class AdaRoundView {
  /**
   * @param {{client: import('./client.js').WorkerClient, registry: {optimisers: object[]}}} options
   */
  constructor({ client, registry }) {
    this.client = client;
    this.spec = registry.optimisers.find((o) => o.id === 'adaround');
    this.section = $('#adaround');
    this.params = {};
    /** Tensors of the explorer's files: [{file: File, member, shape, label}]. */
    this.loaded = [];
    /** Tensors of files opened in this view. */
    this.opened = [];
    this.history = [];
    this.running = false;
    this.outcome = null;
    this.section.dataset.state = 'idle';
    if (!this.spec) {
      this.section.hidden = true;
      return;
    }
    $('#ada-controls').replaceChildren(buildControls(this.spec, this.params, (name, value) => {
      this.params[name] = value;
    }, { affects: false }));
    $('#ada-run').addEventListener('click', () => this.run());
    $('#ada-cancel').addEventListener('click', () => this.client.notify('adaroundCancel'));
    $('#ada-demo').addEventListener('click', () => this.openDemo().catch((e) => this.setError(e.message)));
    $('#ada-files').addEventListener('change', (e) => {
      const files = [...e.target.files];
      e.target.value = '';
      this.open(files).catch((err) => this.setError(err.message));
    });
    this.renderPickers();
  }

  /** The explorer loaded `files` with `infos` (their members): offer their matrices. */
  filesChanged(files, infos) {
    this.loaded = candidates(files, infos.map((i) => i.allMembers || i.members));
    this.renderPickers();
  }

  /** Read the members of `files` and offer them (W first, then X, is the usual order). */
  async open(files) {
    if (!files.length) return;
    this.setError(null);
    const { value } = await this.client.call('inspect', { files });
    this.opened = candidates(files, value.map((v) => v.members));
    this.renderPickers({ preferOpened: true });
  }

  async openDemo() {
    const fetchFile = async (path) => {
      const res = await fetch(path);
      if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
      return new File([await res.arrayBuffer()], path.split('/').pop());
    };
    const files = await Promise.all([fetchFile(DEMO_PAIR.w), fetchFile(DEMO_PAIR.x)]);
    await this.open(files);
  }

  get all() {
    return [...this.opened, ...this.loaded];
  }

  renderPickers({ preferOpened = false } = {}) {
    const all = this.all;
    const wSel = $('#ada-w');
    const xSel = $('#ada-x');
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
    $('#ada-empty').hidden = all.length > 0;
  }

  updateRunButton() {
    const { w, x } = this.pick || {};
    $('#ada-run').disabled = this.running || !w || !x;
  }

  setError(message) {
    const el = $('#ada-error');
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
    $('#ada-run').disabled = true;
    $('#ada-cancel').hidden = false;
    $('#ada-result').hidden = true;
    this.showProgress(0, 'starting');
    const t0 = performance.now();
    try {
      const { value } = await this.client.call('adaround', {
        w: { file: w.file, member: w.member },
        x: { file: x.file, member: x.member },
        params: { ...this.params },
      }, {
        background: true,
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
      this.running = false;
      $('#ada-progress').hidden = true;
      $('#ada-cancel').hidden = true;
      this.updateRunButton();
      this.draw();
    }
  }

  showProgress(fraction, label) {
    $('#ada-progress').hidden = false;
    $('#ada-progress-bar').value = fraction;
    $('#ada-progress-label').textContent = `${label} — ${Math.round(fraction * 100)} %`;
  }

  renderResult() {
    const o = this.outcome;
    const box = $('#ada-result');
    box.hidden = false;
    const s = this.section.dataset;
    s.nearestMse = o.nearest.output_mse;
    s.adaroundMse = o.adaround.output_mse;
    s.flipped = o.flipped;
    s.weights = o.weights;
    s.binary = o.final_binary_fraction;
    s.iterations = o.iterations_run;
    const db = (v) => (v === null ? '∞' : `${fmtNum(v)} dB`);
    const table = $('#ada-table');
    table.replaceChildren(
      h('thead', {}, h('tr', {}, h('th', { text: 'rounding' }), h('th', { class: 'num', text: 'output MSE' }), h('th', { class: 'num', text: 'output SQNR' }))),
      h('tbody', {},
        h('tr', { 'data-rounding': 'nearest' }, h('td', { text: 'round to nearest' }), h('td', { class: 'num', text: fmtNum(o.nearest.output_mse) }), h('td', { class: 'num', text: db(o.nearest.output_sqnr_db) })),
        h('tr', { 'data-rounding': 'adaround' }, h('td', { text: 'AdaRound' }), h('td', { class: 'num', text: fmtNum(o.adaround.output_mse) }), h('td', { class: 'num', text: db(o.adaround.output_sqnr_db) }))),
    );
    const gain = o.nearest.output_sqnr_db !== null && o.adaround.output_sqnr_db !== null ? o.adaround.output_sqnr_db - o.nearest.output_sqnr_db : null;
    const pct = (v) => `${fmtNum(v * 100)} %`;
    const lines = [
      `${o.cancelled ? `Cancelled after ${groupDigits(o.iterations_run)} of ${groupDigits(o.config.iterations)} iterations; the rounding learned so far gives` : 'AdaRound gives'} an output MSE ${o.mse_reduction >= 0 ? `${pct(o.mse_reduction)} lower` : `${pct(-o.mse_reduction)} higher`} than round-to-nearest${gain === null ? '' : ` (${gain >= 0 ? '+' : '−'}${fmtNum(Math.abs(gain))} dB)`}.`,
      `${groupDigits(o.flipped)} of ${groupDigits(o.weights)} weights (${pct(o.flipped / o.weights)}) are rounded the other way; ${pct(o.final_binary_fraction)} of the soft decisions ended exactly 0 or 1.`,
      `W ${o.w} ${fmtShape(o.weight_shape)}, X ${o.x} as ${fmtShape(o.input_shape)}; ${o.config.bits} bits ${o.config.scheme.replace(/_/g, ' ')}, same min-max scales for both; ${groupDigits(o.iterations_run)} iterations in ${fmtNum(o.seconds)} s.`,
    ];
    $('#ada-summary').replaceChildren(...lines.map((t) => h('p', { text: t })));
  }

  draw() {
    const canvas = $('#ada-chart');
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
