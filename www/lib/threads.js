// `observeMany` side by side (Node): the observations of one call are shared out between the
// calling thread and worker threads, as the CLI spreads observers over its cores and the page
// over its Web Workers. Each worker thread holds its own WebAssembly instance of the module the
// calling thread compiled (V8 shares the compiled and optimised code between them) and its own
// copy of the tensor: the calling thread copies the values it loaded, once, into shared memory,
// and each worker loads them from there (so it observes exactly the values the calling thread
// holds, whatever became of the data given to `loadTensor`), then keeps them for the next call
// on the same tensor.
//
// How a call runs: the observations are put in lists (`placement`), and every thread, the
// calling one included, takes the next list nobody has taken (a counter in shared memory) until
// none is left. The calling thread starts at once; a worker starts once it holds the tensor. A
// worker that fails answers what it did, and the calling thread observes the rest itself: none
// is lost. Reports are those of `observe` on the calling thread: the same code computes them on
// the same values.
//
// Worker protocol (structured clone; `thread.js` is the worker's side):
//   calling → worker  {job: {id, key, values?, items, order, explain, next}}
//                       values ({batches: [{data, shape}], split}, data a Float32Array over a
//                       SharedArrayBuffer) only when the worker does not hold tensor `key`;
//                       next: an Int32Array over a SharedArrayBuffer
//                     {drop: key}                      forget tensor `key` (it was freed)
//   worker → calling  {id, answers: [[item index, report], …], failure?: {message, panic}}
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { observerFacts } from './pool.js';

/** Threads an `observeMany` call may use at most, whatever it asks for. */
export const MAX_THREADS = 64;

