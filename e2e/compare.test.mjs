// End-to-end tests of the compare view (`#compare`, www/ui/compare.js) in headless Chromium and
// of the npm package's `diff`: the golden GGUF (`model-Q4_K_M.gguf`, llama.cpp's k-quants with
// Q5_0/Q6_K/Q8_0 fallbacks) against its original safetensors with the importance matrix gives
// exactly `quantscope diff --json` (every number) and `--csv`; opening a row draws the pair's
// charts and sends the original to the observer panels; cancel keeps the pairs compared so far;
// axe-core finds nothing wrong with the view.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { start, sharedDir, ROOT, RESULTS, inkRatio, ggufGolden, compareCheckpoints, axeViolations, describeViolation } from './helpers.mjs';
import { cli } from './helpers.mjs';

/**
 * The golden files side by side in one folder (links), so that the CLI names them as the page
 * does (by file name).
 */
function workDir() {
  const dir = path.join(RESULTS, 'compare-golden');
  fs.mkdirSync(dir, { recursive: true });
  for (const f of Object.values(ggufGolden())) {
    const link = path.join(dir, path.basename(f));
    if (!fs.existsSync(link)) fs.symlinkSync(f, link);
  }
  return dir;
}

const ARGS = ['model.safetensors', 'model-Q4_K_M.gguf', '--imatrix', 'imatrix.gguf'];

let env;
let dir;
let expected;
let expectedCsv;
before(async () => {
  dir = workDir();
  expected = JSON.parse(cli(['diff', ...ARGS, '--json'], dir));
  expectedCsv = cli(['diff', ...ARGS, '--csv'], dir);
  env = await start();
});
after(async () => {
  await env.close();
});

/** The golden files as linked in the work folder (`{original, quantized, imatrix}`). */
const linked = () => Object.fromEntries(Object.entries(ggufGolden()).map(([side, f]) => [side, path.join(dir, path.basename(f))]));

let shared;

