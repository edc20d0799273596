// End-to-end tests of the explorer page in headless Chromium (Debian's, through playwright-core).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { start, sharedDir, RESULTS, inkRatio, npyBytes, panelData, cli, WWW, loadInPage } from './helpers.mjs';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env.close();
});

const golden = JSON.parse(fs.readFileSync(path.join(sharedDir(), 'golden', 'torch', 'cases.json'), 'utf8'));

function closeTo(actual, expected, rtol, atol, what) {
  const ok = Math.abs(actual - expected) <= atol + rtol * Math.abs(expected);
  assert.ok(ok, `${what}: ${actual} vs expected ${expected} (rtol ${rtol}, atol ${atol})`);
}

function tolerance(c, field) {
  const key = field.startsWith('search_') ? 'search_min_max' : field;
  const t = (c.tolerance.per_field && c.tolerance.per_field[key]) || c.tolerance;
  return [t.rtol || 0, t.atol || 0];
}

/** Compare a panel's data-* attributes with a golden case's expected values. */
function checkPanel(data, c) {
  const e = c.expected;
  const list = (v) => (v.startsWith('[') ? JSON.parse(v) : [Number(v)]);
  assert.equal(data.status, 'ready', `${c.id}: ${data.error || ''}`);
  // The clipping range is the searched range when the observer searches (search_min/max),
  // else its min_val/max_val.
  const pairs = [
    ['clipMin', 'search_min' in e ? 'search_min' : 'min_val'],
    ['clipMax', 'search_max' in e ? 'search_max' : 'max_val'],
    ['scale', 'scale'],
    ['zeroPoint', 'zero_point'],
  ];
  for (const [attr, field] of pairs) {
    if (!(field in e)) continue;
    const want = Array.isArray(e[field]) ? e[field] : [e[field]];
    const got = list(data[attr]);
    assert.equal(got.length, want.length, `${c.id} ${field} length`);
    const [rtol, atol] = tolerance(c, field);
    got.forEach((v, i) => closeTo(v, want[i], rtol, atol, `${c.id} ${field}[${i}]`));
  }
  if (e.qdq) {
    const [rtol, atol] = tolerance(c, 'qdq');
    closeTo(Number(data.mse), e.qdq.mse, rtol, atol, `${c.id} mse`);
    if (e.qdq.sqnr_db === null || e.qdq.sqnr_db === undefined) assert.equal(data.sqnrDb, 'null', `${c.id} sqnr_db undefined`);
    else closeTo(Number(data.sqnrDb), e.qdq.sqnr_db, rtol, atol, `${c.id} sqnr_db`);
    closeTo(Number(data.clippedFraction), e.qdq.clipped_fraction, rtol, atol, `${c.id} clipped_fraction`);
  }
}

async function uploadBuffer(page, name, buffer) {
  await page.setInputFiles('#file', { name, mimeType: 'application/octet-stream', buffer });
  await page.evaluate(() => window.quantscope.idle());
}

