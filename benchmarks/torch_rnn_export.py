"""Exports real torch.nn.LSTM / nn.GRU models (2 layers, bidirectional) with torch.onnx.export and
runs them in onnx-light, ONNX Runtime and torch. Needs torch, which the project does not pin:
tests build the same graph with onnx.helper instead (tests/python/test_rnn_models.py).

    python benchmarks/torch_rnn_export.py [--hidden 256] [--seq 128] [--batch 16] [--threads 1]
"""

from __future__ import annotations

import argparse
import io

import numpy as np
import onnx
import torch

import onnx_light.runtime as runtime
from bench_vs_ort import compare


def export(module, example, batch_first):
    buffer = io.BytesIO()
    input_names = ["x", "h0"] + (["c0"] if isinstance(module, torch.nn.LSTM) else [])
    torch.onnx.export(module, example, buffer, input_names=input_names, opset_version=17,
                      dynamic_axes={"x": {0: "d0", 1: "d1"}} if not batch_first else None, dynamo=False)
    return onnx.load_from_string(buffer.getvalue())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-first", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    for cls in (torch.nn.LSTM, torch.nn.GRU):
        module = cls(args.hidden, args.hidden, num_layers=2, bidirectional=True, batch_first=args.batch_first).eval()
        shape = (args.batch, args.seq, args.hidden) if args.batch_first else (args.seq, args.batch, args.hidden)
        x = torch.randn(*shape)
        h0 = torch.randn(4, args.batch, args.hidden)
        example = (x, (h0, torch.randn_like(h0))) if cls is torch.nn.LSTM else (x, h0)
        model = export(module, example, args.batch_first)
        feeds = {"x": x.numpy(), "h0": h0.numpy()}
        if cls is torch.nn.LSTM:
            feeds["c0"] = example[1][1].numpy()
        with torch.no_grad():
            want = module(*example)[0].numpy()
        session = runtime.RuntimeSession(model)
        context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
        got = np.asarray(session.run(context, feeds)[model.graph.output[0].name])
        print(f"{cls.__name__}: max |ours - torch| = {np.max(np.abs(got - want)):.2e}")
        ours, theirs = compare(model, feeds, args.threads, 10)
        print(f"{cls.__name__}: ours {ours * 1e3:.2f} ms, ORT {theirs * 1e3:.2f} ms, ratio {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
