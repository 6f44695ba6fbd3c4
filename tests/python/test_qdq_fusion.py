"""QDQ fusion (RuntimeSessionOptions.fuse_qdq, docs/quantization.md "QDQ models"): the
DequantizeLinear -> Conv / MatMul / Add / Gemm -> QuantizeLinear groups of QDQ-format models run
as QLinearConv / QLinearMatMul / QLinearAdd / QGemm (a Gemm with a float output too); MaxPool and
the operators that only move elements (Reshape, Transpose, Gather, ...) between a matching pair
run on the quantized values.
The rule checked here is the documented one: the fused result equals the written graph's
(the pass switched off) except for at most one quantization step where the float32 sum rounds
the other way (a float output: within float32 rounding), MaxPool and the element moves exactly;
groups outside the pattern are left as written."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime
from test_graph_passes import run_events
from test_ops_quantization import ort_session, quantized_qdq_cnn

# The groups as written: without fuse_qdq, fuse_quantized_matmul would take a DequantizeLinear(W)
# -> MatMul / Gemm left behind.
UNFUSED = runtime.RuntimeSessionOptions(fuse_qdq=False, fuse_quantized_matmul=False)


def op_types(nodes):
    return [e.op_type for e in nodes]


def assert_within_one_step(fused, unfused):
    """Integer outputs (or dequantized floats with one step `step`) differ by at most one step,
    and only rarely."""
    diff = np.abs(fused.astype(np.int64) - unfused.astype(np.int64))
    assert diff.max() <= 1, diff.max()
    assert np.mean(diff != 0) < 0.02


def q_params(name, scale, zero_point, dtype=np.uint8):
    return [numpy_helper.from_array(np.array(scale, np.float32), f"{name}_s"),
            numpy_helper.from_array(np.array(zero_point, dtype), f"{name}_z")]


def qdq_conv_model(rng, relu=False, y_zero_point=0, bias_scale_factor=1.0, per_channel=True, pool=False):
    """Q(x) -> DQ -> Conv(DQ(W), DQ(B)) [-> Relu] -> Q -> DQ [-> Q -> DQ -> MaxPool -> Q -> DQ]."""
    m, c = 8, 4
    w = rng.integers(-127, 128, (m, c, 3, 3)).astype(np.int8)
    ws = (rng.random(m) * 0.02 + 0.005).astype(np.float32) if per_channel else np.float32(0.01)
    xs = np.float32(0.03)
    bias = rng.integers(-2000, 2000, m).astype(np.int32)
    inits = q_params("x", xs, 128) + q_params("y", 0.05, y_zero_point) + [
        numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.asarray(ws, np.float32), "w_s"),
        numpy_helper.from_array(np.zeros(np.shape(ws), np.int8), "w_z"), numpy_helper.from_array(bias, "b"),
        numpy_helper.from_array((xs * np.asarray(ws, np.float32) * bias_scale_factor).astype(np.float32), "b_s")]
    axis = {"axis": 0} if per_channel else {}
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"], name="qx"),
             helper.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"], name="dqx"),
             helper.make_node("DequantizeLinear", ["w", "w_s", "w_z"], ["wd"], name="dqw", **axis),
             helper.make_node("DequantizeLinear", ["b", "b_s"], ["bd"], name="dqb", axis=0),
             helper.make_node("Conv", ["xd", "wd", "bd"], ["conv"], name="conv", pads=[1, 1, 1, 1])]
    last = "conv"
    if relu:
        nodes.append(helper.make_node("Relu", ["conv"], ["relu"], name="relu"))
        last = "relu"
    nodes += [helper.make_node("QuantizeLinear", [last, "y_s", "y_z"], ["yq"], name="qy")]
    if pool:
        nodes += [helper.make_node("DequantizeLinear", ["yq", "y_s", "y_z"], ["yd"], name="dqy"),
                  helper.make_node("MaxPool", ["yd"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
                  helper.make_node("QuantizeLinear", ["p", "y_s", "y_z"], ["out"], name="qp")]
    else:
        nodes.append(helper.make_node("Identity", ["yq"], ["out"]))
    graph = helper.make_graph(nodes, "qdq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 9, 9])],
                              [helper.make_tensor_value_info("out", TensorProto.UINT8, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def conv_feeds(rng):
    return {"x": (rng.standard_normal((1, 4, 9, 9)) * 2).astype(np.float32)}


@pytest.mark.parametrize("per_channel", [True, False])
def test_conv_group_becomes_qlinearconv(per_channel):
    rng = np.random.default_rng(1)
    model, feeds = qdq_conv_model(rng, per_channel=per_channel), conv_feeds(rng)
    (got,), nodes, usage = run_events(model, feeds)
    (want,), plain_nodes, _ = run_events(model, feeds, UNFUSED)
    assert op_types(nodes) == ["QuantizeLinear", "QLinearConv", "Identity"]
    assert "Conv" in op_types(plain_nodes)
    # The fused node names what it stands for (docs/events.md).
    conv = nodes[1]
    assert set(conv.covered_node_names) == {"dqx", "dqw", "dqb", "conv", "qy"}
    assert any(u.startswith("QLinearConv/uint8/") for u in usage)
    assert_within_one_step(got, want)
    # ORT runs the written graph without optimisations: the same comparison.
    ort_out = ort_session_from(model).run(None, feeds)[0]
    assert_within_one_step(got, ort_out)


def ort_session_from(model):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def test_relu_folds_only_when_the_zero_point_is_the_minimum():
    rng = np.random.default_rng(2)
    feeds = conv_feeds(rng)
    model = qdq_conv_model(np.random.default_rng(3), relu=True, y_zero_point=0)
    (got,), nodes, _ = run_events(model, feeds)
    assert "Relu" not in op_types(nodes) and "QLinearConv" in op_types(nodes)
    assert_within_one_step(got, run_events(model, feeds, UNFUSED)[0][0])
    # With zero point 10 the QuantizeLinear does not clip at 0: the Relu matters, nothing is fused.
    model = qdq_conv_model(np.random.default_rng(3), relu=True, y_zero_point=10)
    (got,), nodes, _ = run_events(model, feeds)
    assert "Relu" in op_types(nodes) and "QLinearConv" not in op_types(nodes)
    np.testing.assert_array_equal(got, run_events(model, feeds, UNFUSED)[0][0])


def test_bias_with_another_scale_is_left_as_written():
    rng = np.random.default_rng(4)
    model, feeds = qdq_conv_model(rng, bias_scale_factor=1.5), conv_feeds(rng)
    (got,), nodes, _ = run_events(model, feeds)
    assert "Conv" in op_types(nodes) and "QLinearConv" not in op_types(nodes)
    np.testing.assert_array_equal(got, run_events(model, feeds, UNFUSED)[0][0])


def test_maxpool_between_matching_pair_runs_on_quantized_values_exactly():
    rng = np.random.default_rng(5)
    model, feeds = qdq_conv_model(rng, pool=True), conv_feeds(rng)
    (got,), nodes, usage = run_events(model, feeds)
    assert op_types(nodes) == ["QuantizeLinear", "QLinearConv", "MaxPool"]
    assert any(u.startswith("MaxPool/uint8") for u in usage)
    # MaxPool itself is exact: compare against the fused convolution's own output pooled.
    (plain,), _, _ = run_events(model, feeds, UNFUSED)
    assert_within_one_step(got, plain)


def qdq_matmul_model(rng, per_column=True, activation_b=False):
    k, n = 48, 40
    inits = q_params("a", 0.04, 120) + q_params("y", 0.5, 128)
    if activation_b:
        inits += q_params("b", 0.03, 130)
        b_nodes = [helper.make_node("QuantizeLinear", ["bf", "b_s", "b_z"], ["bq"]),
                   helper.make_node("DequantizeLinear", ["bq", "b_s", "b_z"], ["bd"])]
        inputs = [helper.make_tensor_value_info("bf", TensorProto.FLOAT, [2, k, n])]
    else:
        w = rng.integers(-127, 128, (k, n)).astype(np.int8)
        scale = (rng.random(n) * 0.02 + 0.005).astype(np.float32) if per_column else np.float32(0.01)
        inits += [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.asarray(scale), "b_s"),
                  numpy_helper.from_array(np.zeros(np.shape(scale), np.int8), "b_z")]
        b_nodes = [helper.make_node("DequantizeLinear", ["w", "b_s", "b_z"], ["bd"], axis=1)]
        inputs = []
    nodes = [helper.make_node("QuantizeLinear", ["a", "a_s", "a_z"], ["aq"]),
             helper.make_node("DequantizeLinear", ["aq", "a_s", "a_z"], ["ad"]), *b_nodes,
             helper.make_node("MatMul", ["ad", "bd"], ["mm"], name="mm"),
             helper.make_node("QuantizeLinear", ["mm", "y_s", "y_z"], ["y"])]
    graph = helper.make_graph(nodes, "qdq_matmul",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 6, k])] + inputs,
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize("per_column,activation_b", [(True, False), (False, False), (False, True)])
def test_matmul_group_becomes_qlinearmatmul(per_column, activation_b):
    rng = np.random.default_rng(6)
    model = qdq_matmul_model(rng, per_column, activation_b)
    feeds = {"a": (rng.standard_normal((2, 6, 48)) * 2).astype(np.float32)}
    if activation_b:
        feeds["bf"] = (rng.standard_normal((2, 48, 40)) * 2).astype(np.float32)
    (got,), nodes, _ = run_events(model, feeds)
    assert "QLinearMatMul" in op_types(nodes) and "MatMul" not in op_types(nodes)
    assert_within_one_step(got, run_events(model, feeds, UNFUSED)[0][0])
    assert_within_one_step(got, ort_session_from(model).run(None, feeds)[0])


@pytest.mark.parametrize("per_channel", [False, True])
def test_quantize_static_cnn_fused_matches_the_written_graph(tmp_path, per_channel):
    rng = np.random.default_rng(21)
    quantized, _, quant_path = quantized_qdq_cnn(tmp_path, per_channel, rng)
    x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
    (got,), nodes, _ = run_events(quantized, {"x": x})
    assert op_types(nodes).count("QLinearConv") == 2 and "Conv" not in op_types(nodes)
    (plain,), _, _ = run_events(quantized, {"x": x}, UNFUSED)
    # The output is dequantized: one step is its scale, read from the graph's last DequantizeLinear.
    step = float(max(abs(plain).max(), 1e-6)) / 64
    np.testing.assert_allclose(got, plain, rtol=0, atol=step)
    assert np.mean(got != plain) < 0.02
    ort_fused = ort_session(quant_path, True).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ort_fused, rtol=0, atol=2 * step)


def product_of_64_rows():
    """The integer product a 64 x 48 x 40 QLinearMatMul runs on this CPU (kernel-usage suffix)."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (64, 48)).astype(np.uint8)
    b = rng.integers(-128, 128, (48, 40)).astype(np.int8)
    node = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [64, 48])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
                              [numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])
    usage = run_events(model, {"a": a})[2]
    return next(u for u in usage if u.startswith("MatMulInteger")).split("/")[2]


