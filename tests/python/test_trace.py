"""runtime.export_chrome_trace: files that Perfetto and chrome://tracing open, read back with json."""

import io
import json

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from event_models import (DECODER_OPS, has_kernels, if_model, new_context, run_concat_decode,
                          run_if_model)
from onnx_light import summary, trace
from onnx_light.onnx_py._onnxpykernels import runtime as spec_runtime

X_KEYS = {"name", "ph", "ts", "dur", "pid", "tid", "args"}
NODE_ARGS = {"node_index", "node_name", "inputs", "subgraph_node_index", "subgraph_attr_name"}
STORAGE_FIELDS = ("storage_allocations", "storage_allocated_bytes", "storage_prefix_copied_bytes",
                  "storage_append_copied_bytes", "storage_reuse_count")


def export(events, tmp_path, **kwargs):
    path = tmp_path / "trace.json"
    runtime.export_chrome_trace(events, path, **kwargs)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def phase(trace_dict, ph):
    return [e for e in trace_dict["traceEvents"] if e["ph"] == ph]


def check_structure(trace_dict):
    """What every trace must satisfy, whatever ran."""
    assert isinstance(trace_dict["traceEvents"], list)
    for e in phase(trace_dict, "X"):
        assert X_KEYS <= e.keys(), e
        assert NODE_ARGS <= e["args"].keys(), e
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert isinstance(e["args"]["inputs"], list)
    counters = phase(trace_dict, "C")
    assert [c["ts"] for c in counters] == sorted(c["ts"] for c in counters), "counter samples in time order"
    for c in counters:
        assert c["name"] == "allocator" and isinstance(c["args"]["live_bytes"], int)
    for e in phase(trace_dict, "i"):
        if e["cat"] == "persistent_storage":
            for field in STORAGE_FIELDS:
                assert isinstance(e["args"][field], int), (field, e)
    stamped = [e["ts"] for e in trace_dict["traceEvents"] if e["ph"] != "M"]
    if stamped:
        assert min(stamped) == 0, "times are relative to the earliest event"


def test_export_is_reachable_from_both_module_paths():
    assert runtime.export_chrome_trace is trace.export_chrome_trace
    assert spec_runtime.export_chrome_trace is trace.export_chrome_trace


def test_if_model_nodes_nest_inside_the_if(tmp_path):
    context = run_if_model()
    events = context.events()
    data = export(events, tmp_path)
    check_structure(data)
    slices = phase(data, "X")
    assert sorted(e["name"] for e in slices) == sorted(["Identity", "If", "Relu", "Add", "Identity", "If", "Neg"])
    assert len(slices) == sum(1 for e in events if e.action == runtime.RuntimeEventAction.kRunNode)
    ifs = [e for e in slices if e["name"] == "If"]
    assert all(e["args"]["node_index"] == 1 and e["args"]["subgraph_node_index"] == -1 for e in ifs)
    assert all(e["args"]["node_name"] == "choose" and e["args"]["inputs"] == ["cond"] for e in ifs)
    branch = {e["name"]: e for e in slices if e["args"]["subgraph_node_index"] == 1}
    assert branch["Relu"]["args"]["subgraph_attr_name"] == "then_branch"
    assert branch["Add"]["args"]["subgraph_attr_name"] == "then_branch"
    assert branch["Add"]["args"]["inputs"] == ["r", "t"]
    assert branch["Neg"]["args"]["subgraph_attr_name"] == "else_branch"
    # Each branch node lies inside one If slice on the same track, which comes first in the file.
    for name, e in branch.items():
        parents = [p for p in ifs if p["ts"] <= e["ts"] <= p["ts"] + p["dur"]]
        assert len(parents) == 1, name
        assert (parents[0]["pid"], parents[0]["tid"]) == (e["pid"], e["tid"])
        assert data["traceEvents"].index(parents[0]) < data["traceEvents"].index(e)
    # Microseconds: the exported duration is the recorded one divided by 1000.
    recorded = sorted(e.duration_ns for e in events if e.action == runtime.RuntimeEventAction.kRunNode)
    assert sorted(round(e["dur"] * 1000) for e in slices) == recorded


def test_decode_loop_storage_events_carry_the_counters(tmp_path):
    context, _ = run_concat_decode(steps=6, capacity=2)
    data = export(context.events(), tmp_path)
    check_structure(data)
    storage = [e for e in phase(data, "i") if e["cat"] == "persistent_storage"]
    assert storage and all(e["tid"] == storage[0]["tid"] for e in storage)
    assert {e["name"] for e in storage} == {"present"}
    totals = {field: sum(e["args"][field] for e in storage) for field in STORAGE_FIELDS}
    assert totals == summary.storage_totals(context.events())
    # Capacity 2, six single-row appends: buffers of 2, 4 and 8 rows of 2*4 floats.
    row = 2 * 4 * 4
    assert totals["storage_allocations"] == 3
    assert totals["storage_allocated_bytes"] == (2 + 4 + 8) * row
    assert totals["storage_append_copied_bytes"] == 6 * row
    assert totals["storage_reuse_count"] == 3
    assert len(phase(data, "X")) == 3 * 6
    assert phase(data, "C"), "the allocator counter track is there"


