"""The float8/float8e8m0/float4/float6 and int4/uint4/int2/uint2 element types outside Cast: the
Python surface (dtype, data_type, numpy(), Tensor.pack, feeds, DLPack), models holding them
(initializers, Constant, external data, int32_data), and every data-movement operator carrying
them (docs/element-types.md)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime
from node_check import as_feed, make_model, node_model, run_ours

TYPES = {
    TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
    TensorProto.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
    TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2,
    TensorProto.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
    TensorProto.UINT4: ml_dtypes.uint4,
    TensorProto.INT4: ml_dtypes.int4,
    TensorProto.FLOAT4E2M1: ml_dtypes.float4_e2m1fn,
    TensorProto.FLOAT8E8M0: ml_dtypes.float8_e8m0fnu,
    TensorProto.UINT2: ml_dtypes.uint2,
    TensorProto.INT2: ml_dtypes.int2,
    TensorProto.FLOAT6E2M3: ml_dtypes.float6_e2m3fn,
    TensorProto.FLOAT6E3M2: ml_dtypes.float6_e3m2fn,
}
SUB_BYTE = {TensorProto.UINT4, TensorProto.INT4, TensorProto.FLOAT4E2M1, TensorProto.UINT2, TensorProto.INT2,
            TensorProto.FLOAT6E2M3, TensorProto.FLOAT6E3M2}
BYTE_SIZED = [t for t in TYPES if t not in SUB_BYTE]
IDS = {t: np.dtype(d).name for t, d in TYPES.items()}
OPSET = 23  # the data-movement kernels' registered range on this branch


def sample(code, shape, seed=0):
    """Random codes of the type (every bit pattern, NaNs included), as an ml_dtypes array."""
    bits = 4 if code in (21, 22, 23) else 2 if code in (25, 26) else 6 if code in (27, 28) else 8
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**bits, size=shape, dtype=np.uint8).view(TYPES[code])


def same(actual, expected):
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_array_equal(actual.view(np.uint8), expected.view(np.uint8))


def session_run(model, feeds):
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(OPSET)))
    return runtime.RuntimeSession(model).run(ctx, feeds)


def run_node(op, inputs, attrs=None, n_outputs=1, opset=OPSET, initializers=None):
    model = node_model(op, inputs, attrs, n_outputs, opset, initializers)
    model.graph.node[0].name = "n0"
    return run_ours(model, dict(inputs))


# ---------------------------------------------------------------- the Python surface

@pytest.mark.parametrize("code", list(TYPES), ids=IDS.get)
def test_tensor_dtype_data_type_and_numpy(code):
    x = sample(code, (3, 5))
    t = runtime.Tensor.pack(x, "x") if code in SUB_BYTE else runtime.Tensor(x, "x")
    assert t.data_type == code
    assert t.dtype == np.dtype(TYPES[code])
    assert t.shape == (3, 5)
    same(t.numpy(), x)
    assert f"dtype={TensorProto.DataType.Name(code).lower()}" in repr(t)


@pytest.mark.parametrize("code", BYTE_SIZED, ids=IDS.get)
def test_byte_sized_types_are_zero_copy_both_ways(code):
    x = sample(code, (4, 3))
    t = runtime.Tensor(x)
    assert np.shares_memory(t.numpy(), x)
    raw = np.asarray(t)  # the buffer protocol shows the raw bits
    assert raw.dtype == np.uint8 and np.shares_memory(raw, x)
    # A session output viewing the feed (Identity) is the same memory again.
    out = session_run(node_model("Identity", {"x": x}, opset=OPSET), {"x": x})
    assert np.shares_memory(out["y0"].numpy(), x)


@pytest.mark.parametrize("code", sorted(SUB_BYTE), ids=IDS.get)
def test_sub_byte_types_cross_over_by_explicit_copies(code):
    x = sample(code, (2, 7))
    with pytest.raises(TypeError, match=r"feed 'x'.*Tensor\.pack"):
        runtime.Tensor(x, "x")
    with pytest.raises(TypeError, match=r"Tensor\.pack"):
        session_run(node_model("Identity", {"x": x}, opset=OPSET), {"x": x})
    t = runtime.Tensor.pack(x)
    assert not np.shares_memory(t.numpy(), x)
    with pytest.raises(BufferError) as info:  # pybind11 raises BufferError from our TypeError
        memoryview(t)
    assert "no buffer view; use .numpy(), which unpacks" in str(info.value.__cause__)
    # Non-contiguous arrays pack too (pack copies anyway).
    same(runtime.Tensor.pack(x.T).numpy(), x.T)
    with pytest.raises(TypeError, match="sub-byte"):
        runtime.Tensor.pack(np.zeros(3, np.float32))


def test_asarray_of_a_packed_tensor_is_refused_not_copied():
    t = runtime.Tensor.pack(np.arange(4, dtype=np.int8).astype(ml_dtypes.int4))
    with pytest.raises(TypeError, match=r"packed \(4 bits per element\).*\.numpy\(\)"):
        np.asarray(t)


@pytest.mark.parametrize("code", list(TYPES), ids=IDS.get)
def test_dlpack_export_is_a_clear_type_error(code):
    t = as_feed(sample(code, (2,)))
    t = t if isinstance(t, runtime.Tensor) else runtime.Tensor(t)
    with pytest.raises(TypeError, match=rf"{TensorProto.DataType.Name(code).lower()} tensors cannot be exported through DLPack"):
        t.__dlpack__()


def test_missing_ml_dtypes_is_named():
    code = textwrap.dedent("""
        import sys
        import numpy as np
        from onnx import helper, TensorProto
        import onnx_light.runtime as runtime
        node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FN)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, [2])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]).SerializeToString()
        sys.modules["ml_dtypes"] = None  # from here on, as if it were not installed
        ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(19)))
        y = runtime.RuntimeSession(model).run(ctx, {"x": np.ones(2, np.float32)})["y"]
        assert y.data_type == 17
        try:
            y.dtype
        except ImportError as e:
            print("ERROR", e)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "ERROR float8e4m3fn tensors need the ml_dtypes package" in result.stdout


