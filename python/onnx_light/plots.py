"""Pictures of an event log. Needs matplotlib, which is optional.

    from onnx_light import plots
    plots.plot_decode_memory(context.events(), "decode_memory.png")

``memory_timeline`` gives the plotted numbers as plain data, without matplotlib.
"""

from __future__ import annotations

import os
from typing import Any

from onnx_light._events import records

__all__ = ["memory_timeline", "plot_decode_memory"]


def memory_timeline(events: Any) -> dict[str, list]:
    """The series behind plot_decode_memory, times in milliseconds from the earliest event.

    * ``time_ms`` / ``live_bytes`` / ``peak_bytes``: the allocator, sampled when each event was
      recorded (a node's event at the node's end), in time order;
    * ``storage_time_ms`` and the running totals ``storage_allocated_bytes`` and
      ``storage_copied_bytes`` (prefix plus append copies) at each persistent_storage event;
    * ``growth_time_ms``: the moments persistent storage allocated a new buffer.
    """
    log = records(events)
    origin = min((int(e["timestamp_ns"]) for e in log), default=0)

    def at(e: dict) -> int:
        end = max(int(e["duration_ns"]), 0) if e["action"] == "run_node" else 0
        return int(e["timestamp_ns"]) + end

    timeline: dict[str, list] = {key: [] for key in (
        "time_ms", "live_bytes", "peak_bytes", "storage_time_ms", "storage_allocated_bytes",
        "storage_copied_bytes", "growth_time_ms")}
    for e in sorted(log, key=at):
        t = (at(e) - origin) / 1e6
        timeline["time_ms"].append(t)
        timeline["live_bytes"].append(int(e["allocated_bytes"]))
        timeline["peak_bytes"].append(int(e["peak_bytes"]))
    allocated = copied = 0
    for e in sorted((e for e in log if e["action"] == "persistent_storage"), key=at):
        t = (at(e) - origin) / 1e6
        allocated += int(e["storage_allocated_bytes"])
        copied += int(e["storage_prefix_copied_bytes"]) + int(e["storage_append_copied_bytes"])
        timeline["storage_time_ms"].append(t)
        timeline["storage_allocated_bytes"].append(allocated)
        timeline["storage_copied_bytes"].append(copied)
        if int(e["storage_allocations"]) > 0:
            timeline["growth_time_ms"].append(t)
    return timeline


def _byte_unit(largest: float) -> tuple[float, str]:
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if largest >= scale:
            return float(scale), unit
    return 1.0, "bytes"


def plot_decode_memory(events: Any, path: str | os.PathLike, *, title: str | None = None,
                       dpi: int = 120) -> str:
    """Draws the allocator's live bytes (top) and the persistent storage's running totals (bottom)
    over the timeline of the log, marks every storage growth, and writes a PNG to ``path``.
    Returns the path. Raises ImportError when matplotlib is not installed."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError("plots need matplotlib, which is not installed (pip install matplotlib)") from error

    data = memory_timeline(events)
    # A Figure with its own Agg canvas: no pyplot global state, no display needed.
    figure = Figure(figsize=(10, 6.5), layout="constrained")
    FigureCanvasAgg(figure)
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(3, 2))

    scale, unit = _byte_unit(max(data["peak_bytes"] + data["live_bytes"], default=0))
    if data["time_ms"]:
        top.step(data["time_ms"], [b / scale for b in data["live_bytes"]], where="post", color="#1f77b4",
                 linewidth=1.2, label="allocator live")
        top.step(data["time_ms"], [b / scale for b in data["peak_bytes"]], where="post", color="#1f77b4",
                 linewidth=0.8, linestyle="--", alpha=0.6, label="allocator peak")
    top.set_ylabel(f"allocator ({unit})")
    top.set_ylim(bottom=0)
    top.grid(True, alpha=0.3)

    storage_scale, storage_unit = _byte_unit(
        max(data["storage_allocated_bytes"] + data["storage_copied_bytes"], default=0))
    if data["storage_time_ms"]:
        # Running totals hold their last value to the end of the timeline.
        times = data["storage_time_ms"] + [max(data["time_ms"][-1], data["storage_time_ms"][-1])]
        allocated = data["storage_allocated_bytes"] + data["storage_allocated_bytes"][-1:]
        copied = data["storage_copied_bytes"] + data["storage_copied_bytes"][-1:]
        bottom.step(times, [b / storage_scale for b in allocated], where="post", color="#d62728",
                    linewidth=1.2, label="storage allocated (total)")
        bottom.step(times, [b / storage_scale for b in copied], where="post", color="#2ca02c",
                    linewidth=1.2, label="storage copied (prefix + append)")
    else:
        bottom.text(0.5, 0.5, "no persistent-storage events in this log", transform=bottom.transAxes,
                    ha="center", va="center", color="gray")
    for i, t in enumerate(data["growth_time_ms"]):
        for axes in (top, bottom):
            axes.axvline(t, color="#d62728", linewidth=0.6, alpha=0.35,
                         label="storage grows" if axes is top and i == 0 else None)
    bottom.set_ylabel(f"persistent storage ({storage_unit})")
    bottom.set_xlabel("time since the first event (ms)")
    bottom.set_ylim(bottom=0)
    bottom.grid(True, alpha=0.3)
    for axes in (top, bottom):
        if axes.get_legend_handles_labels()[0]:
            axes.legend(loc="upper left", fontsize="small")
    figure.suptitle(title or "Memory over the decode loop")
    path = os.fspath(path)
    figure.savefig(path, dpi=dpi)
    return path
