"""The tensorops operators (Unique, Compress, ReverseSequence, EyeLike, Det, Shrink, ThresholdedRelu,
Celu, the random
generators, training-mode Dropout) in onnx-light and ONNX Runtime, one process, same threads.

    python benchmarks/bench_tensorops.py [--threads 1] [--repeat 50]

Prints a Markdown table: median time per run (ms) and ours / ORT (below 1 is faster).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(__file__))
from bench_vs_ort import compare  # noqa: E402


def one_node(op, feeds, attrs=None, n_outputs=1, opset=22, domain_opsets=None):
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in feeds.items()]
    outs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op, list(feeds), outs, **(attrs or {}))
    graph = helper.make_graph([node], op, inputs, [helper.make_value_info(o, helper.make_empty_tensor_value_info(o).type)
                                                   for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def cases():
    # The random operators run at opset 21: ORT registers them only up to their version 1/15/7
    # schemas, not the bfloat16 version 22.
    rng = np.random.default_rng(0)
    ints = rng.integers(0, 1000, size=1_000_000).astype(np.int64)
    floats = rng.standard_normal((512, 1024)).astype(np.float32)
    yield "Unique int64 1M (1000 distinct), 4 outputs", one_node("Unique", {"x": ints}, n_outputs=4), {"x": ints}
    rows = rng.integers(0, 4, size=(20000, 8)).astype(np.float32)
    yield "Unique float32 axis=0 [20000, 8]", one_node("Unique", {"x": rows}, {"axis": 0}, 4), {"x": rows}
    cond = rng.random(512) > 0.5
    yield "Compress float32 [512, 1024] axis=0", one_node("Compress", {"x": floats, "c": cond}, {"axis": 0}), {"x": floats, "c": cond}
    seq = rng.standard_normal((64, 32, 512)).astype(np.float32)
    lens = rng.integers(0, 65, size=32).astype(np.int64)
    yield "ReverseSequence float32 [64, 32, 512]", one_node("ReverseSequence", {"x": seq, "l": lens}), {"x": seq, "l": lens}
    yield "EyeLike float32 [512, 1024]", one_node("EyeLike", {"x": floats}, {"k": 3}), {"x": floats}
    mats = rng.standard_normal((4096, 8, 8)).astype(np.float32)
    yield "Det float32 [4096, 8, 8]", one_node("Det", {"x": mats}), {"x": mats}
    yield "Shrink float32 [512, 1024]", one_node("Shrink", {"x": floats}, {"lambd": 0.5, "bias": 0.1}), {"x": floats}
    yield "ThresholdedRelu float32 [512, 1024]", one_node("ThresholdedRelu", {"x": floats}), {"x": floats}
    yield "Celu float32 [512, 1024]", one_node("Celu", {"x": floats}), {"x": floats}
    yield "RandomUniformLike float32 [512, 1024]", one_node("RandomUniformLike", {"x": floats}, {"seed": 1.0}, opset=21), {"x": floats}
    yield "RandomNormalLike float32 [512, 1024]", one_node("RandomNormalLike", {"x": floats}, {"seed": 1.0}, opset=21), {"x": floats}
    probs = rng.random((512, 1024)).astype(np.float32)
    yield "Bernoulli float32 [512, 1024]", one_node("Bernoulli", {"x": probs}, {"seed": 1.0}, opset=21), {"x": probs}
    logits = rng.standard_normal((64, 1000)).astype(np.float32)
    yield "Multinomial [64, 1000] x 100", one_node("Multinomial", {"x": logits}, {"sample_size": 100, "seed": 1.0}, opset=21), {"x": logits}
    feeds = {"x": floats, "r": np.array(0.3, np.float32), "t": np.array(True)}
    yield "Dropout training float32 [512, 1024]", one_node("Dropout", feeds, {"seed": 1}, 2), feeds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    print(f"| case (threads={args.threads}) | ours ms | ORT ms | ours/ORT |")
    print("|---|---|---|---|")
    for name, model, feeds in cases():
        try:
            ours, theirs = compare(model, feeds, args.threads, args.repeat)
        except Exception as exc:  # an operator ORT lacks or refuses is reported, not fatal
            print(f"| {name} | - | - | {type(exc).__name__}: {str(exc)[:60]} |")
            continue
        print(f"| {name} | {ours * 1e3:.3f} | {theirs * 1e3:.3f} | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
