"""RuntimeSession through Python: model inputs (path, bytes, ModelProto), feeds, events, errors,
custom kernels."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import make_model


def identity_model(dtype=TensorProto.FLOAT, shape=(2, 3)):
    node = helper.make_node("Identity", ["x"], ["y"], name="id0")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", dtype, shape)],
                              [helper.make_tensor_value_info("y", dtype, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


def new_context(**kwargs):
    return runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), **kwargs)


@pytest.mark.parametrize("form", ["proto", "bytes", "path", "pathlike"])
def test_model_forms(form, tmp_path):
    import pathlib

    model = identity_model()
    if form == "proto":
        source = model
    elif form == "bytes":
        source = model.SerializeToString()
    else:
        path = tmp_path / "m.onnx"
        onnx.save(model, str(path))
        source = str(path) if form == "path" else pathlib.Path(path)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = runtime.RuntimeSession(source).run(new_context(), {"x": x})
    assert list(out) == ["y"]
    np.testing.assert_array_equal(np.asarray(out["y"]), x)


def test_identity_output_views_the_feed():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = runtime.RuntimeSession(identity_model()).run(new_context(), {"x": x})
    assert np.shares_memory(np.asarray(out["y"]), x)


def test_run_records_node_and_value_events():
    ctx = new_context(events_enabled=True)
    runtime.RuntimeSession(identity_model()).run(ctx, {"x": np.ones((2, 3), np.float32)})
    events = [e.as_dict() for e in ctx.events()]
    actions = [(e["action"], e["kind"], e["name"]) for e in events]
    assert actions[0] == ("add", "input", "x")
    run = [e for e in events if e["action"] == "run_node"]
    assert len(run) == 1
    assert run[0]["op_type"] == "Identity" and run[0]["name"] == "id0" and run[0]["inputs"] == ["x"]
    assert run[0]["node_index"] == 0 and run[0]["subgraph_node_index"] == -1
    assert run[0]["duration_ns"] >= 0 and run[0]["timestamp_ns"] > 0
    assert ("add", "output", "y") in actions


def test_missing_and_unknown_feeds_and_wrong_types():
    session = runtime.RuntimeSession(identity_model())
    with pytest.raises(ValueError, match="missing input 'x'"):
        session.run(new_context(), {})
    with pytest.raises(KeyError, match="'z' is not a graph input"):
        session.run(new_context(), {"x": np.ones((2, 3), np.float32), "z": np.ones(1)})
    with pytest.raises(ValueError, match=r"input 'x': expected element type float32, got int64"):
        session.run(new_context(), {"x": np.ones((2, 3), np.int64)})
    with pytest.raises(ValueError, match=r"input 'x': expected rank 2"):
        session.run(new_context(), {"x": np.ones((6,), np.float32)})
    with pytest.raises(ValueError, match=r"input 'x': dimension 1 must be 3"):
        session.run(new_context(), {"x": np.ones((2, 4), np.float32)})
    with pytest.raises(TypeError, match="feed 'x'"):
        session.run(new_context(), {"x": object()})


def test_unsupported_operator_fails_at_construction_naming_the_node():
    node = helper.make_node("NoSuchOp", ["x"], ["y"], name="weird", domain="example.com")
    model = make_model([node], {"x": np.ones(2, np.float32)}, ["y"], extra_opsets={"example.com": 1})
    with pytest.raises(NotImplementedError, match="node 'weird' \\(NoSuchOp\\)"):
        runtime.RuntimeSession(model)


def test_value_used_before_definition_is_rejected():
    node = helper.make_node("Identity", ["nowhere"], ["y"], name="n0")
    model = make_model([node], {"x": np.ones(2, np.float32)}, ["y"])
    with pytest.raises(ValueError, match="'nowhere' is not produced"):
        runtime.RuntimeSession(model)


def test_malformed_model_bytes_are_value_errors():
    data = identity_model().SerializeToString()
    with pytest.raises(ValueError):
        runtime.RuntimeSession(data[: len(data) // 2])
    with pytest.raises(TypeError):
        runtime.RuntimeSession(12)


def test_python_kernel_per_context_overrides_only_that_context():
    node = helper.make_node("Twice", ["x"], ["y"], domain="custom.test", scale=2.0)
    model = make_model([node], {"x": np.ones(3, np.float32)}, ["y"], extra_opsets={"custom.test": 1})
    kernel_context = runtime.KernelContext(runtime.default_opset(23))
    runtime.register_kernel("custom.test", "Twice", lambda x, scale: np.asarray(x) * scale,
                            kernel_context=kernel_context)
    with pytest.raises(NotImplementedError):
        runtime.RuntimeSession(model)  # other contexts do not see the kernel
    session = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(kernel_context=kernel_context))
    ctx = runtime.RuntimeContext(kernel_context)
    out = session.run(ctx, {"x": np.arange(3, dtype=np.float32)})
    np.testing.assert_array_equal(np.asarray(out["y"]), [0, 2, 4])


def test_python_kernel_global_registration():
    node = helper.make_node("AddOne", ["x"], ["y"], domain="custom.global")
    model = make_model([node], {"x": np.ones(3, np.float32)}, ["y"], extra_opsets={"custom.global": 1})
    runtime.register_kernel("custom.global", "AddOne", lambda x: np.asarray(x) + 1)
    ctx = new_context()
    ctx.set_kernel_usage_enabled(True)
    out = runtime.RuntimeSession(model).run(ctx, {"x": np.arange(3, dtype=np.float32)})
    np.testing.assert_array_equal(np.asarray(out["y"]), [1, 2, 3])
    assert ctx.get_kernel_usage() == ["AddOne/any/python"]


def test_python_kernel_errors_name_the_node():
    node = helper.make_node("Boom", ["x"], ["y"], name="b0", domain="custom.err")
    model = make_model([node], {"x": np.ones(1, np.float32)}, ["y"], extra_opsets={"custom.err": 1})

    def boom(x):
        raise RuntimeError("kaput")

    runtime.register_kernel("custom.err", "Boom", boom)
    with pytest.raises(ValueError, match="node 'b0' \\(Boom\\).*kaput"):
        runtime.RuntimeSession(model).run(new_context(), {"x": np.ones(1, np.float32)})


def test_outputs_viewing_model_constants_are_read_only():
    from onnx import numpy_helper

    weights = np.arange(4, dtype=np.float32)
    nodes = [helper.make_node("Identity", ["w"], ["y"]),
             helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(weights, "c")),
             helper.make_node("Concat", ["x", "x"], ["z"], axis=0)]
    model = make_model(nodes, {"x": np.ones(4, np.float32)}, ["y", "c", "z"], initializers={"w": weights})
    session = runtime.RuntimeSession(model)
    out = session.run(new_context(), {"x": np.ones(4, np.float32)})
    for name in ("y", "c"):
        view = np.asarray(out[name])
        assert not view.flags.writeable, f"{name} views a model constant"
        with pytest.raises(ValueError):
            view[0] = 42
    assert np.asarray(out["z"]).flags.writeable
    again = session.run(new_context(), {"x": np.ones(4, np.float32)})
    np.testing.assert_array_equal(np.asarray(again["y"]), weights)


def test_one_session_runs_concurrently_from_python_threads():
    import threading

    nodes = [helper.make_node("Add", ["x", "x"], ["a"]), helper.make_node("Mul", ["a", "a"], ["y"])]
    model = make_model(nodes, {"x": np.ones((256, 256), np.float32)}, ["y"])
    session = runtime.RuntimeSession(model)
    inputs = [np.full((256, 256), i, np.float32) for i in range(6)]
    results = [None] * len(inputs)

    def work(i):
        ctx = new_context()
        for _ in range(20):
            results[i] = np.asarray(session.run(ctx, {"x": inputs[i]})["y"]).copy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in enumerate(inputs):
        np.testing.assert_array_equal(results[i], (2 * x) ** 2)


@pytest.mark.parametrize("threads", [2, 3])
def test_thread_pool_gives_the_single_thread_results(threads):
    # Prefill and a decode step of a decoder: GEMM panels and attention heads spread over the
    # session's pool must produce what one thread produces.
    from onnx_light import decoder_model

    model = decoder_model.build_decoder(layers=2, heads=4, head_size=32)
    rng = np.random.default_rng(3)
    runs = []
    for n in (1, threads):
        session = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(num_threads=n))
        feeds = {"x": rng.standard_normal((2, 96, 128)).astype(np.float32)}
        feeds.update(decoder_model.empty_cache(2, 4, 32, batch=2))
        prefill = session.run(new_context(), feeds)
        step = {"x": rng.standard_normal((2, 1, 128)).astype(np.float32)}
        for i in range(2):
            step[f"past_key_{i}"] = prefill[f"present_key_{i}"]
            step[f"past_value_{i}"] = prefill[f"present_value_{i}"]
        runs.append((prefill, session.run(new_context(), step)))
        rng = np.random.default_rng(3)
    for one, many in zip(runs[0], runs[1]):
        for name in one:
            np.testing.assert_allclose(np.asarray(many[name]), np.asarray(one[name]), rtol=1e-5, atol=1e-5)


def test_one_multithreaded_session_runs_concurrently_from_python_threads():
    import threading

    from onnx_light import decoder_model

    model = decoder_model.build_decoder(layers=1, heads=4, head_size=32)
    session = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(num_threads=3))
    rng = np.random.default_rng(5)
    feeds = []
    for _ in range(4):
        f = {"x": rng.standard_normal((1, 48, 128)).astype(np.float32)}
        f.update(decoder_model.empty_cache(1, 4, 32))
        feeds.append(f)
    expected = [np.asarray(session.run(new_context(), f)["y"]).copy() for f in feeds]
    results = [None] * len(feeds)

    def work(i):
        ctx = new_context()
        for _ in range(10):
            results[i] = np.asarray(session.run(ctx, feeds[i])["y"]).copy()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(feeds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got, want)
