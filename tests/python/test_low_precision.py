"""float32/float64 <-> the low-precision floats through Cast, bit for bit against onnx.reference
(onnx.numpy_helper.saturate_cast, to_float8e8m0 and ml_dtypes): every code point decoded, and a
large set of float32 inputs (random bit patterns, every value and midpoint of the format and the
floats next to them, the specials) encoded, with and without saturate. Where Cast-24's table is
explicit and the reference script differs (float8e8m0 of +-Inf when saturating, of zero when not)
we follow the table and test that separately."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto
from onnx.numpy_helper import to_float8e8m0
from onnx.reference.ops.op_cast import cast_to

from node_check import node_model, run_ours

F8 = {
    TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
    TensorProto.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
    TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2,
    TensorProto.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
}
SMALL = {
    TensorProto.FLOAT4E2M1: ml_dtypes.float4_e2m1fn,
    TensorProto.FLOAT6E2M3: ml_dtypes.float6_e2m3fn,
    TensorProto.FLOAT6E3M2: ml_dtypes.float6_e3m2fn,
}
MINIFLOATS = {**F8, **SMALL}
ALL_LOW = {**MINIFLOATS, TensorProto.FLOAT8E8M0: ml_dtypes.float8_e8m0fnu}
BITS = {t: 4 if t == TensorProto.FLOAT4E2M1 else 6 if t in SMALL else 8 for t in ALL_LOW}
NAMES = {t: np.dtype(d).name for t, d in ALL_LOW.items()}
OPSET = 28  # Cast-28 accepts every type


def cast(x: np.ndarray, to: int, **attrs) -> np.ndarray:
    model = node_model("Cast", {"x": x}, {"to": to, **attrs}, opset=OPSET)
    return run_ours(model, {"x": x})[0]


def codes_of(t: int) -> np.ndarray:
    return np.arange(2 ** BITS[t], dtype=np.uint8).view(ALL_LOW[t])


def same_bits(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    a = actual.view(np.uint8 if actual.dtype.itemsize == 1 else f"u{actual.dtype.itemsize}")
    e = expected.view(a.dtype)
    bad = np.flatnonzero(a.ravel() != e.ravel())
    assert bad.size == 0, f"{bad.size} of {a.size} differ; first at {bad[:5]}: {a.ravel()[bad[:5]]} vs {e.ravel()[bad[:5]]}"


def same_floats(actual: np.ndarray, expected: np.ndarray) -> None:
    """Equal bits, except that any NaN matches any NaN (payloads are not specified)."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    nan = np.isnan(expected.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(actual.astype(np.float64)), nan)
    same_bits(actual[~nan], expected[~nan])


def float32_inputs(t: int, seed: int = 0) -> np.ndarray:
    """Random float32 bit patterns (every exponent, NaN payloads, subnormals), every value of the
    format with the midpoints to its neighbours and the floats either side, random values across
    the format's range, and the specials."""
    rng = np.random.default_rng(seed)
    parts = [rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32).view(np.float32)]
    values = np.unique(np.abs(codes_of(t).astype(np.float64)))
    values = values[np.isfinite(values)]
    mids = (values[:-1] + values[1:]) / 2
    grid = np.concatenate([values, mids, [values[-1] * 1.5, values[-1] * 2]]).astype(np.float32)
    near = np.concatenate([grid, np.nextafter(grid, np.float32(0)), np.nextafter(grid, np.float32(np.inf))])
    parts += [near, -near]
    top = float(values[-1]) * 3
    parts.append(rng.uniform(-top, top, 50_000).astype(np.float32))
    parts.append(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38],
                          dtype=np.float32))
    return np.concatenate(parts)


@pytest.mark.parametrize("t", list(ALL_LOW), ids=NAMES.get)
def test_every_code_decodes_like_the_reference(t):
    x = codes_of(t)
    for to, dtype in ((TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64),
                      (TensorProto.FLOAT16, np.float16), (TensorProto.BFLOAT16, ml_dtypes.bfloat16)):
        same_floats(cast(x, to), cast_to(x, to, saturate=True))
        assert cast(x, to).dtype == np.dtype(dtype)


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("t", list(MINIFLOATS), ids=NAMES.get)
def test_float32_encodes_like_the_reference(t, saturate):
    x = float32_inputs(t)
    same_bits(cast(x, t, saturate=saturate), cast_to(x, t, saturate=bool(saturate)))


