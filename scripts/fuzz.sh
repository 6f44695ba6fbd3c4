#!/usr/bin/env bash
# Builds the model-reader fuzzer with clang (libFuzzer + ASan + UBSan) and runs it for a bounded
# time, seeded with the models in tests/data. Usage: scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DONNX_LIGHT_BUILD_FUZZERS=ON -DONNX_LIGHT_BUILD_TESTS=OFF >/dev/null
cmake --build build/fuzz --target model_reader_fuzzer
corpus=build/fuzz/corpus
mkdir -p "$corpus"
cp tests/data/*.onnx "$corpus"/
build/fuzz/tests/fuzz/model_reader_fuzzer -max_total_time="$seconds" -rss_limit_mb=2048 \
  -print_final_stats=1 "$corpus" 2>&1 | tail -n 12
