// The model view: every tensor of a checkpoint ranked by what quantization does to it, from the
// files alone. The user opens checkpoint files or a folder (safetensors with or without shards
// and index, .npz, .npy dumps, GGUF); the engine lists them from their headers and ranks one
// tensor at a time (engine `rankModel`: progress carries the rows as they come, cancel keeps
// what was ranked). It shows a table (one row per tensor, sortable, filterable, one heat-coloured
// SQNR cell per method, the statistics, the reason for a skipped tensor), the layer profile
// (drawn by the wasm plotting code) and exports; clicking a row opens that tensor in the
// observers view (through `context.openTensor`).
//
// The page and the notebook widget mount the same view; a notebook gives its own `files` (range
// sources reading from the kernel) with `setFiles`.
import { drawLayerProfile, layerProfile, modelCsv, renderLayerProfileSvg } from '../pkg/quantscope.js';
import { h, fitCanvas, seriesColor } from '../lib/panel.js';
import { fmtNum, fmtShape, groupDigits } from '../lib/format.js';
import { View } from './view.js';
import { downloadExport } from './exports.js';

/** Files a folder contributes (as `quantscope model DIR` lists them). */
const CHECKPOINT_FILE = /\.(safetensors|npy|npz|gguf|onnx|pt|pth)$|(^|\/)(pytorch|adapter)_model[^/]*\.bin$|\.(safetensors|bin)\.index\.json$|\.onnx[._]data$/i;

/** PyTorch files, left out of a folder that holds the same weights as .safetensors. */
const TORCH_FILE = /\.(pt|pth|bin|bin\.index\.json)$/i;
const SAFETENSORS_FILE = /\.safetensors(\.index\.json)?$/i;

/** Statistic columns: key, header, tooltip. */
const STATS = [
  ['min', 'min', 'smallest finite value'],
  ['max', 'max', 'largest finite value'],
  ['mean', 'mean', 'mean of the finite values'],
  ['std', 'std', 'population standard deviation'],
  ['kurtosis', 'kurtosis', 'excess kurtosis (0 for a normal distribution; large for heavy tails)'],
  ['absmax_over_std', 'absmax/σ', 'max |x| / std: how many standard deviations the largest magnitude lies from zero'],
];

/** The heat colour of an SQNR: red at 10 dB and below, through yellow, to green at 45 dB and above. */
export function heatColor(db) {
  if (db === null || db === undefined || Number.isNaN(db)) return null;
  const t = Math.min(1, Math.max(0, (db - 10) / 35));
  return `hsl(${Math.round(t * 130)}, 75%, ${Math.round(84 + 4 * t)}%)`;
}

/** A result's SQNR as the ranking uses it: +∞ for an exact (lossless) result, null when none. */
function sqnrOf(result) {
  if (!result || result.error) return null;
  if (result.sqnr_db === null || result.sqnr_db === undefined) return result.mse === 0 ? Infinity : null;
  return result.sqnr_db;
}

/** Rows worst first, exactly as the engine sorts them (quantscope::model::sort_worst_first). */
export function worstFirst(methods) {
  const key = (row) => {
    if (row.error) return [2, 0];
    for (const m of methods) {
      const r = row.results.find((x) => x.id === m && !x.error);
      if (r) return [0, r.sqnr_db ?? Infinity];
    }
    return [1, 0];
  };
  return (a, b) => {
    const [ga, va] = key(a);
    const [gb, vb] = key(b);
    return ga - gb || (va < vb ? -1 : va > vb ? 1 : 0) || a.position - b.position;
  };
}

