"""Dynamically quantized Linear layers at session build (RuntimeSessionOptions.fuse_matmul_integer_scale):
onnxruntime's quantize_dynamic writes each as MatMulInteger -> Cast to float32 -> Mul by the product of
the activation's and the weights' scales -> Add of the bias; the chain runs as one MatMulIntegerToFloat
node that converts the int32 product in place, with the same result bit for bit."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import assert_pass_option_defaults_on_and_round_trips, make_model, run_ours, run_reference, run_traced

ON = runtime.RuntimeSessionOptions()
OFF = runtime.RuntimeSessionOptions(fuse_matmul_integer_scale=False)
PRODUCTS = ("int16", "int16-avx2", "u8s8-vnni", "u8s8-amx")


def dynamic_linear(x_shape, n, w_type=np.int8, per_column=False, bias="second", w_zero_point=True,
                   scale_from_mul=True, seed=0):
    """DynamicQuantizeLinear(x) -> MatMulInteger(xq, w, x_zp[, w_zp]) -> Cast -> Mul(s) [-> Add(b)],
    named as quantize_dynamic names them; s = x_scale * w_scale, or a constant when not
    `scale_from_mul`."""
    rng = np.random.default_rng(seed)
    k = x_shape[-1]
    info = np.iinfo(w_type)
    inits = {"w": rng.integers(info.min, info.max + 1, size=(k, n)).astype(w_type)}
    if w_zero_point:
        inits["w_zp"] = np.array(3, w_type) if not per_column else rng.integers(-5, 6, n).astype(w_type) + (
            0 if info.min < 0 else 8)
    inits["w_scale"] = (rng.uniform(0.001, 0.01, n) if per_column else np.array(0.004)).astype(np.float32)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "x_scale", "x_zp"], name="quant"),
             helper.make_node("MatMulInteger", ["xq", "w", "x_zp"] + (["w_zp"] if w_zero_point else []), ["p"],
                              name="proj"),
             helper.make_node("Cast", ["p"], ["pf"], to=TensorProto.FLOAT, name="cast")]
    if scale_from_mul:
        nodes.append(helper.make_node("Mul", ["x_scale", "w_scale"], ["s"], name="scales"))
    scale = "s" if scale_from_mul else "w_scale"
    nodes.append(helper.make_node("Mul", ["pf", scale], ["y" if bias is None else "m"], name="rescale"))
    if bias is not None:
        inits["b"] = rng.standard_normal(n).astype(np.float32)
        nodes.append(helper.make_node("Add", ["m", "b"] if bias == "second" else ["b", "m"], ["y"], name="bias"))
    feeds = {"x": rng.standard_normal(x_shape).astype(np.float32)}
    return make_model(nodes, feeds, ["y"], initializers=inits), feeds


def ops(nodes):
    return [op for _, op, _ in nodes]


def test_option_defaults_on_and_round_trips():
    assert_pass_option_defaults_on_and_round_trips("fuse_matmul_integer_scale")


# 2-D and 3-D activations, a single row (a decode step), a 1-D A, a column count off the tiles.
SHAPES = [((16, 32), 24), ((2, 9, 48), 40), ((1, 64), 64), ((40,), 17), ((3, 5, 16), 1)]


@pytest.mark.parametrize("bias", ["second", "first", None])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("w_type", [np.int8, np.uint8])
@pytest.mark.parametrize("x_shape,n", SHAPES)
def test_chain_is_one_node_equal_to_the_written_graph(x_shape, n, w_type, per_column, bias):
    model, feeds = dynamic_linear(x_shape, n, w_type, per_column, bias)
    (fused,), usage, nodes = run_traced(model, feeds, ON)
    (unfused,), _, nodes_off = run_traced(model, feeds, OFF)
    covered = ["proj", "cast", "rescale"] + ([] if bias is None else ["bias"])
    assert ops(nodes_off) == ["DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "Mul"] + (
        [] if bias is None else ["Add"])
    assert ("proj", "MatMulIntegerToFloat", covered) in nodes, nodes
    assert ops(nodes) == ["DynamicQuantizeLinear", "Mul", "MatMulIntegerToFloat"]
    assert any(u.startswith(tuple(f"MatMulIntegerToFloat/uint8/{p}" for p in PRODUCTS)) and u.endswith("-prepacked")
               for u in usage), usage
    # The fused kernel makes the written graph's roundings in the same order: equal bit for bit.
    assert fused.dtype == np.float32 and fused.shape == unfused.shape
    np.testing.assert_array_equal(fused, unfused)
    (want,) = run_reference(model, feeds)
    np.testing.assert_allclose(fused, want, rtol=1e-6, atol=1e-6)


def test_constant_scale_and_no_weight_zero_point():
    model, feeds = dynamic_linear((8, 32), 16, per_column=True, w_zero_point=False, scale_from_mul=False)
    (fused,), _, nodes = run_traced(model, feeds, ON)
    (unfused,), _, _ = run_traced(model, feeds, OFF)
    assert ops(nodes) == ["DynamicQuantizeLinear", "MatMulIntegerToFloat"]
    np.testing.assert_array_equal(fused, unfused)


def test_bias_of_another_shape_leaves_the_add():
    model, feeds = dynamic_linear((4, 16), 8)
    bias = next(t for t in model.graph.initializer if t.name == "b")
    bias.CopyFrom(helper.make_tensor("b", TensorProto.FLOAT, [1, 8], np.arange(8, dtype=np.float32)))
    (fused,), _, nodes = run_traced(model, feeds, ON)
    (unfused,), _, _ = run_traced(model, feeds, OFF)
    assert ops(nodes) == ["DynamicQuantizeLinear", "Mul", "MatMulIntegerToFloat", "Add"]
    np.testing.assert_array_equal(fused, unfused)


def unfusable(case):
    model, feeds = dynamic_linear((4, 16), 8)
    graph = model.graph
    if case == "scale-of-unknown-shape":  # a graph input could broadcast the product to more axes
        scales = next(n for n in graph.node if n.name == "scales")
        scales.input[1] = "w_scale_in"
        graph.input.append(helper.make_tensor_value_info("w_scale_in", TensorProto.FLOAT, None))
        feeds["w_scale_in"] = np.full((2, 1, 1), 0.004, np.float32)
    elif case == "scale-rank-2":  # a [1, N] constant makes a 1-D product 2-D: left as written
        w_scale = next(t for t in graph.initializer if t.name == "w_scale")
        w_scale.CopyFrom(helper.make_tensor("w_scale", TensorProto.FLOAT, [1, 8], np.full(8, 0.004, np.float32)))
    elif case == "cast-to-double":
        model, feeds = dynamic_linear((4, 16), 8, scale_from_mul=False, bias=None)
        graph = model.graph
        next(n for n in graph.node if n.name == "cast").attribute[0].i = TensorProto.DOUBLE
        next(t for t in graph.initializer if t.name == "w_scale").CopyFrom(
            helper.make_tensor("w_scale", TensorProto.DOUBLE, [], [0.004]))
    elif case == "product-read-elsewhere":
        graph.output.append(helper.make_value_info("p", graph.output[0].type))
    elif case == "weights-not-constant":
        w = next(t for t in graph.initializer if t.name == "w")
        graph.initializer.remove(w)
        graph.input.append(helper.make_tensor_value_info("w", TensorProto.INT8, [16, 8]))
        feeds["w"] = np.random.default_rng(1).integers(-128, 128, (16, 8)).astype(np.int8)
    return model, feeds


@pytest.mark.parametrize("case", ["scale-of-unknown-shape", "scale-rank-2", "cast-to-double",
                                  "product-read-elsewhere", "weights-not-constant"])
def test_other_chains_stay_as_written(case):
    model, feeds = unfusable(case)
    outputs, _, nodes = run_traced(model, feeds, ON)
    assert "MatMulIntegerToFloat" not in ops(nodes) and "MatMulInteger" in ops(nodes), nodes
    for got, want in zip(outputs, run_traced(model, feeds, OFF)[0]):
        np.testing.assert_array_equal(got, want)


def test_wrong_activation_type_names_the_node_and_input():
    # A MatMulInteger reading an int16 graph input directly: the fused kernel refuses it as
    # MatMulInteger would, naming the node.
    model, feeds = dynamic_linear((4, 16), 8, scale_from_mul=False)
    graph = model.graph
    del graph.node[0]
    graph.input[0].CopyFrom(helper.make_tensor_value_info("xq", TensorProto.INT16, [4, 16]))
    graph.input.append(helper.make_tensor_value_info("x_zp", TensorProto.UINT8, []))
    feeds = {"xq": np.ones((4, 16), np.int16), "x_zp": np.array(0, np.uint8)}
    with pytest.raises(Exception, match=r"proj.*int16"):
        run_ours(model, feeds, options=ON)
