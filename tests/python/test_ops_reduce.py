"""Reductions, arg/top-k/cumsum, softmax family, normalisation and Dropout against onnx.reference
(or ONNX Runtime where the reference implements another opset's semantics)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import assert_close, check_model, check_node, node_model, random, run_ours, run_reference, usage_of

BF16 = ml_dtypes.bfloat16

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]
# Versions where `axes` becomes an input (ReduceSum earlier than the rest).
AXES_INPUT_SINCE = {op: (13 if op == "ReduceSum" else 18) for op in REDUCE_OPS}


def reduce_input(op, shape, dtype, seed=0):
    # Positive values for ReduceLogSum, small magnitudes for ReduceProd (no overflow).
    if op == "ReduceLogSum":
        return random(shape, dtype, 0.5, 2.0, seed=seed)
    if op == "ReduceProd" and np.dtype(dtype).kind in "iu":
        return random(shape, dtype, 1, 2, seed=seed)
    if op == "ReduceProd":
        return random(shape, dtype, 0.5, 1.5, seed=seed)
    if np.dtype(dtype).kind == "u":
        return random(shape, dtype, 0, 9, seed=seed)
    if np.dtype(dtype).kind == "i":
        return random(shape, dtype, -9, 9, seed=seed)
    return random(shape, dtype, seed=seed)


def reduce_case(op, x, axes, keepdims, opset, noop=None, reference="onnx", rtol=1e-5, atol=1e-6):
    """Runs one reduction with `axes` as an attribute (old opsets) or an input (new ones)."""
    attrs = {"keepdims": keepdims}
    inputs = {"x": x}
    if opset >= AXES_INPUT_SINCE[op]:
        if noop is not None:
            attrs["noop_with_empty_axes"] = noop
        if axes is not None:
            inputs["axes"] = np.array(axes, dtype=np.int64)
    elif axes is not None:
        attrs["axes"] = axes
    return check_node(op, inputs, attrs, opset=opset, reference=reference, rtol=rtol, atol=atol)


def expect_error(exc, model, feeds, *needles):
    with pytest.raises(exc) as info:
        run_ours(model, feeds)
    for needle in needles:
        assert needle in str(info.value), str(info.value)
    return str(info.value)


def named(model, name="the_node"):
    model.graph.node[0].name = name
    return model


# ---- reductions -----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("axes", [None, [1], [-1], [0], [0, 2], [-3, -1], [0, 1, 2], [1, 2]])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("attr_opset", [False, True])
def test_reduce_float32_axes(op, axes, keepdims, attr_opset):
    opset = 13 if attr_opset and op != "ReduceSum" else (11 if attr_opset else 18)
    x = reduce_input(op, (3, 4, 5), np.float32)
    reduce_case(op, x, axes, keepdims, opset)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("shape,axes", [((2, 3, 4, 5), [0, 2]), ((2, 3, 4, 5), [1, 3]), ((2, 3, 4, 5), [0, 1, 3]),
                                        ((2, 1, 4, 1), [1, 2]), ((1, 6, 1, 7), [0, 3]), ((4, 33), [1]),
                                        ((33, 4), [0]), ((5,), [0])])
def test_reduce_merged_layouts(op, shape, axes):
    x = reduce_input(op, shape, np.float32, seed=1)
    reduce_case(op, x, axes, 1, 18)
    reduce_case(op, x, axes, 0, 18)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int64])
def test_reduce_dtypes(op, dtype):
    if np.dtype(dtype).kind == "i" and op in ("ReduceLogSum", "ReduceLogSumExp"):
        # onnx.reference refuses integer Log* reductions (removed from the schema in opset 28);
        # compare with the float computation truncated back instead.
        x = random((3, 4), dtype, 1, 5)
        model = node_model(op, {"x": x, "axes": np.array([1], np.int64)})
        expected = run_reference(node_model(op, {"x": x.astype(np.float64), "axes": np.array([1], np.int64)}),
                                 {"x": x.astype(np.float64), "axes": np.array([1], np.int64)})[0]
        actual = run_ours(model, {"x": x, "axes": np.array([1], np.int64)})[0]
        assert_close(actual, np.trunc(expected).astype(dtype))
        return
    x = reduce_input(op, (3, 4, 6), dtype)
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype == np.float16 else {}
    if op == "ReduceSumSquare" and dtype == np.int32:
        reference = "ort"  # onnx.reference widens int32 sums of squares to int64
    else:
        reference = "onnx"
    for axes in ([1], [0, 2], None):
        reduce_case(op, x, axes, 1, 18, reference=reference, **tol)


@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_bfloat16(op):
    x = reduce_input(op, (3, 4, 6), np.float32).astype(BF16)
    feeds = {"x": x, "axes": np.array([0, 2], np.int64)}
    actual = run_ours(node_model(op, feeds), feeds)[0]
    assert actual.dtype == BF16
    ref_feeds = {"x": x.astype(np.float32), "axes": feeds["axes"]}
    expected = run_reference(node_model(op, ref_feeds), ref_feeds)[0]
    np.testing.assert_allclose(actual.astype(np.float32), expected, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.uint32, np.uint64, np.bool_])
def test_reduce_max_min_small_types(op, dtype):
    x = random((4, 5, 3), dtype, 0, 100) if dtype != np.bool_ else random((4, 5, 3), dtype)
    for axes in ([1], [0, 2], None):
        reduce_case(op, x, axes, 0, 20)


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_noop_with_empty_axes(op, keepdims):
    x = reduce_input(op, (3, 4), np.float32)
    # Empty axes with noop: no reduction (the element transform of L1/L2/... still applies).
    reduce_case(op, x, [], keepdims, 18, noop=1)
    # Omitted axes with noop: the same.
    reduce_case(op, x, None, keepdims, 18, noop=1)
    # Empty axes without noop: reduce everything.
    reduce_case(op, x, [], keepdims, 18, noop=0)


def test_reduce_noop_is_a_view():
    x = random((3, 4))
    model = node_model("ReduceSum", {"x": x, "axes": np.zeros(0, np.int64)}, {"noop_with_empty_axes": 1})
    assert usage_of(model, {"x": x, "axes": np.zeros(0, np.int64)}) == ["ReduceSum/float32/noop-view"]


@pytest.mark.parametrize("op", REDUCE_OPS)
@pytest.mark.parametrize("shape,axes", [((0, 3), [0]), ((0, 3), [1]), ((2, 0, 3), [1]), ((2, 0, 3), None),
                                        ((2, 0, 3), [0, 2])])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.filterwarnings("ignore:Mean of empty slice")
def test_reduce_empty(op, shape, axes, keepdims):
    x = np.zeros(shape, np.float32)
    with np.errstate(all="ignore"):
        reduce_case(op, x, axes, keepdims, 18)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd"])
def test_reduce_empty_int(op):
    x = np.zeros((2, 0), np.int64)
    reduce_case(op, x, [1], 1, 18)


def test_reduce_scalar_input():
    x = np.array(3.5, np.float32)
    expected = {"ReduceSumSquare": 12.25, "ReduceLogSum": np.log(3.5), "ReduceLogSumExp": 3.5}
    for op in REDUCE_OPS:
        for opset in (18, 13 if op != "ReduceSum" else 11):
            # onnx.reference cannot reduce a 0-d array with ReduceLogSumExp.
            out = run_ours(node_model(op, {"x": x}, {"keepdims": 0}, opset=opset), {"x": x})[0]
            assert out.shape == () and out.dtype == np.float32
            np.testing.assert_allclose(out, expected.get(op, 3.5), rtol=1e-6)


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceLogSumExp"])
def test_reduce_nan_and_inf(op):
    x = np.array([[1.0, np.nan, 3.0], [np.inf, 2.0, -1.0], [-np.inf, -np.inf, 0.5]], np.float32)
    with np.errstate(all="ignore"):
        reduce_case(op, x, [1], 0, 18)


def test_reduce_large_sum_is_accurate():
    x = random((3, 10000), np.float32, 0.0, 1.0)
    reduce_case("ReduceSum", x, [1], 0, 18, rtol=1e-5)
    reduce_case("ReduceMean", x, [0], 0, 18, rtol=1e-5)


def test_reduce_int_sum_overflow_wraps():
    # Integer overflow wraps modulo 2**32 (docs/semantics.md): 4 * 2**30 -> 0, 3 * 2**30 -> -2**30.
    x = np.array([[2**30] * 4, [2**30] * 3 + [0]], np.int32)
    model = node_model("ReduceSum", {"x": x, "axes": np.array([1], np.int64)}, {"keepdims": 0}, opset=18)
    assert run_ours(model, {"x": x, "axes": np.array([1], np.int64)})[0].tolist() == [0, -(2**30)]
    # Products and sums of squares too: 2**16 * 2**16 * 3 = 3 * 2**32 -> 0, and
    # 2**40 + 2**24 + 1 -> 2**24 + 1.
    x = np.array([[2**16, 2**16, 3], [2**20, 2**12, 1]], np.int32)
    feeds = {"x": x, "axes": np.array([1], np.int64)}
    assert run_ours(node_model("ReduceProd", feeds, {"keepdims": 0}, opset=18), feeds)[0].tolist() == [0, 0]
    assert run_ours(node_model("ReduceSumSquare", feeds, {"keepdims": 0}, opset=18), feeds)[0].tolist() == [
        9, 2**24 + 1]


def test_reduce_kernel_usage_paths():
    x = random((2, 3, 4, 5))

    def path(axes):
        feeds = {"x": x, "axes": np.array(axes, np.int64)}
        return usage_of(node_model("ReduceSum", feeds), feeds)

    assert path([3]) == ["ReduceSum/float32/contiguous"]
    assert path([2, 3]) == ["ReduceSum/float32/contiguous"]
    assert path([1]) == ["ReduceSum/float32/strided"]
    assert path([0, 2]) == ["ReduceSum/float32/multi-axis"]


@pytest.mark.parametrize("axes", [[3], [-4], [0, 0], [1, -1]])
def test_reduce_bad_axes(axes):
    x = random((2, 3))
    feeds = {"x": x, "axes": np.array(axes, np.int64)}
    expect_error(ValueError, named(node_model("ReduceMean", feeds)), feeds, "the_node", "ReduceMean")


def test_reduce_bad_axes_attribute():
    x = random((2, 3))
    model = named(node_model("ReduceMax", {"x": x}, {"axes": [2]}, opset=13))
    expect_error(ValueError, model, {"x": x}, "the_node", "axes 2", "rank 2")


def test_reduce_unsupported_type():
    x = random((2, 3), np.bool_)
    feeds = {"x": x, "axes": np.array([1], np.int64)}
    expect_error(NotImplementedError, named(node_model("ReduceSum", feeds, opset=13)), feeds, "the_node", "bool")


# ---- ArgMax / ArgMin ------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64, np.int8, np.uint8])
@pytest.mark.parametrize("axis", [0, 1, -1, 2])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("select_last_index", [0, 1])
def test_arg(op, dtype, axis, keepdims, select_last_index):
    # Few distinct values so ties happen and select_last_index matters.
    x = random((3, 4, 5), dtype, 0, 3)
    check_node(op, {"x": x}, {"axis": axis, "keepdims": keepdims, "select_last_index": select_last_index},
               opset=13)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_old_opset_defaults_and_bfloat16(op):
    x = random((4, 6))
    check_node(op, {"x": x}, opset=1)  # axis 0, keepdims 1
    check_node(op, {"x": x}, {"axis": -1, "keepdims": 0}, opset=11)
    xb = x.astype(BF16)
    actual = run_ours(node_model(op, {"x": xb}, {"axis": 1}), {"x": xb})[0]
    expected = run_reference(node_model(op, {"x": x}, {"axis": 1}), {"x": xb.astype(np.float32)})[0]
    assert_close(actual, expected)


def test_arg_nan():
    # The spec is silent on NaN; ours (docs/semantics.md): a NaN wins for ArgMax and ArgMin alike,
    # the first one (the last with select_last_index).
    x = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, 1.0]], np.float32)
    expected = {("ArgMax", 0): [1, 1], ("ArgMax", 1): [3, 2], ("ArgMin", 0): [1, 3], ("ArgMin", 1): [3, 3]}
    for (op, last), indices in expected.items():
        model = node_model(op, {"x": x}, {"axis": 1, "select_last_index": last, "keepdims": 0})
        assert run_ours(model, {"x": x})[0].tolist() == indices, (op, last)


def test_arg_errors():
    x = np.zeros((2, 0), np.float32)
    expect_error(ValueError, named(node_model("ArgMax", {"x": x}, {"axis": 1})), {"x": x}, "the_node", "empty")
    x = random((2, 3))
    expect_error(ValueError, named(node_model("ArgMin", {"x": x}, {"axis": 2})), {"x": x}, "the_node", "axis 2")
    # An empty outer dimension is fine.
    check_node("ArgMax", {"x": np.zeros((0, 3), np.float32)}, {"axis": 1})


# ---- TopK -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_topk_ties(dtype, axis, largest, k):
    # Values drawn from {0..3}: many ties, which must come out lower index first.
    x = random((5, 5, 4) if axis != -1 else (3, 4, 5), dtype, 0, 3)
    if k > x.shape[axis]:
        k = x.shape[axis]
    check_node("TopK", {"x": x, "k": np.array([k], np.int64)}, {"axis": axis, "largest": largest}, n_outputs=2,
               opset=11)


@pytest.mark.parametrize("opset", [1, 10, 11])
def test_topk_versions(opset):
    x = random((4, 20), seed=3)
    if opset == 1:
        check_node("TopK", {"x": x}, {"k": 4}, n_outputs=2, opset=1)
    else:
        check_node("TopK", {"x": x, "k": np.array([7], np.int64)}, n_outputs=2, opset=opset)


def test_topk_unsorted_and_bfloat16_and_nan():
    x = random((3, 8), seed=4)
    # With sorted=0 the spec leaves the order open; ours is the sorted=1 order (docs/semantics.md).
    # The reference's set of results is compared ordered by index.
    feeds = {"x": x, "k": np.array([3], np.int64)}
    for largest in (0, 1):
        model = node_model("TopK", feeds, {"sorted": 0, "largest": largest}, n_outputs=2)
        ours, reference = run_ours(model, feeds), run_reference(model, feeds)
        ours_sorted = run_ours(node_model("TopK", feeds, {"sorted": 1, "largest": largest}, n_outputs=2), feeds)
        assert_close(ours[0], ours_sorted[0])
        assert_close(ours[1], ours_sorted[1])
        for got in (ours, reference):
            order = np.argsort(got[1], axis=1)
            got[0], got[1] = np.take_along_axis(got[0], order, 1), np.take_along_axis(got[1], order, 1)
        assert_close(ours[0], reference[0])
        assert_close(ours[1], reference[1])
    xb = x.astype(BF16)
    feeds = {"x": xb, "k": np.array([3], np.int64)}
    values, indices = run_ours(node_model("TopK", feeds, n_outputs=2), feeds)
    ref = run_reference(node_model("TopK", {"x": x, "k": feeds["k"]}, n_outputs=2),
                        {"x": xb.astype(np.float32), "k": feeds["k"]})
    assert values.dtype == BF16
    np.testing.assert_array_equal(values.astype(np.float32), ref[0])
    np.testing.assert_array_equal(indices, ref[1])
    # The spec is silent on NaN; ours (docs/semantics.md): NaN ranks above every number, ties go
    # to the lower index.
    x = np.array([[1.0, np.nan, 3.0, 2.0, np.nan]], np.float32)
    feeds = {"x": x, "k": np.array([4], np.int64)}
    expected = {0: ([1.0, 2.0, 3.0, np.nan], [0, 3, 2, 1]), 1: ([np.nan, np.nan, 3.0, 2.0], [1, 4, 2, 3])}
    for largest, (values, indices) in expected.items():
        got = run_ours(node_model("TopK", feeds, {"largest": largest}, n_outputs=2), feeds)
        np.testing.assert_array_equal(got[0], np.array([values], np.float32))
        assert got[1].tolist() == [indices]


def test_topk_errors():
    x = random((2, 3))
    feeds = {"x": x, "k": np.array([4], np.int64)}
    expect_error(ValueError, named(node_model("TopK", feeds, n_outputs=2)), feeds, "the_node", "K = 4")
    feeds = {"x": x, "k": np.array([-1], np.int64)}
    expect_error(ValueError, named(node_model("TopK", feeds, n_outputs=2)), feeds, "the_node", "K = -1")
    feeds = {"x": x, "k": np.array([1, 2], np.int64)}
    expect_error(ValueError, named(node_model("TopK", feeds, n_outputs=2)), feeds, "the_node", "'K'")
    feeds = {"x": x, "k": np.array([1], np.int64)}
    expect_error(ValueError, named(node_model("TopK", feeds, {"axis": 2}, n_outputs=2)), feeds, "the_node", "axis")


# ---- CumSum ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint32, np.uint64])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_cumsum(dtype, axis, exclusive, reverse):
    x = random((3, 4, 5), dtype, 0, 5)
    tol = {"rtol": 1e-3, "atol": 1e-2} if dtype == np.float16 else {}
    check_node("CumSum", {"x": x, "axis": np.array(axis, np.int32)}, {"exclusive": exclusive, "reverse": reverse},
               opset=14, **tol)


def test_cumsum_int64_axis_bfloat16_and_empty():
    x = random((4, 6))
    check_node("CumSum", {"x": x, "axis": np.array(-1, np.int64)}, opset=11)
    check_node("CumSum", {"x": np.zeros((0, 3), np.float32), "axis": np.array(1, np.int64)})
    xb = x.astype(BF16)
    feeds = {"x": xb, "axis": np.array(1, np.int64)}
    actual = run_ours(node_model("CumSum", feeds), feeds)[0]
    np.testing.assert_allclose(actual.astype(np.float32), np.cumsum(xb.astype(np.float32), axis=1), rtol=2e-2,
                               atol=2e-2)


def test_cumsum_errors():
    x = random((2, 3))
    feeds = {"x": x, "axis": np.array(2, np.int64)}
    expect_error(ValueError, named(node_model("CumSum", feeds)), feeds, "the_node", "axis 2")
    feeds = {"x": x, "axis": np.array([0, 1], np.int64)}
    expect_error(ValueError, named(node_model("CumSum", feeds)), feeds, "the_node", "'axis'")


# ---- Softmax / LogSoftmax / Hardmax ---------------------------------------------------------------


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_softmax_opset13_single_axis(op, axis):
    x = random((3, 4, 5), low=-5, high=5)
    check_node(op, {"x": x}, {"axis": axis}, opset=13)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, None])
def test_softmax_opset11_coerced_2d(op, axis):
    # onnx.reference implements only the opset-13 single-axis form; ORT follows each version.
    x = random((3, 4, 5), low=-5, high=5)
    attrs = {} if axis is None else {"axis": axis}
    check_node(op, {"x": x}, attrs, opset=11, reference="ort")


def test_softmax_opset11_differs_from_13():
    x = random((3, 4, 5))
    old = check_node("Softmax", {"x": x}, {"axis": 1}, opset=11, reference="ort")[0]
    new = check_node("Softmax", {"x": x}, {"axis": 1}, opset=13)[0]
    np.testing.assert_allclose(old.reshape(3, 20).sum(axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(new.sum(axis=1), 1.0, rtol=1e-5)
    assert not np.allclose(old, new)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_softmax_dtypes(op, dtype):
    x = random((4, 6, 3), dtype)
    tol = {"rtol": 2e-3, "atol": 2e-3} if dtype == np.float16 else {}
    check_node(op, {"x": x}, {"axis": -1}, **tol)
    check_node(op, {"x": x}, {"axis": 1}, **tol)


def test_softmax_bfloat16_large_values_and_empty():
    x = random((2, 8), low=-3, high=3)
    xb = x.astype(BF16)
    actual = run_ours(node_model("Softmax", {"x": xb}), {"x": xb})[0]
    expected = run_reference(node_model("Softmax", {"x": x}), {"x": xb.astype(np.float32)})[0]
    np.testing.assert_allclose(actual.astype(np.float32), expected, rtol=2e-2, atol=1e-2)
    big = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0]], np.float32)
    for op in ("Softmax", "LogSoftmax"):
        out = check_node(op, {"x": big}, {"axis": -1})[0]
        assert np.all(np.isfinite(out))
    check_node("Softmax", {"x": np.zeros((0, 3), np.float32)})
    check_node("LogSoftmax", {"x": np.zeros((2, 0), np.float32)}, {"axis": 1}, opset=11, reference="ort")


def test_softmax_usage_and_errors():
    x = random((2, 3, 4))
    assert usage_of(node_model("Softmax", {"x": x}, {"axis": -1}), {"x": x}) == ["Softmax/float32/last-axis"]
    assert usage_of(node_model("Softmax", {"x": x}, {"axis": 1}), {"x": x}) == ["Softmax/float32/strided"]
    assert usage_of(node_model("Softmax", {"x": x}, {"axis": 1}, opset=11), {"x": x}) == ["Softmax/float32/2d"]
    expect_error(ValueError, named(node_model("Softmax", {"x": x}, {"axis": 3})), {"x": x}, "the_node", "axis 3")
    xi = random((2, 3), np.int32)
    expect_error(NotImplementedError, named(node_model("Softmax", {"x": xi})), {"x": xi}, "the_node", "int32")


# ---- BatchNormalization ---------------------------------------------------------------------------


def bn_inputs(shape, dtype=np.float32, param_dtype=None, seed=0):
    c = shape[1]
    p = param_dtype or dtype
    return {"x": random(shape, dtype, seed=seed), "scale": random((c,), p, seed=seed + 1),
            "b": random((c,), p, seed=seed + 2), "mean": random((c,), p, seed=seed + 3),
            "var": random((c,), p, 0.5, 2.0, seed=seed + 4)}


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (2, 3, 4, 5), (1, 4, 2, 3, 2)])
@pytest.mark.parametrize("opset", [9, 14, 15])
def test_batchnorm(shape, opset):
    # onnx.reference runs opset-9 BatchNormalization in training mode (batch statistics); ORT
    # runs inference like we do.
    reference = "ort" if opset == 9 else "onnx"
    check_node("BatchNormalization", bn_inputs(shape), {"epsilon": 1e-3}, opset=opset, reference=reference,
               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_batchnorm_dtypes(dtype):
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype == np.float16 else {}
    check_node("BatchNormalization", bn_inputs((2, 3, 4), dtype), opset=15, **tol)
    # opset 15: scale/bias and mean/var may have another type than X.
    inputs = bn_inputs((2, 3, 4), dtype, np.float32)
    actual = run_ours(node_model("BatchNormalization", inputs, opset=15), inputs)[0]
    x = inputs["x"].astype(np.float64)
    p = {k: v.astype(np.float64).reshape(1, 3, 1) for k, v in inputs.items() if k != "x"}
    expected = (x - p["mean"]) / np.sqrt(p["var"] + 1e-5) * p["scale"] + p["b"]
    assert actual.dtype == dtype
    np.testing.assert_allclose(actual.astype(np.float64), expected, **(tol or {"rtol": 1e-6, "atol": 1e-6}))


def test_batchnorm_old_opsets():
    inputs = bn_inputs((2, 3, 4, 4))
    check_node("BatchNormalization", inputs, opset=7, reference="ort", rtol=1e-4, atol=1e-5)
    check_node("BatchNormalization", inputs, {"is_test": 1}, opset=6, rtol=1e-4, atol=1e-5)
    # spatial=0 (opset < 9): parameters per activation, shape [C, H, W].
    x = random((2, 3, 2, 2))
    per_act = {"x": x, "scale": random((3, 2, 2), seed=1), "b": random((3, 2, 2), seed=2),
               "mean": random((3, 2, 2), seed=3), "var": random((3, 2, 2), np.float32, 0.5, 2.0, seed=4)}
    actual = run_ours(node_model("BatchNormalization", per_act, {"spatial": 0}, opset=7), per_act)[0]
    expected = (x - per_act["mean"]) / np.sqrt(per_act["var"] + 1e-5) * per_act["scale"] + per_act["b"]
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


def test_batchnorm_training_outputs_before_opset_14_are_not_implemented():
    # training_mode=1 from opset 14 is implemented (test_ops_training.py); the older training
    # outputs (mean, var, saved_mean, saved_var) are not.
    inputs = bn_inputs((2, 3, 4))
    model = named(node_model("BatchNormalization", inputs, n_outputs=5, opset=9))
    expect_error(NotImplementedError, model, inputs, "the_node", "training")


def test_batchnorm_bad_params():
    inputs = bn_inputs((2, 3, 4))
    inputs["var"] = np.ones(4, np.float32)
    expect_error(ValueError, named(node_model("BatchNormalization", inputs)), inputs, "the_node", "input 4",
                 "[3]")


# ---- InstanceNormalization / GroupNormalization ---------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 4, 3, 3), (1, 2, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_instancenorm(shape, dtype):
    c = shape[1]
    inputs = {"x": random(shape, dtype), "scale": random((c,), dtype, seed=1), "b": random((c,), dtype, seed=2)}
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype == np.float16 else {"rtol": 1e-4, "atol": 1e-5}
    check_node("InstanceNormalization", inputs, {"epsilon": 1e-4}, opset=22, **tol)


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("groups", [1, 2, 4])
@pytest.mark.parametrize("shape", [(2, 4, 3), (2, 4, 3, 2)])
def test_groupnorm(opset, groups, shape):
    c = shape[1]
    n_params = groups if opset == 18 else c
    inputs = {"x": random(shape), "scale": random((n_params,), seed=1), "b": random((n_params,), seed=2)}
    check_node("GroupNormalization", inputs, {"num_groups": groups, "epsilon": 1e-3}, opset=opset, rtol=1e-4,
               atol=1e-5)


def test_groupnorm_18_and_21_differ_and_dtypes():
    x = random((2, 4, 6))
    scale, bias = random((2,), seed=1), random((2,), seed=2)
    old = check_node("GroupNormalization", {"x": x, "scale": scale, "b": bias}, {"num_groups": 2}, opset=18,
                     rtol=1e-4, atol=1e-5)[0]
    new = check_node("GroupNormalization", {"x": x, "scale": np.repeat(scale, 2), "b": np.repeat(bias, 2)},
                     {"num_groups": 2}, opset=21, rtol=1e-4, atol=1e-5)[0]
    np.testing.assert_allclose(old, new, rtol=1e-6)
    for dtype in (np.float64, np.float16):
        inputs = {"x": x.astype(dtype), "scale": random((4,), dtype, seed=1), "b": random((4,), dtype, seed=2)}
        tol = {"rtol": 1e-2, "atol": 1e-2} if dtype == np.float16 else {}
        check_node("GroupNormalization", inputs, {"num_groups": 2}, opset=21, **tol)


def test_groupnorm_errors():
    inputs = {"x": random((2, 4, 3)), "scale": random((4,)), "b": random((4,))}
    expect_error(ValueError, named(node_model("GroupNormalization", inputs, {"num_groups": 3}, opset=21)), inputs,
                 "the_node", "num_groups 3")
    # Opset 18 wants one scale per group.
    expect_error(ValueError, named(node_model("GroupNormalization", inputs, {"num_groups": 2}, opset=18)), inputs,
                 "the_node", "input 1", "[2]")
    expect_error(ValueError, named(node_model("GroupNormalization", inputs, {"num_groups": 0}, opset=21)), inputs,
                 "the_node", "num_groups")
    inputs = {"x": random((2, 4, 3)), "scale": random((3,)), "b": random((4,))}
    expect_error(ValueError, named(node_model("InstanceNormalization", inputs)), inputs, "the_node", "input 1")


# ---- LayerNormalization / RMSNormalization ------------------------------------------------------


@pytest.mark.parametrize("axis", [-1, 1, 0, -2])
@pytest.mark.parametrize("with_bias", [True, False])
def test_layernorm(axis, with_bias):
    x = random((2, 3, 4))
    norm_shape = x.shape[axis:]
    inputs = {"x": x, "scale": random(norm_shape, seed=1)}
    if with_bias:
        inputs["b"] = random(norm_shape, seed=2)
    check_node("LayerNormalization", inputs, {"axis": axis, "epsilon": 1e-3}, n_outputs=3, opset=17, rtol=1e-4,
               atol=1e-5)


@pytest.mark.parametrize("scale_shape", [(4,), (1, 4), (3, 1), (1, 1), (2, 3, 4)])
def test_layernorm_broadcast_scale(scale_shape):
    x = random((2, 3, 4))
    inputs = {"x": x, "scale": random(scale_shape, seed=1), "b": random((4,), seed=2)}
    check_node("LayerNormalization", inputs, {"axis": 1}, n_outputs=3, rtol=1e-4, atol=1e-5)


def test_layernorm_only_y_and_dtypes():
    x = random((3, 8))
    inputs = {"x": x, "scale": random((8,), seed=1), "b": random((8,), seed=2)}
    check_node("LayerNormalization", inputs, rtol=1e-4, atol=1e-5)
    inputs64 = {k: v.astype(np.float64) for k, v in inputs.items()}
    # Mean and InvStdDev have the stash type (float32 by default) whatever X is.
    out = check_node("LayerNormalization", inputs64, n_outputs=3, reference="ort")
    assert out[1].dtype == np.float32 and out[0].dtype == np.float64
    inputs16 = {k: v.astype(np.float16) for k, v in inputs.items()}
    out = check_node("LayerNormalization", inputs16, n_outputs=3, reference="ort", rtol=1e-2, atol=1e-2)
    assert out[1].dtype == np.float32 and out[0].dtype == np.float16
    out = run_ours(node_model("LayerNormalization", inputs, {"stash_type": 11}, n_outputs=3), inputs)
    assert out[1].dtype == np.float64
    expected = run_reference(node_model("LayerNormalization", inputs, n_outputs=3), inputs)
    np.testing.assert_allclose(out[1], expected[1], rtol=1e-5, atol=1e-6)
    xb = {k: v.astype(BF16) for k, v in inputs.items()}
    out = run_ours(node_model("LayerNormalization", xb), xb)[0]
    ref = run_reference(node_model("LayerNormalization", inputs), {k: v.astype(np.float32) for k, v in xb.items()})
    np.testing.assert_allclose(out.astype(np.float32), ref[0], rtol=3e-2, atol=3e-2)


def test_layernorm_errors():
    x = random((2, 3, 4))
    inputs = {"x": x, "scale": random((3,))}
    expect_error(ValueError, named(node_model("LayerNormalization", inputs)), inputs, "the_node", "input 1",
                 "broadcast")
    inputs = {"x": x, "scale": random((4,))}
    expect_error(ValueError, named(node_model("LayerNormalization", inputs, {"axis": 3})), inputs, "the_node",
                 "axis 3")
    with pytest.raises(ValueError, match="stash_type"):
        run_ours(named(node_model("LayerNormalization", inputs, {"stash_type": 7})), inputs)


@pytest.mark.parametrize("axis", [-1, 1, 0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_rmsnorm(axis, dtype):
    x = random((2, 3, 4), dtype)
    inputs = {"x": x, "scale": random(x.shape[axis:], dtype, seed=1)}
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype == np.float16 else {"rtol": 1e-4, "atol": 1e-5}
    check_node("RMSNormalization", inputs, {"axis": axis, "epsilon": 1e-3}, opset=23, **tol)


def test_rmsnorm_broadcast_scale():
    x = random((2, 3, 4))
    inputs = {"x": x, "scale": random((4,), seed=1)}
    check_node("RMSNormalization", inputs, {"axis": 1}, opset=23, rtol=1e-4, atol=1e-5)


# ---- Dropout --------------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [7, 10, 12, 13, 22])
def test_dropout_inference(opset):
    x = random((3, 4))
    if opset < 10:
        # Before opset 10 the mask has the input's type (onnx.reference returns bool regardless).
        out = run_ours(node_model("Dropout", {"x": x}, n_outputs=2, opset=opset), {"x": x})
    else:
        out = check_node("Dropout", {"x": x}, n_outputs=2, opset=opset)
    np.testing.assert_array_equal(out[0], x)
    assert out[1].dtype == (np.bool_ if opset >= 10 else np.float32)
    assert np.all(out[1])
    check_node("Dropout", {"x": x}, opset=opset)


def test_dropout_inputs_and_view():
    x = random((3, 4), np.float16)
    check_node("Dropout", {"x": x, "r": np.array(0.3, np.float32), "t": np.array(False)}, n_outputs=2, opset=13)
    # Training with ratio 0 keeps everything.
    check_node("Dropout", {"x": x, "r": np.array(0.0, np.float32), "t": np.array(True)}, n_outputs=2, opset=13)
    model = node_model("Dropout", {"x": x})
    assert usage_of(model, {"x": x}) == ["Dropout/float16/view"]


def test_dropout_training_bad_inputs():
    # Training mode itself is tested in test_ops_random.py.
    x = random((3, 4))
    feeds = {"x": x, "r": np.array(1.0, np.float32), "t": np.array(True)}
    expect_error(ValueError, named(node_model("Dropout", feeds, n_outputs=2)), feeds, "the_node", "ratio")
    feeds = {"x": x, "r": np.array(0.5, np.float32), "t": np.array([True, False])}
    expect_error(ValueError, named(node_model("Dropout", feeds)), feeds, "the_node", "training_mode")
