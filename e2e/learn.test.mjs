// The learn view (www/ui/learn.js, www/ui/lessons/): every lesson at `#learn/<slug>` in headless
// Chromium — its figure answers its control, its "try it" accepts the engine's answer and refuses
// a wrong one, its link opens the explorer in the state it describes, axe finds no serious or
// critical violation, and Tab reaches its controls. Expected answers are computed here, apart
// from the page: by the npm package's Engine in Node on the same demo files (and, for the
// rotation, by the command-line engine), never typed in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import * as qs from '../www/lib/index.js';
import { ROOT, WWW, RESULTS, axeViolations, describeViolation } from './helpers.mjs';
import { browserForTests } from './suite.mjs';
import { LESSONS } from '../www/ui/learn.js';
import { TASK as FLOAT_TASK, chosenFormat } from '../www/ui/lessons/float-formats.js';
import { TYPES as K_TYPES, TARGET_DB } from '../www/ui/lessons/k-quants.js';
import { ROTATION, FORMATS as ROTATION_FORMATS, TASK_FORMAT as ROTATION_FORMAT } from '../www/ui/lessons/rotation.js';
import { TASK_FILE } from '../www/ui/lessons/checkpoint.js';
import { DEMO_FILES } from '../www/ui/lessons/kit.js';

const env = browserForTests({ setup: () => qs.init() });

// ---------------------------------------------------------------------------------------------
// The expected answers, computed apart from the page

/** An engine in this process holding `input` (bytes of a demo file, or `{data, shape}`). */
async function engineOn(input) {
  const engine = new qs.Engine();
  await engine.load({ files: [input] });
  engine.select({ selection: { batches: [{ file: 0, member: '' }], split: null } });
  return engine;
}
const demoBytes = (name) => ({ bytes: fs.readFileSync(path.join(WWW, DEMO_FILES[name])), name: path.basename(DEMO_FILES[name]) });
/** `bits`-bit integer codes as PyTorch's quant_min/quant_max (the observers' configuration). */
const codes = (bits, signed) => (signed ? { quant_min: -(2 ** (bits - 1)), quant_max: 2 ** (bits - 1) - 1 } : { quant_min: 0, quant_max: 2 ** bits - 1 });

/** The command-line engine that can rotate (`--rotate`), if one is built. */
function rotatingCli() {
  for (const build of ['release', 'debug']) {
    const bin = path.join(ROOT, 'target', build, 'quantscope');
    if (!fs.existsSync(bin)) continue;
    if (execFileSync(bin, ['formats', '--help'], { encoding: 'utf8' }).includes('--rotate')) return bin;
  }
  return null;
}

/**
 * Per lesson: the control to move (`move(page)`), the answer the engine gives (`answer(shows)`,
 * from what the figure shows after the move) with a wrong one, and the explorer state its link
 * must open ({observers, demo, formats: ids}).
 */
