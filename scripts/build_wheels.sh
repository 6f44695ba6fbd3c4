#!/usr/bin/env bash
# Builds a portable wheel of onnx-light-runtime: one a user on another Linux distribution installs
# with pip, without a compiler or any Debian package.
#
#   bash scripts/build_wheels.sh [OUT_DIR]          (default OUT_DIR: build/wheelhouse)
#   PYTHON=python3.12 bash scripts/build_wheels.sh  (another interpreter; it needs
#                                                    scikit-build-core and pybind11 installed)
#   WHEEL_CMAKE_DEFINES="ONNX_LIGHT_WERROR=ON" ...  (extra -D settings, space separated)
#
# 1. pip builds the wheel (no build isolation: the pinned scikit-build-core and pybind11 of
#    scripts/setup.sh, nothing downloaded) with ONNX_LIGHT_STATIC_DEPS=ON, which links Abseil and
#    OpenBLAS into the extension from their static archives. The build folder is
#    build/portable-<wheel tag>, one per interpreter. libtiff is not linked or bundled: Debian's
#    loads JBIG-KIT, which is GPL-2+ (docs/dependencies.md). With ONNX_LIGHT_TIFF_AT_RUN_TIME the
#    wheel opens the host's libtiff.so.6 when a TIFF is first decoded.
# 2. auditwheel repair copies the libraries that stay shared (fmt, RE2, kissfft, the image codecs and
#    what they load) into the wheel, rewrites the extension's RPATH to find them there, and tags
#    the wheel with the oldest manylinux policy its symbol versions allow.
# 3. auditwheel show prints the result.
# The wheel is for one CPython version: pybind11 does not support the limited API (abi3), so each
# interpreter needs its own build. docs/dependencies.md lists what the wheel bundles and the licences.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
python=${PYTHON:-python3}
out=${1:-build/wheelhouse}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
# scikit-build-core would take Python's configured compiler name (g++); plain CMake builds use c++.
# Same compiler, but ccache keys on the name, so without this nothing from build/release is reused.
export CXX=${CXX:-c++}

raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
# Its own build folder (pip install . uses build/<wheel tag>): the two configurations differ, and
# sharing one folder would reconfigure and relink on every switch. Same depth, for ccache.
settings=(--config-settings=build-dir="build/portable-{wheel_tag}"
          --config-settings=cmake.define.ONNX_LIGHT_STATIC_DEPS=ON
          --config-settings=cmake.define.ONNX_LIGHT_TIFF_AT_RUN_TIME=ON)
for define in ${WHEEL_CMAKE_DEFINES:-}; do
  settings+=("--config-settings=cmake.define.${define}")
done
"$python" -m pip wheel -q --no-build-isolation --no-deps -w "$raw" "${settings[@]}" .
wheel=$(ls "$raw"/*.whl)

# auditwheel's default --plat auto picks the oldest manylinux tag the wheel qualifies for.
rm -f "$out"/onnx_light_runtime-*.whl
"$python" -m auditwheel repair -w "$out" "$wheel"
repaired=$(ls "$out"/onnx_light_runtime-*.whl)
"$python" -m auditwheel show "$repaired"
echo "build_wheels: $repaired ($(du -h "$repaired" | cut -f1))"