/** One thread per core. */
export function coreCount() {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

/**
 * The lists in which the observations `items` ({id}) are taken, as item indices: the items of
 * observers that share their work (one corrects the other or is its alias, the registry says)
 * in one list, so that the thread running them computes that work once; lists holding a heavy
 * search first, so that it starts at once rather than last; otherwise in the items' order.
 */
export function placement(items) {
  const facts = observerFacts();
  const groupOf = (id) => facts?.sharing.get(id) ?? id;
  const lists = new Map();
  items.forEach((item, i) => {
    const group = groupOf(item.id);
    if (!lists.has(group)) lists.set(group, []);
    lists.get(group).push(i);
  });
  const heavy = (list) => list.some((i) => facts?.heavy.has(items[i].id));
  const all = [...lists.values()];
  return [...all.filter(heavy), ...all.filter((list) => !heavy(list))];
}

/**
 * The values of `tensor`'s batches (an index.js Tensor), copied once into shared memory with
 * their shapes, and its split: what a worker thread loads. A worker thread reads them without a
 * copy of its own (a structured clone of 64 MiB took the calling thread and the worker about
 * 0.1 s).
 */
function sharedValues(tensor) {
  const batches = tensor.batchRefs.map((ref) => {
    const { shape } = tensor.files[ref.file].members.find((m) => m.name === ref.member);
    const count = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(new SharedArrayBuffer(count * Float32Array.BYTES_PER_ELEMENT));
    tensor.engine.copyTensorValues({ ...ref, into: data });
    return { data, shape };
  });
  return { batches, split: tensor.split };
}

/** A worker thread with the tensor it holds. */
class Thread {
  /** A thread over `module`; with `warm`, it runs the engine's warm-up (`warmUp`) first. */
  constructor(module, warm) {
    this.worker = new Worker(new URL('./thread.js', import.meta.url), { workerData: { module, warm } });
    // An idle worker does not keep the process alive; one with a job does (`run`).
    this.worker.unref();
    /** The key of the tensor the worker holds once its jobs are done (null: none). */
    this.key = null;
    /** Jobs sent (the next one's id) and jobs not answered yet. */
    this.jobs = 0;
    this.pending = 0;
    this.dead = false;
    this.worker.on('error', () => {
      this.dead = true;
    });
    this.worker.on('exit', () => {
      this.dead = true;
    });
  }

  /** Send `job`; resolves to the worker's answer (a failure when it stopped). */
  run(job) {
    const holds = this.key === job.key;
    this.key = job.key;
    // Calls may overlap (two observeMany at once): the worker answers in order, each answer
    // naming its job.
    const id = this.jobs++;
    return new Promise((resolve) => {
      const finish = (answer) => {
        if (answer.id !== id) return;
        this.worker.off('message', finish);
        this.worker.off('exit', stopped);
        this.pending -= 1;
        if (this.pending === 0) this.worker.unref();
        if (answer.failure) this.key = null;
        if (answer.failure?.panic) this.stop();
        resolve(answer);
      };
      const stopped = () => finish({ id, answers: [], failure: { message: 'the worker thread stopped', panic: true } });
      this.worker.on('message', finish);
      this.worker.once('exit', stopped);
      this.pending += 1;
      this.worker.ref();
      this.worker.postMessage({ job: { ...job, id, values: holds ? undefined : job.values } });
    });
  }

  stop() {
    this.dead = true;
    this.worker.terminate();
  }
}

/** The worker threads of this process (made on demand, kept for later calls). */
const threads = [];

/**
 * `count` live worker threads over `module` (at least; more may be running), started with
 * `warm` (see Thread) where they are new. `init()` starts them early, so that their warm-up
 * optimises the observers' code (V8 shares it with the calling thread) while the calling thread
 * reads its first tensor.
 */
export function startThreads(module, count, { warm = false } = {}) {
  for (let i = threads.length - 1; i >= 0; i--) if (threads[i].dead || threads[i].module !== module) threads.splice(i, 1)[0].stop();
  while (threads.length < Math.min(count, MAX_THREADS - 1)) {
    let thread;
    try {
      thread = new Thread(module, warm);
    } catch {
      break; // the host refuses threads (a permission, a limit): fewer of them, or none
    }
    thread.module = module;
    threads.push(thread);
  }
  return threads.slice(0, count);
}

/** Tell the worker threads holding tensor `key` to free it. */
export function dropTensor(key) {
  for (const thread of threads) {
    if (thread.key === key && !thread.dead) {
      thread.key = null;
      thread.worker.postMessage({ drop: key });
    }
  }
}

/**
 * The reports of `items` ({id, params}, params plain) over `tensor` (a Tensor of index.js),
 * `threads` threads in all (the calling one included), the calling thread observing with
 * `observe(item)`. `module` is the compiled WebAssembly module the workers instantiate.
 * Resolves to `{reports}` in the items' order, with how many of them the worker threads
 * answered (`fromThreads`) and why any worker stopped short (`failures`).
 */
export async function observeSideBySide({ module, tensor, items, explain, threads: wanted, observe }) {
  const order = placement(items);
  const count = Math.min(wanted, order.length, MAX_THREADS);
  const reports = new Array(items.length);
  const next = new Int32Array(new SharedArrayBuffer(4));
  const helpers = startThreads(module, count - 1);
  const values = helpers.some((thread) => thread.key !== tensor.key) ? sharedValues(tensor) : null;
  const job = { key: tensor.key, values, items, order, explain, next };
  const answers = helpers.map((thread) => thread.run(job));
  // The calling thread takes its share meanwhile (synchronously: the workers run on their own).
  for (let g = Atomics.add(next, 0, 1); g < order.length; g = Atomics.add(next, 0, 1)) {
    for (const i of order[g]) reports[i] = observe(items[i]);
  }
  let fromThreads = 0;
  const failures = [];
  for (const answer of await Promise.all(answers)) {
    for (const [i, report] of answer.answers) reports[i] = report;
    fromThreads += answer.answers.length;
    if (answer.failure) failures.push(answer.failure.message);
  }
  // What a worker took but did not answer (it failed or stopped), the calling thread observes.
  for (let i = 0; i < items.length; i++) if (reports[i] === undefined) reports[i] = observe(items[i]);
  return { reports, fromThreads, failures };
}
