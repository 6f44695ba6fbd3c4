"""Chrome trace-event export of an event log, for Perfetto (https://ui.perfetto.dev) and
chrome://tracing.

    context = runtime.RuntimeContext(events_enabled=True)
    session.run(context, feeds)
    runtime.export_chrome_trace(context.events(), "run.json")   # same as trace.export_chrome_trace

Both functions wrap the C++ exporter (ExportChromeTrace in onnx_light/runtime/trace_export.h),
so Python and C++ hosts write the same file:

* with ``sessions=[session]``, "load model" and "compile" async slices (cat ``session``) say how
  long building each session took;
* each top-level run is an async slice (``"ph": "b"``/``"e"``, cat ``run``) whose ``args`` hold
  run_index, node_count, completed and duration_ns;
* each ``run_node`` event is a complete event (``"ph": "X"``) on the "nodes" track, named by its
  op type; ``args`` holds node_index, node_name, op_domain, inputs, input_shapes, outputs,
  output_shapes, subgraph_node_index, subgraph_attr_name, allocated_bytes and peak_bytes. Nodes
  of If/Loop/Scan bodies and function bodies nest inside the node that ran them;
* the allocator's live bytes form the counter track ``"allocator"`` (``"ph": "C"``, series
  ``live_bytes``), sampled when each event was recorded, in time order, where the value changes;
* each ``persistent_storage`` event is an instant event (``"ph": "i"``) on the
  "persistent storage" track, named by its value, with the five storage counters in ``args``;
* with ``include_value_events=True``, add/replace/remove events become instant events on a
  "values" track.

Timestamps and durations are microseconds relative to the earliest event; the absolute origin is
kept in ``otherData.origin_timestamp_ns`` (wall clock: nanoseconds since the Unix epoch, the clock
every event is stamped with).

``merge_traces`` combines traces written by several processes or machines (Ray workers, one
process per shard) into one file with one process track per worker, aligned on that wall clock.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any, Iterable, Mapping, Optional, Sequence, Union

from onnx_light.onnx_py._onnxpykernels import runtime as _runtime

__all__ = ["chrome_trace", "export_chrome_trace", "merge_traces"]


def _events_of(events: Any) -> Iterable[Any]:
    """A context's log snapshot, or the events themselves."""
    if hasattr(events, "events") and callable(events.events):
        return events.events()
    return events


def _trace_json(events: Any, include_value_events: bool, sessions: Iterable[Any]) -> str:
    return _runtime._chrome_trace_json(_events_of(events), include_value_events, tuple(sessions))


def chrome_trace(events: Iterable[Any], *, include_value_events: bool = False, sessions: Iterable[Any] = ()) -> dict:
    """The trace as a JSON-ready dict.

    ``events`` is a list of ``runtime.RuntimeEvent`` (as returned by ``context.events()``), their
    ``as_dict()`` dictionaries, or a ``RuntimeContext`` whose log is read. Each of ``sessions``
    (RuntimeSession or PersistentValueState) adds its "load model" and "compile" spans.
    """
    return json.loads(_trace_json(events, include_value_events, sessions))


def export_chrome_trace(events: Iterable[Any], path: Union[str, os.PathLike, IO[str]], *,
                        include_value_events: bool = False, sessions: Iterable[Any] = ()) -> None:
    """Writes ``events`` as a Chrome trace-event JSON file that Perfetto and chrome://tracing open.

    ``path`` is a file path (replaced if it exists) or a text file object. ``events`` is what
    ``context.events()`` returns (or the context itself). Value add/replace/remove events are
    left out unless ``include_value_events`` is true. Each of ``sessions`` (RuntimeSession or
    PersistentValueState) adds the time it took to load its model and to compile, as spans on the
    runs track before the first run.
    """
    text = _trace_json(events, include_value_events, sessions)
    if hasattr(path, "write"):
        path.write(text)
        return
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        f.write(text)


# Phases whose "id" pairs events of one process (async slices and flows); ids restart at 0 in every
# trace, so merged traces get them prefixed to stay apart.
_ID_PHASES = frozenset("bensStTfFpOND")

TraceSource = Union[Mapping[str, Any], str, os.PathLike]


def _load_trace(source: TraceSource, index: int) -> tuple[dict, str]:
    """The trace dict and the name errors and default labels use for it."""
    if not isinstance(source, (str, bytes, os.PathLike)):
        name = f"trace {index}"
        data = source
    else:
        name = os.fsdecode(source)
        try:
            with open(name, encoding="utf-8") as f:
                data = json.load(f)
        except OSError as error:
            raise ValueError(f"merge_traces: cannot read trace {index} '{name}': {error.strerror or error}") from error
        except json.JSONDecodeError as error:
            raise ValueError(f"merge_traces: trace {index} '{name}' is not JSON: {error}") from error
    if not isinstance(data, Mapping) or not isinstance(data.get("traceEvents"), list):
        raise ValueError(f"merge_traces: trace {index} ('{name}') is not a Chrome trace object: expected a "
                         f"JSON object with a 'traceEvents' list, got {type(data).__name__}"
                         + (f" with keys {sorted(data)[:5]}" if isinstance(data, Mapping) else ""))
    return dict(data), name


