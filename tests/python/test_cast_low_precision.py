"""Cast and CastLike between every pair of types their schemas allow that involves a float8,
float8e8m0, float4, float6, int4/uint4 or int2/uint2 type, at each version that added types
(19, 21, 23, 24, 25, 28), against onnx.reference. Results the spec leaves undefined (a float out
of an integer type's range, NaN to an integer) are compared with our rule instead: for
int4/uint4/int2/uint2 truncate, saturate, NaN -> 0; for the other integer types whatever Cast
from float32 gives (one float-to-integer rule for all sources). Strings, which the reference
cannot cast to these types, follow our definition (docs/element-types.md)."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference.ops.op_cast import cast_to

from node_check import make_model, node_model, run_ours

NEW_TYPES = {
    TensorProto.FLOAT8E4M3FN: 19, TensorProto.FLOAT8E4M3FNUZ: 19, TensorProto.FLOAT8E5M2: 19,
    TensorProto.FLOAT8E5M2FNUZ: 19, TensorProto.UINT4: 21, TensorProto.INT4: 21, TensorProto.FLOAT4E2M1: 23,
    TensorProto.FLOAT8E8M0: 24, TensorProto.UINT2: 25, TensorProto.INT2: 25, TensorProto.FLOAT6E2M3: 28,
    TensorProto.FLOAT6E3M2: 28,
}
PACKED_INTS = {TensorProto.UINT4, TensorProto.INT4, TensorProto.UINT2, TensorProto.INT2}


def name(code: int) -> str:
    return TensorProto.DataType.Name(code).lower()


def schema_types(op: str, version: int) -> list[int]:
    """The tensor element types of `op`'s input at `version`, strings and complex excluded."""
    schema = onnx.defs.get_schema(op, version)
    allowed = schema.type_constraints[0].allowed_type_strs
    codes = [getattr(TensorProto, s[len("tensor("):-1].upper()) for s in allowed]
    return [c for c in codes if c not in (TensorProto.STRING, TensorProto.COMPLEX64, TensorProto.COMPLEX128)]


def np_dtype(code: int) -> np.dtype:
    return np.dtype(helper.tensor_dtype_to_np_dtype(code))


def is_float_like(code: int) -> bool:
    return np_dtype(code).kind == "f" or (np_dtype(code).kind == "V" and code not in PACKED_INTS)


def int_range(code: int) -> tuple[int, int]:
    if code == TensorProto.BOOL:
        return 0, 1
    return int(ml_dtypes.iinfo(np_dtype(code)).min), int(ml_dtypes.iinfo(np_dtype(code)).max)


BASE = np.array([0.0, -0.0, 0.3, -1.7, 2.5, 3.5, -3.5, 7.9, -8.2, 15.5, 100.0, -300.0, 1e6, -1e-7, 448.0,
                 np.inf, -np.inf, np.nan], dtype=np.float64)
INTS = np.array([-300, -9, -8, -3, -2, -1, 0, 1, 2, 3, 4, 7, 8, 15, 16, 255, 300, 2**40], dtype=np.int64)


def source_values(code: int) -> np.ndarray:
    """A 2-D array of type `code`: every code point of a low-precision type, else a spread of values."""
    dtype = np_dtype(code)
    if code in NEW_TYPES:
        bits = 4 if code in (TensorProto.FLOAT4E2M1, TensorProto.UINT4, TensorProto.INT4) else \
            2 if code in (TensorProto.UINT2, TensorProto.INT2) else 6 if code in (27, 28) else 8
        flat = np.arange(2**bits, dtype=np.uint8).view(dtype)
    elif code == TensorProto.BOOL:
        flat = np.array([True, False, True, True])
    elif dtype.kind in "iu":
        lo, hi = int_range(code)
        flat = INTS[(INTS >= lo) & (INTS <= hi)].astype(dtype)
    else:
        flat = BASE.astype(dtype)
    if flat.size % 2:
        flat = np.concatenate([flat, flat[:1]])
    return flat.reshape(2, -1)


