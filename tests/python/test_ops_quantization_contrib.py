"""The com.microsoft quantized operators (QOperator format) against ONNX Runtime, their oracle.

QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool, QLinearSoftmax, QGemm,
QLinearConcat, QLinearLeakyRelu and QLinearWhere are bit-exact with ORT's CPU kernels; QLinearSigmoid is within
one quantization step (ORT's table uses an approximate logistic). Models quantized by
onnxruntime.quantization in the QOperator format (a CNN and a transformer encoder layer) match
ORT within quantization tolerance.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from node_check import expect_error, run_ort, run_ours, usage_of
from test_ops_quantization import _Calibration, ort_session

MS = "com.microsoft"
BYTES = [np.uint8, np.int8]


def limits(t):
    info = np.iinfo(t)
    return int(info.min), int(info.max)


def ms_model(op, inputs, consts=None, attrs=None, order=None):
    """One com.microsoft node; `inputs` are graph inputs, `consts` initializers, `order` the node's
    input names ('' for an omitted optional input)."""
    consts = consts or {}
    names = order or (list(inputs) + list(consts))
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items()]
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in consts.items()]
    node = helper.make_node(op, names, ["y"], domain=MS, name=f"{op.lower()}_node", **(attrs or {}))
    graph = helper.make_graph([node], "g", graph_inputs, [helper.make_value_info("y", onnx.TypeProto())],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model


def check_ort(model, feeds):
    feeds = {k: np.asarray(v) for k, v in feeds.items()}
    ours = run_ours(model, feeds)[0]
    ort = run_ort(model, feeds)[0]
    assert ours.dtype == ort.dtype and ours.shape == ort.shape, (ours.dtype, ort.dtype, ours.shape, ort.shape)
    np.testing.assert_array_equal(ours, ort)
    return ours


def scale(rng, lo=0.002, hi=0.2):
    return np.float32(rng.uniform(lo, hi))


# ---- QLinearAdd / QLinearMul ---------------------------------------------------------------------

BINARY_SHAPES = [((4, 5), (4, 5)), ((2, 3, 40), (40,)), ((2, 3, 4), (3, 1)), ((1,), (70,)), ((70,), (1,)),
                 ((), (7, 3)), ((3, 1, 37), (1, 4, 1)), ((1000,), (1000,)), ((2, 1), (1, 1)), ((5, 1, 33), (5, 2, 33))]


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("t", BYTES)
@pytest.mark.parametrize("shapes", BINARY_SHAPES)
def test_binary_matches_ort(op, t, shapes):
    rng = np.random.default_rng(hash((op, str(shapes))) % 2**32)
    lo, hi = limits(t)
    a = rng.integers(lo, hi + 1, shapes[0]).astype(t)
    b = rng.integers(lo, hi + 1, shapes[1]).astype(t)
    for trial in range(4):
        zps = [t(v) for v in rng.integers(lo, hi + 1, 3)]
        if trial == 1:
            zps = [t(lo), t(hi), t(lo)]
        if trial == 2:
            zps = [t(hi), t(lo), t(hi)]
        sc = [scale(rng) for _ in range(3)]
        if op == "QLinearMul":
            sc[2] = np.float32(sc[2] * 0.05)
        consts = {"as": sc[0], "az": zps[0], "bs": sc[1], "bz": zps[1], "cs": sc[2], "cz": zps[2]}
        model = ms_model(op, {"a": a, "b": b}, consts, order=["a", "as", "az", "b", "bs", "bz", "cs", "cz"])
        check_ort(model, {"a": a, "b": b})


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_binary_without_zero_points_and_with_runtime_parameters(op):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (3, 50)).astype(np.uint8)
    b = rng.integers(0, 256, (3, 50)).astype(np.uint8)
    consts = {"as": np.float32(0.05), "bs": np.float32(0.03), "cs": np.float32(0.07 if op == "QLinearAdd" else 0.3)}
    model = ms_model(op, {"a": a, "b": b}, consts, order=["a", "as", "", "b", "bs", "", "cs", ""])
    # ORT's type inference refuses omitted zero points: it runs them as explicit zeros.
    zeros = dict(consts, z=np.uint8(0))
    explicit = ms_model(op, {"a": a, "b": b}, zeros, order=["a", "as", "z", "b", "bs", "z", "cs", "z"])
    np.testing.assert_array_equal(run_ours(model, {"a": a, "b": b})[0], run_ort(explicit, {"a": a, "b": b})[0])
    feeds = {"a": a, "as": np.array(0.05, np.float32), "az": np.array(128, np.uint8), "b": b,
             "bs": np.array(0.03, np.float32), "bz": np.array(7, np.uint8), "cs": np.array(0.09, np.float32),
             "cz": np.array(100, np.uint8)}
    check_ort(ms_model(op, feeds), feeds)


def test_binary_records_usage_and_errors():
    a = np.zeros((2, 3), np.int8)
    consts = {"as": np.float32(0.1), "az": np.int8(0), "bs": np.float32(0.1), "bz": np.int8(0),
              "cs": np.float32(0.1), "cz": np.int8(0)}
    order = ["a", "as", "az", "b", "bs", "bz", "cs", "cz"]
    model = ms_model("QLinearAdd", {"a": a, "b": a}, consts, order=order)
    assert any(u.startswith("QLinearAdd/int8/") for u in usage_of(model, {"a": a, "b": a}))
    bad = dict(consts, bs=np.ones(2, np.float32))
    msg = expect_error(ms_model("QLinearAdd", {"a": a, "b": a}, bad, order=order), {"a": a, "b": a},
                       "node 'qlinearadd_node' (QLinearAdd)", "input 4", "B_scale", "[2]")
    assert "scalar" in msg
    bad = dict(consts, bz=np.uint8(0))
    expect_error(ms_model("QLinearMul", {"a": a, "b": a}, bad, order=order), {"a": a, "b": a},
                 "input 5", "B_zero_point", "int8", "uint8")
    expect_error(ms_model("QLinearAdd", {"a": a, "b": np.zeros((2, 4), np.int8)}, consts, order=order),
                 {"a": a, "b": np.zeros((2, 4), np.int8)}, "QLinearAdd")
    f = np.zeros((2, 3), np.float32)
    expect_error(ms_model("QLinearAdd", {"a": f, "b": f}, consts, order=order), {"a": f, "b": f}, "float",
                 exc=NotImplementedError)


def test_unknown_com_microsoft_operator_is_refused():
    a = np.zeros((2,), np.uint8)
    model = ms_model("QLinearFrobnicate", {"a": a})
    expect_error(model, {"a": a}, "no kernel for operator 'com.microsoft::QLinearFrobnicate' at opset 1",
                 exc=NotImplementedError)


def test_com_microsoft_version_other_than_1_is_refused():
    a = np.zeros((2,), np.uint8)
    consts = {"s": np.float32(0.1), "z": np.uint8(0)}
    model = ms_model("QLinearAdd", {"a": a, "b": a}, consts, order=["a", "s", "z", "b", "s", "z", "s", "z"])
    model.opset_import[1].version = 2
    expect_error(model, {"a": a, "b": a}, "QLinearAdd", "1", exc=NotImplementedError)


# ---- pooling -------------------------------------------------------------------------------------

@pytest.mark.parametrize("t", BYTES)
@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("shape", [(2, 13, 7, 7), (1, 64, 3, 5), (3, 1, 40, 41), (2, 5, 9), (1, 7, 2, 3, 4)])
def test_global_average_pool_matches_ort(t, channels_last, shape):
    rng = np.random.default_rng(sum(shape) + channels_last)
    lo, hi = limits(t)
    x = rng.integers(lo, hi + 1, shape).astype(t)
    for zx, zy in ((rng.integers(lo, hi + 1), rng.integers(lo, hi + 1)), (lo, hi), (hi, lo)):
        consts = {"xs": scale(rng), "xz": t(zx), "ys": scale(rng, 0.001, 0.05), "yz": t(zy)}
        check_ort(ms_model("QLinearGlobalAveragePool", {"x": x}, consts, {"channels_last": channels_last}), {"x": x})
    usage = usage_of(ms_model("QLinearGlobalAveragePool", {"x": x}, consts, {"channels_last": channels_last}),
                     {"x": x})
    assert any(u.startswith("QLinearGlobalAveragePool/") and ("nhwc" if channels_last else "nchw") in u
               for u in usage)


POOL_CASES = [
    ((1, 3, 9, 9), {"kernel_shape": [3, 3]}),
    ((2, 4, 10, 7), {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]}),
    ((2, 4, 10, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
    ((1, 2, 11, 11), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 2, 8, 8), {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"}),
    ((2, 3, 12), {"kernel_shape": [4], "strides": [3], "pads": [1, 2]}),
    ((1, 2, 5, 6, 7), {"kernel_shape": [2, 3, 2], "strides": [1, 2, 2]}),
    ((2, 5, 6, 6), {"kernel_shape": [6, 6]}),  # the whole image: ORT's global path
]


@pytest.mark.parametrize("t", BYTES)
@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("case", range(len(POOL_CASES)))
def test_average_pool_matches_ort(t, channels_last, case):
    shape, attrs = POOL_CASES[case]
    rng = np.random.default_rng(case)
    lo, hi = limits(t)
    if channels_last:
        shape = (shape[0],) + shape[2:] + (shape[1],)
    x = rng.integers(lo, hi + 1, shape).astype(t)
    consts = {"xs": scale(rng), "xz": t(rng.integers(lo, hi + 1)), "ys": scale(rng), "yz": t(rng.integers(lo, hi + 1))}
    model = ms_model("QLinearAveragePool", {"x": x}, consts, dict(attrs, channels_last=channels_last))
    check_ort(model, {"x": x})
    impl = "global" if case == len(POOL_CASES) - 1 else "float-window"
    assert any(impl in u for u in usage_of(model, {"x": x}))


# ---- QLinearSoftmax ------------------------------------------------------------------------------

@pytest.mark.parametrize("opset,axis", [(13, -1), (13, 1), (12, 1), (12, 2), (13, None), (11, None)])
def test_softmax_uint8_matches_ort(opset, axis):
    rng = np.random.default_rng(opset * 10 + (axis or 0))
    x = rng.integers(0, 256, (2, 5, 16)).astype(np.uint8)
    attrs = {"opset": opset} if axis is None else {"opset": opset, "axis": axis}
    for xs in (0.02, 0.1, 0.5):
        consts = {"xs": np.float32(xs), "xz": np.uint8(rng.integers(0, 256)), "ys": np.float32(1 / 256),
                  "yz": np.uint8(0)}
        check_ort(ms_model("QLinearSoftmax", {"x": x}, consts, attrs), {"x": x})


def test_softmax_int8_matches_ort():
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, (4, 3, 33)).astype(np.int8)
    x[0, 0, :] = -128
    x[0, 0, 5] = 127  # one dominant element: probability 256/256 saturates to 127
    consts = {"xs": np.float32(0.2), "xz": np.int8(0), "ys": np.float32(1 / 256), "yz": np.int8(-128)}
    assert check_ort(ms_model("QLinearSoftmax", {"x": x}, consts, {"opset": 13}), {"x": x})[0, 0, 5] == 127
    consts["yz"] = np.int8(-100)
    consts["ys"] = np.float32(1 / 200)
    check_ort(ms_model("QLinearSoftmax", {"x": x}, consts, {"opset": 12, "axis": 2}), {"x": x})


@pytest.mark.parametrize("t,zp", [(np.uint8, 0), (np.int8, -128), (np.int8, 0)])
def test_softmax_rows_of_one_and_two(t, zp):
    # One element: the table value times 256 overflows float32; the probability is 1 (the maximum).
    for d in (1, 2):
        x = np.random.default_rng(d).integers(0, 100, (1, 2, 1, d)).astype(t)
        consts = {"xs": np.float32(0.2), "xz": t(0), "ys": np.float32(1 / 256), "yz": t(zp)}
        check_ort(ms_model("QLinearSoftmax", {"x": x}, consts, {"opset": 20, "axis": -1}), {"x": x})


def test_softmax_errors():
    x = np.zeros((2, 3), np.uint8)
    consts = {"xs": np.float32(0.1), "xz": np.uint8(0), "ys": np.float32(1 / 256), "yz": np.uint8(0)}
    expect_error(ms_model("QLinearSoftmax", {"x": x}, consts, {"opset": 13, "axis": 2}), {"x": x}, "axis")
    expect_error(ms_model("QLinearSoftmax", {"x": x}, consts, {}), {"x": x}, "QLinearSoftmax", "opset")


# ---- QGemm ---------------------------------------------------------------------------------------

GEMM_TYPES = [(np.uint8, np.int8, np.uint8), (np.uint8, np.uint8, np.uint8), (np.int8, np.int8, np.int8)]


@pytest.mark.parametrize("types", GEMM_TYPES)
@pytest.mark.parametrize("trans", [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("variant", ["per-tensor", "per-column", "bias-n", "bias-m1", "bias-mn", "float-out",
                                     "b-input", "alpha"])
def test_qgemm_matches_ort(types, trans, variant):
    ta, tb, ty = types
    rng = np.random.default_rng(len(variant) * 7 + trans[0] * 2 + trans[1])
    m, k, n = 5, 37, 19
    alo, ahi = limits(ta)
    blo, bhi = (-63, 63) if tb == np.int8 else (0, 255)  # ORT's u8s8 AVX2 path needs 7-bit weights
    a = rng.integers(alo, ahi + 1, (k, m) if trans[0] else (m, k)).astype(ta)
    b = rng.integers(blo, bhi + 1, (n, k) if trans[1] else (k, n)).astype(tb)
    per_column = variant == "per-column"
    consts = {"as": scale(rng, 0.01, 0.05), "az": ta(rng.integers(alo, ahi + 1)), "b": b,
              "bs": (rng.uniform(0.005, 0.02, n) if per_column else rng.uniform(0.005, 0.02, ())).astype(np.float32),
              "bz": (rng.integers(blo, bhi + 1, n) if per_column else np.array(rng.integers(blo, bhi + 1))).astype(tb)}
    inputs = {"a": a}
    if variant == "b-input":
        inputs["b"] = consts.pop("b")
    bias = {"bias-n": (n,), "bias-m1": (m, 1), "bias-mn": (m, n)}.get(variant)
    order = ["a", "as", "az", "b", "bs", "bz", "c" if bias else "", "ys", "yz"]
    if bias:
        consts["c"] = rng.integers(-5000, 5000, bias).astype(np.int32)
    consts["ys"] = np.float32(rng.uniform(0.5, 2.0))
    consts["yz"] = ty(rng.integers(*limits(ty)))
    if variant == "float-out":
        order = order[:7]
        del consts["ys"], consts["yz"]
    attrs = {"transA": trans[0], "transB": trans[1]}
    if variant == "alpha":
        attrs["alpha"] = 0.75
    model = ms_model("QGemm", inputs, consts, attrs, order=order)
    ours = run_ours(model, inputs)[0]
    ort = run_ort(model, inputs)[0]
    assert ours.dtype == ort.dtype and ours.shape == ort.shape
    if variant == "float-out":
        np.testing.assert_allclose(ours, ort, rtol=1e-6, atol=0)
    else:
        np.testing.assert_array_equal(ours, ort)
    usage = "".join(usage_of(model, inputs))
    assert "QGemm/" in usage and ("prepacked" in usage) == (variant != "b-input")


def test_qgemm_errors():
    a = np.zeros((3, 4), np.uint8)
    consts = {"as": np.float32(0.1), "az": np.uint8(0), "b": np.zeros((5, 6), np.int8), "bs": np.float32(0.1),
              "bz": np.int8(0), "ys": np.float32(0.1), "yz": np.uint8(0)}
    order = ["a", "as", "az", "b", "bs", "bz", "", "ys", "yz"]
    expect_error(ms_model("QGemm", {"a": a}, consts, order=order), {"a": a}, "QGemm", "K", "4", "5")
    consts["b"] = np.zeros((4, 6), np.int8)
    consts["bs"] = np.ones(4, np.float32)
    consts["bz"] = np.zeros(4, np.int8)
    expect_error(ms_model("QGemm", {"a": a}, consts, order=order), {"a": a}, "b_scale", "N = 6")


# ---- QLinearConcat and the table operators -------------------------------------------------------

@pytest.mark.parametrize("t", BYTES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_matches_ort(t, axis):
    rng = np.random.default_rng(axis + 5)
    lo, hi = limits(t)
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes[1] = tuple(5 if d == axis % 3 else s for d, s in enumerate(shapes[1]))
    xs = [rng.integers(lo, hi + 1, s).astype(t) for s in shapes]
    ys, yz = np.float32(0.05), t(rng.integers(lo, hi + 1))
    consts = {"ys": ys, "yz": yz, "s0": ys, "z0": yz, "s1": np.float32(0.11), "z1": t(lo), "s2": np.float32(0.02),
              "z2": t(hi)}
    inputs = {f"x{i}": x for i, x in enumerate(xs)}
    order = ["ys", "yz", "x0", "s0", "z0", "x1", "s1", "z1", "x2", "s2", "z2"]
    check_ort(ms_model("QLinearConcat", inputs, consts, {"axis": axis}, order=order), inputs)


@pytest.mark.parametrize("t", BYTES)
@pytest.mark.parametrize("runtime_params", [False, True])
def test_leaky_relu_matches_ort(t, runtime_params):
    lo, hi = limits(t)
    x = np.arange(lo, hi + 1).astype(t).reshape(16, 16)
    params = {"xs": np.float32(0.07), "xz": t((lo + hi) // 2 + 11), "ys": np.float32(0.04), "yz": t(lo + 30)}
    order = ["x", "xs", "xz", "ys", "yz"]
    if runtime_params:
        model = ms_model("QLinearLeakyRelu", dict({"x": x}, **params), attrs={"alpha": 0.13}, order=order)
        feeds = {k: np.asarray(v) for k, v in dict({"x": x}, **params).items()}
    else:
        model = ms_model("QLinearLeakyRelu", {"x": x}, params, {"alpha": 0.13}, order=order)
        feeds = {"x": x}
    check_ort(model, feeds)
    assert any(("prebuilt" in u) != runtime_params for u in usage_of(model, feeds) if u.startswith("QLinearLeakyRelu"))


@pytest.mark.parametrize("t", BYTES)
def test_sigmoid_within_one_step_of_ort(t):
    lo, hi = limits(t)
    x = np.arange(lo, hi + 1).astype(t)
    mismatches = 0
    for xs, zx, ys, zy in ((0.05, 0, 1 / 256, lo), (0.1, (lo + hi) // 2, 1 / 255, lo), (0.031, lo + 20, 0.0041, lo + 3)):
        consts = {"xs": np.float32(xs), "xz": t(zx), "ys": np.float32(ys), "yz": t(zy)}
        model = ms_model("QLinearSigmoid", {"x": x}, consts)
        ours, ort = run_ours(model, {"x": x})[0], run_ort(model, {"x": x})[0]
        diff = np.abs(ours.astype(np.int32) - ort.astype(np.int32))
        assert diff.max() <= 1
        mismatches += int((diff != 0).sum())
        # The exact value is in our table: compare with float64 arithmetic.
        v = np.float32(xs) * (x.astype(np.float32) - np.float32(zx))
        exact = np.clip(np.rint(1 / (1 + np.exp(-v.astype(np.float64))) / np.float32(ys)) + zy, lo, hi)
        assert np.abs(ours.astype(np.int64) - exact.astype(np.int64)).max() <= 1
    assert mismatches <= 6, mismatches


# ---- the portable loops --------------------------------------------------------------------------

def test_portable_paths_without_avx2(tmp_path):
    """QLinearAdd, QLinearMul, the pooling sums and the requantization with ONNX_LIGHT_DISABLE_AVX2=1
    give the same bytes (compared with ORT in a fresh process)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "portable.py"
    script.write_text(
        "import numpy as np\n"
        "import test_ops_quantization_contrib as t\n"
        "for op in ('QLinearAdd', 'QLinearMul'):\n"
        "    for dt in t.BYTES:\n"
        "        for shapes in t.BINARY_SHAPES:\n"
        "            t.test_binary_matches_ort(op, dt, shapes)\n"
        "for dt in t.BYTES:\n"
        "    for cl in (0, 1):\n"
        "        t.test_global_average_pool_matches_ort(dt, cl, (2, 13, 7, 7))\n"
        "    t.test_qgemm_matches_ort((np.uint8, np.int8, np.uint8), (0, 1), 'per-column')\n"
        "import onnx_light.runtime as rt\n"
        "print('ok')\n")
    env = dict(os.environ, ONNX_LIGHT_DISABLE_AVX2="1")
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(__file__), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-W", "ignore", str(script)], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(__file__))
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"


