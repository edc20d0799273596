// `observeMany` in Node (www/lib/threads.js): observations shared out between the calling thread
// and worker threads give exactly the reports of `observe` one after the other, for every
// observer of the registry on a real MiniLM weight (parameters, a refused parameter and
// derivations included); a worker thread really answers part of them, from the values the
// calling thread loaded even when the data given to loadTensor has changed since.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, sharedDir } from './helpers.mjs';
import * as qs from '../www/lib/index.js';
import { observeSideBySide } from '../www/lib/threads.js';

/** The module the worker threads instantiate (compiled here: the same code as the package's). */
const MODULE = new WebAssembly.Module(fs.readFileSync(path.join(ROOT, 'www', 'pkg', 'quantscope_bg.wasm')));
const WEIGHT = path.join(sharedDir(), 'samples', 'minilm', 'weights', 'l0_attn_output_dense_weight.npy');

/** Keeps the calling thread busy for `ms`, so that a worker thread takes part of the list. */
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** The calling thread's observations (`explain` as asked), the first one held back by `delayMs`. */
function callingThread(tensor, delayMs, explain = false) {
  let first = true;
  return (item) => {
    if (first) sleep(delayMs);
    first = false;
    return tensor.engine.observation({ ...item, explain });
  };
}

/**
 * A report as plain data, without `state_reused` (whether the thread's session had collected
 * the state already: a fact of that session's history, not of the result).
 */
const plain = (report) => JSON.parse(JSON.stringify(report, (k, v) => (k === 'state_reused' ? undefined : ArrayBuffer.isView(v) ? Array.from(v) : v)));

test('observeMany equals observe one after the other, on every observer, with worker threads', { timeout: 600_000 }, async () => {
  await qs.init();
  const bytes = fs.readFileSync(WEIGHT);
  const tensor = qs.loadTensor(bytes, { name: 'weight.npy' });
  const list = [
    ...qs.observers().map((o) => o.id),
    { id: 'torch.HistogramObserver', params: { bins: 512 } },
    { id: 'torch.MinMaxObserver', params: { quant_min: 0, quant_max: 0 } },
  ];
  const one = list.map((item) => (typeof item === 'string' ? qs.observe(tensor, item) : qs.observe(tensor, item.id, item.params)));
  assert.equal(one.at(-1).ok, false, 'the refused parameter is reported');
  const many = await qs.observeMany(tensor, list, { threads: 2 });
  assert.equal(many.length, list.length);
  many.forEach((report, i) => assert.deepEqual(plain(report), plain(one[i]), `report ${i} (${one[i].observer})`));
  // The same through the threads themselves: the calling thread held back, a worker answers.
  const items = list.map((item) => (typeof item === 'string' ? { id: item, params: {} } : item));
  const spread = await observeSideBySide({
    module: MODULE,
    tensor,
    items,
    explain: true,
    threads: 2,
    observe: callingThread(tensor, 1500, true),
  });
  assert.ok(spread.fromThreads > 0, `a worker thread answered (${spread.fromThreads} of ${items.length})`);
  assert.deepEqual(spread.failures, []);
  const explained = items.map((item) => tensor.engine.observation({ ...item, explain: true }));
  assert.ok(explained.some((r) => Array.isArray(r.derivation) && r.derivation.length > 0), 'derivations are compared');
  spread.reports.forEach((report, i) => assert.deepEqual(plain(report), plain(explained[i]), `explained report ${i}`));
  tensor.free();
});

test('the worker threads observe the values loaded, even when the data given to loadTensor changed since', { timeout: 120_000 }, async () => {
  await qs.init();
  const values = new Float32Array(4096).map((_, i) => Math.sin(i) * (1 + (i % 7)));
  const tensor = qs.loadTensor(values, { shape: [64, 64] });
  const items = ['torch.MinMaxObserver', 'torch.HistogramObserver', 'torch.PerChannelMinMaxObserver', 'quark.PerTensorMSEObserver'].map((id) => ({ id, params: {} }));
  const before = items.map((item) => tensor.engine.observation(item));
  values[17] = 1000; // changed after loadTensor: the tensor keeps the values it loaded
  const spread = await observeSideBySide({
    module: MODULE,
    tensor,
    items,
    explain: false,
    threads: 2,
    observe: callingThread(tensor, 300),
  });
  assert.ok(spread.fromThreads > 0, `a worker thread answered (${spread.fromThreads})`);
  assert.deepEqual(spread.failures, []);
  spread.reports.forEach((report, i) => assert.deepEqual(plain(report), plain(before[i]), `report ${i}`));
  await assert.rejects(qs.observeMany(tensor, ['torch.MinMaxObserver'], { threads: 0 }), /threads must be a whole number/);
  tensor.free();
});

test('two calls at once on the same worker threads each get their own reports', { timeout: 120_000 }, async () => {
  await qs.init();
  const values = new Float32Array(8192).map((_, i) => Math.cos(i) * (1 + (i % 5)));
  const a = qs.loadTensor(values, { shape: [64, 128] });
  const b = qs.loadTensor(values.map((v) => 3 * v + 1), { shape: [64, 128] });
  const items = ['torch.MinMaxObserver', 'torch.HistogramObserver', 'quark.PerTensorMSEObserver', 'horizon.MSEObserver'].map((id) => ({ id, params: {} }));
  const expected = [a, b].map((t) => items.map((item) => plain(t.engine.observation(item))));
  // Started in one tick: the first call's answer reaches the calling thread after the second
  // call has sent its job to the same worker.
  const calls = [a, b].map((tensor, k) =>
    observeSideBySide({ module: MODULE, tensor, items, explain: false, threads: 2, observe: callingThread(tensor, k === 0 ? 300 : 0) }),
  );
  const spread = await Promise.all(calls);
  assert.ok(spread[0].fromThreads > 0, 'a worker thread answered the first call');
  spread.forEach((s, k) => s.reports.forEach((report, i) => assert.deepEqual(plain(report), expected[k][i], `call ${k}, report ${i}`)));
  a.free();
  b.free();
});
