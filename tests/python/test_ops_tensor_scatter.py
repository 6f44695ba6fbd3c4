"""TensorScatter (opset 24) against onnx.reference: element types (strings and bools included),
sequence axes, linear and circular modes, omitted write indices, zero-size updates, writing over a
dying intermediate cache instead of copying it, the caller's cache left untouched, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import make_model, run_ours, run_reference
from test_ops_elementwise import BF16, NODE, compare, dname, named, node_model, values

I64 = np.int64
TYPES = [np.float32, np.float16, BF16, np.float64, np.int8, np.int64, np.uint16, np.bool_, np.complex64]


def scatter_model(past, update, indices=None, **attrs):
    inputs = {"past": past, "update": update}
    if indices is not None:
        inputs["idx"] = indices
    return named(node_model("TensorScatter", inputs, attrs, opset=24)), inputs


def check(past, update, indices=None, **attrs):
    model, feeds = scatter_model(past, update, indices, **attrs)
    (y,) = run_ours(model, feeds)
    compare([y], run_reference(model, feeds))
    return y


def cache(shape, dtype=np.float32, seed=0):
    if np.dtype(dtype) == np.complex64:
        return (values(shape, np.float32, seed=seed) + 1j * values(shape, np.float32, seed=seed + 50)).astype(dtype)
    return values(shape, dtype, seed=seed)


@pytest.mark.parametrize("dtype", TYPES, ids=dname)
@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_types_and_modes(dtype, mode):
    past = cache((3, 2, 6, 4), dtype)
    update = cache((3, 2, 2, 4), dtype, seed=1)
    indices = np.array([4, 0, 5], I64) if mode == "circular" else np.array([4, 0, 2], I64)
    check(past, update, indices, mode=mode)


def test_strings():
    past = np.array([[f"p{i}{j}" for j in range(4)] for i in range(2)], dtype=object).reshape(2, 4, 1)
    update = np.array([["u0"], ["u1"]], dtype=object).reshape(2, 1, 1)
    y = check(past, update, np.array([3, 0], I64), axis=1)
    assert y[0, 3, 0] == "u0" and y[1, 0, 0] == "u1" and y[0, 0, 0] == "p00"


@pytest.mark.parametrize("axis,update_shape", [(1, (2, 3, 4, 5)), (2, (2, 3, 2, 5)), (-2, (2, 3, 2, 5)),
                                               (3, (2, 3, 4, 2)), (-1, (2, 3, 4, 3)), (-3, (2, 1, 4, 5))],
                         ids=str)
@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_axes(axis, update_shape, mode):
    past = cache((2, 3, 4, 5))
    update = cache(update_shape, seed=2)
    rows = update_shape[axis]
    capacity = past.shape[axis]
    indices = np.array([capacity - rows, 0], I64) if mode == "linear" else np.array([capacity - 1, 2], I64)
    check(past, update, indices, axis=axis, mode=mode)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_without_write_indices_rows_start_at_zero(mode):
    check(cache((2, 5, 3)), cache((2, 2, 3), seed=3), axis=1, mode=mode)
    check(cache((2, 4, 3)), cache((2, 4, 3), seed=4), mode=mode)  # the whole cache


def test_circular_wraps_and_takes_negative_indices_modulo():
    past = cache((4, 5, 2))
    update = cache((4, 3, 2), seed=5)
    check(past, update, np.array([4, -1, 12, -7], I64), axis=1, mode="circular")


@pytest.mark.parametrize("shape,update_shape,axis", [((2, 0, 3), (2, 0, 3), 1), ((0, 4, 3), (0, 2, 3), 1),
                                                    ((2, 4, 0), (2, 2, 0), 1), ((2, 4, 3), (2, 0, 3), 1)], ids=str)
def test_zero_size(shape, update_shape, axis):
    past, update = cache(shape), cache(update_shape, seed=6)
    indices = np.zeros(shape[0], I64)
    for mode in ("linear", "circular"):
        check(past, update, indices, axis=axis, mode=mode)


def test_rank_two_cache():
    check(cache((3, 6)), cache((3, 2), seed=7), np.array([0, 4, 2], I64), axis=1)


def test_graph_input_cache_is_copied_and_left_untouched():
    past = cache((2, 4, 3))
    before = past.copy()
    model, feeds = scatter_model(past, cache((2, 1, 3), seed=8), np.array([1, 3], I64), axis=1)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(24)))
    ctx.set_kernel_usage_enabled(True)
    (y,) = run_ours(model, feeds, context=ctx)
    assert ctx.get_kernel_usage() == ["TensorScatter/float32/copy"]
    np.testing.assert_array_equal(past, before)
    assert not np.shares_memory(y, past)


def test_dying_intermediate_cache_is_written_in_place():
    """cache -> Neg -> TensorScatter -> Neg: the scatter writes over Neg's buffer."""
    past = cache((2, 8, 4))
    update = cache((2, 2, 4), seed=9)
    indices = np.array([6, 3], I64)
    nodes = [helper.make_node("Neg", ["past"], ["n"]),
             helper.make_node("TensorScatter", ["n", "update", "idx"], ["s"], axis=1, name=NODE),
             helper.make_node("Neg", ["s"], ["y"])]
    feeds = {"past": past, "update": update, "idx": indices}
    model = make_model(nodes, feeds, ["y"], opset=24)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(24)), events_enabled=True)
    ctx.set_kernel_usage_enabled(True)
    (y,) = run_ours(model, feeds, context=ctx)
    compare([y], run_reference(model, feeds))
    assert ctx.get_kernel_usage()[1] == "TensorScatter/float32/in-place"
    added = {}
    for e in ctx.events():
        if e.action == runtime.RuntimeEventAction.kAdd:
            added.setdefault(e.name, e.allocated_bytes)
    assert added["s"] == added["n"] == past.nbytes, "no second cache buffer"


