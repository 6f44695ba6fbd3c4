"""Chrome trace-event export of an event log, for Perfetto (https://ui.perfetto.dev) and
chrome://tracing.

    context = runtime.RuntimeContext(kernel_context, events_enabled=True)
    session.run(context, feeds)
    runtime.export_chrome_trace(context.events(), "run.json")   # same as trace.export_chrome_trace

The layout matches the C++ ExportChromeTrace (onnx_light/runtime/trace_export.h):

* each ``run_node`` event is a complete event (``"ph": "X"``) on the "nodes" track, named by its
  op type; ``args`` holds node_index, node_name, op_domain, inputs, subgraph_node_index,
  subgraph_attr_name, allocated_bytes and peak_bytes. Nodes of If/Loop/Scan bodies and function
  bodies nest inside the node that ran them;
* the allocator's live bytes form the counter track ``"allocator"`` (``"ph": "C"``, series
  ``live_bytes``), sampled when each event was recorded, in time order, where the value changes;
* each ``persistent_storage`` event is an instant event (``"ph": "i"``) on the
  "persistent storage" track, named by its value, with the five storage counters in ``args``;
* with ``include_value_events=True``, add/replace/remove events become instant events on a
  "values" track.

Timestamps and durations are microseconds relative to the earliest event; the absolute origin is
kept in ``otherData.origin_timestamp_ns``.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any, Iterable, Union

from onnx_light._events import STORAGE_FIELDS, records

__all__ = ["chrome_trace", "export_chrome_trace"]

_PID = 1
_NODES_TID = 1
_STORAGE_TID = 2
_VALUES_TID = 3
_VALUE_ACTIONS = ("add", "replace", "remove")


def _us(ns: int) -> float:
    """Nanoseconds as microseconds, rounded to the nanosecond like the C++ writer."""
    return round(ns / 1000.0, 3)


def _location(e: dict) -> dict:
    return {
        "node_index": int(e["node_index"]),
        "subgraph_node_index": int(e["subgraph_node_index"]),
        "subgraph_attr_name": e["subgraph_attr_name"],
    }


def _node_event(e: dict, origin: int) -> dict:
    return {
        "name": e["op_type"],
        "cat": "node",
        "ph": "X",
        "pid": _PID,
        "tid": _NODES_TID,
        "ts": _us(int(e["timestamp_ns"]) - origin),
        "dur": _us(max(int(e["duration_ns"]), 0)),
        "args": {
            "node_name": e["name"],
            "op_domain": e["op_domain"],
            "inputs": list(e["inputs"]),
            **_location(e),
            "allocated_bytes": int(e["allocated_bytes"]),
            "peak_bytes": int(e["peak_bytes"]),
        },
    }


def _storage_event(e: dict, origin: int) -> dict:
    return {
        "name": e["name"] or "persistent_storage",
        "cat": "persistent_storage",
        "ph": "i",
        "s": "t",
        "pid": _PID,
        "tid": _STORAGE_TID,
        "ts": _us(int(e["timestamp_ns"]) - origin),
        "args": {
            "value": e["name"],
            "kind": e["kind"],
            "data_type": int(e["data_type"]),
            "shape": [int(d) for d in e["shape"]],
            **_location(e),
            **{field: int(e[field]) for field in STORAGE_FIELDS},
            "allocated_bytes": int(e["allocated_bytes"]),
        },
    }


def _value_event(e: dict, origin: int) -> dict:
    return {
        "name": e["name"],
        "cat": e["action"],
        "ph": "i",
        "s": "t",
        "pid": _PID,
        "tid": _VALUES_TID,
        "ts": _us(int(e["timestamp_ns"]) - origin),
        "args": {
            "action": e["action"],
            "kind": e["kind"],
            "data_type": int(e["data_type"]),
            "shape": [int(d) for d in e["shape"]],
            **_location(e),
            "allocated_bytes": int(e["allocated_bytes"]),
        },
    }


def _thread_name(tid: int, name: str) -> dict:
    return {"name": "thread_name", "ph": "M", "pid": _PID, "tid": tid, "args": {"name": name}}


def chrome_trace(events: Iterable[Any], *, include_value_events: bool = False) -> dict:
    """The trace as a JSON-ready dict.

    ``events`` is a list of ``runtime.RuntimeEvent`` (as returned by ``context.events()``), their
    ``as_dict()`` dictionaries, or a ``RuntimeContext`` whose log is read.
    """
    log = records(events)
    origin = min((int(e["timestamp_ns"]) for e in log), default=0)

    trace_events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": _PID, "tid": 0, "args": {"name": "onnx-light runtime"}},
        _thread_name(_NODES_TID, "nodes"),
        _thread_name(_STORAGE_TID, "persistent storage"),
    ]
    if include_value_events:
        trace_events.append(_thread_name(_VALUES_TID, "values"))

    # Start order, enclosing (longer) nodes first at equal starts: a node is recorded after the
    # nodes of its subgraphs, so recording order would list children before their parent.
    shown = [e for e in log
             if e["action"] in ("run_node", "persistent_storage")
             or (include_value_events and e["action"] in _VALUE_ACTIONS)]
    shown.sort(key=lambda e: (int(e["timestamp_ns"]), -int(e["duration_ns"])))
    for e in shown:
        if e["action"] == "run_node":
            trace_events.append(_node_event(e, origin))
        elif e["action"] == "persistent_storage":
            trace_events.append(_storage_event(e, origin))
        else:
            trace_events.append(_value_event(e, origin))

    # A run_node event is stamped with its start but sampled the allocator when the node ended.
    samples = sorted(
        ((int(e["timestamp_ns"]) + (max(int(e["duration_ns"]), 0) if e["action"] == "run_node" else 0),
          int(e["allocated_bytes"])) for e in log),
        key=lambda sample: sample[0])
    last = None
    for at, live in samples:
        if live == last:
            continue
        last = live
        trace_events.append({"name": "allocator", "ph": "C", "pid": _PID, "tid": 0, "ts": _us(at - origin),
                             "args": {"live_bytes": live}})

    return {
        "displayTimeUnit": "ns",
        "otherData": {"producer": "onnx-light runtime", "origin_timestamp_ns": origin, "event_count": len(log)},
        "traceEvents": trace_events,
    }


def export_chrome_trace(events: Iterable[Any], path: Union[str, os.PathLike, IO[str]], *,
                        include_value_events: bool = False) -> None:
    """Writes ``events`` as a Chrome trace-event JSON file that Perfetto and chrome://tracing open.

    ``path`` is a file path (replaced if it exists) or a text file object. ``events`` is what
    ``context.events()`` returns (or the context itself). Value add/replace/remove events are
    left out unless ``include_value_events`` is true.
    """
    trace = chrome_trace(events, include_value_events=include_value_events)
    if hasattr(path, "write"):
        json.dump(trace, path)
        return
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        json.dump(trace, f)
