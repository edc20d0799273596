// Binary values as a widget's model syncs them from Python, for both widgets (widget.js,
// model_widget.js) and the inlined WebAssembly module (engine.js).

/** Bytes of a synced binary value: DataView (Jupyter, marimo), typed array, or base64 text. */
export function syncedBytes(value, what) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof DataView || ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (typeof value === 'string') {
    const text = atob(value);
    const out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i += 1) out[i] = text.charCodeAt(i);
    return out;
  }
  throw new TypeError(`${what} did not arrive as binary data (got ${value === null ? 'null' : typeof value})`);
}
