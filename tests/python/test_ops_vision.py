"""GridSample, NonMaxSuppression and RoiAlign against onnx.reference (ORT where said)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import (assert_close, check_model, expect_error, node_model, random, run_ort, run_ours, run_reference,
                        usage_of)


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


def test_grid_sample_far_coordinates_stay_in_range():
    # Coordinates far outside the image: reflection and border stay inside it, zeros reads 0.
    x = random((1, 2, 3, 4), seed=13)
    grid = np.array([[[[3e38, -3e38], [-1e30, 7e20], [1e7 + 0.25, -1e7]]]], dtype=np.float32)
    for mode in ["linear", "nearest", "cubic"]:
        for padding in ["zeros", "border", "reflection"]:
            out = run_ours(grid_sample_model(x, grid, mode, padding, 0, 22), {"x": x, "grid": grid})[0]
            assert np.isfinite(out).all()
            if padding == "zeros":
                np.testing.assert_array_equal(out, 0)
            else:
                assert np.abs(out).max() <= np.abs(x).max() * 2


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


# ---- MaxRoiPool ---------------------------------------------------------------------------------


def max_roi_pool_model(x, rois, opset=22, **attrs):
    return node_model("MaxRoiPool", {"x": x, "rois": rois}, attrs, opset=opset)


@pytest.mark.parametrize("pooled", [[1, 1], [2, 3], [7, 7]])
@pytest.mark.parametrize("scale", [1.0, 0.5, 0.0625])
def test_max_roi_pool_against_ort(pooled, scale):
    # onnx.reference has no MaxRoiPool: ORT (which implements opset 1).
    x = random((2, 3, 12, 10), seed=1)
    rng = np.random.default_rng(2)
    corners = rng.uniform(-3, 14 / scale, size=(6, 2))
    size = rng.uniform(0, 10 / scale, size=(6, 2))
    rois = np.concatenate([rng.integers(0, 2, size=(6, 1)), corners, corners + size], axis=1).astype(np.float32)
    model = max_roi_pool_model(x, rois, 1, pooled_shape=pooled, spatial_scale=scale)
    check_model(model, {"x": x, "rois": rois}, reference="ort")
    ours22 = run_ours(max_roi_pool_model(x, rois, 22, pooled_shape=pooled, spatial_scale=scale), {"x": x, "rois": rois})
    np.testing.assert_array_equal(ours22[0], run_ours(model, {"x": x, "rois": rois})[0])


def test_max_roi_pool_types_and_errors():
    x = random((1, 2, 6, 6), np.float64, seed=3)
    rois = np.array([[0, 0, 0, 3, 3], [0, 2, 1, 5, 5]], np.float64)
    # ORT has float32 MaxRoiPool only: the float64 result must equal it on float32-exact data.
    x32, r32 = x.astype(np.float32), rois.astype(np.float32)
    ours64 = run_ours(max_roi_pool_model(x32.astype(np.float64), rois, 1, pooled_shape=[2, 2]),
                      {"x": x32.astype(np.float64), "rois": rois})[0]
    expected = run_ort(max_roi_pool_model(x32, r32, 1, pooled_shape=[2, 2]), {"x": x32, "rois": r32})[0]
    assert ours64.dtype == np.float64
    np.testing.assert_array_equal(ours64.astype(np.float32), expected)
    xh, rh = x.astype(np.float16), rois.astype(np.float16)
    out = run_ours(max_roi_pool_model(xh, rh, pooled_shape=[2, 2]), {"x": xh, "rois": rh})[0]
    assert out.dtype == np.float16
    expected = run_ours(max_roi_pool_model(xh.astype(np.float32), rh.astype(np.float32), pooled_shape=[2, 2]),
                        {"x": xh.astype(np.float32), "rois": rh.astype(np.float32)})[0]
    np.testing.assert_array_equal(out.astype(np.float32), expected)
    bad = np.array([[1, 0, 0, 3, 3]], np.float64)
    expect_error(max_roi_pool_model(x, bad, pooled_shape=[2, 2]), {"x": x, "rois": bad}, "rois[0]", "batch 1")
    expect_error(max_roi_pool_model(x, rois, pooled_shape=[2]), {"x": x, "rois": rois}, "pooled_shape")


def test_roi_align_large_region_in_chunks_matches_ort():
    # 7 x 7 bins of 200 x 200 samples each: more than one chunk of samples (2^20), so the bins are
    # sampled a chunk at a time. onnx.reference would take minutes here: ORT, output_half_pixel.
    x = random((1, 2, 60, 60), seed=14)
    rois = np.array([[0, 0, 1400, 1400], [-5, 3, 40, 50]], np.float32)
    idx = np.zeros(2, np.int64)
    model = roi_model(x, rois, idx, 16, output_height=7, output_width=7,
                      coordinate_transformation_mode="output_half_pixel")
    check_model(model, {"x": x, "rois": rois, "batch_indices": idx}, reference="ort", rtol=1e-4, atol=1e-5)
