"""Exported torchvision and transformers models: onnx-light against ONNX Runtime.

    python benchmarks/bench_models.py --dir /tmp/models                     # every model of the folder
    python benchmarks/bench_models.py --dir /tmp/models --models resnet18,bert-dynamo --threads 1 --rounds 7
    python benchmarks/bench_models.py --dir /tmp/models --profile efficientnet_b0 [--threads 2]
    python benchmarks/bench_models.py --models squeezenet1_1                # export first (needs torch)

The folder is one written by examples/export_models.py (its manifest says how to feed each
model; a folder of other .onnx files works too, see onnx_light.exported_model). Without `--dir`,
or with a folder that has no models yet, the models are exported first: that needs torch,
torchvision and transformers (example-only dependencies, docs/dependencies.md).

For each model and each thread count (our RuntimeSessionOptions.num_threads against ORT's
intra_op_num_threads, one inter-op thread, ORT's default graph optimisations), both runtimes
first run the same fixed random input once and the largest absolute difference of the outputs
is printed (with the largest ORT value, for scale). Then `--rounds` rounds, each a block of runs
of ours followed by a block of ORT's after a warm-up, a short pause between blocks so either
runtime's spinning threads go idle: a slow spell of this shared machine hits both. A round gives
each runtime the median of its block; the table shows the median over rounds and the min-max
over rounds, for the times and for the ratio ours / ORT (per round), and the geometric mean of
the ratios per thread count.

`--profile MODEL` instead prints, for one model (an architecture picks its first file), the time
per run by operator type: ours from the run_node events (docs/events.md) and ORT's from its
profiler (enable_profiling, the kernel_time records), sorted by our time; Conv is split into
depthwise, 1x1 and spatial kernels by its weight's shape. ORT's fused operators (QuickGelu,
FusedMatMul, BiasGelu, SkipLayerNormalization, ...) have no row of ours, and an activation ORT
folded into its Conv has no row of ORT's: compare the totals and the op types that both have.
ORT's profiler costs a few microseconds per node, which matters only for tiny nodes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import onnx_light.runtime as runtime
from onnx_light.exported_model import ExportedModel, ort_session, read_folder

REPO = Path(__file__).resolve().parent.parent
PAUSE_S = 0.05


def export_models(folder, names):
    """Exports the architectures among `names` (all when none is) into `folder`."""
    import importlib.util

    missing = [p for p in ("torch", "torchvision", "transformers") if importlib.util.find_spec(p) is None]
    if missing:
        raise SystemExit(f"no models in {folder}, and exporting them needs {', '.join(missing)}: run "
                         f"examples/export_models.py --out DIR where torch is installed and pass --dir DIR")
    sys.path.insert(0, str(REPO / "examples"))
    import export_models  # noqa: PLC0415  (an example script, not a package)

    archs = sorted({n.split("-")[0] for n in names} & set(export_models.ARCHITECTURES))
    export_models.main(["--out", str(folder)] + (["--models", ",".join(archs)] if archs else []))


def select(models, names):
    """Models whose architecture or label (`resnet18-dynamo`) is in `names`, in folder order."""
    if not names:
        return models
    wanted = set(names)
    chosen = [m for m in models if m.name in wanted or m.label in wanted]
    missing = wanted - {m.name for m in chosen} - {m.label for m in chosen}
    if missing:
        raise SystemExit(f"not in the folder: {sorted(missing)}; there are {[m.label for m in models]}")
    return chosen


def our_session(model, threads):
    session = runtime.RuntimeSession(model.path, runtime.RuntimeSessionOptions(num_threads=threads))
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    return session, context


def block_times(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def measure(model: ExportedModel, threads, rounds, seconds_per_block):
    """Checks the outputs, then times both runtimes in interleaved rounds; returns a result row."""
    feeds = model.feeds(seed=0)
    ours, context = our_session(model, threads)
    theirs = ort_session(model.path, threads)
    output = theirs.get_outputs()[0].name
    got = np.asarray(ours.run(context, feeds)[output], dtype=np.float64)
    want = np.asarray(theirs.run([output], feeds)[0], dtype=np.float64)
    error = float(np.abs(got - want).max()) if got.shape == want.shape else math.inf
    scale = float(np.abs(want).max())

    def run_ours():
        ours.run(context, feeds)

    def run_ort():
        theirs.run([output], feeds)

    # Runs per block from one timed run of each, so that a block lasts about seconds_per_block.
    once = max(min(block_times(run_ours, 1, 1)[0], block_times(run_ort, 1, 1)[0]), 1e-5)
    runs = int(min(max(seconds_per_block / once, 3), 200))
    ours_medians, ort_medians = [], []
    for _ in range(rounds):
        for fn, medians in ((run_ours, ours_medians), (run_ort, ort_medians)):
            time.sleep(PAUSE_S)
            medians.append(statistics.median(block_times(fn, runs, warmup=2)))
    ratios = [a / b for a, b in zip(ours_medians, ort_medians)]
    return {"model": model.label, "dtype": model.dtype, "threads": threads, "error": error, "scale": scale,
            "runs": runs, "ours": ours_medians, "ort": ort_medians, "ratios": ratios}


def ms_range(values):
    return (f"{statistics.median(values) * 1e3:.2f} ({min(values) * 1e3:.2f}-{max(values) * 1e3:.2f})")


def print_row(r):
    ratio = statistics.median(r["ratios"])
    print(f"| {r['model']} | {r['threads']} | {r['error']:.1e} / {r['scale']:.1e} | {ms_range(r['ours'])} | "
          f"{ms_range(r['ort'])} | **{ratio:.2f}** ({min(r['ratios']):.2f}-{max(r['ratios']):.2f}) |", flush=True)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def benchmark(models, thread_counts, rounds, seconds_per_block):
    import onnxruntime as ort

    print(f"onnxruntime {ort.__version__}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; "
          f"{rounds} rounds, each a block of ours then a block of ORT's (~{seconds_per_block:g} s each)\n")
    print("| model | threads | max abs error / max ORT value | ours ms, median (min-max over rounds) | "
          "ORT ms | ours / ORT |")
    print("|---|---:|---:|---:|---:|---:|")
    results = []
    for model in models:
        for threads in thread_counts:
            row = measure(model, threads, rounds, seconds_per_block)
            results.append(row)
            print_row(row)
    print()
    for threads in thread_counts:
        ratios = [statistics.median(r["ratios"]) for r in results if r["threads"] == threads]
        print(f"geometric mean ours / ORT at {threads} thread{'s' if threads > 1 else ''}: {geomean(ratios):.2f} "
              f"over {len(ratios)} models (worst {max(ratios):.2f})")
    return results


# ---- --profile ---------------------------------------------------------------------------------


def conv_kind(weight_shape):
    """Conv rows split by what the kernel does: depthwise (one input channel per group), 1x1
    (a GEMM over the pixels) or a spatial kernel."""
    if weight_shape is None or len(weight_shape) != 4:
        return "Conv"
    out_channels, per_group, kh, kw = weight_shape
    if per_group == 1 and out_channels > 1 and (kh, kw) != (1, 1):
        return f"Conv depthwise {kh}x{kw}"
    return "Conv 1x1" if (kh, kw) == (1, 1) else f"Conv {kh}x{kw}"


def initializer_shapes(path):
    import onnx

    graph = onnx.load(path, load_external_data=False).graph
    return {t.name: list(t.dims) for t in graph.initializer}


def our_profile(model, feeds, threads, runs):
    """{row: (ns per run, nodes per run)} from the run_node events of `runs` runs (top-level
    nodes; these models have no subgraphs)."""
    session, _ = our_session(model, threads)
    kernel = runtime.KernelContext(runtime.default_opset(23))
    quiet, traced = runtime.RuntimeContext(kernel), runtime.RuntimeContext(kernel, events_enabled=True)
    for _ in range(3):
        session.run(quiet, feeds)
    start = time.perf_counter()
    for _ in range(runs):
        session.run(traced, feeds)
    wall = (time.perf_counter() - start) / runs
    shapes = initializer_shapes(model.path)
    per_op = {}
    for e in traced.events():
        if e.action != runtime.RuntimeEventAction.kRunNode or e.subgraph_node_index != -1:
            continue
        op = e.op_type
        if op in ("Conv", "FusedConv") and len(e.inputs) > 1:
            op = conv_kind(shapes.get(e.inputs[1]))
        total, count = per_op.get(op, (0, 0))
        per_op[op] = (total + e.duration_ns, count + 1)
    return {op: (ns / runs, count / runs) for op, (ns, count) in per_op.items()}, wall


def ort_profile(model, feeds, threads, runs, folder):
    """{row: (ns per run, nodes per run)} from ORT's profile of `runs` runs after a warm-up."""
    session = ort_session(model.path, threads, profile_prefix=Path(folder) / "ort_profile")
    warmup = 3
    for _ in range(warmup):
        session.run(None, feeds)
    start = time.perf_counter()
    for _ in range(runs):
        session.run(None, feeds)
    wall = (time.perf_counter() - start) / runs
    records = json.loads(Path(session.end_profiling()).read_text())
    run_starts = sorted(r["ts"] for r in records if r.get("name") == "model_run")
    after = run_starts[warmup] if len(run_starts) > warmup else 0
    per_op = {}
    for r in records:
        if r.get("cat") != "Node" or not r["name"].endswith("_kernel_time") or r["ts"] < after:
            continue
        args = r.get("args", {})
        op = args.get("op_name", "?")
        if op in ("Conv", "FusedConv"):
            inputs = args.get("input_type_shape", [])
            op = conv_kind(next(iter(inputs[1].values())) if len(inputs) > 1 else None)
        total, count = per_op.get(op, (0.0, 0))
        per_op[op] = (total + r["dur"] * 1e3, count + 1)  # dur in microseconds
    return {op: (ns / runs, count / runs) for op, (ns, count) in per_op.items()}, wall


