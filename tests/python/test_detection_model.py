"""The SSDlite-style post-processing graph (decode, softmax, per-class NonMaxSuppression, TopK)
end to end against onnx.reference and ONNX Runtime."""

from __future__ import annotations

import numpy as np
import pytest

import onnx_light.runtime as runtime
from node_check import assert_close, run_ort, run_ours, run_reference
from onnx_light.detection_model import build_ssd_postprocess, ssd_inputs


@pytest.mark.parametrize("reference", ["onnx", "ort"])
def test_ssd_postprocess_matches(reference):
    model = build_ssd_postprocess(anchors=200, classes=6, max_per_class=20, detections=50)
    feeds = ssd_inputs(anchors=200, classes=6)
    ours = run_ours(model, feeds)
    expected = run_reference(model, feeds) if reference == "onnx" else run_ort(model, feeds)
    assert ours[0].shape[0] == 50  # enough boxes survive for the TopK to cut
    for a, e, name in zip(ours, expected, ["boxes", "scores", "labels"]):
        assert_close(a, e, rtol=1e-5, atol=1e-6, name=name)


def test_ssd_postprocess_threads_and_usage():
    model = build_ssd_postprocess(anchors=500, classes=11)
    feeds = ssd_inputs(anchors=500, classes=11)
    single = run_ours(model, feeds, options=runtime.RuntimeSessionOptions(num_threads=1))
    threaded = run_ours(model, feeds, options=runtime.RuntimeSessionOptions(num_threads=2))
    for a, b in zip(single, threaded):
        np.testing.assert_array_equal(a, b)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    run_ours(model, feeds, context=ctx)
    assert "NonMaxSuppression/float32/greedy-corners" in ctx.get_kernel_usage()
