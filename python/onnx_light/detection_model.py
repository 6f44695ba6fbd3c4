"""SSDlite-style detection post-processing built with onnx.helper, shaped like what torchvision's
detection models export: decode box deltas against anchors, softmax class scores, per-class
NonMaxSuppression, then the best `detections` of all classes by TopK. Used by tests and
benchmarks."""

from __future__ import annotations

import numpy as np


def build_ssd_postprocess(anchors=3234, classes=91, max_per_class=100, detections=300, iou_threshold=0.55,
                          score_threshold=0.001, seed=0, opset=18):
    """Inputs: `bbox_regression` [1, anchors, 4] (dx, dy, dw, dh) and `cls_logits`
    [1, anchors, classes] (class 0 is background). Outputs: `boxes` [D, 4] (x1, y1, x2, y2),
    `scores` [D] and `labels` [D] (int64, 1-based), D <= `detections`, best first."""
    from onnx_light._optional import require_onnx

    require_onnx("onnx_light.detection_model")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 1, size=(anchors, 2))
    sizes = rng.uniform(0.05, 0.6, size=(anchors, 2))
    inits = [
        numpy_helper.from_array(centres.astype(np.float32), "anchor_ctr"),
        numpy_helper.from_array(sizes.astype(np.float32), "anchor_wh"),
        numpy_helper.from_array(np.array([0.1, 0.1], np.float32), "ctr_weight"),
        numpy_helper.from_array(np.array([0.2, 0.2], np.float32), "wh_weight"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
        numpy_helper.from_array(np.array([max_per_class], np.int64), "max_out"),
        numpy_helper.from_array(np.array([iou_threshold], np.float32), "iou"),
        numpy_helper.from_array(np.array([score_threshold], np.float32), "score_min"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([classes], np.int64), "classes_end"),
        numpy_helper.from_array(np.array([2], np.int64), "axis2"),
        numpy_helper.from_array(np.array([detections], np.int64), "k_max"),
    ]
    n = helper.make_node
    nodes = [
        # Decode: centre = d_xy * 0.1 * wh + anchor centre, size = exp(d_wh * 0.2) * wh.
        n("Split", ["bbox_regression"], ["d_xy", "d_wh"], axis=2, num_outputs=2),
        n("Mul", ["d_xy", "ctr_weight"], ["d_xy_w"]),
        n("Mul", ["d_xy_w", "anchor_wh"], ["d_xy_s"]),
        n("Add", ["d_xy_s", "anchor_ctr"], ["ctr"]),
        n("Mul", ["d_wh", "wh_weight"], ["d_wh_w"]),
        n("Exp", ["d_wh_w"], ["d_wh_e"]),
        n("Mul", ["d_wh_e", "anchor_wh"], ["wh"]),
        n("Mul", ["wh", "half"], ["half_wh"]),
        n("Sub", ["ctr", "half_wh"], ["xy1"]),
        n("Add", ["ctr", "half_wh"], ["xy2"]),
        n("Concat", ["xy1", "xy2"], ["decoded"], axis=2),
        # Scores: softmax over classes, background dropped, [1, classes - 1, anchors] for NMS.
        n("Softmax", ["cls_logits"], ["probs"], axis=-1),
        n("Slice", ["probs", "one", "classes_end", "axis2"], ["fg_probs"]),
        n("Transpose", ["fg_probs"], ["nms_scores"], perm=[0, 2, 1]),
        n("NonMaxSuppression", ["decoded", "nms_scores", "max_out", "iou", "score_min"], ["selected"]),
        # Scores of the kept boxes, then the best `detections` of them.
        n("GatherND", ["nms_scores", "selected"], ["kept_scores"]),
        n("Shape", ["kept_scores"], ["kept_count"]),
        n("Min", ["kept_count", "k_max"], ["k"]),
        n("TopK", ["kept_scores", "k"], ["scores", "order"], axis=0, largest=1, sorted=1),
        n("Gather", ["selected", "order"], ["best"], axis=0),
        n("Gather", ["best", "one"], ["class_col"], axis=1),
        n("Squeeze", ["class_col", "one"], ["class_index"]),
        n("Add", ["class_index", "one"], ["labels"]),
        n("Gather", ["best", "axis2"], ["box_col"], axis=1),
        n("Squeeze", ["box_col", "one"], ["box_index"]),
        n("Flatten", ["decoded"], ["decoded_flat"], axis=2),
        n("Gather", ["decoded_flat", "box_index"], ["boxes"], axis=0),
    ]
    graph = helper.make_graph(
        nodes, "ssd_postprocess",
        [helper.make_tensor_value_info("bbox_regression", TensorProto.FLOAT, [1, anchors, 4]),
         helper.make_tensor_value_info("cls_logits", TensorProto.FLOAT, [1, anchors, classes])],
        [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, ["detections", 4]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["detections"]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, ["detections"])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def ssd_inputs(anchors=3234, classes=91, seed=1):
    """Feeds for build_ssd_postprocess: small deltas and logits with a few confident classes."""
    rng = np.random.default_rng(seed)
    deltas = (rng.standard_normal((1, anchors, 4)) * 0.5).astype(np.float32)
    logits = rng.standard_normal((1, anchors, classes)).astype(np.float32)
    logits[..., 0] += 2.0  # background usually wins, as in a real detector
    return {"bbox_regression": deltas, "cls_logits": logits}
