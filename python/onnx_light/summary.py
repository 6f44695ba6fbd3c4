"""Plain-data summaries of a RuntimeContext's event log.

    ops = op_summary(context.events())        # list of dicts, slowest operator first
    print(format_op_summary(ops))
    traffic = storage_totals(context.events())
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

STORAGE_FIELDS = (
    "storage_allocations",
    "storage_allocated_bytes",
    "storage_prefix_copied_bytes",
    "storage_append_copied_bytes",
    "storage_reuse_count",
)


def _action_name(event) -> str:
    from onnx_light.runtime import runtime_event_action_name

    return runtime_event_action_name(int(event.action))


def op_summary(events: Iterable) -> list[dict]:
    """Per operator: count, total / mean / max duration (ns) and share of all node time."""
    stats: dict[tuple[str, str], list[int]] = defaultdict(list)
    for event in events:
        if _action_name(event) == "run_node":
            stats[(event.op_domain, event.op_type)].append(int(event.duration_ns))
    total = sum(sum(d) for d in stats.values()) or 1
    rows = []
    for (domain, op), durations in stats.items():
        rows.append({
            "op_domain": domain,
            "op_type": op,
            "count": len(durations),
            "total_ns": sum(durations),
            "mean_ns": sum(durations) / len(durations),
            "max_ns": max(durations),
            "share": sum(durations) / total,
        })
    rows.sort(key=lambda r: r["total_ns"], reverse=True)
    return rows


def storage_totals(events: Iterable) -> dict[str, int]:
    """Sums of the five persistent-storage counters over all persistent_storage events."""
    totals = {field: 0 for field in STORAGE_FIELDS}
    for event in events:
        if _action_name(event) == "persistent_storage":
            for field in STORAGE_FIELDS:
                totals[field] += int(getattr(event, field))
    return totals


def peak_bytes(events: Iterable) -> int:
    """The largest allocator peak seen by any event (0 without events)."""
    return max((int(e.peak_bytes) for e in events), default=0)


def format_op_summary(rows: list[dict]) -> str:
    """A fixed-width table of op_summary() rows."""
    lines = [f"{'operator':<24}{'count':>8}{'total ms':>12}{'mean us':>12}{'max us':>12}{'share':>8}"]
    for r in rows:
        name = r["op_type"] if not r["op_domain"] else f"{r['op_domain']}::{r['op_type']}"
        lines.append(
            f"{name:<24}{r['count']:>8}{r['total_ns'] / 1e6:>12.3f}{r['mean_ns'] / 1e3:>12.2f}"
            f"{r['max_ns'] / 1e3:>12.2f}{r['share'] * 100:>7.1f}%"
        )
    return "\n".join(lines)
