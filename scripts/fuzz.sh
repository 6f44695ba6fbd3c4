#!/usr/bin/env bash
# Builds the model-reader and image-decoder fuzzers with clang (libFuzzer + ASan + UBSan) and runs
# each for a bounded time: the reader seeded with the models in tests/data, the image decoder with
# the small images tests/fuzz/image_seeds.py writes. Usage: scripts/fuzz.sh [SECONDS [IMAGE_SECONDS]]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
image_seconds=${2:-30}
CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DONNX_LIGHT_BUILD_FUZZERS=ON -DONNX_LIGHT_BUILD_TESTS=OFF >/dev/null
cmake --build build/fuzz --target model_reader_fuzzer image_decoder_fuzzer
corpus=build/fuzz/corpus
mkdir -p "$corpus"
cp tests/data/*.onnx "$corpus"/
build/fuzz/tests/fuzz/model_reader_fuzzer -max_total_time="$seconds" -rss_limit_mb=2048 \
  -print_final_stats=1 "$corpus" 2>&1 | tail -n 12
image_corpus=build/fuzz/image-corpus
python3 tests/fuzz/image_seeds.py "$image_corpus"
build/fuzz/tests/fuzz/image_decoder_fuzzer -max_total_time="$image_seconds" -max_len=65536 -rss_limit_mb=2048 \
  -print_final_stats=1 "$image_corpus" 2>&1 | tail -n 12
