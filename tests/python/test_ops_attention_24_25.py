"""Attention-24 (nonpad_kv_seqlen: an external cache's valid-key counts) and Attention-25 (sliding
windows) against onnx.reference at those opsets, plus the behaviours we define where it is silent."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import assert_close, make_model, random, run_ours, run_reference

INPUTS = ["q", "k", "v", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"]
OUTPUTS = ["y", "present_key", "present_value", "qk_matmul_output"]


def model_at(opset, feeds, attrs=None, outputs=("y",)):
    """One Attention node importing `opset`; inputs missing from `feeds` are left unnamed."""
    names = [n if n in feeds else "" for n in INPUTS]
    while names and names[-1] == "":
        names.pop()
    outs = [n if n in outputs else "" for n in OUTPUTS]
    while outs and outs[-1] == "":
        outs.pop()
    node = helper.make_node("Attention", names, outs, name="attn", **(attrs or {}))
    return make_model([node], feeds, [o for o in outs if o], opset=opset)


def check(opset, feeds, attrs=None, outputs=("y",), rtol=1e-5, atol=1e-5, num_threads=1, reference_feeds=None):
    """Ours against onnx.reference (fed `reference_feeds` when given: the same values spelled out
    where the reference cannot broadcast them)."""
    model = model_at(opset, feeds, attrs, outputs)
    expected = run_reference(model, reference_feeds or feeds)
    options = runtime.RuntimeSessionOptions(num_threads=num_threads)
    actual = run_ours(model, feeds, options=options)
    for name, a, e in zip([o.name for o in model.graph.output], actual, expected):
        if e.dtype == ml_dtypes.bfloat16:  # compared as float32, within the given tolerance
            assert a.dtype == e.dtype, name
            a, e = a.astype(np.float32), e.astype(np.float32)
        assert_close(a, e, rtol, atol, name=name)
    return actual


def usage(opset, feeds, attrs=None):
    context = runtime.RuntimeContext()
    context.set_kernel_usage_enabled(True)
    run_ours(model_at(opset, feeds, attrs), feeds, context=context)
    return context.get_kernel_usage()


def cache(b, hq, hkv, sq, skv, d, dtype=np.float32, seed=0, rank=4):
    if rank == 4:
        return {"q": random((b, hq, sq, d), dtype, seed=seed), "k": random((b, hkv, skv, d), dtype, seed=seed + 1),
                "v": random((b, hkv, skv, d), dtype, seed=seed + 2)}
    return {"q": random((b, sq, hq * d), dtype, seed=seed), "k": random((b, skv, hkv * d), dtype, seed=seed + 1),
            "v": random((b, skv, hkv * d), dtype, seed=seed + 2)}


def heads(rank, hq, hkv):
    return {} if rank == 4 else {"q_num_heads": hq, "kv_num_heads": hkv}


# ---- Attention-24: nonpad_kv_seqlen -----------------------------------------------------------


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize("hq,hkv", [(2, 2), (4, 2), (4, 1)])
@pytest.mark.parametrize("sq,skv,valid", [(1, 8, [5, 8]), (3, 8, [3, 6]), (4, 6, [6, 4]), (5, 7, [2, 7])])
def test_nonpad_matches_reference(rank, causal, hq, hkv, sq, skv, valid):
    # Per batch: keys at or after the count are masked; causal rows are aligned bottom-right
    # (query i attends key j iff j <= i + count - q_length), so a count below the query length
    # leaves the leading rows with no key at all (zero rows).
    feeds = cache(2, hq, hkv, sq, skv, 8, rank=rank)
    feeds["nonpad_kv_seqlen"] = np.array(valid, np.int64)
    check(24, feeds, {"is_causal": causal, **heads(rank, hq, hkv)})


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("causal", [0, 1])
def test_nonpad_qk_matmul_output_modes(mode, causal):
    feeds = cache(2, 2, 2, 3, 6, 4)
    feeds["nonpad_kv_seqlen"] = np.array([2, 5], np.int64)
    # (No softcap: the reference applies it to mode 0 as well, where the spec and ONNX Runtime
    # do not; test_ops_attention.py compares softcap modes with ONNX Runtime.)
    y, qk = check(24, feeds, {"is_causal": causal, "qk_matmul_output_mode": mode},
                  outputs=("y", "qk_matmul_output"))
    if mode == 3 and causal:
        # Batch 0: two valid keys for three queries, so query 0 has none (offset -1).
        assert np.all(qk[0, :, 0] == 0) and np.all(y[0, :, 0] == 0)


@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("shape", [(6,), (3, 6), (2, 1, 3, 6), (2, 3, 6), (3, 4)])
def test_nonpad_composes_with_attn_mask(kind, shape):
    feeds = cache(2, 2, 2, 3, 6, 4)
    feeds["nonpad_kv_seqlen"] = np.array([4, 6], np.int64)
    rng = np.random.default_rng(3)
    mask = (rng.random(shape) > 0.3) if kind == "bool" else rng.uniform(-2, 1, shape).astype(np.float32)
    feeds["attn_mask"] = mask
    # The reference's causal frontier needs a query axis in the mask: give it the same mask with
    # its rows spelled out.
    spelled = dict(feeds, attn_mask=np.broadcast_to(mask, (3, shape[-1])).copy()) if len(shape) == 1 else None
    check(24, feeds, {"is_causal": 1}, reference_feeds=spelled)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float64])
@pytest.mark.parametrize("sq", [1, 3])
def test_nonpad_other_types(dtype, sq):
    # sq = 1 half precision is the decode path that reads the cache in its stored type.
    feeds = cache(2, 4, 2, sq, 9, 8, dtype=dtype)
    feeds["nonpad_kv_seqlen"] = np.array([4, 9], np.int64)
    tol = 1e-5 if dtype == np.float64 else 2e-2
    check(24, feeds, {"is_causal": 1}, rtol=tol, atol=tol)


def test_nonpad_zero_count_gives_zero_rows():
    feeds = cache(2, 2, 2, 1, 5, 4)
    feeds["nonpad_kv_seqlen"] = np.array([0, 5], np.int64)
    y, = check(24, feeds, {"is_causal": 1})
    assert np.all(y[0] == 0) and np.any(y[1] != 0)


@pytest.mark.parametrize("sq", [1, 4])
def test_keys_past_the_count_are_never_read(sq):
    # Our definition where the reference would let garbage in: padding keys and values (a static
    # cache's unused tail may hold anything, NaN included) do not reach the output.
    feeds = cache(2, 2, 2, sq, 8, 4)
    feeds["nonpad_kv_seqlen"] = np.array([5, 3], np.int64)
    clean = run_ours(model_at(24, feeds, {"is_causal": 1}), feeds)[0]
    dirty = dict(feeds)
    for name in ("k", "v"):
        dirty[name] = feeds[name].copy()
        dirty[name][0, :, 5:] = np.nan
        dirty[name][1, :, 3:] = np.inf
    np.testing.assert_array_equal(run_ours(model_at(24, dirty, {"is_causal": 1}), dirty)[0], clean)


def test_nonpad_with_threads_matches_reference():
    # Enough work for the (batch, kv head) pairs to spread over the pool.
    feeds = cache(3, 8, 2, 16, 64, 32, seed=4)
    feeds["nonpad_kv_seqlen"] = np.array([64, 40, 17], np.int64)
    check(24, feeds, {"is_causal": 1}, rtol=1e-4, atol=1e-5, num_threads=2)
    decode = cache(3, 8, 2, 1, 512, 64, seed=5)
    decode["nonpad_kv_seqlen"] = np.array([512, 300, 7], np.int64)
    check(24, decode, {"is_causal": 1}, rtol=1e-4, atol=1e-5, num_threads=2)


def test_nonpad_kernel_usage():
    feeds = cache(1, 2, 2, 1, 6, 4)
    assert not any("nonpad" in n for n in usage(24, feeds))
    feeds["nonpad_kv_seqlen"] = np.array([4], np.int64)
    names = usage(24, feeds)
    assert "Attention/float32/nonpad-kv" in names and "Attention/float32/single-query-stream" in names


@pytest.mark.parametrize("value,match", [
    (np.array([7, 2], np.int64), r"nonpad_kv_seqlen\[0\] = 7 is outside \[0, 6\]"),
    (np.array([-1, 2], np.int64), r"nonpad_kv_seqlen\[0\] = -1"),
    (np.array([2], np.int64), r"shape \[batch\] = \[2\]"),
    (np.array([[2, 2]], np.int64), r"shape \[batch\] = \[2\]"),
])
def test_nonpad_errors(value, match):
    feeds = cache(2, 2, 2, 3, 6, 4)
    feeds["nonpad_kv_seqlen"] = value
    with pytest.raises(ValueError, match=match):
        run_ours(model_at(24, feeds), feeds)


def test_nonpad_wrong_type_is_unsupported():
    feeds = cache(2, 2, 2, 3, 6, 4)
    feeds["nonpad_kv_seqlen"] = np.array([2, 2], np.int32)
    with pytest.raises(NotImplementedError, match=r"input 6 \('nonpad_kv_seqlen'\) has element type int32"):
        run_ours(model_at(24, feeds), feeds)


def test_nonpad_with_past_is_refused():
    feeds = cache(1, 2, 2, 1, 1, 4)
    feeds["past_key"] = random((1, 2, 3, 4), seed=7)
    feeds["past_value"] = random((1, 2, 3, 4), seed=8)
    feeds["nonpad_kv_seqlen"] = np.array([2], np.int64)
    with pytest.raises(ValueError, match="cannot be combined with past_key"):
        run_ours(model_at(24, feeds, outputs=("y", "present_key", "present_value")), feeds)


def test_opset_23_has_no_nonpad_input():
    feeds = cache(1, 2, 2, 1, 4, 4)
    feeds["nonpad_kv_seqlen"] = np.array([2], np.int64)
    with pytest.raises(ValueError, match=r"Attention-23 takes at most 6 inputs"):
        runtime.RuntimeSession(model_at(23, feeds))


# ---- Attention-25: sliding windows ------------------------------------------------------------

WINDOWS = [(-1, -1), (2, 0), (2, 1), (0, 0), (1, 3), (-1, 1), (3, -1), (0, -1)]


@pytest.mark.parametrize("left,right", WINDOWS)
@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize("sq,skv", [(4, 6), (5, 5), (1, 9)])
def test_window_matches_reference(left, right, causal, sq, skv):
    feeds = cache(2, 4, 2, sq, skv, 8)
    check(25, feeds, {"is_causal": causal, "left_window_size": left, "right_window_size": right},
          outputs=("y", "qk_matmul_output"))


@pytest.mark.parametrize("left,right", [(2, 0), (1, 2), (0, -1)])
@pytest.mark.parametrize("causal", [0, 1])
def test_window_with_past(left, right, causal):
    # The window is centred on the query's absolute position: past length + row.
    feeds = cache(2, 2, 2, 3, 3, 4)
    feeds["past_key"] = random((2, 2, 4, 4), seed=11)
    feeds["past_value"] = random((2, 2, 4, 4), seed=12)
    check(25, feeds, {"is_causal": causal, "left_window_size": left, "right_window_size": right},
          outputs=("y", "present_key", "present_value"))


@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("left,right", [(2, 0), (3, 1), (-1, 0)])
@pytest.mark.parametrize("sq", [1, 3])
def test_window_with_external_cache(rank, left, right, sq):
    # With nonpad_kv_seqlen the position is row + count - q_length, per batch.
    feeds = cache(2, 4, 2, sq, 10, 8, rank=rank)
    feeds["nonpad_kv_seqlen"] = np.array([7, 10], np.int64)
    check(25, feeds, {"is_causal": 1, "left_window_size": left, "right_window_size": right, **heads(rank, 4, 2)})


@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("shape", [(2, 1, 4, 6), (4, 6), (2, 4, 6)])
def test_window_composes_with_mask(kind, shape):
    feeds = cache(2, 2, 2, 4, 6, 4)
    rng = np.random.default_rng(9)
    feeds["attn_mask"] = (rng.random(shape) > 0.25) if kind == "bool" else rng.uniform(-2, 1, shape).astype(np.float32)
    check(25, feeds, {"is_causal": 1, "left_window_size": 2, "right_window_size": 0})


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float64])
def test_window_other_types(dtype):
    feeds = cache(1, 2, 1, 1, 12, 8, dtype=dtype)
    tol = 1e-5 if dtype == np.float64 else 2e-2
    check(25, feeds, {"left_window_size": 4, "right_window_size": 0}, rtol=tol, atol=tol)


def test_window_decode_over_a_long_cache_with_threads():
    feeds = cache(2, 8, 2, 1, 2048, 64, seed=6)
    feeds["past_key"] = random((2, 2, 100, 64), seed=13)
    feeds["past_value"] = random((2, 2, 100, 64), seed=14)
    feeds["q"] = random((2, 8, 1, 64), seed=15)
    feeds["k"] = random((2, 2, 1, 64), seed=16)
    feeds["v"] = random((2, 2, 1, 64), seed=17)
    check(25, feeds, {"left_window_size": 32, "right_window_size": 0}, rtol=1e-4, atol=1e-5, num_threads=2)


def test_window_kernel_usage():
    feeds = cache(1, 2, 2, 3, 6, 4)
    assert not any("window" in n for n in usage(25, feeds))
    names = usage(25, feeds, {"left_window_size": 1})
    assert "Attention/float32/sliding-window" in names
    # Before 25 the attribute does not exist: a model carrying it is read without it.
    assert not any("window" in n for n in usage(24, feeds, {"left_window_size": 1}))


def test_window_size_below_minus_one_is_refused():
    feeds = cache(1, 2, 2, 3, 6, 4)
    with pytest.raises(ValueError, match="left_window_size must be -1 .* got -2"):
        runtime.RuntimeSession(model_at(25, feeds, {"left_window_size": -2}))


def test_huge_windows_are_unbounded():
    feeds = cache(1, 2, 2, 3, 6, 4)
    big = {"left_window_size": 2**62, "right_window_size": 2**62}
    np.testing.assert_array_equal(run_ours(model_at(25, feeds, big), feeds)[0],
                                  run_ours(model_at(25, feeds), feeds)[0])


def test_opset_25_refuses_head_counts_with_4d_inputs():
    feeds = cache(1, 2, 2, 3, 6, 4)
    attrs = {"q_num_heads": 2, "kv_num_heads": 2}
    check(24, feeds, attrs)  # allowed (and ignored) before 25
    with pytest.raises(ValueError, match="q_num_heads and kv_num_heads apply to 3-D inputs only"):
        run_ours(model_at(25, feeds, attrs), feeds)
