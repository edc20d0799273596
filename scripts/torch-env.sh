#!/usr/bin/env bash
# Creates (once, and again when python/tests_torch/requirements.txt changes) the Python
# environment of the PyTorch tests (quantscope.capture) in target/torch-venv, from PyPI (about a
# minute and 5 GB). The quantscope wheel itself is installed into it by scripts/test.sh after it
# is built.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/python-env.sh target/torch-venv python/tests_torch/requirements.txt
