// Calls to an Engine (engine.js) across a thread boundary, generically: `serve(createEngine)`
// answers them inside a Web Worker, `RemoteEngine` makes them from the page, and `LocalEngine`
// makes the same calls on an Engine in the calling thread (notebooks, tests). All three speak
// `call(method, args, {onProgress, signal})`: `engine[method](args, {onProgress, signal})`, its
// progress reports forwarded, its signal aborted when the caller's is.
//
// Calls run one at a time in the order made, except the `concurrent` methods: they start in
// order but do not hold the queue (AdaRound, a long job that lets other calls in between its
// steps). A call is refused for a method the engine does not have.
//
// Worker protocol (structured clone):
//   page → worker  {id, method, args}                  a call
//                  {cancel: id}                         abort call `id` (handled at once)
//   worker → page  {id, progress}                       a progress report of call `id`
//                  {id, ok: true, value, ms}            its result (ms: time spent in the worker)
//                  {id, ok: false, error, panic, cancelled}
// A WebAssembly trap (a panic) leaves the module unusable: the worker reports `panic: true`, and
// RemoteEngine terminates it and starts a new one; calls in flight fail with `restarted: true`.

/** An error of an engine call. */
export class EngineError extends Error {
  constructor(message, { panic = false, cancelled = false, restarted = false } = {}) {
    super(message);
    this.name = 'EngineError';
    this.panic = panic;
    this.cancelled = cancelled;
    this.restarted = restarted;
  }
}

/** Epoch milliseconds from this thread's clock (comparable with another thread's). */
const epochNow = () => performance.timeOrigin + performance.now();

/** Answered calls whose time in the worker a RemoteEngine keeps (for measurements). */
const MAX_TIMINGS = 500;

/** Methods that are not engine calls. */
const NOT_CALLS = new Set(['constructor']);

/** What a failed call reports: its message (a panic's own message for a trap) and its flags. */
function describeFailure(err, engine) {
  const trap = typeof WebAssembly !== 'undefined' && err instanceof WebAssembly.RuntimeError;
  let message = err && err.message ? err.message : String(err);
  if (trap) {
    const panic = engine && typeof engine.panicMessage === 'function' ? engine.panicMessage() : null;
    message = panic ? `internal error (wasm panic): ${panic}` : `internal error: ${message}`;
  }
  return { error: message, panic: trap, cancelled: Boolean(err && err.cancelled) };
}

/** Runs calls on the engine `engineOf()` resolves to, in order (see the header). */
class Dispatcher {
  constructor(engineOf, { concurrent = [] } = {}) {
    this.engineOf = engineOf;
    this.concurrent = new Set(concurrent);
    this.queue = Promise.resolve();
  }

  /** Resolves to the value of `engine[method](args, run)`; `onStart()` is called when its turn comes. */
  run(method, args, run, onStart = null) {
    const exec = async () => {
      if (onStart) onStart();
      const engine = await this.engineOf();
      if (NOT_CALLS.has(method) || typeof engine[method] !== 'function') throw new Error(`the engine has no method ${JSON.stringify(method)}`);
      return engine[method](args || {}, run);
    };
    const turn = this.queue;
    const result = turn.then(exec);
    this.queue = this.concurrent.has(method) ? turn : result.then(() => {}, () => {});
    return result;
  }
}

/**
 * Buffers of typed arrays (wholly theirs) among `value`'s fields, down to three levels (a
 * report's packed arrays, its `clip_range` pair, its view's `slices.scale`), to transfer
 * instead of copy.
 */
function transferables(value) {
  const out = new Set();
  const visit = (v, depth) => {
    if (!v || typeof v !== 'object' || depth < 0) return;
    if (ArrayBuffer.isView(v)) {
      // Never a view into a larger buffer (such as WebAssembly memory).
      if (v.byteOffset === 0 && v.byteLength === v.buffer.byteLength && v.buffer instanceof ArrayBuffer) out.add(v.buffer);
      return;
    }
    if (Array.isArray(v)) {
      // Plain number arrays hold no buffer: only a short array (a pair) is looked into.
      if (v.length <= 2) for (const x of v) visit(x, depth - 1);
      return;
    }
    for (const k of Object.keys(v)) visit(v[k], depth - 1);
  };
  visit(value, 3);
  return [...out];
}

/**
 * Answer engine calls in this Web Worker. `createEngine()` (may be async: it initialises the
 * WebAssembly module) is called once, on the first call.
 */
export function serve(createEngine, { concurrent = [] } = {}) {
  let engine = null;
  let starting = null;
  const engineOf = () => {
    starting ||= Promise.resolve(createEngine()).then((e) => {
      engine = e;
      return e;
    });
    return starting;
  };
  const dispatcher = new Dispatcher(engineOf, { concurrent });
  const calls = new Map();
  const now = epochNow;
  self.onmessage = (event) => {
    const msg = event.data || {};
    if (msg.cancel !== undefined) {
      const controller = calls.get(msg.cancel);
      if (controller) controller.abort();
      return;
    }
    const { id, method, args } = msg;
    const controller = new AbortController();
    calls.set(id, controller);
    let started = now();
    const onProgress = (progress) => {
      self.postMessage({ id, progress });
    };
    dispatcher
      .run(method, args, { onProgress, signal: controller.signal }, () => {
        started = now();
      })
      .then(
        (value) => {
          const ended = now();
          self.postMessage({ id, ok: true, value, ms: ended - started, started, ended }, transferables(value));
        },
        (err) => self.postMessage({ id, ok: false, ...describeFailure(err, engine) }),
      )
      .finally(() => calls.delete(id));
  };
}