# ---------------------------------------------------------------- models holding the types

@pytest.mark.parametrize("code", list(TYPES), ids=IDS.get)
@pytest.mark.parametrize("external", [False, True], ids=["inline", "external"])
def test_initializers_and_external_data(tmp_path, code, external):
    w = sample(code, (3, 5), seed=code)
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", code, None)],
                              initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    path = tmp_path / "m.onnx"
    if external:
        onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                        location="weights.bin", size_threshold=0)
    else:
        onnx.save_model(model, str(path))
    out = session_run(str(path), {})["y"]
    assert out.readonly
    same(out.numpy(), w)


@pytest.mark.parametrize("code", list(TYPES), ids=IDS.get)
def test_int32_data_initializers_and_constant_attributes(code):
    w = sample(code, (5,), seed=3)
    typed = helper.make_tensor("w", code, [5], w)  # int32_data, ONNX's layout for the type
    assert len(typed.int32_data) > 0 and not typed.raw_data
    constant = helper.make_node("Constant", [], ["c"], value=helper.make_tensor("v", code, [5], w))
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"]), constant], "g", [],
                              [helper.make_tensor_value_info("y", code, None), helper.make_tensor_value_info("c", code, None)],
                              initializer=[typed])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    out = session_run(model, {})
    same(out["y"].numpy(), numpy_helper.to_array(typed))
    same(out["c"].numpy(), numpy_helper.to_array(constant.attribute[0].t))


