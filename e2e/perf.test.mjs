// Measurements (written to test-results/perf.json): slider-update latency for a histogram-only
// change at 2048 bins, and load-and-observe time for a 16M-element tensor, in headless Chromium.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { start, RESULTS, npyBytes, panelData } from './helpers.mjs';

let env;
const report = {};
before(async () => {
  env = await start();
});
after(async () => {
  fs.writeFileSync(path.join(RESULTS, 'perf.json'), JSON.stringify(report, null, 2));
  await env.close();
});

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))];

test('slider latency of a histogram-only change at 2048 bins', async (t) => {
  const page = await env.page({ hash: '#o=torch.HistogramObserver' });
  const id = 'torch.HistogramObserver';
  const panel = `[role=region][aria-label="${id}"]`;
  assert.equal(await page.textContent(`${panel} .control[data-param=bins] output`), '2048');
  // A search-only slider of this observer (its search runs again on the stored 2048-bin histogram).
  const search = await page.$$eval(`${panel} .control[data-affects=search] input[type=range]:not([disabled])`, (els) => els.map((e) => e.id));
  assert.ok(search.length > 0, 'a search-only slider exists');
  const slider = `#${search[0]}`;
  const first = [];
  const complete = [];
  for (let i = 0; i < 24; i++) {
    const before = (await page.evaluate(() => window.quantscope.latencies())).length;
    await page.fill(slider, String(100 + ((i * 37) % 800)));
    await page.evaluate(() => window.quantscope.idle());
    const fresh = (await page.evaluate(() => window.quantscope.latencies())).slice(before);
    const partial = fresh.find((x) => x.kind === 'partial');
    const done = fresh.find((x) => x.kind === 'metrics');
    if (partial && partial.stateReused) first.push(partial.ms);
    if (done) complete.push(done.ms);
  }
  const reused = first;
  // For comparison: a data change (bins) re-observes the tensor.
  const data = [];
  for (const v of ['700', '800', '900', '1000']) {
    await page.fill(`${panel} .control[data-param=bins] input[type=range]`, v);
    await page.evaluate(() => window.quantscope.idle());
    data.push((await page.evaluate(() => window.quantscope.latencies())).at(-1).ms);
  }
  const elements = (await page.evaluate(() => window.quantscope.summary())).elements;
  report.slider = {
    tensor_elements: elements,
    histogram_only_change_ms: { median: median(reused), p95: p95(reused), samples: reused.length },
    same_change_with_error_metrics_ms: { median: median(complete), p95: p95(complete), samples: complete.length },
    data_change_ms: { median: median(data), samples: data.length },
  };
  t.diagnostic(`histogram-only slider change at 2048 bins (${elements} values): clipping range redrawn after median ${median(reused).toFixed(1)} ms (p95 ${p95(reused).toFixed(1)}), error metrics after median ${median(complete).toFixed(1)} ms; bins change (re-observe): median ${median(data).toFixed(1)} ms`);
  assert.ok(median(reused) < 250, 'interactive');
  await page.context().close();
});

test('load and observe a 16M-element tensor', async (t) => {
  const n = 16 * 1024 * 1024;
  const file = path.join(RESULTS, 'perf-16M.npy');
  const values = new Float32Array(n);
  let seed = 12345;
  for (let i = 0; i < n; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    values[i] = ((seed / 4294967296) - 0.5) * 6 + (i % 65536 === 0 ? 40 : 0);
  }
  fs.writeFileSync(file, npyBytes(values));
  const page = await env.page({ hash: '#o=torch.MinMaxObserver,torch.HistogramObserver' });
  // Watch the main thread: the longest gap between animation frames while loading.
  await page.evaluate(() => {
    window.__gaps = { max: 0, last: performance.now(), on: true };
    const tick = () => {
      const now = performance.now();
      window.__gaps.max = Math.max(window.__gaps.max, now - window.__gaps.last);
      window.__gaps.last = now;
      if (window.__gaps.on) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  const t0 = Date.now();
  await page.setInputFiles('#file', file);
  await page.waitForFunction(() => window.quantscope.summary() && window.quantscope.summary().elements === 16777216, null, { timeout: 600000 });
  const loaded = Date.now() - t0;
  await page.evaluate(() => window.quantscope.idle());
  const total = Date.now() - t0;
  const gap = await page.evaluate(() => {
    window.__gaps.on = false;
    return window.__gaps.max;
  });
  const mm = await panelData(page, 'torch.MinMaxObserver');
  const hist = await panelData(page, 'torch.HistogramObserver');
  assert.equal(mm.status, 'ready');
  assert.equal(hist.status, 'ready');
  assert.ok(Number(mm.clipMax) > 40);
  report.load_16M = {
    file_bytes: fs.statSync(file).size,
    load_and_summarise_ms: loaded,
    load_and_observe_ms: total,
    observers: ['torch.MinMaxObserver', 'torch.HistogramObserver'],
    longest_main_thread_frame_gap_ms: gap,
  };
  t.diagnostic(`16,777,216 values (64 MiB .npy, read in chunks): loaded + summarised in ${loaded} ms, loaded + observed by MinMax and Histogram + drawn in ${total} ms; longest main-thread frame gap ${gap.toFixed(0)} ms`);
  assert.ok(gap < 1000, `the page never froze (${gap} ms)`);
  fs.unlinkSync(file);
  await page.context().close();
});
