"""LpPool, GlobalLpPool, LpNormalization, LRN, Col2Im, MaxUnpool and DeformConv against
onnx.reference, or ONNX Runtime where the reference computes something else (said per test)."""

from __future__ import annotations

import numpy as np
import pytest

import onnx_light.runtime as runtime
from node_check import (assert_close, check_model, check_node, expect_error, node_model,
                        outputs_with_and_without_avx512, random, run_ort, run_ours, run_reference, usage_of)


# ---- LpPool / GlobalLpPool ----------------------------------------------------------------------


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape,kernel,strides", [((2, 3, 9), [3], [2]), ((1, 2, 6, 7), [2, 3], [1, 2]),
                                                  ((1, 2, 4, 5, 6), [2, 2, 3], [2, 1, 1])])
def test_lp_pool_no_padding(p, shape, kernel, strides):
    # Without padding every window is full, where onnx.reference is right.
    x = random(shape, seed=1)
    check_node("LpPool", {"x": x}, {"kernel_shape": kernel, "strides": strides, "p": p}, opset=22, rtol=1e-4)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 2], "pads": [1, 0, 2, 1], "strides": [2, 2]},
    {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"},
    {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"},
    {"kernel_shape": [2, 2], "auto_pad": "VALID", "strides": [2, 1]},
    {"kernel_shape": [2, 2], "dilations": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "dilations": [1, 2]},
])
@pytest.mark.parametrize("p", [2, 4])
def test_lp_pool_padding_against_ort(attrs, p):
    # onnx.reference computes LpPool as AveragePool(|x|^p) * kernel size, which is not the sum of
    # a window that overlaps padding; the backend cases and ORT sum the window. Compare with ORT.
    x = random((1, 2, 7, 8), seed=2)
    check_node("LpPool", {"x": x}, {**attrs, "p": p}, opset=18, reference="ort", rtol=1e-4, atol=1e-5)


def test_lp_pool_opset1_float_p():
    x = random((1, 2, 5, 5), seed=3)
    ours = run_ours(node_model("LpPool", {"x": x}, {"kernel_shape": [2, 2], "p": 3.0}, opset=1), {"x": x})[0]
    expected = run_reference(node_model("LpPool", {"x": x}, {"kernel_shape": [2, 2], "p": 3}, opset=11), {"x": x})[0]
    assert_close(ours, expected, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_lp_pool_types(dtype):
    x = random((1, 2, 5, 5), dtype, seed=4)
    tol = 1e-2 if dtype == np.float16 else 1e-9
    check_node("LpPool", {"x": x}, {"kernel_shape": [2, 2]}, opset=22, rtol=tol, atol=tol)


def global_lp_pool(x, p):
    axes = tuple(range(2, x.ndim))
    return (np.sum(np.abs(x.astype(np.float64)) ** p, axis=axes, keepdims=True) ** (1.0 / p)).astype(x.dtype)


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (1, 2, 4, 5), (1, 2, 2, 3, 4)])
def test_global_lp_pool(p, shape):
    # onnx.reference has no GlobalLpPool: the formula in NumPy, and ORT (which stops at opset 2).
    x = random(shape, seed=5)
    ours = run_ours(node_model("GlobalLpPool", {"x": x}, {"p": p}, opset=22), {"x": x})[0]
    assert_close(ours, global_lp_pool(x, p), rtol=1e-5)
    if x.ndim >= 3:  # ORT refuses inputs without spatial axes
        check_node("GlobalLpPool", {"x": x}, {"p": p}, opset=2, reference="ort", rtol=1e-5)


def test_global_lp_pool_opset1_and_half():
    x = random((1, 3, 4, 4), seed=6)
    ours = run_ours(node_model("GlobalLpPool", {"x": x}, {"p": 3.0}, opset=1), {"x": x})[0]
    assert_close(ours, global_lp_pool(x, 3), rtol=1e-5)
    xh = x.astype(np.float16)
    ours = run_ours(node_model("GlobalLpPool", {"x": xh}, {}, opset=22), {"x": xh})[0]
    assert_close(ours, global_lp_pool(xh, 2), rtol=1e-2, atol=1e-2)


