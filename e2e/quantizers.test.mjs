// End-to-end tests of the quantizer views in headless Chromium: every number format side by
// side (against Quark's reference Q/DQ), and AdaRound on the real MiniLM layer (against an
// independent round-to-nearest computation, with progress, cancel and a live explorer).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { sharedDir, RESULTS, WWW, inkRatio, npyBytes, readNpyF32, cli } from './helpers.mjs';
import * as qs from '../www/lib/index.js';
import { browserForTests } from './suite.mjs';

const env = browserForTests({ setup: qs.init });

function closeTo(actual, expected, rtol, atol, what) {
  const ok = Math.abs(actual - expected) <= atol + rtol * Math.abs(expected);
  assert.ok(ok, `${what}: ${actual} vs expected ${expected} (rtol ${rtol}, atol ${atol})`);
}

/** The formats table as {format: {bits, sqnr, mse}}. */
function formatRows(page) {
  return page.$$eval('#formats-table tbody tr[data-format]', (trs) =>
    Object.fromEntries(trs.map((tr) => [tr.dataset.format, { bits: Number(tr.dataset.bits), sqnr: tr.dataset.sqnr, mse: Number(tr.dataset.mse), kind: tr.dataset.kind }])));
}

const quark = JSON.parse(fs.readFileSync(path.join(sharedDir(), 'golden', 'quark', 'cases.json'), 'utf8'));
const quarkCases = Array.isArray(quark) ? quark : quark.cases;

