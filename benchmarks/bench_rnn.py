"""LSTM and GRU layers, onnx-light runtime against ONNX Runtime in one process.

    python benchmarks/bench_rnn.py [--threads 1,2] [--batches 1,16] [--seq 128] [--hidden 256]

Each case is a 2-layer bidirectional layer stack as torch.onnx.export writes it for
nn.LSTM/nn.GRU(hidden, hidden, num_layers=2, bidirectional=True): weights as initializers,
Transpose + Reshape between the layers. Prints a Markdown table of median wall times (ms) and
the ratio ours / ORT (below 1 is faster). Compare ratios, not absolute times.
"""

from __future__ import annotations

import argparse

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from bench_vs_ort import compare

GATES = {"LSTM": 4, "GRU": 3}


def stacked_model(op, hidden, layers=2, seed=0):
    rng = np.random.default_rng(seed)
    gates = GATES[op]
    nodes, inits = [], []
    x, in_size = "x", hidden
    for layer in range(layers):
        for name, shape in ((f"W{layer}", (2, gates * hidden, in_size)), (f"R{layer}", (2, gates * hidden, hidden)),
                            (f"B{layer}", (2, 2 * gates * hidden))):
            inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(np.float32), name))
        extra = {"linear_before_reset": 1} if op == "GRU" else {}  # what torch exports for GRU
        nodes.append(helper.make_node(op, [x, f"W{layer}", f"R{layer}", f"B{layer}"], [f"Y{layer}"],
                                      direction="bidirectional", hidden_size=hidden, **extra))
        nodes.append(helper.make_node("Transpose", [f"Y{layer}"], [f"T{layer}"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", [f"T{layer}", "shape"], [f"X{layer + 1}"]))
        x, in_size = f"X{layer + 1}", 2 * hidden
    inits.append(numpy_helper.from_array(np.array([0, 0, -1], np.int64), "shape"))
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    graph = helper.make_graph(nodes, op.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--batches", default="1,16")
    parser.add_argument("--ops", default="LSTM,GRU")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print("| case | threads | ours (ms) | ORT (ms) | ours / ORT |")
    print("|---|---|---|---|---|")
    for op in args.ops.split(","):
        model = stacked_model(op, args.hidden)
        for batch in (int(b) for b in args.batches.split(",")):
            x = np.random.default_rng(1).standard_normal((args.seq, batch, args.hidden)).astype(np.float32)
            for threads in (int(t) for t in args.threads.split(",")):
                ours, theirs = compare(model, {"x": x}, threads, args.repeat)
                name = f"{op} 2-layer bidir h{args.hidden} seq{args.seq} batch{batch}"
                print(f"| {name} | {threads} | {ours * 1e3:.2f} | {theirs * 1e3:.2f} | {ours / theirs:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()
