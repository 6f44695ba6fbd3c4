"""onnx_light.summary: per-operator tables, storage totals and per-node memory from the event log."""

import sys

import pytest

import onnx_light.runtime as runtime
from event_models import run_concat_decode, run_if_model
from onnx_light import summary

RUN_NODE = runtime.RuntimeEventAction.kRunNode


def node_events(events):
    return [e for e in events if e.action == RUN_NODE]


def test_op_summary_counts_and_times_every_dispatch():
    context = run_if_model()
    events = context.events()
    rows = summary.op_summary(events)
    by_op = {r["op_type"]: r for r in rows}
    assert {op: r["count"] for op, r in by_op.items()} == {"Identity": 2, "If": 2, "Relu": 1, "Add": 1, "Neg": 1}
    for op, r in by_op.items():
        durations = [e.duration_ns for e in node_events(events) if e.op_type == op]
        assert r["total_ns"] == sum(durations)
        assert r["max_ns"] == max(durations)
        assert r["mean_ns"] == pytest.approx(sum(durations) / len(durations))
        assert 0 <= r["self_ns"] <= r["total_ns"]
    # If includes its branch nodes; its self time leaves them out, so shares add up to one.
    nested = sum(by_op[op]["total_ns"] for op in ("Relu", "Add", "Neg"))
    assert by_op["If"]["self_ns"] == by_op["If"]["total_ns"] - nested
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    outer = sum(e.duration_ns for e in node_events(events) if e.op_type in ("Identity", "If"))
    assert summary.node_time_ns(events) == outer
    assert [r["self_ns"] for r in rows] == sorted((r["self_ns"] for r in rows), reverse=True)


def test_the_same_answers_from_dicts_and_from_the_context():
    context = run_if_model()
    rows = summary.op_summary(context.events())
    assert summary.op_summary([e.as_dict() for e in context.events()]) == rows
    assert summary.op_summary(context) == rows


def test_storage_totals_sum_the_storage_events():
    context, _ = run_concat_decode(steps=5, capacity=4)
    totals = summary.storage_totals(context.events())
    for field in summary.STORAGE_FIELDS:
        assert totals[field] == sum(getattr(e, field) for e in context.events()
                                    if e.action == runtime.RuntimeEventAction.kPersistentStorage)
    assert totals["storage_allocations"] == 2 and totals["storage_reuse_count"] == 3
    text = summary.format_storage_totals(totals)
    assert all(field in text for field in summary.STORAGE_FIELDS)


def test_node_memory_reports_live_bytes_after_each_node():
    context, _ = run_concat_decode(steps=3)
    events = context.events()
    rows = summary.node_memory(events)
    nodes = node_events(events)
    assert len(rows) == len(nodes) == 9
    assert [r["allocated_bytes"] for r in rows] == [e.allocated_bytes for e in nodes]
    assert [r["op_type"] for r in rows[:3]] == ["Relu", "Concat", "ReduceSum"]
    assert [r["step"] for r in rows] == list(range(9))
    for before, after in zip(rows, rows[1:]):
        assert after["delta_bytes"] == after["allocated_bytes"] - before["allocated_bytes"]
    table = summary.format_node_memory(rows, limit=4)
    assert len(table.splitlines()) == 5


def test_peak_and_printers():
    context, _ = run_concat_decode(steps=3)
    events = context.events()
    assert summary.peak_bytes(events) == max(e.peak_bytes for e in events) > 0
    assert summary.peak_bytes([]) == 0
    report = summary.format_summary(events)
    assert "Concat" in report and "persistent storage" in report and "allocator peak" in report
    assert "no node dispatches" in summary.format_op_summary([])
    usage = summary.kernel_usage_counts(["a", "b", "a"])
    assert usage == [("a", 2), ("b", 1)]
    assert "a" in summary.format_kernel_usage(["a"])


def test_frames_need_pandas(monkeypatch):
    context = run_if_model()
    monkeypatch.setitem(sys.modules, "pandas", None)  # makes `import pandas` fail
    with pytest.raises(ImportError, match="pip install pandas"):
        summary.op_summary_frame(context.events())
    with pytest.raises(ImportError, match="pandas"):
        summary.node_memory_frame(context.events())


def test_frames_with_pandas():
    pytest.importorskip("pandas", reason="pandas is optional; the frame functions need it")
    context = run_if_model()
    frame = summary.op_summary_frame(context.events())
    assert list(frame["op_type"]) == [r["op_type"] for r in summary.op_summary(context.events())]
    assert {"count", "total_ns", "mean_ns", "max_ns", "self_ns", "share"} <= set(frame.columns)
    memory = summary.node_memory_frame(context.events())
    assert len(memory) == len(summary.node_memory(context.events()))
