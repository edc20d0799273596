// The notebook widget in a real JupyterLab 4 (headless server on 127.0.0.1, Chromium through
// Playwright): an Explorer over golden torch calibration batches shows panels carrying the
// golden scales, `explorer.results` in Python holds the golden numbers (filled at once by the
// native engine, and equal to what the page sends once it has computed), a slider moved in the
// output changes `explorer.results`, parameters set from Python move the controls, and a second
// widget on the page reuses the one WebAssembly instance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { RESULTS, ROOT, sharedDir } from './helpers.mjs';
import {
  TORCH, crateVersion, freePort, goldenCase, goldenMismatches, hostPage, instantiations, missingEnvironment,
  panelData, scratch, startServer, venvBin, within,
} from './notebook-hosts.mjs';

const skip = missingEnvironment();
const MINMAX = 'torch.MinMaxObserver';
const HIST = 'torch.HistogramObserver';

/** A notebook of code cells. */
function notebook(cells) {
  return {
    cells: cells.map((source, i) => ({ id: `cell${i}`, cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source })),
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
    nbformat: 4,
    nbformat_minor: 5,
  };
}

/** The golden drift batches, copied next to the notebooks. */
const DRIFT = [0, 1, 2, 3, 4, 5].map((i) => `drift_b${i}.npy`);
const CELLS = [
  // 0: the widget over six calibration batches (a list of arrays), two observers.
  `import json, numpy as np, quantscope
batches = [np.load(f"drift_b{i}.npy") for i in range(6)]
explorer = quantscope.Explorer(batches, ["${MINMAX}", "${HIST}"])
native = dict(explorer.results)  # the native engine's, before the page has computed
explorer`,
  // 1: what Python sees.
  'print(json.dumps({"results": explorer.results, "native": native, "params": explorer.params, "summary": explorer.summary, "error": explorer.error}))',
  // 2: parameters set from Python.
  `explorer.params = {**explorer.params, "${MINMAX}": {"dtype": "qint8", "qscheme": "per_tensor_symmetric"}}`,
  // 3: a second widget on the same page.
  `quantscope.Explorer(np.linspace(-1, 1, 1000, dtype=np.float32), "${MINMAX}")`,
];


/**
 * A JupyterLab server (which also serves Notebook 7) on 127.0.0.1 over a scratch folder holding
 * `notebooks` ({file name: cells}) and the golden drift batches, with throw-away configuration
 * folders, and Chromium. Returns {page, url(path)}; everything stops when the test ends.
 */
async function jupyter(t, notebooks) {
  const root = scratch('jupyter');
  for (const f of DRIFT) fs.copyFileSync(path.join(TORCH, 'inputs', f), path.join(root, f));
  for (const [name, cells] of Object.entries(notebooks)) fs.writeFileSync(path.join(root, name), JSON.stringify(notebook(cells)));
  const port = await freePort();
  const token = `t${Math.random().toString(36).slice(2)}`;
  const dirs = Object.fromEntries(['JUPYTER_CONFIG_DIR', 'JUPYTER_RUNTIME_DIR', 'JUPYTER_DATA_DIR', 'IPYTHONDIR'].map((k) => [k, path.join(root, `.${k.toLowerCase()}`)]));
  const server = await startServer(
    venvBin('jupyter'),
    ['lab', '--no-browser', '--ServerApp.ip=127.0.0.1', `--ServerApp.port=${port}`, '--ServerApp.port_retries=0', `--IdentityProvider.token=${token}`, `--ServerApp.root_dir=${root}`, '--ServerApp.allow_root=True', '--LabApp.extension_manager=readonly'],
    { cwd: root, env: dirs, url: `http://127.0.0.1:${port}/api/status?token=${token}` },
  );
  const page = await hostPage(t, { stop: () => server.stop(), root });
  return { page, server, url: (p) => `http://127.0.0.1:${port}/${p}?token=${token}` };
}

/**
 * Accept the "Select Kernel" dialog (JupyterLab sometimes asks even for a notebook naming its
 * kernel) and decline the news notification, when they are there.
 */
