// Shared set-up of the notebook tests: the Python environment made by scripts/notebook-env.sh
// (with the built wheel installed by scripts/build-python.sh), notebook servers started on
// 127.0.0.1 with throw-away configuration folders, headless Chromium, and the golden torch cases.
import { chromium } from 'playwright-core';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ROOT, RESULTS, CHROMIUM, sharedDir } from './helpers.mjs';

export { ROOT };

export const VENV = process.env.QUANTSCOPE_NOTEBOOK_VENV || path.join(ROOT, 'target', 'notebook-venv');
export const DIST = path.join(ROOT, 'target', 'python-dist');
export const TORCH = path.join(sharedDir(), 'golden', 'torch');

/** A program of the notebook environment (jupyter, marimo, python, pip). */
export function venvBin(name) {
  return path.join(VENV, 'bin', name);
}

/** Skip reason when the environment or the built package is missing (run scripts/test.sh). */
export function missingEnvironment() {
  if (!fs.existsSync(venvBin('python'))) return `${VENV} is missing: run scripts/build-python.sh`;
  if (!fs.existsSync(DIST) || !fs.readdirSync(DIST).some((f) => f.endsWith('.whl'))) return `no wheel in ${DIST}: run scripts/build-python.sh`;
  return null;
}

/** A golden torch case by id. */
export function goldenCase(id) {
  const cases = JSON.parse(fs.readFileSync(path.join(TORCH, 'cases.json'), 'utf8')).cases;
  const c = cases.find((x) => x.id === id);
  if (!c) throw new Error(`no golden case ${id}`);
  return c;
}

/** |got − want| ≤ atol + rtol·|want|, the golden tolerance rule. */
export function within(got, want, { rtol = 0, atol = 0 } = {}) {
  return Math.abs(Number(got) - want) <= atol + rtol * Math.abs(want);
}

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * A scratch project with the npm package installed as a user gets it: `npm pack`, then an
 * offline `npm install` of the tarball. Returns the project folder.
 */
export function packedProject(prefix) {
  const dir = scratch(prefix);
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }))[0];
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--offline', path.join(dir, packed.filename)], { cwd: dir, stdio: 'ignore' });
  return dir;
}

/** A fresh scratch folder under the OS temp dir. */
export function scratch(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `quantscope-${prefix}-`));
}

/**
 * Start `command args` (a server) and wait until `url` answers 200. Its output is kept in
 * `log()` for failure messages; `stop()` ends it (and only it).
 */
export async function startServer(command, args, { cwd, env, url, timeoutMs = 90_000 }) {
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  let exited = null;
  child.on('exit', (code) => {
    exited = code;
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited !== null) throw new Error(`${command} exited with ${exited}:\n${output}`);
    try {
      const res = await fetch(url);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      stopChild(child);
      throw new Error(`${command} did not answer ${url} within ${timeoutMs / 1000} s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    log: () => output,
    stop: () => stopChild(child),
  };
}

function stopChild(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve();
      return;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    try {
      // The server's own process group (kernels included), by its id.
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      resolve();
    }
  });
}

/** Headless Chromium (Debian's) with a fresh profile; errors of its pages are collected. */
export async function browser() {
  fs.mkdirSync(RESULTS, { recursive: true });
  const profile = scratch('chromium');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1500, height: 1100 },
    deviceScaleFactor: 1,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
  return {
    context,
    async page() {
      const page = context.pages()[0] || (await context.newPage());
      page.errors = [];
      page.on('pageerror', (e) => page.errors.push(String(e)));
      page.on('console', (m) => {
        if (m.type() === 'error') page.errors.push(m.text());
      });
      return page;
    },
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * A page of a fresh headless Chromium for test `t`. When the test ends, the browser closes, the
 * host's server stops (`stop()`) and its scratch folder `root` is removed.
 */
export async function hostPage(t, { stop, root }) {
  const chrome = await browser();
  t.after(async () => {
    await chrome.close();
    await stop();
    fs.rmSync(root, { recursive: true, force: true });
  });
  return chrome.page();
}

/** Values of `[role=region]` panel `id` inside `scope` (a locator), as the page contract has them. */
export async function panelData(scope, id) {
  // The first such panel: tests put the widget they inspect first on the page.
  return scope.locator(`[role=region][aria-label="${id}"]`).first().evaluate((el) => ({ ...el.dataset }));
}

/** How many times this page instantiated the widget's WebAssembly engine. */
export function instantiations(page, version) {
  return page.evaluate((v) => {
    const shared = globalThis[Symbol.for(`quantscope.widget.engine@${v}`)];
    return shared ? shared.instantiations : 0;
  }, version);
}

/** The crate version (= the Python package's). */
export function crateVersion() {
  const toml = fs.readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8');
  return toml.match(/^\[package\][^[]*?^version\s*=\s*"([^"]+)"/m)[1];
}

/**
 * Check one observer's `explorer.results` entry against a golden case, field by field with the
 * case's own tolerances: scale, zero point, min_val/max_val (the observer's state) and the
 * quantize–dequantize metrics. Returns a list of mismatches (empty when everything matches).
 */
export function goldenMismatches(result, c) {
  const want = c.expected;
  const tol = c.tolerance.per_field;
  const first = (v) => (Array.isArray(v) ? v[0] : v);
  const out = [];
  const check = (field, got, expected, t) => {
    if (!within(got, expected, t)) out.push(`${field}: got ${got}, golden ${expected}`);
  };
  if (!result || !result.ok) return [`no result: ${JSON.stringify(result)}`];
  check('scale', first(result.scale), want.scale[0], tol.scale);
  check('zero_point', first(result.zero_point), want.zero_point[0], tol.zero_point);
  check('min_val', first(result.min_val), want.min_val[0], tol.min_val);
  check('max_val', first(result.max_val), want.max_val[0], tol.max_val);
  for (const k of ['mse', 'max_abs_err', 'clipped_fraction', 'sqnr_db']) {
    if (want.qdq[k] !== undefined) check(`metrics.${k}`, result.metrics[k], want.qdq[k], tol.qdq);
  }
  return out;
}
