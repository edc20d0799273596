#!/usr/bin/env bash
# Starts the explorer. Until the page exists, prints the CLI report of the built-in demo tensor.
set -euo pipefail
cd "$(dirname "$0")/.."
QUANTSCOPE_SKIP_BROWSER=1 bash scripts/setup.sh
cargo run --release --quiet -- --help