/** Calls in flight of a client, for `busy` (long jobs flagged `background` do not count). */
class Pending {
  constructor() {
    this.calls = new Map();
  }

  get busy() {
    let n = 0;
    for (const c of this.calls.values()) if (!c.background) n += 1;
    return n;
  }
}

/** The page's side of `serve`: engine calls to a module Worker, restarted after a crash. */
export class RemoteEngine {
  /**
   * @param {URL|string|(() => Worker)} worker the worker's module script, or a function making it
   * @param {{onCrash?: (error: EngineError) => void}} hooks `onCrash` is called after a restart
   *   (or, with `dead` set, when the worker keeps failing and is not restarted)
   */
  constructor(worker, { onCrash } = {}) {
    this.makeWorker = typeof worker === 'function' ? worker : () => new Worker(worker, { type: 'module' });
    this.onCrash = onCrash || (() => {});
    this.nextId = 1;
    this.pending = new Pending();
    this.crashes = [];
    this.dead = false;
    /**
     * The last MAX_TIMINGS answered calls: `{method, id (an observer's), ms (computing in the
     * worker), started, ended (in the worker), sent, received (here)}`, the four times in epoch
     * milliseconds (`performance.timeOrigin + performance.now()` on either side).
     */
    this.timings = [];
    this.start();
  }

  start() {
    this.worker = this.makeWorker();
    this.worker.onmessage = (e) => this.receive(e.data);
    this.worker.onerror = (e) => {
      e.preventDefault();
      this.crash(new EngineError(`the worker failed: ${e.message || 'unknown error'}`, { panic: true }));
    };
  }

  receive(msg) {
    const p = this.pending.calls.get(msg.id);
    if (!p) return;
    if (msg.progress !== undefined) {
      if (p.onProgress) p.onProgress(msg.progress);
      return;
    }
    this.pending.calls.delete(msg.id);
    if (msg.ok) {
      this.timings.push({ method: p.method, id: p.observer, ms: msg.ms, started: msg.started, ended: msg.ended, sent: p.sent, received: epochNow() });
      if (this.timings.length > MAX_TIMINGS) this.timings.shift();
      p.resolve(msg.value);
      return;
    }
    const err = new EngineError(msg.error, { panic: msg.panic, cancelled: msg.cancelled });
    p.reject(err);
    if (msg.panic) this.crash(err);
  }

  /**
   * Terminate and restart the worker; every call in flight fails with `restarted`. After more
   * than three crashes within ten seconds the worker is not restarted (`dead`).
   */
  crash(err) {
    this.worker.terminate();
    const inflight = [...this.pending.calls.values()];
    this.pending.calls.clear();
    for (const p of inflight) p.reject(new EngineError(err.message, { panic: err.panic, restarted: true }));
    const now = Date.now();
    this.crashes = this.crashes.filter((t) => now - t < 10000).concat(now);
    if (this.crashes.length > 3) {
      this.dead = true;
      this.onCrash(new EngineError(`${err.message} (the engine keeps failing; reload the page)`, { panic: true }));
      return;
    }
    this.start();
    this.onCrash(err);
  }

  /**
   * Call `method` with `args`; resolves to its value. `onProgress` receives its progress
   * reports, aborting `signal` asks it to stop, `transfer` lists buffers to move to the worker,
   * and a `background` call (a long job nobody waits for) does not count as `busy`.
   */
  call(method, args = {}, { onProgress = null, signal = null, transfer = [], background = false } = {}) {
    if (this.dead) return Promise.reject(new EngineError('the engine stopped; reload the page', { panic: true, restarted: true }));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.calls.set(id, { resolve, reject, onProgress, background, method, observer: args.id, sent: epochNow() });
      if (signal) {
        const cancel = () => this.worker.postMessage({ cancel: id });
        if (signal.aborted) queueMicrotask(cancel);
        else signal.addEventListener('abort', cancel, { once: true });
      }
      this.worker.postMessage({ id, method, args }, transfer);
    });
  }

  /** Number of calls in flight, not counting background jobs. */
  get busy() {
    return this.pending.busy;
  }
}

/** The same `call()` on an Engine in this thread (notebook widgets, tests). */
export class LocalEngine {
  /** @param engine an Engine; `concurrent` as for `serve`. */
  constructor(engine, { concurrent = ['adaround', 'rankModel', 'diff', 'diffTensor'] } = {}) {
    this.engine = engine;
    this.dispatcher = new Dispatcher(async () => engine, { concurrent });
    this.pending = new Pending();
    this.nextId = 1;
    this.dead = false;
  }

  /**
   * Like RemoteEngine.call (values are not copied: do not change them). After a WebAssembly
   * panic the module cannot be trusted and every later call fails (`dead`).
   */
  call(method, args = {}, { onProgress = null, signal = null, background = false } = {}) {
    if (this.dead) return Promise.reject(new EngineError('the engine stopped after an internal error; reload the page', { panic: true }));
    const id = this.nextId++;
    this.pending.calls.set(id, { background });
    return this.dispatcher
      .run(method, args, { onProgress, signal })
      .catch((err) => {
        const failure = describeFailure(err, this.engine);
        if (failure.panic) this.dead = true;
        throw new EngineError(failure.error, failure);
      })
      .finally(() => this.pending.calls.delete(id));
  }

  /** Number of calls in flight, not counting background jobs. */
  get busy() {
    return this.pending.busy;
  }
}
