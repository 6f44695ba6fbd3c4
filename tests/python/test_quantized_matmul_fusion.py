"""Weight-only fusion (RuntimeSessionOptions.fuse_quantized_matmul, docs/quantization.md):
MatMul, Gemm or Conv(A, DequantizeLinear(constant int4/uint4/int8/uint8 W)) runs as one kernel
over the packed weights,
with the written graph's result up to the order of the float sums (the weights it multiplies
are bitwise DequantizeLinear's), checked against onnx.reference, ORT and the pass switched off;
a 4-bit decoder decodes through PersistentValueState in step with ORT."""

import logging
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime
from node_check import assert_close, run_ours, run_reference
from onnx_light import decoder_model
from test_graph_passes import run_events

UNFUSED = runtime.RuntimeSessionOptions(fuse_quantized_matmul=False)


def weights_model(k, n, m, signed=True, zero_point=True, block_size=32, axis=0, scale_shape=None, opset=21,
                  extra_nodes=(), extra_outputs=(), weight_input=False, seed=0, bits=4, gemm=None):
    """A [m, k] x DequantizeLinear(W[k, n]) model; W, scale and zero point are initializers. With
    `gemm` (a dict of Gemm attributes, plus "bias": C's shape) the product is a Gemm; with its
    transB W is [n, k] and `axis` / `scale_shape` must say so."""
    rng = np.random.default_rng(seed)
    half = 1 << (bits - 1)
    lo, hi = (-half, half) if signed else (0, 2 * half)
    elem = {(4, True): TensorProto.INT4, (4, False): TensorProto.UINT4,
            (8, True): TensorProto.INT8, (8, False): TensorProto.UINT8}[bits, signed]
    gemm = dict(gemm or {})
    bias_shape = gemm.pop("bias", None)
    w_shape = [n, k] if gemm.get("transB") else [k, n]
    if scale_shape is None:
        scale_shape = [-(-k // block_size), n] if block_size else [n]
    scale = (rng.random(scale_shape) * 0.1 + 0.01).astype(np.float32)
    inits = [numpy_helper.from_array(scale, "s")]
    if not weight_input:
        inits.append(helper.make_tensor("w", elem, w_shape, rng.integers(lo, hi, w_shape).flatten().tolist()))
    ins = ["w", "s"]
    if zero_point:
        inits.append(helper.make_tensor("z", elem, scale_shape, rng.integers(lo, hi, scale_shape).flatten().tolist()))
        ins.append("z")
    attrs = {"axis": axis}
    if block_size:
        attrs["block_size"] = block_size
    product = helper.make_node("MatMul", ["a", "wd"], ["y"], name="mm")
    if gemm or bias_shape is not None:
        c = []
        if bias_shape is not None:
            inits.append(numpy_helper.from_array(rng.standard_normal(bias_shape).astype(np.float32), "c"))
            c = ["c"]
        product = helper.make_node("Gemm", ["a", "wd", *c], ["y"], name="gemm", **gemm)
    nodes = [helper.make_node("DequantizeLinear", ins, ["wd"], name="dq", **attrs), product, *extra_nodes]
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])]
    if weight_input:
        inputs.append(helper.make_tensor_value_info("w", elem, w_shape))
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in ("y", *extra_outputs)]
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def feeds_for(model, m, k, seed=1):
    return {"a": np.random.default_rng(seed).standard_normal((m, k)).astype(np.float32)}


def fused(nodes):
    return [e for e in nodes if e.op_domain == "ai.onnx_light.fused"]


@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("block_size", [32, 128])
@pytest.mark.parametrize("zero_point", [True, False])
@pytest.mark.parametrize("k,n", [(256, 96), (200, 37), (77, 65)])
@pytest.mark.parametrize("m", [1, 3, 64])
def test_blocked_weights_match_reference_and_unfused(signed, block_size, zero_point, k, n, m):
    model = weights_model(k, n, m, signed, zero_point, block_size)
    feeds = feeds_for(model, m, k)
    got, nodes, usage = run_events(model, feeds)
    want = run_reference(model, feeds)
    # Bitwise the same weights, summed in another order: the error bound of a K-term dot product.
    bound = 1e-6 * np.abs(feeds["a"]) @ np.ones((k, n), np.float32) * 0.2 * 16
    np.testing.assert_array_less(np.abs(got[0] - want[0]), bound + 1e-6)
    unfused, unfused_nodes, _ = run_events(model, feeds, UNFUSED)
    np.testing.assert_array_less(np.abs(got[0] - unfused[0]), bound + 1e-6)
    assert not fused(unfused_nodes)
    assert [(e.op_domain, e.op_type) for e in nodes] == [("ai.onnx_light.fused", "QuantizedMatMul")]
    assert list(nodes[0].covered_node_indices) == [0, 1]
    kind = "int4" if signed else "uint4"
    path = "gemv" if m <= 8 else "dequant-panel"
    assert [u for u in usage if u.startswith("MatMul/")][0].startswith(f"MatMul/float32/{kind}-{path}-"), usage


