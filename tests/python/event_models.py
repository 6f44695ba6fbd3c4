"""Small models and runs with events on, shared by the trace, summary, plot and CLI tests."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

import onnx_light.runtime as runtime


def new_context(events: bool = True):
    return runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=events)


def if_model(node_name: str = "choose"):
    """y = If(cond) { then: Add(Relu(x), x) } else { Neg(x) }, after t = Identity(x)."""
    then_graph = helper.make_graph(
        [helper.make_node("Relu", ["t"], ["r"], name="then_relu"),
         helper.make_node("Add", ["r", "t"], ["then_out"], name="then_add")],
        "then", [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [2, 3])])
    else_graph = helper.make_graph(
        [helper.make_node("Neg", ["t"], ["else_out"], name="else_neg")],
        "else", [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [2, 3])])
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t"], name="copy"),
         helper.make_node("If", ["cond"], ["y"], name=node_name, then_branch=then_graph, else_branch=else_graph)],
        "if_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


def run_if_model(context=None, conds=(True, False)):
    """Runs if_model once per condition; returns the context."""
    context = context or new_context()
    session = runtime.RuntimeSession(if_model())
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    for cond in conds:
        session.run(context, {"x": x, "cond": np.array(cond)})
    return context


def concat_cache_model():
    """present = Concat(past, Relu(x)) on axis 2; y = ReduceSum(present). past <- present."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["h"], name="act"),
         helper.make_node("Concat", ["past", "h"], ["present"], axis=2, name="append"),
         helper.make_node("ReduceSum", ["present"], ["y"], keepdims=0, name="total")],
        "cache",
        [helper.make_tensor_value_info("past", TensorProto.FLOAT, [1, 2, "past", 4]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("present", TensorProto.FLOAT, [1, 2, "total", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


def run_concat_decode(steps: int = 6, capacity: int = 2, context=None):
    """A decode loop of concat_cache_model through PersistentValueState; returns (context, state)."""
    context = context or new_context()
    declared = runtime.with_persistent_bindings(concat_cache_model(), {"past": "present"})
    state = runtime.PersistentValueState(
        declared, initial={"past": np.zeros((1, 2, 0, 4), np.float32)},
        options=runtime.RuntimeSessionOptions(persistent_tensor_initial_capacity=capacity,
                                              persistent_tensor_reserved_rows=0))  # geometric growth
    rng = np.random.default_rng(0)
    for _ in range(steps):
        state.run(context, {"x": rng.standard_normal((1, 2, 1, 4)).astype(np.float32)})
    return context, state


def has_kernels(*ops: str) -> bool:
    available = {op for domain, op, *_ in runtime.supported_operators() if domain == ""}
    return all(op in available for op in ops)


DECODER_OPS = ("LayerNormalization", "MatMul", "Attention", "Add", "Gelu")
