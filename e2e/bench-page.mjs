// The page in headless Chromium, timed for `npm run bench` (scripts/bench/bench.py calls it
// through `measure_page`): prints one JSON line per measurement as it ends, the last one with
// every figure.
//
//   node e2e/bench-page.mjs FILE.npy [SLIDER_CHANGES] [WORKERS] [--original]
//
// 0. Loading: FILE dropped on a page with no observer selected; the time from handing the file
//    to the page until its tensor is selected (read, decoded, summarised, page idle).
// 1. Every registered observer selected (with --original, the 43 the page had before the
//    llm-compressor and torchao observers came), then FILE dropped on a fresh page: the time
//    from handing the file to the page until every panel is ready (each panel's data-status is
//    "ready" or "error", none busy or pending, the page idle). Where the time goes: each
//    observer's time inside its worker, slowest first, and each worker's idle time.
// 2. On that tensor, a histogram-only slider of torch.HistogramObserver (a `data-affects=search`
//    control: its search runs again on the stored histogram) moved SLIDER_CHANGES times (24 by
//    default): the page's own latency from the input event to the panel's canvas drawn with the
//    new clipping range, median and p95.
// WORKERS sets the page's pool of Web Workers (`?workers=N`; default: one per logical core).
// Uses the same Chromium and static server as the end-to-end tests (e2e/helpers.mjs); the page's
// test API (`window.quantscope`) is the only thing it knows of the page.
import fs from 'node:fs';
import os from 'node:os';
import { start, panelData } from './helpers.mjs';

const args = process.argv.slice(2);
const original = args.includes('--original');
const [file, changesText, workersText] = args.filter((a) => a !== '--original');
if (!file) {
  console.error('usage: node e2e/bench-page.mjs FILE.npy [SLIDER_CHANGES] [WORKERS] [--original]');
  process.exit(2);
}
const changes = Number(changesText) || 24;
const query = workersText ? `?workers=${Number(workersText)}` : '';
/** Observers the page gained after the 43 of the issue's target (their frameworks' prefixes). */
const LATER = ['llmcompressor.', 'torchao.'];
/** Float32 values in a .npy (v1 header) file, from its size. */
const header = Buffer.alloc(10);
fs.readSync(fs.openSync(file, 'r'), header, 0, 10, 0);
const expected = (fs.statSync(file).size - 10 - header.readUInt16LE(8)) / 4;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))];
const LONG = { timeout: 3_600_000 };
const load = () => Number(os.loadavg()[0].toFixed(2));
const out = { file, elements: expected };
const report = (extra) => {
  Object.assign(out, extra);
  console.log(JSON.stringify(out));
};

/** Drop FILE on `page` and wait until its tensor is selected and the page is idle; seconds. */
async function dropFile(page) {
  const t0 = Date.now();
  await page.setInputFiles('#file', file);
  await page.waitForFunction((n) => window.quantscope.summary()?.elements === n, expected, LONG);
  await page.evaluate(() => window.quantscope.idle());
  return (Date.now() - t0) / 1e3;
}

const env = await start();
try {
  const loading = await env.page({ hash: query });
  await loading.evaluate(() => window.quantscope.setObservers([]));
  const loadLoad = load();
  const loadS = await dropFile(loading);
  report({ workers: await loading.evaluate(() => window.quantscope.workers()), load_s: loadS, load_load_average: loadLoad });
  await loading.context().close();

  const page = await env.page({ hash: query });
  const registered = await page.evaluate(() => window.quantscope.registry().map((o) => o.id));
  const ids = original ? registered.filter((id) => !LATER.some((p) => id.startsWith(p))) : registered;
  await page.evaluate((list) => window.quantscope.setObservers(list), ids);
  const readyLoad = load();
  const dropped = await page.evaluate(() => performance.timeOrigin + performance.now());
  const allReadyS = await dropFile(page);
  const statuses = await Promise.all(ids.map((id) => panelData(page, id).then((d) => d.status)));
  const notReady = ids.filter((_, i) => !['ready', 'error'].includes(statuses[i]));
  const errors = ids.filter((_, i) => statuses[i] === 'error');
  const timings = await page.evaluate(() => window.quantscope.engine.members.flatMap((m, worker) => m.timings.map((t) => ({ ...t, worker }))));
  const observing = timings.filter((t) => t.method === 'observe').sort((a, b) => b.ms - a.ms);
  const perWorker = {};
  for (const t of observing) perWorker[t.worker] = (perWorker[t.worker] || 0) + t.ms / 1e3;
  const byMethod = {};
  for (const t of timings) byMethod[t.method] = (byMethod[t.method] || 0) + t.ms / 1e3;
  // Each worker's time without a call to compute after the drop, from its first call's start to
  // its last one's end (waiting for the page to hand it work, or sending an answer).
  const idleS = {};
  const afterDrop = timings.filter((t) => t.started >= dropped);
  for (const worker of new Set(afterDrop.map((t) => t.worker))) {
    const own = afterDrop.filter((t) => t.worker === worker);
    const span = Math.max(...own.map((t) => t.ended)) - Math.min(...own.map((t) => t.started));
    idleS[worker] = (span - own.reduce((sum, t) => sum + t.ms, 0)) / 1e3;
  }
  const drawS = (await page.evaluate(() => window.quantscope.latencies())).reduce((sum, x) => sum + x.draw, 0) / 1e3;
  report({
    observers: ids.length,
    all_panels_ready_s: allReadyS,
    all_panels_load_average: readyLoad,
    panels_not_ready: notReady,
    panels_with_error: errors,
    observe_s_per_worker: perWorker,
    idle_s_per_worker: idleS,
    worker_s_by_method: byMethod,
    panels_draw_s: drawS,
    slowest_observers_s: observing.map((t) => [t.id, t.ms / 1e3, t.worker]),
  });

  const id = 'torch.HistogramObserver';
  const panel = `[role=region][aria-label="${id}"]`;
  const sliders = await page.$$eval(`${panel} .control[data-affects=search] input[type=range]:not([disabled])`, (els) =>
    els.map((e) => e.id),
  );
  const redraws = [];
  const parts = [];
  const sliderLoad = load();
  if (sliders.length > 0) {
    for (let i = 0; i < changes; i++) {
      const before = (await page.evaluate(() => window.quantscope.latencies())).length;
      await page.fill(`#${sliders[0]}`, String(100 + ((i * 37) % 800)));
      await page.evaluate(() => window.quantscope.idle());
      const fresh = (await page.evaluate(() => window.quantscope.latencies())).slice(before);
      const partial = fresh.find((x) => x.kind === 'partial');
      if (partial && partial.stateReused) {
        redraws.push(partial.ms);
        parts.push(partial);
      }
    }
  }
  report({
    slider: sliders[0] ?? null,
    slider_median_ms: redraws.length ? median(redraws) : null,
    slider_p95_ms: redraws.length ? p95(redraws) : null,
    slider_samples: redraws.length,
    // where a redraw's time goes: until the engine's answer arrived, and drawing it
    slider_received_median_ms: parts.length ? median(parts.map((x) => x.received)) : null,
    slider_draw_median_ms: parts.length ? median(parts.map((x) => x.draw)) : null,
    slider_load_average: sliderLoad,
    page_errors: page.errors,
  });
  await page.context().close();
} finally {
  await env.close();
}
