"""LinearAttention (opset 27) against onnx.reference: every update rule, per-key and per-head
decay, per-head and shared beta, grouped and multi-query heads, decode steps and prefill, past
state or none, explicit scale, half-precision activations and states, zero-size dimensions, a
decode loop carrying the state through PersistentValueState, the state updated in place, the
thread pool, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from onnx_light import summary
from node_check import make_model, run_ours, run_reference
from test_ops_elementwise import BF16, NODE, compare, dname, values

RULES = ["linear", "gated", "delta", "gated_delta"]
F16 = np.dtype(np.float16)


def la_inputs(b, t, hq, hkv, dk, dv, rule, dtype=np.float32, past=True, per_key_decay=True, shared_beta=False,
              state_dtype=None, seed=0):
    """Node inputs by name, in the operator's order; omitted optional inputs are empty names."""
    inputs = {"q": values((b, t, hq * dk), dtype, -1, 1, seed),
              "k": values((b, t, hkv * dk), dtype, -0.5, 0.5, seed + 1),
              "v": values((b, t, hkv * dv), dtype, -1, 1, seed + 2)}
    inputs["past" if past else ""] = (values((b, hkv, dk, dv), state_dtype or dtype, -1, 1, seed + 3)
                                      if past else None)
    if rule in ("gated", "gated_delta"):
        inputs["g"] = values((b, t, hkv * dk if per_key_decay else hkv), dtype, -0.6, 0.0, seed + 4)
    elif rule in ("delta", "gated_delta"):
        inputs[" "] = None
    if rule in ("delta", "gated_delta"):
        inputs["beta"] = values((b, t, 1 if shared_beta else hkv), dtype, 0.0, 1.0, seed + 5)
    return inputs


def la_model(inputs, hq, hkv, rule=None, scale=None, extra_nodes=(), outputs=("y", "state")):
    attrs = {"q_num_heads": hq, "kv_num_heads": hkv}
    if rule is not None:
        attrs["update_rule"] = rule
    if scale is not None:
        attrs["scale"] = scale
    names = [n.strip() for n in inputs]
    node = helper.make_node("LinearAttention", names, ["y", "state"], name=NODE, **attrs)
    feeds = {k: v for k, v in inputs.items() if k.strip()}
    return make_model([node, *extra_nodes], feeds, list(outputs), opset=27), feeds


def run_both(model, feeds, threads=1):
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(27)))
    ctx.set_kernel_usage_enabled(True)
    actual = run_ours(model, feeds, context=ctx, options=runtime.RuntimeSessionOptions(num_threads=threads))
    return actual, run_reference(model, feeds), ctx.get_kernel_usage()


def tolerance(dtype):
    return {F16: (3e-3, 3e-3), BF16: (3e-2, 3e-2)}.get(np.dtype(dtype), (2e-5, 2e-5))


def check(inputs, hq, hkv, rule=None, scale=None, dtype=np.float32, threads=1):
    model, feeds = la_model(inputs, hq, hkv, rule, scale)
    actual, expected, usage = run_both(model, feeds, threads)
    compare(actual, expected, *tolerance(dtype))
    return actual, usage


@pytest.mark.parametrize("t", [1, 5])
@pytest.mark.parametrize("past", [True, False])
@pytest.mark.parametrize("rule", RULES)
def test_rules(rule, past, t):
    inputs = la_inputs(2, t, 4, 4, 8, 6, rule, past=past)
    _, usage = check(inputs, 4, 4, rule)
    assert usage == [f"LinearAttention/float32/{rule}-{'decode' if t == 1 else 'prefill'}"]


def test_default_rule_is_gated_delta():
    _, usage = check(la_inputs(1, 3, 2, 2, 4, 4, "gated_delta"), 2, 2)
    assert usage == ["LinearAttention/float32/gated_delta-prefill"]


@pytest.mark.parametrize("per_key_decay", [True, False])
@pytest.mark.parametrize("shared_beta", [True, False])
@pytest.mark.parametrize("rule", ["gated", "delta", "gated_delta"])
def test_decay_and_beta_layouts(rule, shared_beta, per_key_decay):
    check(la_inputs(2, 3, 2, 2, 8, 4, rule, per_key_decay=per_key_decay, shared_beta=shared_beta), 2, 2, rule)


