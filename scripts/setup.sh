#!/usr/bin/env bash
# Installs every build, test and benchmark dependency from Debian and PyPI.
# Idempotent and quiet when everything is already present.
set -euo pipefail

apt_packages=(g++ cmake ninja-build ccache pkg-config libfmt-dev libabsl-dev libgtest-dev libgmock-dev
              libbenchmark-dev libopenblas-dev libdlpack-dev clang libclang-rt-14-dev)
py_packages=(pybind11 scikit-build-core numpy pytest onnx onnxruntime matplotlib)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

py_missing=()
for p in "${py_packages[@]}"; do
  python3 -m pip show -q "$p" >/dev/null 2>&1 || py_missing+=("$p")
done
if [ ${#py_missing[@]} -gt 0 ]; then
  echo "setup: installing Python packages: ${py_missing[*]}"
  python3 -m pip install -q "${py_missing[@]}"
fi
