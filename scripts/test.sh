#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: C++ (GoogleTest via ctest, also under
# AddressSanitizer + UndefinedBehaviorSanitizer and under ThreadSanitizer), an installed-package
# host build, the fuzzer (bounded) and the Python suite against the pip-installed package and
# against the sanitized extension.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${JOBS:-$(nproc)}

bash scripts/setup.sh
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1

echo "== C++ build (Release, warnings are errors)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DONNX_LIGHT_WERROR=ON \
      -DONNX_LIGHT_BUILD_TESTS=ON >/dev/null
cmake --build build/release -j "$jobs"

echo "== C++ tests"
ctest --test-dir build/release --output-on-failure -j "$jobs"

echo "== install + find_package host (examples/cpp_host)"
rm -rf build/prefix build/cpp_host
cmake --install build/release --prefix build/prefix >/dev/null
cmake -S examples/cpp_host -B build/cpp_host -G Ninja -DCMAKE_PREFIX_PATH="$root/build/prefix" >/dev/null
cmake --build build/cpp_host -j "$jobs"
build/cpp_host/cpp_host tests/data/small_model.onnx

echo "== Python package (pip install .)"
python3 -m pip install -q --no-build-isolation \
  --config-settings=cmake.define.ONNX_LIGHT_WERROR=ON .

echo "== Python tests"
(cd tests/python && python3 -m pytest -q -p no:cacheprovider .)

echo "== C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNX_LIGHT_WERROR=ON \
      -DONNX_LIGHT_SANITIZE='address;undefined' -DONNX_LIGHT_BUILD_PYTHON=ON >/dev/null
cmake --build build/asan -j "$jobs"
ctest --test-dir build/asan --output-on-failure -j "$jobs"

echo "== Python tests against the AddressSanitizer + UndefinedBehaviorSanitizer extension"
# The interpreter is not instrumented, so the sanitizer runtimes are preloaded; leak checking is
# off because CPython keeps its own allocations alive until exit.
(cd tests/python &&
 LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
 ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
 PYTHONPATH="$root/build/asan/python_package" python3 -m pytest -q -p no:cacheprovider .)

echo "== C++ tests under ThreadSanitizer"
cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNX_LIGHT_WERROR=ON \
      -DONNX_LIGHT_SANITIZE=thread >/dev/null
cmake --build build/tsan -j "$jobs"
ctest --test-dir build/tsan --output-on-failure -j "$jobs"

if [ -x scripts/fuzz.sh ]; then
  echo "== model reader and image decoder fuzzers (bounded)"
  bash scripts/fuzz.sh 60
fi
echo "== all tests passed"
