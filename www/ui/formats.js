// The formats view: what the current tensor loses in every number format (the standard line-up
// plus formats the user adds), as a table grouped by the library each format reproduces (with
// the version followed) and a chart of SQNR against bits per value. The "add a format"
// controls are generated from the quantizer registry — no per-format code; a vector parameter
// (llama.cpp's importance matrix) takes a loaded tensor or a file opened for it.
//
// With the page's rotation preview on (the `rotate` state, www/ui/rotation.js), every measured
// format is also measured on the tensor with each row rotated (engine `evaluateFormat` with
// `rotate`, the CLI's `formats --rotate`), one at a time after the comparison, in an "SQNR rotated"
// column with a verdict, beside a note on why small-block formats gain little.
import { drawFormats } from '../pkg/quantscope.js';
import { buildControls, tensorChoices } from './controls.js';
import { h, fitCanvas, seriesColor, renderDerivation } from '../lib/panel.js';
import { fmtNum, fmtShape, groupDigits } from '../lib/format.js';
import { View } from './view.js';
import { rotationHelps, sqnrText, sqnrAttr, BLOCK_NOTE, helpsDb } from './rotation.js';

/** Tensors up to this many values are compared as soon as they are selected. */
const AUTO_ELEMENTS = 4 * 1024 * 1024;

/** Bits per value as the table shows them: exact up to four decimals (6.5625, 4.1289). */
export function bitsText(v) {
  return String(Number(v.toFixed(4)));
}

export class FormatsView extends View {
  /**
   * Render the view into `root`.
   * @param context {registry: the engine's registry (its `quantizers.formats` families),
   *   prefix: element id prefix, onChange: () => void when the added formats change}
   */
  mount(root, engine, context = {}) {
    this.attach(root, engine, context);
    this.families = context.registry.quantizers.formats;
    this.onChange = context.onChange || (() => {});
    /** Formats the user added: [{id, params}]. */
    this.extra = [];
    this.rows = [];
    this.target = null;
    this.summary = null;
    /** The table row under the pointer (its point is emphasised). */
    this.hovered = null;
    /** The generation of the comparison running, if any. */
    this.running = null;
    this.generation = 0;
    this.addParams = {};
    /** Loaded tensors and opened vectors a vector parameter may take. */
    this.tensors = [];
    this.opened = [];
    this.controller = null;
    /** The page's rotation preview: `'hadamard:SEED'`, or null when off (www/ui/rotation.js). */
    this.rotate = null;
    /** Each measured row's result after rotation (a FormatResult with `rotation`, or {error}). */
    this.rotated = new Map();
    /** The rotated measurement running (its token), if any, and the last one asked for. */
    this.rotating = null;
    this.rotationAsked = null;
    /** The table row of each measured row, as last rendered. */
    this.rowElements = new Map();
    this.renderMarkup();
    this.section = this.$('formats');
    this.buildAdder();
    this.$('formats-run').addEventListener('click', () => this.compute());
    this.$('formats-why').addEventListener('toggle', () => this.explain());
    this.$('formats-why-format').addEventListener('change', () => this.explain());
    this.$('formats-why-block').addEventListener('change', () => this.explain());
    this.$('formats-cancel').addEventListener('click', () => this.controller && this.controller.abort());
    return this;
  }

