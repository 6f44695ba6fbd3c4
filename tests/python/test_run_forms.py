"""One-line runs (ONNX Runtime's forms) and the rule for what a context keeps between runs
(docs/runtime-context.md)."""

import threading

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light
import onnx_light.runtime as runtime


def scale_model():
    """z = x * y + b, where y has an initializer default of 2 and b = 1."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "y"], ["t"]), helper.make_node("Add", ["t", "b"], ["z"]),
         helper.make_node("Identity", ["x"], ["x_out"])],
        "scale",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n"]),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, ["n"])],
        initializer=[numpy_helper.from_array(np.array([2], np.float32), "y"),
                     numpy_helper.from_array(np.array([1], np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model.SerializeToString()


def cache_model():
    """present = Concat(past, x) along axis 0; y = x + 1. past <- present is bound."""
    graph = helper.make_graph(
        [helper.make_node("Concat", ["past", "x"], ["present"], axis=0),
         helper.make_node("Add", ["x", "one"], ["y"])],
        "cache",
        [helper.make_tensor_value_info("past", TensorProto.FLOAT, ["t", 2]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("present", TensorProto.FLOAT, ["t1", 2]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        initializer=[numpy_helper.from_array(np.array(1, np.float32), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return runtime.with_persistent_bindings(model.SerializeToString(), {"past": "present"})


X = np.array([1, 2, 3], np.float32)


def test_session_run_forms():
    session = runtime.RuntimeSession(scale_model())
    as_dict = session.run({"x": X})
    assert list(as_dict) == ["z", "x_out"]
    np.testing.assert_array_equal(np.asarray(as_dict["z"]), X * 2 + 1)
    z, x_out = session.run(None, {"x": X})
    np.testing.assert_array_equal(np.asarray(z), X * 2 + 1)
    np.testing.assert_array_equal(np.asarray(x_out), X)
    (only,) = session.run(["x_out"], {"x": X})
    np.testing.assert_array_equal(np.asarray(only), X)
    both = session.run(("x_out", "z"), {"x": X, "y": np.array([3], np.float32)})
    np.testing.assert_array_equal(np.asarray(both[1]), X * 3 + 1)
    context = runtime.RuntimeContext()
    np.testing.assert_array_equal(np.asarray(session.run(context, {"x": X})["z"]), X * 2 + 1)


def test_state_run_forms():
    state = runtime.PersistentValueState(cache_model(), initial={"past": np.zeros((0, 2), np.float32)})
    first = state.run({"x": np.array([[1, 2]], np.float32)})
    assert sorted(first) == ["present", "y"]
    present, y = state.run(None, {"x": np.array([[3, 4]], np.float32)})
    np.testing.assert_array_equal(np.asarray(present), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(np.asarray(y), [[4, 5]])
    (y,) = state.run(["y"], {"x": np.array([[5, 6]], np.float32)})
    np.testing.assert_array_equal(np.asarray(y), [[6, 7]])
    context = runtime.RuntimeContext(events_enabled=True)
    out = state.run(context, {"x": np.array([[7, 8]], np.float32)})
    assert np.asarray(out["present"]).shape == (4, 2)
    assert any(e.action == runtime.RuntimeEventAction.kRunNode for e in context.events())
    # A call never reads the context: the unbound input must be fed.
    with pytest.raises(ValueError, match="missing input 'x'"):
        state.run(context, {})


def test_wrong_forms_give_short_errors():
    session = runtime.RuntimeSession(scale_model())
    big = np.zeros(100_000, np.float32)
    for call in (lambda: session.run(big), lambda: session.run(None, big),
                 lambda: session.run({"x": big}, {"x": big}), lambda: session.run(3, {"x": big})):
        with pytest.raises(TypeError) as raised:
            call()
        assert isinstance(raised.value, onnx_light.Error)
        assert len(str(raised.value)) < 300, str(raised.value)
        assert "run takes" in str(raised.value) or "feeds must be a dict" in str(raised.value)
    with pytest.raises(ValueError, match="pass that context"):
        session.run({"x": X}, reuse_values=True)


def test_concurrent_default_context_runs():
    session = runtime.RuntimeSession(scale_model())
    errors = []
    start = threading.Barrier(8)

    def work(seed):
        try:
            start.wait()
            rng = np.random.default_rng(seed)
            for _ in range(200):
                x = rng.standard_normal(int(rng.integers(1, 64))).astype(np.float32)
                if seed % 2:
                    z = np.asarray(session.run({"x": x})["z"])
                else:
                    z = np.asarray(session.run(["z"], {"x": x})[0])
                np.testing.assert_array_equal(z, x * 2 + 1)
        except BaseException as error:  # noqa: BLE001  (reported by the main thread)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_missing_input_is_an_error_unless_values_are_reused():
    session = runtime.RuntimeSession(scale_model())
    context = runtime.RuntimeContext()
    session.run(context, {"x": X})
    with pytest.raises(ValueError, match="missing input 'x'.*reuse_values=True") as raised:
        session.run(context, {})
    assert isinstance(raised.value, onnx_light.Error)
    # The failed run left the context as it was: the earlier feed is still there to reuse.
    np.testing.assert_array_equal(np.asarray(context.get("x")), X)
    out = session.run(context, {}, reuse_values=True)
    np.testing.assert_array_equal(np.asarray(out["z"]), X * 2 + 1)
    # A fresh context never had the value: the message does not suggest reusing it.
    with pytest.raises(ValueError, match="missing input 'x'") as raised:
        session.run(runtime.RuntimeContext(), {})
    assert "reuse_values" not in str(raised.value)


def test_an_input_with_a_default_is_not_taken_from_an_earlier_run():
    session = runtime.RuntimeSession(scale_model())
    context = runtime.RuntimeContext()
    out = session.run(context, {"x": X, "y": np.array([10], np.float32)})
    np.testing.assert_array_equal(np.asarray(out["z"]), X * 10 + 1)
    out = session.run(context, {"x": X})  # y falls back to its initializer, 2
    np.testing.assert_array_equal(np.asarray(out["z"]), X * 2 + 1)
    assert "y" not in context
    session.run(context, {"x": X, "y": np.array([10], np.float32)})
    out = session.run(context, {"x": X}, reuse_values=True)  # asked for: the earlier y
    np.testing.assert_array_equal(np.asarray(out["z"]), X * 10 + 1)


def test_feeds_of_a_failed_run_are_not_kept():
    session = runtime.RuntimeSession(scale_model())
    context = runtime.RuntimeContext()
    with pytest.raises(ValueError):
        session.run(context, {"x": X.astype(np.float64)})
    assert "x" not in context
    session.run(context, {"x": X})
    with pytest.raises(ValueError):
        session.run(context, {"x": X, "y": np.array([1, 2], np.int64)})
    np.testing.assert_array_equal(np.asarray(context.get("x")), X)
    assert "y" not in context
