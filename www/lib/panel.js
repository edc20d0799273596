// One observer panel: the DOM (title, numbers, quirks, error), its canvases drawn by the wasm
// plotting code (plotters on canvas), and the machine-readable contract (role="region",
// aria-label = observer id, data-* attributes that always match what the panel shows). What a
// panel shows of a report is the engine's one display function, panelView(report); nothing here
// computes a number. Shared by the page, the notebook widget and the npm package's
// renderPanel(). Every user-controlled string is set as text, never as HTML.
import { drawHistogram, drawChannels, drawCandidates, panelView, notebookResult as engineNotebookResult, granularityLabel, seriesColor as engineSeriesColor } from '../pkg/quantscope.js';

/** The colour of series `i`: the engine's palette, the one its charts draw with. */
export function seriesColor(i) {
  return engineSeriesColor(Math.max(0, Math.trunc(Number(i) || 0)));
}

/** Create an element with attributes and children (strings become text nodes). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Text nodes of `id` with a line-break opportunity after each dot (no HTML involved). */
function breakable(id) {
  const parts = [];
  id.split('.').forEach((part, i, all) => {
    parts.push(document.createTextNode(i < all.length - 1 ? `${part}.` : part));
    if (i < all.length - 1) parts.push(document.createElement('wbr'));
  });
  return parts;
}

/** A report's granularity as the page writes it ("per group"): the engine's label. */
export { granularityLabel };

/**
 * `report` with plain arrays where the engine sent it packed (Engine.observe's `packed`: long
 * per-slice arrays as Float64Array, `clip_range` as a pair of them): what JSON, the CSV export
 * and `panelView` take. A report without typed arrays is returned as it is.
 */
export function plainReport(report) {
  if (!report || typeof report !== 'object') return report;
  const plain = (v) => (ArrayBuffer.isView(v) ? Array.from(v) : v);
  let out = report;
  for (const [key, value] of Object.entries(report)) {
    const unpacked = Array.isArray(value) && value.some((v) => ArrayBuffer.isView(v)) ? value.map(plain) : plain(value);
    if (unpacked !== value) {
      if (out === report) out = { ...report };
      out[key] = unpacked;
    }
  }
  return out;
}

/**
 * What the panel of `report` shows: `panelView(report)`, the engine's one display function. A
 * failure made on this side of the engine (the call itself failed: `{observer, ok: false,
 * error}` without a report's other fields) shows its message.
 */
export function viewOf(report) {
  if (!report) return null;
  if (report.ok === false && report.family === undefined) {
    const message = report.error && report.error.message ? report.error.message : 'failed';
    return { observer: report.observer, color: 0, clip: null, grid: null, channels: null, stats: [], notes: [], error: message, slices: null };
  }
  return panelView(plainReport(report));
}

/**
 * What a notebook's `explorer.results[id]` holds for `report`: the engine's `notebookResult`
 * (the panel's numbers with the observer's state and metrics; the native Python module computes
 * the same). A failure made on this side of the engine (see `viewOf`) carries its message only.
 */
export function notebookResult(report) {
  if (report.ok === false && report.family === undefined) {
    return { ok: false, error: report.error && report.error.message ? report.error.message : 'failed', error_kind: 'internal' };
  }
  return engineNotebookResult(plainReport(report));
}

/**
 * The value of a data-* attribute: a number for per-tensor results, a JSON array otherwise
 * (`values` an array or a Float64Array).
 */
function attrValue(values, perChannel) {
  if (!values || values.length === 0) return null;
  if (!perChannel && values.length === 1) return String(values[0]);
  return JSON.stringify(Array.isArray(values) ? values : Array.from(values));
}

/**
 * Most slices whose numbers the per-slice data-* attributes list: beyond it (a per-block observer
 * on a large tensor has hundreds of thousands of blocks) they are left out and `data-slices`
 * tells how many there are; the exports carry every number.
 */
export const CONTRACT_MAX_SLICES = 65536;

const CONTRACT_KEYS = [
  'slices', 'clipMin', 'clipMax', 'gridMin', 'gridMax', 'scale', 'zeroPoint',
  'mse', 'sqnrDb', 'maxAbsErr', 'clippedFraction', 'error', 'stateReused',
];

