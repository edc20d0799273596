#!/usr/bin/env bash
# Builds the WebAssembly module for the page and the npm package, in two flavours:
#   cargo (release, wasm32, SIMD128 from .cargo/config.toml; target dir target/release-builds) →
#   wasm-bindgen --target web into www/pkg → wasm-opt from the npm `binaryen` package (never
#   Debian's, which breaks the module);
#   the same without SIMD128 (target dir target/wasm-baseline) → quantscope_bg.baseline.wasm.
#   The baseline is the fallback of engines without SIMD128 (every current browser, Node and Deno
#   has it), so it is built over 16 codegen units without link-time optimisation rather than
#   with the release profile's whole-program optimisation in one unit: a fraction of the build
#   time, the same results (e2e/wasm-flavours.test.mjs compares the two flavours).
# Neither builds in target/: cargo locks a target dir for a whole build, and the test script
# builds the native tests there meanwhile. target/release-builds is shared with the Python
# wheel's release build (scripts/build-python.sh), which reuses its build-time crates.
# Both share the wasm-bindgen glue (same exports); www/lib/wasm-flavour.js picks one at run time
# by feature detection.
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

# The two flavours build side by side (separate target dirs): each ends in a long single-threaded
# LTO step, which then overlaps the other's work. The baseline flavour: the config's SIMD128
# flag replaced (the env variable takes precedence).
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-C target-feature=-simd128" CARGO_TARGET_DIR=target/wasm-baseline \
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  cargo build --lib --release --locked --target wasm32-unknown-unknown &
baseline=$!
trap 'kill "$baseline" 2>/dev/null || true' EXIT
CARGO_TARGET_DIR=target/release-builds cargo build --lib --release --locked --target wasm32-unknown-unknown
wait "$baseline"
rm -rf www/pkg
wasm-bindgen --target web --out-dir www/pkg target/release-builds/wasm32-unknown-unknown/release/quantscope.wasm
wasm-bindgen --target web --out-dir target/wasm-baseline/pkg target/wasm-baseline/wasm32-unknown-unknown/release/quantscope.wasm
cp target/wasm-baseline/pkg/quantscope_bg.wasm www/pkg/quantscope_bg.baseline.wasm
if ! cmp -s <(grep -v '^//' www/pkg/quantscope.js) <(grep -v '^//' target/wasm-baseline/pkg/quantscope.js); then
  echo "error: the SIMD128 and baseline builds need different JS glue" >&2
  exit 1
fi

optimise() { # FILE FEATURES...
  local file=$1 before
  shift
  before=$(stat -c %s "$file")
  node_modules/.bin/wasm-opt -O3 "$@" \
    --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    "$file" -o "$file.opt"
  mv "$file.opt" "$file"
  echo "wasm-opt $file: $before → $(stat -c %s "$file") bytes" >&2
}
if [ -x node_modules/.bin/wasm-opt ]; then
  optimise www/pkg/quantscope_bg.wasm --enable-simd
  optimise www/pkg/quantscope_bg.baseline.wasm
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
