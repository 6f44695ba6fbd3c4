"""The versions 24-28 of operators we had before (Attention aside: test_ops_attention_24_25.py),
each against onnx.reference at that opset, and the behaviours we define where it is silent."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime
from node_check import check_model, check_node, make_model, node_model, random, run_ours, run_reference

BF16 = ml_dtypes.bfloat16


def check_bf16(model, feeds, rtol=1e-2, atol=1e-2):
    """Ours against the reference, bfloat16 outputs compared as float32 within the tolerance."""
    expected = run_reference(model, feeds)
    actual = run_ours(model, feeds)
    for a, e in zip(actual, expected):
        if isinstance(e, list):
            assert len(a) == len(e)
            pairs = list(zip(a, e))
        else:
            pairs = [(a, e)]
        for x, y in pairs:
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_allclose(np.asarray(x, np.float32), np.asarray(y, np.float32), rtol=rtol, atol=atol)
    return actual


# ---- TopK-24: bfloat16 ------------------------------------------------------------------------


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [0, -1])
def test_topk_24_bfloat16(largest, axis):
    x = random((5, 7), BF16, seed=1)
    x[1, 2] = x[3, 4] = x[0, 0]  # ties keep the lower index first
    model = node_model("TopK", {"x": x, "k": np.array([3], np.int64)}, {"axis": axis, "largest": largest},
                       n_outputs=2, opset=24)
    values, indices = check_bf16(model, {"x": x, "k": np.array([3], np.int64)}, rtol=0, atol=0)
    assert indices.dtype == np.int64


# ---- Range-27: stash_type for float16 / bfloat16 ----------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, BF16])
@pytest.mark.parametrize("stash", [None, 1, 11])
@pytest.mark.parametrize("start,limit,delta", [(0.0, 10.0, 0.75), (1000.0, 1030.0, 1.0), (5.0, -3.0, -0.5),
                                               (2.0, 2.0, 1.0), (1.0, 0.0, 1.0)])
def test_range_27_half_types(dtype, stash, start, limit, delta):
    feeds = {"start": np.array(start, dtype), "limit": np.array(limit, dtype), "delta": np.array(delta, dtype)}
    attrs = {} if stash is None else {"stash_type": stash}
    model = node_model("Range", feeds, attrs, opset=27)
    expected, = run_reference(model, feeds)
    actual, = run_ours(model, feeds)
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual.view(np.uint16), expected.view(np.uint16))


def test_range_27_accumulates_in_float_by_default():
    # 2048 + i in float16 is exact only every other integer; float32 steps then round once.
    feeds = {"start": np.array(2048, np.float16), "limit": np.array(2060, np.float16),
             "delta": np.array(1, np.float16)}
    y, = run_ours(node_model("Range", feeds, opset=27), feeds)
    np.testing.assert_array_equal(y, (2048 + np.arange(12, dtype=np.float32)).astype(np.float16))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.int32, np.int64])
def test_range_27_other_types_ignore_stash_type(dtype):
    feeds = {"start": np.array(3, dtype), "limit": np.array(17, dtype), "delta": np.array(4, dtype)}
    check_node("Range", feeds, {"stash_type": 11}, opset=27)


def test_range_27_refuses_other_stash_types():
    feeds = {"start": np.array(0, np.float16), "limit": np.array(4, np.float16), "delta": np.array(1, np.float16)}
    with pytest.raises(ValueError, match=r"stash_type must be 1 \(float\) or 11 \(double\), got 10"):
        runtime.RuntimeSession(node_model("Range", feeds, {"stash_type": 10}, opset=27))


# ---- Mod-28: fmod=0 defined for floats ----------------------------------------------------------

SPECIAL = np.array([0.0, -0.0, 5.5, -5.5, np.inf, -np.inf, np.nan, 3.0, -3.0, 6.0, -6.0, 1e-30])


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_mod_28_float_special_cases(fmod, dtype):
    # Every pair of the special values, as in the schema's list: signed zeros, infinities, NaN.
    a = np.repeat(SPECIAL, SPECIAL.size).astype(dtype)
    b = np.tile(SPECIAL, SPECIAL.size).astype(dtype)
    model = node_model("Mod", {"a": a, "b": b}, {"fmod": fmod}, opset=28)
    with np.errstate(invalid="ignore"):
        expected, = run_reference(model, {"a": a, "b": b})
    actual, = run_ours(model, {"a": a, "b": b})
    np.testing.assert_array_equal(actual, expected)
    # Zeros carry the sign the definition gives them (the divisor's for fmod=0).
    np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected))


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16])
def test_mod_28_integers(fmod, dtype):
    a = random((6, 5), dtype, low=-50 if np.dtype(dtype).kind == "i" else 0, high=50, seed=2)
    b = random((5,), dtype, low=1, high=9, seed=3)
    if np.dtype(dtype).kind == "i":
        b[::2] = -b[::2]
    check_node("Mod", {"a": a, "b": b}, {"fmod": fmod}, opset=28)


def test_mod_earlier_versions_use_the_same_float_definition():
    # Before 28, fmod=0 on floats is not defined by the schema; we compute it as 28 does.
    a = np.array([-6.0, 6.0, 0.0, -0.0, 7.5], np.float32)
    b = np.array([3.0, -3.0, -2.0, 2.0, -2.0], np.float32)
    y13, = run_ours(node_model("Mod", {"a": a, "b": b}, opset=13), {"a": a, "b": b})
    y28, = run_ours(node_model("Mod", {"a": a, "b": b}, opset=28), {"a": a, "b": b})
    np.testing.assert_array_equal(y13, y28)
    np.testing.assert_array_equal(np.signbit(y13), [False, True, True, False, True])


# ---- BitShift-28: signed integers -------------------------------------------------------------


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64])
def test_bitshift_28(direction, dtype):
    info = np.iinfo(dtype)
    bits = info.bits
    values = [0, 1, -1, 5, -5, info.max, info.min, 96, -96, 3]
    x = np.array([min(max(v, info.min), info.max) for v in values], dtype=dtype)
    # Shift amounts inside and outside [0, bits), negative ones for signed types.
    shifts = [0, 1, 2, bits - 1, bits, bits + 3, 3, 1, 4, 7]
    if info.min < 0:
        shifts[3] = shifts[8] = -1
    y = np.array(shifts, dtype=dtype)
    check_node("BitShift", {"x": x, "y": y}, {"direction": direction}, opset=28)


def test_bitshift_before_28_refuses_signed_types():
    x = np.array([1, 2], np.int32)
    model = node_model("BitShift", {"x": x, "y": x}, {"direction": "LEFT"}, opset=27)
    with pytest.raises(NotImplementedError, match="input 0 .* element type int32"):
        run_ours(model, {"x": x, "y": x})
    u = x.astype(np.uint32)
    check_node("BitShift", {"x": u, "y": u}, {"direction": "LEFT"}, opset=27)


# ---- SpaceToDepth-28 (mode) and DepthToSpace-28 -----------------------------------------------


@pytest.mark.parametrize("mode", [None, "DCR", "CRD"])
@pytest.mark.parametrize("shape,block", [((1, 2, 4, 6), 2), ((2, 3, 6, 3), 3), ((1, 1, 2, 2), 1)])
def test_space_to_depth_28(mode, shape, block):
    x = random(shape, seed=4)
    attrs = {"blocksize": block, **({} if mode is None else {"mode": mode})}
    check_node("SpaceToDepth", {"x": x}, attrs, opset=28)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_28_inverts_depth_to_space(mode):
    x = random((2, 8, 3, 5), seed=5)
    s2d = helper.make_node("DepthToSpace", ["x"], ["t"], blocksize=2, mode=mode)
    d2s = helper.make_node("SpaceToDepth", ["t"], ["y"], blocksize=2, mode=mode)
    y, = run_ours(make_model([s2d, d2s], {"x": x}, ["y"], opset=28), {"x": x})
    np.testing.assert_array_equal(y, x)


def test_space_to_depth_28_mode_errors_and_earlier_versions():
    x = random((1, 1, 4, 4), seed=6)
    with pytest.raises(ValueError, match="attribute 'mode' must be one of 'DCR', 'CRD', got 'XYZ'"):
        runtime.RuntimeSession(node_model("SpaceToDepth", {"x": x}, {"blocksize": 2, "mode": "XYZ"}, opset=28))
    # SpaceToDepth-13 has no mode: it is DCR.
    check_node("SpaceToDepth", {"x": random((1, 3, 4, 4), seed=7)}, {"blocksize": 2}, opset=13)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, BF16])
def test_depth_to_space_28(mode, dtype):
    x = random((2, 8, 2, 3), dtype, seed=8)
    model = node_model("DepthToSpace", {"x": x}, {"blocksize": 2, "mode": mode}, opset=28)
    check_bf16(model, {"x": x}, rtol=0, atol=0)


# ---- ReduceLogSum-28 / ReduceLogSumExp-28: integer types removed ------------------------------


@pytest.mark.parametrize("op", ["ReduceLogSum", "ReduceLogSumExp"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_reduce_log_28_float_types(op, dtype):
    x = random((3, 4, 5), dtype, low=0.1, high=2.0, seed=9)
    tol = 2e-3 if dtype == np.float16 else 1e-5
    check_node(op, {"x": x, "axes": np.array([1], np.int64)}, {"keepdims": 0}, opset=28, rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["ReduceLogSum", "ReduceLogSumExp"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
def test_reduce_log_28_refuses_integers(op, dtype):
    x = np.arange(1, 7, dtype=dtype).reshape(2, 3)
    with pytest.raises(NotImplementedError, match=rf"input 0 \('x'\) has element type .*from opset 28 on {op}"):
        run_ours(node_model(op, {"x": x}, opset=28), {"x": x})
    # Version 18 still takes them.
    y, = run_ours(node_model(op, {"x": x}, {"keepdims": 0}, opset=18), {"x": x})
    assert y.dtype == dtype


# ---- Types added in 24-28: bfloat16 for Einsum, OneHot, SplitToSequence -----------------------


def test_einsum_28_bfloat16():
    a, b = random((3, 4), BF16, seed=10), random((4, 5), BF16, seed=11)
    check_bf16(node_model("Einsum", {"a": a, "b": b}, {"equation": "ij,jk->ik"}, opset=28), {"a": a, "b": b},
               rtol=2e-2, atol=2e-2)


def test_one_hot_28_bfloat16_values():
    feeds = {"indices": np.array([0, 2, -1, 1], np.int64), "depth": np.array(3, np.int64),
             "values": np.array([-1.5, 2.25], BF16)}
    check_bf16(node_model("OneHot", feeds, {"axis": -1}, opset=28), feeds, rtol=0, atol=0)


@pytest.mark.parametrize("split", [None, np.array([1, 3], np.int64)])
def test_split_to_sequence_24_bfloat16(split):
    feeds = {"x": random((4, 3), BF16, seed=12)}
    if split is not None:
        feeds["split"] = split
    check_bf16(node_model("SplitToSequence", feeds, {"axis": 0}, opset=24), feeds, rtol=0, atol=0)


# ---- Optional-28 family: type-only ------------------------------------------------------------


def test_optional_28_family():
    x = random((2, 3), BF16, seed=13)
    nodes = [helper.make_node("Optional", ["x"], ["opt"]),
             helper.make_node("OptionalHasElement", ["opt"], ["has"]),
             helper.make_node("OptionalGetElement", ["opt"], ["got"])]
    has, got = run_ours(make_model(nodes, {"x": x}, ["has", "got"], opset=28), {"x": x})
    assert has.dtype == np.bool_ and bool(has)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.view(np.uint16), x.view(np.uint16))
    empty = helper.make_node("Optional", [], ["e"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    none = helper.make_node("OptionalHasElement", ["e"], ["has"])
    has, = run_ours(make_model([empty, none], {}, ["has"], opset=28), {})
    assert not bool(has)


# ---- Versions 24/25 that only add element types -----------------------------------------------

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
TYPE_ONLY_CASES = {
    "Identity": ({"x": X}, {}),
    "Flatten": ({"x": X}, {"axis": 2}),
    "Reshape": ({"x": X, "shape": np.array([4, -1], np.int64)}, {}),
    "Squeeze": ({"x": X[:1], "axes": np.array([0], np.int64)}, {}),
    "Unsqueeze": ({"x": X, "axes": np.array([1, -1], np.int64)}, {}),
    "Shape": ({"x": X}, {"start": 1}),
    "Size": ({"x": X}, {}),
    "Transpose": ({"x": X}, {"perm": [2, 0, 1]}),
    "Pad": ({"x": X, "pads": np.array([0, 1, 0, 1, 0, 2], np.int64), "value": np.array(-1.0, np.float32)},
            {"mode": "constant"}),
    "ConstantOfShape": ({"shape": np.array([2, 3], np.int64)},
                        {"value": numpy_helper.from_array(np.array([7], np.int32))}),
}


@pytest.mark.parametrize("opset", [24, 25, 28])
@pytest.mark.parametrize("op", sorted(TYPE_ONLY_CASES))
def test_type_only_versions(op, opset):
    feeds, attrs = TYPE_ONLY_CASES[op]
    check_node(op, feeds, attrs, opset=opset)


@pytest.mark.parametrize("opset", [24, 25])
def test_constant_type_only_versions(opset):
    node = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.arange(6, dtype=np.int8)))
    check_model(make_model([node], {}, ["c"], opset=opset), {})


@pytest.mark.parametrize("opset", [24, 25])
def test_control_flow_type_only_versions(opset):
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])
    cond = np.array(False)
    if_model = make_model([helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
                          {"cond": cond, "x": x}, ["y"], opset=opset)
    check_model(if_model, {"cond": cond, "x": x})
    # Scan: running sum over rows.
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "row"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["r"])],
        "body",
        [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("row", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, [2])])
    init = np.zeros(2, np.float32)
    scan = helper.make_node("Scan", ["init", "x"], ["final", "rows"], body=body, num_scan_inputs=1)
    check_model(make_model([scan], {"init": init, "x": x}, ["final", "rows"], opset=opset), {"init": init, "x": x})
    # Loop: three iterations doubling a value.
    loop_body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Add", ["v_in", "v_in"], ["v_out"])],
        "loop",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2])])
    feeds = {"n": np.array(3, np.int64), "c": np.array(True), "v": np.array([1.0, -2.0], np.float32)}
    loop = helper.make_node("Loop", ["n", "c", "v"], ["out"], body=loop_body)
    check_model(make_model([loop], feeds, ["out"], opset=opset), feeds)


@pytest.mark.parametrize("elem_type", [TensorProto.INT2, TensorProto.UINT2, TensorProto.FLOAT8E8M0])
def test_types_added_in_24_and_25_move_through_identity(elem_type):
    # The types opsets 24 and 25 added travel through the data-movement operators unchanged
    # (packed for the 2-bit types: Tensor.pack in, .numpy() out).
    import ml_dtypes

    dtype = {TensorProto.INT2: ml_dtypes.int2, TensorProto.UINT2: ml_dtypes.uint2,
             TensorProto.FLOAT8E8M0: ml_dtypes.float8_e8m0fnu}[elem_type]
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", elem_type, [5])],
                              [helper.make_tensor_value_info("y", elem_type, [5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    x = np.array([1, 0, 1, 0, 1] if elem_type != TensorProto.FLOAT8E8M0 else [1, 2, 0.5, 4, 8]).astype(dtype)
    feed = runtime.Tensor.pack(x) if elem_type != TensorProto.FLOAT8E8M0 else x
    y = runtime.RuntimeSession(model).run({"x": feed})["y"].numpy()
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.astype(np.float32), x.astype(np.float32))


def test_element_types_beyond_the_standard_are_refused_clearly():
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", 29, [4])],
                              [helper.make_tensor_value_info("y", 29, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    with pytest.raises(NotImplementedError, match="element type 29 is not supported"):
        runtime.RuntimeSession(model)
