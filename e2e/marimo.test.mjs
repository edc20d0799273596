// The notebook widget in a real marimo app (`marimo run`, headless on 127.0.0.1, Chromium through
// Playwright), wrapped as marimo documents it (`mo.ui.anywidget`): the panels carry the golden
// PyTorch scales, `explorer.results` in Python holds the golden numbers (a dependent cell prints
// them and re-runs when the widget's value changes), and moving a slider changes them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { RESULTS } from './helpers.mjs';
import {
  TORCH, freePort, goldenCase, goldenMismatches, hostPage, missingEnvironment, panelData, scratch, startServer, venvBin, within,
} from './notebook-hosts.mjs';

const skip = missingEnvironment();
const MINMAX = 'torch.MinMaxObserver';
const HIST = 'torch.HistogramObserver';
const INPUT = path.join(TORCH, 'inputs', 'normal_b0.npy');
const NPZ_DIR = path.join(TORCH, '..', 'npy');
const NPZ = path.join(NPZ_DIR, 'two_arrays_compressed.npz');

// A path (not an array) as data: the file's bytes go to the front end as they are.
const APP = `import marimo

app = marimo.App(width="full")


@app.cell
def _():
    import html
    import json

    import marimo as mo
    import quantscope
    return html, json, mo, quantscope


@app.cell
def _(mo, quantscope):
    explorer = quantscope.Explorer(${JSON.stringify(INPUT)}, ["${MINMAX}", "${HIST}"])
    widget = mo.ui.anywidget(explorer)
    widget
    return explorer, widget


@app.cell
def _(mo, quantscope):
    # Errors: a file that is not a .npy despite its name, and an observer id that does not exist.
    broken = quantscope.Explorer(${JSON.stringify('junk.npy')})
    unknown = quantscope.Explorer(${JSON.stringify(INPUT)}, ["torch.NoSuchObserver"])
    no_member = quantscope.Explorer(${JSON.stringify(NPZ)}, member="nope")
    mo.vstack([mo.ui.anywidget(broken), mo.ui.anywidget(unknown), mo.ui.anywidget(no_member)])
    return broken, unknown


@app.cell
def _(mo, quantscope):
    # A member of a compressed .npz file.
    ids = quantscope.Explorer(${JSON.stringify(NPZ)}, ["torch.MinMaxObserver"], member="ids")
    ids_widget = mo.ui.anywidget(ids)
    ids_widget
    return ids, ids_widget


@app.cell
def _(html, ids, ids_widget, json, mo):
    _seen = ids_widget.value
    mo.Html('<pre id="qs-npz">' + html.escape(json.dumps(ids.summary)) + "</pre>")
    return


@app.cell
def _(explorer, html, json, mo, widget):
    # Re-runs whenever the widget's value changes; prints what Python holds.
    _seen = widget.value
    mo.Html('<pre id="qs-python">' + html.escape(json.dumps({"results": explorer.results, "params": explorer.params, "error": explorer.error, "available": explorer.available_observers})) + "</pre>")
    return


if __name__ == "__main__":
    app.run()
`;

