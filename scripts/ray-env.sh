#!/usr/bin/env bash
# Creates (once, and again when python/tests_ray/requirements.txt changes) the Python
# environment of the Ray test (quantscope's map= on a local Ray cluster) in target/ray-venv, from
# PyPI. The quantscope wheel itself is installed into it by scripts/test.sh after it is built.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/python-env.sh target/ray-venv python/tests_ray/requirements.txt
