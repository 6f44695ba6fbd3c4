"""Decode loop: PersistentValueState against ONNX Runtime re-feeding past/present every step.

    python benchmarks/bench_decode.py [--steps 2048] [--threads 1] [--dtype float32|float16]
    python benchmarks/bench_decode.py --steps 2048 --profile   # ours only: per-operator times
    python benchmarks/bench_decode.py --model llama.onnx [--steps 2048] [--threads 1]
    python benchmarks/bench_decode.py --weights int4 --block 32|128 [--steps 2048] [--threads 1] [--int8-activations]

A decoder of 4 layers, 8 heads, head size 64 (Attention, opset 23) generates `steps` tokens one at
a time. Reports per-token latency around steps 128, 512 and 2048 for both runtimes, the bytes our
state copied (sum of storage_prefix_copied_bytes + storage_append_copied_bytes) against what a
stateless loop copies (the whole present cache every step), and the allocator peak.

With `--model PATH`, an exported decoder file instead (e.g. from examples/export_decoder.py: inputs
input_ids, attention_mask and/or position_ids, past_* -> present_* found from the names, see
onnx_light.exported_decoder), fed one token per call from position 0. Each runtime runs `--loops`
loops (default 3), the two alternating; the first pays one-time costs (ONNX Runtime allocates at every new length, we
grow the cache buffers) and is not measured. Of the warm loops, each step keeps its fastest time,
which filters out the descheduling a shared machine adds to a step of a few hundred microseconds;
the table gives medians of the 16 calls before each mark. One more loop of ours with events on
counts the bytes copied.

With `--weights int4`, the built-in decoder's MatMul weights are quantized by onnxruntime's
MatMulNBitsQuantizer (4 bits, blocks of `--block` rows along K, with zero points, QDQ format:
DequantizeLinear -> MatMul, which our fuse_quantized_matmul pass and ORT's own optimizer each fuse).
Ours and ORT run that model; ours also runs the float32 decoder, and the table gives ours/ORT,
ours-int4/ours-float32 and the bytes a step must read at the last mark (packed weights + cache),
the memory-read floor to compare with memory_bandwidth_benchmark. `--int8-activations` builds our
int4 sessions with quantize_matmul_activations, which quantizes A to int8 per block as ORT's
MatMulNBits does by default (accuracy level 4).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnxruntime as ort

import onnx_light.runtime as runtime
from onnx_light import decoder_model, summary
from onnx_light.exported_decoder import DecoderFile

LAYERS, HEADS, HEAD = 4, 8, 64


def window_means(times, marks, width=16):
    out = {}
    for m in marks:
        if m <= len(times):
            chunk = times[max(0, m - width):m]
            out[m] = sum(chunk) / len(chunk)
    return out


def run_ours(model, steps, threads, events, dtype, quantize_activations=False):
    declared = runtime.with_persistent_bindings(model, decoder_model.bindings(LAYERS))
    options = runtime.RuntimeSessionOptions(num_threads=threads, quantize_matmul_activations=quantize_activations)
    state = runtime.PersistentValueState(declared, initial=decoder_model.empty_cache(LAYERS, HEADS, HEAD, dtype=dtype),
                                         options=options)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=events)
    x = np.random.default_rng(0).standard_normal((1, 1, HEADS * HEAD)).astype(dtype)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        state.run(ctx, {"x": x})
        times.append(time.perf_counter() - start)
    return times, ctx, state


def run_ort(model, steps, threads, dtype):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 1, HEADS * HEAD)).astype(dtype)}
    feeds.update(decoder_model.empty_cache(LAYERS, HEADS, HEAD, dtype=dtype))
    names = [o.name for o in sess.get_outputs()]
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        outs = sess.run(None, feeds)
        for i in range(LAYERS):
            feeds[f"past_key_{i}"] = outs[names.index(f"present_key_{i}")]
            feeds[f"past_value_{i}"] = outs[names.index(f"present_value_{i}")]
        times.append(time.perf_counter() - start)
    return times


def profile(model, steps, threads, dtype, last=8, quantize_activations=False):
    """Ours only: runs `steps` steps and prints the per-operator summary of the last `last`."""
    declared = runtime.with_persistent_bindings(model, decoder_model.bindings(LAYERS))
    options = runtime.RuntimeSessionOptions(num_threads=threads, quantize_matmul_activations=quantize_activations)
    state = runtime.PersistentValueState(declared, initial=decoder_model.empty_cache(LAYERS, HEADS, HEAD, dtype=dtype),
                                         options=options)
    kc = runtime.KernelContext(runtime.default_opset(23))
    quiet, traced = runtime.RuntimeContext(kc), runtime.RuntimeContext(kc, events_enabled=True)
    x = np.random.default_rng(0).standard_normal((1, 1, HEADS * HEAD)).astype(dtype)
    for _ in range(steps - last):
        state.run(quiet, {"x": x})
    start = time.perf_counter()
    for _ in range(last):
        state.run(traced, {"x": x})
    print(f"steps {steps - last + 1}-{steps}: {(time.perf_counter() - start) / last * 1e6:.0f} us/token with events on\n")
    print(summary.format_summary(traced.events()))


def print_tables(marks, ours_w, ort_w, cache_bytes, traffic, stateless, allocator_peak=None):
    """The latency table (seconds per token by mark, ours and ORT's) and the bytes table."""
    print("| step | onnx-light us/token | ORT us/token | ratio (ours / ORT) |")
    print("|---:|---:|---:|---:|")
    for m in marks:
        print(f"| {m} | {ours_w[m] * 1e6:.0f} | {ort_w[m] * 1e6:.0f} | {ours_w[m] / ort_w[m]:.2f} |")
    copied = traffic["storage_prefix_copied_bytes"] + traffic["storage_append_copied_bytes"]
    print()
    print("| bytes | value |")
    print("|---|---:|")
    print(f"| final cache size | {cache_bytes:,} |")
    print(f"| prefix copied (ours) | {traffic['storage_prefix_copied_bytes']:,} |")
    print(f"| appended (ours) | {traffic['storage_append_copied_bytes']:,} |")
    print(f"| total copied (ours) | {copied:,} |")
    print(f"| copied by a stateless loop (present = concat(past, new) each step) | {stateless:,} |")
    print(f"| storage allocations / reuses | {traffic['storage_allocations']} / {traffic['storage_reuse_count']} |")
    if allocator_peak is not None:
        print(f"| allocator peak (ours) | {allocator_peak:,} |")


def window_medians(times, marks, width=16):
    return {m: float(np.median(times[max(0, m - width):m])) for m in marks if m <= len(times)}


def exported_feeds(decoder, steps):
    """One token per call at positions 0 .. steps-1; the tokens cycle through the vocabulary."""
    vocab = decoder.vocab or 2
    return [decoder.step_feeds(np.array([[(7 * t + 3) % vocab]]), t) for t in range(steps)]


class OursDecoder:
    """Decode loops through one PersistentValueState, reset before each."""

    def __init__(self, decoder, threads):
        declared = runtime.with_persistent_bindings(decoder.path, decoder.bindings)
        self.decoder = decoder
        self.state = runtime.PersistentValueState(declared, decoder.empty_cache(),
                                                  runtime.RuntimeSessionOptions(num_threads=threads))
        self.ctx = None

    def loop(self, feeds, events=False):
        """One loop from an empty cache; the per-call times."""
        self.ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=events)
        self.state.reset(self.decoder.empty_cache())
        times = []
        for f in feeds:
            start = time.perf_counter()
            self.state.run(self.ctx, f)
            times.append(time.perf_counter() - start)
        return times


