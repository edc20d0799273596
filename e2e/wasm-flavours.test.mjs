// The two WebAssembly builds (scripts/build-web.sh: SIMD128 and baseline) compute the same
// numbers, and each engine loads the one it supports (www/lib/wasm-flavour.js): Node through the
// npm API, and Chromium's page both as it is and with its SIMD probe answering false.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ROOT, sharedDir, start } from './helpers.mjs';

const INPUT = path.join(sharedDir(), 'samples', 'minilm', 'activations', 'l0_ffn_dense_out.npy');
const OBSERVERS = ['torch.HistogramObserver', 'quark.PerTensorMSEObserver', 'horizon.KLObserver', 'ort.EntropyCalibrater', 'llmcompressor.memoryless_mse'];

/** Every observer above on the MiniLM activation, in a fresh Node process that loads `file`. */
function runFlavour(file) {
  const script = `import * as qs from ${JSON.stringify(path.join(ROOT, 'www', 'lib', 'index.js'))};
import fs from 'node:fs';
qs.initSync(fs.readFileSync(${JSON.stringify(path.join(ROOT, 'www', 'pkg', file))}));
const t = qs.loadTensor(fs.readFileSync(${JSON.stringify(INPUT)}), { name: 'act.npy' });
const reports = ${JSON.stringify(OBSERVERS)}.map((id) => qs.observe(t, id));
console.log(JSON.stringify({ flavour: qs.loadedFlavour(), reports }));`;
  return JSON.parse(execFileSync('node', ['--input-type=module', '-e', script], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 }));
}

test('the SIMD128 and baseline builds give identical reports', { timeout: 120_000 }, () => {
  const simd = runFlavour('quantscope_bg.wasm');
  const baseline = runFlavour('quantscope_bg.baseline.wasm');
  const detected = execFileSync('node', ['--input-type=module', '-e', `import { wasmFileName } from ${JSON.stringify(path.join(ROOT, 'www', 'lib', 'wasm-flavour.js'))}; console.log(wasmFileName());`], { encoding: 'utf8' }).trim();
  assert.equal(detected, 'quantscope_bg.wasm', 'Node supports WebAssembly SIMD: the SIMD128 build is chosen');
  assert.equal(simd.flavour, 'simd128');
  assert.equal(baseline.flavour, 'baseline');
  for (const r of simd.reports) assert.ok(r.ok && r.metrics && r.scale.length > 0, `${r.observer} computed`);
  assert.deepEqual(baseline.reports, simd.reports);
});

test('a browser without WebAssembly SIMD gets the baseline build, with the same panels', { timeout: 120_000 }, async (t) => {
  const server = await start();
  try {
    const scales = {};
    for (const simd of [true, false]) {
      const context = await server.browser.newContext({ viewport: { width: 1440, height: 1000 } });
      if (!simd) {
        // As on an engine without SIMD: the feature probe answers false, in the page and in its
        // workers (both import wasm-flavour.js).
        await context.route('**/lib/wasm-flavour.js', async (route) => {
          const body = (await (await route.fetch()).text()).replace('WebAssembly.validate(SIMD_PROBE)', 'false');
          await route.fulfill({ body, contentType: 'text/javascript' });
        });
      }
      const page = await context.newPage();
      await page.goto(server.url);
      await page.evaluate(() => window.quantscope.ready);
      await page.evaluate(() => window.quantscope.idle());
      const wasmRequests = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name).filter((n) => n.endsWith('.wasm')));
      t.diagnostic(`${simd ? 'SIMD' : 'no SIMD'}: ${wasmRequests.map((n) => path.basename(n)).join(', ')}`);
      assert.ok(wasmRequests.some((n) => n.endsWith(simd ? '/quantscope_bg.wasm' : '/quantscope_bg.baseline.wasm')), wasmRequests.join(', '));
      scales[simd] = await page.$$eval('[role=region][data-scale]', (els) => els.map((e) => [e.getAttribute('aria-label'), e.dataset.scale, e.dataset.mse]));
      await context.close();
    }
    assert.deepEqual(scales[false], scales[true]);
  } finally {
    await server.close();
  }
});
