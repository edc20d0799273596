// The compare view: a quantized checkpoint against its original, weight by weight (what
// `quantscope diff` prints). The user opens the original's files or folder, the quantized
// checkpoint's, and optionally an importance matrix; the engine lists both from their headers
// and compares one pair of weights at a time in a worker (engine `diff`: progress carries each
// row, cancel keeps the rows so far). It shows the ranked table (worst first: largest NMSE), the
// layer profile (quantized and round-to-nearest SQNR, drawn by the wasm plotting code), the lint
// and the weights found on one side only, with JSON/CSV/SVG exports. Opening a row reads that
// pair again and draws, from the engine's `DiffTensorView`, both weights' histograms overlaid,
// the error's histogram and the error per block; a button sends the original weight to the
// observer panels (through `context.openTensor`, as the model view does).
//
// The page and the notebook widget mount the same view; a notebook gives its own files (range
// sources reading from the kernel) with `setFiles`.
import { diffCsv, diffLayerProfile, drawDiffTensor, drawLayerProfile, renderLayerProfileSvg } from '../pkg/quantscope.js';
import { h, fitCanvas } from '../lib/panel.js';
import { fmtNum, fmtShape, groupDigits } from '../lib/format.js';
import { View } from './view.js';
import { downloadExport } from './exports.js';
import { byPath, filesOfEntry, heatColor } from './model.js';

/** The files of a folder in path order; the engine decides which it reads (checkpoints, their
 * configuration files, ONNX external data) and leaves the others out. */
export function diffFolderFiles(files) {
  return [...files].sort(byPath);
}

/** The three charts of an opened pair: part, element name, accessible label. */
/** Time between two renders of the table while pairs are coming in (`scheduleRender`). */
const LIVE_RENDER_MS = 400;
/** Rows the table shows while pairs are coming in (the worst so far). */
const LIVE_ROWS = 100;
const TENSOR_CHARTS = [
  ['values', 'compare-values', 'Histograms of the original values and of the dequantized values, overlaid'],
  ['error', 'compare-error-hist', 'Histogram of the error, dequantized minus original'],
  ['blocks', 'compare-blocks', 'Mean squared error of each block of the format, in storage order'],
];

/** The sides a diff takes, in order. */
const SIDES = [
  ['original', 'Original', 'the unquantized checkpoint (.safetensors, .npz, .gguf, PyTorch .pt/.bin, or its folder)'],
  ['quantized', 'Quantized', 'the quantized checkpoint (.gguf, or a folder with config.json and its quantization config)'],
];

/** Rows worst first, as the engine ranks them (crate::diff::rank): largest NMSE, failures last. */
function worstFirst(a, b) {
  const key = (r) => (r.metrics && !Number.isNaN(r.metrics.nmse) ? r.metrics.nmse : null);
  const ka = key(a);
  const kb = key(b);
  if (ka !== null && kb !== null) return kb - ka || a.position - b.position;
  if (ka !== null) return -1;
  if (kb !== null) return 1;
  return a.position - b.position;
}

export class CompareView extends View {
  /**
   * Render the view into `root`.
   * @param context {
   *   prefix       element id prefix
   *   openTensor   (source, row) => void: show a weight in the observers view; `source` is an
   *                input `Engine.load` takes: {checkpoint: files, tensor: {name}, name}
   *   onRows       (rows) => void: the rows changed (a notebook sends them to Python)
   *   inputs       false: no file inputs (a notebook supplies the files)
   * }
   */
  mount(root, engine, context = {}) {
    this.attach(root, engine, context);
    /** Each side's files as the engine reads them, and the importance matrix. */
    this.sides = { original: [], quantized: [] };
    this.imatrix = null;
    this.rows = [];
    this.report = null;
    this.pairs = null;
    this.filter = '';
    this.hovered = null;
    this.opened = null;
    this.controller = null;
    this.tensorController = null;
    this.running = false;
    this.generation = 0;
    this.renderMarkup();
    this.section = this.$('compare');
    this.bind();
    return this;
  }

