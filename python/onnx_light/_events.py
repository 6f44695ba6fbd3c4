"""Reading events uniformly: runtime.RuntimeEvent objects, their as_dict() dictionaries, or a
RuntimeContext (whose events() snapshot is taken)."""

from __future__ import annotations

from typing import Any

STORAGE_FIELDS = (
    "storage_allocations",
    "storage_allocated_bytes",
    "storage_prefix_copied_bytes",
    "storage_append_copied_bytes",
    "storage_reuse_count",
)

_ACTION_NAMES = ("add", "replace", "remove", "run_node", "persistent_storage")
_KIND_NAMES = ("unknown", "initializer", "input", "intermediate", "output")

_DEFAULTS: dict[str, Any] = {
    "kind": "unknown",
    "timestamp_ns": 0,
    "name": "",
    "data_type": 0,
    "shape": (),
    "value_kind": "",
    "op_domain": "",
    "op_type": "",
    "inputs": (),
    "duration_ns": 0,
    "node_index": -1,
    "subgraph_node_index": -1,
    "subgraph_attr_name": "",
    "allocated_bytes": 0,
    "peak_bytes": 0,
    **{field: 0 for field in STORAGE_FIELDS},
    "run_id": 0,
    "session_id": 0,
    "thread_id": 0,
    "process_id": 0,
}


def action_name(action: Any) -> str:
    """'add', 'replace', 'remove', 'run_node', 'persistent_storage' or 'unknown'."""
    if isinstance(action, str):
        return action if action in _ACTION_NAMES else "unknown"
    value = int(action)
    return _ACTION_NAMES[value] if 0 <= value < len(_ACTION_NAMES) else "unknown"


def _kind_name(kind: Any) -> str:
    if isinstance(kind, str):
        return kind
    value = int(kind)
    return _KIND_NAMES[value] if 0 <= value < len(_KIND_NAMES) else "unknown"


def records(events: Any) -> list[dict[str, Any]]:
    """Every event as a plain dict with all fields present ('action' and 'kind' as names,
    storage counters 0 where the event has none)."""
    if hasattr(events, "events") and callable(events.events):
        events = events.events()
    out = []
    for event in events:
        raw = event if isinstance(event, dict) else event.as_dict()
        record = dict(_DEFAULTS)
        record.update(raw)
        record["action"] = action_name(raw.get("action", "unknown"))
        record["kind"] = _kind_name(record["kind"])
        out.append(record)
    return out

