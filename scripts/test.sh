#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: C++ (GoogleTest via ctest, also under
# AddressSanitizer + UndefinedBehaviorSanitizer and under ThreadSanitizer), an installed-package
# host build, the fuzzer (bounded), the portable wheel in a clean virtual environment, the
# Python suite against the pip-installed package and against the sanitized extension, and a
# selective aarch64 cross build run under qemu (docs/platforms.md says why not the whole suite).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${JOBS:-$(nproc)}
# Each stage's header says how long the run has taken so far, so CI's log shows where time goes.
stage() { printf '== [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

bash scripts/setup.sh
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
# One compiler name for CMake and pip builds (scikit-build-core would pick Python's g++): ccache
# keys on it, and the pip and wheel builds then reuse build/release's objects.
export CXX=${CXX:-c++}

stage "C++ build (Release, warnings are errors)"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DONNX_LIGHT_WERROR=ON \
      -DONNX_LIGHT_BUILD_TESTS=ON >/dev/null
cmake --build build/release -j "$jobs"

stage "C++ tests"
ctest --test-dir build/release --output-on-failure -j "$jobs"

stage "selective build: the demo decoder's kernels, no Python, no BLAS (size, run, left-out kernel error)"
ONNX_LIGHT_NO_BUILD_LOCK=1 bash scripts/selective_build.sh decoder

stage "aarch64: the selective decoder build cross-compiled, run under qemu-aarch64 against ONNX Runtime"
# A bounded slice: the whole C++ suite under emulation (scripts/test_aarch64.sh) needs a cold
# cross build of every kernel and test, which does not fit CI's time on 2 cores.
bash scripts/setup.sh --aarch64
ONNX_LIGHT_NO_BUILD_LOCK=1 bash scripts/selective_build.sh --aarch64 decoder

stage "install + find_package host (examples/cpp_host)"
rm -rf build/prefix build/cpp_host
cmake --install build/release --prefix build/prefix >/dev/null
cmake -S examples/cpp_host -B build/cpp_host -G Ninja -DCMAKE_PREFIX_PATH="$root/build/prefix" >/dev/null
cmake --build build/cpp_host -j "$jobs"
build/cpp_host/cpp_host tests/data/small_model.onnx

stage "the shared library exports only the public API; pkg-config host"
if nm -D --defined-only build/prefix/lib/libonnx_light_runtime.so | c++filt | grep -E ' (fmt|absl)::'; then
  echo "libonnx_light_runtime.so exports fmt/Abseil symbols (above): hidden visibility is broken" >&2
  exit 1
fi
# shellcheck disable=SC2046  # pkg-config prints several words
c++ -std=c++20 examples/cpp_host/main.cc -o build/cpp_host/cpp_host_pkgconfig -Wl,-rpath,"$root/build/prefix/lib" \
    $(PKG_CONFIG_PATH="$root/build/prefix/lib/pkgconfig" pkg-config --cflags --libs onnx_light)
build/cpp_host/cpp_host_pkgconfig tests/data/small_model.onnx >/dev/null

stage "static library (ONNX_LIGHT_BUILD_SHARED=OFF): find_package and pkg-config --static hosts"
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

stage "Python package (pip install .)"
python3 -m pip install -q --no-build-isolation \
  --config-settings=cmake.define.ONNX_LIGHT_WERROR=ON .

stage "documentation snippets: every code block of README.md and docs/ (scripts/run_doc_snippets.py)"
# Against the pip-installed package and the build/prefix install above; C++ blocks compile with ccache.
python3 scripts/run_doc_snippets.py --prefix build/prefix

stage "portable wheel (scripts/build_wheels.sh) in a clean virtual environment"
# The same compile flags as build/release, and a build folder at the same depth, so ccache
# provides every runtime object: only the bindings compile, the extension links, auditwheel runs.
# The environment gets numpy only (no onnx, no build tools) and the wheel from no index.
WHEEL_CMAKE_DEFINES="ONNX_LIGHT_WERROR=ON" bash scripts/build_wheels.sh build/wheelhouse
rm -rf build/wheel-venv
python3 -m venv build/wheel-venv
build/wheel-venv/bin/python -m pip install -q numpy -c constraints.txt
build/wheel-venv/bin/python -m pip install -q --no-index build/wheelhouse/onnx_light_runtime-*.whl
build/wheel-venv/bin/python tests/wheel/smoke_test.py README.md

stage "Python tests"
(cd tests/python && python3 -m pytest -q -p no:cacheprovider .)

# Sanitizer builds compile at -O1 with line tables only (-g1): about half the compile time of
# -O2 -g, and the reports still name files and lines.
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")

stage "C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build/asan -G Ninja "${sanitizer_flags[@]}" -DONNX_LIGHT_WERROR=ON \
      -DONNX_LIGHT_SANITIZE='address;undefined' -DONNX_LIGHT_BUILD_PYTHON=ON >/dev/null
cmake --build build/asan -j "$jobs"
ctest --test-dir build/asan --output-on-failure -j "$jobs"

stage "Python tests against the AddressSanitizer + UndefinedBehaviorSanitizer extension"
# The interpreter is not instrumented, so the sanitizer runtimes are preloaded; leak checking is
# off because CPython keeps its own allocations alive until exit.
(cd tests/python &&
 LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
 ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
 PYTHONPATH="$root/build/asan/python_package" python3 -m pytest -q -p no:cacheprovider .)

stage "C++ tests under ThreadSanitizer (the test files that start threads)"
# Only the tests that run anything on more than one thread say something under TSan; building
# just those saves two thirds of the test compiles. The list follows the files' contents.
tsan_files=$(grep -l -E 'std::j?thread|ThreadPool|num_threads' tests/cpp/*.cc | xargs -n1 basename | sed 's/\.cc$//' | paste -sd'|')
cmake -S . -B build/tsan -G Ninja "${sanitizer_flags[@]}" -DONNX_LIGHT_WERROR=ON \
      -DONNX_LIGHT_SANITIZE=thread "-DONNX_LIGHT_TEST_FILES_REGEX=$tsan_files" >/dev/null
cmake --build build/tsan -j "$jobs"
ctest --test-dir build/tsan --output-on-failure -j "$jobs"

if [ -x scripts/fuzz.sh ]; then
  stage "model reader and image decoder fuzzers (bounded)"
  bash scripts/fuzz.sh 60
fi
stage "all tests passed"