const CASES = {
  'scale-and-zero-point': {
    move: (page) => page.selectOption('[data-control=bits]', '3'),
    answer: async (shows) => {
      const e = await engineOn({ data: Float32Array.from(shows.values), shape: [shows.values.length], name: 'v' });
      const signed = shows.scheme === 'symmetric';
      const r = e.observe({ id: 'torch.MinMaxObserver', params: { qscheme: `per_tensor_${shows.scheme}`, dtype: signed ? 'qint8' : 'quint8', ...codes(shows.bits, signed) } });
      return { right: String(r.zero_point[0]), wrong: String(r.zero_point[0] + 1) };
    },
    explorer: { observers: ['torch.MinMaxObserver'], demo: 'activation', formats: [] },
  },
  'per-channel': {
    move: (page) => page.fill('[data-control=bits]', '6').then(() => page.dispatchEvent('[data-control=bits]', 'input')),
    answer: async (shows) => {
      const e = await engineOn(demoBytes('weight'));
      const r = e.observe({ id: 'torch.PerChannelMinMaxObserver', params: { qscheme: 'per_channel_symmetric', dtype: 'qint8', ...codes(shows.bits, true) } });
      return { right: r.metrics.sqnr_db.toFixed(2), wrong: (r.metrics.sqnr_db + 1).toFixed(2) };
    },
    explorer: { observers: ['torch.MinMaxObserver', 'torch.PerChannelMinMaxObserver'], demo: 'weight', formats: [] },
  },
  clipping: {
    move: async (page) => {
      await page.focus('[data-control=threshold]');
      for (let i = 0; i < 20; i += 1) await page.keyboard.press('ArrowLeft');
    },
    answer: async (shows) => {
      const e = await engineOn(demoBytes('activation'));
      const c = e.curve({ spec: { bits: shows.bits, scheme: 'symmetric', points: 200 } });
      const db = c.points[c.best][2];
      return { right: db.toFixed(2), wrong: (db + 1).toFixed(2) };
    },
    explorer: { observers: ['torch.MinMaxObserver', 'torch.HistogramObserver'], demo: 'activation', formats: [] },
  },
  observers: {
    move: (page) => page.check('[data-control=method][value="torch.MinMaxObserver"]'),
    answer: async (shows, page) => {
      const ids = await page.$$eval('[data-control=method]', (els) => els.map((el) => el.value));
      const e = await engineOn(demoBytes('activation'));
      const mse = ids.map((id) => e.observe({ id }).metrics.mse);
      const best = ids[mse.indexOf(Math.min(...mse))];
      return { right: best, wrong: ids.find((id) => id !== best) };
    },
    explorer: { observers: ['torch.MinMaxObserver', 'ort.PercentileCalibrater', 'torch.HistogramObserver', 'modelopt.HistogramCalibrator.entropy', 'quark.PerTensorMSEObserver'], demo: 'activation', formats: [] },
  },
  'float-formats': {
    move: (page) => page.selectOption('[data-control=element]', 'fp8_e4m3'),
    answer: async () => {
      const e = await engineOn(demoBytes('activation'));
      const { id, params } = chosenFormat(FLOAT_TASK.element, FLOAT_TASK.sharing);
      const bits = e.evaluateFormat({ id, params }).bits_per_value;
      return { right: String(bits), wrong: String(bits + 1) };
    },
    explorer: { observers: ['torch.MinMaxObserver'], demo: 'activation', formats: ['mx'] },
  },
  'k-quants': {
    move: (page) => page.selectOption('[data-control=type]', 'ggml.Q6_K'),
    answer: async () => {
      const e = await engineOn(demoBytes('weight'));
      const rows = K_TYPES.map((id) => e.evaluateFormat({ id, params: {} }));
      const good = rows.filter((r) => r.sqnr_db >= TARGET_DB).sort((a, b) => a.bits_per_value - b.bits_per_value)[0];
      return { right: good.id, wrong: K_TYPES.find((t) => t !== good.id) };
    },
    explorer: { observers: ['torch.MinMaxObserver'], demo: 'weight', formats: ['ggml.Q6_K'] },
  },
  rotation: {
    move: (page) => page.selectOption('[data-control=format]', 'int8'),
    answer: async () => {
      // The rotated SQNR from the npm package's engine, and the same from the CLI.
      const e = await engineOn(demoBytes('activation'));
      const [, id, params] = ROTATION_FORMATS.find(([label]) => label === ROTATION_FORMAT);
      const db = e.evaluateFormat({ id, params, rotate: ROTATION }).sqnr_db;
      const cli = rotatingCli();
      if (cli) {
        const doc = JSON.parse(execFileSync(cli, ['formats', path.join(WWW, DEMO_FILES.activation), '--rotate', ROTATION, '--json'], { encoding: 'utf8' }));
        assert.equal(doc.after.find((r) => r.format === ROTATION_FORMAT).sqnr_db, db, 'the page engine\'s rotated SQNR is the CLI\'s');
      }
      return { right: db.toFixed(2), wrong: (db - 2).toFixed(2) };
    },
    explorer: { observers: ['torch.MinMaxObserver', 'torch.PerChannelMinMaxObserver'], demo: 'activation', formats: ['int'], rotate: 'hadamard:0' },
  },
  checkpoint: {
    move: (page) => page.selectOption('[data-control=file]', 'weight'),
    answer: async () => {
      const elements = qs.loadTensor(demoBytes(TASK_FILE).bytes, { name: 'w.npy' }).elements;
      return { right: String(elements), wrong: String(elements - 1) };
    },
    explorer: { observers: ['torch.MinMaxObserver'], demo: 'weight', formats: ['ggml.Q4_K'] },
  },
};

// ---------------------------------------------------------------------------------------------
// The page

const figure = (page) => page.$eval('article.lesson figure.lesson-figure', (f) => ({ drawn: Number(f.dataset.drawn), shows: JSON.parse(f.dataset.shows || 'null') }));

/** Open `#learn/<slug>` and wait until its figure shows the engine's answer. */
async function openLesson(page, slug) {
  await page.evaluate((s) => {
    location.hash = `#learn/${s}`;
  }, slug);
  await page.waitForSelector(`article.lesson[data-lesson="${slug}"][data-state=ready]`, { timeout: 20000 });
  await page.evaluate(() => window.quantscope.idle());
}

/** Answer the lesson's "try it" with `answer`; its verdict and message. */
async function answer(page, text) {
  const radios = await page.$$('form.try-it input[type=radio]');
  if (radios.length) await page.check(`form.try-it input[type=radio][value="${text}"]`);
  else await page.fill('form.try-it input[name=answer]', text);
  await page.click('form.try-it button[type=submit]');
  return page.$eval('form.try-it', (f) => ({ verdict: f.dataset.verdict, message: f.querySelector('.verdict').textContent }));
}

