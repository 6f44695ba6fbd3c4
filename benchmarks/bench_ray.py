"""Ray Data batch inference with onnx-light: throughput with 1 and 2 workers on the same data.

    python benchmarks/bench_ray.py [--images 8192] [--batch 64] [--rounds 3] [--workers 1,2]

Builds the CNN of onnx_light.cnn_model (--channels, --image), starts a local Ray instance with as
many CPUs as the most workers asked for, and for each worker count runs
``Dataset.map_batches(BatchPredictor, compute=ActorPoolStrategy(size=W), num_cpus=1)`` (one single-threaded session
per actor) over the same images, --rounds times. Two throughputs per run:

* end to end: images / wall time of ``materialize()``, actor start-up and Ray Data scheduling
  included (what a user waits for);
* inference span: images / (last batch end - first batch start) on the wall clock, as the actors
  stamp their batches, which leaves out actor start-up and the scheduling before the first batch.

Events stay off (no trace_dir): recording and writing a trace per batch would be measured too.

For scale, the same batches also run in this process without Ray, through one onnx-light
session and one ONNX Runtime session (one intra-op thread each), and in W plain processes without
Ray (multiprocessing, each with its own single-threaded session and 1/W of the images, timed from
the first start to the last end): that row is the machine's own ceiling for W workers, which Ray's
processes (driver, raylet, Ray Data's scheduler) then share cores with. The table gives the median
over rounds and the ratio of each worker count to one worker. The machine must have as many idle
cores as workers for the ratio to mean anything: say how busy it was when quoting numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import onnx_light
import onnx_light.runtime as runtime
from onnx_light import cnn_model
from onnx_light.ray_helpers import BatchPredictor


class TimedPredictor(BatchPredictor):
    """BatchPredictor that also returns when each batch started and ended (wall clock, s) and
    which actor process ran it."""

    def __call__(self, batch):
        start = time.time()
        out = super().__call__(batch)
        rows = len(next(iter(out.values())))
        out["start_s"] = np.full(rows, start)
        out["end_s"] = np.full(rows, time.time())
        out["pid"] = np.full(rows, os.getpid())
        return out


def ray_round(ray, model: bytes, images: np.ndarray, batch: int, workers: int) -> tuple[float, float, int]:
    """(end-to-end s, inference span s, actors that did work) for one map_batches run."""
    # One block per batch, in the object store before timing, so every actor gets work.
    ds = ray.data.from_numpy(np.array_split(images, max(1, len(images) // batch))).materialize()
    start = time.perf_counter()
    out = ds.map_batches(TimedPredictor, fn_constructor_kwargs={"model": model, "inputs": {"data": "image"},
                                                                "keep_columns": []},
                         batch_size=batch, batch_format="numpy", num_cpus=1,
                         compute=ray.data.ActorPoolStrategy(size=workers)).materialize()
    elapsed = time.perf_counter() - start
    stamps = out.select_columns(["start_s", "end_s", "pid"]).to_pandas()
    if len(stamps) != len(images):
        raise RuntimeError(f"{len(stamps)} rows out for {len(images)} images")
    return elapsed, float(stamps["end_s"].max() - stamps["start_s"].min()), int(stamps["pid"].nunique())


def process_share(model: bytes, images: np.ndarray, batch: int, ready, go, stamps) -> None:
    """One plain worker process: build a session, wait for the others, run its images, stamp."""
    session = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(num_threads=1))
    session.run(None, {"image": images[:batch]})
    ready.put(os.getpid())
    go.wait()
    start = time.time()
    for i in range(0, len(images), batch):
        session.run(None, {"image": images[i:i + batch]})
    stamps.put((start, time.time()))


def processes_s(model: bytes, images: np.ndarray, batch: int, workers: int) -> float:
    """Seconds from the first plain process's start to the last one's end, images split W ways."""
    import multiprocessing

    spawn = multiprocessing.get_context("spawn")
    ready, stamps, go = spawn.Queue(), spawn.Queue(), spawn.Event()
    shares = np.array_split(images, workers)
    procs = [spawn.Process(target=process_share, args=(model, share, batch, ready, go, stamps)) for share in shares]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=300)
    go.set()
    spans = [stamps.get(timeout=3600) for _ in procs]
    for p in procs:
        p.join()
    return max(end for _, end in spans) - min(start for start, _ in spans)


def local_s(run, images: np.ndarray, batch: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(images), batch):
        run(images[i:i + batch])
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=8192)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", default="1,2", help="worker counts, comma-separated (default 1,2)")
    parser.add_argument("--channels", default="3,32,64", help="CNN channels (default 3,32,64)")
    parser.add_argument("--image", type=int, default=32, help="image side (default 32)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    workers = [int(w) for w in args.workers.split(",")]

    import ray

    model = cnn_model.build_cnn(channels=tuple(int(c) for c in args.channels.split(",")),
                                image=args.image).SerializeToString()
    images = np.random.default_rng(0).standard_normal((args.images, 3, args.image, args.image)).astype(np.float32)

    session = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(num_threads=1))
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    ort_session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    ours = lambda x: session.run(None, {"image": x})  # noqa: E731
    theirs = lambda x: ort_session.run(None, {"image": x})  # noqa: E731
    local = {"onnx-light, no Ray": [], "ONNX Runtime, no Ray": []}
    for _ in range(args.rounds):
        local["onnx-light, no Ray"].append(local_s(ours, images, args.batch))
        local["ONNX Runtime, no Ray"].append(local_s(theirs, images, args.batch))
        for w in workers:
            local.setdefault(f"{w} process(es), no Ray", []).append(processes_s(model, images, args.batch, w))

    package_root = os.path.dirname(os.path.dirname(os.path.abspath(onnx_light.__file__)))
    path = os.pathsep.join([package_root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    ray.init(num_cpus=max(workers), include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.wait_for_min_actors_s = 120
    results = {}
    try:
        ray_round(ray, model, images[:args.batch * 2], args.batch, 1)  # warm-up: worker processes, imports
        for _ in range(args.rounds):
            for w in workers:
                results.setdefault(w, []).append(ray_round(ray, model, images, args.batch, w))
    finally:
        ray.shutdown()

    print(f"CNN channels {args.channels}, image {args.image}x{args.image}, {args.images} images in batches of "
          f"{args.batch}; median of {args.rounds} rounds; {os.cpu_count()} cores on this machine\n")
    print(f"{'':<26}{'end to end':>14}{'inference span':>18}{'actors':>8}")
    base = {}
    report = {"args": vars(args), "local": {}, "ray": {}}
    for name, times in local.items():
        t = statistics.median(times)
        report["local"][name] = {"seconds": t, "images_per_s": args.images / t}
        print(f"{name:<26}{args.images / t:>10.0f} i/s{'':>18}")
    for w in workers:
        e2e = statistics.median(r[0] for r in results[w])
        span = statistics.median(r[1] for r in results[w])
        actors = min(r[2] for r in results[w])
        base.setdefault("e2e", e2e)
        base.setdefault("span", span)
        report["ray"][w] = {"end_to_end_s": e2e, "span_s": span, "actors": actors,
                            "speedup_end_to_end": base["e2e"] / e2e, "speedup_span": base["span"] / span}
        print(f"{f'Ray, {w} worker(s)':<26}{args.images / e2e:>10.0f} i/s{args.images / span:>14.0f} i/s{actors:>8}")
    for w in workers[1:]:
        r = report["ray"][w]
        ceiling = statistics.median(local[f"{workers[0]} process(es), no Ray"]) / \
            statistics.median(local[f"{w} process(es), no Ray"])
        report["ray"][w]["speedup_plain_processes"] = ceiling
        print(f"\n{w} workers / {workers[0]}: end to end {r['speedup_end_to_end']:.2f}x, "
              f"inference span {r['speedup_span']:.2f}x; plain processes without Ray {ceiling:.2f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
