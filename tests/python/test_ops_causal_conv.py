"""CausalConvWithState (opset 27) against onnx.reference: every activation, with and without
bias and past state, decode steps and prefill, kernels longer than the input, zero-size
dimensions, float16 and bfloat16, a decode loop carrying the state through PersistentValueState,
the thread pool, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from onnx_light import summary
from node_check import make_model, run_ours, run_reference
from test_ops_elementwise import BF16, NODE, compare, dname, named, node_model, values

ACTIVATIONS = [None, "none", "silu", "swish"]


def conv_model(inputs, activation=None):
    attrs = {} if activation is None else {"activation": activation}
    names = list(inputs)
    node = helper.make_node("CausalConvWithState", names, ["y", "state"], name=NODE, **attrs)
    return make_model([node], {k: v for k, v in inputs.items() if k}, ["y", "state"], opset=27)


def feeds_for(batch, channels, length, k, dtype=np.float32, bias=True, past=True, seed=0):
    """Node inputs by name; an omitted bias before a given past state is the empty name ""."""
    inputs = {"x": values((batch, channels, length), dtype, seed=seed),
              "w": values((channels, 1, k), dtype, -1, 1, seed=seed + 1)}
    if bias:
        inputs["b"] = values((channels,), dtype, -1, 1, seed=seed + 2)
    elif past:
        inputs[""] = None
    if past:
        inputs["past"] = values((batch, channels, k - 1), dtype, seed=seed + 3)
    return inputs


def check(inputs, activation=None, rtol=None, atol=None, threads=1):
    model = conv_model(inputs, activation)
    feeds = {k: v for k, v in inputs.items() if k}
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(27)))
    ctx.set_kernel_usage_enabled(True)
    actual = run_ours(model, feeds, context=ctx, options=runtime.RuntimeSessionOptions(num_threads=threads))
    compare(actual, run_reference(model, feeds), rtol, atol)
    return actual, ctx.get_kernel_usage()


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("past", [True, False])
def test_attributes_and_optional_inputs(activation, bias, past):
    (y, state), names = check(feeds_for(2, 4, 8, 4, bias=bias, past=past), activation)
    silu = "+silu" if activation in ("silu", "swish") else ""
    assert names == [f"CausalConvWithState/float32/prefill{silu}"]
    assert state.shape == (2, 4, 3)


@pytest.mark.parametrize("k", [1, 2, 4, 7])
@pytest.mark.parametrize("length", [1, 2, 3, 9])
def test_kernel_and_sequence_lengths(k, length):
    (y, state), names = check(feeds_for(2, 3, length, k), "silu")
    assert names == [f"CausalConvWithState/float32/{'decode' if length == 1 else 'prefill'}+silu"]


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=dname)
@pytest.mark.parametrize("activation", ["none", "silu"])
def test_half_types(dtype, activation):
    # The reference rounds the convolution to the half type before the activation; we round once.
    rtol = 2e-2 if dtype == BF16 else 3e-3
    check(feeds_for(2, 5, 6, 4, dtype), activation, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("batch,channels,length", [(0, 3, 4), (2, 3, 0)])
def test_zero_size(batch, channels, length):
    (y, state), _ = check(feeds_for(batch, channels, length, 3))
    assert y.shape == (batch, channels, length) and state.shape == (batch, channels, 2)


def test_zero_channels():
    # The reference's grouped convolution divides by the channel count; there is nothing to compute.
    y, state = ours(feeds_for(2, 0, 4, 3))
    assert y.shape == (2, 0, 4) and state.shape == (2, 0, 2)


def test_empty_input_passes_the_state_through():
    inputs = feeds_for(2, 3, 0, 4)
    (_, state), _ = check(inputs)
    np.testing.assert_array_equal(state, inputs["past"])


def test_decode_loop_with_persistent_state_matches_prefill():
    """Feeding a sequence one step at a time through PersistentValueState gives the prefill result."""
    batch, channels, k, steps = 2, 6, 4, 7
    seq = values((batch, channels, steps), np.float32, seed=20)
    w = values((channels, 1, k), np.float32, -1, 1, seed=21)
    bias = values((channels,), np.float32, -1, 1, seed=22)
    x0 = seq[:, :, :1]
    node = helper.make_node("CausalConvWithState", ["x", "w", "b", "past"], ["y", "present"], activation="silu")
    model = make_model([node], {"x": x0, "past": np.zeros((batch, channels, k - 1), np.float32)}, ["y", "present"],
                       initializers={"w": w, "b": bias}, opset=27)
    bound = runtime.with_persistent_bindings(model, {"past": "present"})
    state = runtime.PersistentValueState(bound, initial={"past": np.zeros((batch, channels, k - 1), np.float32)})
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(27)), events_enabled=True)
    ctx.set_kernel_usage_enabled(True)
    stepped = [np.asarray(state.run(ctx, {"x": np.ascontiguousarray(seq[:, :, t:t + 1])})["y"])
               for t in range(steps)]
    prefill, _ = check({"x": seq, "w": w, "b": bias}, "silu")
    np.testing.assert_array_equal(np.concatenate(stepped, axis=2), prefill[0])
    np.testing.assert_array_equal(np.asarray(state.values["past"]), prefill[1])
    assert set(ctx.get_kernel_usage()) == {"CausalConvWithState/float32/decode+silu+state-persistent"}
    # The state alternates two buffers: allocated in the first two steps, reused after, never copied.
    totals = summary.storage_totals(ctx.events())
    assert totals["storage_allocations"] == 2 and totals["storage_reuse_count"] == steps - 2
    assert totals["storage_prefix_copied_bytes"] == 0


def test_output_reuses_a_dying_input():
    inputs = feeds_for(2, 4, 8, 3)
    nodes = [helper.make_node("Neg", ["x"], ["n"]),
             helper.make_node("CausalConvWithState", ["n", "w", "b", "past"], ["c", "state"], name=NODE),
             helper.make_node("Neg", ["c"], ["y"])]
    model = make_model(nodes, inputs, ["y", "state"], opset=27)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(27)), events_enabled=True)
    actual = run_ours(model, inputs, context=ctx)
    compare(actual, run_reference(model, inputs))
    added = {}
    for e in ctx.events():
        if e.action == runtime.RuntimeEventAction.kAdd:
            added.setdefault(e.name, e.allocated_bytes)
    x_bytes, state_bytes = inputs["x"].nbytes, inputs["past"].nbytes
    assert added["n"] == x_bytes
    assert added["c"] == x_bytes + state_bytes, "the output takes over the input's buffer"


@pytest.mark.parametrize("length", [1, 64])
def test_thread_count_does_not_change_results(length):
    inputs = feeds_for(4, 1024, length, 4, seed=30)
    outs = [check(inputs, "silu", threads=t)[0] for t in (1, 2)]
    for a, b in zip(*outs):
        assert a.tobytes() == b.tobytes()


def ours(inputs, activation=None):
    model = conv_model(inputs, activation)
    return run_ours(model, {k: v for k, v in inputs.items() if k})


def test_errors():
    good = feeds_for(2, 4, 5, 3)
    cases = [
        ({**good, "x": values((2, 4), np.float32)}, r"input 0 \('x'\) must have rank 3"),
        ({**good, "w": values((4, 2, 3), np.float32)}, r"input 1 \('w'\) must have shape \[4, 1, k\]"),
        ({**good, "w": values((5, 1, 3), np.float32)}, r"input 1 \('w'\) must have shape \[4, 1, k\]"),
        ({**good, "w": values((4, 1, 0), np.float32)}, r"k >= 1"),
        ({**good, "b": values((3,), np.float32)}, r"input 2 \('b'\) must have shape \[4\]"),
        ({**good, "past": values((2, 4, 3), np.float32)}, r"input 3 \('past'\) must have shape \[2, 4, 2\]"),
        ({**good, "w": values((4, 1, 3), np.float64)}, r"input 1 \('w'\) has element type float64"),
    ]
    for inputs, pattern in cases:
        with pytest.raises(ValueError, match=rf"{NODE}.*{pattern}"):
            ours(inputs)
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*float64"):
        ours({k: v.astype(np.float64) for k, v in good.items()})
    with pytest.raises(ValueError, match=rf"{NODE}.*'activation' = 'gelu'"):
        runtime.RuntimeSession(conv_model(good, "gelu"))