test('the golden GGUF against its original gives exactly `quantscope diff --json` and `--csv`', async (t) => {
  assert.equal(expected.pairs.length, 36, 'the golden model has 36 weights');
  assert.ok(expected.pairs.some((p) => p.metrics && p.metrics.imatrix_weighted_mse !== undefined), 'the importance matrix applies');
  const page = await env.page();
  const state = await compareCheckpoints(page, linked());
  assert.equal(state, 'done', await page.textContent('#compare-error'));
  t.diagnostic(`36 pairs compared in the page in ${await page.getAttribute('#compare', 'data-seconds')} s`);
  // Every number of every row, and the order (worst first).
  const rows = await page.evaluate(() => window.quantscope.diff());
  assert.deepEqual(rows, expected.pairs);
  assert.equal(await page.getAttribute('#compare', 'data-pairs'), '36');
  // Under the table, the worst pair's diagnosis, then the one pointed at: the CLI's.
  const [worst, , third] = expected.pairs;
  assert.match(worst.diagnosis, /^Stored as /);
  assert.equal(await page.textContent('#compare-diagnosis'), `${worst.original}: ${worst.diagnosis}`);
  await page.hover(`#compare-table tbody tr[data-original="${third.original}"]`);
  assert.equal(await page.textContent('#compare-diagnosis'), `${third.original}: ${third.diagnosis}`);
  await page.mouse.move(0, 0);

  // The table: one row per pair, in the report's order, SQNR cells with the exact numbers.
  const table = await page.$$eval('#compare-table tbody tr', (trs) => trs.map((tr) => ({
    original: tr.dataset.original,
    quantized: tr.dataset.quantized,
    format: tr.dataset.format,
    position: Number(tr.dataset.position),
    status: tr.dataset.status,
    sqnr: tr.querySelector('td.sqnr[data-method=quantized]').dataset.sqnrDb,
    rtn: tr.querySelector('td.sqnr[data-method=rtn]').dataset.sqnrDb ?? null,
    cells: tr.children.length,
  })));
  const num = (v) => (v === null || v === undefined ? 'null' : String(v));
  assert.deepEqual(table, expected.pairs.map((p) => ({
    original: p.original,
    quantized: p.quantized,
    format: p.format,
    position: p.position,
    status: p.error ? 'failed' : 'compared',
    sqnr: p.metrics ? num(p.metrics.sqnr_db) : undefined,
    rtn: p.rtn ? num(p.rtn.metrics.sqnr_db) : null,
    cells: 12,
  })));
  const headers = await page.$$eval('#compare-table thead th', (ths) => ths.map((th) => th.textContent));
  assert.deepEqual(headers, ['#', 'original', 'quantized', 'format', 'shape', 'bits/w', 'SQNR', 'RTN SQNR', 'NMSE', 'cosine', 'imatrix MSE', 'error']);

  // The lint and the unpaired names.
  const lint = await page.$$eval('#compare-lint li[data-kind]', (lis) => lis.map((li) => ({ kind: li.dataset.kind, tensor: li.dataset.tensor })));
  assert.deepEqual(lint, expected.lint.map((l) => ({ kind: l.kind, tensor: l.tensor })));
  assert.equal(await page.getAttribute('#compare-unpaired', 'data-unpaired-original'), String(expected.unpaired.original.length));
  assert.equal(await page.getAttribute('#compare-unpaired', 'data-unpaired-quantized'), String(expected.unpaired.quantized.length));

  // The layer profile is drawn.
  assert.ok((await inkRatio(page, '#compare-chart')) > 0.02, 'layer profile drawn');

  // Filtering by name.
  await page.fill('#compare-filter', 'layer.1 query.weight');
  const shown = await page.$$eval('#compare-table tbody tr:not([hidden])', (trs) => trs.map((tr) => tr.dataset.original));
  assert.deepEqual(shown, ['encoder.layer.1.attention.self.query.weight']);
  await page.fill('#compare-filter', '');

  // The exports: the CLI's JSON document and its CSV, byte for byte.
  const [json] = await Promise.all([page.waitForEvent('download'), page.click('#compare-export-json')]);
  assert.deepEqual(JSON.parse(fs.readFileSync(await json.path(), 'utf8')), expected);
  const [csv] = await Promise.all([page.waitForEvent('download'), page.click('#compare-export-csv')]);
  assert.equal(fs.readFileSync(await csv.path(), 'utf8'), expectedCsv);
  const [svg] = await Promise.all([page.waitForEvent('download'), page.click('#compare-export-svg')]);
  assert.match(fs.readFileSync(await svg.path(), 'utf8'), /^<svg/);
  assert.deepEqual(page.errors, []);
  shared = page;
});

test('opening a row draws the pair up close and sends the original to the observer panels', async () => {
  assert.ok(shared, 'the first test ran');
  const page = shared;
  const worst = expected.pairs[0];
  await page.click(`#compare-table tr[data-original="${worst.original}"]`);
  await page.waitForSelector('#compare-tensor[data-state=ready]', { timeout: 60000 });
  await page.evaluate(() => window.quantscope.idle());
  assert.equal(await page.getAttribute('#compare-tensor', 'data-original'), worst.original);
  assert.equal(await page.getAttribute('#compare-tensor', 'data-quantized'), worst.quantized);
  // Q5_0 stores blocks of 32 values.
  const elements = worst.shape.reduce((a, b) => a * b, 1);
  assert.equal(worst.format, 'Q5_0');
  assert.equal(await page.getAttribute('#compare-tensor', 'data-block'), '32');
  assert.equal(await page.getAttribute('#compare-tensor', 'data-blocks'), String(elements / 32));
  const worstBlock = Number(await page.getAttribute('#compare-tensor', 'data-worst-block'));
  assert.ok(worstBlock >= 0 && worstBlock < elements / 32, String(worstBlock));
  for (const canvas of ['#compare-values', '#compare-error-hist', '#compare-blocks']) {
    assert.ok((await inkRatio(page, canvas)) > 0.02, `${canvas} drawn`);
    assert.ok(Number(await page.getAttribute(canvas, 'data-drawn')) >= 1, canvas);
  }
  await page.locator('#compare').screenshot({ path: path.join(RESULTS, 'compare.png') });

  // Keyboard: Enter on another row opens it.
  const second = expected.pairs[1];
  await page.focus(`#compare-table tr[data-original="${second.original}"]`);
  await page.keyboard.press('Enter');
  await page.waitForSelector(`#compare-tensor[data-state=ready][data-original="${second.original}"]`, { timeout: 60000 });

  // The original weight in the observer panels.
  await page.click('#compare-send');
  await page.evaluate(() => window.quantscope.idle());
  const summary = await page.evaluate(() => window.quantscope.summary());
  assert.deepEqual(summary.shape, second.shape);
  assert.match(await page.textContent('#tensor-info'), new RegExp(second.original.replace(/\./g, '\\.')));
  assert.deepEqual(page.errors, []);
});