test('the lessons are listed at #learn, in order, and #learn is not explorer state', async () => {
  const page = await env.page({ hash: '#learn/clipping' });
  await page.waitForSelector('article.lesson[data-lesson=clipping][data-state=ready]');
  await page.evaluate(() => window.quantscope.idle());
  assert.equal(await page.evaluate(() => location.hash), '#learn/clipping', 'the explorer does not write its state over a lesson');
  assert.ok(await page.$eval('#views > #observers-view', (el) => getComputedStyle(el).display === 'none'), 'the explorer is hidden');
  await page.evaluate(() => {
    location.hash = '#learn';
  });
  const links = await page.$$eval('.learn-index[data-lesson=index] .lesson-list a', (as) => as.map((a) => a.getAttribute('href')));
  assert.deepEqual(links, LESSONS.map((l) => `#learn/${l.slug}`));
  assert.equal(links.length, 8);
  // Back to the explorer: it shows again, with its state back in the URL and its panels working.
  await page.click('.learn-index a.back');
  await page.waitForFunction(() => !document.body.classList.contains('learning'));
  await page.evaluate(() => window.quantscope.idle());
  assert.match(await page.evaluate(() => location.hash), /^#o=/);
  const statuses = await page.$$eval('#observers-view [role=region]', (els) => els.map((el) => el.dataset.status));
  assert.ok(statuses.length > 0 && statuses.every((s) => s === 'ready'), statuses.join());
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('every lesson: figure answers its control, try-it judged by the engine, explorer link, axe, keyboard', async () => {
  const page = await env.page({ hash: '#learn', width: 1280 });
  await page.goto(`${env.url}?workers=2#learn`);
  await page.evaluate(() => window.quantscope.ready);
  for (const { slug } of LESSONS) {
    const t0 = Date.now();
    const c = CASES[slug];
    await openLesson(page, slug);
    assert.equal(await page.$$eval(`[data-lesson="${slug}"]`, (els) => els.length), 1, `${slug}: one root with data-lesson`);

    // The figure responds to its control.
    const before = await figure(page);
    await c.move(page);
    await page.waitForFunction((n) => Number(document.querySelector('article.lesson figure').dataset.drawn) > n, before.drawn);
    await page.evaluate(() => window.quantscope.idle());
    const after = await figure(page);
    assert.notDeepEqual(after.shows, before.shows, `${slug}: the figure shows something else after the control moved`);

    // Try it: the engine's answer, computed here, is accepted; a wrong one is refused with a reason.
    const expected = await c.answer(after.shows, page);
    const wrong = await answer(page, expected.wrong);
    assert.equal(wrong.verdict, 'wrong', `${slug}: ${expected.wrong} refused`);
    assert.ok(wrong.message.length > 20, `${slug}: says why (${wrong.message})`);
    const right = await answer(page, expected.right);
    assert.equal(right.verdict, 'right', `${slug}: ${expected.right} accepted (${right.message})`);

    // Accessibility, and Tab reaches the lesson's controls.
    const serious = (await axeViolations(page, '#learn')).filter((v) => v.impact === 'serious' || v.impact === 'critical');
    assert.deepEqual(serious.map(describeViolation), [], `${slug}: axe`);
    await page.focus(`article.lesson .lesson-nav a`);
    let reached = false;
    for (let i = 0; i < 12 && !reached; i += 1) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => Boolean(document.activeElement && document.activeElement.closest('[data-control]')));
    }
    assert.ok(reached, `${slug}: Tab reaches a control`);
    if (slug === 'clipping' || slug === 'observers') {
      await page.screenshot({ path: path.join(RESULTS, `learn-${slug}.png`), fullPage: true });
    }

    // The link opens the explorer in the state the lesson describes.
    await page.click('article.lesson a.open-explorer');
    await page.waitForFunction(() => !document.body.classList.contains('learning'));
    await page.waitForFunction((demo) => window.quantscope.summary()?.name === demo, path.basename(DEMO_FILES[c.explorer.demo]));
    await page.evaluate(() => window.quantscope.idle());
    const state = await page.evaluate(() => window.quantscope.state());
    assert.deepEqual(state.observers, c.explorer.observers, `${slug}: observers`);
    assert.equal(state.demo, c.explorer.demo, `${slug}: demo`);
    assert.deepEqual(state.formats.map((f) => f.id), c.explorer.formats, `${slug}: formats`);
    assert.equal(state.rotate, c.explorer.rotate ?? null, `${slug}: rotation preview`);
    const rows = await page.evaluate(() => window.quantscope.formats());
    for (const id of c.explorer.formats) assert.ok(rows.some((r) => r.extra && r.id === id && !r.error), `${slug}: ${id} compared in the formats view`);
    console.log(`${slug}: ${Date.now() - t0} ms`);
  }
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
