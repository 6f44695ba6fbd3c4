"""Channel-scale fusion at session build (RuntimeSessionOptions.fuse_conv_scale): a Mul that alone
feeds a Conv's X becomes part of a FusedConv node. One factor per channel (a squeeze-and-excitation
block) is applied as the AVX-512 1x1 convolution reads X ("+mul", the unfused bits), or else scales
W's input channels when W is small against X ("+scale"); any other Mul runs inside the node with its
broadcasting ("+mul")."""

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import (
    POINTWISE_CONV_PATH, assert_close, assert_pass_option_defaults_on_and_round_trips, make_model, random, run_ort,
    run_traced,
)


def options(fuse=True, threads=1):
    return runtime.RuntimeSessionOptions(fuse_conv_scale=fuse, num_threads=threads)


def se_block(channels=8, size=12, out_channels=6, scale_first=False, residual=False, batch=1, s_shape=None,
             kernel=1):
    """x -> GlobalAveragePool -> Conv -> HardSigmoid = s; Mul(x, s) -> Conv (1x1, or `kernel` wide
    with same padding) [-> Add z]. With `s_shape`, s is instead a graph input of that shape."""
    x = random([batch, channels, size, size], seed=1)
    feeds = {"x": x}
    inits = {"w": random([out_channels, channels, kernel, kernel], seed=2), "b": random([out_channels], seed=3),
             "fc": random([channels, channels, 1, 1], seed=4, low=-0.5, high=0.5)}
    nodes = []
    if s_shape is None:
        nodes += [helper.make_node("GlobalAveragePool", ["x"], ["pooled"], name="pool"),
                  helper.make_node("Conv", ["pooled", "fc"], ["fc_out"], name="fc"),
                  helper.make_node("HardSigmoid", ["fc_out"], ["s"], name="gate")]
    else:
        feeds["s"] = random(list(s_shape), seed=5)
        del inits["fc"]
    nodes.append(helper.make_node("Mul", ["s", "x"] if scale_first else ["x", "s"], ["scaled"], name="mul"))
    nodes.append(helper.make_node("Conv", ["scaled", "w", "b"], ["y"], name="project", pads=[kernel // 2] * 4))
    out = "y"
    if residual:
        feeds["z"] = random([batch, out_channels, size, size], seed=6)
        nodes.append(helper.make_node("Add", ["y", "z"], ["sum"], name="add"))
        out = "sum"
    return make_model(nodes, feeds, [out], initializers=inits), feeds


def test_option_defaults_on_and_round_trips():
    assert_pass_option_defaults_on_and_round_trips("fuse_conv_scale")


# The AVX-512 1x1 convolution applies the factors as it reads X: no scaled copy of X or W, and the
# unfused graph's bits (the same x * s, then the same products). Elsewhere W's input channels are
# scaled when W is small against X: one rounding moves from x * s to w * s.
FACTORS_IN_TILES = POINTWISE_CONV_PATH == "1x1-avx512"


def check_factors_applied(fused, unfused, usage, residual=False):
    suffix = ("+mul" if FACTORS_IN_TILES else "+scale") + ("+add" if residual else "")
    assert f"Conv/float32/{POINTWISE_CONV_PATH}{suffix}" in usage, usage
    if FACTORS_IN_TILES:
        np.testing.assert_array_equal(fused, unfused)
    else:
        assert_close(fused, unfused, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("scale_first", [False, True])
@pytest.mark.parametrize("residual", [False, True])
def test_squeeze_excitation_folds_the_scale_and_matches_unfused_and_onnxruntime(threads, scale_first, residual):
    # 6 x 8 weights against an 8 x 24 x 24 feature map: small enough to scale W off AVX-512.
    model, feeds = se_block(size=24, scale_first=scale_first, residual=residual)
    (fused,), usage, nodes = run_traced(model, feeds, options(threads=threads))
    (unfused,), usage_off, nodes_off = run_traced(model, feeds, options(False, threads))
    check_factors_applied(fused, unfused, usage, residual)
    project = [n for n in nodes if n[0] == "project"]
    assert project == [("project", "FusedConv", ["mul", "project"] + (["add"] if residual else []))], nodes
    assert any(op == "Mul" for _, op, _ in nodes_off) and not any("+scale" in u for u in usage_off)
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("s_shape", [(8, 1, 1), (1, 8, 1, 1), (1,), ()])
def test_every_per_channel_or_single_factor_shape_is_folded(s_shape):
    model, feeds = se_block(size=24, s_shape=s_shape)
    (fused,), usage, _ = run_traced(model, feeds, options())
    (unfused,), _, _ = run_traced(model, feeds, options(False))
    check_factors_applied(fused, unfused, usage)
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("size", [7, 13, 45])
def test_factors_read_with_x_cover_panels_tails_and_deep_products(threads, size):
    # 300 input channels (three passes over the depth), 260 outputs (X copied into a panel per
    # pass) and 7x7 / 13x13 / 45x45 images (1-pixel and 9-pixel tails, several chunks).
    model, feeds = se_block(channels=300, out_channels=260, size=size)
    (fused,), usage, _ = run_traced(model, feeds, options(threads=threads))
    (unfused,), _, _ = run_traced(model, feeds, options(False, threads))
    assert any(u.startswith("Conv/float32/") and ("+mul" in u or "+scale" in u) for u in usage), usage
    if FACTORS_IN_TILES:
        assert f"Conv/float32/{POINTWISE_CONV_PATH}+mul" in usage, usage
        np.testing.assert_array_equal(fused, unfused)
    else:
        assert_close(fused, unfused, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_wider_kernel_scales_every_tap_of_a_channel(threads):
    # 6 x 8 x 3 x 3 weights: the taps of one input channel share its factor.
    model, feeds = se_block(size=24, kernel=3)
    (fused,), usage, _ = run_traced(model, feeds, options(threads=threads))
    (unfused,), _, _ = run_traced(model, feeds, options(False, threads))
    assert any(u.startswith("Conv/float32/") and u.endswith("+scale") for u in usage), usage
    assert_close(fused, unfused, rtol=1e-5, atol=1e-5)
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "case",
    [
        # W (1024 x 64) too large to scale against x (64 x 45 x 45, 130K floats): x is scaled plane by
        # plane, in two shares of planes at two threads.
        dict(channels=64, out_channels=1024, size=45),
        dict(channels=64, out_channels=1024, size=45, scale_first=True, residual=True),
        dict(channels=64, out_channels=1024, size=45, s_shape=(64, 1, 1)),
        dict(channels=64, out_channels=1024, size=45, s_shape=(1, 1, 1, 1)),
        dict(channels=16, out_channels=512, size=20, batch=2, s_shape=(1, 16, 1, 1)),
    ],
    ids=["per channel", "factor first, residual", "rank-3 factor", "one factor", "two images"],
)
def test_a_large_w_scales_x_plane_by_plane_with_the_unfused_bits(threads, case):
    model, feeds = se_block(**case)
    (fused,), usage, nodes = run_traced(model, feeds, options(threads=threads))
    (unfused,), _, _ = run_traced(model, feeds, options(False, threads))
    assert any(u.startswith("Conv/float32/") and "+mul" in u for u in usage), usage
    assert [op for name, op, _ in nodes if name == "project"] == ["FusedConv"]
    np.testing.assert_array_equal(fused, unfused)
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", ["weights larger than x", "full-size factor", "factor per image", "x broadcast up"])
def test_other_products_run_the_mul_first_and_equal_the_unfused_graph(threads, case):
    kwargs = {
        # 6 x 8 weights against an 8 x 2 x 2 feature map (a late layer): X is scaled.
        "weights larger than x": dict(size=2),
        "full-size factor": dict(s_shape=(1, 8, 12, 12)),
        # One factor per image and channel: W would differ per image.
        "factor per image": dict(batch=2, s_shape=(2, 8, 1, 1)),
        # The Mul's output is larger than x: X broadcasts against a factor with rows.
        "x broadcast up": dict(s_shape=(1, 8, 12, 1), size=1),
    }[case]
    model, feeds = se_block(**kwargs)
    if case == "x broadcast up":
        feeds["x"] = random([1, 8, 1, 12], seed=7)
        model, _ = se_block(**kwargs)
        model.graph.input[0].type.tensor_type.shape.dim[2].dim_value = 1
        model.graph.input[0].type.tensor_type.shape.dim[3].dim_value = 12
    (fused,), usage, nodes = run_traced(model, feeds, options(threads=threads))
    (unfused,), _, _ = run_traced(model, feeds, options(False, threads))
    assert any(u.startswith("Conv/float32/") and u.endswith("+mul") for u in usage), usage
    assert [op for name, op, _ in nodes if name == "project"] == ["FusedConv"]
    # The same product, then the same convolution: the unfused graph's bits.
    np.testing.assert_array_equal(fused, unfused)
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


def test_operands_that_do_not_broadcast_are_an_error_naming_the_node_and_shapes():
    model, feeds = se_block(s_shape=(1, 8, 5, 1))
    with pytest.raises(ValueError) as error:
        run_traced(model, feeds, options())
    message = str(error.value)
    assert "project" in message and "[1, 8, 12, 12]" in message and "[1, 8, 5, 1]" in message, message
    with pytest.raises(ValueError):
        run_traced(model, feeds, options(False))  # the unfused Mul refuses the same shapes


def test_not_fused_when_the_product_has_another_reader_or_is_a_graph_output():
    model, feeds = se_block(size=24)
    model.graph.output.append(helper.make_value_info("scaled", model.graph.output[0].type))
    (y, scaled), usage, _ = run_traced(model, feeds, options())
    assert not any("+scale" in u or "+mul" in u for u in usage), usage
    assert any(u.startswith("Mul/") for u in usage), usage
    np.testing.assert_array_equal(y, run_traced(model, feeds, options(False))[0][0])

    model, feeds = se_block(size=24)
    model.graph.node.append(helper.make_node("Neg", ["scaled"], ["n"], name="neg"))
    model.graph.output.append(helper.make_value_info("n", model.graph.output[0].type))
    _, usage, _ = run_traced(model, feeds, options())
    assert not any("+scale" in u or "+mul" in u for u in usage), usage


def test_grouped_convolution_is_not_fused():
    model, feeds = se_block(size=24)
    project = model.graph.node[-1]
    project.attribute.append(helper.make_attribute("group", 2))
    for init in model.graph.initializer:
        if init.name == "w":
            init.CopyFrom(helper.make_tensor("w", init.data_type, [6, 4, 1, 1], random([6, 4, 1, 1], seed=9).ravel()))
    (fused,), usage, _ = run_traced(model, feeds, options())
    assert any(u.startswith("Mul/") for u in usage) and not any("+scale" in u for u in usage), usage
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)
