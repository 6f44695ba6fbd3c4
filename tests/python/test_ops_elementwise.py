"""Elementwise operators against onnx.reference: binary arithmetic, unary math, activations,
variadic Min/Max/Mean/Sum, comparisons and logic, Where, Cast and CastLike."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import assert_close, make_model, node_model, random, run_ours, run_reference

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.float32, np.float16, np.float64, BF16]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
SIGNED_INTS = [np.int8, np.int16, np.int32, np.int64]
NUMERIC = FLOATS + INTS
NODE = "elementwise_node"


def dname(dtype) -> str:
    return np.dtype(dtype).name


def tolerance(dtype):
    dtype = np.dtype(dtype)
    if dtype == BF16:
        return 2e-2, 2e-2
    if dtype == np.float16:
        return 2e-3, 2e-3
    if dtype == np.float64:
        return 1e-12, 1e-12
    return 1e-5, 1e-6


def values(shape, dtype, low=-3.0, high=3.0, seed=0):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.asarray(random(shape, np.bool_, seed=seed))
    if dtype == BF16:
        return random(shape, np.float32, low, high, seed).astype(BF16)
    if dtype.kind == "u":
        return random(shape, dtype, 0, high, seed)
    return random(shape, dtype, low, high, seed)


def named(model):
    model.graph.node[0].name = NODE
    return model


def compare(actual, expected, rtol=None, atol=None):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        e = np.asarray(e)
        if e.dtype.kind in "US" or a.dtype == object:
            assert a.shape == e.shape
            assert [str(v) for v in a.ravel()] == [str(v) for v in e.ravel()]
            continue
        r, t = tolerance(e.dtype) if e.dtype.kind == "f" or e.dtype == BF16 else (0, 0)
        r, t = rtol if rtol is not None else r, atol if atol is not None else t
        if e.dtype == BF16:
            assert a.dtype == BF16, f"dtype {a.dtype} != bfloat16"
            assert_close(a.astype(np.float32), e.astype(np.float32), r, t)
        else:
            assert_close(a, e, r, t)


def check(op, inputs, attrs=None, opset=23, rtol=None, atol=None, initializers=None):
    model = named(node_model(op, inputs, attrs, opset=opset, initializers=initializers))
    expected = run_reference(model, dict(inputs))
    actual = run_ours(model, dict(inputs))
    compare(actual, expected, rtol, atol)
    return actual


def usage(model, feeds):
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    run_ours(model, feeds, context=ctx)
    return ctx.get_kernel_usage()


# ---- binary arithmetic ---------------------------------------------------------------------------

BINARY = ["Add", "Sub", "Mul", "Div", "Pow", "Mod"]
BROADCAST_SHAPES = [
    ((2, 3, 4), (2, 3, 4)),
    ((2, 3, 4), (3, 1)),
    ((2, 3, 4), (4,)),
    ((2, 3, 4), ()),
    ((), (2, 3, 4)),
    ((0, 3), (3,)),
    ((1, 3, 1), (2, 1, 4)),
    ((2, 1, 4, 1), (3, 1, 5)),
]


def binary_inputs(op, shape_a, shape_b, dtype, seed=0):
    a = values(shape_a, dtype, seed=seed)
    b = values(shape_b, dtype, seed=seed + 1)
    if op == "Pow":
        a = values(shape_a, dtype, 0.5, 2.0, seed) if np.dtype(dtype).kind == "f" or dtype == BF16 else a
        b = values(shape_b, dtype, 0, 3, seed + 1)
    if op in ("Div", "Mod") and np.dtype(dtype).kind in "iu":
        b[b == 0] = 1
    return {"a": a, "b": b}


def binary_attrs(op):
    return {"fmod": 1} if op == "Mod" else None


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=lambda s: f"{s[0]}-{s[1]}")
@pytest.mark.parametrize("dtype", [np.float32, np.int32], ids=dname)
@pytest.mark.parametrize("op", BINARY)
def test_binary_broadcast(op, dtype, shapes):
    check(op, binary_inputs(op, *shapes, dtype), binary_attrs(op))


ARITH_DTYPES = NUMERIC
POW_BASE_DTYPES = [np.float32, np.float16, np.float64, BF16, np.int32, np.int64]


@pytest.mark.parametrize("dtype", ARITH_DTYPES, ids=dname)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Mod"])
def test_binary_dtypes(op, dtype):
    check(op, binary_inputs(op, (3, 4), (4,), dtype), binary_attrs(op))


@pytest.mark.parametrize("dtype", POW_BASE_DTYPES, ids=dname)
def test_pow_dtypes(dtype):
    check("Pow", binary_inputs("Pow", (3, 4), (3, 1), dtype))


@pytest.mark.parametrize(
    "base,exponent",
    [(np.float32, np.int64), (np.float32, np.float64), (np.float64, np.int32), (np.int32, np.float32),
     (np.int64, np.int8), (np.float16, np.float32), (np.int32, np.uint8)],
    ids=lambda d: dname(d),
)
def test_pow_mixed_types(base, exponent):
    a = values((2, 5), base, 0.5, 3.0) if np.dtype(base).kind == "f" else values((2, 5), base, -3, 3)
    b = values((5,), exponent, 0, 3, seed=4)
    if np.dtype(exponent).kind == "f":
        b = np.array([0.0, 0.5, 1.0, 2.0, 2.5], dtype=exponent)
    if np.dtype(base).kind in "iu" and np.dtype(exponent).kind == "f":
        # A negative integer base to a fractional power has no real result: the NaN becomes 0, as
        # in Cast (docs/semantics.md); numpy's integer for it is whatever the platform gives.
        model = named(node_model("Pow", {"a": a, "b": b}))
        with np.errstate(invalid="ignore"):
            expected = run_reference(model, {"a": a, "b": b})
            real = np.power(a.astype(np.float64), b.astype(np.float64))
        assert np.isnan(real).any()
        expected[0] = np.where(np.isnan(real), 0, expected[0]).astype(base)
        compare(run_ours(model, {"a": a, "b": b}), expected)
        return
    check("Pow", {"a": a, "b": b})


@pytest.mark.parametrize("exponent", [2.0, 1.0, 0.5, 3.0, -1.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=dname)
def test_pow_scalar_exponent(dtype, exponent):
    a = values((3, 7), dtype, 0.1, 4.0)
    check("Pow", {"a": a, "b": np.array(exponent, dtype=dtype)})


def test_pow_scalar_exponent_fast_path_is_recorded():
    a = values((3, 7), np.float32, 0.1, 4.0)
    model = named(node_model("Pow", {"a": a, "b": np.array(2.0, np.float32)}))
    assert usage(model, {"a": a, "b": np.array(2.0, np.float32)}) == ["Pow/float32/square"]


def test_integer_div_truncates_toward_zero():
    a = np.array([-7, 7, -7, 7, -1, 0, 6, -6], dtype=np.int32)
    b = np.array([2, -2, -2, 2, 3, 5, -3, -3], dtype=np.int32)
    out = check("Div", {"a": a, "b": b})[0]
    np.testing.assert_array_equal(out, [-3, -3, 3, 3, 0, 0, -2, 2])


def test_integer_div_edge_cases_do_not_trap():
    # docs/semantics.md: division by zero gives 0, INT_MIN / -1 wraps to INT_MIN.
    a = np.array([np.iinfo(np.int32).min, 5, -5], dtype=np.int32)
    b = np.array([-1, 0, 0], dtype=np.int32)
    out = run_ours(named(node_model("Div", {"a": a, "b": b})), {"a": a, "b": b})[0]
    np.testing.assert_array_equal(out, [np.iinfo(np.int32).min, 0, 0])
    for fmod in (0, 1):
        out = run_ours(named(node_model("Mod", {"a": a, "b": b}, {"fmod": fmod})), {"a": a, "b": b})[0]
        np.testing.assert_array_equal(out, [0, 0, 0])


@pytest.mark.parametrize("op", ["Abs", "Neg"])
def test_abs_and_neg_of_the_most_negative_integer_wrap(op):
    x = np.array([np.iinfo(np.int32).min, -3, 3], dtype=np.int32)
    out = run_ours(named(node_model(op, {"x": x})), {"x": x})[0]
    assert out.tolist() == [np.iinfo(np.int32).min, 3, 3 if op == "Abs" else -3]


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", SIGNED_INTS + [np.float32, np.float64, np.float16], ids=dname)
def test_mod_negative_numbers(dtype, fmod):
    a = np.array([-7, 7, -7, 7, -6, 6, 0, 5], dtype=dtype)
    b = np.array([3, -3, -3, 3, 3, -4, 2, 5], dtype=dtype)
    check("Mod", {"a": a, "b": b}, {"fmod": fmod})


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_float_fractions(fmod):
    a = np.array([-5.5, 5.5, -5.5, 5.5, 0.25], dtype=np.float32)
    b = np.array([2.0, -2.0, -2.0, 2.0, -0.1], dtype=np.float32)
    check("Mod", {"a": a, "b": b}, {"fmod": fmod})


def test_mod_python_sign_rule():
    a = np.array([-7, 7], dtype=np.int64)
    b = np.array([3, -3], dtype=np.int64)
    out = check("Mod", {"a": a, "b": b}, {"fmod": 0})[0]
    np.testing.assert_array_equal(out, [2, -2])


def test_integer_overflow_wraps():
    a = np.array([127, -128, 100], dtype=np.int8)
    b = np.array([1, -1, 3], dtype=np.int8)
    assert run_ours(named(node_model("Add", {"a": a, "b": b})), {"a": a, "b": b})[0].tolist() == [-128, 127, 103]
    assert run_ours(named(node_model("Mul", {"a": a, "b": b})), {"a": a, "b": b})[0].tolist() == [127, -128, 44]


@pytest.mark.parametrize(
    "shape_b,path",
    [((2, 3, 4), "same-shape"), ((), "scalar"), ((1, 1), "scalar"), ((3, 1), "broadcast"), ((4,), "broadcast")],
)
def test_binary_paths_are_recorded(shape_b, path):
    feeds = {"a": values((2, 3, 4), np.float32), "b": values(shape_b, np.float32)}
    model = named(node_model("Add", feeds))
    assert usage(model, feeds) == [f"Add/float32/{path}"]


def test_mod_fmod_path_name():
    feeds = {"a": values((4,), np.int32), "b": np.array([1, 2, 3, 4], np.int32)}
    model = named(node_model("Mod", feeds, {"fmod": 1}))
    assert usage(model, feeds) == ["Mod/int32/fmod-same-shape"]


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
def test_legacy_broadcast_with_axis(op):
    a = values((2, 3, 4), np.float32, 1, 3)
    b = values((3,), np.float32, 1, 3, seed=2)
    model = named(node_model(op, {"a": a, "b": b}, {"broadcast": 1, "axis": 1}, opset=6))
    out = run_ours(model, {"a": a, "b": b})[0]
    fn = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}[op]
    np.testing.assert_allclose(out, fn(a, b[None, :, None]), rtol=1e-6)


def test_legacy_broadcast_trailing_and_disabled():
    a = values((2, 3, 4), np.float32)
    b = values((3, 4), np.float32, seed=1)
    model = named(node_model("Add", {"a": a, "b": b}, {"broadcast": 1}, opset=6))
    np.testing.assert_allclose(run_ours(model, {"a": a, "b": b})[0], a + b, rtol=1e-6)
    model = named(node_model("Add", {"a": a, "b": b}, opset=6))
    with pytest.raises(ValueError, match=NODE):
        run_ours(model, {"a": a, "b": b})


@pytest.mark.parametrize("op", BINARY)
def test_binary_shape_mismatch(op):
    feeds = {"a": values((2, 3), np.float32), "b": values((4,), np.float32)}
    with pytest.raises(ValueError, match=rf"{NODE}.*\[2, 3\].*\[4\]"):
        run_ours(named(node_model(op, feeds, binary_attrs(op))), feeds)


@pytest.mark.parametrize("op", BINARY)
def test_binary_unsupported_dtype(op):
    feeds = {"a": np.array([True, False]), "b": np.array([True, True])}
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*bool"):
        run_ours(named(node_model(op, feeds, binary_attrs(op))), feeds)


def test_binary_type_mismatch():
    feeds = {"a": values((3,), np.float32), "b": values((3,), np.int32)}
    with pytest.raises(ValueError, match=rf"{NODE}.*int32.*float32"):
        run_ours(named(node_model("Add", feeds)), feeds)


def test_mod_bad_fmod_attribute():
    feeds = {"a": values((3,), np.int32), "b": np.array([1, 2, 3], np.int32)}
    with pytest.raises(ValueError, match=rf"{NODE}.*fmod"):
        run_ours(named(node_model("Mod", feeds, {"fmod": 2})), feeds)


@pytest.mark.parametrize("opset", [7, 13, 14])
def test_binary_opsets(opset):
    check("Sub", binary_inputs("Sub", (2, 3), (3,), np.float32), opset=opset)


# ---- unary math ----------------------------------------------------------------------------------

UNARY_FLOAT = ["Sqrt", "Reciprocal", "Exp", "Log", "Floor", "Ceil", "Round", "Erf", "Sin", "Cos", "Tanh",
               "Sigmoid", "Neg", "Abs", "Sign"]
POSITIVE_ONLY = {"Sqrt", "Log", "Reciprocal"}
UNARY_OPSET = {"Round": 22, "Sin": 22, "Cos": 22}


def unary_input(op, shape, dtype, seed=0):
    if op in POSITIVE_ONLY:
        return values(shape, dtype, 0.1, 4.0, seed)
    return values(shape, dtype, -4.0, 4.0, seed)


@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
@pytest.mark.parametrize("op", UNARY_FLOAT)
def test_unary_float(op, dtype):
    # The reference evaluates Erf in float32 whatever the input type.
    loose = op == "Erf" and np.dtype(dtype) == np.float64
    check(op, {"x": unary_input(op, (3, 5), dtype)}, rtol=1e-6 if loose else None, atol=1e-7 if loose else None)


@pytest.mark.parametrize("op", UNARY_FLOAT)
def test_unary_empty_and_scalar(op):
    check(op, {"x": unary_input(op, (0, 4), np.float32)})
    check(op, {"x": unary_input(op, (), np.float32)})


@pytest.mark.parametrize("dtype", INTS, ids=dname)
@pytest.mark.parametrize("op", ["Abs", "Sign"])
def test_unary_int(op, dtype):
    check(op, {"x": values((3, 5), dtype)})


@pytest.mark.parametrize("dtype", SIGNED_INTS, ids=dname)
def test_neg_int(dtype):
    check("Neg", {"x": values((3, 5), dtype)})


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=dname)
def test_erf_int_opset9(dtype):
    check("Erf", {"x": values((6,), dtype)}, opset=9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16], ids=dname)
def test_round_half_to_even(dtype):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.4999, 2.51, -3.7], dtype=dtype)
    out = check("Round", {"x": x}, opset=11)[0]
    np.testing.assert_array_equal(out[:6], np.array([0, 2, 2, 0, -2, -2], dtype=dtype))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the reference overflows in numpy
def test_unary_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30], dtype=np.float32)
    for op in ["Abs", "Neg", "Sign", "Exp", "Tanh", "Sigmoid", "Floor", "Ceil", "Erf"]:
        check(op, {"x": x})


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the reference overflows in numpy
def test_sigmoid_extremes_do_not_overflow():
    x = np.array([-1000.0, -100.0, 0.0, 100.0, 1000.0], dtype=np.float32)
    out = check("Sigmoid", {"x": x})[0]
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize("op", ["Sqrt", "Exp", "Log", "Sin", "Round", "Reciprocal"])
def test_unary_unsupported_dtype(op):
    feeds = {"x": np.array([1, 2, 3], np.int32)}
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*int32"):
        run_ours(named(node_model(op, feeds)), feeds)


# ---- activations ---------------------------------------------------------------------------------

ACTIVATIONS = [
    ("Relu", None, 14),
    ("LeakyRelu", {"alpha": 0.2}, 16),
    ("LeakyRelu", None, 16),
    ("Elu", {"alpha": 0.7}, 22),
    ("Elu", None, 6),
    ("Selu", None, 22),
    ("Selu", {"alpha": 1.5, "gamma": 2.0}, 22),
    ("Gelu", None, 20),
    ("Gelu", {"approximate": "tanh"}, 20),
    ("Gelu", {"approximate": "none"}, 20),
    ("Softplus", None, 22),
    ("HardSigmoid", None, 22),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 22),
    ("HardSwish", None, 22),
    ("Mish", None, 22),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
@pytest.mark.parametrize("op,attrs,opset", ACTIVATIONS, ids=lambda v: str(v))
def test_activation(op, attrs, opset, dtype):
    rtol = atol = None
    if np.dtype(dtype) == np.float16 and op in ("Gelu", "Mish", "HardSwish", "Softplus"):
        rtol, atol = 5e-3, 5e-3  # the reference expands these into float16 intermediate steps
    if np.dtype(dtype) == np.float64 and op == "Gelu":
        rtol, atol = 1e-6, 1e-7  # the reference's Erf runs in float32
    check(op, {"x": values((4, 6), dtype, -5, 5)}, attrs, opset=opset, rtol=rtol, atol=atol)


@pytest.mark.parametrize("op,attrs,opset", ACTIVATIONS, ids=lambda v: str(v))
def test_activation_empty(op, attrs, opset):
    check(op, {"x": values((2, 0), np.float32)}, attrs, opset=opset)


@pytest.mark.parametrize("dtype", SIGNED_INTS, ids=dname)
def test_relu_int(dtype):
    check("Relu", {"x": values((3, 4), dtype)}, opset=14)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the reference overflows in numpy
def test_activations_large_inputs():
    x = np.array([-100.0, -30.0, 0.0, 30.0, 100.0], dtype=np.float32)
    for op in ["Softplus", "Mish", "Elu", "Selu", "Gelu", "HardSwish"]:
        check(op, {"x": x}, opset=22 if op != "Gelu" else 20)


def test_gelu_bad_approximate():
    feeds = {"x": values((3,), np.float32)}
    with pytest.raises(ValueError, match=rf"{NODE}.*approximate"):
        run_ours(named(node_model("Gelu", feeds, {"approximate": "erf"}, opset=20)), feeds)


def test_gelu_tanh_path_name():
    feeds = {"x": values((3,), np.float32)}
    model = named(node_model("Gelu", feeds, {"approximate": "tanh"}, opset=20))
    assert usage(model, feeds) == ["Gelu/float32/tanh-loop"]


@pytest.mark.parametrize(
    "slope_shape", [(2, 3, 4), (3, 1), (4,), (1,), (), (3,)], ids=lambda s: str(s)
)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, BF16], ids=dname)
def test_prelu(dtype, slope_shape):
    x = values((2, 3, 4), dtype)
    slope = values(slope_shape, dtype, 0, 1, seed=3)
    check("PRelu", {"x": x, "slope": slope}, opset=16)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64], ids=dname)
def test_prelu_int(dtype):
    check("PRelu", {"x": values((2, 5), dtype), "slope": values((5,), dtype, 0, 3, seed=1)}, opset=16)


def test_prelu_slope_must_broadcast_to_x():
    feeds = {"x": values((3,), np.float32), "slope": values((2, 3), np.float32)}
    with pytest.raises(ValueError, match=rf"{NODE}.*slope"):
        run_ours(named(node_model("PRelu", feeds)), feeds)


def clip_model(x, lo, hi, opset, dtype):
    inputs = {"x": x}
    names = ["x", "", ""]
    if lo is not None:
        inputs["lo"] = np.array(lo, dtype=dtype)
        names[1] = "lo"
    if hi is not None:
        inputs["hi"] = np.array(hi, dtype=dtype)
        names[2] = "hi"
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node("Clip", names, ["y0"], name=NODE)
    return make_model([node], inputs, ["y0"], opset=opset), inputs


@pytest.mark.parametrize("bounds", [(-1, 1), (None, 0.5), (-0.5, None), (None, None), (1, -1)], ids=str)
@pytest.mark.parametrize(
    "opset,dtype", [(11, t) for t in FLOATS if np.dtype(t) != BF16] + [(13, t) for t in FLOATS],  # bf16 from 13
    ids=lambda v: dname(v) if not isinstance(v, int) else str(v),
)
def test_clip_inputs(opset, dtype, bounds):
    x = values((3, 4), dtype)
    model, feeds = clip_model(x, *bounds, opset, dtype)
    compare(run_ours(model, feeds), run_reference(model, feeds))


@pytest.mark.parametrize("dtype", INTS, ids=dname)
@pytest.mark.parametrize("opset", [12, 13])
def test_clip_int(opset, dtype):
    x = values((3, 4), dtype)
    model, feeds = clip_model(x, 1, 2, opset, dtype)
    compare(run_ours(model, feeds), run_reference(model, feeds))
    model, feeds = clip_model(x, None, 1, opset, dtype)
    compare(run_ours(model, feeds), run_reference(model, feeds))


@pytest.mark.parametrize("attrs", [{"min": -1.0, "max": 0.5}, {"min": 0.0}, {"max": 0.0}, {}], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=dname)
def test_clip_opset6_attributes(dtype, attrs):
    check("Clip", {"x": values((3, 4), dtype)}, attrs, opset=6)


def test_clip_nan_passes_through():
    x = np.array([np.nan, -5, 5], dtype=np.float32)
    model, feeds = clip_model(x, -1, 1, 13, np.float32)
    out = run_ours(model, feeds)[0]
    assert np.isnan(out[0]) and out[1] == -1 and out[2] == 1


def test_clip_bound_must_be_scalar():
    x = values((3,), np.float32)
    node = helper.make_node("Clip", ["x", "lo"], ["y0"], name=NODE)
    feeds = {"x": x, "lo": np.array([0.0, 1.0], np.float32)}
    with pytest.raises(ValueError, match=rf"{NODE}.*scalar"):
        run_ours(make_model([node], feeds, ["y0"]), feeds)


# ---- variadic --------------------------------------------------------------------------------------

VARIADIC_SHAPES = [
    [(2, 3, 4)],
    [(2, 3, 4), (2, 3, 4)],
    [(2, 3, 4), (3, 1), (4,)],
    [(3, 1), (2, 1, 4)],
    [(), (2, 3), (3,), (1, 1)],
    [(0, 3), (3,)],
]


@pytest.mark.parametrize("shapes", VARIADIC_SHAPES, ids=str)
@pytest.mark.parametrize("op", ["Min", "Max", "Sum", "Mean"])
def test_variadic_broadcast(op, shapes):
    feeds = {f"x{i}": values(s, np.float32, seed=i) for i, s in enumerate(shapes)}
    if op == "Mean":
        # The reference accumulates in place into the first input, which fails when that input is
        # smaller than the broadcast result; numpy gives the expected values directly.
        out = run_ours(named(node_model(op, feeds)), feeds)[0]
        expected = sum(np.broadcast_arrays(*feeds.values())) / len(feeds)
        assert_close(out, np.asarray(expected, np.float32), 1e-6, 1e-6)
    else:
        check(op, feeds)


@pytest.mark.parametrize("dtype", NUMERIC, ids=dname)
@pytest.mark.parametrize("op", ["Min", "Max"])
def test_min_max_dtypes(op, dtype):
    check(op, {f"x{i}": values(s, dtype, seed=i) for i, s in enumerate([(2, 3), (3,), (2, 1)])})


@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
@pytest.mark.parametrize("op", ["Sum", "Mean"])
def test_sum_mean_dtypes(op, dtype):
    check(op, {f"x{i}": values(s, dtype, seed=i) for i, s in enumerate([(2, 3), (3,), (2, 1)])})


@pytest.mark.parametrize("opset", [6, 8, 12, 13])
def test_variadic_opsets(opset):
    check("Max", {"a": values((2, 3), np.float32), "b": values((2, 3), np.float32, seed=1)}, opset=opset)


def test_min_max_propagate_nan():
    a = np.array([np.nan, 1.0, 2.0], dtype=np.float32)
    b = np.array([0.0, np.nan, 1.0], dtype=np.float32)
    for op in ["Min", "Max"]:
        out = check(op, {"a": a, "b": b})[0]
        assert np.isnan(out[0]) and np.isnan(out[1])


def test_variadic_mismatch_and_dtype_errors():
    feeds = {"a": values((2, 3), np.float32), "b": values((4,), np.float32)}
    with pytest.raises(ValueError, match=NODE):
        run_ours(named(node_model("Sum", feeds)), feeds)
    feeds = {"a": values((2, 3), np.int32), "b": values((2, 3), np.int32)}
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*int32"):
        run_ours(named(node_model("Mean", feeds)), feeds)


# ---- comparison and logic ------------------------------------------------------------------------

COMPARE = ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]


@pytest.mark.parametrize("dtype", NUMERIC, ids=dname)
@pytest.mark.parametrize("op", COMPARE)
def test_compare_dtypes(op, dtype):
    a = values((3, 4), dtype, -2, 2)
    b = values((4,), dtype, -2, 2, seed=1)
    out = check(op, {"a": a, "b": b})[0]
    assert out.dtype == np.bool_


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=lambda s: f"{s[0]}-{s[1]}")
@pytest.mark.parametrize("op", COMPARE)
def test_compare_broadcast(op, shapes):
    check(op, {"a": values(shapes[0], np.int64, -1, 1), "b": values(shapes[1], np.int64, -1, 1, seed=1)})


def test_equal_bool_and_string():
    check("Equal", {"a": random((3, 4), np.bool_), "b": random((4,), np.bool_, seed=1)})
    a = np.array([["ab", "c", ""], ["x", "yy", "c"]], dtype=object)
    b = np.array(["ab", "yy", "c"], dtype=object)
    model = named(node_model("Equal", {"a": a, "b": b}, opset=19))
    out = run_ours(model, {"a": a, "b": b})[0]
    np.testing.assert_array_equal(out, [[True, False, False], [False, True, True]])


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
@pytest.mark.parametrize("shapes", [((2, 3), (2, 3)), ((2, 3, 4), (3, 1)), ((4,), ()), ((0, 2), (2,))], ids=str)
def test_logic(op, shapes):
    check(op, {"a": values(shapes[0], np.bool_), "b": values(shapes[1], np.bool_, seed=1)})


def test_logic_rejects_non_bool():
    feeds = {"a": values((3,), np.int32), "b": values((3,), np.int32)}
    with pytest.raises(NotImplementedError, match=NODE):
        run_ours(named(node_model("And", feeds)), feeds)


def test_not():
    check("Not", {"x": random((3, 5), np.bool_)})


@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
def test_isnan(dtype):
    x = np.array([np.nan, 1.0, -np.inf, np.inf, 0.0, -np.nan], dtype=dtype)
    check("IsNaN", {"x": x}, opset=20)


@pytest.mark.parametrize("flags", [(1, 1), (1, 0), (0, 1), (0, 0)], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
def test_isinf(dtype, flags):
    x = np.array([np.nan, 1.0, -np.inf, np.inf, 0.0, -2.0], dtype=dtype)
    check("IsInf", {"x": x}, {"detect_positive": flags[0], "detect_negative": flags[1]}, opset=20)


@pytest.mark.parametrize(
    "dtype", NUMERIC + [np.bool_], ids=dname
)
def test_where_dtypes(dtype):
    cond = random((3, 1), np.bool_)
    x = values((2, 1, 4), dtype) if dtype != np.bool_ else random((2, 1, 4), np.bool_)
    y = values((4,), dtype, seed=2) if dtype != np.bool_ else random((4,), np.bool_, seed=2)
    check("Where", {"c": cond, "x": x, "y": y})


@pytest.mark.parametrize(
    "shapes", [((2, 3), (2, 3), (2, 3)), ((), (2, 3), ()), ((2, 3), (), (3,)), ((0, 3), (3,), ()),
               ((1, 3), (2, 1), (2, 3))], ids=str
)
def test_where_broadcast(shapes):
    check("Where", {"c": values(shapes[0], np.bool_), "x": values(shapes[1], np.float32, seed=1),
                    "y": values(shapes[2], np.float32, seed=2)})


def test_where_string():
    cond = np.array([[True, False], [False, True]])
    x = np.array(["a", "bb"], dtype=object)
    y = np.array([["c"], ["d"]], dtype=object)
    model = named(node_model("Where", {"c": cond, "x": x, "y": y}))
    out = run_ours(model, {"c": cond, "x": x, "y": y})[0]
    assert out.tolist() == [["a", "c"], ["d", "bb"]]


def test_where_errors():
    feeds = {"c": values((3,), np.int32), "x": values((3,), np.float32), "y": values((3,), np.float32)}
    with pytest.raises(ValueError, match=rf"{NODE}.*bool"):
        run_ours(named(node_model("Where", feeds)), feeds)
    feeds = {"c": random((3,), np.bool_), "x": values((3,), np.float32), "y": values((2,), np.float32)}
    with pytest.raises(ValueError, match=NODE):
        run_ours(named(node_model("Where", feeds)), feeds)


# ---- Cast / CastLike ------------------------------------------------------------------------------

CAST_TYPES = NUMERIC + [np.bool_]


def cast_source(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return random((2, 5), np.bool_)
    if dtype.kind == "f" or dtype == BF16:
        return np.array([[0.0, 1.0, 2.5, -1.5, 100.75], [-0.0, 7.25, -3.0, 0.5, 42.0]], np.float32).astype(dtype)
    if dtype.kind == "u":
        return np.array([[0, 1, 2, 100, 255], [7, 3, 42, 9, 128]]).astype(dtype)
    return np.array([[0, 1, -2, 100, -128], [7, -3, 42, 9, 127]]).astype(dtype)


def undefined_float_to_int(x, to):
    """The elements of a float -> integer cast whose result ONNX leaves undefined (NaN, and values
    whose truncation is outside the target's range), and onnx-light's result for them
    (docs/semantics.md): NaN -> 0, below the range -> the minimum, above it -> the maximum."""
    info = np.iinfo(to)
    t = np.trunc(np.asarray(x).astype(np.float64))  # exact for every float type we have
    nan = np.isnan(t)
    low = t < float(info.min)  # 0 or -2**k: exact
    high = t >= 2.0 ** (info.bits - (info.kind == "i"))  # the maximum plus one, exact
    ours = np.zeros(t.shape, to)
    ours[low], ours[high] = info.min, info.max
    return nan | low | high, ours


def check_cast(op, inputs, to, attrs=None, opset=23):
    """Cast / CastLike against onnx.reference where the spec defines the result, and against our
    documented rule where it does not (numpy's result there is whatever the platform gives)."""
    model = named(node_model(op, inputs, attrs, opset=opset))
    with np.errstate(invalid="ignore", over="ignore"):
        expected = run_reference(model, dict(inputs))
    x, to = inputs["x"], np.dtype(to)
    if (x.dtype.kind == "f" or x.dtype == BF16) and to.kind in "iu":
        undefined, ours = undefined_float_to_int(x, to)
        expected[0] = np.where(undefined, ours, expected[0])
    actual = run_ours(model, dict(inputs))
    compare(actual, expected)
    return actual[0]


@pytest.mark.parametrize("to", CAST_TYPES, ids=dname)
@pytest.mark.parametrize("src", CAST_TYPES, ids=dname)
def test_cast_numeric(src, to):
    to_code = helper.np_dtype_to_tensor_dtype(np.dtype(to))
    check_cast("Cast", {"x": cast_source(src)}, to, {"to": to_code})


# Around every integer range edge, both sides, and the values float types cannot represent exactly.
OUT_OF_RANGE = [np.nan, np.inf, -np.inf, -0.0, -0.5, -0.99, -1.0, -1.5, 127.9, 128.0, -128.9, -129.0, 255.9, 256.0,
                -32768.5, -32769.0, 32767.9, 32768.0, 65535.9, 65536.0, 2147483520.0, 2147483647.0, 2147483647.5,
                2147483648.0, -2147483648.9, -2147483649.0, 4294967295.5, 4294967296.0, 2.0**53, 2.0**63 - 1024,
                2.0**63, -(2.0**63), -(2.0**63) - 2048, 2.0**64 - 2048, 2.0**64, 1e30, -1e30, 1e300, -1e300]


@pytest.mark.parametrize("to", INTS, ids=dname)
@pytest.mark.parametrize("src", FLOATS, ids=dname)
def test_cast_float_to_int_out_of_range_saturates(src, to):
    with np.errstate(over="ignore"):  # float16 overflows to inf on purpose
        x = np.array(OUT_OF_RANGE, np.float64).astype(src)
    undefined, _ = undefined_float_to_int(x, to)
    assert undefined.any() and not undefined.all()  # both rules are exercised
    check_cast("Cast", {"x": x}, to, {"to": helper.np_dtype_to_tensor_dtype(np.dtype(to))})
    check_cast("CastLike", {"x": x, "like": np.zeros((1,), to)}, to, opset=21)


def test_cast_float_to_int_rule_by_example():
    # The documented rule, spelled out (docs/semantics.md): NaN -> 0, beyond the range -> min/max,
    # in range -> truncation toward zero.
    x = np.array([np.nan, np.inf, -np.inf, -1.5, -0.5, 300.7, -300.7, 1e10, 2.9, -2.9], np.float32)
    cases = {
        np.uint8: [0, 255, 0, 0, 0, 255, 0, 255, 2, 0],
        np.int8: [0, 127, -128, -1, 0, 127, -128, 127, 2, -2],
        np.int32: [0, 2**31 - 1, -(2**31), -1, 0, 300, -300, 2**31 - 1, 2, -2],
        np.uint64: [0, 2**64 - 1, 0, 0, 0, 300, 0, 10**10, 2, 0],
    }
    for to, expected in cases.items():
        model = named(node_model("Cast", {"x": x}, {"to": helper.np_dtype_to_tensor_dtype(np.dtype(to))}))
        assert run_ours(model, {"x": x})[0].tolist() == expected, np.dtype(to).name
    x = np.array([2.0**63, -(2.0**63), 2.0**63 - 1024, 1e300], np.float64)
    model = named(node_model("Cast", {"x": x}, {"to": TensorProto.INT64}))
    assert run_ours(model, {"x": x})[0].tolist() == [2**63 - 1, -(2**63), 2**63 - 1024, 2**63 - 1]
    x = np.array([-1.0, 2.0**64, 2.0**64 - 2048], np.float64)
    model = named(node_model("Cast", {"x": x}, {"to": TensorProto.UINT64}))
    assert run_ours(model, {"x": x})[0].tolist() == [0, 2**64 - 1, 2**64 - 2048]


def test_cast_integer_to_narrower_integer_wraps():
    x = np.array([200, -200, 256, 2**31 - 1, -(2**31)], np.int64)
    model = named(node_model("Cast", {"x": x}, {"to": TensorProto.INT8}))
    assert run_ours(model, {"x": x})[0].tolist() == [-56, 56, 0, -1, 0]
    model = named(node_model("Cast", {"x": x}, {"to": TensorProto.UINT16}))
    assert run_ours(model, {"x": x})[0].tolist() == [200, 65336, 256, 65535, 0]


@pytest.mark.parametrize("opset", [6, 9, 13, 19, 21])
def test_cast_opsets(opset):
    check("Cast", {"x": cast_source(np.float32)}, {"to": TensorProto.INT32}, opset=opset)


def test_cast_opset1_string_target():
    x = cast_source(np.float32)
    model = named(node_model("Cast", {"x": x}, {"to": "INT32"}, opset=1))
    np.testing.assert_array_equal(run_ours(model, {"x": x})[0], x.astype(np.int32))


@pytest.mark.parametrize("src", [np.float32, np.float64, np.float16, np.int8, np.int64, np.uint16, np.bool_],
                         ids=dname)
def test_cast_to_string(src):
    if np.dtype(src).kind == "f":
        with np.errstate(over="ignore"):  # float16 overflows to inf on purpose
            x = np.array([1.0, 0.1, -2.5, 1e-5, 1e10, 1e16, 123456.0, 1.5e-4, np.inf, -np.inf, np.nan, -0.0,
                          3.14159265, 65504.0, 1e-4, 0.0], dtype=src)
    else:
        x = cast_source(src)
    check("Cast", {"x": x}, {"to": TensorProto.STRING})


@pytest.mark.parametrize("to", [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8, np.int8, np.bool_],
                         ids=dname)
def test_cast_from_string(to):
    if np.dtype(to).kind == "f":
        x = np.array([" 1.5", "-2", "1e3", "inf", "-inf", "+0.25", "1e-5", "nan"], dtype=object)
    elif np.dtype(to) == np.bool_:
        x = np.array(["0", "1", "", "abc", "True", "False"], dtype=object)
    else:
        x = np.array(["0", "1", " 7 ", "+2", "42", "100"], dtype=object)
    to_code = helper.np_dtype_to_tensor_dtype(np.dtype(to))
    model = named(node_model("Cast", {"x": x}, {"to": to_code}))
    expected = run_reference(model, {"x": x.astype(np.str_)})
    compare(run_ours(model, {"x": x}), expected)


def test_cast_string_to_bfloat16():
    x = np.array(["0.5", "-2", "3.140625"], dtype=object)
    model = named(node_model("Cast", {"x": x}, {"to": TensorProto.BFLOAT16}))
    out = run_ours(model, {"x": x})[0]
    np.testing.assert_array_equal(out.astype(np.float32), [0.5, -2.0, 3.140625])


def test_cast_bad_string():
    x = np.array(["1", "abc"], dtype=object)
    model = named(node_model("Cast", {"x": x}, {"to": TensorProto.INT32}))
    with pytest.raises(ValueError, match=rf"{NODE}.*abc"):
        run_ours(model, {"x": x})


@pytest.mark.parametrize(
    "to,opset,first",
    [(TensorProto.FLOAT8E4M3FN, 18, 19), (TensorProto.INT4, 19, 21), (TensorProto.FLOAT4E2M1, 21, 23),
     (TensorProto.FLOAT8E8M0, 23, 24), (TensorProto.UINT2, 24, 25), (TensorProto.FLOAT6E2M3, 25, 28)],
)
def test_cast_to_a_type_newer_than_the_opset_is_refused(to, opset, first):
    # The types themselves are supported (test_cast_low_precision.py); a Cast version that does not
    # list the target type refuses it, naming the opset that introduced it.
    x = values((3,), np.float32)
    model = named(node_model("Cast", {"x": x}, {"to": to}, opset=opset))
    with pytest.raises(ValueError, match=rf"{NODE}.*at opset {opset} \(it does from opset {first} on\)"):
        run_ours(model, {"x": x})


def test_cast_to_complex_not_supported():
    x = values((3,), np.float32)
    model = named(node_model("Cast", {"x": x}, {"to": TensorProto.COMPLEX64}))
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*complex64.*not supported"):
        run_ours(model, {"x": x})


def test_cast_unknown_target():
    x = values((3,), np.float32)
    model = named(node_model("Cast", {"x": x}, {"to": 99}))
    with pytest.raises(ValueError, match=rf"{NODE}.*99"):
        run_ours(model, {"x": x})


def test_cast_same_type_is_a_view():
    x = values((2, 3), np.float32)
    model = named(node_model("Cast", {"x": x}, {"to": TensorProto.FLOAT}))
    assert usage(model, {"x": x}) == ["Cast/float32/view"]
    np.testing.assert_array_equal(run_ours(model, {"x": x})[0], x)


@pytest.mark.parametrize(
    "src,like", [(np.float32, np.int64), (np.int32, np.float16), (np.float16, np.float32), (np.bool_, np.float64),
                 (np.float64, BF16), (np.int64, np.bool_), (np.float32, np.float32)], ids=dname
)
def test_castlike(src, like):
    check_cast("CastLike", {"x": cast_source(src), "like": np.zeros((1,), dtype=like)}, like, opset=21)


def test_castlike_to_string():
    x = cast_source(np.int32)
    like = np.array(["a"], dtype=object)
    model = named(node_model("CastLike", {"x": x, "like": like}, opset=19))
    out = run_ours(model, {"x": x, "like": like})[0]
    assert out.tolist() == x.astype(str).tolist()


SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, 88.0, -88.0, 100.0, -100.0, 5e-4, 3e-4,
            0.5, -0.5, 2.5, -2.5]
SPECIAL_OPS = [(op, None, UNARY_OPSET.get(op, 13)) for op in UNARY_FLOAT] + ACTIVATIONS


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=dname)
@pytest.mark.parametrize("op,attrs,opset", SPECIAL_OPS, ids=lambda v: str(v))
def test_special_values(op, attrs, opset, dtype):
    with np.errstate(all="ignore"):
        x = np.array(SPECIALS, dtype=dtype)
    check(op, {"x": x}, attrs, opset=opset)