async function dismissDialogs(page) {
  const accept = page.locator('.jp-Dialog .jp-mod-accept');
  if (await accept.count()) await accept.first().click({ timeout: 1000 }).catch(() => {});
  const news = page.locator('.jp-toast-button:has-text("No"), .Toastify__toast button:has-text("No")');
  if (await news.count()) await news.first().click({ timeout: 1000 }).catch(() => {});
}

/** Run cell `i` of `cells` (select it in command mode, Shift+Enter); waits for its execution count. */
/** The JSON a cell printed. The prompt number can change before JupyterLab renders the cell's
 *  stream output, so the text is read again until it parses (or 10 s have passed). */
async function printedJson(page, output) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const text = await output.innerText().catch(() => '');
    try {
      return JSON.parse(text);
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`the cell printed no JSON: ${JSON.stringify(text.slice(0, 300))} (${err.message})`);
    }
    await page.waitForTimeout(100);
  }
}

async function runCell(page, cells, i, server) {
  await dismissDialogs(page);
  const cell = cells.nth(i);
  const prompt = cell.locator('.jp-InputPrompt');
  const before = await prompt.innerText();
  // A dialog appearing meanwhile would swallow the click: dismiss it and click again.
  for (let attempt = 0; ; attempt += 1) {
    try {
      await prompt.click({ timeout: 2000 });
      break;
    } catch (err) {
      if (attempt >= 30) throw err;
      await dismissDialogs(page);
    }
  }
  await page.keyboard.press('Escape');
  await page.keyboard.press('Shift+Enter');
  // The kernel may still be starting, and the "Select Kernel" dialog may come up meanwhile.
  const deadline = Date.now() + Number(process.env.QUANTSCOPE_CELL_TIMEOUT_MS || 120_000);
  for (;;) {
    const now = await prompt.innerText();
    if (/\[\d+\]/.test(now) && now !== before) break;
    if (Date.now() > deadline) {
      await page.screenshot({ path: path.join(RESULTS, 'jupyter-failure.png') });
      throw new Error(`cell ${i} did not run (screenshot: test-results/jupyter-failure.png); server log:\n${server.log().slice(-3000)}`);
    }
    await dismissDialogs(page);
    await page.waitForTimeout(200);
  }
  return cell;
}

/** Wait until panel `id` inside `scope` is ready and `pred(data)` holds; returns its data-*. */
async function panelWhen(page, scope, id, pred = () => true, what = 'ready') {
  const deadline = Date.now() + 60_000;
  let d = null;
  for (;;) {
    if ((await scope.locator(`[role=region][aria-label="${id}"]`).count()) > 0) {
      d = await panelData(scope, id);
      if (d.status === 'ready' && pred(d)) return d;
    }
    if (Date.now() > deadline) throw new Error(`${id} never became ${what} (last: ${JSON.stringify(d)}); page errors: ${page.errors.join(' | ')}`);
    await page.waitForTimeout(100);
  }
}

