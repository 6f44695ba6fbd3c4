"""Tables from a RuntimeContext's event log, as plain data plus printers.

    events = context.events()
    ops = op_summary(events)             # list of dicts, largest share of the run first
    print(format_op_summary(ops))
    traffic = storage_totals(events)     # the five persistent-storage counters, summed
    print(format_storage_totals(traffic))
    memory = node_memory(events)         # allocator live bytes after each node, in run order
    print(format_summary(events))        # all of the above in one report

Every function accepts what ``context.events()`` returns, the ``as_dict()`` dictionaries of those
events, or the context itself. ``op_summary_frame`` and ``node_memory_frame`` return
``pandas.DataFrame`` objects when pandas is installed; pandas is not a dependency.

Times are nanoseconds. A node that runs a subgraph (If, Loop, Scan) or a model-local function
includes the time of the nodes inside it: ``total_ns`` counts that inclusive time, ``self_ns``
leaves the nested nodes out, and ``share`` is ``self_ns`` over the time of the outermost nodes, so
the shares of all operators add up to one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from onnx_light._events import STORAGE_FIELDS, records

__all__ = [
    "STORAGE_FIELDS",
    "op_summary",
    "node_time_ns",
    "storage_totals",
    "peak_bytes",
    "node_memory",
    "kernel_usage_counts",
    "format_op_summary",
    "format_storage_totals",
    "format_node_memory",
    "format_kernel_usage",
    "format_summary",
    "op_summary_frame",
    "node_memory_frame",
]


def _nodes(log: list[dict]) -> list[dict]:
    return [e for e in log if e["action"] == "run_node"]


def _nest(nodes: list[dict]) -> tuple[list[int], int]:
    """Per node (same order as ``nodes``) the time spent in nodes directly nested inside it, and
    the summed duration of the outermost nodes. Nesting is read from the time intervals: a node
    that starts while another is running belongs to it (a run dispatches nodes one at a time)."""
    order = sorted(range(len(nodes)),
                   key=lambda i: (int(nodes[i]["timestamp_ns"]), -int(nodes[i]["duration_ns"])))
    child_ns = [0] * len(nodes)
    outer_ns = 0
    stack: list[tuple[int, int]] = []  # (end, index) of the enclosing nodes
    for i in order:
        start = int(nodes[i]["timestamp_ns"])
        duration = max(int(nodes[i]["duration_ns"]), 0)
        while stack and stack[-1][0] <= start:
            stack.pop()
        if stack:
            child_ns[stack[-1][1]] += duration
        else:
            outer_ns += duration
        stack.append((start + duration, i))
    return child_ns, outer_ns


def node_time_ns(events: Any) -> int:
    """Time spent in the outermost dispatched nodes (nested subgraph nodes are inside them)."""
    return _nest(_nodes(records(events)))[1]


def op_summary(events: Any) -> list[dict]:
    """One row per (op_domain, op_type): count, total_ns / mean_ns / max_ns (inclusive
    durations), self_ns (without nested subgraph nodes) and share (self_ns over the time of the
    outermost nodes). Sorted by share, largest first."""
    nodes = _nodes(records(events))
    child_ns, outer_ns = _nest(nodes)
    stats: dict[tuple[str, str], dict[str, Any]] = {}
    for node, nested in zip(nodes, child_ns):
        duration = max(int(node["duration_ns"]), 0)
        row = stats.setdefault((node["op_domain"], node["op_type"]),
                               {"count": 0, "total_ns": 0, "max_ns": 0, "self_ns": 0})
        row["count"] += 1
        row["total_ns"] += duration
        row["max_ns"] = max(row["max_ns"], duration)
        row["self_ns"] += max(duration - nested, 0)
    rows = []
    for (domain, op), s in stats.items():
        rows.append({
            "op_domain": domain,
            "op_type": op,
            "count": s["count"],
            "total_ns": s["total_ns"],
            "mean_ns": s["total_ns"] / s["count"],
            "max_ns": s["max_ns"],
            "self_ns": s["self_ns"],
            "share": s["self_ns"] / outer_ns if outer_ns > 0 else 0.0,
        })
    rows.sort(key=lambda r: (r["self_ns"], r["total_ns"]), reverse=True)
    return rows


def storage_totals(events: Any) -> dict[str, int]:
    """The five persistent-storage counters summed over all persistent_storage events."""
    totals = {field: 0 for field in STORAGE_FIELDS}
    for e in records(events):
        if e["action"] == "persistent_storage":
            for field in STORAGE_FIELDS:
                totals[field] += int(e[field])
    return totals


def peak_bytes(events: Any) -> int:
    """The largest allocator peak seen by any event (0 without events)."""
    return max((int(e["peak_bytes"]) for e in records(events)), default=0)


def node_memory(events: Any) -> list[dict]:
    """One row per dispatched node, in the order nodes finished: allocator live bytes right
    after the node (``allocated_bytes``), the allocator peak so far, and ``delta_bytes``, the
    change since the previous row (since the first recorded event for the first row)."""
    log = records(events)
    rows = []
    previous = int(log[0]["allocated_bytes"]) if log else 0
    for step, e in enumerate(_nodes(log)):
        live = int(e["allocated_bytes"])
        rows.append({
            "step": step,
            "node_index": int(e["node_index"]),
            "node_name": e["name"],
            "op_domain": e["op_domain"],
            "op_type": e["op_type"],
            "subgraph_node_index": int(e["subgraph_node_index"]),
            "subgraph_attr_name": e["subgraph_attr_name"],
            "duration_ns": int(e["duration_ns"]),
            "allocated_bytes": live,
            "peak_bytes": int(e["peak_bytes"]),
            "delta_bytes": live - previous,
        })
        previous = live
    return rows


def kernel_usage_counts(names: Iterable[str]) -> list[tuple[str, int]]:
    """(implementation name, times recorded) from ``context.get_kernel_usage()``, most used first."""
    return sorted(Counter(names).items(), key=lambda item: (-item[1], item[0]))


# ---- printers ---------------------------------------------------------------------------------


def _op_name(row: dict) -> str:
    return row["op_type"] if not row["op_domain"] else f"{row['op_domain']}::{row['op_type']}"


def format_op_summary(rows: list[dict]) -> str:
    """A fixed-width table of op_summary() rows."""
    width = max([24] + [len(_op_name(r)) + 2 for r in rows])
    lines = [f"{'operator':<{width}}{'count':>8}{'total ms':>11}{'self ms':>11}{'mean us':>11}"
             f"{'max us':>11}{'share':>8}"]
    for r in rows:
        lines.append(
            f"{_op_name(r):<{width}}{r['count']:>8}{r['total_ns'] / 1e6:>11.3f}{r['self_ns'] / 1e6:>11.3f}"
            f"{r['mean_ns'] / 1e3:>11.2f}{r['max_ns'] / 1e3:>11.2f}{r['share'] * 100:>7.1f}%")
    if not rows:
        lines.append("(no node dispatches recorded: was the context built with events_enabled=True?)")
    return "\n".join(lines)


def format_storage_totals(totals: dict[str, int]) -> str:
    """The persistent-storage totals, one counter per line."""
    return "\n".join(f"  {field:<30}{totals.get(field, 0):>14}" for field in STORAGE_FIELDS)


def format_node_memory(rows: list[dict], limit: int | None = None) -> str:
    """A table of node_memory() rows; with ``limit``, only the rows that grew memory the most."""
    shown = rows
    if limit is not None and len(rows) > limit:
        shown = sorted(rows, key=lambda r: r["delta_bytes"], reverse=True)[:limit]
        shown.sort(key=lambda r: r["step"])
    lines = [f"{'step':>6}  {'node':<28}{'operator':<20}{'live bytes':>14}{'delta':>12}{'peak bytes':>14}"]
    for r in shown:
        where = r["node_name"] or f"#{r['node_index']}"
        if r["subgraph_attr_name"]:
            where = f"{where} [{r['subgraph_attr_name']} of #{r['subgraph_node_index']}]"
        lines.append(f"{r['step']:>6}  {where:<28}{_op_name(r):<20}{r['allocated_bytes']:>14}"
                     f"{r['delta_bytes']:>+12}{r['peak_bytes']:>14}")
    return "\n".join(lines)


def format_kernel_usage(names: Iterable[str]) -> str:
    """Implementation names with how often each was recorded."""
    counts = kernel_usage_counts(names)
    if not counts:
        return "  (none recorded)"
    width = max(len(name) for name, _ in counts) + 2
    return "\n".join(f"  {name:<{width}}{count:>8}" for name, count in counts)


def format_summary(events: Any) -> str:
    """Operators, persistent-storage traffic and the allocator peak, as one report."""
    log = records(events)
    parts = [format_op_summary(op_summary(log)),
             f"\nnode time {node_time_ns(log) / 1e6:.3f} ms; allocator peak {peak_bytes(log)} bytes"]
    if any(e["action"] == "persistent_storage" for e in log):
        parts.append("\npersistent storage:\n" + format_storage_totals(storage_totals(log)))
    return "\n".join(parts)


# ---- pandas -----------------------------------------------------------------------------------


def _pandas(function: str):
    try:
        import pandas
    except ImportError as error:
        raise ImportError(
            f"summary.{function}() returns a pandas.DataFrame and needs pandas, which is not "
            "installed (pip install pandas). The plain-data functions (op_summary, node_memory, "
            "storage_totals) work without it.") from error
    return pandas


def op_summary_frame(events: Any):
    """op_summary() as a pandas.DataFrame. Raises ImportError when pandas is missing."""
    pandas = _pandas("op_summary_frame")
    columns = ["op_domain", "op_type", "count", "total_ns", "mean_ns", "max_ns", "self_ns", "share"]
    return pandas.DataFrame(op_summary(events), columns=columns)


def node_memory_frame(events: Any):
    """node_memory() as a pandas.DataFrame. Raises ImportError when pandas is missing."""
    pandas = _pandas("node_memory_frame")
    columns = ["step", "node_index", "node_name", "op_domain", "op_type", "subgraph_node_index",
               "subgraph_attr_name", "duration_ns", "allocated_bytes", "peak_bytes", "delta_bytes"]
    return pandas.DataFrame(node_memory(events), columns=columns)
