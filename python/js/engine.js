// The only place the notebook widget touches quantscope's JS code (`www/lib`, `www/ui`): the
// engine façade (an Engine in this thread behind rpc.js's LocalEngine) and the page's views (the
// tensor's facts and the observers view, mounted as a list like the page's), so the facts, panels,
// sliders and curve in a notebook are the page's own.
//
// The WebAssembly module is inlined (base64, by the bundler's `base64` loader) because a widget's
// ES module cannot fetch a file next to itself in Jupyter: `import.meta.url` of a widget module is
// a blob: URL or resolves against the server root. The module is compiled and instantiated once
// per page: the first widget module evaluated on a page publishes its engine on `globalThis`
// under a versioned key, and every later widget module (anywidget may evaluate the module once
// per widget) reuses that engine instead of instantiating its own copy.
import wasmBase64 from '../../www/pkg/quantscope_bg.wasm';
import { init, version } from '../../www/lib/index.js';
import { Engine, memberOf } from '../../www/lib/engine.js';
import { LocalEngine } from '../../www/lib/rpc.js';
import { Views } from '../../www/ui/view.js';
import { TensorView } from '../../www/ui/tensor.js';
import { ObserversView } from '../../www/ui/observers.js';
import { h, notebookResult, viewOf } from '../../www/lib/panel.js';
import { syncedBytes } from './synced.js';

/** The key of the page-wide engine; the bundler replaces `__QUANTSCOPE_VERSION__`. */
const KEY = Symbol.for(`quantscope.widget.engine@${__QUANTSCOPE_VERSION__}`);

/** Decode the inlined module (base64 → bytes). */
const wasmBytes = () => syncedBytes(wasmBase64, 'the inlined WebAssembly module');

/** What a widget uses, from this module instance. */
const api = {
  /** A new engine (its own session) behind the `call()` interface of the page's worker. */
  createEngine: () => new LocalEngine(new Engine()),
  Views,
  TensorView,
  ObserversView,
  memberOf,
  notebookResult,
  viewOf,
  version,
  h,
};

/**
 * The page's engine: resolves to `{...api, shared}` once the WebAssembly module is
 * instantiated. `globalThis[KEY].instantiations` counts instantiations on this page (always 1).
 */
export function engine() {
  let shared = globalThis[KEY];
  if (!shared) {
    shared = { instantiations: 0, ready: null };
    shared.ready = init(wasmBytes()).then(() => {
      shared.instantiations += 1;
      return { ...api, shared };
    });
    // A failed start is not cached: the next widget tries again (and reports its own error).
    shared.ready.catch(() => {
      if (globalThis[KEY] === shared) delete globalThis[KEY];
    });
    globalThis[KEY] = shared;
  }
  return shared.ready;
}