def test_quantized_weights_model():
    """int4 weights with float8 scales, dequantized by hand (Cast, Mul): the shape quantized LLM
    weights arrive in."""
    rng = np.random.default_rng(0)
    w = rng.integers(-8, 8, (8, 6)).astype(ml_dtypes.int4)
    scale = np.array([0.5, 0.25, 2.0, 1.0, 0.125, 4.0], dtype=ml_dtypes.float8_e4m3fn)
    x = rng.standard_normal((2, 8)).astype(np.float32)
    nodes = [helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["s"], ["sf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["wf", "sf"], ["wd"]),
             helper.make_node("MatMul", ["x", "wd"], ["y"])]
    model = make_model(nodes, {"x": x}, ["y"], initializers={"w": w, "s": scale}, opset=OPSET)
    expected = x @ (w.astype(np.float32) * scale.astype(np.float32))
    np.testing.assert_allclose(run_ours(model, {"x": x})[0], expected, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- data movement

@pytest.mark.parametrize("code", list(TYPES), ids=IDS.get)
def test_views_and_shapes(code):
    x = sample(code, (2, 3, 5), seed=1)
    same(run_node("Identity", {"x": x})[0], x)
    same(run_node("Reshape", {"x": x}, initializers={"s": np.array([5, 6], np.int64)})[0], x.reshape(5, 6))
    same(run_node("Flatten", {"x": x}, {"axis": 2})[0], x.reshape(6, 5))
    same(run_node("Unsqueeze", {"x": x}, initializers={"a": np.array([0, 4], np.int64)})[0], x[None, ..., None])
    y = np.ascontiguousarray(x[:, :1])
    same(run_node("Squeeze", {"y": y}, initializers={"a": np.array([1], np.int64)})[0], y[:, 0])
    np.testing.assert_array_equal(run_node("Shape", {"x": x})[0], [2, 3, 5])
    assert int(run_node("Size", {"x": x})[0]) == 30


@pytest.mark.parametrize("code", list(TYPES), ids=IDS.get)
def test_transpose_pad_concat(code):
    x = sample(code, (3, 5), seed=2)
    same(run_node("Transpose", {"x": x})[0], x.T)
    z = sample(code, (2, 3, 5), seed=4)
    same(run_node("Transpose", {"z": z}, {"perm": [2, 0, 1]})[0], z.transpose(2, 0, 1))
    pad_value = sample(code, (), seed=5)
    pads = np.array([1, 0, 0, 3], np.int64)
    padded = run_node("Pad", {"x": x}, initializers={"p": pads, "v": pad_value})[0]
    expected = np.full((4, 8), pad_value, dtype=x.dtype)
    expected[1:, :5] = x
    same(padded, expected)
    for mode in ("edge", "reflect"):
        got = run_node("Pad", {"x": x}, {"mode": mode}, initializers={"p": pads})[0]
        want = np.pad(x.view(np.uint8), [(1, 0), (0, 3)], mode=mode).view(x.dtype)
        same(got, want)
    # Odd widths: every piece after the first starts inside a byte for the packed types.
    a, b = sample(code, (3, 3), seed=6), sample(code, (3, 1), seed=7)
    same(run_node("Concat", {"a": a, "b": b, "x": x}, {"axis": 1})[0], np.concatenate([a, b, x], axis=1))
    c = sample(code, (1, 5), seed=15)
    same(run_node("Concat", {"x": x, "c": c}, {"axis": 0})[0], np.concatenate([x, c], axis=0))


@pytest.mark.parametrize("code", list(TYPES), ids=IDS.get)
def test_slice_and_split_inside_bytes(code):
    x = sample(code, (3, 7), seed=8)
    starts, ends = np.array([1, 1], np.int64), np.array([3, 6], np.int64)
    same(run_node("Slice", {"x": x}, initializers={"s": starts, "e": ends})[0], x[1:3, 1:6])
    flat = x.reshape(21)
    for lo, hi, step in ((1, 20, 1), (3, 21, 2), (20, 0, -3)):
        got = run_node("Slice", {"f": flat}, initializers={"s": np.array([lo], np.int64), "e": np.array([hi], np.int64),
                                                           "a": np.array([0], np.int64), "t": np.array([step], np.int64)})[0]
        same(got, flat[lo:hi:step])
    parts = run_node("Split", {"f": flat}, n_outputs=3, initializers={"s": np.array([5, 7, 9], np.int64)})
    for got, want in zip(parts, np.split(flat, [5, 12])):
        same(got, want)


@pytest.mark.parametrize("code", list(TYPES), ids=IDS.get)
def test_constant_and_constant_of_shape(code):
    v = sample(code, (1,), seed=9)
    out = run_node("ConstantOfShape", {"s": np.array([3, 5], np.int64)}, {"value": numpy_helper.from_array(v)})[0]
    same(out, np.full((3, 5), v[0], dtype=v.dtype))
    c = sample(code, (2, 3), seed=10)
    model = make_model([helper.make_node("Constant", [], ["y"], value=numpy_helper.from_array(c))], {}, ["y"],
                       opset=OPSET)
    same(run_ours(model, {})[0], c)


@pytest.mark.parametrize("code", list(TYPES), ids=IDS.get)
def test_if_loop_scan(code):
    x = sample(code, (3, 5), seed=11)
    then_graph = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                                   [helper.make_tensor_value_info("t", code, None)])
    else_graph = helper.make_graph([helper.make_node("Transpose", ["x"], ["e"])], "else", [],
                                   [helper.make_tensor_value_info("e", code, None)])
    cond = np.array(True)
    for flag, want in ((True, x), (False, x.T)):
        model = make_model([helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)],
                           {"c": cond, "x": x}, ["y"], opset=OPSET)
        same(run_ours(model, {"c": np.array(flag), "x": x})[0], want)
    # Loop: carry x through three iterations and stack it each time (a scan output).
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Identity", ["v_in"], ["v_out"]),
         helper.make_node("Identity", ["v_in"], ["scan"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", code, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("v_out", code, None),
         helper.make_tensor_value_info("scan", code, None)])
    model = make_model([helper.make_node("Loop", ["n", "", "x"], ["v", "stack"], body=body)],
                       {"n": np.array(3, np.int64), "x": x}, ["v", "stack"], opset=OPSET)
    v, stack = run_ours(model, {"n": np.array(3, np.int64), "x": x})
    same(v, x)
    same(stack, np.stack([x] * 3))
    # Scan over the rows of x (rows of 5 start inside a byte for the packed types), reversed.
    scan_body = helper.make_graph([helper.make_node("Identity", ["row"], ["out"])], "scan_body",
                                  [helper.make_tensor_value_info("row", code, None)],
                                  [helper.make_tensor_value_info("out", code, None)])
    model = make_model([helper.make_node("Scan", ["x"], ["y"], body=scan_body, num_scan_inputs=1,
                                         scan_input_directions=[1], scan_output_axes=[1])],
                       {"x": x}, ["y"], opset=OPSET)
    same(run_ours(model, {"x": x})[0], x[::-1].T)


