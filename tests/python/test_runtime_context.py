"""The Python surface of RuntimeContext and RuntimeEvent (reference page + contract)."""

import numpy as np
import pytest

import onnx_light.runtime as runtime
from onnx_light.onnx_py._onnxpykernels import runtime as spec_runtime

BASE_KEYS = {
    "action", "kind", "timestamp_ns", "name", "data_type", "shape", "op_domain", "op_type", "inputs",
    "duration_ns", "node_index", "subgraph_node_index", "subgraph_attr_name", "allocated_bytes", "peak_bytes",
    "run_id", "session_id", "thread_id", "process_id",
}
STORAGE_KEYS = {
    "storage_allocations", "storage_allocated_bytes", "storage_prefix_copied_bytes",
    "storage_append_copied_bytes", "storage_reuse_count",
}


def new_context(**kwargs):
    return runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), **kwargs)


def test_both_import_paths_give_the_same_module():
    import onnx_light.runtime

    assert spec_runtime is runtime is onnx_light.runtime


def test_action_values_and_int_compatibility():
    actions = runtime.RuntimeEventAction
    assert [int(a) for a in (actions.kAdd, actions.kReplace, actions.kRemove, actions.kRunNode,
                             actions.kPersistentStorage)] == [0, 1, 2, 3, 4]
    assert actions.kPersistentStorage == 4
    assert runtime.runtime_event_action_name(4) == "persistent_storage"
    assert runtime.runtime_event_action_name(99) == "unknown"


def test_events_are_off_by_default_and_the_flag_is_read_only():
    ctx = new_context()
    assert ctx.events_enabled is False
    with pytest.raises(AttributeError):
        ctx.events_enabled = True
    ctx.put("x", np.ones(3, np.float32))
    assert ctx.events() == []


def test_events_enabled_is_keyword_only():
    with pytest.raises(TypeError):
        runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), True)


def test_put_replace_remove_record_value_events_with_kinds():
    ctx = new_context(events_enabled=True)
    ctx.put("x", np.zeros((2, 3), np.float32), kind="input")
    ctx.put("x", np.zeros((4,), np.int64), kind="intermediate")
    assert ctx.remove("x") is True
    assert ctx.remove("x") is False
    events = ctx.events()
    assert [e.action for e in events] == [runtime.RuntimeEventAction.kAdd, runtime.RuntimeEventAction.kReplace,
                                          runtime.RuntimeEventAction.kRemove]
    assert [e.kind for e in events] == ["input", "intermediate", "unknown"]
    assert events[0].shape == (2, 3) and events[0].data_type == 1
    assert events[1].shape == (4,) and events[1].data_type == 7
    assert all(e.node_index == -1 for e in events)
    assert all(e.timestamp_ns > 0 for e in events)
    assert events[0].allocated_bytes >= 0 and events[0].peak_bytes >= events[0].allocated_bytes


def test_event_fields_are_read_only():
    ctx = new_context(events_enabled=True)
    ctx.put("x", np.zeros(1, np.float32))
    event = ctx.events()[0]
    for field in BASE_KEYS | STORAGE_KEYS:
        with pytest.raises(AttributeError):
            setattr(event, field, 1)


def test_as_dict_schema_is_identical_for_non_storage_actions():
    ctx = new_context(events_enabled=True)
    ctx.put("x", np.zeros(2, np.float32), kind="input")
    ctx.put("x", np.zeros(2, np.float32), kind="input")
    ctx.remove("x")
    dicts = [e.as_dict() for e in ctx.events()]
    for d in dicts:
        assert set(d) == BASE_KEYS
    assert [d["action"] for d in dicts] == ["add", "replace", "remove"]
    assert dicts[0]["kind"] == "input"


