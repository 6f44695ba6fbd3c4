"""The vectorised elementwise paths: Pow with a scalar exponent, activations and binary
arithmetic in float32 and through float32 tiles for float16/bfloat16, last-axis Softmax and
LayerNormalization/RMSNormalization rows, on one thread and split over two. Lengths are not
multiples of any vector width or tile, broadcasting patterns are the fast ones (same shape,
scalar, row, per-channel, column) and the general one, and special values (NaN, +-inf, -0,
large magnitudes) are mixed in. The whole file runs again without AVX-512 (F16C and AVX2 loops)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime
from node_check import assert_close, node_model, outputs_with_and_without_avx512, run_ours, run_reference, usage_of

BF16 = np.dtype(ml_dtypes.bfloat16)
HALVES = [np.float16, BF16]
FLOATS = [np.float32, np.float16, BF16]
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-3, -1e-3, 7.5, -7.5, 60000.0, -60000.0, 1e-7],
                   np.float32)
THREADS = [1, 2]
LONG = 70001  # above two tasks' worth of elements (2 * 32768), odd


def options(threads):
    return runtime.RuntimeSessionOptions(num_threads=threads)


def dname(dtype):
    return np.dtype(dtype).name


def with_specials(shape, dtype, seed=0, low=-4.0, high=4.0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(low, high, size=shape).astype(np.float32)
    flat = x.reshape(-1)
    positions = rng.choice(flat.size, size=min(flat.size, 3 * SPECIAL.size), replace=False)
    flat[positions] = np.resize(SPECIAL, positions.size)
    return x.astype(dtype)


def assert_same_values(actual, expected):
    """Bitwise equal except that NaNs only need to be NaN (payloads may differ); -0 and +0 differ."""
    a = np.asarray(actual, np.float32)
    e = np.asarray(expected, np.float32)
    assert a.shape == e.shape
    nan = np.isnan(e)
    np.testing.assert_array_equal(np.isnan(a), nan)
    np.testing.assert_array_equal(a[~nan], e[~nan])
    np.testing.assert_array_equal(np.signbit(a[~nan]), np.signbit(e[~nan]))


def tolerance(dtype):
    dtype = np.dtype(dtype)
    if dtype == BF16:
        return 1e-2, 1e-2
    if dtype == np.float16:
        return 2e-3, 2e-3
    return 2e-6, 1e-6


# ---- Pow --------------------------------------------------------------------------------------------

POW_PATHS = {2.0: "square", 3.0: "cube", 0.5: "sqrt", -1.0: "reciprocal", 1.0: "copy", 1.7: "scalar",
             -2.5: "scalar", 4.0: "scalar"}


def pow_model(x, e, dtype):
    return node_model("Pow", {"x": x}, initializers={"e": np.array(e, dtype)})


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
@pytest.mark.parametrize("exponent", list(POW_PATHS))
def test_pow_scalar_exponent(exponent, dtype, threads):
    x = with_specials((LONG,), dtype, seed=1)
    model = pow_model(x, exponent, dtype)
    (ours,) = run_ours(model, {"x": x}, options=options(threads))
    assert ours.dtype == np.dtype(dtype)
    assert usage_of(model, {"x": x}) == [f"Pow/{dname(dtype)}/{POW_PATHS[exponent]}"]
    x32 = x.astype(np.float32)
    if exponent == 3.0:
        # Our definition: x * x * x in float32 (within 1 ulp of powf), then rounded once.
        assert_same_values(ours, (x32 * x32 * x32).astype(dtype))
        return
    e32 = np.array(exponent, dtype).astype(np.float32)  # the exponent as the node holds it
    with np.errstate(all="ignore"):
        expected = np.power(x32, e32)  # as onnx.reference; exact for 2, 0.5, -1, 1
    if exponent in (2.0, 0.5, -1.0, 1.0):
        assert_same_values(ours, expected.astype(dtype))
    else:
        rtol, atol = tolerance(dtype)
        assert_close(ours.astype(np.float32), expected.astype(dtype).astype(np.float32), rtol=rtol, atol=atol)


def test_pow_special_values_follow_the_reference():
    # 0.5 is sqrt (NumPy's rule: -0 stays -0, -inf gives NaN); other exponents follow C's pow.
    x = np.array([-0.0, 0.0, -np.inf, np.inf, -4.0, -1.0, np.nan, 1.0], np.float32)
    expected = {
        0.5: [-0.0, 0.0, np.nan, np.inf, np.nan, np.nan, np.nan, 1.0],
        -1.0: [-np.inf, np.inf, -0.0, 0.0, -0.25, -1.0, np.nan, 1.0],
        3.0: [-0.0, 0.0, -np.inf, np.inf, -64.0, -1.0, np.nan, 1.0],
        1.5: [0.0, 0.0, np.inf, np.inf, np.nan, np.nan, np.nan, 1.0],  # negative base, fraction: NaN
    }
    for exponent, values in expected.items():
        (ours,) = run_ours(pow_model(x, exponent, np.float32), {"x": x})
        assert_same_values(ours, np.array(values, np.float32))
        (ref,) = run_reference(pow_model(x, exponent, np.float32), {"x": x})
        assert_same_values(ours, ref)


def test_pow_exponent_of_another_type_and_tensor_exponents():
    x = with_specials((1000,), np.float32, seed=2)
    # An exponent of another type takes the same loops (onnx.reference's sqrt for 0.5 too); others
    # compute in double with C's pow.
    for e, path in ((np.array(3, np.int64), "cube"), (np.array(0.5, np.float64), "sqrt"),
                    (np.array(-1, np.int32), "reciprocal"), (np.array(1.7, np.float64), "scalar")):
        model = node_model("Pow", {"x": x}, initializers={"e": e})
        (ours,) = run_ours(model, {"x": x})
        with np.errstate(all="ignore"):
            (ref,) = run_reference(model, {"x": x})
        if path in ("sqrt", "reciprocal"):
            assert_same_values(ours, ref)
        else:
            assert_close(ours, ref, rtol=2e-7, atol=0)
        assert usage_of(model, {"x": x}) == [f"Pow/float32/{path}"]
    b = np.random.default_rng(3).uniform(-3, 3, size=(1000,)).astype(np.float32)
    (ours,) = run_ours(node_model("Pow", {"x": np.abs(x), "b": b}), {"x": np.abs(x), "b": b})
    with np.errstate(all="ignore"):
        assert_close(ours, np.power(np.abs(x), b), rtol=1e-6, atol=0)


# ---- unary activations ------------------------------------------------------------------------------

UNARY = [
    ("Relu", {}), ("LeakyRelu", {"alpha": 0.1}), ("Sigmoid", {}), ("Tanh", {}), ("HardSigmoid", {"alpha": 0.3}),
    ("HardSwish", {}), ("Gelu", {}), ("Gelu", {"approximate": "tanh"}), ("Erf", {}), ("Exp", {}), ("Neg", {}),
    ("Abs", {}), ("Sqrt", {}), ("Reciprocal", {}), ("Floor", {}), ("Ceil", {}),
]


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", HALVES, ids=dname)
@pytest.mark.parametrize("op,attrs", UNARY, ids=[f"{o}{'-' + a.get('approximate', '') if a else ''}" for o, a in UNARY])
def test_half_activation_matches_float32_then_rounding(op, attrs, dtype, threads):
    """The half types compute in float32 and round once: exactly our float32 result, rounded."""
    x = with_specials((LONG,), dtype, seed=4)
    model = node_model(op, {"x": x}, attrs)
    (ours,) = run_ours(model, {"x": x}, options=options(threads))
    x32 = x.astype(np.float32)
    (ours32,) = run_ours(node_model(op, {"x": x32}, attrs), {"x": x32})
    assert_same_values(ours, ours32.astype(dtype))
    variant = "tanh-" if attrs.get("approximate") == "tanh" else ""
    assert usage_of(model, {"x": x}) == [f"{op}/{dname(dtype)}/{variant}tiles"]


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
@pytest.mark.parametrize("op,attrs", UNARY, ids=[f"{o}{'-' + a.get('approximate', '') if a else ''}" for o, a in UNARY])
def test_activation_against_reference(op, attrs, dtype, threads):
    x = with_specials((4099,), dtype, seed=5)
    model = node_model(op, {"x": x}, attrs)
    (ours,) = run_ours(model, {"x": x}, options=options(threads))
    x32 = x.astype(np.float32)
    with np.errstate(all="ignore"):
        (ref,) = run_reference(node_model(op, {"x": x32}, attrs), {"x": x32})
    rtol, atol = tolerance(dtype)
    if dtype == np.float32 and op in ("Sigmoid", "Tanh", "Gelu", "Erf", "Exp"):
        rtol, atol = 1e-5, 1e-6  # the polynomial approximations (docs/operator-notes.md)
    assert_close(ours.astype(np.float32), ref.astype(dtype).astype(np.float32), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
def test_relu_keeps_nan_and_clamps_negative_zero(dtype):
    x = np.array([np.nan, -0.0, 0.0, -np.inf, np.inf, -1.0, 2.0], np.float32).astype(dtype)
    (ours,) = run_ours(node_model("Relu", {"x": x}), {"x": x})
    assert_same_values(ours, np.array([np.nan, -0.0, 0.0, 0.0, np.inf, 0.0, 2.0], np.float32).astype(dtype))


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
def test_clip_bounds_and_nan(dtype, threads):
    x = with_specials((LONG,), dtype, seed=6)
    lo, hi = np.array(-1.5, dtype), np.array(6.0, dtype)
    model = node_model("Clip", {"x": x}, initializers={"lo": lo, "hi": hi})
    (ours,) = run_ours(model, {"x": x}, options=options(threads))
    x32 = x.astype(np.float32)
    expected = np.where(np.isnan(x32), np.nan, np.minimum(np.maximum(x32, -1.5), 6.0))
    assert_same_values(ours, expected.astype(dtype))
    path = "loop" if dtype == np.float32 else "tiles"
    assert usage_of(model, {"x": x}) == [f"Clip/{dname(dtype)}/{path}"]


# ---- binary arithmetic ------------------------------------------------------------------------------

BROADCASTS = {
    "same-shape": ((3, 70, 337), (3, 70, 337)),
    "scalar": ((3, 70, 337), ()),
    "scalar-first": ((), (3, 70, 337)),
    "row": ((4, 50, 333), (333,)),
    "per-channel": ((2, 37, 29, 31), (37, 1, 1)),
    "column": ((4, 50, 333), (4, 50, 1)),
    "general": ((3, 1, 333), (1, 67, 1)),
}
PLAN_PATHS = {"same-shape": "same-shape", "scalar": "scalar", "scalar-first": "scalar", "row": "broadcast",
              "per-channel": "broadcast", "column": "broadcast", "general": "broadcast"}
NUMPY_OPS = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
@pytest.mark.parametrize("pattern", list(BROADCASTS))
@pytest.mark.parametrize("op", list(NUMPY_OPS))
def test_binary_broadcasting_is_exact(op, pattern, dtype, threads):
    """float32 is IEEE arithmetic; the half types compute in float32 and round once."""
    sa, sb = BROADCASTS[pattern]
    a = with_specials(sa, dtype, seed=7)
    b = with_specials(sb, dtype, seed=8) if sb else np.array(-2.5, dtype)
    model = node_model(op, {"a": a, "b": b})
    (ours,) = run_ours(model, {"a": a, "b": b}, options=options(threads))
    with np.errstate(all="ignore"):
        expected = NUMPY_OPS[op](a.astype(np.float32), b.astype(np.float32)).astype(dtype)
    assert_same_values(ours, expected)
    suffix = "" if dtype == np.float32 else "-tiles"
    assert usage_of(model, {"a": a, "b": b}) == [f"{op}/{dname(dtype)}/{PLAN_PATHS[pattern]}{suffix}"]


def test_binary_output_may_take_an_input_buffer():
    # Add(Mul(a, b), c): the product dies at Add, which may write into it; results stay exact.
    from onnx import TensorProto, helper

    shape = [5, 40000]
    graph = helper.make_graph(
        [helper.make_node("Mul", ["a", "b"], ["p"]), helper.make_node("Add", ["p", "c"], ["y"])], "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT16, shape) for n in "abc"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    feeds = {n: with_specials(shape, np.float16, seed=i) for i, n in enumerate("abc")}
    for threads in THREADS:
        (ours,) = run_ours(model, feeds, options=options(threads))
        p = (feeds["a"].astype(np.float32) * feeds["b"].astype(np.float32)).astype(np.float16)
        with np.errstate(all="ignore"):
            expected = (p.astype(np.float32) + feeds["c"].astype(np.float32)).astype(np.float16)
        assert_same_values(ours, expected)


def test_strided_half_operands_take_the_general_loop():
    # A transposed operand reaches Add as a strided view: no tiles, same values.
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Transpose", ["a"], ["t"], perm=[1, 0]), helper.make_node("Add", ["t", "b"], ["y"])], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [33, 65]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT16, [65, 33])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [65, 33])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    feeds = {"a": with_specials((33, 65), np.float16, seed=1), "b": with_specials((65, 33), np.float16, seed=2)}
    (ours,) = run_ours(model, feeds)
    with np.errstate(all="ignore"):
        expected = (feeds["a"].T.astype(np.float32) + feeds["b"].astype(np.float32)).astype(np.float16)
    assert_same_values(ours, expected)


# ---- Softmax, LayerNormalization, RMSNormalization --------------------------------------------------

def softmax_reference(x, axis):
    x = x.astype(np.float64)
    m = np.max(x, axis=axis, keepdims=True)
    with np.errstate(all="ignore"):
        e = np.exp(x - m)
        return e / np.sum(e, axis=axis, keepdims=True)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
@pytest.mark.parametrize("shape", [(2, 3, 1, 37), (2, 3, 37, 37), (700, 130), (1, 2, 5001), (3, 1)])
def test_softmax_last_axis(shape, dtype, threads):
    x = (np.random.default_rng(9).standard_normal(shape) * 4).astype(dtype)
    model = node_model("Softmax", {"x": x}, {"axis": -1})
    (ours,) = run_ours(model, {"x": x}, options=options(threads))
    expected = softmax_reference(x.astype(np.float32), -1)
    rtol, atol = tolerance(dtype)
    assert_close(ours.astype(np.float32), expected.astype(dtype).astype(np.float32), rtol=rtol, atol=atol)
    assert usage_of(model, {"x": x}) == [f"Softmax/{dname(dtype)}/last-axis"]


@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
def test_softmax_rows_with_special_values(dtype):
    rows = np.array([
        [0.0, -np.inf, 1.0, -np.inf, 2.0],         # -inf entries give exact zeros
        [-np.inf] * 5,                              # nothing finite: NaN (0 / 0), as onnx.reference
        [1.0, np.nan, 2.0, 3.0, 4.0],               # NaN spreads over its row
        [1e4, 1e4 - 1, -1e4, 0.0, 1e4],             # large values shifted by the maximum
        [np.inf, 1.0, 2.0, 3.0, 4.0],               # inf - inf: NaN
    ], np.float32)
    x = np.tile(rows, (40, 1)).astype(dtype)         # 200 rows: split over two threads
    model = node_model("Softmax", {"x": x}, {"axis": -1})
    x32 = x.astype(np.float32)
    with np.errstate(all="ignore"):
        (ref,) = run_reference(node_model("Softmax", {"x": x32}, {"axis": -1}), {"x": x32})
    for threads in THREADS:
        (ours,) = run_ours(model, {"x": x}, options=options(threads))
        ours = ours.astype(np.float32)
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
        finite = ~np.isnan(ref)
        np.testing.assert_allclose(ours[finite], ref.astype(dtype).astype(np.float32)[finite],
                                   rtol=tolerance(dtype)[0], atol=tolerance(dtype)[1])
        assert np.all(ours[0::5][:, [1, 3]] == 0)


@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
def test_softmax_opset_11_rows_and_inner_axis(dtype):
    x = (np.random.default_rng(10).standard_normal((3, 4, 37))).astype(dtype)
    model = node_model("Softmax", {"x": x}, {"axis": 1}, opset=11)
    (ours,) = run_ours(model, {"x": x}, options=options(2))
    expected = softmax_reference(x.astype(np.float32).reshape(3, -1), -1).reshape(x.shape)
    rtol, atol = tolerance(dtype)
    assert_close(ours.astype(np.float32), expected.astype(dtype).astype(np.float32), rtol=rtol, atol=atol)
    model = node_model("Softmax", {"x": x}, {"axis": 1})
    (ours,) = run_ours(model, {"x": x}, options=options(2))
    expected = softmax_reference(x.astype(np.float32), 1)
    assert_close(ours.astype(np.float32), expected.astype(dtype).astype(np.float32), rtol=rtol, atol=atol)


def norm_reference(x, scale, bias, rms, eps=1e-5):
    x = x.astype(np.float64)
    mean = 0.0 if rms else x.mean(axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    y = (x - mean) * inv * scale.astype(np.float64)
    if bias is not None:
        y = y + bias.astype(np.float64)
    return y, mean, inv


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
@pytest.mark.parametrize("rms", [False, True], ids=["layer", "rms"])
def test_normalization_rows(rms, dtype, threads):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((3, 401, 77)) * 3 + 1).astype(dtype)
    scale = rng.uniform(0.5, 1.5, 77).astype(dtype)
    bias = None if rms else rng.standard_normal(77).astype(dtype)
    op = "RMSNormalization" if rms else "LayerNormalization"
    inits = {"scale": scale} if rms else {"scale": scale, "bias": bias}
    model = node_model(op, {"x": x}, n_outputs=1 if rms else 3, initializers=inits)
    outputs = run_ours(model, {"x": x}, options=options(threads))
    expected, mean, inv = norm_reference(x.astype(np.float32), scale.astype(np.float32),
                                         None if rms else bias.astype(np.float32), rms)
    rtol, atol = tolerance(dtype)
    assert_close(outputs[0].astype(np.float32), expected.astype(dtype).astype(np.float32), rtol=rtol,
                 atol=max(atol, 1e-5))
    if not rms:
        assert_close(outputs[1], mean.astype(np.float32), rtol=1e-5, atol=1e-5)
        assert_close(outputs[2], inv.astype(np.float32), rtol=1e-5, atol=1e-5)
    assert usage_of(model, {"x": x}) == [f"{op}/{dname(dtype)}/rows-float"]


# ---- the same without AVX-512 -----------------------------------------------------------------------

@pytest.mark.skipif(os.environ.get("ONNX_LIGHT_DISABLE_AVX512", "") not in ("", "0"),
                    reason="this is the subprocess the test starts (AVX-512 already off): the file's tests "
                           "run here without AVX-512, and starting another subprocess would recurse")
def test_file_passes_without_avx512():
    # ONNX_LIGHT_DISABLE_AVX512 moves float16 conversion to the 8-lane F16C path (on CPUs that have
    # F16C); the per-ISA float loops are picked by the loader and stay as they are.
    env = dict(os.environ, ONNX_LIGHT_DISABLE_AVX512="1")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", Path(__file__).name, "-x",
         "-k", "not test_file_passes_without_avx512"],
        cwd=Path(__file__).parent, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout


def test_sigmoid_and_conv_silu_without_avx512_stay_within_a_few_ulp(tmp_path):
    # Sigmoid, and SiLU in a convolution's epilogue, run their own AVX-512 approximation on CPUs
    # that have it and the portable loops elsewhere (ONNX_LIGHT_DISABLE_AVX512 forces those):
    # within a few ulp of each other over a sample of every float bit pattern (both tails,
    # subnormal e^-|x|, infinities); results near the smallest normal float, where e^-|x| is
    # subnormal, are compared in absolute terms.
    bits = np.arange(0, 2**32, 65537, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = np.concatenate([x, np.float32([0.0, -0.0, 87.5, -87.5, 104.0, -104.0, np.inf, -np.inf]),
                        np.linspace(-110, 110, 4001, dtype=np.float32)])
    x = x[: x.size // 64 * 64]
    sigmoid = node_model("Sigmoid", {"x": x}, {})
    image = {"x": x.reshape(1, 4, 16, -1)}
    w = np.ones((4, 1, 3, 3), np.float32) / 9
    conv = helper.make_node("Conv", ["x", "w"], ["c"], group=4, pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [conv, helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])], "silu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(image["x"].shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "w")])
    silu = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (tmp_path / "sigmoid.onnx").write_bytes(sigmoid.SerializeToString())
    (tmp_path / "silu.onnx").write_bytes(silu.SerializeToString())
    np.save(tmp_path / "x.npy", x)
    script = (
        "import sys, numpy as np, onnx_light.runtime as rt\n"
        "d = sys.argv[1]; x = np.load(d + '/x.npy')\n"
        "c = rt.RuntimeContext(rt.KernelContext(rt.default_opset(17)))\n"
        "o = rt.RuntimeSessionOptions(num_threads=1)\n"
        "a = rt.RuntimeSession(d + '/sigmoid.onnx', o).run(c, {'x': x})\n"
        "b = rt.RuntimeSession(d + '/silu.onnx', o).run(c, {'x': x.reshape(1, 4, 16, -1)})\n"
        "np.save(d + '/' + sys.argv[2], np.concatenate([np.asarray(a[k]).ravel() for k in a] +\n"
        "                                               [np.asarray(b['y']).ravel()]))\n")
    fast, portable = outputs_with_and_without_avx512(tmp_path, script)
    nan = np.isnan(portable)
    np.testing.assert_array_equal(np.isnan(fast), nan)
    np.testing.assert_allclose(fast[~nan], portable[~nan], rtol=8 * 2.0**-24, atol=1e-36)
    assert (fast[~nan] != portable[~nan]).any()   # the two paths are different approximations
    assert (portable[x.size:] != 0).sum() > 1000   # the SiLU half is not trivially zero