test('axe-core finds no accessibility violation in the compare view', async () => {
  assert.ok(shared, 'the first test ran');
  const page = shared;
  assert.deepEqual((await axeViolations(page, '#compare-view')).map(describeViolation), []);
  await page.context().close();
});

test('cancel keeps the pairs compared so far, each equal to the CLI\'s', async () => {
  const page = await env.page({ hash: '' });
  // Through the page: the cancel button while the pairs are being compared. The comparison
  // takes a quarter of a second, so the CPU is slowed down and the button is pressed from inside
  // the page as soon as the pairs are listed (`data-state=running`): no race with the worker.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 20 });
  const pressed = page.evaluate(() => new Promise((resolve) => {
    const tick = () => {
      if (document.getElementById('compare').dataset.state === 'running') {
        document.getElementById('compare-cancel').click();
        resolve();
      } else {
        requestAnimationFrame(tick);
      }
    };
    tick();
  }));
  const files = linked();
  await page.setInputFiles('#compare-imatrix', files.imatrix);
  await page.setInputFiles('#compare-original-files', files.original);
  await page.setInputFiles('#compare-quantized-files', files.quantized);
  await pressed;
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });
  await page.evaluate(() => window.quantscope.idle());
  // The worker reads each pair's bytes without yielding to its event loop on a loaded machine,
  // so the cancel message can arrive after the last pair (seen in CI): then the run is simply
  // done. Either way every row shown is the CLI's; cancelling mid-run is checked
  // deterministically through the engine in the npm test below.
  const state = await page.getAttribute('#compare', 'data-state');
  assert.ok(['cancelled', 'done'].includes(state), state);
  const rows = await page.evaluate(() => window.quantscope.diff());
  for (const row of rows) assert.deepEqual(row, expected.pairs.find((p) => p.original === row.original), row.original);
  if (state === 'cancelled') {
    assert.ok(rows.length < 36, `${rows.length} rows`);
    assert.match(await page.textContent('#compare-error'), /cancelled after \d+ of 36 pairs/);
  } else {
    assert.equal(rows.length, 36);
  }
  assert.equal(await page.$$eval('#compare-table tbody tr', (trs) => trs.length), rows.length);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('the npm package\'s `diff` on file paths equals `quantscope diff --json` on the same paths', async () => {
  const qs = await import('../www/lib/index.js');
  await qs.init();
  const files = ARGS.filter((a) => !a.startsWith('--')).map((f) => path.join(dir, f));
  const want = JSON.parse(cli(['diff', files[0], files[1], '--imatrix', files[2], '--json'], dir));
  let progress = 0;
  const got = await qs.diff(files[0], files[1], { imatrix: files[2], onProgress: (p) => { if (p.row) progress += 1; } });
  assert.deepEqual(got, want);
  assert.equal(progress, 36);
  // Aborted after the first pair: rejected as cancelled.
  const controller = new AbortController();
  await assert.rejects(
    qs.diff(files[0], files[1], { signal: controller.signal, onProgress: (p) => { if (p.row) controller.abort(); } }),
    (err) => err.cancelled === true,
  );
  // One pair up close through the engine façade: every value in each histogram.
  const source = (f) => ({ name: path.basename(f), size: fs.statSync(f).size, read: (s, e) => new Uint8Array(fs.readFileSync(f).subarray(s, e)) });
  const worst = want.pairs[0];
  const engine = new qs.Engine();
  try {
    const view = await engine.diffTensor({ original: [source(files[0])], quantized: [source(files[1])], pair: { original: worst.original, quantized: worst.quantized } });
    const elements = worst.shape.reduce((a, b) => a * b, 1);
    const sum = (h) => h.counts.reduce((a, b) => a + b, 0);
    assert.deepEqual([sum(view.original_hist), sum(view.dequantized_hist), sum(view.error_hist), view.nonfinite], [elements, elements, elements, 0]);
    assert.equal(view.original_hist.lo, view.dequantized_hist.lo);
    assert.deepEqual([view.blocks.block, view.blocks.count, view.blocks.rows], [32, elements / 32, false]);
    // The block MSEs average to the pair's MSE (equal blocks).
    const mean = view.blocks.mean_mse.reduce((a, b) => a + b, 0) / view.blocks.mean_mse.length;
    assert.ok(Math.abs(mean - worst.metrics.mse) / worst.metrics.mse < 1e-9, `${mean} vs ${worst.metrics.mse}`);
  } finally {
    engine.free();
  }
});

