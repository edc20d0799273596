// Every family's golden cases through the explorer page in Chromium, as a user's page runs them:
// the case's inputs are loaded like dropped files (window.quantscope.load: several files become
// calibration batches in order), once for all the cases of a family that read the same inputs
// (the cases then follow each other on the loaded tensor, as a user's parameter changes do:
// an observer met again is updated in its panel, with its collected state reused where only its
// search changed), then
// * an observer case is observed with its flat parameters (window.quantscope.observe, the panel
//   the page shows) and its report compared with the framework's numbers;
// * a format case (bitsandbytes, ggml) is quantized by the page's engine in its Web Worker
//   (window.quantscope.quantize: every dequantized value compared) and added to the formats
//   view (window.quantscope.setFormats: the row's bits per value and error metrics compared);
// each within the case's own tolerance, by the checks of e2e/npm-golden.mjs (the case's
// parameters as the framework's call records them, the same fields). Case inputs and expected
// tensors are read in Node by the npm package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { sharedDir, npyBytes, loadInPage } from './helpers.mjs';
import * as qs from '../www/lib/index.js';
import { browserForTests } from './suite.mjs';
import { caseJob, families, loadCases, tally } from './npm-golden.mjs';

/** Pages working in parallel, each on its share of the cases. */
const PAGES = 2;
const GOLDEN = path.join(sharedDir(), 'golden');

const env = browserForTests({ setup: qs.init });

/**
 * Load `inputs` (file bytes, in order; none: a one-value tensor) into the page like dropped
 * files. The previous case's panel is closed first, so a load runs no observer and the page
 * shows the current case's panel alone.
 */
function load(page, inputs, name) {
  return loadInPage(page, inputs.length ? inputs : [npyBytes([0])], { name, closePanels: true });
}

/** Observe in the page: the panel's report. */
function observe(page, id, params) {
  return page.evaluate(({ id, params }) => window.quantscope.observe(id, params), { id, params });
}

/**
 * Quantize in the page's worker (with `explain`, its block derivation too), then add the same
 * format to the formats view: the values (as float32, −0.0 kept) and the view's row for it.
 */
function quantize(page, id, params, { formatsView, explain }) {
  return page.evaluate(async ({ id, params, formatsView, explain }) => {
    const r = await window.quantscope.quantize(id, params, { explain });
    // The float32 bytes as base64 (−0.0 included), far faster to carry than numbers.
    const raw = new Uint8Array(r.values.buffer, r.values.byteOffset, r.values.byteLength);
    let text = '';
    for (let i = 0; i < raw.length; i += 0x8000) text += String.fromCharCode(...raw.subarray(i, i + 0x8000));
    const result = { ...r, values: btoa(text) };
    if (!formatsView) return { result };
    const rows = await window.quantscope.setFormats([{ id, params }]);
    const row = rows.find((x) => x.extra);
    return { result, row: row ? { ...row, params: undefined } : null };
  }, { id, params, formatsView, explain }).then(({ result, row }) => {
    const bytes = Buffer.from(result.values, 'base64');
    const values = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
    return { result: { ...result, values }, row };
  });
}

/** The formats view's row against the engine's result: same format, bits and metrics. */
function rowMismatches(row, result) {
  if (!row) return ['the formats view has no row for it'];
  if (row.error) return [`the formats view: ${row.error}`];
  const out = [];
  for (const field of ['format', 'bits_per_value', 'mse', 'max_abs_err', 'sqnr_db', 'clipped_fraction']) {
    if (row[field] !== result[field]) out.push(`formats view ${field}: ${row[field]}, the engine's ${result[field]}`);
  }
  return out;
}

