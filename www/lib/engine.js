// The one JavaScript façade over the WebAssembly session, the same in Node, Deno, Observable, a
// page's main thread and a Web Worker. Every loop over the engine lives here, once: reading files
// (whole when small, in chunks when large), comparing formats one at a time, AdaRound a few
// iterations at a time. Long operations are step generators (steps.js) that the asynchronous
// methods drive with progress and cancel, and the npm package's synchronous API drives at once.
//
// Every method takes one object of named arguments and, for long operations, a second object
// `{onProgress, signal}` (an AbortSignal), so that a worker RPC (rpc.js) can forward any call as
// `call(method, args, {onProgress, signal})`. Results are plain data (the generated types of
// ../pkg/quantscope.d.ts): they cross postMessage unchanged.
//
// The WebAssembly module must be initialised before an Engine is made (index.js `init`, or the
// module's default export).
import * as wasm from '../pkg/quantscope.js';
import { Cancelled, nextTask, runAsync, runSync } from './steps.js';

/**
 * Files up to this size are read whole; larger ones are read in chunks. A `.npy` (one tensor,
 * nothing to choose) is read in chunks from CHUNK_BYTES on: decoded chunk by chunk straight into
 * the session's tensor, never held whole in JavaScript.
 */
export const WHOLE_FILE_BYTES = 64 * 1024 * 1024;
/** .npz archives cannot be read in chunks; up to this size they are read whole. */
export const MAX_NPZ_BYTES = 256 * 1024 * 1024;
/** Chunk size of chunked loads. */
export const CHUNK_BYTES = 16 * 1024 * 1024;
/** Bytes a Blob range source reads at once for small ranges (`readAhead`). */
const READ_AHEAD_BYTES = 32 * 1024 * 1024;
/** How far before the range asking for it such a window starts. */
const READ_BEHIND_BYTES = 4 * 1024 * 1024;
/** Time AdaRound computes between two progress reports. */
const ADAROUND_SLICE_MS = 30;
/** Time the model ranking computes between two progress reports (each carries the new rows). */
const RANK_SLICE_MS = 40;
/** Rounds of byte requests a checkpoint listing may take (each round reads headers only). */
const MAX_LISTING_ROUNDS = 10000;
const EMPTY = new Uint8Array(0);

const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
const progress = (fraction, label, extra = {}) => ({ progress: { fraction, label, ...extra } });

/** The bytes of a typed array or ArrayBuffer as a Uint8Array (no copy). */
export function toBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError('expected the bytes of a .npy/.npz/.safetensors file (Uint8Array or ArrayBuffer), a Blob, or {data: Float32Array, shape}');
}

/**
 * One input as the engine reads it: a Blob/File (read asynchronously), file bytes (Uint8Array,
 * ArrayBuffer, `{bytes, name}`), values `{data: Float32Array, shape, name}`, or one tensor of a
 * checkpoint `{checkpoint: [files], tensor: {position, name}, name}` (see checkpointTensorSteps).
 */
function toSource(input, fallbackName) {
  if (input && Array.isArray(input.checkpoint)) return { checkpoint: input.checkpoint, tensor: input.tensor, name: input.name || fallbackName };
  if (typeof Blob !== 'undefined' && input instanceof Blob) return { blob: input, name: input.name || fallbackName };
  if (input && input.data instanceof Float32Array) {
    return { values: input.data, shape: input.shape || [input.data.length], name: input.name || fallbackName };
  }
  if (input && !ArrayBuffer.isView(input) && !(input instanceof ArrayBuffer) && input.bytes !== undefined) {
    return { bytes: toBytes(input.bytes), name: input.name || fallbackName };
  }
  return { bytes: toBytes(input), name: fallbackName };
}

/**
 * One file of a checkpoint as the model view reads it, by byte ranges: `{name, size, read(start,
 * end)}` where `read` returns the bytes (Uint8Array) or a promise of them. Accepts a Blob/File
 * (named by its folder path when it came from a folder), `{blob, name}`, file bytes (Uint8Array,
 * ArrayBuffer, `{bytes, name}`), or an object that already has `name`, `size` and `read`.
 */
export function rangeSource(input, index = 0) {
  const fallback = `file${index}`;
  const fromBlob = (blob, name) => ({
    name: name || blob.webkitRelativePath || blob.name || fallback,
    size: blob.size,
    read: readAhead(blob),
  });
  if (typeof Blob !== 'undefined' && input instanceof Blob) return fromBlob(input);
  if (input && typeof Blob !== 'undefined' && input.blob instanceof Blob) return fromBlob(input.blob, input.name);
  if (input && typeof input.read === 'function' && Number.isFinite(input.size)) {
    return { name: input.name || fallback, size: input.size, read: (start, end) => input.read(start, end) };
  }
  const named = input && !ArrayBuffer.isView(input) && !(input instanceof ArrayBuffer) && input.bytes !== undefined;
  const bytes = toBytes(named ? input.bytes : input);
  return { name: (named && input.name) || fallback, size: bytes.length, read: (start, end) => bytes.subarray(start, end) };
}

