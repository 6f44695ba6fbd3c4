"""The ai.onnx.preview.training optimizers (Adagrad, Adam, Momentum) and training-mode
BatchNormalization against onnx.reference."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import assert_close, make_model, node_model, random, run_ours, run_reference

TRAINING = "ai.onnx.preview.training"


def optimizer_model(op, feeds, n_outputs, attrs):
    node = helper.make_node(op, list(feeds), [f"y{i}" for i in range(n_outputs)], domain=TRAINING, **attrs)
    return make_model([node], feeds, [f"y{i}" for i in range(n_outputs)], opset=23, extra_opsets={TRAINING: 1})


def check_optimizer(op, feeds, n_outputs, attrs, rtol=1e-5):
    model = optimizer_model(op, feeds, n_outputs, attrs)
    expected = run_reference(model, feeds)
    actual = run_ours(model, feeds)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, np.asarray(e).astype(a.dtype) if a.dtype == np.float32 else e, rtol, 1e-6, name=f"y{i}")


def tensors(n, count, shape=(3, 4), dtype=np.float32):
    return [random(shape, dtype, 0.1, 2.0, seed=10 * n + k) for k in range(count)]


@pytest.mark.parametrize("t", [0, 3])
@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adagrad(t, n, dtype):
    feeds = {"r": np.array(0.1, dtype), "t": np.array(t, np.int64)}
    parts = [tensors(k, 3, dtype=dtype) for k in range(n)]
    for role in range(3):
        for k in range(n):
            feeds[f"in{role}_{k}"] = parts[k][role]
    check_optimizer("Adagrad", feeds, 2 * n, {"decay_factor": 0.1, "epsilon": 1e-5, "norm_coefficient": 0.01})


@pytest.mark.parametrize("t", [0, 5])
@pytest.mark.parametrize("n", [1, 2])
def test_adam(t, n):
    feeds = {"r": np.array(0.05, np.float32), "t": np.array(t, np.int64)}
    parts = [tensors(k, 4) for k in range(n)]
    for role in range(4):
        for k in range(n):
            feeds[f"in{role}_{k}"] = parts[k][role]
    check_optimizer("Adam", feeds, 3 * n,
                    {"alpha": 0.85, "beta": 0.95, "epsilon": 1e-4, "norm_coefficient": 0.02,
                     "norm_coefficient_post": 0.01}, rtol=1e-4)


@pytest.mark.parametrize("mode", ["standard", "nesterov"])
@pytest.mark.parametrize("t", [0, 2])
@pytest.mark.parametrize("n", [1, 3])
def test_momentum(mode, t, n):
    feeds = {"r": np.array(0.1, np.float32), "t": np.array(t, np.int64)}
    parts = [tensors(k, 3) for k in range(n)]
    for role in range(3):
        for k in range(n):
            feeds[f"in{role}_{k}"] = parts[k][role]
    check_optimizer("Momentum", feeds, 2 * n, {"alpha": 0.9, "beta": 0.8, "mode": mode, "norm_coefficient": 0.001})


def test_optimizer_errors():
    feeds = {"r": np.array(0.1, np.float32), "t": np.array(1, np.int64), "x": np.ones(3, np.float32),
             "g": np.ones(4, np.float32), "h": np.ones(3, np.float32)}
    model = optimizer_model("Adagrad", feeds, 2, {})
    with pytest.raises(Exception, match=r"input 3 \('g'\) has shape \[4\], expected \[3\]"):
        run_ours(model, feeds)
    with pytest.raises(Exception, match="2 \\+ 3 \\* n inputs"):
        runtime.RuntimeSession(optimizer_model("Adagrad", dict(list(feeds.items())[:4]), 2, {}))
    with pytest.raises(Exception, match="mode"):
        runtime.RuntimeSession(optimizer_model("Momentum", feeds, 2, {"alpha": 0.9, "beta": 0.1, "mode": "x",
                                                                      "norm_coefficient": 0.0}))
    bad = dict(feeds, t=np.array(1.0, np.float32), g=np.ones(3, np.float32))
    with pytest.raises(Exception, match="int64 scalar"):
        run_ours(optimizer_model("Adagrad", bad, 2, {}), bad)


# ---- training-mode BatchNormalization ----------------------------------------------------------

@pytest.mark.parametrize("opset", [14, 15, 23])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 3), (1, 2, 7)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batchnorm_training_matches_reference(opset, shape, dtype):
    c = shape[1]
    feeds = {"x": random(shape, dtype, seed=1), "s": random((c,), dtype, seed=2), "b": random((c,), dtype, seed=3),
             "m": random((c,), dtype, seed=4), "v": random((c,), dtype, 0.5, 2.0, seed=5)}
    model = node_model("BatchNormalization", feeds, {"training_mode": 1, "momentum": 0.8, "epsilon": 1e-3},
                       n_outputs=3, opset=opset)
    expected = run_reference(model, feeds)
    actual = run_ours(model, feeds)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, e, 1e-4, 1e-5, name=f"y{i}")


def test_batchnorm_training_running_stats_keep_their_type_and_y_only():
    feeds = {"x": random((3, 2, 4), np.float16, seed=1), "s": np.ones(2, np.float16), "b": np.zeros(2, np.float16),
             "m": np.zeros(2, np.float32), "v": np.ones(2, np.float32)}
    y, m, v = run_ours(node_model("BatchNormalization", feeds, {"training_mode": 1}, n_outputs=3, opset=15), feeds)
    assert y.dtype == np.float16 and m.dtype == np.float32 and v.dtype == np.float32
    x = feeds["x"].astype(np.float64)
    np.testing.assert_allclose(m, 0.1 * x.mean(axis=(0, 2)), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(v, 0.9 + 0.1 * x.var(axis=(0, 2)), rtol=1e-3)
    (y1,) = run_ours(node_model("BatchNormalization", feeds, {"training_mode": 1}, opset=15), feeds)
    np.testing.assert_array_equal(y1, y)


def test_batchnorm_training_errors():
    feeds = {"x": np.ones((2, 3), np.float32), "s": np.ones(3, np.float32), "b": np.zeros(3, np.float32),
             "m": np.zeros(3, np.float32), "v": np.ones(3, np.float32)}
    with pytest.raises(Exception, match="training_mode"):
        runtime.RuntimeSession(node_model("BatchNormalization", feeds, {"training_mode": 2}, opset=15))
    empty = dict(feeds, x=np.ones((0, 3), np.float32))
    with pytest.raises(Exception, match="non-empty batch"):
        run_ours(node_model("BatchNormalization", empty, {"training_mode": 1}, opset=15), empty)
