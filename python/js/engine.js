// The only place the notebook widget touches quantscope's JS engine (`www/lib`, `www/ui`): every
// engine function the widget uses is re-exported from here, so re-pointing the widget at a new
// engine façade is a change to this file alone.
//
// The WebAssembly module is inlined (base64, by the bundler's `base64` loader) because a widget's
// ES module cannot fetch a file next to itself in Jupyter: `import.meta.url` of a widget module is
// a blob: URL or resolves against the server root. The module is compiled and instantiated once
// per page: the first widget module evaluated on a page publishes its engine on `globalThis`
// under a versioned key, and every later widget module (anywidget may evaluate the module once
// per widget) reuses that engine instead of instantiating its own copy.
import wasmBase64 from '../../www/pkg/quantscope_bg.wasm';
import * as lib from '../../www/lib/index.js';
import { createPanel, fillPanel, drawPanel, fitCanvas, seriesColor, h } from '../../www/lib/panel.js';
import { fmtNum, fmtShape, groupDigits } from '../../www/lib/format.js';
import { buildControls } from '../../www/ui/controls.js';
import { drawCurve } from '../../www/pkg/quantscope.js';

/** The key of the page-wide engine; the bundler replaces `__QUANTSCOPE_VERSION__`. */
const KEY = Symbol.for(`quantscope.widget.engine@${__QUANTSCOPE_VERSION__}`);

/** Decode the inlined module (base64 → bytes). */
function wasmBytes() {
  const text = atob(wasmBase64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i += 1) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/** The functions of this module instance that make up an engine. */
const api = {
  loadTensor: lib.loadTensor,
  observe: lib.observe,
  observers: lib.observers,
  errorCurve: lib.errorCurve,
  renderSvg: lib.renderSvg,
  version: lib.version,
  createPanel,
  fillPanel,
  drawPanel,
  fitCanvas,
  seriesColor,
  h,
  fmtNum,
  fmtShape,
  groupDigits,
  buildControls,
  drawCurve,
};

/**
 * The page's engine: resolves to `{...api, instantiations}` once the WebAssembly module is
 * instantiated. `globalThis[KEY].instantiations` counts instantiations on this page (always 1).
 */
export function engine() {
  let shared = globalThis[KEY];
  if (!shared) {
    shared = { instantiations: 0, ready: null };
    shared.ready = lib.init(wasmBytes()).then(() => {
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