def test_lp_pool_errors():
    x = random((1, 2, 5, 5))
    expect_error(node_model("LpPool", {"x": x}, {"kernel_shape": [2, 2], "p": 0}, opset=18), {"x": x}, "p", "0")
    expect_error(node_model("LpPool", {"x": x}, {"kernel_shape": [2]}, opset=18), {"x": x}, "rank 3")
    expect_error(node_model("LpPool", {"x": x}, {}, opset=18), {"x": x}, "kernel_shape")


# ---- LpNormalization ----------------------------------------------------------------------------


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_lp_normalization_positive(p, axis):
    # onnx.reference computes the 1-norm without abs; on positive inputs it is right.
    x = random((3, 4, 5), low=0.1, high=2.0, seed=1)
    x[1, :, 2] = 0  # a zero norm along axis 1 gives 0, not NaN
    check_node("LpNormalization", {"x": x}, {"p": p, "axis": axis}, opset=22)


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_signed_against_ort(p):
    # The 1-norm sums |x| (the backend cases and ORT); onnx.reference sums x.
    x = random((4, 6), seed=2)
    check_node("LpNormalization", {"x": x}, {"p": p, "axis": 1}, opset=1, reference="ort")


def test_lp_normalization_types_and_errors():
    x = random((2, 3), np.float64, low=0.1, seed=3)
    check_node("LpNormalization", {"x": x}, {}, opset=1)
    xh = random((2, 3), np.float16, low=0.1, seed=3)
    check_node("LpNormalization", {"x": xh}, {}, opset=22, rtol=1e-2, atol=1e-3)
    expect_error(node_model("LpNormalization", {"x": x}, {"p": 3}, opset=22), {"x": x}, "p must be 1 or 2", "3")
    expect_error(node_model("LpNormalization", {"x": x}, {"axis": 2}, opset=22), {"x": x}, "axis")


# ---- LRN ----------------------------------------------------------------------------------------


