"""A small CNN built with onnx.helper: Conv -> BatchNormalization -> Relu -> MaxPool, twice, then
GlobalAveragePool -> Flatten -> Gemm. Used by tests and benchmarks."""

from __future__ import annotations

import numpy as np


def build_cnn(channels=(3, 16, 32), classes=10, image=32, batch=None, seed=0):
    from onnx_light._optional import require_onnx

    require_onnx("onnx_light.cnn_model")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    x = "image"
    for i, (cin, cout) in enumerate(zip(channels[:-1], channels[1:])):
        w = init(f"conv{i}_w", rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(cin * 9))
        b = init(f"conv{i}_b", rng.standard_normal(cout) * 0.1)
        scale = init(f"bn{i}_scale", 1 + 0.1 * rng.standard_normal(cout))
        bias = init(f"bn{i}_bias", 0.1 * rng.standard_normal(cout))
        mean = init(f"bn{i}_mean", 0.1 * rng.standard_normal(cout))
        var = init(f"bn{i}_var", 1 + 0.1 * rng.random(cout))
        nodes += [
            helper.make_node("Conv", [x, w, b], [f"c{i}"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
            helper.make_node("BatchNormalization", [f"c{i}", scale, bias, mean, var], [f"bn{i}"], epsilon=1e-5),
            helper.make_node("Relu", [f"bn{i}"], [f"r{i}"]),
            helper.make_node("MaxPool", [f"r{i}"], [f"p{i}"], kernel_shape=[2, 2], strides=[2, 2]),
        ]
        x = f"p{i}"
    fc_w = init("fc_w", rng.standard_normal((classes, channels[-1])) / np.sqrt(channels[-1]))
    fc_b = init("fc_b", 0.1 * rng.standard_normal(classes))
    nodes += [
        helper.make_node("GlobalAveragePool", [x], ["gap"]),
        helper.make_node("Flatten", ["gap"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", fc_w, fc_b], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [batch or "batch", channels[0], image, image])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch or "batch", classes])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model