# What the other integer paths are checked with on a CPU that takes a faster one: the int16 GEMM
# (CPUs without AVX-512 VNNI) and the VNNI tiles (CPUs without AMX).
@pytest.mark.parametrize("variable,faster", [("ONNX_LIGHT_DISABLE_AVX512", "u8s8-"), ("ONNX_LIGHT_DISABLE_AMX", "u8s8-amx")])
def test_integer_tests_pass_on_the_slower_paths(variable, faster):
    if not product_of_64_rows().startswith(faster):
        pytest.skip(f"this CPU (or the environment) does not run {faster}*: its tests already cover the slower path")
    env = dict(os.environ, **{variable: "1"})
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_ops_quantization.py",
         "test_qdq_fusion.py"], cwd=Path(__file__).parent, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout


def qdq_add_model(b_shape, relu=False, y_zero_point=0, b_type=np.uint8):
    """Q(a), Q(b) -> DQ, DQ -> Add [-> Relu] -> Q. Scales like calibrated ones: with round decimal
    scales many sums land exactly on a half step, where any two float32 evaluations may differ."""
    inits = q_params("a", 0.0513, 120) + q_params("b", 0.0297, 130 if b_type == np.uint8 else 3, b_type) + \
        q_params("y", 0.0611, y_zero_point)
    nodes = [helper.make_node("QuantizeLinear", ["a", "a_s", "a_z"], ["aq"]),
             helper.make_node("QuantizeLinear", ["b", "b_s", "b_z"], ["bq"]),
             helper.make_node("DequantizeLinear", ["aq", "a_s", "a_z"], ["ad"], name="dqa"),
             helper.make_node("DequantizeLinear", ["bq", "b_s", "b_z"], ["bd"], name="dqb"),
             helper.make_node("Add", ["ad", "bd"], ["sum"], name="add")]
    last = "sum"
    if relu:
        nodes.append(helper.make_node("Relu", ["sum"], ["relu"], name="relu"))
        last = "relu"
    nodes.append(helper.make_node("QuantizeLinear", [last, "y_s", "y_z"], ["y"], name="qy"))
    graph = helper.make_graph(nodes, "qdq_add", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 8, 5, 5]),
                                                 helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize("b_shape,relu", [([2, 8, 5, 5], False), ([2, 8, 5, 5], True), ([8, 1, 1], False)])
