#!/usr/bin/env bash
# Cross-builds the runtime and the C++ test suite for aarch64 (Debian's g++-aarch64-linux-gnu,
# cmake/toolchains/aarch64-linux-gnu.cmake, arm64 libraries through multiarch) and runs them under
# qemu-aarch64 user emulation: the GoogleTest suite, then examples/cpp_host built against the
# installed cross build. Checks correctness only; emulated speed says nothing about Arm hardware.
#   ONNX_LIGHT_AARCH64_FILTER  gtest filter (default: the whole suite, see below)
#   ONNX_LIGHT_BUILD_LOCK      a file to flock around each compile step (shared build machines)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
jobs=${JOBS:-$(nproc)}

bash scripts/setup.sh
bash scripts/setup.sh --aarch64
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
lock=()
if [ -n "${ONNX_LIGHT_BUILD_LOCK:-}" ]; then lock=(flock "$ONNX_LIGHT_BUILD_LOCK"); fi
toolchain="$root/cmake/toolchains/aarch64-linux-gnu.cmake"

# The guest's dynamic loader, libc and every library the binaries link (Abseil, OpenBLAS, ...) come
# from Debian's arm64 packages in the multiarch directory: /lib/ld-linux-aarch64.so.1 is libc6:arm64's
# loader. Not the cross toolchain's sysroot (/usr/aarch64-linux-gnu): its loader is another glibc
# build than the multiarch libc.so.6 the binaries then load, and that pair loops for ever in the
# first pthread_create. QEMU_SET_ENV gives the library path to the emulated program only, not to
# the (x86-64) qemu process itself.
export QEMU_LD_PREFIX=/
# OpenBLAS single-threaded, as the runtime uses it anyway. ONNX_LIGHT_UNDER_QEMU lets the one test that cannot run emulated skip, saying why.
export QEMU_SET_ENV="LD_LIBRARY_PATH=/usr/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu/openblas-pthread,OPENBLAS_NUM_THREADS=1,ONNX_LIGHT_UNDER_QEMU=1"
# An x86 core name (some machines pin OpenBLAS to Haswell) means nothing to the arm64 OpenBLAS.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

echo "== aarch64 cross build (Release, warnings are errors)"
SECONDS=0
cmake -S . -B build/aarch64 -G Ninja -DCMAKE_BUILD_TYPE=Release -DONNX_LIGHT_WERROR=ON \
      -DONNX_LIGHT_BUILD_TESTS=ON -DCMAKE_TOOLCHAIN_FILE="$toolchain" >/dev/null
"${lock[@]}" cmake --build build/aarch64 -j "$jobs"
echo "aarch64 build: ${SECONDS}s"

echo "== C++ tests under qemu-aarch64"
SECONDS=0
filter=${ONNX_LIGHT_AARCH64_FILTER:-*}
# One gtest process per core (sharded), not one per test as ctest would start: every process
# start under qemu costs the translation of the test binary's start-up again.
pids=()
for ((shard = 0; shard < jobs; ++shard)); do
  GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=$shard qemu-aarch64 build/aarch64/tests/cpp/onnx_light_tests \
      --gtest_filter="$filter" --gtest_brief=1 >"build/aarch64/tests_shard$shard.log" 2>&1 &
  pids+=($!)
done
failed=0
for ((shard = 0; shard < jobs; ++shard)); do
  if ! wait "${pids[$shard]}"; then
    failed=1
    cat "build/aarch64/tests_shard$shard.log"
  fi
  grep -E '^\[  (PASSED|SKIPPED) ' "build/aarch64/tests_shard$shard.log" | sed "s/^/shard $shard: /"
done
echo "aarch64 tests: ${SECONDS}s"
if [ "$failed" -ne 0 ]; then
  echo "C++ tests failed under qemu-aarch64 (logs above)" >&2
  exit 1
fi

echo "== install + find_package host (examples/cpp_host) under qemu-aarch64"
rm -rf build/aarch64-prefix build/aarch64-cpp_host
cmake --install build/aarch64 --prefix build/aarch64-prefix >/dev/null
cmake -S examples/cpp_host -B build/aarch64-cpp_host -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
      -DCMAKE_PREFIX_PATH="$root/build/aarch64-prefix" >/dev/null
"${lock[@]}" cmake --build build/aarch64-cpp_host -j "$jobs"
readelf -h build/aarch64-cpp_host/cpp_host | grep -q AArch64 || { echo "cpp_host is not an aarch64 binary" >&2; exit 1; }
qemu-aarch64 build/aarch64-cpp_host/cpp_host tests/data/small_model.onnx
echo "== aarch64: all passed"