  renderMarkup() {
    const id = (n) => this.id(n);
    this.root.replaceChildren(
      h('section', { id: id('formats'), class: 'formats card', 'aria-labelledby': id('formats-title'), 'data-state': 'idle' },
        h('div', { class: 'curve-head' },
          h('h2', { id: id('formats-title'), text: 'Every number format side by side' }),
          h('span', { id: id('formats-target'), class: 'muted' }),
          h('span', { class: 'spacer' }),
          h('button', { type: 'button', id: id('formats-run'), hidden: true, text: 'Compare formats' })),
        h('p', { class: 'muted curve-note', text: 'What the tensor loses as integers, float16/bfloat16, fp8/fp6/fp4, MX and block floating point (min–max scales with Quark\'s formulas: per channel along axis 0, groups and MX blocks of 32 along the last axis), and in the formats LLMs ship in, reproduced bit for bit: bitsandbytes NF4 (QLoRA) and llama.cpp\'s GGUF blocks. Bits per value include every stored scale, minimum and zero point. Hover a row to find its point.' }),
        h('div', { id: id('formats-progress'), class: 'progress', hidden: true },
          h('progress', { id: id('formats-progress-bar'), max: 1, value: 0 }),
          h('span', { id: id('formats-progress-label'), 'aria-live': 'polite' }),
          h('button', { type: 'button', id: id('formats-cancel'), text: 'Cancel' })),
        h('div', { id: id('formats-error'), class: 'alert', role: 'alert', hidden: true }),
        h('div', { id: id('formats-rotation'), class: 'rotation-note', hidden: true },
          h('p', { id: id('formats-rotation-what') }),
          h('p', { text: BLOCK_NOTE })),
        h('div', { class: 'formats-body' },
          h('canvas', { id: id('formats-chart'), class: 'formats-chart', role: 'img', 'aria-label': 'SQNR against bits per value for every format', hidden: true }),
          h('table', { id: id('formats-table'), class: 'data-table formats-table' })),
        h('details', { id: id('formats-why'), class: 'why format-why' },
          h('summary', { text: 'How a block is stored' }),
          h('p', { class: 'muted', text: 'One block followed through the format\'s own quantizer: the searches it ran with every candidate, and the bytes it stored. By default the block holding the tensor\'s largest magnitude.' }),
          h('div', { class: 'adder-row' },
            h('label', {}, 'format ', h('select', { id: id('formats-why-format') })),
            h('label', {}, 'block ', h('input', { type: 'number', id: id('formats-why-block'), min: 0, step: 1, placeholder: 'largest |x|', inputmode: 'numeric' })),
            h('span', { id: id('formats-why-block-of'), class: 'muted' })),
          h('div', { class: 'derivation', 'aria-live': 'polite' })),
        h('details', { class: 'adder' },
          h('summary', { text: 'Add a format' }),
          h('div', { class: 'adder-row' },
            h('label', {}, 'format ', h('select', { id: id('format-family') })),
            h('button', { type: 'button', id: id('format-add'), class: 'primary', text: 'Add' })),
          h('div', { id: id('format-controls') }),
          h('div', { id: id('format-add-error'), class: 'alert', role: 'alert', hidden: true }))),
    );
  }

  /** The formats the user added (what the URL keeps). */
  state() {
    return { formats: this.extra.map((e) => ({ id: e.id, params: { ...e.params } })) };
  }

  /**
   * Restore added formats (from the URL); unknown and decode-only families are dropped. The
   * page's rotation preview `rotate` (kept by the page, not by this view) measures every row
   * again after rotation, or drops those measurements.
   */
  setState({ formats, rotate } = {}) {
    if (rotate !== undefined && rotate !== this.rotate) {
      this.rotate = rotate;
      this.rotated = new Map();
      this.rotationAsked = null;
      this.render();
      if (!this.comparing) this.computeRotated();
    }
    if (formats === undefined) return;
    this.extra = (formats || []).filter((e) => this.families.some((f) => f.id === e.id && f.encodes !== false));
  }

  /** The engine restarted: compare again. */
  refresh() {
    this.tensorChanged(this.summary);
  }

  /**
   * A new tensor was selected: compare at once when small, else offer the button. `files` (the
   * loaded files' infos) give the tensors an importance matrix may be taken from.
   */
  tensorChanged(summary, hist, files) {
    if (this.controller) this.controller.abort();
    if (files) {
      this.tensors = tensorChoices(files);
      this.renderAdderControls();
    }
    this.summary = summary;
    this.generation += 1;
    this.rows = [];
    this.rotated = new Map();
    this.target = null;
    this.render();
    if (summary && summary.elements <= AUTO_ELEMENTS) this.compute();
  }

  api(page) {
    return {
      /** The view's rows (one per format; {error} for a format that does not apply). */
      formats: () => this.rows,
      /** Add format `id` with `params`, as the "Add" button does; the rows after. */
      addFormat: async (id, params = {}) => {
        await this.addFormat(id, params);
        return this.rows;
      },
      /** Replace the added formats ([{id, params}]) and compare again; the rows after. */
      setFormats: async (list) => {
        this.setState({ formats: list });
        page.updateUrl();
        this.tensorChanged(this.summary);
        await page.idle();
        return this.rows;
      },
    };
  }