@pytest.mark.parametrize("block_size,axis,scale_shape", [(0, 1, [40]), (0, 1, []), (0, 1, [1]), (16, -2, None)])
def test_per_column_per_tensor_and_negative_axis(block_size, axis, scale_shape):
    model = weights_model(48, 40, 2, signed=False, zero_point=True, block_size=block_size, axis=axis,
                          scale_shape=scale_shape)
    feeds = feeds_for(model, 2, 48)
    got, nodes, _ = run_events(model, feeds)
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=1e-5)
    assert len(fused(nodes)) == 1


def test_matches_onnxruntime():
    model = weights_model(160, 72, 3, signed=True, zero_point=True, block_size=32)
    feeds = feeds_for(model, 3, 160)
    got, _, _ = run_events(model, feeds)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)
    assert_close(got, want, rtol=1e-5, atol=1e-5)


def ort_unoptimised(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def product_bound(a, k, n, bits):
    """The error bound of a K-term dot product of a with weights of at most 2^bits * 0.11."""
    return 1e-6 * np.abs(a) @ np.ones((k, n), np.float32) * 0.11 * (1 << bits) + 1e-6


@pytest.mark.parametrize("signed", [True, False])
@pytest.mark.parametrize("block_size", [0, 32])
@pytest.mark.parametrize("zero_point", [True, False])
@pytest.mark.parametrize("k,n", [(256, 96), (77, 65)])
@pytest.mark.parametrize("m", [1, 3, 64])
def test_8bit_weights_match_reference_ort_and_unfused(signed, block_size, zero_point, k, n, m):
    model = weights_model(k, n, m, signed, zero_point, block_size, axis=0 if block_size else 1, bits=8)
    feeds = feeds_for(model, m, k)
    got, nodes, usage = run_events(model, feeds)
    bound = product_bound(feeds["a"], k, n, 8)
    np.testing.assert_array_less(np.abs(got[0] - run_reference(model, feeds)[0]), bound)
    np.testing.assert_array_less(np.abs(got[0] - ort_unoptimised(model, feeds)[0]), bound)
    unfused, unfused_nodes, _ = run_events(model, feeds, UNFUSED)
    np.testing.assert_array_less(np.abs(got[0] - unfused[0]), bound)
    assert not fused(unfused_nodes)
    assert [(e.op_domain, e.op_type) for e in nodes] == [("ai.onnx_light.fused", "QuantizedMatMul")]
    kind = "int8" if signed else "uint8"
    path = "gemv" if m <= 8 else "dequant-panel"
    assert [u for u in usage if u.startswith("MatMul/")][0].startswith(f"MatMul/float32/{kind}-{path}-"), usage


@pytest.mark.parametrize("opset,scale_shape,fuses", [(10, [], True), (13, [], True), (13, [24], True),
                                                     (10, [24], False)])
def test_8bit_weights_at_the_versions_that_define_them(opset, scale_shape, fuses):
    """DequantizeLinear-10 has one scale; a scale per axis comes with version 13; blocks with 21."""
    model = weights_model(40, 24, 2, signed=False, block_size=0, axis=1, scale_shape=scale_shape, opset=opset,
                          bits=8)
    if opset < 13:
        del model.graph.node[0].attribute[:]  # no axis attribute before version 13
    feeds = feeds_for(model, 2, 40)
    if fuses:
        got, nodes, _ = run_events(model, feeds)
        assert len(fused(nodes)) == 1
        # onnx.reference has no DequantizeLinear before version 19: ORT as written is the oracle.
        want = ort_unoptimised(model, feeds)[0]
        np.testing.assert_array_less(np.abs(got[0] - want), product_bound(feeds["a"], 40, 24, 8))
    else:
        # As written: DequantizeLinear-10 refuses a scale of more than one value.
        with pytest.raises(runtime.InvalidArgumentError, match="DequantizeLinear"):
            run_events(model, feeds)


GEMM_CASES = [
    # bits, Gemm attributes (and C's shape), block size
    (4, {"transB": 1}, 32), (4, {"bias": [24]}, 32), (4, {"transB": 1, "bias": [1, 24]}, 0),
    (8, {"transB": 1, "bias": [24]}, 0), (8, {"transB": 0, "bias": []}, 16), (8, {"transB": 1, "bias": [1]}, 16),
    (8, {"alpha": 1.0, "beta": 1.0, "bias": [24]}, 0),
]


@pytest.mark.parametrize("bits,gemm,block_size", GEMM_CASES)
@pytest.mark.parametrize("m", [1, 20])
def test_gemm_weights_match_reference_ort_and_unfused(bits, gemm, block_size, m):
    k, n = 96, 24
    trans_b = gemm.get("transB", 0)
    if block_size:
        axis, scale_shape = (1, [n, k // block_size]) if trans_b else (0, [k // block_size, n])
    else:
        axis, scale_shape = (0 if trans_b else 1), [n]
    model = weights_model(k, n, m, signed=bits == 8, block_size=block_size, axis=axis, scale_shape=scale_shape,
                          bits=bits, gemm=gemm)
    feeds = feeds_for(model, m, k)
    got, nodes, usage = run_events(model, feeds)
    bound = product_bound(feeds["a"], k, n, bits)
    np.testing.assert_array_less(np.abs(got[0] - run_reference(model, feeds)[0]), bound)
    np.testing.assert_array_less(np.abs(got[0] - ort_unoptimised(model, feeds)[0]), bound)
    np.testing.assert_array_less(np.abs(got[0] - run_events(model, feeds, UNFUSED)[0][0]), bound)
    assert [(e.op_domain, e.op_type) for e in nodes] == [("ai.onnx_light.fused", "QuantizedGemm")]
    kind = "int8" if bits == 8 else "uint4"
    path = "gemv" if m <= 8 else "dequant-panel"
    assert [u for u in usage if u.startswith("Gemm/")][0].startswith(f"Gemm/float32/{kind}-{path}-"), usage


@pytest.mark.parametrize("gemm", [{"alpha": 2.0}, {"beta": 0.5, "bias": [24]}, {"transA": 1}, {"bias": [20, 24]},
                                  {"bias": [20, 1]}])
def test_gemm_left_as_written_when_the_kernel_does_not_compute_it(gemm):
    k, n, m = 40, 24, 20
    model = weights_model(k, n, m, bits=8, block_size=0, axis=1, scale_shape=[n], gemm=gemm)
    if gemm.get("transA"):
        model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = k
        model.graph.input[0].type.tensor_type.shape.dim[1].dim_value = m
    feeds = {"a": np.random.default_rng(1).standard_normal((k, m) if gemm.get("transA") else (m, k))
             .astype(np.float32)}
    got, nodes, _ = run_events(model, feeds)
    assert not fused(nodes)
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=1e-5)


def test_gemm_bias_from_an_input_left_as_written():
    model = weights_model(40, 24, 3, bits=8, block_size=0, axis=1, scale_shape=[24], gemm={"bias": [24]})
    # The bias becomes a graph input.
    model.graph.initializer.remove(next(t for t in model.graph.initializer if t.name == "c"))
    model.graph.input.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, [24]))
    feeds = {**feeds_for(model, 3, 40), "c": np.arange(24, dtype=np.float32)}
    got, nodes, _ = run_events(model, feeds)
    assert not fused(nodes)
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=1e-5)


