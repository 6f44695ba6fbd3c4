"""One elementwise, activation or normalisation node in onnx-light and ONNX Runtime, one process,
same thread count, interleaved rounds.

    python benchmarks/bench_elementwise.py [--threads 1] [--repeat 60] [--rounds 5] [--filter Pow]

Prints a Markdown table: the median time per run (ms) of both runtimes over all rounds, ours / ORT
from those medians (below 1 is faster), the range of the per-round ratios, and the kernel path
that ran (kernel usage). Constant operands (Pow's exponent, bias vectors, scales) are
initializers, as exporters emit them. Run by hand; never part of the tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from bench_vs_ort import ort_session, sample_times  # noqa: E402

import onnx_light.runtime as runtime  # noqa: E402

F32, F16 = np.float32, np.float16


def one_node(op, inputs, constants=None, attrs=None, opset=23):
    """`inputs`: name -> array fed at run time; `constants`: name -> array stored as initializer."""
    constants = constants or {}
    value_infos = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                   for n, a in inputs.items()]
    names = list(inputs) + list(constants)
    node = helper.make_node(op, names, ["y"], **(attrs or {}))
    out = helper.make_value_info("y", helper.make_empty_tensor_value_info("y").type)
    graph = helper.make_graph([node], op, value_infos, [out],
                              initializer=[numpy_helper.from_array(a, n) for n, a in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def cases():
    rng = np.random.default_rng(0)

    def normal(shape, dtype):
        return rng.standard_normal(shape).astype(dtype)

    gpt = (1, 128, 1024)  # GPT-2 d=256's MLP activation at 128 tokens
    img = (1, 64, 112, 112)  # resnet18's first Relu
    for dtype, tag in ((F32, "float32"), (F16, "float16")):
        x = np.abs(normal(gpt, dtype)) + dtype(0.5)
        for e in (3.0, 2.0, 0.5, -1.0, 1.7):
            yield (f"Pow(x, {e:g}) {tag} {list(gpt)}", one_node("Pow", {"x": x}, {"e": np.array(e, dtype)}),
                   {"x": x})
    for dtype, tag in ((F32, "float32"), (F16, "float16")):
        x = normal(img, dtype)
        for op, attrs in (("Relu", {}), ("LeakyRelu", {"alpha": 0.1}), ("Sigmoid", {}), ("Tanh", {}),
                          ("HardSigmoid", {}), ("HardSwish", {}), ("Gelu", {}),
                          ("Gelu", {"approximate": "tanh"}), ("Erf", {}), ("Exp", {})):
            label = op + ("(tanh)" if attrs.get("approximate") == "tanh" else "")
            yield f"{label} {tag} {list(img)}", one_node(op, {"x": x}, attrs=attrs), {"x": x}
        lo, hi = np.array(0, dtype), np.array(6, dtype)
        yield f"Clip(0, 6) {tag} {list(img)}", one_node("Clip", {"x": x}, {"lo": lo, "hi": hi}), {"x": x}
    for dtype, tag in ((F32, "float32"), (F16, "float16")):
        a, b = normal(img, dtype), normal(img, dtype)
        yield f"Add same-shape {tag} {list(img)}", one_node("Add", {"a": a, "b": b}), {"a": a, "b": b}
        yield f"Mul scalar {tag} {list(img)}", one_node("Mul", {"a": a}, {"s": np.array(0.5, dtype)}), {"a": a}
        c = normal((64, 1, 1), dtype)
        yield f"Mul per-channel [64,1,1] {tag} {list(img)}", one_node("Mul", {"a": a}, {"c": c}), {"a": a}
        t = normal((4, 128, 768), dtype)
        bias = normal((768,), dtype)
        yield f"Add bias [768] {tag} [4, 128, 768]", one_node("Add", {"t": t}, {"bias": bias}), {"t": t}
        col = normal((4, 128, 1), dtype)
        yield f"Div column [4,128,1] {tag} [4, 128, 768]", one_node("Div", {"t": t, "c": col}), {"t": t, "c": col}
        yield f"Sub same-shape {tag} [4, 128, 768]", one_node("Sub", {"t": t, "u": t.copy()}), {"t": t, "u": t.copy()}
    for dtype, tag in ((F32, "float32"), (F16, "float16")):
        for shape, axis in (((1, 4, 128, 128), -1), ((1, 4, 1, 128), -1), ((8, 12, 1, 512), -1),
                            ((1, 128, 64, 64), 1)):
            s = normal(shape, dtype)
            yield (f"Softmax axis={axis} {tag} {list(shape)}", one_node("Softmax", {"x": s}, attrs={"axis": axis}),
                   {"x": s})
        for shape in ((1, 128, 256), (4, 128, 768)):
            x = normal(shape, dtype)
            scale, bias = normal(shape[-1:], dtype), normal(shape[-1:], dtype)
            yield (f"LayerNormalization {tag} {list(shape)}",
                   one_node("LayerNormalization", {"x": x}, {"scale": scale, "bias": bias}), {"x": x})
            yield (f"RMSNormalization {tag} {list(shape)}",
                   one_node("RMSNormalization", {"x": x}, {"scale": scale}), {"x": x})


def kernel_path(model, feeds):
    options = runtime.RuntimeSessionOptions(num_threads=1)
    session = runtime.RuntimeSession(model, options)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    session.run(ctx, feeds)
    return ", ".join(sorted(ctx.get_kernel_usage()))


def measure(model, feeds, threads, repeat, rounds):
    ours = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(num_threads=threads))
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    theirs = ort_session(model, threads)
    block = max(1, repeat // rounds)
    all_ours, all_theirs, ratios = [], [], []
    for _ in range(rounds):
        round_ours, round_theirs = [], []
        for fn, samples in ((lambda: ours.run(ctx, feeds), round_ours),
                            (lambda: theirs.run(None, feeds), round_theirs)):
            time.sleep(0.02)
            samples.extend(sample_times(fn, block, warmup=5))
        ratios.append(statistics.median(round_ours) / statistics.median(round_theirs))
        all_ours += round_ours
        all_theirs += round_theirs
    return statistics.median(all_ours), statistics.median(all_theirs), min(ratios), max(ratios)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--filter", default="", help="only cases whose name contains this text")
    args = parser.parse_args()
    print(f"| case (threads={args.threads}) | ours ms | ORT ms | ours/ORT | per-round range | path |")
    print("|---|---:|---:|---:|---|---|")
    for name, model, feeds in cases():
        if args.filter not in name:
            continue
        try:
            ours, theirs, low, high = measure(model, feeds, args.threads, args.repeat, args.rounds)
        except Exception as exc:  # an operator or type ORT lacks is reported, not fatal
            print(f"| {name} | - | - | - | {type(exc).__name__}: {str(exc)[:70]} | |", flush=True)
            continue
        path = kernel_path(model, feeds)
        print(f"| {name} | {ours * 1e3:.3f} | {theirs * 1e3:.3f} | {ours / theirs:.2f} | {low:.2f}-{high:.2f} "
              f"| {path} |", flush=True)


if __name__ == "__main__":
    main()
