"""Embedding lookups of QDQ models at session build (RuntimeSessionOptions.fuse_dequantize_gather):
Gather(DequantizeLinear(constant 8-bit table, scale, zero point), indices) runs as one
DequantizeGather node that gathers the 8-bit rows and dequantizes only those, with the written
graph's values bit for bit."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import (
    assert_pass_option_defaults_on_and_round_trips, expect_error, make_model, run_reference, run_traced,
)

ON = runtime.RuntimeSessionOptions()
OFF = runtime.RuntimeSessionOptions(fuse_dequantize_gather=False)


def lookup(table_shape, indices, table_type=np.int8, axis=0, zero_point=True, opset=21, seed=0):
    """DequantizeLinear(table, scale[, zp]) -> Gather(indices, axis), named as quantize_static
    names them."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(table_type)
    inits = {"table": rng.integers(info.min, info.max + 1, size=table_shape).astype(table_type),
             "scale": np.array(0.0173, np.float32)}
    dq_inputs = ["table", "scale"]
    if zero_point:
        inits["zp"] = np.array(3 if info.min < 0 else 131, table_type)
        dq_inputs.append("zp")
    nodes = [helper.make_node("DequantizeLinear", dq_inputs, ["deq"], name="table_DequantizeLinear"),
             helper.make_node("Gather", ["deq", "ids"], ["y"], axis=axis, name="lookup")]
    feeds = {"ids": np.asarray(indices, np.int64)}
    return make_model(nodes, feeds, ["y"], initializers=inits, opset=opset), feeds


def test_option_defaults_on_and_round_trips():
    assert_pass_option_defaults_on_and_round_trips("fuse_dequantize_gather")


CASES = [
    ((50, 16), [[3, 0, 49], [7, -1, -50]], 0),  # token ids, negative ones counting from the end
    ((6, 5, 4), [4, 0, 4], 1),                  # a middle axis: rows of 4 from each of 6 blocks
    ((6, 5, 4), [3, -4], 2),                    # the last axis: single elements
    ((9,), [[8], [0]], 0),                      # a 1-D table
    ((10, 8), np.zeros((0,), np.int64), 0),     # no index: an empty output
]


@pytest.mark.parametrize("zero_point", [True, False])
@pytest.mark.parametrize("table_type", [np.int8, np.uint8])
@pytest.mark.parametrize("table_shape,indices,axis", CASES)
def test_lookup_is_one_node_equal_to_the_written_graph(table_shape, indices, axis, table_type, zero_point):
    model, feeds = lookup(table_shape, indices, table_type, axis, zero_point)
    (fused,), usage, nodes = run_traced(model, feeds, ON)
    (unfused,), _, nodes_off = run_traced(model, feeds, OFF)
    assert [op for _, op, _ in nodes_off] == ["DequantizeLinear", "Gather"]
    assert nodes == [("lookup", "DequantizeGather", ["table_DequantizeLinear", "lookup"])], nodes
    assert f"DequantizeGather/{np.dtype(table_type).name}/rows" in usage, usage
    assert fused.dtype == np.float32 and fused.shape == unfused.shape
    np.testing.assert_array_equal(fused, unfused)
    (want,) = run_reference(model, feeds)
    np.testing.assert_array_equal(fused, want)


def test_index_out_of_range_names_the_node_and_the_range():
    model, feeds = lookup((50, 16), [[3, 50]], opset=21)
    expect_error(model, feeds, "lookup", "index 50 is out of range for axis 0 of size 50", "[-50, 49]")


def unfusable(case):
    model, feeds = lookup((12, 8), [1, 5])
    graph = model.graph
    dq = next(n for n in graph.node if n.op_type == "DequantizeLinear")
    if case == "per-axis-scale":  # one scale per row: the rows would need their own scales
        next(t for t in graph.initializer if t.name == "scale").CopyFrom(
            helper.make_tensor("scale", TensorProto.FLOAT, [12], np.linspace(0.01, 0.02, 12, dtype=np.float32)))
        next(t for t in graph.initializer if t.name == "zp").CopyFrom(
            helper.make_tensor("zp", TensorProto.INT8, [12], np.arange(12, dtype=np.int8)))
        dq.attribute.append(helper.make_attribute("axis", 0))
    elif case == "table-from-an-input":  # not a constant: nothing to gain, and the type is unknown
        graph.initializer.remove(next(t for t in graph.initializer if t.name == "table"))
        graph.input.append(helper.make_tensor_value_info("table", TensorProto.INT8, [12, 8]))
        feeds["table"] = np.arange(96, dtype=np.int8).reshape(12, 8)
    elif case == "dequantized-table-read-elsewhere":
        graph.output.append(helper.make_value_info("deq", graph.output[0].type))
    elif case == "int32-table":
        next(t for t in graph.initializer if t.name == "table").CopyFrom(
            helper.make_tensor("table", TensorProto.INT32, [12, 8], np.arange(96, dtype=np.int32)))
        next(t for t in graph.initializer if t.name == "zp").CopyFrom(helper.make_tensor("zp", TensorProto.INT32, [], [3]))
    return model, feeds


@pytest.mark.parametrize("case", ["per-axis-scale", "table-from-an-input", "dequantized-table-read-elsewhere",
                                  "int32-table"])
def test_other_lookups_run_as_written(case):
    model, feeds = unfusable(case)
    outputs, _, nodes = run_traced(model, feeds, ON)
    assert "DequantizeGather" not in [op for _, op, _ in nodes], nodes
    want = run_reference(model, feeds)
    for got, expected in zip(outputs, want):
        np.testing.assert_array_equal(got, expected)