  renderMarkup() {
    const id = (n) => this.id(n);
    const inputs = this.context.inputs !== false;
    const side = ([key, label, what]) => h('div', { id: id(`compare-${key}-drop`), class: 'drop compare-drop', 'data-side': key },
      h('h3', { id: id(`compare-${key}-title`), text: label }),
      h('p', {},
        h('label', { class: 'button primary', for: id(`compare-${key}-files`), text: 'files' }),
        h('input', { type: 'file', id: id(`compare-${key}-files`), multiple: true, accept: '.safetensors,.json,.npz,.npy,.gguf,.onnx,.data,.pt,.pth,.bin', class: 'visually-hidden', 'aria-describedby': id(`compare-${key}-title`) }),
        ' or ',
        h('label', { class: 'button', for: id(`compare-${key}-folder`), text: 'a folder' }),
        h('input', { type: 'file', id: id(`compare-${key}-folder`), webkitdirectory: true, multiple: true, class: 'visually-hidden', 'aria-describedby': id(`compare-${key}-title`) }),
        ` — or drop them here: ${what}.`),
      h('p', { id: id(`compare-${key}-names`), class: 'muted compare-names', 'aria-live': 'polite', text: 'nothing chosen' }));
    this.root.replaceChildren(
      h('section', { id: id('compare'), class: 'compare card', 'aria-labelledby': id('compare-title'), 'data-state': 'idle' },
        h('div', { class: 'curve-head' },
          h('h2', { id: id('compare-title'), text: 'Quantized against original: what did quantization do?' }),
          h('span', { id: id('compare-target'), class: 'muted' }),
          h('span', { class: 'spacer' }),
          h('button', { type: 'button', id: id('compare-export-json'), disabled: true, text: 'JSON' }),
          h('button', { type: 'button', id: id('compare-export-csv'), disabled: true, text: 'CSV' }),
          h('button', { type: 'button', id: id('compare-export-svg'), disabled: true, text: 'SVG' })),
        h('p', { class: 'muted curve-note', text: 'Compare a quantized checkpoint (GGUF, or a quantized Hugging Face folder) with its original, weight by weight: the error of each quantized weight (SQNR, NMSE, cosine, imatrix-weighted error), the same format applied by plain round-to-nearest beside it, and what is wrong with the file (the lint). Only the headers and one pair of weights are read at a time. Click a row to see that weight up close.' }),
        inputs ? h('div', { class: 'compare-inputs' },
          SIDES.map(side),
          h('div', { class: 'compare-imatrix' },
            h('label', { for: id('compare-imatrix'), text: 'Importance matrix (optional, imatrix .gguf or .dat): ' }),
            h('input', { type: 'file', id: id('compare-imatrix'), accept: '.gguf,.dat' }),
            h('span', { id: id('compare-imatrix-name'), class: 'muted', 'aria-live': 'polite' }),
            h('button', { type: 'button', id: id('compare-imatrix-clear'), hidden: true, text: 'Remove' }))) : null,
        h('div', { id: id('compare-progress'), class: 'progress', hidden: true },
          h('progress', { id: id('compare-progress-bar'), max: 1, value: 0, 'aria-label': 'Comparison progress' }),
          h('span', { id: id('compare-progress-label'), 'aria-live': 'polite' }),
          h('button', { type: 'button', id: id('compare-cancel'), text: 'Cancel' })),
        h('div', { id: id('compare-error'), class: 'alert', role: 'alert', hidden: true }),
        h('canvas', { id: id('compare-chart'), class: 'model-chart', role: 'img', 'aria-label': 'Layer profile: SQNR of every quantized weight and of round-to-nearest in the same format, in the original checkpoint\'s order, by layer', hidden: true }),
        h('div', { class: 'model-tools', id: id('compare-tools'), hidden: true },
          h('label', {}, 'filter ', h('input', { type: 'search', id: id('compare-filter'), placeholder: 'weight name', 'aria-label': 'Filter pairs by name' })),
          h('span', { id: id('compare-count'), class: 'muted' })),
        h('div', { class: 'model-table-wrap' },
          h('table', { id: id('compare-table'), class: 'data-table model-table compare-table' })),
        h('p', { id: id('compare-diagnosis'), class: 'diagnosis', 'aria-live': 'polite' }),
        h('section', { id: id('compare-tensor'), class: 'compare-tensor', hidden: true, 'aria-labelledby': id('compare-tensor-title') },
          h('div', { class: 'curve-head' },
            h('h3', { id: id('compare-tensor-title') }),
            h('span', { class: 'spacer' }),
            this.context.openTensor ? h('button', { type: 'button', id: id('compare-send'), text: 'Open the original in the observer panels' }) : null,
            h('button', { type: 'button', id: id('compare-tensor-close'), text: 'Close' })),
          h('p', { id: id('compare-tensor-facts'), class: 'muted', 'aria-live': 'polite' }),
          h('div', { class: 'compare-charts' },
            TENSOR_CHARTS.map(([, name, label]) => h('canvas', { id: id(name), class: 'compare-chart', role: 'img', 'aria-label': label })))),
        h('div', { class: 'compare-notes' },
          h('section', { 'aria-labelledby': id('compare-lint-title') },
            h('h3', { id: id('compare-lint-title'), text: 'Lint' }),
            h('ul', { id: id('compare-lint'), class: 'compare-lint' })),
          h('section', { 'aria-labelledby': id('compare-unpaired-title') },
            h('h3', { id: id('compare-unpaired-title'), text: 'Found on one side only' }),
            h('div', { id: id('compare-unpaired') })))),
    );
  }

