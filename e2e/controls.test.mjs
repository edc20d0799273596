// Every control of every observer in the registry, in Chromium: each is moved away from its
// default and back (sliders, exact boxes, selects and their "auto" entries, checkboxes, the bits
// select, the auto checkbox, text boxes, vectors picked among the loaded tensors and opened
// from a file), and after every move the panel's data-* (clip, grid, scale, zero point, MSE, SQNR,
// max error, clipped share, error) must equal a fresh run of the parameters the page now holds,
// computed by a separate Engine on the page's main thread. A stale panel is one that does not.
// Also: re-selecting an observer computes it again; Horizon MinMax qint16 → qint8 and Quark
// Percentile's percentile moved and back give the fresh numbers on the demo tensor.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { start, WWW, RESULTS, npyBytes, readNpyF32, panelData } from './helpers.mjs';

/** Pages working in parallel, each on its share of the registry. */
const PAGES = 3;

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env.close();
});

/** The first 32 rows of the demo activation (outliers included): small enough to be quick. */
function smallTensor() {
  const demo = readNpyF32(path.join(WWW, 'demo', 'l0_layer_out.npy'));
  const cols = demo.shape[1];
  return npyBytes(Array.from(demo.data.subarray(0, 32 * cols)), [32, cols]);
}

/**
 * Open a page on `bytes` and give it `window.__fresh(id, params)`: a fresh run on a separate
 * Engine (its own session) with the numbers a panel shows (the display function's slices and
 * the report's metrics).
 */
async function pageOn(bytes, name) {
  const page = await env.page({ hash: '#o=torch.MinMaxObserver' });
  await page.evaluate(async ({ data, name }) => {
    await window.quantscope.load(new Uint8Array(data), { name });
    const { Engine } = await import('./lib/engine.js');
    const { panelView } = await import('./pkg/quantscope.js');
    const engine = new Engine();
    const [info] = await engine.load({ files: [new Uint8Array(data)], names: [name] });
    engine.select({ selection: { batches: [{ file: 0, member: info.members[0].name }], split: null } });
    window.__fresh = (id, params) => {
      const report = engine.observe({ id, params });
      const view = panelView(report);
      return { error: view.error ?? null, slices: view.slices, channels: Boolean(view.channels), metrics: report.metrics ?? null };
    };
  }, { data: [...bytes], name });
  return page;
}

const list = (v) => (v === undefined ? null : v.startsWith('[') ? JSON.parse(v) : [Number(v)]);

/** What panel `id` shows, the parameters the page holds for it, and a fresh run of them. */
async function snapshot(page, id) {
  await page.evaluate(() => window.quantscope.idle());
  return page.evaluate((id) => {
    const el = document.querySelector(`[role=region][aria-label="${CSS.escape(id)}"]`);
    const params = window.quantscope.state().params[id] || {};
    return { data: { ...el.dataset }, params, fresh: window.__fresh(id, params) };
  }, id);
}

/** Differences between a panel's data-* and a fresh run (empty when the panel is current). */
function staleness({ data, fresh }) {
  const out = [];
  if (fresh.error !== null) {
    if (data.status !== 'error' || data.error !== fresh.error) out.push(`error: panel ${data.status} ${JSON.stringify(data.error)}, fresh ${JSON.stringify(fresh.error)}`);
    return out;
  }
  if (data.status !== 'ready') out.push(`status ${data.status} (${data.error || ''})`);
  const slices = [['clipMin', 'clip_min'], ['clipMax', 'clip_max'], ['gridMin', 'grid_min'], ['gridMax', 'grid_max'], ['scale', 'scale'], ['zeroPoint', 'zero_point']];
  for (const [attr, field] of slices) {
    const want = fresh.slices[field].length ? fresh.slices[field] : null;
    const got = list(data[attr]);
    if (JSON.stringify(got) !== JSON.stringify(want)) out.push(`${attr}: panel ${data[attr]}, fresh ${JSON.stringify(want)}`);
  }
  const m = fresh.metrics;
  const metrics = [['mse', 'mse'], ['maxAbsErr', 'max_abs_err'], ['clippedFraction', 'clipped_fraction'], ['sqnrDb', 'sqnr_db']];
  for (const [attr, field] of metrics) {
    const want = m ? String(m[field] === null ? 'null' : m[field]) : undefined;
    if (data[attr] !== want) out.push(`${attr}: panel ${data[attr]}, fresh ${want}`);
  }
  return out;
}