@pytest.mark.skipif(not has_kernels(*DECODER_OPS), reason="decoder kernels (MatMul, ...) not built in yet")
def test_decoder_decode_loop_trace(tmp_path):
    from onnx_light import decoder_model

    layers, heads, head_size, steps = 2, 2, 8, 5
    model = decoder_model.build_decoder(layers=layers, heads=heads, head_size=head_size)
    declared = runtime.with_persistent_bindings(model, decoder_model.bindings(layers))
    state = runtime.PersistentValueState(
        declared, initial=decoder_model.empty_cache(layers, heads, head_size),
        options=runtime.RuntimeSessionOptions(persistent_tensor_initial_capacity=4,
                                              persistent_tensor_reserved_rows=0))  # geometric growth
    context = new_context()
    x = np.random.default_rng(0).standard_normal((1, 1, heads * head_size)).astype(np.float32)
    for _ in range(steps):
        state.run(context, {"x": x})
    data = export(context.events(), tmp_path)
    check_structure(data)
    slices = phase(data, "X")
    per_step = len(model.graph.node)
    assert len(slices) == per_step * steps
    assert sum(e["name"] == "Attention" for e in slices) == layers * steps
    storage = [e for e in phase(data, "i") if e["cat"] == "persistent_storage"]
    assert {e["name"] for e in storage} == set(decoder_model.bindings(layers).values())
    appended = sum(e["args"]["storage_append_copied_bytes"] for e in storage)
    assert appended == 2 * layers * steps * heads * head_size * 4


def test_value_events_are_optional_instant_events(tmp_path):
    context = run_if_model(conds=(True,))
    without = export(context.events(), tmp_path)
    assert not [e for e in phase(without, "i") if e["cat"] in ("add", "replace", "remove")]
    with_values = export(context.events(), tmp_path, include_value_events=True)
    check_structure(with_values)
    values = [e for e in phase(with_values, "i") if e["cat"] in ("add", "replace", "remove")]
    recorded = [e for e in context.events() if int(e.action) in (0, 1, 2)]
    assert len(values) == len(recorded) > 0
    assert {"x", "t", "y"} <= {e["name"] for e in values}
    assert all({"kind", "shape", "data_type", "node_index"} <= e["args"].keys() for e in values)
    thread_names = {e["tid"]: e["args"]["name"] for e in phase(with_values, "M") if e["name"] == "thread_name"}
    assert set(thread_names.values()) == {"nodes", "persistent storage", "values"}


def test_accepts_dicts_a_context_and_a_file_object(tmp_path):
    context = run_if_model(conds=(False,))
    from_objects = trace.chrome_trace(context.events())
    assert trace.chrome_trace([e.as_dict() for e in context.events()]) == from_objects
    assert trace.chrome_trace(context) == from_objects
    buffer = io.StringIO()
    runtime.export_chrome_trace(context.events(), buffer)
    assert json.loads(buffer.getvalue()) == json.loads(json.dumps(from_objects))


def test_names_with_quotes_newlines_and_unicode_survive(tmp_path):
    odd = 'sel"ect\\ \n\t café ✓'
    context = new_context()
    session = runtime.RuntimeSession(if_model(node_name=odd))
    session.run(context, {"x": np.ones((2, 3), np.float32), "cond": np.array(True)})
    data = export(context.events(), tmp_path)
    (if_slice,) = [e for e in phase(data, "X") if e["name"] == "If"]
    assert if_slice["args"]["node_name"] == odd


def test_empty_log_gives_a_valid_trace(tmp_path):
    data = export([], tmp_path)
    check_structure(data)
    assert not phase(data, "X") and not phase(data, "C")
    assert data["otherData"]["event_count"] == 0


def test_events_off_means_an_empty_trace(tmp_path):
    context = run_if_model(new_context(events=False))
    data = export(context.events(), tmp_path)
    assert not phase(data, "X")


def test_unwritable_path_raises(tmp_path):
    with pytest.raises(OSError):
        runtime.export_chrome_trace([], tmp_path / "missing-dir" / "trace.json")