test('JupyterLab: panels, explorer.results and sliders match PyTorch', { skip: skip || false, timeout: 300_000 }, async (t) => {
  const t0 = Date.now();
  const step = (what) => t.diagnostic(`${what}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const { page, server, url } = await jupyter(t, { 'widget.ipynb': CELLS });
  step('server up');
  await page.goto(url('lab/tree/widget.ipynb'));
  step('page loaded');
  const cells = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell');
  await cells.first().waitFor({ timeout: 60_000 });
  await page.waitForTimeout(1500);
  await dismissDialogs(page);
  const run = (i) => runCell(page, cells, i, server);
  const panel = (scope, id, pred, what) => panelWhen(page, scope, id, pred, what);
  /** Run the print cell and parse what Python printed. */
  async function python() {
    const cell = await run(1);
    return printedJson(page, cell.locator('.jp-OutputArea-output').last());
  }

  const out = (await run(0)).locator('.jp-OutputArea-output').first();
  step('cell 0 ran');
  const minmaxCase = goldenCase('minmax-quint8-affine-drift');
  const histCase = goldenCase('hist-default-drift');
  const start = Date.now();
  const mm = await panel(out, MINMAX);
  const hist = await panel(out, HIST);
  t.diagnostic(`panels ready ${Date.now() - start} ms after the cell ran`);
  assert.ok(within(mm.scale, minmaxCase.expected.scale[0], minmaxCase.tolerance.per_field.scale), `MinMax data-scale ${mm.scale}`);
  assert.equal(Number(mm.zeroPoint), minmaxCase.expected.zero_point[0]);
  assert.ok(within(hist.scale, histCase.expected.scale[0], histCase.tolerance.per_field.scale), `Histogram data-scale ${hist.scale}`);
  assert.equal(Number(hist.zeroPoint), histCase.expected.zero_point[0]);
  assert.ok(Number(await out.locator('canvas.curve-canvas').getAttribute('data-drawn')) >= 1, 'the error curve is drawn');
  await dismissDialogs(page);
  await page.setViewportSize({ width: 1500, height: 2100 });
  await page.waitForTimeout(300);
  await out.screenshot({ path: path.join(RESULTS, 'jupyterlab-widget.png') });
  // The README's picture: the cell, its code and the widget, in JupyterLab.
  await cells.nth(0).screenshot({ path: path.join(RESULTS, 'jupyterlab-cell.png') });
  await page.setViewportSize({ width: 1500, height: 1100 });

  step('panels checked');
  // explorer.results in Python: the golden numbers.
  let py = await python();
  assert.equal(py.error, '');
  assert.deepEqual(py.summary.shape, histCase.input_shapes[0]);
  assert.equal(py.summary.batches, 6);
  assert.deepEqual(goldenMismatches(py.results[MINMAX], minmaxCase), []);
  assert.deepEqual(goldenMismatches(py.results[HIST], histCase), []);
  assert.equal(py.results[HIST].scale, Number(hist.scale), 'Python sees the number the panel shows');
  // The native engine filled explorer.results at once with exactly what the page sent.
  assert.deepEqual(Object.keys(py.native).sort(), [HIST, MINMAX]);
  assert.deepEqual(py.native, py.results);

  // Moving the bins slider changes explorer.results and explorer.params.
  const control = out.locator(`[role=region][aria-label="${HIST}"] .control[data-param="bins"]`);
  await control.locator('input[type=range]').fill('300');
  const bins = Number(await control.locator('output').innerText());
  assert.ok(bins !== 2048 && bins > 1, `bins moved to ${bins}`);
  const moved = await panel(out, HIST, (d) => d.scale !== hist.scale, 'rescaled');
  py = await python();
  assert.equal(py.params[HIST].bins, bins);
  assert.equal(py.results[HIST].params.bins, bins);
  assert.equal(py.results[HIST].scale, Number(moved.scale));
  assert.notEqual(py.results[HIST].scale, histCase.expected.scale[0]);

  // Typing 256 into the exact box: PyTorch's result for bins=256.
  const bins256 = goldenCase('hist-bins256-drift');
  await control.locator('input.exact').fill('256');
  await control.locator('input.exact').blur();
  await panel(out, HIST, (d) => within(d.scale, bins256.expected.scale[0], bins256.tolerance.per_field.scale), 'the bins=256 scale');
  py = await python();
  assert.deepEqual(goldenMismatches(py.results[HIST], bins256), []);

  // Parameters set from Python move the controls and change the panel.
  const symmetric = goldenCase('minmax-qint8-symmetric-drift');
  await run(2);
  await panel(out, MINMAX, (d) => within(d.scale, symmetric.expected.scale[0], symmetric.tolerance.per_field.scale), 'the qint8 symmetric scale');
  assert.equal(await out.locator(`[role=region][aria-label="${MINMAX}"] .control[data-param="dtype"] select`).inputValue(), 'qint8');
  py = await python();
  assert.deepEqual(goldenMismatches(py.results[MINMAX], symmetric), []);
  assert.equal(py.params[HIST].bins, 256, 'the slider-set parameter is kept');

  step('slider and Python parameters checked');
  // A second widget reuses the page's WebAssembly instance.
  const second = (await run(3)).locator('.jp-OutputArea-output').first();
  await panel(second, MINMAX);
  assert.equal(await instantiations(page, crateVersion()), 1);
  assert.deepEqual(page.errors.filter((e) => /quantscope|wasm/i.test(e)), []);
});

test('Notebook 7: the widget renders the golden PyTorch scale', { skip: skip || false, timeout: 240_000 }, async (t) => {
  const source = `import numpy as np, quantscope
quantscope.Explorer([np.load(f"drift_b{i}.npy") for i in range(6)], "${HIST}", {"${HIST}": {"bins": 256}})`;
  const { page, server, url } = await jupyter(t, { 'notebook7.ipynb': [source] });
  await page.goto(url('notebooks/notebook7.ipynb'));
  const cells = page.locator('.jp-Notebook .jp-Cell');
  await cells.first().waitFor({ timeout: 60_000 });
  await page.waitForTimeout(1500);
  await dismissDialogs(page);
  const out = (await runCell(page, cells, 0, server)).locator('.jp-OutputArea-output').first();
  const c = goldenCase('hist-bins256-drift');
  const d = await panelWhen(page, out, HIST);
  assert.ok(within(d.scale, c.expected.scale[0], c.tolerance.per_field.scale), `data-scale ${d.scale}`);
  assert.equal(Number(d.zeroPoint), c.expected.zero_point[0]);
  assert.equal(await out.locator('[data-param="bins"] input.exact').inputValue(), '256', 'the slider shows the parameter set from Python');
  await out.screenshot({ path: path.join(RESULTS, 'notebook7-widget.png') });
});

test('JupyterLab: quantscope.Model ranks a folder of dumps; model.rows equal `quantscope model --json`', { skip: skip || false, timeout: 300_000 }, async (t) => {
  const base = path.join(sharedDir(), 'samples', 'minilm');
  const cli = path.join(ROOT, 'target', 'debug', 'quantscope');
  if (!fs.existsSync(cli)) execFileSync('cargo', ['build', '--quiet', '--locked', '--profile', 'test', '--bin', 'quantscope'], { cwd: ROOT, stdio: 'inherit' });
  const expected = JSON.parse(execFileSync(cli, ['model', 'activations', '--json'], { cwd: base, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }));
  const source = [
    `import json, quantscope
model = quantscope.Model(${JSON.stringify(path.join(base, 'activations'))})
model`,
    'print(json.dumps({"state": model.state, "rows": model.rows, "load_errors": model.load_errors, "error": model.error}))',
  ];
  const { page, server, url } = await jupyter(t, { 'model.ipynb': source });
  await page.goto(url('lab/tree/model.ipynb'));
  const cells = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell');
  await cells.first().waitFor({ timeout: 60_000 });
  await page.waitForTimeout(1500);
  await dismissDialogs(page);
  const out = (await runCell(page, cells, 0, server)).locator('.jp-OutputArea-output').first();
  await out.locator('.quantscope-widget[data-status="done"]').waitFor({ timeout: 120_000 });
  assert.equal(await out.locator('tr[data-tensor][data-status="ranked"]').count(), 24);
  let py;
  for (let attempt = 0; ; attempt += 1) {
    const cell = await runCell(page, cells, 1, server);
    py = await printedJson(page, cell.locator('.jp-OutputArea-output').last());
    if (py.state === 'done' || attempt >= 10) break;
    await page.waitForTimeout(500);
  }
  assert.equal(py.state, 'done', py.error);
  assert.deepEqual(py.load_errors, []);
  assert.deepEqual(py.rows, expected.tensors);
  await page.setViewportSize({ width: 1500, height: 1600 });
  await page.waitForTimeout(300);
  await out.screenshot({ path: path.join(RESULTS, 'jupyterlab-model.png') });
  assert.deepEqual(page.errors.filter((e) => /quantscope|wasm/i.test(e)), []);
});