# ---- models quantized by onnxruntime.quantization in the QOperator format -------------------------

def _init(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def resnet_like_model(rng):
    """Conv-Relu, a residual block (Conv-Relu-Conv + skip, Add, Relu), global pooling and a Gemm."""
    c = 16
    inits = [_init("w0", rng.standard_normal((c, 3, 3, 3)) * 0.3), _init("b0", rng.standard_normal(c) * 0.1),
             _init("w1", rng.standard_normal((c, c, 3, 3)) * 0.1), _init("b1", rng.standard_normal(c) * 0.1),
             _init("w2", rng.standard_normal((c, c, 3, 3)) * 0.1), _init("b2", rng.standard_normal(c) * 0.1),
             _init("wf", rng.standard_normal((10, c)) * 0.3), _init("bf", rng.standard_normal(10) * 0.1)]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c0"], ["r0"]),
             helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "r0"], ["s"]),
             helper.make_node("Relu", ["s"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "resnet_like", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 24, 24])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def encoder_layer_model(rng, seq=16, hidden=32, heads=2):
    """One transformer encoder layer: Q/K/V MatMuls, scaled scores, Softmax, attention, output
    projection, residual Add, LayerNormalization, an Erf-GELU feed-forward, Add, LayerNormalization."""
    dh = hidden // heads
    w = lambda *s: rng.standard_normal(s) * (1.0 / np.sqrt(s[0]))  # noqa: E731
    inits = [_init("wq", w(hidden, hidden)), _init("wk", w(hidden, hidden)), _init("wv", w(hidden, hidden)),
             _init("wo", w(hidden, hidden)), _init("bq", rng.standard_normal(hidden) * 0.1),
             _init("bo", rng.standard_normal(hidden) * 0.1), _init("w1", w(hidden, 4 * hidden)),
             _init("b1", rng.standard_normal(4 * hidden) * 0.1), _init("w2", w(4 * hidden, hidden)),
             _init("b2", rng.standard_normal(hidden) * 0.1), _init("g1", np.ones(hidden)), _init("be1", np.zeros(hidden)),
             _init("g2", np.ones(hidden)), _init("be2", np.zeros(hidden)), _init("scale", 1 / np.sqrt(dh)),
             _init("half", 0.5), _init("one", 1.0), _init("rsqrt2", 1 / np.sqrt(2)),
             numpy_helper.from_array(np.array([1, seq, heads, dh], np.int64), "split_shape"),
             numpy_helper.from_array(np.array([1, seq, hidden], np.int64), "merge_shape")]
    n = helper.make_node
    nodes = [n("MatMul", ["x", "wq"], ["q0"]), n("Add", ["q0", "bq"], ["q1"]), n("MatMul", ["x", "wk"], ["k0"]),
             n("MatMul", ["x", "wv"], ["v0"]),
             n("Reshape", ["q1", "split_shape"], ["q2"]), n("Transpose", ["q2"], ["q"], perm=[0, 2, 1, 3]),
             n("Reshape", ["k0", "split_shape"], ["k2"]), n("Transpose", ["k2"], ["kt"], perm=[0, 2, 3, 1]),
             n("Reshape", ["v0", "split_shape"], ["v2"]), n("Transpose", ["v2"], ["v"], perm=[0, 2, 1, 3]),
             n("MatMul", ["q", "kt"], ["s0"]), n("Mul", ["s0", "scale"], ["s1"]), n("Softmax", ["s1"], ["p"], axis=-1),
             n("MatMul", ["p", "v"], ["a0"]), n("Transpose", ["a0"], ["a1"], perm=[0, 2, 1, 3]),
             n("Reshape", ["a1", "merge_shape"], ["a2"]), n("MatMul", ["a2", "wo"], ["o0"]), n("Add", ["o0", "bo"], ["o1"]),
             n("Add", ["o1", "x"], ["r0"]), n("LayerNormalization", ["r0", "g1", "be1"], ["h0"], axis=-1),
             n("MatMul", ["h0", "w1"], ["f0"]), n("Add", ["f0", "b1"], ["f1"]),
             n("Mul", ["f1", "rsqrt2"], ["e0"]), n("Erf", ["e0"], ["e1"]), n("Add", ["e1", "one"], ["e2"]),
             n("Mul", ["f1", "e2"], ["e3"]), n("Mul", ["e3", "half"], ["gelu"]),
             n("MatMul", ["gelu", "w2"], ["f2"]), n("Add", ["f2", "b2"], ["f3"]), n("Add", ["f3", "h0"], ["r1"]),
             n("LayerNormalization", ["r1", "g2", "be2"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "encoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, hidden])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _ort_session(path):
    return ort_session(path, optimize=False)


def _quantize_qop(tmp_path, model, calibration, name, activation, weight, per_channel=False):
    from onnxruntime.quantization import QuantFormat, quantize_static

    float_path, quant_path = tmp_path / f"{name}.onnx", tmp_path / f"{name}_qop.onnx"
    onnx.save(model, float_path)
    quantize_static(str(float_path), str(quant_path), _Calibration(calibration), quant_format=QuantFormat.QOperator,
                    activation_type=activation, weight_type=weight, per_channel=per_channel)
    return float_path, quant_path


@pytest.mark.parametrize("types", ["u8u8", "u8s8", "s8s8"])
def test_quantize_static_qoperator_resnet_like_matches_ort(tmp_path, types):
    from onnxruntime.quantization import QuantType

    q = {"u8": QuantType.QUInt8, "s8": QuantType.QInt8}
    rng = np.random.default_rng(31)
    calibration = [rng.standard_normal((1, 3, 24, 24)).astype(np.float32) for _ in range(8)]
    float_path, quant_path = _quantize_qop(tmp_path, resnet_like_model(rng), calibration, "resnet",
                                           q[types[:2]], q[types[2:]], per_channel=types == "u8s8")
    quantized = onnx.load(quant_path)
    ops = {(n.domain, n.op_type) for n in quantized.graph.node}
    assert {(MS, "QLinearAdd"), (MS, "QLinearGlobalAveragePool"), ("", "QLinearConv")} <= ops, ops
    assert (MS, "QGemm") in ops, ops
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((1, 3, 24, 24)).astype(np.float32)
        ours = run_ours(quantized, {"x": x})[0]
        ort = _ort_session(quant_path).run(None, {"x": x})[0]
        float_out = _ort_session(float_path).run(None, {"x": x})[0]
        # The contrib kernels are bit-exact; QLinearConv requantizes as onnx.reference does (float64),
        # ORT in float32, which could move a rare tie by one step: not on these inputs.
        np.testing.assert_array_equal(ours, ort)
        np.testing.assert_allclose(ours, float_out, rtol=0, atol=0.15 * float(np.abs(float_out).max()) + 0.05)
    usage = "".join(usage_of(quantized, {"x": x}))
    for name in ("QLinearAdd/", "QLinearGlobalAveragePool/", "QGemm/", "QLinearConv/"):
        assert name in usage, usage


@pytest.mark.parametrize("activation", ["u8", "s8"])
def test_quantize_static_qoperator_encoder_matches_ort(tmp_path, activation):
    from onnxruntime.quantization import QuantType

    rng = np.random.default_rng(32)
    calibration = [rng.standard_normal((1, 16, 32)).astype(np.float32) for _ in range(8)]
    act = QuantType.QUInt8 if activation == "u8" else QuantType.QInt8
    float_path, quant_path = _quantize_qop(tmp_path, encoder_layer_model(rng), calibration, "encoder", act,
                                           QuantType.QInt8)
    quantized = onnx.load(quant_path)
    ops = {(n.domain, n.op_type) for n in quantized.graph.node}
    assert {("", "QLinearMatMul"), (MS, "QLinearAdd"), (MS, "QLinearMul"), (MS, "QLinearSoftmax")} <= ops, ops
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((1, 16, 32)).astype(np.float32)
        ours = run_ours(quantized, {"x": x})[0]
        ort = _ort_session(quant_path).run(None, {"x": x})[0]
        float_out = _ort_session(float_path).run(None, {"x": x})[0]
        # Every quantized tensor equals ORT's; the float LayerNormalization at the end rounds in
        # another order (a few units in the last place). A QLinearMatMul tie (onnx.reference's
        # float64 output stage here, float32 in ORT) would move one step: not on these inputs.
        np.testing.assert_allclose(ours, ort, rtol=0, atol=1e-5)
        np.testing.assert_allclose(ours, float_out, rtol=0, atol=1.0)


def test_empty_inputs_and_shape_errors():
    u8 = np.uint8
    p = {"s": np.float32(0.1), "z": u8(3)}
    empty = np.zeros((0, 5), u8)
    add = ms_model("QLinearAdd", {"a": empty, "b": np.zeros((5,), u8)}, p, order=["a", "s", "z", "b", "s", "z", "s", "z"])
    assert run_ours(add, {"a": empty, "b": np.zeros((5,), u8)})[0].shape == (0, 5)
    x = np.zeros((0, 3, 4, 4), u8)
    order = ["x", "s", "z", "s", "z"]
    assert run_ours(ms_model("QLinearGlobalAveragePool", {"x": x}, p, order=order), {"x": x})[0].shape == (0, 3, 1, 1)
    assert run_ours(ms_model("QLinearSoftmax", {"x": x}, p, {"opset": 13}, order=order), {"x": x})[0].shape == x.shape
    pool = ms_model("QLinearAveragePool", {"x": x}, p, {"kernel_shape": [2, 2]}, order=order)
    assert run_ours(pool, {"x": x})[0].shape == (0, 3, 3, 3)
    x3 = np.zeros((1, 3, 4), u8)
    expect_error(ms_model("QLinearAveragePool", {"x": x3}, p, {"kernel_shape": [2, 2]}, order=order), {"x": x3},
                 "qlinearaveragepool_node", "rank 4")
    x2 = np.zeros((3, 4), u8)
    expect_error(ms_model("QLinearGlobalAveragePool", {"x": x2}, p, order=order), {"x": x2}, "rank 3 or more")
    a, b = np.zeros((2, 3), u8), np.zeros((3, 3), u8)
    concat = ms_model("QLinearConcat", {"a": a, "b": b}, p, {"axis": 1}, order=["s", "z", "a", "s", "z", "b", "s", "z"])
    expect_error(concat, {"a": a, "b": b}, "qlinearconcat_node", "input 5", "[3, 3]", "axis 1")
    gemm = {"as": np.float32(0.1), "az": u8(0), "b": np.zeros((3, 4), np.int8), "bs": np.float32(0.1),
            "bz": np.int8(0), "c": np.zeros((3,), np.int32), "ys": np.float32(0.1), "yz": u8(0)}
    expect_error(ms_model("QGemm", {"a": a}, gemm, order=["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"]), {"a": a},
                 "qgemm_node", "input 6", "[2, 4]", "[3]")
    gemm["c"] = np.zeros((4,), np.int32)
    a0 = np.zeros((0, 3), u8)
    out = run_ours(ms_model("QGemm", {"a": a0}, gemm, order=["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"]), {"a": a0})
    assert out[0].shape == (0, 4)


WHERE_SHAPES = [((4, 5), (4, 5), (4, 5)), ((3, 1), (1, 40), (3, 40)), ((), (2, 3), (3,)), ((2, 1, 33), (33,), (1,))]


@pytest.mark.parametrize("t", BYTES)
@pytest.mark.parametrize("shapes", WHERE_SHAPES)
@pytest.mark.parametrize("copy", ["none", "x", "both"])
def test_where_matches_ort(t, shapes, copy):
    rng = np.random.default_rng(len(shapes[1]) + len(copy))
    lo, hi = limits(t)
    c = rng.random(shapes[0]) < 0.5
    x = rng.integers(lo, hi + 1, shapes[1]).astype(t)
    y = rng.integers(lo, hi + 1, shapes[2]).astype(t)
    zs, zz = np.float32(0.05), t(rng.integers(lo, hi + 1))
    consts = {"xs": zs if copy != "none" else np.float32(0.11), "xz": zz if copy != "none" else t(lo),
              "ys": zs if copy == "both" else np.float32(0.02), "yz": zz if copy == "both" else t(hi),
              "zs": zs, "zz": zz}
    feeds = {"c": np.asarray(c), "x": x, "yv": y}
    model = ms_model("QLinearWhere", feeds, consts, order=["c", "x", "xs", "xz", "yv", "ys", "yz", "zs", "zz"])
    check_ort(model, feeds)