def _origin_ns(data: Mapping[str, Any], index: int, name: str) -> int:
    origin = (data.get("otherData") or {}).get("origin_timestamp_ns")
    if not isinstance(origin, int) or isinstance(origin, bool):
        raise ValueError(f"merge_traces: trace {index} ('{name}') has no integer otherData.origin_timestamp_ns "
                         f"(got {origin!r}); it says when the trace's time 0 was on the wall clock, which "
                         f"aligning traces needs (onnx-light's exporter always writes it)")
    return origin


def _default_label(data: Mapping[str, Any], source: TraceSource, index: int) -> str:
    label = (data.get("otherData") or {}).get("label")
    if isinstance(label, str) and label:
        return label
    if not isinstance(source, (str, bytes, os.PathLike)):
        return f"worker {index}"
    return os.path.splitext(os.path.basename(os.fsdecode(source)))[0]


def merge_traces(traces: Sequence[TraceSource], labels: Optional[Sequence[str]] = None) -> dict:
    """One Chrome trace from the traces of several workers, each worker its own process track.

    ``traces`` are trace dicts (as ``chrome_trace`` returns) or paths of trace files (as
    ``export_chrome_trace`` writes). ``labels`` name the worker each trace came from; by default a
    trace's ``otherData.label`` (``onnx_light.ray_helpers`` writes one), else the file name
    without extension, else "worker <i>". Traces with equal labels land on the same process
    track, so a worker that wrote one file per batch still reads as one worker.

    Every trace's timestamps are relative to its own ``otherData.origin_timestamp_ns`` (wall
    clock, ns since the epoch); the merged trace counts from the earliest of them, so events of
    different workers line up in time as far as the machines' clocks agree. Each distinct
    (label, pid) becomes a new pid, numbered from 1 in order of first appearance, with a
    ``process_name`` event naming the label (followed by the original process name, or pid,
    when one label spans several pids); thread ids are kept. Async and flow ids are prefixed with the trace's
    index so slices of different traces never pair up. ``otherData.merged`` lists each input
    with its label, pid, origin and original ``otherData``.

    Raises ValueError naming the trace that is not a trace object, has no origin, or when the
    number of labels differs from the number of traces.
    """
    traces = list(traces)
    if labels is not None:
        labels = list(labels)
        if len(labels) != len(traces):
            raise ValueError(f"merge_traces: {len(labels)} labels for {len(traces)} traces; give one label per trace")
    loaded = [_load_trace(source, i) for i, source in enumerate(traces)]
    origins = [_origin_ns(data, i, name) for i, (data, name) in enumerate(loaded)]
    base = min(origins) if origins else 0

    pids: dict[tuple[str, Any], int] = {}
    process_names: dict[int, str] = {}
    label_pids: dict[str, set] = {}
    metadata: list[dict] = []
    seen_metadata: set[str] = set()
    events: list[dict] = []
    merged_info: list[dict] = []
    display_unit = None

    for i, ((data, name), origin) in enumerate(zip(loaded, origins)):
        label = labels[i] if labels is not None else _default_label(data, traces[i], i)
        display_unit = display_unit or data.get("displayTimeUnit")
        shift_us = (origin - base) / 1000.0
        originals: dict[Any, str] = {}
        for event in data["traceEvents"]:
            if event.get("ph") == "M" and event.get("name") == "process_name":
                originals[event.get("pid")] = str((event.get("args") or {}).get("name", ""))
        new_pids = []
        for event in data["traceEvents"]:
            if not isinstance(event, Mapping):
                raise ValueError(f"merge_traces: trace {i} ('{name}') holds a traceEvents entry that is not an "
                                 f"object: {event!r}")
            key = (label, event.get("pid", 0))
            if key not in pids:
                pids[key] = len(pids) + 1
                label_pids.setdefault(label, set()).add(key[1])
                process_names[pids[key]] = originals.get(key[1], "")
            pid = pids[key]
            if pid not in new_pids:
                new_pids.append(pid)
            out = dict(event)
            out["pid"] = pid
            if out.get("ph") == "M":
                if out.get("name") in ("process_name", "process_sort_index", "process_labels"):
                    continue  # written once per merged process below
                signature = json.dumps(out, sort_keys=True, default=str)
                if signature not in seen_metadata:  # thread names repeat in every batch file
                    seen_metadata.add(signature)
                    metadata.append(out)
                continue
            if "ts" in out and shift_us:
                out["ts"] = round(out["ts"] + shift_us, 3)
            if "id" in out and out.get("ph") in _ID_PHASES:
                out["id"] = f"{i}:{out['id']}"
            events.append(out)
        merged_info.append({"label": label, "source": name, "pids": new_pids, "origin_timestamp_ns": origin,
                            "otherData": data.get("otherData", {})})

    processes = []
    for (label, original_pid), pid in pids.items():
        process_name = label
        if len(label_pids[label]) > 1:
            process_name = f"{label}: {process_names[pid] or f'pid {original_pid}'}"
        processes.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": process_name}})
        processes.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                          "args": {"sort_index": pid}})
    return {
        "displayTimeUnit": display_unit or "ns",
        "otherData": {"producer": "onnx-light merge_traces", "origin_timestamp_ns": base,
                      "event_count": sum(int((d.get("otherData") or {}).get("event_count", 0)) for d, _ in loaded),
                      "merged": merged_info},
        "traceEvents": processes + metadata + events,
    }
