#!/usr/bin/env bash
# Coverage-guided fuzzing of every checkpoint reader (npy, npz, safetensors, the shard index
# JSON, GGUF, ONNX, PyTorch pickles, importance matrices, quantized Hugging Face layouts, the
# memory-mapped native reader with its windowed read) and the
# codecs' decoders with cargo-fuzz, one target after the other, SECONDS each (default 60).
# Not part of CI. Needs the nightly toolchain; installs cargo-fuzz when missing.
# Crashing inputs land in fuzz/artifacts/<target>/; copy each into
# tests/fuzz_regressions/<target>/ once fixed (tests/fuzz_regressions.rs replays them).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
targets=(npy npz safetensors index_json gguf onnx torch_pickle codec imatrix hf_layout native)
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
cargo +nightly fuzz build >/dev/null
summary=()
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  log="fuzz/artifacts/$t.log"
  start=$SECONDS
  set +e
  # -jobs=1 and no -fork: one core, leaving the other to whoever shares the machine.
  cargo +nightly fuzz run "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=4096 -timeout=10 \
    -print_final_stats=1 >"$log" 2>&1
  status=$?
  set -e
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  crashes=$(find "fuzz/artifacts/$t" -type f | wc -l)
  summary+=("$t: $((SECONDS - start)) s, ${runs:-?} runs, ${cov:-cov ?}, exit $status, ${crashes} artifact(s)")
done
printf '\n== fuzz summary (%s s per target)\n' "$seconds"
printf '%s\n' "${summary[@]}"
