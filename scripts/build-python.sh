#!/usr/bin/env bash
# Builds the Python package (python/): bundles the widget with the WebAssembly engine inlined
# (python/js/build.mjs, esbuild from npm), then the sdist and, from that sdist, the wheel into
# target/python-dist, and installs the wheel into the notebook test environment.
# Needs scripts/build-web.sh (www/pkg) and scripts/notebook-env.sh (target/notebook-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/notebook-venv
out=target/python-dist
bash scripts/notebook-env.sh
node python/js/build.mjs
rm -rf "$out"
# No isolation: hatchling comes from the cached environment, so the build needs no network.
"$venv/bin/python" -m build --no-isolation --outdir "$out" python >/dev/null
ls "$out" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$out"/quantscope-*.whl
