"""ThresholdedRelu and Celu: native kernels for operators onnx defines by function
bodies, against onnx.reference (which runs the operators directly)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import onnx_light.runtime as runtime
from node_check import check_node, node_model, random, run_ours, run_reference

BF16 = ml_dtypes.bfloat16
CASES = [("ThresholdedRelu", {}, 10), ("ThresholdedRelu", {"alpha": 0.5}, 22), ("Celu", {}, 12), ("Celu", {"alpha": 2.5}, 12), ("Celu", {"alpha": 0.3}, 23)]


@pytest.mark.parametrize("op,attrs,opset", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_matches_reference(op, attrs, opset, dtype):
    if op == "Celu" and opset < 28 and dtype != np.float32:
        opset = 23  # Celu-12's schema is float32 only; our kernel serves every float type
    x = random((7, 9), np.float32, -4, 4, seed=3)
    x[0, :4] = [0.0, -0.0, np.inf, -np.inf]
    x = x.astype(dtype)
    tol = {"rtol": 2e-3, "atol": 2e-3} if dtype == np.float16 else {"rtol": 1e-5, "atol": 1e-6}
    model = node_model(op, {"x": x}, attrs, opset=opset)
    if dtype == np.float32 or op != "Celu":
        expected = run_reference(model, {"x": x})[0]
    else:  # the reference computes Celu in float32 only
        f32 = x.astype(np.float32)
        expected = run_reference(node_model(op, {"x": f32}, attrs, opset=opset), {"x": f32})[0].astype(dtype)
    (actual,) = run_ours(model, {"x": x})
    assert actual.dtype == dtype
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), **tol)


@pytest.mark.parametrize("op,attrs,opset", CASES)
def test_bfloat16_and_kernel_not_body(op, attrs, opset):
    x = random((5, 6), np.float32, -3, 3, seed=5)
    f32 = run_reference(node_model(op, {"x": x}, attrs, opset=max(opset, 12) if op == "Celu" else opset), {"x": x})[0]
    xb = x.astype(BF16)
    model = node_model(op, {"x": xb}, attrs, opset=28)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    (y,) = run_ours(model, {"x": xb}, context=ctx)
    assert y.dtype == BF16
    np.testing.assert_allclose(y.astype(np.float32), f32, rtol=3e-2, atol=3e-2)
    assert any(name.startswith(f"{op}/bfloat16/") for name in ctx.get_kernel_usage()), ctx.get_kernel_usage()


def test_nan_passes_and_celu_alpha_zero_refused():
    x = np.array([np.nan, 1.0], np.float32)
    for op in ("ThresholdedRelu", "Celu"):
        (y,) = run_ours(node_model(op, {"x": x}), {"x": x})
        assert np.isnan(y[0]) or op == "ThresholdedRelu"
    with pytest.raises(Exception, match="alpha"):
        runtime.RuntimeSession(node_model("Celu", {"x": x}, {"alpha": 0.0}))
