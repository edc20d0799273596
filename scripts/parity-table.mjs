// Renders the README's parity table from the golden test results (target/golden-summary/*.json,
// written by tests/common/mod.rs; the Python module's column from target/golden-paths/python.json,
// written by python/tests/test_golden.py) and the registry (`quantscope list --json`).
//
//   node scripts/parity-table.mjs           rewrite the table in README.md
//   node scripts/parity-table.mjs --check   fail if README.md's table is not what the tests say
import { readFileSync, writeFileSync, readdirSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const summaryDir = join(root, 'target', 'golden-summary');
const pythonSummary = join(root, 'target', 'golden-paths', 'python.json');
const START = '<!-- parity-table:start -->';
const END = '<!-- parity-table:end -->';

// QUANTSCOPE_CLI names a CLI binary already built (scripts/test.sh passes the one `cargo test`
// leaves in target/debug); otherwise `cargo run` builds it.
const registry = JSON.parse(
  process.env.QUANTSCOPE_CLI
    ? execFileSync(process.env.QUANTSCOPE_CLI, ['list', '--json'], { cwd: root, encoding: 'utf8' })
    : execFileSync('cargo', ['run', '--quiet', '--bin', 'quantscope', '--', 'list', '--json'], { cwd: root, encoding: 'utf8' }),
);
const results = new Map();
if (existsSync(summaryDir)) {
  for (const file of readdirSync(summaryDir).filter((f) => f.endsWith('.json'))) {
    const doc = JSON.parse(readFileSync(join(summaryDir, file), 'utf8'));
    for (const [id, counts] of Object.entries(doc.observers)) results.set(id, counts);
  }
}

// The same cases through the native Python module: [passed, checked] per observer or format.
const python = new Map();
if (existsSync(pythonSummary)) {
  for (const family of Object.values(JSON.parse(readFileSync(pythonSummary, 'utf8')))) {
    for (const [id, counts] of Object.entries(family.targets || {})) python.set(id, counts);
  }
}
const pythonCell = (id) => (python.has(id) ? `${python.get(id)[0]}/${python.get(id)[1]}` : '—');
const pythonFails = (id) => python.has(id) && python.get(id)[0] !== python.get(id)[1];

const escape = (text) => String(text).replaceAll('|', '\\|').replaceAll('\n', ' ');
const frameworks = { torch: 'PyTorch', quark: 'AMD Quark', horizon: 'Horizon', ort: 'ONNX Runtime', modelopt: 'NVIDIA ModelOpt', llmcompressor: 'llm-compressor', torchao: 'torchao', bnb: 'bitsandbytes', ggml: 'llama.cpp / ggml' };
/** The prefix of a family's shared-quirk tags (LC1, LC2, …). */
const tagPrefix = { torch: 'PT', quark: 'Q', horizon: 'H', ort: 'ORT', modelopt: 'MO', llmcompressor: 'LC', torchao: 'AO', bnb: 'BNB', ggml: 'GG' };

// Every row with its family: the registry's observers, then the reference cases whose id is not
// an observer — number formats of the quantizer registry (with the library version and quirks
// they declare), then framework functions checked directly.
const entries = [];
for (const spec of registry.observers) {
  const counts = results.get(spec.id);
  let cases = '—';
  let parity;
  if (counts) {
    cases = `${counts.passed}/${counts.cases}`;
    parity = counts.passed === counts.cases && !pythonFails(spec.id) ? 'exact' : 'FAILING';
  } else if (spec.corrects) {
    parity = `corrected variant of \`${spec.corrects}\` (no reference exists)`;
  } else {
    parity = 'no reference cases';
  }
  entries.push({ id: spec.id, family: spec.family, framework: `${frameworks[spec.family] ?? spec.family} ${escape(spec.framework_version)}`, cases, parity, quirks: spec.quirks, kind: 'observer' });
}
const formats = registry.quantizers?.formats ?? [];
const others = [...results].filter(([id]) => !registry.observers.some((s) => s.id === id)).sort(([a], [b]) => a.localeCompare(b));
for (const [id, counts] of others) {
  const parity = counts.passed === counts.cases && !pythonFails(id) ? 'exact' : 'FAILING';
  const family = id.split('.')[0];
  const format = formats.find((f) => f.id === id);
  const base = { id, family, cases: `${counts.passed}/${counts.cases}`, parity };
  if (format) entries.push({ ...base, framework: escape(`${format.library} ${format.version}`), quirks: format.quirks ?? [], kind: 'format' });
  else entries.push({ ...base, framework: frameworks[family] ?? family, quirks: [], kind: 'function' });
}
const familyOrder = [...new Set(entries.map((e) => e.family))];
entries.sort((a, b) => familyOrder.indexOf(a.family) - familyOrder.indexOf(b.family) || ['observer', 'format', 'function'].indexOf(a.kind) - ['observer', 'format', 'function'].indexOf(b.kind));

// A quirk several rows of a family reproduce is listed once, below the table, under a tag
// (LC1, …) that the rows name; a row spells out only its own quirks.
const shared = new Map();
for (const family of familyOrder) {
  const rows = entries.filter((e) => e.family === family && e.kind !== 'function');
  const seen = new Map();
  for (const e of rows) for (const q of e.quirks) seen.set(q, [...(seen.get(q) || []), e.id]);
  const tags = [];
  for (const [quirk, ids] of seen) {
    if (ids.length < 2) continue;
    tags.push({ tag: `${tagPrefix[family] ?? family.toUpperCase()}${tags.length + 1}`, quirk, ids, every: ids.length === rows.length });
  }
  shared.set(family, { tags, rows: rows.length, kind: rows.every((e) => e.kind === 'format') ? 'format' : 'observer' });
}

/** Tags as runs: LC1–LC8, LC10. */
function tagRuns(tags) {
  const out = [];
  for (let i = 0; i < tags.length; i++) {
    let j = i;
    while (j + 1 < tags.length && tags[j + 1].n === tags[j].n + 1) j++;
    out.push(j > i + 1 ? `${tags[i].tag}–${tags[j].tag}` : j === i + 1 ? `${tags[i].tag}, ${tags[j].tag}` : tags[i].tag);
    i = j;
  }
  return out.join(', ');
}

const rows = [
  '| observer or format | framework (version followed) | golden cases passed | through Python | parity | framework quirks reproduced (shared ones by tag, listed below) |',
  '|---|---|---|---|---|---|',
];
for (const e of entries) {
  const { tags } = shared.get(e.family);
  const mine = tags.map((t, n) => ({ ...t, n })).filter((t) => t.ids.includes(e.id));
  const own = e.quirks.filter((q) => !mine.some((t) => t.quirk === q)).map(escape);
  const cell = [mine.length ? tagRuns(mine) : '', ...own].filter(Boolean).join('; ');
  const note = e.kind === 'format' ? '(number format) ' : e.kind === 'function' ? '(function, not an observer)' : '';
  rows.push(`| \`${e.id}\` | ${e.framework} | ${e.cases} | ${pythonCell(e.id)} | ${e.parity} | ${note}${cell} |`);
}
const notes = ['', 'Quirks shared within a family, each listed once:'];
for (const family of familyOrder) {
  const { tags, rows: count, kind } = shared.get(family);
  if (!tags.length) continue;
  notes.push('', `**${frameworks[family] ?? family}** (${count} ${kind}s)`, '');
  const short = (id) => `\`${id.slice(id.indexOf('.') + 1)}\``;
  for (const t of tags) notes.push(`- **${t.tag}** (${t.every ? `every ${kind}` : t.ids.map(short).join(', ')}): ${escape(t.quirk)}`);
}
const table = `${START}\n${rows.join('\n')}\n${notes.join('\n')}\n${END}`;

const readmePath = join(root, 'README.md');
const readme = readFileSync(readmePath, 'utf8');
const start = readme.indexOf(START);
const end = readme.indexOf(END);
if (start < 0 || end < 0) {
  console.error(`README.md has no ${START} … ${END} section`);
  process.exit(1);
}
const updated = readme.slice(0, start) + table + readme.slice(end + END.length);
if (process.argv.includes('--check')) {
  if (updated !== readme) {
    console.error('README.md parity table is out of date with the golden test results: run `node scripts/parity-table.mjs` and commit.');
    process.exit(1);
  }
  console.log(`parity table: ${results.size} observers and formats with reference results (${python.size} through Python), README up to date`);
} else {
  writeFileSync(readmePath, updated);
  console.log(`parity table written: ${rows.length - 2} rows, ${[...shared.values()].reduce((n, f) => n + f.tags.length, 0)} shared quirks listed once`);
}
