#!/usr/bin/env bash
# Creates (once, and again when python/tests_torch/requirements.txt changes) the Python
# environment of the PyTorch tests (quantscope.capture) in target/torch-venv, from PyPI. The
# quantscope wheel itself is installed into it by scripts/test.sh after it is built.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/torch-venv
req=python/tests_torch/requirements.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.requirements.sha256" 2>/dev/null || true)" = "$want" ]; then
  exit 0
fi
echo "creating $venv from $req (once; about a minute and 5 GB)" >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
echo "$want" > "$venv/.requirements.sha256"
