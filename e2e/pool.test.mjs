// The page's pool of Web Workers (www/lib/pool.js) gives exactly what one worker gives: every
// observer of the registry on a real MiniLM weight, then a search-only slider moved, with one
// worker and with two; every panel's data-* attributes, the curve's markers and the exported
// comparison SVG must be identical, and with two workers both must have computed observers,
// each `.fixed` variant on the worker of the observer it corrects.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { sharedDir, panelData, loadInPage } from './helpers.mjs';
import { browserForTests } from './suite.mjs';

const WEIGHT = path.join(sharedDir(), 'samples', 'minilm', 'weights', 'l0_attn_output_dense_weight.npy');
const SLIDER_OBSERVER = 'torch.HistogramObserver';

const env = browserForTests();

/** Everything the page shows of its observers after the run, with `workers` Web Workers. */
async function runWith(workers) {
  const page = await env.page({ hash: `?workers=${workers}` });
  assert.equal(await page.evaluate(() => window.quantscope.workers()), workers);
  const ids = await page.evaluate(() => window.quantscope.registry().map((o) => o.id));
  await page.evaluate((list) => window.quantscope.setObservers(list), ids);
  await loadInPage(page, fs.readFileSync(WEIGHT), { name: 'weight.npy' });
  const ownerOf = await page.evaluate(() => Object.fromEntries(window.quantscope.engine.owners));
  const owners = [...new Set(Object.values(ownerOf))].sort();

  const panel = `[role=region][aria-label="${SLIDER_OBSERVER}"]`;
  const [slider] = await page.$$eval(`${panel} .control[data-affects=search] input[type=range]:not([disabled])`, (els) => els.map((e) => e.id));
  assert.ok(slider, 'a search-only slider exists');
  await page.fill(`#${slider}`, '300');
  await page.evaluate(() => window.quantscope.idle());

  const panels = {};
  for (const id of ids) {
    // `drawn` counts the panel's redraws, which depends on when the answers came: not a result.
    const { drawn, ...data } = await panelData(page, id);
    assert.ok(Number(drawn) > 0, `${id} is drawn`);
    panels[id] = data;
  }
  const curve = await page.evaluate(() => window.quantscope.curve());
  const svg = await page.evaluate(() => window.quantscope.comparisonSvg());
  const errors = page.errors;
  await page.context().close();
  return { ids, panels, curve, svg, owners, ownerOf, errors };
}

test('a pool of two workers shows exactly what one worker shows', async () => {
  const one = await runWith(1);
  const two = await runWith(2);
  assert.deepEqual(one.owners, [0]);
  assert.deepEqual(two.owners, [0, 1], 'both workers computed observers');
  // A `.fixed` variant runs where the observer it corrects runs, sharing its work.
  const variants = two.ids.filter((id) => id.endsWith('.fixed') && two.ids.includes(id.slice(0, -'.fixed'.length)));
  assert.ok(variants.length >= 4, `variants: ${variants}`);
  for (const id of variants) assert.equal(two.ownerOf[id], two.ownerOf[id.slice(0, -'.fixed'.length)], `${id} runs with its observer`);
  assert.ok(one.ids.length > 40, `every observer runs (${one.ids.length})`);
  for (const id of one.ids) {
    assert.ok(['ready', 'error'].includes(one.panels[id].status), `${id} answered`);
    assert.deepEqual(two.panels[id], one.panels[id], `${id}: the same data-* with two workers`);
  }
  const ready = one.ids.filter((id) => one.panels[id].status === 'ready');
  assert.ok(ready.length > 40, `${ready.length} observers ready`);
  assert.ok(one.curve.markers.length > 40, 'the curve marks every observer');
  assert.deepEqual(two.curve, one.curve);
  assert.ok(one.svg.includes('<svg') && one.svg.includes(SLIDER_OBSERVER));
  assert.equal(two.svg, one.svg);
  assert.deepEqual(one.errors, []);
  assert.deepEqual(two.errors, []);
});