def test_gemm_a_of_rank_3_names_the_node():
    model = weights_model(40, 24, 3, bits=8, block_size=0, axis=1, scale_shape=[24], gemm={"bias": [24]})
    model.graph.input[0].type.tensor_type.ClearField("shape")
    a = np.zeros((2, 3, 40), np.float32)
    with pytest.raises(runtime.InvalidArgumentError, match=r"QuantizedGemm.*must be 2-D for Gemm"):
        run_events(model, {"a": a})
    # As written, Gemm refuses it too.
    with pytest.raises(runtime.InvalidArgumentError, match="Gemm"):
        run_events(model, {"a": a}, UNFUSED)


def test_portable_loops_give_the_same_products():
    """ONNX_LIGHT_DISABLE_AVX2=1 selects the portable reference loop (a fresh process: the choice
    is made once)."""
    code = (
        "import numpy as np, onnx_light.runtime as rt, sys\n"
        "sys.path.insert(0, %r)\n"
        "from test_quantized_matmul_fusion import weights_model, feeds_for\n"
        "m = weights_model(100, 70, 3, block_size=32)\n"
        "ctx = rt.RuntimeContext(rt.KernelContext(rt.default_opset(21)))\n"
        "ctx.set_kernel_usage_enabled(True)\n"
        "y = np.asarray(rt.RuntimeSession(m).run(ctx, {k: v for k, v in feeds_for(m, 3, 100).items()})['y'])\n"
        "np.save(sys.argv[1], y)\n"
        "print(ctx.get_kernel_usage())\n" % os.path.dirname(os.path.abspath(__file__)))
    out = {}
    for name, env in (("scalar", {"ONNX_LIGHT_DISABLE_AVX2": "1"}), ("avx2", {"ONNX_LIGHT_DISABLE_AVX512": "1"}),
                      ("best", {})):
        path = f"/tmp/qmm_{os.getpid()}_{name}.npy"
        proc = subprocess.run([sys.executable, "-c", code, path], env={**os.environ, **env}, capture_output=True,
                              text=True, check=True)
        if name != "best":
            assert f"gemv-{name}" in proc.stdout, proc.stdout
        out[name] = np.load(path)
        os.remove(path)
    model = weights_model(100, 70, 3, block_size=32)
    want = run_reference(model, feeds_for(model, 3, 100))[0]
    for name, y in out.items():
        assert_close(y, want, rtol=1e-5, atol=1e-5, name=name)


