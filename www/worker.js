// The explorer's Web Worker: it owns the WebAssembly instance and the session (loaded tensors,
// observer runs), so that loading and observing never block the page. Messages are handled one
// at a time, in order; "cancel" is handled at once and stops a chunked load between chunks.
//
// Protocol: {id, op, args} → {id, ok: true, value, ms} | {id, ok: false, error, panic?, cancelled?}
// plus {id, progress: {fraction, label}} while loading or comparing formats, {id, progress:
// {fraction, label, points}} while AdaRound runs, and {id, partial: result} for a search-only
// parameter change (the new clipping range before its error metrics).
//
// AdaRound is the one job that does not hold the queue: it runs a few iterations at a time and
// lets other requests in between, so the explorer stays live while it learns; "adaroundCancel"
// stops it between steps.
import init, {
  Session,
  registry,
  quantizers,
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
/** Time AdaRound computes between two looks at the message queue. */
const ADAROUND_SLICE_MS = 30;

const ready = init();
let session = null;
/** The File objects of the current set, so another member can be read later. */
let currentFiles = [];
let cancelRequested = false;
/** The AdaRound run in progress: {token, cancelled}. */
let adaroundRun = null;
let queue = Promise.resolve();
/** Latest update request per observer: pending metrics of older ones are skipped. */
const latestUpdate = new Map();

class Cancelled extends Error {
  constructor(message = 'loading cancelled') {
    super(message);
    this.cancelled = true;
  }
}

self.onmessage = (event) => {
  const msg = event.data;
  if (msg && msg.op === 'cancel') {
    cancelRequested = true;
    return;
  }
  if (msg && msg.op === 'adaroundCancel') {
    if (adaroundRun) adaroundRun.cancelled = true;
    return;
  }
  if (msg && (msg.op === 'update' || msg.op === 'observe') && msg.args) latestUpdate.set(msg.args.id, msg.id);
  if (msg && msg.op === 'adaround') {
    // Starts in order, but does not hold the queue while it runs.
    queue = queue.then(() => {
      handle(msg);
    });
    return;
  }
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

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/** Load one file into `session`: whole when small, in chunks when large. */
async function loadOne(session, file, member, id, index, count, isCancelled = () => cancelRequested) {
  const prefix = count > 1 ? `${index + 1}/${count} ` : '';
  const probeBytes = limits().probeBytes;
  const probe = await readBytes(file, 0, Math.min(file.size, probeBytes));
  const isZip = probe[0] === 0x50 && probe[1] === 0x4b;
  if (file.size <= WHOLE_FILE_BYTES || (isZip && file.size <= MAX_NPZ_BYTES)) {
    progress(id, 0, `${prefix}reading ${file.name}`);
    const bytes = new Uint8Array(await file.arrayBuffer());
    if (isCancelled()) throw new Cancelled();
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
      if (isCancelled()) throw new Cancelled();
      const chunk = await readBytes(file, off, Math.min(end, off + CHUNK_BYTES));
      const fraction = session.pushChunk(chunk);
      progress(id, fraction, `${prefix}reading ${file.name}${plan.member ? ` — ${plan.member}` : ''}`);
    }
    if (isCancelled()) throw new Cancelled();
  } catch (err) {
    session.abortStream();
    throw err;
  }
  const info = session.finishStream();
  return { ...info, streamed: true, allMembers: plan.members.length ? plan.members : info.members };
}

const OPS = {
  async registry() {
    return { value: { ...registry(), quantizers: quantizers(), limits: limits(), version: version() } };
  },

  /** The members (name, shape, dtype) of `files`, read into a scratch session. */
  async inspect({ files }, id) {
    const scratch = new Session();
    try {
      const infos = [];
      for (let i = 0; i < files.length; i++) {
        const info = await loadOne(scratch, files[i], undefined, id, i, files.length, () => false);
        infos.push({ name: files[i].name, members: info.allMembers });
      }
      return { value: infos };
    } finally {
      scratch.free();
    }
  },

  /**
   * Every format of the standard line-up plus `extra` ([{id, params}]) on the formats view's
   * tensor, one at a time with progress; cancellable between formats. A format that does not
   * apply gives {error} in its row.
   */
  async formats({ extra = [] }, id) {
    cancelRequested = false;
    const target = session.formatLineup();
    const jobs = target.lineup.map(([format, params]) => ({ id: format, params, extra: false }));
    for (const e of extra) jobs.push({ id: e.id, params: e.params, extra: true });
    const rows = [];
    for (let i = 0; i < jobs.length; i++) {
      if (cancelRequested) throw new Cancelled('comparing formats was cancelled');
      progress(id, i / jobs.length, `format ${i + 1} of ${jobs.length}`);
      await nextTask();
      const job = jobs[i];
      try {
        rows.push({ ...session.evaluateFormat(job.id, job.params), extra: job.extra });
      } catch (err) {
        rows.push({ id: job.id, params: job.params, extra: job.extra, error: err.message });
      }
    }
    return { value: { name: target.name, shape: target.shape, rows } };
  },

  /** One format on the formats view's tensor. */
  async evaluateFormat({ id: format, params }) {
    return { value: session.evaluateFormat(format, params) };
  },

  /**
   * AdaRound for weight `w` and inputs `x` ({file: File, member}) with registry `params`, in a
   * session of its own (the explorer's tensors stay as they are). Reports progress with the
   * history points learned so far; on cancel, concludes with the rounding learned until then.
   */
  async adaround({ w, x, params }, id) {
    const run = { cancelled: false };
    if (adaroundRun) adaroundRun.cancelled = true;
    adaroundRun = run;
    const job = new Session();
    try {
      const files = [w.file];
      if (x.file !== w.file) files.push(x.file);
      for (let i = 0; i < files.length; i++) {
        progress(id, 0, `reading ${files[i].name}`);
        await loadOne(job, files[i], i === 0 ? w.member : x.member, id, i, files.length, () => run.cancelled);
      }
      const start = job.adaroundBegin({ file: 0, member: w.member }, { file: files.length - 1, member: x.member }, params);
      let count = 1;
      for (;;) {
        if (run.cancelled) break;
        const t0 = performance.now();
        const status = job.adaroundStep(count);
        const spent = performance.now() - t0;
        const label = `iteration ${status.iterations_run} of ${status.iterations}`;
        self.postMessage({ id, progress: { fraction: status.iterations_run / status.iterations, label, points: status.points } });
        if (status.done) break;
        count = Math.max(1, Math.min(1000, Math.round((count * ADAROUND_SLICE_MS) / Math.max(spent, 0.1))));
        await nextTask();
      }
      const outcome = job.adaroundFinish();
      return { value: { ...outcome, ...start, cancelled: run.cancelled } };
    } finally {
      job.free();
      if (adaroundRun === run) adaroundRun = null;
    }
  },

  /** Replace the loaded files with `files` (File/Blob objects); on error the previous ones stay. */
  async load({ files, members = {} }, id) {
    cancelRequested = false;
    session.beginReplace();
    const infos = [];
    try {
      for (let i = 0; i < files.length; i++) {
        infos.push(await loadOne(session, files[i], members[i], id, i, files.length));
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
