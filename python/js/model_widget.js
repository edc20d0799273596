// `quantscope.Model` in a notebook: the explorer page's model view (www/ui/model.js) mounted as a
// list of views (www/ui/view.js) on the widget's engine (a LocalEngine in this thread), ranking the
// checkpoint files Python sent as binary buffers. The rows go back to Python (`model.rows`),
// exactly the `tensors` of `quantscope model --json`.
//
// Model (synced with Python's `quantscope.Model`):
//   _files, _names  the checkpoint's files (bytes) and their names, in order
//   methods         observer ids and format labels (empty: the defaults)
//   rows, load_errors, state, error   written here once a ranking ends
import { Views } from '../../www/ui/view.js';
import { ModelView } from '../../www/ui/model.js';
import { syncedBytes } from './synced.js';

let displays = 0;

/** Draw a `quantscope.Model` into `el` with the page-wide engine `qs`; returns the clean-up. */
export function renderModel({ model, el }, qs) {
  const { h } = qs;
  el.classList.add('quantscope-widget');
  const mount = h('div', { class: 'qs-view' });
  el.replaceChildren(mount);
  displays += 1;
  const engine = qs.createEngine();
  const view = new ModelView();
  const context = {
    prefix: `qsm${displays}-`,
    inputs: false,
    onRows: (rows) => {
      el.dataset.status = view.section.dataset.state;
      model.set('rows', rows);
      model.set('load_errors', view.loadErrors || []);
      model.set('state', view.section.dataset.state);
      const alert = view.$('model-error');
      model.set('error', view.section.dataset.state === 'error' && !alert.hidden ? alert.textContent : '');
      model.save_changes();
    },
  };
  // The page's list mechanism, with one view (the model view ranks files, not the selected tensor).
  const views = new Views([{ view, root: mount, context }]).mount(engine);
  const run = () => {
    const names = model.get('_names') || [];
    let files;
    try {
      files = (model.get('_files') || []).map((b, i) => ({ bytes: syncedBytes(b, names[i] || `file ${i}`), name: names[i] || `file${i}` }));
    } catch (err) {
      model.set('error', err.message);
      model.set('state', 'error');
      model.save_changes();
      return;
    }
    el.dataset.status = 'running';
    view.setMethods(model.get('methods') || []);
    view.setFiles(files);
  };
  const handlers = [['change:_files', run], ['change:methods', run]];
  for (const [event, fn] of handlers) model.on(event, fn);
  run();
  return () => {
    for (const [event, fn] of handlers) model.off(event, fn);
    views.unmount();
    engine.engine.free();
  };
}
