"""The random operators (RandomUniform/Normal and their *Like forms, Bernoulli, Multinomial) and
training-mode Dropout: our generator is not numpy's (docs/semantics.md), so these tests pin
properties: shape, type, range, mean and variance within statistical bounds, and determinism per
seed."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import make_model, node_model, run_ours, usage_of

BF16 = ml_dtypes.bfloat16
N = 200_000  # sample size: the standard error of a mean is 1/sqrt(N) ~ 0.0022 standard deviations


def generator_model(op, attrs, opset=23):
    node = helper.make_node(op, [], ["y"], **attrs)
    return make_model([node], {}, ["y"], opset=opset)


def run_twice(model, feeds=None):
    session = runtime.RuntimeSession(model)
    outs = []
    for _ in range(2):
        ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
        outs.append(session.run(ctx, feeds or {})["y"].numpy().copy())
    return outs


def assert_moments(sample, mean, std):
    sample = np.asarray(sample, np.float64).ravel()
    n = sample.size
    # Five standard errors: a correct generator fails this with probability ~ 1e-6.
    assert abs(sample.mean() - mean) < 5 * std / np.sqrt(n), (sample.mean(), mean)
    assert abs(sample.var() - std**2) < 5 * std**2 * np.sqrt(2.0 / n), (sample.var(), std**2)


@pytest.mark.parametrize("dtype,np_type", [(TensorProto.FLOAT, np.float32), (TensorProto.DOUBLE, np.float64),
                                           (TensorProto.FLOAT16, np.float16), (TensorProto.BFLOAT16, BF16)])
def test_random_uniform_range_moments_and_seed(dtype, np_type):
    attrs = {"shape": [N // 100, 100], "low": -1.0, "high": 3.0, "dtype": dtype, "seed": 7.0}
    a, b = run_twice(generator_model("RandomUniform", attrs))
    assert a.shape == (N // 100, 100) and a.dtype == np_type
    np.testing.assert_array_equal(a, b)  # the same seed gives the same output on every run
    f = a.astype(np.float64)
    assert f.min() >= -1.0 and f.max() <= 3.0
    assert_moments(f, 1.0, 4.0 / np.sqrt(12.0))  # rounding to half types moves these far less than the bound
    c = run_twice(generator_model("RandomUniform", {**attrs, "seed": 8.0}))[0]
    assert not np.array_equal(a, c)


def test_random_normal_moments_seed_and_unseeded_runs_differ():
    attrs = {"shape": [N], "mean": 2.0, "scale": 0.5, "seed": 1.5}
    a, b = run_twice(generator_model("RandomNormal", attrs))
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    assert_moments(a, 2.0, 0.5)
    # Roughly 68% within one standard deviation.
    inside = np.mean(np.abs(a - 2.0) < 0.5)
    assert abs(inside - 0.6827) < 0.01
    u1, u2 = run_twice(generator_model("RandomNormal", {"shape": [1000]}))
    assert not np.array_equal(u1, u2)  # without a seed each run draws anew


def test_random_like_operators():
    x = np.zeros((300, 200), np.float64)
    model = node_model("RandomUniformLike", {"x": x}, {"seed": 3.0, "low": 5.0, "high": 6.0})
    (a,) = run_ours(model, {"x": x})
    (b,) = run_ours(model, {"x": x})
    assert a.shape == x.shape and a.dtype == np.float64
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 5.0 and a.max() < 6.0
    assert_moments(a, 5.5, 1.0 / np.sqrt(12.0))
    xi = np.zeros((400, 250), np.int32)
    model = node_model("RandomNormalLike", {"x": xi}, {"dtype": TensorProto.FLOAT, "seed": 4.0, "scale": 3.0})
    (n,) = run_ours(model, {"x": xi})
    assert n.dtype == np.float32 and n.shape == xi.shape
    assert_moments(n, 0.0, 3.0)
    model = node_model("RandomNormalLike", {"x": xi})
    with pytest.raises(Exception, match="floating point, got int32"):
        run_ours(model, {"x": xi})


def test_random_threads_do_not_change_results():
    model = generator_model("RandomUniform", {"shape": [N], "seed": 11.0})
    one = run_ours(model, {})[0]
    many = run_ours(model, {}, options=runtime.RuntimeSessionOptions(num_threads=2))[0]
    np.testing.assert_array_equal(one, many)


def test_random_attribute_errors_and_usage():
    with pytest.raises(Exception, match="dtype"):
        runtime.RuntimeSession(generator_model("RandomUniform", {"shape": [2], "dtype": TensorProto.INT32}))
    with pytest.raises(Exception, match="negative dimension"):
        runtime.RuntimeSession(generator_model("RandomNormal", {"shape": [2, -1]}))
    usage = usage_of(generator_model("RandomNormal", {"shape": [4], "seed": 1.0}))
    assert "RandomNormal/float32/counter-seeded" in usage


@pytest.mark.parametrize("in_type", [np.float32, np.float64, np.float16])
def test_bernoulli_frequencies_and_seed(in_type):
    p = np.tile(np.array([0.0, 0.25, 0.9, 1.0, -0.5, 1.5], in_type), (N // 6, 1))
    model = node_model("Bernoulli", {"p": p}, {"seed": 2.0})
    (a,) = run_ours(model, {"p": p})
    (b,) = run_ours(model, {"p": p})
    np.testing.assert_array_equal(a, b)
    assert a.dtype == in_type and a.shape == p.shape
    freq = a.astype(np.float64).mean(axis=0)
    np.testing.assert_array_equal(freq[[0, 3, 4, 5]], [0.0, 1.0, 0.0, 1.0])
    rows = p.shape[0]
    for col, prob in [(1, 0.25), (2, 0.9)]:
        assert abs(freq[col] - prob) < 5 * np.sqrt(prob * (1 - prob) / rows)


@pytest.mark.parametrize("dtype,np_type", [(TensorProto.BOOL, np.bool_), (TensorProto.INT64, np.int64),
                                           (TensorProto.UINT8, np.uint8), (TensorProto.BFLOAT16, BF16)])
def test_bernoulli_output_dtype(dtype, np_type):
    p = np.full((1000,), 0.5, np.float32)
    (a,) = run_ours(node_model("Bernoulli", {"p": p}, {"dtype": dtype, "seed": 0.0}), {"p": p})
    assert a.dtype == np_type
    values = set(np.unique(a.astype(np.float64)).tolist())
    assert values == {0.0, 1.0}


@pytest.mark.parametrize("dtype,np_type", [(None, np.int32), (TensorProto.INT64, np.int64)])
def test_multinomial_frequencies_and_seed(dtype, np_type):
    probs = np.array([[0.1, 0.2, 0.7, 0.0], [0.25, 0.25, 0.25, 0.25]], np.float64)
    logits = np.log(np.where(probs > 0, probs, 1e-300)).astype(np.float32)
    logits[0, 3] = -np.inf
    attrs = {"sample_size": 50_000, "seed": 5.0}
    if dtype is not None:
        attrs["dtype"] = dtype
    model = node_model("Multinomial", {"x": logits}, attrs)
    (a,) = run_ours(model, {"x": logits})
    (b,) = run_ours(model, {"x": logits})
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np_type and a.shape == (2, 50_000)
    for row in range(2):
        freq = np.bincount(a[row], minlength=4) / a.shape[1]
        bound = 5 * np.sqrt(probs[row] * (1 - probs[row]) / a.shape[1])
        assert np.all(np.abs(freq - probs[row]) <= bound + 1e-12), (freq, probs[row])


def test_multinomial_errors():
    x = np.full((1, 3), -np.inf, np.float32)
    with pytest.raises(Exception, match="row 0"):
        run_ours(node_model("Multinomial", {"x": x}), {"x": x})
    x = np.zeros((3,), np.float32)
    with pytest.raises(Exception, match="2-D"):
        run_ours(node_model("Multinomial", {"x": x}), {"x": x})
    with pytest.raises(Exception, match="sample_size"):
        runtime.RuntimeSession(node_model("Multinomial", {"x": np.zeros((1, 3), np.float32)}, {"sample_size": 0}))


# ---- training-mode Dropout ---------------------------------------------------------------------

def dropout_model(x, ratio, seed=None, opset=22):
    feeds = {"x": x, "r": np.array(ratio, np.float32), "t": np.array(True)}
    attrs = {} if seed is None else {"seed": seed}
    return node_model("Dropout", feeds, attrs, n_outputs=2, opset=opset), feeds


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_dropout_training_mask_scale_and_seed(dtype):
    x = np.random.default_rng(0).uniform(1, 2, (400, 500)).astype(dtype)
    model, feeds = dropout_model(x, 0.3, seed=9)
    y, mask = run_ours(model, feeds)
    y2, mask2 = run_ours(model, feeds)
    np.testing.assert_array_equal(mask, mask2)
    np.testing.assert_array_equal(y, y2)
    assert mask.dtype == np.bool_ and y.dtype == dtype
    kept = mask.mean()
    assert abs(kept - 0.7) < 5 * np.sqrt(0.21 / mask.size)
    expected = np.where(mask, x.astype(np.float64) / 0.7, 0.0)
    np.testing.assert_allclose(y.astype(np.float64), expected, rtol=1e-3 if dtype == np.float16 else 1e-6)


def test_dropout_training_without_seed_varies_and_inference_unchanged():
    x = np.ones((1000,), np.float32)
    model, feeds = dropout_model(x, 0.5)
    a = run_ours(model, feeds)[1]
    b = run_ours(model, feeds)[1]
    assert not np.array_equal(a, b)
    feeds["t"] = np.array(False)
    y, mask = run_ours(model, feeds)
    np.testing.assert_array_equal(y, x)
    assert mask.all()


def test_dropout_training_ratio_errors():
    x = np.ones((4,), np.float32)
    for ratio in (1.0, -0.1):
        model, feeds = dropout_model(x, ratio)
        with pytest.raises(Exception, match=r"ratio.*\[0, 1\)"):
            run_ours(model, feeds)
