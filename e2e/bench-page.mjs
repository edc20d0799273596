// The page in headless Chromium, timed for `npm run bench` (scripts/bench/bench.py calls it
// through `measure_page`): prints one JSON line.
//
//   node e2e/bench-page.mjs FILE.npy [SLIDER_CHANGES]
//
// 1. Every registered observer selected, then FILE dropped on the page: the time from handing
//    the file to the page until every panel is ready (observed, searched, metrics drawn).
// 2. On that tensor, a histogram-only slider of torch.HistogramObserver (a `data-affects=search`
//    control: its search runs again on the stored histogram) moved SLIDER_CHANGES times (24 by
//    default): the page's own latency of each redraw of the clipping range, median and p95.
// Uses the same Chromium and static server as the end-to-end tests (e2e/helpers.mjs); the page's
// test API (`window.quantscope`) is the only thing it knows of the page.
import fs from 'node:fs';
import { start, panelData } from './helpers.mjs';

const [file, changesText] = process.argv.slice(2);
if (!file) {
  console.error('usage: node e2e/bench-page.mjs FILE.npy [SLIDER_CHANGES]');
  process.exit(2);
}
const changes = Number(changesText) || 24;
/** Float32 values in a .npy (v1 header) file, from its size. */
const header = Buffer.alloc(10);
fs.readSync(fs.openSync(file, 'r'), header, 0, 10, 0);
const expected = (fs.statSync(file).size - 10 - header.readUInt16LE(8)) / 4;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p95 = (xs) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))];
const LONG = { timeout: 900_000 };

const env = await start();
try {
  const page = await env.page();
  const ids = await page.evaluate(() => window.quantscope.registry().map((o) => o.id));
  await page.evaluate((list) => window.quantscope.setObservers(list), ids);

  const t0 = Date.now();
  await page.setInputFiles('#file', file);
  await page.waitForFunction(
    (n) => window.quantscope.summary()?.elements === n,
    expected,
    LONG,
  );
  await page.evaluate(() => window.quantscope.idle());
  const allReadyMs = Date.now() - t0;
  const elements = (await page.evaluate(() => window.quantscope.summary())).elements;
  const statuses = await Promise.all(ids.map((id) => panelData(page, id).then((d) => d.status)));
  const notReady = ids.filter((_, i) => statuses[i] !== 'ready');

  const id = 'torch.HistogramObserver';
  const panel = `[role=region][aria-label="${id}"]`;
  const sliders = await page.$$eval(`${panel} .control[data-affects=search] input[type=range]:not([disabled])`, (els) =>
    els.map((e) => e.id),
  );
  const redraws = [];
  if (sliders.length > 0) {
    for (let i = 0; i < changes; i++) {
      const before = (await page.evaluate(() => window.quantscope.latencies())).length;
      await page.fill(`#${sliders[0]}`, String(100 + ((i * 37) % 800)));
      await page.evaluate(() => window.quantscope.idle());
      const fresh = (await page.evaluate(() => window.quantscope.latencies())).slice(before);
      const partial = fresh.find((x) => x.kind === 'partial');
      if (partial && partial.retuned) redraws.push(partial.ms);
    }
  }
  console.log(
    JSON.stringify({
      elements,
      observers: ids.length,
      all_panels_ready_s: allReadyMs / 1e3,
      panels_not_ready: notReady,
      slider: sliders[0] ?? null,
      slider_median_ms: redraws.length ? median(redraws) : null,
      slider_p95_ms: redraws.length ? p95(redraws) : null,
      slider_samples: redraws.length,
      page_errors: page.errors,
    }),
  );
  await page.context().close();
} finally {
  await env.close();
}
