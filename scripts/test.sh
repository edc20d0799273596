#!/usr/bin/env bash
# Runs every test of quantscope: formatting and lints, native unit/property/golden tests, the
# wasm32 build, the web build, wasm-bindgen tests in headless Chromium, and the end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"

t() { local start=$SECONDS; printf '\n== %s\n' "$*" >&2; "$@"; printf '== %ss  %s\n' "$((SECONDS - start))" "$*" >&2; }

t bash scripts/setup.sh
# The PyTorch environment of the capture tests and the Ray environment of the map= test are
# made (once) while the Rust tests run.
torch_env_log=target/torch-env.log
ray_env_log=target/ray-env.log
mkdir -p target
bash scripts/torch-env.sh > "$torch_env_log" 2>&1 &
torch_env=$!
bash scripts/ray-env.sh > "$ray_env_log" 2>&1 &
ray_env=$!
t cargo fmt --check
t cargo clippy --all-targets --locked -- -D warnings
t cargo clippy --lib --target wasm32-unknown-unknown --locked -- -D warnings
t cargo test --locked
if [ -f scripts/build-web.sh ]; then
  t bash scripts/build-web.sh
fi
# The Python package (the native module and the notebook widgets): bundle, one wheel (maturin,
# release), its tests in the cached notebook environment (target/notebook-venv): the golden cases
# through the native module, every function against the CLI, the wheel installed into a fresh
# environment without Rust or Node (target/install-venv); the widgets' hosts are tested with the
# end-to-end tests.
if [ -f scripts/build-python.sh ]; then
  t bash scripts/build-python.sh
  t target/notebook-venv/bin/python -m pytest -q -p no:cacheprovider python/tests
  # quantscope.capture on a live PyTorch network, with the same wheel, in target/torch-venv.
  wait "$torch_env" || { cat "$torch_env_log" >&2; exit 1; }
  t target/torch-venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall target/python-dist/quantscope-*.whl
  t target/torch-venv/bin/python -m pytest -q -p no:cacheprovider python/tests_torch
  # quantscope.model/diff(map=...) on a local Ray cluster of two workers, in target/ray-venv.
  wait "$ray_env" || { cat "$ray_env_log" >&2; exit 1; }
  t target/ray-venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall target/python-dist/quantscope-*.whl
  t target/ray-venv/bin/python -m pytest -q -p no:cacheprovider python/tests_ray
fi
# The README's parity table: the golden results of the library (cargo test) and of the Python
# module (python/tests/test_golden.py).
t node scripts/parity-table.mjs --check
# Only the wasm-bindgen test files run on wasm32: the library's own unit tests are native
# (#[test] functions do not run under the wasm runner, and proptest is a native-only dependency).
wasm_tests=()
for file in tests/wasm_*.rs; do
  [ -e "$file" ] && wasm_tests+=(--test "$(basename "$file" .rs)")
done
if [ "${#wasm_tests[@]}" -gt 0 ]; then
  t cargo test --locked --target wasm32-unknown-unknown --no-default-features "${wasm_tests[@]}"
fi
if ls e2e/*.test.mjs >/dev/null 2>&1; then
  t node --test --test-reporter=spec e2e/*.test.mjs
fi
