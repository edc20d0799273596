// The quantscope notebook widget (anywidget): the explorer page's observers view (side-by-side
// panels, their parameter controls generated from the registry, the error-versus-clipping
// curve) for one tensor or a list of calibration batches sent by Python as binary buffers.
//
// Model (synced with Python's `quantscope.Explorer`):
//   _batches  list of file bytes (.npy/.npz/.safetensors), one per calibration batch, in order
//   _names    their names;  member  the tensor to take from .npz/.safetensors files (null: first)
//   observers observer ids shown (empty: PyTorch's defaults, written back)
//   params    {observer id: {parameter: value}}, written by the controls, read by the view
//   bits, scheme, log_counts  the error curve's integer grid and the histograms' count scale
//   results   {observer id: {ok, error, scale, zero_point, min_val, max_val, clip_min, clip_max,
//             grid_min, grid_max, metrics, ...}} written here after every computation
//   summary   the tensor's shape, dtype, element count, range and non-finite counts (the engine's
//             TensorSummary; the widget shows its facts as the page does)
//   error     why the data could not be loaded ('' when it could)
//   available_observers  every observer id of the engine
//
// One Controller per model owns the engine (a LocalEngine) and the loaded tensor; each displayed
// copy of the widget mounts its own list of the page's views (the tensor's facts and the
// observers view, www/ui/view.js's Views) on that engine and keeps it in step with the model both
// ways.
import { engine } from './engine.js';
import { renderModel } from './model_widget.js';
import { renderDiff } from './diff_widget.js';
import { syncedBytes } from './synced.js';

/** Results and parameters go back to Python at most this often while a slider moves. */
const PUBLISH_DELAY_MS = 40;

/** One per model: the engine, the loaded tensor, and what goes back to Python. */
class Controller {
  constructor(model, qs) {
    this.model = model;
    this.qs = qs;
    this.engine = qs.createEngine();
    this.registry = this.engine.engine.registry();
    this.error = '';
    this.summary = null;
    this.hist = null;
    this.files = [];
    this.loads = 0;
    this.displays = new Set();
    /** The display whose reports Python sees (the last one that computed). */
    this.reporter = null;
    this.publishTimer = 0;
    const onData = () => this.reload();
    // A change from Python reaches every display's view (only the part that changed).
    const onModel = (part) => () => {
      const st = this.modelState();
      for (const d of this.displays) d.views.setState({ [part]: st[part] });
    };
    this.handlers = [
      ['change:_batches', onData],
      ['change:_names', onData],
      ['change:member', onData],
      ['change:observers', onModel('observers')],
      ['change:params', onModel('params')],
      ['change:bits', onModel('curve')],
      ['change:scheme', onModel('curve')],
      ['change:log_counts', onModel('logCounts')],
    ];
    for (const [event, fn] of this.handlers) model.on(event, fn);
    this.reload();
  }

  /** What the model asks the observers view to show. */
  modelState() {
    const m = this.model;
    const ids = m.get('observers');
    const params = m.get('params');
    return {
      observers: Array.isArray(ids) ? ids : [],
      params: params && typeof params === 'object' ? params : {},
      curve: { bits: Number(m.get('bits')) || 8, scheme: m.get('scheme') === 'symmetric' ? 'symmetric' : 'affine' },
      logCounts: Boolean(m.get('log_counts')),
    };
  }

  /** (Re)load the tensor from the synced buffers; every display's view runs on it. */
  async reload() {
    const load = ++this.loads;
    this.error = '';
    this.summary = null;
    this.hist = null;
    try {
      const raw = this.model.get('_batches') || [];
      if (raw.length === 0) throw new Error('no data: pass an array, a list of arrays or a .npy/.npz/.safetensors path');
      const given = this.model.get('_names') || [];
      const files = raw.map((b, i) => syncedBytes(b, given[i] || `batch ${i}`));
      // Several batches are named batch[0] … batch[n − 1].
      const names = files.length > 1 ? files.map((_, i) => `batch[${i}]`) : [given[0] || 'tensor.npy'];
      const member = this.model.get('member');
      const infos = await this.engine.call('load', { files, names });
      const batches = infos.map((info, i) => ({ file: i, member: this.qs.memberOf(info, member) }));
      const { summary, hist } = await this.engine.call('select', { selection: { batches, split: null } });
      if (load !== this.loads) return;
      this.files = infos;
      this.summary = summary;
      this.hist = hist;
    } catch (err) {
      if (load !== this.loads) return;
      this.error = err && err.message ? err.message : String(err);
    }
    for (const d of this.displays) d.tensorChanged();
    this.schedulePublish();
  }