/**
 * Set the machine-readable contract on a panel element from `report` and its `view`: role,
 * aria-label and data-slices, data-clip-min/-max, data-grid-min/-max, data-scale,
 * data-zero-point (from the view's per-slice numbers, up to CONTRACT_MAX_SLICES), data-mse,
 * data-sqnr-db, data-max-abs-err, data-clipped-fraction (from the report's metrics),
 * data-state-reused, data-status, data-error.
 */
export function setContract(el, id, report, view, status) {
  el.setAttribute('role', 'region');
  el.setAttribute('aria-label', id);
  el.dataset.observer = id;
  for (const k of CONTRACT_KEYS) delete el.dataset[k];
  el.dataset.status = status;
  if (!report || !view) return;
  if (view.error !== null && view.error !== undefined) {
    el.dataset.error = view.error;
    return;
  }
  const pc = Boolean(view.channels);
  const set = (k, v) => {
    if (v !== null && v !== undefined) el.dataset[k] = v;
  };
  const s = view.slices;
  const count = s.scale ? s.scale.length : 0;
  set('slices', String(count));
  if (count <= CONTRACT_MAX_SLICES) {
    set('clipMin', attrValue(s.clip_min, pc));
    set('clipMax', attrValue(s.clip_max, pc));
    set('gridMin', attrValue(s.grid_min, pc));
    set('gridMax', attrValue(s.grid_max, pc));
    set('scale', attrValue(s.scale, pc));
    set('zeroPoint', attrValue(s.zero_point, pc));
  }
  const m = report.metrics;
  if (m) {
    set('mse', String(m.mse));
    set('sqnrDb', m.sqnr_db === null || m.sqnr_db === undefined ? 'null' : String(m.sqnr_db));
    set('maxAbsErr', String(m.max_abs_err));
    set('clippedFraction', String(m.clipped_fraction));
  }
  el.dataset.stateReused = String(Boolean(report.state_reused));
}

/**
 * Build an empty panel for observer `spec` (a registry entry, or just `{id}`) with colour index
 * `color`. `slot` (optional) is placed between the header and the plot (the page puts the
 * parameter controls there).
 */
export function createPanel(spec, color, { slot = null, actions = [] } = {}) {
  const id = spec.id;
  const swatch = h('span', { class: 'swatch', 'aria-hidden': 'true' });
  swatch.style.setProperty('--c', seriesColor(color));
  const badge = spec.granularity ? h('span', { class: 'badge', text: granularityLabel(spec.granularity) }) : null;
  const el = h(
    'article',
    { class: 'panel' },
    h('header', { class: 'panel-head' }, swatch, h('h3', { class: 'panel-title' }, ...breakable(id)), badge, h('span', { class: 'spacer' }), ...actions),
    spec.summary ? h('p', { class: 'panel-summary', text: spec.summary }) : null,
    slot,
    h(
      'div',
      { class: 'plot' },
      h('canvas', { class: 'hist', role: 'img', 'aria-label': `Histogram with the clipping range of ${id}` }),
      h('div', { class: 'busy', hidden: true }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), h('span', { class: 'busy-label', text: 'computing…' })),
    ),
    h('canvas', { class: 'channels', hidden: true, role: 'img', 'aria-label': `Per-channel ranges of ${id}` }),
    h('p', { class: 'panel-error', role: 'alert', hidden: true }),
    h('dl', { class: 'stats' }),
    h('ul', { class: 'quirks' }),
    h('details', { class: 'why' }, h('summary', { text: 'Why this range?' }), h('div', { class: 'derivation', 'aria-live': 'polite' })),
  );
  el.style.setProperty('--c', seriesColor(color));
  el.dataset.color = String(color);
  setContract(el, id, null, null, 'pending');
  return el;
}

/**
 * Fill a panel's numbers, error and quirk notes from `report` (text only) and set its contract;
 * returns the view it shows (for drawPanel). A caller that drew first passes the `view` it drew.
 */
