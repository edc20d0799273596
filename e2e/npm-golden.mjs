#!/usr/bin/env node
// The npm package against every family's golden cases (golden/<family>/cases.json, the outputs
// of the frameworks themselves), compared field by field with each case's own tolerances, as the
// Rust harness compares them (tests/common/mod.rs, tests/golden_<family>.rs).
//
// Observer cases (torch, quark, horizon, ort, modelopt, llmcompressor, torchao): the case's
// batches are loaded with loadTensor (in order) and observed with observe() (with its derivation,
// whose last step must hold the report's scale and zero point) under the case's
// parameters as recorded (caseParams below); compared are min_val, max_val, scale, zero_point, amax, the
// searched range, the quantize–dequantize metrics, the fields a family reports in `extra`
// (num_bins_final, qmin_qmax, avg/std, observed_min/max, dst_nbins, upsample_rate,
// zero_point_dtype; llm-compressor's and torchao's qparam_shape, zero_point_dtype,
// importance_used, global_scale, eps_effective, block_size, zero_point_is_none and the MSE
// search's selected step and steps evaluated), the effective grid, and error cases (the
// framework's exception class and first line, and the stage that raises it). The observer's
// internal histogram and the per-batch traces are not part of a report and are checked by the
// Rust tests only.
//
// Format cases (bnb, ggml): the input is quantize–dequantized with quantize() under the
// library's own keys (formatParams below); compared are every dequantized value (the case's
// `dequantized` tolerance: exact, −0.0 == +0.0), the shape, the count of −0.0 values, the error
// metrics (the case's `metrics` tolerance) and, for ggml, the bits per value a block stores
// (8·block_bytes/block_elems).
//
// The same functions check the page (e2e/golden-page.test.mjs), whose runner calls
// window.quantscope instead of the package.
//
// Usage: node e2e/npm-golden.mjs [module specifier] [golden folder]
// Prints one JSON object: {families: {family: {cases, checked, passed, skipped: {reason: count},
// failures, targets: {id: [passed, checked]}}}}.
//
// The Python module runs the same cases with the same checks (python/tests/test_golden.py):
//   node e2e/npm-golden.mjs --jobs [golden folder]            the cases to run, as JSON
//   node e2e/npm-golden.mjs --check RESULTS.json [golden]     its results checked: the summary
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The cases of `family` (observer cases name an `observer`, format cases a `quantizer`). */
export function loadCases(goldenDir, family) {
  const file = path.join(goldenDir, family, 'cases.json');
  if (!fs.existsSync(file)) return [];
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  return (Array.isArray(doc) ? doc : doc.cases || []).filter((c) => c && (typeof c.observer === 'string' || typeof c.quantizer === 'string'));
}

/**
 * The observer and format families of the golden folder (those whose cases.json holds observer
 * or quantizer cases), in name order. Checkpoint folders (gguf_quant, hf_quant, …) have
 * cases.json files of another shape and tests of their own.
 */
export function families(goldenDir) {
  return fs.readdirSync(goldenDir).filter((f) => loadCases(goldenDir, f).length > 0).sort();
}

/**
 * The parameters of an observer case as the framework's call records them (the engine accepts
 * the frameworks' nested forms itself: src/params/library.rs), plus the inputs a case names
 * beside them — llm-compressor's importance (`extra_inputs.importance`, a `.npy` of E[x²] per
 * input channel; `readVector(relative path)` gives its values) — and the attributes set after
 * construction (`set_attributes_after_init`), which observe() takes with the keywords.
 */
export function caseParams(c, readVector) {
  const out = { ...(c.params || {}) };
  const importance = c.extra_inputs && c.extra_inputs.importance;
  if (typeof importance === 'string') out.importance = Array.from(readVector(importance));
  return { ...out, ...(c.set_attributes_after_init || {}) };
}

/**
 * The parameters of a format case, the library's own keys as `quantscope quantize` takes them
 * (tests/cli_quantize.rs): bitsandbytes' minus what describes the run (the input dtype, what
 * double quantization does inside); ggml's `imatrix` (a `.npy` path) as its values.
 */
export function formatParams(c, family, readVector) {
  if (family === 'ggml') return typeof c.params.imatrix === 'string' ? { imatrix: Array.from(readVector(c.params.imatrix)) } : {};
  const { dtype, nested_code, nested_blocksize, ...own } = c.params || {};
  return own;
}

