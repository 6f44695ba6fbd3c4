"""Build one-node (or small) ONNX models and compare our runtime with onnx.reference / ORT.

Every operator test uses these helpers:

    check_node("Add", {"a": x, "b": y})                      # vs onnx.reference
    check_node("Softmax", {"x": x}, {"axis": -1}, reference="ort")
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime

OPSET = 23


def tensor_type(array: np.ndarray) -> int:
    return helper.np_dtype_to_tensor_dtype(array.dtype)


def make_model(
    nodes,
    inputs: dict[str, np.ndarray],
    outputs: list[str] | dict[str, int | None],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = OPSET,
    extra_opsets: dict[str, int] | None = None,
    functions=None,
    output_shapes: bool = False,
) -> onnx.ModelProto:
    """A model whose graph inputs are typed from `inputs` and whose outputs are untyped."""
    graph_inputs = [helper.make_tensor_value_info(n, tensor_type(a), a.shape) for n, a in inputs.items()]
    if isinstance(outputs, dict):
        graph_outputs = [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()]
    else:
        graph_outputs = [helper.make_value_info(n, onnx.TypeProto()) for n in outputs]
    inits = [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()]
    graph = helper.make_graph(nodes, "test", graph_inputs, graph_outputs, initializer=inits)
    opsets = [helper.make_opsetid("", opset)]
    for domain, version in (extra_opsets or {}).items():
        opsets.append(helper.make_opsetid(domain, version))
    model = helper.make_model(graph, opset_imports=opsets, functions=functions or [])
    model.ir_version = 10
    return model


def node_model(op_type, inputs, attrs=None, n_outputs=1, opset=OPSET, initializers=None, domain=""):
    """A model with a single node whose inputs are graph inputs (or initializers) in order."""
    names = list(inputs) + list(initializers or {})
    outputs = [f"y{i}" for i in range(n_outputs)]
    node = helper.make_node(op_type, names, outputs, domain=domain, **(attrs or {}))
    return make_model([node], inputs, outputs, initializers=initializers, opset=opset)


SUB_BYTE_DTYPES = frozenset(
    np.dtype(getattr(ml_dtypes, name))
    for name in ("int4", "uint4", "int2", "uint2", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
)


def as_feed(value):
    """A feed for our runtime: NumPy keeps sub-byte types one element per byte, so those arrays
    are packed explicitly (runtime.Tensor.pack, a copy); everything else is passed as it is."""
    if isinstance(value, list):
        return [as_feed(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype in SUB_BYTE_DTYPES:
        return runtime.Tensor.pack(value)
    return value


def run_ours(model, feeds, context=None, options=None):
    ctx = context or runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    session = runtime.RuntimeSession(model, options)
    out = session.run(ctx, {name: as_feed(value) for name, value in feeds.items()})
    return [_to_numpy(out[o.name]) for o in model.graph.output]


def _to_numpy(value):
    if isinstance(value, list):
        return [_to_numpy(v) for v in value]
    if value is None:
        return None
    return value.numpy()


def usage_of(model, feeds=None):
    """The kernel usage names our run of `model` records."""
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    run_ours(model, feeds or {}, context=ctx)
    return ctx.get_kernel_usage()


def run_traced(model, feeds, options):
    """(outputs, kernel usage, [(name, op_type, covered node names)] of the run_node events) of one
    run of `model` built with session `options`, events and kernel usage on."""
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    ctx.set_kernel_usage_enabled(True)
    outputs = run_ours(model, feeds, context=ctx, options=options)
    nodes = [(e.name, e.op_type, list(e.covered_node_names)) for e in ctx.events()
             if e.action == runtime.RuntimeEventAction.kRunNode]
    return outputs, ctx.get_kernel_usage(), nodes


def assert_pass_option_defaults_on_and_round_trips(name):
    """A graph pass's RuntimeSessionOptions flag `name`: on by default, settable in the constructor
    and as an attribute."""
    assert getattr(runtime.RuntimeSessionOptions(), name) is True
    opts = runtime.RuntimeSessionOptions(**{name: False})
    assert getattr(opts, name) is False
    setattr(opts, name, True)
    assert getattr(opts, name) is True


def expect_error(model, feeds, *needles, exc=Exception):
    """Runs `model` expecting `exc` whose message contains every needle; returns the message."""
    with pytest.raises(exc) as info:
        run_ours(model, feeds)
    for needle in needles:
        assert needle in str(info.value), f"{needle!r} not in {info.value}"
    return str(info.value)


def run_reference(model, feeds):
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)


def run_ort(model, feeds):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def assert_close(actual, expected, rtol=1e-5, atol=1e-6, name="output"):
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{name}: sequence lengths differ"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, rtol, atol, f"{name}[{i}]")
        return
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != expected {expected.shape}"
    assert actual.dtype == expected.dtype, f"{name}: dtype {actual.dtype} != expected {expected.dtype}"
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual.astype(np.float64) if expected.dtype == np.float16 else actual,
                                   expected, rtol=rtol, atol=atol, err_msg=name)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=name)


def check_model(model, feeds, reference="onnx", rtol=1e-5, atol=1e-6):
    """Runs `model` in both runtimes and asserts every output matches."""
    expected = run_reference(model, feeds) if reference == "onnx" else run_ort(model, feeds)
    actual = run_ours(model, feeds)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, e, rtol, atol, name=f"{model.graph.output[i].name}")
    return actual


def check_node(op_type, inputs, attrs=None, n_outputs=1, opset=OPSET, initializers=None,
               reference="onnx", rtol=1e-5, atol=1e-6):
    """One node against the reference on the given inputs; returns our outputs."""
    model = node_model(op_type, inputs, attrs, n_outputs, opset, initializers)
    return check_model(model, dict(inputs), reference, rtol, atol)


def random(shape, dtype=np.float32, low=-2.0, high=2.0, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.random(size=shape) > 0.5
    return rng.uniform(low, high, size=shape).astype(dtype)


def _direct_conv_available():
    """Whether float32 stride-1 2-D convolutions take the AVX-512 direct kernel here."""
    import os

    if os.environ.get("ONNX_LIGHT_DISABLE_AVX512", "") not in ("", "0"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


def outputs_with_and_without_avx512(folder, script):
    """The arrays `script` saves when run in a fresh interpreter twice, with AVX-512 in use (where
    the CPU has it) and with ONNX_LIGHT_DISABLE_AVX512=1: (fast, portable). The script gets
    `folder` as argv[1] and the file name to np.save its result to as argv[2]."""
    import os
    import subprocess
    import sys

    for name, disable in (("fast.npy", "0"), ("portable.npy", "1")):
        env = dict(os.environ, ONNX_LIGHT_DISABLE_AVX512=disable)
        subprocess.run([sys.executable, "-c", script, str(folder), name], env=env, check=True, timeout=120)
    return np.load(folder / "fast.npy"), np.load(folder / "portable.npy")


# The implementation name of float32 one-group 2-D convolutions with strides of 1 or 2, no
# dilation, a kernel larger than 1x1 and at least 64 taps per output (C * KH * KW;
# lanes_conv_path): the AVX-512 channels-in-lanes direct kernel where the CPU has it.
LANES_CONV_PATH = "direct-lanes-avx512" if _direct_conv_available() else "im2col-blas"
# The implementation name of the other stride-1 undilated 2-D float32 convolutions at least 8
# columns wide whose im2col columns would pass 2 MiB (dense_conv_path): the AVX-512
# columns-in-lanes direct kernel where the CPU has it, im2col + BLAS elsewhere.
DIRECT_CONV_PATH = "direct-avx512" if _direct_conv_available() else "im2col-blas"
# The same for float32 1x1 convolutions with stride 1, no padding and one group.
POINTWISE_CONV_PATH = "1x1-avx512" if _direct_conv_available() else "1x1-blas"
# And for the other float32 one-group convolutions (im2col, then our GEMM or BLAS's).
IM2COL_CONV_PATH = "im2col-avx512" if _direct_conv_available() else "im2col-blas"
# And for strided 2-D convolutions over at most 4 input channels (an image model's stem) with
# outputs at least 8 wide: the direct kernel over the input split into column phases.
STRIDED_STEM_CONV_PATH = "direct-strided-avx512" if _direct_conv_available() else "im2col-blas"
# The implementation name of float32 2-D max pools without dilation whose horizontal stride is 1
# or 2 (other than the 2x2 stride-2 one): the AVX-512 row kernel where the CPU has it.
MAX_POOL_ROWS_PATH = "direct-rows-avx512" if _direct_conv_available() else "direct-rows"
# Float32 MatMul / Gemm products of at least 8 rows and 16 columns, neither operand transposed
# (alpha 1, beta 0 or 1): our AVX-512 tiles, OpenBLAS elsewhere.
TILED_GEMM_PATH = "tiles-avx512" if _direct_conv_available() else "blas"


def assert_thread_count_invariant(actual, expected):
    """Results of one node at two thread counts. Our own tiles (AVX-512) never split one
    output's sum, so they give the same bits; where products run on OpenBLAS instead, a GEMM
    panel is an OpenBLAS call on fewer columns and may round the last bits differently
    (docs/threading.md), so there the results only agree to float32 rounding of the sums (an
    absolute error relative to the largest value, as cancellation leaves small outputs)."""
    if TILED_GEMM_PATH == "tiles-avx512":
        np.testing.assert_array_equal(actual, expected)
    else:
        scale = float(np.max(np.abs(expected))) if np.size(expected) else 0.0
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * max(scale, 1.0))


def grouped_conv_isa(output_width, kernel_width, stride_width=1, dilation_width=1):
    """The tile set the depthwise / grouped direct Conv kernel uses here for outputs
    `output_width` columns wide: AVX-512 (unless disabled, or the rows are at most 8 wide), as
    its shifted tiles for the kernels they take (3 wide at column stride 1, 5 wide at column
    stride 1 or 2, no column dilation), AVX2, or the plain C++ fallback."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        flags = ""
    avx2 = " avx2" in flags and " fma" in flags
    if _direct_conv_available() and (output_width > 8 or not avx2):
        shifted = dilation_width == 1 and (kernel_width, stride_width) in ((3, 1), (5, 1), (5, 2))
        return "shifted-avx512" if shifted else "avx512"
    return "avx2" if avx2 else "scalar"


def depthwise_conv_path(output_width, kernel_width, multiplier=1, rank=2, stride_width=1):
    """The kernel-usage path of a float32 depthwise Conv here: the channels-in-lanes AVX-512
    kernel for 2-D outputs at most 32 columns wide with one output channel per group, else the
    plane kernel at grouped_conv_isa's tile set."""
    if _direct_conv_available() and rank == 2 and multiplier == 1 and output_width <= 32:
        return "depthwise-lanes-avx512"
    return f"depthwise-{grouped_conv_isa(output_width, kernel_width, stride_width)}"


def dense_conv_path(channels, kernel_size, output_pixels):
    """The path of a float32 one-group, stride-1, undilated 2-D convolution at least 8 output
    columns wide: the channels-in-lanes kernel for a kernel larger than 1x1 and at least 64 taps
    per output, else the columns-in-lanes direct kernel when one image's im2col columns
    (channels * kernel_size rows of output_pixels floats) would pass 2 MiB, else im2col + our
    tiles (all need AVX-512)."""
    if kernel_size > 1 and channels * kernel_size >= 64:
        return LANES_CONV_PATH
    if channels * kernel_size * output_pixels * 4 > (2 << 20):
        return DIRECT_CONV_PATH
    return IM2COL_CONV_PATH