def lrn(x, size, alpha=0.0001, beta=0.75, bias=1.0):
    """The schema's formula: channels [c - floor((size-1)/2), c + ceil((size-1)/2)]."""
    sq = np.zeros_like(x, dtype=np.float64)
    channels = x.shape[1]
    for c in range(channels):
        lo = max(0, c - (size - 1) // 2)
        hi = min(channels - 1, c + (size - 1) - (size - 1) // 2)
        sq[:, c] = np.sum(x[:, lo:hi + 1].astype(np.float64) ** 2, axis=1)
    return (x / (bias + alpha / size * sq) ** beta).astype(x.dtype)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
@pytest.mark.parametrize("attrs", [{}, {"alpha": 0.002, "beta": 0.5, "bias": 2.0}])
def test_lrn(size, attrs):
    # onnx.reference loops over the batch axis where it means channels (wrong when N != C): the
    # schema's formula in NumPy, and ORT for odd sizes (it refuses even ones).
    x = random((2, 5, 3, 4), seed=4)
    ours = run_ours(node_model("LRN", {"x": x}, {"size": size, **attrs}, opset=13), {"x": x})[0]
    assert_close(ours, lrn(x, size, **attrs), rtol=1e-5)
    if size % 2 == 1:
        check_node("LRN", {"x": x}, {"size": size, **attrs}, opset=13, reference="ort", rtol=1e-5)


def test_lrn_matches_reference_when_batch_equals_channels():
    x = random((3, 3, 2, 2), seed=5)
    check_node("LRN", {"x": x}, {"size": 3}, opset=1, rtol=1e-5)


def test_lrn_types_and_errors():
    x = random((1, 4, 3, 3), np.float64, seed=6)
    assert_close(run_ours(node_model("LRN", {"x": x}, {"size": 3}, opset=13), {"x": x})[0], lrn(x, 3), rtol=1e-12)
    xh = x.astype(np.float16)
    assert_close(run_ours(node_model("LRN", {"x": xh}, {"size": 3}, opset=13), {"x": xh})[0], lrn(xh, 3),
                 rtol=1e-3, atol=1e-3)
    expect_error(node_model("LRN", {"x": x}, {"size": 0}, opset=13), {"x": x}, "size", "0")
    expect_error(node_model("LRN", {"x": x}, {}, opset=13), {"x": x}, "size")


# ---- Col2Im -------------------------------------------------------------------------------------


@pytest.mark.parametrize("image,block,attrs", [
    ([5, 5], [1, 5], {}),
    ([5, 5], [2, 2], {}),
    ([6, 7], [2, 3], {"strides": [2, 1], "pads": [1, 0, 1, 2], "dilations": [1, 2]}),
    ([4, 5, 6], [2, 2, 3], {"strides": [1, 2, 1]}),
    ([9], [3], {"strides": [2], "pads": [1, 1]}),
])
def test_col2im(image, block, attrs):
    r = len(image)
    strides = attrs.get("strides", [1] * r)
    pads = attrs.get("pads", [0] * 2 * r)
    dil = attrs.get("dilations", [1] * r)
    blocks = 1
    for i in range(r):
        blocks *= (image[i] + pads[i] + pads[i + r] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1
    x = random((2, 3 * int(np.prod(block)), blocks), seed=1)
    inputs = {"x": x, "image_shape": np.array(image, np.int64), "block_shape": np.array(block, np.int64)}
    model = node_model("Col2Im", inputs, attrs, opset=18)
    if r == 2:
        check_model(model, inputs, rtol=1e-5)
    else:
        # onnx.reference's Col2Im is 2-D only in shape checks: ORT for 1-D and 3-D.
        check_model(model, inputs, reference="ort", rtol=1e-5)


def test_col2im_errors():
    x = random((1, 4, 15))
    inputs = {"x": x, "image_shape": np.array([5, 5], np.int64), "block_shape": np.array([2, 2], np.int64)}
    expect_error(node_model("Col2Im", inputs, {}, opset=18), inputs, "16", "15")
    inputs["block_shape"] = np.array([3, 2], np.int64)
    expect_error(node_model("Col2Im", inputs, {}, opset=18), inputs, "multiple", "6")


# ---- MaxUnpool ----------------------------------------------------------------------------------


def maxpool_indices(x, kernel, strides, pads=None):
    attrs = {"kernel_shape": kernel, "strides": strides}
    if pads:
        attrs["pads"] = pads
    model = node_model("MaxPool", {"x": x}, attrs, n_outputs=2, opset=12)
    return run_reference(model, {"x": x})


# Input shapes the unpooled shape reproduces (MaxPool's indices address the input).
@pytest.mark.parametrize("shape,kernel,strides,pads", [((2, 3, 6, 8), [2, 2], [2, 2], None),
                                                       ((2, 3, 7, 7), [3, 3], [2, 2], [1, 1, 1, 1]),
                                                       ((2, 3, 8), [2], [2], None)])
def test_max_unpool_roundtrip(shape, kernel, strides, pads):
    x = random(shape, seed=2)
    pooled, idx = maxpool_indices(x, kernel, strides, pads)
    attrs = {"kernel_shape": kernel, "strides": strides}
    if pads:
        attrs["pads"] = pads
    check_node("MaxUnpool", {"x": pooled, "i": idx}, attrs, opset=22)


def test_max_unpool_output_shape_and_opset9():
    x = np.array([[[[5, 6], [7, 8]]]], np.float32)
    idx = np.array([[[[5, 7], [13, 15]]]], np.int64)
    shape = np.array([1, 1, 5, 5], np.int64)
    out = check_node("MaxUnpool", {"x": x, "i": idx, "shape": shape}, {"kernel_shape": [2, 2], "strides": [2, 2]},
                     opset=11)[0]
    assert out.shape == (1, 1, 5, 5) and out[0, 0, 1, 1] == 5 and out[0, 0, 3, 3] == 8
    check_node("MaxUnpool", {"x": x, "i": idx}, {"kernel_shape": [2, 2], "strides": [2, 2]}, opset=9)


def test_max_unpool_errors():
    x = np.ones((1, 1, 2, 2), np.float32)
    idx = np.array([[[[5, 7], [13, 16]]]], np.int64)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    expect_error(node_model("MaxUnpool", {"x": x, "i": idx}, attrs, opset=22), {"x": x, "i": idx}, "16", "[1, 1, 4, 4]")
    idx = np.zeros((1, 1, 2, 2), np.int64)
    small = {"x": x, "i": idx, "s": np.array([1, 1, 3, 3], np.int64)}
    expect_error(node_model("MaxUnpool", small, attrs, opset=22), small, "output_shape", "[1, 1, 3, 3]")


# ---- DeformConv ---------------------------------------------------------------------------------


@pytest.mark.parametrize("group,offset_group", [(1, 1), (2, 1), (1, 2), (2, 2)])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
def test_deform_conv(group, offset_group, with_bias, with_mask):
    x = random((2, 4, 5, 6), seed=1)
    w = random((6, 4 // group, 3, 2), seed=2)
    attrs = {"group": group, "offset_group": offset_group, "pads": [1, 0, 1, 1], "strides": [1, 2],
             "dilations": [1, 1]}
    oh, ow = 5, 3
    offset = random((2, offset_group * 6 * 2, oh, ow), low=-1.5, high=1.5, seed=3)
    inputs = {"x": x, "w": w, "offset": offset}
    if with_bias or with_mask:
        inputs["b"] = random((6,), seed=4) if with_bias else np.zeros(6, np.float32)
    if with_mask:
        inputs["mask"] = random((2, offset_group * 6, oh, ow), low=0, high=1, seed=5)
    check_node("DeformConv", inputs, attrs, opset=19, rtol=1e-4, atol=1e-5)


def test_deform_conv_channel_blocks_within_offset_groups():
    # 10 channels per offset group: sampled in blocks of 8 and 2 that must not cross a group.
    x = random((1, 20, 6, 7), seed=11)
    w = random((5, 20, 3, 3), seed=12)
    offset = random((1, 2 * 9 * 2, 6, 7), low=-2.0, high=2.0, seed=13)
    mask = random((1, 2 * 9, 6, 7), low=0, high=1, seed=14)
    inputs = {"x": x, "w": w, "offset": offset, "b": random((5,), seed=15), "mask": mask}
    check_node("DeformConv", inputs, {"offset_group": 2, "pads": [1, 1, 1, 1]}, opset=19, rtol=1e-4, atol=1e-5)


def test_deform_conv_sampling_paths_agree_bit_for_bit(tmp_path):
    # Bilinear sampling has an AVX-512 gather path and a portable one; both add the four corners
    # in the same order, so a fresh process with AVX-512 disabled must give the same bits.
    x = random((1, 20, 9, 11), seed=21)
    x[0, 3, 0, 0] = np.nan   # a padding corner reads index 0 and must not bring this NaN in
    w = random((6, 20, 3, 3), seed=22)
    offset = random((1, 2 * 9 * 2, 9, 11), low=-3.0, high=3.0, seed=23)
    feeds = {"x": x, "w": w, "offset": offset}
    model = node_model("DeformConv", feeds, {"offset_group": 2, "pads": [1, 1, 1, 1]}, opset=19)
    model_path = tmp_path / "deform.onnx"
    model_path.write_bytes(model.SerializeToString())
    np.savez(tmp_path / "feeds.npz", **feeds)
    script = (
        "import sys, numpy as np, onnx_light.runtime as rt\n"
        "feeds = dict(np.load(sys.argv[1] + '/feeds.npz'))\n"
        "s = rt.RuntimeSession(sys.argv[1] + '/deform.onnx', rt.RuntimeSessionOptions(num_threads=1))\n"
        "c = rt.RuntimeContext(rt.KernelContext(rt.default_opset(19)))\n"
        "np.save(sys.argv[1] + '/' + sys.argv[2], s.run(c, feeds)['y0'])\n")
    fast, portable = outputs_with_and_without_avx512(tmp_path, script)
    np.testing.assert_array_equal(fast.view(np.uint32), portable.view(np.uint32))
    assert 0 < np.isnan(fast).mean() < 0.5   # the NaN reaches only the outputs whose taps read it


def test_deform_conv_zero_offsets_is_conv():
    x = random((1, 3, 6, 6), seed=6)
    w = random((4, 3, 3, 3), seed=7)
    offset = np.zeros((1, 18, 4, 4), np.float32)
    ours = run_ours(node_model("DeformConv", {"x": x, "w": w, "offset": offset}, {}, opset=22),
                    {"x": x, "w": w, "offset": offset})[0]
    conv = run_reference(node_model("Conv", {"x": x, "w": w}, {}, opset=22), {"x": x, "w": w})[0]
    assert_close(ours, conv, rtol=1e-4, atol=1e-5)


def test_deform_conv_1d_and_3d_zero_offsets_match_conv():
    # onnx.reference implements 2-D only; with zero offsets N-D deformable convolution is Conv.
    for xs, ws in [((1, 2, 7), (3, 2, 3)), ((1, 2, 4, 4, 5), (3, 2, 2, 2, 3))]:
        x = random(xs, seed=8)
        w = random(ws, seed=9)
        out_spatial = [a - b + 1 for a, b in zip(xs[2:], ws[2:])]
        k = int(np.prod(ws[2:]))
        offset = np.zeros((1, k * len(out_spatial), *out_spatial), np.float32)
        feeds = {"x": x, "w": w, "offset": offset}
        ours = run_ours(node_model("DeformConv", feeds, {}, opset=22), feeds)[0]
        conv = run_reference(node_model("Conv", {"x": x, "w": w}, {}, opset=22), {"x": x, "w": w})[0]
        assert_close(ours, conv, rtol=1e-4, atol=1e-5)


def test_deform_conv_integer_offsets_shift_taps():
    # An offset of exactly +1 along W reads the next column: equals Conv on the shifted image.
    x = random((1, 1, 5, 6), seed=10)
    w = random((1, 1, 2, 2), seed=11)
    offset = np.zeros((1, 8, 4, 5), np.float32)
    offset[:, 1::2] = 1.0
    ours = run_ours(node_model("DeformConv", {"x": x, "w": w, "offset": offset}, {}, opset=22),
                    {"x": x, "w": w, "offset": offset})[0]
    shifted = np.concatenate([x[..., 1:], np.zeros((1, 1, 5, 1), np.float32)], axis=3)
    conv = run_reference(node_model("Conv", {"x": shifted, "w": w}, {}, opset=22), {"x": shifted, "w": w})[0]
    assert_close(ours, conv, rtol=1e-5, atol=1e-6)


def test_deform_conv_errors():
    x = random((1, 4, 5, 5))
    w = random((2, 4, 3, 3))
    offset = np.zeros((1, 17, 3, 3), np.float32)
    feeds = {"x": x, "w": w, "offset": offset}
    expect_error(node_model("DeformConv", feeds, {}, opset=22), feeds, "offset", "[1, 18, 3, 3]")
    offset = np.zeros((1, 18, 3, 3), np.float32)
    feeds = {"x": x, "w": w, "offset": offset}
    expect_error(node_model("DeformConv", feeds, {"offset_group": 3}, opset=22), feeds, "offset_group 3")
    expect_error(node_model("DeformConv", feeds, {"group": 3}, opset=22), feeds, "group 3")