export function fillPanel(el, report, view = viewOf(report)) {
  const stats = el.querySelector('.stats');
  const error = el.querySelector('.panel-error');
  const quirks = el.querySelector('.quirks');
  stats.replaceChildren();
  quirks.replaceChildren();
  const notes = view.notes || [];
  // The first quirk is always shown; the others one click away, so panels stay comparable.
  notes.slice(0, 1).forEach((n) => quirks.append(h('li', { text: n })));
  if (notes.length > 1) {
    const more = h('details', { class: 'more-quirks' }, h('summary', { text: `${notes.length - 1} more reproduced framework quirk${notes.length > 2 ? 's' : ''}` }), h('ul', {}, ...notes.slice(1).map((n) => h('li', { text: n }))));
    quirks.append(h('li', { class: 'more' }, more));
  }
  quirks.hidden = notes.length === 0;
  const failed = view.error !== null && view.error !== undefined;
  error.textContent = failed ? view.error : '';
  error.hidden = !failed;
  stats.hidden = failed;
  if (!failed) {
    for (const [k, v] of view.stats) {
      stats.append(h('div', { class: 'row' }, h('dt', { text: k }), h('dd', { text: v })));
    }
  }
  // The registry's granularity is the default's; the configuration decides (llm-compressor's
  // strategy, torchao's granularity), and the report says what it was.
  const badge = el.querySelector('.panel-head .badge');
  if (badge && report.granularity) badge.textContent = granularityLabel(report.granularity);
  const status = failed ? 'error' : report.metrics_pending ? 'busy' : 'ready';
  setContract(el, report.observer, report, view, status);
  return view;
}

/**
 * Show a derivation (the engine's `StepView[]`, from `Engine.explain({id, view: true})` or
 * `Engine.explainFormat`) in the `.why` disclosure inside `el`: each step's title, formula,
 * values, candidate table (the pick marked) and the framework source it reproduces; `empty` says
 * why there is none. Text only; the numbers are the engine's.
 */
export function renderDerivation(el, steps, empty = 'No derivation: the observer has no result yet.', { onPreview = null } = {}) {
  const box = el.querySelector('.why .derivation');
  if (!box) return;
  if (!steps || steps.length === 0) {
    box.replaceChildren(h('p', { class: 'why-empty', text: empty }));
    el.dataset.derivationSteps = '0';
    return;
  }
  box.replaceChildren(
    h(
      'ol',
      { class: 'steps' },
      ...steps.map((step) =>
        h(
          'li',
          { class: 'step' },
          h('h4', { text: step.title }),
          h('p', { class: 'formula', text: step.formula }),
          step.values.length ? h('dl', { class: 'values' }, ...step.values.map(([name, value]) => h('div', { class: 'row' }, h('dt', { text: name }), h('dd', { text: value })))) : null,
          step.candidates?.chart ? candidateChart(step.candidates.chart, onPreview) : null,
          step.candidates ? candidateTable(step.candidates) : null,
          h('p', { class: 'source', text: `source: ${step.source}` }),
        ),
      ),
    ),
  );
  el.dataset.derivationSteps = String(steps.length);
  // Drawn once in the document (the canvases' sizes come from the layout).
  for (const canvas of box.querySelectorAll('canvas.candidates-chart')) canvas.redraw();
}

/**
 * A search's candidates as a chart (the engine draws it): every candidate's loss, the pick, and
 * the best single threshold on this tensor. Pointing at a candidate (or moving with the arrow
 * keys) emphasises it and calls `onPreview([lo, hi])` with its clipping range when the candidates
 * are ranges (the panel previews it on its histogram), `onPreview(null)` on leaving.
 */
function candidateChart(chart, onPreview) {
  const ranged = Boolean(chart.ranges);
  const canvas = h('canvas', {
    class: 'candidates-chart',
    role: 'img',
    tabindex: 0,
    'aria-label': `${chart.loss_label} of each of ${chart.points.length} candidates against ${chart.x_label}; the pick is #${chart.picked}${ranged ? '; arrow keys preview a candidate\'s clipping on the histogram' : ''}`,
  });
  let hovered = null;
  let mapping = null;
  canvas.redraw = () => {
    const ratio = fitCanvas(canvas);
    try {
      mapping = drawCandidates(canvas, chart, hovered ?? undefined, { pixelRatio: ratio });
      canvas.dataset.drawn = String(Number(canvas.dataset.drawn || 0) + 1);
    } catch (err) {
      console.error(err);
    }
  };
  const show = (i) => {
    if (i === hovered) return;
    hovered = i;
    canvas.dataset.hovered = i === null ? '' : String(i);
    canvas.redraw();
    if (onPreview) onPreview(i !== null && ranged ? chart.ranges[i] : null);
  };
  /** The candidate nearest the pointer's x (finite points only). */
  const nearest = (event) => {
    if (!mapping) return null;
    const [left, right, lo, hi] = mapping;
    const px = event.offsetX * (canvas.width / (canvas.clientWidth || canvas.width));
    const x = lo + ((px - left) / (right - left || 1)) * (hi - lo);
    let best = null;
    chart.points.forEach(([cx, loss], i) => {
      if (cx === null || loss === null || !Number.isFinite(cx) || !Number.isFinite(loss)) return;
      if (best === null || Math.abs(cx - x) < Math.abs(chart.points[best][0] - x)) best = i;
    });
    return best;
  };
  canvas.addEventListener('pointermove', (e) => show(nearest(e)));
  canvas.addEventListener('pointerleave', () => show(null));
  canvas.addEventListener('blur', () => show(null));
  canvas.addEventListener('keydown', (e) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
    if (!step) return;
    e.preventDefault();
    const from = hovered ?? chart.picked;
    show(Math.min(chart.points.length - 1, Math.max(0, from + step)));
  });
  return canvas;
}