@pytest.mark.parametrize("code", list(TYPES), ids=IDS.get)
def test_optionals_and_sequences(code):
    x = sample(code, (3, 5), seed=12)
    y = sample(code, (1, 5), seed=13)
    nodes = [helper.make_node("Optional", ["x"], ["o"]), helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("OptionalGetElement", ["o"], ["got"])]
    has, got = run_ours(make_model(nodes, {"x": x}, ["has", "got"], opset=OPSET), {"x": x})
    assert bool(has)
    same(got, x)
    nodes = [helper.make_node("SequenceConstruct", ["x", "y"], ["seq"]),
             helper.make_node("ConcatFromSequence", ["seq"], ["cat"], axis=0),
             helper.make_node("SequenceAt", ["seq", "i"], ["second"]),
             helper.make_node("SplitToSequence", ["cat"], ["parts"], axis=0),
             helper.make_node("SequenceEmpty", [], ["empty"], dtype=code),
             helper.make_node("SequenceLength", ["empty"], ["n"])]
    model = make_model(nodes, {"x": x, "y": y}, ["seq", "cat", "second", "parts", "n"],
                       initializers={"i": np.array(1, np.int64)}, opset=OPSET)
    seq, cat, second, parts, n = run_ours(model, {"x": x, "y": y})
    same(seq[0], x)
    same(cat, np.concatenate([x, y]))
    same(second, y)
    assert len(parts) == 4
    for got, want in zip(parts, np.concatenate([x, y])):
        same(got, want[None])
    assert int(n) == 0


@pytest.mark.parametrize("code", sorted(SUB_BYTE), ids=IDS.get)
def test_other_strided_movers_match_the_same_move_of_bytes(code):
    """Expand, Tile, DepthToSpace, SpaceToDepth and nearest Resize go through the strided copy or
    MapCopy, so they carry packed types: the result equals the same move of one-byte codes."""
    rng = np.random.default_rng(code)
    cases = [("Expand", (1, 5), None, {"s": np.array([3, 5], np.int64)}),
             ("Tile", (3, 5), None, {"r": np.array([2, 3], np.int64)}),
             ("DepthToSpace", (1, 8, 3, 3), {"blocksize": 2, "mode": "CRD"}, None),
             ("DepthToSpace", (1, 8, 3, 3), {"blocksize": 2, "mode": "DCR"}, None),
             ("SpaceToDepth", (1, 2, 4, 6), {"blocksize": 2}, None),
             ("Resize", (1, 1, 3, 3), {"mode": "nearest"},
              {"r": np.array([], np.float32), "s": np.array([1, 1, 2, 1.5], np.float32)})]
    for op, shape, attrs, inits in cases:
        codes = sample(code, shape, seed=int(rng.integers(1000)))
        want = run_node(op, {"x": codes.view(np.uint8)}, attrs, initializers=inits)[0]
        got = run_node(op, {"x": codes}, attrs, initializers=inits)[0]
        np.testing.assert_array_equal(got.view(np.uint8), want, err_msg=op)


