"""Quantization operators, onnx-light runtime against ONNX Runtime in one process.

    python benchmarks/bench_quantization.py [--threads 1] [--cases quantize,dequantize,matmulinteger,conv,mlp,contrib]

Prints a Markdown table of median wall times per run (ms) and the ratio ours / ORT (below 1 is
faster). Uses the alternating-block timing of bench_vs_ort.py. The MLP (768 -> 1024 -> 768,
float32) is quantized by onnxruntime.quantization.quantize_dynamic into a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_vs_ort import compare  # noqa: E402


def model_of(nodes, inputs, initializers, opset, extra_opsets=()):
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items()]
    graph = helper.make_graph(nodes, "bench", graph_inputs, [helper.make_value_info("y", onnx.TypeProto())],
                              initializer=[numpy_helper.from_array(a, n) for n, a in initializers.items()])
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    return model


def contrib_cases(rng):
    """The com.microsoft operators of QOperator models, at the sizes of a resnet50 / BERT-base."""
    ms = [("com.microsoft", 1)]

    def binary(op, a, b, t):
        init = {"as": np.array(0.05, np.float32), "az": np.array(100, t), "bs": np.array(0.03, np.float32),
                "bz": np.array(20, t), "cs": np.array(0.07 if op == "QLinearAdd" else 0.4, np.float32),
                "cz": np.array(90, t)}
        node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"], domain="com.microsoft")
        return model_of([node], {"a": a, "b": b}, init, 17, ms), {"a": a, "b": b}

    a = rng.integers(0, 256, (1, 256, 56, 56)).astype(np.uint8)
    b = rng.integers(0, 256, (1, 256, 56, 56)).astype(np.uint8)
    yield ("QLinearAdd u8 [1,256,56,56] + same", *binary("QLinearAdd", a, b, np.uint8))
    yield ("QLinearAdd s8 [1,256,56,56] + same", *binary("QLinearAdd", a.view(np.int8), b.view(np.int8), np.int8))
    yield ("QLinearAdd u8 [128,768] + [768]", *binary("QLinearAdd", a.reshape(-1)[:128 * 768].reshape(128, 768),
                                                     b.reshape(-1)[:768].copy(), np.uint8))
    yield ("QLinearMul u8 [1,256,56,56] * same", *binary("QLinearMul", a, b, np.uint8))
    for shape, cl in (((1, 2048, 7, 7), 0), ((1, 512, 7, 7), 0), ((8, 7, 7, 2048), 1)):
        x = rng.integers(0, 256, shape).astype(np.uint8)
        init = {"xs": np.array(0.05, np.float32), "xz": np.array(100, np.uint8), "ys": np.array(0.02, np.float32),
                "yz": np.array(90, np.uint8)}
        node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                                domain="com.microsoft", channels_last=cl)
        name = f"QLinearGlobalAveragePool u8 {list(shape)}{' channels_last' if cl else ''}"
        yield name, model_of([node], {"x": x}, init, 17, ms), {"x": x}
    x = rng.integers(0, 256, (12, 128, 128)).astype(np.uint8)
    init = {"xs": np.array(0.05, np.float32), "xz": np.array(100, np.uint8), "ys": np.array(1 / 256, np.float32),
            "yz": np.array(0, np.uint8)}
    node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft", opset=13)
    yield "QLinearSoftmax u8 [12,128,128]", model_of([node], {"x": x}, init, 17, ms), {"x": x}


def quantize_cases(rng):
    x = (rng.standard_normal((1024, 4096)) * 3).astype(np.float32)  # 4M floats
    per_tensor = {"s": np.array(0.05, np.float32), "z": np.array(3, np.int8)}
    per_axis = {"s": (rng.random(4096) * 0.1 + 0.01).astype(np.float32), "z": rng.integers(-5, 5, 4096).astype(np.int8)}
    for name, params, attrs in (("per tensor", per_tensor, {}), ("per axis (last, 4096)", per_axis, {"axis": 1})):
        node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], **attrs)
        yield f"QuantizeLinear f32->int8 4M, {name}", model_of([node], {"x": x}, params, 21), {"x": x}
    per_row = {"s": (rng.random(1024) * 0.1 + 0.01).astype(np.float32),
               "z": rng.integers(120, 136, 1024).astype(np.uint8)}
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=0)
    yield "QuantizeLinear f32->uint8 4M, per axis (first, 1024)", model_of([node], {"x": x}, per_row, 21), {"x": x}


def dequantize_cases(rng):
    q = rng.integers(-128, 128, (1024, 4096)).astype(np.int8)
    per_tensor = {"s": np.array(0.05, np.float32), "z": np.array(3, np.int8)}
    per_axis = {"s": (rng.random(4096) * 0.1 + 0.01).astype(np.float32), "z": rng.integers(-5, 5, 4096).astype(np.int8)}
    for name, params, attrs in (("per tensor", per_tensor, {}), ("per axis (last, 4096)", per_axis, {"axis": 1})):
        node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], **attrs)
        yield f"DequantizeLinear int8->f32 4M, {name}", model_of([node], {"x": q}, params, 21), {"x": q}


def matmul_integer_cases(rng):
    a = rng.integers(0, 256, (128, 768)).astype(np.uint8)
    b = rng.integers(-128, 128, (768, 768)).astype(np.int8)
    node = helper.make_node("MatMulInteger", ["x", "b", "az", "bz"], ["y"])
    init = {"b": b, "az": np.array(128, np.uint8), "bz": np.array(0, np.int8)}
    yield "MatMulInteger u8 x s8 128x768x768, constant B", model_of([node], {"x": a}, init, 10), {"x": a}
    a8 = rng.integers(0, 256, (128, 768)).astype(np.uint8)
    b8 = rng.integers(0, 256, (768, 768)).astype(np.uint8)
    node = helper.make_node("MatMulInteger", ["x", "b"], ["y"])
    yield "MatMulInteger u8 x u8 128x768x768, B fed", model_of([node], {"x": a8, "b": b8}, {}, 10), {"x": a8, "b": b8}


def conv_cases(rng):
    x = rng.integers(0, 256, (1, 64, 56, 56)).astype(np.uint8)
    w = rng.integers(-64, 64, (64, 64, 3, 3)).astype(np.int8)
    init = {"xs": np.array(0.02, np.float32), "xz": np.array(128, np.uint8), "w": w, "ws": np.array(0.01, np.float32),
            "wz": np.array(0, np.int8), "ys": np.array(0.1, np.float32), "yz": np.array(120, np.uint8)}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], pads=[1, 1, 1, 1])
    yield "QLinearConv u8 x s8 64->64 3x3, 56x56, constant W", model_of([node], {"x": x}, init, 10), {"x": x}
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 1, 1, 1])
    init = {k: init[k] for k in ("w", "xz", "wz")}
    yield "ConvInteger u8 x s8 64->64 3x3, 56x56, constant W", model_of([node], {"x": x}, init, 10), {"x": x}


def mlp_cases(rng, workdir):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    w1 = (rng.standard_normal((768, 1024)) * 0.05).astype(np.float32)
    b1 = (rng.standard_normal(1024) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((1024, 768)) * 0.05).astype(np.float32)
    b2 = (rng.standard_normal(768) * 0.1).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]), helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
             helper.make_node("Add", ["h3", "b2"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 768])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 768])],
                              initializer=[numpy_helper.from_array(a, n) for n, a in
                                           (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    float_path, quant_path = os.path.join(workdir, "mlp.onnx"), os.path.join(workdir, "mlp_int8.onnx")
    onnx.save(model, float_path)
    quantize_dynamic(float_path, quant_path, weight_type=QuantType.QInt8)
    quantized = onnx.load(quant_path)
    for batch in (1, 128):
        x = rng.standard_normal((batch, 768)).astype(np.float32)
        yield f"quantize_dynamic MLP 768-1024-768, batch {batch}", quantized, {"x": x}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--cases", default="quantize,dequantize,matmulinteger,conv,mlp,contrib")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    wanted = set(args.cases.split(","))
    with tempfile.TemporaryDirectory() as workdir:
        cases = []
        if "quantize" in wanted:
            cases.extend(quantize_cases(rng))
        if "dequantize" in wanted:
            cases.extend(dequantize_cases(rng))
        if "matmulinteger" in wanted:
            cases.extend(matmul_integer_cases(rng))
        if "conv" in wanted:
            cases.extend(conv_cases(rng))
        if "mlp" in wanted:
            cases.extend(mlp_cases(rng, workdir))
        if "contrib" in wanted:
            cases.extend(contrib_cases(rng))
        print(f"threads: {args.threads}\n")
        print("| case | ours (ms) | ORT (ms) | ours / ORT |")
        print("|---|---:|---:|---:|")
        for name, model, feeds in cases:
            ours, theirs = compare(model, feeds, args.threads, args.repeat)
            print(f"| {name} | {ours * 1e3:.3f} | {theirs * 1e3:.3f} | {ours / theirs:.2f} |", flush=True)


if __name__ == "__main__":
    main()
