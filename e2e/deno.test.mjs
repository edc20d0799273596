// The npm package in Deno (the real binary of the `deno` npm package): a script imports the
// packed package from node_modules, observes a golden torch input and renders the display bundle
// Deno's Jupyter kernel shows (`Symbol.for("Jupyter.display")` → image/svg+xml); then the same
// package runs in Deno's Jupyter kernel itself, driven by jupyter_client, and the cell's output
// is that SVG.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ROOT, RESULTS } from './helpers.mjs';
import { TORCH, goldenCase, packedProject, venvBin, within } from './notebook-hosts.mjs';

/** Deno's binary as scripts/setup.sh installs it (the `deno` npm package's linux-x64 binary, in target/deno). */
const DENO = path.join(ROOT, 'target', 'deno', 'node_modules', '@deno', 'linux-x64-glibc', 'deno');
if (!fs.existsSync(DENO)) throw new Error(`${DENO} is missing: run scripts/setup.sh`);
const INPUT = path.join(TORCH, 'inputs', 'normal_b0.npy');
const MINMAX = 'torch.MinMaxObserver';
const HIST = 'torch.HistogramObserver';

const scratchProject = () => packedProject('deno');

// The code both hosts run: observe, then the display bundle of each result.
const OBSERVE = `import * as qs from "quantscope";
await qs.init();
const tensor = qs.loadTensor(Deno.readFileSync(${JSON.stringify(INPUT)}), { name: "normal_b0.npy" });
const minmax = qs.observe(tensor, "${MINMAX}");
const hist = qs.observe(tensor, "${HIST}");
`;

function checkResult(r, c) {
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.ok(within(r.scale[0], c.expected.scale[0], c.tolerance.per_field.scale), `${c.id}: scale ${r.scale[0]} vs ${c.expected.scale[0]}`);
  assert.equal(r.zero_point[0], c.expected.zero_point[0]);
}

test('Deno: import the package, observe a golden input, render the Jupyter display bundle', { timeout: 120_000 }, (t) => {
  const dir = scratchProject();
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(
    path.join(dir, 'use.js'),
    `${OBSERVE}
const bundle = (r) => r[Symbol.for("Jupyter.display")]();
console.log(JSON.stringify({
  deno: Deno.version.deno,
  version: qs.version(),
  results: [minmax, hist].map((r) => ({ ok: r.ok, error: r.error, scale: r.scale, zero_point: r.zero_point })),
  displays: [bundle(minmax), bundle(hist)],
}));
`,
  );
  const out = JSON.parse(execFileSync(DENO, ['run', '--allow-read', '--allow-env', '--no-prompt', 'use.js'], { cwd: dir, encoding: 'utf8', env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', DENO_DIR: path.join(dir, '.deno') } }));
  t.diagnostic(`Deno ${out.deno}`);
  checkResult(out.results[0], goldenCase('minmax-quint8-affine-normal'));
  checkResult(out.results[1], goldenCase('hist-default-normal'));
  const [mm, hist] = out.displays;
  for (const [d, id] of [[mm, MINMAX], [hist, HIST]]) {
    assert.ok(d['image/svg+xml'].startsWith('<svg') && d['image/svg+xml'].includes(id), `${id}: an SVG panel`);
    assert.equal(JSON.parse(d['text/plain']).observer, id);
  }
  fs.writeFileSync(path.join(RESULTS, 'deno-histogram.svg'), hist['image/svg+xml']);
});

const kernelSkip = !fs.existsSync(venvBin('python')) ? 'target/notebook-venv is missing: run scripts/build-python.sh' : false;

test("Deno's Jupyter kernel shows a result as SVG", { skip: kernelSkip, timeout: 180_000 }, (t) => {
  const dir = scratchProject();
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // A kernelspec for this Deno, in a private Jupyter data folder.
  const data = path.join(dir, '.jupyter-data');
  fs.mkdirSync(path.join(data, 'kernels', 'deno'), { recursive: true });
  fs.writeFileSync(
    path.join(data, 'kernels', 'deno', 'kernel.json'),
    JSON.stringify({ argv: [DENO, 'jupyter', '--kernel', '--conn', '{connection_file}'], display_name: 'Deno', language: 'typescript', env: { DENO_NO_UPDATE_CHECK: '1', DENO_DIR: path.join(dir, '.deno') } }),
  );
  const nb = {
    cells: [
      { id: 'observe', cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: OBSERVE },
      // `await Deno.jupyter.display(…)`, as the README advises for unattended runs (Deno's kernel
      // can publish a bare last expression after the cell's `idle`; see below).
      { id: 'show', cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: 'await Deno.jupyter.display(hist)' },
      { id: 'compare', cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source: 'await Deno.jupyter.display(Deno.jupyter.svg`${qs.renderSvg([minmax, hist])}`)' },
    ],
    metadata: { kernelspec: { name: 'deno', display_name: 'Deno', language: 'typescript' } },
    nbformat: 4,
    nbformat_minor: 5,
  };
  fs.writeFileSync(path.join(dir, 'deno.ipynb'), JSON.stringify(nb));
  // Driven by jupyter_client rather than nbclient: Deno's kernel (2.9) can publish a cell's
  // output after the cell's `idle` status, and nbclient stops listening at `idle` (it lost outputs
  // on CI). Each cell's outputs are gathered by its request id until every shown cell has one.
  const run = `
import json, time
from jupyter_client.manager import start_new_kernel
sources = [c["source"] for c in json.load(open("deno.ipynb"))["cells"]]
km, kc = start_new_kernel(kernel_name="deno", startup_timeout=120)
try:
    ids = []
    for source in sources:
        ids.append(kc.execute(source))
        kc.get_shell_msg(timeout=120)
    outputs = {i: [] for i in ids}
    deadline = time.time() + 60
    while time.time() < deadline and not all(outputs[i] for i in ids[1:]):
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except Exception:
            continue
        parent = msg["parent_header"].get("msg_id")
        if parent in outputs and msg["msg_type"] in ("display_data", "execute_result", "error", "stream"):
            outputs[parent].append({"output_type": msg["msg_type"], **msg["content"]})
finally:
    km.shutdown_kernel(now=True)
print(json.dumps([outputs[ids[1]], outputs[ids[2]]]))
`;
  const [outputs, comparison] = JSON.parse(execFileSync(venvBin('python'), ['-c', run], { cwd: dir, encoding: 'utf8', env: { ...process.env, JUPYTER_DATA_DIR: data, JUPYTER_PATH: data, JUPYTER_RUNTIME_DIR: path.join(dir, '.jupyter-runtime') } }));
  const shown = outputs.find((o) => o.output_type === 'display_data');
  assert.ok(shown, `the cell shows a result: ${JSON.stringify(outputs).slice(0, 500)}`);
  const svg = shown.data['image/svg+xml'];
  assert.ok(typeof svg === 'string' && svg.startsWith('<svg') && svg.includes(HIST), 'image/svg+xml of the Histogram panel');
  const plain = JSON.parse(shown.data['text/plain']);
  const c = goldenCase('hist-default-normal');
  assert.ok(within(plain.scale[0], c.expected.scale[0], c.tolerance.per_field.scale), `scale ${plain.scale[0]}`);
  fs.writeFileSync(path.join(RESULTS, 'deno-kernel-histogram.svg'), svg);
  const both = comparison.find((o) => o.output_type === 'display_data');
  assert.ok(both && both.data['image/svg+xml'].includes(MINMAX) && both.data['image/svg+xml'].includes(HIST), `the comparison shows as SVG: ${JSON.stringify(comparison).slice(0, 300)}`);
});