  bind() {
    if (this.context.inputs !== false) {
      for (const [key] of SIDES) {
        this.$(`compare-${key}-files`).addEventListener('change', (e) => {
          const files = [...e.target.files].map((f) => ({ blob: f, name: f.name }));
          e.target.value = '';
          if (files.length) this.choose(key, files);
        });
        this.$(`compare-${key}-folder`).addEventListener('change', (e) => {
          const files = diffFolderFiles([...e.target.files].map((f) => ({ blob: f, name: f.webkitRelativePath || f.name })));
          e.target.value = '';
          if (!files.length) this.setError('The folder holds no checkpoint file (.safetensors, .npz, .npy, .gguf, .pt, .bin).');
          else this.choose(key, files);
        });
        const zone = this.$(`compare-${key}-drop`);
        zone.addEventListener('dragover', (e) => {
          e.preventDefault();
          e.stopPropagation();
          zone.classList.add('over');
        });
        zone.addEventListener('dragleave', () => zone.classList.remove('over'));
        zone.addEventListener('drop', (e) => {
          // The page's own drop handler (load a tensor) must not see a drop on this view.
          e.preventDefault();
          e.stopPropagation();
          zone.classList.remove('over');
          this.dropped(e.dataTransfer).then(
            (files) => files.length && this.choose(key, files),
            (err) => this.setError(`Could not read the dropped files: ${err.message}`),
          );
        });
      }
      // A drop elsewhere on the view is not a tensor for the page either.
      this.section.addEventListener('dragover', (e) => e.preventDefault());
      this.section.addEventListener('drop', (e) => {
        e.preventDefault();
        e.stopPropagation();
      });
      this.$('compare-imatrix').addEventListener('change', (e) => {
        const [file] = e.target.files;
        e.target.value = '';
        if (file) this.setImatrix({ blob: file, name: file.name });
      });
      this.$('compare-imatrix-clear').addEventListener('click', () => this.setImatrix(null));
    }
    this.$('compare-cancel').addEventListener('click', () => this.controller && this.controller.abort());
    this.$('compare-filter').addEventListener('input', (e) => {
      this.filter = e.target.value.trim().toLowerCase();
      this.applyFilter();
    });
    this.$('compare-export-json').addEventListener('click', () => this.download('json'));
    this.$('compare-export-csv').addEventListener('click', () => this.download('csv'));
    this.$('compare-export-svg').addEventListener('click', () => this.download('svg'));
    this.$('compare-tensor-close').addEventListener('click', () => this.closeTensor());
    if (this.$('compare-send')) this.$('compare-send').addEventListener('click', () => this.sendOriginal());
    this.resizeObserver = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => {
      this.draw();
      this.drawTensor();
    });
    if (this.resizeObserver) {
      this.resizeObserver.observe(this.$('compare-chart'));
      this.resizeObserver.observe(this.$('compare-tensor'));
    }
  }

  /** The files of a drop: plain files as they are, folders walked (checkpoint and configuration files, in path order). */
  async dropped(transfer) {
    if (!transfer) return [];
    const entries = [...(transfer.items || [])].map((item) => (item.webkitGetAsEntry ? item.webkitGetAsEntry() : null));
    if (!entries.length || entries.some((e) => !e)) return [...transfer.files].map((f) => ({ blob: f, name: f.name }));
    const out = [];
    for (const entry of entries) {
      const files = await filesOfEntry(entry);
      out.push(...(entry.isDirectory ? diffFolderFiles(files) : files));
    }
    return out;
  }

  /** Choose side `key`'s files; both sides chosen, compare. */
  choose(key, files) {
    this.sides[key] = files;
    const el = this.$(`compare-${key}-names`);
    const bytes = files.reduce((n, f) => n + (f.size ?? f.blob?.size ?? 0), 0);
    el.textContent = `${files.map((f) => f.name).join(', ')}${bytes ? ` (${(bytes / 2 ** 20).toFixed(1)} MiB)` : ''}`;
    el.classList.remove('muted');
    return this.run();
  }

  /** Weight the error by an importance matrix (null: none); compares again when both sides are chosen. */
  setImatrix(file) {
    this.imatrix = file;
    if (this.context.inputs !== false) {
      this.$('compare-imatrix-name').textContent = file ? file.name : '';
      this.$('compare-imatrix-clear').hidden = !file;
    }
    return this.run();
  }

  /** Notebooks: set both sides (and the importance matrix) without the inputs, and compare. */
  setFiles({ original, quantized, imatrix = null }) {
    this.sides = { original, quantized };
    this.imatrix = imatrix;
    return this.run();
  }

  /** True while a comparison or an opened pair is being computed. */
  get busy() {
    return this.running || Boolean(this.tensorController);
  }

  async run() {
    const { original, quantized } = this.sides;
    if (!original.length || !quantized.length) return;
    if (this.controller) this.controller.abort();
    const generation = ++this.generation;
    const controller = new AbortController();
    this.controller = controller;
    this.running = true;
    this.rows = [];
    this.report = null;
    this.pairs = null;
    this.hovered = null;
    this.closeTensor();
    this.setError(null);
    this.section.dataset.state = 'listing';
    delete this.section.dataset.pairs;
    this.showProgress(0, 'reading the headers');
    this.render();
    const t0 = performance.now();
    try {
      const report = await this.engine.call('diff', { original, quantized, imatrix: this.imatrix }, {
        signal: controller.signal,
        onProgress: (p) => {
          if (generation !== this.generation) return;
          if (p.pairs !== undefined) {
            this.pairs = p.pairs;
            this.section.dataset.pairs = String(p.pairs);
          }
          if (p.row) this.rows.push(p.row);
          this.section.dataset.state = 'running';
          this.showProgress(p.fraction, p.label);
          this.scheduleRender();
        },
      });
      if (generation !== this.generation) return;
      this.report = report;
      this.rows = report.pairs;
      this.seconds = (performance.now() - t0) / 1000;
      this.section.dataset.state = 'done';
      this.section.dataset.seconds = this.seconds.toFixed(3);
      if (!report.pairs.length) this.setError('No weight of the quantized checkpoint pairs with one of the original (see the names found on one side only).');
    } catch (err) {
      if (generation !== this.generation) return;
      if (err.cancelled) {
        this.section.dataset.state = 'cancelled';
        this.setError(`The comparison was cancelled after ${this.rows.length} of ${this.pairs ?? '?'} pairs; the pairs compared so far are shown.`, { info: true });
      } else {
        this.section.dataset.state = 'error';
        this.setError(`Could not compare the checkpoints: ${err.message}`);
      }
    } finally {
      if (this.controller === controller) this.controller = null;
      if (generation === this.generation) {
        this.running = false;
        this.$('compare-progress').hidden = true;
        this.render();
        if (this.context.onRows) this.context.onRows(this.sortedRows());
      }
    }
  }

  showProgress(fraction, label) {
    this.showProgressOf('compare', fraction, label);
  }

  setError(message, options) {
    this.setErrorOf('compare', message, options);
  }

  /** The rows, worst first (the CLI's `diff --json` `pairs`; while comparing: those compared so far). */
  sortedRows() {
    return this.report ? this.report.pairs : [...this.rows].sort(worstFirst);
  }

  /** Whether any row has an imatrix-weighted error (the column is shown then). */
  weighted() {
    return this.rows.some((r) => r.metrics && r.metrics.imatrix_weighted_mse !== undefined);
  }

  /**
   * Render on the next frame, at most every LIVE_RENDER_MS while pairs are coming in: the table
   * is rebuilt whole, and rebuilding thousands of rows every frame would take a core from the
   * workers comparing them.
   */
  scheduleRender() {
    if (this.renderPending) return;
    this.renderPending = true;
    const live = this.section.dataset.state === 'running';
    const wait = live ? Math.max(0, (this.lastRender ?? -Infinity) + LIVE_RENDER_MS - performance.now()) : 0;
    setTimeout(() => requestAnimationFrame(() => {
      this.renderPending = false;
      this.lastRender = performance.now();
      this.render();
    }), wait);
  }

  render() {
    const any = this.rows.length > 0;
    this.$('compare-tools').hidden = !any;
    for (const b of ['compare-export-json', 'compare-export-csv', 'compare-export-svg']) this.$(b).disabled = !this.report;
    const files = this.report ? this.report.files.length : 0;
    this.$('compare-target').textContent = this.pairs === null ? '' : `${groupDigits(this.pairs)} pairs of weights${files ? ` in ${files} files` : ''}`;
    this.renderTable();
    this.renderNotes();
    this.draw();
    this.showDiagnosis();
  }

  renderTable() {
    const table = this.$('compare-table');
    if (!this.rows.length) {
      table.replaceChildren();
      return;
    }
    const weighted = this.weighted();
    const th = (text, title, num = true) => h('th', { class: num ? 'num' : undefined, scope: 'col', title, text });
    const head = h('thead', {}, h('tr', {},
      th('#', 'Worst first: by NMSE'),
      th('original', 'the weight in the original checkpoint', false),
      th('quantized', 'its name in the quantized checkpoint', false),
      th('format', 'the quantized weight\'s stored format', false),
      th('shape', 'shape', false),
      th('bits/w', 'bits stored per weight, scales included'),
      th('SQNR', 'SQNR (dB) of the quantized weight against the original'),
      th('RTN SQNR', 'SQNR (dB) of the same format applied by plain round-to-nearest; "=" marks a weight stored exactly as round-to-nearest stores it'),
      th('NMSE', 'Σ(q − x)² / Σx²'),
      th('cosine', 'cosine similarity'),
      weighted ? th('imatrix MSE', 'error weighted by the importance matrix') : null,
      th('error', 'why the pair could not be compared', false)));
    const body = h('tbody');
    const rows = this.sortedRows();
    // While pairs are coming in, the worst LIVE_ROWS so far: rebuilding thousands of rows at
    // every render would take a core from the workers comparing them.
    const shown = this.section.dataset.state === 'running' ? rows.slice(0, LIVE_ROWS) : rows;
    shown.forEach((row, i) => body.append(this.rowElement(row, i + 1, weighted)));
    if (shown.length < rows.length) {
      body.append(h('tr', { class: 'more' }, h('td', { colspan: weighted ? 12 : 11, class: 'muted', text: `… and ${groupDigits(rows.length - shown.length)} more pairs compared so far, listed when the comparison ends` })));
    }
    table.replaceChildren(head, body);
    this.applyFilter();
  }

  sqnrCell(method, metrics, title, identical = false) {
    if (!metrics) return h('td', { class: 'num sqnr muted', 'data-method': method, text: '—', title });
    const db = metrics.sqnr_db;
    const lossless = db === null && metrics.mse === 0;
    const text = lossless ? '∞' : db === null ? '—' : db.toFixed(2);
    return h('td', {
      class: 'num sqnr',
      'data-method': method,
      'data-sqnr-db': db === null ? 'null' : db,
      'data-identical': identical ? 'true' : undefined,
      style: { background: heatColor(lossless ? 100 : db) || '' },
      title,
      text: identical ? `= ${text}` : text,
    });
  }

  rowElement(row, rank, weighted) {
    const failed = Boolean(row.error);
    const m = row.metrics;
    const tr = h('tr', {
      'data-original': row.original,
      'data-quantized': row.quantized,
      'data-format': row.format,
      'data-position': row.position,
      'data-status': failed ? 'failed' : 'compared',
      class: failed ? 'failed' : this.isOpened(row) ? 'openable selected' : 'openable',
      tabindex: failed ? undefined : 0,
      title: failed ? `${row.original}: ${row.error}` : `Open ${row.original} up close`,
    },
    h('td', { class: 'num muted', text: String(rank) }),
    h('td', { class: 'name', text: row.original }),
    h('td', { class: 'name', text: row.quantized }),
    h('td', { text: row.format }),
    h('td', { text: fmtShape(row.shape) }),
    h('td', { class: 'num', text: fmtNum(row.bits_per_weight) }),
    this.sqnrCell('quantized', m, m ? `SQNR ${fmtNum(m.sqnr_db)} dB · MSE ${fmtNum(m.mse)} · max |error| ${fmtNum(m.max_abs_err)}` : undefined),
    this.sqnrCell('rtn', row.rtn && row.rtn.metrics, row.rtn ? `${row.rtn.format}: SQNR ${fmtNum(row.rtn.metrics.sqnr_db)} dB · NMSE ${fmtNum(row.rtn.metrics.nmse)}${row.rtn.identical ? ' · "=": the stored bits are exactly round-to-nearest\'s (no algorithm changed this weight)' : ''}` : row.rtn_error || 'no round-to-nearest for this format', Boolean(row.rtn && row.rtn.identical)),
    h('td', { class: 'num', text: m ? fmtNum(m.nmse) : '' }),
    h('td', { class: 'num', text: m ? m.cosine.toFixed(6) : '' }),
    weighted ? h('td', { class: 'num', text: m && m.imatrix_weighted_mse !== undefined ? fmtNum(m.imatrix_weighted_mse) : '' }) : null,
    h('td', { class: 'error', text: row.error || '' }));
    if (!failed) {
      const open = () => this.openRow(row);
      tr.addEventListener('click', open);
      tr.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          open();
        }
      });
    }
    tr.addEventListener('mouseenter', () => this.hover(row.position));
    tr.addEventListener('mouseleave', () => this.hover(null));
    tr.addEventListener('focus', () => this.hover(row.position));
    return tr;
  }

  /** True when `row` is the pair opened up close. */
  isOpened(row) {
    return Boolean(this.opened && this.opened.original === row.original && this.opened.quantized === row.quantized);
  }

  applyFilter() {
    const words = this.filter.split(/\s+/).filter(Boolean);
    let shown = 0;
    let total = 0;
    for (const tr of this.$('compare-table').querySelectorAll('tbody tr[data-original]')) {
      total += 1;
      const name = `${tr.dataset.original} ${tr.dataset.quantized}`.toLowerCase();
      const visible = words.every((w) => name.includes(w));
      tr.hidden = !visible;
      if (visible) shown += 1;
    }
    const failed = this.rows.filter((r) => r.error).length;
    const parts = [`${groupDigits(shown)} of ${groupDigits(total)} shown`];
    if (failed) parts.push(`${failed} could not be compared`);
    if (this.seconds !== undefined && this.report) parts.push(`compared in ${this.seconds.toFixed(2)} s`);
    this.$('compare-count').textContent = parts.join(' · ');
  }

  /** The lint and the unpaired names (from the report; empty while comparing). */
  renderNotes() {
    const lint = this.report ? this.report.lint : [];
    this.$('compare-lint').replaceChildren(...(lint.length
      ? lint.map((l) => h('li', { 'data-kind': l.kind, 'data-tensor': l.tensor },
        h('span', { class: 'compare-kind', text: l.kind }), ' ',
        l.tensor ? h('code', { text: l.tensor }) : null, l.tensor ? ': ' : '', l.message))
      : [h('li', { class: 'muted', text: this.report ? 'nothing to report' : '—' })]));
    const unpaired = this.report ? this.report.unpaired : { original: [], quantized: [] };
    const box = this.$('compare-unpaired');
    box.dataset.unpairedOriginal = String(unpaired.original.length);
    box.dataset.unpairedQuantized = String(unpaired.quantized.length);
    const list = (side, names) => h('p', {},
      h('strong', { text: `only in the ${side} (${names.length}): ` }),
      names.length ? names.map((n, i) => [i ? ', ' : '', h('code', { text: n })]).flat() : h('span', { class: 'muted', text: 'none' }));
    box.replaceChildren(list('original', unpaired.original), list('quantized', unpaired.quantized));
  }

  hover(position) {
    if (this.hovered === position) return;
    this.hovered = position;
    this.draw();
    this.showDiagnosis();
  }

  /** The diagnosis of the pair pointed at or focused, else of the worst compared pair. */
  showDiagnosis() {
    const rows = this.sortedRows();
    const row = rows.find((r) => r.position === this.hovered) || rows.find((r) => r.diagnosis);
    this.showDiagnosisOf('compare', row, row?.original);
  }

  /** The layer profile's data for the rows compared so far. */
  profile(highlighted = this.hovered ?? this.opened?.position) {
    return diffLayerProfile({ pairs: this.rows }, highlighted ?? undefined);
  }

  draw() {
    const canvas = this.$('compare-chart');
    const show = this.rows.length > 0;
    canvas.hidden = !show;
    if (!show) return;
    const ratio = fitCanvas(canvas);
    try {
      drawLayerProfile(canvas, this.profile(), { pixelRatio: ratio });
      canvas.dataset.drawn = String(Number(canvas.dataset.drawn || 0) + 1);
    } catch (err) {
      console.error(err);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // One pair up close

  /** Open `row`: read its pair again in the worker and draw its charts. */
  async openRow(row) {
    if (row.error) return;
    if (this.tensorController) this.tensorController.abort();
    const controller = new AbortController();
    this.tensorController = controller;
    this.opened = { ...row, view: null };
    const box = this.$('compare-tensor');
    box.hidden = false;
    box.dataset.state = 'loading';
    box.dataset.original = row.original;
    box.dataset.quantized = row.quantized;
    for (const k of ['block', 'blocks', 'worstBlock']) delete box.dataset[k];
    this.$('compare-tensor-title').textContent = `${row.original} → ${row.quantized} (${row.format})`;
    this.$('compare-tensor-facts').textContent = 'reading the pair…';
    for (const tr of this.$('compare-table').querySelectorAll('tbody tr[data-original]')) {
      tr.classList.toggle('selected', tr.dataset.original === row.original && tr.dataset.quantized === row.quantized);
    }
    this.draw();
    try {
      const view = await this.engine.call('diffTensor', { ...this.sides, pair: { original: row.original, quantized: row.quantized } }, { signal: controller.signal });
      if (this.tensorController !== controller) return;
      this.opened.view = view;
      const b = view.blocks;
      box.dataset.block = String(b.block);
      box.dataset.blocks = String(b.count);
      box.dataset.worstBlock = String(b.worst);
      const m = row.metrics;
      const unit = b.rows ? `rows of ${groupDigits(b.block)} values` : `blocks of ${groupDigits(b.block)} values`;
      this.$('compare-tensor-facts').textContent = [
        `shape ${fmtShape(view.shape)}`,
        `${fmtNum(row.bits_per_weight)} bits/weight`,
        m ? `SQNR ${fmtNum(m.sqnr_db)} dB, NMSE ${fmtNum(m.nmse)}, max |error| ${fmtNum(m.max_abs_err)}` : null,
        `${groupDigits(b.count)} ${unit}; worst ${b.rows ? 'row' : 'block'} ${groupDigits(b.worst)} (MSE ${fmtNum(b.worst_mse)})`,
        view.nonfinite ? `${groupDigits(view.nonfinite)} non-finite values left out` : null,
      ].filter(Boolean).join(' · ');
      box.dataset.state = 'ready';
      this.drawTensor();
      box.scrollIntoView({ block: 'nearest' });
    } catch (err) {
      if (this.tensorController !== controller) return;
      box.dataset.state = 'error';
      this.$('compare-tensor-facts').textContent = err.cancelled ? 'cancelled' : `Could not read the pair: ${err.message}`;
    } finally {
      if (this.tensorController === controller) this.tensorController = null;
    }
  }

  drawTensor() {
    const view = this.opened && this.opened.view;
    if (!view || this.$('compare-tensor').hidden) return;
    for (const [part, name] of TENSOR_CHARTS) {
      const canvas = this.$(name);
      const ratio = fitCanvas(canvas);
      try {
        drawDiffTensor(canvas, view, part, { pixelRatio: ratio });
        canvas.dataset.drawn = String(Number(canvas.dataset.drawn || 0) + 1);
      } catch (err) {
        console.error(err);
      }
    }
  }

  closeTensor() {
    if (this.tensorController) this.tensorController.abort();
    this.tensorController = null;
    this.opened = null;
    const box = this.$('compare-tensor');
    box.hidden = true;
    delete box.dataset.state;
  }

  /** Send the opened pair's original weight to the observer panels. */
  sendOriginal() {
    if (!this.opened || !this.context.openTensor) return;
    const files = this.sides.original;
    const base = files.length === 1 ? files[0].name : this.opened.original;
    this.context.openTensor({ checkpoint: files, tensor: { name: this.opened.original }, name: base }, this.opened);
  }

  // ---------------------------------------------------------------------------------------------
  // Exports

  /** The JSON export: the CLI's `diff --json` document. */
  json() {
    return JSON.stringify(this.report, null, 2);
  }

  /** The CSV export: the CLI's `diff --csv`. */
  csv() {
    return diffCsv(this.report);
  }

  /** The layer profile as SVG. */
  svg() {
    return renderLayerProfileSvg(diffLayerProfile(this.report, undefined), {}, 1400, 460);
  }

  download(kind) {
    if (!this.report) return;
    downloadExport(kind, this.sides.quantized[0], 'quantized', 'diff', { json: () => this.json(), csv: () => this.csv(), svg: () => this.svg() });
  }

  api() {
    /** The rows, worst first (the CLI's `diff --json` pairs; while comparing, those compared so far). */
    return { diff: () => this.sortedRows() };
  }

  unmount() {
    if (this.controller) this.controller.abort();
    if (this.tensorController) this.tensorController.abort();
    if (this.resizeObserver) this.resizeObserver.disconnect();
    this.generation += 1;
  }
}