/** Why an observer case cannot be asked through observe(), or null. */
export function skipReason(c, spec) {
  if (!spec) return 'not an observer of the registry';
  const batches = Array.isArray(c.batches) ? c.batches : [];
  const initError = batches.length === 0 && c.expected && c.expected.error !== undefined;
  // observe() takes constructor keywords and attributes alike, so "an attribute passed as a
  // keyword is refused" cannot be asked through it.
  const attributes = new Set(spec.params.filter((p) => p.attribute).map((p) => p.name));
  if (c.expected && c.expected.error !== undefined && Object.keys(c.params || {}).some((k) => attributes.has(k))) return 'an attribute passed as a constructor keyword';
  const others = Object.keys(c.extra_inputs || {}).filter((k) => k !== 'importance' && k !== 'imatrix_activations');
  if (others.length || (batches.length === 0 && !initError)) return 'inputs other than batches';
  return null;
}

/** `(rtol, atol)` of `field`: tolerance.per_field[field] (or tolerance[field]), else the case-wide one. */
function toleranceOf(c, family, field) {
  const tol = c.tolerance || {};
  const per = tol.per_field || {};
  // Horizon states its qdq tolerance once for all cases (golden/horizon/README.md, "Tolerances").
  if (field === 'qdq' && family === 'horizon' && !per.qdq) return [1e-4, 0];
  const t = per[field] ?? (typeof tol[field] === 'object' || tol[field] === 'exact' ? tol[field] : tol);
  if (t === 'exact') return [0, 0];
  return [t.rtol || 0, t.atol || 0];
}

const numbers = (v) => (Array.isArray(v) ? v : [v]).map((x) => (x === null || x === undefined ? NaN : Number(x)));

/** `|got − want| ≤ atol + rtol·|want|` element-wise; a message when not. */
function close(field, got, want, [rtol, atol]) {
  const g = ArrayBuffer.isView(got) ? got : numbers(got);
  const w = ArrayBuffer.isView(want) ? want : numbers(want);
  if (g.length !== w.length) return `${field}: ${g.length} values, expected ${w.length}`;
  for (let i = 0; i < w.length; i++) {
    const ok = g[i] === w[i] || (Number.isNaN(g[i]) && Number.isNaN(w[i])) || Math.abs(g[i] - w[i]) <= atol + rtol * Math.abs(w[i]);
    if (!ok) return `${field}[${i}]: got ${g[i]}, expected ${w[i]} (rtol ${rtol}, atol ${atol})`;
  }
  return null;
}

