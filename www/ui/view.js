// The View interface every view of the explorer implements (the tensor's facts, observers,
// formats, AdaRound, model), and `Views`, the one list of views a page or a notebook widget
// mounts and drives. A view renders its own markup into the root it is given and calls the engine
// (anything with `call(method, args, {onProgress, signal})`: the page's worker pool, or a
// notebook's LocalEngine); element ids are made unique by a prefix — '' in the page, one per copy
// where several copies share a page (notebook widgets).
//
// Adding a view to the page: a module extending View, one entry in app.js's list, its section in
// www/CONTRACT.md and its end-to-end test. Nothing else names it.
export class View {
  /**
   * Render the view into `root` and keep `engine`; `context` holds what the view needs from its
   * host (the registry, `prefix`, callbacks, …; each view documents its own). Returns the view.
   * Every view implements it (calling `attach` first).
   */
  mount(root, engine, context = {}) {
    throw new Error(`${this.constructor.name} does not render itself: a view implements mount()`);
  }

  /** Remember where the view lives; `context.prefix` prefixes its element ids. */
  attach(root, engine, context = {}) {
    this.root = root;
    this.engine = engine;
    this.context = context;
    this.prefix = context.prefix || '';
  }

  /**
   * A new tensor is selected (the engine dropped every run). `summary` is the engine's
   * TensorSummary (null when nothing could be loaded), `hist` the display histogram, `files` the
   * loaded files' infos (with `source`, the File each was read from, in the page).
   */
  tensorChanged(summary, hist, files) {}

  /**
   * The engine was restarted after a crash with the same tensor selected (calls in flight were
   * lost): ask again for whatever the view shows.
   */
  refresh() {}

  /**
   * The part of the page's shareable state this view keeps, as keys of one object that the URL
   * encodes (www/ui/state.js): e.g. `{formats: [...]}`. Views with nothing to keep return `{}`.
   */
  state() {
    return {};
  }

  /** Apply the keys of `state` this view keeps (the whole page state is given; others ignored). */
  setState(state) {}

  /** True while the view waits for the engine (the page's `idle()` waits for it). */
  get busy() {
    return false;
  }

  /**
   * The members this view adds to the page's `window.quantscope` (documented in
   * www/CONTRACT.md). `page` gives `{updateUrl, idle}`.
   */
  api(page) {
    return {};
  }

  /** The view's root is about to go: stop timers, observers and requests. */
  unmount() {}

  /** The element id of `name`. */
  id(name) {
    return this.prefix + name;
  }

  /** The view's element with id `name`. */
  $(name) {
    return this.root.querySelector(`#${CSS.escape(this.id(name))}`);
  }

  /**
   * Show the progress bar `<key>-progress` (with `<key>-progress-bar` and
   * `<key>-progress-label`) at `fraction`, labelled.
   */
  showProgressOf(key, fraction, label) {
    this.$(`${key}-progress`).hidden = false;
    this.$(`${key}-progress-bar`).value = fraction;
    this.$(`${key}-progress-label`).textContent = `${label} — ${Math.round(fraction * 100)} %`;
  }

  /**
   * Show in `<key>-diagnosis` the engine's diagnosis of `row` (a model or diff row: its
   * `diagnosis`) after `name`, with `data-position` its position; empty without one.
   */
  showDiagnosisOf(key, row, name) {
    const el = this.$(`${key}-diagnosis`);
    const shown = row && row.diagnosis;
    el.textContent = shown ? `${name}: ${row.diagnosis}` : '';
    if (shown) el.dataset.position = String(row.position);
    else delete el.dataset.position;
  }

  /** Show `message` in `<key>-error` (hidden when empty; `info`: not an error). */
  setErrorOf(key, message, { info = false } = {}) {
    const el = this.$(`${key}-error`);
    el.classList.toggle('info', info);
    el.textContent = message || '';
    el.hidden = !message;
  }
}

/**
 * One list of views, mounted and driven together. An entry is `{view, root, context}`: `root`
 * the element it renders into (or a function `() => Element`, called at mount), `context` its
 * context (or a function of the list's shared context, called at mount).
 */
export class Views {
  constructor(entries) {
    this.entries = entries;
  }

  /** The views, in list order. */
  get list() {
    return this.entries.map((e) => e.view);
  }

  /** Mount every view on `engine`; `shared` is given to context functions. */
  mount(engine, shared = {}) {
    for (const e of this.entries) {
      const root = typeof e.root === 'function' ? e.root() : e.root;
      const context = typeof e.context === 'function' ? e.context(shared) : e.context || {};
      e.view.mount(root, engine, context);
    }
    return this;
  }

  tensorChanged(summary, hist, files) {
    for (const v of this.list) v.tensorChanged(summary, hist, files);
  }

  refresh() {
    for (const v of this.list) v.refresh();
  }

  /** Every view's part of the state, in one object. */
  state() {
    return Object.assign({}, ...this.list.map((v) => v.state()));
  }

  setState(state) {
    for (const v of this.list) v.setState(state);
  }

  get busy() {
    return this.list.some((v) => v.busy);
  }

  /** Every view's `window.quantscope` members, in one object. */
  api(page) {
    return Object.assign({}, ...this.list.map((v) => v.api(page)));
  }

  unmount() {
    for (const v of this.list) v.unmount();
  }
}
