"""Unique, Compress, ReverseSequence, EyeLike, Det and Shrink against onnx.reference, plus our
definitions where the spec says nothing (see docs/semantics.md)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import (assert_close, check_node, expect_error, make_model, node_model, random, run_ours, run_reference,
                        usage_of)

BF16 = ml_dtypes.bfloat16


def expect_build_error(model, *needles):
    with pytest.raises(Exception) as info:
        runtime.RuntimeSession(model)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in {info.value}"


# ---- Unique -----------------------------------------------------------------------------------

UNIQUE_TYPES = [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", UNIQUE_TYPES)
@pytest.mark.parametrize("sorted_", [0, 1])
def test_unique_flattened_matches_reference(dtype, sorted_):
    x = random((4, 7), np.int64, 0, 6, seed=3).astype(dtype)
    # onnx.reference flattens unsorted results correctly only for 1-D inputs (np.take on axis 0).
    check_node("Unique", {"x": x if sorted_ else x.ravel()}, {"sorted": sorted_}, n_outputs=4)


@pytest.mark.parametrize("axis", [0, 1, -1, 2, -3])
def test_unique_sorted_axis_matches_reference(axis):
    x = random((3, 4, 2), np.int32, 0, 1, seed=1)
    x[1] = x[0]  # duplicates along axis 0
    x[:, 2] = x[:, 0]
    check_node("Unique", {"x": x}, {"sorted": 1, "axis": axis}, n_outputs=4)


def test_unique_unsorted_axis0_matches_reference():
    x = np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4], [0, 1, 1], [2, 3, 4]], dtype=np.float32)
    check_node("Unique", {"x": x}, {"sorted": 0, "axis": 0}, n_outputs=4)


def test_unique_unsorted_axis1_first_occurrence_order():
    # onnx.reference takes the unsorted slices along axis 0 whatever the axis (a reference bug),
    # so this pins our result directly: slices along axis 1 in order of first occurrence.
    x = np.array([[3, 1, 3, 2], [0, 5, 0, 6]], dtype=np.int64)
    y, idx, inv, cnt = run_ours(node_model("Unique", {"x": x}, {"sorted": 0, "axis": 1}, n_outputs=4), {"x": x})
    np.testing.assert_array_equal(y, [[3, 1, 2], [0, 5, 6]])
    np.testing.assert_array_equal(idx, [0, 1, 3])
    np.testing.assert_array_equal(inv, [0, 1, 0, 2])
    np.testing.assert_array_equal(cnt, [2, 1, 1])


def test_unique_one_output_unsorted_keeps_first_occurrence_order():
    # onnx.reference returns the sorted values when only Y is requested; we honour sorted=0.
    x = np.array([4, 1, 4, 0, 1], dtype=np.int32)
    (y,) = run_ours(node_model("Unique", {"x": x}, {"sorted": 0}), {"x": x})
    np.testing.assert_array_equal(y, [4, 1, 0])


def test_unique_strings_and_bool():
    s = np.array(["b", "a", "b", "", "c", "a"], dtype=object)
    check_node("Unique", {"x": s}, {"sorted": 1}, n_outputs=4)
    b = np.array([[True, False], [True, True]])
    check_node("Unique", {"x": b}, {"sorted": 1}, n_outputs=4)
    check_node("Unique", {"x": b.ravel()}, {"sorted": 0}, n_outputs=4)
    # onnx.reference fails on unsorted strings (it hashes numpy arrays): our result directly.
    y, idx, inv, cnt = run_ours(node_model("Unique", {"x": s}, {"sorted": 0}, n_outputs=4), {"x": s})
    assert y.tolist() == ["b", "a", "", "c"]
    np.testing.assert_array_equal(idx, [0, 1, 3, 4])
    np.testing.assert_array_equal(inv, [0, 1, 0, 2, 3, 1])
    np.testing.assert_array_equal(cnt, [2, 2, 1, 1])


def test_unique_bfloat16_at_opset_28():
    x = np.array([2.5, -1.0, 2.5, 0.0, -1.0], dtype=BF16)
    y, idx, inv, cnt = run_ours(node_model("Unique", {"x": x}, n_outputs=4, opset=28), {"x": x})
    assert y.dtype == BF16
    np.testing.assert_array_equal(y.astype(np.float32), [-1.0, 0.0, 2.5])
    np.testing.assert_array_equal(idx, [1, 3, 0])
    np.testing.assert_array_equal(inv, [2, 0, 2, 1, 0])
    np.testing.assert_array_equal(cnt, [2, 1, 2])


def test_unique_nan_and_signed_zero_rule():
    # NaN equals NaN and sorts last; -0 equals +0 and the first occurrence's value is kept.
    x = np.array([np.nan, 1.0, -0.0, np.nan, 0.0, -np.inf], dtype=np.float32)
    y, idx, inv, cnt = run_ours(node_model("Unique", {"x": x}, n_outputs=4), {"x": x})
    np.testing.assert_array_equal(y[:3], [-np.inf, 0.0, 1.0])
    assert np.signbit(y[1]) and np.isnan(y[3]) and len(y) == 4
    np.testing.assert_array_equal(idx, [5, 2, 1, 0])
    np.testing.assert_array_equal(inv, [3, 2, 1, 3, 1, 0])
    np.testing.assert_array_equal(cnt, [1, 2, 1, 2])


def test_unique_empty_and_usage():
    x = np.zeros((0,), np.float32)
    model = node_model("Unique", {"x": x}, n_outputs=4)
    y, idx, inv, cnt = run_ours(model, {"x": x})
    assert y.shape == (0,) and idx.shape == (0,) and inv.shape == (0,) and cnt.shape == (0,)
    x = np.array([[1, 2], [1, 2]], np.int64)
    assert "Unique/int64/sorted-axis" in usage_of(node_model("Unique", {"x": x}, {"axis": 0}), {"x": x})


def test_unique_errors():
    x = np.array([1, 2], np.int64)
    expect_error(node_model("Unique", {"x": x}, {"axis": 1}), {"x": x}, "axis")
    expect_build_error(node_model("Unique", {"x": x}, {"sorted": 2}), "sorted", "got 2")


# ---- Compress ---------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1, -1, 2])
@pytest.mark.parametrize("cond", [[True, False, True], [False, True], [False, False, False]])
def test_compress_matches_reference(axis, cond):
    x = random((3, 3, 3), np.float32, seed=2)
    attrs = {} if axis is None else {"axis": axis}
    check_node("Compress", {"x": x, "c": np.array(cond)}, attrs)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int64, np.float16, np.bool_, np.complex64])
def test_compress_types(dtype):
    x = random((4, 2), np.int32, 0, 3, seed=5).astype(dtype)
    check_node("Compress", {"x": x, "c": np.array([True, False, False, True])}, {"axis": 0})


def test_compress_strings_bfloat16_and_opset9():
    s = np.array([["a", "b"], ["c", "d"]], dtype=object)
    check_node("Compress", {"x": s, "c": np.array([False, True])}, {"axis": 1})
    check_node("Compress", {"x": s, "c": np.array([True, False, True])}, opset=9)
    b = np.array([1.5, 2.0, -3.0], dtype=BF16)
    (y,) = run_ours(node_model("Compress", {"x": b, "c": np.array([True, False, True])}, opset=28),
                    {"x": b, "c": np.array([True, False, True])})
    assert y.dtype == BF16
    np.testing.assert_array_equal(y.astype(np.float32), [1.5, -3.0])


def test_compress_errors():
    x = np.ones((2, 2), np.float32)
    feeds = {"x": x, "c": np.array([True, False, True])}
    expect_error(node_model("Compress", feeds, {"axis": 0}), feeds, "input 1", "3 entries", "axis 0")
    feeds = {"x": x, "c": np.array([1, 0], np.int64)}
    expect_error(node_model("Compress", feeds, {"axis": 0}), feeds, "1-D bool")
    feeds = {"x": x, "c": np.array([True])}
    expect_error(node_model("Compress", feeds, {"axis": 2}), feeds, "axis")
    expect_build_error(node_model("Compress", feeds, {"axis": -1}, opset=9), "axis", "opset 11")


# ---- ReverseSequence --------------------------------------------------------------------------

@pytest.mark.parametrize("batch_axis,time_axis", [(1, 0), (0, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.float16, np.bool_])
def test_reverse_sequence_matches_reference(batch_axis, time_axis, dtype):
    shape = [5, 3, 2] if batch_axis == 1 else [3, 5, 2]
    x = random(shape, dtype, 0, 9, seed=4)
    lens = np.array([5, 0, 3], np.int64)
    check_node("ReverseSequence", {"x": x, "lens": lens}, {"batch_axis": batch_axis, "time_axis": time_axis})


def test_reverse_sequence_strings_rank2_and_bfloat16():
    x = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    check_node("ReverseSequence", {"x": x, "lens": np.array([2, 3], np.int64)}, {"batch_axis": 0, "time_axis": 1})
    b = np.arange(6, dtype=np.float32).reshape(3, 2).astype(BF16)
    feeds = {"x": b, "lens": np.array([3, 1], np.int64)}
    (y,) = run_ours(node_model("ReverseSequence", feeds, opset=28), feeds)
    np.testing.assert_array_equal(y.astype(np.float32), [[4, 1], [2, 3], [0, 5]])


def test_reverse_sequence_errors():
    x = np.ones((4, 2), np.float32)
    for lens, needle in [([5, 1], "outside [0, 4]"), ([-1, 1], "outside"), ([1, 1, 1], "2 (batch) entries")]:
        feeds = {"x": x, "lens": np.array(lens, np.int64)}
        expect_error(node_model("ReverseSequence", feeds), feeds, "input 1", needle)
    feeds = {"x": np.ones((4,), np.float32), "lens": np.array([1], np.int64)}
    expect_error(node_model("ReverseSequence", feeds), feeds, "rank >= 2")
    feeds = {"x": x, "lens": np.array([1, 1], np.int64)}
    expect_build_error(node_model("ReverseSequence", feeds, {"batch_axis": 1, "time_axis": 1}), "batch_axis")


# ---- EyeLike ----------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [0, 1, -2, 3, -5, 7])
@pytest.mark.parametrize("shape", [(3, 4), (5, 2), (0, 3)])
def test_eyelike_matches_reference(k, shape):
    x = np.zeros(shape, np.int32)
    check_node("EyeLike", {"x": x}, {"k": k})


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8,
                                   TensorProto.UINT64, TensorProto.BOOL])
def test_eyelike_dtype_attribute(dtype):
    x = np.zeros((3, 3), np.float32)
    check_node("EyeLike", {"x": x}, {"dtype": dtype, "k": -1})


def test_eyelike_bfloat16_and_errors():
    x = np.zeros((2, 3), BF16)
    (y,) = run_ours(node_model("EyeLike", {"x": x}, opset=22), {"x": x})
    assert y.dtype == BF16
    np.testing.assert_array_equal(y.astype(np.float32), np.eye(2, 3))
    x = np.zeros((2, 2, 2), np.float32)
    expect_error(node_model("EyeLike", {"x": x}), {"x": x}, "must be 2-D", "[2, 2, 2]")
    expect_build_error(node_model("EyeLike", {"x": np.zeros((2, 2), np.float32)}, {"dtype": TensorProto.STRING}),
                       "dtype")


# ---- Det --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 3, 1, 1), (5, 7, 7), (0, 2, 2)])
def test_det_matches_reference(dtype, shape):
    x = random(shape, dtype, seed=6)
    check_node("Det", {"x": x}, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-5)


def test_det_singular_pivoting_and_half_types():
    x = np.array([[[1, 2], [2, 4]], [[0, 1], [1, 0]], [[0, 0], [0, 0]]], np.float64)
    (y,) = run_ours(node_model("Det", {"x": x}), {"x": x})
    np.testing.assert_array_equal(y, [0.0, -1.0, 0.0])
    x32 = random((4, 3, 3), np.float32, seed=8)
    expected = np.linalg.det(x32.astype(np.float64))
    (h,) = run_ours(node_model("Det", {"x": x32.astype(np.float16)}), {"x": x32.astype(np.float16)})
    assert h.dtype == np.float16
    np.testing.assert_allclose(h.astype(np.float64), np.linalg.det(x32.astype(np.float16).astype(np.float64)),
                               rtol=1e-2, atol=1e-2)
    (b,) = run_ours(node_model("Det", {"x": x32.astype(BF16)}, opset=22), {"x": x32.astype(BF16)})
    assert b.dtype == BF16
    np.testing.assert_allclose(b.astype(np.float64), np.linalg.det(x32.astype(BF16).astype(np.float64)),
                               rtol=2e-2, atol=2e-2)
    assert expected.shape == (4,)


def test_det_threads_match_one_thread():
    x = random((64, 6, 6), np.float64, seed=9)
    model = node_model("Det", {"x": x})
    opts = runtime.RuntimeSessionOptions(num_threads=2)
    (y,) = run_ours(model, {"x": x}, options=opts)
    np.testing.assert_allclose(y, np.linalg.det(x), rtol=1e-10)


def test_det_errors():
    for x in [np.ones((2, 3), np.float32), np.ones((3,), np.float32)]:
        expect_error(node_model("Det", {"x": x}), {"x": x}, "square matrices", str(list(x.shape)))
    x = np.ones((2, 2), np.int32)
    expect_error(node_model("Det", {"x": x}), {"x": x}, "int32")


# ---- Shrink -----------------------------------------------------------------------------------

@pytest.mark.parametrize("attrs", [{}, {"lambd": 1.5}, {"bias": 1.5, "lambd": 1.5}, {"bias": -0.25, "lambd": 0.0}])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_shrink_float_matches_reference(attrs, dtype):
    x = random((4, 5), dtype, -3, 3, seed=10)
    check_node("Shrink", {"x": x}, attrs, rtol=1e-3 if dtype == np.float16 else 1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64])
def test_shrink_integers_match_reference(dtype):
    # Values where x - bias stays representable (the reference's astype is then exact).
    x = random((3, 6), dtype, 0 if np.dtype(dtype).kind == "u" else -9, 9, seed=11)
    check_node("Shrink", {"x": x}, {"bias": 2.0, "lambd": 2.5})


def test_shrink_integer_wraps_like_astype():
    x = np.array([3, 200, 1], np.uint8)
    (y,) = run_ours(node_model("Shrink", {"x": x}, {"bias": 5.0, "lambd": 2.0}), {"x": x})
    np.testing.assert_array_equal(y, [254, 195, 0])
    x = np.array([-7, 7], np.int8)
    (y,) = run_ours(node_model("Shrink", {"x": x}, {"bias": 0.5, "lambd": 0.0}), {"x": x})
    np.testing.assert_array_equal(y, [-6, 6])  # truncation toward zero of -6.5 and 6.5


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
def test_unique_large_flattened_matches_numpy(dtype):
    # The flattened numeric path groups by hashing: check it on many duplicates against numpy
    # (NaN collapsed, -0 equal to +0, first occurrence kept).
    rng = np.random.default_rng(7)
    x = rng.integers(-50, 50, size=20000).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[rng.integers(0, x.size, 300)] = np.nan
        x[rng.integers(0, x.size, 300)] = -0.0
    y, idx, inv, cnt = run_ours(node_model("Unique", {"x": x}, n_outputs=4), {"x": x})
    ey, eidx, einv, ecnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True, equal_nan=True)
    np.testing.assert_array_equal(y, ey)
    np.testing.assert_array_equal(idx, eidx)
    np.testing.assert_array_equal(inv, einv.reshape(-1))
    np.testing.assert_array_equal(cnt, ecnt)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(x[idx]))