/** A search's candidate table (the engine's CandidatesView): the rows shown, the pick marked. */
function candidateTable(table) {
  const caption = `${table.total} candidates; picked #${table.picked} by ${table.rule}`;
  const head = h('tr', {}, h('th', { scope: 'col', text: '#' }), ...table.columns.map((c) => h('th', { scope: 'col', text: c })));
  const rows = table.rows.map((row) => {
    if (!row) return h('tr', { class: 'gap' }, h('td', { colspan: table.columns.length + 1, text: '…' }));
    const [index, cells, picked] = row;
    return h('tr', { class: picked ? 'picked' : null, 'aria-current': picked ? 'true' : null }, h('td', { text: String(index) }), ...cells.map((c) => h('td', { text: c })));
  });
  return h('table', { class: 'candidates' }, h('caption', { text: caption }), h('thead', {}, head), h('tbody', {}, ...rows));
}

/**
 * A canvas's CSS box `{width, height}` (reading it lays the page out if the DOM changed since the
 * last frame: measure before changing the DOM, then pass the sizes to `fitCanvas`/`drawPanel`).
 */
export function cssSize(canvas) {
  return { width: canvas.clientWidth || canvas.parentElement?.clientWidth || 480, height: canvas.clientHeight };
}

/** The CSS sizes of a panel's canvases, for `drawPanel(…, {sizes})` after its DOM is updated. */
export function measurePanel(el) {
  return { hist: cssSize(el.querySelector('canvas.hist')), channels: cssSize(el.querySelector('canvas.channels')) };
}

/**
 * Size a canvas's backing store to its CSS box (measured now, or `size` measured before) times
 * the device pixel ratio.
 */
export function fitCanvas(canvas, cssHeight, size = cssSize(canvas)) {
  const ratio = Math.min(3, Math.max(1, globalThis.devicePixelRatio || 1));
  const w = Math.max(120, Math.round(size.width || 480));
  const hpx = cssHeight || Math.max(80, Math.round(size.height || 220));
  const W = Math.round(w * ratio);
  const H = Math.round(hpx * ratio);
  if (canvas.width !== W) canvas.width = W;
  if (canvas.height !== H) canvas.height = H;
  return ratio;
}

/**
 * Draw a panel's canvases from its `view` (fillPanel's; null draws the bare histogram): the
 * histogram `hist` ({lo, hi, counts}) with the clipping range, grid extent and clipped values,
 * and the per-channel chart when the view has channels.
 */
export function drawPanel(el, view, hist, { logCounts = false, sizes = null } = {}) {
  const canvas = el.querySelector('canvas.hist');
  const color = Number(el.dataset.color || 0);
  const ratio = fitCanvas(canvas, undefined, sizes?.hist);
  const style = { logCounts, sqnr: false, pixelRatio: ratio };
  // The histogram draws the clipping range and the grid's: only they cross into the drawing
  // code, not the per-slice numbers (a block observer may have a million).
  const shown = { observer: el.dataset.observer, color, clip: null, grid: null };
  if (view && !view.error) Object.assign(shown, { clip: view.clip, grid: view.grid });
  if (hist) drawHistogram(canvas, hist.lo, hist.hi, hist.counts, shown, style);
  const ch = el.querySelector('canvas.channels');
  if (view && !view.error && view.channels) {
    ch.hidden = false;
    // A chart hidden when measured had no box: measure it now it is shown.
    const r = fitCanvas(ch, undefined, sizes?.channels.height ? sizes.channels : undefined);
    drawChannels(ch, view.channels, color, { ...style, pixelRatio: r });
  } else {
    ch.hidden = true;
  }
  el.dataset.drawn = String(Number(el.dataset.drawn || 0) + 1);
}
