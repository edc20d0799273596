// The npm package: `npm pack` produces a tarball that a scratch project installs and uses in
// Node (init() and initSync()), checked there against every family's golden cases
// (npm-golden.mjs), and the same API renders a panel in a browser page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ROOT, RESULTS, sharedDir, start, inkRatio } from './helpers.mjs';
import { families as goldenFamilies } from './npm-golden.mjs';

const golden = JSON.parse(fs.readFileSync(path.join(sharedDir(), 'golden', 'torch', 'cases.json'), 'utf8'));

test('npm pack → install in a scratch project → use from Node, against every golden set', { timeout: 600_000 }, (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'quantscope-npm-'));
  try {
    const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }))[0];
    const files = packed.files.map((f) => f.path);
    for (const f of ['package.json', 'www/lib/index.js', 'www/lib/index.d.ts', 'www/lib/panel.js', 'www/pkg/quantscope.js', 'www/pkg/quantscope_bg.wasm', 'www/pkg/quantscope.d.ts']) {
      assert.ok(files.includes(f), `${f} is in the package (${files.join(', ')})`);
    }
    assert.ok(!files.some((f) => f.startsWith('src/') || f.startsWith('www/demo/') || f.startsWith('e2e/')), 'only the package files');
    const scratch = path.join(tmp, 'scratch');
    fs.mkdirSync(scratch);
    fs.writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--offline', path.join(tmp, packed.filename)], { cwd: scratch, stdio: 'ignore' });
    const input = path.join(sharedDir(), 'golden', 'torch', 'inputs', 'normal_b0.npy');
    fs.writeFileSync(
      path.join(scratch, 'use.mjs'),
      `import * as qs from 'quantscope';
import fs from 'node:fs';
await qs.init();
const t = qs.loadTensor(fs.readFileSync(process.argv[2]), { name: 'normal_b0.npy' });
const ids = qs.observers().map((o) => o.id);
const out = { version: qs.version(), shape: t.shape, elements: t.elements, ids };
if (ids.includes('torch.MinMaxObserver')) {
  const r = qs.observe(t, 'torch.MinMaxObserver', { dtype: 'qint8', qscheme: 'per_tensor_symmetric' });
  const h = qs.observe(t, 'torch.HistogramObserver');
  const shown = qs.panelView(r).slices;
  out.result = { ok: r.ok, scale: r.scale, zero_point: r.zero_point, min_val: r.min_val, clip_min: shown.clip_min, clip_max: shown.clip_max, metrics: r.metrics };
  out.panelSvg = qs.renderSvg(r);
  out.comparisonSvg = qs.renderSvg([r, h], { bits: 8, scheme: 'symmetric' });
  out.curve = qs.errorCurve(t, { results: [r, h] }).markers.length;
  out.bad = qs.observe(t, 'torch.MinMaxObserver', { quant_min: 0, quant_max: 0 }).error.kind;
}
try { qs.loadTensor(new Uint8Array([1, 2, 3]), { name: 'junk.npy' }); } catch (e) { out.loadError = e.message; }
const reg = qs.quantizers();
out.quantizerIds = reg.formats.map((f) => f.id).concat(reg.optimisers.map((o) => o.id));
const small = qs.loadTensor(fs.readFileSync(process.argv[3]), { name: 'small_b0.npy' });
out.formats = qs.compareFormats(small, { extra: [{ id: 'int', params: { bits: 3 } }, { id: 'int', params: { bits: 99 } }] });
// Every input 1: each row's output error is the sum of its rounding errors, which AdaRound
// learns to cancel while round-to-nearest (every weight just above a half) cannot.
const w = new Float32Array(32).map((_, i) => (i % 8 === 0 ? 0.75 : (0.5 + 0.012 * (i % 8) + 0.003 * Math.floor(i / 8)) * 0.1));
const x = new Float32Array(256).fill(1);
out.ada = qs.adaround({ data: w, shape: [4, 8] }, { data: x, shape: [32, 8] }, { iterations: 400, batch_rows: 32 });
let calls = 0;
out.adaStopped = qs.adaround({ data: w, shape: [4, 8] }, { data: x, shape: [32, 8] }, { iterations: 5000 }, { onProgress: () => ++calls < 3 });
console.log(JSON.stringify(out));
`,
    );
    fs.writeFileSync(
      path.join(scratch, 'sync.mjs'),
      `import { initSync, loadTensor, version } from 'quantscope';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
initSync(fs.readFileSync(fileURLToPath(import.meta.resolve('quantscope/wasm'))));
const t = loadTensor(new Float32Array([1, -2, 3, 4, 0.5, 6]), { shape: [2, 3] });
console.log(JSON.stringify({ version: version(), shape: t.shape, max: t.max }));
`,
    );
    const quarkInput = path.join(sharedDir(), 'golden', 'quark', 'inputs', 'small_b0.npy');
    const out = JSON.parse(execFileSync('node', ['use.mjs', input, quarkInput], { cwd: scratch, encoding: 'utf8' }));
    // The package lists the engine's registry: every codec, then the optimisers, as the native
    // CLI lists them (a format added to the registry needs no edit here).
    const native = JSON.parse(execFileSync('cargo', ['run', '--quiet', '--locked', '--bin', 'quantscope', '--', 'list', '--json'], { cwd: ROOT, encoding: 'utf8' }));
    assert.deepEqual(out.quantizerIds, [...native.quantizers.formats.map((f) => f.id), ...native.quantizers.optimisers.map((o) => o.id)]);
    for (const id of ['int', 'half', 'minifloat', 'mx', 'bfp', 'bnb.nf4', 'bnb.blockwise8', 'ggml.Q4_K', 'ggml.IQ4_XS', 'adaround']) assert.ok(out.quantizerIds.includes(id), id);
    const quark = JSON.parse(fs.readFileSync(path.join(sharedDir(), 'golden', 'quark', 'cases.json'), 'utf8'));
    const mxCase = (quark.cases || quark).find((c) => c.id === 'mx-fp8_e4m3-even-small');
    const mx = out.formats.find((r) => r.format === 'mxfp8_e4m3');
    assert.ok(Math.abs(mx.mse - mxCase.expected.qdq.mse) <= 1e-6 * mxCase.expected.qdq.mse, `mxfp8 mse ${mx.mse}`);
    assert.equal(out.formats.at(-2).format, 'int3');
    assert.match(out.formats.at(-1).error, /bits/);
    assert.ok(out.ada.adaround.output_mse < 0.1 * out.ada.nearest.output_mse, JSON.stringify(out.ada.adaround));
    assert.equal(out.ada.final_binary_fraction, 1);
    assert.ok(out.ada.flipped > 0);
    assert.equal(out.adaStopped.cancelled, true);
    assert.ok(out.adaStopped.iterations_run < 5000);
    assert.equal(out.version, JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version);
    assert.deepEqual(out.shape, [65536]);
    assert.match(out.loadError, /junk\.npy/);
    if (out.ids.includes('torch.MinMaxObserver')) {
      const c = golden.cases.find((x) => x.id === 'minmax-qint8-symmetric-normal');
      assert.equal(out.result.ok, true);
      assert.ok(Math.abs(out.result.scale[0] - c.expected.scale[0]) <= 1e-6 * c.expected.scale[0]);
      assert.equal(out.result.zero_point[0], c.expected.zero_point[0]);
      assert.equal(out.result.clip_min[0], c.expected.min_val[0]);
      assert.equal(out.result.min_val[0], c.expected.min_val[0], 'the float32 state, exactly');
      assert.ok(Math.abs(out.result.metrics.mse - c.expected.qdq.mse) <= 1e-3 * c.expected.qdq.mse);
      assert.ok(out.panelSvg.startsWith('<svg') && out.panelSvg.includes('torch.MinMaxObserver'));
      assert.ok(out.comparisonSvg.includes('torch.HistogramObserver') && out.comparisonSvg.includes('best t'));
      assert.equal(out.curve, 2);
      assert.equal(out.bad, 'framework');
      fs.writeFileSync(path.join(RESULTS, 'npm-node-comparison.svg'), out.comparisonSvg);
    }
    const sync = JSON.parse(execFileSync('node', ['sync.mjs'], { cwd: scratch, encoding: 'utf8' }));
    assert.deepEqual(sync.shape, [2, 3]);
    assert.equal(sync.max, 6);

    // Every family's golden cases through the installed package.
    fs.copyFileSync(path.join(ROOT, 'e2e', 'npm-golden.mjs'), path.join(scratch, 'npm-golden.mjs'));
    const t0 = Date.now();
    const { families } = JSON.parse(execFileSync('node', ['npm-golden.mjs', 'quantscope', path.join(sharedDir(), 'golden')], { cwd: scratch, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }));
    const skipped = (f) => Object.entries(f.skipped).map(([why, n]) => `${n} skipped: ${why}`).join(', ');
    const counts = Object.entries(families).filter(([, f]) => f.checked > 0).map(([name, f]) => `${name} ${f.passed}/${f.checked}${skipped(f) ? ` (${skipped(f)})` : ''}`);
    t.diagnostic(`golden cases through the npm package: ${counts.join(', ')} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    console.log(`npm golden: ${counts.join(', ')}`);
    for (const family of goldenFamilies(path.join(sharedDir(), 'golden'))) {
      assert.ok(families[family] && families[family].checked > 0, `${family} cases were checked`);
    }
    for (const [name, f] of Object.entries(families)) assert.deepEqual(f.failures, [], `${name}: ${f.passed}/${f.checked}`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('the package renders a panel with the page contract in a browser', async () => {
  const env = await start({ root: ROOT });
  try {
    const context = await env.browser.newContext({ viewport: { width: 700, height: 1100 } });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${env.url}e2e/fixtures/npm-page.html`);
    await page.waitForFunction(() => window.done === true);
    const id = await page.evaluate(() => window.result && window.result.observer);
    if (id) {
      const d = await page.$eval(`[role=region][aria-label="${id}"]`, (el) => ({ ...el.dataset }));
      assert.equal(d.status, 'ready');
      assert.ok(d.scale && d.mse, 'contract attributes set');
      assert.ok((await inkRatio(page, `[role=region][aria-label="${id}"] canvas.hist`)) > 0.02);
      assert.ok((await page.evaluate(() => window.svg)).startsWith('<svg'));
      await page.screenshot({ path: path.join(RESULTS, 'npm-render-panel.png'), fullPage: true });
    }
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    await env.close();
  }
});
