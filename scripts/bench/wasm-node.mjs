// The wasm package in Node, timed on one tensor file: prints JSON for scripts/bench.sh.
//
//   node scripts/bench/wasm-node.mjs FILE.npy REPEAT [ID...]
//   node scripts/bench/wasm-node.mjs FILE.npy 1 --cold [ID...]
//
// With --cold it times what a fresh process (a script, a CI job, a notebook cell) pays: `init()`,
// then reading the file, loading it and observing the list once with `observeMany` (the first
// tensor the process sees, on one thread per core as the CLI), and prints the phases; the caller
// times the whole process.
//
// Without IDs it times the observers of scripts/bench/observers-per-tensor.txt, the list the CLI
// and library timings read.
// For each repetition a fresh tensor is loaded (so no state is reused), then observed. Only the
// functions `engine()` and `observeOnce()` know the package's JS API: adapt them when it
// changes.
//
// The list is also timed in worker_threads, one per core, as the page's pool of Web Workers
// runs it: each worker holds its own WebAssembly instance and, for each repetition, reads and
// loads the file, then takes the next observer nobody has taken until none is left (as the page's
// pool hands an observation to the first member free); the time is from asking the workers until
// the last answered, and the answers must equal the single-thread ones. The workers are started once
// and warmed up by a first repetition that is not timed, as the single-thread figures are.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

const [file, repeatText, ...args] = process.argv.slice(2);
const cold = args.includes('--cold');
const given = args.filter((a) => a !== '--cold');
const listed = () =>
  readFileSync(new URL('./observers-per-tensor.txt', import.meta.url), 'utf8')
    .split('\n')
    .map((line) => line.split('#')[0].trim())
    .filter((id) => id);
const ids = given.length ? given : listed();
const repeat = Number(repeatText) || 3;

/** The npm package, initialised; and which wasm flavour it loaded, when it says. */
async function engine() {
  const qs = await import('../../www/lib/index.js');
  await qs.init();
  let flavour = null;
  try {
    flavour = (await import('../../www/lib/wasm-flavour.js')).loadedFlavour?.() ?? null;
  } catch {
    flavour = null;
  }
  return { qs, flavour };
}

/** Load `bytes` as a tensor and run `observers` on it: [loadSeconds, observeSeconds, results]. */
function observeOnce(qs, bytes, observers) {
  const t0 = performance.now();
  const tensor = qs.loadTensor(bytes, { name: 'bench.npy' });
  const t1 = performance.now();
  const results = observers.map((id) => qs.observe(tensor, id));
  const t2 = performance.now();
  tensor.free();
  return [(t1 - t0) / 1e3, (t2 - t1) / 1e3, results];
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const summary = (r) => ({ observer: r.observer, ok: r.ok, scale: r.scale ?? r.qparams?.scale, zero_point: r.zero_point ?? r.qparams?.zero_point, metrics: r.metrics });

/** `n` worker_threads, each with its WebAssembly instance, answering shares of an observer list. */
class WorkerPool {
  constructor(n) {
    this.workers = Array.from({ length: n }, () => new Worker(new URL(import.meta.url), { workerData: { file } }));
  }

  /**
   * Wall seconds to run `observers` on the workers (each takes the next one left, counted in
   * shared memory), and the answers in list order.
   */
  async run(observers) {
    const next = new Int32Array(new SharedArrayBuffer(4));
    const t0 = performance.now();
    const answers = await Promise.all(
      this.workers.map(
        (worker) =>
          new Promise((resolve, reject) => {
            worker.once('message', resolve);
            worker.once('error', reject);
            worker.postMessage({ ids: observers, next });
          }),
      ),
    );
    const seconds = (performance.now() - t0) / 1e3;
    const ordered = [];
    for (const [i, answer] of answers.flat()) ordered[i] = answer;
    return [seconds, ordered];
  }

  close() {
    return Promise.all(this.workers.map((w) => w.terminate()));
  }
}

async function main() {
  const { qs, flavour } = await engine();
  const bytes = new Uint8Array(readFileSync(file));
  const time = (observers, times) => {
    observeOnce(qs, bytes, observers); // warm-up
    const load = [];
    const observe = [];
    let last = null;
    for (let i = 0; i < times; i++) {
      const [l, o, results] = observeOnce(qs, bytes, observers);
      load.push(l);
      observe.push(o);
      last = results;
    }
    return { load_median_s: median(load), observe_median_s: median(observe), load_runs_s: load, observe_runs_s: observe, last };
  };
  const histogram = time(['torch.HistogramObserver'], repeat);
  const minmax = time(['torch.MinMaxObserver'], repeat);
  const all = time(ids, Math.min(repeat, 3));
  const threads = os.availableParallelism();
  const pool = new WorkerPool(threads);
  const pooled = [];
  let pooledLast = null;
  await pool.run(ids); // warm-up
  for (let i = 0; i < Math.min(repeat, 3); i++) {
    const [seconds, answers] = await pool.run(ids);
    pooled.push(seconds);
    pooledLast = answers;
  }
  await pool.close();
  const identical = JSON.stringify(pooledLast) === JSON.stringify(all.last.map(summary));
  console.log(JSON.stringify({
    node: process.version,
    flavour,
    histogram_observer: { ...histogram, last: histogram.last.map(summary) },
    minmax_qdq_metrics: { ...minmax, last: minmax.last.map(summary) },
    all_observers: { ...all, last: all.last.map(summary) },
    // file read, load and observe included, as for the CLI (warm workers)
    all_observers_workers: { workers: threads, median_s: median(pooled), runs_s: pooled, identical },
  }));
}

/**
 * The phases of a fresh process: init, then the first tensor (file read, load, and the list
 * observed as a script would ask for it: `observeMany`, one thread per core).
 */
async function coldStart() {
  const t0 = performance.now();
  const { qs, flavour } = await engine();
  const t1 = performance.now();
  const tensor = qs.loadTensor(readFileSync(file), { name: 'bench.npy' });
  const t2 = performance.now();
  const results = await qs.observeMany(tensor, ids);
  const t3 = performance.now();
  tensor.free();
  console.log(JSON.stringify({
    node: process.version,
    flavour,
    threads: os.availableParallelism(),
    init_s: (t1 - t0) / 1e3,
    first_tensor_s: (t3 - t1) / 1e3,
    first_load_s: (t2 - t1) / 1e3,
    first_observe_s: (t3 - t2) / 1e3,
    failed: results.filter((r) => !r.ok).map((r) => `${r.observer}: ${r.error?.message ?? '?'}`),
  }));
}

if (!isMainThread) {
  // A worker of `WorkerPool`: for each message, its share of the observers on its own copy of
  // the file.
  const { qs } = await engine();
  parentPort.on('message', ({ ids, next }) => {
    const tensor = qs.loadTensor(new Uint8Array(readFileSync(workerData.file)), { name: 'bench.npy' });
    const answers = [];
    for (let i = Atomics.add(next, 0, 1); i < ids.length; i = Atomics.add(next, 0, 1)) answers.push([i, summary(qs.observe(tensor, ids[i]))]);
    tensor.free();
    parentPort.postMessage(answers);
  });
} else if (cold) {
  await coldStart();
} else {
  await main();
}
