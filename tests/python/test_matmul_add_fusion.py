"""MatMul + bias fusion at session build (RuntimeSessionOptions.fuse_matmul_add): a Linear layer
written as MatMul(x, W) then Add(bias), with W and the bias constant float32, runs as one
MatMulAdd node whose product starts from the bias."""

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import (
    TILED_GEMM_PATH, assert_close, assert_pass_option_defaults_on_and_round_trips, make_model, random, run_ort,
    run_ours, run_traced,
)

ON = runtime.RuntimeSessionOptions()
OFF = runtime.RuntimeSessionOptions(fuse_matmul_add=False)


def linear(x_shape, n, bias_first=False, bias_shape=None, weights_as_input=False):
    """MatMul(x, w) -> Add with b (either order); w [K, n] and b are initializers."""
    k = x_shape[-1]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["p"], name="proj"),
             helper.make_node("Add", ["b", "p"] if bias_first else ["p", "b"], ["y"], name="bias")]
    feeds = {"x": random(list(x_shape), seed=1)}
    w = random([k, n], seed=2)
    inits = {"b": random(list(bias_shape or [n]), seed=3)}
    if weights_as_input:
        feeds["w"] = w
    else:
        inits["w"] = w
    return make_model(nodes, feeds, ["y"], initializers=inits), feeds


def test_option_defaults_on_and_round_trips():
    assert_pass_option_defaults_on_and_round_trips("fuse_matmul_add")


# 3-D activations as transformers have them (one folded product), 2-D, a single row (a decode
# step: the bias is added after the row product), few rows (under the tiles' 8), a 4-KiB
# row stride (A copied apart), a 1-D A (its row dropped from the result), column tails.
SHAPES = [((2, 37, 48), 40), ((19, 64), 33), ((1, 1, 48), 64), ((5, 40), 24), ((12, 1024), 20), ((48,), 17),
          ((3, 8, 16), 16)]


@pytest.mark.parametrize("bias_first", [False, True])
@pytest.mark.parametrize("x_shape,n", SHAPES)
def test_linear_is_one_node_matching_unfused_and_onnxruntime(x_shape, n, bias_first):
    model, feeds = linear(x_shape, n, bias_first)
    (fused,), usage, nodes = run_traced(model, feeds, ON)
    (unfused,), usage_off, nodes_off = run_traced(model, feeds, OFF)
    assert nodes == [("proj", "MatMulAdd", ["proj", "bias"])]
    assert [op for _, op, _ in nodes_off] == ["MatMul", "Add"]
    assert len(usage) == 1 and usage[0].startswith("MatMulAdd/float32/"), usage
    rows = int(np.prod(x_shape[:-1]))
    if rows >= 8 and n >= 16:
        # W, a constant, is packed at build for our tiles.
        packed = "-prepacked" if TILED_GEMM_PATH == "tiles-avx512" else ""
        assert usage[0] == f"MatMulAdd/float32/{TILED_GEMM_PATH}{packed}" + ("-folded" if len(x_shape) > 2 else "")
    assert fused.shape == unfused.shape
    # The fused product starts from the bias instead of adding it to the rounded sum.
    assert_close(fused, unfused, rtol=1e-5, atol=1e-5)
    (want,) = run_ort(model, feeds)
    assert_close(fused, want, rtol=1e-4, atol=1e-4)


def test_zero_depth_product_is_the_bias():
    model, feeds = linear((3, 0), 5)
    (fused,), usage, nodes = run_traced(model, feeds, ON)
    assert [op for _, op, _ in nodes] == ["MatMulAdd"]
    bias = next(t for t in model.graph.initializer if t.name == "b")
    np.testing.assert_array_equal(fused, np.tile(np.frombuffer(bias.raw_data, np.float32), (3, 1)))


@pytest.mark.parametrize("case", ["bias-2d", "bias-wrong-length", "weights-not-constant", "double"])
def test_other_adds_stay_unfused(case):
    if case == "bias-2d":  # [1, N] could broadcast a 1-D product to 2-D: left to Add
        model, feeds = linear((4, 16), 8, bias_shape=[1, 8])
    elif case == "bias-wrong-length":  # [1] broadcasts: a scalar shift, not a per-column bias
        model, feeds = linear((4, 16), 8, bias_shape=[1])
    elif case == "weights-not-constant":
        model, feeds = linear((4, 16), 8, weights_as_input=True)
    else:
        model, feeds = linear((4, 16), 8)
        feeds = {k: v.astype(np.float64) for k, v in feeds.items()}
        for t in model.graph.initializer:
            t.CopyFrom(helper.make_tensor(t.name, helper.np_dtype_to_tensor_dtype(np.dtype(np.float64)), t.dims,
                                          np.frombuffer(t.raw_data, np.float32).astype(np.float64)))
        model.graph.input[0].type.tensor_type.elem_type = helper.np_dtype_to_tensor_dtype(np.dtype(np.float64))
    (got,), _, nodes = run_traced(model, feeds, ON)
    assert [op for _, op, _ in nodes] == ["MatMul", "Add"]
    (want,) = run_ort(model, feeds)
    assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_a_product_read_elsewhere_stays_unfused():
    model, feeds = linear((4, 16), 8)
    model.graph.output.append(helper.make_value_info("p", model.graph.output[0].type))
    outputs, _, nodes = run_traced(model, feeds, ON)
    assert [op for _, op, _ in nodes] == ["MatMul", "Add"]
    for got, want in zip(outputs, run_ort(model, feeds)):
        assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_wrong_activation_type_names_the_node_and_input():
    model, feeds = linear((4, 16), 8)
    feeds = {"x": feeds["x"].astype(np.float16)}
    model.graph.input[0].type.tensor_type.elem_type = helper.np_dtype_to_tensor_dtype(np.dtype(np.float16))
    with pytest.raises(Exception, match=r"proj.*(float16|float32)"):
        run_ours(model, feeds, options=ON)