/** Check panel `id` now; returns the snapshot with its `stale` differences. */
async function check(page, id, move, log) {
  const s = await snapshot(page, id);
  const stale = staleness(s);
  log.moves += 1;
  if (stale.length) log.stale.push(`${id} ${move} ${JSON.stringify(s.params)}: ${stale.join('; ')}`);
  return s;
}

/** A .safetensors file of float32 tensors: {name: [values, shape]}, in order. */
function safetensors(tensors) {
  const header = {};
  const bodies = [];
  let offset = 0;
  for (const [name, [values, shape]] of Object.entries(tensors)) {
    const body = Buffer.from(Float32Array.from(values).buffer);
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + body.length] };
    offset += body.length;
    bodies.push(body);
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([size, Buffer.from(json, 'latin1'), ...bodies]);
}

/** A .npy of `n` importances (1, 2, …, 1, 2, …) for the vector parameters' "open…" button. */
function vectorFile(n) {
  return { name: `importance_${n}.npy`, mimeType: 'application/octet-stream', buffer: npyBytes(Array.from({ length: n }, (_, i) => 1 + (i % 3)), [n]) };
}

/** The controls of panel `id`: parameter, kind, default, and which inputs it has. */
function controlsOf(page, id) {
  return page.evaluate((id) => {
    const spec = window.quantscope.registry().find((o) => o.id === id);
    const panel = document.querySelector(`[role=region][aria-label="${CSS.escape(id)}"]`);
    return spec.params.map((p) => {
      const row = panel.querySelector(`.control[data-param="${CSS.escape(p.name)}"]`);
      const slider = row.querySelector('input[type=range]');
      return {
        name: p.name,
        kind: p.type,
        default: p.default,
        auto: Boolean(row.querySelector('input.auto')),
        slider: slider ? { min: Number(slider.min), max: Number(slider.max), value: Number(slider.value) } : null,
        options: [...row.querySelectorAll('select option')].map((o) => o.value),
        selected: row.querySelector('select') ? row.querySelector('select').value : null,
        open: Boolean(row.querySelector('input[type=file]')),
      };
    });
  }, id);
}

/** Move every control of observer `id` away from its default and back, checking after each move. */
async function sweep(page, id, log) {
  await page.evaluate((id) => window.quantscope.setObservers([id]), id);
  const columns = await page.evaluate(() => window.quantscope.summary().shape.at(-1));
  await check(page, id, 'shown', log);
  const row = (name) => page.locator(`[role=region][aria-label="${id}"] .control[data-param="${name}"]`);
  for (const c of await controlsOf(page, id)) {
    const r = row(c.name);
    const move = async (what, action) => {
      await action();
      await check(page, id, `${c.name}: ${what}`, log);
    };
    if (c.auto) await move('auto off', () => r.locator('input.auto').uncheck());
    if (c.slider) {
      const { min, max, value } = c.slider;
      const span = max - min;
      const away = [min + Math.round(span / 4), min + Math.round((3 * span) / 4)].find((v) => v !== value) ?? max;
      await move(`slider ${away}`, () => r.locator('input[type=range]').fill(String(away)));
      if (c.default !== null) {
        await move(`exact ${c.default}`, async () => {
          await r.locator('input.exact').fill(String(c.default));
          await r.locator('input.exact').dispatchEvent('change');
        });
      }
    } else if (c.kind === 'bool') {
      await move('toggled', () => r.locator('input[type=checkbox]:not(.auto)').click());
      await move('toggled back', () => r.locator('input[type=checkbox]:not(.auto)').click());
    } else if (c.options.length) {
      // A float format first for bit widths (FP8 (4, 3)), else another option; then back (to
      // "auto" or "none" when the default is null).
      const other = c.options.find((o) => o.includes(',')) ?? c.options.find((o) => o !== c.selected);
      if (other !== undefined) {
        await move(`select ${other}`, () => r.locator('select').selectOption(other));
        await move(`select ${JSON.stringify(c.selected)}`, () => r.locator('select').selectOption(c.selected));
      }
      if (c.open) {
        // A vector opened from a file: one value per column of the tensor.
        await move(`open ${columns} values`, async () => {
          await r.locator('input[type=file]').setInputFiles(vectorFile(columns));
          await page.waitForFunction(({ id, name }) => Boolean((window.quantscope.state().params[id] || {})[name]), { id, name: c.name });
        });
        await move('none', () => r.locator('select').selectOption(''));
      }
    } else if (c.kind === 'text') {
      const type = (text) => async () => {
        await r.locator('input[type=text]').fill(text);
        await r.locator('input[type=text]').dispatchEvent('change');
      };
      await move('text x', type('x'));
      await move(`text ${JSON.stringify(c.default ?? '')}`, type(c.default ?? ''));
    }
    if (c.auto) await move('auto on', () => r.locator('input.auto').check());
  }
  const params = await page.evaluate((id) => window.quantscope.state().params[id] || {}, id);
  assert.deepEqual(params, {}, `${id}: every control is back at its default`);
}

