#!/usr/bin/env bash
# Builds the WebAssembly module for the page and the npm package:
#   cargo (release, wasm32, SIMD128 from .cargo/config.toml) → wasm-bindgen --target web into
#   www/pkg → wasm-opt from the npm `binaryen` package (never Debian's, which breaks the module).
# With --dist, also assembles the self-contained static site in dist/ (what `npm run build` does).
set -euo pipefail
cd "$(dirname "$0")/.."

dist=0
[ "${1:-}" = "--dist" ] && dist=1

wb_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $wb_version" ]; then
  echo "error: wasm-bindgen CLI $wb_version is required (Cargo.lock); run scripts/setup.sh" >&2
  exit 1
fi

cargo build --lib --release --locked --target wasm32-unknown-unknown
rm -rf www/pkg
wasm-bindgen --target web --out-dir www/pkg target/wasm32-unknown-unknown/release/quantscope.wasm

if [ -x node_modules/.bin/wasm-opt ]; then
  before=$(stat -c %s www/pkg/quantscope_bg.wasm)
  node_modules/.bin/wasm-opt -O3 \
    --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    www/pkg/quantscope_bg.wasm -o www/pkg/quantscope_bg.wasm.opt
  mv www/pkg/quantscope_bg.wasm.opt www/pkg/quantscope_bg.wasm
  echo "wasm-opt: $before → $(stat -c %s www/pkg/quantscope_bg.wasm) bytes" >&2
else
  echo "warning: node_modules/.bin/wasm-opt missing (npm ci installs binaryen); skipping wasm-opt" >&2
fi
rm -f www/pkg/.gitignore www/pkg/package.json

if [ "$dist" = 1 ]; then
  rm -rf dist
  mkdir -p dist
  cp -r www/index.html www/style.css www/app.js www/worker.js www/lib www/ui www/demo www/pkg dist/
  cp www/CONTRACT.md dist/
  touch dist/.nojekyll
  echo "static site in dist/ ($(du -sh dist | cut -f1)); serve it with: node e2e/serve.mjs dist" >&2
fi
