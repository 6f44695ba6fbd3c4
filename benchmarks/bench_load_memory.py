"""Peak memory of loading a model whose external data is not aligned for its element type.

    python benchmarks/bench_load_memory.py [--megabytes 200] [--modes copy,map]

(--modes default passes no load_mode, for builds that predate the option.)

Writes a chain of 1024x1024 float32 MatMuls whose weights lie in one external-data file, each
tensor one byte past a 4-byte boundary, then, in a fresh process per load mode, builds a
RuntimeSession from the path and reports the resident set before, its peak during the load (VmHWM,
reset first through /proc/self/clear_refs) and after. Copy mode reads each tensor straight into its own aligned block, so the increase should
stay near the weights' size; map mode maps the file and must copy every misaligned tensor out of
the mapping, so the file's pages and the copies are resident together.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper

CHILD = """
import sys
import onnx_light.runtime as runtime

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key))

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")   # resets the peak (VmHWM) to the current resident set
before = status("VmRSS:")
options = {} if sys.argv[2] == "default" else {"load_mode": sys.argv[2]}   # "default": builds without the option
session = runtime.RuntimeSession(sys.argv[1], runtime.RuntimeSessionOptions(num_threads=1, **options))
print(before, status("VmHWM:"), status("VmRSS:"))
"""


def write_misaligned_model(folder, megabytes, dim=1024):
    count = max(1, megabytes * (1 << 20) // (dim * dim * 4))
    rng = np.random.default_rng(0)
    nodes, inits, x, offset = [], [], "x", 1
    with open(os.path.join(folder, "weights.bin"), "wb") as data:
        data.write(b"\0")   # one pad byte: every tensor starts 1 byte past a multiple of 4
        for i in range(count):
            weights = (rng.standard_normal((dim, dim)).astype(np.float32) * 0.01).tobytes()
            data.write(weights)
            init = TensorProto(name=f"w{i}", data_type=TensorProto.FLOAT, dims=[dim, dim],
                               data_location=TensorProto.EXTERNAL)
            for key, value in (("location", "weights.bin"), ("offset", str(offset)), ("length", str(len(weights)))):
                entry = init.external_data.add()
                entry.key, entry.value = key, value
            offset += len(weights)
            inits.append(init)
            nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"h{i}"]))
            x = f"h{i}"
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    graph = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, dim])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, dim])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    path = os.path.join(folder, "model.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path, count * dim * dim * 4


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--modes", default="copy,map")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path, weight_bytes = write_misaligned_model(folder, args.megabytes)
        print(f"weights: {weight_bytes / 2**20:.0f} MiB in external data at odd offsets\n")
        print("| load_mode | RSS before (MiB) | peak RSS during load + build (MiB) | peak increase (MiB) | RSS after (MiB) |")
        print("|---|---:|---:|---:|---:|")
        for mode in args.modes.split(","):
            out = subprocess.run([sys.executable, "-c", CHILD, path, mode], capture_output=True, text=True,
                                 check=True).stdout.split()
            before, peak, after = (int(v) / 1024 for v in out)
            print(f"| {mode} | {before:.0f} | {peak:.0f} | {peak - before:.0f} | {after:.0f} |")

if __name__ == "__main__":
    main()
