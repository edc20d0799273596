// The page's side of the worker protocol: promises per request, progress callbacks, cancel, and
// restart after a wasm panic or a crash (pending requests fail with `restarted: true`).

export class WorkerError extends Error {
  constructor(message, { panic = false, cancelled = false, restarted = false } = {}) {
    super(message);
    this.panic = panic;
    this.cancelled = cancelled;
    this.restarted = restarted;
  }
}

export class WorkerClient {
  /**
   * @param {URL} url module worker script
   * @param {{onCrash?: (error: WorkerError) => void}} hooks called after the worker was restarted
   */
  constructor(url, { onCrash } = {}) {
    this.url = url;
    this.onCrash = onCrash || (() => {});
    this.nextId = 1;
    this.pending = new Map();
    this.generation = 0;
    this.crashes = [];
    this.start();
  }

  start() {
    this.generation += 1;
    this.worker = new Worker(this.url, { type: 'module' });
    this.worker.onmessage = (e) => this.receive(e.data);
    this.worker.onerror = (e) => {
      e.preventDefault();
      this.crash(new WorkerError(`the worker failed: ${e.message || 'unknown error'}`, { panic: true }));
    };
  }

  receive(msg) {
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.progress) {
      if (p.onProgress) p.onProgress(msg.progress);
      return;
    }
    if (msg.partial) {
      if (p.onPartial) p.onPartial(msg.partial);
      return;
    }
    this.pending.delete(msg.id);
    if (msg.ok) {
      p.resolve({ value: msg.value, ms: msg.ms, superseded: Boolean(msg.superseded) });
    } else {
      const err = new WorkerError(msg.error, { panic: msg.panic, cancelled: msg.cancelled });
      p.reject(err);
      if (msg.panic) this.crash(err);
    }
  }

  /**
   * Terminate and restart the worker; every pending request fails. After three crashes within
   * ten seconds the worker is not restarted again (something is broken beyond one bad input).
   */
  crash(err) {
    this.worker.terminate();
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) {
      p.reject(new WorkerError(err.message, { panic: err.panic, restarted: true }));
    }
    const now = Date.now();
    this.crashes = this.crashes.filter((t) => now - t < 10000).concat(now);
    if (this.crashes.length > 3) {
      this.dead = true;
      this.onCrash(new WorkerError(`${err.message} (the engine keeps failing; reload the page)`, { panic: true }));
      return;
    }
    this.start();
    this.onCrash(err);
  }

  /**
   * Send `op` with `args`; resolves to `{value, ms, superseded}` (ms = time spent in the worker).
   * `onProgress` receives loading progress, `onPartial` an early partial result; a `background`
   * request (a long job the page does not wait for) does not count as `busy`.
   */
  call(op, args = {}, { transfer = [], onProgress = null, onPartial = null, background = false } = {}) {
    const id = this.nextId++;
    if (this.dead) return Promise.reject(new WorkerError('the engine stopped; reload the page', { panic: true, restarted: true }));
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress, onPartial, background });
      this.worker.postMessage({ id, op, args }, transfer);
    });
  }

  /** Ask a chunked load or a formats comparison to stop. */
  cancel() {
    this.notify('cancel');
  }

  /** Send `op` without expecting a reply (handled by the worker at once, e.g. cancels). */
  notify(op) {
    if (!this.dead) this.worker.postMessage({ op });
  }

  /** Number of requests in flight, not counting background jobs (AdaRound). */
  get busy() {
    let n = 0;
    for (const p of this.pending.values()) if (!p.background) n += 1;
    return n;
  }
}
