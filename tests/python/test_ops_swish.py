"""Swish (opset 24) and SwiGLU (opset 28) against onnx.reference: every float type, alpha values,
shapes with zero-size dimensions, the tails, in-place outputs, the thread pool, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import make_model, run_ours, run_reference
from test_ops_elementwise import BF16, FLOATS, NODE, compare, dname, named, node_model, values

SHAPES = [(), (0,), (2, 0, 3), (7,), (2, 3, 4), (1, 1, 33)]
ALPHAS = [None, 1.0, 0.5, -1.3, 0.0, 1.702]


def attrs(alpha):
    return {} if alpha is None else {"alpha": alpha}


def check(op, inputs, attributes, opset, rtol=None, atol=None):
    model = named(node_model(op, inputs, attributes, opset=opset))
    expected = run_reference(model, dict(inputs))
    actual = run_ours(model, dict(inputs))
    compare(actual, expected, rtol, atol)
    return actual


def usage(model, feeds, threads=1):
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(28)))
    ctx.set_kernel_usage_enabled(True)
    out = run_ours(model, feeds, context=ctx, options=runtime.RuntimeSessionOptions(num_threads=threads))
    return out, ctx.get_kernel_usage()


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
def test_swish_types_and_alpha(dtype, alpha):
    check("Swish", {"x": values((3, 5), dtype, -6, 6)}, attrs(alpha), 24)


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("dtype", FLOATS, ids=dname)
def test_swiglu_types_and_alpha(dtype, alpha):
    check("SwiGLU", {"a": values((3, 5), dtype, -6, 6, seed=1), "b": values((3, 5), dtype, seed=2)},
          attrs(alpha), 28)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_shapes(shape):
    check("Swish", {"x": values(shape, np.float32)}, {"alpha": 0.8}, 24)
    check("SwiGLU", {"a": values(shape, np.float32, seed=3), "b": values(shape, np.float32, seed=4)}, {}, 28)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=dname)
def test_tails(dtype):
    x = np.array([0.0, -0.0, 1e-30, -1e-30, 80.0, -80.0, 100.0, -100.0, 700.0, -700.0, np.inf, -np.inf],
                 dtype=dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        check("Swish", {"x": x}, {}, 24)
        check("Swish", {"x": x}, {"alpha": -2.0}, 24)
        check("SwiGLU", {"a": x, "b": np.full_like(x, 3.0)}, {}, 28)


def test_nan_and_zero_times_infinity_give_nan():
    x = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    (y,) = run_ours(named(node_model("Swish", {"x": x}, {"alpha": 0.0}, opset=24)), {"x": x})
    # alpha = 0: x * sigmoid(0) = x / 2, except inf * sigmoid(0 * inf) = inf * sigmoid(nan).
    assert np.isnan(y[0]) and np.isnan(y[1]) and np.isnan(y[2]) and y[3] == 0.5
    assert np.all(np.signbit(y[:3]) == 0), "NaN results are the default (positive) quiet NaN"


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=dname)
def test_large_inputs_split_over_threads(dtype, threads):
    n = (1 << 16) + 11
    a, b = values((n,), dtype, -8, 8, seed=5), values((n,), dtype, seed=6)
    model = named(node_model("SwiGLU", {"a": a, "b": b}, {"alpha": 1.5}, opset=28))
    (y,), names = usage(model, {"a": a, "b": b}, threads)
    compare([y], run_reference(model, {"a": a, "b": b}))
    assert names == [f"SwiGLU/{np.dtype(dtype).name}/loop"]
    (y1,), _ = usage(model, {"a": a, "b": b}, 1)
    assert y.tobytes() == y1.tobytes(), "the thread count must not change results"


def test_output_reuses_a_dying_intermediate():
    """x -> Neg -> Swish: Swish writes over Neg's buffer; SwiGLU over one of its inputs."""
    x = values((4, 6), np.float32, seed=7)
    b = values((4, 6), np.float32, seed=8)
    nodes = [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Swish", ["n"], ["s"], alpha=0.7),
             helper.make_node("Neg", ["b"], ["nb"]), helper.make_node("SwiGLU", ["s", "nb"], ["y"], name=NODE)]
    model = make_model(nodes, {"x": x, "b": b}, ["y"], opset=28)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(28)), events_enabled=True)
    (y,) = run_ours(model, {"x": x, "b": b}, context=ctx)
    compare([y], run_reference(model, {"x": x, "b": b}))
    added = {}  # the first add of each value (a graph output is added again when handed out)
    for e in ctx.events():
        if e.action == runtime.RuntimeEventAction.kAdd:
            added.setdefault(e.name, e.allocated_bytes)
    run_nodes = [e.op_type for e in ctx.events() if e.action == runtime.RuntimeEventAction.kRunNode]
    assert run_nodes == ["Neg", "Swish", "Neg", "SwiGLU"]
    # Events still record every output; taking over the input's buffer allocates nothing.
    assert added["s"] == added["n"] == x.nbytes
    assert added["y"] == added["nb"] == 2 * x.nbytes


def test_swiglu_rejects_broadcasting_and_mixed_types():
    a = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=rf"{NODE}.*shape \[3\].*\[2, 3\].*does not broadcast"):
        run_ours(named(node_model("SwiGLU", {"a": a, "b": np.ones(3, np.float32)}, opset=28)),
                 {"a": a, "b": np.ones(3, np.float32)})
    b64 = np.ones((2, 3), np.float64)
    with pytest.raises(ValueError, match=rf"{NODE}.*float64.*float32"):
        run_ours(named(node_model("SwiGLU", {"a": a, "b": b64}, opset=28)), {"a": a, "b": b64})


@pytest.mark.parametrize("op,opset", [("Swish", 24), ("SwiGLU", 28)])
def test_integer_inputs_are_unsupported(op, opset):
    inputs = {"a": np.ones(3, np.int32)} if op == "Swish" else {"a": np.ones(3, np.int32), "b": np.ones(3, np.int32)}
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*int32"):
        run_ours(named(node_model(op, inputs, opset=opset)), inputs)


@pytest.mark.parametrize("op,opset", [("Swish", 23), ("SwiGLU", 27)])
def test_older_opsets_are_refused(op, opset):
    inputs = {"a": np.ones(3, np.float32)} if op == "Swish" else {"a": np.ones(3, np.float32),
                                                                   "b": np.ones(3, np.float32)}
    model = named(node_model(op, inputs, opset=opset))
    with pytest.raises(NotImplementedError, match=op):
        runtime.RuntimeSession(model)
