"""Zero-copy outputs cannot write where they must not: values that share memory with persistent
state or with a caller's feed are read-only through NumPy, and DLPack consumers either get a copy
or a DLPack 1.0 capsule flagged read-only (docs/zero-copy.md)."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light
import onnx_light.runtime as runtime

try:
    import torch
except ImportError:  # torch is not a test dependency; the NumPy tests check the same property
    torch = None


def cache_state():
    """present_key = Concat(past_key, k); the state binds past_key <- present_key."""
    graph = helper.make_graph(
        [helper.make_node("Concat", ["past_key", "k"], ["present_key"], axis=0),
         helper.make_node("Add", ["k", "one"], ["y"])],
        "cache",
        [helper.make_tensor_value_info("past_key", TensorProto.FLOAT, ["t", 2]),
         helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("present_key", TensorProto.FLOAT, ["t1", 2]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        initializer=[numpy_helper.from_array(np.array(1, np.float32), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    bound = runtime.with_persistent_bindings(model.SerializeToString(), {"past_key": "present_key"})
    state = runtime.PersistentValueState(bound, initial={"past_key": np.zeros((0, 2), np.float32)})
    for step in range(3):
        out = state.run({"k": np.full((1, 2), step, np.float32)})
    return state, out


def alias_session():
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["same"]), helper.make_node("Reshape", ["x", "shape"], ["flat"]),
         helper.make_node("Add", ["x", "x"], ["sum"])],
        "alias",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("same", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("flat", TensorProto.FLOAT, [6]),
         helper.make_tensor_value_info("sum", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(np.array([6], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return runtime.RuntimeSession(model.SerializeToString())


def test_outputs_aliasing_state_are_read_only_numpy_views():
    state, out = cache_state()
    cache = np.asarray(state.values["past_key"])
    present = np.asarray(out["present_key"])
    assert out["present_key"].readonly and not present.flags.writeable
    assert np.shares_memory(present, cache)
    with pytest.raises(ValueError, match="read-only"):
        present += 100
    # An output that aliases nothing stays writable.
    assert np.asarray(out["y"]).flags.writeable


def test_dlpack_of_state_aliases_cannot_write_the_state():
    state, out = cache_state()
    before = np.asarray(state.values["past_key"]).copy()
    copied = np.from_dlpack(out["present_key"])  # the default: a copy
    assert copied.flags.writeable and not np.shares_memory(copied, np.asarray(state.values["past_key"]))
    copied += 100
    np.testing.assert_array_equal(np.asarray(state.values["past_key"]), before)
    shared = np.from_dlpack(out["present_key"], copy=False)  # DLPack 1.0 with the read-only flag
    assert not shared.flags.writeable and np.shares_memory(shared, np.asarray(state.values["past_key"]))
    with pytest.raises(ValueError, match="read-only"):
        shared += 100
    np.testing.assert_array_equal(np.asarray(state.values["past_key"]), before)


def test_dlpack_capsule_forms():
    state, out = cache_state()
    present = out["present_key"]
    assert type(present.__dlpack__(max_version=(1, 0))).__name__ == "PyCapsule"
    assert "dltensor_versioned" in repr(present.__dlpack__(max_version=(1, 0), copy=False))
    assert '"dltensor"' in repr(present.__dlpack__())  # an old consumer: a copy it may write
    with pytest.raises(BufferError, match="read-only") as raised:
        present.__dlpack__(copy=False)  # an old consumer that refuses a copy
    assert isinstance(raised.value, onnx_light.Error)
    with pytest.raises(BufferError, match="device"):
        present.__dlpack__(dl_device=(2, 0))
    # A writable output is shared without copying, in either form.
    y = out["y"]
    assert np.shares_memory(np.from_dlpack(y), np.asarray(y))


@pytest.mark.skipif(torch is None, reason="torch is not installed (not a test dependency); "
                                          "test_dlpack_of_state_aliases_cannot_write_the_state checks the same with NumPy")
def test_torch_cannot_write_the_state_through_dlpack():
    state, out = cache_state()
    before = np.asarray(state.values["past_key"]).copy()
    torch.from_dlpack(out["present_key"]).add_(100)
    np.testing.assert_array_equal(np.asarray(state.values["past_key"]), before)
    y = torch.from_dlpack(out["y"])  # writable outputs are shared
    y.add_(1)
    np.testing.assert_array_equal(np.asarray(out["y"]), y.numpy())


def test_outputs_viewing_a_feed_are_read_only():
    session = alias_session()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = session.run({"x": x})
    for name in ("same", "flat"):
        view = np.asarray(out[name])
        assert np.shares_memory(view, x), name  # zero-copy, as documented
        assert not view.flags.writeable and out[name].readonly
    assert np.asarray(out["sum"]).flags.writeable
    np.from_dlpack(out["same"])[0, 0] = 100  # a copy
    assert x[0, 0] == 0
    if torch is not None:
        torch.from_dlpack(out["flat"]).add_(100)
        assert x[0, 0] == 0


def test_a_tensor_over_a_read_only_array_stays_read_only():
    frozen = np.arange(4, dtype=np.float32)
    frozen.flags.writeable = False
    wrapped = runtime.Tensor(frozen)
    assert wrapped.readonly and not np.asarray(wrapped).flags.writeable
    assert np.shares_memory(np.asarray(wrapped), frozen)
    writable = runtime.Tensor(np.arange(4, dtype=np.float32))
    assert not writable.readonly and np.asarray(writable).flags.writeable
