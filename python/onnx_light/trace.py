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
kept in ``otherData.origin_timestamp_ns``.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any, Iterable, Union

from onnx_light.onnx_py._onnxpykernels import runtime as _runtime

__all__ = ["chrome_trace", "export_chrome_trace"]


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
