"""Sizes computed from input values or attributes never wrap: an output dimension, element count
or byte count that does not fit int64 (or no machine could hold) is a ValueError naming the node,
never a wrapped size, a silent copy, an empty result or std::length_error text. Each case is one
the issue (or the operator fuzzer) found."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from node_check import make_model, run_ours

INT64_MAX = np.iinfo(np.int64).max


def named_model(op, inputs, attrs=None, opset=21, initializers=None):
    names = list(inputs) + list(initializers or {})
    node = helper.make_node(op, names, ["y0"], name="the_node", **(attrs or {}))
    return make_model([node], inputs, ["y0"], initializers=initializers, opset=opset)


def refused(op, inputs, attrs=None, opset=21, initializers=None):
    model = named_model(op, inputs, attrs, opset, initializers)
    with pytest.raises(ValueError) as info:
        run_ours(model, inputs)
    message = str(info.value)
    assert f"node 'the_node' ({op})" in message, message
    for bad in ("length_error", "bad_alloc", "vector::", "_M_default_append"):
        assert bad not in message, message
    return message


def test_tile_repeats_whose_product_wraps_is_an_error():
    # 4 * (2^62 + 1) wraps to 4: the old kernel returned its input unchanged.
    message = refused("Tile", {"x": np.ones(4, np.float32), "r": np.array([2**62 + 1], np.int64)})
    assert "Tile output dimension" in message and "overflows int64" in message


@pytest.mark.parametrize("dtype,needle", [(np.uint8, "needs 2305843009213693952 bytes"),
                                          (np.float32, "overflow int64 bytes")])
def test_tile_beyond_memory_names_the_bytes(dtype, needle):
    # 2^61 elements fit int64 but no machine: a clear error with the byte count, not
    # "vector::_M_default_append".
    message = refused("Tile", {"x": np.ones(1, dtype), "r": np.array([2**61], np.int64)})
    assert needle in message


def test_tile_of_an_empty_input_with_huge_repeats_is_empty():
    model = named_model("Tile", {"x": np.ones((0, 2), np.float32), "r": np.array([2**62, 1], np.int64)})
    (y,) = run_ours(model, {"x": np.ones((0, 2), np.float32), "r": np.array([2**62, 1], np.int64)})
    assert y.shape == (0, 2)


@pytest.mark.parametrize("start,limit,delta", [(-(2**63), INT64_MAX, 1), (INT64_MAX, -(2**63), -1)])
def test_range_whose_length_overflows_is_an_error(start, limit, delta):
    # limit - start overflowed int64 and the old kernel returned an empty tensor.
    feeds = {n: np.array(v, np.int64) for n, v in (("s", start), ("l", limit), ("d", delta))}
    message = refused("Range", feeds, opset=11)
    assert "more elements than int64 can count" in message


def test_range_near_the_int64_limits_is_exact():
    feeds = {"s": np.array(INT64_MAX - 2, np.int64), "l": np.array(INT64_MAX, np.int64),
             "d": np.array(1, np.int64)}
    (y,) = run_ours(named_model("Range", feeds, opset=11), feeds)
    np.testing.assert_array_equal(y, [INT64_MAX - 2, INT64_MAX - 1])
    feeds = {"s": np.array(-(2**63), np.int64), "l": np.array(INT64_MAX, np.int64),
             "d": np.array(2**62, np.int64)}
    (y,) = run_ours(named_model("Range", feeds, opset=11), feeds)
    np.testing.assert_array_equal(y, [-(2**63), -(2**62), 0, 2**62])


def test_reshape_target_whose_element_count_overflows_is_an_error():
    feeds = {"x": np.ones(4, np.float32), "s": np.array([2**62, 4, -1], np.int64)}
    message = refused("Reshape", feeds)
    assert "Reshape target element count" in message


def test_pad_whose_output_dimension_overflows_is_an_error():
    feeds = {"x": np.ones(3, np.float32), "p": np.array([INT64_MAX, 1], np.int64)}
    message = refused("Pad", feeds)
    assert "Pad output dimension" in message and "overflows int64" in message


@pytest.mark.parametrize("k", [INT64_MAX, -(2**63)])
@pytest.mark.parametrize("upper", [0, 1])
def test_trilu_with_extreme_k_keeps_or_zeroes_everything(k, upper):
    x = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    feeds = {"x": x, "k": np.array(k, np.int64)}
    (y,) = run_ours(named_model("Trilu", feeds, {"upper": upper}, opset=14), feeds)
    keep_all = (k > 0) != bool(upper)
    np.testing.assert_array_equal(y, x if keep_all else np.zeros_like(x))


def test_constant_of_shape_beyond_memory_names_the_bytes():
    message = refused("ConstantOfShape", {"s": np.array([2**40], np.int64)})
    assert "needs 4398046511104 bytes" in message


def test_constant_of_shape_whose_bytes_overflow_is_an_error():
    message = refused("ConstantOfShape", {"s": np.array([2**62, 4], np.int64)})
    assert "more elements than int64 can count" in message


def test_resize_with_an_overflowing_scale_is_an_error():
    feeds = {"x": np.ones((1, 1, 2, 2), np.float32), "roi": np.zeros(0, np.float32),
             "scales": np.array([1, 1, 1e30, 1], np.float32)}
    message = refused("Resize", feeds, {"mode": "nearest"}, opset=13)
    assert "Resize output dimension" in message


def test_conv_dilation_whose_extent_overflows_is_an_error():
    feeds = {"x": np.ones((1, 1, 5), np.float32), "w": np.ones((1, 1, 3), np.float32)}
    message = refused("Conv", feeds, {"dilations": [2**62]})
    assert "dilated kernel size" in message


def test_max_pool_whose_dilated_window_overflows_is_an_error():
    # Found by the whole-pipeline probe: kernel_shape 2^63 - 1 with dilation 2 made the window
    # extent wrap, and the pooling loop never ended.
    x = np.zeros((1, 1, 8, 8, 8), np.float32)
    message = refused("MaxPool", {"x": x}, {"kernel_shape": [INT64_MAX, 5, 5], "dilations": [2, 2, 2],
                                           "strides": [3, 3, 3], "ceil_mode": 1})
    assert "overflows int64" in message


def test_center_crop_pad_beyond_memory_names_the_bytes():
    # Found by the whole-pipeline probe: a crop shape of 2^31 escaped as std::bad_alloc.
    x = np.zeros((20, 10, 3), np.float32)
    message = refused("CenterCropPad", {"x": x, "shape": np.array([10, 2**40, 3], np.int64)}, opset=18)
    assert "bytes" in message


def test_empty_output_whose_other_dimensions_overflow_has_no_numpy_form():
    # Found by the fuzzer under UBSan: pybind11 multiplied [2^40, 2^40, 0] in order (signed
    # overflow) when NumPy asked for the buffer. NumPy cannot hold such an array either.
    import onnx_light.runtime as runtime

    model = make_model([helper.make_node("ConstantOfShape", ["s"], ["y0"])], {"s": np.zeros(3, np.int64)}, ["y0"],
                       opset=21)
    (y,) = runtime.RuntimeSession(model).run(None, {"s": np.array([2**40, 2**40, 0], np.int64)})
    assert tuple(y.shape) == (2**40, 2**40, 0)
    for convert in (np.asarray, lambda t: t.numpy()):
        with pytest.raises(ValueError, match=r"no NumPy form: the product of its dimensions overflows int64"):
            convert(y)