class OrtDecoder:
    """Decode loops through ONNX Runtime, re-feeding present as past."""

    def __init__(self, decoder, threads):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.decoder = decoder
        self.sess = ort.InferenceSession(decoder.path, opts, providers=["CPUExecutionProvider"])
        names = [o.name for o in self.sess.get_outputs()]
        self.present = [names.index(out) for out in decoder.bindings.values()]

    def loop(self, feeds):
        past = self.decoder.empty_cache()
        times = []
        for f in feeds:
            start = time.perf_counter()
            outs = self.sess.run(None, {**f, **past})
            past = {inp: outs[i] for inp, i in zip(self.decoder.bindings, self.present)}
            times.append(time.perf_counter() - start)
        return times


def fastest_per_step(loops):
    """Per step, the fastest of the warm loops (all but the first)."""
    return list(np.min(np.asarray(loops[1:] if len(loops) > 1 else loops), axis=0))


def profile_exported(path, steps, threads, last=8):
    """Ours only: one decode loop of the exported decoder, the per-operator summary of the last
    `last` steps (events on for those alone)."""
    decoder = DecoderFile.read(path)
    feeds = exported_feeds(decoder, steps)
    ours = OursDecoder(decoder, threads)
    ours.state.reset(decoder.empty_cache())
    kc = runtime.KernelContext(runtime.default_opset(23))
    quiet, traced = runtime.RuntimeContext(kc), runtime.RuntimeContext(kc, events_enabled=True)
    for f in feeds[:-last]:
        ours.state.run(quiet, f)
    start = time.perf_counter()
    for f in feeds[-last:]:
        ours.state.run(traced, f)
    print(f"{path}: steps {steps - last + 1}-{steps}: {(time.perf_counter() - start) / last * 1e6:.0f} us/token "
          f"with events on\n")
    print(summary.format_summary(traced.events()))


