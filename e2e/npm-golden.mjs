#!/usr/bin/env node
// The npm package against every family's golden cases (golden/<family>/cases.json, the outputs
// of the frameworks themselves): each case whose observer the registry knows is loaded with
// loadTensor (its batches, in order), observed with observe() and compared field by field with
// the case's own tolerances, as the Rust harness (tests/common/mod.rs) compares them: min_val,
// max_val, scale, zero_point, amax, the searched range, the quantize–dequantize metrics, the
// fields a family reports in `extra` (num_bins_final, qmin_qmax, avg/std, observed_min/max,
// dst_nbins, upsample_rate, zero_point_dtype), PyTorch's effective grid, and error cases (the
// framework's exception class and first line). The observer's internal histogram and the
// per-batch traces are not part of a report and are checked by the Rust tests only.
//
// Usage: node e2e/npm-golden.mjs [module specifier] [golden folder]
// Prints one JSON object: {families: {family: {cases, checked, passed, skipped: {reason: count}, failures}}}.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** `(rtol, atol)` of `field`: tolerance.per_field[field], else the case-wide one. */
function toleranceOf(c, family, field) {
  const per = (c.tolerance && c.tolerance.per_field) || {};
  // Horizon states its qdq tolerance once for all cases (golden/horizon/README.md, "Tolerances").
  if (field === 'qdq' && family === 'horizon' && !per.qdq) return [1e-4, 0];
  const t = per[field] || c.tolerance || {};
  return [t.rtol || 0, t.atol || 0];
}

const numbers = (v) => (Array.isArray(v) ? v : [v]).map((x) => (x === null || x === undefined ? NaN : Number(x)));

/** `|got − want| ≤ atol + rtol·|want|` element-wise; a message when not. */
function close(field, got, want, [rtol, atol]) {
  const g = numbers(got);
  const w = numbers(want);
  if (g.length !== w.length) return `${field}: ${g.length} values, expected ${w.length}`;
  for (let i = 0; i < w.length; i++) {
    const ok = g[i] === w[i] || (Number.isNaN(g[i]) && Number.isNaN(w[i])) || Math.abs(g[i] - w[i]) <= atol + rtol * Math.abs(w[i]);
    if (!ok) return `${field}[${i}]: got ${g[i]}, expected ${w[i]} (rtol ${rtol}, atol ${atol})`;
  }
  return null;
}

const emptyList = (v) => Array.isArray(v) && v.length === 0;

/** Mismatches of a report against a case's `expected` (an empty list when it matches). */
function mismatches(report, c, family) {
  const e = c.expected;
  if (e.error !== undefined) {
    const [kind, ...rest] = String(e.error).split(': ');
    const want = rest.join(': ');
    const err = report.error;
    if (report.ok || !err) return [`expected error ${e.error}, got a result`];
    const message = err.message.startsWith(`${kind}: `) ? err.message.slice(kind.length + 2) : err.message;
    const ok = err.kind === 'framework' && err.exception === kind && message.split('\n')[0] === want.split('\n')[0];
    return ok ? [] : [`expected error ${e.error}, got ${err.kind} ${err.exception || ''}: ${err.message}`];
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
    if (family === 'torch' && e[field] !== undefined && JSON.stringify(extra[field]) !== JSON.stringify(e[field])) out.push(`${field}: got ${JSON.stringify(extra[field])}, expected ${JSON.stringify(e[field])}`);
  }
  if (family === 'torch' && e.quant_min !== undefined && e.quant_max !== undefined) {
    const g = report.grid || {};
    if (g.quant_min !== e.quant_min || g.quant_max !== e.quant_max) out.push(`grid ${JSON.stringify(g)}, expected ${e.quant_min}..${e.quant_max}`);
  }
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

/** Run every family's cases through the package `qs`; returns the summary. */
export async function checkGolden(qs, goldenDir) {
  await qs.init();
  const specs = new Map(qs.observers().map((o) => [o.id, o]));
  const families = {};
  for (const family of fs.readdirSync(goldenDir).sort()) {
    const file = path.join(goldenDir, family, 'cases.json');
    if (!fs.existsSync(file)) continue;
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    const cases = (Array.isArray(doc) ? doc : doc.cases || []).filter((c) => c && typeof c.observer === 'string');
    const summary = { cases: cases.length, checked: 0, passed: 0, skipped: {}, failures: [] };
    const skip = (why) => {
      summary.skipped[why] = (summary.skipped[why] || 0) + 1;
    };
    for (const c of cases) {
      const spec = specs.get(c.observer);
      const batches = Array.isArray(c.batches) ? c.batches : [];
      const initError = batches.length === 0 && c.expected && c.expected.error !== undefined;
      // Functions the registry does not hold (quantizers, kernels, other libraries).
      if (!spec) {
        skip('not an observer of the registry');
        continue;
      }
      // observe() takes constructor keywords and attributes alike, so "an attribute passed as a
      // keyword is refused" cannot be asked through it.
      const attributes = new Set(spec.params.filter((p) => p.attribute).map((p) => p.name));
      if (c.expected && c.expected.error !== undefined && Object.keys(c.params || {}).some((k) => attributes.has(k))) {
        skip('an attribute passed as a constructor keyword');
        continue;
      }
      if (c.extra_inputs || (batches.length === 0 && !initError)) {
        skip('inputs other than batches');
        continue;
      }
      summary.checked += 1;
      let problems;
      let tensor = null;
      try {
        if (initError) {
          // Refused by the constructor, before any data: any tensor will do.
          tensor = qs.loadTensor(new Float32Array([0]), { name: 'none.npy' });
        } else {
          const bytes = batches.map((b) => fs.readFileSync(path.join(goldenDir, family, b)));
          tensor = qs.loadTensor(bytes.length === 1 ? bytes[0] : bytes, { name: path.basename(batches[0]) });
        }
        const params = { ...(c.params || {}), ...(c.set_attributes_after_init || {}) };
        problems = mismatches(qs.observe(tensor, c.observer, params), c, family);
      } catch (err) {
        problems = [`threw: ${err.message}`];
      } finally {
        if (tensor) tensor.free();
      }
      if (problems.length === 0) summary.passed += 1;
      else summary.failures.push(`${c.id}: ${problems.join('; ')}`);
    }
    families[family] = summary;
  }
  return { families };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [given, golden] = process.argv.slice(2);
  const specifier = given || pathToFileURL(path.join(HERE, '..', 'www', 'lib', 'index.js')).href;
  const goldenDir = golden || path.join(process.env.QUANTSCOPE_SHARED || path.join(HERE, '..', '..', 'shared'), 'golden');
  const qs = await import(specifier);
  console.log(JSON.stringify(await checkGolden(qs, goldenDir)));
}
