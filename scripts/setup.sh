#!/usr/bin/env bash
# Installs every build, test and benchmark dependency from Debian and PyPI.
# Idempotent and quiet when everything is already present.
set -euo pipefail

apt_packages=(g++ cmake ninja-build ccache pkg-config libfmt-dev libabsl-dev libgtest-dev libgmock-dev
              libbenchmark-dev libopenblas-dev libdlpack-dev clang libclang-rt-14-dev)
# onnx and onnxruntime are pinned: the conformance suite's expected-failure list and the
# reference results are tied to these versions. matplotlib draws the demo's memory plot.
py_packages=(pybind11 scikit-build-core numpy pytest onnx==1.23.2 onnxruntime==1.32.0 matplotlib)

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
  name=${p%%==*}
  want=""; [ "$name" != "$p" ] && want=${p#*==}
  have=$(python3 -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name" 2>/dev/null || true)
  if [ -z "$have" ] || { [ -n "$want" ] && [ "$have" != "$want" ]; }; then py_missing+=("$p"); fi
done
if [ ${#py_missing[@]} -gt 0 ]; then
  echo "setup: installing Python packages: ${py_missing[*]}"
  python3 -m pip install -q "${py_missing[@]}"
fi
