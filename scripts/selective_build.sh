#!/usr/bin/env bash
# Selective builds of the runtime (docs/platforms.md, "Selective build"): writes the demo
# decoder and the demo CNN as .onnx files, builds libonnx_light_runtime.so with only their kernel
# families, without Python and BLAS, strips it and prints its size; then runs each model through
# the example host and checks that a left-out operator fails with an error naming it.
#   scripts/selective_build.sh [--aarch64] [decoder|cnn]...   (default: both)
# --aarch64 cross-compiles for 64-bit Arm (cmake/toolchains/aarch64-linux-gnu.cmake; run
# `scripts/setup.sh --aarch64` first) and runs the host under qemu-aarch64 user emulation, so the
# NEON paths the model reaches are checked against ONNX Runtime run on this machine.
# Build dirs: build/selective-<name>. Compiles go through /tmp/onnx_light_build.lock unless
# ONNX_LIGHT_NO_BUILD_LOCK=1 (scripts/test.sh, which builds everything else without it too).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
arch_args=() run=() suffix=""
if [[ ${1:-} == --aarch64 ]]; then
  shift
  arch_args=("-DCMAKE_TOOLCHAIN_FILE=$root/cmake/toolchains/aarch64-linux-gnu.cmake")
  run=(qemu-aarch64 -L /)  # libc6:arm64's loader and libraries, as scripts/test_aarch64.sh says
  suffix=-aarch64
fi
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(decoder cnn)
out=build/selective-models
mkdir -p "$out"

# The model builders need only numpy and onnx_light's pure-Python writer: load the package's
# modules without its native extension.
python3 - "$out" <<'PY'
import sys, types
from pathlib import Path
pkg = types.ModuleType("onnx_light")
pkg.__path__ = [str(Path("python/onnx_light").resolve())]
sys.modules["onnx_light"] = pkg
from onnx_light import decoder_model
from onnx_light._onnx_writer import helper
out = Path(sys.argv[1])
out.joinpath("decoder.onnx").write_bytes(decoder_model.build_decoder(layers=2).SerializeToString())
try:
    from onnx_light import cnn_model
    out.joinpath("cnn.onnx").write_bytes(cnn_model.build_cnn().SerializeToString())
except ImportError as e:  # cnn_model needs the onnx package
    print(f"cnn model skipped: {e}", file=sys.stderr)
# Hardmax: a kernel neither selective build keeps; NoSuchOp: no kernel anywhere.
for name, op in (("left_out", "Hardmax"), ("unknown", "NoSuchOp")):
    node = helper.make_node(op, ["x"], ["y"])
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", 1, [2, 3])],
                              [helper.make_tensor_value_info("y", 1, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    out.joinpath(f"{name}.onnx").write_bytes(model.SerializeToString())
PY

for name in "${models[@]}"; do
  model=$root/$out/$name.onnx
  [[ -f $model ]] || { echo "no $model" >&2; exit 1; }
  dir=build/selective-$name$suffix
  cmake -S . -B "$dir" -G Ninja "${arch_args[@]}" -DCMAKE_BUILD_TYPE=MinSizeRel -DONNX_LIGHT_BUILD_TESTS=OFF \
    -DONNX_LIGHT_BUILD_PYTHON=OFF -DONNX_LIGHT_USE_BLAS=OFF -DONNX_LIGHT_WITH_IMAGE_CODECS=OFF \
    "-DONNX_LIGHT_OPERATORS_FROM_MODELS=$model" \
    "-DCMAKE_CXX_FLAGS=-ffunction-sections -fdata-sections" \
    "-DCMAKE_SHARED_LINKER_FLAGS=-Wl,--gc-sections -Wl,--no-undefined" >/dev/null
  lock=(flock /tmp/onnx_light_build.lock)
  [[ ${ONNX_LIGHT_NO_BUILD_LOCK:-0} == 1 ]] && lock=()
  CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1 "${lock[@]}" cmake --build "$dir" -j "${JOBS:-2}" --target onnx_light_runtime onnx_light_selective_host >/dev/null
  lib=$(readlink -f "$dir"/src/libonnx_light_runtime.so)
  strip=strip
  [[ -n $suffix ]] && strip=aarch64-linux-gnu-strip
  "$strip" --strip-unneeded -o "$dir/libonnx_light_runtime.stripped.so" "$lib"
  size=$(stat -c %s "$dir/libonnx_light_runtime.stripped.so")
  printf 'selective %s%s: %d bytes stripped (%.2f MB)\n' "$name" "$suffix" "$size" "$(echo "$size / 1048576" | bc -l)"
  host=$dir/onnx_light_selective_host
  "${run[@]}" "$host" "$model" | grep -E '^output ' | tee "$dir/outputs.txt"
  # The same inputs (every float 0.5, symbolic dimensions 1) through ONNX Runtime, when installed.
  python3 - "$model" "$dir/outputs.txt" <<'PY'
import re, sys
import numpy as np
try:
    import onnxruntime as ort
except ImportError:
    sys.exit(print("ONNX Runtime not installed: outputs not compared") or 0)
sess = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
feeds = {i.name: np.full([d if isinstance(d, int) and d >= 0 else 1 for d in i.shape], 0.5, np.float32)
         for i in sess.get_inputs()}
expected = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
for line in open(sys.argv[2]):
    name, total = re.match(r"output (\S+): .* sum=(\S+)", line).groups()
    want = float(expected[name].astype(np.float64).sum())
    if abs(float(total) - want) > 1e-3 * max(1.0, abs(want)):
        sys.exit(f"output {name}: sum {total}, ONNX Runtime {want}")
print("outputs match ONNX Runtime")
PY
  # A kernel the build left out is refused by name, distinguishable from an unknown operator.
  if msg=$("${run[@]}" "$host" "$root/$out/left_out.onnx" 2>&1); then
    echo "left-out check: the Hardmax model ran in the $name build" >&2; exit 1
  fi
  grep -q "operator 'Hardmax' of domain 'ai.onnx' at opset 21 has a kernel in onnx-light (family" <<<"$msg" &&
    grep -q "left it out" <<<"$msg" || { echo "left-out check: unexpected error: $msg" >&2; exit 1; }
  if msg=$("${run[@]}" "$host" "$root/$out/unknown.onnx" 2>&1); then
    echo "unknown-op check: the NoSuchOp model ran" >&2; exit 1
  fi
  grep -q "no kernel for operator 'NoSuchOp'" <<<"$msg" ||
    { echo "unknown-op check: unexpected error: $msg" >&2; exit 1; }
  echo "left-out and unknown operator errors: ok"
done
