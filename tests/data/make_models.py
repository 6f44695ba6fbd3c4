#!/usr/bin/env python3
"""Regenerates the small real ONNX models the C++ model-loader tests read.

Run from anywhere: python3 tests/data/make_models.py (needs the `onnx` and `numpy` packages).
Writes small_model.onnx (inline initializers, a subgraph, a local function) and
external_model.onnx with its data in external_model.bin.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def make_small_model() -> onnx.ModelProto:
    weight = numpy_helper.from_array(np.arange(9, dtype=np.float32).reshape(3, 3), "weight")
    bias = helper.make_tensor("bias", TensorProto.FLOAT, [3], [0.5, -1.0, 2.0])  # float_data
    steps = helper.make_tensor("steps", TensorProto.INT64, [2], [7, -3])  # int64_data
    half = helper.make_tensor("half", TensorProto.FLOAT16, [2], [1.5, -2.0])  # int32_data bits
    then_graph = helper.make_graph(
        [helper.make_node("Identity", ["y"], ["then_out"])], "then_branch", [],
        [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, ["N", 3])])
    else_graph = helper.make_graph(
        [helper.make_node("Neg", ["y"], ["else_out"])], "else_branch", [],
        [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, ["N", 3])])
    nodes = [
        helper.make_node("MatMul", ["x", "weight"], ["xw"], name="matmul"),
        helper.make_node("Add", ["xw", "bias"], ["y"], name="add"),
        helper.make_node("Constant", [], ["flag"], name="const",
                         value=helper.make_tensor("flag_value", TensorProto.BOOL, [], [True])),
        helper.make_node("If", ["flag"], ["z"], name="branch",
                         then_branch=then_graph, else_branch=else_graph),
        helper.make_node("AddTwice", ["z", "bias"], ["out"], name="call", domain="local"),
        helper.make_node("LeakyRelu", ["out"], ["leaky"], name="leaky", alpha=0.25),
        helper.make_node("Transpose", ["leaky"], ["result"], name="transpose", perm=[1, 0]),
    ]
    function = helper.make_function(
        "local", "AddTwice", ["a", "b"], ["c"],
        [helper.make_node("Add", ["a", "b"], ["t"]), helper.make_node("Add", ["t", "b"], ["c"])],
        [helper.make_opsetid("", 18)])
    graph = helper.make_graph(
        nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
        [helper.make_tensor_value_info("result", TensorProto.FLOAT, [3, "N"])],
        initializer=[weight, bias, steps, half],
        value_info=[helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)],
        functions=[function], producer_name="make_models.py", ir_version=9)
    onnx.checker.check_model(model)
    return model


def make_external_model() -> onnx.ModelProto:
    weight = numpy_helper.from_array(np.arange(64, dtype=np.float32).reshape(8, 8), "weight")
    index = numpy_helper.from_array(np.arange(5, dtype=np.int64), "index")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "weight"], ["y"])], "external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], initializer=[weight, index])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                             producer_name="make_models.py", ir_version=9)


def main() -> None:
    onnx.save(make_small_model(), os.path.join(HERE, "small_model.onnx"))
    external_bin = os.path.join(HERE, "external_model.bin")
    if os.path.exists(external_bin):
        os.remove(external_bin)  # onnx appends to an existing file
    onnx.save(make_external_model(), os.path.join(HERE, "external_model.onnx"),
              save_as_external_data=True, all_tensors_to_one_file=True,
              location="external_model.bin", size_threshold=0)


if __name__ == "__main__":
    main()