def test_intermediate_read_by_another_node_is_copied():
    past = cache((2, 4, 3))
    nodes = [helper.make_node("Neg", ["past"], ["n"]),
             helper.make_node("TensorScatter", ["n", "update"], ["s"], axis=1, name=NODE),
             helper.make_node("Add", ["s", "n"], ["y"])]
    feeds = {"past": past, "update": cache((2, 1, 3), seed=10)}
    model = make_model(nodes, feeds, ["y"], opset=24)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(24)))
    ctx.set_kernel_usage_enabled(True)
    (y,) = run_ours(model, feeds, context=ctx)
    compare([y], run_reference(model, feeds))
    assert "TensorScatter/float32/copy" in ctx.get_kernel_usage()


@pytest.mark.parametrize("threads", [1, 2])
def test_large_cache_over_threads(threads):
    past = cache((4, 8, 512, 64))
    update = cache((4, 8, 100, 64), seed=11)
    indices = np.array([0, 400, 300, 412], I64)
    model, feeds = scatter_model(past, update, indices, mode="circular")
    (y,) = run_ours(model, feeds, options=runtime.RuntimeSessionOptions(num_threads=threads))
    compare([y], run_reference(model, feeds))


def ours(past, update, indices=None, **attrs):
    model, feeds = scatter_model(past, update, indices, **attrs)
    return run_ours(model, feeds)


def test_errors():
    past, update = cache((2, 4, 3)), cache((2, 2, 3), seed=12)
    with pytest.raises(ValueError, match=rf"{NODE}.*= 3 for batch entry 1.*index \+ 2 \(update rows\) <= 4"):
        ours(past, update, np.array([0, 3], I64), axis=1)
    with pytest.raises(ValueError, match=rf"{NODE}.*= -1 for batch entry 0"):
        ours(past, update, np.array([-1, 0], I64), axis=1)
    with pytest.raises(ValueError, match=rf"{NODE}.*'axis' = 0 names the batch axis"):
        ours(past, update, axis=0)
    with pytest.raises(ValueError, match=rf"{NODE}.*axis 3 is out of range for rank 3"):
        ours(past, update, axis=3)
    with pytest.raises(ValueError, match=rf"{NODE}.*dimension 2"):
        ours(past, cache((2, 2, 4)), axis=1)
    with pytest.raises(ValueError, match=rf"{NODE}.*5 rows along axis 1.*holds only 4"):
        ours(past, cache((2, 5, 3)), axis=1, mode="circular")
    with pytest.raises(ValueError, match=rf"{NODE}.*ranks must match"):
        ours(past, cache((2, 2, 3, 1)), axis=1)
    with pytest.raises(ValueError, match=rf"{NODE}.*float64.*float32"):
        ours(past, update.astype(np.float64), axis=1)
    with pytest.raises(ValueError, match=rf"{NODE}.*shape \[2\].*got \[3\]"):
        ours(past, update, np.array([0, 0, 0], I64), axis=1)
    with pytest.raises(ValueError, match=rf"{NODE}.*int64, got int32"):
        ours(past, update, np.array([0, 0], np.int32), axis=1)
    with pytest.raises(ValueError, match=rf"{NODE}.*rank >= 2"):
        ours(np.zeros(3, np.float32), np.zeros(3, np.float32), axis=-1)
    with pytest.raises(ValueError, match=rf"{NODE}.*'mode' = 'ring'"):
        runtime.RuntimeSession(scatter_model(past, update, mode="ring")[0])
