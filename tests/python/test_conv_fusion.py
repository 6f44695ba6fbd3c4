"""Conv -> BatchNormalization (-> Relu) fusion at session build (RuntimeSessionOptions.fuse_conv_batchnorm)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import (DIRECT_CONV_PATH, IM2COL_CONV_PATH, LANES_CONV_PATH, POINTWISE_CONV_PATH,
                        STRIDED_STEM_CONV_PATH, assert_close, assert_pass_option_defaults_on_and_round_trips,
                        dense_conv_path, depthwise_conv_path, grouped_conv_isa, make_model, random, run_ort, run_ours)
from onnx_light.cnn_model import build_cnn

DIRECT = DIRECT_CONV_PATH
LANES = LANES_CONV_PATH

FUSED = runtime.RuntimeSessionOptions(fuse_conv_batchnorm=True)
# Off: neither the BatchNormalization fold nor the activation fusion (which would fuse the Relu).
UNFUSED = runtime.RuntimeSessionOptions(fuse_conv_batchnorm=False, fuse_conv_activation=False)


def run_with(model, feeds, options, events=False):
    """(outputs, kernel usage, run_node events) of one run."""
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=events)
    ctx.set_kernel_usage_enabled(True)
    outputs = run_ours(model, feeds, context=ctx, options=options)
    run_nodes = [(e.name, e.op_type) for e in ctx.events() if e.action == runtime.RuntimeEventAction.kRunNode]
    return outputs, ctx.get_kernel_usage(), run_nodes


def run_node_indexes(model, feeds, options):
    """(op_type, node_index) of the run_node records of one run, in order."""
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    run_ours(model, feeds, context=ctx, options=options)
    return [(e.op_type, e.node_index) for e in ctx.events() if e.action == runtime.RuntimeEventAction.kRunNode]


def bn_params(m, seed=3):
    rng = np.random.default_rng(seed)
    return {"scale": (1 + 0.2 * rng.standard_normal(m)).astype(np.float32),
            "beta": (0.2 * rng.standard_normal(m)).astype(np.float32),
            "mean": (0.2 * rng.standard_normal(m)).astype(np.float32),
            "var": (0.5 + rng.random(m)).astype(np.float32)}


def chain_model(x_shape, w_shape, conv_attrs=None, bias=True, relu=True, outputs=None, extra_nodes=(),
                init_names=None, input_names=(), epsilon=1e-3):
    """Conv(x, w[, b]) -> "c"; BatchNormalization -> "bn"; Relu -> "r" (when `relu`).
    Initializers are w, b and the BN parameters except those in `input_names` (graph inputs)."""
    m = w_shape[0]
    values = {"w": random(w_shape, seed=1), **bn_params(m)}
    if bias:
        values["b"] = random([m], seed=2)
    nodes = [helper.make_node("Conv", ["x", "w", "b"] if bias else ["x", "w"], ["c"], name="conv",
                              **(conv_attrs or {})),
             helper.make_node("BatchNormalization", ["c", "scale", "beta", "mean", "var"], ["bn"], name="bn",
                              epsilon=epsilon)]
    if relu:
        nodes.append(helper.make_node("Relu", ["bn"], ["r"], name="relu"))
    nodes += list(extra_nodes)
    feeds = {"x": random(x_shape)}
    graph_inputs = dict(feeds)
    for name in input_names:
        graph_inputs[name] = values[name]
        feeds[name] = values[name]
    inits = {k: v for k, v in values.items() if k not in input_names or k in (init_names or ())}
    model = make_model(nodes, graph_inputs, outputs or (["r"] if relu else ["bn"]), initializers=inits)
    return model, feeds


def check_fused(model, feeds, expected_usage, rtol=1e-4, atol=1e-4):
    fused, usage, _ = run_with(model, feeds, FUSED)
    unfused, usage_off, _ = run_with(model, feeds, UNFUSED)
    assert expected_usage in usage, usage
    assert not any("+bn" in u for u in usage_off), usage_off
    assert "BatchNormalization/float32/per-channel" in usage_off
    for a, b, c in zip(fused, unfused, run_ort(model, feeds)):
        assert_close(a, b, rtol=rtol, atol=atol)
        assert_close(a, c, rtol=rtol, atol=atol)
    return usage


def test_option_defaults_on_and_round_trips():
    assert_pass_option_defaults_on_and_round_trips("fuse_conv_batchnorm")


def test_cnn_fused_matches_unfused_and_onnxruntime():
    model = build_cnn()
    feeds = {"image": np.random.default_rng(1).standard_normal((3, 3, 32, 32)).astype(np.float32)}
    fused, usage, events = run_with(model, feeds, FUSED, events=True)
    unfused, usage_off, events_off = run_with(model, feeds, UNFUSED, events=True)
    assert_close(fused[0], unfused[0], rtol=1e-4, atol=1e-5)
    assert_close(fused[0], run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)
    # The first convolution (3 channels, 27 taps) runs im2col + tiles, the second (16 channels,
    # 144 taps) the channels-in-lanes kernel.
    paths = [dense_conv_path(3, 9, 32 * 32), dense_conv_path(16, 9, 16 * 16)]
    assert [u for u in usage if u.startswith("Conv/")] == [f"Conv/float32/{p}+bn+relu" for p in paths]
    assert not any(u.startswith(("BatchNormalization", "Relu")) for u in usage)
    # The fused node runs under the Conv's name as FusedConv; BN and Relu no longer run.
    conv_names = [n.name for n in model.graph.node if n.op_type == "Conv"]
    assert [e for e in events if e[1] in ("Conv", "FusedConv", "BatchNormalization", "Relu")] == \
        [(n, "FusedConv") for n in conv_names]
    # Option off: exactly the graph as written.
    assert [op for _, op in events_off] == [n.op_type for n in model.graph.node]
    # Either way a record's node_index is the node's position in the graph, also after a fused chain.
    ops = [n.op_type for n in model.graph.node]
    assert run_node_indexes(model, feeds, UNFUSED) == list(zip(ops, range(len(ops))))
    fused_records = run_node_indexes(model, feeds, FUSED)
    assert [i for _, i in fused_records] == [i for i, op in enumerate(ops) if op not in ("BatchNormalization", "Relu")]
    assert all(ops[i] == op or (op, ops[i]) == ("FusedConv", "Conv") for op, i in fused_records)
    assert [u for u in usage_off if u.startswith("Conv/")] == [f"Conv/float32/{p}" for p in paths]


CASES = [
    # x shape, w shape, conv attributes, expected path
    ([2, 3, 9, 8], [4, 3, 3, 3], {"pads": [1, 1, 1, 1]}, IM2COL_CONV_PATH),           # columns fit in cache
    # The channels-in-lanes kernel: 64 input channels in four passes, 19 output channels (one
    # tile of two vectors, the second partly live), rows of 14 + 14 + 4 pixels.
    ([1, 64, 32, 32], [19, 64, 3, 3], {"pads": [1, 1, 1, 1]}, LANES),
    # Stride 2 with asymmetric pads, 37 channels (a tile of 32, then one of 5), 11-pixel rows.
    ([2, 8, 17, 23], [37, 8, 3, 3], {"strides": [2, 2], "pads": [1, 0, 2, 1]}, LANES),
    # Strides (1, 2), 33 channels (a tile of 32, then one of 1), a 7x7 kernel in one pass.
    ([1, 16, 9, 31], [33, 16, 3, 3], {"strides": [1, 2], "pads": [1, 1, 1, 1]}, LANES),
    # Stems: strided, at most 4 input channels, on the direct kernel over column phases. A 7x7
    # stride 2 (two phases, dealt with AVX-512 permutes), 16 output channels;
    ([1, 3, 40, 44], [16, 3, 7, 7], {"strides": [2, 2], "pads": [3, 3, 3, 3]}, STRIDED_STEM_CONV_PATH),
    # stride (2, 1): one phase, rows two apart, 11 channels (a block of 8, then 3), uneven pads;
    ([1, 3, 20, 37], [11, 3, 3, 5], {"strides": [2, 1], "pads": [1, 2, 0, 2]}, STRIDED_STEM_CONV_PATH),
    # stride (1, 4): four phases dealt one float at a time, a kernel as wide as the stride;
    ([1, 1, 12, 70], [5, 1, 4, 4], {"strides": [1, 4], "pads": [0, 1, 2, 3]}, STRIDED_STEM_CONV_PATH),
    # stride 3, two images, rows of 77 outputs (four vectors and a tail of 13).
    ([2, 3, 230, 230], [8, 3, 7, 7], {"strides": [3, 3], "pads": [3, 3, 3, 3]}, STRIDED_STEM_CONV_PATH),
    ([1, 6, 160, 160], [10, 6, 3, 3], {"pads": [1, 1, 1, 1]}, DIRECT),                # 54 taps, 5.3 MiB of columns
    ([2, 3, 9, 6], [4, 3, 3, 3], {"pads": [1, 1, 1, 1]}, IM2COL_CONV_PATH),           # too narrow for DIRECT
    ([1, 5, 9, 19], [21, 5, 3, 3], {"pads": [1, 1, 1, 1]}, IM2COL_CONV_PATH),         # channel and pixel tails
    ([2, 3, 9, 8], [4, 3, 3, 3], {"strides": [2, 2], "pads": [1, 0, 2, 1]}, IM2COL_CONV_PATH),
    ([1, 3, 11, 10], [5, 3, 3, 2], {"dilations": [2, 3], "pads": [2, 1, 0, 3]}, IM2COL_CONV_PATH),
    ([1, 4, 8, 8], [6, 2, 3, 3], {"group": 2, "pads": [1, 1, 1, 1]}, f"grouped-{grouped_conv_isa(8, 3)}"),
    ([1, 18, 8, 8], [6, 9, 3, 3], {"group": 2, "pads": [1, 1, 1, 1]}, "im2col-blas"),  # 9 channels per group
    ([2, 4, 8, 7], [4, 1, 3, 3], {"group": 4, "pads": [1, 1, 1, 1]}, depthwise_conv_path(7, 3)),
    ([1, 4, 8, 21], [8, 1, 3, 3], {"group": 4, "pads": [1, 1, 1, 1]}, depthwise_conv_path(21, 3, 2)),
    ([2, 3, 6, 5], [5, 3, 1, 1], {}, POINTWISE_CONV_PATH),
    ([1, 40, 7, 7], [37, 40, 1, 1], {}, POINTWISE_CONV_PATH),                         # a 1-pixel tail
    ([1, 64, 14, 14], [32, 64, 1, 1], {"strides": [2, 2]}, IM2COL_CONV_PATH),         # 1x1 stride 2: not lanes
    ([1, 3, 50], [4, 3, 1], {}, POINTWISE_CONV_PATH),                                 # 1-D
    ([2, 3, 10], [4, 3, 3], {"pads": [1, 1]}, IM2COL_CONV_PATH),                      # 1-D
    ([1, 2, 4, 5, 6], [3, 2, 2, 3, 2], {"strides": [1, 2, 1]}, IM2COL_CONV_PATH),       # 3-D
    # Columns over 2 MiB that no direct kernel takes (stride 3, 5 channels) go in bands of output
    # rows: a 7x7 (77 rows in bands of 13, the last one short; 245 deep: two passes),
    ([2, 5, 230, 230], [8, 5, 7, 7], {"strides": [3, 3], "pads": [3, 3, 3, 3]}, IM2COL_CONV_PATH),
    # bands of 20, 20, 20 and 1 rows of 58 pixels, each band's last 8 or 10 pixels a tail.
    ([1, 24, 180, 116], [9, 24, 3, 3], {"strides": [3, 2], "pads": [1, 0, 2, 1]}, IM2COL_CONV_PATH),
]


@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x_shape,w_shape,attrs,path", CASES)
def test_fused_matches_unfused(x_shape, w_shape, attrs, path, bias, relu):
    model, feeds = chain_model(x_shape, w_shape, attrs, bias=bias, relu=relu)
    usage = check_fused(model, feeds, f"Conv/float32/{path}+bn" + ("+relu" if relu else ""))
    assert any(u.startswith("Relu") for u in usage) is False


def test_batch_one_and_empty_batch():
    model, feeds = chain_model([1, 3, 7, 7], [4, 3, 3, 3], {"pads": [1, 1, 1, 1]})
    check_fused(model, feeds, f"Conv/float32/{IM2COL_CONV_PATH}+bn+relu")
    model, feeds = chain_model([1, 3, 7, 9], [4, 3, 3, 3], {"pads": [1, 1, 1, 1]})
    check_fused(model, feeds, f"Conv/float32/{IM2COL_CONV_PATH}+bn+relu")
    model, feeds = chain_model([0, 3, 7, 7], [4, 3, 3, 3], {"pads": [1, 1, 1, 1]})
    (y,), usage, _ = run_with(model, feeds, FUSED)
    assert f"Conv/float32/{IM2COL_CONV_PATH}+bn+relu" in usage
    assert y.shape == (0, 4, 7, 7)


def usage_without_fusion(model, feeds, *expected):
    fused, usage, _ = run_with(model, feeds, FUSED)
    unfused, _, _ = run_with(model, feeds, UNFUSED)
    for a, b in zip(fused, unfused):
        np.testing.assert_array_equal(a, b)
    for e in expected:
        assert e in usage, usage
    return usage


def test_not_fused_when_conv_output_has_another_consumer():
    extra = [helper.make_node("Neg", ["c"], ["n"])]
    model, feeds = chain_model([1, 3, 6, 6], [4, 3, 3, 3], extra_nodes=extra, outputs=["r", "n"])
    usage_without_fusion(model, feeds, f"Conv/float32/{IM2COL_CONV_PATH}", "BatchNormalization/float32/per-channel")


def test_not_fused_when_conv_output_is_a_graph_output():
    model, feeds = chain_model([1, 3, 6, 6], [4, 3, 3, 3], outputs=["r", "c"])
    usage_without_fusion(model, feeds, f"Conv/float32/{IM2COL_CONV_PATH}", "BatchNormalization/float32/per-channel")


def test_relu_stays_separate_when_bn_output_is_a_graph_output():
    model, feeds = chain_model([1, 3, 6, 6], [4, 3, 3, 3], outputs=["r", "bn"])
    fused, usage, _ = run_with(model, feeds, FUSED)
    assert f"Conv/float32/{IM2COL_CONV_PATH}+bn" in usage and "Relu/float32/loop" in usage
    for a, b in zip(fused, run_with(model, feeds, UNFUSED)[0]):
        assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_relu_stays_separate_when_bn_output_has_another_consumer():
    extra = [helper.make_node("Neg", ["bn"], ["n"])]
    model, feeds = chain_model([1, 3, 6, 6], [4, 3, 3, 3], extra_nodes=extra, outputs=["r", "n"])
    fused, usage, _ = run_with(model, feeds, FUSED)
    assert f"Conv/float32/{IM2COL_CONV_PATH}+bn" in usage and "Relu/float32/loop" in usage
    for a, b in zip(fused, run_with(model, feeds, UNFUSED)[0]):
        assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("param", ["w", "b", "scale", "var"])
def test_not_fused_when_a_parameter_is_a_graph_input(param):
    model, feeds = chain_model([1, 3, 6, 6], [4, 3, 3, 3], input_names=[param])
    usage_without_fusion(model, feeds, "BatchNormalization/float32/per-channel", "Relu/float32/loop")


def test_not_fused_when_a_graph_input_can_override_the_initializer():
    # An initializer that is also a graph input is only a default: a caller may feed another value.
    model, feeds = chain_model([1, 3, 6, 6], [4, 3, 3, 3], input_names=["mean"], init_names=["mean"])
    usage_without_fusion(model, feeds, "BatchNormalization/float32/per-channel")
    feeds["mean"] = feeds["mean"] + 1
    fused, _, _ = run_with(model, feeds, FUSED)
    assert_close(fused[0], run_ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


def test_not_fused_when_a_subgraph_reads_the_conv_output():
    then_g = helper.make_graph([helper.make_node("Neg", ["c"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Identity", ["r"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    extra = [helper.make_node("Constant", [], ["cond"], value=helper.make_tensor("v", TensorProto.BOOL, [], [True])),
             helper.make_node("If", ["cond"], ["out"], then_branch=then_g, else_branch=else_g)]
    model, feeds = chain_model([1, 3, 6, 6], [4, 3, 3, 3], extra_nodes=extra, outputs=["out"])
    usage_without_fusion(model, feeds, "BatchNormalization/float32/per-channel")


def test_not_fused_before_opset_9():
    model, feeds = chain_model([1, 3, 6, 6], [4, 3, 3, 3])
    model.opset_import[0].version = 8
    usage_without_fusion(model, feeds, "BatchNormalization/float32/per-channel")


@pytest.mark.parametrize("op", ["Relu", "BatchNormalization", "Conv"])
def test_custom_kernel_for_a_chain_op_is_not_fused(op):
    def custom(*inputs, **attrs):
        x = np.asarray(inputs[0])
        if op == "Relu":
            return np.maximum(x, 0) + 1                        # distinguishable from the built-in
        if op == "BatchNormalization":
            return x * 2
        return np.zeros((x.shape[0], 4) + x.shape[2:], np.float32) + 0.5   # Conv, pads keep the size

    kernels = runtime.KernelContext(runtime.default_opset(23))
    runtime.register_kernel("", op, custom, kernel_context=kernels)
    model, feeds = chain_model([1, 3, 6, 9], [4, 3, 3, 3], {"pads": [1, 1, 1, 1]})
    results = []
    for fuse in (True, False):
        ctx = runtime.RuntimeContext(kernels)
        ctx.set_kernel_usage_enabled(True)
        options = runtime.RuntimeSessionOptions(kernel_context=kernels, fuse_conv_batchnorm=fuse)
        results.append((run_ours(model, feeds, context=ctx, options=options)[0], ctx.get_kernel_usage()))
    (fused, usage), (unfused, _) = results
    assert f"{op}/any/python" in usage
    if op == "Relu":   # Conv and BatchNormalization still fold; the custom Relu runs on its own
        assert f"Conv/float32/{IM2COL_CONV_PATH}+bn" in usage
    else:
        assert not any("+bn" in u for u in usage), usage
    assert_close(fused, unfused, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(DIRECT_CONV_PATH != "direct-avx512", reason="this run already takes the baseline path")
def test_conv_tests_pass_on_the_baseline_path():
    # CPUs without AVX-512 run im2col + BLAS; ONNX_LIGHT_DISABLE_AVX512 makes this one do the same.
    env = dict(os.environ, ONNX_LIGHT_DISABLE_AVX512="1")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_conv_fusion.py",
         "test_ops_linalg.py", "test_models.py", "-k", "conv or Conv or cnn"],
        cwd=Path(__file__).parent, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout


def test_out_of_order_graph_is_still_reported():
    model, feeds = chain_model([1, 3, 6, 9], [4, 3, 3, 3], {"pads": [1, 1, 1, 1]})
    nodes = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend([nodes[1], nodes[0], nodes[2]])   # BatchNormalization before its Conv
    for options in (FUSED, UNFUSED):
        with pytest.raises(ValueError, match="not produced by an earlier node"):
            runtime.RuntimeSession(model, options)