/** Steps that read bytes `start..end` of a range source. */
function* readRange(source, start, end) {
  const got = source.read(start, end);
  const bytes = got && typeof got.then === 'function' ? yield { wait: got } : got;
  return toBytes(bytes);
}

/**
 * Steps that list the checkpoint made of `sources` (range sources, in the order given) from
 * the byte ranges its catalogue asks for (headers only). Returns the wasm ModelSession, ranked
 * by `methods` (names; null: the defaults); the caller frees it.
 */
function* listCheckpointSteps(sources, methods = null) {
  const session = new wasm.ModelSession(sources.map((s) => ({ name: s.name, size: s.size })), methods);
  try {
    for (let round = 0; ; round += 1) {
      const requests = session.listingRequests();
      if (requests.length === 0) return session;
      if (round >= MAX_LISTING_ROUNDS) throw new Error('listing the checkpoint did not finish (too many header reads)');
      for (const r of requests) session.supply(r.file, r.start, yield* readRange(sources[r.file], r.start, r.end));
    }
  } catch (err) {
    session.free();
    throw err;
  }
}

/**
 * Steps that rank the tensors at `positions` of a listed checkpoint (`session`, a wasm
 * ModelSession over `sources`), one at a time: read exactly the tensor's byte range, rank it,
 * drop the bytes. Every RANK_SLICE_MS they report progress carrying the rows ranked since the
 * previous report (`rows`); asked to stop, they stop after the tensor in hand. Returns
 * `{rows, cancelled}`. This is the one ranking loop: a pool of workers would give each its own
 * listed session and a share of the positions, and merge the rows.
 */
export function* rankSteps(session, sources, positions) {
  const rows = [];
  let fresh = [];
  let last = now();
  for (let k = 0; k < positions.length; k += 1) {
    const position = positions[k];
    const request = session.tensorRequest(position);
    let row;
    if (!request) {
      row = session.rank(position, EMPTY);
    } else {
      let bytes = null;
      let failure = null;
      try {
        bytes = yield* readRange(sources[request.file], request.start, request.end);
      } catch (err) {
        failure = err && err.message ? err.message : String(err);
      }
      row = failure === null ? session.rank(position, bytes) : session.fail(position, failure);
      bytes = null;
    }
    rows.push(row);
    fresh.push(row);
    const done = k + 1;
    if (done === positions.length || now() - last >= RANK_SLICE_MS) {
      const stop = yield progress(done / positions.length, `tensor ${done} of ${positions.length}`, { rows: fresh });
      fresh = [];
      last = now();
      if (stop && done < positions.length) return { rows, cancelled: true };
    }
  }
  return { rows, cancelled: false };
}

/**
 * Steps that add one tensor of a checkpoint to `session` as a file of its own: list the
 * checkpoint `source.checkpoint` (range sources' inputs), find `source.tensor` (`{position,
 * name}`: the listed tensor at `position` when its name matches, else the first called `name`)
 * and read exactly its bytes.
 */
function* checkpointTensorSteps(session, source) {
  const sources = source.checkpoint.map(rangeSource);
  const model = yield* listCheckpointSteps(sources);
  try {
    const { position, name } = source.tensor || {};
    const tensors = model.listing().tensors;
    const at = tensors[position];
    const entry = at && (name === undefined || at.name === name) ? at : tensors.find((t) => t.name === name);
    if (!entry) throw new Error(`no tensor named ${JSON.stringify(name)} in the checkpoint`);
    if (entry.problem) throw new Error(`${entry.name}: ${entry.problem}`);
    model.setMaxElements(wasm.limits().maxElements);
    const request = model.tensorRequest(entry.position);
    if (!request) throw new Error(`${entry.name}: ${entry.elements} values, more than the explorer holds`);
    const bytes = yield* readRange(sources[request.file], request.start, request.end);
    return session.addCheckpointTensor(source.name, model, entry.position, bytes);
  } finally {
    model.free();
  }
}

/** One side of a diff: one file or a list of them, each anything `rangeSource` takes. */
function diffSide(input, what) {
  const list = Array.isArray(input) ? input : [input];
  if (list.length === 0 || list.some((f) => f === undefined || f === null)) throw new TypeError(`expected the ${what} checkpoint's files`);
  return list.map(rangeSource);
}

/**
 * Steps that list both sides of a diff (headers and configuration files only), with the
 * importance matrix `imatrix` (a range source or null) read first. Returns the wasm
 * DiffSession; the caller frees it.
 */