test('the formats view reproduces Quark\'s MX and BFP quantize–dequantize on its golden input', async () => {
  const page = await env.page();
  await page.setInputFiles('#file', path.join(sharedDir(), 'golden', 'quark', 'inputs', 'small_b0.npy'));
  await page.waitForSelector('#formats[data-state=done]');
  await page.evaluate(() => window.quantscope.idle());
  const rows = await formatRows(page);
  // The same tensor through Quark 0.13 (cases.json): MX blocks of 32 and BFP blocks of 8 along
  // the last axis, E8M0 "even" scales.
  const expectations = [
    ['mx-fp8_e4m3-even-small', 'mxfp8_e4m3', 8.25],
    ['mx-fp4-even-small', 'mxfp4_e2m1', 4.25],
    ['mxint8-nonscaled-small', 'mxint8', 8.25],
    ['bfp-int8-b8-small', 'bfp16 (block 8)', 9],
  ];
  for (const [caseId, format, bits] of expectations) {
    const c = quarkCases.find((x) => x.id === caseId);
    assert.ok(c, caseId);
    const row = rows[format];
    assert.ok(row, `${format} is in the table (${Object.keys(rows).join(', ')})`);
    const { rtol = 0, atol = 0 } = c.tolerance;
    closeTo(row.mse, c.expected.qdq.mse, rtol, atol, `${format} mse vs ${caseId}`);
    closeTo(Number(row.sqnr), c.expected.qdq.sqnr_db, rtol, atol, `${format} sqnr vs ${caseId}`);
    assert.equal(row.bits, bits, `${format} bits per value`);
  }
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

/** int8 symmetric per tensor with Quark's formula, computed here in float32: the MSE. */
function int8PerTensorMse(data) {
  const f = Math.fround;
  let amax = 0;
  for (const v of data) amax = Math.max(amax, Math.abs(v));
  const scale = f(amax / 127.5);
  let err = 0;
  for (const v of data) {
    const t = f(v / scale);
    let q = Math.round(t);
    if (Math.abs(t - Math.trunc(t)) === 0.5) q = 2 * Math.round(t / 2); // half to even
    q = Math.min(127, Math.max(-128, q));
    const d = f(q * scale) - v;
    err += d * d;
  }
  return err / data.length;
}

test('the formats view on the demo: the line-up, its chart, a format added from the registry controls', async () => {
  const page = await env.page();
  await page.waitForSelector('#formats[data-state=done]');
  const rows = await formatRows(page);
  const names = Object.keys(rows);
  // int8/uint8/int4/uint4, int8/int4 per channel, int4 per group, fp16, bf16, 5 small floats,
  // 6 MX formats, BFP, bitsandbytes NF4 without and with double quantization, llama.cpp Q4_K
  // and MXFP4: 25 for the [560, 384] demo.
  assert.equal(names.length, 25, names.join(', '));
  for (const name of ['int8', 'uint8', 'int4', 'uint4', 'int8 per channel', 'int4 per group of 32', 'float16', 'bfloat16', 'fp8_e4m3', 'fp8_e5m2', 'fp6_e2m3', 'fp6_e3m2', 'fp4_e2m1', 'mxfp4_e2m1', 'mxint8', 'bfp16 (block 8)', 'bnb.nf4', 'bnb.nf4 (double quant)', 'ggml.Q4_K', 'ggml.MXFP4']) {
    assert.ok(rows[name], `${name} in ${names.join(', ')}`);
  }
  const demo = readNpyF32(path.join(WWW, 'demo', 'l0_layer_out.npy'));
  closeTo(rows.int8.mse, int8PerTensorMse(demo.data), 1e-9, 0, 'int8 per tensor mse (independent float32 computation)');
  assert.ok(Number(rows.bfloat16.sqnr) > Number(rows.int8.sqnr), 'bf16 beats int8 per tensor on an outlier activation');
  assert.ok(Number(rows.mxfp4_e2m1.sqnr) > Number(rows.int4.sqnr), 'MXFP4 beats int4 per tensor');
  assert.ok((await inkRatio(page, '#formats-chart')) > 0.01, 'the SQNR-against-bits chart is drawn');

  // Add int3 per channel through the generated controls.
  await page.click('#formats details.adder summary');
  await page.selectOption('#format-family', 'int');
  await page.fill('#format-controls [data-param=bits] input.exact', '3');
  await page.dispatchEvent('#format-controls [data-param=bits] input.exact', 'change');
  await page.selectOption('#format-controls [data-param=granularity] select', 'per_channel');
  await page.click('#format-add');
  await page.waitForSelector('#formats-table tr.extra[data-format="int3 per channel"]');
  const added = (await formatRows(page))['int3 per channel'];
  assert.ok(added.bits > 3 && added.bits < 3.2, `int3 per channel bits ${added.bits}`);
  assert.ok(Number(added.sqnr) < Number(rows['int4 per channel'].sqnr), 'one bit less costs SQNR');
  await page.evaluate(() => window.quantscope.idle());
  assert.match(decodeURIComponent(page.url()), /formats=\[\{"id":"int","params":\{"bits":3,"granularity":"per_channel"\}\}\]/);
  // An impossible format gives a clear error and leaves the table as it was.
  await page.fill('#format-controls [data-param=axis] input.exact', '5');
  await page.dispatchEvent('#format-controls [data-param=axis] input.exact', 'change');
  await page.click('#format-add');
  await page.waitForSelector('#format-add-error:not([hidden])');
  assert.match(await page.textContent('#format-add-error'), /Cannot add int: .*axis 5 is out of range for shape \[560, 384\]/);
  assert.equal(Object.keys(await formatRows(page)).length, 26);
  await page.hover('#formats-table tr[data-format="mxfp4_e2m1"]');
  await page.locator('#formats').screenshot({ path: path.join(RESULTS, 'formats-view.png') });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('"why?" on a format shows how its block is stored, as `quantize --explain` derives it', async () => {
  const page = await env.page();
  await page.waitForSelector('#formats[data-state=done]');
  const demo = path.join(WWW, 'demo', 'l0_layer_out.npy');
  for (const [format, block] of [['ggml.Q4_K', null], ['mxfp4_e2m1', 7], ['bnb.nf4', 3]]) {
    const row = `#formats-table tr[data-format="${format}"]`;
    await page.click(`${row} .why-link`);
    if (block !== null) {
      await page.fill('#formats-why-block', String(block));
      await page.dispatchEvent('#formats-why-block', 'change');
    }
    await page.waitForFunction(([f, b]) => {
      const why = document.querySelector('#formats-why');
      return why.open && why.dataset.format === f && why.dataset.block !== undefined && (b === null || why.dataset.block === String(b));
    }, [format, block]);
    const shown = await page.$$eval('#formats-why .step', (steps) =>
      steps.map((s) => ({
        title: s.querySelector('h4').textContent,
        values: Object.fromEntries([...s.querySelectorAll('.values .row')].map((r) => [r.querySelector('dt').textContent, r.querySelector('dd').textContent])),
      })),
    );
    const kind = await page.getAttribute(row, 'data-kind');
    const params = kind === 'mx' ? '{"element": "fp4_e2m1"}' : '{}';
    const args = ['quantize', demo, '--quantizer', kind, '--params', params, '--explain', '--json'];
    if (block !== null) args.push('--block', String(block));
    const want = JSON.parse(cli(args)).derivation;
    assert.equal(Number(await page.getAttribute('#formats-why', 'data-block')), want.block, format);
    assert.deepEqual(shown.map((s) => s.title), want.steps.map((s) => s.title), format);
    const last = shown[shown.length - 1].values;
    const wantLast = want.steps[want.steps.length - 1].values;
    if (wantLast.bytes) assert.equal(last.bytes, wantLast.bytes, `${format}: the stored bytes`);
    else if (kind === 'mx') assert.equal(last['scale code'], String(wantLast['scale code']), `${format}: the E8M0 scale code`);
    else {
      // A format without a search: the slice's stored absmax, as the page writes the number.
      const absmax = want.steps[1].values.absmax;
      assert.ok(Math.abs(Number(shown[1].values.absmax) - absmax) <= absmax * 1e-3, `${format}: absmax ${shown[1].values.absmax} vs ${absmax}`);
    }
  }
  await page.locator('#formats-why').screenshot({ path: path.join(RESULTS, 'formats-why.png') });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

/** The formats table by library: [{framework, header, formats: [format]}], in table order. */
function formatGroups(page) {
  return page.$$eval('#formats-table tbody[data-framework]', (bodies) =>
    bodies.map((b) => ({
      framework: b.dataset.framework,
      header: b.querySelector('tr.group').textContent,
      formats: [...b.querySelectorAll('tr[data-format]')].map((tr) => tr.dataset.format),
    })));
}

test('the formats view on MiniLM\'s l0_ffn_dense_out: NF4, Q4_K and MXFP4 side by side, grouped by library with the versions followed', async () => {
  const file = path.join(sharedDir(), 'samples', 'minilm', 'activations', 'l0_ffn_dense_out.npy');
  const page = await env.page({ width: 1500, height: 1100 });
  await page.setInputFiles('#file', file);
  await page.waitForFunction(() => window.quantscope.summary()?.name === 'l0_ffn_dense_out.npy');
  await page.waitForSelector('#formats[data-state=done]');
  await page.evaluate(() => window.quantscope.idle());
  const rows = await formatRows(page);
  // Bits per value with every stored scale: NF4 at block 64 stores a float32 absmax per 64
  // values (4 + 32/64); double quantization stores an 8-bit code per absmax (3360 of them), a
  // float32 scale per block of 256 codes (14 blocks, the last one short) and one float32
  // offset; Q4_K 144 bytes per 256 values, MXFP4 17 bytes per 32.
  const n = 560 * 384;
  const absmaxes = n / 64;
  const doubleQuant = 4 + (absmaxes * 8 + Math.ceil(absmaxes / 256) * 32 + 32) / n;
  const bits = { 'bnb.nf4': 4.5, 'bnb.nf4 (double quant)': doubleQuant, 'ggml.Q4_K': 4.5, 'ggml.MXFP4': 4.25 };
  for (const [format, want] of Object.entries(bits)) {
    assert.ok(rows[format], `${format} is in the table`);
    closeTo(rows[format].bits, want, 1e-12, 0, `${format} bits per value`);
  }
  // The numbers are the package's (the same engine, outside the page).
  const t = qs.loadTensor(fs.readFileSync(file), { name: 'l0_ffn_dense_out.npy' });
  for (const [format, id, params] of [['bnb.nf4', 'bnb.nf4', {}], ['bnb.nf4 (double quant)', 'bnb.nf4', { compress_statistics: true }], ['ggml.Q4_K', 'ggml.Q4_K', {}], ['ggml.MXFP4', 'ggml.MXFP4', {}]]) {
    const q = qs.quantize(t, id, params);
    assert.equal(rows[format].mse, q.mse, `${format} mse`);
    assert.equal(Number(rows[format].sqnr), q.sqnr_db, `${format} sqnr`);
  }
  t.free();
  // Grouped by library, each with the version followed, as the observers picker names them.
  const groups = await formatGroups(page);
  assert.deepEqual(groups.map((g) => g.framework), ['quantscope', 'bitsandbytes', 'ggml']);
  assert.match(groups[1].header, /bitsandbytes\s*0\.50\.2 \(CPU\)/);
  assert.match(groups[2].header, /ggml\s*d99724f2 = llama\.cpp d3cf1f14/);
  assert.deepEqual(groups[1].formats, ['bnb.nf4 (double quant)', 'bnb.nf4'], 'cheapest first within a library');
  assert.deepEqual(groups[2].formats, ['ggml.MXFP4', 'ggml.Q4_K']);
  // The "add a format" menu: one group per library of the codec registry, in registry order,
  // each named with the version followed; decode-only codecs are listed disabled.
  const registry = qs.quantizers().formats;
  // (A library's first entry names its group.)
  const libraries = [];
  for (const f of registry) {
    const label = `${f.library} ${f.version}`;
    if (!libraries.some((l) => l.startsWith(`${f.library} `))) libraries.push(label);
  }
  assert.deepEqual(await page.$$eval('#format-family optgroup', (gs) => gs.map((g) => g.label)), libraries);
  const disabled = await page.$$eval('#format-family option[disabled]', (os) => os.map((o) => o.value).sort());
  assert.deepEqual(disabled, registry.filter((f) => !f.encodes).map((f) => f.id).sort());
  const shown = await page.$eval('#formats-table tr[data-format="ggml.Q4_K"] td.num', (td) => td.textContent);
  assert.equal(shown, '4.5');
  // Scrolled first, so that the screenshot does not move the row away from the pointer.
  await page.locator('#formats').scrollIntoViewIfNeeded();
  await page.hover('#formats-table tr[data-format="bnb.nf4"]');
  await page.locator('#formats').screenshot({ path: path.join(RESULTS, 'formats-minilm.png') });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('k-quants take an importance matrix from the loaded tensors or from a file opened for it, exactly as llama.cpp', async () => {
  const ggml = path.join(sharedDir(), 'golden', 'ggml');
  const cases = JSON.parse(fs.readFileSync(path.join(ggml, 'cases.json'), 'utf8')).cases;
  const c = cases.find((x) => x.quantizer === 'ggml.Q4_K' && x.params.imatrix === 'inputs/imatrix_512.npy' && x.input === 'inputs/weight.npy');
  assert.ok(c, 'a Q4_K case with the 512-column imatrix');
  const page = await env.page();
  // The weight loaded: the imatrix control offers the loaded tensors (here the weight alone).
  await page.setInputFiles('#file', [path.join(ggml, c.input)]);
  await page.waitForFunction(() => window.quantscope.summary()?.name === 'weight.npy');
  await page.waitForSelector('#formats[data-state=done]');
  await page.click('#formats details.adder summary');
  await page.selectOption('#format-family', 'ggml.Q4_K');
  const control = '#format-controls [data-param=imatrix]';
  assert.deepEqual(await page.$$eval(`${control} select option`, (os) => os.map((o) => o.textContent)), ['none', 'weight.npy [16, 512]']);
  // A file opened for it: one importance per column.
  await page.setInputFiles(`${control} input[type=file]`, path.join(ggml, c.params.imatrix));
  await page.waitForFunction((sel) => document.querySelector(`${sel} select`).selectedOptions[0]?.textContent.startsWith('imatrix_512.npy [512]'), control);
  await page.click('#format-add');
  await page.waitForSelector('#formats-table tr.extra[data-format="ggml.Q4_K (imatrix)"]');
  const row = (await formatRows(page))['ggml.Q4_K (imatrix)'];
  const tol = c.tolerance.metrics.rtol;
  closeTo(row.mse, c.expected.mse, tol, 0, 'Q4_K with the imatrix: llama.cpp\'s mse');
  closeTo(Number(row.sqnr), c.expected.sqnr_db, tol, 0, 'Q4_K with the imatrix: llama.cpp\'s sqnr');
  assert.equal(row.bits, 4.5);
  // The same importance as a loaded tensor of the page (a second file: the weight stays the
  // tensor the formats view measures).
  const both = await page.evaluate(async ({ w, im }) => {
    await window.quantscope.load([new Uint8Array(w), new Uint8Array(im)], { name: ['weight.npy', 'imatrix_512.npy'] });
    return window.quantscope.addFormat('ggml.Q4_K', { imatrix: { file: 1, member: '' } });
  }, { w: [...fs.readFileSync(path.join(ggml, c.input))], im: [...fs.readFileSync(path.join(ggml, c.params.imatrix))] });
  // (The row added from the opened file stays, with its values inline.)
  const loaded = both.find((r) => r.extra && r.format === 'ggml.Q4_K (imatrix)' && !Array.isArray(r.params.imatrix));
  assert.ok(loaded, `a row for the loaded importance: ${JSON.stringify(both.filter((r) => r.extra))}`);
  closeTo(loaded.mse, c.expected.mse, tol, 0, 'the loaded importance gives llama.cpp\'s mse');
  assert.deepEqual(loaded.params, { imatrix: { file: 1, member: '' } }, 'the row names the tensor, not its values');
  // A wrong length is refused with the reason.
  await page.evaluate(() => window.quantscope.addFormat('ggml.Q4_K', { imatrix: { file: 0, member: '' } }));
  assert.match(await page.textContent('#format-add-error'), /last axis has 512, the imatrix 8192/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

/** Output MSE of round-to-nearest, 4-bit per-channel symmetric (Quark's formula), in float64. */
function nearestOutputMse(w, x) {
  const f = Math.fround;
  const [out, inF] = w.shape;
  const n = x.shape[0];
  const wq = new Float64Array(out * inF);
  for (let r = 0; r < out; r++) {
    let amax = 0;
    for (let c = 0; c < inF; c++) amax = Math.max(amax, Math.abs(w.data[r * inF + c]));
    const s = Math.max(f(amax / 7.5), 1.1920928955078125e-7);
    for (let c = 0; c < inF; c++) {
      const t = f(w.data[r * inF + c] / s);
      let q = Math.round(t);
      if (Math.abs(t - Math.trunc(t)) === 0.5) q = 2 * Math.round(t / 2);
      q = Math.min(7, Math.max(-8, q));
      wq[r * inF + c] = f(q * s);
    }
  }
  let err = 0;
  for (let i = 0; i < n; i++) {
    for (let r = 0; r < out; r++) {
      let d = 0;
      for (let c = 0; c < inF; c++) d += x.data[i * inF + c] * (wq[r * inF + c] - w.data[r * inF + c]);
      err += d * d;
    }
  }
  return err / (n * out);
}

test('AdaRound on the MiniLM layer: progress, a live explorer, cancel, and a clear gain over nearest', async () => {
  const page = await env.page();
  await page.click('#ada-demo');
  await page.waitForFunction(() => document.querySelector('#ada-w').selectedOptions[0]?.textContent.includes('l0_attn_output_dense_weight'));
  assert.match(await page.$eval('#ada-x', (s) => s.selectedOptions[0].textContent), /l0_attn_dense_in\.npy \[560, 384\]/);

  // A long run: progress shows, the explorer still answers, cancel stops it with a partial result.
  await page.click('#adaround details.adder summary');
  await page.fill('#ada-controls [data-param=iterations] input.exact', '100000');
  await page.dispatchEvent('#ada-controls [data-param=iterations] input.exact', 'change');
  await page.click('#ada-run');
  await page.waitForSelector('#ada-progress:not([hidden])');
  await page.waitForFunction(() => Number(document.querySelector('#ada-progress-bar').value) > 0);
  const observed = await page.evaluate(() => window.quantscope.observe('torch.MinMaxObserver', { quant_max: 100, quant_min: 0 }));
  assert.equal(observed.ok, true, 'an observer runs while AdaRound learns');
  assert.equal(await page.getAttribute('#adaround', 'data-state'), 'running');
  await page.click('#ada-cancel');
  await page.waitForSelector('#adaround[data-state=cancelled]', { timeout: 20000 });
  const partial = await page.evaluate(() => window.quantscope.adaround());
  assert.ok(partial.iterations_run > 0 && partial.iterations_run < 100000, `stopped after ${partial.iterations_run}`);
  assert.match(await page.textContent('#ada-summary'), /Cancelled after/);

  // The default run (Quark's settings, 4 bits per channel).
  await page.fill('#ada-controls [data-param=iterations] input.exact', '1000');
  await page.dispatchEvent('#ada-controls [data-param=iterations] input.exact', 'change');
  await page.click('#ada-run');
  await page.waitForSelector('#adaround[data-state=done]', { timeout: 240000 });
  const o = await page.evaluate(() => window.quantscope.adaround());
  const shared = path.join(sharedDir(), 'samples', 'minilm');
  const w = readNpyF32(path.join(shared, 'weights', 'l0_attn_output_dense_weight.npy'));
  const x = readNpyF32(path.join(shared, 'activations', 'l0_attn_dense_in.npy'));
  // Round-to-nearest computed independently here (float64 products; the engine multiplies in
  // float32, hence the tolerance).
  closeTo(o.nearest.output_mse, nearestOutputMse(w, x), 1e-4, 0, 'round-to-nearest output mse');
  assert.ok(o.adaround.output_mse < 0.6 * o.nearest.output_mse, `AdaRound ${o.adaround.output_mse} vs nearest ${o.nearest.output_mse}`);
  assert.ok(o.adaround.output_sqnr_db > o.nearest.output_sqnr_db + 2);
  assert.equal(o.final_binary_fraction, 1, 'every soft decision ended 0 or 1');
  assert.ok(o.flipped > 1000 && o.flipped < o.weights / 4, `${o.flipped} flipped`);
  assert.equal(o.iterations_run, 1000);
  assert.equal(Number(await page.getAttribute('#adaround', 'data-flipped')), o.flipped);
  assert.match(await page.textContent('#ada-summary'), /lower than round-to-nearest/);
  assert.ok((await inkRatio(page, '#ada-chart')) > 0.01, 'the loss chart is drawn');
  await page.locator('#adaround').screenshot({ path: path.join(RESULTS, 'adaround-view.png') });
  console.log(`AdaRound in the page: nearest ${o.nearest.output_mse.toExponential(4)}, adaround ${o.adaround.output_mse.toExponential(4)} (${(o.mse_reduction * 100).toFixed(1)}% lower), ${o.flipped} flipped`);

  // Inputs that do not fit the weight are refused with a reason.
  await page.setInputFiles('#ada-files', [
    { name: 'w.npy', mimeType: 'application/octet-stream', buffer: npyBytes(Array.from({ length: 12 }, (_, i) => i / 12), [3, 4]) },
    { name: 'x.npy', mimeType: 'application/octet-stream', buffer: npyBytes(Array.from({ length: 15 }, (_, i) => i), [5, 3]) },
  ]);
  await page.waitForFunction(() => document.querySelector('#ada-w').selectedOptions[0]?.textContent.startsWith('w.npy'));
  await page.selectOption('#ada-x', { label: 'x.npy [5, 3]' });
  await page.click('#ada-run');
  await page.waitForSelector('#adaround[data-state=error]');
  assert.match(await page.textContent('#ada-error'), /one column per input feature/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