def run_exported(path, steps, threads, loops=3):
    decoder = DecoderFile.read(path)
    feeds = exported_feeds(decoder, steps)
    marks = [m for m in (128, 512, 1024, 2048) if m <= steps]
    ours, theirs = OursDecoder(decoder, threads), OrtDecoder(decoder, threads)
    ours_loops, ort_loops = [], []
    for _ in range(loops):  # alternating, so both runtimes meet the same host conditions
        ours_loops.append(ours.loop(feeds))
        ort_loops.append(theirs.loop(feeds))
    ours_times, ort_times = fastest_per_step(ours_loops), fastest_per_step(ort_loops)
    ours.loop(feeds, events=True)
    state, ctx = ours.state, ours.ctx
    traffic = summary.storage_totals(ctx.events())
    cache_bytes = sum(np.asarray(t).nbytes for t in state.values.values())
    stateless = sum(decoder.cache_bytes(s + 1) for s in range(steps))
    ours_w, ort_w = window_medians(ours_times, marks), window_medians(ort_times, marks)
    heads = sorted(set(decoder.cache_shapes.values()))
    print(f"{path}: {len(decoder.bindings)} cache tensors (kv heads, head size) {heads}; {steps} calls of one "
          f"token; threads {threads}; onnxruntime {ort.__version__}; per step the fastest of {max(1, loops - 1)} "
          f"warm loops, medians of the 16 calls before each mark\n")
    print_tables(marks, ours_w, ort_w, cache_bytes, traffic, stateless)


def quantized_decoder(block):
    import logging

    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    logging.disable(logging.INFO)
    model = decoder_model.build_decoder(layers=LAYERS, heads=HEADS, head_size=HEAD)
    float_model = decoder_model.build_decoder(layers=LAYERS, heads=HEADS, head_size=HEAD)  # the quantizer edits `model`
    quantizer = MatMulNBitsQuantizer(model, block_size=block, is_symmetric=False, quant_format=QuantFormat.QDQ)
    quantizer.process()
    return float_model, quantizer.model.model


