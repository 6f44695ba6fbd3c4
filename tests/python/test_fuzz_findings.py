"""Regression tests for disagreements the operator fuzzer (tests/fuzz/op_fuzzer.py) found where
onnx-light was wrong, and for the rules docs/semantics.md defines where the spec is silent."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import AttributeProto, helper

from node_check import run_ours
from test_size_overflow import named_model


def test_group_normalization_with_a_huge_scale_keeps_the_mean_at_zero():
    # Folding the mean into the offset gave x * inf - inf = NaN for the one-element group.
    feeds = {"x": np.array([[[2.11571]]], np.float32), "scale": np.array([1e38], np.float32),
             "bias": np.array([-0.0], np.float32)}
    (y,) = run_ours(named_model("GroupNormalization", feeds, {"num_groups": 1}, opset=18), feeds)
    np.testing.assert_array_equal(y, np.zeros((1, 1, 1), np.float32))


def test_resize_of_integers_rounds_the_float64_result_once():
    # onnx-light's rule (docs/semantics.md): interpolate in float64, round half to even once.
    # onnx.reference truncates after each axis, ORT truncates; the fuzzer lists both.
    x = np.array([[8, 3, -8, -5], [1, 4, 9, 0]], np.int32)
    feeds = {"x": x, "roi": np.zeros(0, np.float32), "scales": np.array([2, 2], np.float32)}
    (y,) = run_ours(named_model("Resize", feeds, {"mode": "linear"}, opset=13), feeds)
    as_float = {**feeds, "x": x.astype(np.float64)}
    (expected,) = run_ours(named_model("Resize", as_float, {"mode": "linear"}, opset=13), as_float)
    assert np.any(expected != np.trunc(expected))  # the case has fractions to round
    np.testing.assert_array_equal(y, np.rint(expected).astype(np.int32))


def test_attention_propagates_a_nan_score():
    q = np.zeros((1, 1, 2, 4), np.float32)
    q[0, 0, 0, 1] = np.nan
    k = np.ones((1, 1, 3, 4), np.float32)
    v = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    feeds = {"q": q, "k": k, "v": v}
    (y,) = run_ours(named_model("Attention", feeds, opset=23), feeds)
    assert np.isnan(y[0, 0, 0]).all()
    np.testing.assert_allclose(y[0, 0, 1], v[0, 0].mean(axis=0), rtol=1e-6)


def test_global_max_pool_skips_nan_like_max_pool():
    x = np.array([[[[np.nan, 1.0], [3.0, 2.0]]], [[[np.nan, np.nan], [np.nan, np.nan]]]], np.float32)
    (y,) = run_ours(named_model("GlobalMaxPool", {"x": x}), {"x": x})
    np.testing.assert_array_equal(y.reshape(-1), [3.0, -np.inf])
    (z,) = run_ours(named_model("MaxPool", {"x": x}, {"kernel_shape": [2, 2]}), {"x": x})
    np.testing.assert_array_equal(z.reshape(-1), y.reshape(-1))


@pytest.mark.parametrize("op,x,expected", [
    ("ReduceLogSumExp", [[1, 2, 3]], [3]),      # log(e + e^2 + e^3) = 3.41
    ("ReduceLogSumExp", [[-5, -6]], [-4]),      # -4.69 truncated toward zero
    ("ReduceLogSum", [[-1, -2]], [0]),          # log(-3) is NaN -> 0
    ("ReduceLogSum", [[0, 0]], [np.iinfo(np.int32).min]),  # log(0) = -inf saturates
    ("ReduceLogSum", [[2**30, 2**30, 2**30]], [21]),  # the float64 sum, not a wrapped int32 sum
])
def test_integer_log_reductions_follow_the_float64_rule(op, x, expected):
    feeds = {"x": np.array(x, np.int32), "axes": np.array([1], np.int64)}
    (y,) = run_ours(named_model(op, feeds, {"keepdims": 0}, opset=18), feeds)
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("opset", [1, 11])
def test_squeeze_with_an_empty_axes_attribute_drops_every_size_1_axis(opset):
    x = np.ones((1, 2, 1), np.float32)
    model = named_model("Squeeze", {"x": x}, opset=opset)
    model.graph.node[0].attribute.append(helper.make_attribute("axes", [], attr_type=AttributeProto.INTS))
    (y,) = run_ours(model, {"x": x})
    assert y.shape == (2,)



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_with_padding_taller_than_the_input_stays_in_bounds(dtype):
    # Height 1, kernel 3 with dilation 2 and SAME_UPPER: 2 rows of padding on each side. The
    # im2col fast path wrote zeros past its column block (a crash found by the fuzzer).
    rng = np.random.default_rng(0)
    feeds = {"x": rng.random((1, 2, 1, 4)).astype(dtype), "w": rng.random((1, 2, 3, 3)).astype(dtype),
             "b": rng.random(1).astype(dtype)}
    attrs = {"dilations": [2, 1], "auto_pad": "SAME_UPPER", "kernel_shape": [3, 3]}
    model = named_model("Conv", feeds, attrs, opset=11)
    (y,) = run_ours(model, feeds)
    # Only the middle kernel row meets the input: a 1 x 3 convolution with padding 1.
    x, w, b = feeds["x"][0, :, 0], feeds["w"][0, :, 1], feeds["b"][0]
    padded = np.pad(x, ((0, 0), (1, 1)))
    expected = np.array([(padded[:, j:j + 3] * w).sum() for j in range(4)]) + b
    np.testing.assert_allclose(y.reshape(-1), expected, rtol=1e-5)


@pytest.mark.parametrize("op,attrs", [("MaxPool", {"kernel_shape": [2]}), ("MaxPool", {"kernel_shape": [1], "ceil_mode": 1}),
                                      ("GlobalMaxPool", {})])
def test_max_pool_of_minus_infinity_is_minus_infinity(op, attrs):
    # The running maximum started at the lowest finite value, so a window of -inf gave -FLT_MAX.
    x = np.array([[[-np.inf, -np.inf, 1.0, -np.inf]]], np.float32)[:, :, :2]
    (y,) = run_ours(named_model(op, {"x": x}, attrs), {"x": x})
    assert np.all(y == -np.inf), y


def test_max_pool_2x2_fast_path_keeps_minus_infinity():
    x = np.full((1, 1, 4, 8), -np.inf, np.float32)
    (y,) = run_ours(named_model("MaxPool", {"x": x}, {"kernel_shape": [2, 2], "strides": [2, 2]}), {"x": x})
    assert y.shape == (1, 1, 2, 4) and np.all(y == -np.inf)


@pytest.mark.parametrize("opset", [1, 6])
def test_clip_before_opset_11_clamps_infinities_to_the_float_range(opset):
    x = np.array([np.inf, -np.inf, 1.5], np.float32)
    attrs = {"consumed_inputs": [0]} if opset == 1 else {}
    (y,) = run_ours(named_model("Clip", {"x": x}, attrs, opset=opset), {"x": x})
    f = np.finfo(np.float32)
    np.testing.assert_array_equal(y, [f.max, f.min, 1.5])


@pytest.mark.parametrize("dtype,values,expected", [
    (np.uint64, [2**64 - 2], 2**64 - 2),             # was 2^64 - 1 through a float64 quotient
    (np.int64, [2**61 + 1, 2**61 + 3], 2**61 + 2),   # a float64 quotient gives 2^61
    (np.int64, [-7, 0], -3),                         # truncation toward zero, like numpy's int(mean)
    (np.int32, [1, 2, 2], 1),
])
def test_integer_reduce_mean_is_exact(dtype, values, expected):
    feeds = {"x": np.array(values, dtype)}
    (y,) = run_ours(named_model("ReduceMean", feeds, {"axes": [0], "keepdims": 0}, opset=11), feeds)
    assert y.dtype == dtype and int(y) == expected
