// The page's compare view in headless Chromium, timed for `npm run bench`
// (scripts/bench/checkpoints.py): prints one JSON line.
//
//   node e2e/bench-compare.mjs ORIGINAL QUANTIZED [WORKERS]
//
// Both files are handed to the compare view of a fresh page; the time is the view's own
// `data-seconds` (from the files chosen until the report is ready: headers listed, every pair
// read from the Files, compared by the pool of Web Workers and merged). WORKERS sets the pool
// (`?workers=N`; default: one per logical core). Uses the same Chromium and static server as the
// end-to-end tests (e2e/helpers.mjs).
import { start } from './helpers.mjs';

const [original, quantized, workersText] = process.argv.slice(2);
if (!original || !quantized) {
  console.error('usage: node e2e/bench-compare.mjs ORIGINAL QUANTIZED [WORKERS]');
  process.exit(2);
}
const query = workersText ? `?workers=${Number(workersText)}` : '';
const env = await start();
try {
  const page = await env.page({ hash: query });
  const workers = await page.evaluate(() => window.quantscope.workers?.() ?? null);
  await page.setInputFiles('#compare-original-files', original);
  await page.setInputFiles('#compare-quantized-files', quantized);
  await page.waitForSelector('#compare[data-state=done], #compare[data-state=error]', { timeout: 30 * 60 * 1000 });
  const state = await page.getAttribute('#compare', 'data-state');
  if (state !== 'done') throw new Error(`the comparison failed: ${await page.textContent('#compare-error')}`);
  const seconds = Number(await page.getAttribute('#compare', 'data-seconds'));
  const pairs = (await page.evaluate(() => window.quantscope.diff())).length;
  console.log(JSON.stringify({ seconds, pairs, workers }));
} finally {
  await env.close();
}