def profile(model, threads, runs):
    feeds = model.feeds(seed=0)
    ours, ours_wall = our_profile(model, feeds, threads, runs)
    with tempfile.TemporaryDirectory() as folder:
        theirs, ort_wall = ort_profile(model, feeds, threads, runs, folder)
    print(f"{model.label}: {runs} runs at {threads} thread{'s' if threads > 1 else ''}; per run: ours "
          f"{ours_wall * 1e3:.2f} ms with events on, ORT {ort_wall * 1e3:.2f} ms with profiling on; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}\n")
    print("| op type | ours us/run | ours nodes | ORT us/run | ORT nodes | ours / ORT |")
    print("|---|---:|---:|---:|---:|---:|")
    ops = sorted(set(ours) | set(theirs), key=lambda op: (ours.get(op, (0, 0))[0], theirs.get(op, (0, 0))[0]),
                 reverse=True)
    for op in ops:
        a, an = ours.get(op, (None, 0))
        b, bn = theirs.get(op, (None, 0))
        ratio = f"{a / b:.1f}" if a and b else ""
        cell = lambda ns: "" if ns is None else f"{ns / 1e3:.0f}"  # noqa: E731
        print(f"| {op} | {cell(a)} | {an:g} | {cell(b)} | {bn:g} | {ratio} |")
    total_ours = sum(v[0] for v in ours.values())
    total_ort = sum(v[0] for v in theirs.values())
    print(f"| **all nodes** | {total_ours / 1e3:.0f} | {sum(v[1] for v in ours.values()):g} | {total_ort / 1e3:.0f} | "
          f"{sum(v[1] for v in theirs.values()):g} | {total_ours / total_ort:.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, help="folder of exported models (default: export into a temporary one)")
    parser.add_argument("--models", default="", help="comma-separated architectures or labels (resnet18-dynamo)")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--block-seconds", type=float, default=0.4, help="about how long each timed block lasts")
    parser.add_argument("--profile", metavar="MODEL", help="per-op-type times of one model, ours and ORT's")
    parser.add_argument("--profile-runs", type=int, default=20)
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="onnx_light_models_"))
    names = [m for m in (args.profile or args.models).split(",") if m]
    if not folder.exists() or not read_folder(folder):
        export_models(folder, names)
    models = read_folder(folder)
    threads = [int(t) for t in args.threads.split(",") if t]
    if args.profile:
        model = select(models, [args.profile])[0]
        profile(model, threads[0], args.profile_runs)
        return 0
    benchmark(select(models, names), threads, args.rounds, args.block_seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
