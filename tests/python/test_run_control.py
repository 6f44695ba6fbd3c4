"""One run per context, stopping a run (request_stop, run_timeout), and failed runs leaving the
context's values as they were (docs/threading.md, docs/errors.md)."""

import threading
import time

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime

ALMOST_FOREVER = 2**62
JOIN_SECONDS = 60  # a guard against hanging the suite, not a speed requirement


def new_context(kernels=None, **kwargs):
    return runtime.RuntimeContext(kernels or runtime.KernelContext(runtime.default_opset(23)), **kwargs)


def scalar_info(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def loop_body(nodes, cond_out="cond_out", v_out="v_out", initializer=()):
    return helper.make_graph(
        nodes, "body",
        [scalar_info("iter", TensorProto.INT64, []), scalar_info("cond_in", TensorProto.BOOL, []),
         scalar_info("v_in", TensorProto.FLOAT, [1])],
        [scalar_info(cond_out, TensorProto.BOOL, []), scalar_info(v_out, TensorProto.FLOAT, [1])],
        initializer=list(initializer))


def add_one_body():
    return loop_body([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                      helper.make_node("Add", ["v_in", "one"], ["v_out"])],
                     initializer=[numpy_helper.from_array(np.ones(1, np.float32), "one")])


def empty_body():
    return loop_body([], cond_out="cond_in", v_out="v_in")


def nested_if_body():
    """Each iteration runs an If: v_out = If(cond_in, then: v_in + 1, else: v_in)."""
    then_branch = helper.make_graph([helper.make_node("Add", ["v_in", "one"], ["t"])], "then", [],
                                    [scalar_info("t", TensorProto.FLOAT, [1])])
    else_branch = helper.make_graph([helper.make_node("Identity", ["v_in"], ["e"])], "else", [],
                                    [scalar_info("e", TensorProto.FLOAT, [1])])
    return loop_body([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                      helper.make_node("If", ["cond_in"], ["v_out"], name="if", then_branch=then_branch,
                                       else_branch=else_branch)],
                     initializer=[numpy_helper.from_array(np.ones(1, np.float32), "one")])


BODIES = pytest.mark.parametrize("body", [add_one_body, empty_body, nested_if_body],
                                 ids=["body", "empty-body", "if-in-body"])


def make_model(graph, domains=()):
    imports = [helper.make_opsetid("", 23)] + [helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 10
    return model.SerializeToString()


def forever_model(body):
    """y = Loop(M = 2**62 (an initializer), cond = true, v = x): the probe's tiny model."""
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="loop", body=body)], "forever",
        [scalar_info("x", TensorProto.FLOAT, [1])], [scalar_info("y", TensorProto.FLOAT, [1])],
        initializer=[numpy_helper.from_array(np.array(ALMOST_FOREVER, np.int64), "M"),
                     numpy_helper.from_array(np.array(True), "cond")])
    return make_model(graph)


def counted_loop_model(body=None, extra_nodes=(), extra_inputs=(), extra_outputs=()):
    """y = Loop(M (a graph input), true, x); y = x + M with add_one_body."""
    graph = helper.make_graph(
        list(extra_nodes) + [helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="loop",
                                              body=body or add_one_body())],
        "counted", [scalar_info("M", TensorProto.INT64, []), scalar_info("x", TensorProto.FLOAT, [1])]
        + list(extra_inputs),
        [scalar_info("y", TensorProto.FLOAT, [1])] + list(extra_outputs),
        initializer=[numpy_helper.from_array(np.array(True), "cond")])
    return make_model(graph)


def x_feed(value=1.0):
    return {"x": np.array([value], np.float32)}


def counted_feeds(trips, value=1.0):
    return {"M": np.array(trips, np.int64), **x_feed(value)}


def run_in_thread(fn):
    """Starts fn on a thread; returns (thread, errors) where errors collects what fn raised."""
    errors = []

    def target():
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - reported by the caller
            errors.append(e)

    thread = threading.Thread(target=target)
    thread.start()
    return thread, errors


