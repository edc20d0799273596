// The npm package's TypeScript types cannot drift: `tsc --noEmit` (strict) type-checks the
// hand-written signatures (www/lib/index.d.ts) and a usage file (e2e/fixtures/types/usage.ts)
// against the types generated from the Rust types into www/pkg/quantscope.d.ts. A generated
// type that changes shape (a new parameter kind, an optional value that becomes undefined
// instead of null, a type name that is referenced but not generated) fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ROOT } from './helpers.mjs';

const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

test('index.d.ts and a usage file type-check against the generated quantscope.d.ts', { skip: fs.existsSync(TSC) ? false : 'typescript is not installed (npm ci)' }, () => {
  assert.ok(fs.existsSync(path.join(ROOT, 'www', 'pkg', 'quantscope.d.ts')), 'www/pkg is built (scripts/build-web.sh)');
  const run = spawnSync(process.execPath, [TSC, '--pretty', 'false', '-p', path.join(ROOT, 'e2e', 'fixtures', 'types', 'tsconfig.json')], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(run.status, 0, `tsc --noEmit:\n${run.stdout}${run.stderr}`);
});
