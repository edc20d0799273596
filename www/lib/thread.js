// A worker thread of `observeMany` (threads.js has the protocol): instantiates the module the
// calling thread compiled (and runs the engine's warm-up when `init()` started it), loads the
// values the calling thread shared as the tensor's batches, then takes lists of observations
// until none is left.
import { parentPort, workerData } from 'node:worker_threads';
import * as wasm from '../pkg/quantscope.js';
import { loadedEngine } from './engine.js';
import { initSync } from './index.js';

initSync(workerData.module);
// The calling thread warms the loading code (index.js `init`); this one, the observers.
if (workerData.warm) wasm.warmUp('observers');

/** The tensor this thread holds: {key, engine}, or null. */
let held = null;

function release() {
  if (held) held.engine.free();
  held = null;
}

/** An engine holding `values` ({batches: [{data, shape}], split}) selected as the tensor. */
function load(values) {
  const names = values.batches.map((_, i) => `batch ${i}`);
  return loadedEngine({ files: values.batches, names, split: values.split }).engine;
}

/** The engine holding tensor `job.key`, loaded unless held. */
function engineOf(job) {
  if (held && held.key === job.key) return held.engine;
  release();
  if (!job.values) throw new Error('the worker thread does not hold the tensor');
  held = { key: job.key, engine: load(job.values) };
  return held.engine;
}

function run(job) {
  const answers = [];
  try {
    const engine = engineOf(job);
    const { items, order, explain, next } = job;
    for (let g = Atomics.add(next, 0, 1); g < order.length; g = Atomics.add(next, 0, 1)) {
      for (const i of order[g]) answers.push([i, engine.observation({ ...items[i], explain })]);
    }
    return { answers };
  } catch (err) {
    const panic = err instanceof WebAssembly.RuntimeError;
    if (panic) held = null; // the instance cannot be trusted; the calling thread stops this one
    return { answers, failure: { message: err && err.message ? err.message : String(err), panic } };
  }
}

parentPort.on('message', (msg) => {
  if (msg.drop !== undefined) {
    if (held && held.key === msg.drop) release();
    return;
  }
  parentPort.postMessage({ id: msg.job.id, ...run(msg.job) });
});
