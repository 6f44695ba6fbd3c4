#!/usr/bin/env bash
# The main job: set up, install the package, and run a decode loop with events on.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CCACHE_BASEDIR="$(pwd)" CCACHE_NOHASHDIR=1
export CXX=${CXX:-c++}  # the compiler name scripts/test.sh builds with, so ccache shares objects
python3 -m pip install -q --no-build-isolation .
cd /tmp && python3 -m onnx_light.demo "$@"