/** Every file under a dropped directory entry, as `{blob, name}` with its folder path. */
export async function filesOfEntry(entry) {
  if (entry.isFile) {
    const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
    return [{ blob: file, name: entry.fullPath.replace(/^\//, '') }];
  }
  if (!entry.isDirectory) return [];
  const reader = entry.createReader();
  const children = [];
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (!batch.length) break;
    children.push(...batch);
  }
  const nested = await Promise.all(children.map(filesOfEntry));
  return nested.flat();
}

/** Compare folder paths as `quantscope model DIR` orders them (by path component). */
export function byPath(a, b) {
  const pa = a.name.split('/');
  const pb = b.name.split('/');
  for (let i = 0; i < Math.min(pa.length, pb.length); i += 1) {
    if (pa[i] !== pb[i]) return pa[i] < pb[i] ? -1 : 1;
  }
  return pa.length - pb.length;
}

/** The files of a folder that a checkpoint reader wants, in path order (as `quantscope model
 * DIR` lists them: a folder's PyTorch files are left out when it holds .safetensors files). */
export function folderFiles(files) {
  const dir = (f) => f.name.slice(0, Math.max(0, f.name.lastIndexOf('/')));
  const withSafetensors = new Set(files.filter((f) => SAFETENSORS_FILE.test(f.name)).map(dir));
  return files
    .filter((f) => CHECKPOINT_FILE.test(f.name))
    .filter((f) => !(TORCH_FILE.test(f.name) && withSafetensors.has(dir(f))))
    .sort(byPath);
}

export class ModelView extends View {
  /**
   * Render the view into `root`.
   * @param context {
   *   prefix       element id prefix
   *   openTensor   (source, row) => void: show that tensor in the observers view; `source` is an
   *                input `Engine.load` takes: {checkpoint: files, tensor: {position, name}, name}
   *   onRows       (rows) => void: the rows changed (a notebook sends them to Python)
   *   inputs       false: no file inputs (a notebook supplies the files)
   * }
   */
  mount(root, engine, context = {}) {
    this.attach(root, engine, context);
    /** The checkpoint's files as the engine reads them. */
    this.files = [];
    this.listing = null;
    this.methods = [];
    /** Rows by checkpoint position; the final report (worst first) once ranked. */
    this.rowsByPosition = new Map();
    this.report = null;
    this.loadErrors = [];
    this.sort = { key: 'rank', dir: 1 };
    this.filter = '';
    this.hovered = null;
    this.controller = null;
    this.running = false;
    this.generation = 0;
    this.choices = null;
    this.chosen = null;
    this.renderMarkup();
    this.section = this.$('model');
    this.bind();
    this.loadChoices();
    return this;
  }

  renderMarkup() {
    const id = (n) => this.id(n);
    const inputs = this.context.inputs !== false;
    this.root.replaceChildren(
      h('section', { id: id('model'), class: 'model card', 'aria-labelledby': id('model-title'), 'data-state': 'idle' },
        h('div', { class: 'curve-head' },
          h('h2', { id: id('model-title'), text: 'Whole model: which tensor hurts?' }),
          h('span', { id: id('model-target'), class: 'muted' }),
          h('span', { class: 'spacer' }),
          h('button', { type: 'button', id: id('model-export-json'), disabled: true, text: 'JSON' }),
          h('button', { type: 'button', id: id('model-export-csv'), disabled: true, text: 'CSV' }),
          h('button', { type: 'button', id: id('model-export-svg'), disabled: true, text: 'SVG' })),
        h('p', { class: 'muted curve-note', text: `Rank every tensor of a checkpoint by the SQNR each quantization method leaves, worst first, from the files alone: the headers are read first, then one tensor at a time (nothing holds the whole checkpoint).${this.context.openTensor ? ' Click a row to open that tensor in the observer panels above.' : ''}` }),
        inputs ? h('div', { id: id('model-drop'), class: 'drop model-drop' },
          h('p', {},
            'Open ',
            h('label', { class: 'button primary', for: id('model-files'), text: 'checkpoint files' }),
            h('input', { type: 'file', id: id('model-files'), multiple: true, accept: '.safetensors,.json,.npz,.npy,.gguf,.onnx,.data,.pt,.pth,.bin', class: 'visually-hidden' }),
            ' or ',
            h('label', { class: 'button', for: id('model-folder'), text: 'a folder' }),
            h('input', { type: 'file', id: id('model-folder'), webkitdirectory: true, multiple: true, class: 'visually-hidden' }),
            ' — or drop them here: .safetensors (shards with their index), .npz, a folder of .npy dumps, .gguf, .onnx, PyTorch .pt/.pth/.bin.')) : null,
        h('details', { id: id('model-methods'), class: 'adder model-methods' },
          h('summary', { id: id('model-methods-summary'), text: 'Methods' }),
          h('div', { id: id('model-method-list'), class: 'model-method-list' }),
          h('div', { class: 'adder-row' },
            h('button', { type: 'button', id: id('model-defaults'), text: 'Defaults' }),
            h('button', { type: 'button', id: id('model-rerun'), class: 'primary', disabled: true, text: 'Rank again' }))),
        h('div', { id: id('model-progress'), class: 'progress', hidden: true },
          h('progress', { id: id('model-progress-bar'), max: 1, value: 0 }),
          h('span', { id: id('model-progress-label'), 'aria-live': 'polite' }),
          h('button', { type: 'button', id: id('model-cancel'), text: 'Cancel' })),
        h('div', { id: id('model-error'), class: 'alert', role: 'alert', hidden: true }),
        h('canvas', { id: id('model-chart'), class: 'model-chart', role: 'img', 'aria-label': 'Layer profile: SQNR of every tensor in checkpoint order, by layer', hidden: true }),
        h('div', { class: 'model-tools', id: id('model-tools'), hidden: true },
          h('label', {}, 'filter ', h('input', { type: 'search', id: id('model-filter'), placeholder: 'tensor name', 'aria-label': 'Filter tensors by name' })),
          h('span', { id: id('model-count'), class: 'muted' })),
        h('div', { class: 'model-table-wrap' },
          h('table', { id: id('model-table'), class: 'data-table model-table' })),
        h('p', { id: id('model-diagnosis'), class: 'diagnosis', 'aria-live': 'polite' })),
    );
  }

  bind() {
    const pick = (files) => {
      if (files.length) this.open(files);
    };
    if (this.context.inputs !== false) {
      this.$('model-files').addEventListener('change', (e) => {
        const files = [...e.target.files].map((f) => ({ blob: f, name: f.name }));
        e.target.value = '';
        pick(files);
      });
      this.$('model-folder').addEventListener('change', (e) => {
        const files = folderFiles([...e.target.files].map((f) => ({ blob: f, name: f.webkitRelativePath || f.name })));
        e.target.value = '';
        if (!files.length) this.setError('The folder holds no .safetensors, .npz, .npy, .gguf, .onnx or PyTorch file.');
        pick(files);
      });
      const drop = this.$('model');
      drop.addEventListener('dragover', (e) => {
        e.preventDefault();
        e.stopPropagation();
        this.$('model-drop').classList.add('over');
      });
      drop.addEventListener('dragleave', () => this.$('model-drop').classList.remove('over'));
      drop.addEventListener('drop', (e) => {
        // The page's own drop handler (load a tensor) must not see a drop on this view.
        e.preventDefault();
        e.stopPropagation();
        this.$('model-drop').classList.remove('over');
        this.dropped(e.dataTransfer).then(pick, (err) => this.setError(`Could not read the dropped files: ${err.message}`));
      });
    }
    this.$('model-cancel').addEventListener('click', () => this.controller && this.controller.abort());
    this.$('model-rerun').addEventListener('click', () => this.run());
    this.$('model-defaults').addEventListener('click', () => {
      this.chosen = null;
      this.renderMethods();
    });
    this.$('model-filter').addEventListener('input', (e) => {
      this.filter = e.target.value.trim().toLowerCase();
      this.applyFilter();
    });
    this.$('model-export-json').addEventListener('click', () => this.download('json'));
    this.$('model-export-csv').addEventListener('click', () => this.download('csv'));
    this.$('model-export-svg').addEventListener('click', () => this.download('svg'));
    this.resizeObserver = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => this.draw());
    if (this.resizeObserver) this.resizeObserver.observe(this.$('model-chart'));
  }

  /** The files of a drop: plain files as they are, folders walked (checkpoint files only, in path order). */
  async dropped(transfer) {
    if (!transfer) return [];
    const entries = [...(transfer.items || [])].map((item) => (item.webkitGetAsEntry ? item.webkitGetAsEntry() : null));
    if (!entries.length || entries.some((e) => !e)) return [...transfer.files].map((f) => ({ blob: f, name: f.name }));
    const out = [];
    for (const entry of entries) {
      const files = await filesOfEntry(entry);
      out.push(...(entry.isDirectory ? folderFiles(files) : files));
    }
    return out;
  }

  async loadChoices() {
    try {
      this.choices = await this.engine.call('modelMethods');
    } catch (err) {
      this.setError(`Could not list the methods: ${err.message}`);
      return;
    }
    this.renderMethods();
  }

  /** The methods to rank by (names). */
  chosenMethods() {
    return this.chosen ? [...this.chosen] : this.choices ? [...this.choices.defaults] : [];
  }

  renderMethods() {
    const list = this.$('model-method-list');
    if (!this.choices) return;
    const chosen = new Set(this.chosenMethods());
    const group = (title, names) => h('fieldset', { class: 'model-method-group' },
      h('legend', { text: title }),
      names.map((name) => h('label', { class: 'model-method' },
        h('input', {
          type: 'checkbox',
          value: name,
          checked: chosen.has(name),
          onchange: (e) => this.toggleMethod(name, e.target.checked),
        }),
        ` ${name}`)));
    list.replaceChildren(group('observers (default parameters)', this.choices.observers), group('number formats', this.choices.formats));
    const n = chosen.size;
    this.$('model-methods-summary').textContent = `Methods: ${n} chosen${this.chosen ? '' : ' (the defaults)'} — ${[...chosen].join(', ')}`;
    this.$('model-rerun').disabled = !this.files.length || this.running || n === 0;
  }

  toggleMethod(name, on) {
    const order = [...this.choices.defaults, ...this.choices.observers, ...this.choices.formats];
    const now = this.chosenMethods().filter((m) => m !== name);
    if (on) now.push(name);
    // The first method chosen stays first (it ranks); the others keep the list's order.
    const first = now[0];
    const rest = now.slice(1).sort((a, b) => order.indexOf(a) - order.indexOf(b));
    this.chosen = first === undefined ? [] : [first, ...rest.filter((m) => m !== first)];
    this.renderMethods();
  }

  /** Choose the methods by name (null: the defaults). */
  setMethods(names) {
    this.chosen = names && names.length ? [...names] : null;
    this.renderMethods();
  }

  /** Rank the checkpoint made of `files` (what Engine.rankModel takes). */
  open(files) {
    this.files = files;
    return this.run();
  }

  /** Notebooks: set the files without the inputs. */
  setFiles(files) {
    return this.open(files);
  }

  /** True while a checkpoint is being listed or ranked. */
  get busy() {
    return this.running;
  }

  async run() {
    if (!this.files.length) return;
    if (this.controller) this.controller.abort();
    const generation = ++this.generation;
    const controller = new AbortController();
    this.controller = controller;
    this.running = true;
    this.listing = null;
    this.report = null;
    this.rowsByPosition = new Map();
    this.loadErrors = [];
    this.hovered = null;
    this.setError(null);
    this.section.dataset.state = 'listing';
    this.showProgress(0, 'reading the headers');
    this.renderMethods();
    this.render();
    const methods = this.chosenMethods();
    const t0 = performance.now();
    try {
      const value = await this.engine.call('rankModel', { files: this.files, methods }, {
        signal: controller.signal,
        onProgress: (p) => {
          if (generation !== this.generation) return;
          if (p.listing) this.listed(p.listing, p.methods);
          if (p.rows) for (const row of p.rows) this.rowsByPosition.set(row.position, row);
          this.section.dataset.state = 'running';
          this.showProgress(p.fraction, p.label);
          this.scheduleRender();
        },
      });
      if (generation !== this.generation) return;
      this.methods = value.methods;
      this.report = { tensors: value.tensors, load_errors: value.load_errors };
      this.loadErrors = value.load_errors;
      for (const row of value.tensors) this.rowsByPosition.set(row.position, row);
      this.seconds = (performance.now() - t0) / 1000;
      this.section.dataset.state = value.cancelled ? 'cancelled' : 'done';
      this.section.dataset.seconds = this.seconds.toFixed(3);
      const errors = this.loadErrors.map((e) => `${e.file}: ${e.error}`);
      if (value.cancelled) errors.unshift(`Ranking was cancelled after ${value.tensors.length} of ${this.listing ? this.listing.tensors.length : '?'} tensors; the rows ranked so far are shown.`);
      this.setError(errors.length ? errors.join('\n') : null, { info: value.cancelled && !this.loadErrors.length });
    } catch (err) {
      if (generation !== this.generation) return;
      this.section.dataset.state = 'error';
      if (!err.restarted || this.rowsByPosition.size === 0) this.setError(`Could not rank the checkpoint: ${err.message}`);
      else this.setError(`The engine stopped while ranking (${err.message}); the rows ranked so far are shown.`);
    } finally {
      if (this.controller === controller) this.controller = null;
      if (generation === this.generation) {
        this.running = false;
        this.$('model-progress').hidden = true;
        this.renderMethods();
        this.render();
        if (this.context.onRows) this.context.onRows(this.rows());
      }
    }
  }

  /** The checkpoint was listed: every tensor gets its (pending) row. */
  listed(listing, methods) {
    this.listing = listing;
    this.methods = methods;
    this.loadErrors = listing.load_errors;
    if (listing.load_errors.length) this.setError(listing.load_errors.map((e) => `${e.file}: ${e.error}`).join('\n'));
    const files = new Set(listing.tensors.map((t) => t.file));
    const bytes = this.files.reduce((n, f) => n + (f.size ?? f.blob?.size ?? 0), 0);
    this.$('model-target').textContent = `${groupDigits(listing.tensors.length)} tensors in ${files.size} file${files.size === 1 ? '' : 's'}${bytes ? ` (${(bytes / 2 ** 20).toFixed(1)} MiB)` : ''}`;
  }

  showProgress(fraction, label) {
    this.showProgressOf('model', fraction, label);
  }

  setError(message, options) {
    this.setErrorOf('model', message, options);
  }

  /**
   * The rows, worst first (the CLI's `--json` `tensors`): `{name, file, shape, dtype, elements,
   * byte_range, nonfinite, stats, results: [{id, kind, sqnr_db, mse, max_abs_err,
   * clipped_fraction, error?}], error?, position}`. While ranking: the rows ranked so far.
   */
  rows() {
    if (this.report) return this.report.tensors;
    return [...this.rowsByPosition.values()].sort(worstFirst(this.methods));
  }

  scheduleRender() {
    if (this.renderPending) return;
    this.renderPending = true;
    requestAnimationFrame(() => {
      this.renderPending = false;
      this.render();
    });
  }

  render() {
    const ranked = this.rowsByPosition.size > 0 || this.listing;
    this.$('model-tools').hidden = !ranked;
    for (const b of ['model-export-json', 'model-export-csv', 'model-export-svg']) this.$(b).disabled = !this.report;
    this.renderTable();
    this.draw();
    this.showDiagnosis();
  }

  /** Columns: `{key, label, title, num, value(row)}`; `value` gives what sorting compares. */
  columns() {
    const stat = (k) => (row) => (row.stats ? row.stats[k] : null);
    const cols = [
      { key: 'name', label: 'tensor', value: (r) => r.name },
      { key: 'shape', label: 'shape', value: (r) => r.shape.length * 1e15 + r.elements, text: (r) => fmtShape(r.shape) },
      { key: 'dtype', label: 'dtype', value: (r) => r.dtype },
      { key: 'elements', label: 'elements', num: true, value: (r) => r.elements, text: (r) => groupDigits(r.elements) },
    ];
    this.methods.forEach((m, i) => {
      cols.push({
        key: `m:${m}`,
        method: m,
        color: seriesColor(i),
        label: m,
        title: `SQNR (dB) of ${m}${i === 0 ? ' — the ranking is by this method' : ''}`,
        num: true,
        value: (r) => sqnrOf(r.results.find((x) => x.id === m)),
      });
    });
    for (const [key, label, title] of STATS) cols.push({ key, label, title, num: true, value: stat(key), text: (r) => fmtNum(stat(key)(r)) });
    cols.push({ key: 'nonfinite', label: 'NaN/±Inf', title: 'non-finite values (excluded from the statistics and metrics)', num: true, value: (r) => r.nonfinite.nan + r.nonfinite.pos_inf + r.nonfinite.neg_inf, text: (r) => groupDigits(r.nonfinite.nan + r.nonfinite.pos_inf + r.nonfinite.neg_inf) });
    return cols;
  }

  /** The rows in table order: the ranking (worst first), or the chosen column. */
  sortedRows() {
    const rows = [...this.rowsByPosition.values()];
    const byRank = worstFirst(this.methods);
    if (this.sort.key === 'rank') return rows.sort(byRank);
    const col = this.columns().find((c) => c.key === this.sort.key);
    if (!col) return rows.sort(byRank);
    const dir = this.sort.dir;
    return rows.sort((a, b) => {
      const va = col.value(a);
      const vb = col.value(b);
      const na = va === null || va === undefined || Number.isNaN(va);
      const nb = vb === null || vb === undefined || Number.isNaN(vb);
      if (na || nb) return na === nb ? a.position - b.position : na ? 1 : -1;
      const c = typeof va === 'string' ? va.localeCompare(vb) : va < vb ? -1 : va > vb ? 1 : 0;
      return c * dir || a.position - b.position;
    });
  }

  setSort(key) {
    if (this.sort.key === key) this.sort = { key, dir: -this.sort.dir };
    else this.sort = { key, dir: 1 };
    this.renderTable();
  }

  renderTable() {
    const table = this.$('model-table');
    const cols = this.columns();
    const listed = this.listing ? this.listing.tensors : [];
    if (!listed.length && !this.rowsByPosition.size) {
      table.replaceChildren();
      return;
    }
    const sortLabel = (c) => {
      const active = this.sort.key === c.key;
      return active ? (this.sort.dir > 0 ? 'ascending' : 'descending') : 'none';
    };
    const head = h('thead', {}, h('tr', {},
      h('th', { class: 'num', 'aria-sort': this.sort.key === 'rank' ? 'ascending' : 'none' },
        h('button', { type: 'button', class: 'sort', title: 'Worst first: by the SQNR of the first method', 'data-sort': 'rank', onclick: () => this.setSort('rank'), text: '#' })),
      cols.map((c) => h('th', { class: c.num ? 'num' : undefined, 'aria-sort': sortLabel(c), 'data-column': c.key },
        h('button', {
          type: 'button',
          class: c.method ? 'sort method' : 'sort',
          'data-sort': c.key,
          title: c.title || `Sort by ${c.label}`,
          onclick: () => this.setSort(c.key),
        }, c.color ? h('span', { class: 'swatch', style: { background: c.color } }) : null, c.label))),
      h('th', { text: 'skipped because' })));
    const body = h('tbody');
    const rank = new Map(this.rows().map((r, i) => [r.position, i + 1]));
    for (const row of this.sortedRows()) body.append(this.rowElement(row, cols, rank.get(row.position)));
    // Tensors listed but not ranked yet (or not ranked because the run was cancelled).
    for (const t of listed) {
      if (this.rowsByPosition.has(t.position)) continue;
      body.append(h('tr', { class: 'pending', 'data-tensor': t.name, 'data-file': t.file, 'data-position': t.position, 'data-status': 'pending' },
        h('td', { class: 'num muted', text: '' }),
        h('td', { class: 'name', text: t.name, title: t.file }),
        h('td', { text: fmtShape(t.shape) }),
        h('td', { text: t.dtype }),
        h('td', { class: 'num', text: groupDigits(t.elements) }),
        h('td', { colspan: cols.length - 3, class: 'muted', text: this.running ? 'waiting…' : 'not ranked' })));
    }
    table.replaceChildren(head, body);
    this.applyFilter();
  }

  rowElement(row, cols, rank) {
    const skipped = Boolean(row.error);
    const tr = h('tr', {
      'data-tensor': row.name,
      'data-file': row.file,
      'data-position': row.position,
      'data-status': skipped ? 'skipped' : 'ranked',
      class: skipped ? 'failed' : 'openable',
      tabindex: skipped ? undefined : 0,
      title: skipped ? `${row.name}: ${row.error}` : `Open ${row.name} in the observer panels`,
    });
    tr.append(h('td', { class: 'num muted', text: rank ? String(rank) : '' }));
    for (const c of cols) {
      if (c.method) {
        const r = row.results.find((x) => x.id === c.method);
        tr.append(this.sqnrCell(c.method, r, skipped));
      } else if (c.key === 'name') {
        tr.append(h('td', { class: 'name', text: row.name, title: row.file }));
      } else {
        const text = c.text ? c.text(row) : String(c.value(row) ?? '');
        tr.append(h('td', { class: c.num ? 'num' : undefined, text: skipped && c.key in (row.stats || {}) ? '' : text }));
      }
    }
    tr.append(h('td', { class: 'error', text: row.error || '' }));
    if (!skipped) {
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

  sqnrCell(method, r, skipped) {
    if (skipped) return h('td', { class: 'num sqnr', 'data-method': method });
    if (!r) return h('td', { class: 'num sqnr muted', 'data-method': method, title: `${method} does not apply (per-channel methods need two or more axes)`, text: '—' });
    if (r.error) return h('td', { class: 'num sqnr failed', 'data-method': method, 'data-error': r.error, title: `${method}: ${r.error}`, text: 'n/a' });
    const db = sqnrOf(r);
    const text = db === Infinity ? '∞' : db === null ? '—' : db.toFixed(1);
    return h('td', {
      class: 'num sqnr',
      'data-method': method,
      'data-sqnr-db': r.sqnr_db === null ? 'null' : r.sqnr_db,
      style: { background: heatColor(db === Infinity ? 100 : db) || '' },
      title: `${method}: SQNR ${fmtNum(r.sqnr_db)} dB · MSE ${fmtNum(r.mse)} · max |error| ${fmtNum(r.max_abs_err)} · clipped ${fmtNum((r.clipped_fraction || 0) * 100)} %`,
      text,
    });
  }

  applyFilter() {
    const words = this.filter.split(/\s+/).filter(Boolean);
    let shown = 0;
    let total = 0;
    for (const tr of this.$('model-table').querySelectorAll('tbody tr')) {
      total += 1;
      const name = tr.dataset.tensor.toLowerCase();
      const visible = words.every((w) => name.includes(w));
      tr.hidden = !visible;
      if (visible) shown += 1;
    }
    const ranked = [...this.rowsByPosition.values()];
    const skipped = ranked.filter((r) => r.error).length;
    const parts = [`${groupDigits(shown)} of ${groupDigits(total)} shown`];
    if (skipped) parts.push(`${skipped} skipped`);
    if (this.seconds !== undefined && this.report) parts.push(`ranked in ${this.seconds.toFixed(2)} s`);
    this.$('model-count').textContent = parts.join(' · ');
  }

  hover(position) {
    if (this.hovered === position) return;
    this.hovered = position;
    this.draw();
    this.showDiagnosis();
  }

  /**
   * The diagnosis (the engine's, in each row) of the row pointed at or focused, else of the
   * worst ranked tensor.
   */
  showDiagnosis() {
    const row = this.rowsByPosition.get(this.hovered) || this.rows().find((r) => r.diagnosis);
    this.showDiagnosisOf('model', row, row?.name);
  }

  /** Open `row`'s tensor in the observers view. */
  openRow(row) {
    if (!this.context.openTensor || row.error) return;
    const source = { checkpoint: this.files, tensor: { position: row.position, name: row.name }, name: row.file };
    this.context.openTensor(source, row);
  }

  /** The layer profile's data for the rows ranked so far. */
  profile() {
    const rows = [...this.rowsByPosition.values()];
    return layerProfile(rows, this.methods, this.hovered ?? undefined);
  }

  draw() {
    const canvas = this.$('model-chart');
    const show = this.rowsByPosition.size > 0;
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

  /** The JSON export: the CLI's `--json` document. */
  json() {
    return JSON.stringify({ tensors: this.rows(), load_errors: this.loadErrors }, null, 2);
  }

  /** The CSV export: the CLI's `--csv` document. */
  csv() {
    return modelCsv({ tensors: this.rows(), load_errors: this.loadErrors }, this.methods);
  }

  /** The layer profile as SVG. */
  svg() {
    return renderLayerProfileSvg(layerProfile(this.rows(), this.methods, undefined), {}, 1400, 460);
  }

  download(kind) {
    downloadExport(kind, this.files[0], 'model', 'model', { json: () => this.json(), csv: () => this.csv(), svg: () => this.svg() });
  }

  api() {
    /** The rows, worst first (the CLI's `model --json` tensors; while ranking, those ranked so far). */
    return { model: () => this.rows() };
  }

  unmount() {
    if (this.controller) this.controller.abort();
    if (this.resizeObserver) this.resizeObserver.disconnect();
    this.generation += 1;
  }
}
