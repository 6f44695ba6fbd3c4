"""Conv + residual Add fusion at session build (RuntimeSessionOptions.fuse_conv_add): the Add's
other input becomes FusedConv's Z, added in the convolution's epilogue with Add's broadcasting."""

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import (
    IM2COL_CONV_PATH, assert_close, assert_pass_option_defaults_on_and_round_trips, make_model, random, run_ort,
    run_traced,
)

ON = runtime.RuntimeSessionOptions()
OFF = runtime.RuntimeSessionOptions(fuse_conv_add=False)


def residual_block(z_shape=(1, 4, 6, 6), conv_first=True, relu=True, bn=True, x_shape=(1, 3, 6, 6)):
    """Conv(x) [-> BatchNormalization] -> Add with z (either order) [-> Relu]."""
    values = {"w": random([4, x_shape[1], 3, 3], seed=1), "b": random([4], seed=2),
              "scale": (1 + 0.2 * random([4], seed=3)).astype(np.float32), "beta": random([4], seed=4),
              "mean": random([4], seed=5), "var": (0.5 + np.abs(random([4], seed=6))).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1])]
    y = "c"
    if bn:
        nodes.append(helper.make_node("BatchNormalization", ["c", "scale", "beta", "mean", "var"], ["bn"], name="bn"))
        y = "bn"
    nodes.append(helper.make_node("Add", [y, "z"] if conv_first else ["z", y], ["s"], name="add"))
    if relu:
        nodes.append(helper.make_node("Relu", ["s"], ["r"], name="relu"))
    feeds = {"x": random(list(x_shape), seed=7), "z": random(list(z_shape), seed=8)}
    inits = {k: v for k, v in values.items() if bn or k in ("w", "b")}
    return make_model(nodes, feeds, ["r" if relu else "s"], initializers=inits), feeds


def test_option_defaults_on_and_round_trips():
    assert_pass_option_defaults_on_and_round_trips("fuse_conv_add")


@pytest.mark.parametrize("conv_first", [True, False])
@pytest.mark.parametrize("bn", [True, False])
@pytest.mark.parametrize("relu", [True, False])
def test_residual_block_is_one_node_matching_unfused_and_onnxruntime(conv_first, bn, relu):
    model, feeds = residual_block(conv_first=conv_first, relu=relu, bn=bn)
    (fused,), usage, nodes = run_traced(model, feeds, ON)
    (unfused,), usage_off, nodes_off = run_traced(model, feeds, OFF)
    suffix = ("+bn" if bn else "") + "+add" + ("+relu" if relu else "")
    assert usage == [f"Conv/float32/{IM2COL_CONV_PATH}{suffix}"]
    written = [n.name for n in model.graph.node]
    assert nodes == [("conv", "FusedConv", written)]
    assert not any(op == "FusedConv" and "add" in covered for _, op, covered in nodes_off)
    assert any(op == "Add" for _, op, _ in nodes_off)
    # The residual is added after the Conv (and BN fold) exactly as the Add would add it.
    assert_close(fused, unfused, rtol=1e-5, atol=1e-5)
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("z_shape", [(4, 1, 1), (1, 4, 1, 6), (6,), (2, 4, 6, 6), (3, 1, 4, 6, 6)])
def test_broadcast_residual_matches_onnxruntime(z_shape):
    # Z broadcasts against Y, or Y against Z (the Add's output is larger than the Conv's).
    model, feeds = residual_block(z_shape=z_shape)
    (fused,), usage, nodes = run_traced(model, feeds, ON)
    (unfused,), _, _ = run_traced(model, feeds, OFF)
    expected = run_ort(model, feeds)[0]
    assert fused.shape == expected.shape
    assert_close(fused, unfused, rtol=1e-5, atol=1e-5)
    assert_close(fused, expected, rtol=1e-4, atol=1e-4)
    assert [op for _, op, _ in nodes] == ["FusedConv"]
    assert usage == [f"Conv/float32/{IM2COL_CONV_PATH}+bn+add+relu"]


def test_residual_that_does_not_broadcast_is_an_error_naming_the_node_and_shapes():
    model, feeds = residual_block(z_shape=(1, 4, 6, 5))
    with pytest.raises(ValueError) as fused_error:
        run_traced(model, feeds, ON)
    message = str(fused_error.value)
    assert "conv" in message and "[1, 4, 6, 5]" in message and "[1, 4, 6, 6]" in message, message
    with pytest.raises(ValueError):
        run_traced(model, feeds, OFF)  # the unfused Add refuses the same shapes


def test_not_fused_when_the_conv_output_has_another_reader_or_is_a_graph_output():
    model, feeds = residual_block(bn=False)
    model.graph.node.append(helper.make_node("Neg", ["c"], ["n"], name="neg"))
    model.graph.output.append(helper.make_value_info("n", model.graph.output[0].type))
    (fused, neg), usage, _ = run_traced(model, feeds, ON)
    assert not any("+add" in u for u in usage), usage
    assert any(u.startswith("Add/") for u in usage), usage
    (unfused, _), _, _ = run_traced(model, feeds, OFF)
    np.testing.assert_array_equal(fused, unfused)

    model, feeds = residual_block(bn=False, relu=False)
    model.graph.output.append(helper.make_value_info("c", model.graph.output[0].type))
    (_, c), usage, _ = run_traced(model, feeds, ON)
    assert not any("+add" in u for u in usage), usage
    assert c.shape == (1, 4, 6, 6)


def test_activation_before_the_add_is_kept_before_it():
    # Relu(Conv) + z: the Relu is fused into the Conv, the Add then stays a node of its own.
    model, feeds = residual_block(bn=False, relu=False)
    nodes = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend([nodes[0], helper.make_node("Relu", ["c"], ["rc"], name="relu0"),
                             helper.make_node("Add", ["rc", "z"], ["s"], name="add")])
    (fused,), usage, _ = run_traced(model, feeds, ON)
    assert f"Conv/float32/{IM2COL_CONV_PATH}+relu" in usage and any(u.startswith("Add/") for u in usage), usage
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)