  /** True while the current tensor's formats are being compared. */
  get comparing() {
    return this.running !== null && this.running === this.generation;
  }

  /** True while the current tensor's formats are being compared, or measured after rotation. */
  get busy() {
    return this.comparing || this.rotating !== null;
  }

  async compute() {
    if (!this.summary || this.comparing) return;
    const generation = this.generation;
    this.running = generation;
    this.section.dataset.state = 'running';
    this.setError(null);
    this.showProgress(0, 'comparing formats');
    const controller = new AbortController();
    this.controller = controller;
    try {
      const value = await this.engine.call('formats', { extra: this.extra }, {
        onProgress: (p) => this.showProgress(p.fraction, p.label),
        signal: controller.signal,
      });
      if (generation !== this.generation) return;
      this.target = value;
      this.rows = value.rows;
      this.section.dataset.state = 'done';
    } catch (err) {
      if (generation !== this.generation) return;
      this.section.dataset.state = err.cancelled ? 'cancelled' : 'error';
      if (!err.restarted) this.setError(err.cancelled ? 'Comparing formats was cancelled.' : `Could not compare formats: ${err.message}`);
    } finally {
      if (this.controller === controller) this.controller = null;
      if (this.running === generation) this.running = null;
      if (generation === this.generation) {
        this.$('formats-progress').hidden = true;
        this.render();
        this.computeRotated();
      }
    }
  }

  /**
   * With the rotation preview on, measure every row not measured after rotation yet, one format
   * at a time (cancellable between formats), filling the table as the answers come. A newer
   * call, another tensor or another rotation makes it stop and drops its answer in flight.
   */
  async computeRotated() {
    const rotate = this.rotate;
    const jobs = rotate ? this.rows.filter((r) => !r.error && !this.rotated.has(r)) : [];
    // A comparison running measures its rows after rotation once it is done.
    if (!this.summary || this.comparing || jobs.length === 0) return;
    const token = {};
    this.rotationAsked = token;
    this.rotating = token;
    const generation = this.generation;
    const controller = new AbortController();
    this.controller = controller;
    const live = () => this.rotationAsked === token && this.generation === generation && !controller.signal.aborted;
    try {
      for (let i = 0; i < jobs.length && live(); i++) {
        this.showProgress(i / jobs.length, `format ${i + 1} of ${jobs.length} after rotation`);
        const r = jobs[i];
        let value;
        try {
          value = await this.engine.call('evaluateFormat', { id: r.id, params: r.params || {}, rotate });
        } catch (err) {
          if (err.restarted) return; // the engine restarted: the view compares again
          value = { error: err.message };
        }
        if (!live()) break;
        if (this.rows.includes(r)) {
          this.rotated.set(r, value);
          this.renderRotated(r);
        }
      }
      if (controller.signal.aborted && this.rotationAsked === token && this.generation === generation) this.setError('Measuring the formats after rotation was cancelled.');
    } finally {
      if (this.controller === controller) this.controller = null;
      if (this.rotating === token) {
        this.rotating = null;
        this.$('formats-progress').hidden = true;
      }
    }
  }

  showProgress(fraction, label) {
    this.$('formats-progress').hidden = false;
    this.$('formats-progress-bar').value = fraction;
    this.$('formats-progress-label').textContent = `${label} — ${Math.round(fraction * 100)} %`;
  }

  setError(message) {
    const el = this.$('formats-error');
    el.textContent = message || '';
    el.hidden = !message;
  }

  /** The format families by library, in registry order: [{name, version, families}]. Decode-only
   * families (`encodes: false`) are listed, disabled, in the "add a format" menu. */
  groups() {
    const out = [];
    for (const f of this.families) {
      let g = out.find((x) => x.name === f.library);
      if (!g) out.push((g = { name: f.library, version: f.version, families: [] }));
      g.families.push(f);
    }
    return out;
  }

