#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: C++ (GoogleTest via ctest, also under
# AddressSanitizer + UndefinedBehaviorSanitizer and under ThreadSanitizer), an installed-package
# host build, the fuzzer (bounded), the portable wheel in a clean virtual environment, the
# Python suite against the pip-installed package and against the sanitized extension, and the
# aarch64 cross build with its C++ tests under qemu (docs/platforms.md).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${JOBS:-$(nproc)}

bash scripts/setup.sh
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
# One compiler name for CMake and pip builds (scikit-build-core would pick Python's g++): ccache
# keys on it, and the pip and wheel builds then reuse build/release's objects.
export CXX=${CXX:-c++}

echo "== C++ build (Release, warnings are errors)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DONNX_LIGHT_WERROR=ON \
      -DONNX_LIGHT_BUILD_TESTS=ON >/dev/null
cmake --build build/release -j "$jobs"

echo "== C++ tests"
ctest --test-dir build/release --output-on-failure -j "$jobs"

echo "== selective build: the demo decoder's kernels, no Python, no BLAS (size, run, left-out kernel error)"
ONNX_LIGHT_NO_BUILD_LOCK=1 bash scripts/selective_build.sh decoder

echo "== install + find_package host (examples/cpp_host)"
rm -rf build/prefix build/cpp_host
cmake --install build/release --prefix build/prefix >/dev/null
cmake -S examples/cpp_host -B build/cpp_host -G Ninja -DCMAKE_PREFIX_PATH="$root/build/prefix" >/dev/null
cmake --build build/cpp_host -j "$jobs"
build/cpp_host/cpp_host tests/data/small_model.onnx

echo "== the shared library exports only the public API; pkg-config host"
if nm -D --defined-only build/prefix/lib/libonnx_light_runtime.so | c++filt | grep -E ' (fmt|absl)::'; then
  echo "libonnx_light_runtime.so exports fmt/Abseil symbols (above): hidden visibility is broken" >&2
  exit 1
fi
# shellcheck disable=SC2046  # pkg-config prints several words
c++ -std=c++20 examples/cpp_host/main.cc -o build/cpp_host/cpp_host_pkgconfig -Wl,-rpath,"$root/build/prefix/lib" \
    $(PKG_CONFIG_PATH="$root/build/prefix/lib/pkgconfig" pkg-config --cflags --libs onnx_light)
build/cpp_host/cpp_host_pkgconfig tests/data/small_model.onnx >/dev/null

echo "== static library (ONNX_LIGHT_BUILD_SHARED=OFF): find_package and pkg-config --static hosts"
# build/release's flags, so ccache provides the objects; only the archive and the hosts link.
rm -rf build/prefix-static build/cpp_host_static
cmake -S . -B build/static -G Ninja -DCMAKE_BUILD_TYPE=Release -DONNX_LIGHT_WERROR=ON \
      -DONNX_LIGHT_BUILD_SHARED=OFF -DONNX_LIGHT_BUILD_TESTS=OFF >/dev/null
cmake --build build/static -j "$jobs"
cmake --install build/static --prefix build/prefix-static >/dev/null
cmake -S examples/cpp_host -B build/cpp_host_static -G Ninja -DCMAKE_PREFIX_PATH="$root/build/prefix-static" >/dev/null
cmake --build build/cpp_host_static -j "$jobs"
build/cpp_host_static/cpp_host tests/data/small_model.onnx >/dev/null
# shellcheck disable=SC2046
c++ -std=c++20 examples/cpp_host/main.cc -o build/cpp_host_static/cpp_host_pkgconfig \
    $(PKG_CONFIG_PATH="$root/build/prefix-static/lib/pkgconfig" pkg-config --static --cflags --libs onnx_light)
build/cpp_host_static/cpp_host_pkgconfig tests/data/small_model.onnx >/dev/null

echo "== Python package (pip install .)"
python3 -m pip install -q --no-build-isolation \
  --config-settings=cmake.define.ONNX_LIGHT_WERROR=ON .

echo "== documentation snippets: every code block of README.md and docs/ (scripts/run_doc_snippets.py)"
# Against the pip-installed package and the build/prefix install above; C++ blocks compile with ccache.
python3 scripts/run_doc_snippets.py --prefix build/prefix

echo "== portable wheel (scripts/build_wheels.sh) in a clean virtual environment"
# The same compile flags as build/release, and a build folder at the same depth, so ccache
# provides every runtime object: only the bindings compile, the extension links, auditwheel runs.
# The environment gets numpy only (no onnx, no build tools) and the wheel from no index.
WHEEL_CMAKE_DEFINES="ONNX_LIGHT_WERROR=ON" bash scripts/build_wheels.sh build/wheelhouse
rm -rf build/wheel-venv
python3 -m venv build/wheel-venv
build/wheel-venv/bin/python -m pip install -q numpy -c constraints.txt
build/wheel-venv/bin/python -m pip install -q --no-index build/wheelhouse/onnx_light_runtime-*.whl
build/wheel-venv/bin/python tests/wheel/smoke_test.py README.md

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
echo "== aarch64: cross build, C++ tests and installed host under qemu (scripts/test_aarch64.sh)"
bash scripts/test_aarch64.sh

echo "== all tests passed"