def packed_weight_bytes(model, block):
    """Bytes our QuantizedMatMul kernels read per step: nibbles, float32 scales, byte zero points
    (32-column tiles), plus every other initializer."""
    from onnx import TensorProto, numpy_helper

    total = 0
    for init in model.graph.initializer:
        if init.data_type in (TensorProto.INT4, TensorProto.UINT4) and len(init.dims) == 2:
            k, n = init.dims
            tiles, blocks = -(-n // 32), -(-k // block)
            total += tiles * k * 16 + tiles * blocks * 32 * 5
        elif init.data_type == TensorProto.FLOAT and not init.name.endswith("scales"):
            total += numpy_helper.to_array(init).nbytes
    return total


def run_int4(args):
    float_model, model = quantized_decoder(args.block)
    marks = [m for m in (128, 512, 1024, 2048) if m <= args.steps]
    dtype = np.dtype(np.float32)
    a8 = args.int8_activations
    int4_times, ctx, state = run_ours(model, args.steps, args.threads, True, dtype, a8)
    usage_ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    usage_ctx.set_kernel_usage_enabled(True)
    state.run(usage_ctx, {"x": np.zeros((1, 1, HEADS * HEAD), np.float32)})
    traffic = summary.storage_totals(ctx.events())
    int4_times, _, _ = run_ours(model, args.steps, args.threads, False, dtype, a8)
    ort_times = run_ort(model, args.steps, args.threads, dtype)
    f32_times, _, _ = run_ours(float_model, args.steps, args.threads, False, dtype)
    ours_w, ort_w, f32_w = (window_means(t, marks) for t in (int4_times, ort_times, f32_times))
    weights = packed_weight_bytes(model, args.block)
    row_bytes = LAYERS * 2 * HEADS * HEAD * 4
    print(f"decoder {LAYERS} layers, {HEADS} heads x {HEAD}, int4 weights (uint4 + zero points, block {args.block}); "
          f"{args.steps} steps; threads {args.threads}; quantize_matmul_activations {a8}; "
          f"onnxruntime {ort.__version__}")
    print(f"kernels: {sorted(u for u in set(usage_ctx.get_kernel_usage()) if u.startswith('MatMul'))}; "
          f"prefix copied {traffic['storage_prefix_copied_bytes']:,} bytes\n")
    print("| step | ours int4 us/token | ORT int4 us/token | ours float32 us/token | ours/ORT | int4/float32 "
          "| bytes read per step |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for m in marks:
        print(f"| {m} | {ours_w[m] * 1e6:.0f} | {ort_w[m] * 1e6:.0f} | {f32_w[m] * 1e6:.0f} | "
              f"{ours_w[m] / ort_w[m]:.2f} | {ours_w[m] / f32_w[m]:.2f} | {weights + row_bytes * m:,} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", choices=["float32", "float16"], default="float32")
    parser.add_argument("--profile", action="store_true", help="ours only: per-operator times of the last 8 steps "
                                                                    "(the built-in decoder, or --model's)")
    parser.add_argument("--loops", type=int, default=3, help="--model only: decode loops per runtime, the first "
                                                               "unmeasured (default 3)")
    parser.add_argument("--weights", choices=["float32", "int4"], default="float32",
                        help="int4: the built-in decoder with 4-bit blocked weights, against ORT and our float32")
    parser.add_argument("--block", type=int, choices=[32, 128], default=32, help="--weights int4: rows per block")
    parser.add_argument("--int8-activations", action="store_true",
                        help="--weights int4: ours with quantize_matmul_activations (A quantized to int8 per block, "
                             "as ORT's MatMulNBits does by default)")
    parser.add_argument("--model", help="an exported decoder file (past_*/present_* inputs and outputs) instead of "
                                        "the built-in decoder")
    args = parser.parse_args()
    if args.model:
        if args.profile:
            return profile_exported(args.model, args.steps, args.threads)
        return run_exported(args.model, args.steps, args.threads, args.loops)
    if args.weights == "int4":
        if args.profile:
            return profile(quantized_decoder(args.block)[1], args.steps, args.threads, np.dtype(np.float32),
                           quantize_activations=args.int8_activations)
        return run_int4(args)
    dtype = np.dtype(args.dtype)
    model = decoder_model.build_decoder(layers=LAYERS, heads=HEADS, head_size=HEAD, dtype=dtype)
    if args.profile:
        return profile(model, args.steps, args.threads, dtype)
    marks = [m for m in (128, 512, 1024, 2048) if m <= args.steps]

    ours_times, _, _ = run_ours(model, args.steps, args.threads, False, dtype)
    ort_times = run_ort(model, args.steps, args.threads, dtype)
    _, ctx, state = run_ours(model, args.steps, args.threads, True, dtype)
    traffic = summary.storage_totals(ctx.events())
    cache_bytes = sum(np.asarray(t).nbytes for t in state.values.values())
    row_bytes = cache_bytes // args.steps
    stateless = sum(row_bytes * (s + 1) for s in range(args.steps))

    ours_w, ort_w = window_means(ours_times, marks), window_means(ort_times, marks)
    print(f"decoder {LAYERS} layers, {HEADS} heads x {HEAD}, {args.dtype}; {args.steps} steps; threads {args.threads}; "
          f"onnxruntime {ort.__version__}\n")
    print_tables(marks, ours_w, ort_w, cache_bytes, traffic, stateless, allocator_peak=ctx.peak_bytes)


if __name__ == "__main__":
    main()
