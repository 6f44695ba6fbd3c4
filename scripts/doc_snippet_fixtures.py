#!/usr/bin/env python3
"""Writes the model files the documentation's snippets open, for scripts/run_doc_snippets.py.

    python3 scripts/doc_snippet_fixtures.py FOLDER

- model.onnx, big.onnx: x [batch, 4] float32 -> y = x @ W + b (MatMul, Add), opset 23.
- scale.onnx: x [n] -> y by the custom operator example.ops Scale (scale=2), for the custom-kernel
  pages.
- decoder.onnx: onnx_light.decoder_model's decoder, one layer, with its cache inputs and outputs
  renamed to the docs' past_key / past_value and present_key / present_value.
- llama.onnx: the exported Llama decoder of tests/data/decoders (with its external data file).
- export/model.onnx: the exported GPT-2 decoder of tests/data/decoders, whose weights are external
  data beside it.
- worker traces for the trace-merging pages: shard0.json, shard1.json, worker0.json,
  worker1.json, w0.json, w1.json and traces/a.json, traces/b.json, each the Chrome trace of one
  run of model.onnx with events on.

Needs numpy, onnx and the onnx_light package.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnx_light import decoder_model

ROOT = Path(__file__).resolve().parent.parent
DECODERS = ROOT / "tests" / "data" / "decoders"
CACHE_NAMES = {"past_key_0": "past_key", "past_value_0": "past_value",
               "present_key_0": "present_key", "present_value_0": "present_value"}


def small_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "W"),
               numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"], name="matmul"),
         helper.make_node("Add", ["xw", "b"], ["y"], name="add")],
        "doc_model",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", 4])],
        weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def scale_model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Scale", ["x"], ["y"], name="scale", domain="example.ops", scale=2.0)],
        "doc_scale",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["n"])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23),
                                                   helper.make_opsetid("example.ops", 1)])


def decoder() -> onnx.ModelProto:
    model = decoder_model.build_decoder(layers=1, heads=2, head_size=8)
    graph = model.graph
    for value in [*graph.input, *graph.output]:
        value.name = CACHE_NAMES.get(value.name, value.name)
    for node in graph.node:
        node.input[:] = [CACHE_NAMES.get(name, name) for name in node.input]
        node.output[:] = [CACHE_NAMES.get(name, name) for name in node.output]
    return model


def copy_decoder(name: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DECODERS / name, target)
    data = DECODERS / (name + ".data")
    if data.exists():
        shutil.copyfile(data, target.parent / data.name)


def write_worker_traces(out: Path) -> None:
    import numpy as np

    import onnx_light.runtime as runtime
    from onnx_light import trace

    session = runtime.RuntimeSession(str(out / "model.onnx"))
    (out / "traces").mkdir(exist_ok=True)
    for name in ["shard0", "shard1", "worker0", "worker1", "w0", "w1", "traces/a", "traces/b"]:
        context = runtime.RuntimeContext(events_enabled=True)
        session.run(context, {"x": np.ones((2, 4), np.float32)})
        trace.export_chrome_trace(context, out / f"{name}.json")


def main(folder: str) -> int:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    onnx.save(small_model(), out / "model.onnx")
    onnx.save(small_model(), out / "big.onnx")
    onnx.save(scale_model(), out / "scale.onnx")
    onnx.save(decoder(), out / "decoder.onnx")
    copy_decoder("llama-dynamo-opset23.onnx", out / "llama.onnx")
    copy_decoder("gpt2-dynamo-opset23.onnx", out / "export" / "model.onnx")
    write_worker_traces(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