def test_clear_events_keeps_values_and_clear_drops_them():
    ctx = new_context(events_enabled=True)
    ctx.put("x", np.ones(2, np.float32))
    twin = ctx.copy()
    ctx.clear_events()
    assert ctx.events() == [] and twin.events() == []
    assert "x" in ctx
    twin.put("y", np.ones(1, np.float32))
    assert len(ctx.events()) == 1, "a copy shares the log"
    ctx.clear()
    assert "x" not in ctx and ctx.events() == []
    assert "x" in twin, "clear() resets only the receiving context's values"


def test_independent_contexts_have_independent_logs():
    a, b = new_context(events_enabled=True), new_context(events_enabled=True)
    a.put("x", np.ones(1, np.float32))
    assert len(a.events()) == 1 and b.events() == []


def test_values_hold_sequences_and_tensors_stay_in_tensors():
    ctx = new_context()
    ctx.put("t", np.arange(3, dtype=np.int64))
    ctx.put("s", [np.ones(2, np.float32), np.zeros(2, np.float32)])
    assert set(ctx.tensors()) == {"t"}
    assert set(ctx.values()) == {"s"}
    assert [np.asarray(t).tolist() for t in ctx.get("s")] == [[1.0, 1.0], [0.0, 0.0]]
    with pytest.raises(KeyError):
        ctx.get("missing")


def test_put_views_numpy_without_copy():
    ctx = new_context()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ctx.put("x", x)
    view = np.asarray(ctx.get("x"))
    assert np.shares_memory(view, x)


def test_bad_feeds_are_clear_errors():
    ctx = new_context()
    with pytest.raises(TypeError, match="feed 'x'"):
        ctx.put("x", {"a", "b"})  # a set; a dict is a map (test_ops_ml_maps.py)
    with pytest.raises(TypeError, match="feed 'x': map values must be numbers or str"):
        ctx.put("x", {"a": object()})
    with pytest.raises(ValueError, match="not C-contiguous"):
        ctx.put("x", np.ones((4, 4), np.float32)[:, ::2])
    with pytest.raises(ValueError, match="kind must be one of"):
        ctx.put("x", np.ones(1, np.float32), kind="weird")


def test_kernel_usage_surface():
    ctx = new_context()
    assert ctx.kernel_usage_enabled is False
    ctx.record_kernel_usage("ignored")
    assert ctx.get_kernel_usage() == []
    ctx.set_kernel_usage_enabled(True)
    ctx.record_kernel_usage("Op/float32/impl")
    twin = ctx.copy()
    twin.record_kernel_usage("Op/int64/loop")
    ctx.set_kernel_usage_enabled(False)
    assert ctx.get_kernel_usage() == ["Op/float32/impl", "Op/int64/loop"]
    ctx.clear()
    assert ctx.get_kernel_usage() == ["Op/float32/impl", "Op/int64/loop"], "clear() keeps usage"
    ctx.clear_kernel_usage()
    assert twin.get_kernel_usage() == []
    assert runtime.RuntimeContext.kernel_usage_limit == 1024


def test_kernel_usage_limit_keeps_the_first_names():
    ctx = new_context()
    ctx.set_kernel_usage_enabled(True)
    for i in range(1030):
        ctx.record_kernel_usage(f"k{i}")
    names = ctx.get_kernel_usage()
    assert len(names) == 1024 and names[0] == "k0" and names[-1] == "k1023"


def test_retained_outputs_round_trip():
    ctx = new_context()
    ctx.set_retained_outputs(["present_key", "a.b"])
    assert ctx.retained_outputs == ["present_key", "a.b"]


def test_tensor_exposes_dtype_shape_and_dlpack_without_copy():
    x = np.arange(12, dtype=np.float16).reshape(3, 4)
    t = runtime.Tensor(x, "x")
    assert t.name == "x" and t.shape == (3, 4) and t.dtype == np.float16 and t.data_type == 10
    assert np.shares_memory(np.asarray(t), x)
    y = np.from_dlpack(t)
    assert np.shares_memory(y, x) and y.dtype == np.float16
    back = runtime.Tensor(y)
    assert np.shares_memory(np.asarray(back), x)