@pytest.mark.parametrize("hq,hkv", [(4, 2), (6, 3), (8, 1), (3, 1)])
@pytest.mark.parametrize("rule", RULES)
def test_grouped_and_multi_query_heads(rule, hq, hkv):
    check(la_inputs(2, 3, hq, hkv, 4, 5, rule, seed=hq), hq, hkv, rule)


@pytest.mark.parametrize("scale", [0.0, 0.125, -2.0])
def test_scale(scale):
    check(la_inputs(1, 4, 2, 2, 16, 8, "linear"), 2, 2, "linear", scale=scale)


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=dname)
@pytest.mark.parametrize("rule", RULES)
def test_half_precision(rule, dtype):
    check(la_inputs(2, 3, 4, 2, 8, 8, rule, dtype=dtype), 4, 2, rule, dtype=dtype)


@pytest.mark.parametrize("state_dtype", [np.float32, np.float16, BF16], ids=dname)
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=dname)
def test_state_type_may_differ_from_activations(dtype, state_dtype):
    inputs = la_inputs(2, 2, 2, 2, 4, 4, "gated_delta", dtype=dtype, state_dtype=state_dtype)
    (y, state), _ = check(inputs, 2, 2, "gated_delta",
                          dtype=dtype if np.dtype(state_dtype) == np.float32 else state_dtype)
    assert y.dtype == np.dtype(dtype) and state.dtype == np.dtype(state_dtype)


@pytest.mark.parametrize("b,t,dv", [(0, 3, 4), (2, 0, 4), (2, 3, 0)])
def test_zero_size(b, t, dv):
    for past in (True, False):
        (y, state), _ = check(la_inputs(b, t, 2, 1, 4, dv, "gated_delta", past=past), 2, 1)
        assert y.shape == (b, t, 2 * dv) and state.shape == (b, 1, 4, dv)


def test_decode_loop_with_persistent_state_matches_prefill():
    b, hq, hkv, dk, dv, steps = 2, 4, 2, 8, 8, 6
    full = la_inputs(b, steps, hq, hkv, dk, dv, "gated_delta", past=True, seed=40)
    model, _ = la_model({k: v[:, :1] if k in ("q", "k", "v", "g", "beta") else v for k, v in full.items()}, hq, hkv)
    bound = runtime.with_persistent_bindings(model, {"past": "state"})
    state = runtime.PersistentValueState(bound, initial={"past": full["past"]})
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(27)), events_enabled=True)
    ctx.set_kernel_usage_enabled(True)
    outs = []
    for t in range(steps):
        step = {k: np.ascontiguousarray(full[k][:, t:t + 1]) for k in ("q", "k", "v", "g", "beta")}
        outs.append(np.asarray(state.run(ctx, step)["y"]))
    prefill_model, feeds = la_model(full, hq, hkv)
    (y, final), _, _ = run_both(prefill_model, feeds)
    # Token by token is the same recurrence in the same order: identical, not merely close.
    assert np.concatenate(outs, axis=1).tobytes() == y.tobytes()
    assert np.asarray(state.values["past"]).tobytes() == final.tobytes()
    assert set(ctx.get_kernel_usage()) == {"LinearAttention/float32/gated_delta-decode+state-persistent"}
    # The state alternates two buffers: allocated in the first two steps, reused after, never copied.
    totals = summary.storage_totals(ctx.events())
    assert totals["storage_allocations"] == 2 and totals["storage_reuse_count"] == steps - 2
    assert totals["storage_prefix_copied_bytes"] == 0


def test_chained_nodes_update_the_state_in_place():
    """The second node's past state is the first node's present state, dying there: the float32
    state is updated in that buffer."""
    inputs = la_inputs(2, 3, 2, 2, 8, 8, "gated_delta", past=True)
    second = helper.make_node("LinearAttention", ["q", "k", "v", "state", "g", "beta"], ["y2", "state2"],
                              q_num_heads=2, kv_num_heads=2)
    model, feeds = la_model(inputs, 2, 2, extra_nodes=[second], outputs=("y", "y2", "state2"))
    actual, expected, usage = run_both(model, feeds)
    compare(actual, expected, 2e-5, 2e-5)
    assert usage == ["LinearAttention/float32/gated_delta-prefill",
                     "LinearAttention/float32/gated_delta-prefill+state-in-place"]