/** Deep equality, numbers within a relative 1e-12. */
function assertClose(got, want, where) {
  if (typeof want === 'number' && typeof got === 'number') {
    assert.ok(got === want || Math.abs(got - want) <= 1e-12 * Math.max(Math.abs(got), Math.abs(want)), `${where}: ${got} vs ${want}`);
  } else if (want && typeof want === 'object') {
    assert.equal(typeof got, 'object', where);
    assert.deepEqual(Object.keys(got ?? {}).sort(), Object.keys(want).sort(), where);
    for (const k of Object.keys(want)) assertClose(got[k], want[k], `${where}.${k}`);
  } else {
    assert.equal(got, want, where);
  }
}

test('the npm package decodes every quantized Hugging Face layout and Q/DQ ONNX model as the CLI does', async () => {
  const qs = await import('../www/lib/index.js');
  await qs.init();
  const golden = path.join(sharedDir(), 'golden');
  const hf = JSON.parse(fs.readFileSync(path.join(golden, 'hf_quant', 'cases.json'), 'utf8'));
  const onnx = JSON.parse(fs.readFileSync(path.join(golden, 'onnx_qdq', 'cases.json'), 'utf8'));
  const cases = [
    ...hf.layouts.map((l) => [path.join(golden, 'hf_quant', 'original', 'model.safetensors'), path.join(golden, 'hf_quant', l.dir)]),
    ...onnx.models.map((m) => [path.join(golden, 'onnx_qdq', 'float.onnx'), path.join(golden, 'onnx_qdq', m.file)]),
  ];
  let pairs = 0;
  for (const [original, quantized] of cases) {
    const want = JSON.parse(cli(['diff', original, quantized, '--json'], ROOT));
    // The external-data model is given with its data file, as a folder would give it.
    const data = `${quantized}.data`;
    const side = fs.existsSync(data) ? [quantized, data] : quantized;
    const got = await qs.diff(original, side);
    // Every decoded weight's error, round-to-nearest, lint and pairing as the CLI's (which
    // the golden tests check against the libraries' own values). Sums are bit-equal; sqnr_db's
    // log10 is WebAssembly's libm against the platform's, so numbers agree to 1e-12 (the
    // golden metrics' tolerance is 1e-9).
    assertClose([got.pairs, got.unpaired, got.lint], [want.pairs, want.unpaired, want.lint], quantized);
    pairs += got.pairs.length;
  }
  assert.ok(pairs > 300, `${pairs} pairs`);
});
