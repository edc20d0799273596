// PyTorch checkpoints (`torch.save`: zip and legacy pickles) read without running any pickle code,
// in the npm package and in the page: every tensor of every golden file in
// ../shared/golden/torch_pickle equals, bit for bit, the tensor `torch.load(weights_only=True)`
// returned (its expected .safetensors, read by the same package); a pickled nn.Module and the
// hostile files are refused with the global they met named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { sharedDir, loadInPage } from './helpers.mjs';
import { browserForTests } from './suite.mjs';
import * as qs from '../www/lib/index.js';

const DIR = path.join(sharedDir(), 'golden', 'torch_pickle');
const cases = JSON.parse(fs.readFileSync(path.join(DIR, 'cases.json'), 'utf8')).files;
const browser = browserForTests({ setup: () => qs.init(undefined, { warm: false }) });

/** The tensors of a file, by name (`undefined` and the error for one the package refuses). */
function read(bytes, name, member) {
  try {
    const t = qs.loadTensor(bytes, { name, member });
    const out = { shape: t.shape, values: Buffer.from(new Uint8Array(t.values().buffer.slice(0))) };
    t.free();
    return out;
  } catch (err) {
    return { error: String(err.message || err) };
  }
}

test('every golden torch.save file reads to exactly torch.load\'s tensors (npm package)', () => {
  let compared = 0;
  for (const c of cases.filter((c) => !c.hostile && c.file !== 'files/whole_module.pt')) {
    const bytes = fs.readFileSync(path.join(DIR, c.file));
    const expected = fs.readFileSync(path.join(DIR, c.expected));
    const names = c.tensors.map((t) => t.name ?? t.path ?? t);
    assert.ok(names.length > 0, c.file);
    for (const name of names) {
      const want = read(expected, 'expected.safetensors', name);
      const got = read(bytes, path.basename(c.file), name);
      if (want.error) {
        assert.ok(got.error, `${c.file}: ${name} is refused as its expected twin is (${want.error})`);
        continue;
      }
      assert.equal(got.error, undefined, `${c.file}: ${name}`);
      assert.deepEqual(got.shape, want.shape, `${c.file}: ${name}`);
      assert.ok(got.values.equals(want.values), `${c.file}: ${name}: values differ`);
      compared += 1;
    }
  }
  assert.ok(compared >= 100, `${compared} tensors compared`);
});

test('a pickled nn.Module and the hostile pickles are refused, naming the global (npm package)', () => {
  const refused = {
    'files/whole_module.pt': '__main__',
    'files/hostile_os_system.pt': 'system',
    'files/hostile_zip_popen.pt': 'Popen',
  };
  for (const [file, global] of Object.entries(refused)) {
    const got = read(fs.readFileSync(path.join(DIR, file)), path.basename(file));
    assert.ok(got.error && got.error.includes(global), `${file}: ${got.error}`);
  }
  assert.ok(!fs.existsSync('PWNED'), 'nothing ran');
});

test('a torch.save file dropped on the page is read as the npm package reads it', async () => {
  const file = 'files/pytorch_model_bf16.bin';
  const bytes = fs.readFileSync(path.join(DIR, file));
  const page = await browser.page();
  const summary = await loadInPage(page, bytes, { name: 'pytorch_model_bf16.bin' });
  const t = qs.loadTensor(bytes, { name: 'pytorch_model_bf16.bin', member: summary.name.split(':').pop().trim() });
  assert.equal(summary.elements, t.elements, JSON.stringify(summary).slice(0, 300));
  assert.equal(summary.min, t.min);
  assert.equal(summary.max, t.max);
  t.free();
  assert.deepEqual(page.errors, []);
});