  /** Display `d`'s view changed: its state goes to the model, its reports to Python. */
  fromView(d, what) {
    if (what === 'results') {
      this.reporter = d;
      this.schedulePublish();
      return;
    }
    const st = d.views.state();
    const params = { ...(this.model.get('params') || {}) };
    for (const id of st.observers) {
      if (Object.keys(st.params[id]).length) params[id] = st.params[id];
      else delete params[id];
    }
    this.model.set('observers', st.observers);
    this.model.set('params', params);
    this.model.set('bits', st.curve.bits);
    this.model.set('scheme', st.curve.scheme);
    this.model.set('log_counts', st.logCounts);
    this.model.save_changes();
  }

  schedulePublish() {
    clearTimeout(this.publishTimer);
    this.publishTimer = setTimeout(() => this.publish(), PUBLISH_DELAY_MS);
  }

  /** Send results, summary, error (and the observers shown by default) to Python. */
  publish() {
    const m = this.model;
    const out = {};
    const view = this.reporter && this.displays.has(this.reporter) ? this.reporter.view : null;
    if (view && this.summary) {
      const reports = view.results();
      // What Python sees of a report: the engine's notebookResult, which the native module
      // computes alike (Explorer fills `results` with it at once, before the page has computed).
      for (const id of view.observers) if (reports[id]) out[id] = this.qs.notebookResult(reports[id]);
      // Python named no observers: the defaults shown go back so that Python sees them.
      if ((m.get('observers') || []).length === 0 && view.observers.length) m.set('observers', [...view.observers]);
    }
    m.set('results', out);
    const s = this.summary;
    m.set('summary', s ? { name: s.name, shape: s.shape, dtype: s.dtype, elements: s.elements, batches: s.batches, nonfinite: s.nonfinite, min: s.min, max: s.max, mean: s.mean, std: s.std } : {});
    m.set('error', this.error);
    const ids = this.registry.observers.map((o) => o.id);
    if ((m.get('available_observers') || []).length !== ids.length) m.set('available_observers', ids);
    m.save_changes();
  }

  destroy() {
    clearTimeout(this.publishTimer);
    for (const [event, fn] of this.handlers) this.model.off(event, fn);
    this.loads += 1;
    this.engine.engine.free();
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

/** Element id prefixes: unique per displayed copy on the page. */
let displays = 0;

/**
 * One displayed copy of the widget: the page's tensor view (the tensor's facts) in its head, an
 * error line, and the page's observers view, mounted and driven as one list of views.
 */
class Display {
  constructor(root, controller) {
    const { h, Views, TensorView, ObserversView } = controller.qs;
    this.c = controller;
    this.root = root;
    root.classList.add('quantscope-widget');
    const facts = h('dl', { class: 'facts' });
    this.alert = h('p', { class: 'alert', role: 'alert', hidden: true });
    const mount = h('div', { class: 'qs-view' });
    root.replaceChildren(h('div', { class: 'qs-head' }, h('strong', { class: 'qs-brand', text: 'quantscope' }), facts), this.alert, mount);
    displays += 1;
    const count = controller.registry.observers.length;
    /** The observers view: its reports are what Python sees. */
    this.view = new ObserversView();
    this.views = new Views([
      { view: new TensorView(), root: facts },
      {
        view: this.view,
        root: mount,
        context: {
          registry: controller.registry,
          prefix: `qs${displays}-`,
          unknown: (id) => `unknown observer ${JSON.stringify(id)}: explorer.available_observers lists the ${count} observers`,
          onChange: (what) => controller.fromView(this, what),
        },
      },
    ]).mount(controller.engine);
    this.views.setState(controller.modelState());
    this.tensorChanged();
  }

  /** The controller loaded (or failed to load: no summary, the previous panels stay) the data. */
  tensorChanged() {
    const c = this.c;
    this.root.dataset.status = c.error ? 'error' : c.summary ? 'ready' : 'loading';
    this.alert.hidden = !c.error;
    this.alert.textContent = c.error ? `quantscope could not load the data: ${c.error}` : '';
    this.views.tensorChanged(c.summary, c.hist, c.files);
  }

  destroy() {
    this.views.unmount();
    this.c.displays.delete(this);
  }
}

/**
 * anywidget: one controller per model, created as soon as the model exists; the returned
 * clean-up frees the engine's WebAssembly memory when the model goes away.
 */
async function initialize({ model }) {
  const qs = await engine();
  if (model.get('_view') === 'model' || model.get('_view') === 'diff') return undefined;
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
  // `quantscope.Model` and `quantscope.Diff` share this module (and its one WebAssembly instance).
  if (model.get('_view') === 'model') return renderModel({ model, el }, qs);
  if (model.get('_view') === 'diff') return renderDiff({ model, el }, qs);
  const controller = controllerOf(model, qs);
  const display = new Display(el, controller);
  controller.displays.add(display);
  // The first results go to Python even when no model change follows.
  controller.schedulePublish();
  return () => display.destroy();
}

export default { initialize, render };
