"""Quantization operators against onnx.reference (bit-exact) and ONNX Runtime.

QuantizeLinear / DequantizeLinear for every version, type, granularity and saturate mode;
DynamicQuantizeLinear; MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv; models quantized
by onnxruntime.quantization (dynamic and static QDQ) compared with ORT.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import expect_error, make_model, node_model, run_ort, run_ours, run_reference, usage_of

INT_TYPES = {
    10: [np.int8, np.uint8],
    21: [np.int16, np.uint16, ml_dtypes.int4, ml_dtypes.uint4],
    25: [ml_dtypes.int2, ml_dtypes.uint2],
}
FLOAT8_TYPES = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz]
QUANTIZE_VERSIONS = [10, 13, 19, 21, 23, 24, 25, 28]


# The integer products a kernel-usage name may report (docs/kernel-usage.md): the portable or
# AVX2 int16 GEMM, AVX-512 VNNI or AMX tiles, by CPU.
INTEGER_PRODUCTS = ("int16", "int16-avx2", "u8s8-vnni", "u8s8-amx")


def bits(a: np.ndarray) -> np.ndarray:
    """The stored value of every element as an integer, so NaN payloads, -0 and float8 codes compare."""
    a = np.asarray(a)
    if a.dtype.kind in "iu":
        return a.astype(np.int64)
    if a.dtype.itemsize == 1:
        return a.view(np.uint8).astype(np.int64)
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint32).astype(np.int64)


def assert_same_bits(ours, expected):
    assert ours.dtype == expected.dtype, (ours.dtype, expected.dtype)
    assert ours.shape == expected.shape, (ours.shape, expected.shape)
    np.testing.assert_array_equal(bits(ours), bits(expected))


def awkward_floats(shape, seed, scale=100.0, huge=True):
    """Random values plus every .5 tie in [-10, 10], signed zeros and values near the type limits.

    `huge` adds +-1e6, which overflow float16 to +-Inf: onnx.reference then converts Inf to int32
    (undefined in numpy; it gives INT_MIN), where we saturate (see the NaN/Inf test below)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    special = np.concatenate([np.arange(-10.5, 10.6, 0.5), [0.0, -0.0, 127.5, 128.5, -128.5, 255.5],
                              [1e6, -1e6] if huge else [1000.5, -1000.5]])
    flat = x.reshape(-1)
    n = min(flat.size, special.size)
    flat[:n] = special[:n]
    return x


def quantize(x, scale, zero_point=None, attrs=None, opset=21):
    feeds = {"x": x, "scale": np.asarray(scale)}
    if zero_point is not None:
        feeds["zero_point"] = np.asarray(zero_point)
    return node_model("QuantizeLinear", feeds, attrs, opset=opset), feeds


def dequantize(x, scale, zero_point=None, attrs=None, opset=21):
    feeds = {"x": x, "scale": np.asarray(scale)}
    if zero_point is not None:
        feeds["zero_point"] = np.asarray(zero_point)
    return node_model("DequantizeLinear", feeds, attrs, opset=opset), feeds


def check_exact(model_feeds):
    model, feeds = model_feeds
    ours = run_ours(model, feeds)[0]
    reference_model = model
    if model.graph.node[0].op_type == "DequantizeLinear" and model.opset_import[0].version < 19:
        # onnx.reference has no DequantizeLinear before 19; 19 computes the same for these types.
        reference_model = onnx.ModelProto()
        reference_model.CopyFrom(model)
        reference_model.opset_import[0].version = 19
    expected = run_reference(reference_model, feeds)[0]
    assert_same_bits(ours, expected)
    return ours


def int_types_for(opset):
    return [t for since, types in INT_TYPES.items() if since <= opset for t in types]


def type_range(t):
    info = ml_dtypes.iinfo(t)
    return int(info.min), int(info.max)


# ---- QuantizeLinear ------------------------------------------------------------------------------

