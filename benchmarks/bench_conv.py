"""Convolution and pooling nodes, onnx-light runtime against ONNX Runtime, one node per model.

    python benchmarks/bench_conv.py [--threads 1] [--rounds 5] [--repeat 200] [--cases depthwise,dense,...]

Cases: depthwise (MobileNetV3 / EfficientNet depthwise and grouped shapes), dense (ResNet-18's
convolutions), pointwise (1x1), pool (MaxPool, AveragePool, GlobalAveragePool), fused (a
depthwise Conv followed by HardSwish, and a Conv + residual Add + Relu: our FusedConv node against
ORT running the unfused pair, which ORT fuses itself where it can).

Weights are initializers, as in exported models. Each row is timed in alternating blocks (ours,
then ORT, `--rounds` times) and prints the median per run in microseconds and the ratio
ours / ORT (below 1 is faster), plus the range of the per-round ratios. Run by hand, never in
tests; set OPENBLAS_CORETYPE (or not) in the environment, the script never does.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_vs_ort import ort_session, sample_times  # noqa: E402

import onnx_light.runtime as runtime  # noqa: E402

OPSET = 22


def make_model(nodes, x, inits, extra_inputs=(), opsets=(("", OPSET),)):
    graph_inputs = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)]
    graph_inputs += [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, a.shape) for n, a in extra_inputs]
    graph = helper.make_graph(nodes, "bench", graph_inputs, [helper.make_value_info("y", onnx.TypeProto())],
                              initializer=[numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = 10
    return model


def conv_case(rng, c, hw, m, k, stride=1, group=1, pad=None, name=None, bias=True):
    x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
    w = (rng.standard_normal((m, c // group, k, k)) * 0.1).astype(np.float32)
    inits = {"w": w}
    inputs = ["x", "w"]
    if bias:
        inits["b"] = rng.standard_normal(m).astype(np.float32)
        inputs.append("b")
    p = k // 2 if pad is None else pad
    attrs = {"kernel_shape": [k, k], "strides": [stride, stride], "pads": [p] * 4, "group": group}
    model = make_model([helper.make_node("Conv", inputs, ["y"], **attrs)], x, inits)
    label = name or f"Conv {k}x{k} s{stride} g{group} {c}->{m} @{hw}"
    return label, model, model, {"x": x}


def depthwise_cases(rng):
    yield conv_case(rng, 16, 112, 16, 3, 2, 16, name="dw 3x3 s2 C16 @112 (mnv3s)")
    yield conv_case(rng, 72, 56, 72, 3, 2, 72, name="dw 3x3 s2 C72 @56 (mnv3s)")
    yield conv_case(rng, 88, 28, 88, 3, 1, 88, name="dw 3x3 s1 C88 @28 (mnv3s)")
    yield conv_case(rng, 32, 112, 32, 3, 1, 32, name="dw 3x3 s1 C32 @112 (effnet)")
    yield conv_case(rng, 144, 56, 144, 3, 1, 144, name="dw 3x3 s1 C144 @56 (effnet)")
    yield conv_case(rng, 96, 28, 96, 5, 2, 96, name="dw 5x5 s2 C96 @28 (mnv3s)")
    yield conv_case(rng, 240, 14, 240, 5, 1, 240, name="dw 5x5 s1 C240 @14 (mnv3s)")
    yield conv_case(rng, 576, 7, 576, 5, 1, 576, name="dw 5x5 s1 C576 @7 (mnv3s)")
    yield conv_case(rng, 32, 56, 64, 3, 1, 32, name="dw 3x3 s1 C32x2 @56 (multiplier 2)")
    yield conv_case(rng, 128, 28, 128, 3, 1, 32, name="grouped 3x3 s1 C128 g32 @28")


def dense_cases(rng):
    yield conv_case(rng, 3, 224, 64, 7, 2, name="resnet18 stem 7x7 s2 3->64 @224")
    yield conv_case(rng, 64, 56, 64, 3, 1, name="resnet18 3x3 64->64 @56")
    yield conv_case(rng, 64, 56, 128, 3, 2, name="resnet18 3x3 s2 64->128 @56")
    yield conv_case(rng, 128, 28, 128, 3, 1, name="resnet18 3x3 128->128 @28")
    yield conv_case(rng, 256, 14, 256, 3, 1, name="resnet18 3x3 256->256 @14")
    yield conv_case(rng, 512, 7, 512, 3, 1, name="resnet18 3x3 512->512 @7")


def pointwise_cases(rng):
    yield conv_case(rng, 16, 56, 72, 1, pad=0, name="1x1 16->72 @56")
    yield conv_case(rng, 96, 14, 576, 1, pad=0, name="1x1 96->576 @14")
    yield conv_case(rng, 64, 56, 128, 1, 2, pad=0, name="1x1 s2 64->128 @56 (downsample)")


def pool_case(rng, op, c, hw, attrs, name):
    x = rng.standard_normal((1, c, hw, hw)).astype(np.float32)
    model = make_model([helper.make_node(op, ["x"], ["y"], **attrs)], x, {})
    return name, model, model, {"x": x}


def pool_cases(rng):
    s2c = {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}
    yield pool_case(rng, "MaxPool", 64, 111, s2c, "MaxPool 3x3 s2 ceil C64 @111 (squeezenet)")
    yield pool_case(rng, "MaxPool", 128, 55, s2c, "MaxPool 3x3 s2 ceil C128 @55 (squeezenet)")
    yield pool_case(rng, "MaxPool", 64, 112, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1] * 4},
                    "MaxPool 3x3 s2 p1 C64 @112 (resnet18)")
    yield pool_case(rng, "MaxPool", 64, 112, {"kernel_shape": [2, 2], "strides": [2, 2]}, "MaxPool 2x2 s2 C64 @112")
    yield pool_case(rng, "AveragePool", 64, 112, {"kernel_shape": [2, 2], "strides": [2, 2]},
                    "AveragePool 2x2 s2 C64 @112")
    yield pool_case(rng, "AveragePool", 64, 56, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1] * 4},
                    "AveragePool 3x3 s2 p1 C64 @56")
    yield pool_case(rng, "GlobalAveragePool", 512, 7, {}, "GlobalAveragePool C512 @7")
    yield pool_case(rng, "GlobalAveragePool", 1280, 7, {}, "GlobalAveragePool C1280 @7")
    yield pool_case(rng, "GlobalAveragePool", 96, 56, {}, "GlobalAveragePool C96 @56")


def fused_cases(rng):
    fused = [("", OPSET), ("ai.onnx_light.fused", 1)]
    # Depthwise conv + HardSwish (MobileNetV3).
    x = rng.standard_normal((1, 240, 14, 14)).astype(np.float32)
    inits = {"w": (rng.standard_normal((240, 1, 5, 5)) * 0.1).astype(np.float32),
             "b": rng.standard_normal(240).astype(np.float32)}
    attrs = {"kernel_shape": [5, 5], "pads": [2] * 4, "group": 240}
    ours = make_model([helper.make_node("FusedConv", ["x", "w", "b"], ["y"], domain="ai.onnx_light.fused",
                                        activation="HardSwish", usage_suffix="+hardswish", **attrs)],
                      x, inits, opsets=fused)
    ort_model = make_model([helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs),
                            helper.make_node("HardSwish", ["c"], ["y"])], x, inits)
    yield "dw 5x5 C240 @14 + HardSwish", ours, ort_model, {"x": x}
    # Dense 3x3 conv + residual + Relu (ResNet basic block tail).
    x = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
    z = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
    inits = {"w": (rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32),
             "b": rng.standard_normal(64).astype(np.float32)}
    attrs = {"kernel_shape": [3, 3], "pads": [1] * 4}
    ours = make_model([helper.make_node("FusedConv", ["x", "w", "b", "z"], ["y"], domain="ai.onnx_light.fused",
                                        activation="Relu", usage_suffix="+add+relu", **attrs)],
                      x, inits, extra_inputs=[("z", z)], opsets=fused)
    ort_model = make_model([helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs),
                            helper.make_node("Add", ["c", "z"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
                           x, inits, extra_inputs=[("z", z)])
    yield "3x3 64->64 @56 + Add + Relu", ours, ort_model, {"x": x, "z": z}


CASES = {"depthwise": depthwise_cases, "dense": dense_cases, "pointwise": pointwise_cases,
         "pool": pool_cases, "fused": fused_cases}


def compare(ours_model, ort_model, feeds, threads, repeat, rounds):
    ours = runtime.RuntimeSession(ours_model, runtime.RuntimeSessionOptions(num_threads=threads))
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(OPSET)))
    ctx.set_kernel_usage_enabled(True)
    ours.run(ctx, feeds)
    usage = ",".join(u for u in ctx.get_kernel_usage())
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(OPSET)))
    theirs = ort_session(ort_model, threads)
    block = max(1, repeat // rounds)
    ours_all, ort_all, ratios = [], [], []
    for _ in range(rounds):
        time.sleep(0.02)
        a = statistics.median(sample_times(lambda: ours.run(ctx, feeds), block, warmup=5))
        time.sleep(0.02)
        b = statistics.median(sample_times(lambda: theirs.run(None, feeds), block, warmup=5))
        ours_all.append(a)
        ort_all.append(b)
        ratios.append(a / b)
    return statistics.median(ours_all), statistics.median(ort_all), min(ratios), max(ratios), usage


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--filter", default="", help="only rows whose label contains this text")
    args = parser.parse_args()
    print(f"threads={args.threads} OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    print("| case | ours (us) | ORT (us) | ours / ORT | range over rounds | kernel |")
    print("|---|---:|---:|---:|---|---|")
    rng = np.random.default_rng(0)
    for case in args.cases.split(","):
        for label, ours_model, ort_model, feeds in CASES[case](rng):
            if args.filter and args.filter not in label:
                continue
            ours, theirs, lo, hi, usage = compare(ours_model, ort_model, feeds, args.threads, args.repeat,
                                                  args.rounds)
            print(f"| {label} | {ours * 1e6:.0f} | {theirs * 1e6:.0f} | {ours / theirs:.2f} | {lo:.2f}-{hi:.2f} "
                  f"| {usage} |", flush=True)


if __name__ == "__main__":
    main()
