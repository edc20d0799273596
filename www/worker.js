// The explorer's Web Worker: it owns the WebAssembly instance and the session (loaded tensors,
// observer runs), so that loading and observing never block the page. Messages are handled one
// at a time, in order; "cancel" is handled at once and stops a chunked load between chunks.
//
// Protocol: {id, op, args} → {id, ok: true, value, ms} | {id, ok: false, error, panic?, cancelled?}
// plus {id, progress: {fraction, label}} while loading and {id, partial: result} for a search-only
// parameter change (the new clipping range before its error metrics).
import init, {
  Session,
  registry,
  limits,
  headerSize,
  lastPanic,
  debugPanic,
  version,
} from './pkg/quantscope.js';

/** Files up to this size are read whole; larger ones are read in chunks. */
const WHOLE_FILE_BYTES = 64 * 1024 * 1024;
/** .npz archives cannot be read in chunks; up to this size they are read whole. */
const MAX_NPZ_BYTES = 256 * 1024 * 1024;
/** Chunk size of chunked loads. */
const CHUNK_BYTES = 16 * 1024 * 1024;

const ready = init();
let session = null;
/** The File objects of the current set, so another member can be read later. */
let currentFiles = [];
let cancelRequested = false;
let queue = Promise.resolve();
/** Latest update request per observer: pending metrics of older ones are skipped. */
const latestUpdate = new Map();

class Cancelled extends Error {
  constructor() {
    super('loading cancelled');
    this.cancelled = true;
  }
}

self.onmessage = (event) => {
  const msg = event.data;
  if (msg && msg.op === 'cancel') {
    cancelRequested = true;
    return;
  }
  if (msg && (msg.op === 'update' || msg.op === 'observe') && msg.args) latestUpdate.set(msg.args.id, msg.id);
  queue = queue.then(() => handle(msg));
};

async function handle({ id, op, args }) {
  const t0 = performance.now();
  try {
    await ready;
    if (!session) session = new Session();
    const fn = OPS[op];
    if (!fn) throw new Error(`unknown operation ${op}`);
    const { value, transfer = [], superseded = false } = await fn(args || {}, id);
    self.postMessage({ id, ok: true, value, superseded, ms: performance.now() - t0 }, transfer);
  } catch (err) {
    const trap = err instanceof WebAssembly.RuntimeError;
    let message = err && err.message ? err.message : String(err);
    if (trap) {
      let panic = null;
      try {
        panic = lastPanic();
      } catch {
        // The instance is unusable; the page restarts the worker.
      }
      message = panic ? `internal error (wasm panic): ${panic}` : `internal error: ${message}`;
    }
    self.postMessage({ id, ok: false, error: message, panic: trap, cancelled: Boolean(err && err.cancelled) });
  }
}

function progress(id, fraction, label) {
  self.postMessage({ id, progress: { fraction, label } });
}

async function readBytes(file, start, end) {
  return new Uint8Array(await file.slice(start, end).arrayBuffer());
}

/** Load one file into the session: whole when small, in chunks when large. */
async function loadOne(file, member, id, index, count) {
  const prefix = count > 1 ? `${index + 1}/${count} ` : '';
  const probeBytes = limits().probeBytes;
  const probe = await readBytes(file, 0, Math.min(file.size, probeBytes));
  const isZip = probe[0] === 0x50 && probe[1] === 0x4b;
  if (file.size <= WHOLE_FILE_BYTES || (isZip && file.size <= MAX_NPZ_BYTES)) {
    progress(id, 0, `${prefix}reading ${file.name}`);
    const bytes = new Uint8Array(await file.arrayBuffer());
    if (cancelRequested) throw new Cancelled();
    progress(id, 0.5, `${prefix}decoding ${file.name}`);
    const info = session.loadFile(file.name, bytes);
    return { ...info, streamed: false, allMembers: info.members };
  }
  const headLen = Math.min(file.size, headerSize(probe));
  const head = await readBytes(file, 0, headLen);
  const plan = session.beginStream(file.name, head, file.size, member ?? undefined);
  const end = plan.offset + plan.length;
  try {
    for (let off = plan.offset; off < end; off += CHUNK_BYTES) {
      if (cancelRequested) throw new Cancelled();
      const chunk = await readBytes(file, off, Math.min(end, off + CHUNK_BYTES));
      const fraction = session.pushChunk(chunk);
      progress(id, fraction, `${prefix}reading ${file.name}${plan.member ? ` — ${plan.member}` : ''}`);
    }
    if (cancelRequested) throw new Cancelled();
  } catch (err) {
    session.abortStream();
    throw err;
  }
  const info = session.finishStream();
  return { ...info, streamed: true, allMembers: plan.members.length ? plan.members : info.members };
}

const OPS = {
  async registry() {
    return { value: { ...registry(), limits: limits(), version: version() } };
  },

  /** Replace the loaded files with `files` (File/Blob objects); on error the previous ones stay. */
  async load({ files, members = {} }, id) {
    cancelRequested = false;
    session.beginReplace();
    const infos = [];
    try {
      for (let i = 0; i < files.length; i++) {
        infos.push(await loadOne(files[i], members[i], id, i, files.length));
      }
    } catch (err) {
      session.abandonReplace();
      throw err;
    }
    const base = session.fileCount() - files.length;
    session.retainFiles(files.map((_, i) => base + i));
    currentFiles = files;
    return { value: infos.map((info, i) => ({ ...info, index: i })) };
  },

  async select({ selection }) {
    const summary = session.select(selection);
    const hist = session.histogram();
    return { value: { summary, hist }, transfer: hist ? [hist.counts.buffer] : [] };
  },

  async observe({ id, params }) {
    return { value: session.observe(id, params) };
  },

  /**
   * A parameter change. Search-only changes reply twice: at once with the new clipping range
   * ({partial}), then with the error metrics — unless a newer change of the same observer
   * arrived meanwhile (then {value: null, superseded: true}).
   */
  async update({ id, params }, reqId) {
    const first = session.updateDeferred(id, params);
    if (!first.metrics_pending) return { value: first };
    self.postMessage({ id: reqId, partial: first });
    // Let newer messages in before spending a pass over the data.
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (latestUpdate.get(id) !== reqId) return { value: null, superseded: true };
    return { value: session.complete(id) || first };
  },

  async remove({ id }) {
    session.remove(id);
    return { value: null };
  },

  async results() {
    return { value: session.results() };
  },

  async curve({ spec, ids, colors }) {
    return { value: session.curve(spec, ids, colors) };
  },

  async comparisonSvg({ ids, colors, curve, style, width }) {
    return { value: session.comparisonSvg(ids, colors, curve, style, width) };
  },

  async files() {
    return { value: currentFiles.map((f) => f.name) };
  },

  async debugPanic({ message }) {
    debugPanic(message || 'debug panic requested');
    return { value: null };
  },
};