def wait_until_running(ctx, thread):
    while not ctx.running and thread.is_alive():
        time.sleep(0.001)


def wait_until_iterating(ctx, thread):
    """Until a node of the Loop's body has run (needs events): the loop is surely in flight."""
    while thread.is_alive() and not any(e.subgraph_attr_name == "body" for e in ctx.events()):
        time.sleep(0.001)


@BODIES
def test_request_stop_from_another_thread_ends_an_almost_endless_loop(body):
    model = forever_model(body())
    if body is not nested_if_body:
        assert len(model) < 400  # a few hundred bytes that would otherwise run for ever
    session = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(num_threads=1))
    has_nodes = body is not empty_body
    ctx = new_context(events_enabled=has_nodes)
    thread, errors = run_in_thread(lambda: session.run(ctx, x_feed()))
    wait_until_running(ctx, thread)
    if has_nodes:
        wait_until_iterating(ctx, thread)
    ctx.request_stop()
    thread.join(JOIN_SECONDS)
    assert not thread.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], RuntimeError)
    assert "stop request" in str(errors[0])
    if has_nodes:
        assert "node 'loop' (Loop)" in str(errors[0])
    # No outputs, and the feed the call added is gone again.
    assert "y" not in ctx and "x" not in ctx
    assert not ctx.running


@BODIES
def test_run_timeout_ends_an_almost_endless_loop(body):
    session = runtime.RuntimeSession(forever_model(body()), runtime.RuntimeSessionOptions(num_threads=1))
    ctx = new_context()
    ctx.run_timeout = 0.05
    assert ctx.run_timeout == pytest.approx(0.05)
    with pytest.raises(RuntimeError, match=r"run timeout of 0\.05 s"):
        session.run(ctx, x_feed())
    assert "y" not in ctx and "x" not in ctx


def test_run_timeout_values():
    ctx = new_context()
    assert ctx.run_timeout is None
    ctx.run_timeout = 2
    assert ctx.run_timeout == 2.0
    ctx.run_timeout = 0
    assert ctx.run_timeout is None
    ctx.run_timeout = 1.5
    ctx.run_timeout = None
    assert ctx.run_timeout is None
    for bad in (-1.0, float("nan"), float("inf"), 1e12):
        with pytest.raises(ValueError, match="run_timeout"):
            ctx.run_timeout = bad
    # A timeout that every run fits in changes nothing.
    session = runtime.RuntimeSession(counted_loop_model(), runtime.RuntimeSessionOptions(num_threads=1))
    ctx.run_timeout = 60
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(session.run(ctx, counted_feeds(4))["y"]), [5.0])


def test_a_stop_requested_inside_a_nested_if_ends_the_whole_run():
    kernels = runtime.KernelContext(runtime.default_opset(23))
    ctx = new_context(kernels)

    def stop_now(v):
        ctx.request_stop()  # from inside the run: no guard needed, never blocks
        return np.asarray(v)

    runtime.register_kernel("test.stop", "StopNow", stop_now, kernel_context=kernels)
    then_branch = helper.make_graph(
        [helper.make_node("StopNow", ["v_in"], ["stopped"], domain="test.stop", name="stop_now"),
         helper.make_node("Identity", ["stopped"], ["t"], name="after_stop")],
        "then", [], [scalar_info("t", TensorProto.FLOAT, [1])])
    else_branch = helper.make_graph([helper.make_node("Identity", ["v_in"], ["e"])], "else", [],
                                    [scalar_info("e", TensorProto.FLOAT, [1])])
    body = loop_body([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                      helper.make_node("If", ["cond_in"], ["v_out"], name="if", then_branch=then_branch,
                                       else_branch=else_branch)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "cond", "x"], ["y"], name="loop", body=body)], "nested",
        [scalar_info("x", TensorProto.FLOAT, [1])], [scalar_info("y", TensorProto.FLOAT, [1])],
        initializer=[numpy_helper.from_array(np.array(ALMOST_FOREVER, np.int64), "M"),
                     numpy_helper.from_array(np.array(True), "cond")])
    session = runtime.RuntimeSession(
        make_model(graph, ["test.stop"]), runtime.RuntimeSessionOptions(num_threads=1, kernel_context=kernels))
    with pytest.raises(RuntimeError) as info:
        session.run(ctx, x_feed())
    message = str(info.value)
    assert "node 'loop' (Loop)" in message and "node 'if' (If)" in message
    assert "before node 'after_stop' (Identity)" in message