@pytest.mark.parametrize("code", sorted(SUB_BYTE), ids=IDS.get)
def test_element_wise_movers_refuse_packed_types_clearly(code):
    x = sample(code, (3, 4), seed=14)
    with pytest.raises(NotImplementedError, match=rf"'n0'.*{TensorProto.DataType.Name(code).lower()}"):
        run_node("Gather", {"x": x}, initializers={"i": np.array([0, 2], np.int64)})
    with pytest.raises(NotImplementedError, match="'n0'"):
        run_node("Where", {"c": np.ones((3, 4), bool), "x": x, "y": x})


def test_events_carry_the_onnx_codes():
    x = sample(TensorProto.INT4, (3, 5))
    f = sample(TensorProto.FLOAT8E5M2, (2,))
    model = make_model([helper.make_node("Transpose", ["x"], ["y"]), helper.make_node("Identity", ["f"], ["g"])],
                       {"x": x, "f": f}, ["y", "g"], opset=OPSET)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    runtime.RuntimeSession(model).run(ctx, {"x": runtime.Tensor.pack(x), "f": f})
    codes = {e.name: e.data_type for e in ctx.events() if e.name in ("x", "y", "f", "g")}
    assert codes == {"x": TensorProto.INT4, "y": TensorProto.INT4, "f": TensorProto.FLOAT8E5M2,
                     "g": TensorProto.FLOAT8E5M2}


@pytest.mark.parametrize("code", [TensorProto.INT4, TensorProto.FLOAT6E3M2, TensorProto.FLOAT8E4M3FN], ids=IDS.get)
def test_persistent_state_appends_packed_rows(code):
    """A cache of a packed type grows by Concat: rows of 3 int4 elements start inside a byte every
    other step, where the in-place reservation is declined and the node writes a fresh output."""
    graph = helper.make_graph([helper.make_node("Concat", ["past", "x"], ["present"], axis=1)], "g",
                              [helper.make_tensor_value_info("past", code, [1, "n", 3]),
                               helper.make_tensor_value_info("x", code, [1, 1, 3])],
                              [helper.make_tensor_value_info("present", code, [1, "m", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    declared = runtime.with_persistent_bindings(model, {"past": "present"})
    state = runtime.PersistentValueState(declared, {"past": as_feed(sample(code, (1, 0, 3)))},
                                         runtime.RuntimeSessionOptions(persistent_tensor_initial_capacity=4))
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(OPSET)))
    rows = []
    for step in range(9):  # past the initial capacity too
        x = sample(code, (1, 1, 3), seed=100 + step)
        rows.append(x)
        out = state.run(ctx, {"x": as_feed(x)})
        same(out["present"].numpy(), np.concatenate(rows, axis=1))


# ---------------------------------------------------------------- operators new types reach

FLOAT8 = [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ]


@pytest.mark.parametrize("code", FLOAT8, ids=IDS.get)
def test_isnan_isinf_on_float8_every_code(code):
    from onnx.reference import ReferenceEvaluator

    x = np.arange(256, dtype=np.uint8).view(TYPES[code])
    for op, attrs in [("IsNaN", {}), ("IsInf", {}), ("IsInf", {"detect_negative": 0}),
                      ("IsInf", {"detect_positive": 0})]:
        model = node_model(op, {"x": x}, attrs, 1, 20, None)
        (ours,) = run_ours(model, {"x": x})
        (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
        np.testing.assert_array_equal(ours, expected.astype(bool), err_msg=f"{op} {attrs}")


def test_isnan_before_opset_20_refuses_float8():
    x = np.zeros(3, np.float32).astype(ml_dtypes.float8_e4m3fn)
    with pytest.raises(NotImplementedError, match="float8e4m3fn"):
        run_ours(node_model("IsNaN", {"x": x}, {}, 1, 19, None), {"x": x})


@pytest.mark.parametrize("code", [TensorProto.INT4, TensorProto.UINT4, TensorProto.FLOAT4E2M1, TensorProto.FLOAT8E4M3FN],
                         ids=IDS.get)
@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_on_new_types(code, mode):
    cache = sample(code, (2, 5, 3), seed=1)
    update = sample(code, (2, 2, 3), seed=2)
    write = np.array([1, 4 if mode == "circular" else 3], np.int64)
    feeds = {"cache": cache, "update": update, "write": write}
    model = node_model("TensorScatter", feeds, {"axis": 1, "mode": mode}, 1, 24, None)
    (ours,) = run_ours(model, feeds)
    # The expected rows, moved as bytes (the reference would compute with the values).
    expected = cache.view(np.uint8).copy()
    for b in range(2):
        for s in range(2):
            expected[b, (write[b] + s) % 5] = update.view(np.uint8)[b, s]
    same(ours, expected.view(TYPES[code]))