def defined(x: np.ndarray, from_code: int, to_code: int) -> np.ndarray:
    """Elements whose cast the spec defines: all, except a float that is NaN or outside an integer
    target's range (after truncation)."""
    if not is_float_like(from_code) or is_float_like(to_code) or to_code == TensorProto.BOOL:
        return np.ones(x.shape, bool)
    v = x.astype(np.float64)
    lo, hi = int_range(to_code)
    with np.errstate(invalid="ignore"):
        t = np.trunc(v)
        # hi + 1 is a power of two, exact in float64 (hi itself may not be: 2**63 - 1).
        return ~np.isnan(v) & (t >= lo) & (t < float(hi + 1))


def our_float_to_packed_int(x: np.ndarray, to_code: int) -> np.ndarray:
    """The runtime's rule for int4/uint4/int2/uint2 where the spec says nothing (ml_dtypes' rule):
    truncate; NaN, infinities and values out of range give 0."""
    lo, hi = int_range(to_code)
    with np.errstate(invalid="ignore"):
        t = np.trunc(x.astype(np.float64))
        ok = ~np.isnan(t) & (t >= lo) & (t <= hi)
    return np.where(ok, np.nan_to_num(t), 0).astype(np.int64).astype(np_dtype(to_code))


E8M0_NAN = np.uint8(0xFF)
E8M0_MAX = np.uint8(0xFE)


