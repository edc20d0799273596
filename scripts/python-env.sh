#!/usr/bin/env bash
# python-env.sh VENV REQUIREMENTS: creates the Python environment VENV from the requirements
# file (PyPI), once, and again when the file changes (its sha256 is kept in the environment).
# Prints nothing when the environment is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=$1
req=$2
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.requirements.sha256" 2>/dev/null || true)" = "$want" ]; then
  exit 0
fi
echo "creating $venv from $req (once)" >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
echo "$want" > "$venv/.requirements.sha256"