@pytest.mark.parametrize("opset", QUANTIZE_VERSIONS)
def test_quantize_integer_types_every_version(opset):
    x = awkward_floats((3, 4, 37), seed=opset)
    for t in int_types_for(opset):
        lo, hi = type_range(t)
        zp = np.array(min(hi, 1 + lo + (hi - lo) // 2), t)
        check_exact(quantize(x, np.float32(0.37), zp, opset=opset))
        if opset >= 13:
            rng = np.random.default_rng(1)
            scales = (rng.random(4) + 0.25).astype(np.float32)
            zps = rng.integers(lo, hi, 4, endpoint=True).astype(t)
            check_exact(quantize(x, scales, zps, {"axis": 1}, opset))
            scales = (rng.random(37) + 0.25).astype(np.float32)
            zps = rng.integers(lo, hi, 37, endpoint=True).astype(t)
            check_exact(quantize(x, scales, zps, {"axis": -1}, opset))
    # No zero point: uint8.
    assert check_exact(quantize(x, np.float32(2.0), opset=opset)).dtype == np.uint8


@pytest.mark.parametrize("opset", [21, 23, 25, 28])
@pytest.mark.parametrize("axis,block", [(0, 2), (1, 3), (2, 8), (-1, 37), (2, 5)])
def test_quantize_blocked(opset, axis, block):
    x = awkward_floats((4, 6, 37), seed=5)
    rng = np.random.default_rng(block)
    shape = list(x.shape)
    shape[axis] = -(-shape[axis] // block)
    for t in int_types_for(opset):
        lo, hi = type_range(t)
        scale = (rng.random(shape) + 0.1).astype(np.float32)
        zp = rng.integers(lo, hi, shape, endpoint=True).astype(t)
        check_exact(quantize(x, scale, zp, {"axis": axis, "block_size": block}, opset))
        if opset >= 23:  # before 23 the scale has x's type
            check_exact(quantize(x, scale.astype(np.float16), zp, {"axis": axis, "block_size": block}, opset))


@pytest.mark.parametrize("t", FLOAT8_TYPES)
@pytest.mark.parametrize("saturate", [0, 1])
@pytest.mark.parametrize("opset", [19, 21, 23, 25])
def test_quantize_float8_saturate(t, saturate, opset):
    x = awkward_floats((2, 3, 50), seed=3, scale=1000.0)
    x.reshape(-1)[-8:] = [np.nan, np.inf, -np.inf, 1e30, -1e30, 448.0, 500.0, 60000.0]
    check_exact(quantize(x, np.float32(0.75), np.zeros((), t), {"saturate": saturate}, opset))
    check_exact(quantize(x, np.array([1.0, 2.0, 0.5], np.float32), np.zeros(3, t), {"saturate": saturate, "axis": 1},
                         opset))


@pytest.mark.parametrize("opset", [23, 25, 28])
def test_quantize_small_floats(opset):
    x = awkward_floats((3, 40), seed=8, scale=4.0)
    x.reshape(-1)[-4:] = [np.nan, np.inf, -np.inf, -0.0]
    types = [ml_dtypes.float4_e2m1fn] + ([ml_dtypes.float6_e2m3fn, ml_dtypes.float6_e3m2fn] if opset >= 28 else [])
    for t in types:
        check_exact(quantize(x, np.float32(0.5), np.zeros((), t), opset=opset))
        check_exact(quantize(x, np.float32(1.5), None, {"output_dtype": helper.np_dtype_to_tensor_dtype(np.dtype(t))},
                             opset))


@pytest.mark.parametrize("x_type", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32])
@pytest.mark.parametrize("scale_type", [np.float32, np.float16, ml_dtypes.bfloat16, np.int32])
def test_quantize_mixed_input_and_scale_types(x_type, scale_type):
    rng = np.random.default_rng(2)
    if x_type == np.int32:
        x = rng.integers(-3000, 3000, (5, 30)).astype(x_type)
    else:
        x = awkward_floats((5, 30), seed=9, huge=False).astype(x_type)
    scale = np.array(3 if scale_type == np.int32 else 0.37, scale_type)
    for zp in (np.array(-3, np.int8), np.array(40000, np.uint16), np.zeros((), ml_dtypes.float8_e4m3fn)):
        check_exact(quantize(x, scale, zp, opset=23))


@pytest.mark.parametrize("precision", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_quantize_precision_attribute(precision):
    x = awkward_floats((4, 33), seed=10, huge=False)
    for scale in (np.float32(0.3), np.float16(0.3)):
        check_exact(quantize(x, scale, np.array(5, np.int8), {"precision": precision}, 23))
        check_exact(quantize(x.astype(np.float16), scale, np.array(5, np.uint8), {"precision": precision}, 23))


def test_quantize_e8m0_scale():
    x = awkward_floats((4, 33), seed=11)
    scale = np.array([2.0**-3], ml_dtypes.float8_e8m0fnu).reshape(())
    check_exact(quantize(x, scale, np.array(5, np.int8), opset=24))


def test_quantize_version_10_and_19_scalar_only_semantics():
    x = awkward_floats((2, 5), seed=12)
    check_exact(quantize(x, np.array([0.5], np.float32), np.array([3], np.uint8), opset=10))
    check_exact(quantize(x.astype(np.float16), np.float16(0.5), np.array(3, np.int8), opset=19))


def test_quantize_nan_inf_and_huge_values_saturate_like_ort():
    # onnx.reference converts to int32 first (undefined beyond its range: +Inf comes out as the
    # minimum); we saturate, as the spec says and ONNX Runtime does. NaN gives the minimum.
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 2.5, 3.5, -2.5, 1e10], np.float32)
    for zp in (np.array(3, np.int8), np.array(3, np.uint8)):
        model, feeds = quantize(x, np.array(1, np.float32), zp, opset=21)
        ours = run_ours(model, feeds)[0]
        lo, hi = type_range(zp.dtype)
        np.testing.assert_array_equal(ours, np.array([lo, hi, lo, hi, lo, 5, 7, 1, hi]).astype(zp.dtype))
        np.testing.assert_array_equal(ours, run_ort(model, feeds)[0])
    # The generic path (int16, float16 input) follows the same rule.
    model, feeds = quantize(x.astype(np.float16), np.float16(1), np.array(3, np.int16), opset=21)
    np.testing.assert_array_equal(run_ours(model, feeds)[0], [-32768, 32767, -32768, 32767, -32768, 5, 7, 1, 32767])


@pytest.mark.parametrize("zp_type", [np.int8, np.uint8])
def test_quantize_matches_ort(zp_type):
    x = awkward_floats((8, 16, 33), seed=13)
    model, feeds = quantize(x, np.array([0.5, 0.25, 1.5, 3.0] * 4, np.float32), np.arange(16).astype(zp_type),
                            {"axis": 1}, 21)
    np.testing.assert_array_equal(run_ours(model, feeds)[0], run_ort(model, feeds)[0])


def test_quantize_vector_and_generic_paths_record_usage():
    x = awkward_floats((64, 64), seed=14)
    model, feeds = quantize(x, np.float32(0.5), np.array(1, np.int8), opset=21)
    assert "QuantizeLinear/int8/per-tensor-vector" in usage_of(model, feeds)
    model, feeds = quantize(x, np.float16(0.5), np.array(1, np.int8), opset=23)
    assert any(u.startswith("QuantizeLinear/int8/generic") for u in usage_of(model, feeds))


def test_quantize_vector_path_long_rows_exact():
    # Lengths around the 32-wide vector step, every tie, per tensor and per axis on the last axis.
    for n in (1, 31, 32, 33, 95, 1000):
        x = (np.arange(n, dtype=np.float32) - n / 2) * 0.5
        for zp in (np.array(-7, np.int8), np.array(200, np.uint8)):
            check_exact(quantize(x.reshape(1, n), np.float32(0.5), zp, opset=13))
            scales = np.linspace(0.2, 3.0, n).astype(np.float32)
            check_exact(quantize(x.reshape(1, n), scales, np.full(n, zp, zp.dtype), {"axis": 1}, 13))


# ---- DequantizeLinear ----------------------------------------------------------------------------

@pytest.mark.parametrize("opset", QUANTIZE_VERSIONS)
def test_dequantize_integer_types_every_version(opset):
    rng = np.random.default_rng(opset)
    types = int_types_for(opset) + [np.int32]
    for t in types:
        lo, hi = type_range(t) if t != np.int32 else (-(2**31), 2**31 - 1)
        x = rng.integers(lo, hi, (3, 4, 37), endpoint=True).astype(t)
        check_exact(dequantize(x, np.float32(0.37), np.array(lo // 2 + 1, t), opset=opset))
        check_exact(dequantize(x, np.float32(0.37), None, opset=opset))
        if opset >= 13:
            check_exact(dequantize(x, (rng.random(4) + 0.1).astype(np.float32),
                                   rng.integers(lo, hi, 4, endpoint=True).astype(t), {"axis": 1}, opset))
            check_exact(dequantize(x, (rng.random(37) + 0.1).astype(np.float32),
                                   rng.integers(lo, hi, 37, endpoint=True).astype(t), {"axis": 2}, opset))
        if opset >= 19:
            for st in (np.float16, ml_dtypes.bfloat16):
                check_exact(dequantize(x, np.array(0.37, st), np.array(1, t), opset=opset))
        if opset >= 21:
            scale = (rng.random((3, 4, 5)) + 0.1).astype(np.float32)
            zp = rng.integers(lo, hi, (3, 4, 5), endpoint=True).astype(t)
            check_exact(dequantize(x, scale, zp, {"axis": 2, "block_size": 8}, opset))
            check_exact(dequantize(x, scale.astype(np.float16), zp, {"axis": -1, "block_size": 8}, opset))
        if opset >= 23:
            check_exact(dequantize(x, np.float16(0.37), np.array(1, t), {"output_dtype": TensorProto.FLOAT}, opset))
            check_exact(dequantize(x, np.float32(0.37), None, {"output_dtype": TensorProto.BFLOAT16}, opset))


@pytest.mark.parametrize("opset", [19, 21, 23, 25, 28])
def test_dequantize_low_precision_floats(opset):
    codes = np.arange(256, dtype=np.uint8).reshape(4, 64)
    for t in FLOAT8_TYPES:
        x = codes.view(t)
        check_exact(dequantize(x, np.float32(0.37), np.zeros((), t), opset=opset))
        check_exact(dequantize(x, np.float16(3.0), None, opset=opset))
        check_exact(dequantize(x, np.array([1, 2, 0.5, 4], np.float32), None, {"axis": 0}, opset))
    small = []
    if opset >= 23:
        small.append(ml_dtypes.float4_e2m1fn)
    if opset >= 28:
        small += [ml_dtypes.float6_e2m3fn, ml_dtypes.float6_e3m2fn]
    for t in small:
        # Every code of the format (ml_dtypes keeps one element per byte).
        x = np.frombuffer(np.arange(16 if t == ml_dtypes.float4_e2m1fn else 64, dtype=np.uint8).tobytes(),
                          dtype=t).reshape(2, -1)
        check_exact(dequantize(x, np.float32(0.37), np.zeros((), t), opset=opset))


def test_dequantize_e8m0_scale_needs_output_dtype():
    x = np.arange(-64, 64, dtype=np.int8).reshape(4, 32)
    scale = np.array([2.0**-4, 1.0, 8.0, 2.0**20], np.float32).astype(ml_dtypes.float8_e8m0fnu)
    check_exact(dequantize(x, scale, None, {"axis": 0, "output_dtype": TensorProto.FLOAT}, 24))
    model, feeds = dequantize(x, scale, None, {"axis": 0}, 24)
    expect_error(model, feeds, "output_dtype")


def test_dequantize_matches_ort():
    rng = np.random.default_rng(3)
    for t in (np.int8, np.uint8, np.int32):
        x = rng.integers(-100, 100, (16, 64)).astype(t) if t != np.uint8 else rng.integers(0, 255, (16, 64)).astype(t)
        scale = (rng.random(64) + 0.1).astype(np.float32)
        model, feeds = dequantize(x, scale, np.arange(64).astype(t), {"axis": 1}, 21)
        np.testing.assert_array_equal(run_ours(model, feeds)[0], run_ort(model, feeds)[0])


def test_dequantize_vector_path_lengths():
    for n in (1, 7, 8, 9, 100):
        x = np.arange(n, dtype=np.int64).astype(np.int8)
        check_exact(dequantize(x.reshape(1, n), np.float32(0.1), np.array(-3, np.int8), opset=13))
        check_exact(dequantize(x.reshape(1, n).astype(np.uint8), np.linspace(0.1, 2, n).astype(np.float32),
                               np.full(n, 7, np.uint8), {"axis": 1}, 13))


# ---- errors --------------------------------------------------------------------------------------

def test_quantize_errors():
    x = awkward_floats((4, 6), seed=1)
    model, feeds = quantize(x, np.ones(5, np.float32), np.zeros(5, np.uint8), {"axis": 1}, 21)
    expect_error(model, feeds, "QuantizeLinear", "must have 6 elements")
    model, feeds = quantize(x, np.ones(6, np.float32), np.zeros(5, np.uint8), {"axis": 1}, 21)
    expect_error(model, feeds, "zero point", "[6]", "[5]")
    model, feeds = quantize(x, np.ones((4, 2), np.float32), None, {"axis": 1, "block_size": 2}, 21)
    expect_error(model, feeds, "ceil(6 / block_size 2) = 3", "[4, 2]")
    model, feeds = quantize(x, np.ones((4,), np.float32), None, {"axis": 1, "block_size": 2}, 21)
    expect_error(model, feeds, "rank of input 0")
    model, feeds = quantize(x, np.ones(6, np.float32), np.zeros(6, np.uint8), {"axis": 2}, 21)
    expect_error(model, feeds, "axis")
    model, feeds = quantize(x, np.float32(1), np.array(1, np.int8), {"output_dtype": TensorProto.UINT8}, 21)
    expect_error(model, feeds, "output_dtype", "int8")
    model, feeds = quantize(x, np.float32(1), np.array(1, np.int16), opset=19)
    expect_error(model, feeds, "int16", "QuantizeLinear-19")
    model, feeds = quantize(x, np.float32(1), None, {"output_dtype": TensorProto.FLOAT}, 21)
    expect_error(model, feeds, "output_dtype")
    model, feeds = quantize(x, np.ones(6, np.float32), None, {}, 10)
    expect_error(model, feeds, "scalar")
    model, feeds = quantize(x, np.float16(1), None, {}, 21)
    expect_error(model, feeds, "y_scale", "float16")
    model, feeds = quantize(x, np.float32(1), None, {"block_size": -1}, 21)
    expect_error(model, feeds, "block_size")


def test_dequantize_errors():
    x = np.zeros((4, 6), np.int8)
    model, feeds = dequantize(x, np.float32(1), np.array(0, np.uint8), opset=21)
    expect_error(model, feeds, "x_zero_point", "int8", "uint8")
    model, feeds = dequantize(x, np.ones((4, 3), np.float32), np.zeros((4, 2), np.int8),
                              {"axis": 1, "block_size": 2}, 21)
    expect_error(model, feeds, "zero point")
    model, feeds = dequantize(x, np.ones((4, 2), np.float32), None, {"axis": 1, "block_size": 2}, 21)
    expect_error(model, feeds, "ceil(6 / block_size 2) = 3")
    model, feeds = dequantize(x.astype(np.int16), np.float32(1), None, {}, 19)
    expect_error(model, feeds, "int16")
    f8 = np.zeros((2, 2), ml_dtypes.float8_e4m3fn)
    model, feeds = dequantize(f8, np.float32(1), np.ones((), ml_dtypes.float8_e4m3fn), opset=21)
    expect_error(model, feeds, "must be zero")
    model, feeds = dequantize(x, np.float32(1), None, {"output_dtype": TensorProto.INT8}, 23)
    expect_error(model, feeds, "output_dtype")


# ---- MatMulInteger and QLinearMatMul -------------------------------------------------------------

MATMUL_SHAPES = [((5, 7), (7, 9)), ((2, 3, 5, 40), (40, 33)), ((3, 1, 4, 17), (2, 17, 6)), ((17,), (17, 5)),
                 ((4, 17), (17,)), ((1, 0, 8), (8, 3)), ((3, 0), (0, 4)), ((6, 33), (33, 50))]
BYTE_PAIRS = [(np.uint8, np.int8), (np.int8, np.int8), (np.uint8, np.uint8), (np.int8, np.uint8)]


def random_bytes(rng, t, shape):
    info = np.iinfo(t)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(t)


@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
@pytest.mark.parametrize("types", BYTE_PAIRS)
def test_matmul_integer_against_reference(shapes, types):
    rng = np.random.default_rng(len(shapes[0]) * 10 + len(shapes[1]))
    a, b = random_bytes(rng, types[0], shapes[0]), random_bytes(rng, types[1], shapes[1])
    az, bz = random_bytes(rng, types[0], ()), random_bytes(rng, types[1], ())
    feeds = {"a": a, "b": b, "az": az, "bz": bz}
    model = node_model("MatMulInteger", feeds, opset=10)
    expected = run_reference(model, feeds)[0]
    np.testing.assert_array_equal(run_ours(model, feeds)[0], expected)
    assert run_ours(model, feeds)[0].shape == expected.shape
    # Constant B and zero point: packed when the session is built.
    constant = node_model("MatMulInteger", {"a": a}, opset=10, initializers={"b": b, "az": az, "bz": bz})
    np.testing.assert_array_equal(run_ours(constant, {"a": a})[0], expected)
    # No zero points.
    bare = node_model("MatMulInteger", {"a": a, "b": b}, opset=10)
    np.testing.assert_array_equal(run_ours(bare, {"a": a, "b": b})[0], run_reference(bare, {"a": a, "b": b})[0])


def test_matmul_integer_matches_ort_and_records_prepacked():
    rng = np.random.default_rng(4)
    # uint8 x int8 on AVX2 in ORT adds pairs of products in saturating int16 (vpmaddubsw), exact
    # only while |B| < 64 (what its reduce_range mode guarantees); ours is exact on all values.
    a, b = random_bytes(rng, np.uint8, (2, 64, 96)), rng.integers(-64, 64, (96, 80)).astype(np.int8)
    model = node_model("MatMulInteger", {"a": a}, opset=10, initializers={"b": b, "az": np.array(128, np.uint8)})
    np.testing.assert_array_equal(run_ours(model, {"a": a})[0], run_ort(model, {"a": a})[0])
    b = random_bytes(rng, np.int8, (96, 80))
    model = node_model("MatMulInteger", {"a": a}, opset=10, initializers={"b": b, "az": np.array(128, np.uint8)})
    np.testing.assert_array_equal(run_ours(model, {"a": a})[0], (a.astype(np.int32) - 128) @ b.astype(np.int32))
    usage = usage_of(model, {"a": a})
    # The int16 product, or the VNNI/AMX one on CPUs that have it (docs/kernel-usage.md).
    assert any(u.startswith(tuple(f"MatMulInteger/uint8/{p}" for p in INTEGER_PRODUCTS)) and u.endswith("-prepacked")
               for u in usage)


def test_matmul_integer_per_row_and_per_column_zero_points():
    # The spec's layouts: a_zero_point per row of A ([M] or [..., M, 1]), b_zero_point per column
    # of B ([N] or [..., 1, N]). onnx.reference broadcasts a 1-D a_zero_point along K instead, so
    # the oracle is the formula in numpy.
    rng = np.random.default_rng(5)
    a, b = random_bytes(rng, np.uint8, (2, 6, 11)), random_bytes(rng, np.int8, (11, 9))
    az, bz = random_bytes(rng, np.uint8, (6,)), random_bytes(rng, np.int8, (9,))
    expected = (a.astype(np.int32) - az[:, None]) @ (b.astype(np.int32) - bz[None, :])
    for a_zp, b_zp in ((az, bz), (az.reshape(6, 1), bz.reshape(1, 9)), (az.reshape(1, 6, 1), bz)):
        feeds = {"a": a, "b": b, "az": a_zp, "bz": b_zp}
        np.testing.assert_array_equal(run_ours(node_model("MatMulInteger", feeds, opset=10), feeds)[0], expected)
    model = node_model("MatMulInteger", {"a": a}, opset=10, initializers={"b": b, "az": az, "bz": bz})
    np.testing.assert_array_equal(run_ours(model, {"a": a})[0], expected)


def test_matmul_integer_errors():
    a, b = np.zeros((3, 4), np.uint8), np.zeros((4, 5), np.int8)
    feeds = {"a": a, "b": b, "az": np.array(1, np.int8)}
    expect_error(node_model("MatMulInteger", feeds, opset=10), feeds, "input 2", "uint8", "int8")
    feeds = {"a": a, "b": b, "az": np.zeros(4, np.uint8)}
    expect_error(node_model("MatMulInteger", feeds, opset=10), feeds, "input 2", "row of A", "[4]")
    feeds = {"a": a, "b": b, "az": np.array(1, np.uint8), "bz": np.zeros(4, np.int8)}
    expect_error(node_model("MatMulInteger", feeds, opset=10), feeds, "input 3", "column of B")
    feeds = {"a": a, "b": np.zeros((3, 5), np.int8)}
    expect_error(node_model("MatMulInteger", feeds, opset=10), feeds, "cannot be multiplied")
    feeds = {"a": np.zeros((2, 3, 4), np.uint8), "b": np.zeros((3, 4, 5), np.int8)}
    expect_error(node_model("MatMulInteger", feeds, opset=10), feeds, "MatMulInteger")


def qlinear_matmul_feeds(rng, at, bt, yt, shapes, scale_type=np.float32):
    return {
        "a": random_bytes(rng, at, shapes[0]), "a_scale": np.array(0.0173, scale_type),
        "a_zp": random_bytes(rng, at, ()), "b": random_bytes(rng, bt, shapes[1]),
        "b_scale": np.array(0.0091, scale_type), "b_zp": random_bytes(rng, bt, ()),
        "y_scale": np.array(0.21, scale_type), "y_zp": random_bytes(rng, yt, ()),
    }


@pytest.mark.parametrize("opset", [10, 21])
@pytest.mark.parametrize("shapes", MATMUL_SHAPES[:6])
@pytest.mark.parametrize("types", BYTE_PAIRS)
def test_qlinear_matmul_against_reference(opset, shapes, types):
    rng = np.random.default_rng(7)
    scale_types = [np.float32] + ([np.float16, ml_dtypes.bfloat16] if opset >= 21 else [])
    for st in scale_types:
        for yt in (np.int8, np.uint8):
            feeds = qlinear_matmul_feeds(rng, types[0], types[1], yt, shapes, st)
            model = node_model("QLinearMatMul", feeds, opset=opset)
            assert_same_bits(run_ours(model, feeds)[0], run_reference(model, feeds)[0])


def test_qlinear_matmul_constant_b_and_ort():
    rng = np.random.default_rng(8)
    feeds = qlinear_matmul_feeds(rng, np.uint8, np.int8, np.uint8, ((4, 32, 48), (48, 24)))
    feeds["b"] = rng.integers(-64, 64, (48, 24)).astype(np.int8)  # ORT's u8s8 is exact for |B| < 64
    constant = {k: feeds.pop(k) for k in ("b", "b_scale", "b_zp")}
    names = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"]
    node = helper.make_node("QLinearMatMul", names, ["y"])
    model = make_model([node], feeds, ["y"], initializers=constant, opset=10)
    ours = run_ours(model, feeds)[0]
    all_feeds = {**feeds, **constant}
    np.testing.assert_array_equal(ours, run_reference(node_model("QLinearMatMul", {n: all_feeds[n] for n in names},
                                                                 opset=10), {n: all_feeds[n] for n in names})[0])
    # ORT rounds through float32 multipliers: at most one step apart on rare ties.
    assert np.abs(ours.astype(np.int32) - run_ort(model, feeds)[0].astype(np.int32)).max() <= 1


def test_qlinear_matmul_per_column_scales():
    rng = np.random.default_rng(9)
    feeds = qlinear_matmul_feeds(rng, np.uint8, np.int8, np.int8, ((5, 12), (12, 7)))
    feeds["b_scale"] = (rng.random(7) * 0.02 + 0.001).astype(np.float32)
    feeds["b_zp"] = random_bytes(rng, np.int8, (7,))
    acc = (feeds["a"].astype(np.int32) - feeds["a_zp"]) @ (feeds["b"].astype(np.int32) - feeds["b_zp"])
    multiplier = (feeds["a_scale"] * feeds["b_scale"] / feeds["y_scale"]).astype(np.float32)
    expected = np.clip(np.rint(acc * multiplier.astype(np.float64) + feeds["y_zp"]), -128, 127).astype(np.int8)
    model = node_model("QLinearMatMul", feeds, opset=10)
    np.testing.assert_array_equal(run_ours(model, feeds)[0], expected)


# Products large enough to be split over two threads: by rows (the tall ones, the last share
# shorter), or by panels in units of rows when there are fewer rows than threads can share.
SPLIT_SHAPES = [((200, 256), (256, 160)), ((20, 256), (256, 320)), ((3, 40, 256), (3, 256, 96))]


@pytest.mark.parametrize("shapes", SPLIT_SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("constant_b", [False, True])
def test_integer_matmuls_split_over_threads(shapes, threads, constant_b):
    rng = np.random.default_rng(len(shapes[0]) + shapes[0][-2])
    options = runtime.RuntimeSessionOptions(num_threads=threads)
    feeds = qlinear_matmul_feeds(rng, np.uint8, np.int8, np.uint8, shapes)
    feeds["b_scale"] = (rng.random(shapes[1][-1]) * 0.002 + 0.0005).astype(np.float32)  # per column
    feeds["b_zp"] = random_bytes(rng, np.int8, (shapes[1][-1],))
    names = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"]
    expected = run_reference(node_model("QLinearMatMul", {n: feeds[n] for n in names}, opset=10), feeds)[0]
    constant = {k: feeds[k] for k in ("b", "b_scale", "b_zp")} if constant_b and len(shapes[1]) == 2 else {}
    graph_feeds = {k: v for k, v in feeds.items() if k not in constant}
    model = make_model([helper.make_node("QLinearMatMul", names, ["y"])], graph_feeds, ["y"], initializers=constant,
                       opset=10)
    assert_same_bits(run_ours(model, graph_feeds, options=options)[0], expected)
    # The int32 product alone (no requantization after the blocks).
    int_feeds = {"a": feeds["a"], "b": feeds["b"], "az": feeds["a_zp"], "bz": feeds["b_zp"]}
    int_model = node_model("MatMulInteger", int_feeds, opset=10)
    np.testing.assert_array_equal(run_ours(int_model, int_feeds, options=options)[0],
                                  run_reference(int_model, int_feeds)[0])


def test_qlinear_matmul_errors():
    rng = np.random.default_rng(10)
    feeds = qlinear_matmul_feeds(rng, np.uint8, np.int8, np.uint8, ((3, 4), (4, 5)), np.float16)
    expect_error(node_model("QLinearMatMul", feeds, opset=10), feeds, "input 1", "float16")
    feeds = qlinear_matmul_feeds(rng, np.uint8, np.int8, np.uint8, ((3, 4), (4, 5)))
    feeds["y_scale"] = np.array(1.0, np.float16)
    expect_error(node_model("QLinearMatMul", feeds, opset=21), feeds, "input 6", "float32", "float16")
    feeds = qlinear_matmul_feeds(rng, np.uint8, np.int8, np.uint8, ((3, 4), (4, 5)))
    feeds["y_scale"] = np.ones(2, np.float32)
    expect_error(node_model("QLinearMatMul", feeds, opset=10), feeds, "y_scale", "one value")


# ---- QLinearMatMul-21 with float8 ------------------------------------------------------------------
# onnx.reference truncates float8 operands to int32, and ORT 1.32 has no CPU kernel for them, so
# the oracle is our rule (docs/quantization.md) written in numpy below.

QLINEAR_INPUTS = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"]


def qlinear_model(feeds, opset=21, constant=()):
    """QLinearMatMul over the present entries of `feeds` (absent zero points as empty names);
    the names in `constant` become initializers."""
    node = helper.make_node("QLinearMatMul", [n if n in feeds else "" for n in QLINEAR_INPUTS], ["y"])
    graph_feeds = {n: v for n, v in feeds.items() if n not in constant}
    return make_model([node], graph_feeds, ["y"], initializers={n: feeds[n] for n in constant}, opset=opset)


def float8_rule_real(f):
    """The real value our rule rounds, before y's zero point: the operands minus their zero points
    in float64, the products summed in ascending k from 0, times a_scale * b_scale / y_scale
    computed in the scales' type."""
    a, b = f["a"], f["b"]
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b

    def centred(x, zp, axis):  # axis 1: one zero point per row of A; 0: per column of B
        x = x.astype(np.float64)
        if zp is None:
            return x
        z = zp.astype(np.float64).reshape(-1)
        return x - (z[0] if z.size == 1 else np.expand_dims(z, axis))

    av, bv = centred(a2, f.get("a_zp"), 1), centred(b2, f.get("b_zp"), 0)
    acc = np.zeros(np.broadcast_shapes(av.shape[:-2], bv.shape[:-2]) + (av.shape[-2], bv.shape[-1]))
    with np.errstate(invalid="ignore", over="ignore"):
        for k in range(av.shape[-1]):
            acc = acc + av[..., :, k:k + 1] * bv[..., k:k + 1, :]
        st = f["a_scale"].dtype
        m = (f["a_scale"].reshape(-1)[:, None] * f["b_scale"].reshape(-1)[None, :]).astype(st)
        m = (m / f["y_scale"].reshape(())).astype(st).astype(np.float64)
        v = acc * m
    return v.reshape(np.matmul(np.zeros(a.shape), np.zeros(b.shape)).shape)


def float8_rule(f):
    """Our QLinearMatMul result with a float8 among a, b, y: float8_rule_real plus y's zero point
    (added only when nonzero for float8), then int8/uint8 as the int path (rint, clip, NaN to the
    minimum) or float8 rounded once from float64 to nearest even, saturating, a NaN the positive one."""
    v = float8_rule_real(f)
    yz = f.get("y_zp")
    yt = yz.dtype if yz is not None else f["a"].dtype
    z = 0.0 if yz is None else float(yz.astype(np.float64))
    with np.errstate(invalid="ignore"):
        if yt in (np.int8, np.uint8):
            lo, hi = type_range(yt)
            q = v + z
            return np.where(np.isnan(q), lo, np.rint(np.clip(q, lo, hi))).astype(yt)
        fmax = float(ml_dtypes.finfo(yt).max)
        q = v + z if z != 0 else v
        # ml_dtypes' cast rounds float64 once but does not saturate: clip first.
        return np.asarray(np.where(np.isnan(q), np.nan, np.clip(q, -fmax, fmax))).astype(yt)


def quant_values(rng, t, shape, spread=4.0):
    if np.dtype(t) in (np.dtype(np.int8), np.dtype(np.uint8)):
        return random_bytes(rng, t, shape)
    return np.asarray(rng.standard_normal(shape) * spread).astype(t)


def float8_matmul_feeds(rng, at, bt, yt, shapes, st=np.float32):
    """Random operands and zero points (float8 ones small, e.g. 0.75), with y_scale chosen so that
    y spreads over about 40 steps (int8/uint8) or +-8 (float8); y's zero point 0 for float8."""
    f = {"a": quant_values(rng, at, shapes[0]), "a_scale": np.array(0.5, st), "a_zp": quant_values(rng, at, (), 1.0),
         "b": quant_values(rng, bt, shapes[1]), "b_scale": np.array(0.25, st), "b_zp": quant_values(rng, bt, (), 1.0),
         "y_scale": np.array(1.0, st)}
    v = float8_rule_real(f)
    spread = float(np.std(v)) if v.size else 1.0
    target = 40.0 if np.dtype(yt).kind in "iu" else 8.0
    f["y_scale"] = np.array(max(spread, 1e-3) / target, st)
    f["y_zp"] = quant_values(rng, yt, ()) if np.dtype(yt).kind in "iu" else np.zeros((), yt)
    return f


def check_float8_rule(f, constant=(), options=None):
    graph_feeds = {n: v for n, v in f.items() if n not in constant}
    ours = run_ours(qlinear_model(f, constant=constant), graph_feeds, options=options)[0]
    assert_same_bits(ours, float8_rule(f))
    return ours


@pytest.mark.parametrize("t", FLOAT8_TYPES)
@pytest.mark.parametrize("role", ["a", "b", "y", "all"])
def test_qlinear_matmul_float8_rule(t, role):
    """Each float8 type as a, as b (with an 8-bit integer other operand), as y (integer operands)
    and as all three; every matmul shape (1-D, broadcast batches, empty); each scale type."""
    at, bt, yt = {"a": (t, np.int8, np.uint8), "b": (np.uint8, t, np.int8), "y": (np.int8, np.uint8, t),
                  "all": (t, t, t)}[role]
    rng = np.random.default_rng(FLOAT8_TYPES.index(t) * 4 + ["a", "b", "y", "all"].index(role))
    for shapes in MATMUL_SHAPES:
        for st in (np.float32, np.float16, ml_dtypes.bfloat16):
            f = float8_matmul_feeds(rng, at, bt, yt, shapes, st)
            ours = check_float8_rule(f)
            if ours.size > 8 and shapes[0][-1] > 0 and np.dtype(yt).kind == "f":
                assert len(np.unique(bits(ours))) > 4  # the oracle is not trivially matched by zeros
    # No zero points at all: 0 for each operand, and y of A's type.
    f = float8_matmul_feeds(rng, at, bt, yt, MATMUL_SHAPES[0])
    del f["a_zp"], f["b_zp"], f["y_zp"]
    assert check_float8_rule(f).dtype == np.dtype(at)


def test_qlinear_matmul_float8_mixed_types_and_y_zero_point():
    rng = np.random.default_rng(30)
    e4m3fn, e4m3fnuz, e5m2, e5m2fnuz = FLOAT8_TYPES
    for at, bt, yt in ((e4m3fn, e5m2, e4m3fnuz), (e5m2fnuz, e4m3fn, e5m2), (e4m3fnuz, np.uint8, e5m2fnuz),
                       (np.int8, e5m2, e4m3fn)):
        check_float8_rule(float8_matmul_feeds(rng, at, bt, yt, ((3, 1, 4, 17), (2, 17, 6))))
    # A nonzero float8 y_zero_point is added before the rounding, as QuantizeLinear does.
    f = float8_matmul_feeds(rng, e4m3fn, e4m3fn, e4m3fn, ((5, 7), (7, 9)))
    f["y_zp"] = np.array(2.0, e4m3fn)
    with_zp = check_float8_rule(f)
    f["y_zp"] = np.zeros((), e4m3fn)
    assert not np.array_equal(bits(with_zp), bits(check_float8_rule(f)))


def test_qlinear_matmul_float8_per_row_and_per_column():
    rng = np.random.default_rng(31)
    e4m3fn, e5m2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
    for yt in (np.int8, e4m3fn):
        for st in (np.float32, np.float16):
            f = float8_matmul_feeds(rng, e4m3fn, e5m2, yt, ((2, 6, 11), (11, 9)), st)
            a_scale = (rng.random(6) * 0.5 + 0.25).astype(st)
            a_zp = (rng.standard_normal(6)).astype(e4m3fn)
            b_scale = (rng.random(9) * 0.5 + 0.25).astype(st)
            b_zp = (rng.standard_normal(9)).astype(e5m2)
            for layout_a, layout_b in (((6,), (9,)), ((6, 1), (1, 9)), ((1, 6, 1), (9,))):
                f.update(a_scale=a_scale.reshape(layout_a), a_zp=a_zp.reshape(layout_a),
                         b_scale=b_scale.reshape(layout_b), b_zp=b_zp.reshape(layout_b))
                check_float8_rule(f)
            # Per row of A only, per column of B only.
            f.update(a_scale=a_scale, a_zp=a_zp, b_scale=np.array(0.5, st), b_zp=np.zeros((), e5m2))
            check_float8_rule(f)
            f.update(a_scale=np.array(0.5, st), a_zp=np.zeros((), e4m3fn), b_scale=b_scale, b_zp=b_zp)
            check_float8_rule(f)


def test_qlinear_matmul_float8_rounds_once_from_float64():
    """y is rounded once, from the float64 value, to nearest even: 1.1875 - 2^-32 gives 1.125
    (rounding through float32 first would give the tie 1.1875, then 1.25)."""
    e5m2, e4m3fn = ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn
    tiny = 2.0 ** -16  # e5m2's smallest subnormal
    a = np.array([[1, 0.125, 0.0625, -tiny], [1, 0.125, 0.0625, 0], [1, 0, 0.0625, 0], [1, 0, 0.0625, tiny]],
                 e5m2)
    b = np.array([[1], [1], [1], [tiny]], e5m2)
    one = np.array(1.0, np.float32)
    f = {"a": a, "a_scale": one, "b": b, "b_scale": one, "y_scale": one, "y_zp": np.zeros((), e4m3fn)}
    ours = check_float8_rule(f)
    np.testing.assert_array_equal(ours.astype(np.float64).reshape(-1), [1.125, 1.25, 1.0, 1.125])


@pytest.mark.parametrize("yt", FLOAT8_TYPES + [np.int8, np.uint8])
def test_qlinear_matmul_float8_saturates_and_propagates_nan(yt):
    e5m2, e4m3fn = ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn
    big = float(ml_dtypes.finfo(e5m2).max)
    # Rows: beyond y's range both ways, +inf, inf - inf (NaN), a NaN operand, 0 * inf (NaN).
    a = np.array([[big, big, 0], [-big, -big, 0], [np.inf, 1, 0], [np.inf, -np.inf, 0], [np.nan, 1, 0],
                  [0, 0, np.inf]], e5m2)
    b = np.array([[1], [1], [0]], e4m3fn)
    one = np.array(1.0, np.float32)
    f = {"a": a, "a_scale": one, "b": b, "b_scale": one, "y_scale": one, "y_zp": np.zeros((), yt)}
    ours = check_float8_rule(f).reshape(-1)
    if np.dtype(yt).kind in "iu":
        lo, hi = type_range(yt)
        np.testing.assert_array_equal(ours, [hi, lo, hi, lo, lo, lo])  # NaN gives the minimum
    else:
        fmax = float(ml_dtypes.finfo(yt).max)
        values = ours.astype(np.float64)
        np.testing.assert_array_equal(values[:3], [fmax, -fmax, fmax])
        assert np.isnan(values[3:]).all()
        assert (bits(ours[3:]) == bits(np.array(np.nan).astype(yt))).all()  # the positive NaN


def test_qlinear_matmul_float8_large_constant_b_and_usage():
    rng = np.random.default_rng(32)
    e4m3fn, e5m2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
    f = float8_matmul_feeds(rng, e4m3fn, e5m2, e4m3fn, ((256, 256), (256, 256)))
    for threads in (1, 2):
        check_float8_rule(f, options=runtime.RuntimeSessionOptions(num_threads=threads))
    check_float8_rule(f, constant=("b", "b_scale", "b_zp"))
    assert "QLinearMatMul/float8e4m3fn/float8-double" in usage_of(qlinear_model(f), f)
    # An int8 constant B (packed at build for the int path) with a float8 y.
    f = float8_matmul_feeds(rng, np.uint8, np.int8, e5m2, ((8, 40), (40, 24)))
    check_float8_rule(f, constant=("b", "b_scale", "b_zp"))
    assert "QLinearMatMul/uint8/float8-double" in usage_of(qlinear_model(f), f)
    # All 8-bit integers: the integer kernel, as before.
    f = qlinear_matmul_feeds(rng, np.uint8, np.int8, np.uint8, ((8, 40), (40, 24)))
    assert any(u.startswith(tuple(f"QLinearMatMul/uint8/{p}" for p in INTEGER_PRODUCTS))
               for u in usage_of(qlinear_model(f), f))


def test_qlinear_matmul_float8_errors():
    rng = np.random.default_rng(33)
    e4m3fn, e5m2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
    f = float8_matmul_feeds(rng, e4m3fn, np.int8, np.uint8, ((3, 4), (4, 5)))
    expect_error(qlinear_model(f, opset=10), f, "input 0 ('a')", "float8e4m3fn", "from version 21", "is 10")
    f = float8_matmul_feeds(rng, np.uint8, np.int8, e5m2, ((3, 4), (4, 5)))
    expect_error(qlinear_model(f, opset=10), f, "input 7 ('y_zp')", "float8e5m2", "from version 21")
    f = float8_matmul_feeds(rng, e4m3fn, np.int8, np.uint8, ((3, 4), (4, 5)))
    f["a_zp"] = np.array(1, np.int8)
    expect_error(qlinear_model(f), f, "input 2 ('a_zp', a zero point)", "type of its operand (float8e4m3fn)",
                 "got int8")
    f["a_zp"] = np.zeros(4, e4m3fn)
    expect_error(qlinear_model(f), f, "input 2 ('a_zp')", "row of A (3 values)", "[4]")
    f["a_zp"] = np.zeros((), e4m3fn)
    f["b_zp"] = np.zeros((4,), np.int8)
    expect_error(qlinear_model(f), f, "input 5 ('b_zp')", "column of B (5 values)", "[4]")
    f = float8_matmul_feeds(rng, e4m3fn, np.int8, e5m2, ((3, 4), (4, 5)))
    f["y_zp"] = np.zeros(2, e5m2)
    expect_error(qlinear_model(f), f, "input 7 ('y_zp', y_zero_point)", "one value", "[2]")
    f = float8_matmul_feeds(rng, e4m3fn, np.int8, e5m2, ((3, 4), (4, 5)))
    f["a_scale"] = np.array(0.5, e4m3fn)
    expect_error(qlinear_model(f), f, "input 1 ('a_scale')", "float8e4m3fn", "does not support")
    f = float8_matmul_feeds(rng, e4m3fn, e5m2, e5m2, ((3, 4), (4, 6)))
    f["b"] = np.zeros((5, 6), e5m2)
    expect_error(qlinear_model(f), f, "cannot be multiplied")


def test_portable_paths_without_avx2(tmp_path):
    """The loops used when the CPU lacks AVX2 (ONNX_LIGHT_DISABLE_AVX2=1), in a fresh process."""
    import os
    import subprocess
    import sys

    script = tmp_path / "portable.py"
    script.write_text(
        "import numpy as np\n"
        "from node_check import node_model, run_ours, run_reference\n"
        "rng = np.random.default_rng(0)\n"
        "x = (rng.standard_normal((3, 70)) * 50).astype(np.float32)\n"
        "x[0, :8] = [0.5, 1.5, 2.5, -0.5, -1.5, np.nan, 1e30, -0.0]\n"
        "for zp in (np.array(3, np.int8), np.array(3, np.uint8)):\n"
        "    f = {'x': x, 's': np.array(0.5, np.float32), 'z': zp}\n"
        "    q = run_ours(node_model('QuantizeLinear', f, opset=13), f)[0]\n"
        "    f2 = {'q': q, 's': np.array(0.5, np.float32), 'z': zp}\n"
        "    d = run_ours(node_model('DequantizeLinear', f2, opset=19), f2)[0]\n"
        "    assert np.array_equal(d, run_reference(node_model('DequantizeLinear', f2, opset=19), f2)[0])\n"
        "    lo, hi = np.iinfo(zp.dtype).min, np.iinfo(zp.dtype).max\n"
        "    ref = np.clip(np.rint(x / np.float32(0.5)) + zp.astype(np.float32), lo, hi)\n"
        "    ref[np.isnan(ref)] = lo\n"
        "    assert np.array_equal(q, ref.astype(zp.dtype)), (q, ref)\n"
        "a = rng.integers(0, 255, (9, 37)).astype(np.uint8); b = rng.integers(-128, 127, (37, 21)).astype(np.int8)\n"
        "f = {'a': a, 'b': b, 'az': np.array(9, np.uint8), 'bz': np.array(-2, np.int8)}\n"
        "m = node_model('MatMulInteger', f, opset=10)\n"
        "assert np.array_equal(run_ours(m, f)[0], run_reference(m, f)[0])\n"
        "print('ok')\n")
    env = dict(os.environ, ONNX_LIGHT_DISABLE_AVX2="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(__file__), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-W", "ignore", str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# ---- DynamicQuantizeLinear -----------------------------------------------------------------------

@pytest.mark.parametrize("case", ["mixed", "positive", "negative", "constant", "zeros", "ties", "large"])
def test_dynamic_quantize_linear(case):
    rng = np.random.default_rng(11)
    x = {
        "mixed": rng.standard_normal((7, 45)) * 3,
        "positive": rng.random((5, 33)) * 10 + 1,
        "negative": -rng.random((100,)) * 4 - 0.5,
        "constant": np.full((3, 3), 2.5),
        "zeros": np.zeros((4, 4)),
        "ties": np.arange(-127.5, 128.0, 0.5).reshape(-1, 1) * (2.0 / 255.0),
        "large": rng.standard_normal((64, 1000)) * 1e4,
    }[case].astype(np.float32)
    model = node_model("DynamicQuantizeLinear", {"x": x}, n_outputs=3, opset=11)
    ours = run_ours(model, {"x": x})
    expected = run_reference(model, {"x": x})
    for a, e in zip(ours, expected):
        assert_same_bits(np.asarray(a), np.asarray(e))
    if case != "zeros":
        # ORT gives scale 1 when min == max; the reference and the spec's formula divide it by 255.
        for a, e in zip(ours, run_ort(model, {"x": x})):
            np.testing.assert_array_equal(a, e)
    assert "DynamicQuantizeLinear/float32/" in "".join(usage_of(model, {"x": x}))


def test_dynamic_quantize_linear_empty_and_nan():
    model = node_model("DynamicQuantizeLinear", {"x": np.zeros((0, 3), np.float32)}, n_outputs=3, opset=11)
    y, scale, zp = run_ours(model, {"x": np.zeros((0, 3), np.float32)})
    assert y.shape == (0, 3) and scale == np.float32(1.0) and zp == 0  # ORT's values
    for a, e in zip((y, scale, zp), run_ort(model, {"x": np.zeros((0, 3), np.float32)})):
        np.testing.assert_array_equal(a, e)
    # NaN is left out of the range and quantizes to 0 (our definition; the reference yields a NaN scale).
    x = np.array([np.nan, -1.0, 2.0], np.float32)
    model = node_model("DynamicQuantizeLinear", {"x": x}, n_outputs=3, opset=11)
    y, scale, zp = run_ours(model, {"x": x})
    ref = run_reference(model, {"x": x[1:]})
    assert scale == ref[1] and zp == ref[2]
    np.testing.assert_array_equal(y, np.concatenate([[0], ref[0]]).astype(np.uint8))


# ---- ConvInteger and QLinearConv -----------------------------------------------------------------

CONV_CASES = [
    # x shape, w shape, attributes
    ((1, 3, 9, 11), (4, 3, 3, 3), {}),
    ((2, 4, 8, 8), (6, 2, 3, 3), {"group": 2, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((1, 3, 7, 7), (5, 3, 1, 1), {}),
    ((1, 2, 10, 9), (3, 2, 3, 2), {"dilations": [2, 1], "pads": [0, 1, 2, 0], "strides": [1, 2]}),
    ((2, 4, 6, 6), (4, 1, 3, 3), {"group": 4, "auto_pad": "SAME_UPPER"}),
    ((1, 3, 13), (2, 3, 4), {"pads": [2, 1]}),
    ((1, 2, 4, 5, 6), (3, 2, 2, 3, 2), {"strides": [1, 2, 2]}),
]


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
@pytest.mark.parametrize("types", BYTE_PAIRS)
def test_conv_integer_against_reference(case, types):
    xs, ws, attrs = CONV_CASES[case]
    rng = np.random.default_rng(case)
    x, w = random_bytes(rng, types[0], xs), random_bytes(rng, types[1], ws)
    xz = random_bytes(rng, types[0], ())
    for wz in (random_bytes(rng, types[1], ()), random_bytes(rng, types[1], (ws[0],))):
        feeds = {"x": x, "w": w, "xz": xz, "wz": wz}
        model = node_model("ConvInteger", feeds, attrs, opset=10)
        if wz.ndim == 1 and len(xs) != 4:
            # onnx.reference expands a per-channel w_zero_point for 2-D convolutions only: the
            # oracle is its float64 Conv of the adjusted operands (exact at these magnitudes).
            wz_b = wz.reshape((-1,) + (1,) * (len(ws) - 1)).astype(np.float64)
            f = {"x": x.astype(np.float64) - float(xz), "w": w.astype(np.float64) - wz_b}
            expected = run_reference(node_model("Conv", f, attrs, opset=11), f)[0].astype(np.int32)
        else:
            expected = run_reference(model, feeds)[0]
        np.testing.assert_array_equal(run_ours(model, feeds)[0], expected)
        constant = node_model("ConvInteger", {"x": x}, attrs, opset=10, initializers={"w": w, "xz": xz, "wz": wz})
        np.testing.assert_array_equal(run_ours(constant, {"x": x})[0], expected)
    bare = node_model("ConvInteger", {"x": x, "w": w}, attrs, opset=10)
    np.testing.assert_array_equal(run_ours(bare, {"x": x, "w": w})[0], run_reference(bare, {"x": x, "w": w})[0])


def test_conv_integer_matches_ort():
    rng = np.random.default_rng(12)
    x, w = random_bytes(rng, np.uint8, (2, 8, 12, 12)), random_bytes(rng, np.uint8, (16, 8, 3, 3))
    feeds = {"x": x, "w": w, "xz": np.array(120, np.uint8), "wz": np.array(131, np.uint8)}
    model = node_model("ConvInteger", feeds, {"pads": [1, 1, 1, 1]}, opset=10)
    np.testing.assert_array_equal(run_ours(model, feeds)[0], run_ort(model, feeds)[0])
    assert any(u.startswith(tuple(f"ConvInteger/uint8/im2col-{p}" for p in INTEGER_PRODUCTS))
               for u in usage_of(model, feeds))


def qlinear_conv_feeds(rng, xt, wt, yt, xs, ws, per_channel, bias):
    feeds = {
        "x": random_bytes(rng, xt, xs), "x_scale": np.array(0.021, np.float32), "x_zp": random_bytes(rng, xt, ()),
        "w": random_bytes(rng, wt, ws),
        "w_scale": ((rng.random(ws[0]) * 0.01 + 0.001) if per_channel else np.array(0.0043)).astype(np.float32),
        "w_zp": random_bytes(rng, wt, (ws[0],) if per_channel else ()),
        "y_scale": np.array(0.17, np.float32), "y_zp": random_bytes(rng, yt, ()),
    }
    if bias:
        feeds["b"] = rng.integers(-5000, 5000, ws[0]).astype(np.int32)
    return feeds


@pytest.mark.parametrize("case", range(len(CONV_CASES) - 1))  # onnx.reference's QLinearConv is 2-D only for per-channel
@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.int8, np.int8),
                                   (np.uint8, np.uint8, np.int8)])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv_against_reference(case, types, per_channel):
    xs, ws, attrs = CONV_CASES[case]
    if per_channel and len(xs) != 4:
        return  # the reference expands a per-channel w_scale over (0, 2, 3): 2-D only
    rng = np.random.default_rng(case + 100)
    for bias in (False, True):
        feeds = qlinear_conv_feeds(rng, *types, xs, ws, per_channel, bias)
        model = node_model("QLinearConv", feeds, attrs, opset=10)
        assert_same_bits(run_ours(model, feeds)[0], run_reference(model, feeds)[0])


def test_qlinear_conv_constant_weights_and_ort():
    rng = np.random.default_rng(13)
    feeds = qlinear_conv_feeds(rng, np.uint8, np.int8, np.uint8, (1, 8, 10, 10), (16, 8, 3, 3), True, True)
    feeds["w"] = rng.integers(-64, 64, (16, 8, 3, 3)).astype(np.int8)  # ORT's u8s8 is exact for |W| < 64
    feeds["w_zp"] = np.zeros(16, np.int8)  # ORT requires symmetric per-channel int8 weights
    constant = {k: feeds.pop(k) for k in ("w", "w_scale", "w_zp")}
    bias = feeds.pop("b")
    names = ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "b"]
    node = helper.make_node("QLinearConv", names, ["y"], pads=[1, 1, 1, 1])
    model = make_model([node], feeds, ["y"], initializers={**constant, "b": bias}, opset=10)
    ours = run_ours(model, feeds)[0]
    assert_same_bits(ours, run_reference(model, feeds)[0])
    assert np.abs(ours.astype(np.int32) - run_ort(model, feeds)[0].astype(np.int32)).max() <= 1


# Shapes whose output splits into several bands of rows (int_conv_vnni.h: RunBands), the last one
# shorter; 40 output channels take an AMX block and VNNI tiles for the rest.
BAND_CASES = [
    ((1, 32, 66, 30), (40, 32, 3, 3), {"pads": [1, 1, 1, 1]}),  # 5 bands of 16, 16, 16, 16, 2 rows
    ((2, 64, 48, 48), (48, 64, 1, 1), {}),  # pointwise, 2 bands of 42 and 6 rows: read from the image
    ((1, 8, 64, 64), (36, 8, 5, 5), {"pads": [2, 2, 2, 2], "strides": [2, 2]}),  # 2 bands of 20 and 12 rows
]
CONV_PRODUCTS = ("bands-u8s8-amx", "bands-u8s8-vnni", "im2col-int16", "im2col-int16-avx2")


@pytest.mark.parametrize("case", range(len(BAND_CASES)))
@pytest.mark.parametrize("types", [(np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)])
@pytest.mark.parametrize("threads", [1, 2])
def test_qlinear_conv_constant_weights_in_bands(case, types, threads):
    xs, ws, attrs = BAND_CASES[case]
    rng = np.random.default_rng(case + 200)
    feeds = qlinear_conv_feeds(rng, *types, xs, ws, True, True)  # per-channel zero points: column sums too
    constant = {k: feeds.pop(k) for k in ("w", "w_scale", "w_zp", "b")}
    names = ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "b"]
    model = make_model([helper.make_node("QLinearConv", names, ["y"], **attrs)], feeds, ["y"], initializers=constant,
                       opset=10)
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    context.set_kernel_usage_enabled(True)
    got = run_ours(model, feeds, context=context, options=runtime.RuntimeSessionOptions(num_threads=threads))[0]
    assert_same_bits(got, run_reference(model, {**feeds, **constant})[0])
    # With VNNI these shapes always take the bands: whole bands per thread, or (two threads and
    # cases 1-2, with two bands) each band split in blocks of output channels.
    usage = [u for u in context.get_kernel_usage() if u.startswith("QLinearConv/")]
    assert len(usage) == 1 and usage[0].split("/")[2] in CONV_PRODUCTS, usage


def test_conv_integer_errors():
    x, w = np.zeros((1, 4, 5, 5), np.uint8), np.zeros((3, 4, 3, 3), np.uint8)
    feeds = {"x": x, "w": w, "xz": np.zeros(2, np.uint8)}
    expect_error(node_model("ConvInteger", feeds, opset=10), feeds, "input 2", "one value")
    feeds = {"x": x, "w": w, "xz": np.array(0, np.uint8), "wz": np.zeros(2, np.uint8)}
    expect_error(node_model("ConvInteger", feeds, opset=10), feeds, "input 3", "output channel ([3])")
    feeds = {"x": x, "w": w, "xz": np.array(0, np.int8)}
    expect_error(node_model("ConvInteger", feeds, opset=10), feeds, "input 2", "uint8", "int8")
    feeds = {"x": x, "w": np.zeros((3, 2, 3, 3), np.uint8)}
    expect_error(node_model("ConvInteger", feeds, opset=10), feeds, "4 channels")
    feeds = {"x": x.reshape(4, 5, 5), "w": w}
    expect_error(node_model("ConvInteger", feeds, opset=10), feeds, "rank")
    rng = np.random.default_rng(1)
    feeds = qlinear_conv_feeds(rng, np.uint8, np.int8, np.uint8, (1, 4, 5, 5), (3, 4, 3, 3), False, True)
    feeds["b"] = np.zeros(3, np.float32)
    expect_error(node_model("QLinearConv", feeds, opset=10), feeds, "input 8", "int32")
    feeds = qlinear_conv_feeds(rng, np.uint8, np.int8, np.uint8, (1, 4, 5, 5), (3, 4, 3, 3), False, False)
    feeds["w_scale"] = np.ones(2, np.float32)
    expect_error(node_model("QLinearConv", feeds, opset=10), feeds, "w_scale", "[3]")


# ---- models quantized by onnxruntime.quantization ------------------------------------------------

def mlp_model(rng):
    w1 = (rng.standard_normal((64, 128)) * 0.2).astype(np.float32)
    b1 = (rng.standard_normal(128) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((128, 10)) * 0.2).astype(np.float32)
    b2 = (rng.standard_normal(10) * 0.1).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]), helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
             helper.make_node("Add", ["h3", "b2"], ["y"])]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        initializer=[helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.ravel()) for n, a in
                     (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def ort_session(path, optimize):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    if not optimize:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def test_quantize_dynamic_mlp_matches_ort(tmp_path):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(20)
    float_path, quant_path = tmp_path / "mlp.onnx", tmp_path / "mlp_int8.onnx"
    onnx.save(mlp_model(rng), float_path)
    quantize_dynamic(str(float_path), str(quant_path), weight_type=QuantType.QInt8)
    quantized = onnx.load(quant_path)
    ops = {n.op_type for n in quantized.graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops, ops
    for batch in (1, 128):
        x = rng.standard_normal((batch, 64)).astype(np.float32)
        ours = run_ours(quantized, {"x": x})[0]
        float_out = ort_session(float_path, True).run(None, {"x": x})[0]
        ort_out = ort_session(quant_path, False).run(None, {"x": x})[0]
        # Same integer arithmetic as ORT except where ORT's u8s8 int16 pair sums saturate.
        np.testing.assert_allclose(ours, ort_out, rtol=0, atol=0.05)
        # And within quantization error of the float model.
        np.testing.assert_allclose(ours, float_out, rtol=0, atol=0.15)
        usage = usage_of(quantized, {"x": x})
        # Each Linear layer's MatMulInteger, Cast, Mul and bias Add run as one node
        # (fuse_matmul_integer_scale), equal bit for bit to the nodes as written.
        fused = [u for u in usage if u.startswith("MatMulIntegerToFloat/uint8/")]
        assert len(fused) == 2 and all(u.split("/")[2].removesuffix("-prepacked") in INTEGER_PRODUCTS for u in fused)
        assert not any(u.startswith(("MatMulInteger/", "Cast/")) for u in usage), usage
        assert any(u.startswith("DynamicQuantizeLinear/float32") for u in usage)
        unfused = runtime.RuntimeSessionOptions(fuse_matmul_integer_scale=False)
        np.testing.assert_array_equal(ours, run_ours(quantized, {"x": x}, options=unfused)[0])


class _Calibration:
    def __init__(self, batches):
        self._batches = iter(batches)

    def get_next(self):
        x = next(self._batches, None)
        return None if x is None else {"x": x}


def cnn_model(rng):
    w1 = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    b1 = (rng.standard_normal(8) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((16, 8, 3, 3)) * 0.2).astype(np.float32)
    b2 = (rng.standard_normal(16) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["y"])]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])],
        initializer=[helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.ravel()) for n, a in
                     (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def quantized_qdq_cnn(tmp_path, per_channel, rng):
    """cnn_model quantized by quantize_static in the QDQ format (uint8 activations, int8 weights):
    (quantized model, float model path, quantized model path)."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    float_path, quant_path = tmp_path / "cnn.onnx", tmp_path / "cnn_qdq.onnx"
    onnx.save(cnn_model(rng), float_path)
    calibration = [rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(8)]
    quantize_static(str(float_path), str(quant_path), _Calibration(calibration), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=per_channel)
    return onnx.load(quant_path), float_path, quant_path


@pytest.mark.parametrize("per_channel", [False, True])
def test_quantize_static_qdq_cnn_matches_ort(tmp_path, per_channel):
    rng = np.random.default_rng(21)
    quantized, float_path, quant_path = quantized_qdq_cnn(tmp_path, per_channel, rng)
    ops = [n.op_type for n in quantized.graph.node]
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    ours = run_ours(quantized, {"x": x})[0]
    # Unoptimised ORT runs the same Q/DQ nodes and a float Conv: equal up to float summation order
    # (a rounding tie in a later QuantizeLinear can move one step).
    ort_plain = ort_session(quant_path, False).run(None, {"x": x})[0]
    step = float(max(abs(ours).max(), 1e-6)) / 64
    assert np.mean(ours != ort_plain) < 0.01
    np.testing.assert_allclose(ours, ort_plain, rtol=0, atol=step)
    # Optimised ORT fuses the QDQ pairs into integer kernels; the float model is the third opinion.
    ort_fused = ort_session(quant_path, True).run(None, {"x": x})[0]
    float_out = ort_session(float_path, True).run(None, {"x": x})[0]
    # Fused ORT moves a few quantization steps from its own unfused run (u8s8 int16 saturation,
    # requantization in float32); we are no further from it than that.
    assert np.abs(ours - ort_fused).max() <= np.abs(ort_plain - ort_fused).max() + step
    np.testing.assert_allclose(ours, float_out, rtol=0, atol=0.2)


def test_empty_inputs():
    x = np.zeros((3, 0, 5), np.float32)
    for attrs, scale in (({}, np.float32(1)), ({"axis": 2}, np.ones(5, np.float32)),
                         ({"axis": 1, "block_size": 2}, np.ones((3, 0, 5), np.float32))):
        model, feeds = quantize(x, scale, None, attrs, 21)
        out = run_ours(model, feeds)[0]
        assert out.shape == (3, 0, 5) and out.dtype == np.uint8
        model, feeds = dequantize(out, scale, None, attrs, 21)
        assert run_ours(model, feeds)[0].shape == (3, 0, 5)
    feeds = {"x": np.zeros((0, 2, 5, 5), np.uint8), "w": np.zeros((3, 2, 3, 3), np.uint8)}
    assert run_ours(node_model("ConvInteger", feeds, opset=10), feeds)[0].shape == (0, 3, 3, 3)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 7])
def test_matmul_integer_few_rows_int8_panels(m):
    # Symmetric int8 B (zero point 0) keeps int8 panels, read by the one-to-three-row tiles.
    rng = np.random.default_rng(m)
    for k in (1, 2, 3, 33, 768):
        a, b = random_bytes(rng, np.uint8, (m, k)), random_bytes(rng, np.int8, (k, 37))
        model = node_model("MatMulInteger", {"a": a}, opset=10, initializers={"b": b, "az": np.array(100, np.uint8)})
        np.testing.assert_array_equal(run_ours(model, {"a": a})[0], (a.astype(np.int32) - 100) @ b.astype(np.int32))


def test_dequantize_results_beyond_float32_become_infinity():
    # int32 x (float64 arithmetic in the reference) times a large scale: +-Inf after rounding to
    # float32, exactly as numpy's astype gives (and no undefined conversion here).
    x = np.array([2**31 - 1, -(2**31), 5, 0], np.int32)
    check_exact(dequantize(x, np.float32(3e38), np.array(-7, np.int32), opset=21))
    check_exact(dequantize(x, np.float32(3e38), np.array(-7, np.int32), {"output_dtype": TensorProto.FLOAT16}, 23))


def test_integer_products_split_over_threads():
    import onnx_light.runtime as runtime

    rng = np.random.default_rng(30)
    a, b = random_bytes(rng, np.uint8, (3, 70, 200)), random_bytes(rng, np.int8, (200, 300))
    model = node_model("MatMulInteger", {"a": a}, opset=10, initializers={"b": b, "az": np.array(7, np.uint8)})
    options = runtime.RuntimeSessionOptions(num_threads=2)
    np.testing.assert_array_equal(run_ours(model, {"a": a}, options=options)[0],
                                  (a.astype(np.int32) - 7) @ b.astype(np.int32))
    x, w = random_bytes(rng, np.uint8, (2, 16, 20, 20)), random_bytes(rng, np.int8, (32, 16, 3, 3))
    feeds = {"x": x, "w": w, "xz": np.array(3, np.uint8)}
    model = node_model("ConvInteger", feeds, {"pads": [1, 1, 1, 1]}, opset=10)
    np.testing.assert_array_equal(run_ours(model, feeds, options=options)[0], run_reference(model, feeds)[0])
    # Per-tensor QuantizeLinear / DequantizeLinear split ranges of 64k elements.
    x = awkward_floats((3, 100_000), seed=32)
    model, feeds = quantize(x, np.float32(0.7), np.array(-5, np.int8), opset=21)
    q = run_ours(model, feeds, options=options)[0]
    assert_same_bits(q, run_reference(model, feeds)[0])
    model, feeds = dequantize(q, np.float32(0.7), np.array(-5, np.int8), opset=21)
    assert_same_bits(run_ours(model, feeds, options=options)[0], run_reference(model, feeds)[0])


def test_one_element_scale_of_any_rank_is_per_tensor_from_21():
    x = awkward_floats((3, 4), seed=31)
    scale, zp = np.full((1, 1), 0.3, np.float32), np.full((1, 1), 4, np.int8)
    for opset in (21, 25):
        q = check_exact(quantize(x, scale, zp, opset=opset))
        check_exact(dequantize(q, scale, zp, opset=opset))
    model, feeds = quantize(x, scale, zp, opset=19)  # the scale is a scalar or 1-D before 21
    expect_error(model, feeds, "must be a scalar or a 1-D tensor")
