"""Many decode streams on one compiled session (docs/scaling.md).

    python benchmarks/bench_streams.py [--streams 1 2 8 32] [--steps 64] [--num-threads 1]
                                       [--budget 0] [--reserved-rows 4096] [--private]

The decoder of benchmarks/bench_decode.py (4 layers, 8 heads, head size 64, Attention, opset 23)
is compiled once; N PersistentValueStates on that session each generate `steps` tokens, one at a
time, in two ways:

- threads: N Python threads, one stream each, all at once (runs release the GIL);
- interleaved: one thread steps stream 0, 1, ..., N-1, then again, `steps` times.

Each (mode, N) runs in a fresh process, so memory numbers do not carry over. Reported: tokens per
second over all streams (wall time of the whole decode, after one warm-up token per stream), the
speed-up over one stream, and memory per stream: the growth of the process's resident set from
just before the states are made to the end of the decode, divided by N, next to the cache one
stream holds (steps x layers x 2 x kv_heads x head_size x 4 bytes) and the allocator's live bytes
per stream (persistent buffers in lazily backed reservations, the default, are not allocator
memory: use --reserved-rows 0 to see the cache there). The process's thread count is reported
too: it stays at the budget however many states there are.

With --private every state compiles a session of its own (PersistentValueState(model, initial,
options), what each stream cost before states could share a session), for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

LAYERS, HEADS, HEAD = 4, 8, 64


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


def one(mode: str, streams: int, steps: int, num_threads: int, budget: int, reserved_rows: int,
        private: bool) -> dict:
    import onnx_light.runtime as runtime
    from onnx_light import decoder_model

    if budget:
        runtime.set_thread_budget(budget)
    model = decoder_model.build_decoder(layers=LAYERS, heads=HEADS, head_size=HEAD, seed=0)
    declared = runtime.with_persistent_bindings(model, decoder_model.bindings(LAYERS))
    from onnx import numpy_helper

    weights = sum(numpy_helper.to_array(i).nbytes for i in model.graph.initializer)
    del model
    options = runtime.RuntimeSessionOptions(num_threads=num_threads, persistent_tensor_reserved_rows=reserved_rows)
    session = runtime.RuntimeSession(declared, options)
    root = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    rng = np.random.default_rng(0)
    tokens = [rng.standard_normal((1, 1, HEADS * HEAD)).astype(np.float32) for _ in range(streams)]

    # Warm the session (plan frames, kernel scratch) before measuring memory.
    warm = (runtime.PersistentValueState(declared, decoder_model.empty_cache(LAYERS, HEADS, HEAD), options) if private
            else runtime.PersistentValueState(session, decoder_model.empty_cache(LAYERS, HEADS, HEAD)))
    warm.run(root.copy(), {"x": tokens[0]})
    warm.close()
    del warm
    rss_before = rss_bytes()
    live_before = root.allocated_bytes

    if private:
        states = [runtime.PersistentValueState(declared, decoder_model.empty_cache(LAYERS, HEADS, HEAD), options)
                  for _ in range(streams)]
    else:
        states = [runtime.PersistentValueState(session, decoder_model.empty_cache(LAYERS, HEADS, HEAD))
                  for _ in range(streams)]
    contexts = [root.copy() for _ in range(streams)]
    for s in range(streams):  # one warm-up token each
        states[s].run(contexts[s], {"x": tokens[s]})

    if mode == "threads":
        barrier = threading.Barrier(streams + 1)

        def worker(s):
            barrier.wait()
            for _ in range(steps - 1):
                states[s].run(contexts[s], {"x": tokens[s]})

        workers = [threading.Thread(target=worker, args=(s,)) for s in range(streams)]
        for w in workers:
            w.start()
        barrier.wait()
        start = time.perf_counter()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - start
    else:
        start = time.perf_counter()
        for _ in range(steps - 1):
            for s in range(streams):
                states[s].run(contexts[s], {"x": tokens[s]})
        elapsed = time.perf_counter() - start

    rss_after = rss_bytes()
    live_after = root.allocated_bytes
    cache = steps * LAYERS * 2 * HEADS * HEAD * 4
    assert all(st.values["past_key_0"].shape[2] == steps for st in states)
    return {
        "mode": mode, "streams": streams, "steps": steps,
        "tokens_per_s": streams * (steps - 1) / elapsed,
        "rss_per_stream": (rss_after - rss_before) / streams,
        "live_per_stream": (live_after - live_before) / streams,
        "cache_per_stream": cache,
        "session_rss": rss_before,
        "weights": weights,
        "threads": thread_count(),
        "budget": runtime.thread_budget() if hasattr(runtime, "thread_budget") else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 2, 8, 32])
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--num-threads", type=int, default=1,
                        help="the session's num_threads (1: each stream on its own thread only)")
    parser.add_argument("--budget", type=int, default=0, help="process thread budget (0: one per core)")
    parser.add_argument("--reserved-rows", type=int, default=4096)
    parser.add_argument("--modes", nargs="+", default=["threads", "interleaved"])
    parser.add_argument("--private", action="store_true", help="one compiled session per state")
    parser.add_argument("--one", nargs=2, metavar=("MODE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), args.steps, args.num_threads, args.budget,
                             args.reserved_rows, args.private)))
        return

    print(f"decoder {LAYERS} layers x {HEADS} heads x {HEAD}; {args.steps} tokens per stream; session "
          f"num_threads={args.num_threads}; {'one session per state' if args.private else 'one shared session'}; "
          f"cores {os.cpu_count()}")
    print(f"{'mode':<12}{'N':>4}{'tokens/s':>11}{'x one':>7}{'RSS/stream':>12}{'live/stream':>13}"
          f"{'cache/stream':>14}{'threads':>9}")
    rows = []
    for mode in args.modes:
        base = None
        for n in args.streams:
            cmd = [sys.executable, __file__, "--one", mode, str(n), "--steps", str(args.steps),
                   "--num-threads", str(args.num_threads), "--budget", str(args.budget),
                   "--reserved-rows", str(args.reserved_rows)] + (["--private"] if args.private else [])
            r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            rows.append(r)
            base = base or r["tokens_per_s"]
            mib = 1 << 20
            print(f"{mode:<12}{n:>4}{r['tokens_per_s']:>11.0f}{r['tokens_per_s'] / base:>7.2f}"
                  f"{r['rss_per_stream'] / mib:>10.2f}Mi{r['live_per_stream'] / mib:>11.2f}Mi"
                  f"{r['cache_per_stream'] / mib:>12.2f}Mi{r['threads']:>9}")
    r = rows[0]
    print(f"weights {r['weights'] / (1 << 20):.1f} MiB; process RSS with the session built "
          f"{r['session_rss'] / (1 << 20):.1f} MiB; thread budget {r['budget']}")


if __name__ == "__main__":
    main()
