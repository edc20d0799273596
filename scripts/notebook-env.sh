#!/usr/bin/env bash
# Creates (once, and again when python/tests/requirements.txt changes) the Python environment of
# the notebook tests in target/notebook-venv: JupyterLab, Notebook 7, marimo, anywidget and the
# Python build tools, from PyPI. Prints nothing when the environment is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/notebook-venv
req=python/tests/requirements.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.requirements.sha256" 2>/dev/null || true)" = "$want" ]; then
  exit 0
fi
echo "creating $venv from $req (once; about 2 minutes)" >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
echo "$want" > "$venv/.requirements.sha256"