def e8m0_expected(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """onnx.reference's float8e8m0 result, with the two points Cast-24's table states and the
    reference script does not follow: +-Inf gives E8M0_MAX when saturating, NaN otherwise; +-0
    gives NaN when not saturating."""
    expected = cast_to(x, TensorProto.FLOAT8E8M0, saturate, round_mode).view(np.uint8).copy()
    with np.errstate(over="ignore"):
        v = x.astype(np.float32)  # the reference and the runtime see a float64 source as float32
    expected[np.isinf(v)] = E8M0_MAX if saturate else E8M0_NAN
    if not saturate:
        expected[v == 0] = E8M0_NAN
    return expected.view(ml_dtypes.float8_e8m0fnu)


def assert_cast_matches(actual: np.ndarray, x: np.ndarray, from_code: int, to_code: int, **attrs) -> None:
    saturate = bool(attrs.get("saturate", 1))
    if to_code == TensorProto.FLOAT8E8M0:
        expected = e8m0_expected(x, saturate, attrs.get("round_mode", "up"))
    else:
        expected = cast_to(x, to_code, saturate, attrs.get("round_mode", "up"))
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape
    ok = defined(x, from_code, to_code)
    a, e = actual[ok], expected[ok]
    if is_float_like(to_code):
        nan = np.isnan(e.astype(np.float64))
        np.testing.assert_array_equal(np.isnan(a.astype(np.float64)), nan)
        width = f"u{a.dtype.itemsize}"
        np.testing.assert_array_equal(a[~nan].view(width), e[~nan].view(width))
    else:
        np.testing.assert_array_equal(a.astype(np.int64), e.astype(np.int64))
    if not ok.all():
        # Packed integer targets: our rule. Other integer targets: whatever Cast gives for the
        # same value as float32 (the runtime's one float-to-integer rule, FloatToInt).
        undefined = x[~ok]
        if to_code in PACKED_INTS:
            rule = our_float_to_packed_int(undefined, to_code)
        else:
            rule = run_cast(undefined.astype(np.float32), to_code, 23)
        np.testing.assert_array_equal(actual[~ok].astype(np.int64), rule.astype(np.int64))


def run_cast(x, to_code, opset, **attrs):
    return run_ours(node_model("Cast", {"x": x}, {"to": to_code, **attrs}, opset=opset), {"x": x})[0]


def run_cast_like(x, like, opset, **attrs):
    return run_ours(node_model("CastLike", {"x": x, "like": like}, attrs, opset=opset), {"x": x, "like": like})[0]


def pairs(op: str, version: int, newest_only: bool):
    """(from, to) pairs allowed at `version` with a type new at `version` (or, with newest_only
    False, any low-precision type) on at least one side."""
    types = schema_types(op, version)
    for a, b in itertools.product(types, types):
        if a == b:
            continue
        sides = {NEW_TYPES.get(a, 0), NEW_TYPES.get(b, 0)}
        if (newest_only and version in sides) or (not newest_only and sides != {0}):
            yield a, b


CAST_CASES = [(v, a, b) for v in (19, 21, 23, 24, 25) for a, b in pairs("Cast", v, True)] + \
             [(28, a, b) for a, b in pairs("Cast", 28, False)]


@pytest.mark.parametrize("version,from_code,to_code", CAST_CASES,
                         ids=[f"{v}-{name(a)}-to-{name(b)}" for v, a, b in CAST_CASES])
def test_cast_matches_the_reference(version, from_code, to_code):
    x = source_values(from_code)
    assert_cast_matches(run_cast(x, to_code, version), x, from_code, to_code)


LIKE_CASES = [(v, a, b) for v in (19, 21, 23, 24) for a, b in pairs("CastLike", v, True)] + \
             [(25, a, b) for a, b in pairs("CastLike", 25, False)]


@pytest.mark.parametrize("version,from_code,to_code", LIKE_CASES,
                         ids=[f"{v}-{name(a)}-to-{name(b)}" for v, a, b in LIKE_CASES])
def test_cast_like_matches_the_reference(version, from_code, to_code):
    x = source_values(from_code)
    like = source_values(to_code)[:1, :1]
    assert_cast_matches(run_cast_like(x, like, version), x, from_code, to_code)


@pytest.mark.parametrize("to_code", [c for c in NEW_TYPES if NEW_TYPES[c] == 19], ids=name)
@pytest.mark.parametrize("op", ["Cast", "CastLike"])
def test_saturate_zero(op, to_code):
    x = source_values(TensorProto.FLOAT)
    if op == "Cast":
        y = run_cast(x, to_code, 19, saturate=0)
    else:
        y = run_cast_like(x, source_values(to_code)[:1, :1], 19, saturate=0)
    assert_cast_matches(y, x, TensorProto.FLOAT, to_code, saturate=0)


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [1, 0])
def test_round_mode_cast_and_cast_like(saturate, round_mode):
    x = np.array([[0.124, 0.25, 0.3, 1.1, 1.5, 2.9, 3.0, 1e30, 7e-39]], dtype=np.float32)
    attrs = {"saturate": saturate, "round_mode": round_mode}
    assert_cast_matches(run_cast(x, TensorProto.FLOAT8E8M0, 24, **attrs), x, TensorProto.FLOAT,
                        TensorProto.FLOAT8E8M0, **attrs)
    # CastLike takes round_mode too (onnx.reference's CastLike ignores it and always rounds up).
    like = np.ones((1, 1), ml_dtypes.float8_e8m0fnu)
    assert_cast_matches(run_cast_like(x, like, 24, **attrs), x, TensorProto.FLOAT, TensorProto.FLOAT8E8M0, **attrs)


