#!/usr/bin/env bash
# Starts the explorer: installs what is missing (scripts/setup.sh), builds the WebAssembly module
# (scripts/build-web.sh) and serves www/ on 127.0.0.1 with a small static server (e2e/serve.mjs).
# PORT (default 8080) and HOST (default 127.0.0.1) can be set in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
QUANTSCOPE_SKIP_BROWSER=1 bash scripts/setup.sh
bash scripts/build-web.sh
port="${PORT:-8080}"
host="${HOST:-127.0.0.1}"
echo "Serving the quantscope explorer from www/ (Ctrl-C to stop)"
exec node e2e/serve.mjs www "$port" "$host"
