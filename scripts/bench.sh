#!/usr/bin/env bash
# quantscope against PyTorch and numpy, measured side by side in one run (`npm run bench`).
#
# It runs in the environment of the PyTorch tests, target/torch-venv (torch==2.15.0 and
# numpy==2.4.6 from PyPI, made once by scripts/torch-env.sh), with the checkout's quantscope
# wheel installed, so that PyTorch and quantscope's Python module are timed in one process.
# PyPI's Linux torch wheel is the CUDA build and `pip install --no-deps torch` plus its
# pure-Python dependencies does not import: the shared libraries it loads on `import torch` need
# the CUDA runtime wheels (readelf -d: libtorch_cpu.so NEEDS libcudart.so.13 and libcupti.so.13;
# libtorch_python.so NEEDS libtorch_cuda.so, libcudnn.so.9 and libcufile.so.0), and the CPU-only
# wheels live outside PyPI. So the plain `pip install torch==2.15.0` (≈5 GB with the nvidia-*
# wheels, all from PyPI) it is, once; no GPU is used: CUDA_VISIBLE_DEVICES is emptied and the
# script checks torch runs on the CPU.
#
# Then it builds the release CLI, the library benchmark (benches/engine.rs), the wasm package
# (scripts/build-web.sh) and the Python wheel (scripts/build-python.sh) when the sources are
# newer than them, and runs scripts/bench/bench.py, which prints the table and writes
# target/bench.json.
# QUANTSCOPE_BENCH_REPEAT=N sets the repetitions (default 5; medians are reported);
# QUANTSCOPE_BENCH_PAGE=0 skips the page in Chromium (e2e/bench-page.mjs).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/torch-venv
bash scripts/torch-env.sh
CUDA_VISIBLE_DEVICES= "$venv/bin/python" -c 'import torch; assert not torch.cuda.is_available()' >/dev/null

cargo build --release --locked --bin quantscope
cargo bench --locked --bench engine --no-run
if [ ! -f www/pkg/quantscope_bg.wasm ] || [ -n "$(find src Cargo.toml -newer www/pkg/quantscope_bg.wasm -print -quit)" ]; then
  bash scripts/build-web.sh
fi
wheel=$(ls target/python-dist/quantscope-*.whl 2>/dev/null | head -1 || true)
if [ -z "$wheel" ] || [ -n "$(find src Cargo.toml python/src python/pyproject.toml -newer "$wheel" -not -path '*/static/*' -not -name '*.pyc' -print -quit)" ]; then
  bash scripts/build-python.sh
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall target/python-dist/quantscope-*.whl

CUDA_VISIBLE_DEVICES= "$venv/bin/python" scripts/bench/bench.py

# The LLM families' observers against llm-compressor and torchao in-process
# (target/llm-bench-venv: llmcompressor 0.14.0.1, torchao 0.18.0, the torch 2.14.0 llmcompressor
# pins and numpy 2.4.6, all from PyPI, ≈5 GB, made once); writes target/bench-llm.json.
# QUANTSCOPE_BENCH_LLM=0 skips it.
if [ "${QUANTSCOPE_BENCH_LLM:-1}" != 0 ]; then
  lvenv=target/llm-bench-venv
  if ! "$lvenv/bin/python" -c 'import llmcompressor, torchao' 2>/dev/null; then
    python3 -m venv "$lvenv"
    "$lvenv/bin/pip" install --quiet 'torch==2.14.0' 'llmcompressor==0.14.0.1' 'torchao==0.18.0' 'numpy==2.4.6'
  fi
  "$lvenv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall target/python-dist/quantscope-*.whl
  CUDA_VISIBLE_DEVICES= "$lvenv/bin/python" scripts/bench/llm_observers.py
fi

# Quantized checkpoints against gguf-py's numpy dequantization (target/bench-gguf-venv: gguf
# 0.19.0 + numpy 2.4.6, small). QUANTSCOPE_BENCH_GIB sets the generated pair's size (default 1).
gvenv=target/bench-gguf-venv
if ! "$gvenv/bin/python" -c 'import gguf, numpy' 2>/dev/null; then
  python3 -m venv "$gvenv"
  "$gvenv/bin/pip" install --quiet 'gguf==0.19.0' 'numpy==2.4.6'
fi
# A generated 2 GiB bf16 checkpoint of LLM shapes ranked by `quantscope model` (made once under
# target/bench-model; writes target/bench-model.json). QUANTSCOPE_BENCH_MODEL=0 skips it.
if [ "${QUANTSCOPE_BENCH_MODEL:-1}" != 0 ]; then
  "$gvenv/bin/python" scripts/bench/model_checkpoint.py
fi
exec "$gvenv/bin/python" scripts/bench/checkpoints.py
