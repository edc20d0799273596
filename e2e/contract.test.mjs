// www/CONTRACT.md checked against the page itself, so that the contract cannot drift: the
// `data-*` attributes each section documents against those the page's elements really carry
// (both ways: nothing undocumented on the page, nothing documented that the page never writes),
// and every `window.quantscope` member against the table — the members the page exposes, and
// each result against the schema in the table's "returns" column, with the named types of its
// "Types" table (every key documented, no key undocumented, nested objects and arrays alike).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { WWW, RESULTS, npyBytes, sharedDir } from './helpers.mjs';
import { browserForTests } from './suite.mjs';

const env = browserForTests();

// ---------------------------------------------------------------------------------------------
// CONTRACT.md, parsed

const CONTRACT = fs.readFileSync(path.join(WWW, 'CONTRACT.md'), 'utf8');

/** The `## ` sections of the contract: {title: text}. */
function sections(md) {
  const out = {};
  for (const part of md.split(/^## /m).slice(1)) {
    const nl = part.indexOf('\n');
    out[part.slice(0, nl).trim()] = part.slice(nl + 1);
  }
  return out;
}

/** The `data-*` attribute names a piece of the contract mentions. */
function documentedAttributes(text) {
  return new Set(text.match(/\bdata-[a-z][a-z0-9-]*/g) || []);
}

/** The rows of the first markdown table under `text` (cells unescaped, code spans unwrapped). */
function tableRows(text) {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  const rows = [];
  for (let i = start + 2; i < lines.length && lines[i].startsWith('|'); i += 1) {
    const cells = lines[i].slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'));
    rows.push(cells);
  }
  return rows;
}

/** A cell holding one code span: its text (or null). */
const code = (cell) => {
  const m = /^`([^`]+)`$/.exec(cell || '');
  return m ? m[1] : null;
};

// A schema in the contract's notation (TypeScript-like):
//   {a, b?, c: T}   an object with exactly these keys (`?`: may be absent; a key without a type
//                   is not checked further); {<id>: T} an object whose every value is a T
//   [T]  an array of T;  T | U  either;  "text"  that string;  null;  number, string, boolean;
//   Name  a type of the Types table; any other word (Float32Array, …) is not checked.

function tokenize(text) {
  const tokens = [];
  const re = /\s*(?:("[^"]*")|([A-Za-z_][A-Za-z0-9_]*)|([{}[\]:,?|<>]))/y;
  let m;
  while (re.lastIndex < text.length && (m = re.exec(text))) tokens.push(m[1] || m[2] || m[3]);
  if (re.lastIndex < text.trimEnd().length) throw new Error(`cannot read the schema ${JSON.stringify(text)} at ${re.lastIndex}`);
  return tokens;
}

function parseSchema(text) {
  const t = tokenize(text);
  let i = 0;
  const expect = (tok) => {
    if (t[i] !== tok) throw new Error(`schema ${JSON.stringify(text)}: expected ${tok} at token ${i} (${t[i]})`);
    i += 1;
  };
  const type = () => {
    const alts = [atom()];
    while (t[i] === '|') {
      i += 1;
      alts.push(atom());
    }
    return alts.length === 1 ? alts[0] : { union: alts };
  };
  const atom = () => {
    const tok = t[i++];
    if (tok === '{') {
      if (t[i] === '<') {
        i += 3; // < name >
        expect(':');
        const values = type();
        expect('}');
        return { map: values };
      }
      const fields = [];
      while (t[i] !== '}') {
        const name = t[i++];
        const optional = t[i] === '?';
        if (optional) i += 1;
        let ty = null;
        if (t[i] === ':') {
          i += 1;
          ty = type();
        }
        fields.push({ name, optional, type: ty });
        if (t[i] === ',') i += 1;
      }
      expect('}');
      return { object: fields };
    }
    if (tok === '[') {
      const of = type();
      expect(']');
      return { array: of };
    }
    if (tok && tok.startsWith('"')) return { literal: tok.slice(1, -1) };
    return { name: tok };
  };
  const out = type();
  if (i !== t.length) throw new Error(`schema ${JSON.stringify(text)}: unread tokens from ${t[i]}`);
  return out;
}

/** The problems of `value` against `schema` (an empty list when it conforms). */
function check(value, schema, types, where = '') {
  if (schema.union) {
    const tries = schema.union.map((s) => check(value, s, types, where));
    return tries.some((p) => p.length === 0) ? [] : tries.reduce((a, b) => (b.length < a.length ? b : a));
  }
  if (value === undefined) return [`${where}: undefined`];
  if (schema.literal !== undefined) return value === schema.literal ? [] : [`${where}: ${JSON.stringify(value)} is not "${schema.literal}"`];
  if (schema.name) {
    const n = schema.name;
    if (n === 'null') return value === null ? [] : [`${where}: not null`];
    if (n === 'number' || n === 'string' || n === 'boolean') return typeof value === n ? [] : [`${where}: ${JSON.stringify(value)} is not a ${n}`];
    if (types[n]) return check(value, types[n], types, where);
    return [];
  }
  if (schema.array) {
    if (!Array.isArray(value)) return [`${where}: not an array`];
    return value.flatMap((v, k) => check(v, schema.array, types, `${where}[${k}]`));
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [`${where}: ${JSON.stringify(value)} is not an object`];
  if (schema.map) return Object.entries(value).flatMap(([k, v]) => check(v, schema.map, types, `${where}.${k}`));
  const problems = [];
  const known = new Set(schema.object.map((f) => f.name));
  for (const k of Object.keys(value)) if (!known.has(k)) problems.push(`${where}: undocumented key ${k}`);
  for (const f of schema.object) {
    if (!(f.name in value)) {
      if (!f.optional) problems.push(`${where}: documented key ${f.name} is missing`);
      continue;
    }
    if (value[f.name] === undefined) problems.push(`${where}.${f.name}: undefined`);
    else if (f.type) problems.push(...check(value[f.name], f.type, types, `${where}.${f.name}`));
  }
  return problems;
}

const SECTIONS = sections(CONTRACT);
const API = SECTIONS['`window.quantscope`'];
assert.ok(API, 'CONTRACT.md has a `window.quantscope` section');
/** member name → {call: the member as written, returns: schema or null} */
const MEMBERS = new Map(tableRows(API).map(([member, , returns]) => {
  const written = code(member);
  assert.ok(written, `a member cell holds one code span: ${member}`);
  const schema = code(returns);
  return [written.replace(/\(.*$/, ''), { written, returns: schema ? parseSchema(schema) : null }];
}));
const TYPES = Object.fromEntries(tableRows(SECTIONS.Types).map(([name, schema]) => [code(name), parseSchema(code(schema))]));

// ---------------------------------------------------------------------------------------------
// The page

/** The `data-*` attribute names of every element under the elements matching `selector`. */
function pageAttributes(page, selector) {
  return page.$$eval(selector, (roots) => {
    const names = new Set();
    for (const root of roots) {
      for (const el of [root, ...root.querySelectorAll('*')]) {
        for (const a of el.getAttributeNames()) if (a.startsWith('data-')) names.add(a);
      }
    }
    return [...names].sort();
  });
}

/** A safetensors file of `tensors` ([name, shape, values]; a negative length truncates it). */
function safetensors(tensors, { cut = 0 } = {}) {
  let offset = 0;
  const header = {};
  const bodies = [];
  for (const [name, shape, values] of tensors) {
    const body = Buffer.from(Float32Array.from(values).buffer);
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + body.length] };
    offset += body.length;
    bodies.push(body);
  }
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const all = Buffer.concat([len, json, ...bodies]);
  return all.subarray(0, all.length - cut);
}

const ramp = (n, scale = 1) => Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) * scale);

/** Bring every view into every state the contract describes. */
async function exercise(page) {
  // The rotation preview on: every panel and format row also shows its numbers after rotation.
  await page.check('#rotate-on');
  // Observers: the demo's per-tensor and per-channel panels, and a panel that fails (before and
  // after rotation).
  await page.evaluate(() => window.quantscope.observe('torch.MinMaxObserver', { quant_min: 0, quant_max: 0 }));
  await page.click('[role=region][aria-label="torch.HistogramObserver"] .why summary');
  await page.waitForSelector('[role=region][aria-label="torch.HistogramObserver"][data-derivation-steps]');
  // A candidate of its search previewed on the histogram (keyboard).
  await page.focus('[role=region][aria-label="torch.HistogramObserver"] canvas.candidates-chart');
  await page.keyboard.press('ArrowLeft');
  await page.waitForSelector('[role=region][aria-label="torch.HistogramObserver"][data-preview]');
  // Formats: the demo compared, how a block of one is stored, a format added, one that does
  // not apply.
  await page.waitForSelector('#formats[data-state=done]');
  await page.click('#formats-table tr[data-format="ggml.Q4_K"] .why-link');
  await page.waitForSelector('#formats-why[data-block]');
  await page.evaluate(() => window.quantscope.addFormat('int', { bits: 3 }));
  // AdaRound: a short run on the demo layer.
  await page.click('#ada-demo');
  await page.waitForFunction(() => document.querySelector('#ada-w').selectedOptions[0]?.textContent.includes('l0_attn_output_dense_weight'));
  await page.click('#adaround details.adder summary');
  await page.fill('#ada-controls [data-param=iterations] input.exact', '40');
  await page.dispatchEvent('#ada-controls [data-param=iterations] input.exact', 'change');
  await page.click('#ada-run');
  await page.waitForSelector('#adaround[data-state=done]', { timeout: 120000 });
  // Model: a small checkpoint with a matrix, a vector (per-channel methods do not apply) and a
  // truncated second file (its tensor is skipped), ranked also with ggml's Q4_K (which fails on
  // rows of 32 values: super-blocks hold 256), then sorted by a column.
  const dir = fs.mkdtempSync(path.join(RESULTS, 'contract-'));
  const good = path.join(dir, 'model.safetensors');
  const cut = path.join(dir, 'cut.safetensors');
  fs.writeFileSync(good, safetensors([['layers.0.w', [16, 32], ramp(512)], ['layers.0.b', [32], ramp(32, 0.1)]]));
  fs.writeFileSync(cut, safetensors([['layers.1.w', [16, 32], ramp(512, 2)]], { cut: 100 }));
  await page.setInputFiles('#model-files', [good, cut]);
  await page.evaluate(() => window.quantscope.idle());
  await page.waitForSelector('#model[data-state=done]');
  await page.click('#model-methods summary');
  await page.check('#model-method-list input[value="ggml.Q4_K"]');
  await page.click('#model-rerun');
  await page.evaluate(() => window.quantscope.idle());
  await page.waitForSelector('#model[data-state=done]');
  await page.click('#model-table button[data-sort=name]');
  fs.rmSync(dir, { recursive: true, force: true });
  await page.evaluate(() => window.quantscope.idle());
  // Compare: the golden GGUF against its original with the importance matrix, one pair opened.
  const golden = path.join(sharedDir(), 'golden', 'gguf_quant');
  await page.setInputFiles('#compare-imatrix', path.join(golden, 'imatrix.gguf'));
  await page.setInputFiles('#compare-original-files', path.join(golden, 'original', 'model.safetensors'));
  await page.setInputFiles('#compare-quantized-files', path.join(golden, 'model-Q4_K_M.gguf'));
  await page.waitForSelector('#compare[data-state=done]', { timeout: 120000 });
  await page.click('#compare-table tbody tr[data-status=compared]');
  await page.waitForSelector('#compare-tensor[data-state=ready]', { timeout: 60000 });
  await page.evaluate(() => window.quantscope.idle());
  // Learn: the index, then a lesson with a control moved and an answer checked.
  await page.evaluate(() => {
    location.hash = '#learn';
  });
  await page.waitForSelector('.learn-index[data-lesson=index]');
  await page.evaluate(() => {
    location.hash = '#learn/scale-and-zero-point';
  });
  await page.waitForSelector('article.lesson[data-state=ready] .why[data-derivation-steps]');
  await page.selectOption('[data-control=bits]', '3');
  await page.fill('form.try-it input[name=answer]', '1');
  await page.click('form.try-it button[type=submit]');
  await page.waitForSelector('form.try-it[data-verdict]');
  await page.evaluate(() => window.quantscope.idle());
}

/**
 * How the test calls the members that take arguments (`load` last: it replaces the demo tensor);
 * every other member the contract gives a result schema to is called without arguments (or
 * read, when it is not a function), before these.
 */
const CALLS = {
  observe: () => window.quantscope.observe('torch.HistogramObserver', { bins: 1024 }),
  addFormat: () => window.quantscope.addFormat('ggml.Q4_K', {}),
  setFormats: () => window.quantscope.setFormats([{ id: 'int', params: { bits: 5 } }, { id: 'mx', params: { nonsense: 1 } }]),
  quantize: () => window.quantscope.quantize('int', { bits: 4 }),
  panelView: async () => {
    const { viewOf } = await import('/lib/panel.js');
    return Object.values(window.quantscope.results()).map((r) => viewOf(r));
  },
  load: (bytes) => window.quantscope.load(new Uint8Array(bytes), { name: 'contract.npy' }),
};

test('CONTRACT.md documents exactly the data-* attributes the page writes', async () => {
  const page = await env.page();
  await exercise(page);
  // The sections of the contract and the part of the page each describes: a section titled
  // "… (`#id`)" the view holding #id; the other sections that name data-* attributes, the rest of
  // the page.
  const own = [];
  const rest = [];
  for (const [title, text] of Object.entries(SECTIONS)) {
    const id = /\(`(#[\w-]+)`\)$/.exec(title);
    if (id) own.push([[title], await page.$eval(id[1], (el) => `#${(el.closest('.view') || el).id}`)]);
    else if (documentedAttributes(text).size) rest.push(title);
  }
  const parts = [[rest, `body > :not(#views), #views > :not(${own.map(([, root]) => root).join(', ')})`], ...own];
  assert.ok(own.length >= 3 && rest.includes('Observer panels'), JSON.stringify(parts));
  const problems = [];
  for (const [titles, selector] of parts) {
    for (const t of titles) assert.ok(SECTIONS[t] !== undefined, `CONTRACT.md has a section "${t}"`);
    const title = titles.join(' + ');
    const documented = documentedAttributes(titles.map((t) => SECTIONS[t]).join('\n'));
    const written = new Set(await pageAttributes(page, selector));
    for (const a of written) if (!documented.has(a)) problems.push(`${title}: the page writes ${a}, the contract does not say so`);
    for (const a of documented) if (!written.has(a)) problems.push(`${title}: the contract documents ${a}, the page never wrote it`);
  }
  await page.screenshot({ path: path.join(RESULTS, 'contract-page.png'), fullPage: true });
  assert.deepEqual(problems, []);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('window.quantscope has exactly the documented members, and each result its documented schema', async () => {
  const page = await env.page();
  const exposed = await page.evaluate(() => Object.keys(window.quantscope).sort());
  assert.deepEqual(exposed, [...MEMBERS.keys()].sort(), 'window.quantscope members vs the CONTRACT.md table');
  await exercise(page);
  const problems = [];
  const plain = [...MEMBERS.keys()].filter((name) => MEMBERS.get(name).returns && !(name in CALLS));
  const calls = [
    ...plain.map((name) => [name, (n) => (typeof window.quantscope[n] === 'function' ? window.quantscope[n]() : window.quantscope[n]), name]),
    ...Object.entries(CALLS).map(([name, call]) => [name, call, name === 'load' ? [...npyBytes([1, Number.NaN, -2, Infinity, 0.5, 3], [2, 3])] : undefined]),
  ];
  for (const [name, call, arg] of calls) {
    const documented = name === 'panelView' ? { returns: { array: { name: 'PanelView' } } } : MEMBERS.get(name);
    if (!documented || !documented.returns) {
      problems.push(`${name}: the test calls it but the contract gives no result schema`);
      continue;
    }
    const value = await page.evaluate(call, arg);
    problems.push(...check(value, documented.returns, TYPES, `${name}()`));
  }
  assert.ok(plain.includes('summary') && plain.includes('model') && plain.includes('diff'), plain.join(', '));
  assert.deepEqual(problems, []);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test('the schema notation is read as documented', () => {
  const types = { T: parseSchema('{a, b?: number | null, c: [{d: "x" | "y"}], e: {<id>: T2}}'), T2: parseSchema('{f}') };
  assert.deepEqual(check({ a: 1, c: [{ d: 'x' }], e: { k: { f: 0 } } }, types.T, types), []);
  assert.deepEqual(check({ a: 1, b: 'no', c: [{ d: 'z' }], e: { k: { g: 0 } }, h: 1 }, types.T, types, 'v'), [
    'v: undocumented key h',
    'v.b: "no" is not a number',
    'v.c[0].d: "z" is not "x"',
    'v.e.k: undocumented key g',
    'v.e.k: documented key f is missing',
  ]);
});