def test_not_fused_when_it_must_not():
    # The weight is a graph input (not constant).
    model = weights_model(64, 32, 1, weight_input=True)
    w = helper.make_tensor("w", TensorProto.INT4, [64, 32], [1] * (64 * 32))
    feeds = feeds_for(model, 1, 64)
    feeds["w"] = onnx.numpy_helper.to_array(w)
    got, nodes, _ = run_events(model, feeds)
    assert not fused(nodes)
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=1e-5)
    # The dequantized weight has another reader / is a graph output.
    other = helper.make_node("Identity", ["wd"], ["wd_copy"])
    for extra_nodes, extra_outputs in (([other], ["wd_copy"]), ([], ["wd"])):
        model = weights_model(64, 32, 1, extra_nodes=extra_nodes, extra_outputs=extra_outputs)
        feeds = feeds_for(model, 1, 64)
        got, nodes, _ = run_events(model, feeds)
        assert not fused(nodes)
        assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=1e-5)
    # Blocked along N (axis 1) is not a layout the kernel takes.
    model = weights_model(64, 64, 1, block_size=32, axis=1, scale_shape=[64, 2])
    got, nodes, _ = run_events(model, feeds_for(model, 1, 64))
    assert not fused(nodes)
    # Switched off.
    model = weights_model(64, 32, 1)
    _, nodes, _ = run_events(model, feeds_for(model, 1, 64), UNFUSED)
    assert not fused(nodes)


def test_wrong_activation_width_names_the_node():
    model = weights_model(64, 32, 1)
    model.graph.input[0].type.tensor_type.ClearField("shape")
    with pytest.raises(runtime.InvalidArgumentError, match=r"QuantizedMatMul.*last axis must be 64"):
        run_events(model, feeds_for(model, 1, 48))


def test_option_defaults_on():
    assert runtime.RuntimeSessionOptions().fuse_quantized_matmul
    options = runtime.RuntimeSessionOptions()
    options.fuse_quantized_matmul = False
    assert not options.fuse_quantized_matmul


# ---- a 4-bit decoder through PersistentValueState ---------------------------------------------------

LAYERS, HEADS, HEAD = 2, 4, 32
STORAGE = runtime.RuntimeEventAction.kPersistentStorage


def ort_quantized_decoder(block_size, symmetric):
    logging.disable(logging.INFO)
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    model = decoder_model.build_decoder(layers=LAYERS, heads=HEADS, head_size=HEAD)
    quantizer = MatMulNBitsQuantizer(model, block_size=block_size, is_symmetric=symmetric,
                                     quant_format=QuantFormat.QDQ)
    quantizer.process()
    return quantizer.model.model


