// End-to-end tests of the rotation preview in headless Chromium: the toolbar's "Rotate (Hadamard)"
// (keyboard-operated) makes every observer panel show its SQNR after a randomized Hadamard
// rotation and every format row an "SQNR rotated" column with a verdict, each number checked
// against the CLI's `observe --rotate` / `formats --rotate --json` on the same file; the number
// follows parameter and tensor changes without ever showing a stale value; the URL keeps the
// toggle and the seed; axe-core finds nothing serious with it on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { WWW, RESULTS, cli, panelData, axeViolations, describeViolation } from './helpers.mjs';
import { browserForTests } from './suite.mjs';

const env = browserForTests();

const DEMO = {
  activation: path.join(WWW, 'demo', 'l0_layer_out.npy'),
  weight: path.join(WWW, 'demo', 'l0_attn_output_dense_weight.npy'),
};
const SEED = 3;
const ROTATE = `hadamard:${SEED}`;
/** Observers whose rotated SQNR is checked: per tensor, per tensor with a search, per channel. */
const OBSERVERS = ['torch.MinMaxObserver', 'torch.HistogramObserver', 'torch.PerChannelMinMaxObserver'];
const panel = (id) => `[role=region][aria-label="${id}"]`;
const idle = (page) => page.evaluate(() => window.quantscope.idle());

/** `observe FILE --observer ID --rotate ROTATE --json`: {rotation, before, after}. */
function observeCli(file, id, params = {}) {
  return JSON.parse(cli(['observe', file, '--observer', id, '--params', JSON.stringify(params), '--rotate', ROTATE, '--json']));
}

/** The SQNR as a data-* attribute writes it: the number's JSON text, `null` when not finite. */
const attr = (sqnr) => (sqnr === null ? 'null' : String(sqnr));

/** Turn the rotation preview on with seed SEED, with the keyboard only. */
async function rotateWithKeyboard(page) {
  await page.focus('#rotate-on');
  await page.keyboard.press('Space');
  await page.focus('#rotate-seed');
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.type(String(SEED));
  await page.keyboard.press('Tab'); // the seed is committed when the field is left
  await idle(page);
}