def test_a_stop_requested_while_idle_stops_only_the_next_run():
    session = runtime.RuntimeSession(counted_loop_model(), runtime.RuntimeSessionOptions(num_threads=1))
    ctx = new_context()
    ctx.request_stop()
    with pytest.raises(RuntimeError, match="before the run started"):
        session.run(ctx, counted_feeds(2))
    assert "x" not in ctx and "M" not in ctx
    np.testing.assert_array_equal(np.asarray(session.run(ctx, counted_feeds(2))["y"]), [3.0])


def test_the_context_is_usable_after_a_stop_and_keeps_its_values():
    session = runtime.RuntimeSession(counted_loop_model(), runtime.RuntimeSessionOptions(num_threads=1))
    ctx = new_context(events_enabled=True)
    before = session.run(ctx, counted_feeds(2, 1.0))
    np.testing.assert_array_equal(np.asarray(before["y"]), [3.0])
    thread, errors = run_in_thread(lambda: session.run(ctx, counted_feeds(ALMOST_FOREVER, 9.0)))
    wait_until_running(ctx, thread)
    ctx.request_stop()
    thread.join(JOIN_SECONDS)
    assert not thread.is_alive() and len(errors) == 1
    # Every value is the one from before the stopped call: feeds restored, no outputs written.
    np.testing.assert_array_equal(np.asarray(ctx.get("x")), [1.0])
    assert int(np.asarray(ctx.get("M"))) == 2
    np.testing.assert_array_equal(np.asarray(ctx.get("y")), [3.0])
    np.testing.assert_array_equal(np.asarray(session.run(ctx, counted_feeds(4, 1.0))["y"]), [5.0])


def test_every_failed_run_leaves_the_context_values_as_they_were():
    session = runtime.RuntimeSession(counted_loop_model(), runtime.RuntimeSessionOptions(num_threads=1))
    ctx = new_context()
    ctx.put("x", np.array([7.0], np.float32), "input")
    # A feed of the wrong type (fails in the run), an unknown feed after a good one, a non-array.
    with pytest.raises(ValueError):
        session.run(ctx, {"M": np.array(1, np.int64), "x": np.array([1.0])})
    with pytest.raises(KeyError):
        session.run(ctx, {"M": np.array(1, np.int64), "x": np.array([2.0], np.float32), "nope": np.ones(1)})
    with pytest.raises(TypeError):
        session.run(ctx, {"M": np.array(1, np.int64), "x": object()})
    assert sorted(ctx.tensors()) == ["x"]
    np.testing.assert_array_equal(np.asarray(ctx.get("x")), [7.0])
    # A successful run keeps its feeds, as before.
    session.run(ctx, counted_feeds(1, 2.0))
    assert sorted(ctx.tensors()) == ["M", "x", "y"]


def stateful_loop_model():
    """past [1] <- present = past + x; y = x + M through a Loop."""
    return runtime.with_persistent_bindings(
        counted_loop_model(extra_nodes=[helper.make_node("Add", ["past", "x"], ["present"])],
                           extra_inputs=[scalar_info("past", TensorProto.FLOAT, [1])],
                           extra_outputs=[scalar_info("present", TensorProto.FLOAT, [1])]),
        {"past": "present"})