def decode(model, steps, level):
    """ORT's outputs per step at graph optimisation `level`, past fed back by hand."""
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    feeds = decoder_model.empty_cache(LAYERS, HEADS, HEAD)
    rng = np.random.default_rng(3)
    ys = []
    for _ in range(steps):
        feeds["x"] = rng.standard_normal((1, 1, HEADS * HEAD)).astype(np.float32)
        outs = dict(zip(names, sess.run(None, feeds)))
        feeds.update({past: outs[present] for past, present in decoder_model.bindings(LAYERS).items()})
        ys.append(outs["y"])
    return ys


@pytest.mark.parametrize("source", ["ort-uint4-zp", "ort-int4", "ours-int4", "ours-uint4-zp"])
@pytest.mark.parametrize("block_size", [32, 128])
def test_quantized_decoder_matches_ort_step_by_step(source, block_size):
    if source.startswith("ort"):
        model = ort_quantized_decoder(block_size, symmetric=source == "ort-int4")
    else:
        base = decoder_model.build_decoder(layers=LAYERS, heads=HEADS, head_size=HEAD)
        model = decoder_model.quantize_weights_4bit(base, block_size, signed=source == "ours-int4",
                                                    zero_points=source.endswith("zp"))
    steps = 32
    exact = decode(model, steps, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)  # DequantizeLinear + MatMul
    nbits = decode(model, steps, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)  # ORT's MatMulNBits
    declared = runtime.with_persistent_bindings(model, decoder_model.bindings(LAYERS))
    state = runtime.PersistentValueState(declared, initial=decoder_model.empty_cache(LAYERS, HEADS, HEAD))
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    ctx.set_kernel_usage_enabled(True)
    rng = np.random.default_rng(3)
    for step in range(steps):
        y = np.asarray(state.run(ctx, {"x": rng.standard_normal((1, 1, HEADS * HEAD)).astype(np.float32)})["y"])
        np.testing.assert_allclose(y, exact[step], rtol=1e-4, atol=1e-4, err_msg=f"step {step}")
        # ORT's fused MatMulNBits computes differently (its own block sums); it agrees loosely.
        np.testing.assert_allclose(y, nbits[step], rtol=0.05, atol=0.2, err_msg=f"step {step} vs MatMulNBits")
    usage = set(ctx.get_kernel_usage())
    assert any(u.startswith("MatMul/float32/") and "4-gemv-" in u for u in usage), usage
    assert "Attention/float32/persistent-append" in usage
    assert not any(u.startswith("DequantizeLinear") for u in usage), usage
    storage = [e for e in ctx.events() if e.action == STORAGE]
    # The cache is appended in place: 32 steps fit the initial capacity (32 rows), so no step
    # copied a prefix and every step reused the buffers.
    assert storage and sum(e.storage_prefix_copied_bytes for e in storage) == 0
    assert sum(e.storage_reuse_count for e in storage) > 0


