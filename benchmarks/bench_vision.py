"""Detection and vision operators, onnx-light runtime against ONNX Runtime in one process.

    python benchmarks/bench_vision.py [--threads 1] [--cases nms,ssd,roialign,gridsample,lrn,deformconv]

Prints a Markdown table of median wall times per run (ms) and the ratio ours / ORT (below 1 is
faster). Uses the alternating-block timing of bench_vs_ort.py.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_vs_ort import run_case_table  # noqa: E402

# The opsets below are the newest ONNX Runtime 1.32 implements for each operator.
OPSET = 22


def one_node_model(op, inputs, attrs, opset=OPSET):
    """`inputs`: name -> array (graph inputs, typed from the arrays)."""
    node = helper.make_node(op, list(inputs), ["y"], **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items()]
    graph = helper.make_graph([node], op, graph_inputs, [helper.make_value_info("y", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def nms_case(rng):
    # SSD-style post-processing: 5000 anchors, 90 classes, sparse scores.
    xy = rng.uniform(0, 300, size=(1, 5000, 2))
    wh = rng.uniform(5, 80, size=(1, 5000, 2))
    boxes = np.concatenate([xy, xy + wh], axis=2).astype(np.float32)
    scores = (rng.random((1, 90, 5000)) ** 4).astype(np.float32)
    feeds = {"boxes": boxes, "scores": scores, "max_out": np.array([100], np.int64),
             "iou": np.array([0.5], np.float32), "score": np.array([0.05], np.float32)}
    return "NonMaxSuppression 5000 boxes x 90 classes", one_node_model("NonMaxSuppression", feeds, {}, 11), feeds


def roialign_case(rng):
    # Faster R-CNN box head: 1000 proposals on a stride-16 feature map, 7x7 bins.
    x = rng.standard_normal((1, 256, 50, 68)).astype(np.float32)
    a = rng.uniform(0, 700, size=(1000, 2))
    rois = np.concatenate([a, a + rng.uniform(16, 300, size=(1000, 2))], axis=1).astype(np.float32)
    feeds = {"x": x, "rois": rois, "idx": np.zeros(1000, np.int64)}
    attrs = {"output_height": 7, "output_width": 7, "sampling_ratio": 2, "spatial_scale": 1 / 16}
    return "RoiAlign 1000 rois, 256x50x68, 7x7", one_node_model("RoiAlign", feeds, attrs, 16), feeds


def gridsample_cases(rng):
    x = rng.standard_normal((2, 32, 64, 64)).astype(np.float32)
    grid = rng.uniform(-1.05, 1.05, size=(2, 64, 64, 2)).astype(np.float32)
    feeds = {"x": x, "grid": grid}
    for mode, padding in [("linear", "zeros"), ("nearest", "border"), ("cubic", "reflection")]:
        attrs = {"mode": mode, "padding_mode": padding}
        yield f"GridSample {mode}/{padding} 2x32x64x64", one_node_model("GridSample", feeds, attrs, 20), feeds


def lrn_case(rng):
    x = rng.standard_normal((1, 96, 55, 55)).astype(np.float32)
    return "LRN size 5, 1x96x55x55", one_node_model("LRN", {"x": x}, {"size": 5}, 13), {"x": x}


def ssd_case(rng):
    from onnx_light.detection_model import build_ssd_postprocess, ssd_inputs

    return ("SSDlite post-processing 3234 anchors x 91 classes", build_ssd_postprocess(),
            ssd_inputs())


def deformconv_case(rng):
    x = rng.standard_normal((1, 64, 32, 32)).astype(np.float32)
    w = (rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32)
    offset = rng.uniform(-2, 2, size=(1, 18, 32, 32)).astype(np.float32)
    feeds = {"x": x, "w": w, "offset": offset}
    return "DeformConv 64->64 3x3, 32x32", one_node_model("DeformConv", feeds, {"pads": [1, 1, 1, 1]}, 19), feeds


def main():
    run_case_table(__doc__.splitlines()[0], {"nms": nms_case, "ssd": ssd_case, "roialign": roialign_case, "gridsample": gridsample_cases, "lrn": lrn_case, "deformconv": deformconv_case}, digits=2)


if __name__ == "__main__":
    main()