def test_a_stopped_state_call_leaves_the_state_as_it_was():
    state = runtime.PersistentValueState(stateful_loop_model(), {"past": np.array([10.0], np.float32)},
                                         runtime.RuntimeSessionOptions(num_threads=1))
    ctx = new_context()
    state.run(ctx, counted_feeds(1))
    np.testing.assert_array_equal(np.asarray(state.values["past"]), [11.0])

    ctx.run_timeout = 0.03
    with pytest.raises(RuntimeError, match="run timeout"):
        state.run(ctx, counted_feeds(ALMOST_FOREVER))
    np.testing.assert_array_equal(np.asarray(state.values["past"]), [11.0])
    ctx.run_timeout = None

    thread, errors = run_in_thread(lambda: state.run(ctx, counted_feeds(ALMOST_FOREVER)))
    wait_until_running(ctx, thread)
    ctx.request_stop()
    thread.join(JOIN_SECONDS)
    assert not thread.is_alive() and len(errors) == 1 and "stop request" in str(errors[0])
    np.testing.assert_array_equal(np.asarray(state.values["past"]), [11.0])

    out = state.run(ctx, counted_feeds(2))
    np.testing.assert_array_equal(np.asarray(out["y"]), [3.0])
    np.testing.assert_array_equal(np.asarray(state.values["past"]), [12.0])


def test_a_running_context_refuses_other_threads_loudly():
    session = runtime.RuntimeSession(forever_model(add_one_body()), runtime.RuntimeSessionOptions(num_threads=1))
    quick = runtime.RuntimeSession(counted_loop_model(), runtime.RuntimeSessionOptions(num_threads=1))
    state = runtime.PersistentValueState(stateful_loop_model(), {"past": np.zeros(1, np.float32)})
    ctx = new_context(events_enabled=True)
    ctx.put("kept", np.ones(1, np.float32))
    thread, errors = run_in_thread(lambda: session.run(ctx, x_feed()))
    wait_until_running(ctx, thread)
    try:
        busy = "already running"
        with pytest.raises(RuntimeError, match=busy):
            quick.run(ctx, counted_feeds(1))
        with pytest.raises(RuntimeError, match=busy):
            state.run(ctx, counted_feeds(1))
        for call in (lambda: ctx.put("z", np.ones(1, np.float32)), lambda: ctx.get("kept"),
                     lambda: ctx.remove("kept"), ctx.clear, ctx.copy, ctx.tensors, ctx.values,
                     lambda: "kept" in ctx, lambda: ctx.set_retained_outputs(["y"])):
            with pytest.raises(RuntimeError, match=busy):
                call()
        with pytest.raises(RuntimeError, match=busy):
            ctx.run_timeout = 1.0
        ctx.events()  # the shared log is safe to read at any time
    finally:
        ctx.request_stop()
        thread.join(JOIN_SECONDS)
    assert not thread.is_alive() and "stop request" in str(errors[0])
    np.testing.assert_array_equal(np.asarray(ctx.get("kept")), [1.0])
    np.testing.assert_array_equal(np.asarray(quick.run(ctx, counted_feeds(1))["y"]), [2.0])


def test_python_threads_sharing_one_context_get_exact_results_or_the_busy_error():
    session = runtime.RuntimeSession(counted_loop_model(), runtime.RuntimeSessionOptions(num_threads=1))
    ctx = new_context()
    threads_n, successes = 6, 20
    results = {"ok": 0, "refused": 0, "wrong": [], "other": []}
    lock = threading.Lock()

    def worker(i):
        mine = 0
        while mine < successes and not results["other"]:
            try:
                out = session.run(ctx, counted_feeds(50 + i, float(i)))
                y = float(np.asarray(out["y"])[0])
                with lock:
                    results["ok"] += 1
                    if y != 50 + 2 * i:
                        results["wrong"].append((i, y))
                mine += 1
            except RuntimeError as e:
                with lock:
                    if "already running" in str(e):
                        results["refused"] += 1
                    else:
                        results["other"].append(e)
                time.sleep(0)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_SECONDS)
    assert not any(t.is_alive() for t in threads)
    assert results["other"] == [] and results["wrong"] == []
    assert results["ok"] == threads_n * successes
