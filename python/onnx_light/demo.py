"""The main job: build a small decoder, run a decode loop through PersistentValueState with
events on, and print what happened.

    python -m onnx_light.demo [--steps 64] [--layers 2] [--heads 4] [--head-size 16]
                              [--plot decode_memory.png | --no-plot] [--trace decode_trace.json]

With matplotlib installed, it also draws the allocator's live bytes and the persistent storage
over the loop into a PNG (decode_memory.png in the current folder unless --plot says otherwise).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import onnx_light.runtime as runtime
from onnx_light import decoder_model, plots, summary, trace


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-size", type=int, default=16)
    parser.add_argument("--capacity", type=int, default=32, help="persistent_tensor_initial_capacity")
    parser.add_argument("--plot", default="decode_memory.png", metavar="PATH",
                        help="PNG of memory over the loop (default: decode_memory.png; needs matplotlib)")
    parser.add_argument("--no-plot", action="store_true", help="do not draw the PNG")
    parser.add_argument("--trace", metavar="PATH", help="also write a Chrome trace of the loop (Perfetto)")
    args = parser.parse_args(argv)

    model = decoder_model.build_decoder(layers=args.layers, heads=args.heads, head_size=args.head_size)
    d_model = args.heads * args.head_size
    declared = runtime.with_persistent_bindings(model, decoder_model.bindings(args.layers))
    options = runtime.RuntimeSessionOptions(persistent_tensor_initial_capacity=args.capacity)
    state = runtime.PersistentValueState(
        declared, initial=decoder_model.empty_cache(args.layers, args.heads, args.head_size), options=options)
    context = runtime.RuntimeContext(events_enabled=True)
    context.set_kernel_usage_enabled(True)

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 1, d_model)).astype(np.float32)
    start = time.perf_counter()
    for _ in range(args.steps):
        out = state.run(context, {"x": x})
        # Feed a function of the output back as the next token's embedding.
        x = np.tanh(np.asarray(out["y"])[:, -1:, :d_model]).astype(np.float32)
    elapsed = time.perf_counter() - start
    events = context.events()

    cache_len = state.values["past_key_0"].shape[2]
    print(f"decoder: {args.layers} layers, {args.heads} heads, head size {args.head_size}; "
          f"{args.steps} steps in {elapsed * 1e3:.1f} ms ({elapsed / args.steps * 1e6:.0f} us/token)")
    print(f"cache length now {cache_len}; {len(events)} events recorded\n")
    print(summary.format_op_summary(summary.op_summary(events)))
    traffic = summary.storage_totals(events)
    cache_bytes = sum(t.numpy().nbytes for t in state.values.values())
    print("\npersistent storage:")
    for field, value in traffic.items():
        print(f"  {field:<30}{value:>12}")
    print(f"  {'final cache bytes':<30}{cache_bytes:>12}")
    stateless = sum(cache_bytes * (s + 1) // args.steps for s in range(args.steps))
    print(f"  {'a stateless loop would copy':<30}{stateless:>12}  (re-feeding past/present every step)")
    print(f"\nallocator peak: {summary.peak_bytes(events)} bytes")
    kernels = sorted(set(context.get_kernel_usage()))
    print("kernels that ran: " + ", ".join(kernels))
    if args.trace:
        trace.export_chrome_trace(events, args.trace)
        print(f"\ntrace: {args.trace} (open it in https://ui.perfetto.dev)")
    if not args.no_plot:
        try:
            path = plots.plot_decode_memory(
                events, args.plot, title=f"{args.steps}-step decode loop, {args.layers} layers, "
                                         f"initial capacity {args.capacity}")
            print(f"\nplot: {os.path.abspath(path)}")
        except ImportError:
            print("\nplot: skipped, matplotlib is not installed (pip install matplotlib)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
