#!/usr/bin/env node
// Bundles the notebook widget into the Python package: one ES module with the WebAssembly engine
// inlined (python/src/quantscope/static/widget.js) and one stylesheet (widget.css) made of the
// explorer page's stylesheet scoped under `.quantscope-widget` plus the widget's own rules, so the
// widget looks like the page without touching the notebook's styles.
// Needs `scripts/build-web.sh` to have built www/pkg. Usage: node python/js/build.mjs
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..', '..');
const OUT = path.join(ROOT, 'python', 'src', 'quantscope', 'static');
const WASM = path.join(ROOT, 'www', 'pkg', 'quantscope_bg.wasm');

/** The crate's version (Cargo.toml's [package] version). */
function crateVersion() {
  const toml = fs.readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8');
  const pkg = toml.split(/^\[/m).find((s) => s.startsWith('package]'));
  const m = pkg && pkg.match(/^version\s*=\s*"([^"]+)"/m);
  if (!m) throw new Error('no [package] version in Cargo.toml');
  return m[1];
}

/** The page's stylesheet with every rule scoped under .quantscope-widget (`:root` → the widget). */
function scopedPageCss() {
  const page = fs.readFileSync(path.join(ROOT, 'www', 'style.css'), 'utf8');
  // Keyframes cannot be nested: keep them at the top level.
  const keyframes = [];
  const body = page.replace(/@keyframes[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}/g, (k) => {
    keyframes.push(k);
    return '';
  });
  return `${keyframes.join('\n')}\n.quantscope-widget {\n${body.replace(/:root\b/g, '&')}\n}\n`;
}

if (!fs.existsSync(WASM)) {
  console.error(`error: ${path.relative(ROOT, WASM)} is missing; run scripts/build-web.sh first`);
  process.exit(1);
}
const version = crateVersion();
fs.mkdirSync(OUT, { recursive: true });

await esbuild.build({
  entryPoints: [path.join(HERE, 'widget.js')],
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  loader: { '.wasm': 'base64' },
  // www/lib reads the .wasm from disk under Node only; the widget always passes the bytes.
  external: ['node:*'],
  define: { __QUANTSCOPE_VERSION__: JSON.stringify(version) },
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
  outfile: path.join(OUT, 'widget.js'),
});

const css = scopedPageCss() + fs.readFileSync(path.join(HERE, 'widget.css'), 'utf8');
const { code } = await esbuild.transform(css, { loader: 'css', target: ['chrome100', 'firefox100', 'safari15'], minify: true, logLevel: 'warning' });
fs.writeFileSync(path.join(OUT, 'widget.css'), code);
fs.writeFileSync(path.join(OUT, 'VERSION'), `${version}\n`);

for (const f of ['widget.js', 'widget.css']) {
  console.error(`${path.relative(ROOT, path.join(OUT, f))}: ${(fs.statSync(path.join(OUT, f)).size / 1024).toFixed(0)} KiB`);
}
