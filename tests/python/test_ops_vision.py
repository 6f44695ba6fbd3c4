"""GridSample, NonMaxSuppression and RoiAlign against onnx.reference (ORT where said)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import assert_close, check_model, node_model, random, run_ours, run_reference


def usage_of(model, feeds):
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    run_ours(model, feeds, context=ctx)
    return ctx.get_kernel_usage()


def expect_error(model, feeds, *needles):
    with pytest.raises(Exception) as info:
        run_ours(model, feeds)
    for needle in needles:
        assert needle in str(info.value), str(info.value)


# ---- GridSample -----------------------------------------------------------------------------------

OLD_MODE = {"linear": "bilinear", "cubic": "bicubic", "nearest": "nearest"}


def grid_sample_model(x, grid, mode, padding, align, opset):
    attrs = {"mode": mode if opset >= 20 else OLD_MODE[mode], "padding_mode": padding, "align_corners": align}
    return node_model("GridSample", {"x": x, "grid": grid}, attrs, opset=opset)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("opset", [16, 20, 22])
def test_grid_sample_2d(mode, padding, align, opset):
    x = random((2, 3, 4, 5), seed=1)
    # Beyond [-1, 1] on purpose: every padding rule and several reflections are exercised.
    grid = random((2, 3, 6, 2), low=-2.7, high=2.7, seed=2)
    ours = run_ours(grid_sample_model(x, grid, mode, padding, align, opset), {"x": x, "grid": grid})[0]
    expected = run_reference(grid_sample_model(x, grid, mode, padding, align, 20), {"x": x, "grid": grid})[0]
    assert_close(ours, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_3d_and_1d(mode, padding, align):
    x = random((1, 2, 3, 4, 5), seed=3)
    grid = random((1, 2, 3, 2, 3), low=-1.6, high=1.6, seed=4)
    check_model(grid_sample_model(x, grid, mode, padding, align, 22), {"x": x, "grid": grid}, rtol=1e-4, atol=1e-5)
    x1 = random((2, 2, 7), seed=5)
    g1 = random((2, 5, 1), low=-1.6, high=1.6, seed=6)
    check_model(grid_sample_model(x1, g1, mode, padding, align, 22), {"x": x1, "grid": g1}, rtol=1e-4, atol=1e-5)


def test_grid_sample_nearest_ties_round_half_to_even():
    # x = ((g + 1) * 4 - 1) / 2: g = -0.5 -> 0.5 (rounds to 0), g = 0.0 -> 1.5 (rounds to 2).
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    grid = np.array([[[[-0.5, 0.0], [0.0, 0.0], [0.5, 0.0]]]], dtype=np.float32)
    out = check_model(grid_sample_model(x, grid, "nearest", "zeros", 0, 22), {"x": x, "grid": grid})[0]
    np.testing.assert_array_equal(out.ravel(), [0.0, 2.0, 2.0])


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_grid_sample_types(dtype):
    x = random((1, 2, 4, 4), dtype, seed=7)
    grid = random((1, 3, 3, 2), dtype, low=-1.2, high=1.2, seed=8)
    model = grid_sample_model(x, grid, "linear", "border", 0, 22)
    # The reference rounds denormalised coordinates to float32 even for a double grid.
    tol = 1e-2 if dtype == np.float16 else 1e-6
    check_model(model, {"x": x, "grid": grid}, rtol=tol, atol=tol)
    assert any(k.startswith("GridSample/") for k in usage_of(model, {"x": x, "grid": grid}))


def test_grid_sample_mixed_grid_type_keeps_x_type():
    x = random((1, 1, 3, 3), seed=9)
    grid = random((1, 2, 2, 2), np.float16, low=-1, high=1, seed=10)
    out = run_ours(grid_sample_model(x, grid, "linear", "zeros", 1, 22), {"x": x, "grid": grid})[0]
    expected = run_reference(grid_sample_model(x, grid.astype(np.float32), "linear", "zeros", 1, 22),
                             {"x": x, "grid": grid.astype(np.float32)})[0]
    assert out.dtype == np.float32
    assert_close(out, expected, rtol=1e-5, atol=1e-6)


def test_grid_sample_non_finite_coordinates_give_nan():
    # Our definition (docs/semantics.md): a NaN or infinite grid coordinate gives NaN.
    x = np.ones((1, 1, 2, 2), np.float32)
    grid = np.array([[[[np.nan, 0.0], [np.inf, 0.0], [0.0, 0.0]]]], dtype=np.float32)
    for padding in ["zeros", "border", "reflection"]:
        out = run_ours(grid_sample_model(x, grid, "linear", padding, 0, 22), {"x": x, "grid": grid})[0].ravel()
        assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] == 1.0


def test_grid_sample_one_pixel_reflection_align_corners():
    # A one-pixel axis with align_corners=1 has a zero-width reflection range: every coordinate
    # maps to the pixel (our definition; the reference divides by zero).
    x = np.full((1, 1, 1, 1), 3.0, np.float32)
    grid = np.array([[[[0.7, -2.0], [5.0, 1.0]]]], dtype=np.float32)
    out = run_ours(grid_sample_model(x, grid, "cubic", "reflection", 1, 22), {"x": x, "grid": grid})[0]
    coeffs_sum = 1.0  # the cubic weights sum to one; every tap reads the single pixel
    np.testing.assert_allclose(out.ravel(), [3.0 * coeffs_sum] * 2, rtol=1e-6)


def test_grid_sample_errors():
    x = random((1, 1, 3, 3))
    grid = random((1, 2, 2, 3))
    expect_error(grid_sample_model(x, grid, "linear", "zeros", 0, 22), {"x": x, "grid": grid}, "grid", "[1, 2, 2, 3]")
    x5 = random((1, 1, 2, 3, 3))
    g5 = random((1, 2, 2, 2, 3))
    expect_error(grid_sample_model(x5, g5, "linear", "zeros", 0, 16), {"x": x5, "grid": g5}, "rank 4")
    bad = node_model("GridSample", {"x": x, "grid": random((1, 2, 2, 2))}, {"mode": "linear"}, opset=16)
    expect_error(bad, {"x": x, "grid": random((1, 2, 2, 2))}, "mode", "'bilinear'", "'linear'")
    bad = node_model("GridSample", {"x": x, "grid": random((1, 2, 2, 2))}, {"padding_mode": "wrap"}, opset=22)
    expect_error(bad, {"x": x, "grid": random((1, 2, 2, 2))}, "padding_mode", "'wrap'")
    bad = node_model("GridSample", {"x": x, "grid": random((1, 2, 2, 2))}, {"align_corners": 2}, opset=22)
    expect_error(bad, {"x": x, "grid": random((1, 2, 2, 2))}, "align_corners", "2")


def test_grid_sample_empty_output():
    x = random((1, 2, 3, 3))
    grid = np.zeros((1, 0, 4, 2), np.float32)
    out = run_ours(grid_sample_model(x, grid, "linear", "zeros", 0, 22), {"x": x, "grid": grid})[0]
    assert out.shape == (1, 2, 0, 4)


def test_grid_sample_threaded_matches_single():
    x = random((2, 4, 9, 11), seed=11)
    grid = random((2, 17, 19, 2), low=-1.1, high=1.1, seed=12)
    model = grid_sample_model(x, grid, "cubic", "reflection", 0, 22)
    single = run_ours(model, {"x": x, "grid": grid}, options=runtime.RuntimeSessionOptions(num_threads=1))[0]
    options = runtime.RuntimeSessionOptions(num_threads=2)
    threaded = run_ours(model, {"x": x, "grid": grid}, options=options)[0]
    np.testing.assert_array_equal(single, threaded)
    check_model(model, {"x": x, "grid": grid}, rtol=1e-4, atol=1e-5)


# ---- NonMaxSuppression --------------------------------------------------------------------------


def nms_model(boxes, scores, max_out=None, iou=None, score=None, center=0, opset=11):
    inputs = {"boxes": boxes, "scores": scores}
    names = ["boxes", "scores"]
    extra = {}
    for name, value, dtype in [("max_out", max_out, np.int64), ("iou", iou, np.float32), ("score", score, np.float32)]:
        if value is None:
            names.append("")
        else:
            names.append(name)
            extra[name] = np.array([value], dtype=dtype)
    while names and names[-1] == "":
        names.pop()
    inputs.update(extra)
    from node_check import make_model

    node = helper.make_node("NonMaxSuppression", names, ["y"], center_point_box=center)
    return make_model([node], inputs, ["y"], opset=opset), inputs


def random_boxes(batches, n, seed, center=False):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 10, size=(batches, n, 2))
    wh = rng.uniform(0.5, 4, size=(batches, n, 2))
    if center:
        return np.concatenate([xy, wh], axis=2).astype(np.float32)
    # [y1, x1, y2, x2], with some boxes given by the other diagonal.
    boxes = np.concatenate([xy, xy + wh], axis=2)
    flip = rng.random((batches, n)) < 0.3
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    return boxes.astype(np.float32)


@pytest.mark.parametrize("center", [0, 1])
@pytest.mark.parametrize("max_out", [None, 0, 3, 100, -1])
@pytest.mark.parametrize("iou", [None, 0.0, 0.3, 1.0])
@pytest.mark.parametrize("score", [None, 0.4])
def test_nms_against_reference(center, max_out, iou, score):
    boxes = random_boxes(2, 30, seed=1, center=bool(center))
    scores = np.random.default_rng(2).random((2, 3, 30)).astype(np.float32)
    scores[0, 1, 5] = scores[0, 1, 6]  # a tie: lower index first
    model, feeds = nms_model(boxes, scores, max_out, iou, score, center)
    ours = run_ours(model, feeds)[0]
    # onnx.reference cannot run with max_output_boxes_per_class or iou_threshold omitted: give it
    # their defaults (0 and 0.0) explicitly, nor with a negative maximum (which it clamps to 0).
    ref_model, ref_feeds = nms_model(boxes, scores, 0 if max_out is None else max(max_out, 0), 0.0 if iou is None else iou,
                                     score, center)
    expected = run_reference(ref_model, ref_feeds)[0]
    if expected.size == 0:
        expected = expected.reshape(0, 3).astype(np.int64)
    assert_close(ours, expected)
    if max_out in (None, 0, -1):
        assert ours.shape == (0, 3)


@pytest.mark.parametrize("opset", [10, 11])
def test_nms_opsets(opset):
    boxes = random_boxes(1, 20, seed=3)
    scores = np.random.default_rng(4).random((1, 2, 20)).astype(np.float32)
    model, feeds = nms_model(boxes, scores, 5, 0.5, 0.1, opset=opset)
    out = check_model(model, feeds)[0]
    assert out.dtype == np.int64 and out.shape[1] == 3


def test_nms_large_threaded_matches_reference_and_single_thread():
    boxes = random_boxes(1, 400, seed=5)
    scores = np.random.default_rng(6).random((1, 8, 400)).astype(np.float32)
    model, feeds = nms_model(boxes, scores, 50, 0.45, 0.05)
    options = runtime.RuntimeSessionOptions(num_threads=2)
    threaded = run_ours(model, feeds, options=options)[0]
    expected = run_reference(model, feeds)[0]
    np.testing.assert_array_equal(threaded, expected)


def test_nms_nan_scores_are_never_selected():
    boxes = random_boxes(1, 4, seed=7)
    scores = np.array([[[np.nan, 0.5, np.nan, 0.9]]], np.float32)
    model, feeds = nms_model(boxes, scores, 10, 1.0)
    out = run_ours(model, feeds)[0]
    np.testing.assert_array_equal(out, [[0, 0, 3], [0, 0, 1]])


def test_nms_errors():
    boxes = random_boxes(1, 4, seed=8)
    scores = np.ones((1, 1, 5), np.float32)
    model, feeds = nms_model(boxes, scores, 1)
    expect_error(model, feeds, "scores", "[1, 1, 5]")
    model, feeds = nms_model(boxes, np.ones((1, 1, 4), np.float32), 1, 1.5)
    expect_error(model, feeds, "iou_threshold", "1.5")
    model, feeds = nms_model(boxes[:, :, :3].copy(), np.ones((1, 1, 4), np.float32), 1)
    expect_error(model, feeds, "boxes", "[1, 4, 3]")


def test_nms_empty():
    boxes = np.zeros((2, 0, 4), np.float32)
    scores = np.zeros((2, 3, 0), np.float32)
    model, feeds = nms_model(boxes, scores, 10)
    out = run_ours(model, feeds)[0]
    assert out.shape == (0, 3) and out.dtype == np.int64
    assert "NonMaxSuppression/float32/greedy-corners" in usage_of(model, feeds)


# ---- RoiAlign -----------------------------------------------------------------------------------


def roi_model(x, rois, idx, opset=22, **attrs):
    return node_model("RoiAlign", {"x": x, "rois": rois, "batch_indices": idx}, attrs, opset=opset)


def random_rois(n, size, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, size, size=(n, 2))
    b = a + rng.uniform(0, size / 2, size=(n, 2))
    return np.concatenate([a, b], axis=1).astype(np.float32)


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("ctm", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
@pytest.mark.parametrize("opset", [16, 22])
def test_roi_align(mode, ctm, sampling_ratio, opset):
    x = random((2, 3, 10, 12), seed=1)
    rois = random_rois(5, 10, seed=2)
    idx = np.array([0, 1, 1, 0, 1], np.int64)
    model = roi_model(x, rois, idx, opset, mode=mode, coordinate_transformation_mode=ctm, output_height=3,
                      output_width=4, sampling_ratio=sampling_ratio, spatial_scale=0.9)
    check_model(model, {"x": x, "rois": rois, "batch_indices": idx}, rtol=1e-4, atol=1e-5)


def test_roi_align_opset10_is_output_half_pixel():
    x = random((1, 2, 8, 8), seed=3)
    rois = random_rois(4, 8, seed=4)
    idx = np.zeros(4, np.int64)
    feeds = {"x": x, "rois": rois, "batch_indices": idx}
    ours = run_ours(roi_model(x, rois, idx, 10, output_height=2, output_width=2), feeds)[0]
    expected = run_reference(roi_model(x, rois, idx, 16, output_height=2, output_width=2,
                                       coordinate_transformation_mode="output_half_pixel"), feeds)[0]
    assert_close(ours, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_roi_align_types(dtype):
    x = random((1, 2, 6, 6), dtype, seed=5)
    rois = random_rois(3, 6, seed=6).astype(dtype)
    idx = np.zeros(3, np.int64)
    tol = 2e-2 if dtype == np.float16 else 1e-9
    check_model(roi_model(x, rois, idx, output_height=2, output_width=3), {"x": x, "rois": rois, "batch_indices": idx},
                rtol=tol, atol=tol)


def test_roi_align_errors():
    x = random((1, 2, 6, 6))
    rois = random_rois(2, 6, seed=7)
    idx = np.array([0, 1], np.int64)
    expect_error(roi_model(x, rois, idx), {"x": x, "rois": rois, "batch_indices": idx}, "batch_indices[1]", "[0, 1)")
    idx = np.zeros(3, np.int64)
    expect_error(roi_model(x, rois, idx), {"x": x, "rois": rois, "batch_indices": idx}, "batch_indices", "[2]")
    huge = np.array([[0, 0, 1e30, 1e30]], np.float32)
    idx = np.zeros(1, np.int64)
    expect_error(roi_model(x, huge, idx), {"x": x, "rois": huge, "batch_indices": idx}, "sampling_ratio")