def test_loop_body_nodes_carry_the_body_attribute(tmp_path):
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "one"], ["acc_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "acc"], ["final"], body=body, name="loop")],
        "loop_model",
        [helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("acc", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("final", TensorProto.FLOAT, [1])],
        initializer=[helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    context = new_context()
    out = runtime.RuntimeSession(model).run(context, {"n": np.array(3, np.int64), "acc": np.zeros(1, np.float32)})
    assert np.asarray(out["final"]).tolist() == [3.0]
    data = export(context.events(), tmp_path)
    check_structure(data)
    adds = [e for e in phase(data, "X") if e["name"] == "Add"]
    assert len(adds) == 3
    assert all(e["args"]["subgraph_attr_name"] == "body" for e in adds)
    (loop,) = [e for e in phase(data, "X") if e["name"] == "Loop"]
    assert all(loop["ts"] <= e["ts"] <= loop["ts"] + loop["dur"] for e in adds)


def test_partial_dicts_take_the_event_defaults():
    # Hand-written records: missing fields read as RuntimeEvent's defaults, actions by name or code.
    data = trace.chrome_trace([
        {"action": 3, "timestamp_ns": 5000, "duration_ns": 1500, "op_type": "Relu", "allocated_bytes": 64},
        {"action": "persistent_storage", "timestamp_ns": 2000, "name": "past", "storage_reuse_count": 2},
        {"action": "bogus", "timestamp_ns": 1000, "allocated_bytes": 8},
    ])
    (node,) = phase(data, "X")
    assert (node["name"], node["ts"], node["dur"]) == ("Relu", 4.0, 1.5)
    assert node["args"]["node_index"] == -1 and node["args"]["inputs"] == []
    (storage,) = phase(data, "i")
    assert storage["args"]["storage_reuse_count"] == 2 and storage["args"]["kind"] == "unknown"
    assert [c["args"]["live_bytes"] for c in phase(data, "C")] == [8, 0, 64]
    assert data["otherData"]["event_count"] == 3


def test_records_that_are_not_events_are_refused():
    with pytest.raises(TypeError, match="RuntimeEvent"):
        trace.chrome_trace([object()])
    with pytest.raises(ValueError, match="kind must be one of"):
        trace.chrome_trace([{"action": "add", "kind": "weights"}])


def matmul_relu_model():
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), helper.make_node("Relu", ["h"], ["y"], name="act")],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model.SerializeToString()


def test_runs_are_spans_and_nodes_carry_shapes(tmp_path):
    session = runtime.RuntimeSession(matmul_relu_model())
    context = runtime.RuntimeContext(events_enabled=True)
    w = np.ones((4, 3), np.float32)
    for batch in (1, 2, 5):
        session.run(context, {"x": np.ones((batch, 4), np.float32), "w": w})
    data = export(context.events(), tmp_path)
    check_structure(data)
    begins = [e for e in phase(data, "b") if e["cat"] == "run"]
    ends = [e for e in phase(data, "e") if e["cat"] == "run"]
    assert [e["args"]["run_index"] for e in begins] == [0, 1, 2] == [e["id"] for e in ends]
    assert all(e["args"]["completed"] and e["args"]["node_count"] == 2 for e in begins)
    slices = phase(data, "X")
    assert len(slices) == 6  # the runs are not complete events: those are exactly the nodes
    for begin, end in zip(begins, ends):
        inside = [s for s in slices if begin["ts"] <= s["ts"] and s["ts"] + s["dur"] <= end["ts"] + 1e-3]
        assert len(inside) == 2
        assert begin["args"]["duration_ns"] >= 0
    matmuls = [s for s in slices if s["name"] == "MatMul"]
    assert [s["args"]["input_shapes"] for s in matmuls] == [[[b, 4], [4, 3]] for b in (1, 2, 5)]
    assert [s["args"]["outputs"] for s in matmuls] == [["h"]] * 3
    assert [s["args"]["output_shapes"] for s in matmuls] == [[[b, 3]] for b in (1, 2, 5)]
    relus = [s for s in slices if s["name"] == "Relu"]
    assert [s["args"]["input_shapes"] for s in relus] == [[[b, 3]] for b in (1, 2, 5)]


def test_session_load_and_compile_spans(tmp_path):
    path = tmp_path / "mlp.onnx"
    path.write_bytes(matmul_relu_model())
    session = runtime.RuntimeSession(str(path))
    assert session.load_time_ns > 0 and session.compile_time_ns > 0
    context = runtime.RuntimeContext(events_enabled=True)
    session.run(context, {"x": np.ones((2, 4), np.float32), "w": np.ones((4, 3), np.float32)})
    data = trace.chrome_trace(context, sessions=[session])
    check_structure(data)
    spans = {e["name"]: e for e in phase(data, "b") if e["cat"] == "session"}
    assert set(spans) == {"load model", "compile"}
    assert spans["load model"]["args"]["duration_ns"] == session.load_time_ns
    assert spans["compile"]["args"]["duration_ns"] == session.compile_time_ns
    assert spans["load model"]["ts"] == 0  # the earliest thing in the trace
    (run,) = [e for e in phase(data, "b") if e["cat"] == "run"]
    assert run["ts"] >= spans["compile"]["ts"]
    assert trace.chrome_trace(context)["traceEvents"] != data["traceEvents"]
    with pytest.raises(TypeError, match="sessions: expected RuntimeSession"):
        trace.chrome_trace(context, sessions=[3])
