// The built Python package installs with pip into a fresh virtual environment from its sdist
// (pip builds the wheel from it), with no Node on the PATH, and works there: the wheel carries
// the bundled widget and its WebAssembly engine, and the version is the crate's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { DIST, TORCH, crateVersion, missingEnvironment, scratch } from './notebook-hosts.mjs';

const skip = missingEnvironment();

test('pip install of the sdist in a fresh venv, without Node', { skip: skip || false, timeout: 300_000 }, (t) => {
  const version = crateVersion();
  const files = fs.readdirSync(DIST);
  const sdist = files.find((f) => f.endsWith('.tar.gz'));
  assert.deepEqual(files.sort(), [`quantscope-${version}-py3-none-any.whl`, `quantscope-${version}.tar.gz`]);
  const dir = scratch('pip');
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const venv = path.join(dir, 'venv');
  execFileSync('python3', ['-m', 'venv', venv]);
  // Only the venv on the PATH: pip, its build back end (hatchling, from PyPI) and Python.
  const env = { PATH: path.join(venv, 'bin'), HOME: dir, PIP_DISABLE_PIP_VERSION_CHECK: '1', ...(process.env.PIP_INDEX_URL ? { PIP_INDEX_URL: process.env.PIP_INDEX_URL } : {}) };
  const pip = (args) => execFileSync(path.join(venv, 'bin', 'python'), ['-m', 'pip', ...args], { env, encoding: 'utf8', cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  pip(['install', '--quiet', '--cache-dir', path.join(process.env.HOME || dir, '.cache', 'pip'), path.join(DIST, sdist)]);
  const check = `
import json, shutil, sys
from pathlib import Path
import numpy as np
import quantscope
assert shutil.which("node") is None, "node is reachable"
e = quantscope.Explorer([np.load(p) for p in sys.argv[1:]], ["torch.MinMaxObserver"])
static = Path(quantscope.__file__).parent / "static"
print(json.dumps({
  "version": quantscope.__version__,
  "batches": len(e._batches),
  "npy": all(b.startswith(b"\\x93NUMPY") for b in e._batches),
  "esm": len(str(quantscope.Explorer._esm)),
  "inline_wasm": "AGFzbQ" in str(quantscope.Explorer._esm),
  "static": sorted(p.name for p in static.iterdir()),
}))
`;
  const inputs = [0, 1].map((i) => path.join(TORCH, 'inputs', `drift_b${i}.npy`));
  const out = JSON.parse(execFileSync(path.join(venv, 'bin', 'python'), ['-c', check, ...inputs], { env, encoding: 'utf8', cwd: dir }));
  assert.equal(out.version, version);
  assert.equal(out.batches, 2);
  assert.equal(out.npy, true);
  assert.equal(out.inline_wasm, true);
  assert.ok(out.esm > 1_000_000, `the bundled module holds the engine (${out.esm} characters)`);
  assert.deepEqual(out.static, ['VERSION', 'widget.css', 'widget.js']);
});
