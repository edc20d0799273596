#!/usr/bin/env bash
# Builds the Python package (python/) into target/python-dist and installs it into the notebook
# test environment: bundles the widget with the WebAssembly engine inlined (python/js/build.mjs,
# esbuild from npm), checks the bundle is there and of the crate's version, then builds one wheel
# with maturin (from the cached environment) holding the bundle and the native module
# `quantscope._native` (the crate with its `python` feature, release profile, CPython's stable
# ABI for 3.9+).
# Needs scripts/build-web.sh (www/pkg) and scripts/notebook-env.sh (target/notebook-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/notebook-venv
out=target/python-dist
static=python/src/quantscope/static
bash scripts/notebook-env.sh
node python/js/build.mjs

# A wheel without the widget's bundle, or with one of another version, is refused.
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' python/pyproject.toml | head -1)
for f in widget.js widget.css VERSION; do
  if [ ! -s "$static/$f" ]; then
    echo "error: the bundled widget is missing ($static/$f): run node python/js/build.mjs after scripts/build-web.sh" >&2
    exit 1
  fi
done
if [ "$(cat "$static/VERSION")" != "$version" ]; then
  echo "error: the bundled widget is version $(cat "$static/VERSION") but the package is $version: rebuild it with node python/js/build.mjs" >&2
  exit 1
fi

rm -rf "$out"
start=$SECONDS
# No network: maturin comes from the cached environment, the crates from Cargo.lock.
# maturin reads python/pyproject.toml from the folder it runs in. Its target dir is the web
# build's (target/release-builds, whose release build-time crates it reuses), not target/: cargo
# locks a target dir for a whole build, and the test script builds the native tests there
# meanwhile.
(cd python && CARGO_TARGET_DIR=../target/release-builds "../$venv/bin/maturin" build --release --locked --quiet --out "../$out") >&2
echo "maturin build: $((SECONDS - start)) s" >&2
ls "$out" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$out"/quantscope-*.whl