  buildAdder() {
    const select = this.$('format-family');
    select.replaceChildren(...this.groups().map((g) =>
      h('optgroup', { label: g.version ? `${g.name} ${g.version}` : g.name },
        ...g.families.map((f) => h('option', { value: f.id, disabled: f.encodes === false, text: `${f.id} — ${f.summary}` })))));
    select.addEventListener('change', () => {
      this.addParams = {};
      this.renderAdderControls();
    });
    this.$('format-add').addEventListener('click', () => this.add());
    this.renderAdderControls();
  }

  renderAdderControls() {
    const spec = this.families.find((f) => f.id === this.$('format-family').value) || this.families[0];
    if (!spec) return;
    const controls = buildControls({ id: `format-${spec.id}`, params: spec.params }, this.addParams, (name, value) => {
      if (value === null || value === undefined) delete this.addParams[name];
      else this.addParams[name] = value;
    }, { affects: false, idPrefix: this.prefix, tensors: [...this.tensors, ...this.opened], openVector: (file) => this.openVector(file) });
    this.$('format-controls').replaceChildren(controls);
  }

  /** Read a vector (an importance matrix) from `file`: {value, label}, offered from then on. */
  async openVector(file) {
    const v = await this.engine.call('readVector', { file });
    const entry = { value: Array.from(v.values), label: `${v.name}${v.member ? `: ${v.member}` : ''} ${fmtShape(v.shape)} (opened)` };
    this.opened.push(entry);
    return entry;
  }

  /** Evaluate the format configured in the "add" controls and append it. */
  add() {
    return this.addFormat(this.$('format-family').value, { ...this.addParams });
  }

  /** Evaluate format `id` with `params` on the tensor and append it (errors shown, not thrown). */
  async addFormat(id, params) {
    this.$('format-add-error').hidden = true;
    if (!this.summary) return;
    const generation = this.generation;
    try {
      const value = await this.engine.call('evaluateFormat', { id, params });
      if (generation !== this.generation) return;
      this.extra.push({ id, params });
      this.rows.push({ ...value, extra: true });
      this.render();
      this.onChange();
      this.computeRotated();
    } catch (err) {
      if (err.restarted) return;
      const el = this.$('format-add-error');
      el.textContent = `Cannot add ${id}: ${err.message}`;
      el.hidden = false;
    }
  }

  remove(row) {
    const i = this.rows.indexOf(row);
    const k = this.rows.slice(0, i).filter((r) => r.extra).length;
    this.extra.splice(k, 1);
    this.rows.splice(i, 1);
    this.rotated.delete(row);
    this.render();
    this.onChange();
  }

  render() {
    const t = this.target;
    this.$('formats-target').textContent = t ? `on ${t.name} ${fmtShape(t.shape)}` : '';
    const button = this.$('formats-run');
    button.hidden = Boolean(t) || this.comparing || !this.summary;
    if (this.summary) button.textContent = `Compare formats (${groupDigits(this.summary.elements)} values)`;
    this.renderTable();
    this.draw();
  }

  /** The registry entry of format family `id`. */
  family(id) {
    return this.families.find((f) => f.id === id);
  }

  /** Say which rotation the "SQNR rotated" column shows (the engine's words, once it answered). */
  renderRotationNote() {
    const note = this.$('formats-rotation');
    note.hidden = !this.rotate;
    if (!this.rotate) return;
    const answered = [...this.rotated.values()].find((v) => v.rotation);
    const what = answered ? answered.rotation : this.rotate;
    this.$('formats-rotation-what').replaceChildren(
      `“SQNR rotated”: each format on the tensor with every row rotated — ${what}, as `,
      h('code', { text: `quantscope formats --rotate ${this.rotate}` }),
      ` computes it. A rotation does not help a format when it gains less than ${helpsDb()} dB.`);
  }

  /**
   * The cells a measured row `r` adds after rotation (with the rotation preview on): its SQNR
   * after rotation and the verdict; and the row's attributes saying the same.
   */
  rotatedCells(r) {
    const value = this.rotated.get(r);
    const none = { 'data-rotated-sqnr': undefined, 'data-rotation-helps': undefined };
    if (!value) return { attrs: none, cells: [h('td', { class: 'num muted rotated-sqnr', text: '…', title: 'being measured after rotation' }), h('td', { class: 'verdict' })] };
    if (value.error) return { attrs: none, cells: [h('td', { class: 'num muted rotated-sqnr', text: 'n/a', title: value.error }), h('td', { class: 'verdict' })] };
    const helps = rotationHelps(r.sqnr_db, value.sqnr_db);
    const verdict = helps === null ? '' : helps ? 'helps' : 'does not help';
    return {
      attrs: { 'data-rotated-sqnr': sqnrAttr(value.sqnr_db), 'data-rotation-helps': helps === null ? undefined : String(helps) },
      cells: [h('td', { class: 'num rotated-sqnr', text: sqnrText(value) }), h('td', { class: `verdict${helps === false ? ' no-help' : ''}`, text: verdict })],
    };
  }

