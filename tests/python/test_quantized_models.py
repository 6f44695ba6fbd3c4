"""A small CNN and a transformer encoder layer, each quantized by onnxruntime.quantization in the
three ways users run it (quantize_static in the QDQ and QOperator formats, quantize_dynamic),
against ONNX Runtime: the graph as written (unoptimised ORT), ORT's own fused kernels, and the
float model (issue 16's model tests; the per-operator and per-pass tests are elsewhere)."""

import logging

import numpy as np
import onnx
import pytest

from test_ops_quantization import _Calibration, ort_session, run_ours, usage_of
from test_ops_quantization_contrib import encoder_layer_model, resnet_like_model

INPUTS = {"cnn": (1, 3, 24, 24), "encoder": (1, 16, 32)}
# What each recipe must have written, and a kernel-usage prefix ours must have run on it.
EXPECTED = {
    ("cnn", "static_qdq"): ({"QuantizeLinear", "DequantizeLinear"}, "QLinearConv/"),
    ("cnn", "static_qop"): ({"QLinearConv"}, "QLinearConv/"),
    ("cnn", "dynamic"): ({"ConvInteger", "DynamicQuantizeLinear"}, "ConvInteger/"),
    ("encoder", "static_qdq"): ({"QuantizeLinear", "DequantizeLinear"}, "QLinearMatMul/"),
    ("encoder", "static_qop"): ({"QLinearMatMul"}, "QLinearMatMul/"),
    ("encoder", "dynamic"): ({"MatMulInteger", "DynamicQuantizeLinear"}, "MatMulIntegerToFloat/"),
}


def quantized(tmp_path, kind, recipe):
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    logging.disable(logging.WARNING)
    rng = np.random.default_rng(41)
    model = resnet_like_model(rng) if kind == "cnn" else encoder_layer_model(rng)
    float_path, quant_path = tmp_path / f"{kind}.onnx", tmp_path / f"{kind}_{recipe}.onnx"
    onnx.save(model, float_path)
    if recipe == "dynamic":
        quantize_dynamic(str(float_path), str(quant_path), weight_type=QuantType.QInt8)
    else:
        calibration = [rng.standard_normal(INPUTS[kind]).astype(np.float32) for _ in range(8)]
        quantize_static(str(float_path), str(quant_path), _Calibration(calibration),
                        quant_format=QuantFormat.QDQ if recipe == "static_qdq" else QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True)
    return float_path, quant_path


@pytest.mark.parametrize("recipe", ["static_qdq", "static_qop", "dynamic"])
@pytest.mark.parametrize("kind", ["cnn", "encoder"])
def test_quantized_model_matches_onnxruntime(tmp_path, kind, recipe):
    float_path, quant_path = quantized(tmp_path, kind, recipe)
    model = onnx.load(quant_path)
    written, ran = EXPECTED[kind, recipe]
    assert written <= {n.op_type for n in model.graph.node}, {n.op_type for n in model.graph.node}
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(INPUTS[kind]).astype(np.float32)
        ours = run_ours(model, {"x": x})[0]
        plain = ort_session(quant_path, False).run(None, {"x": x})[0]
        fused = ort_session(quant_path, True).run(None, {"x": x})[0]
        float_out = ort_session(float_path, True).run(None, {"x": x})[0]
        # Quantization tolerance: a value within rounding error of a half step may land one step
        # apart in either runtime and carry on through the later layers, so ours may differ from
        # the graph as written by as much as ORT's own fused kernels do, plus one output step.
        step = float(np.abs(plain).max()) / 127
        assert np.abs(ours - plain).max() <= np.abs(fused - plain).max() + step, (seed, np.abs(ours - plain).max())
        assert np.mean(np.abs(ours - plain) > step) < 0.05
        # And the quantized model stays near the float one (a loose check that it computes the model).
        np.testing.assert_allclose(ours, float_out, rtol=0, atol=0.2 * float(np.abs(float_out).max()) + 0.05)
    usage = usage_of(model, {"x": x})
    assert any(u.startswith(ran) for u in usage), usage
