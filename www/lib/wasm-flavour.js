// Which WebAssembly build to load: the SIMD128 one where the engine supports WebAssembly SIMD
// (every current browser, Node >= 16, Deno), else the baseline one. Both are built by
// scripts/build-web.sh from the same sources and compute identical results; they share the
// wasm-bindgen JS glue in ../pkg/quantscope.js.
//
// The engine façade imports this module: `wasmUrl()` (or `wasmFileName()`) names the file to
// instantiate, and `loadedFlavour(wasm)` reports which build is running (the module's own
// `wasmFlavour()` export).

/** A minimal module using one SIMD instruction (as wasm-feature-detect's `simd` test). */
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11,
]);

/** True when this engine validates WebAssembly SIMD. */
export function simdSupported() {
  try {
    return typeof WebAssembly === 'object' && WebAssembly.validate(SIMD_PROBE);
  } catch {
    return false;
  }
}

/** The file name of the build for this engine. */
export function wasmFileName() {
  return simdSupported() ? 'quantscope_bg.wasm' : 'quantscope_bg.baseline.wasm';
}

/** The URL of the build for this engine, next to the wasm-bindgen glue. */
export function wasmUrl() {
  return new URL(`../pkg/${wasmFileName()}`, import.meta.url);
}

let loaded = null;

/** Record the initialised module (the wasm-bindgen glue's exports) so `loadedFlavour` can ask it. */
export function markLoaded(wasmExports) {
  loaded = wasmExports;
}

/** `"simd128"` or `"baseline"`: the build that was loaded (null before initialisation). */
export function loadedFlavour(wasmExports = loaded) {
  return wasmExports && typeof wasmExports.wasmFlavour === 'function' ? wasmExports.wasmFlavour() : null;
}
