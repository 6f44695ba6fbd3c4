"""MatMul, Gemm, Einsum, Conv, ConvTranspose and the pooling operators against onnx.reference
(or ONNX Runtime where the reference is too slow or implements other semantics)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import (DIRECT_CONV_PATH, IM2COL_CONV_PATH, LANES_CONV_PATH, MAX_POOL_ROWS_PATH,
                        POINTWISE_CONV_PATH, TILED_GEMM_PATH,
                        assert_close, assert_thread_count_invariant,
                        check_node, dense_conv_path, depthwise_conv_path, grouped_conv_isa, make_model, node_model, random,
                        run_ort, run_ours, run_reference, usage_of)

BF16 = ml_dtypes.bfloat16
# BLAS sums in another order than numpy: float32 results agree to about 1e-6 relative, less for
# long sums.
F32 = {"rtol": 1e-4, "atol": 1e-5}
F16 = {"rtol": 1e-2, "atol": 1e-2}


def named_node_model(op, inputs, attrs=None, n_outputs=1, opset=23, name="linalg_node"):
    node = helper.make_node(op, list(inputs), [f"y{i}" for i in range(n_outputs)], name=name, **(attrs or {}))
    return make_model([node], inputs, [f"y{i}" for i in range(n_outputs)], opset=opset)


def expect_error(exc, model, feeds, *needles):
    with pytest.raises(exc) as info:
        run_ours(model, feeds)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in {info.value}"


def expect_build_error(exc, model, *needles):
    with pytest.raises(exc) as info:
        runtime.RuntimeSession(model)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in {info.value}"


def int_input(shape, dtype, seed=0):
    low = 0 if np.dtype(dtype).kind == "u" else -5
    return random(shape, dtype, low, 5, seed=seed)


def check_bf16(op, inputs, attrs=None, opset=23, rtol=2e-2, atol=2e-2):
    """bfloat16 against the reference on float32 copies (numpy has no bfloat16 arithmetic)."""
    ours = run_ours(node_model(op, inputs, attrs, opset=opset), inputs)[0]
    f32 = {k: v.astype(np.float32) for k, v in inputs.items()}
    expected = run_reference(node_model(op, f32, attrs, opset=opset), f32)[0]
    assert ours.dtype == BF16
    np.testing.assert_allclose(ours.astype(np.float32), expected, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------------
# MatMul

MATMUL_SHAPES = [
    ([3, 4], [4, 5]),
    ([4], [4, 5]),          # 1-D A
    ([3, 4], [4]),          # 1-D B
    ([4], [4]),             # dot product -> scalar
    ([7], [2, 7, 3]),       # 1-D A against a batch
    ([2, 3, 7], [7]),       # batch against 1-D B
    ([2, 1, 3, 4], [5, 4, 6]),  # broadcast batch
    ([2, 3, 4], [4, 5]),    # shared B: folded into one GEMM
    ([3, 4], [2, 4, 5]),    # shared A: per-batch GEMMs
    ([2, 3, 4], [2, 4, 5]),
    ([1, 3, 4], [2, 4, 1]),
    ([0, 3], [3, 4]),       # empty M
    ([3, 0], [0, 4]),       # empty K: zeros
    ([2, 3, 0], [2, 0, 4]),
    ([2, 3, 0], [0]),
    ([2, 0, 3, 4], [4, 5]),  # empty batch
    ([3, 4], [4, 0]),
    ([64, 96], [96, 80]),
    ([50, 2, 3], [50, 3, 2]),   # tiny products: direct loop instead of a BLAS call each
    ([5, 1, 2, 3], [4, 3, 1]),
]


@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
def test_matmul_shapes_float32(a_shape, b_shape):
    check_node("MatMul", {"a": random(a_shape), "b": random(b_shape, seed=1)}, **F32)


@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES[:12])
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.uint32, np.uint64])
def test_matmul_dtypes(a_shape, b_shape, dtype):
    if np.dtype(dtype).kind == "f":
        a, b = random(a_shape, dtype), random(b_shape, dtype, seed=1)
    else:
        a, b = int_input(a_shape, dtype), int_input(b_shape, dtype, seed=1)
    check_node("MatMul", {"a": a, "b": b})


@pytest.mark.parametrize("a_shape,b_shape", [([3, 4], [4, 5]), ([2, 1, 3, 4], [5, 4, 6]), ([4], [4])])
def test_matmul_float16(a_shape, b_shape):
    check_node("MatMul", {"a": random(a_shape, np.float16), "b": random(b_shape, np.float16, seed=1)}, **F16)


def test_matmul_bfloat16():
    check_bf16("MatMul", {"a": random([2, 3, 8]).astype(BF16), "b": random([8, 5], seed=1).astype(BF16)})


def check_half_rows(build, feeds, dtype):
    """Ours on half inputs against the reference on float32 copies of the same values;
    `build(feeds)` makes the model for a set of feeds."""
    ours = run_ours(build(feeds), feeds)[0]
    f32 = {k: v.astype(np.float32) for k, v in feeds.items()}
    expected = run_reference(build(f32), f32)[0]
    assert ours.dtype == dtype
    np.testing.assert_allclose(ours.astype(np.float32), expected, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", [np.float16, BF16])
@pytest.mark.parametrize("a_shape,n", [([70], 33), ([1, 70], 33), ([2, 70], 130), ([1, 1, 64], 4100), ([1, 2, 16], 5)])
def test_matmul_half_rows_stream_b_in_its_own_type(a_shape, n, dtype):
    # One or two rows times a 2-D B (a decode step): B is read once as stored, not converted.
    feeds = {"a": random(a_shape).astype(dtype), "b": random([a_shape[-1], n], seed=1).astype(dtype)}
    check_half_rows(lambda f: node_model("MatMul", f), feeds, dtype)
    name = "float16" if dtype == np.float16 else "bfloat16"
    assert usage_of(node_model("MatMul", feeds), feeds) == [f"MatMul/{name}/row-stream"]


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_matmul_half_row_times_transposed_view(dtype):
    feeds = {"a": random([1, 40]).astype(dtype), "bt": random([23, 40], seed=1).astype(dtype)}
    nodes = [helper.make_node("Transpose", ["bt"], ["b"], perm=[1, 0]), helper.make_node("MatMul", ["a", "b"], ["y"])]
    check_half_rows(lambda f: make_model(nodes, f, ["y"]), feeds, dtype)
    name = "float16" if dtype == np.float16 else "bfloat16"
    usage = usage_of(make_model(nodes, feeds, ["y"]), feeds)
    assert f"MatMul/{name}/column-stream" in usage or f"MatMul/{name}/row-stream" in usage


def test_matmul_half_three_rows_take_the_general_path():
    feeds = {"a": random([3, 8], np.float16), "b": random([8, 5], np.float16, seed=1)}
    assert "MatMul/float16/float32-scratch" in usage_of(node_model("MatMul", feeds), feeds)
    check_node("MatMul", feeds, **F16)


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_matmul_half_constant_b_is_converted_once_and_rows_still_stream(dtype):
    """A constant half B (an lm_head's weights) is converted to float32 and packed at build for
    products of more rows; one- and two-row products still stream B as stored."""
    b = random([128, 96], seed=1).astype(dtype)
    name = "float16" if dtype == np.float16 else "bfloat16"
    for rows in (1, 2, 5, 64):
        feeds = {"a": random([rows, 128]).astype(dtype)}
        check_half_rows(lambda f: node_model("MatMul", f, initializers={"b": b.astype(f["a"].dtype)}), feeds, dtype)
        usage = usage_of(node_model("MatMul", feeds, initializers={"b": b}), feeds)
        if rows <= 2:
            assert usage == [f"MatMul/{name}/row-stream"], usage
            continue
        assert f"MatMul/{name}/float32-scratch" in usage, usage
        # Where the float32 kernel runs its own tiles, it reads B packed at build.
        tiles = [u for u in usage if u.startswith("MatMul/float32/tiles")]
        assert all(u.endswith("-prepacked") for u in tiles), usage


def test_matmul_int64_overflow_wraps():
    # Integer overflow wraps modulo 2**64 (docs/semantics.md): 2**62 * 4 + 3 * 5 = 2**64 + 15 -> 15,
    # and 2**62 * 2 = 2**63 -> -2**63.
    a = np.array([[2**62, 3], [2**62, 0]], dtype=np.int64)
    b = np.array([[4, 2], [5, 0]], dtype=np.int64)
    (y,) = run_ours(node_model("MatMul", {"a": a, "b": b}), {"a": a, "b": b})
    assert y.tolist() == [[15, -(2**63)], [0, -(2**63)]]


@pytest.mark.parametrize("opset", [1, 9, 13, 23])
def test_matmul_opsets(opset):
    check_node("MatMul", {"a": random([2, 3, 4]), "b": random([2, 4, 5], seed=1)}, opset=opset, **F32)


def test_matmul_large_against_ort():
    check_node("MatMul", {"a": random([4, 128, 256]), "b": random([256, 192], seed=1)}, reference="ort",
               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("a_shape,b_shape,dtype,expected", [
    ([3, 4], [4, 5], np.float32, "MatMul/float32/blas"),
    ([2, 3, 4], [4, 5], np.float32, "MatMul/float32/blas-folded"),
    ([3, 4], [2, 4, 5], np.float32, "MatMul/float32/blas-batched"),
    ([2, 3, 4], [2, 4, 5], np.float64, "MatMul/float64/blas-batched"),
    ([3, 4], [4, 5], np.int64, "MatMul/int64/loop"),
    ([2, 3, 4], [2, 4, 5], np.int64, "MatMul/int64/loop-batched"),
    ([64, 2, 3], [64, 3, 2], np.float32, "MatMul/float32/small-batched-loop"),
    ([3, 4], [4, 5], np.float16, "MatMul/float16/float32-scratch"),
])
def test_matmul_kernel_usage(a_shape, b_shape, dtype, expected):
    feeds = {"a": random(a_shape, dtype), "b": random(b_shape, dtype, seed=1)}
    assert expected in usage_of(node_model("MatMul", feeds), feeds)


def test_matmul_inner_dim_mismatch():
    feeds = {"a": random([3, 4]), "b": random([5, 6])}
    expect_error(ValueError, named_node_model("MatMul", feeds), feeds, "linalg_node", "[3, 4]", "[5, 6]")


def test_matmul_batch_mismatch():
    feeds = {"a": random([2, 3, 4]), "b": random([3, 4, 6])}
    expect_error(ValueError, named_node_model("MatMul", feeds), feeds, "linalg_node", "cannot be broadcast")


def test_matmul_unsupported_type():
    feeds = {"a": int_input([2, 2], np.int8), "b": int_input([2, 2], np.int8)}
    expect_error(NotImplementedError, named_node_model("MatMul", feeds), feeds, "linalg_node", "int8")


def test_matmul_scalar_input_rejected():
    feeds = {"a": np.array(2.0, dtype=np.float32), "b": random([2, 2])}
    expect_error(ValueError, named_node_model("MatMul", feeds), feeds, "linalg_node", "rank >= 1")


# ---------------------------------------------------------------------------------------------
# Gemm

GEMM_C_SHAPES = [None, "mn", "n", "1n", "m1", "11", "scalar", "1"]


def gemm_c(kind, m, n):
    shape = {"mn": [m, n], "n": [n], "1n": [1, n], "m1": [m, 1], "11": [1, 1], "scalar": [], "1": [1]}[kind]
    return random(shape, seed=2)


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.5, 2.0), (1.5, 0.0)])
@pytest.mark.parametrize("c_kind", GEMM_C_SHAPES)
def test_gemm_combinations(trans_a, trans_b, alpha, beta, c_kind):
    m, k, n = 3, 5, 4
    inputs = {"a": random([k, m] if trans_a else [m, k]), "b": random([n, k] if trans_b else [k, n], seed=1)}
    if c_kind is not None:
        inputs["c"] = gemm_c(c_kind, m, n)
    check_node("Gemm", inputs, {"transA": trans_a, "transB": trans_b, "alpha": alpha, "beta": beta}, **F32)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.uint32, np.uint64])
@pytest.mark.parametrize("trans_b", [0, 1])
def test_gemm_dtypes(dtype, trans_b):
    make = (lambda s, seed: random(s, dtype, seed=seed)) if np.dtype(dtype).kind == "f" else \
        (lambda s, seed: int_input(s, dtype, seed=seed))
    inputs = {"a": make([3, 5], 0), "b": make([4, 5] if trans_b else [5, 4], 1), "c": make([4], 2)}
    check_node("Gemm", inputs, {"transB": trans_b})


def test_gemm_int_scaled():
    inputs = {"a": int_input([3, 5], np.int64), "b": int_input([5, 4], np.int64, seed=1),
              "c": int_input([3, 4], np.int64, seed=2)}
    check_node("Gemm", inputs, {"alpha": 2.0, "beta": 3.0})


def test_gemm_float16_and_bfloat16():
    inputs = {"a": random([3, 5], np.float16), "b": random([5, 4], np.float16, seed=1),
              "c": random([4], np.float16, seed=2)}
    check_node("Gemm", inputs, {"alpha": 0.5}, **F16)
    check_bf16("Gemm", {k: v.astype(BF16) for k, v in inputs.items()}, {"alpha": 0.5})


@pytest.mark.parametrize("opset", [7, 9, 11, 13, 23])
def test_gemm_opsets(opset):
    inputs = {"a": random([3, 5]), "b": random([5, 4], seed=1), "c": random([3, 1], seed=2)}
    check_node("Gemm", inputs, {"beta": 0.5}, opset=opset, **F32)


def test_gemm_opset6_broadcast_attribute():
    inputs = {"a": random([3, 5]), "b": random([5, 4], seed=1), "c": random([4], seed=2)}
    check_node("Gemm", inputs, {"broadcast": 1}, opset=6, **F32)
    exact = dict(inputs, c=random([3, 4], seed=2))
    check_node("Gemm", exact, {"broadcast": 0}, opset=6, **F32)
    expect_error(ValueError, named_node_model("Gemm", inputs, {"broadcast": 0}, opset=6), inputs, "linalg_node",
                 "broadcast=0")


def test_gemm_without_c_opset11():
    check_node("Gemm", {"a": random([3, 5]), "b": random([4, 5], seed=1)}, {"transB": 1}, opset=11, **F32)


def test_gemm_empty_k_keeps_beta_c():
    inputs = {"a": random([3, 0]), "b": random([0, 4], seed=1), "c": random([4], seed=2)}
    check_node("Gemm", inputs, {"beta": 2.0})


def test_gemm_large_against_ort():
    inputs = {"a": random([200, 300]), "b": random([256, 300], seed=1), "c": random([256], seed=2)}
    check_node("Gemm", inputs, {"transB": 1}, reference="ort", rtol=1e-4, atol=1e-4)


def test_gemm_kernel_usage():
    inputs = {"a": random([3, 5]), "b": random([5, 4], seed=1), "c": random([4], seed=2)}
    assert "Gemm/float32/blas-c" in usage_of(node_model("Gemm", inputs), inputs)
    no_c = {"a": inputs["a"], "b": inputs["b"]}
    assert "Gemm/float32/blas" in usage_of(node_model("Gemm", no_c), no_c)


@pytest.mark.parametrize("attrs,expected", [
    ({}, TILED_GEMM_PATH),
    ({"transB": 1}, "blas"),                     # a transposed operand stays on OpenBLAS
    ({"alpha": 0.5}, "blas"),
    ({"beta": 2.0}, "blas"),
])
def test_gemm_tiles_match_ort(attrs, expected):
    # 37 x 29 products (row and column tails) with C broadcast over the rows: beta 1 adds the
    # product to C in the tiles.
    b_shape = [29, 53] if attrs.get("transB") else [53, 29]
    inputs = {"a": random([37, 53]), "b": random(b_shape, seed=1), "c": random([29], seed=2)}
    check_node("Gemm", inputs, attrs, reference="ort", rtol=1e-4, atol=1e-4)
    assert f"Gemm/float32/{expected}-c" in usage_of(node_model("Gemm", inputs, attrs), inputs)


@pytest.mark.parametrize("a_shape,b_shape,suffix", [
    ([37, 53], [53, 29], ""),
    ([3, 20, 64], [64, 72], "-folded"),          # 60 rows in one product
    ([3, 20, 64], [3, 64, 40], "-batched"),
])
def test_matmul_tiles_match_ort(a_shape, b_shape, suffix):
    inputs = {"a": random(a_shape), "b": random(b_shape, seed=1)}
    check_node("MatMul", inputs, {}, reference="ort", rtol=1e-4, atol=1e-4)
    assert f"MatMul/float32/{TILED_GEMM_PATH}{suffix}" in usage_of(node_model("MatMul", inputs), inputs)


# Widths around the 48-column panels B is packed in, depths of one pass and of several.
@pytest.mark.parametrize("a_shape,b_shape,suffix", [
    ([37, 53], [53, 29], ""),
    ([3, 20, 300], [300, 97], "-folded"),
    ([9, 130], [130, 48], ""),
    ([2, 3, 16, 20], [20, 200], "-folded"),
])
def test_matmul_constant_b_is_packed_once_and_matches_ort(a_shape, b_shape, suffix):
    feeds = {"a": random(a_shape)}
    model = node_model("MatMul", feeds, initializers={"b": random(b_shape, seed=1)})
    (got,) = run_ours(model, feeds)
    (want,) = run_ort(model, feeds)
    assert_close(got, want, rtol=1e-4, atol=1e-4)
    packed = "-prepacked" if TILED_GEMM_PATH == "tiles-avx512" else ""
    assert usage_of(model, feeds) == [f"MatMul/float32/{TILED_GEMM_PATH}{packed}{suffix}"]


def test_matmul_b_fed_over_its_initializer_is_not_the_packed_one():
    # An initializer that is also a graph input is only a default: the kernel may not pack it,
    # and a fed B must be the one multiplied.
    feeds = {"a": random([16, 24])}
    model = node_model("MatMul", feeds, initializers={"b": random([24, 32], seed=1)})
    model.graph.input.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, [24, 32]))
    other = random([24, 32], seed=7)
    (got,) = run_ours(model, {**feeds, "b": other})
    np.testing.assert_allclose(got, feeds["a"] @ other, rtol=1e-5, atol=1e-5)
    assert usage_of(model, {**feeds, "b": other}) == [f"MatMul/float32/{TILED_GEMM_PATH}"]


# A constant B (GPT-2's Conv1D layers export as Gemm with [K, N] weights, torchvision's
# classifiers with transB=1) is packed once; a per-column C with beta 1 starts the tiles.
# Other alpha, beta or C shapes, and a transposed A, keep the unpacked paths.
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("attrs,c_kind,packed", [
    ({}, None, True),
    ({}, "n", True),
    ({}, "1n", True),
    ({"beta": 0.0}, "mn", True),                 # C ignored
    ({}, "mn", False),
    ({}, "scalar", False),
    ({}, "m1", False),
    ({"beta": 2.0}, "n", False),
    ({"alpha": 0.5}, None, False),
    ({"transA": 1}, "n", False),
])
def test_gemm_constant_b_is_packed_once_and_matches_ort(trans_b, attrs, c_kind, packed):
    m, k, n = 37, 130, 53
    attrs = dict(attrs, transB=trans_b)
    feeds = {"a": random([k, m] if attrs.get("transA") else [m, k])}
    inits = {"b": random([n, k] if trans_b else [k, n], seed=1)}
    if c_kind is not None:
        inits["c"] = gemm_c(c_kind, m, n)
    model = node_model("Gemm", feeds, attrs, initializers=inits)
    (got,) = run_ours(model, feeds)
    (want,) = run_ort(model, feeds)
    assert_close(got, want, rtol=1e-4, atol=1e-4)
    (usage,) = usage_of(model, feeds)
    with_c = c_kind is not None and attrs.get("beta", 1.0) != 0.0
    if packed and TILED_GEMM_PATH == "tiles-avx512":
        assert usage == "Gemm/float32/tiles-avx512-prepacked" + ("-c" if with_c else ""), usage
    else:
        assert "prepacked" not in usage, usage


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_half_gemm_constant_b_is_converted_and_packed_at_build(dtype):
    # A float16 / bfloat16 constant B is converted to float32 once, when the session is built,
    # and the float kernel packs it: each run converts only A and the output.
    m, k, n = 40, 64, 48
    feeds = {"a": random([m, k]).astype(dtype)}
    b, c = random([k, n], seed=1), random([n], seed=2)
    model = node_model("Gemm", feeds, initializers={"b": b.astype(dtype), "c": c.astype(dtype)})
    (got,) = run_ours(model, feeds)
    want = feeds["a"].astype(np.float32) @ b.astype(dtype).astype(np.float32) + c.astype(dtype).astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=5e-2)
    usage = usage_of(model, feeds)
    half = "float16" if dtype == np.float16 else "bfloat16"
    assert f"Gemm/{half}/float32-scratch" in usage
    if TILED_GEMM_PATH == "tiles-avx512":
        assert "Gemm/float32/tiles-avx512-prepacked-c" in usage, usage


def test_gemm_b_fed_over_its_initializer_is_not_the_packed_one():
    feeds = {"a": random([16, 24])}
    model = node_model("Gemm", feeds, {"transB": 1}, initializers={"b": random([32, 24], seed=1)})
    model.graph.input.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, [32, 24]))
    other = random([32, 24], seed=7)
    (got,) = run_ours(model, {**feeds, "b": other})
    np.testing.assert_allclose(got, feeds["a"] @ other.T, rtol=1e-5, atol=1e-5)
    assert "prepacked" not in usage_of(model, {**feeds, "b": other})[0]


@pytest.mark.parametrize("inputs,needle", [
    ({"a": random([2, 3, 4]), "b": random([4, 5])}, "2-D"),
    ({"a": random([3, 4]), "b": random([5, 6])}, "inner dimensions"),
    ({"a": random([3, 4]), "b": random([4, 5]), "c": random([2, 5])}, "input C"),
    ({"a": random([3, 4]), "b": random([4, 5]), "c": random([2, 3, 5])}, "input C"),
])
def test_gemm_errors(inputs, needle):
    expect_error(ValueError, named_node_model("Gemm", inputs), inputs, "linalg_node", needle)


# ---------------------------------------------------------------------------------------------
# Einsum

EINSUM_CASES = [
    ("ij,jk->ik", [[3, 4], [4, 5]]),
    ("bij,bjk->bik", [[2, 3, 4], [2, 4, 5]]),
    ("bhqd,bhkd->bhqk", [[2, 3, 5, 8], [2, 3, 6, 8]]),
    ("ii->i", [[4, 4]]),
    ("...ij->...ji", [[2, 3, 4, 5]]),
    ("ij->", [[3, 4]]),
    ("ij->j", [[3, 4]]),
    ("ij->ji", [[3, 4]]),
    ("ji", [[3, 4]]),                # implicit output: alphabetical, so a transpose
    ("ij,jk", [[3, 4], [4, 5]]),     # implicit output ik
    ("ii", [[4, 4]]),                # implicit: trace
    ("iij->ij", [[3, 3, 5]]),
    ("i,i->", [[6], [6]]),
    ("i,j->ij", [[3], [4]]),
    ("ij,ij->ij", [[3, 4], [3, 4]]),
    ("bij,bkj->bik", [[2, 3, 4], [2, 5, 4]]),
    ("bji,bjk->bik", [[2, 4, 3], [2, 4, 5]]),
    ("ij,kj->ik", [[3, 4], [5, 4]]),
    ("bij,jk->bik", [[2, 3, 4], [4, 5]]),
    ("bhqk,bhkd->bqhd", [[2, 3, 4, 5], [2, 3, 5, 6]]),   # output needs a transpose
    ("ijk,ikl->jl", [[2, 3, 4], [2, 4, 5]]),
    ("ij,jk->k", [[3, 4], [4, 5]]),                          # i summed in A alone
    ("...ij,...jk->...ik", [[2, 1, 3, 4], [5, 4, 6]]),      # broadcast ellipsis
    ("...j,j->...", [[2, 3, 4], [4]]),
    ("i...,i...->...", [[3, 2, 4], [3, 2, 4]]),
    ("abc,cd,de->abe", [[2, 3, 4], [4, 5], [5, 6]]),
    ("ij,jk,kl->il", [[3, 4], [4, 5], [5, 2]]),
    ("i,i,i->i", [[5], [5], [5]]),
    ("Ab,bC->AC", [[3, 4], [4, 2]]),
    ("ab,ba->", [[3, 4], [4, 3]]),
    ("aab,bc->ac", [[3, 3, 4], [4, 5]]),                    # diagonal, then a contraction
    ("ii,i->i", [[3, 3], [3]]),
    ("...,...->...", [[2, 3], [3]]),
    ("a...,...a->...", [[3, 2, 4], [2, 4, 3]]),
    ("bn,anm,bm->ba", [[2, 3], [4, 3, 5], [2, 5]]),
    ("ij,kl->ijkl", [[2, 3], [4, 5]]),
    ("ijk,kji->", [[2, 3, 4], [4, 3, 2]]),
    ("bhqk,bkhd->bqhd", [[2, 3, 4, 5], [2, 5, 3, 6]]),
    ("ij,jk,kl,lm->mi", [[2, 3], [3, 4], [4, 5], [5, 6]]),
    ("bij,bjk->bik", [[1, 3, 4], [2, 4, 5]]),                # broadcast batch label
    ("i,->i", [[3], []]),
    ("->", [[]]),
    ("bij,bij->bij", [[16, 3, 4], [16, 3, 4]]),               # elementwise: small per-batch products
    ("bi,bi->b", [[40, 3], [40, 3]]),
    ("ij,jk->ik_empty_m", [[0, 3], [3, 4]]),
    ("ij,jk->ik_empty_k", [[3, 0], [0, 4]]),
    ("ij,j->i_empty_k", [[3, 0], [0]]),
]


def einsum_equation(eq):
    return eq.split("_")[0]


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_float32(equation, shapes):
    inputs = {f"x{i}": random(s, seed=i) for i, s in enumerate(shapes)}
    check_node("Einsum", inputs, {"equation": einsum_equation(equation)}, **F32)


@pytest.mark.parametrize("equation,shapes", EINSUM_CASES[:20], ids=[c[0] for c in EINSUM_CASES[:20]])
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32, np.uint32, np.int8, np.uint16])
def test_einsum_dtypes(equation, shapes, dtype):
    if np.dtype(dtype).kind == "f":
        inputs = {f"x{i}": random(s, dtype, seed=i) for i, s in enumerate(shapes)}
    else:
        inputs = {f"x{i}": int_input(s, dtype, seed=i) for i, s in enumerate(shapes)}
    check_node("Einsum", inputs, {"equation": einsum_equation(equation)})


def test_einsum_float16():
    inputs = {"a": random([2, 3, 4], np.float16), "b": random([2, 4, 5], np.float16, seed=1)}
    check_node("Einsum", inputs, {"equation": "bij,bjk->bik"}, **F16)


@pytest.mark.parametrize("equation,shapes,expected", [
    ("bij,bjk->bik", [[2, 3, 4], [2, 4, 5]], "Einsum/float32/batched-gemm-blas"),
    ("bhqd,bhkd->bhqk", [[2, 3, 5, 8], [2, 3, 6, 8]], "Einsum/float32/batched-gemm-blas"),
    ("ij,jk->k", [[3, 4], [4, 5]], "Einsum/float32/generic-reduce"),
    ("ij,jk->k", [[3, 4], [4, 5]], "Einsum/float32/batched-gemm-blas"),
    ("bij,bij->bij", [[64, 3, 4], [64, 3, 4]], "Einsum/float32/small-batched-loop"),
    ("bij,bjk->bik", [[2, 3, 4], [2, 4, 5]], "Einsum/int64/batched-gemm-loop"),
    ("...ij->...ji", [[2, 3, 4, 5]], "Einsum/float32/transpose"),
    ("ii->i", [[4, 4]], "Einsum/float32/generic"),
])
def test_einsum_kernel_usage(equation, shapes, expected):
    dtype = np.int64 if "int64" in expected else np.float32
    inputs = {f"x{i}": random(s, dtype, seed=i) for i, s in enumerate(shapes)}
    assert expected in usage_of(node_model("Einsum", inputs, {"equation": equation}), inputs)


def test_einsum_large_attention_against_ort():
    inputs = {"q": random([2, 4, 64, 32]), "k": random([2, 4, 80, 32], seed=1)}
    check_node("Einsum", inputs, {"equation": "bhqd,bhkd->bhqk"}, reference="ort", rtol=1e-4, atol=1e-4)


def test_einsum_rank_mismatch():
    inputs = {"a": random([3, 4, 5]), "b": random([4, 5])}
    expect_error(ValueError, named_node_model("Einsum", inputs, {"equation": "ij,jk->ik"}), inputs,
                 "linalg_node", "rank 3")


def test_einsum_dim_mismatch():
    inputs = {"a": random([3, 4]), "b": random([5, 6])}
    expect_error(ValueError, named_node_model("Einsum", inputs, {"equation": "ij,jk->ik"}), inputs,
                 "linalg_node", "label 'j'")


@pytest.mark.parametrize("equation,n_inputs,needle", [
    ("ij,jk->iz", 2, "'z'"),
    ("ij->ii", 1, "more than once"),
    ("i.j,jk->ik", 2, "'...'"),
    ("i...j...,jk->ik", 2, "'...'"),
    ("ij,jk,kl->il", 2, "operands"),
    ("i$,jk->ik", 2, "'$'"),
])
def test_einsum_bad_equation(equation, n_inputs, needle):
    inputs = dict(list({"a": random([3, 4]), "b": random([4, 5])}.items())[:n_inputs])
    expect_build_error(ValueError, named_node_model("Einsum", inputs, {"equation": equation}), "linalg_node",
                       needle)


# ---------------------------------------------------------------------------------------------
# Conv

CONV_CASES = [
    # (x shape, w shape, attrs)
    ([2, 3, 10], [4, 3, 3], {}),
    ([2, 3, 11], [4, 3, 3], {"strides": [2], "pads": [1, 2], "dilations": [2]}),
    ([2, 3, 7, 8], [4, 3, 3, 3], {}),
    ([2, 3, 7, 8], [4, 3, 3, 3], {"pads": [1, 1, 1, 1]}),
    ([2, 3, 7, 8], [4, 3, 3, 2], {"pads": [1, 0, 2, 1], "strides": [2, 1]}),   # asymmetric pads
    ([1, 3, 9, 9], [2, 3, 3, 3], {"dilations": [2, 3], "pads": [2, 1, 0, 3]}),
    ([1, 4, 8, 8], [6, 2, 3, 3], {"group": 2, "pads": [1, 1, 1, 1]}),
    ([2, 4, 8, 7], [4, 1, 3, 3], {"group": 4, "pads": [1, 1, 1, 1]}),          # depthwise
    ([1, 4, 9, 8], [8, 1, 3, 3], {"group": 4, "strides": [2, 2], "pads": [1, 0, 1, 2]}),  # multiplier 2
    ([1, 3, 12], [3, 1, 5], {"group": 3, "dilations": [2], "pads": [4, 4]}),   # depthwise 1-D
    ([1, 1, 8, 8], [16, 1, 3, 3], {}),                                          # one input channel, many outputs
    ([2, 3, 6, 5], [5, 3, 1, 1], {}),                                           # 1x1: no im2col
    ([2, 3, 6, 5], [5, 3, 1, 1], {"strides": [2, 2]}),
    ([1, 2, 5, 6, 7], [3, 2, 2, 3, 2], {}),                                     # 3-D
    ([1, 2, 5, 6, 7], [4, 2, 3, 3, 3], {"strides": [2, 1, 2], "pads": [1, 0, 1, 1, 2, 0], "dilations": [1, 2, 1]}),
    ([1, 4, 4, 5, 6], [4, 2, 3, 1, 3], {"group": 2}),
    ([1, 3, 7, 8], [4, 3, 3, 3], {"kernel_shape": [3, 3]}),
    ([1, 3, 2, 2], [4, 3, 3, 3], {}),                                            # kernel larger than input: empty
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_CASES)
def test_conv(x_shape, w_shape, attrs, bias):
    inputs = {"x": random(x_shape), "w": random(w_shape, seed=1)}
    if bias:
        inputs["b"] = random([w_shape[0]], seed=2)
    check_node("Conv", inputs, attrs, **F32)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("x_shape,w_shape,strides", [
    ([1, 2, 7, 8], [3, 2, 3, 3], [1, 1]),
    ([1, 2, 7, 8], [3, 2, 3, 3], [2, 2]),
    ([1, 2, 7, 8], [3, 2, 2, 4], [2, 3]),
    ([1, 2, 9], [3, 2, 4], [2]),
    ([1, 2, 4, 5, 6], [3, 2, 2, 3, 2], [2, 1, 2]),
])
def test_conv_auto_pad(auto_pad, x_shape, w_shape, strides):
    inputs = {"x": random(x_shape), "w": random(w_shape, seed=1)}
    check_node("Conv", inputs, {"auto_pad": auto_pad, "strides": strides}, reference="ort", **F32)


@pytest.mark.parametrize("opset", [1, 11, 22, 23])
def test_conv_opsets(opset):
    inputs = {"x": random([1, 3, 7, 8]), "w": random([4, 3, 3, 3], seed=1), "b": random([4], seed=2)}
    check_node("Conv", inputs, {"pads": [1, 1, 1, 1]}, opset=opset, **F32)


def test_conv_float64_float16_bfloat16():
    inputs = {"x": random([1, 3, 6, 7]), "w": random([4, 3, 3, 3], seed=1), "b": random([4], seed=2)}
    check_node("Conv", {k: v.astype(np.float64) for k, v in inputs.items()}, {"pads": [1, 1, 1, 1]})
    check_node("Conv", {k: v.astype(np.float16) for k, v in inputs.items()}, {"pads": [1, 1, 1, 1]},
               rtol=2e-2, atol=5e-2)
    check_bf16("Conv", {k: v.astype(BF16) for k, v in inputs.items()}, {"pads": [1, 1, 1, 1]},
               rtol=5e-2, atol=1e-1)
    check_node("Conv", {k: v.astype(np.float64) for k, v in inputs.items()}, {"group": 1, "strides": [2, 1]})


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("x_shape,w_shape,attrs", [
    ([2, 3, 32, 32], [16, 3, 3, 3], {"pads": [1, 1, 1, 1]}),
    ([1, 16, 16, 16], [32, 16, 3, 3], {"pads": [1, 1, 1, 1]}),
    ([1, 4, 9, 8], [5, 4, 3, 3], {"pads": [1, 1, 1, 1]}),                  # 8 columns, 5 channels
    ([1, 3, 6, 35], [17, 3, 3, 3], {"pads": [1, 1, 1, 1]}),                # column tail after two blocks
    ([1, 2, 7, 12], [3, 2, 3, 3], {}),                                      # no padding
    ([1, 2, 7, 12], [33, 2, 5, 3], {"pads": [2, 0, 1, 2]}),                # asymmetric pads, 5x3
    ([1, 2, 7, 12], [3, 2, 1, 4], {"pads": [0, 3, 0, 0]}),
    ([1, 2, 7, 12], [4, 2, 3, 3], {"auto_pad": "SAME_LOWER"}),
    ([1, 64, 31, 33], [21, 64, 3, 3], {"pads": [1, 1, 1, 1]}),             # the channels-in-lanes kernel
    ([1, 64, 33, 31], [17, 64, 3, 3], {"pads": [2, 0, 1, 2]}),             # and with asymmetric pads
    ([1, 6, 110, 130], [9, 6, 3, 3], {"pads": [1, 1, 1, 1]}),              # 54 taps: the columns-in-lanes one
])
def test_conv_direct(x_shape, w_shape, attrs, bias):
    # The path follows dense_conv_path; tests/cpp/conv_direct_test.cc runs the direct kernels
    # themselves on these edge cases.
    inputs = {"x": random(x_shape), "w": random(w_shape, seed=1)}
    if bias:
        inputs["b"] = random([w_shape[0]], seed=2)
    check_node("Conv", inputs, attrs, reference="ort", rtol=1e-4, atol=1e-4)
    (y,) = run_ours(node_model("Conv", inputs, attrs), inputs)
    path = dense_conv_path(x_shape[1], w_shape[2] * w_shape[3], y.shape[2] * y.shape[3])
    assert f"Conv/float32/{path}" in usage_of(node_model("Conv", inputs, attrs), inputs)


# The channels-in-lanes kernel, im2col + tiles (27 taps), the columns-in-lanes kernel (54 taps).
@pytest.mark.parametrize("channels,width", [(64, 19), (3, 19), (6, 120)])
@pytest.mark.parametrize("relu", [False, True])
def test_conv_constant_weights_packed_at_build(relu, channels, width):
    # A constant W (an initializer) is packed for the AVX-512 kernels once, when the session is
    # built; the result is the one the same W fed as a graph input (packed per run) gives. With a
    # Relu after it the session fuses the pair (a FusedConv node), which packs the same way.
    height = 32 if channels != 6 else 100
    x, w, b = random([2, channels, height, width]), random([21, channels, 3, 3], seed=1), random([21], seed=2)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if relu else "y0"], pads=[1, 1, 1, 1])]
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["y0"]))
    fed_model = make_model(nodes, {"x": x, "w": w, "b": b}, ["y0"])
    model = make_model(nodes, {"x": x}, ["y0"], initializers={"w": w, "b": b})
    fed = run_ours(fed_model, {"x": x, "w": w, "b": b})[0]
    np.testing.assert_array_equal(run_ours(model, {"x": x})[0], fed)
    expected = f"Conv/float32/{dense_conv_path(channels, 9, height * width)}" + ("+relu" if relu else "")
    assert expected in usage_of(model, {"x": x})


def run_with_peak_bytes(model, feeds, threads=None):
    """The one output of a run of `model` (on `threads` threads; None: the default) and the
    allocator's peak bytes during it."""
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    options = None if threads is None else runtime.RuntimeSessionOptions(num_threads=threads)
    (y,) = run_ours(model, feeds, context=ctx, options=options)
    return y, max(e.peak_bytes for e in ctx.events())


@pytest.mark.skipif(LANES_CONV_PATH != "direct-lanes-avx512", reason="the channels-in-lanes kernel needs AVX-512")
@pytest.mark.parametrize("threads", [1, 2])
def test_conv_lanes_scratch_does_not_grow_with_the_image(threads):
    # 24 input channels take two passes, whose running sums are kept for one band of output
    # rows (about 256 KB per thread: at two threads this image, larger than its weights, is split
    # by rows) rather than for the whole output: besides Y and the padded copy of X, the run
    # allocates the same few hundred KB at 128x128 as at 256x256.
    extra = []
    for hw in (128, 256):
        x, w = random([1, 24, hw, hw]), random([32, 24, 3, 3], seed=1)
        model = node_model("Conv", {"x": x}, {"pads": [1, 1, 1, 1]}, initializers={"w": w})
        assert usage_of(model, {"x": x}) == [f"Conv/float32/{LANES_CONV_PATH}"]
        y, peak = run_with_peak_bytes(model, {"x": x}, threads=threads)
        padded_x = 24 * (hw + 2) * (hw + 2) * 4
        extra.append(peak - y.nbytes - padded_x)
    assert extra[0] == extra[1] and 0 < extra[1] <= threads * (256 + 1) << 10, extra


@pytest.mark.parametrize("dtype", [np.float16, BF16])
@pytest.mark.parametrize("op,x_shape,w_shape,attrs", [
    ("Conv", [1, 3, 16, 19], [21, 3, 3, 3], {"pads": [1, 1, 1, 1]}),            # im2col + tiles, packed W
    ("Conv", [1, 64, 40, 40], [21, 64, 3, 3], {"pads": [1, 1, 1, 1]}),          # the channels-in-lanes kernel
    ("Conv", [1, 16, 9, 9], [8, 16, 1, 1], {}),                                  # 1x1
    ("Conv", [1, 12, 9, 9], [12, 1, 3, 3], {"group": 12, "pads": [1, 1, 1, 1]}),  # depthwise, W not packed
    ("ConvTranspose", [1, 3, 5, 4], [3, 2, 3, 3], {"strides": [2, 2]}),
])
def test_half_conv_constant_weights_converted_at_build(dtype, op, x_shape, w_shape, attrs):
    # A constant float16/bfloat16 W and B are converted to float32 once, when the session is
    # built (and W packed from that copy); the result has the bits the same W and B fed as graph
    # inputs (converted on every run) give.
    bias_size = w_shape[0] if op == "Conv" else w_shape[1] * attrs.get("group", 1)
    x = random(x_shape).astype(dtype)
    w, b = random(w_shape, seed=1).astype(dtype), random([bias_size], seed=2).astype(dtype)
    fed_model = node_model(op, {"x": x, "w": w, "b": b}, attrs)
    model = node_model(op, {"x": x}, attrs, initializers={"w": w, "b": b})
    fed, fed_peak = run_with_peak_bytes(fed_model, {"x": x, "w": w, "b": b})
    ours, peak = run_with_peak_bytes(model, {"x": x})
    assert ours.dtype == dtype
    np.testing.assert_array_equal(ours.view(np.uint16), fed.view(np.uint16))
    # The run no longer allocates a float32 copy of W (4 bytes per weight).
    assert fed_peak - peak >= w.size * 4
    assert f"{op}/{'float16' if dtype == np.float16 else 'bfloat16'}/float32-scratch" in usage_of(model, {"x": x})


@pytest.mark.parametrize("x_shape,w_shape,attrs", [
    ([1, 64, 34, 36], [40, 64, 3, 3], {"pads": [1, 1, 1, 1]}),                 # lanes, 2 tasks of 32 channels
    ([1, 96, 9, 9], [72, 96, 3, 3], {"strides": [2, 2], "pads": [1, 1, 1, 1]}),  # lanes, stride 2, 3 tasks
    ([1, 3, 9, 9], [72, 3, 3, 3], {"pads": [1, 1, 1, 1]}),                     # im2col, one chunk + tail
    ([1, 100, 7, 7], [90, 100, 1, 1], {}),                                      # 1x1 on 7x7, 6 channel parts
    ([2, 20, 30, 30], [36, 20, 1, 1], {}),                                      # two images in parallel
    ([1, 40, 14, 14], [40, 1, 5, 5], {"group": 40, "pads": [2, 2, 2, 2]}),      # depthwise lanes, 3 blocks
])
def test_conv_on_three_threads_gives_the_one_thread_bits(x_shape, w_shape, attrs):
    # Threads split channels, pixels and images, never one output's sum: the same bits on our
    # own kernels (assert_thread_count_invariant says what OpenBLAS paths promise).
    inputs = {"x": random(x_shape), "w": random(w_shape, seed=1), "b": random([w_shape[0]], seed=2)}
    model = node_model("Conv", inputs, attrs)
    (one,) = run_ours(model, inputs, options=runtime.RuntimeSessionOptions(num_threads=1))
    (three,) = run_ours(model, inputs, options=runtime.RuntimeSessionOptions(num_threads=3))
    assert_thread_count_invariant(three, one)
    check_node("Conv", inputs, attrs, reference="ort", rtol=1e-4, atol=1e-4)


def test_conv_direct_nan_and_empty():
    x = random([1, 2, 6, 9])
    x[0, 1, 2, 3] = np.nan
    inputs = {"x": x, "w": random([3, 2, 3, 3], seed=1)}
    check_node("Conv", inputs, {"pads": [1, 1, 1, 1]}, reference="ort", rtol=1e-4, atol=1e-4)
    empty = {"x": random([0, 2, 6, 9]), "w": random([3, 2, 3, 3], seed=1)}
    (y,) = run_ours(node_model("Conv", empty, {"pads": [1, 1, 1, 1]}), empty)
    assert y.shape == (0, 3, 6, 9)


def test_conv_large_against_ort():
    inputs = {"x": random([2, 16, 32, 32]), "w": random([32, 16, 3, 3], seed=1), "b": random([32], seed=2)}
    check_node("Conv", inputs, {"pads": [1, 1, 1, 1]}, reference="ort", rtol=1e-4, atol=1e-4)


# The depthwise / grouped direct kernels: channel counts that are not multiples of the vector
# width, odd sizes, asymmetric pads, strides 1-3, dilations, multipliers, several channels per
# group, rows narrower and wider than one vector, and 1-D. (Rerun on the AVX2 path by
# test_conv_fusion.py's baseline test, which sets ONNX_LIGHT_DISABLE_AVX512.)
GROUPED_CASES = [
    ([1, 5, 14, 14], [5, 1, 5, 5], {"group": 5, "pads": [2, 2, 2, 2]}),
    ([2, 19, 15, 17], [19, 1, 3, 3], {"group": 19, "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ([1, 7, 28, 29], [7, 1, 5, 5], {"group": 7, "strides": [2, 2], "pads": [1, 2, 2, 1]}),
    ([1, 3, 9, 37], [9, 1, 3, 3], {"group": 3, "pads": [1, 1, 1, 1]}),                  # multiplier 3
    ([1, 2, 11, 70], [2, 1, 7, 7], {"group": 2, "pads": [3, 3, 3, 3]}),
    ([1, 3, 12, 13], [3, 1, 3, 3], {"group": 3, "dilations": [2, 3], "pads": [2, 3, 2, 3]}),
    ([1, 2, 10, 19], [2, 1, 3, 5], {"group": 2, "strides": [2, 3], "dilations": [2, 1], "pads": [0, 4, 3, 0]}),
    ([1, 6, 7, 7], [6, 1, 3, 3], {"group": 6, "pads": [1, 1, 1, 1]}),                   # narrow rows
    ([1, 2, 3, 4], [2, 1, 3, 3], {"group": 2, "pads": [3, 3, 3, 3]}),                   # pads wider than X
    ([1, 12, 13, 21], [12, 4, 3, 3], {"group": 3, "pads": [1, 1, 1, 1]}),               # 4 channels per group
    ([1, 9, 9, 11], [15, 3, 3, 3], {"group": 3, "strides": [2, 2], "pads": [1, 1, 0, 0]}),
    ([2, 16, 6, 33], [4, 8, 3, 1], {"group": 2, "pads": [1, 0, 1, 0]}),                 # 8 channels per group
    ([1, 6, 40], [6, 1, 5], {"group": 6, "strides": [2], "dilations": [2], "pads": [3, 4]}),  # 1-D
    ([1, 4, 8, 8], [4, 1, 3, 3], {"group": 4, "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("x_shape,w_shape,attrs", GROUPED_CASES)
def test_conv_grouped_direct(x_shape, w_shape, attrs, bias):
    inputs = {"x": random(x_shape), "w": random(w_shape, seed=1)}
    if bias:
        inputs["b"] = random([w_shape[0]], seed=2)
    check_node("Conv", inputs, attrs, rtol=1e-4, atol=1e-5)
    usage = usage_of(node_model("Conv", inputs, attrs), inputs)
    kind = "depthwise" if w_shape[1] == 1 else "grouped"
    assert any(u.startswith(f"Conv/float32/{kind}-") for u in usage), usage


def test_conv_depthwise_infinite_weight_meets_padding():
    # Zero padding times an infinite weight is NaN, as in the reference's padded convolution.
    x = random([1, 2, 5, 12])
    w = random([2, 1, 3, 3], seed=1)
    w[0, 0, 0, 0] = np.inf
    w[1, 0, 2, 2] = -np.inf
    check_node("Conv", {"x": x, "w": w}, {"group": 2, "pads": [1, 1, 1, 1]}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("x_shape,w_shape,attrs,expected", [
    ([1, 3, 6, 5], [5, 3, 1, 1], {}, f"Conv/float32/{POINTWISE_CONV_PATH}"),
    ([1, 3, 6, 5], [6, 1, 1, 1], {"group": 3}, "Conv/float32/1x1-blas"),  # grouped 1x1
    ([1, 4, 6, 5], [4, 1, 3, 3], {"group": 4}, f"Conv/float32/{depthwise_conv_path(3, 3)}"),
    ([1, 4, 6, 12], [8, 1, 3, 3], {"group": 4}, f"Conv/float32/{depthwise_conv_path(10, 3, 2)}"),
    ([1, 4, 6, 12], [4, 1, 3, 3], {"group": 4, "strides": [1, 2]}, f"Conv/float32/{depthwise_conv_path(5, 3, stride_width=2)}"),
    ([1, 4, 6, 12], [4, 2, 3, 3], {"group": 2}, f"Conv/float32/grouped-{grouped_conv_isa(10, 3)}"),
    ([1, 18, 6, 12], [2, 9, 3, 3], {"group": 2}, "Conv/float32/im2col-blas"),    # 9 channels per group
    ([1, 4, 12], [4, 1, 3], {"group": 4}, f"Conv/float32/{depthwise_conv_path(10, 3, rank=1)}"),
    ([1, 3, 6, 5], [4, 3, 3, 3], {}, f"Conv/float32/{IM2COL_CONV_PATH}"),
    ([1, 3, 6, 5], [4, 3, 3, 3], {"pads": [1, 1, 1, 1]}, f"Conv/float32/{IM2COL_CONV_PATH}"),  # too narrow for direct
    ([1, 3, 6, 9], [4, 3, 3, 3], {"strides": [1, 2], "pads": [1, 1, 1, 1]}, f"Conv/float32/{IM2COL_CONV_PATH}"),
    ([1, 3, 6, 12], [4, 3, 3, 3], {"dilations": [1, 2]}, f"Conv/float32/{IM2COL_CONV_PATH}"),
    ([1, 2, 4, 4, 4], [2, 1, 3, 3, 3], {"group": 2}, "Conv/float32/im2col-blas"),
])
def test_conv_kernel_usage(x_shape, w_shape, attrs, expected):
    inputs = {"x": random(x_shape), "w": random(w_shape, seed=1)}
    assert expected in usage_of(node_model("Conv", inputs, attrs), inputs)


@pytest.mark.parametrize("inputs,attrs,needle", [
    ({"x": random([1, 3, 6, 6]), "w": random([4, 2, 3, 3])}, {}, "channels"),            # channel mismatch
    ({"x": random([1, 4, 6, 6]), "w": random([5, 2, 3, 3])}, {"group": 2}, "multiple of group"),
    ({"x": random([1, 3, 6]), "w": random([4, 3, 3, 3])}, {}, "rank"),
    ({"x": random([3, 6]), "w": random([4, 3])}, {}, "rank >= 3"),
    ({"x": random([1, 3, 6, 6]), "w": random([4, 3, 3, 3]), "b": random([3])}, {}, "input B"),
    ({"x": random([1, 3, 6, 6]), "w": random([4, 3, 3, 3])}, {"strides": [1, 1, 1]}, "strides"),
    ({"x": random([1, 3, 6, 6]), "w": random([4, 3, 3, 3])}, {"kernel_shape": [2, 2]}, "kernel_shape"),
])
def test_conv_errors(inputs, attrs, needle):
    expect_error(ValueError, named_node_model("Conv", inputs, attrs), inputs, "linalg_node", needle)


@pytest.mark.parametrize("attrs,needle", [
    ({"auto_pad": "SAME"}, "auto_pad"),
    ({"strides": [0, 1]}, "strides"),
    ({"pads": [1, 1, 1]}, "pads"),
    ({"group": 0}, "group"),
])
def test_conv_attribute_errors(attrs, needle):
    inputs = {"x": random([1, 3, 6, 6]), "w": random([4, 3, 3, 3])}
    expect_build_error(ValueError, named_node_model("Conv", inputs, attrs), "linalg_node", needle)


def test_conv_unsupported_type():
    inputs = {"x": int_input([1, 1, 4, 4], np.int32), "w": int_input([1, 1, 2, 2], np.int32)}
    expect_error(NotImplementedError, named_node_model("Conv", inputs), inputs, "linalg_node", "int32")


# ---------------------------------------------------------------------------------------------
# ConvTranspose

CONV_TRANSPOSE_CASES = [
    ([1, 3, 5, 4], [3, 2, 3, 3], {}),
    ([2, 3, 5, 4], [3, 4, 3, 3], {"strides": [2, 2]}),
    ([1, 3, 5, 4], [3, 2, 3, 3], {"strides": [2, 3], "pads": [1, 0, 1, 2]}),
    ([1, 3, 5, 4], [3, 2, 3, 3], {"strides": [2, 2], "output_padding": [1, 1]}),
    ([1, 3, 5, 4], [3, 2, 2, 3], {"dilations": [2, 2]}),
    ([1, 3, 5, 4], [3, 5, 1, 1], {}),                        # 1x1: no col2im
    ([2, 3, 7], [3, 2, 4], {"strides": [3], "pads": [1, 2]}),  # 1-D
    ([1, 2, 3, 4, 3], [2, 3, 2, 3, 2], {"strides": [2, 1, 2]}),  # 3-D
    ([1, 2, 3, 4], [2, 3, 3, 3], {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ([1, 2, 3, 4], [2, 3, 3, 3], {"auto_pad": "SAME_LOWER", "strides": [2, 2]}),
    ([1, 2, 3, 4], [2, 3, 3, 3], {"auto_pad": "VALID", "strides": [2, 2]}),
]


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_TRANSPOSE_CASES)
def test_conv_transpose(x_shape, w_shape, attrs, bias):
    inputs = {"x": random(x_shape), "w": random(w_shape, seed=1)}
    if bias:
        inputs["b"] = random([w_shape[1] * attrs.get("group", 1)], seed=2)
    check_node("ConvTranspose", inputs, attrs, **F32)


# The reference mishandles output_shape (its col2im expects the natural size) and groups (it adds
# the bias of the wrong channels), so these go against ORT.
@pytest.mark.parametrize("w_shape,attrs", [
    ([3, 2, 3, 3], {"strides": [2, 2], "output_shape": [10, 8]}),
    ([3, 2, 3, 3], {"strides": [2, 2], "output_shape": [11, 9]}),
    ([3, 2, 3, 3], {"strides": [2, 2], "output_shape": [9, 7], "auto_pad": "SAME_UPPER"}),
    ([3, 2, 3, 3], {"strides": [2, 2], "output_shape": [9, 7], "auto_pad": "SAME_LOWER"}),
    ([3, 2, 3, 3], {"strides": [2, 2], "output_padding": [1, 0], "pads": [1, 1, 0, 1]}),
    ([3, 4, 3, 3], {"group": 3, "strides": [2, 1]}),
    ([3, 1, 3, 3], {"group": 3}),
    ([3, 2, 3, 2], {"group": 3, "dilations": [2, 1], "pads": [1, 0, 0, 1]}),
])
@pytest.mark.parametrize("bias", [False, True])
def test_conv_transpose_against_ort(w_shape, attrs, bias):
    inputs = {"x": random([1, 3, 5, 4]), "w": random(w_shape, seed=1)}
    if bias:
        inputs["b"] = random([w_shape[1] * attrs.get("group", 1)], seed=2)
    check_node("ConvTranspose", inputs, attrs, reference="ort", **F32)


def test_conv_transpose_output_shape_with_batch_and_channels():
    # output_shape may also be written with the N and C dims; ORT rejects that form, so compare
    # with the spatial-only form.
    inputs = {"x": random([1, 3, 5, 4]), "w": random([3, 2, 3, 3], seed=1)}
    full = run_ours(node_model("ConvTranspose", inputs, {"strides": [2, 2], "output_shape": [1, 2, 10, 8]}),
                    inputs)[0]
    spatial = run_ours(node_model("ConvTranspose", inputs, {"strides": [2, 2], "output_shape": [10, 8]}),
                       inputs)[0]
    assert full.shape == (1, 2, 10, 8)
    np.testing.assert_array_equal(full, spatial)


@pytest.mark.parametrize("opset", [1, 11, 22, 23])
def test_conv_transpose_opsets(opset):
    inputs = {"x": random([1, 3, 5, 4]), "w": random([3, 2, 3, 3], seed=1)}
    check_node("ConvTranspose", inputs, {"strides": [2, 2]}, opset=opset, **F32)


def test_conv_transpose_float64_float16():
    inputs = {"x": random([1, 3, 5, 4]), "w": random([3, 2, 3, 3], seed=1), "b": random([2], seed=2)}
    check_node("ConvTranspose", {k: v.astype(np.float64) for k, v in inputs.items()}, {"strides": [2, 2]})
    check_node("ConvTranspose", {k: v.astype(np.float16) for k, v in inputs.items()}, {"strides": [2, 2]},
               rtol=2e-2, atol=5e-2)


def test_conv_transpose_kernel_usage():
    inputs = {"x": random([1, 3, 5, 4]), "w": random([3, 2, 3, 3], seed=1)}
    assert "ConvTranspose/float32/blas-col2im" in usage_of(node_model("ConvTranspose", inputs), inputs)
    inputs = {"x": random([1, 3, 5, 4]), "w": random([3, 2, 1, 1], seed=1)}
    assert "ConvTranspose/float32/1x1-blas" in usage_of(node_model("ConvTranspose", inputs), inputs)


@pytest.mark.parametrize("inputs,attrs,needle", [
    ({"x": random([1, 3, 5, 4]), "w": random([2, 2, 3, 3])}, {}, "channels"),
    ({"x": random([1, 3, 5, 4]), "w": random([3, 2, 3, 3]), "b": random([3])}, {}, "input B"),
    ({"x": random([1, 3, 5, 4]), "w": random([3, 2, 3, 3])}, {"output_shape": [1, 2, 3]}, "output_shape"),
    ({"x": random([1, 3, 5, 4]), "w": random([3, 2, 3, 3])}, {"output_padding": [1]}, "output_padding"),
])
def test_conv_transpose_errors(inputs, attrs, needle):
    expect_error(ValueError, named_node_model("ConvTranspose", inputs, attrs), inputs, "linalg_node", needle)


# ---------------------------------------------------------------------------------------------
# Pools

POOL_CASES = [
    ([2, 3, 10], {"kernel_shape": [3]}),
    ([2, 3, 10], {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ([2, 3, 7, 8], {"kernel_shape": [2, 2]}),
    ([2, 3, 7, 8], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ([1, 2, 7, 8], {"kernel_shape": [3, 2], "strides": [2, 3], "pads": [1, 0, 2, 1]}),
    ([1, 2, 7, 8], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ([1, 2, 8, 8], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}),
    ([1, 2, 4, 5, 6], {"kernel_shape": [2, 2, 2]}),
    ([1, 2, 5, 6, 7], {"kernel_shape": [3, 2, 3], "strides": [2, 2, 1], "pads": [1, 0, 1, 1, 1, 0]}),
    # The row-reduction fast path (1-D/2-D, no dilation): its constant-bound interiors and borders.
    ([2, 3, 9, 11], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ([1, 2, 9, 11], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ([1, 2, 9, 11], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 1, 1, 0], "ceil_mode": 1}),
    ([1, 2, 6, 40], {"kernel_shape": [2, 5], "strides": [1, 3], "pads": [1, 2, 0, 2]}),
    ([1, 2, 3, 4], {"kernel_shape": [4, 5], "pads": [1, 1, 1, 1]}),                # window wider than input
    # 3x3 stride 2 rows of 38 and 55 outputs: the row path's vectorised interior and its tails.
    ([1, 2, 5, 75], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ([1, 3, 6, 111], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    # MaxPool 2x2 stride 2 (float32): vector body, scalar tail, odd sizes, ceil_mode leaves it.
    ([2, 3, 7, 21], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ([1, 2, 7, 21], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    ([1, 2, 8, 8], {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
]


@pytest.mark.parametrize("x_shape,attrs", POOL_CASES)
def test_maxpool(x_shape, attrs):
    check_node("MaxPool", {"x": random(x_shape)}, attrs)


@pytest.mark.parametrize("x_shape,attrs", POOL_CASES)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_averagepool(x_shape, attrs, count_include_pad):
    check_node("AveragePool", {"x": random(x_shape)}, dict(attrs, count_include_pad=count_include_pad), **F32)


@pytest.mark.parametrize("x_shape,attrs", POOL_CASES + [
    ([1, 2, 9, 9], {"kernel_shape": [3, 3], "dilations": [2, 2]}),
    ([1, 2, 9, 10], {"kernel_shape": [2, 3], "dilations": [2, 1], "strides": [2, 2], "pads": [1, 1, 0, 2]}),
    ([1, 2, 9, 10], {"kernel_shape": [2, 3], "dilations": [2, 2], "ceil_mode": 1, "strides": [2, 2]}),
])
@pytest.mark.parametrize("storage_order", [0, 1])
def test_maxpool_indices(x_shape, attrs, storage_order):
    # The reference pads with NaN and drops it; ORT implements Indices for every configuration.
    inputs = {"x": random(x_shape)}
    check_node("MaxPool", inputs, dict(attrs, storage_order=storage_order), n_outputs=2, reference="ort")


@pytest.mark.parametrize("x_shape,attrs", [
    ([1, 2, 9, 9], {"kernel_shape": [3, 3], "dilations": [2, 2]}),
    ([1, 2, 9, 10], {"kernel_shape": [2, 3], "dilations": [2, 1], "strides": [2, 2], "pads": [1, 1, 0, 2]}),
    ([1, 2, 12], {"kernel_shape": [3], "dilations": [3], "strides": [2]}),
])
def test_pool_dilations(x_shape, attrs):
    check_node("MaxPool", {"x": random(x_shape)}, attrs)
    check_node("AveragePool", {"x": random(x_shape)}, attrs, reference="ort", **F32)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("x_shape,kernel,strides", [
    ([1, 2, 7, 8], [3, 3], [1, 1]),
    ([1, 2, 7, 8], [3, 2], [2, 2]),
    ([1, 2, 9], [4], [2]),
])
def test_pool_auto_pad(op, auto_pad, x_shape, kernel, strides):
    attrs = {"auto_pad": auto_pad, "kernel_shape": kernel, "strides": strides}
    check_node(op, {"x": random(x_shape)}, attrs, reference="ort", **F32)


@pytest.mark.parametrize("opset", [7, 10, 11, 19, 22, 23])
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_averagepool_opsets(opset, count_include_pad):
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": count_include_pad}
    check_node("AveragePool", {"x": random([1, 2, 7, 8])}, attrs, opset=opset, **F32)


def test_averagepool_opset1_excludes_padding():
    # Opset 1 has no count_include_pad and divides by the elements inside the input. (The
    # reference pads with zeros there, so compare with opset 7's explicit count_include_pad=0.)
    x = random([1, 2, 7, 8])
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    old = run_ours(node_model("AveragePool", {"x": x}, attrs, opset=1), {"x": x})[0]
    check = check_node("AveragePool", {"x": x}, dict(attrs, count_include_pad=0), opset=7, **F32)[0]
    np.testing.assert_array_equal(old, check)


@pytest.mark.parametrize("opset", [1, 8, 10, 11, 12, 22, 23])
def test_maxpool_opsets(opset):
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    check_node("MaxPool", {"x": random([1, 2, 7, 8])}, attrs, opset=opset)


@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.uint8])
def test_maxpool_dtypes(dtype):
    x = random([1, 2, 7, 8], dtype) if np.dtype(dtype).kind == "f" else int_input([1, 2, 7, 8], dtype)
    check_node("MaxPool", {"x": x}, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
               n_outputs=2, reference="ort")


def test_pools_half_precision():
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    x = random([1, 2, 7, 8], np.float16)
    check_node("MaxPool", {"x": x}, attrs, n_outputs=2, reference="ort")
    check_node("AveragePool", {"x": x}, attrs, **F16)
    check_node("AveragePool", {"x": x.astype(np.float64)}, attrs)
    check_bf16("AveragePool", {"x": x.astype(BF16)}, attrs)
    check_bf16("MaxPool", {"x": x.astype(BF16)}, attrs)


def global_pool_expected(op, x):
    # The reference's GlobalMaxPool reduces the wrong axes and its GlobalAveragePool divides by
    # zero on empty batches, so numpy is the reference here.
    axes = tuple(range(2, x.ndim))
    x32 = x.astype(np.float64)
    y = x32.mean(axis=axes, keepdims=True) if op == "GlobalAveragePool" else x32.max(axis=axes, keepdims=True)
    return y.astype(x.dtype)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [[2, 3, 7], [2, 3, 5, 6], [1, 2, 3, 4, 5], [0, 3, 4, 4]])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("opset", [1, 22, 23])
def test_global_pools(op, shape, dtype, opset):
    tol = F16 if dtype == np.float16 else F32
    x = random(shape, dtype)
    (y,) = run_ours(node_model(op, {"x": x}, opset=opset), {"x": x})
    assert_close(y, global_pool_expected(op, x), **tol)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pools_bfloat16_and_ort(op):
    x = random([2, 3, 4, 5]).astype(BF16)
    (y,) = run_ours(node_model(op, {"x": x}), {"x": x})
    assert y.dtype == BF16
    np.testing.assert_allclose(y.astype(np.float32), global_pool_expected(op, x.astype(np.float32)), rtol=2e-2,
                               atol=2e-2)
    check_node(op, {"x": random([2, 3, 4, 5])}, reference="ort", **F32)


def test_maxpool_2x2_skips_nan_like_the_general_loop():
    x = random([2, 3, 6, 18])
    x[0, 0, 0, 0] = x[0, 1, 2, 5] = x[1, 2, 5, 17] = np.nan
    x[1, 0, 0:2, 0:2] = np.nan                                   # a window of NaN only
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    fast = run_ours(node_model("MaxPool", {"x": x}, attrs), {"x": x})[0]
    # The same windows through the general tap-by-tap loop (3-D with a unit depth).
    x3 = {"x": x[:, :, None]}
    general = run_ours(node_model("MaxPool", x3, {"kernel_shape": [1, 2, 2], "strides": [1, 2, 2]}), x3)[0]
    np.testing.assert_array_equal(fast, general[:, :, 0])
    assert "MaxPool/float32/2x2" in usage_of(node_model("MaxPool", {"x": x}, attrs), {"x": x})


@pytest.mark.parametrize("width", [9, 40, 75])
def test_maxpool_3x3_stride_2_skips_nan_like_the_general_loop(width):
    # The row path's stride-2 slide (built per instruction set) against the general tap-by-tap
    # loop: NaN taps skipped, -inf, signed zeros, bit for bit.
    x = random([2, 3, 7, width])
    x[0, 0, 0, 0] = x[0, 1, 2, 5] = x[1, 2, 5, width - 1] = np.nan
    x[1, 0, 0:3, 0:3] = np.nan                                   # a window of NaN only
    x[1, 1, 2:5, 6:9] = -np.inf
    x[0, 2, :, 10 % width:] = -0.0
    x[0, 2, 3, 12 % width] = 0.0
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    fast = run_ours(node_model("MaxPool", {"x": x}, attrs), {"x": x})[0]
    x3 = {"x": x[:, :, None]}
    general = run_ours(node_model("MaxPool", x3, {"kernel_shape": [1, 3, 3], "strides": [1, 2, 2],
                                                  "pads": [0, 1, 1, 0, 1, 1]}), x3)[0]
    np.testing.assert_array_equal(fast.view(np.uint32), general[:, :, 0].view(np.uint32))
    assert f"MaxPool/float32/{MAX_POOL_ROWS_PATH}" in usage_of(node_model("MaxPool", {"x": x}, attrs), {"x": x})


@pytest.mark.parametrize("kernel,strides,pads,ceil_mode", [
    ([3, 3], [2, 2], [0, 0, 0, 0], 1),     # squeezenet's pools
    ([3, 3], [1, 1], [1, 1, 1, 1], 0),     # the stride-1 slide, padded on both sides
    ([2, 3], [1, 2], [0, 2, 1, 2], 0),     # uneven pads wider than half the window
    ([5, 5], [2, 2], [2, 2, 2, 2], 1),     # taps beyond a 16-column block
    ([1, 4], [3, 1], [0, 0, 0, 3], 1),     # a vertical stride the slide does not see
    ([2, 2], [2, 1], [0, 0, 0, 0], 0),     # 2x2 with a horizontal stride of 1
])
@pytest.mark.parametrize("width", [1, 15, 16, 17, 27, 32, 33, 50])  # up to 32: one or two vectors in registers
def test_maxpool_rows_equal_the_general_loop(kernel, strides, pads, ceil_mode, width):
    # The row kernel (AVX-512 where the CPU has it) against the general tap-by-tap loop, bit for
    # bit: row tails of every length, windows clipped by padding and ceil_mode, NaN (skipped),
    # -inf and signed zeros; and against onnx.reference where no NaN is involved.
    width = max(width, kernel[1])  # a row at least one window wide
    x = random([2, 3, 6, width], seed=width)
    x[0, 0, 0, 0] = x[1, 2, 5, width - 1] = np.nan
    x[1, 0, 0:2, :] = np.nan
    x[1, 1, 2:4, : min(width, 9)] = -np.inf
    x[0, 2, :, width // 2:] = -0.0
    x[0, 2, 3, width // 2] = 0.0
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads, "ceil_mode": ceil_mode}
    fast = run_ours(node_model("MaxPool", {"x": x}, attrs), {"x": x})[0]
    x3 = {"x": x[:, :, None]}
    general = run_ours(node_model("MaxPool", x3, {"kernel_shape": [1] + kernel, "strides": [1] + strides,
                                                  "pads": [0] + pads[:2] + [0] + pads[2:],
                                                  "ceil_mode": ceil_mode}), x3)[0]
    np.testing.assert_array_equal(fast.view(np.uint32), general[:, :, 0].view(np.uint32))
    clean = {"x": random([1, 4, 6, width], seed=width + 1)}
    assert_close(run_ours(node_model("MaxPool", clean, attrs), clean)[0],
                 run_reference(node_model("MaxPool", clean, attrs), clean)[0], rtol=0, atol=0)
    assert f"MaxPool/float32/{MAX_POOL_ROWS_PATH}" in usage_of(node_model("MaxPool", {"x": x}, attrs), {"x": x})


def test_pool_kernel_usage():
    x = {"x": random([1, 2, 7, 8])}
    attrs = {"kernel_shape": [3, 3]}
    assert "MaxPool/float32/direct-indices" in usage_of(node_model("MaxPool", x, attrs, n_outputs=2), x)
    assert f"MaxPool/float32/{MAX_POOL_ROWS_PATH}" in usage_of(node_model("MaxPool", x, attrs), x)
    assert "AveragePool/float32/direct-rows-include-pad" in usage_of(
        node_model("AveragePool", x, dict(attrs, count_include_pad=1)), x)
    # Dilated and 3-D pools keep the general tap-by-tap loops.
    assert "MaxPool/float32/direct" in usage_of(node_model("MaxPool", x, dict(attrs, dilations=[2, 1])), x)
    x3 = {"x": random([1, 2, 4, 5, 6])}
    assert "AveragePool/float32/direct" in usage_of(node_model("AveragePool", x3, {"kernel_shape": [2, 2, 2]}), x3)
    assert "GlobalAveragePool/float32/direct" in usage_of(node_model("GlobalAveragePool", x), x)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_pool_errors(op):
    x = {"x": random([1, 2, 7, 8])}
    expect_error(ValueError, named_node_model(op, x, {"kernel_shape": [3]}), x, "linalg_node", "rank 3")
    expect_build_error(ValueError, named_node_model(op, x), "linalg_node", "kernel_shape")
    expect_build_error(ValueError, named_node_model(op, x, {"kernel_shape": [3, 3], "pads": [1, 1]}),
                       "linalg_node", "disagree")
    expect_error(NotImplementedError, named_node_model(op, {"x": int_input([1, 2, 7, 8], np.int32)},
                                                       {"kernel_shape": [3, 3]}),
                 {"x": int_input([1, 2, 7, 8], np.int32)}, "linalg_node", "int32")


def test_global_pool_rank_error():
    x = {"x": random([4])}
    expect_error(ValueError, named_node_model("GlobalAveragePool", x), x, "linalg_node", "rank >= 2")


def test_maxpool_indices_match_numpy_argmax():
    # An independent check of Indices (flat NCHW positions) on a non-overlapping 2x2 pool.
    x = random([2, 3, 4, 6])
    y, idx = run_ours(node_model("MaxPool", {"x": x}, {"kernel_shape": [2, 2], "strides": [2, 2]}, n_outputs=2),
                      {"x": x})
    flat = x.reshape(-1)
    np.testing.assert_array_equal(flat[idx], y)
    windows = x.reshape(2, 3, 2, 2, 3, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 3, 2, 3, 4)
    np.testing.assert_array_equal(y, windows.max(axis=-1))


def test_ort_reference_agrees_on_maxpool_indices():
    # Guards the ORT comparisons above: ORT's Indices must be positions of the maxima.
    x = random([1, 2, 5, 5])
    model = node_model("MaxPool", {"x": x}, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, n_outputs=2)
    y, idx = run_ort(model, {"x": x})
    assert_close(x.reshape(-1)[idx], y)
