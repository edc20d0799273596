#!/usr/bin/env bash
# Creates (once, and again when python/tests/requirements.txt changes) the Python environment of
# the notebook tests in target/notebook-venv: JupyterLab, Notebook 7, marimo, anywidget and the
# Python build tools, from PyPI (about 2 minutes). Prints nothing when it is up to date.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/python-env.sh target/notebook-venv python/tests/requirements.txt