test('each observer panel shows its SQNR after rotation, the CLI\'s, for its parameters and tensor', async () => {
  const page = await env.page();
  assert.equal(await page.$$eval('.panel .rotated:not([hidden])', (els) => els.length), 0, 'no rotation line before the preview is on');
  await rotateWithKeyboard(page);
  assert.equal(await page.isChecked('#rotate-on'), true);
  assert.equal(await page.inputValue('#rotate-seed'), String(SEED));
  for (const id of OBSERVERS) {
    const want = observeCli(DEMO.activation, id);
    const d = await panelData(page, id);
    assert.equal(d.sqnrDb, attr(want.before.metrics.sqnr_db), `${id}: the panel's own SQNR is the CLI's before`);
    assert.equal(d.rotatedSqnr, attr(want.after.metrics.sqnr_db), `${id}: data-rotated-sqnr is the CLI's after (${want.rotation})`);
    assert.equal(d.rotationHelps, String(want.after.metrics.sqnr_db - want.before.metrics.sqnr_db >= 0.5), `${id}: the verdict`);
    const line = await page.textContent(`${panel(id)} .rotated`);
    assert.match(line, /^after rotation: SQNR [\d.−-]+ dB \(before [\d.−-]+ dB\)/, `${id}: ${line}`);
    assert.equal(await page.getAttribute(`${panel(id)} .rotated`, 'title'), `rotated: ${want.rotation}`);
  }
  // On this activation the outliers sit in a few hidden dimensions: rotation helps one scale per
  // tensor.
  assert.equal((await panelData(page, 'torch.MinMaxObserver')).rotationHelps, 'true');

  // A parameter changed twice in a row: the old number goes at once, and the one shown at the
  // end is the answer for the last value.
  const hist = panel('torch.HistogramObserver');
  const gone = await page.evaluate((sel) => {
    const el = document.querySelector(sel);
    const exact = el.querySelector('.control[data-param=bins] input.exact');
    const seen = [];
    for (const bins of ['512', '256']) {
      exact.value = bins;
      exact.dispatchEvent(new Event('change', { bubbles: true }));
      seen.push(el.dataset.rotatedSqnr);
    }
    return seen;
  }, hist);
  assert.deepEqual(gone, [undefined, undefined], 'no stale rotated SQNR while the new one is computed');
  assert.match(await page.textContent(`${hist} .rotated`), /computing/);
  await idle(page);
  const want256 = observeCli(DEMO.activation, 'torch.HistogramObserver', { bins: 256 });
  const d = await panelData(page, 'torch.HistogramObserver');
  assert.equal(d.sqnrDb, attr(want256.before.metrics.sqnr_db));
  assert.equal(d.rotatedSqnr, attr(want256.after.metrics.sqnr_db), 'the rotated SQNR of bins=256');
  await page.locator(panel('torch.MinMaxObserver')).screenshot({ path: path.join(RESULTS, 'rotation-panel.png') });

  // A new tensor: every panel asks again, on it.
  await page.selectOption('#demo', 'weight');
  await page.waitForFunction(() => window.quantscope.summary()?.name === 'l0_attn_output_dense_weight.npy');
  await idle(page);
  for (const id of ['torch.MinMaxObserver', 'torch.PerChannelMinMaxObserver']) {
    const want = observeCli(DEMO.weight, id);
    assert.equal((await panelData(page, id)).rotatedSqnr, attr(want.after.metrics.sqnr_db), `${id} on the weight`);
  }

  // Off: the lines and the attributes go.
  await page.uncheck('#rotate-on');
  await idle(page);
  assert.equal(await page.$$eval('.panel[data-rotated-sqnr], .panel .rotated:not([hidden])', (els) => els.length), 0);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('the formats view measures every format of a weight after rotation, the CLI\'s, with a verdict and a note', async () => {
  const page = await env.page({ hash: '#demo=weight' });
  await page.waitForSelector('#formats[data-state=done]');
  assert.equal((await page.evaluate(() => window.quantscope.summary())).name, 'l0_attn_output_dense_weight.npy');
  // On with seed 0, then at once seed 5 and seed SEED: the answers of the superseded seeds are
  // never shown.
  await page.check('#rotate-on');
  await page.evaluate((seed) => {
    const input = document.querySelector('#rotate-seed');
    for (const value of ['5', seed]) {
      input.value = value;
      input.dispatchEvent(new Event('change', { bubbles: true }));
    }
  }, String(SEED));
  await idle(page);
  const want = JSON.parse(cli(['formats', DEMO.weight, '--rotate', ROTATE, '--json']));
  const rows = await page.$$eval('#formats-table tbody tr[data-format]', (trs) =>
    trs.map((tr) => ({ format: tr.dataset.format, sqnr: tr.dataset.sqnr, rotated: tr.dataset.rotatedSqnr, helps: tr.dataset.rotationHelps, verdict: tr.querySelector('td.verdict')?.textContent })));
  assert.ok(rows.length >= 20, `${rows.length} rows`);
  let checked = 0;
  for (const r of rows) {
    const before = want.before.find((x) => x.format === r.format);
    const after = want.after.find((x) => x.format === r.format);
    if (!after) continue;
    checked += 1;
    assert.equal(r.sqnr, attr(before.sqnr_db), `${r.format}: SQNR as it is`);
    assert.equal(r.rotated, attr(after.sqnr_db), `${r.format}: data-rotated-sqnr is the CLI's after`);
    if (before.sqnr_db !== null && after.sqnr_db !== null) {
      const helps = after.sqnr_db - before.sqnr_db >= 0.5;
      assert.equal(r.helps, String(helps), `${r.format}: data-rotation-helps`);
      assert.equal(r.verdict, helps ? 'helps' : 'does not help', `${r.format}: the verdict`);
    }
  }
  assert.ok(checked >= 20, `${checked} rows checked against the CLI`);
  // One scale for the whole weight gains from rotation; block formats, whose blocks already
  // localise the outliers, do not.
  const row = (format) => rows.find((r) => r.format === format);
  assert.equal(row('int4').helps, 'true');
  assert.equal(row('ggml.Q4_K').helps, 'false');
  assert.equal(row('ggml.Q4_K').verdict, 'does not help');
  assert.equal(row('mxfp4_e2m1').helps, 'false');
  const note = await page.textContent('#formats-rotation');
  assert.ok(note.includes(want.rotation), `the note names the engine's rotation: ${note}`);
  assert.match(note, /NVFP4’s 16 values, MX’s 32/);
  assert.equal(await page.$$eval('#formats-table thead th', (ths) => ths.map((t) => t.textContent).includes('SQNR rotated')), true);
  await page.locator('#formats').screenshot({ path: path.join(RESULTS, 'rotation-formats.png') });

  // A format added while the preview is on is measured after rotation too.
  await page.evaluate(() => window.quantscope.addFormat('int', { bits: 3 }));
  await idle(page);
  const extra = await page.$eval('#formats-table tr.extra', (tr) => ({ ...tr.dataset }));
  assert.ok(Number.isFinite(Number(extra.rotatedSqnr)), `the added row has its rotated SQNR: ${JSON.stringify(extra)}`);

  // Off: the columns, the attributes and the note go.
  await page.uncheck('#rotate-on');
  await idle(page);
  assert.equal(await page.$$eval('#formats-table tr[data-rotated-sqnr]', (els) => els.length), 0);
  assert.equal(await page.isHidden('#formats-rotation'), true);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('the URL keeps the rotation preview and its seed', async () => {
  const page = await env.page({ hash: `#o=torch.MinMaxObserver&rotate=${encodeURIComponent(ROTATE)}` });
  await idle(page);
  assert.equal(await page.isChecked('#rotate-on'), true);
  assert.equal(await page.inputValue('#rotate-seed'), String(SEED));
  assert.equal((await page.evaluate(() => window.quantscope.state())).rotate, ROTATE);
  const want = observeCli(DEMO.activation, 'torch.MinMaxObserver');
  assert.equal((await panelData(page, 'torch.MinMaxObserver')).rotatedSqnr, attr(want.after.metrics.sqnr_db));
  // Another seed, then off: the fragment follows, and a fragment typed by hand is applied.
  await page.fill('#rotate-seed', '12');
  await page.dispatchEvent('#rotate-seed', 'change');
  await idle(page);
  assert.match(await page.evaluate(() => location.hash), /[#&]rotate=hadamard%3A12(&|$)/);
  await page.uncheck('#rotate-on');
  await idle(page);
  assert.doesNotMatch(await page.evaluate(() => location.hash), /rotate=/);
  assert.equal((await page.evaluate(() => window.quantscope.state())).rotate, null);
  await page.evaluate(() => {
    location.hash = '#o=torch.MinMaxObserver&rotate=hadamard';
  });
  await page.waitForFunction(() => document.querySelector('#rotate-on').checked);
  await idle(page);
  assert.equal(await page.inputValue('#rotate-seed'), '0');
  assert.equal((await page.evaluate(() => window.quantscope.state())).rotate, 'hadamard:0');
  // Not a seed: the one in use stays.
  await page.fill('#rotate-seed', '-4');
  await page.dispatchEvent('#rotate-seed', 'change');
  assert.equal(await page.inputValue('#rotate-seed'), '0');
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('axe-core finds no serious or critical violation with the rotation preview on', async (t) => {
  const page = await env.page({ hash: `#rotate=${encodeURIComponent(ROTATE)}` });
  await page.waitForSelector('#formats[data-state=done]');
  await idle(page);
  assert.ok(await page.$('.panel[data-rotated-sqnr]'), 'the panels show their rotated SQNR');
  assert.ok(await page.$('#formats-table tr[data-rotated-sqnr]'), 'the formats show theirs');
  for (const context of [{ include: [['section.data'], ['#observers-view']] }, '#formats-view']) {
    const violations = await axeViolations(page, context);
    for (const v of violations) t.diagnostic(`${v.impact}: ${describeViolation(v)}`);
    assert.deepEqual(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map(describeViolation), []);
  }
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