function* listDiffSteps(sides, imatrix) {
  const session = new wasm.DiffSession(...sides.map((files) => files.map((s) => ({ name: s.name, size: s.size }))));
  try {
    if (imatrix) session.setImatrix(imatrix.name, yield* readRange(imatrix, 0, imatrix.size));
    for (let round = 0; ; round += 1) {
      const requests = session.listingRequests();
      if (requests.length === 0) return session;
      if (round >= MAX_LISTING_ROUNDS) throw new Error('listing the checkpoints did not finish (too many header reads)');
      for (const r of requests) session.supply(r.side, r.file, r.start, yield* readRange(sides[r.side][r.file], r.start, r.end));
    }
  } catch (err) {
    session.free();
    throw err;
  }
}

/** Steps that read the byte ranges pair `k` of a listed diff needs (`needs`: its `needs(k)`), in order. */
function* pairBytesSteps(session, sides, k, needs = session.needs(k)) {
  const bytes = [];
  for (const n of needs) bytes.push(yield* readRange(sides[n.side][n.file], n.start, n.end));
  return bytes;
}

/**
 * Pairs `start..end` of a listed diff with their needs, in the order their bytes lie in the
 * files (original side first): a checkpoint's names need not follow its data (`layer.10` sorts
 * before `layer.2`), and reading in file order lets `readAhead` serve them from few reads.
 */
