"""onnx-light runtime side by side with ONNX Runtime, in one process, same thread count.

    python benchmarks/bench_vs_ort.py [--threads 1] [--cases chain,matmul,cnn,prefill,load,recurrent]
                                      [--load-modes copy,map]

--load-modes chooses how case (e) loads the model file (RuntimeSessionOptions.load_mode), one
row per mode; copy is the default.

Prints a Markdown table: median wall time per run (ms) for both runtimes and the ratio
ours / ORT (below 1 is faster). Machines here are noisy: compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime
from onnx_light.cnn_model import build_cnn
from onnx_light.decoder_model import build_decoder, empty_cache


def sample_times(fn, repeat, warmup=3):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def median_time(fn, repeat, warmup=3):
    return statistics.median(sample_times(fn, repeat, warmup))


def ort_session(model_or_path, threads):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    source = model_or_path if isinstance(model_or_path, str) else model_or_path.SerializeToString()
    return ort.InferenceSession(source, opts, providers=["CPUExecutionProvider"])


def compare(model, feeds, threads, repeat, rounds=5, opset=23):
    """Medians over `rounds` alternating blocks of runs, so a slow spell of this shared machine
    hits both runtimes; a short pause between blocks lets either runtime's spinning threads go
    idle before the other one runs."""
    ours = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(num_threads=threads))
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(opset)))
    theirs = ort_session(model, threads)
    block = max(1, repeat // rounds)
    ours_samples, ort_samples = [], []
    for _ in range(rounds):
        for fn, samples in ((lambda: ours.run(ctx, feeds), ours_samples), (lambda: theirs.run(None, feeds), ort_samples)):
            time.sleep(0.05)
            samples.extend(sample_times(fn, block, warmup=10))
    return statistics.median(ours_samples), statistics.median(ort_samples)


def run_case_table(description, families, repeat=30, digits=2, repeat_for=None):
    """The command line of the one-node family benchmarks (bench_signal, bench_strings, bench_ml,
    bench_vision, bench_ml_preprocessing): --threads, --repeat, --cases (names of `families`, a
    dict of name -> function(rng) returning one (name, model, feeds) case or a list of them, in
    table order) and --only (run only the cases whose name contains this text); prints the
    Markdown table of `compare` for each case. `repeat_for(feeds, repeat)`, when given, sets a
    case's repeat count from its feeds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--cases", default=",".join(families))
    parser.add_argument("--only", default="", help="run the cases whose name contains this text")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    wanted = set(args.cases.split(","))
    cases = []
    for name, make in families.items():
        if name in wanted:
            made = make(rng)
            cases.extend([made] if isinstance(made, tuple) else made)
    print(f"threads: {args.threads}\n")
    print("| case | ours (ms) | ORT (ms) | ours / ORT |")
    print("|---|---:|---:|---:|")
    for name, model, feeds in cases:
        if args.only not in name:
            continue
        count = repeat_for(feeds, args.repeat) if repeat_for else args.repeat
        ours, theirs = compare(model, feeds, args.threads, count)
        print(f"| {name} | {ours * 1e3:.{digits}f} | {theirs * 1e3:.{digits}f} | {ours / theirs:.2f} |", flush=True)


def chain_model(length=500, size=16):
    ops = ["Add", "Mul", "Sub", "Relu", "Neg"]
    nodes, x = [], "x"
    for i in range(length):
        op = ops[i % len(ops)]
        inputs = [x] if op in ("Relu", "Neg") else [x, "c"]
        nodes.append(helper.make_node(op, inputs, [f"v{i}"]))
        x = f"v{i}"
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size])],
                              initializer=[numpy_helper.from_array(np.full(size, 0.5, np.float32), "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


def matmul_model(n=1024):
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"])], "mm",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, [n, n]),
                               helper.make_tensor_value_info("b", TensorProto.FLOAT, [n, n])],
                              [helper.make_tensor_value_info("c", TensorProto.FLOAT, [n, n])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


def big_weights_model(megabytes=200, dim=1024):
    count = max(1, megabytes * (1 << 20) // (dim * dim * 4))
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(count):
        inits.append(numpy_helper.from_array(rng.standard_normal((dim, dim)).astype(np.float32) * 0.01, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"h{i}"]))
        x = f"h{i}"
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    graph = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, dim])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, dim])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


def one_node_model(op, feeds, outputs, opset, **attrs):
    """A model of one `op` node reading every feed (float32 inputs) in order."""
    node = helper.make_node(op, list(feeds), outputs, **attrs)
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=11)


