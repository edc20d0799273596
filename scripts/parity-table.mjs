// Renders the README's parity table from the golden test results (target/golden-summary/*.json,
// written by tests/common/mod.rs) and the registry (`quantscope list --json`).
//
//   node scripts/parity-table.mjs           rewrite the table in README.md
//   node scripts/parity-table.mjs --check   fail if README.md's table is not what the tests say
import { readFileSync, writeFileSync, readdirSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const summaryDir = join(root, 'target', 'golden-summary');
const START = '<!-- parity-table:start -->';
const END = '<!-- parity-table:end -->';

const registry = JSON.parse(
  execFileSync('cargo', ['run', '--quiet', '--bin', 'quantscope', '--', 'list', '--json'], { cwd: root, encoding: 'utf8' }),
);
const results = new Map();
if (existsSync(summaryDir)) {
  for (const file of readdirSync(summaryDir).filter((f) => f.endsWith('.json'))) {
    const doc = JSON.parse(readFileSync(join(summaryDir, file), 'utf8'));
    for (const [id, counts] of Object.entries(doc.observers)) results.set(id, counts);
  }
}

const escape = (text) => String(text).replaceAll('|', '\\|').replaceAll('\n', ' ');
const frameworks = { torch: 'PyTorch', quark: 'AMD Quark', horizon: 'Horizon', ort: 'ONNX Runtime', modelopt: 'NVIDIA ModelOpt', llmcompressor: 'llm-compressor', torchao: 'torchao' };
const rows = [
  '| observer | framework (version followed) | golden cases passed | parity | known framework quirks reproduced |',
  '|---|---|---|---|---|',
];
for (const spec of registry.observers) {
  const counts = results.get(spec.id);
  let cases = '—';
  let parity;
  if (counts) {
    cases = `${counts.passed}/${counts.cases}`;
    parity = counts.passed === counts.cases ? 'exact' : 'FAILING';
  } else if (spec.corrects) {
    parity = `corrected variant of \`${spec.corrects}\` (no reference exists)`;
  } else {
    parity = 'no reference cases';
  }
  const quirks = spec.quirks.length ? spec.quirks.map(escape).join('; ') : '';
  rows.push(`| \`${spec.id}\` | ${frameworks[spec.family] ?? spec.family} ${escape(spec.framework_version)} | ${cases} | ${parity} | ${quirks} |`);
}
// Reference cases whose observer id is not in the registry: number formats of the quantizer
// registry (with the library version and quirks they declare), then framework functions
// checked directly.
const formats = registry.quantizers?.formats ?? [];
for (const [id, counts] of results) {
  if (registry.observers.some((s) => s.id === id)) continue;
  const parity = counts.passed === counts.cases ? 'exact' : 'FAILING';
  const format = formats.find((f) => f.id === id);
  if (format) {
    const quirks = (format.quirks ?? []).map(escape).join('; ');
    rows.push(`| \`${id}\` | ${escape(format.framework)} | ${counts.passed}/${counts.cases} | ${parity} | (number format) ${quirks} |`);
  } else {
    const family = id.split('.')[0];
    rows.push(`| \`${id}\` | ${frameworks[family] ?? family} | ${counts.passed}/${counts.cases} | ${parity} | (function, not an observer) |`);
  }
}
const table = `${START}\n${rows.join('\n')}\n${END}`;

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
  console.log(`parity table: ${results.size} observers with reference results, README up to date`);
} else {
  writeFileSync(readmePath, updated);
  console.log(`parity table written: ${rows.length - 2} rows`);
}
