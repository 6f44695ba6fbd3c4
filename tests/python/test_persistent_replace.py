"""Persistent values replaced rather than appended: TensorScatter writing new rows into a
fixed-size KV cache, held across calls by PersistentValueState. The state alternates two buffers
per value and brings the spare up to date with only the rows the previous call wrote, so a step
neither allocates nor copies the cache; a buffer a caller still holds is never written, and a
failed call leaves the values as they were."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import onnx_light.runtime as runtime
from onnx_light import summary

B, H, S, D = 2, 3, 16, 4  # batch, heads, cache rows, head size
ROW_BYTES = B * H * D * 4  # one written row position of every batch entry and head, float32


def scatter_cache_model(mode="linear"):
    """present = TensorScatter(past, new, pos); y = ReduceSum(present) + Reshape(new, shape)."""
    nodes = [
        helper.make_node("TensorScatter", ["past", "new", "pos"], ["present"], mode=mode, axis=2),
        helper.make_node("ReduceSum", ["present"], ["total"], keepdims=0),
        helper.make_node("Reshape", ["new", "shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "scatter_cache",
        [helper.make_tensor_value_info("past", TensorProto.FLOAT, [B, H, S, D]),
         helper.make_tensor_value_info("new", TensorProto.FLOAT, [B, H, 1, D]),
         helper.make_tensor_value_info("pos", TensorProto.INT64, [B]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [None])],
        [helper.make_tensor_value_info("present", TensorProto.FLOAT, [B, H, S, D]),
         helper.make_tensor_value_info("total", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])


GOOD_SHAPE = np.array([B, H * D], np.int64)
BAD_SHAPE = np.array([7, 5], np.int64)  # Reshape fails after TensorScatter has run


def new_state(mode="linear"):
    model = scatter_cache_model(mode)
    bound = runtime.with_persistent_bindings(model, {"past": "present"})
    state = runtime.PersistentValueState(bound, {"past": np.zeros((B, H, S, D), np.float32)})
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(24)), events_enabled=True)
    context.set_kernel_usage_enabled(True)
    return model, state, context


def steps(count, seed=0, mode="linear"):
    rng = np.random.default_rng(seed)
    for t in range(count):
        pos = np.array([t, (t + 5) % S if mode == "circular" else min(t + 1, S - 1)], np.int64)
        yield rng.standard_normal((B, H, 1, D)).astype(np.float32), pos


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_decode_loop_matches_the_reference_and_copies_only_the_last_rows(mode):
    model, state, context = new_state(mode)
    reference = ReferenceEvaluator(model)
    cache = np.zeros((B, H, S, D), np.float32)
    count = 12
    for t, (new, pos) in enumerate(steps(count, mode=mode)):
        out = state.run(context, {"new": new, "pos": pos, "shape": GOOD_SHAPE})
        cache, total, _ = reference.run(None, {"past": cache, "new": new, "pos": pos, "shape": GOOD_SHAPE})
        np.testing.assert_array_equal(np.asarray(out["present"]), cache, err_msg=f"step {t}")
        np.testing.assert_allclose(np.asarray(out["total"]), total, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(state.values["past"]), cache)
    assert set(context.get_kernel_usage()) >= {"TensorScatter/float32/persistent-in-place"}
    totals = summary.storage_totals(context.events())
    # Two buffers for the pair, then reuses. The first two steps copy the whole cache into a new
    # buffer; every later one copies only the rows the previous call wrote (one per batch entry
    # and head), and writes its own.
    assert totals["storage_allocations"] == 2
    assert totals["storage_reuse_count"] == count - 2
    assert totals["storage_prefix_copied_bytes"] == 2 * B * H * S * D * 4 + (count - 2) * ROW_BYTES
    assert totals["storage_append_copied_bytes"] == count * ROW_BYTES


def test_a_held_result_is_never_written():
    """A caller keeping every result: each stays what it was; the state allocates instead of
    reusing a buffer the caller holds."""
    _, state, context = new_state()
    held, snapshots = [], []
    for new, pos in steps(6):
        out = state.run(context, {"new": new, "pos": pos, "shape": GOOD_SHAPE})
        held.append(out["present"])
        snapshots.append(np.array(out["present"]))
    for got, want in zip(held, snapshots):
        np.testing.assert_array_equal(np.asarray(got), want)
    totals = summary.storage_totals(context.events())
    assert totals["storage_allocations"] == 6 and totals["storage_reuse_count"] == 0


def test_a_failed_call_leaves_the_values_and_the_next_call_is_right():
    model, state, context = new_state()
    reference = ReferenceEvaluator(model)
    cache = np.zeros((B, H, S, D), np.float32)
    for t, (new, pos) in enumerate(steps(10, seed=3)):
        if t in (4, 7):  # fails after TensorScatter wrote into the spare buffer
            before = np.array(state.values["past"])
            with pytest.raises(runtime.Error):
                state.run(context, {"new": new, "pos": pos, "shape": BAD_SHAPE})
            np.testing.assert_array_equal(np.asarray(state.values["past"]), before)
        out = state.run(context, {"new": new, "pos": pos, "shape": GOOD_SHAPE})
        cache = reference.run(None, {"past": cache, "new": new, "pos": pos, "shape": GOOD_SHAPE})[0]
        np.testing.assert_array_equal(np.asarray(out["present"]), cache, err_msg=f"step {t}")


def test_an_out_of_range_position_is_refused_and_changes_nothing():
    _, state, context = new_state()
    new, _ = next(steps(1))
    state.run(context, {"new": new, "pos": np.array([0, 1], np.int64), "shape": GOOD_SHAPE})
    before = np.array(state.values["past"])
    with pytest.raises(runtime.Error, match="TensorScatter"):
        state.run(context, {"new": new, "pos": np.array([S, 0], np.int64), "shape": GOOD_SHAPE})
    np.testing.assert_array_equal(np.asarray(state.values["past"]), before)