const emptyList = (v) => Array.isArray(v) && v.length === 0;
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** The stage a library raises at, as a report names it (llm-compressor's `args` is the validation before the observer exists). */
function stageOf(family, stage) {
  if (family === 'llmcompressor' && (stage === 'args' || stage === 'init')) return 'init';
  if (family === 'llmcompressor' && stage === 'get_qparams') return 'calculate_qparams';
  return stage;
}

/** Mismatches of llm-compressor's and torchao's own fields (tests/golden_{llmcompressor,torchao}.rs). */
function familyMismatches(report, c, family) {
  const e = c.expected;
  const extra = report.extra || {};
  const out = [];
  if (e.quant_min !== undefined && e.quant_max !== undefined) {
    const g = report.grid || {};
    const range = g.kind === 'int' ? [g.quant_min, g.quant_max] : g.kind === 'float' && family === 'llmcompressor' ? [-g.max, g.max] : null;
    if (!range || range[0] !== e.quant_min || range[1] !== e.quant_max) out.push(`grid ${JSON.stringify(g)}, expected ${e.quant_min}..${e.quant_max}`);
  }
  const fields = family === 'llmcompressor' ? ['qparam_shape', 'zero_point_dtype', 'importance_used'] : ['qparam_shape', 'zero_point_dtype', 'eps_effective'];
  for (const field of fields) {
    if (e[field] === undefined) continue;
    const got = extra[field] === undefined ? null : extra[field];
    const ok = typeof got === 'number' && typeof e[field] === 'number' ? got === e[field] : same(got, e[field]);
    if (!ok) out.push(`${field}: got ${JSON.stringify(got)}, expected ${JSON.stringify(e[field])}`);
  }
  if (e.global_scale !== undefined) {
    if (extra.global_scale === undefined) out.push('global_scale: the report has none');
    else {
      const m = close('global_scale', extra.global_scale, e.global_scale, toleranceOf(c, family, 'global_scale'));
      if (m) out.push(m);
    }
  }
  if (family === 'torchao' && Array.isArray(e.block_size) && (report.min_val || []).length > 0) {
    // One per batch; the report holds the last batch's (fixed qparams keep none).
    if (!same(extra.block_size, e.block_size.at(-1))) out.push(`block_size: got ${JSON.stringify(extra.block_size)}, expected ${JSON.stringify(e.block_size.at(-1))}`);
  }
  if (family === 'torchao' && e.zero_point_is_none === true && extra.zero_point_is_none !== true) out.push('the zero point should be None');
  if (e.mse_search) {
    // One entry per batch for multi-batch activations: the report holds the last search.
    const last = Array.isArray(e.mse_search) ? e.mse_search.at(-1) : e.mse_search;
    const keys = family === 'llmcompressor' ? ['selected_step', 'steps_evaluated'] : ['selected_step'];
    for (const key of keys) if (!same(extra[key], last[key])) out.push(`mse_search.${key}: got ${JSON.stringify(extra[key])}, expected ${JSON.stringify(last[key])}`);
  }
  return out;
}

/** Mismatches of an observer report against a case's `expected` (an empty list when it matches). */
export function mismatches(report, c, family) {
  const e = c.expected;
  if (e.error !== undefined) {
    const [kind, ...rest] = String(e.error).split(': ');
    const want = rest.join(': ');
    const err = report.error;
    if (report.ok || !err) return [`expected error ${e.error}, got a result`];
    const message = err.message.startsWith(`${kind}: `) ? err.message.slice(kind.length + 2) : err.message;
    const ok = err.kind === 'framework' && err.exception === kind && message.split('\n')[0] === want.split('\n')[0];
    if (!ok) return [`expected error ${e.error}, got ${err.kind} ${err.exception || ''}: ${err.message}`];
    const stage = (family === 'llmcompressor' || family === 'torchao') && e.error_stage ? stageOf(family, e.error_stage) : null;
    return stage && err.stage !== stage ? [`error raised at ${err.stage}, the library raises it at ${stage}`] : [];
  }
  if (!report.ok) return [`unexpected error: ${report.error && report.error.message}`];
  const out = [];
  const check = (msg) => msg && out.push(msg);
  for (const field of ['min_val', 'max_val', 'scale', 'zero_point', 'amax']) {
    if (e[field] === undefined || emptyList(e[field])) continue;
    if (report[field] === undefined || report[field] === null) out.push(`${field}: the report has none`);
    else check(close(field, report[field], e[field], toleranceOf(c, family, field)));
  }
  const extra = report.extra || {};
  const extraFields = [
    ['search_min', 'search_min_max'], ['search_max', 'search_min_max'],
    ['num_bins_final', null], ['qmin_qmax', null], ['tensordata_hist_bins', null],
    ['avg', 'avg'], ['std', 'std'], ['observed_min', 'observed_min'], ['observed_max', 'observed_max'],
  ];
  for (const [field, tol] of extraFields) {
    if (e[field] === undefined) continue;
    if (extra[field] === undefined) out.push(`${field}: the report has none`);
    else check(close(field, extra[field], e[field], tol ? toleranceOf(c, family, tol) : [0, 0]));
  }
  for (const field of ['dst_nbins', 'upsample_rate', 'zero_point_dtype']) {
    if (family === 'torch' && e[field] !== undefined && !same(extra[field], e[field])) out.push(`${field}: got ${JSON.stringify(extra[field])}, expected ${JSON.stringify(e[field])}`);
  }
  if (family === 'torch' && e.quant_min !== undefined && e.quant_max !== undefined) {
    const g = report.grid || {};
    if (g.quant_min !== e.quant_min || g.quant_max !== e.quant_max) out.push(`grid ${JSON.stringify(g)}, expected ${e.quant_min}..${e.quant_max}`);
  }
  if (family === 'llmcompressor' || family === 'torchao') out.push(...familyMismatches(report, c, family));
  if (e.qdq && typeof e.qdq === 'object') {
    const m = report.metrics;
    if (!m) out.push('qdq: no metrics');
    else {
      for (const field of ['mse', 'max_abs_err', 'sqnr_db', 'clipped_fraction']) {
        if (typeof e.qdq[field] !== 'number') continue;
        if (m[field] === null || m[field] === undefined) out.push(`qdq.${field}: undefined`);
        else check(close(`qdq.${field}`, m[field], e.qdq[field], toleranceOf(c, family, 'qdq')));
      }
    }
  }
  return out;
}

/** The number of −0.0 values of `values`. */
export function negativeZeros(values) {
  let n = 0;
  for (const v of values) if (v === 0 && Object.is(v, -0)) n += 1;
  return n;
}

/**
 * Mismatches of a quantize() result (`{values, shape, bits_per_value, mse, max_abs_err,
 * sqnr_db}`, `negative_zeros` when the values crossed a boundary that loses −0.0) against a
 * format case, whose dequantized output is `want` (Float32Array).
 */
export function formatMismatches(result, c, family, want) {
  const e = c.expected;
  const out = [];
  const check = (msg) => msg && out.push(msg);
  if (!same(result.shape, c.input_shape)) out.push(`shape ${JSON.stringify(result.shape)}, expected ${JSON.stringify(c.input_shape)}`);
  check(close('dequantized', result.values, want, toleranceOf(c, family, 'dequantized')));
  if (typeof e.negative_zero_count === 'number') {
    const got = result.negative_zeros ?? negativeZeros(result.values);
    if (got !== e.negative_zero_count) out.push(`negative_zero_count: got ${got}, expected ${e.negative_zero_count}`);
  }
  for (const field of ['mse', 'max_abs_err', 'sqnr_db']) {
    if (typeof e[field] !== 'number') continue;
    if (typeof result[field] !== 'number') out.push(`${field}: undefined`);
    else check(close(field, result[field], e[field], toleranceOf(c, family, 'metrics')));
  }
  if (family === 'ggml' && e.block_bytes && e.block_elems && result.bits_per_value !== (8 * e.block_bytes) / e.block_elems) {
    out.push(`bits_per_value ${result.bits_per_value}, a block stores ${(8 * e.block_bytes) / e.block_elems}`);
  }
  return out;
}

/**
 * Mismatches of a ggml block derivation (`quantize(…, {explain: true}).derivation`) against the
 * case's golden blocks (`blocks`, one byte per element): its last step's bytes are the block's.
 */
function blockDerivationMismatches(d, c, blocks) {
  if (!d) return ['no derivation'];
  const last = d.steps[d.steps.length - 1];
  const size = c.expected.block_bytes;
  const want = Array.from(blocks.subarray(d.block * size, (d.block + 1) * size), (b) => b.toString(16).padStart(2, '0')).join('');
  return last.values.bytes === want ? [] : [`block ${d.block}: derived ${last.values.bytes}, llama.cpp stored ${want}`];
}

/** A family's tally: cases, checked, passed, skipped by reason, failures, and [passed, checked] per observer or format. */
export function tally(cases) {
  const summary = { cases, checked: 0, passed: 0, skipped: {}, failures: [], targets: {} };
  return {
    summary,
    skip(why) {
      summary.skipped[why] = (summary.skipped[why] || 0) + 1;
    },
    record(c, problems) {
      const id = c.observer || c.quantizer;
      const t = (summary.targets[id] ||= [0, 0]);
      summary.checked += 1;
      t[1] += 1;
      if (problems.length === 0) {
        summary.passed += 1;
        t[0] += 1;
      } else summary.failures.push(`${c.id}: ${problems.join('; ')}`);
    },
  };
}

/** Quark's ONNX quantizers whose cases quantize() answers (tests/cli_quantize.rs): given scales, no observation. */
const QUARK_QUANTIZERS = new Set(['quark.INTQuantizer']);

/**
 * What running case `c` means, for any runner: `{skip}` (a reason), or `{kind, id, params,
 * inputs, check}` — kind `observe` (observer `id` over the batches `inputs`, relative paths, in
 * order) or `quantize` (quantizer `id` on the one input); `check(result)` lists the mismatches of
 * its result. `specs` maps observer ids to registry entries, `formatIds` holds the format ids,
 * `readVector(relative path)` reads a tensor's values.
 */
export function caseJob(c, family, { specs, formatIds, readVector }) {
  if (c.quantizer) {
    if (!formatIds.has(c.quantizer)) return { skip: 'not a format of the quantizer registry' };
    return {
      kind: 'quantize',
      id: c.quantizer,
      params: formatParams(c, family, readVector),
      inputs: [c.input],
      // ggml's cases also explain a block (the one holding the largest magnitude): its stored
      // bytes must be llama.cpp's.
      explain: family === 'ggml',
      check: (result) => [
        ...formatMismatches(result, c, family, readVector(c.expected.dequantized)),
        ...(family === 'ggml' ? blockDerivationMismatches(result.derivation, c, readVector(c.expected.blocks)) : []),
      ],
    };
  }
  if (QUARK_QUANTIZERS.has(c.observer)) {
    const { note, ...params } = c.params || {};
    return {
      kind: 'quantize',
      id: c.observer,
      params,
      inputs: c.batches.slice(0, 1),
      check: (result) => {
        const m = close('qdq_values', result.values, c.expected.qdq_values, toleranceOf(c, family, 'qdq_values'));
        return m ? [m] : [];
      },
    };
  }
  const why = skipReason(c, specs.get(c.observer));
  if (why) return { skip: why };
  return {
    kind: 'observe',
    id: c.observer,
    params: caseParams(c, readVector),
    inputs: Array.isArray(c.batches) ? c.batches : [],
    check: (report) => mismatches(report, c, family),
  };
}

/**
 * Every case of every family with what running it means (`caseJob`), in order: `[{family, c,
 * job}]`, and the tallies to record them in (`tallies[family]`). `qs` gives the registry and
 * reads the vectors a case names.
 */
export async function goldenJobs(qs, goldenDir) {
  await qs.init();
  const specs = new Map(qs.observers().map((o) => [o.id, o]));
  const formatIds = new Set(qs.quantizers().formats.map((f) => f.id));
  const out = [];
  const tallies = {};
  for (const family of families(goldenDir)) {
    const cases = loadCases(goldenDir, family);
    tallies[family] = tally(cases.length);
    const readVector = (rel) => {
      const t = qs.loadTensor(fs.readFileSync(path.join(goldenDir, family, rel)), { name: path.basename(rel) });
      try {
        return t.values();
      } finally {
        t.free();
      }
    };
    for (const c of cases) {
      let job;
      try {
        job = caseJob(c, family, { specs, formatIds, readVector });
      } catch (err) {
        job = { error: err.message };
      }
      out.push({ family, c, job });
    }
  }
  return { jobs: out, tallies };
}

/**
 * A report's derivation against the report (in WebAssembly, as `tests/derivations.rs` checks
 * natively): a successful run has one, and its last step holds the report's scale and zero point
 * exactly.
 */
function derivationMismatches(report) {
  if (!report.ok) return [];
  const steps = report.derivation || [];
  if (steps.length === 0) return ['no derivation'];
  if (report.grid && report.grid.kind === 'none') return [];
  const last = steps[steps.length - 1].values;
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const out = [];
  if (!same(last.scale, report.scale)) out.push(`derivation's last scale ${JSON.stringify(last.scale)}, the report's ${JSON.stringify(report.scale)}`);
  if (!same(last.zero_point, report.zero_point)) out.push(`derivation's last zero point ${JSON.stringify(last.zero_point)}, the report's ${JSON.stringify(report.zero_point)}`);
  return out;
}

/** Run every family's cases through the package `qs`; returns the summary. */
export async function checkGolden(qs, goldenDir) {
  const { jobs, tallies } = await goldenJobs(qs, goldenDir);
  const read = (family, rel) => fs.readFileSync(path.join(goldenDir, family, rel));
  for (const { family, c, job } of jobs) {
    const { skip, record } = tallies[family];
    if (job.skip) {
      skip(job.skip);
      continue;
    }
    let problems;
    let tensor = null;
    try {
      if (job.error) throw new Error(job.error);
      if (job.inputs.length === 0) {
        // Refused by the constructor, before any data: any tensor will do.
        tensor = qs.loadTensor(new Float32Array([0]), { name: 'none.npy' });
      } else {
        const bytes = job.inputs.map((b) => read(family, b));
        tensor = qs.loadTensor(bytes.length === 1 ? bytes[0] : bytes, { name: path.basename(job.inputs[0]) });
      }
      if (job.kind === 'quantize') problems = job.check(qs.quantize(tensor, job.id, job.params, { explain: Boolean(job.explain) }));
      else {
        const report = qs.observe(tensor, job.id, job.params, { explain: true });
        problems = [...job.check(report), ...derivationMismatches(report)];
      }
    } catch (err) {
      problems = [`threw: ${err.message}`];
    } finally {
      if (tensor) tensor.free();
    }
    record(c, problems);
  }
  return { families: Object.fromEntries(Object.entries(tallies).map(([f, t]) => [f, t.summary])) };
}

/**
 * The cases as another runner (the Python module, python/tests/test_golden.py) takes them:
 * `[{key, kind, id, params, explain, inputs}]` with absolute input paths, the skipped ones left
 * out; `explain`: a quantize job also returns its block derivation.
 */
export async function jobList(qs, goldenDir) {
  const { jobs } = await goldenJobs(qs, goldenDir);
  return jobs
    .filter(({ job }) => !job.skip && !job.error)
    .map(({ family, c, job }) => ({
      key: `${family}/${c.id}`,
      kind: job.kind,
      id: job.id,
      params: job.params,
      explain: Boolean(job.explain),
      inputs: job.inputs.map((rel) => path.join(goldenDir, family, rel)),
    }));
}

/**
 * A result as another runner writes it (JSON) made what the checks read: `values_f32_base64`
 * (a quantize result's values, exact float32 bytes) becomes `values`.
 */
function decodeResult(result) {
  if (!result || typeof result.values_f32_base64 !== 'string') return result;
  const bytes = Buffer.from(result.values_f32_base64, 'base64');
  const values = new Float32Array(bytes.length / 4);
  new Uint8Array(values.buffer).set(bytes);
  const { values_f32_base64, ...rest } = result;
  return { ...rest, values };
}

/** Check another runner's `results` (`{key: result}`, as `jobList` names the cases); the summary. */
export async function checkResults(qs, goldenDir, results) {
  const { jobs, tallies } = await goldenJobs(qs, goldenDir);
  for (const { family, c, job } of jobs) {
    const { skip, record } = tallies[family];
    if (job.skip) {
      skip(job.skip);
      continue;
    }
    const key = `${family}/${c.id}`;
    let problems;
    try {
      if (job.error) throw new Error(job.error);
      if (!(key in results)) throw new Error('no result');
      const result = decodeResult(results[key]);
      problems = result && result.threw ? [`threw: ${result.threw}`] : job.check(result);
    } catch (err) {
      problems = [`threw: ${err.message}`];
    }
    record(c, problems);
  }
  return { families: Object.fromEntries(Object.entries(tallies).map(([f, t]) => [f, t.summary])) };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const defaultGolden = () => process.env.QUANTSCOPE_GOLDEN || path.join(process.env.QUANTSCOPE_SHARED || path.join(HERE, '..', '..', 'shared'), 'golden');
  const local = pathToFileURL(path.join(HERE, '..', 'www', 'lib', 'index.js')).href;
  const [mode, ...rest] = process.argv.slice(2);
  if (mode === '--jobs') {
    // node e2e/npm-golden.mjs --jobs [golden folder]: the cases for another runner, as JSON.
    const qs = await import(local);
    console.log(JSON.stringify(await jobList(qs, rest[0] || defaultGolden())));
  } else if (mode === '--check') {
    // node e2e/npm-golden.mjs --check RESULTS.json [golden folder]: another runner's results checked.
    const qs = await import(local);
    const results = JSON.parse(fs.readFileSync(rest[0], 'utf8'));
    console.log(JSON.stringify(await checkResults(qs, rest[1] || defaultGolden(), results)));
  } else {
    const [given, golden] = process.argv.slice(2);
    const qs = await import(given || local);
    console.log(JSON.stringify(await checkGolden(qs, golden || defaultGolden())));
  }
}
