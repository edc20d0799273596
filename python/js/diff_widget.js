// `quantscope.Diff` in a notebook: the explorer page's compare view (www/ui/compare.js) mounted
// as a list of views (www/ui/view.js) on the widget's engine (a LocalEngine in this thread),
// comparing the files Python sent as binary buffers. The report goes back to Python
// (`diff.report`), exactly `quantscope diff --json`.
//
// Model (synced with Python's `quantscope.Diff`):
//   _original, _original_names    the original checkpoint's files (bytes) and names, in order
//   _quantized, _quantized_names  the quantized checkpoint's
//   _imatrix, _imatrix_name       the importance matrix (empty: none)
//   report, state, error          written here once a comparison ends
import { Views } from '../../www/ui/view.js';
import { CompareView } from '../../www/ui/compare.js';
import { syncedBytes } from './synced.js';

let displays = 0;

/** Draw a `quantscope.Diff` into `el` with the page-wide engine `qs`; returns the clean-up. */
export function renderDiff({ model, el }, qs) {
  const { h } = qs;
  el.classList.add('quantscope-widget');
  const mount = h('div', { class: 'qs-view' });
  el.replaceChildren(mount);
  displays += 1;
  const engine = qs.createEngine();
  const view = new CompareView();
  const context = {
    prefix: `qsd${displays}-`,
    inputs: false,
    onRows: () => {
      const state = view.section.dataset.state;
      el.dataset.status = state;
      model.set('report', view.report || { pairs: view.sortedRows(), unpaired: { original: [], quantized: [] }, lint: [], files: [] });
      model.set('state', state);
      const alert = view.$('compare-error');
      model.set('error', state === 'error' && !alert.hidden ? alert.textContent : '');
      model.save_changes();
    },
  };
  const views = new Views([{ view, root: mount, context }]).mount(engine);
  const side = (bytesKey, namesKey) => {
    const names = model.get(namesKey) || [];
    return (model.get(bytesKey) || []).map((b, i) => ({ bytes: syncedBytes(b, names[i] || `file ${i}`), name: names[i] || `file${i}` }));
  };
  const run = () => {
    let files;
    try {
      const imatrix = side('_imatrix', '_imatrix_name');
      files = { original: side('_original', '_original_names'), quantized: side('_quantized', '_quantized_names'), imatrix: imatrix[0] || null };
    } catch (err) {
      model.set('error', err.message);
      model.set('state', 'error');
      model.save_changes();
      return;
    }
    el.dataset.status = 'running';
    view.setFiles(files);
  };
  const handlers = [['change:_original', run], ['change:_quantized', run], ['change:_imatrix', run]];
  for (const [event, fn] of handlers) model.on(event, fn);
  run();
  return () => {
    for (const [event, fn] of handlers) model.off(event, fn);
    views.unmount();
    engine.engine.free();
  };
}
