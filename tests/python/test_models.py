"""Whole models against ONNX Runtime: a CNN, transformer decoders, control flow, functions."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import assert_close, make_model, run_ort, run_ours
from onnx_light.cnn_model import build_cnn
from onnx_light.decoder_model import build_decoder, empty_cache


def test_small_cnn_matches_onnxruntime():
    model = build_cnn()
    feeds = {"image": np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)}
    (ours,) = run_ours(model, feeds)
    (theirs,) = run_ort(model, feeds)
    assert_close(ours, theirs, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("attention", ["Attention", "Concat"])
def test_decoder_prefill_and_step_match_onnxruntime(attention):
    layers, heads, head_size = 2, 4, 8
    model = build_decoder(layers=layers, heads=heads, head_size=head_size, attention=attention)
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((1, 5, heads * head_size)).astype(np.float32)}
    feeds.update(empty_cache(layers, heads, head_size))
    ours = run_ours(model, feeds)
    theirs = run_ort(model, feeds)
    for a, b in zip(ours, theirs):
        assert_close(a, b, rtol=1e-4, atol=1e-4)
    # One decode step on top of the prefill cache.
    step = {"x": rng.standard_normal((1, 1, heads * head_size)).astype(np.float32)}
    names = [o.name for o in model.graph.output]
    for i in range(layers):
        step[f"past_key_{i}"] = theirs[names.index(f"present_key_{i}")]
        step[f"past_value_{i}"] = theirs[names.index(f"present_value_{i}")]
    for a, b in zip(run_ours(model, step), run_ort(model, step)):
        assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_if_loop_scan_model_matches_onnxruntime():
    f = TensorProto.FLOAT
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", f, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", f, None)])
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "x"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc", f, [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", f, [3]),
         helper.make_tensor_value_info("scan_out", f, [3])])
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["s", "row"], ["s_next"]), helper.make_node("Identity", ["s_next"], ["y_row"])],
        "scan_body",
        [helper.make_tensor_value_info("s", f, [3]), helper.make_tensor_value_info("row", f, [3])],
        [helper.make_tensor_value_info("s_next", f, [3]), helper.make_tensor_value_info("y_row", f, [3])])
    nodes = [
        helper.make_node("If", ["c"], ["branch"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["m", "", "x"], ["loop_acc", "loop_scan"], body=body),
        helper.make_node("Scan", ["x", "rows"], ["scan_state", "scan_ys"], body=scan_body, num_scan_inputs=1),
    ]
    feeds = {"x": np.array([1.0, -2.0, 3.0], np.float32), "c": np.array(True), "m": np.array(4, np.int64),
             "rows": np.arange(12, dtype=np.float32).reshape(4, 3)}
    model = make_model(nodes, feeds, ["branch", "loop_acc", "loop_scan", "scan_state", "scan_ys"])
    for c in (True, False):
        feeds["c"] = np.array(c)
        for a, b in zip(run_ours(model, feeds), run_ort(model, feeds)):
            assert_close(a, b)


def test_nested_model_local_function_with_attribute_reference():
    from onnx import AttributeProto
    from onnx import helper as h

    inner = h.make_function("local", "ScaleBy", ["a"], ["b"], [h.make_node("Mul", ["a", "a"], ["b"])],
                            [h.make_opsetid("", 23)])
    leaky = h.make_node("LeakyRelu", ["u"], ["v"])
    leaky.attribute.append(h.make_attribute_ref("alpha", AttributeProto.FLOAT))
    outer = h.make_function("local", "SquareThenLeaky", ["u0"], ["v"],
                            [h.make_node("ScaleBy", ["u0"], ["u"], domain="local"), leaky],
                            [h.make_opsetid("", 23), h.make_opsetid("local", 1)], attributes=["alpha"])
    node = h.make_node("SquareThenLeaky", ["x"], ["y"], domain="local", alpha=0.25)
    feeds = {"x": np.array([-2.0, -0.5, 1.0, 3.0], np.float32)}
    model = make_model([node], feeds, ["y"], extra_opsets={"local": 1}, functions=[inner, outer])
    (ours,) = run_ours(model, feeds)
    (theirs,) = run_ort(model, feeds)
    assert_close(ours, theirs)


def test_intermediates_are_released_so_peak_stays_below_their_sum():
    # A chain of 20 nodes each producing a fresh 1 MB tensor: with release after the last use,
    # at most a few are alive at once.
    n, size = 20, 1 << 18
    nodes = [helper.make_node("Concat", ["x" if i == 0 else f"t{i - 1}", "zero"], [f"t{i}"], axis=0)
             for i in range(n)]
    nodes.append(helper.make_node("Identity", [f"t{n - 1}"], ["y"]))
    feeds = {"x": np.ones(size, np.float32)}
    model = make_model(nodes, feeds, ["y"], initializers={"zero": np.zeros(0, np.float32)})
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    runtime.RuntimeSession(model).run(ctx, feeds)
    intermediates = n * size * 4
    peak = max(e.peak_bytes for e in ctx.events())
    assert peak < intermediates / 4, (peak, intermediates)
    removed = [e for e in ctx.events() if e.as_dict()["action"] == "remove"]
    assert len(removed) >= n - 1
