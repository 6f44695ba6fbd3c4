"""onnx_light.trace.merge_traces and `onnx-light merge-traces`: traces of several workers in one file."""

import json
import os
import subprocess
import sys
import time

import pytest

from event_models import run_concat_decode, run_if_model
from onnx_light import trace


def stamped(trace_dict, pid=None):
    return [e for e in trace_dict["traceEvents"] if e["ph"] != "M" and (pid is None or e["pid"] == pid)]


def process_names(trace_dict):
    return {e["pid"]: e["args"]["name"] for e in trace_dict["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name"}


@pytest.fixture(scope="module")
def two_workers():
    """Traces of two "workers" that ran at different wall-clock times."""
    first = trace.chrome_trace(run_if_model())
    time.sleep(0.02)
    context, state = run_concat_decode(steps=4)
    second = trace.chrome_trace(context, sessions=[state])
    return first, second


def test_each_worker_is_one_process_track_named_by_its_label(two_workers):
    first, second = two_workers
    merged = trace.merge_traces([first, second], labels=["worker-a", "worker-b"])
    assert process_names(merged) == {1: "worker-a", 2: "worker-b"}
    assert len(stamped(merged, 1)) == len(stamped(first))
    assert len(stamped(merged, 2)) == len(stamped(second))
    assert {e["pid"] for e in merged["traceEvents"]} == {1, 2}
    # Thread ids are kept, with their names, under the new pid.
    for source, pid in ((first, 1), (second, 2)):
        assert {e["tid"] for e in stamped(merged, pid)} == {e["tid"] for e in stamped(source)}
        names = {(e["tid"], e["args"]["name"]) for e in source["traceEvents"] if e["name"] == "thread_name"}
        assert names == {(e["tid"], e["args"]["name"]) for e in merged["traceEvents"]
                         if e["name"] == "thread_name" and e["pid"] == pid}
    info = merged["otherData"]["merged"]
    assert [(m["label"], m["pids"]) for m in info] == [("worker-a", [1]), ("worker-b", [2])]
    assert merged["otherData"]["event_count"] == first["otherData"]["event_count"] + second["otherData"]["event_count"]


def test_timestamps_keep_their_wall_clock_time(two_workers):
    first, second = two_workers
    assert second["otherData"]["origin_timestamp_ns"] > first["otherData"]["origin_timestamp_ns"]
    # Either order of the inputs gives the same absolute times.
    for order in ([first, second], [second, first]):
        merged = trace.merge_traces(order, labels=["x", "y"])
        assert merged["otherData"]["origin_timestamp_ns"] == first["otherData"]["origin_timestamp_ns"]
        assert min(e["ts"] for e in stamped(merged)) == 0
        for pid, source in enumerate(order, start=1):
            shift_us = (source["otherData"]["origin_timestamp_ns"] - merged["otherData"]["origin_timestamp_ns"]) / 1000
            before = [e["ts"] for e in stamped(source)]
            after = [e["ts"] - shift_us for e in stamped(merged, pid)]
            assert after == pytest.approx(before, abs=0.002)
    merged = trace.merge_traces([first, second], labels=["x", "y"])
    assert min(e["ts"] for e in stamped(merged, 2)) >= 20_000 * 0.9, "the second worker started 20 ms later"


def test_async_ids_of_different_workers_do_not_pair(two_workers):
    first, second = two_workers
    merged = trace.merge_traces([first, second, first], labels=["a", "b", "c"])
    runs = [e for e in merged["traceEvents"] if e.get("cat") == "run"]
    begins = [(e["pid"], e["id"]) for e in runs if e["ph"] == "b"]
    ends = [(e["pid"], e["id"]) for e in runs if e["ph"] == "e"]
    assert len(set(e[1] for e in begins)) == len(begins), "every run slice has its own id"
    assert sorted(begins) == sorted(ends)
    assert len(begins) == 2 * len([e for e in first["traceEvents"] if e.get("cat") == "run" and e["ph"] == "b"]) \
        + len([e for e in second["traceEvents"] if e.get("cat") == "run" and e["ph"] == "b"])


def test_equal_labels_share_a_track(two_workers):
    first, second = two_workers
    merged = trace.merge_traces([first, second, first], labels=["w0", "w1", "w0"])
    assert process_names(merged) == {1: "w0", 2: "w1"}
    assert len(stamped(merged, 1)) == 2 * len(stamped(first))
    thread_names = [e for e in merged["traceEvents"] if e["name"] == "thread_name" and e["pid"] == 1]
    assert len(thread_names) == len({e["tid"] for e in thread_names}), "each thread named once"


def test_files_with_default_labels(two_workers, tmp_path):
    first, second = two_workers
    labelled = dict(second, otherData=dict(second["otherData"], label="gpu-less-node-3"))
    paths = []
    for name, data in (("host1-worker.json", first), ("other.json", labelled)):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(data), encoding="utf-8")
    merged = trace.merge_traces(paths)
    assert process_names(merged) == {1: "host1-worker", 2: "gpu-less-node-3"}
    assert [m["source"] for m in merged["otherData"]["merged"]] == [os.fspath(p) for p in paths]
    assert process_names(trace.merge_traces([first, second])) == {1: "worker 0", 2: "worker 1"}