function pairsInFileOrder(session, start, end) {
  const pairs = [];
  for (let k = start; k < end; k += 1) pairs.push({ k, needs: session.needs(k) });
  const at = (p) => (p.needs.length ? [p.needs[0].side, p.needs[0].file, p.needs[0].start] : [Infinity, 0, 0]);
  return pairs.sort((a, b) => {
    const [x, y] = [at(a), at(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2] || a.k - b.k;
  });
}

/**
 * Steps of `diff`: list both checkpoints, then compare one pair of weights at a time (read
 * exactly the byte ranges of its entries, compare, drop them), reporting progress after every
 * pair with its `row`. Asked to stop, they throw `Cancelled` (the rows reported so far are the
 * caller's). Returns the report, the CLI's `diff --json` document.
 *
 * With `portion` (`{index, count}`), only that portion's pairs are compared (the CLI's
 * `--shard I/N` split) and the portion's document is returned, for `mergePortions`: how a pool
 * of workers shares a diff out (pool.js). Progress then counts the portion's pairs (`done`,
 * `of`) beside the whole diff's `pairs`.
 */
export function* diffSteps({ original, quantized, imatrix = null, portion = null }) {
  const sides = [diffSide(original, 'original'), diffSide(quantized, 'quantized')];
  const session = yield* listDiffSteps(sides, imatrix ? rangeSource(imatrix) : null);
  try {
    const count = session.pairCount();
    const [start, end] = portion ? session.portionRange(portion.index, portion.count) : [0, count];
    const of = end - start;
    if (yield progress(0, `${count} pairs of weights listed`, { pairs: count, done: 0, of })) throw new Cancelled('the comparison was cancelled');
    let done = 0;
    for (const { k, needs } of pairsInFileOrder(session, start, end)) {
      const row = session.compare(k, yield* pairBytesSteps(session, sides, k, needs));
      done += 1;
      if (yield progress(done / of, `pair ${done} of ${of}`, { row, pairs: count, done, of })) {
        if (done < of) throw new Cancelled('the comparison was cancelled');
      }
    }
    return portion ? session.portionReport(portion.index, portion.count) : session.report();
  } finally {
    session.free();
  }
}

/**
 * Steps of `diffTensor`: list both checkpoints again (headers only), find the pair of weights
 * `pair` (`{original, quantized}`, names as in a report's rows) and read it: its
 * `DiffTensorView`.
 */
export function* diffTensorSteps({ original, quantized, pair }) {
  const sides = [diffSide(original, 'original'), diffSide(quantized, 'quantized')];
  const session = yield* listDiffSteps(sides, null);
  try {
    const k = session.pairIndex(pair.original, pair.quantized);
    if (k === undefined || k === null) throw new Error(`no pair ${JSON.stringify(pair.original)} / ${JSON.stringify(pair.quantized)} in these checkpoints`);
    return session.tensorView(k, yield* pairBytesSteps(session, sides, k));
  } finally {
    session.free();
  }
}

/** `member` of a loaded file (its first when undefined), or an error naming the members. */
export function memberOf(info, member) {
  if (member === undefined || member === null) return info.members[0].name;
  if (!info.members.some((m) => m.name === member)) {
    throw new Error(`no tensor named ${JSON.stringify(member)} in ${info.name}; members: ${info.members.map((m) => m.name).join(', ')}`);
  }
  return member;
}

async function readBytes(blob, start, end) {
  return new Uint8Array(await blob.slice(start, end).arrayBuffer());
}

/**
 * A Blob's `read(start, end)` that reads small ranges a window at a time: a range inside the
 * window read last is answered from it at once. Once a range goes on into the window after it
 * (asked for with the one before), the one after that is asked for: a walk through the file
 * reads ahead while it compares, a jump elsewhere reads one window. A
 * window starts READ_BEHIND_BYTES before the range that asked for it, so that the small jumps
 * back of a walk in file order (a checkpoint's weights paired in the other file's order) stay
 * inside it. A Blob read is a round trip to the browser's file thread: without this, a 1 GiB
 * diff's 3,492 pairs cost 10,000 of them, and reading did not overlap comparing. Ranges of a
 * window or more are read as asked.
 */
function readAhead(blob) {
  const windowAt = (start) => {
    const end = Math.min(blob.size, start + READ_AHEAD_BYTES);
    return { start, end, bytes: readBytes(blob, start, end) };
  };
  let current = null; // {start, end, bytes: a promise, or the Uint8Array once read}
  let next = null;
  const within = (w, start, end) => w && start >= w.start && end <= w.end;
  const slice = (w, start, end) => w.bytes.subarray(start - w.start, end - w.start);
  return (start, end) => {
    if (within(current, start, end) && !(current.bytes instanceof Promise)) return slice(current, start, end);
    if (end - start >= READ_AHEAD_BYTES - READ_BEHIND_BYTES) return readBytes(blob, start, end);
    if (current && next && current.end === next.start && start >= current.start && start < current.end && end > next.start && end <= next.end) {
      // Across the end of the window into the next one: both joined, and on to the next.
      const [a, b] = [current, next];
      current = b;
      next = b.end < blob.size ? windowAt(b.end) : null;
      return Promise.all([a.bytes, b.bytes]).then(([x, y]) => {
        [a.bytes, b.bytes] = [x, y];
        const out = new Uint8Array(end - start);
        out.set(x.subarray(start - a.start));
        out.set(y.subarray(0, end - b.start), a.end - start);
        return out;
      });
    }
    if (!within(current, start, end)) {
      // Going on past the window: the next one (usually read already) and the one after it;
      // a jump elsewhere: a window there, and no guess at what follows.
      const streaming = within(next, start, end);
      const onwards = streaming || Boolean(current && start >= current.start && start <= current.end + READ_BEHIND_BYTES);
      current = streaming ? next : windowAt(Math.max(0, start - READ_BEHIND_BYTES));
      next = onwards && current.end < blob.size ? windowAt(current.end) : null;
    }
    const w = current;
    const pending = w.bytes instanceof Promise ? w.bytes : Promise.resolve(w.bytes);
    return pending.then((bytes) => {
      w.bytes = bytes;
      return slice(w, start, end);
    });
  };
}

/** True when `probe` (a file's first bytes) starts as a `.npy` does. */
const isNpy = (probe) => probe.length >= 6 && probe[0] === 0x93 && String.fromCharCode(...probe.subarray(1, 6)) === 'NUMPY';

/**
 * Steps that add one source to `session`: values and bytes at once; a Blob whole when small (or
 * a .npz up to MAX_NPZ_BYTES), else (a .npy from CHUNK_BYTES on) in CHUNK_BYTES chunks of the
 * planned byte range with progress and cancel between chunks: each chunk is copied into the
 * WebAssembly memory and decoded into the tensor there. Returns the file's info with `streamed`
 * and `allMembers` (a chunked load reads one member; `allMembers` lists every member).
 */
function* loadSourceSteps(session, source, { member, prefix = '' } = {}) {
  const whole = (info) => ({ ...info, streamed: false, allMembers: info.members });
  if (source.checkpoint) return whole(yield* checkpointTensorSteps(session, source));
  if (source.values) return whole(session.addTensor(source.name, source.shape, source.values));
  if (source.bytes) return whole(session.loadFile(source.name, source.bytes));
  const { blob, name } = source;
  const stopped = () => new Cancelled('loading cancelled');
  const probe = yield { wait: readBytes(blob, 0, Math.min(blob.size, wasm.limits().probeBytes)) };
  const isZip = probe[0] === 0x50 && probe[1] === 0x4b;
  const readWhole = isNpy(probe) ? blob.size <= CHUNK_BYTES : blob.size <= WHOLE_FILE_BYTES || (isZip && blob.size <= MAX_NPZ_BYTES);
  if (readWhole) {
    if (yield progress(0, `${prefix}reading ${name}`)) throw stopped();
    const bytes = yield { wait: readBytes(blob, 0, blob.size) };
    if (yield progress(0.5, `${prefix}decoding ${name}`)) throw stopped();
    return whole(session.loadFile(name, bytes));
  }
  const head = yield { wait: readBytes(blob, 0, Math.min(blob.size, wasm.headerSize(probe))) };
  const plan = session.beginStream(name, head, blob.size, member ?? undefined);
  const end = plan.offset + plan.length;
  let finished = false;
  try {
    for (let off = plan.offset; off < end; off += CHUNK_BYTES) {
      const chunk = yield { wait: readBytes(blob, off, Math.min(end, off + CHUNK_BYTES)) };
      const fraction = session.pushChunk(chunk);
      if (yield progress(fraction, `${prefix}reading ${name}${plan.member ? ` — ${plan.member}` : ''}`)) throw stopped();
    }
    finished = true;
  } finally {
    if (!finished) session.abortStream();
  }
  const info = session.finishStream();
  return { ...info, streamed: true, allMembers: plan.members.length ? plan.members : info.members };
}

/** Steps that add every source of `sources` to `session`, in order (progress labels "i/n"). */
function* loadAllSteps(session, sources, members = {}) {
  const infos = [];
  for (let i = 0; i < sources.length; i++) {
    const prefix = sources.length > 1 ? `${i + 1}/${sources.length} ` : '';
    infos.push(yield* loadSourceSteps(session, sources[i], { member: members[i], prefix }));
  }
  return infos;
}

/** The sources of `files` (names from `names`, else the files' own, else `tensor.npy`). */
function sourcesOf(files, names = []) {
  if (!Array.isArray(files) || files.length === 0) throw new TypeError('expected a non-empty list of files');
  return files.map((f, i) => toSource(f, names[i] || 'tensor.npy'));
}

/**
 * Steps of `adaround`: W and X (`{file, member, name}`, `file` any input `load` takes) in a
 * session of their own, then AdaRound in slices of about ADAROUND_SLICE_MS, reporting the
 * history points learned so far. Asked to stop, it concludes with the rounding learned until
 * then (`cancelled: true`).
 */
export function* adaroundSteps({ w, x, params = {} }) {
  const job = new wasm.Session();
  try {
    const same = x.file === w.file;
    const sources = [toSource(w.file, w.name || 'W')];
    if (!same) sources.push(toSource(x.file, x.name || 'X'));
    const members = same ? { 0: w.member } : { 0: w.member, 1: x.member };
    const infos = yield* loadAllSteps(job, sources, members);
    const last = infos.length - 1;
    const wRef = { file: 0, member: memberOf(infos[0], w.member) };
    const xRef = { file: last, member: memberOf(infos[last], x.member) };
    const start = job.adaroundBegin(wRef, xRef, params);
    let count = 1;
    let cancelled = false;
    for (;;) {
      const t0 = now();
      const status = job.adaroundStep(count);
      const spent = now() - t0;
      const label = `iteration ${status.iterations_run} of ${status.iterations}`;
      const stop = yield progress(status.iterations_run / status.iterations, label, status);
      if (status.done) break;
      if (stop) {
        cancelled = true;
        break;
      }
      count = Math.max(1, Math.min(1000, Math.round((count * ADAROUND_SLICE_MS) / Math.max(spent, 0.1))));
    }
    return { ...job.adaroundFinish(), ...start, cancelled };
  } finally {
    job.free();
  }
}

/**
 * A new Engine holding `files` (as `load` takes them, named `names`), each one a calibration
 * batch (its tensor `member`, else its first), selected lazily (`selectLazily`) and split by
 * `split`: `{engine, infos, batches, summary}`. The engine is freed when this fails. The npm
 * package's `loadTensor` and `observeMany`'s worker threads load tensors this one way.
 */
export function loadedEngine({ files, names, member, split = null }) {
  const engine = new Engine();
  try {
    const infos = runSync(engine.loadSteps({ files, names }));
    const batches = infos.map((info, i) => ({ file: i, member: memberOf(info, member) }));
    const summary = engine.selectLazily({ selection: { batches, split } });
    return { engine, infos, batches, summary };
  } catch (err) {
    engine.free();
    throw err;
  }
}

export class Engine {
  /** An engine with an empty session (the WebAssembly module must be initialised). */
  constructor() {
    this.session = new wasm.Session();
  }

  /** Free the session's WebAssembly memory. */
  free() {
    if (this.session) this.session.free();
    this.session = null;
  }

  /** The observer registry with the quantizer registry, the explorer's limits and the version. */
  registry() {
    return { ...wasm.registry(), quantizers: this.quantizers(), limits: this.limits(), version: wasm.version() };
  }

  /** The quantizer registry: number format families and rounding optimisers, with their parameters. */
  quantizers() {
    return wasm.quantizers();
  }

  /** What a session holds at most and reads first: `{maxElements, displayBins, probeBytes}`. */
  limits() {
    return wasm.limits();
  }

  /**
   * Steps of `load`: replace the loaded files with `files`; on failure or cancel the previous
   * files, selection and results stay.
   */
  *loadSteps({ files, names, members = {} }) {
    const sources = sourcesOf(files, names);
    this.session.beginReplace();
    let infos = null;
    try {
      infos = yield* loadAllSteps(this.session, sources, members);
    } finally {
      if (!infos) this.session.abandonReplace();
    }
    const base = this.session.fileCount() - sources.length;
    this.session.retainFiles(sources.map((_, i) => base + i));
    return infos.map((info, i) => ({ ...info, index: i }));
  }

  /**
   * Replace the loaded files with `files` (File/Blob, bytes, `{bytes, name}` or `{data, shape,
   * name}`), each one a calibration batch candidate; `names` name byte inputs, `members[i]`
   * picks the member of a large file read in chunks. Resolves to each file's info.
   */
  load(args, run) {
    return runAsync(this.loadSteps(args), run);
  }

  /** Steps of `inspect`. */
  *inspectSteps({ files, names }) {
    const scratch = new wasm.Session();
    try {
      const sources = sourcesOf(files, names);
      const infos = yield* loadAllSteps(scratch, sources);
      return infos.map((info, i) => ({ name: sources[i].name, members: info.allMembers }));
    } finally {
      scratch.free();
    }
  }

  /** The members (name, shape, dtype) of `files`, read into a scratch session. */
  inspect(args, run) {
    return runAsync(this.inspectSteps(args), run);
  }

  /**
   * Choose the calibration batches (`{batches: [{file, member}], split}`); previous results are
   * dropped. Returns the tensor summary and the display histogram.
   */
  select({ selection }) {
    const summary = this.session.select(selection);
    return { summary, hist: this.session.histogram() };
  }

  /**
   * `select` without the moment histogram: resolves to the summary, without mean and std until
   * `statistics` is asked (the npm package's tensors, whose mean, std and histogram are read
   * when used).
   */
  selectLazily({ selection }) {
    return this.session.selectLazily(selection);
  }

  /** The selection's summary with its mean and std, and its display histogram. */
  statistics() {
    return { summary: this.session.summary(), hist: this.session.histogram() };
  }

  /**
   * `report` of observer `id`, with `withView` also what its panel displays (`report.view`, the
   * engine's `panelView` computed from the report where it lives: a panel then needs no second
   * trip through the engine, which for hundreds of thousands of per-block scales costs more than
   * the run).
   */
  withView(id, report, withView) {
    if (!withView || !report) return report;
    // Long per-slice arrays come as Float64Array: the page receives them without a copy.
    return { ...report, view: this.session.panelViewOf(id) };
  }

  /**
   * Observer `id` with `params` over the current batches, from scratch (`view`: with its panel's
   * view, see `withView`; `packed`: per-slice arrays of more than 1024 numbers as Float64Array,
   * made at once and transferred to the page instead of encoded number by number; `plainReport`
   * turns them back into arrays).
   */
  observe({ id, params = {}, view = false, packed = false }) {
    return this.withView(id, this.session.observe(id, params, packed), view);
  }

  /**
   * Observer `id` with `params`; the collected state is reused when only the search changed
   * (`view`, `packed` as for `observe`).
   */
  update({ id, params = {}, view = false, packed = false }) {
    return this.withView(id, this.session.update(id, params, packed), view);
  }

  /**
   * Like `update`, but a change answered from the collected state reports its clipping range
   * first (`onProgress(report)` with `metrics_pending`), then lets other requests in and
   * computes the metrics — unless `signal` was aborted meanwhile (a newer change superseded it:
   * rejects with `cancelled`).
   */
  async updateDeferred({ id, params = {}, view = false, packed = false }, { onProgress, signal } = {}) {
    const first = this.withView(id, this.session.updateDeferred(id, params, packed), view);
    if (!first.metrics_pending) return first;
    if (onProgress) onProgress(first);
    await nextTask();
    if (signal && signal.aborted) throw new Cancelled('superseded by a newer change');
    return this.withView(id, this.session.complete(id, packed), view) || first;
  }

  /**
   * `update`'s report of observer `id` with `params`, carrying `derivation` (the `explain` steps,
   * an empty list when there are none) when `explain` is set and the run succeeded: one
   * observation of the npm package (`observe`, `observeMany`).
   */
  observation({ id, params = {}, explain = false }) {
    const report = this.update({ id, params });
    if (explain && report.ok) report.derivation = this.explain({ id }) || [];
    return report;
  }

  /** The metrics a deferred update left pending (null if none). */
  complete({ id, view = false, packed = false }) {
    return this.withView(id, this.session.complete(id, packed), view);
  }

  /**
   * The derivation of observer `id`'s last report: the steps and numbers by which its search
   * reached its range and scale (`Report.derivation`, `observe --explain`), or null before it ran.
   * The search runs again on the collected state; the data is not read again. With `view`, the
   * steps as the page shows them (numbers written, long tables shortened).
   */
  explain({ id, view = false }) {
    return this.session.explain(id, view);
  }

  /**
   * What makes the selected tensor hard to quantize and what helped, with its numbers
   * (`{facts, text}`), given the `outcomes` ({label, format, per_tensor, sqnr_db}) of the methods
   * that ran on it and the `reports` of observers that ran on it (each read as the CLI reads it);
   * null before a selection.
   */
  diagnose({ outcomes = [], reports = [] }) {
    return this.session.diagnose(outcomes, reports);
  }

  /** Forget observer `id`'s run. */
  remove({ id }) {
    this.session.remove(id);
    return null;
  }

  /** Every report of the session. */
  results() {
    return this.session.results();
  }

  /** The error-versus-clipping curve (`spec` {bits, scheme, points}) with markers of `ids`. */
  curve({ spec, ids = [], colors = [] }) {
    return this.session.curve(spec, ids, colors);
  }

  /** The comparison of observers `ids` (histogram, panels, curve) as one SVG document. */
  comparisonSvg({ ids, colors, curve = null, style = {}, width = 1400 }) {
    return this.session.comparisonSvg(ids, colors, curve, style, width);
  }

  /**
   * What the comparison figure of observers `ids` shows: `{title, subtitle, hist, panels, curve}`
   * (an engine pool joins the parts its engines hold, then calls `renderComparisonSvg`).
   */
  comparison({ ids, colors, curve = null }) {
    return this.session.comparison(ids, colors, curve);
  }

  /** A comparison (as `comparison` returns it) as one SVG document. */
  renderComparisonSvg({ comparison, style = {}, width = 1400 }) {
    return wasm.renderComparisonSvg(comparison, style, width);
  }

  /** One format measured on the formats view's tensor; a format that does not apply gives `{error}`. */
  formatRow({ id, params = {}, extra = false }) {
    try {
      return { ...this.session.evaluateFormat(id, params), extra };
    } catch (err) {
      return { id, params, extra, error: err.message };
    }
  }

  /** Steps of `formats`. */
  *formatSteps({ extra = [] } = {}) {
    const target = this.session.formatLineup();
    const jobs = target.lineup.map(([id, params]) => ({ id, params, extra: false }));
    for (const e of extra) jobs.push({ id: e.id, params: e.params || {}, extra: true });
    const rows = [];
    for (let i = 0; i < jobs.length; i++) {
      if (yield progress(i / jobs.length, `format ${i + 1} of ${jobs.length}`)) throw new Cancelled('comparing formats was cancelled');
      rows.push(this.formatRow(jobs[i]));
    }
    return { name: target.name, shape: target.shape, rows };
  }

  /**
   * Every format of the standard line-up plus `extra` ([{id, params}]) on the first selected
   * tensor, one at a time; cancellable between formats.
   */
  formats(args, run) {
    return runAsync(this.formatSteps(args), run);
  }

  /**
   * One format on the formats view's tensor (throws when it does not apply); with `rotate`
   * (`'hadamard[:SEED]'`, as the CLI's `--rotate`), on the tensor with every row rotated along
   * its last axis (the row's `rotation` says how).
   */
  evaluateFormat({ id, params = {}, rotate = null }) {
    return this.session.evaluateFormat(id, params, rotate ?? undefined);
  }

  /**
   * Observer `id` with `params` on the selected batches with every row rotated along its last
   * axis by `rotate` (`'hadamard[:SEED]'`, as the CLI's `--rotate`): `{rotation, metrics,
   * error}`, the error measured against the rotated values; the observer's panel run is
   * unchanged. A call whose `signal` was aborted before its turn came (a panel superseded it)
   * is not run: it throws `Cancelled` (through the worker, the call rejects with `cancelled`).
   */
  observeRotated({ id, params = {}, rotate = 'hadamard' }, { signal } = {}) {
    if (signal && signal.aborted) throw new Cancelled('superseded by a newer change');
    return this.session.observeRotated(id, params, rotate);
  }

  /**
   * How format `id` with `params` stored one block of the formats view's tensor (`block`, by
   * default the one holding its largest magnitude), recorded by the codec's own encoder:
   * `{format, block, blocks, steps}` (`quantize --explain --json`'s `derivation`); with `view`,
   * the steps as the page shows them. Formats without a derivation throw, saying so.
   */
  explainFormat({ id, params = {}, block = null, view = false }) {
    return this.session.explainFormat(id, params, block ?? undefined, view);
  }

  /**
   * Quantize–dequantize the formats view's tensor with quantizer `id` (a format family of the
   * quantizer registry, or one of Quark's quantizers) and `params` (the library's own keys; a
   * vector inline or as a loaded tensor `{file, member}`): cost, error metrics and the
   * dequantized `values` (Float32Array, row-major; `shape` is the tensor's).
   */
  quantize({ id, params = {} }) {
    return this.session.quantize(id, params);
  }

  /** The values (Float32Array, row-major) of loaded tensor `{file, member}`. */
  tensorValues({ file, member = '' }) {
    return this.session.tensorValues({ file, member });
  }

  /** Copy the values of loaded tensor `{file, member}` into `into`, a Float32Array of its size. */
  copyTensorValues({ file, member = '', into }) {
    this.session.copyTensorValues({ file, member }, into);
  }

  /** Steps of `readVector`. */
  *readVectorSteps({ file, name, member }) {
    const scratch = new wasm.Session();
    try {
      const [info] = yield* loadAllSteps(scratch, [toSource(file, name || 'vector.npy')]);
      const chosen = memberOf(info, member);
      const shape = info.members.find((m) => m.name === chosen).shape;
      return { name: info.name, member: chosen, shape, values: scratch.tensorValues({ file: 0, member: chosen }) };
    } finally {
      scratch.free();
    }
  }

  /**
   * The values of one tensor of a file that is not loaded (a vector parameter opened from a
   * `.npy`, `.npz` or `.safetensors`; `member` defaults to its first tensor), read in a session
   * of its own: `{name, member, shape, values: Float32Array}`.
   */
  readVector(args, run) {
    return runAsync(this.readVectorSteps(args), run);
  }

  /**
   * AdaRound for weight `w` and inputs `x` with registry `params`, in a session of its own (the
   * loaded tensors stay as they are); progress carries `points`, the history learned so far.
   */
  adaround(args, run) {
    return runAsync(adaroundSteps(args), run);
  }

  /** The methods a checkpoint can be ranked by: `{defaults, observers, formats}` (names). */
  modelMethods() {
    return wasm.modelMethods();
  }

  /**
   * Steps of `rankModel`: list the checkpoint (progress carries `listing`: every tensor in
   * checkpoint order, and `methods`), then rank its tensors one at a time (progress carries the
   * new `rows`). Asked to stop, it returns what was ranked so far with `cancelled: true`.
   */
  *rankModelSteps({ files, methods = null, maxElements = null }) {
    if (!Array.isArray(files) || files.length === 0) throw new TypeError('expected a non-empty list of checkpoint files');
    const sources = files.map(rangeSource);
    const session = yield* listCheckpointSteps(sources, methods && methods.length ? methods : null);
    try {
      session.setMaxElements(maxElements ?? wasm.limits().maxElements);
      const listing = session.listing();
      const ids = session.methods();
      let cancelled = Boolean(yield progress(0, `${listing.tensors.length} tensors listed`, { listing, methods: ids }));
      if (!cancelled) ({ cancelled } = yield* rankSteps(session, sources, listing.tensors.map((t) => t.position)));
      return { ...session.report(), methods: ids, cancelled };
    } finally {
      session.free();
    }
  }

  /**
   * Rank every tensor of a checkpoint by what quantization does to it, worst first. `files`:
   * its files in order (File/Blob, `{blob, name}`, bytes, or `{name, size, read(start, end)}`;
   * safetensors shards with or without their index, .npz, .npy, .gguf, .onnx, PyTorch .pt/.bin);
   * `methods`: observer ids and format labels (null: the defaults); `maxElements`: larger
   * tensors are skipped (default: what the explorer holds). Only the headers and one tensor's bytes are held at a time.
   * Resolves to `{tensors, load_errors, methods, cancelled}` (`tensors` as the CLI's `--json`).
   */
  rankModel(args, run) {
    return runAsync(this.rankModelSteps(args), run);
  }

  /** A ranking as CSV (the CLI's `--csv`) with the columns of `methods`. */
  modelCsv({ report, methods }) {
    return wasm.modelCsv(report, methods);
  }

  /**
   * Compare a quantized checkpoint with its original, weight by weight (what `quantscope diff`
   * does). `original`, `quantized`: a side's file or files (File/Blob, `{blob, name}`, bytes,
   * or `{name, size, read(start, end)}`; a folder's checkpoint and configuration files, named
   * by their paths); `imatrix`: an importance matrix file (GGUF or legacy `.dat`) or null.
   * Progress comes after every pair with its `row`; an aborted signal rejects with `cancelled`.
   * Resolves to the report (the CLI's `diff --json`: `{pairs, unpaired, lint, files}`).
   */
  diff(args, run) {
    return runAsync(diffSteps(args), run);
  }

  /**
   * One pair of a diff up close (`pair`: `{original, quantized}` names of a report's row):
   * both weights' histograms over one range, the error's, the error per block.
   */
  diffTensor(args, run) {
    return runAsync(diffTensorSteps(args), run);
  }

  /**
   * The documents of every portion of one diff put together (`documents`: what `diff` with a
   * `portion` returned): the report of the whole diff (the CLI's `merge`).
   */
  mergePortions({ documents }) {
    return wasm.mergePortions(documents);
  }

  /** A diff report as CSV (the CLI's `diff --csv`). */
  diffCsv({ report }) {
    return wasm.diffCsv(report);
  }

  /** Panic inside the WebAssembly module (to test that a host recovers). */
  debugPanic({ message = 'debug panic requested' } = {}) {
    wasm.debugPanic(message);
    return null;
  }

  /** The message of the last WebAssembly panic, if any. */
  panicMessage() {
    try {
      return wasm.lastPanic() || null;
    } catch {
      return null;
    }
  }
}
