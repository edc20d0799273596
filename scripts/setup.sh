#!/usr/bin/env bash
# Installs everything the build and tests need on a fresh machine, idempotently:
# the wasm32 target, wasm-bindgen-cli pinned to Cargo.lock's wasm-bindgen, npm dependencies,
# and Debian's Chromium + ChromeDriver for the browser tests, python3-venv for the notebook tests.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*" >&2; }

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  step "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

wb_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $wb_version" ]; then
  step "cargo install wasm-bindgen-cli $wb_version (about 5 minutes, once)"
  # --locked can fail on registry mirrors that lag behind the CLI's lockfile; retry unlocked.
  cargo install wasm-bindgen-cli --version "$wb_version" --locked \
    || cargo install wasm-bindgen-cli --version "$wb_version"
fi

if [ "${QUANTSCOPE_SKIP_BROWSER:-0}" != 1 ] && { ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; }; then
  step "apt-get install chromium chromium-driver"
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends chromium chromium-driver
fi

# The notebook tests make a Python virtual environment (scripts/notebook-env.sh).
if ! python3 -m venv --help >/dev/null 2>&1; then
  step "apt-get install python3 python3-venv"
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends python3 python3-venv
fi

if [ -f package-lock.json ] && { [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; }; then
  step "npm ci"
  npm ci --no-audit --no-fund
fi

# Deno for the notebook tests, from its npm package, in a scratch prefix of its own: the registry
# holds only this platform's binary, so it cannot sit in package-lock.json (npm ci would ask for
# every platform's).
deno_version=2.9.6
if [ "$(target/deno/node_modules/.bin/deno --version 2>/dev/null | head -1 | cut -d' ' -f2)" != "$deno_version" ]; then
  step "npm install deno@$deno_version into target/deno"
  mkdir -p target/deno
  npm install --prefix target/deno --no-save --no-package-lock --no-audit --no-fund "deno@$deno_version"
fi
