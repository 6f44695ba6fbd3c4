"""Attention-23 and RotaryEmbedding-23 against onnx.reference and ONNX Runtime."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import TILED_GEMM_PATH, assert_close, make_model, random, run_ort, run_ours, run_reference, usage_of

NODE = "attn_node"
ATTN_INPUTS = ["q", "k", "v", "attn_mask", "past_key", "past_value"]
ATTN_OUTPUTS = ["y", "present_key", "present_value", "qk_matmul_output"]


def attention_model(feeds: dict, attrs=None, outputs=("y",), op="Attention", input_order=ATTN_INPUTS,
                    output_order=ATTN_OUTPUTS):
    """One node; inputs missing from `feeds` and outputs not in `outputs` are left unnamed."""
    names = [n if n in feeds else "" for n in input_order]
    while names and names[-1] == "":
        names.pop()
    outs = [n if n in outputs else "" for n in output_order]
    while outs and outs[-1] == "":
        outs.pop()
    node = helper.make_node(op, names, outs, name=NODE, **(attrs or {}))
    return make_model([node], feeds, [o for o in outs if o])


def check_attention(feeds, attrs=None, outputs=("y",), reference="onnx", rtol=1e-5, atol=1e-5):
    model = attention_model(feeds, attrs, outputs)
    expected = run_reference(model, feeds) if reference == "onnx" else run_ort(model, feeds)
    actual = run_ours(model, feeds)
    for name, a, e in zip([o.name for o in model.graph.output], actual, expected):
        assert_close(a, e, rtol, atol, name=name)
    return actual


def qkv4(b, hq, hkv, sq, skv, d, dv=None, dtype=np.float32, seed=0):
    return {"q": random((b, hq, sq, d), dtype, seed=seed), "k": random((b, hkv, skv, d), dtype, seed=seed + 1),
            "v": random((b, hkv, skv, dv or d), dtype, seed=seed + 2)}


def qkv3(b, hq, hkv, sq, skv, d, dv=None, dtype=np.float32, seed=0):
    return {"q": random((b, sq, hq * d), dtype, seed=seed), "k": random((b, skv, hkv * d), dtype, seed=seed + 1),
            "v": random((b, skv, hkv * (dv or d)), dtype, seed=seed + 2)}


def with_past(feeds, b, hkv, past, d, dv=None, dtype=np.float32, seed=10):
    feeds = dict(feeds)
    feeds["past_key"] = random((b, hkv, past, d), dtype, seed=seed)
    feeds["past_value"] = random((b, hkv, past, dv or d), dtype, seed=seed + 1)
    return feeds


ALL_OUTPUTS = ("y", "present_key", "present_value")

# ---- shapes and layouts ---------------------------------------------------------------------


@pytest.mark.parametrize("b,h,sq,skv,d,dv", [(1, 1, 1, 1, 4, 4), (2, 3, 4, 4, 8, 8), (2, 2, 3, 7, 8, 5),
                                              (1, 4, 6, 2, 16, 16), (3, 2, 1, 9, 4, 6)])
def test_attention_4d(b, h, sq, skv, d, dv):
    check_attention(qkv4(b, h, h, sq, skv, d, dv), outputs=ALL_OUTPUTS)


@pytest.mark.parametrize("b,h,sq,skv,d,dv", [(1, 1, 1, 1, 4, 4), (2, 3, 4, 4, 8, 8), (2, 2, 3, 7, 8, 5),
                                              (3, 2, 1, 9, 4, 6)])
def test_attention_3d(b, h, sq, skv, d, dv):
    check_attention(qkv3(b, h, h, sq, skv, d, dv), {"q_num_heads": h, "kv_num_heads": h}, outputs=ALL_OUTPUTS)


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("past,sq", [(1, 1), (5, 1), (3, 4), (0, 3)])
def test_attention_with_past(rank, past, sq):
    b, h, d, dv = 2, 3, 8, 6
    if rank == 4:
        feeds, attrs = qkv4(b, h, h, sq, sq, d, dv), {}
    else:
        feeds, attrs = qkv3(b, h, h, sq, sq, d, dv), {"q_num_heads": h, "kv_num_heads": h}
    check_attention(with_past(feeds, b, h, past, d, dv), attrs, outputs=ALL_OUTPUTS)


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("past,sq,skv", [(0, 5, 5), (0, 3, 6), (0, 6, 3), (4, 1, 1), (4, 3, 3), (2, 4, 2)])
def test_attention_causal(rank, past, sq, skv):
    b, h, d = 2, 2, 8
    if rank == 4:
        feeds, attrs = qkv4(b, h, h, sq, skv, d), {"is_causal": 1}
    else:
        feeds, attrs = qkv3(b, h, h, sq, skv, d), {"is_causal": 1, "q_num_heads": h, "kv_num_heads": h}
    if past:
        feeds = with_past(feeds, b, h, past, d)
    check_attention(feeds, attrs, outputs=ALL_OUTPUTS)


def test_attention_causal_with_past_matches_ort():
    b, h, d = 1, 2, 8
    feeds = with_past(qkv4(b, h, h, 3, 3, d), b, h, 4, d)
    check_attention(feeds, {"is_causal": 1}, outputs=ALL_OUTPUTS, reference="ort", rtol=1e-4, atol=1e-5)


# ---- masks ----------------------------------------------------------------------------------

MASK_SHAPES = [(6,), (3, 6), (1, 6), (2, 3, 6), (2, 1, 3, 6), (1, 2, 1, 6), (2, 2, 3, 6)]


@pytest.mark.parametrize("shape", MASK_SHAPES)
@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_mask(shape, kind, causal):
    feeds = with_past(qkv4(2, 2, 2, 3, 3, 8), 2, 2, 3, 8)  # total key length 6
    rng = np.random.default_rng(5)
    if kind == "bool":
        mask = rng.random(shape) > 0.3
    else:
        mask = rng.uniform(-3, 1, shape).astype(np.float32)
    feeds["attn_mask"] = mask
    if not causal or (len(shape) > 1 and shape[-2] == 3):
        check_attention(feeds, {"is_causal": causal}, outputs=ALL_OUTPUTS)
        return
    # The reference takes the causal frontier's query length from the mask shape, so a mask that
    # broadcasts along the query axis would get a one-row frontier there (ORT rejects such masks).
    # The spec computes the frontier independently of the mask: compare with the mask spelled out.
    model = attention_model(feeds, {"is_causal": causal}, ALL_OUTPUTS)
    full = np.broadcast_to(mask, tuple(shape[:-2]) + (3, 6)).copy()
    expected = run_reference(model, dict(feeds, attn_mask=full))
    for a, e in zip(run_ours(model, feeds), expected):
        assert_close(a, e, 1e-5, 1e-5)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_attention_short_mask_is_padded(kind):
    feeds = with_past(qkv4(1, 2, 2, 3, 3, 4), 1, 2, 2, 4)  # total 5, mask covers 3
    mask = np.random.default_rng(1).random((3, 3)) > 0.2 if kind == "bool" else random((3, 3), seed=3)
    feeds["attn_mask"] = mask
    check_attention(feeds, outputs=ALL_OUTPUTS)


def test_attention_fully_masked_rows_are_zero():
    feeds = qkv4(1, 2, 2, 3, 4, 4)
    mask = np.ones((3, 4), bool)
    mask[1] = False
    feeds["attn_mask"] = mask
    y, qk = check_attention(feeds, {"qk_matmul_output_mode": 3}, outputs=("y", "qk_matmul_output"))
    assert np.all(y[:, :, 1] == 0) and np.all(qk[:, :, 1] == 0)
    float_mask = np.zeros((3, 4), np.float32)
    float_mask[2] = -np.inf
    feeds["attn_mask"] = float_mask
    y, = check_attention(feeds)
    assert np.all(y[:, :, 2] == 0) and not np.isnan(y).any()


@pytest.mark.parametrize("at", [0, 37, 70])  # in the vector body, in a later vector, in the scalar tail
def test_attention_nan_score_makes_its_row_nan_and_inf_scores_do_not(at):
    # 71 keys: the row maximum runs over whole vectors and a tail. A NaN key makes only the rows
    # that attend it NaN (as Softmax's max); a -inf mask entry is just an excluded key, and a
    # +inf one takes the whole weight of its row, which is NaN (inf - inf), as Softmax gives.
    feeds = qkv4(1, 1, 1, 3, 71, 8)
    mask = np.zeros((3, 71), np.float32)
    mask[0, at] = np.nan
    mask[1, at] = -np.inf
    mask[2, (at + 5) % 71] = np.inf
    feeds["attn_mask"] = mask
    y, = check_attention(feeds)
    assert np.isnan(y[0, 0, 0]).all()
    assert not np.isnan(y[0, 0, 1]).any()
    assert np.isnan(y[0, 0, 2]).all()


def test_attention_causal_fully_masked_first_row():
    # Without past, query 0 attends only key 0; a mask excluding key 0 masks that row fully.
    feeds = qkv4(1, 1, 1, 4, 4, 4)
    mask = np.ones((4, 4), bool)
    mask[:, 0] = False
    feeds["attn_mask"] = mask
    y, = check_attention(feeds, {"is_causal": 1})
    assert np.all(y[0, 0, 0] == 0)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.float64, np.float16])
def test_attention_mask_other_types(dtype):
    feeds = qkv4(1, 2, 2, 3, 4, 4)
    feeds["attn_mask"] = np.random.default_rng(2).integers(-2, 2, (3, 4)).astype(dtype)
    check_attention(feeds, rtol=1e-4)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_attention_mask_matches_ort(kind):
    feeds = with_past(qkv4(2, 4, 2, 3, 3, 8), 2, 2, 2, 8)
    rng = np.random.default_rng(7)
    feeds["attn_mask"] = rng.random((2, 1, 3, 5)) > 0.3 if kind == "bool" else rng.uniform(-2, 0, (2, 1, 3, 5)).astype(np.float32)
    check_attention(feeds, {"is_causal": 1}, outputs=ALL_OUTPUTS, reference="ort", rtol=1e-4, atol=1e-5)


# ---- grouped and multi-query heads ----------------------------------------------------------


@pytest.mark.parametrize("hq,hkv", [(8, 2), (8, 1), (4, 4), (6, 3)])
@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("sq,past,causal", [(1, 0, 0), (1, 5, 1), (4, 0, 1), (3, 2, 0)])
def test_attention_grouped_heads(hq, hkv, rank, sq, past, causal):
    b, d = 2, 8
    attrs = {"is_causal": causal}
    if rank == 4:
        feeds = qkv4(b, hq, hkv, sq, sq, d)
    else:
        feeds = qkv3(b, hq, hkv, sq, sq, d)
        attrs.update(q_num_heads=hq, kv_num_heads=hkv)
    if past:
        feeds = with_past(feeds, b, hkv, past, d)
    check_attention(feeds, attrs, outputs=ALL_OUTPUTS + ("qk_matmul_output",))


@pytest.mark.parametrize("hkv", [2, 1])
def test_attention_grouped_heads_match_ort(hkv):
    feeds = with_past(qkv3(2, 8, hkv, 2, 2, 16), 2, hkv, 3, 16)
    attrs = {"q_num_heads": 8, "kv_num_heads": hkv, "is_causal": 1}
    check_attention(feeds, attrs, outputs=ALL_OUTPUTS, reference="ort", rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("rank,sq,expected", [(4, 3, "blas-gqa"), (4, 1, "single-query-stream"),
                                              (3, 1, "single-query-stream"), (3, 3, "blas-gqa-per-head")])
def test_attention_kernel_usage_gqa(rank, sq, expected):
    attrs = {}
    if rank == 4:
        feeds = qkv4(1, 8, 2, sq, 4, 8)
    else:
        feeds = qkv3(1, 8, 2, sq, 4, 8)
        attrs = {"q_num_heads": 8, "kv_num_heads": 2}
    model = attention_model(feeds, attrs)
    assert usage_of(model, feeds) == [f"Attention/float32/{expected}"]


def test_attention_kernel_usage_mha_and_half():
    feeds = qkv4(1, 2, 2, 3, 4, 8)
    assert usage_of(attention_model(feeds), feeds) == ["Attention/float32/blas"]
    half = {k: v.astype(np.float16) for k, v in feeds.items()}
    assert usage_of(attention_model(half), half) == ["Attention/float16/float32-scratch", "Attention/float32/blas"]
    dbl = {k: v.astype(np.float64) for k, v in feeds.items()}
    assert usage_of(attention_model(dbl), dbl) == ["Attention/float64/blas"]


@pytest.mark.parametrize("hq,hkv,expected", [(2, 2, ""), (4, 2, "-gqa")])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_long_sequences_in_blocks(hq, hkv, expected, causal):
    # 400 query rows against 700 keys: the score rows go through in blocks that stay in cache,
    # and Q·Kᵀ runs on our tiles (over a copy of Kᵀ) where the CPU has AVX-512.
    feeds = qkv4(1, hq, hkv, 400, 700, 32, dv=24)
    feeds["q"] *= 0.5
    attrs = {"is_causal": causal}
    check_attention(feeds, attrs, reference="onnx", rtol=1e-4, atol=1e-5)
    impl = "tiles-avx512" if TILED_GEMM_PATH == "tiles-avx512" else "blas"
    assert usage_of(attention_model(feeds, attrs), feeds) == [f"Attention/float32/{impl}{expected}"]


# ---- scale, softcap, qk_matmul_output -------------------------------------------------------


@pytest.mark.parametrize("scale", [0.05, 1.0, 2.5])
def test_attention_scale(scale):
    check_attention(qkv4(2, 2, 2, 3, 5, 8), {"scale": scale}, rtol=1e-4)


@pytest.mark.parametrize("softcap", [0.5, 2.0, 30.0])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_softcap(softcap, causal):
    feeds = with_past(qkv4(1, 2, 2, 3, 3, 8), 1, 2, 2, 8)
    check_attention(feeds, {"softcap": softcap, "is_causal": causal, "qk_matmul_output_mode": 1},
                    outputs=("y", "qk_matmul_output"))


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("kind", ["none", "bool", "float"])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_qk_matmul_output_modes(mode, kind, causal):
    feeds = with_past(qkv4(2, 4, 2, 3, 3, 8), 2, 2, 2, 8)
    rng = np.random.default_rng(3)
    if kind == "bool":
        feeds["attn_mask"] = rng.random((3, 5)) > 0.3
    elif kind == "float":
        feeds["attn_mask"] = rng.uniform(-1, 1, (2, 1, 3, 5)).astype(np.float32)
    check_attention(feeds, {"qk_matmul_output_mode": mode, "is_causal": causal},
                    outputs=("y", "qk_matmul_output"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_attention_qk_matmul_output_with_softcap_matches_ort(mode):
    # Mode 0 is the raw scaled product even when softcap is set (the spec and ORT agree; the
    # Python reference returns the softcapped scores there).
    feeds = qkv4(1, 2, 2, 3, 4, 8)
    feeds["attn_mask"] = np.random.default_rng(4).uniform(-1, 0, (3, 4)).astype(np.float32)
    model = attention_model(feeds, {"softcap": 0.7, "qk_matmul_output_mode": mode}, ("y", "qk_matmul_output"))
    expected = run_ort(model, feeds)
    actual = run_ours(model, feeds)
    assert_close(actual[0], expected[0], 1e-4, 1e-5, "y")
    assert_close(actual[1], expected[1], 1e-4, 1e-5, "qk_matmul_output")


def test_attention_softmax_precision_attribute():
    feeds = qkv4(1, 2, 2, 3, 4, 8)
    check_attention(feeds, {"softmax_precision": 1})
    half = {k: v.astype(np.float16) for k, v in feeds.items()}
    check_attention(half, {"softmax_precision": 1}, rtol=2e-2, atol=2e-2)


# ---- element types --------------------------------------------------------------------------


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_float16(rank, causal):
    b, hq, hkv, d = 2, 4, 2, 8
    feeds = qkv4(b, hq, hkv, 3, 3, d, dtype=np.float16) if rank == 4 else qkv3(b, hq, hkv, 3, 3, d, dtype=np.float16)
    feeds = with_past(feeds, b, hkv, 2, d, dtype=np.float16)
    feeds["attn_mask"] = random((3, 5), np.float16, -1, 0, seed=9)
    attrs = {"is_causal": causal}
    if rank == 3:
        attrs.update(q_num_heads=hq, kv_num_heads=hkv)
    y, pk, pv = check_attention(feeds, attrs, outputs=ALL_OUTPUTS, rtol=1e-2, atol=1e-2)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(pk[:, :, :2], feeds["past_key"])  # the cache round-trips exactly


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("rank,hkv,head", [(4, 4, 64), (4, 2, 24), (3, 1, 83)])
def test_attention_half_single_query_reads_the_cache_in_place(dtype, rank, hkv, head):
    # One query row over a long half-precision past: the cache is read in its own type (no
    # float32 copy), and Y matches the float32 computation on the same (rounded) values.
    b, hq, past = 2, 4, 70
    feeds32 = qkv4(b, hq, hkv, 1, 1, head) if rank == 4 else qkv3(b, hq, hkv, 1, 1, head)
    feeds32 = with_past(feeds32, b, hkv, past, head)
    feeds32["attn_mask"] = random((1, past + 1), np.float32, -1, 0, seed=4)
    feeds = {k: v.astype(dtype) for k, v in feeds32.items()}
    attrs = {"q_num_heads": hq, "kv_num_heads": hkv} if rank == 3 else {}
    y, pk, pv = run_ours(attention_model(feeds, attrs, ALL_OUTPUTS), feeds)
    assert y.dtype == dtype
    exact = {k: v.astype(np.float32) for k, v in feeds.items()}
    expected = run_reference(attention_model(exact, attrs, ALL_OUTPUTS), exact)
    np.testing.assert_allclose(y.astype(np.float32), expected[0], rtol=2e-2, atol=2e-2)
    np.testing.assert_array_equal(pk.astype(np.float32), expected[1])
    name = "float16" if dtype == np.float16 else "bfloat16"
    assert usage_of(attention_model(feeds, attrs), feeds) == [f"Attention/{name}/single-query-stream"]


def test_attention_bfloat16():
    feeds32 = with_past(qkv4(1, 4, 2, 3, 3, 8), 1, 2, 2, 8)
    feeds = {k: v.astype(ml_dtypes.bfloat16) for k, v in feeds32.items()}
    model = attention_model(feeds, {"is_causal": 1}, ALL_OUTPUTS)
    y, pk, pv = run_ours(model, feeds)
    assert y.dtype == ml_dtypes.bfloat16 and pk.dtype == ml_dtypes.bfloat16
    exact = {k: v.astype(np.float32) for k, v in feeds.items()}
    expected = run_reference(attention_model(exact, {"is_causal": 1}, ALL_OUTPUTS), exact)
    np.testing.assert_allclose(y.astype(np.float32), expected[0], rtol=2e-2, atol=2e-2)
    np.testing.assert_array_equal(pk.astype(np.float32), expected[1])


def test_attention_double():
    feeds = with_past(qkv4(2, 4, 2, 3, 3, 8, dtype=np.float64), 2, 2, 2, 8, dtype=np.float64)
    feeds["attn_mask"] = np.random.default_rng(1).random((3, 5)) > 0.2
    check_attention(feeds, {"is_causal": 1, "qk_matmul_output_mode": 3},
                    outputs=ALL_OUTPUTS + ("qk_matmul_output",), rtol=1e-12, atol=1e-12)


# ---- empty tensors --------------------------------------------------------------------------


@pytest.mark.parametrize("b,sq,skv,past", [(0, 3, 3, 0), (2, 0, 3, 0), (2, 3, 0, 2), (1, 2, 2, 0)])
def test_attention_empty(b, sq, skv, past):
    feeds = qkv4(b, 2, 2, sq, skv, 4)
    if past:
        feeds = with_past(feeds, b, 2, past, 4)
    check_attention(feeds, outputs=ALL_OUTPUTS)


def test_attention_no_keys_gives_zero_rows():
    feeds = qkv4(1, 2, 2, 3, 0, 4)
    y, = run_ours(attention_model(feeds), feeds)
    assert y.shape == (1, 2, 3, 4) and np.all(y == 0)


# ---- errors ---------------------------------------------------------------------------------


def run_expect(exc, feeds, attrs=None, outputs=("y",), match=None):
    model = attention_model(feeds, attrs, outputs)
    with pytest.raises(exc) as info:
        run_ours(model, feeds)
    assert NODE in str(info.value)
    if match:
        assert match in str(info.value)
    return str(info.value)


def test_attention_error_heads_not_multiple_3d_attributes():
    feeds = qkv3(1, 6, 4, 2, 2, 4)
    run_expect(ValueError, feeds, {"q_num_heads": 6, "kv_num_heads": 4}, match="multiple")


def test_attention_error_heads_not_multiple_4d():
    run_expect(ValueError, qkv4(1, 6, 4, 2, 2, 4), match="multiple")


def test_attention_error_head_size_mismatch():
    feeds = qkv4(1, 2, 2, 2, 2, 4)
    feeds["k"] = random((1, 2, 2, 5))
    run_expect(ValueError, feeds, match="head size")


def test_attention_error_3d_without_heads():
    run_expect(ValueError, qkv3(1, 2, 2, 2, 2, 4), match="q_num_heads")


def test_attention_error_3d_hidden_not_divisible():
    feeds = qkv3(1, 2, 2, 2, 2, 4)
    run_expect(ValueError, feeds, {"q_num_heads": 3, "kv_num_heads": 1}, match="divisible")


def test_attention_error_rank_mismatch():
    feeds = qkv4(1, 2, 2, 2, 2, 4)
    feeds["k"] = random((1, 2, 8))
    run_expect(ValueError, feeds)


def test_attention_error_kv_length_mismatch():
    feeds = qkv4(1, 2, 2, 2, 3, 4)
    feeds["v"] = random((1, 2, 4, 4))
    run_expect(ValueError, feeds, match="sequence")


def test_attention_error_past_key_without_past_value():
    feeds = qkv4(1, 2, 2, 2, 2, 4)
    feeds["past_key"] = random((1, 2, 3, 4))
    run_expect(ValueError, feeds, match="together")


def test_attention_error_past_shape():
    feeds = with_past(qkv4(1, 2, 2, 2, 2, 4), 1, 2, 3, 4)
    feeds["past_key"] = random((1, 2, 3, 5))
    run_expect(ValueError, feeds, outputs=ALL_OUTPUTS, match="past_key")


@pytest.mark.parametrize("shape", [(2, 5), (3, 1, 2, 2), (1, 2, 3, 2, 2), (3, 2)])
def test_attention_error_mask_shape(shape):
    feeds = qkv4(1, 2, 2, 2, 2, 4)
    feeds["attn_mask"] = np.ones(shape, bool)
    run_expect(ValueError, feeds, match="attn_mask")


@pytest.mark.parametrize("attrs,match", [({"qk_matmul_output_mode": 4}, "qk_matmul_output_mode"),
                                         ({"is_causal": 2}, "is_causal"),
                                         ({"softmax_precision": 7}, "softmax_precision"),
                                         ({"q_num_heads": 0, "kv_num_heads": 1}, "q_num_heads")])
def test_attention_error_attributes(attrs, match):
    run_expect(ValueError, qkv4(1, 2, 2, 2, 2, 4), attrs, match=match)


def test_attention_error_unsupported_type():
    feeds = {k: (v * 4).astype(np.int32) for k, v in qkv4(1, 2, 2, 2, 2, 4).items()}
    with pytest.raises(NotImplementedError) as info:
        run_ours(attention_model(feeds), feeds)
    assert NODE in str(info.value)


# ---- RotaryEmbedding ------------------------------------------------------------------------

ROPE_INPUTS = ["x", "cos_cache", "sin_cache", "position_ids"]


def rope_feeds(rank, b, h, s, d, rotary, with_positions, dtype=np.float32, max_pos=16, seed=0):
    x = random((b, h, s, d) if rank == 4 else (b, s, h * d), dtype, seed=seed)
    half = (rotary or d) // 2
    rng = np.random.default_rng(seed + 1)
    if with_positions:
        angles = rng.uniform(0, 6.3, (max_pos, half))
        feeds = {"x": x, "cos_cache": np.cos(angles).astype(dtype), "sin_cache": np.sin(angles).astype(dtype),
                 "position_ids": rng.integers(0, max_pos, (b, s)).astype(np.int64)}
    else:
        angles = rng.uniform(0, 6.3, (b, s, half))
        feeds = {"x": x, "cos_cache": np.cos(angles).astype(dtype), "sin_cache": np.sin(angles).astype(dtype)}
    return feeds


def rope_model(feeds, attrs):
    return attention_model(feeds, attrs, ("y",), op="RotaryEmbedding", input_order=ROPE_INPUTS,
                           output_order=["y"])


def check_rope(feeds, attrs, reference="onnx", rtol=1e-5, atol=1e-6):
    model = rope_model(feeds, attrs)
    expected = run_reference(model, feeds) if reference == "onnx" else run_ort(model, feeds)
    actual = run_ours(model, feeds)
    assert_close(actual[0], expected[0], rtol, atol)
    return actual[0]


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary", [0, 4, 8])
@pytest.mark.parametrize("with_positions", [False, True])
def test_rotary_embedding(rank, interleaved, rotary, with_positions):
    b, h, s, d = 2, 3, 5, 8
    feeds = rope_feeds(rank, b, h, s, d, rotary, with_positions)
    attrs = {"interleaved": interleaved}
    if rotary:
        attrs["rotary_embedding_dim"] = rotary
    if rank == 3:
        attrs["num_heads"] = h
    check_rope(feeds, attrs)


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_matches_ort(rank, interleaved):
    feeds = rope_feeds(rank, 2, 4, 3, 16, 8, True)
    attrs = {"interleaved": interleaved, "rotary_embedding_dim": 8}
    if rank == 3:
        attrs["num_heads"] = 4
    check_rope(feeds, attrs, reference="ort")


def test_rotary_embedding_broadcast_batch():
    feeds = rope_feeds(4, 3, 2, 4, 8, 0, False)
    feeds["cos_cache"] = feeds["cos_cache"][:1].copy()
    feeds["sin_cache"] = feeds["sin_cache"][:1].copy()
    check_rope(feeds, {})
    feeds = rope_feeds(4, 3, 2, 4, 8, 0, True)
    feeds["position_ids"] = feeds["position_ids"][:1].copy()
    check_rope(feeds, {})


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_float16(interleaved):
    feeds = rope_feeds(4, 2, 2, 3, 8, 0, True, dtype=np.float16)
    y = check_rope(feeds, {"interleaved": interleaved}, rtol=1e-2, atol=1e-2)
    assert y.dtype == np.float16


def test_rotary_embedding_bfloat16():
    feeds32 = rope_feeds(3, 2, 2, 3, 8, 4, True)
    feeds = {k: (v.astype(ml_dtypes.bfloat16) if v.dtype == np.float32 else v) for k, v in feeds32.items()}
    attrs = {"num_heads": 2, "rotary_embedding_dim": 4}
    y, = run_ours(rope_model(feeds, attrs), feeds)
    assert y.dtype == ml_dtypes.bfloat16
    exact = {k: (v.astype(np.float32) if v.dtype == ml_dtypes.bfloat16 else v) for k, v in feeds.items()}
    expected = run_reference(rope_model(exact, attrs), exact)[0]
    np.testing.assert_allclose(y.astype(np.float32), expected, rtol=2e-2, atol=2e-2)


def test_rotary_embedding_empty():
    feeds = rope_feeds(4, 2, 2, 0, 8, 0, True)
    y = run_ours(rope_model(feeds, {}), feeds)[0]
    assert y.shape == (2, 2, 0, 8)


def test_rotary_embedding_kernel_usage():
    feeds = rope_feeds(4, 1, 2, 3, 8, 0, True)
    assert usage_of(rope_model(feeds, {"interleaved": 1}), feeds) == ["RotaryEmbedding/float32/interleaved"]
    assert usage_of(rope_model(feeds, {}), feeds) == ["RotaryEmbedding/float32/half-split"]


def rope_expect(feeds, attrs, exc=ValueError, match=None):
    with pytest.raises(exc) as info:
        run_ours(rope_model(feeds, attrs), feeds)
    assert NODE in str(info.value)
    if match:
        assert match in str(info.value)


def test_rotary_embedding_errors():
    rope_expect(rope_feeds(3, 1, 2, 3, 8, 0, True), {}, match="num_heads")
    rope_expect(rope_feeds(3, 1, 2, 3, 8, 0, True), {"num_heads": 3}, match="divisible")
    rope_expect(rope_feeds(4, 1, 2, 3, 8, 0, True), {"rotary_embedding_dim": 3}, match="rotary_embedding_dim")
    rope_expect(rope_feeds(4, 1, 2, 3, 8, 0, True), {"rotary_embedding_dim": 10}, match="rotary_embedding_dim")
    rope_expect(rope_feeds(4, 1, 2, 3, 8, 4, True), {}, match="cos_cache")
    feeds = rope_feeds(4, 1, 2, 3, 8, 0, True, max_pos=4)
    feeds["position_ids"][0, 1] = 4
    rope_expect(feeds, {}, match="out of range")
    feeds["position_ids"][0, 1] = -1
    rope_expect(feeds, {}, match="out of range")
    feeds = rope_feeds(4, 1, 2, 3, 8, 0, False)
    feeds["x"] = random((1, 5, 8))
    rope_expect(feeds, {"num_heads": 1}, match="cos_cache")
    feeds = rope_feeds(4, 1, 2, 3, 8, 0, True)
    feeds["x"] = random((2, 3))
    rope_expect(feeds, {}, match="3-D")