def test_several_processes_in_one_trace_stay_apart():
    """A trace with two pids of its own (any producer) keeps them apart and says which is which."""
    source = {"otherData": {"origin_timestamp_ns": 5_000_000}, "traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 7, "tid": 0, "args": {"name": "main"}},
        {"name": "process_name", "ph": "M", "pid": 9, "tid": 0, "args": {"name": "io"}},
        {"name": "a", "ph": "X", "pid": 7, "tid": 3, "ts": 1.5, "dur": 2},
        {"name": "b", "ph": "X", "pid": 9, "tid": 4, "ts": 0, "dur": 1},
    ]}
    other = {"otherData": {"origin_timestamp_ns": 4_000_000}, "traceEvents": [
        {"name": "c", "ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]}
    merged = trace.merge_traces([source, other], labels=["node", "peer"])
    assert process_names(merged) == {1: "node: main", 2: "node: io", 3: "peer"}
    by_name = {e["name"]: e for e in stamped(merged)}
    assert (by_name["a"]["pid"], by_name["a"]["tid"], by_name["a"]["ts"]) == (1, 3, 1001.5)
    assert (by_name["b"]["pid"], by_name["b"]["tid"], by_name["b"]["ts"]) == (2, 4, 1000)
    assert (by_name["c"]["pid"], by_name["c"]["ts"]) == (3, 0)


def test_bad_input_is_named(two_workers, tmp_path):
    first, _ = two_workers
    with pytest.raises(ValueError, match="2 labels for 1 traces"):
        trace.merge_traces([first], labels=["a", "b"])
    with pytest.raises(ValueError, match=r"trace 1 .*origin_timestamp_ns"):
        trace.merge_traces([first, {"traceEvents": []}])
    with pytest.raises(ValueError, match=r"trace 0 .*'traceEvents' list, got list"):
        trace.merge_traces([[{"ph": "X"}]])
    missing = tmp_path / "missing.json"
    with pytest.raises(ValueError, match="cannot read trace 0 '.*missing.json'"):
        trace.merge_traces([missing])
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="trace 0 '.*broken.json' is not JSON"):
        trace.merge_traces([broken])
    assert trace.merge_traces([])["traceEvents"] == []


def cli(*args):
    return subprocess.run([sys.executable, "-m", "onnx_light.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_command_line(two_workers, tmp_path):
    first, second = two_workers
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(first), encoding="utf-8")
    b.write_text(json.dumps(second), encoding="utf-8")
    out = tmp_path / "all.json"
    result = cli("merge-traces", a, b, "-o", out, "--labels", "left,right")
    assert result.returncode == 0, result.stderr
    assert "2 traces, 2 workers (left, right)" in result.stdout
    merged = json.loads(out.read_text(encoding="utf-8"))
    assert merged == trace.merge_traces([a, b], labels=["left", "right"])

    result = cli("merge-traces", a, b, "-o", out, "--labels", "one")
    assert result.returncode == 2 and "--labels names 1 workers for 2 traces" in result.stderr, result.stderr
    result = cli("merge-traces", a, tmp_path / "nope.json", "-o", out)
    assert result.returncode == 2 and "nope.json' does not exist" in result.stderr
    result = cli("merge-traces", a, "-o", tmp_path / "no" / "dir.json")
    assert result.returncode == 2 and "does not exist" in result.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("[]", encoding="utf-8")
    result = cli("merge-traces", bad, "-o", out)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("onnx-light: error: trace 0"), result.stderr
