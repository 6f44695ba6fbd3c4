"""Signal operators (DFT, STFT, MelWeightMatrix), onnx-light runtime against ONNX Runtime in one process.

    python benchmarks/bench_signal.py [--threads 1] [--cases dft,stft,mel]

Prints a Markdown table of median wall times per run (ms) and the ratio ours / ORT (below 1 is
faster). Uses the alternating-block timing of bench_vs_ort.py.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_vs_ort import run_case_table  # noqa: E402


def one_node_model(op, inputs, attrs, opset, constants=None):
    """`inputs`: name -> array (graph inputs); `constants`: name -> array (initializers, after)."""
    constants = constants or {}
    node = helper.make_node(op, list(inputs) + list(constants), ["y"], **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items()]
    inits = [numpy_helper.from_array(a, n) for n, a in constants.items()]
    graph = helper.make_graph([node], op, graph_inputs, [helper.make_value_info("y", onnx.TypeProto())],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def dft_cases(rng):
    # Batched transforms along axis 1: powers of two, then lengths ORT has no radix-2 plan for.
    for batch, n, channels, onesided in [(256, 512, 1, 1), (64, 4096, 2, 0), (256, 400, 1, 1),
                                         (256, 480, 2, 0), (64, 1009, 2, 0)]:
        x = rng.standard_normal((batch, n, channels)).astype(np.float32)
        kind = "real, onesided" if channels == 1 else "complex"
        model = one_node_model("DFT", {"x": x}, {"onesided": onesided}, 20,
                               constants={"n": np.array(n, np.int64), "axis": np.array(1, np.int64)})
        yield f"DFT {batch} x {n} {kind}", model, {"x": x}


def stft_case(rng):
    # The Whisper front end: 1 s at 16 kHz, 400-sample periodic Hann window, hop 160.
    signal = rng.standard_normal((1, 16000, 1)).astype(np.float32)
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)).astype(np.float32)
    model = one_node_model("STFT", {"signal": signal}, {"onesided": 1}, 17,
                           constants={"step": np.array(160, np.int64), "window": window})
    return "STFT 16000 samples, Hann 400, hop 160", model, {"signal": signal}


def mel_case(rng):
    model = one_node_model("MelWeightMatrix", {}, {}, 17, constants={
        "bins": np.array(80, np.int64), "dft": np.array(400, np.int64), "rate": np.array(16000, np.int64),
        "lower": np.array(0.0, np.float32), "upper": np.array(8000.0, np.float32)})
    return "MelWeightMatrix 80 bins, dft 400", model, {}


def main():
    run_case_table(__doc__.splitlines()[0], {"dft": dft_cases, "stft": stft_case, "mel": mel_case}, digits=3)


if __name__ == "__main__":
    main()
