"""Many decode streams on one compiled session: states share the session, concurrent streams give
exactly the bytes of the same streams run one after another, sessions add no threads beyond the
shared pool."""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest

import onnx_light.runtime as runtime
from onnx_light import decoder_model, trace

LAYERS, HEADS, HEAD = 2, 2, 8
STREAMS, STEPS = 6, 12


@pytest.fixture(scope="module")
def declared():
    model = decoder_model.build_decoder(layers=LAYERS, heads=HEADS, head_size=HEAD, seed=3)
    return runtime.with_persistent_bindings(model, decoder_model.bindings(LAYERS))


def new_state(session):
    return runtime.PersistentValueState(session, decoder_model.empty_cache(LAYERS, HEADS, HEAD))


def token(stream, step):
    return np.random.default_rng(1000 * stream + step).standard_normal((1, 1, HEADS * HEAD)).astype(np.float32)


def run_stream(state, stream, ctx=None):
    out = []
    for step in range(STEPS):
        feeds = {"x": token(stream, step)}
        result = state.run(ctx, feeds) if ctx is not None else state.run(feeds)
        out.append(np.asarray(result["y"]).tobytes())
    out.extend(np.asarray(v).tobytes() for _, v in sorted(state.values.items()))
    return out


def test_states_share_the_session_and_keep_their_own_values(declared):
    session = runtime.RuntimeSession(declared, runtime.RuntimeSessionOptions(num_threads=1))
    a, b = new_state(session), new_state(session)
    assert a.session is session and b.session is session
    a.run({"x": token(0, 0)})
    assert a.values["past_key_0"].shape[2] == 1
    assert b.values["past_key_0"].shape[2] == 0
    private = runtime.PersistentValueState(declared, decoder_model.empty_cache(LAYERS, HEADS, HEAD))
    assert isinstance(private.session, runtime.RuntimeSession) and private.session is not session
    with pytest.raises(ValueError, match="options and base_dir belong to the session"):
        runtime.PersistentValueState(session, decoder_model.empty_cache(LAYERS, HEADS, HEAD),
                                     runtime.RuntimeSessionOptions())


@pytest.mark.parametrize("num_threads", [1, 2])
def test_concurrent_streams_give_the_sequential_bytes(declared, num_threads):
    session = runtime.RuntimeSession(declared, runtime.RuntimeSessionOptions(num_threads=num_threads))
    expected = [run_stream(new_state(session), s) for s in range(STREAMS)]

    results = [None] * STREAMS
    barrier = threading.Barrier(STREAMS)

    def worker(s):
        state = new_state(session)
        barrier.wait()
        results[s] = run_stream(state, s)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(STREAMS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == expected

    states = [new_state(session) for _ in range(STREAMS)]
    interleaved = [[] for _ in range(STREAMS)]
    for step in range(STEPS):
        for s, state in enumerate(states):
            interleaved[s].append(np.asarray(state.run({"x": token(s, step)})["y"]).tobytes())
    for s, state in enumerate(states):
        interleaved[s].extend(np.asarray(v).tobytes() for _, v in sorted(state.values.items()))
    assert interleaved == expected


def thread_count():
    return len(os.listdir("/proc/self/task"))


def test_sessions_and_states_add_no_threads(declared):
    runtime.RuntimeSession(declared)  # the process-wide pool exists from here on
    before = thread_count()
    sessions = [runtime.RuntimeSession(declared, runtime.RuntimeSessionOptions(num_threads=8)) for _ in range(6)]
    states = [new_state(s) for s in sessions for _ in range(3)]
    for s, state in enumerate(states):
        state.run({"x": token(s, 0)})
    assert thread_count() == before
    assert runtime.thread_budget() >= 1


def test_an_injected_pool_is_shared(declared):
    runtime.RuntimeSession(declared)  # the process-wide pool runs: its budget is fixed
    before = thread_count()
    pool = runtime.SharedThreadPool(3)
    assert pool.num_threads == 3 and thread_count() == before + 2
    options = runtime.RuntimeSessionOptions(num_threads=4, thread_pool=pool)
    assert options.thread_pool is pool
    sessions = [runtime.RuntimeSession(declared, options) for _ in range(5)]
    assert all(s.num_threads == 4 for s in sessions)
    for s, session in enumerate(sessions):
        new_state(session).run({"x": token(s, 0)})
    assert thread_count() == before + 2
    with pytest.raises(ValueError, match="SharedThreadPool num_threads"):
        runtime.SharedThreadPool(0)
    with pytest.raises(RuntimeError, match="process thread budget is already"):
        runtime.set_thread_budget(runtime.thread_budget() + 1)
    runtime.set_thread_budget(runtime.thread_budget())  # the same value is accepted


def test_events_carry_run_session_and_thread_and_the_trace_separates_them(declared, tmp_path):
    session = runtime.RuntimeSession(declared, runtime.RuntimeSessionOptions(num_threads=1))
    root = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    root.put("outside", np.zeros(1, np.float32))
    tids = {}

    def worker(s):
        tids[s] = threading.get_native_id()
        state = new_state(session)
        for step in range(3):
            child = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
            state.run(child, {"x": token(s, step)})
            events.extend(child.events())

    events = []
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outside = root.events()[0]
    assert outside.run_id == 0 and outside.as_dict()["run_id"] == 0
    nodes = [e for e in events if e.action == runtime.RuntimeEventAction.kRunNode]
    assert nodes and all(e.run_id and e.session_id == session.session_id for e in nodes)
    assert {e.thread_id for e in nodes} == set(tids.values())
    assert all(e.process_id == os.getpid() for e in nodes)
    assert len({e.run_id for e in nodes}) == 6
    d = nodes[0].as_dict()
    assert (d["run_id"], d["session_id"], d["thread_id"], d["process_id"]) == (
        nodes[0].run_id, session.session_id, nodes[0].thread_id, os.getpid())

    path = tmp_path / "streams.json"
    trace.export_chrome_trace(events, path)
    doc = json.loads(path.read_text())["traceEvents"]
    slices = [e for e in doc if e["ph"] == "X"]
    assert {e["pid"] for e in slices} == {os.getpid()}
    by_thread = {}
    for e in slices:
        by_thread.setdefault(e["args"]["thread_id"], set()).add(e["tid"])
    assert set(by_thread) == set(tids.values())
    assert all(len(t) == 1 for t in by_thread.values())
    assert len({next(iter(t)) for t in by_thread.values()}) == 2  # one track per thread
    runs = [e for e in doc if e.get("cat") == "run" and e["ph"] == "b"]
    assert sorted(e["args"]["run_id"] for e in runs) == sorted({e.run_id for e in nodes})
    names = {e["args"]["name"] for e in doc if e["name"] == "thread_name"}
    assert {f"nodes (thread {t})" for t in tids.values()} <= names