def test_float_to_packed_integers_truncates_and_zeroes_out_of_range():
    x = np.array([-9.5, -8.9, -1.5, -0.5, 0.5, 7.9, 8.0, 16.0, 1e9, -np.inf, np.inf, np.nan], np.float32)
    expected = {
        TensorProto.INT4: [0, -8, -1, 0, 0, 7, 0, 0, 0, 0, 0, 0],
        TensorProto.UINT4: [0, 0, 0, 0, 0, 7, 8, 0, 0, 0, 0, 0],
        TensorProto.INT2: [0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        TensorProto.UINT2: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    }
    for code, values in expected.items():
        np.testing.assert_array_equal(run_cast(x, code, 25).astype(np.int64), values, err_msg=name(code))


def test_integers_to_packed_integers_wrap():
    x = np.array([-9, -8, 7, 8, 15, 16, 17, 300, -300], np.int32)
    assert run_cast(x, TensorProto.INT4, 21).astype(int).tolist() == [7, -8, 7, -8, -1, 0, 1, -4, 4]
    assert run_cast(x, TensorProto.UINT2, 25).astype(int).tolist() == [3, 0, 3, 0, 3, 0, 1, 0, 0]
    big = np.array([2**63 + 5], np.uint64)
    assert run_cast(big, TensorProto.UINT4, 21).astype(int).tolist() == [5]


def test_strings_to_and_from_low_precision_types():
    # Numbers print with their exact value; text parses like Python's float()/int() first.
    x = np.array(["0.47", "-3.25", "1e-7", "1000", "nan", "-inf"], dtype=object)
    f8 = run_cast(x, TensorProto.FLOAT8E4M3FN, 19)
    same = cast_to(np.array([0.47, -3.25, 1e-7, 1000, np.nan, -np.inf]), TensorProto.FLOAT8E4M3FN, True)
    np.testing.assert_array_equal(f8.view(np.uint8), same.view(np.uint8))
    back = run_cast(f8, TensorProto.STRING, 19)
    assert back.tolist() == ["0.46875", "-3.25", "0.0", "448.0", "nan", "-448.0"]
    i4 = run_cast(np.array(["7", "-8", " 3 ", "17"], dtype=object), TensorProto.INT4, 21)
    assert i4.astype(int).tolist() == [7, -8, 3, 1]
    assert run_cast(i4, TensorProto.STRING, 21).tolist() == ["7", "-8", "3", "1"]
    with pytest.raises(ValueError, match=r"'2\.5'.*int4"):
        run_cast(np.array(["2.5"], dtype=object), TensorProto.INT4, 21)


@pytest.mark.parametrize("to_code,opset", [(TensorProto.FLOAT8E4M3FN, 18), (TensorProto.INT4, 20),
                                           (TensorProto.FLOAT4E2M1, 22), (TensorProto.FLOAT8E8M0, 23),
                                           (TensorProto.INT2, 24), (TensorProto.FLOAT6E2M3, 27)])
def test_cast_refuses_a_type_before_its_version(to_code, opset):
    x = np.ones((2,), np.float32)
    model = node_model("Cast", {"x": x}, {"to": to_code}, opset=opset)
    model.graph.node[0].name = "c"
    with pytest.raises(ValueError, match=rf"'c'.*{name(to_code)}.*opset {opset}.*from opset {NEW_TYPES[to_code]}"):
        run_ours(model, {"x": x})
    # The input side too.
    y = np.zeros((2,), helper.tensor_dtype_to_np_dtype(to_code))
    model = node_model("Cast", {"x": y}, {"to": TensorProto.FLOAT}, opset=opset)
    with pytest.raises(ValueError, match=rf"{name(to_code)}.*does not accept"):
        run_ours(model, {"x": y})


def test_cast_like_never_accepts_float6():
    x = np.ones((2,), np.float32)
    like = np.zeros((1,), ml_dtypes.float6_e2m3fn)
    with pytest.raises(ValueError, match="no version of CastLike"):
        run_cast_like(x, like, 25)


def test_bad_round_mode_is_refused():
    x = np.ones((2,), np.float32)
    model = node_model("Cast", {"x": x}, {"to": TensorProto.FLOAT8E8M0, "round_mode": "sideways"}, opset=24)
    with pytest.raises(ValueError, match="round_mode.*sideways"):
        run_ours(model, {"x": x})


def test_cast_of_a_strided_int4_view():
    # Transpose of an int4 initializer feeds a Cast: the strided packed input is read correctly.
    w = np.arange(-8, 7, dtype=np.int8).reshape(3, 5).astype(ml_dtypes.int4)
    nodes = [helper.make_node("Transpose", ["w"], ["t"]), helper.make_node("Cast", ["t"], ["y"], to=TensorProto.FLOAT)]
    model = make_model(nodes, {}, ["y"], initializers={"w": w}, opset=23)
    np.testing.assert_array_equal(run_ours(model, {})[0], w.T.astype(np.float32))