test('every control of every observer, moved away and back, leaves no stale panel', { timeout: 900_000 }, async (t) => {
  const t0 = Date.now();
  const bytes = smallTensor();
  const pages = await Promise.all(Array.from({ length: PAGES }, () => pageOn(bytes, 'l0_layer_out_rows0-31.npy')));
  const ids = await pages[0].evaluate(() => window.quantscope.registry().map((o) => o.id));
  const logs = pages.map(() => ({ moves: 0, stale: [] }));
  await Promise.all(pages.map(async (page, k) => {
    for (let i = k; i < ids.length; i += PAGES) await sweep(page, ids[i], logs[k]);
  }));
  for (const page of pages) assert.deepEqual(page.errors, []);
  await pages[0].screenshot({ path: path.join(RESULTS, 'controls-sweep.png'), fullPage: true });
  await Promise.all(pages.map((p) => p.context().close()));
  const moves = logs.reduce((n, l) => n + l.moves, 0);
  const stale = logs.flatMap((l) => l.stale);
  const seconds = ((Date.now() - t0) / 1000).toFixed(1);
  t.diagnostic(`${ids.length} observers, ${moves} moves (each compared with a fresh run), ${stale.length} stale, ${seconds} s on ${PAGES} pages`);
  console.log(`controls sweep: ${ids.length} observers, ${moves} moves, ${stale.length} stale, ${seconds} s`);
  assert.deepEqual(stale, []);
  assert.ok(moves > ids.length * 2, `${moves} moves`);
});