  /**
   * Show row `r`'s measurement after rotation in its table row, in place (the rest of the table,
   * the pointer's row and the focus stay as they are).
   */
  renderRotated(r) {
    const tr = this.rowElements.get(r);
    if (!tr || !tr.isConnected || !this.rotate) {
      this.renderTable();
      return;
    }
    const { attrs, cells } = this.rotatedCells(r);
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined) tr.removeAttribute(k);
      else tr.setAttribute(k, v);
    }
    tr.querySelector('td.rotated-sqnr').replaceWith(cells[0]);
    tr.querySelector('td.verdict').replaceWith(cells[1]);
    this.renderRotationNote();
  }

  renderTable() {
    const table = this.$('formats-table');
    table.replaceChildren();
    this.rowElements = new Map();
    this.renderWhyChoices();
    this.renderRotationNote();
    this.$('formats-why').hidden = !this.rows.length;
    if (!this.rows.length) return;
    const rotated = Boolean(this.rotate);
    const columns = rotated ? 9 : 7;
    const head = h('thead', {}, h('tr', {},
      h('th', { text: 'format' }), h('th', { class: 'num', text: 'bits / value' }), h('th', { class: 'num', text: 'SQNR' }),
      rotated ? h('th', { class: 'num', text: 'SQNR rotated' }) : null,
      rotated ? h('th', { text: 'rotation' }) : null,
      h('th', { class: 'num', text: 'MSE' }), h('th', { class: 'num', text: 'max |error|' }), h('th', { class: 'num', text: 'clipped' }),
      h('th', {}, h('span', { class: 'visually-hidden', text: 'remove' }))));
    table.append(head);
    // One body per library, in registry order; cheapest first within it, as in `quantscope
    // formats`; formats that failed go last.
    const groups = this.groups();
    const groupOf = (r) => {
      const family = this.family(r.id);
      return Math.max(0, groups.findIndex((g) => g.name === family?.library));
    };
    const order = [...this.rows].sort((a, b) => groupOf(a) - groupOf(b) || (a.error ? 1e9 : a.bits_per_value) - (b.error ? 1e9 : b.bits_per_value));
    let body = null;
    let current = -1;
    order.forEach((r) => {
      const g = groupOf(r);
      if (g !== current) {
        current = g;
        const { name, version } = groups[g];
        body = h('tbody', { 'data-framework': name },
          h('tr', { class: 'group' }, h('th', { colspan: columns, scope: 'rowgroup' }, name, version ? h('span', { class: 'version', text: version }) : null)));
        table.append(body);
      }
      const swatch = h('span', { class: 'swatch', style: { background: seriesColor(this.family(r.id)?.colour ?? 0) } });
      const remove = r.extra ? h('button', { type: 'button', class: 'remove', 'aria-label': `Remove ${r.format || r.id}`, text: '×', onclick: () => this.remove(r) }) : null;
      if (r.error) {
        body.append(h('tr', { class: 'failed', 'data-format': r.id }, h('td', {}, swatch, r.id), h('td', { colspan: columns - 2, class: 'error', text: r.error }), h('td', {}, remove)));
        return;
      }
      const after = rotated ? this.rotatedCells(r) : { attrs: {}, cells: [] };
      const tr = h('tr', {
        ...after.attrs,
        class: r.extra ? 'extra' : undefined,
        'data-format': r.format,
        'data-kind': r.id,
        'data-framework': groups[g].name,
        'data-bits': r.bits_per_value,
        'data-sqnr': r.sqnr_db === null || r.sqnr_db === undefined ? 'null' : r.sqnr_db,
        'data-mse': r.mse,
      },
      h('td', {}, swatch, r.format, ' ',
        h('button', { type: 'button', class: 'link why-link', 'aria-label': `How ${r.format} stores a block`, text: 'why?', onclick: () => this.showWhy(r) })),
      h('td', { class: 'num', text: bitsText(r.bits_per_value) }),
      h('td', { class: 'num', text: sqnrText(r) }),
      ...after.cells,
      h('td', { class: 'num', text: fmtNum(r.mse) }),
      h('td', { class: 'num', text: fmtNum(r.max_abs_err) }),
      h('td', { class: 'num', text: r.clipped_fraction ? `${fmtNum(r.clipped_fraction * 100)} %` : '0' }),
      h('td', {}, remove));
      this.rowElements.set(r, tr);
      tr.addEventListener('mouseenter', () => this.hover(r));
      tr.addEventListener('mouseleave', () => this.hover(null));
      body.append(tr);
    });
  }

  /** The measured rows the "How a block is stored" disclosure offers, in table order. */
  explainable() {
    return this.rows.filter((r) => !r.error);
  }

  /** Refill the format choice of "How a block is stored", keeping the one chosen. */
  renderWhyChoices() {
    const select = this.$('formats-why-format');
    const kept = select.value;
    select.replaceChildren(...this.explainable().map((r, i) => h('option', { value: String(i), text: r.format })));
    const again = this.explainable().findIndex((r) => r.format === kept);
    if (kept && again >= 0) select.value = String(again);
  }

  /** Open "How a block is stored" on row `r`. */
  showWhy(r) {
    const i = this.explainable().indexOf(r);
    if (i < 0) return;
    this.$('formats-why-format').value = String(i);
    const why = this.$('formats-why');
    if (why.open) this.explain();
    else why.open = true; // the toggle event explains
    why.scrollIntoView({ block: 'nearest' });
  }

  /**
   * Fill "How a block is stored" with the engine's derivation of the chosen format and block,
   * when the disclosure is open (formats without one say so).
   */
  async explain() {
    const why = this.$('formats-why');
    if (!why.open) return;
    const row = this.explainable()[Number(this.$('formats-why-format').value)];
    const blockOf = this.$('formats-why-block-of');
    if (!row) {
      renderDerivation(why.parentElement, null, 'No derivation: compare the formats first.');
      return;
    }
    const text = this.$('formats-why-block').value;
    const block = text === '' ? null : Number(text);
    const asked = (this.asked = {});
    why.dataset.format = row.format;
    try {
      const d = await this.engine.call('explainFormat', { id: row.id, params: row.params || {}, block, view: true });
      if (this.asked !== asked) return;
      renderDerivation(why.parentElement, d.steps);
      why.dataset.block = String(d.block);
      blockOf.textContent = `block ${d.block} of ${d.blocks} (0…${d.blocks - 1})`;
      this.$('formats-why-block').max = String(d.blocks - 1);
    } catch (e) {
      if (this.asked !== asked) return;
      delete why.dataset.block;
      blockOf.textContent = '';
      renderDerivation(why.parentElement, null, `No derivation: ${e.message || e}`);
    }
  }

  hover(row) {
    if (this.hovered === row) return;
    this.hovered = row;
    this.draw();
  }

  /** The chart's data: one point per measured format. */
  chartView() {
    const points = [];
    for (const r of this.rows) {
      if (r.error) continue;
      const lossless = r.mse === 0 && r.count > 0;
      points.push({
        label: r.format,
        kind: r.id,
        bits_per_value: r.bits_per_value,
        // No error at all: an infinite SQNR, drawn in the band above the plot.
        sqnr_db: lossless ? Infinity : r.sqnr_db ?? null,
        highlighted: r === this.hovered || Boolean(r.extra),
      });
    }
    return { points };
  }

  draw() {
    const canvas = this.$('formats-chart');
    canvas.hidden = !this.rows.length;
    if (!this.rows.length) return;
    const ratio = fitCanvas(canvas);
    try {
      drawFormats(canvas, this.chartView(), { pixelRatio: ratio });
      canvas.dataset.drawn = String(Number(canvas.dataset.drawn || 0) + 1);
    } catch (err) {
      console.error(err);
    }
  }
}