test('every golden case through the page: observers panel, quantize in the worker, formats view', { timeout: 1_800_000 }, async (t) => {
  const t0 = Date.now();
  const specs = new Map(qs.observers().map((o) => [o.id, o]));
  const formatIds = new Set(qs.quantizers().formats.map((f) => f.id));
  const jobs = [];
  const tallies = {};
  // GOLDEN_FAMILIES=bnb,ggml limits a run to some families (all by default).
  const only = process.env.GOLDEN_FAMILIES ? process.env.GOLDEN_FAMILIES.split(',') : null;
  const chosen = families(GOLDEN).filter((f) => !only || only.includes(f));
  for (const family of chosen) {
    const cases = loadCases(GOLDEN, family);
    tallies[family] = { page: tally(cases.length), view: tally(0) };
    const readVector = (rel) => {
      const tensor = qs.loadTensor(fs.readFileSync(path.join(GOLDEN, family, rel)), { name: path.basename(rel) });
      try {
        return tensor.values();
      } finally {
        tensor.free();
      }
    };
    for (const c of cases) {
      const job = caseJob(c, family, { specs, formatIds, readVector });
      if (job.skip) tallies[family].page.skip(job.skip);
      else jobs.push({ c, family, job });
    }
  }
  // The cases of a family that read the same inputs, in their order: one load each.
  const groups = new Map();
  for (const item of jobs) {
    const key = JSON.stringify([item.family, item.job.inputs]);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(item);
  }
  // Each page takes the next group left, so the pages end together.
  const queue = [...groups.values()];
  // Opened on one observer (the URL chooses the panels): no default line-up runs at each load.
  const pages = await Promise.all(Array.from({ length: PAGES }, () => env.page({ hash: '#o=torch.MinMaxObserver' })));
  await Promise.all(pages.map(async (page) => {
    for (let group = queue.shift(); group; group = queue.shift()) {
      const first = group[0];
      const inputs = first.job.inputs.map((rel) => fs.readFileSync(path.join(GOLDEN, first.family, rel)));
      let loadError = null;
      try {
        await load(page, inputs, path.basename(first.job.inputs[0] || 'none.npy'));
      } catch (err) {
        loadError = err;
      }
      for (const { c, family, job } of group) {
        const { page: viaPage, view } = tallies[family];
        let problems;
        try {
          if (loadError) throw loadError;
          if (job.kind === 'observe') problems = job.check(await observe(page, job.id, job.params));
          else {
            const formatsView = Boolean(c.quantizer);
            const { result, row } = await quantize(page, job.id, job.params, { formatsView, explain: Boolean(job.explain) });
            problems = job.check(result);
            if (formatsView) view.record(c, rowMismatches(row, result));
          }
        } catch (err) {
          problems = [`threw: ${err.message}`];
        }
        viaPage.record(c, problems);
      }
    }
  }));
  for (const page of pages) assert.deepEqual(page.errors, [], 'no console errors');
  await Promise.all(pages.map((p) => p.context().close()));
  const seconds = ((Date.now() - t0) / 1000).toFixed(1);
  const line = (name, s) => `${name} ${s.passed}/${s.checked}${Object.keys(s.skipped).length ? ` (${Object.entries(s.skipped).map(([why, n]) => `${n} skipped: ${why}`).join(', ')})` : ''}`;
  const counts = Object.entries(tallies).map(([family, { page, view }]) => line(family, page.summary) + (view.summary.checked ? `, formats view ${view.summary.passed}/${view.summary.checked}` : ''));
  t.diagnostic(`golden cases through the page: ${counts.join('; ')} in ${seconds} s on ${PAGES} pages`);
  console.log(`page golden: ${counts.join('; ')} (${seconds} s)`);
  for (const family of families(path.join(sharedDir(), 'golden')).filter((f) => !only || only.includes(f))) {
    assert.ok(tallies[family] && tallies[family].page.summary.checked > 0, `${family} cases were checked`);
  }
  for (const [family, { page, view }] of Object.entries(tallies)) {
    assert.deepEqual(page.summary.failures, [], `${family}: ${page.summary.passed}/${page.summary.checked}`);
    assert.deepEqual(view.summary.failures, [], `${family} (formats view): ${view.summary.passed}/${view.summary.checked}`);
  }
});
