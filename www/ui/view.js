// What every view of the explorer (observers, formats, AdaRound) shares: the root it renders
// into, the engine it calls (anything with `call(method, args, {onProgress, signal})`), and
// element ids made unique by a prefix — '' in the page, one per copy where several copies share
// a page (notebook widgets).
export class View {
  /** Remember where the view lives; `context.prefix` prefixes its element ids. */
  attach(root, engine, context = {}) {
    this.root = root;
    this.engine = engine;
    this.context = context;
    this.prefix = context.prefix || '';
  }

  /** The element id of `name`. */
  id(name) {
    return this.prefix + name;
  }

  /** The view's element with id `name`. */
  $(name) {
    return this.root.querySelector(`#${CSS.escape(this.id(name))}`);
  }
}
