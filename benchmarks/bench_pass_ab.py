"""One graph pass off and on, on exported models: what the pass is worth, and that it changes nothing.

    python benchmarks/bench_pass_ab.py --dir /tmp/models --option fuse_conv_add [--models resnet18] [--rounds 5] \
        [--threads 1]

For each model of the folder (written by examples/export_models.py; --models picks architectures
or labels), two onnx-light sessions that differ only in RuntimeSessionOptions(<option>=False /
True) and one ONNX Runtime session, all at --threads threads (default 1), run the same input in alternating blocks of
--runs runs, --rounds times. Prints the median time per run of each, the ratios to ORT, and the
largest difference between the two sessions' outputs and between the pass's and ORT's. Run by
hand on a quiet machine; the figures belong in docs/performance.md with this command.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import onnx_light.runtime as runtime
from onnx_light.exported_model import ort_session, read_folder

PAUSE_S = 0.05


def block_ms(run, runs: int) -> float:
    run()
    start = time.perf_counter()
    for _ in range(runs):
        run()
    return (time.perf_counter() - start) / runs * 1e3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="folder of exported models")
    parser.add_argument("--option", required=True, help="a boolean RuntimeSessionOptions field, e.g. fuse_conv_add")
    parser.add_argument("--models", default="", help="comma-separated architectures or labels (default: all)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=8, help="runs per timed block")
    parser.add_argument("--threads", type=int, default=1, help="threads of every session")
    args = parser.parse_args(argv)
    if not isinstance(getattr(runtime.RuntimeSessionOptions(), args.option, None), bool):
        parser.error(f"--option {args.option}: not a boolean field of RuntimeSessionOptions")
    wanted = [m for m in args.models.split(",") if m]
    models = [m for m in read_folder(args.dir)
              if not wanted or any(m.label == w or m.label.startswith(w + "-") for w in wanted)]
    if not models:
        parser.error(f"no model of {args.dir} matches --models {args.models!r}")
    print(f"| model | {args.option}=False ms | True ms | ORT ms | False / ORT | True / ORT | "
          f"max diff off/on | max diff on/ORT |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for model in models:
        feeds = model.feeds(seed=0)
        sessions = {flag: runtime.RuntimeSession(model.path, runtime.RuntimeSessionOptions(num_threads=args.threads, **{args.option: flag}))
                    for flag in (False, True)}
        theirs = ort_session(model.path, args.threads)
        runs = {False: lambda: sessions[False].run(None, feeds), True: lambda: sessions[True].run(None, feeds),
                "ort": lambda: theirs.run(None, feeds)}
        outputs = {flag: [np.asarray(o) for o in sessions[flag].run(None, feeds)] for flag in (False, True)}
        reference = theirs.run(None, feeds)
        times = {key: [] for key in runs}
        for _ in range(args.rounds):
            for key, run in runs.items():
                time.sleep(PAUSE_S)  # ORT's spinning threads go idle before the next block
                times[key].append(block_ms(run, args.runs))
        med = {key: statistics.median(v) for key, v in times.items()}
        off_on = max(float(np.max(np.abs(a - b))) if a.size else 0.0 for a, b in zip(outputs[False], outputs[True]))
        on_ort = max(float(np.max(np.abs(a - b))) if a.size else 0.0 for a, b in zip(outputs[True], reference))
        print(f"| {model.label} | {med[False]:.2f} | {med[True]:.2f} | {med['ort']:.2f} | "
              f"{med[False] / med['ort']:.2f} | {med[True] / med['ort']:.2f} | {off_on:.1e} | {on_ort:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
