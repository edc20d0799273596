// The tensor view: the selected tensor's facts (file, tensor, shape, dtype, values, batches,
// NaN/±Inf, range, mean ± std) exactly as the engine states them (`TensorSummary.facts`, written
// by quantscope::explorer), one `dt`/`dd` pair each. The page and the notebook widget mount it.
import { h } from '../lib/panel.js';
import { View } from './view.js';

/** How a fact's kind is shown. */
const CLASS = { name: 'name', warning: 'warn' };

export class TensorView extends View {
  /** Render into `root` (a `dl`); `context.prefix` is unused (the view has no ids of its own). */
  mount(root, engine, context = {}) {
    this.attach(root, engine, context);
    this.root.replaceChildren();
    return this;
  }

  tensorChanged(summary) {
    const facts = summary ? summary.facts : [];
    this.root.replaceChildren(...facts.map((f) => h('div', {}, h('dt', { text: f.label }), h('dd', { class: CLASS[f.kind], text: f.value }))));
  }
}