def recurrent_cases(rng, threads, repeat):
    """LinearAttention (gated_delta, 16 heads, 128 x 128 state) and CausalConvWithState (SiLU,
    8192 channels, kernel 4): one decode step and a 256-token prefill each."""
    rows = []
    heads, dk, dv = 16, 128, 128
    for tokens in (1, 256):
        feeds = {"q": rng.standard_normal((1, tokens, heads * dk)).astype(np.float32),
                 "k": (0.05 * rng.standard_normal((1, tokens, heads * dk))).astype(np.float32),
                 "v": rng.standard_normal((1, tokens, heads * dv)).astype(np.float32),
                 "past": rng.standard_normal((1, heads, dk, dv)).astype(np.float32),
                 "g": -rng.random((1, tokens, heads)).astype(np.float32),
                 "beta": rng.random((1, tokens, heads)).astype(np.float32)}
        model = one_node_model("LinearAttention", feeds, ["y", "state"], 27, q_num_heads=heads, kv_num_heads=heads)
        rows.append((f"(f) LinearAttention gated_delta, {tokens} token(s), 16 heads, 128x128 state",
                     *compare(model, feeds, threads, repeat, opset=27)))
    channels = 8192
    for length in (1, 256):
        feeds = {"x": rng.standard_normal((1, channels, length)).astype(np.float32),
                 "w": rng.standard_normal((channels, 1, 4)).astype(np.float32),
                 "b": rng.standard_normal(channels).astype(np.float32),
                 "past": rng.standard_normal((1, channels, 3)).astype(np.float32)}
        model = one_node_model("CausalConvWithState", feeds, ["y", "state"], 27, activation="silu")
        rows.append((f"(g) CausalConvWithState silu, {length} position(s), 8192 channels, k 4",
                     *compare(model, feeds, threads, repeat, opset=27)))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cases", default="chain,matmul,cnn,prefill,load")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--load-modes", default="copy", help="case (e): comma-separated copy,map")
    args = parser.parse_args()
    cases = args.cases.split(",")
    rng = np.random.default_rng(0)
    rows = []
    if "chain" in cases:
        feeds = {"x": rng.standard_normal(16).astype(np.float32)}
        rows.append(("(a) 500-node elementwise chain, [16]", *compare(chain_model(), feeds, args.threads, args.repeat * 5)))
    if "matmul" in cases:
        feeds = {"a": rng.standard_normal((1024, 1024)).astype(np.float32),
                 "b": rng.standard_normal((1024, 1024)).astype(np.float32)}
        rows.append(("(b) MatMul 1024x1024x1024 float32", *compare(matmul_model(), feeds, args.threads, args.repeat)))
    if "cnn" in cases:
        feeds = {"image": rng.standard_normal((8, 3, 32, 32)).astype(np.float32)}
        rows.append(("(c) small CNN, batch 8, 3x32x32", *compare(build_cnn(), feeds, args.threads, args.repeat)))
    if "prefill" in cases:
        layers, heads, head = 4, 8, 64
        model = build_decoder(layers=layers, heads=heads, head_size=head)
        feeds = {"x": rng.standard_normal((1, 128, heads * head)).astype(np.float32)}
        feeds.update(empty_cache(layers, heads, head))
        rows.append(("(d) decoder prefill, 128 tokens (4 layers, 8 heads x 64)",
                     *compare(model, feeds, args.threads, args.repeat)))
    if "load" in cases:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "big.onnx")
            onnx.save(big_weights_model(), path)
            for mode in args.load_modes.split(","):
                opts = runtime.RuntimeSessionOptions(num_threads=args.threads, load_mode=mode)
                t_ours = median_time(lambda: runtime.RuntimeSession(path, opts), 5, warmup=1)
                t_ort = median_time(lambda: ort_session(path, args.threads), 5, warmup=1)
                rows.append((f"(e) load + build, 200 MB of initializers, load_mode={mode}", t_ours, t_ort))

    if "recurrent" in cases:
        rows.extend(recurrent_cases(rng, args.threads, args.repeat))

    print(f"threads: {args.threads}; onnxruntime {ort.__version__}; numpy {np.__version__}\n")
    print("| case | onnx-light ms | ORT ms | ratio (ours / ORT) |")
    print("|---|---:|---:|---:|")
    for name, ours, theirs in rows:
        print(f"| {name} | {ours * 1e3:.3f} | {theirs * 1e3:.3f} | {ours / theirs:.2f} |")


if __name__ == "__main__":
    main()