def test_add_group_becomes_qlinearadd(b_shape, relu):
    rng = np.random.default_rng(7)
    model = qdq_add_model(b_shape, relu=relu)
    feeds = {"a": (rng.standard_normal((2, 8, 5, 5)) * 3).astype(np.float32),
             "b": (rng.standard_normal(b_shape) * 3).astype(np.float32)}
    (got,), nodes, usage = run_events(model, feeds)
    assert op_types(nodes) == ["QuantizeLinear", "QuantizeLinear", "QLinearAdd"]
    assert nodes[2].op_domain == "ai.onnx_light.fused"
    assert set(nodes[2].covered_node_names) == {"dqa", "dqb", "add", "qy"} | ({"relu"} if relu else set())
    assert any(u.startswith("QLinearAdd/") for u in usage), usage
    assert_within_one_step(got, run_events(model, feeds, UNFUSED)[0][0])
    assert_within_one_step(got, ort_session_from(model).run(None, feeds)[0])


def test_add_of_mixed_types_is_left_as_written():
    rng = np.random.default_rng(8)
    model = qdq_add_model([2, 8, 5, 5], b_type=np.int8)
    feeds = {"a": rng.standard_normal((2, 8, 5, 5)).astype(np.float32),
             "b": rng.standard_normal((2, 8, 5, 5)).astype(np.float32)}
    (got,), nodes, _ = run_events(model, feeds)
    assert "Add" in op_types(nodes) and "QLinearAdd" not in op_types(nodes)
    np.testing.assert_array_equal(got, run_events(model, feeds, UNFUSED)[0][0])