test('opens on the demo with every default panel drawn', async () => {
  const page = await env.page();
  const ids = await page.$$eval('[role=region][aria-label]', (els) => els.map((e) => e.getAttribute('aria-label')));
  assert.ok(ids.includes('torch.MinMaxObserver') && ids.includes('torch.HistogramObserver'), ids.join(','));
  assert.ok(ids.includes('torch.PerChannelMinMaxObserver'), 'per-channel observers join for a 2-D tensor');
  for (const id of ids) {
    const d = await panelData(page, id);
    assert.equal(d.status, 'ready', id);
    assert.ok(Number(d.drawn) >= 1, id);
    const ink = await inkRatio(page, `[role=region][aria-label="${id}"] canvas.hist`);
    assert.ok(ink > 0.02, `${id} histogram canvas is not blank (${ink})`);
  }
  const curveInk = await inkRatio(page, '#curve');
  assert.ok(curveInk > 0.01, `error curve drawn (${curveInk})`);
  const info = await page.textContent('#tensor-info');
  assert.match(info, /l0_layer_out\.npy/);
  assert.match(info, /\[560, 384\]/);
  assert.match(info, /215,040/);
  // The MiniLM README's table: MinMax vs Histogram on this activation (PyTorch defaults).
  const mm = await panelData(page, 'torch.MinMaxObserver');
  const hi = await panelData(page, 'torch.HistogramObserver');
  closeTo(Number(mm.mse), 1.985e-4, 5e-3, 0, 'MinMax mse');
  closeTo(Number(hi.mse), 1.770e-4, 5e-3, 0, 'Histogram mse');
  // The diagnosis: the facts about the values word for word as the CLI writes them, then what
  // did best among the panels shown.
  await page.waitForFunction(() => document.querySelector('#diagnosis')?.textContent.includes('Best here'));
  const diagnosis = await page.textContent('#diagnosis');
  const cliDiagnosis = cli(['observe', path.join(WWW, 'demo', 'l0_layer_out.npy')]).split('diagnosis: ')[1].trim();
  assert.match(diagnosis, /of the 255 steps/);
  assert.equal(diagnosis.split(' Best here')[0], cliDiagnosis.split(' Best here')[0]);
  await page.locator('section.curve').screenshot({ path: path.join(RESULTS, 'explorer-diagnosis.png') });
  await page.screenshot({ path: path.join(RESULTS, 'explorer-demo.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('"Why this range?" shows the derivation the CLI prints, ending in the panel\'s scale', async () => {
  const page = await env.page();
  const id = 'torch.HistogramObserver';
  const panel = `[role=region][aria-label="${id}"]`;
  await page.click(`${panel} .why summary`);
  await page.waitForSelector(`${panel}[data-derivation-steps]`);
  const shown = await page.$$eval(`${panel} .why .step`, (steps) =>
    steps.map((s) => ({
      title: s.querySelector('h4').textContent,
      values: Object.fromEntries([...s.querySelectorAll('.values .row')].map((r) => [r.querySelector('dt').textContent, r.querySelector('dd').textContent])),
      picked: s.querySelector('tr.picked td')?.textContent ?? null,
    })),
  );
  const want = JSON.parse(cli(['observe', path.join(WWW, 'demo', 'l0_layer_out.npy'), '--observer', id, '--explain', '--json']));
  assert.deepEqual(shown.map((s) => s.title), want.derivation.map((s) => s.title));
  const search = want.derivation.find((s) => s.candidates);
  assert.equal(shown.find((s) => s.picked !== null).picked, String(search.candidates.picked));
  // The last step holds the scale and zero point the panel shows, written as the CLI writes them.
  const d = await panelData(page, id);
  const wantLast = want.derivation[want.derivation.length - 1].values;
  assert.equal(Number(d.scale), wantLast.scale[0]);
  assert.equal(Number(d.zeroPoint), wantLast.zero_point[0]);
  const text = cli(['observe', path.join(WWW, 'demo', 'l0_layer_out.npy'), '--observer', id, '--explain']);
  const written = (name) => text.split('\n').filter((l) => l.trim().startsWith(`${name} = `)).pop().trim().slice(name.length + 3);
  const last = shown[shown.length - 1].values;
  assert.equal(last.scale, written('scale'));
  assert.equal(last.zero_point, written('zero_point'));
  // The search's chart: pointing at a candidate previews its clipping range on the histogram;
  // the arrow keys walk the candidates from the pick.
  const chart = `${panel} canvas.candidates-chart`;
  await page.waitForSelector(`${chart}[data-drawn]`);
  const rows = search.candidates.rows;
  await page.focus(chart);
  await page.keyboard.press('ArrowRight');
  const previewed = await page.getAttribute(panel, 'data-preview');
  const next = rows[search.candidates.picked + 1];
  assert.deepEqual(previewed.split(',').map(Number), [next[2], next[3]], 'the candidate after the pick: its min and max');
  const box = await page.locator(chart).boundingBox();
  await page.mouse.move(box.x + box.width * 0.2, box.y + box.height / 2);
  const hovered = Number(await page.getAttribute(chart, 'data-hovered'));
  assert.deepEqual((await page.getAttribute(panel, 'data-preview')).split(',').map(Number), [rows[hovered][2], rows[hovered][3]]);
  await page.locator(`${panel}`).screenshot({ path: path.join(RESULTS, 'explorer-candidate-preview.png') });
  await page.mouse.move(0, 0);
  assert.equal(await page.getAttribute(panel, 'data-preview'), '');
  // A search-only change refreshes the open derivation.
  await page.selectOption(`${panel} .control[data-param=dtype] select`, 'qint8');
  await page.evaluate(() => window.quantscope.idle());
  await page.waitForFunction((p) => document.querySelector(`${p} .why .step:last-child dd`) && [...document.querySelectorAll(`${p} .why .step:last-child .row`)].some((r) => r.querySelector('dt').textContent === 'quant_min' && r.querySelector('dd').textContent === '−128'), panel);
  await page.locator(panel).screenshot({ path: path.join(RESULTS, 'explorer-why-this-range.png') });
  await page.locator(`${panel} .why`).screenshot({ path: path.join(RESULTS, 'explorer-derivation.png') });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('a golden torch input through the file picker and the generated controls matches cases.json', async () => {
  const c = golden.cases.find((x) => x.id === 'minmax-qint8-symmetric-normal');
  const page = await env.page();
  await uploadBuffer(page, 'normal_b0.npy', fs.readFileSync(path.join(sharedDir(), 'golden', 'torch', c.batches[0])));
  assert.match(await page.textContent('#tensor-info'), /normal_b0\.npy/);
  const panel = '[role=region][aria-label="torch.MinMaxObserver"]';
  await page.selectOption(`${panel} .control[data-param=dtype] select`, 'qint8');
  await page.evaluate(() => window.quantscope.idle());
  await page.selectOption(`${panel} .control[data-param=qscheme] select`, 'per_tensor_symmetric');
  await page.evaluate(() => window.quantscope.idle());
  const d = await panelData(page, 'torch.MinMaxObserver');
  checkPanel(d, c);
  assert.equal(d.stateReused, 'true', 'dtype/qscheme are search-only: applied to the min/max state');
  assert.equal(await page.textContent(`${panel} .control[data-param=qscheme] output`), 'per_tensor_symmetric');
  const stats = await page.textContent(`${panel} .stats`);
  assert.match(stats, /\[−128, 127\]/, 'the grid shown in the panel');
  await page.context().close();
});

test('golden cases of every registered torch observer match through window.quantscope', async () => {
  const page = await env.page();
  const registered = new Set(await page.evaluate(() => window.quantscope.registry().map((o) => o.id)));
  const byObserver = new Map();
  for (const c of golden.cases) {
    if (!registered.has(c.observer) || c.expected.error || c.preset || c.set_attributes_after_init || !c.batches.length) continue;
    const list = byObserver.get(c.observer) || [];
    if (list.length < 4) list.push(c);
    byObserver.set(c.observer, list);
  }
  assert.ok(byObserver.size >= 1, 'some torch observer is registered');
  let checked = 0;
  for (const cases of byObserver.values()) {
    for (const c of cases) {
      const buffers = c.batches.map((b) => fs.readFileSync(path.join(sharedDir(), 'golden', 'torch', b)));
      await loadInPage(page, buffers, { name: c.batches.map((b) => path.basename(b)) });
      const summary = await page.evaluate(() => window.quantscope.summary());
      assert.equal(summary.batches, c.batches.length, `${c.id}: calibration batches in order`);
      await page.evaluate(async ({ id, params }) => {
        await window.quantscope.setObservers([id]);
        await window.quantscope.observe(id, params);
      }, { id: c.observer, params: c.params });
      checkPanel(await panelData(page, c.observer), c);
      checked++;
    }
  }
  assert.ok(checked >= 4, `checked ${checked} cases`);
  await page.context().close();
});

test('sliders: bins re-observes and redraws, search-only parameters reuse the state without a data pass', async (t) => {
  const page = await env.page({ hash: '#o=torch.HistogramObserver,torch.MinMaxObserver' });
  const id = 'torch.HistogramObserver';
  const panel = `[role=region][aria-label="${id}"]`;
  const before = await panelData(page, id);
  // bins: a log slider over [1, 2^k]; move it well below 2048.
  const bins = `${panel} .control[data-param=bins] input[type=range]`;
  await page.fill(bins, '450');
  await page.evaluate(() => window.quantscope.idle());
  const after = await panelData(page, id);
  const label = await page.textContent(`${panel} .control[data-param=bins] output`);
  assert.ok(Number(label) < 2048, `bins label shows the new value (${label})`);
  assert.notEqual(after.clipMin + after.clipMax, before.clipMin + before.clipMax, 'clipping range changed');
  assert.ok(Number(after.drawn) > Number(before.drawn), 'panel redrawn');
  assert.equal(after.stateReused, 'false', 'bins needs the data again');
  const state = await page.evaluate(() => window.quantscope.state());
  assert.equal(state.params[id].bins, Number(label));

  // A search-only parameter of a registered observer: searched again on the collected state.
  const percentileObserver = await page.evaluate(() =>
    window.quantscope.registry().find((o) => o.params.some((p) => p.name === 'percentile' && p.type === 'float')),
  );
  if (!percentileObserver) {
    t.diagnostic('no observer with a percentile parameter is registered in this build; the percentile slider part is skipped');
  } else {
    const pid = percentileObserver.id;
    t.diagnostic(`percentile slider of ${pid}`);
    await page.evaluate((x) => window.quantscope.setObservers([x, 'torch.HistogramObserver', 'torch.MinMaxObserver']), pid);
    const pPanel = `[role=region][aria-label="${pid}"]`;
    const p0 = await panelData(page, pid);
    await page.fill(`${pPanel} .control[data-param=percentile] input[type=range]`, '100');
    await page.evaluate(() => window.quantscope.idle());
    const p1 = await panelData(page, pid);
    assert.notEqual(p1.clipMax, p0.clipMax, 'percentile moves the clipping range');
    assert.ok(Number(p1.drawn) > Number(p0.drawn));
    const affects = percentileObserver.params.find((p) => p.name === 'percentile').affects;
    if (affects === 'search') assert.equal(p1.stateReused, 'true');
  }
  const mm = '[role=region][aria-label="torch.MinMaxObserver"]';
  const m0 = await panelData(page, 'torch.MinMaxObserver');
  await page.selectOption(`${mm} .control[data-param=qscheme] select`, 'per_tensor_symmetric');
  await page.evaluate(() => window.quantscope.idle());
  const m1 = await panelData(page, 'torch.MinMaxObserver');
  assert.equal(m1.stateReused, 'true');
  assert.notEqual(m1.scale, m0.scale);
  await page.screenshot({ path: path.join(RESULTS, 'explorer-sliders.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('a malformed file shows an error and keeps the previous tensor and panels', async () => {
  const page = await env.page();
  const before = await panelData(page, 'torch.MinMaxObserver');
  await uploadBuffer(page, 'broken.npy', Buffer.from('\x93NUMPY\x01\x00garbage that is not a header'));
  const alert = page.locator('#load-error[role=alert]');
  assert.equal(await alert.isVisible(), true);
  assert.match(await alert.textContent(), /broken\.npy/);
  assert.match(await page.textContent('#tensor-info'), /l0_layer_out\.npy/);
  const after = await panelData(page, 'torch.MinMaxObserver');
  assert.equal(after.status, 'ready');
  assert.equal(after.clipMin, before.clipMin);
  assert.equal(after.mse, before.mse);
  await page.screenshot({ path: path.join(RESULTS, 'explorer-malformed.png') });
  await page.context().close();
});

test('file names are shown as text, never as HTML', async () => {
  const page = await env.page();
  let dialogs = 0;
  page.on('dialog', async (d) => {
    dialogs++;
    await d.dismiss();
  });
  const name = '<img src=x onerror=alert(1)>.npy';
  await uploadBuffer(page, name, npyBytes([1, -2, 3, 0.5]));
  assert.ok((await page.textContent('#tensor-info')).includes(name));
  await uploadBuffer(page, `<b>bad</b>${name}`, Buffer.from('nonsense'));
  assert.ok((await page.textContent('#load-error')).includes(`<b>bad</b>${name}`));
  assert.equal(await page.$$eval('img, #load-error b, #tensor-info b', (e) => e.length), 0);
  assert.equal(dialogs, 0);
  await page.context().close();
});

test('an invalid parameter combination fails in its panel only', async () => {
  const page = await env.page();
  await page.evaluate(() => window.quantscope.observe('torch.MinMaxObserver', { quant_min: 0, quant_max: 0 }));
  const bad = await panelData(page, 'torch.MinMaxObserver');
  assert.equal(bad.status, 'error');
  assert.equal(bad.clipMin, undefined, 'no numbers on an error');
  const msg = await page.textContent('[role=region][aria-label="torch.MinMaxObserver"] .panel-error');
  assert.match(msg, /qmin must be strictly less than qmax|quant_min/);
  assert.equal((await panelData(page, 'torch.HistogramObserver')).status, 'ready');
  assert.equal(await page.locator('#load-error').isVisible(), false);
  await page.screenshot({ path: path.join(RESULTS, 'explorer-invalid-params.png'), fullPage: true });
  await page.context().close();
});

test('the URL round-trips the selected observers and parameters', async () => {
  const page = await env.page();
  await page.evaluate(async () => {
    await window.quantscope.setObservers(['torch.HistogramObserver', 'torch.MinMaxObserver']);
    await window.quantscope.observe('torch.HistogramObserver', { bins: 512 });
  });
  await page.selectOption('#curve-scheme', 'symmetric');
  await page.selectOption('#curve-metric', 'sqnr');
  await page.uncheck('#log-counts');
  await page.evaluate(() => window.quantscope.idle());
  const hash = await page.evaluate(() => location.hash);
  const state = await page.evaluate(() => window.quantscope.state());
  const data = await panelData(page, 'torch.HistogramObserver');
  const page2 = await env.page({ hash });
  await page2.evaluate(() => window.quantscope.idle());
  assert.deepEqual(await page2.evaluate(() => window.quantscope.state()), state);
  const data2 = await panelData(page2, 'torch.HistogramObserver');
  assert.equal(data2.clipMin, data.clipMin);
  assert.equal(data2.scale, data.scale);
  assert.equal(await page2.textContent('[role=region][aria-label="torch.HistogramObserver"] .control[data-param=bins] output'), '512');
  assert.equal(await page2.isChecked('#log-counts'), false);
  assert.equal(await page2.inputValue('#curve-metric'), 'sqnr');
  await page.context().close();
  await page2.context().close();
});

test('a wasm panic is reported, the worker restarts and the page keeps working', async () => {
  const page = await env.page();
  const before = await panelData(page, 'torch.MinMaxObserver');
  const formats = await page.evaluate(() => window.quantscope.formats());
  const message = await page.evaluate(() => window.quantscope.debugPanic('deliberate test panic'));
  assert.match(message, /deliberate test panic/);
  await page.waitForFunction(() => document.querySelector('#load-error').textContent.includes('restarted'));
  await page.evaluate(() => window.quantscope.idle());
  const after = await panelData(page, 'torch.MinMaxObserver');
  assert.equal(after.status, 'ready');
  assert.equal(after.clipMin, before.clipMin);
  // Every view was refreshed: the formats view compared again, to the same rows.
  await page.waitForSelector('#formats[data-state=done]');
  assert.deepEqual(await page.evaluate(() => window.quantscope.formats()), formats);
  await page.selectOption('[role=region][aria-label="torch.MinMaxObserver"] .control[data-param=dtype] select', 'qint8');
  await page.evaluate(() => window.quantscope.idle());
  assert.equal((await panelData(page, 'torch.MinMaxObserver')).status, 'ready');
  assert.ok(page.errors.some((e) => e.includes('deliberate test panic')), 'the panic hook logged it');
  await page.context().close();
});

test('a 1 GiB .npy is refused from its header and the tab keeps working', async () => {
  const file = path.join(RESULTS, 'huge-1GiB.npy');
  const header = npyBytes([], [268435456]);
  fs.writeFileSync(file, header);
  fs.truncateSync(file, header.length + 2 ** 30); // sparse: costs no disk
  const page = await env.page();
  await page.setInputFiles('#file', file);
  await page.evaluate(() => window.quantscope.idle());
  const alert = await page.textContent('#load-error');
  assert.match(alert, /huge-1GiB\.npy/);
  assert.match(alert, /1\.0 GiB/);
  assert.match(alert, /67108864/);
  assert.equal((await panelData(page, 'torch.MinMaxObserver')).status, 'ready');
  await page.evaluate(() => window.quantscope.observe('torch.MinMaxObserver', { dtype: 'qint8' }));
  assert.equal((await panelData(page, 'torch.MinMaxObserver')).status, 'ready');
  fs.unlinkSync(file);
  await page.context().close();
});

test('a large file streams with a progress bar and can be cancelled', async () => {
  const n = 20 * 1024 * 1024; // 80 MiB of float32: read in chunks
  const file = path.join(RESULTS, 'stream-80MiB.npy');
  const values = new Float32Array(n);
  for (let i = 0; i < n; i++) values[i] = Math.sin(i * 0.001) * (i % 1000 === 0 ? 20 : 1);
  fs.writeFileSync(file, npyBytes(values));
  const page = await env.page();
  // Press Cancel as soon as the progress bar shows (a click from outside the page can come after
  // the last chunk on a fast machine).
  const shown = page.evaluate(() => new Promise((resolve) => {
    const bar = document.querySelector('#progress');
    new MutationObserver((_, watch) => {
      if (bar.hidden) return;
      watch.disconnect();
      resolve(document.querySelector('#progress-label').textContent);
      document.querySelector('#cancel').click();
    }).observe(bar, { attributes: true });
  }));
  await page.setInputFiles('#file', file);
  assert.match(await shown, /reading stream-80MiB\.npy/);
  await page.evaluate(() => window.quantscope.idle());
  assert.match(await page.textContent('#load-error'), /cancelled/);
  assert.match(await page.textContent('#tensor-info'), /l0_layer_out\.npy/);
  await page.setInputFiles('#file', file);
  await page.evaluate(() => window.quantscope.idle());
  assert.match(await page.textContent('#tensor-info'), /20,971,520/);
  closeTo(Number((await panelData(page, 'torch.MinMaxObserver')).clipMax), 20, 1e-5, 0, 'max of the streamed tensor');
  fs.unlinkSync(file);
  await page.context().close();
});

test('several files are calibration batches in order; one tensor splits along an axis', async () => {
  const page = await env.page({ hash: '#o=torch.MinMaxObserver,torch.MovingAverageMinMaxObserver' });
  const batches = [npyBytes([0, 1]), npyBytes([-4, 4]), npyBytes([0, 2])];
  await page.setInputFiles('#file', batches.map((buffer, i) => ({ name: `b${i}.npy`, mimeType: 'application/octet-stream', buffer })));
  await page.evaluate(() => window.quantscope.idle());
  const s = await page.evaluate(() => window.quantscope.summary());
  assert.equal(s.batches, 3);
  const mm = await panelData(page, 'torch.MinMaxObserver');
  const ma = await panelData(page, 'torch.MovingAverageMinMaxObserver');
  assert.equal(mm.clipMin, '-4');
  // Moving average (c = 0.01): min = 0 → 0 + 0.01·(−4 − 0) = −0.04 → −0.04 + 0.01·(0 + 0.04) = −0.0396
  closeTo(Number(ma.clipMin), -0.0396, 1e-6, 0, 'moving-average min over batches in order');
  // Split the demo activation into 8 batches along axis 0.
  await page.selectOption('#demo', 'activation');
  await page.evaluate(() => window.quantscope.idle());
  await page.check('#split-on');
  await page.evaluate(() => window.quantscope.idle());
  const split = await page.evaluate(() => window.quantscope.summary());
  assert.equal(split.batches, 8);
  assert.deepEqual(split.batch_shapes[0], [70, 384]);
  await page.context().close();
});

test('members of .safetensors and .npz files can be chosen', async () => {
  const page = await env.page({ hash: '#o=torch.MinMaxObserver' });
  const st = path.join(sharedDir(), 'samples', 'minilm', 'minilm_layer1_small.safetensors');
  await page.setInputFiles('#file', st);
  await page.evaluate(() => window.quantscope.idle());
  assert.equal(await page.isVisible('#member'), true);
  const options = await page.$$eval('#member option', (os) => os.map((o) => o.value));
  assert.ok(options.includes('encoder.layer.1.attention.self.key.weight'), options.join(','));
  await page.selectOption('#member', 'encoder.layer.1.attention.self.key.weight');
  await page.evaluate(() => window.quantscope.idle());
  const s = await page.evaluate(() => window.quantscope.summary());
  assert.equal(s.dtype, 'bfloat16');
  assert.deepEqual(s.shape, [384, 384]);
  const info = await page.textContent('#tensor-info');
  assert.match(info, /minilm_layer1_small\.safetensors/);
  assert.match(info, /key\.weight/);
  assert.equal((await panelData(page, 'torch.MinMaxObserver')).status, 'ready');
  const npz = path.join(sharedDir(), 'samples', 'minilm', 'minilm_whole_model.npz');
  await page.setInputFiles('#file', npz);
  await page.evaluate(() => window.quantscope.idle());
  await page.selectOption('#member', 'act.L0.ffn_dense_out');
  await page.evaluate(() => window.quantscope.idle());
  const z = await page.evaluate(() => window.quantscope.summary());
  assert.deepEqual(z.shape, [43, 384]);
  closeTo(z.max, 193.1, 1e-3, 0, 'the [CLS]/dim-99 spike');
  await page.context().close();
});

test('exports: JSON, CSV, comparison SVG and PNG, panel PNG', async () => {
  const page = await env.page();
  const grab = async (selector) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
    const file = path.join(RESULTS, `export-${dl.suggestedFilename()}`);
    await dl.saveAs(file);
    return file;
  };
  const json = JSON.parse(fs.readFileSync(await grab('#export-json'), 'utf8'));
  assert.equal(json.tensor.elements, 215040);
  assert.ok(json.results.find((r) => r.observer === 'torch.HistogramObserver').metrics.mse > 0);
  const csv = fs.readFileSync(await grab('#export-csv'), 'utf8').trim().split('\n');
  assert.match(csv[0], /^observer,channel,ok,error,clip_min,clip_max/);
  assert.ok(csv.some((l) => l.startsWith('torch.PerChannelMinMaxObserver,559,')), 'one row per channel');
  const svg = fs.readFileSync(await grab('#export-svg'), 'utf8');
  assert.ok(svg.startsWith('<svg') && svg.includes('torch.HistogramObserver') && svg.includes('Quantization error versus clipping threshold'));
  const png = fs.readFileSync(await grab('#export-png'));
  assert.equal(png.subarray(1, 4).toString(), 'PNG');
  const panelPng = fs.readFileSync(await grab('[role=region][aria-label="torch.HistogramObserver"] .panel-head button[title^="Export"]'));
  assert.equal(panelPng.subarray(1, 4).toString(), 'PNG');
  await page.context().close();
});

test('the layout fits a laptop and a wide monitor', async () => {
  for (const [width, name] of [[1280, 'laptop'], [2560, 'wide']]) {
    const page = await env.page({ width, height: 900 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `${name}: no horizontal scroll (${overflow})`);
    const columns = await page.evaluate(() => getComputedStyle(document.querySelector('#panels')).gridTemplateColumns.split(' ').length);
    assert.ok(width < 2000 ? columns >= 2 : columns >= 4, `${name}: ${columns} columns`);
    await page.screenshot({ path: path.join(RESULTS, `explorer-${name}.png`) });
    await page.context().close();
  }
});