test('marimo: panels, explorer.results and sliders match PyTorch', { skip: skip || false, timeout: 240_000 }, async (t) => {
  const root = scratch('marimo');
  const port = await freePort();
  fs.writeFileSync(path.join(root, 'app.py'), APP);
  fs.writeFileSync(path.join(root, 'junk.npy'), 'not a numpy file');
  const server = await startServer(
    venvBin('marimo'),
    ['run', 'app.py', '--headless', '--host', '127.0.0.1', '--port', String(port), '--no-token', '--no-sandbox', '--no-check'],
    { cwd: root, env: { MARIMO_SKIP_UPDATE_CHECK: '1', HOME: root }, url: `http://127.0.0.1:${port}/` },
  );
  const page = await hostPage(t, { stop: () => server.stop(), root });
  await page.goto(`http://127.0.0.1:${port}/`);

  /** Wait until panel `id` is ready and `pred(data)` holds; returns its data-*. */
  async function panelWhen(id, pred = () => true, what = 'ready') {
    const deadline = Date.now() + 90_000;
    let d = null;
    for (;;) {
      if ((await page.locator(`[role=region][aria-label="${id}"]`).count()) > 0) {
        d = await panelData(page, id);
        if (d.status === 'ready' && pred(d)) return d;
      }
      if (Date.now() > deadline) {
        await page.screenshot({ path: path.join(RESULTS, 'marimo-failure.png') });
        throw new Error(`${id} never became ${what} (last: ${JSON.stringify(d)}); page errors: ${page.errors.join(' | ')}\nserver log:\n${server.log().slice(-3000)}`);
      }
      await page.waitForTimeout(100);
    }
  }
  /** What the dependent cell printed, once `pred` holds for it. */
  async function python(pred, what, selector = '#qs-python', ready = () => true) {
    const deadline = Date.now() + 60_000;
    let last = null;
    for (;;) {
      const pre = page.locator(selector);
      if ((await pre.count()) > 0) {
        last = JSON.parse(await pre.innerText());
        if (ready(last) && pred(last)) return last;
      }
      if (Date.now() > deadline) throw new Error(`Python never saw ${what}; last: ${JSON.stringify(last)}`);
      await page.waitForTimeout(150);
    }
  }

  const minmaxCase = goldenCase('minmax-quint8-affine-normal');
  const histCase = goldenCase('hist-default-normal');
  const mm = await panelWhen(MINMAX);
  const hist = await panelWhen(HIST);
  assert.ok(within(mm.scale, minmaxCase.expected.scale[0], minmaxCase.tolerance.per_field.scale), `MinMax data-scale ${mm.scale}`);
  assert.equal(Number(mm.zeroPoint), minmaxCase.expected.zero_point[0]);
  assert.ok(within(hist.scale, histCase.expected.scale[0], histCase.tolerance.per_field.scale), `Histogram data-scale ${hist.scale}`);
  assert.equal(Number(hist.zeroPoint), histCase.expected.zero_point[0]);
  await page.locator('.quantscope-widget').first().screenshot({ path: path.join(RESULTS, 'marimo-widget.png') });

  let py = await python((p) => p.results[MINMAX] && p.results[HIST], 'both results');
  assert.equal(py.error, '');
  assert.ok(py.available.includes(MINMAX) && py.available.includes('quark.PerTensorMSEObserver') && py.available.length > 30, `available observers: ${py.available.length}`);
  assert.deepEqual(goldenMismatches(py.results[MINMAX], minmaxCase), []);
  assert.deepEqual(goldenMismatches(py.results[HIST], histCase), []);

  // Moving the bins slider changes explorer.results and explorer.params in Python.
  const control = page.locator(`[role=region][aria-label="${HIST}"] .control[data-param="bins"]`);
  await control.locator('input[type=range]').fill('300');
  const bins = Number(await control.locator('output').innerText());
  assert.ok(bins !== 2048 && bins > 1, `bins moved to ${bins}`);
  const moved = await panelWhen(HIST, (d) => d.scale !== hist.scale, 'rescaled');
  py = await python((p) => p.params[HIST] && p.params[HIST].bins === bins && p.results[HIST].params.bins === bins, `bins = ${bins}`);
  assert.equal(py.results[HIST].scale, Number(moved.scale));
  assert.notEqual(py.results[HIST].scale, histCase.expected.scale[0]);

  // Typing 256: PyTorch's result for bins=256 (the same search result as 2048 on this input).
  const bins256 = goldenCase('hist-bins256-normal');
  await control.locator('input.exact').fill('256');
  await control.locator('input.exact').blur();
  py = await python((p) => p.params[HIST] && p.params[HIST].bins === 256 && p.results[HIST].params.bins === 256, 'bins = 256');
  assert.deepEqual(goldenMismatches(py.results[HIST], bins256), []);

  // Bad inputs get specific errors, in the page (role=alert, the panel's data-error).
  const alert = page.locator('.quantscope-widget[data-status="error"] [role=alert]', { hasText: 'junk.npy' });
  await alert.waitFor({ timeout: 30_000 });
  const noMember = page.locator('.quantscope-widget[data-status="error"] [role=alert]', { hasText: 'nope' });
  await noMember.waitFor({ timeout: 30_000 });
  assert.match(await noMember.innerText(), /no tensor named "nope" in two_arrays_compressed\.npz; members: weights, ids/);

  // The chosen member of the .npz, as numpy's reference describes it.
  const manifest = JSON.parse(fs.readFileSync(path.join(NPZ_DIR, 'manifest.json'), 'utf8'));
  const want = manifest.files.find((f) => f.file === 'two_arrays_compressed.npz').members.ids;
  const npz = await python((p) => Boolean(p.shape), 'the .npz summary', '#qs-npz');
  assert.deepEqual(npz.shape, want.shape);
  assert.equal(npz.min, want.min_f64);
  assert.equal(npz.max, want.max_f64);
  const unknown = await panelData(page, 'torch.NoSuchObserver');
  assert.equal(unknown.status, 'error');
  assert.match(unknown.error, /unknown observer "torch\.NoSuchObserver": explorer\.available_observers lists the \d+ observers/);
  assert.deepEqual(page.errors.filter((e) => /quantscope|wasm/i.test(e)), []);
});