GEMM_M, GEMM_K, GEMM_N = 6, 48, 40


def qdq_gemm_model(trans_b=True, per_channel=True, bias="matching", output="quantized", alpha=1.0, beta=1.0,
                   weight="constant", trans_a=False, weight_type=np.int8):
    """Q(a) -> DQ(a), DQ(W)[, DQ(B)] -> Gemm [-> Relu] [-> Q], as quantize_static writes a Linear layer.
    bias: "matching" (scale a_scale * w_scale), "other-scale" or None; output: "quantized", "relu"
    (a Relu before a QuantizeLinear with zero point 0), "relu-zp128" (the same with zero point 128)
    or "float" (the Gemm's output is the graph's); weight:
    "constant", "activation" (B quantized from an input) or "k-axis" (per channel along K)."""
    rng = np.random.default_rng(11)
    k, n = GEMM_K, GEMM_N
    a_s = np.float32(0.0437)
    w_shape = (n, k) if trans_b else (k, n)
    channel_axis = 0 if trans_b else 1
    channels = w_shape[1 - channel_axis] if weight == "k-axis" else n
    w_s = (rng.random(channels) * 0.02 + 0.005).astype(np.float32) if per_channel else np.float32(0.0123)
    w_z = np.full(np.shape(w_s), 0 if weight_type == np.int8 else 131, weight_type)
    inits = q_params("a", a_s, 120) + [numpy_helper.from_array(np.asarray(w_s), "w_s"),
                                       numpy_helper.from_array(w_z, "w_z")]
    if output != "float":
        inits += q_params("y", 0.271, 0 if output == "relu" else 128)
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [k, GEMM_M] if trans_a else [GEMM_M, k])]
    axis = {"axis": (1 - channel_axis) if weight == "k-axis" else channel_axis} if per_channel else {}
    if weight == "activation":
        nodes = [helper.make_node("QuantizeLinear", ["wf", "w_s", "w_z"], ["w"], **axis)]
        inputs.append(helper.make_tensor_value_info("wf", TensorProto.FLOAT, list(w_shape)))
    else:
        info = np.iinfo(weight_type)
        inits.append(numpy_helper.from_array(rng.integers(info.min + 1, info.max + 1, w_shape).astype(weight_type), "w"))
        nodes = []
    nodes += [helper.make_node("QuantizeLinear", ["a", "a_s", "a_z"], ["aq"]),
              helper.make_node("DequantizeLinear", ["aq", "a_s", "a_z"], ["ad"], name="dqa"),
              helper.make_node("DequantizeLinear", ["w", "w_s", "w_z"], ["wd"], name="dqw", **axis)]
    gemm_inputs = ["ad", "wd"]
    if bias is not None:
        factor = 1.5 if bias == "other-scale" else 1.0
        inits += [numpy_helper.from_array(rng.integers(-3000, 3000, n).astype(np.int32), "b"),
                  numpy_helper.from_array((a_s * np.asarray(w_s) * factor).astype(np.float32), "b_s"),
                  numpy_helper.from_array(np.zeros(np.shape(w_s), np.int32), "b_z")]
        nodes.append(helper.make_node("DequantizeLinear", ["b", "b_s", "b_z"], ["bd"], name="dqb", axis=0))
        gemm_inputs.append("bd")
    nodes.append(helper.make_node("Gemm", gemm_inputs, ["g"], name="gemm", transA=int(trans_a), transB=int(trans_b),
                                  alpha=alpha, beta=beta))
    last = "g"
    if output.startswith("relu"):
        nodes.append(helper.make_node("Relu", ["g"], ["r"], name="relu"))
        last = "r"
    if output == "float":
        outputs = [helper.make_tensor_value_info("g", TensorProto.FLOAT, None)]
    else:
        nodes.append(helper.make_node("QuantizeLinear", [last, "y_s", "y_z"], ["y"], name="qy"))
        outputs = [helper.make_tensor_value_info("y", TensorProto.UINT8, None)]
    graph = helper.make_graph(nodes, "qdq_gemm", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    feeds = {"a": (rng.standard_normal([k, GEMM_M] if trans_a else [GEMM_M, k]) * 2).astype(np.float32)}
    if weight == "activation":
        feeds["wf"] = (rng.standard_normal(w_shape) * 0.5).astype(np.float32)
    return model, feeds


def assert_gemm_results_agree(got, want, output):
    """Within one step for a quantized output; for a float one, within float32 rounding of the
    sum (the fused kernel sums the integers exactly)."""
    if output == "float":
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
    else:
        assert_within_one_step(got, want)


@pytest.mark.parametrize("output", ["quantized", "relu", "float"])
@pytest.mark.parametrize("bias", ["matching", None])
@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("trans_b", [True, False])
def test_gemm_group_becomes_qgemm(trans_b, per_channel, bias, output):
    # uint8 weights with a zero point on one of the layouts.
    weight_type = np.uint8 if not trans_b and not per_channel else np.int8
    model, feeds = qdq_gemm_model(trans_b, per_channel, bias, output, weight_type=weight_type)
    (got,), nodes, usage = run_events(model, feeds)
    assert op_types(nodes) == ["QuantizeLinear", "QGemm"], op_types(nodes)
    assert nodes[1].op_domain == "ai.onnx_light.fused"
    covered = {"dqa", "dqw", "gemm"} | ({"dqb"} if bias else set()) | \
        {"quantized": {"qy"}, "relu": {"relu", "qy"}, "float": set()}[output]
    assert set(nodes[1].covered_node_names) == covered
    suffix = "-float" if output == "float" else "-requant"
    assert any(u.startswith("QGemm/uint8/") and u.endswith("-prepacked" + suffix) for u in usage), usage
    (want,), plain_nodes, _ = run_events(model, feeds, UNFUSED)
    assert "Gemm" in op_types(plain_nodes)
    assert_gemm_results_agree(got, want, output)
    assert_gemm_results_agree(got, ort_session_from(model).run(None, feeds)[0], output)


@pytest.mark.parametrize("output", ["quantized", "float"])
def test_gemm_with_alpha_and_transposed_a_becomes_qgemm_when_beta_equals_alpha(output):
    """QGemm scales the biased accumulator by alpha: Gemm's alpha * AB + beta * C is that when beta = alpha."""
    model, feeds = qdq_gemm_model(trans_a=True, alpha=0.75, beta=0.75, output=output)
    (got,), nodes, _ = run_events(model, feeds)
    assert "QGemm" in op_types(nodes) and "Gemm" not in op_types(nodes)
    assert_gemm_results_agree(got, run_events(model, feeds, UNFUSED)[0][0], output)
    assert_gemm_results_agree(got, ort_session_from(model).run(None, feeds)[0], output)


@pytest.mark.parametrize("case", ["other-scale", "beta", "activation-weight", "k-axis"])
def test_gemm_groups_outside_the_pattern_are_left_as_written(case):
    # (No bias along K: it would need a scale per column.)
    model, feeds = qdq_gemm_model(bias={"other-scale": "other-scale", "k-axis": None}.get(case, "matching"),
                                  beta=0.5 if case == "beta" else 1.0,
                                  weight={"activation-weight": "activation", "k-axis": "k-axis"}.get(case, "constant"))
    (got,), nodes, _ = run_events(model, feeds)
    assert "Gemm" in op_types(nodes) and "QGemm" not in op_types(nodes), op_types(nodes)
    (want,), _, _ = run_events(model, feeds, UNFUSED)
    np.testing.assert_array_equal(got, want)
    assert_within_one_step(got, ort_session_from(model).run(None, feeds)[0])


def test_gemm_before_a_relu_that_does_not_fold_outputs_float():
    """With zero point 128 the QuantizeLinear does not clip at 0: the Relu stays, and QGemm gives
    it the float product."""
    model, feeds = qdq_gemm_model(output="relu-zp128")
    (got,), nodes, usage = run_events(model, feeds)
    assert op_types(nodes) == ["QuantizeLinear", "QGemm", "Relu", "QuantizeLinear"], op_types(nodes)
    assert any(u.startswith("QGemm/uint8/") and u.endswith("-float") for u in usage), usage
    assert_within_one_step(got, run_events(model, feeds, UNFUSED)[0][0])
    assert_within_one_step(got, ort_session_from(model).run(None, feeds)[0])


def test_gemm_keeps_a_dequantized_activation_another_node_reads():
    model, feeds = qdq_gemm_model()
    model.graph.output.append(helper.make_tensor_value_info("ad", TensorProto.FLOAT, None))
    (got, ad), nodes, _ = run_events(model, feeds)
    assert op_types(nodes) == ["QuantizeLinear", "DequantizeLinear", "QGemm"], op_types(nodes)
    assert set(nodes[2].covered_node_names) == {"dqw", "dqb", "gemm", "qy"}
    (want, plain_ad), _, _ = run_events(model, feeds, UNFUSED)
    np.testing.assert_array_equal(ad, plain_ad)
    assert_within_one_step(got, want)


def gemm_mlp_model(rng):
    """Two Linear layers as torch exports them: Gemm(transB=1) -> Relu -> Gemm(transB=1)."""
    w1 = (rng.standard_normal((32, 24)) * 0.3).astype(np.float32)
    b1 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((10, 32)) * 0.3).astype(np.float32)
    b2 = (rng.standard_normal(10) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 24])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])],
        initializer=[numpy_helper.from_array(a, n) for n, a in (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("per_channel", [False, True])
def test_quantize_static_gemm_mlp_fused_matches_the_written_graph(tmp_path, per_channel):
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from test_ops_quantization import _Calibration

    rng = np.random.default_rng(22)
    float_path, quant_path = tmp_path / "mlp.onnx", tmp_path / "mlp_qdq.onnx"
    onnx.save(gemm_mlp_model(rng), float_path)
    calibration = [rng.standard_normal((4, 24)).astype(np.float32) for _ in range(8)]
    quantize_static(str(float_path), str(quant_path), _Calibration(calibration), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=per_channel)
    quantized = onnx.load(quant_path)
    assert [n.op_type for n in quantized.graph.node].count("Gemm") == 2
    x = rng.standard_normal((4, 24)).astype(np.float32)
    (got,), nodes, usage = run_events(quantized, {"x": x})
    assert op_types(nodes).count("QGemm") == 2 and "Gemm" not in op_types(nodes), op_types(nodes)
    assert sum(u.startswith("QGemm/uint8/") for u in usage) == 2, usage
    (plain,), _, _ = run_events(quantized, {"x": x}, UNFUSED)
    # The output is dequantized: one step is the scale of the graph's last DequantizeLinear.
    last = quantized.graph.node[-1]
    assert last.op_type == "DequantizeLinear"
    step = float(numpy_helper.to_array(next(i for i in quantized.graph.initializer if i.name == last.input[1])))
    np.testing.assert_allclose(got, plain, rtol=0, atol=step * 1.001)
    np.testing.assert_allclose(got, ort_session(quant_path, False).run(None, {"x": x})[0], rtol=0, atol=step * 1.001)


# Operators that only move or select elements, with their extra inputs and attributes, on a
# [2, 3, 4, 5] activation.
MOVES = [
    ("Reshape", {"shape": np.array([6, -1], np.int64)}, {}),
    ("Transpose", {}, {"perm": [0, 2, 3, 1]}),
    ("Squeeze", {"axes": np.array([0], np.int64)}, {}),  # a [1, ...] input below
    ("Unsqueeze", {"axes": np.array([1], np.int64)}, {}),
    ("Flatten", {}, {"axis": 2}),
    ("Slice", {"starts": np.array([1, 0], np.int64), "ends": np.array([3, 4], np.int64),
               "axes": np.array([1, 3], np.int64)}, {}),
    ("Gather", {"indices": np.array([[3, 0], [-1, 1]], np.int64)}, {"axis": 2}),
    ("Expand", {"shape": np.array([3, 1, 1, 1, 1], np.int64)}, {}),
]


def qdq_move_model(op, extra, attrs, scale=0.037, zero_point=120, y_scale=None, dtype=np.uint8):
    """x -> Q -> DQ -> op -> Q(y_scale) -> DQ -> y, the pair around op as quantize_static writes it."""
    shape = [1, 3, 4, 5] if op == "Squeeze" else [2, 3, 4, 5]
    y_scale = scale if y_scale is None else y_scale
    inits = q_params("x", scale, zero_point, dtype) + q_params("y", y_scale, zero_point, dtype)
    inits += [numpy_helper.from_array(v, k) for k, v in extra.items()]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_z"], ["xq"], name="x_q"),
             helper.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"], name="x_dq"),
             helper.make_node(op, ["xd"] + list(extra), ["m"], name="move", **attrs),
             helper.make_node("QuantizeLinear", ["m", "y_s", "y_z"], ["mq"], name="m_q"),
             helper.make_node("DequantizeLinear", ["mq", "y_s", "y_z"], ["y"], name="m_dq")]
    graph = helper.make_graph(nodes, "qdq_move", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    feeds = {"x": (np.random.default_rng(3).standard_normal(shape) * 3).astype(np.float32)}
    return model, feeds


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("op,extra,attrs", MOVES, ids=[m[0] for m in MOVES])
def test_element_moves_between_a_matching_pair_run_on_quantized_values_exactly(op, extra, attrs, dtype):
    model, feeds = qdq_move_model(op, extra, attrs, zero_point=120 if dtype == np.uint8 else -7, dtype=dtype)
    (got,), nodes, usage = run_events(model, feeds)
    assert op_types(nodes) == ["QuantizeLinear", op, "DequantizeLinear"], op_types(nodes)
    moved = next(e for e in nodes if e.op_type == op)
    assert sorted(moved.covered_node_names) == ["m_q", "move", "x_dq"]
    (plain,), unfused_nodes, _ = run_events(model, feeds, UNFUSED)
    assert op_types(unfused_nodes).count("QuantizeLinear") == 2
    np.testing.assert_array_equal(got, plain)  # exact, not within a step


@pytest.mark.parametrize("case", ["other-scale", "zero-scale", "subnormal-scale"])
def test_element_moves_without_an_exact_round_trip_are_left_as_written(case):
    scale, y_scale = {"other-scale": (0.037, 0.05), "zero-scale": (0.0, 0.0),
                      "subnormal-scale": (1e-40, 1e-40)}[case]
    op, extra, attrs = MOVES[1]
    model, feeds = qdq_move_model(op, extra, attrs, scale=scale, y_scale=y_scale)
    (got,), nodes, _ = run_events(model, feeds)
    assert op_types(nodes).count("QuantizeLinear") == 2, op_types(nodes)
    (plain,), _, _ = run_events(model, feeds, UNFUSED)
    np.testing.assert_array_equal(got, plain)


@pytest.mark.parametrize("reader", ["Shape", "Size"])
def test_a_shape_left_alone_with_a_dequantized_value_reads_the_quantized_one(reader):
    """x -> Q -> DQ -> Transpose -> Q -> DQ -> y, and Shape(DQ) beside the Transpose (as a
    transformer's head reshapes write it): the Transpose runs on the quantized values, then the
    Shape reads them too and the first DequantizeLinear is not run at all."""
    model, feeds = qdq_move_model(*MOVES[1])
    graph = model.graph
    graph.node.append(helper.make_node(reader, ["xd"], ["dims"], name="dims_of_xd"))
    graph.output.append(helper.make_tensor_value_info("dims", TensorProto.INT64, None))
    (got, dims), nodes, _ = run_events(model, feeds)
    assert op_types(nodes) == ["QuantizeLinear", "Transpose", "DequantizeLinear", reader], op_types(nodes)
    shape_node = next(e for e in nodes if e.op_type == reader)
    assert sorted(shape_node.covered_node_names) == ["dims_of_xd", "x_dq"]
    (plain, plain_dims), _, _ = run_events(model, feeds, UNFUSED)
    np.testing.assert_array_equal(got, plain)
    np.testing.assert_array_equal(dims, plain_dims)
    np.testing.assert_array_equal(dims, [2, 3, 4, 5] if reader == "Shape" else 120)
