"""CumProd (opset 26) against onnx.reference: every element type, both axis types, negative axes,
exclusive and reverse, zero-size dimensions, integer wrap-around, the thread pool, and errors."""

from __future__ import annotations

import numpy as np
import pytest

import onnx_light.runtime as runtime
from node_check import run_ours, run_reference
from test_ops_elementwise import BF16, NODE, compare, dname, named, node_model, values

TYPES = [np.float32, np.float64, np.float16, BF16, np.int32, np.int64, np.uint32, np.uint64]
FLAGS = [(0, 0), (1, 0), (0, 1), (1, 1)]


def factors(shape, dtype, seed=0):
    """Values whose running products stay representable: near 1 for floats, small for integers."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return values(shape, dtype, -3 if dtype.kind == "i" else 0, 3, seed)
    return values(shape, dtype, 0.7, 1.3, seed)


def model_for(x, axis, exclusive=0, reverse=0):
    attrs = {}
    if exclusive:
        attrs["exclusive"] = exclusive
    if reverse:
        attrs["reverse"] = reverse
    return named(node_model("CumProd", {"x": x, "axis": axis}, attrs, opset=26))


def check(x, axis, exclusive=0, reverse=0, rtol=None):
    model = model_for(x, axis, exclusive, reverse)
    feeds = {"x": x, "axis": axis}
    actual = run_ours(model, feeds)
    compare(actual, run_reference(model, feeds), rtol=rtol, atol=rtol)
    return actual[0]


@pytest.mark.parametrize("exclusive,reverse", FLAGS)
@pytest.mark.parametrize("dtype", TYPES, ids=dname)
def test_types_and_flags(dtype, exclusive, reverse):
    # Half types accumulate in float32 (rounded once per output); the reference rounds every step.
    rtol = {np.dtype(np.float16): 4e-3, BF16: 3e-2}.get(np.dtype(dtype))
    for axis in range(3):
        check(factors((3, 4, 5), dtype), np.array(axis, np.int64), exclusive, reverse, rtol=rtol)


@pytest.mark.parametrize("axis", [-1, -2, -3, 0, 2])
@pytest.mark.parametrize("axis_type", [np.int32, np.int64], ids=dname)
def test_axis_types_and_negative_axes(axis, axis_type):
    check(factors((2, 3, 4), np.float32, seed=1), np.array(axis, axis_type), 1, 1)


@pytest.mark.parametrize("shape,axis", [((0,), 0), ((2, 0, 3), 1), ((2, 0, 3), 0), ((2, 0, 3), 2), ((1,), 0),
                                        ((5,), 0), ((1, 1, 7), -1)], ids=str)
@pytest.mark.parametrize("exclusive,reverse", FLAGS)
def test_shapes(shape, axis, exclusive, reverse):
    check(factors(shape, np.float32, seed=2), np.array(axis, np.int64), exclusive, reverse)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64], ids=dname)
def test_integer_products_wrap_like_numpy(dtype):
    x = np.full((3, 70), 3, dtype)
    x[1] = np.iinfo(dtype).max
    y = check(x, np.array(1, np.int64))
    assert y.dtype == dtype


def test_special_float_values():
    x = np.array([[2.0, np.inf, 0.0, 5.0], [np.nan, 1.0, 2.0, 3.0], [-0.0, -1.0, 3.0, 1e30]], np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for exclusive, reverse in FLAGS:
            check(x, np.array(1, np.int64), exclusive, reverse)


@pytest.mark.parametrize("shape,axis", [((4096, 20), 1), ((20, 4096), 0), ((64, 40, 30), 1)], ids=str)
def test_large_inputs_split_over_threads(shape, axis):
    x = factors(shape, np.float32, seed=3)
    axis_t = np.array(axis, np.int64)
    model = model_for(x, axis_t, 1, 1)
    outs = []
    for threads in (1, 2):
        ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(26)))
        ctx.set_kernel_usage_enabled(True)
        outs.append(run_ours(model, {"x": x, "axis": axis_t}, context=ctx,
                             options=runtime.RuntimeSessionOptions(num_threads=threads))[0])
        path = "last-axis" if axis == len(shape) - 1 else "strided"
        assert ctx.get_kernel_usage() == [f"CumProd/float32/{path}"]
    assert outs[0].tobytes() == outs[1].tobytes(), "the thread count must not change results"
    compare([outs[0]], run_reference(model, {"x": x, "axis": axis_t}))


def test_errors():
    x = np.ones((2, 3), np.float32)
    for axis, pattern in [(np.array([1], np.int64), r"0-D tensor, got shape \[1\]"),
                          (np.array(2, np.int64), "axis"), (np.array(-3, np.int64), "axis")]:
        with pytest.raises(ValueError, match=rf"{NODE}.*{pattern}"):
            run_ours(model_for(x, axis), {"x": x, "axis": axis})
    scalar = np.array(2.0, np.float32)
    with pytest.raises(ValueError, match=rf"{NODE}.*rank >= 1"):
        run_ours(model_for(scalar, np.array(0, np.int64)), {"x": scalar, "axis": np.array(0, np.int64)})
    for bad in (np.ones(3, np.int8), np.ones(3, np.bool_)):
        with pytest.raises(NotImplementedError, match=rf"{NODE}.*{bad.dtype}"):
            run_ours(model_for(bad, np.array(0, np.int64)), {"x": bad, "axis": np.array(0, np.int64)})
    with pytest.raises(ValueError, match=rf"{NODE}.*int64 or int32"):
        axis = np.array(0.0, np.float32)
        run_ours(model_for(x, axis), {"x": x, "axis": axis})