@pytest.mark.parametrize("saturate", [1, 0])
@pytest.mark.parametrize("t", list(MINIFLOATS), ids=NAMES.get)
def test_float16_and_float64_encode_like_the_reference(t, saturate):
    x32 = float32_inputs(t, seed=1)
    for x in (x32.astype(np.float16), x32.astype(np.float64)):
        same_bits(cast(x, t, saturate=saturate), cast_to(x, t, saturate=bool(saturate)))


@pytest.mark.parametrize("t", list(MINIFLOATS), ids=NAMES.get)
def test_float64_rounds_once(t):
    """Doubles a hair off each midpoint: the nearest float32 is the midpoint itself, so a
    conversion through float32 would round to even instead of to the nearer side."""
    values = np.unique(np.abs(codes_of(t).astype(np.float64)))
    values = values[np.isfinite(values)]
    mids = (values[:-1] + values[1:]) / 2
    x = np.concatenate([mids * (1 + 1e-12), mids * (1 - 1e-12), -mids * (1 + 1e-12)])
    ours = cast(x, t)
    same_bits(ours, cast_to(x, t, saturate=True))
    # ... and that differs from going through float32 somewhere.
    through = cast_to(x.astype(np.float32), t, saturate=True)
    assert np.any(ours.view(np.uint8) != through.view(np.uint8))


def test_bfloat16_encodes_like_the_reference():
    x = float32_inputs(TensorProto.FLOAT8E4M3FN, seed=2).astype(ml_dtypes.bfloat16)
    for t in MINIFLOATS:
        same_bits(cast(x, t), cast_to(x, t, saturate=True))


E8M0_SPECIAL = [np.inf, -np.inf, 0.0, -0.0]


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [1, 0])
def test_float8e8m0_matches_the_reference(saturate, round_mode):
    x = float32_inputs(TensorProto.FLOAT8E8M0, seed=3)
    x = x[~np.isin(x, E8M0_SPECIAL)]  # the table's cases, checked below
    ours = cast(x, TensorProto.FLOAT8E8M0, saturate=saturate, round_mode=round_mode)
    same_bits(ours, to_float8e8m0(x, bool(saturate), round_mode))
    for dtype in (np.float16, np.float64):
        y = x.astype(dtype)
        y = y[np.isfinite(y) | np.isnan(y)]
        y = y[y != 0]
        same_bits(cast(y, TensorProto.FLOAT8E8M0, saturate=saturate, round_mode=round_mode),
                  to_float8e8m0(y, bool(saturate), round_mode))


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
def test_float8e8m0_follows_the_cast_24_table(round_mode):
    x = np.array(E8M0_SPECIAL + [np.nan], dtype=np.float32)
    sat = cast(x, TensorProto.FLOAT8E8M0, saturate=1, round_mode=round_mode).view(np.uint8)
    # Inf -> E8M0_MAX (2^127), zero -> the smallest value (2^-127), NaN -> NaN.
    np.testing.assert_array_equal(sat, [0xFE, 0xFE, 0x00, 0x00, 0xFF])
    plain = cast(x, TensorProto.FLOAT8E8M0, saturate=0, round_mode=round_mode).view(np.uint8)
    np.testing.assert_array_equal(plain, [0xFF] * 5)


def test_saturate_zero_keeps_infinities_and_nans_per_format():
    x = np.array([np.inf, -np.inf, 1e6, -1e6, np.nan], dtype=np.float32)
    expected = {
        TensorProto.FLOAT8E4M3FN: [0x7F, 0xFF, 0x7F, 0xFF, 0x7F],
        TensorProto.FLOAT8E4M3FNUZ: [0x80] * 5,
        TensorProto.FLOAT8E5M2: [0x7C, 0xFC, 0x7C, 0xFC, 0x7E],
        TensorProto.FLOAT8E5M2FNUZ: [0x80] * 5,
        # no infinity or NaN: saturated, and NaN becomes a zero (the reference's choice)
        TensorProto.FLOAT4E2M1: [0x7, 0xF, 0x7, 0xF, 0x8],
    }
    for t, codes in expected.items():
        np.testing.assert_array_equal(cast(x, t, saturate=0).view(np.uint8), codes, err_msg=NAMES[t])
