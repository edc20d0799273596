// Shared set-up of the end-to-end tests: the static server, Chromium (Debian's, through
// playwright-core), the shared reference folder and a screenshots folder.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from './serve.mjs';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const WWW = path.join(ROOT, 'www');
export const RESULTS = path.join(ROOT, 'test-results');

/** The shared reference folder: $QUANTSCOPE_SHARED, else ../shared next to the crate. */
export function sharedDir() {
  return process.env.QUANTSCOPE_SHARED || path.resolve(ROOT, '..', 'shared');
}

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/** Start the server and a browser; returns {url, browser, page(), close()}. */
export async function start({ root = WWW } = {}) {
  fs.mkdirSync(RESULTS, { recursive: true });
  const server = await serve(root);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
  return {
    url: server.url,
    browser,
    /** A new page with console errors collected in `page.errors`. */
    async page({ width = 1440, height = 1000, hash = '' } = {}) {
      const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor: 1, acceptDownloads: true });
      const page = await context.newPage();
      page.errors = [];
      page.on('console', (m) => {
        if (m.type() === 'error') page.errors.push(m.text());
      });
      page.on('pageerror', (e) => page.errors.push(String(e)));
      await page.goto(server.url + hash);
      await page.evaluate(() => window.quantscope.ready);
      return page;
    },
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

/**
 * The golden GGUF quantization (llama.cpp's Q4_K_M, ../shared/golden/gguf_quant) with its
 * original safetensors and importance matrix: paths `{original, quantized, imatrix}`.
 */
export function ggufGolden() {
  const dir = path.join(sharedDir(), 'golden', 'gguf_quant');
  return {
    original: path.join(dir, 'original', 'model.safetensors'),
    quantized: path.join(dir, 'model-Q4_K_M.gguf'),
    imatrix: path.join(dir, 'imatrix.gguf'),
  };
}

/**
 * Give the compare view `{original, quantized, imatrix}` (paths; the importance matrix first) and
 * wait until the comparison is over; its `data-state` (done or error).
 */
export async function compareCheckpoints(page, { original, quantized, imatrix }) {
  await page.setInputFiles('#compare-imatrix', imatrix);
  await page.setInputFiles('#compare-original-files', original);
  await page.setInputFiles('#compare-quantized-files', quantized);
  await page.waitForSelector('#compare[data-state=done], #compare[data-state=error]', { timeout: 120000 });
  await page.evaluate(() => window.quantscope.idle());
  return page.getAttribute('#compare', 'data-state');
}

/**
 * Give `files` to the model view's input `input` (model-files, model-folder) and wait until the
 * ranking is over: its state and the seconds it took (the view's and the wall clock's).
 */
export async function rank(page, input, files) {
  const t0 = Date.now();
  await page.setInputFiles(`#${input}`, files);
  await page.evaluate(() => window.quantscope.idle());
  const state = await page.getAttribute('#model', 'data-state');
  return { state, wallSeconds: (Date.now() - t0) / 1000, seconds: Number(await page.getAttribute('#model', 'data-seconds')) };
}

/**
 * axe-core's violations in `context` of the page (a selector or an axe context; the whole page by
 * default), axe injected first: [{id, impact, help, targets}], every target of each.
 */
export async function axeViolations(page, context = null) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) {
    await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
  }
  return page.evaluate(async (context) => {
    const result = await window.axe.run(context ?? document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
  }, context);
}

/** An axe violation in one line: its id, help and first targets. */
export function describeViolation(v) {
  const more = v.targets.length > 3 ? ` and ${v.targets.length - 3} more` : '';
  return `${v.id}: ${v.help} (${v.targets.slice(0, 3).join(', ')}${more})`;
}

/** Share of non-white pixels of a canvas (0 = blank). */
export function inkRatio(page, selector) {
  return page.$eval(selector, (c) => {
    const ctx = c.getContext('2d');
    const { data } = ctx.getImageData(0, 0, c.width, c.height);
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i] < 245 || data[i + 1] < 245 || data[i + 2] < 245) ink++;
    }
    return ink / (c.width * c.height);
  });
}

/** A little-endian float32 .npy file of `values` with `shape`. */
export function npyBytes(values, shape = [values.length]) {
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shapeText}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const out = Buffer.alloc(10 + header.length + values.length * 4);
  out.write('\x93NUMPY', 0, 'latin1');
  out[6] = 1;
  out[7] = 0;
  out.writeUInt16LE(header.length, 8);
  out.write(header, 10, 'latin1');
  const body = Buffer.from(Float32Array.from(values).buffer);
  body.copy(out, 10 + header.length);
  return out;
}

/**
 * Load file bytes into the page like dropped files (`window.quantscope.load`): one file, or a
 * list of them as calibration batches in order. With `closePanels`, the observers' panels are
 * closed first, so the load runs no observer. The bytes travel as base64 text: Playwright
 * carries a string far faster than an array of numbers. Resolves to the tensor summary.
 */
export function loadInPage(page, files, { name, closePanels = false } = {}) {
  const list = Array.isArray(files) ? files : [files];
  return page.evaluate(async ({ texts, many, name, closePanels }) => {
    const bytes = texts.map((text) => Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0)));
    if (closePanels) await window.quantscope.setObservers([]);
    return window.quantscope.load(many ? bytes : bytes[0], { name });
  }, { texts: list.map((b) => Buffer.from(b).toString('base64')), many: Array.isArray(files), name, closePanels });
}

/** Panel attributes as an object. */
export function panelData(page, id) {
  return page.$eval(`[role=region][aria-label="${id}"]`, (el) => ({ ...el.dataset }));
}

/** Values and shape of a little-endian float32, C-order .npy file (enough for the fixtures). */
export function readNpyF32(file) {
  const buf = fs.readFileSync(file);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  if (!header.includes("'<f4'") || header.includes("'fortran_order': True")) throw new Error(`${file}: not a C-order <f4 .npy`);
  const shape = header
    .match(/'shape': \(([^)]*)\)/)[1]
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
  const start = 10 + headerLen;
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + start, buf.byteOffset + buf.length));
  return { shape, data };
}

/** The CLI binary `cargo test` leaves in target/debug (the `test` profile, optimised). */
const CLI = path.join(ROOT, 'target', 'debug', 'quantscope');

/** The newest modification time under `dir` (files ending in `ext`). */
function newest(dir, ext) {
  let t = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(p, ext));
    else if (e.name.endsWith(ext)) t = Math.max(t, fs.statSync(p).mtimeMs);
  }
  return t;
}

/**
 * Run the CLI in `cwd`; its stdout. It is built first when missing or older than the sources,
 * with the `test` profile (optimised), the binary `cargo test` leaves in target/debug.
 */
export function cli(args, cwd) {
  if (!fs.existsSync(CLI) || fs.statSync(CLI).mtimeMs < newest(path.join(ROOT, 'src'), '.rs')) {
    execFileSync('cargo', ['build', '--quiet', '--locked', '--profile', 'test', '--bin', 'quantscope'], { cwd: ROOT, stdio: 'inherit' });
  }
  return execFileSync(CLI, args, { cwd, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
}