@pytest.mark.parametrize("t", [1, 16])
def test_thread_count_does_not_change_results(t):
    inputs = la_inputs(2, t, 16, 8, 64, 96, "gated_delta", seed=50)
    model, feeds = la_model(inputs, 16, 8)
    first, _, _ = run_both(model, feeds, threads=1)
    second, expected, _ = run_both(model, feeds, threads=2)
    for a, b in zip(first, second):
        assert a.tobytes() == b.tobytes()
    compare(second, expected, 1e-4, 1e-4)


def ours(inputs, hq, hkv, rule=None):
    model, feeds = la_model(inputs, hq, hkv, rule)
    return run_ours(model, feeds)


def test_input_errors():
    good = la_inputs(2, 3, 4, 2, 8, 6, "gated_delta")
    cases = [
        ({**good, "q": values((2, 3), np.float32)}, "gated_delta", r"input 0 \('q'\) must have rank 3"),
        ({**good, "q": values((2, 3, 30), np.float32)}, "gated_delta", r"last dimension 30.*q_num_heads = 4"),
        ({**good, "k": values((2, 3, 20), np.float32)}, "gated_delta", r"input 1 \('k'\) must have shape \[2, 3, 16\]"),
        ({**good, "v": values((2, 3, 13), np.float32)}, "gated_delta", r"last dimension 13.*kv_num_heads = 2"),
        ({**good, "v": values((1, 3, 12), np.float32)}, "gated_delta", r"input 2 \('v'\) must have shape \[2, 3, 12\]"),
        ({**good, "past": values((2, 2, 6, 8), np.float32)}, "gated_delta",
         r"input 3 \('past'\) must have shape \[2, 2, 8, 6\]"),
        ({**good, "g": values((2, 3, 5), np.float32)}, "gated_delta", r"input 4 \('g'\) must have shape"),
        ({**good, "beta": values((2, 3, 3), np.float32)}, "gated_delta", r"input 5 \('beta'\) must have shape"),
        ({**good, "k": good["k"].astype(np.float16)}, "gated_delta", r"input 1 \('k'\) has element type float16"),
        ({"q": good["q"], "k": good["k"], "v": good["v"], "past": good["past"], "g": good["g"]}, "gated_delta",
         r"needs input 5 \('beta'\)"),
        (la_inputs(2, 3, 4, 2, 8, 6, "delta"), "gated_delta", r"needs input 4 \('decay'\)"),
        (good, "linear", r"takes no input 4 \('decay'\), but 'g' is given"),
        (la_inputs(2, 3, 4, 2, 8, 6, "gated"), "gated_delta", r"needs input 5 \('beta'\)"),
        ({**la_inputs(2, 3, 4, 2, 0, 6, "linear")}, "linear", r"last dimension 0.*positive multiple"),
    ]
    for inputs, rule, pattern in cases:
        with pytest.raises(ValueError, match=rf"{NODE}.*{pattern}"):
            ours(inputs, 4, 2, rule)
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*float64"):
        ours({k: (v.astype(np.float64) if v is not None else None) for k, v in good.items()}, 4, 2)


@pytest.mark.parametrize("attrs,pattern", [
    ({"q_num_heads": 3, "kv_num_heads": 2}, "positive multiple"),
    ({"q_num_heads": 0, "kv_num_heads": 0}, "positive multiple"),
    ({"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "mamba"}, "'update_rule' = 'mamba'"),
    ({"q_num_heads": 2}, "kv_num_heads"),
])
def test_attribute_errors(attrs, pattern):
    inputs = la_inputs(1, 1, 2, 2, 4, 4, "linear")
    node = helper.make_node("LinearAttention", ["q", "k", "v"], ["y", "state"], name=NODE, **attrs)
    model = make_model([node], {k: inputs[k] for k in ("q", "k", "v")}, ["y", "state"], opset=27)
    with pytest.raises(ValueError, match=rf"{NODE}.*{pattern}"):
        runtime.RuntimeSession(model)
