"""Conv -> Concat fusion at session build (RuntimeSessionOptions.fuse_conv_concat): convolutions
whose outputs only a Concat along channels reads write their channels straight into its output."""

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import (
    assert_close, assert_pass_option_defaults_on_and_round_trips, make_model, random, run_ort, run_traced,
)


def options(fuse=True, threads=1):
    return runtime.RuntimeSessionOptions(fuse_conv_concat=fuse, num_threads=threads)


def branches_model(branches, order=None, axis=1, batch=1, channels=6, size=12, relu=True):
    """x -> one Conv per branch (out channels, kernel, group) [-> Relu] -> Concat(axis) in `order`."""
    feeds = {"x": random([batch, channels, size, size], seed=1)}
    inits, nodes, outputs = {}, [], []
    for k, (out_channels, kernel, group) in enumerate(branches):
        inits[f"w{k}"] = random([out_channels, channels // group, kernel, kernel], seed=10 + k, low=-0.5, high=0.5)
        inits[f"b{k}"] = random([out_channels], seed=20 + k)
        nodes.append(helper.make_node("Conv", ["x", f"w{k}", f"b{k}"], [f"c{k}"], name=f"conv{k}",
                                      pads=[kernel // 2] * 4, group=group))
        out = f"c{k}"
        if relu:
            nodes.append(helper.make_node("Relu", [out], [f"r{k}"], name=f"relu{k}"))
            out = f"r{k}"
        outputs.append(out)
    order = order or list(range(len(branches)))
    nodes.append(helper.make_node("Concat", [outputs[k] for k in order], ["y"], name="concat", axis=axis))
    return make_model(nodes, feeds, ["y"], initializers=inits), feeds


def test_option_defaults_on_and_round_trips():
    assert_pass_option_defaults_on_and_round_trips("fuse_conv_concat")


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch", [1, 2])
def test_fire_module_writes_into_the_concat_and_equals_the_unfused_graph(threads, batch):
    # squeezenet's expand layers: a 1x1 and a 3x3 convolution, each with its Relu.
    model, feeds = branches_model([(8, 1, 1), (8, 3, 1)], batch=batch)
    (fused,), usage, nodes = run_traced(model, feeds, options(threads=threads))
    (unfused,), usage_off, nodes_off = run_traced(model, feeds, options(False, threads))
    assert len([u for u in usage if u.startswith("Conv/float32/") and u.endswith("+relu+concat")]) == 2, usage
    assert not any(u.startswith("Concat/") for u in usage), usage
    assert nodes == [("conv0", "FusedConv", ["conv0", "relu0"]),
                     ("conv1", "FusedConv", ["conv1", "relu1", "concat"])], nodes
    assert any(op == "Concat" for _, op, _ in nodes_off)
    # The same sums, written where the Concat would have copied them.
    np.testing.assert_array_equal(fused, unfused)
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("order", [[0, 1, 2], [2, 0, 1], [1, 2, 0]])
def test_concat_order_other_than_graph_order_and_every_conv_path(threads, order):
    # A 1x1, a depthwise 3x3 and a dense 5x5 branch, concatenated in any order, two images.
    model, feeds = branches_model([(4, 1, 1), (6, 3, 6), (5, 5, 1)], order=order, batch=2, relu=False)
    (fused,), usage, _ = run_traced(model, feeds, options(threads=threads))
    (unfused,), _, _ = run_traced(model, feeds, options(False, threads))
    assert len([u for u in usage if u.endswith("+concat")]) == 3, usage
    assert fused.shape == (2, 15, 12, 12)
    np.testing.assert_array_equal(fused, unfused)
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


def test_negative_channel_axis_is_fused_and_other_axes_are_not():
    model, feeds = branches_model([(4, 1, 1), (4, 3, 1)], axis=-3)
    (fused,), usage, _ = run_traced(model, feeds, options())
    assert len([u for u in usage if u.endswith("+concat")]) == 2, usage
    np.testing.assert_array_equal(fused, run_traced(model, feeds, options(False))[0][0])

    model, feeds = branches_model([(4, 1, 1), (4, 3, 1)], axis=2)
    (fused,), usage, _ = run_traced(model, feeds, options())
    assert not any(u.endswith("+concat") for u in usage) and any(u.startswith("Concat/") for u in usage), usage
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


def test_not_fused_when_an_input_is_no_conv_or_a_conv_output_is_read_elsewhere():
    model, feeds = branches_model([(4, 1, 1), (4, 3, 1)])
    concat = model.graph.node[-1]
    concat.input.append("x")  # the input itself joins the Concat
    (fused,), usage, _ = run_traced(model, feeds, options())
    assert not any(u.endswith("+concat") for u in usage), usage
    assert_close(fused, run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)

    model, feeds = branches_model([(4, 1, 1), (4, 3, 1)])
    model.graph.output.append(helper.make_value_info("r0", model.graph.output[0].type))
    (fused, r0), usage, _ = run_traced(model, feeds, options())
    assert not any(u.endswith("+concat") for u in usage), usage
    np.testing.assert_array_equal(fused[:, :4], r0)


def test_branches_of_different_sizes_are_an_error_naming_the_node_and_shapes():
    # A 3x3 branch without padding: 10x10 against the 1x1 branch's 12x12, which Concat refuses.
    model, feeds = branches_model([(4, 1, 1), (4, 3, 1)])
    for attr in model.graph.node[2].attribute:
        if attr.name == "pads":
            attr.ints[:] = [0, 0, 0, 0]
    with pytest.raises(ValueError) as error:
        run_traced(model, feeds, options())
    message = str(error.value)
    assert "conv1" in message and "[1, 4, 10, 10]" in message and "[1, 8, 10, 10]" in message, message
    with pytest.raises(ValueError):
        run_traced(model, feeds, options(False))  # the unfused Concat refuses them too


PORTABLE_SCRIPT = """
import sys
import numpy as np
sys.path.insert(0, {tests!r})
import onnx_light.runtime as runtime
from test_conv_concat_fusion import branches_model, options
from node_check import run_traced
model, feeds = branches_model([(4, 1, 1), (6, 3, 6), (5, 5, 1)], order=[2, 0, 1], batch=2)
(fused,), usage, _ = run_traced(model, feeds, options(threads=2))
(unfused,), _, _ = run_traced(model, feeds, options(False, 2))
assert len([u for u in usage if u.endswith("+concat")]) == 3, usage
np.testing.assert_array_equal(fused, unfused)
np.save(sys.argv[1] + "/" + sys.argv[2], fused)
"""


def test_the_portable_kernels_write_into_the_concat_too(tmp_path):
    # Without AVX-512 the convolutions take im2col + BLAS (and the portable grouped kernel), whose
    # images are written through the same strides.
    import os

    from node_check import outputs_with_and_without_avx512

    fast, portable = outputs_with_and_without_avx512(
        tmp_path, PORTABLE_SCRIPT.format(tests=os.path.dirname(os.path.abspath(__file__))))
    assert_close(portable, fast, rtol=1e-5, atol=1e-5)
