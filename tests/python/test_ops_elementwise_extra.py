"""More elementwise operators against onnx.reference: trigonometric / hyperbolic (Tan, Asin, Acos,
Atan, Sinh, Cosh, Asinh, Acosh, Atanh), BitwiseAnd/Or/Xor/Not and BitShift."""

from __future__ import annotations

import numpy as np
import pytest

from node_check import random, run_ours
from test_ops_elementwise import (FLOATS, INTS, NODE, check, dname, named, node_model, usage,
                                  values)

# Each operator with the input range where it is defined (and not too steep for half types).
TRIG = {
    "Tan": (-1.2, 1.2, 7),
    "Asin": (-0.99, 0.99, 7),
    "Acos": (-0.99, 0.99, 7),
    "Atan": (-5.0, 5.0, 7),
    "Sinh": (-3.0, 3.0, 9),
    "Cosh": (-3.0, 3.0, 9),
    "Asinh": (-5.0, 5.0, 9),
    "Acosh": (1.01, 5.0, 9),
    "Atanh": (-0.95, 0.95, 9),
}


def ours(op, inputs, attrs=None, opset=23):
    """Runs only onnx-light (for error cases the reference would reject first)."""
    return run_ours(named(node_model(op, inputs, attrs, opset=opset)), dict(inputs))


def trig_input(op, shape, dtype, seed=0):
    low, high, _ = TRIG[op]
    return values(shape, dtype, low, high, seed)


@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
@pytest.mark.parametrize("op", sorted(TRIG))
def test_trig_dtypes(op, dtype):
    check(op, {"x": trig_input(op, (3, 5), dtype)})


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (7,), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("op", sorted(TRIG))
def test_trig_shapes(op, shape):
    check(op, {"x": trig_input(op, shape, np.float32)})


@pytest.mark.parametrize("op", sorted(TRIG))
def test_trig_oldest_opset(op):
    check(op, {"x": trig_input(op, (4,), np.float32)}, opset=TRIG[op][2])


@pytest.mark.parametrize("op", ["Asin", "Acos", "Acosh", "Atanh"])
def test_trig_outside_domain_is_nan(op):
    x = np.array([3.0, -3.0, 0.5], dtype=np.float32) if op != "Acosh" else np.array([0.5, -1.0, 2.0],
                                                                                     np.float32)
    check(op, {"x": x})


@pytest.mark.parametrize("op", sorted(TRIG))
def test_trig_rejects_int(op):
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*int32"):
        ours(op, {"x": np.array([1, 2], np.int32)})


def test_trig_strided_usage():
    model = named(node_model("Tan", {"x": np.zeros((2, 3), np.float32)}))
    assert any(name.startswith("Tan/float32/") for name in usage(model, {"x": np.ones((2, 3), np.float32)}))


# ---- bitwise ----------------------------------------------------------------------------------

BITWISE = ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((), (3, 2)), ((0, 3), (3,)), ((1, 3, 1), (2, 1, 4))]


def int_values(shape, dtype, seed):
    info = np.iinfo(dtype)
    return random(shape, dtype, max(info.min, -(2**62)), min(info.max, 2**62), seed)


@pytest.mark.parametrize("dtype", INTS, ids=dname)
@pytest.mark.parametrize("op", BITWISE)
def test_bitwise_dtypes(op, dtype):
    check(op, {"a": int_values((3, 4), dtype, 0), "b": int_values((3, 4), dtype, 1)}, opset=18)


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}-{s[1]}")
@pytest.mark.parametrize("op", BITWISE)
def test_bitwise_broadcast(op, shapes):
    check(op, {"a": int_values(shapes[0], np.int32, 0), "b": int_values(shapes[1], np.int32, 1)})


@pytest.mark.parametrize("dtype", INTS, ids=dname)
@pytest.mark.parametrize("shape", [(3, 4), (), (0, 2)], ids=str)
def test_bitwise_not(dtype, shape):
    check("BitwiseNot", {"x": int_values(shape, dtype, 0)}, opset=18)


@pytest.mark.parametrize("op", BITWISE)
@pytest.mark.parametrize("dtype", [np.float32, np.bool_], ids=dname)
def test_bitwise_rejects_non_integers(op, dtype):
    x = values((2,), dtype)
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*{'bool' if dtype == np.bool_ else 'float32'}"):
        ours(op, {"a": x, "b": x})


def test_bitwise_mismatched_types():
    with pytest.raises(ValueError, match=rf"{NODE}.*int64.*int32"):
        ours("BitwiseAnd", {"a": np.ones(2, np.int32), "b": np.ones(2, np.int64)})


def test_bitwise_mismatched_shapes():
    with pytest.raises(ValueError, match=NODE):
        ours("BitwiseOr", {"a": np.ones((2, 3), np.int32), "b": np.ones((4,), np.int32)})


def test_bitwise_not_rejects_float():
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*float32"):
        ours("BitwiseNot", {"x": np.ones(2, np.float32)})


UNSIGNED = [np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", UNSIGNED, ids=dname)
def test_bitshift_dtypes(dtype, direction):
    bits = np.dtype(dtype).itemsize * 8
    x = int_values((3, 4), dtype, 0)
    y = random((3, 4), dtype, 0, bits - 1, 1)
    check("BitShift", {"x": x, "y": y}, {"direction": direction}, opset=11)


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}-{s[1]}")
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift_broadcast(direction, shapes):
    x = int_values(shapes[0], np.uint32, 0)
    y = random(shapes[1], np.uint32, 0, 31, 1)
    check("BitShift", {"x": x, "y": y}, {"direction": direction})


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift_by_width_or_more_is_zero(direction):
    x = np.array([1, 255, 7, 128], np.uint8)
    y = np.array([8, 9, 200, 7], np.uint8)
    out = check("BitShift", {"x": x, "y": y}, {"direction": direction})[0]
    assert list(out[:3]) == [0, 0, 0]


def test_bitshift_bad_direction():
    with pytest.raises(ValueError, match=rf"{NODE}.*direction.*UP"):
        ours("BitShift", {"x": np.ones(2, np.uint8), "y": np.ones(2, np.uint8)}, {"direction": "UP"})


def test_bitshift_rejects_signed():
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*int32"):
        ours("BitShift", {"x": np.ones(2, np.int32), "y": np.ones(2, np.int32)}, {"direction": "LEFT"})


def test_bitshift_usage_names_direction():
    feeds = {"x": np.ones((2, 3), np.uint8), "y": np.ones((2, 3), np.uint8)}
    model = named(node_model("BitShift", feeds, {"direction": "RIGHT"}))
    assert any(name.startswith("BitShift/uint8/right-") for name in usage(model, feeds))

