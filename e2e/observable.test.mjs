// The npm package as Observable loads it. Observable Framework self-hosts a package's files by
// resolving them with Node's resolver (`require.resolve("quantscope/www/pkg/quantscope_bg.wasm")`
// for `import.meta.resolve(...)` in a page), which only finds files listed in package.json
// `exports`; an Observable notebook imports the ES module from a CDN URL and passes the .wasm URL
// to init(). Both are checked on the packed package, the notebook cell in headless Chromium with a
// local server standing in for the CDN.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { serve } from './serve.mjs';
import { TORCH, goldenCase, hostPage, packedProject, within } from './notebook-hosts.mjs';

const WASM = 'www/pkg/quantscope_bg.wasm';

test('the .wasm resolves through package.json exports, as Observable Framework resolves it', (t) => {
  const dir = packedProject('observable');
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const require = createRequire(path.join(dir, 'index.js'));
  const file = path.join(dir, 'node_modules', 'quantscope', WASM);
  assert.equal(require.resolve(`quantscope/${WASM}`), file);
  assert.equal(require.resolve('quantscope/wasm'), file);
  assert.ok(fs.statSync(file).size > 100_000);
});

test('the Observable notebook cell observes a golden input in a browser', { timeout: 120_000 }, async (t) => {
  const dir = packedProject('observable-cell');
  fs.copyFileSync(path.join(TORCH, 'inputs', 'normal_b0.npy'), path.join(dir, 'normal_b0.npy'));
  // The README's cell, with the CDN's package folder replaced by this server's.
  fs.writeFileSync(
    path.join(dir, 'cell.html'),
    `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><div id="out" style="width: 560px"></div>
<script type="module">
const CDN = new URL("node_modules/quantscope/", location.href).href;
const qs = await import(CDN + "www/lib/index.js");
await qs.init(CDN + "${WASM}");
const t = qs.loadTensor(new Uint8Array(await (await fetch("normal_b0.npy")).arrayBuffer()), { name: "normal_b0.npy" });
window.result = qs.observe(t, "torch.HistogramObserver");
qs.renderPanel(document.getElementById("out"), window.result);
window.done = true;
</script>`,
  );
  const server = await serve(dir);
  const page = await hostPage(t, { stop: () => server.close(), root: dir });
  await page.goto(`${server.url}cell.html`);
  await page.waitForFunction(() => window.done === true, null, { timeout: 60_000 });
  const c = goldenCase('hist-default-normal');
  const scale = await page.$eval('[role=region][aria-label="torch.HistogramObserver"]', (el) => el.dataset.scale);
  assert.ok(within(scale, c.expected.scale[0], c.tolerance.per_field.scale), `data-scale ${scale}`);
  assert.deepEqual(page.errors, []);
});
