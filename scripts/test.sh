#!/usr/bin/env bash
# Runs every test of quantscope: formatting and lints, native unit/property/golden tests, the
# wasm32 build, the web build, wasm-bindgen tests in headless Chromium, and the end-to-end tests.
#
# The builds run in two lanes side by side, so that one lane's single-threaded steps (rustc's
# front end on the crate, the release builds' link-time optimisation, wasm-opt) overlap the
# other's work on this 2-core machine:
# - native, in target/: clippy (native and wasm32), rustdoc, `cargo test` (its binaries and
#   target/debug/quantscope, which the Python and end-to-end tests run), the wasm-bindgen tests;
# - release, in target/release-builds (cargo holds a target directory's lock for the whole of a
#   build, so the lanes cannot share one): the web build (scripts/build-web.sh) and the Python
#   wheel (scripts/build-python.sh).
# Each lane's builds share their build-time crates (proc macros, build scripts) in their target
# directory.
# Each lane writes its log to target/test-logs/ and prints it when it ends. Then come the tests
# that need both: Python, the README's parity table, the end-to-end tests.
# Every stage prints its wall time and the CPU time of its processes (`== 264s  … [CPU 410 s]`).
set -euo pipefail
cd "$(dirname "$0")/.."
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
# Clean builds (CI's) are faster without incremental compilation's bookkeeping.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

logs=target/test-logs
mkdir -p "$logs"

# Sets child_cpu to the CPU seconds (user + system) of the processes this shell has waited for
# (`times` runs in this shell: in a command substitution it would count the subshell's).
child_cpu=0
read_child_cpu() {
  local file="$logs/.times.$BASHPID"
  times > "$file"
  child_cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$file")
  rm -f "$file"
}

t() {
  local start=$SECONDS cpu0
  read_child_cpu
  cpu0=$child_cpu
  printf '\n== %s\n' "$*" >&2
  "$@"
  read_child_cpu
  printf '== %ss  %s  [CPU %s s]\n' "$((SECONDS - start))" "$*" "$((child_cpu - cpu0))" >&2
}

# lane NAME FUNCTION: runs FUNCTION in the background, its output in target/test-logs/NAME.log.
lane() {
  local name=$1
  shift
  ( set -euo pipefail; "$@" ) > "$logs/$name.log" 2>&1 &
  lane_pids+=("$!")
  lane_names+=("$name")
}
lane_pids=()
lane_names=()
trap 'for p in "${lane_pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

# finish: waits for every lane, prints its log, and fails if any lane failed.
finish() {
  local failed=0 i
  for i in "${!lane_pids[@]}"; do
    if wait "${lane_pids[$i]}"; then
      printf '\n==== lane %s: passed\n' "${lane_names[$i]}" >&2
    else
      printf '\n==== lane %s: FAILED\n' "${lane_names[$i]}" >&2
      failed=1
    fi
    cat "$logs/${lane_names[$i]}.log" >&2
  done
  lane_pids=()
  lane_names=()
  return "$failed"
}

native_lane() {
  t cargo clippy --all-targets --locked -- -D warnings
  t cargo clippy --lib --target wasm32-unknown-unknown --locked -- -D warnings
  # The engine's documentation, private items included, with every intra-doc link resolved.
  t env RUSTDOCFLAGS="-D warnings" cargo doc --lib --no-deps --document-private-items --locked
  t cargo test --locked
  # Only the wasm-bindgen test files run on wasm32: the library's own unit tests are native
  # (#[test] functions do not run under the wasm runner, and proptest is a native-only dependency).
  local wasm_tests=() file
  for file in tests/wasm_*.rs; do
    [ -e "$file" ] && wasm_tests+=(--test "$(basename "$file" .rs)")
  done
  if [ "${#wasm_tests[@]}" -gt 0 ]; then
    t cargo test --locked --target wasm32-unknown-unknown --no-default-features "${wasm_tests[@]}"
  fi
}

release_lane() {
  t bash scripts/build-web.sh
  # The Python package (the native module and the notebook widgets): bundle, one wheel (maturin,
  # release) in target/python-dist, installed into the cached notebook environment.
  t bash scripts/build-python.sh
}

t bash scripts/setup.sh
t cargo fmt --check
# The PyTorch environment of the capture tests and the Ray environment of the map= test are
# made (once) while the builds run.
lane torch-env bash scripts/torch-env.sh
lane ray-env bash scripts/ray-env.sh
lane native native_lane
lane release release_lane
start=$SECONDS
finish
printf '== %ss  the lanes\n' "$((SECONDS - start))" >&2

# The Python tests in the cached notebook environment (target/notebook-venv): the golden cases
# through the native module, every function against the CLI, the wheel installed into a fresh
# environment without Rust or Node (target/install-venv); the widgets' hosts are tested with the
# end-to-end tests.
t target/notebook-venv/bin/python -m pytest -q -p no:cacheprovider python/tests
# quantscope.capture on a live PyTorch network, with the same wheel, in target/torch-venv.
t target/torch-venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall target/python-dist/quantscope-*.whl
t target/torch-venv/bin/python -m pytest -q -p no:cacheprovider python/tests_torch
# quantscope.model/diff(map=...) on a local Ray cluster of two workers, in target/ray-venv.
t target/ray-venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall target/python-dist/quantscope-*.whl
t target/ray-venv/bin/python -m pytest -q -p no:cacheprovider python/tests_ray
# The README's parity table: the golden results of the library (cargo test) and of the Python
# module (python/tests/test_golden.py).
t env QUANTSCOPE_CLI=target/debug/quantscope node scripts/parity-table.mjs --check
# The end-to-end tests, two files at a time (a file mostly waits on its page, its worker or a
# server, which leaves a core idle); then, one at a time, the files that start notebook servers
# (their kernels and settings live in the user's Jupyter folders) and the one that times the page.
alone=(e2e/deno.test.mjs e2e/jupyter.test.mjs e2e/marimo.test.mjs e2e/perf.test.mjs)
together=()
for file in e2e/*.test.mjs; do
  [[ " ${alone[*]} " == *" $file "* ]] || together+=("$file")
done
t node --test --test-reporter=spec --test-concurrency=2 "${together[@]}"
t node --test --test-reporter=spec --test-concurrency=1 "${alone[@]}"