test('re-selecting an observer computes it again; Horizon dtype and Quark percentile come back fresh', async () => {
  const demo = readNpyF32(path.join(WWW, 'demo', 'l0_layer_out.npy'));
  const page = await pageOn(npyBytes(Array.from(demo.data), demo.shape), 'l0_layer_out.npy');
  const log = { moves: 0, stale: [] };
  const a = 'torch.HistogramObserver';
  const b = 'quark.PerTensorMSEObserver';
  for (const ids of [[a], [b], [a]]) await page.evaluate((ids) => window.quantscope.setObservers(ids), ids);
  const again = await check(page, a, 'reselected', log);
  assert.equal(again.data.status, 'ready', 'the re-selected observer is computed, not left pending');

  // Horizon MinMax: qint16, then qint8 again.
  const h = 'horizon.MinMaxObserver';
  await page.evaluate((id) => window.quantscope.setObservers([id]), h);
  const dtype = page.locator(`[role=region][aria-label="${h}"] .control[data-param=dtype] select`);
  const qint8 = await check(page, h, 'qint8', log);
  await dtype.selectOption('qint16');
  const qint16 = await check(page, h, 'qint16', log);
  await dtype.selectOption('qint8');
  const back = await check(page, h, 'qint8 again', log);
  assert.notEqual(qint16.data.scale, qint8.data.scale);
  assert.equal(back.data.scale, qint8.data.scale, 'the qint8 scale, not the qint16 one');
  assert.equal(Number(back.data.scale), back.fresh.slices.scale[0]);

  // Quark Percentile: the percentile moved and back.
  const q = 'quark.PerTensorPercentileObserver';
  await page.evaluate((id) => window.quantscope.setObservers([id]), q);
  const percentile = page.locator(`[role=region][aria-label="${q}"] .control[data-param=percentile]`);
  const first = await check(page, q, 'default', log);
  await percentile.locator('input[type=range]').fill('100');
  const moved = await check(page, q, 'moved', log);
  const def = await page.evaluate((id) => window.quantscope.registry().find((o) => o.id === id).params.find((p) => p.name === 'percentile').default, q);
  await percentile.locator('input.exact').fill(String(def));
  await percentile.locator('input.exact').dispatchEvent('change');
  const restored = await check(page, q, 'back', log);
  assert.notEqual(moved.data.clipMax, first.data.clipMax, 'the percentile moves the clip');
  assert.equal(restored.data.clipMax, first.data.clipMax, 'the clip of the default percentile again');
  assert.deepEqual(log.stale, []);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('every parameter kind has a control whose values are integers where they must be, and round-trips through the URL', async () => {
  const page = await env.page({ hash: '#o=modelopt.MaxCalibrator&modelopt.MaxCalibrator:num_bits=[4,3]' });
  // A real bits select: FP8 (4, 3) chosen from the URL, kept by the state, shown by the select.
  assert.deepEqual(await page.evaluate(() => window.quantscope.state().params['modelopt.MaxCalibrator']), { num_bits: [4, 3] });
  const select = page.locator('[role=region][aria-label="modelopt.MaxCalibrator"] .control[data-param=num_bits] select');
  assert.equal(await select.inputValue(), '4,3');
  assert.match(await select.locator('option:checked').textContent(), /E4M3 \(4, 3\)/);
  assert.equal((await page.evaluate(() => window.quantscope.results()['modelopt.MaxCalibrator'])).params.num_bits.join(','), '4,3');

  // Every kind, on a made-up spec: the values each control produces, and the URL round trip.
  const out = await page.evaluate(async () => {
    const { buildControls } = await import('./ui/controls.js');
    const { encodeState, decodeState } = await import('./ui/state.js');
    const spec = {
      id: 'test.Every',
      params: [
        { name: 'n', type: 'int', min: 1, max: 1 << 20, default: 2048, affects: 'data', doc: '' },
        { name: 'q', type: 'int', min: -(2 ** 31), max: 2 ** 31 - 1, default: null, affects: 'search', doc: '' },
        { name: 'x', type: 'float', min: 0, max: 100, log: false, default: 99.99, affects: 'search', doc: '' },
        { name: 'b', type: 'bool', default: false, affects: 'data', doc: '' },
        { name: 'c', type: 'choice', options: ['a', 'b&c', 'null'], default: 'a', affects: 'search', doc: '' },
        { name: 'bits', type: 'bits', min: 1, max: 16, formats: [[4, 3], [5, 2]], default: 8, affects: 'search', doc: '' },
        { name: 't', type: 'text', default: null, affects: 'data', doc: '' },
        { name: 'v', type: 'vector', default: null, affects: 'data', doc: '' },
        { name: 'ca', type: 'choice', options: ['x', 'y'], default: null, affects: 'data', doc: '' },
      ],
    };
    const tensors = [{ value: { file: 0, member: 'imp' }, label: 'imp.npy [384]' }, { value: { file: 1, member: '' }, label: 'w.npy [4]' }];
    const seen = [];
    const box = buildControls(spec, {}, (name, value) => seen.push([name, value]), { tensors, idPrefix: 'z-' });
    document.body.append(box);
    const row = (name) => box.querySelector(`.control[data-param="${name}"]`);
    const fire = (el, type) => el.dispatchEvent(new Event(type, { bubbles: true }));
    for (const pos of ['0', '137', '500', '999']) {
      const s = row('n').querySelector('input[type=range]');
      s.value = pos;
      fire(s, 'input');
    }
    const auto = row('q').querySelector('input.auto');
    auto.checked = false;
    fire(auto, 'change');
    for (const pos of ['1', '333', '777']) {
      const s = row('q').querySelector('input[type=range]');
      s.value = pos;
      fire(s, 'input');
    }
    const exact = row('n').querySelector('input.exact');
    exact.value = '300.6';
    fire(exact, 'change');
    const bits = row('bits').querySelector('select');
    const bitsOptions = [...bits.options].map((o) => o.textContent);
    for (const v of ['4,3', '5', '5,2']) {
      bits.value = v;
      fire(bits, 'change');
    }
    const text = row('t').querySelector('input[type=text]');
    const textHasCheckbox = Boolean(row('t').querySelector('input.auto'));
    text.value = 'op&name=null';
    fire(text, 'change');
    // A choice whose default is null: "auto" first in its select, and back to null.
    const ca = row('ca').querySelector('select');
    const caOptions = [...ca.options].map((o) => [o.value, o.textContent]);
    const caSelected = ca.value;
    ca.value = 'y';
    fire(ca, 'change');
    ca.value = '';
    fire(ca, 'change');
    const caBack = seen.at(-1);
    ca.value = 'y';
    fire(ca, 'change');
    const vec = row('v').querySelector('select');
    vec.value = vec.options[1].value;
    fire(vec, 'change');
    const values = Object.fromEntries(seen);
    const specs = new Map([[spec.id, spec]]);
    const state = { observers: [spec.id], params: { [spec.id]: { ...values, c: 'b&c', x: 12.5, b: true, nothing: null } }, curve: { bits: 8, scheme: 'affine', metric: 'mse' }, logCounts: true, demo: null, formats: [] };
    delete state.params[spec.id].nothing;
    state.params[spec.id].inline = [1, 2.5];
    specs.get(spec.id).params.push({ name: 'inline', type: 'vector', default: null, affects: 'data', doc: '' });
    const hash = encodeState(state, specs);
    const back = decodeState(hash, specs);
    box.remove();
    // The URL keeps "auto" as null: a choice left auto is absent, one set is kept.
    return { seen, values, bitsOptions, sent: state.params[spec.id], back: back.params[spec.id], hash, textHasCheckbox, caOptions, caSelected, caBack };
  });
  const ints = out.seen.filter(([name]) => name === 'n' || name === 'q').map(([, v]) => v);
  assert.ok(ints.length >= 8 && ints.every((v) => v === null || Number.isInteger(v)), `integer kinds give integers: ${ints.join(', ')}`);
  assert.equal(out.values.n, 301, 'a typed 300.6 becomes the integer 301');
  assert.deepEqual(out.bitsOptions.slice(-2), ['E4M3 (4, 3)', 'E5M2 (5, 2)']);
  assert.equal(out.bitsOptions.length, 18, '1..16 and the two float formats');
  assert.deepEqual(out.seen.filter(([name]) => name === 'bits').map(([, v]) => v), [[4, 3], 5, [5, 2]]);
  assert.equal(out.values.t, 'op&name=null');
  assert.equal(out.textHasCheckbox, false, 'a text parameter is auto when empty, without a checkbox');
  assert.deepEqual(out.caOptions, [['', 'auto'], ['x', 'x'], ['y', 'y']]);
  assert.equal(out.caSelected, '', 'a null default shows "auto"');
  assert.deepEqual(out.caBack, ['ca', null], '"auto" is null');
  assert.equal(out.values.ca, 'y');
  assert.deepEqual(out.values.v, { file: 0, member: 'imp' });
  assert.deepEqual(out.back, out.sent, `the URL ${out.hash} round-trips every kind`);
  await page.context().close();
});

test('the LLM observers\' controls: block_structure as text, importance from a loaded tensor, "auto" choices, all through the URL', async () => {
  const demo = readNpyF32(path.join(WWW, 'demo', 'l0_layer_out.npy'));
  const [rows, cols] = demo.shape;
  // An importance per input channel (column), E[x²] over the rows, as llm-compressor collects it.
  const importance = Array.from({ length: cols }, (_, j) => {
    let s = 0;
    for (let i = 0; i < rows; i++) s += demo.data[i * cols + j] ** 2;
    return Math.fround(s / rows);
  });
  // One .safetensors with the layer's tensor and its importance, as a user would export them.
  const file = { name: 'llm.safetensors', mimeType: 'application/octet-stream', buffer: safetensors({ 'layer.weight': [demo.data, demo.shape], 'layer.weight_importance': [importance, [cols]] }) };
  const weight = npyBytes(Array.from(demo.data), demo.shape);
  const mm = 'llmcompressor.memoryless_minmax';
  const im = 'llmcompressor.imatrix_mse';
  const ao = 'torchao.AffineQuantizedMinMaxObserver';
  const page = await env.page({ width: 1500, height: 1200, hash: `#o=${mm},${im},${ao}` });
  await page.setInputFiles('#file', file);
  await page.waitForFunction(() => window.quantscope.summary()?.shape.length === 2);
  await page.evaluate(() => window.quantscope.idle());
  const control = (id, name) => page.locator(`[role=region][aria-label="${id}"] .control[data-param="${name}"]`);
  const settle = () => page.evaluate(() => window.quantscope.idle());

  // Choices whose framework default is None: "auto" first and selected; text empty = auto.
  for (const [id, name] of [[mm, 'strategy'], [mm, 'scale_dtype'], [mm, 'zp_dtype'], [ao, 'scale_dtype'], [ao, 'zero_point_dtype']]) {
    const options = await control(id, name).locator('select option').allTextContents();
    assert.equal(options[0], 'auto', `${id} ${name}: ${options.join(', ')}`);
    assert.equal(await control(id, name).locator('select').inputValue(), '', `${id} ${name} starts at auto`);
  }
  assert.equal(await control(mm, 'block_structure').locator('input[type=text]').getAttribute('placeholder'), 'auto');

  // llm-compressor block strategy with block_structure "32x64" typed in.
  await control(mm, 'strategy').locator('select').selectOption('block');
  await control(mm, 'block_structure').locator('input[type=text]').fill('32x64');
  await control(mm, 'block_structure').locator('input[type=text]').dispatchEvent('change');
  // imatrix_mse, 4-bit per channel, with the importance picked among the loaded tensors.
  await control(im, 'strategy').locator('select').selectOption('channel');
  await control(im, 'num_bits').locator('input.exact').fill('4');
  await control(im, 'num_bits').locator('input.exact').dispatchEvent('change');
  const picks = await control(im, 'importance').locator('select option').allTextContents();
  const label = `llm.safetensors: layer.weight_importance [${cols}]`;
  assert.deepEqual(picks, ['none', `llm.safetensors: layer.weight [${rows}, ${cols}]`, label]);
  await control(im, 'importance').locator('select').selectOption({ label });
  // torchao per group of 64 with a float16 scale.
  await control(ao, 'granularity').locator('select').selectOption('PerGroup');
  await control(ao, 'group_size').locator('input.exact').fill('64');
  await control(ao, 'group_size').locator('input.exact').dispatchEvent('change');
  await control(ao, 'scale_dtype').locator('select').selectOption('float16');
  await settle();

  const state = await page.evaluate(() => window.quantscope.state().params);
  assert.deepEqual(state[mm], { strategy: 'block', block_structure: '32x64' });
  assert.deepEqual(state[im], { strategy: 'channel', num_bits: 4, importance: { file: 0, member: 'layer.weight_importance' } });
  assert.deepEqual(state[ao], { granularity: 'PerGroup', group_size: 64, scale_dtype: 'float16' });
  const shown = {};
  for (const id of [mm, im, ao]) shown[id] = await panelData(page, id);
  for (const id of [mm, im, ao]) assert.equal(shown[id].status, 'ready', `${id}: ${shown[id].error}`);
  // The badge follows the configuration, not the registry's default granularity.
  const badge = (id) => page.locator(`[role=region][aria-label="${id}"] .panel-head .badge`).textContent();
  assert.deepEqual([await badge(mm), await badge(im), await badge(ao)], ['per block', 'per channel', 'per group']);
  // So does the error curve's table row of each (no single threshold).
  const curveRow = (id) => page.locator('#curve-table tr', { hasText: id }).locator('td').nth(1).textContent();
  assert.deepEqual([await curveRow(mm), await curveRow(im), await curveRow(ao)], ['per block', 'per channel', 'per group']);
  await page.locator(`[role=region][aria-label="${im}"]`).scrollIntoViewIfNeeded();
  await page.locator('#observers-view').screenshot({ path: path.join(RESULTS, 'controls-llm.png') });

  // The panels hold what the npm package computes for the same parameters (the importance as values).
  const qs = await import('../www/lib/index.js');
  await qs.init();
  const t = qs.loadTensor(weight, { name: 'weight.npy' });
  const want = {
    [mm]: qs.observe(t, mm, { strategy: 'block', block_structure: '32x64' }),
    [im]: qs.observe(t, im, { strategy: 'channel', num_bits: 4, importance: Float32Array.from(importance) }),
    [ao]: qs.observe(t, ao, { granularity: 'PerGroup', group_size: 64, scale_dtype: 'float16' }),
  };
  t.free();
  for (const id of [mm, im, ao]) {
    assert.ok(want[id].ok, `${id}: ${want[id].error}`);
    assert.deepEqual(list(shown[id].scale), qs.panelView(want[id]).slices.scale, `${id} scale (as the panel shows it)`);
    assert.equal(shown[id].mse, String(want[id].metrics.mse), `${id} mse`);
  }
  const plain = qs.observe(qs.loadTensor(weight), im, { strategy: 'channel', num_bits: 4 });
  assert.notDeepEqual(plain.scale, want[im].scale, 'the importance changes the search');

  // The URL carries every kind: a fresh page on the same files and hash holds the same
  // parameters and shows the same numbers.
  const hash = await page.evaluate(() => location.hash);
  assert.match(decodeURIComponent(hash), /block_structure="32x64"/);
  const again = await env.page({ width: 1500, height: 1200, hash });
  await again.setInputFiles('#file', file);
  await again.waitForFunction(() => window.quantscope.summary()?.shape.length === 2);
  await again.evaluate(() => window.quantscope.idle());
  assert.deepEqual(await again.evaluate(() => window.quantscope.state().params), state);
  for (const id of [mm, im, ao]) {
    const d = await panelData(again, id);
    assert.equal(d.scale, shown[id].scale, `${id} from the URL`);
    assert.equal(d.mse, shown[id].mse, `${id} from the URL`);
  }
  assert.equal(await again.locator(`[role=region][aria-label="${im}"] .control[data-param=importance] select option:checked`).textContent(), label);

  // Back to "auto": the parameter leaves the state and the URL.
  await control(mm, 'strategy').locator('select').selectOption('');
  await control(mm, 'block_structure').locator('input[type=text]').fill('');
  await control(mm, 'block_structure').locator('input[type=text]').dispatchEvent('change');
  await settle();
  assert.deepEqual((await page.evaluate(() => window.quantscope.state().params))[mm] ?? {}, {});
  assert.doesNotMatch(decodeURIComponent(await page.evaluate(() => location.hash)), /block_structure/);
  assert.deepEqual(page.errors, []);
  assert.deepEqual(again.errors, []);
  await page.context().close();
  await again.context().close();
});

test('parameters in a framework\'s nested call form show flat in the controls and give the flat form\'s numbers', async () => {
  const demo = readNpyF32(path.join(WWW, 'demo', 'l0_layer_out.npy'));
  const page = await pageOn(npyBytes(Array.from(demo.data), demo.shape), 'l0_layer_out.npy');
  const calls = [
    ['ort.PercentileCalibrater', { calibrate_method: 'Percentile', extra_options: { percentile: 99.9 } }, { percentile: 99.9 }],
    ['torchao.AffineQuantizedMinMaxObserver', { granularity: { type: 'PerGroup', group_size: 64 }, target_dtype: 'int4' }, { granularity: 'PerGroup', group_size: 64, target_dtype: 'int4' }],
    ['llmcompressor.mse', { base_name: 'weight', strategy: 'channel', observer_kwargs: { maxshrink: 0.5, grid: 50 } }, { base_name: 'weight', strategy: 'channel', maxshrink: 0.5, grid: 50 }],
  ];
  for (const [id, nested, flat] of calls) {
    const viaNested = await page.evaluate(({ id, nested }) => window.quantscope.observe(id, nested), { id, nested });
    const shownNested = await panelData(page, id);
    assert.equal(viaNested.ok, true, `${id}: ${viaNested.error && viaNested.error.message}`);
    assert.deepEqual((await page.evaluate(() => window.quantscope.state().params))[id], flat, `${id}: the state holds the flat form`);
    for (const [name, value] of Object.entries(flat)) {
      const control = page.locator(`[role=region][aria-label="${id}"] .control[data-param="${name}"]`);
      const shown = await control.locator(typeof value === 'string' ? 'select' : 'input.exact').inputValue();
      assert.equal(shown, String(value), `${id}: the ${name} control`);
    }
    await page.evaluate(({ id, flat }) => window.quantscope.observe(id, flat), { id, flat });
    const shownFlat = await panelData(page, id);
    assert.equal(shownNested.scale, shownFlat.scale, `${id}: scale`);
    assert.equal(shownNested.mse, shownFlat.mse, `${id}: mse`);
  }
  // A method that is not the observer's is refused with the reason.
  const refused = await page.evaluate(() => window.quantscope.observe('ort.MinMaxCalibrater', { calibrate_method: 'Entropy' }).then(() => null, (e) => String(e.message || e)));
  assert.match(refused, /calibrate_method/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