@pytest.mark.parametrize("source", ["ort-uint4-zp", "ort-int4", "ours-int4"])
@pytest.mark.parametrize("block_size", [32, 128])
def test_int8_activations_track_matmulnbits_step_by_step(source, block_size):
    """quantize_matmul_activations: A is rounded to int8 per block as ORT's MatMulNBits rounds it
    at accuracy level 4, so ours lands at least as close to ORT's fused result as to the written
    graph. Without AVX-512 VNNI the option changes nothing: the float loops run."""
    if source.startswith("ort"):
        model = ort_quantized_decoder(block_size, symmetric=source == "ort-int4")
    else:
        base = decoder_model.build_decoder(layers=LAYERS, heads=HEADS, head_size=HEAD)
        model = decoder_model.quantize_weights_4bit(base, block_size, signed=True, zero_points=False)
    steps = 32
    exact = decode(model, steps, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    nbits = decode(model, steps, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    declared = runtime.with_persistent_bindings(model, decoder_model.bindings(LAYERS))
    options = runtime.RuntimeSessionOptions(quantize_matmul_activations=True)
    assert options.quantize_matmul_activations and not runtime.RuntimeSessionOptions().quantize_matmul_activations
    state = runtime.PersistentValueState(declared, initial=decoder_model.empty_cache(LAYERS, HEADS, HEAD),
                                         options=options)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    rng = np.random.default_rng(3)
    ys = [np.asarray(state.run(ctx, {"x": rng.standard_normal((1, 1, HEADS * HEAD)).astype(np.float32)})["y"])
          for _ in range(steps)]
    usage = {u for u in ctx.get_kernel_usage() if u.startswith("MatMul/")}
    if not any(u.endswith("-gemv-avx512vnni-a8") for u in usage):
        assert all("4-gemv-" in u for u in usage), usage
        for step, y in enumerate(ys):
            np.testing.assert_allclose(y, exact[step], rtol=1e-4, atol=1e-4, err_msg=f"step {step}")
        return
    to_exact = max(float(np.abs(y - e).max()) for y, e in zip(ys, exact))
    to_nbits = max(float(np.abs(y - n).max()) for y, n in zip(ys, nbits))
    assert 0.0 < to_exact < 0.2, to_exact  # A's rounding shows, within a few percent of |y| (about 6)
    assert to_nbits <= to_exact, (to_nbits, to_exact)


@pytest.mark.parametrize("gemm", [None, {"transB": 1}])
def test_int8_activations_leave_nan_and_infinity_to_the_float_loops(gemm):
    """A row of A with a NaN or an infinity cannot be rounded to 8 bits: the product runs the
    float loops, so it equals the product without the option, NaN for NaN."""
    model = weights_model(128, 48, 3, block_size=32, gemm=gemm, axis=1 if gemm else 0,
                          scale_shape=[48, 4] if gemm else None)
    on = runtime.RuntimeSessionOptions(quantize_matmul_activations=True)
    off = runtime.RuntimeSessionOptions()
    for bad in (np.nan, np.inf):
        feeds = feeds_for(model, 3, 128)
        feeds["a"][1, 70] = bad
        y_on = run_ours(model, feeds, options=on)[0]
        y_off = run_ours(model, feeds, options=off)[0]
        assert np.isnan(y_on[1]).any() or np.isinf(y_on[1]).any()
        np.testing.assert_array_equal(y_on, y_off)
    # Finite A: the option moves results only by A's rounding, a small part of their scale.
    feeds = feeds_for(model, 3, 128)
    y_on, y_off = run_ours(model, feeds, options=on)[0], run_ours(model, feeds, options=off)[0]
    assert np.abs(y_on - y_off).max() <= 0.02 * np.abs(y_off).max()


# ---- weight-only Conv ------------------------------------------------------------------------------

def conv_model(x_shape, w_shape, bits=8, signed=True, per_channel=True, zero_point=True, bias=True, opset=21,
               x_from_dequantize=False, seed=0, **conv_attrs):
    """Conv(x, DequantizeLinear(W)[, B]) with W, its scale and zero point as initializers."""
    rng = np.random.default_rng(seed)
    half = 1 << (bits - 1)
    lo, hi = (-half, half) if signed else (0, 2 * half)
    elem = {(4, True): TensorProto.INT4, (4, False): TensorProto.UINT4,
            (8, True): TensorProto.INT8, (8, False): TensorProto.UINT8}[bits, signed]
    m = w_shape[0]
    scale_shape = [m] if per_channel else []
    inits = [helper.make_tensor("w", elem, w_shape, rng.integers(lo, hi, w_shape).flatten().tolist()),
             numpy_helper.from_array((rng.random(scale_shape) * 0.05 + 0.01).astype(np.float32), "s")]
    ins = ["w", "s"]
    if zero_point:
        inits.append(helper.make_tensor("z", elem, scale_shape, rng.integers(lo, hi, scale_shape).flatten().tolist()))
        ins.append("z")
    conv_ins = ["x", "wd"]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(m).astype(np.float32), "b"))
        conv_ins.append("b")
    nodes = [helper.make_node("DequantizeLinear", ins, ["wd"], name="dq", axis=0),
             helper.make_node("Conv", conv_ins, ["y"], name="conv", **conv_attrs)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    if x_from_dequantize:
        nodes[1].input[0] = "xd"
        inits += [numpy_helper.from_array(np.float32(0.05), "xs"), numpy_helper.from_array(np.uint8(128), "xz")]
        nodes.insert(0, helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xd"], name="dqx"))
        inputs = [helper.make_tensor_value_info("x", TensorProto.UINT8, x_shape)]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


CONV_CASES = [
    # x shape, w shape, Conv attributes
    ([1, 8, 15, 15], [16, 8, 3, 3], {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ([2, 6, 12, 10], [5, 6, 3, 2], {"dilations": [2, 1], "pads": [0, 1, 2, 0]}),
    ([1, 32, 7, 7], [24, 32, 1, 1], {}),  # pointwise: the image is its own columns
    ([1, 300, 5, 5], [7, 300, 1, 1], {"strides": [2, 2]}),  # K over one panel
    ([2, 4, 9, 9], [3, 4, 3, 3], {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ([1, 4, 20], [6, 4, 5], {"pads": [2, 2]}),  # 1-D
    ([1, 2, 5, 6, 4], [3, 2, 2, 3, 2], {}),  # 3-D
]


@pytest.mark.parametrize("bits,signed", [(8, True), (8, False), (4, True), (4, False)])
@pytest.mark.parametrize("x_shape,w_shape,attrs", CONV_CASES)
def test_conv_weights_match_reference_ort_and_unfused(bits, signed, x_shape, w_shape, attrs):
    model = conv_model(x_shape, w_shape, bits, signed, per_channel=len(x_shape) != 3, **attrs)
    feeds = {"x": np.random.default_rng(1).standard_normal(x_shape).astype(np.float32)}
    got, nodes, usage = run_events(model, feeds)
    assert [(e.op_domain, e.op_type) for e in nodes] == [("ai.onnx_light.fused", "QuantizedConv")]
    assert list(nodes[0].covered_node_indices) == [0, 1]
    kind = ("int" if signed else "uint") + str(bits)
    assert any(u.startswith(f"Conv/float32/{kind}-dequant-panel-") for u in usage), usage
    k = int(np.prod(w_shape[1:]))
    # The same weights summed in another order: the bound of a K-term dot product of |x| |w|.
    bound = 1e-6 * k * float(np.abs(feeds["x"]).max()) * 0.06 * (1 << bits) + 1e-5
    for want in (run_reference(model, feeds)[0], ort_unoptimised(model, feeds)[0],
                 run_events(model, feeds, UNFUSED)[0][0]):
        assert got[0].shape == want.shape
        np.testing.assert_array_less(np.abs(got[0] - want), bound)


@pytest.mark.parametrize("zero_point,bias,per_channel", [(False, False, True), (True, False, False),
                                                         (False, True, False)])
def test_conv_without_zero_point_bias_or_channel_scales(zero_point, bias, per_channel):
    model = conv_model([1, 3, 8, 8], [4, 3, 3, 3], zero_point=zero_point, bias=bias, per_channel=per_channel)
    feeds = {"x": np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)}
    got, nodes, _ = run_events(model, feeds)
    assert len(fused(nodes)) == 1
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=1e-4)


def test_conv_left_as_written_when_the_kernel_does_not_take_it():
    feeds = {"x": np.random.default_rng(3).standard_normal((1, 4, 6, 6)).astype(np.float32)}
    # Grouped.
    model = conv_model([1, 4, 6, 6], [4, 2, 3, 3], group=2)
    got, nodes, _ = run_events(model, feeds)
    assert not fused(nodes)
    assert_close(got, run_reference(model, feeds), rtol=1e-5, atol=1e-4)
    # Switched off.
    model = conv_model([1, 4, 6, 6], [5, 4, 3, 3])
    _, nodes, _ = run_events(model, feeds, UNFUSED)
    assert not fused(nodes)
    # A quantized X: a QDQ group's Conv, left to fuse_qdq (here without a QuantizeLinear after it,
    # so it runs as written).
    model = conv_model([1, 4, 6, 6], [5, 4, 3, 3], x_from_dequantize=True)
    x8 = {"x": np.random.default_rng(4).integers(0, 256, (1, 4, 6, 6)).astype(np.uint8)}
    got, nodes, _ = run_events(model, x8)
    assert not fused(nodes)
    assert_close(got, run_reference(model, x8), rtol=1e-5, atol=1e-4)


def test_conv_errors_name_the_node():
    model = conv_model([1, 4, 6, 6], [5, 4, 3, 3])
    model.graph.input[0].type.tensor_type.ClearField("shape")
    with pytest.raises(runtime.InvalidArgumentError, match=r"QuantizedConv.*expected \[N, 4, \.\.\.\]"):
        run_events(model, {"x": np.zeros((1, 3, 6, 6), np.float32)})
    model = conv_model([1, 4, 6, 6], [5, 4, 3, 3], kernel_shape=[2, 2])
    with pytest.raises(runtime.InvalidArgumentError, match="kernel_shape"):
        run_events(model, {"x": np.zeros((1, 4, 6, 6), np.float32)})
