"""PersistentValueState through Python with the real kernels: decode loops against a stateless
loop that re-feeds past/present by hand, storage numbers from the event log, failure atomicity,
held outputs, lifecycle errors, validation and concurrency."""

import threading

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from onnx_light import decoder_model
from onnx_light.onnx_py._onnxpykernels import runtime as spec_runtime

LAYERS, HEADS, HEAD_SIZE = 2, 4, 16
D_MODEL = HEADS * HEAD_SIZE
BINDINGS = decoder_model.bindings(LAYERS)
STORAGE_KEYS = {
    "storage_allocations", "storage_allocated_bytes", "storage_prefix_copied_bytes",
    "storage_append_copied_bytes", "storage_reuse_count",
}
STORAGE = runtime.RuntimeEventAction.kPersistentStorage


def new_context(kernel_context=None, **kwargs):
    return runtime.RuntimeContext(kernel_context or runtime.KernelContext(runtime.default_opset(23)), **kwargs)


def empty_cache(dtype=np.float32):
    return decoder_model.empty_cache(LAYERS, HEADS, HEAD_SIZE, dtype=dtype)


def new_state(model, capacity=32, dtype=np.float32, kernel_context=None, reserved_rows=0):
    """reserved_rows 0 (these tests' default) pins geometric growth from `capacity`; the default
    options' lazily backed reservation has tests of its own."""
    options = runtime.RuntimeSessionOptions(persistent_tensor_initial_capacity=capacity,
                                            kernel_context=kernel_context,
                                            persistent_tensor_reserved_rows=reserved_rows)
    declared = runtime.with_persistent_bindings(model, BINDINGS)
    return runtime.PersistentValueState(declared, empty_cache(dtype), options)


def token_inputs(steps, prefill=5, dtype=np.float32, seed=1):
    """A prefill of `prefill` tokens (none when 0), then one token per step."""
    rng = np.random.default_rng(seed)
    lengths = ([prefill] if prefill else []) + [1] * steps
    return [rng.standard_normal((1, n, D_MODEL)).astype(dtype) for n in lengths]


def stateless_loop(model, xs, dtype=np.float32):
    """The same decode loop by hand: a plain RuntimeSession, past fed back from present."""
    session = runtime.RuntimeSession(model)
    context = new_context()
    past = empty_cache(dtype)
    results = []
    for x in xs:
        out = session.run(context, {"x": x, **past})
        results.append({name: np.array(value) for name, value in out.items()})
        past = {inp: results[-1][out_name] for inp, out_name in BINDINGS.items()}
    return results


def assert_step_equal(got, want, rtol, step):
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(np.asarray(got[name]).astype(np.float64), want[name].astype(np.float64),
                                   rtol=rtol, atol=rtol * 1e-1, err_msg=f"step {step}, output {name}")


def storage_events(context):
    return [e for e in context.events() if e.action == STORAGE]


def totals(events, name=None):
    picked = [e for e in events if name is None or e.name == name]
    return {key: sum(getattr(e, key) for e in picked) for key in STORAGE_KEYS}


@pytest.fixture(scope="module")
def attention_model():
    return decoder_model.build_decoder(layers=LAYERS, heads=HEADS, head_size=HEAD_SIZE)


@pytest.fixture(scope="module")
def concat_model():
    return decoder_model.build_decoder(layers=LAYERS, heads=HEADS, head_size=HEAD_SIZE, attention="Concat")


@pytest.fixture(scope="module")
def models(attention_model, concat_model):
    return {"Attention": attention_model, "Concat": concat_model}


# ---- the reference page ---------------------------------------------------------------------------


def test_reference_page_snippet_runs_as_written(attention_model):
    state = new_state(attention_model, capacity=4)
    feeds = {"x": token_inputs(1, prefill=0)[0]}
    for _ in range(4):
        state.run(new_context(), feeds)  # fill the first buffer (capacity 4)

    context = spec_runtime.RuntimeContext(
        spec_runtime.KernelContext(spec_runtime.default_opset(23)), events_enabled=True
    )
    # Runs an existing PersistentValueState with its ordinary non-retained feeds.
    outputs = state.run(context, feeds)
    copied = sum(
        event.storage_prefix_copied_bytes
        for event in context.events()
        if event.action == spec_runtime.RuntimeEventAction.kPersistentStorage
    )
    context.clear_events()

    assert set(outputs) == {"y"} | set(BINDINGS.values())
    # The fifth row outgrows capacity 4: each of the four values copies its 4-row prefix once.
    row_bytes = HEADS * HEAD_SIZE * 4
    assert copied == len(BINDINGS) * 4 * row_bytes
    assert context.events() == []


# ---- decode loops against the stateless loop -----------------------------------------------------


@pytest.mark.parametrize("attention", ["Attention", "Concat"])
def test_decode_loop_matches_the_stateless_loop(models, attention):
    model = models[attention]
    xs = token_inputs(20)
    want = stateless_loop(model, xs)
    state = new_state(model, capacity=8)  # grows twice along the way
    context = new_context()
    context.set_kernel_usage_enabled(True)
    for step, x in enumerate(xs):
        assert_step_equal(state.run(context, {"x": x}), want[step], 1e-5, step)
    assert f"{attention}/{'float32' if attention == 'Attention' else 'any'}/persistent-append" in \
        context.get_kernel_usage()
    final = want[-1]
    for inp, out in BINDINGS.items():
        np.testing.assert_array_equal(np.asarray(state.values[inp]), final[out])
        assert state.values[inp].shape == (1, HEADS, 5 + 20, HEAD_SIZE)


def test_float16_attention_decode_loop_matches_the_stateless_loop():
    model = decoder_model.build_decoder(layers=LAYERS, heads=HEADS, head_size=HEAD_SIZE, dtype=np.float16)
    xs = token_inputs(20, dtype=np.float16)
    want = stateless_loop(model, xs, np.float16)
    state = new_state(model, capacity=8, dtype=np.float16)  # grows 8 -> 16 -> 32
    context = new_context(events_enabled=True)
    context.set_kernel_usage_enabled(True)
    for step, x in enumerate(xs):
        got = state.run(context, {"x": x})
        assert all(np.asarray(v).dtype == np.float16 for v in got.values())
        assert_step_equal(got, want[step], 1e-2, step)
    usage = context.get_kernel_usage()
    assert "Attention/float16/persistent-append" in usage
    assert "Attention/float16/float32-scratch" in usage
    # The cache stays float16 and is appended in place: 21 appends, 3 allocations per value.
    t = totals(storage_events(context), "present_key_0")
    assert t["storage_allocations"] == 3 and t["storage_reuse_count"] == 18
    assert t["storage_append_copied_bytes"] == 25 * HEADS * HEAD_SIZE * 2


def single_attention_model(elem, q_heads, kv_heads, head, mask, qk):
    """One 4-D Attention node: q, k, v, optional attn_mask, past_k/past_v -> y, pk, pv (+ qk)."""
    inputs = ["q", "k", "v", "mask" if mask else "", "past_k", "past_v"]
    outputs = ["y", "pk", "pv"] + (["qk"] if qk else [])
    node = helper.make_node("Attention", inputs, outputs, is_causal=1, **({"qk_matmul_output_mode": 1} if qk else {}))
    graph_inputs = [helper.make_tensor_value_info("q", elem, ["b", q_heads, "s", head])]
    graph_inputs += [helper.make_tensor_value_info(n, elem, ["b", kv_heads, "s", head]) for n in ("k", "v")]
    if mask:
        graph_inputs.append(helper.make_tensor_value_info("mask", TensorProto.BOOL, ["s", "total"]))
    cache = ["b", kv_heads, "past", head]
    graph_inputs += [helper.make_tensor_value_info(n, elem, cache) for n in ("past_k", "past_v")]
    graph = helper.make_graph([node], "g", graph_inputs,
                              [helper.make_tensor_value_info(n, elem, None) for n in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16], ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mask,qk", [(False, False), (True, True)], ids=["plain", "mask+qk"])
def test_single_attention_node_appends_in_place(dtype, mask, qk):
    """4-D grouped-query Attention with its own state, with and without a (padding) mask and the
    qk output: bitwise equal to the stateless node fed past by hand."""
    q_heads, kv_heads, head = 4, 2, 8
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = single_attention_model(elem, q_heads, kv_heads, head, mask, qk)
    declared = runtime.with_persistent_bindings(model, {"past_k": "pk", "past_v": "pv"})
    empty = np.zeros((2, kv_heads, 0, head), dtype)
    state = runtime.PersistentValueState(declared, {"past_k": empty, "past_v": empty},
                                         runtime.RuntimeSessionOptions(persistent_tensor_initial_capacity=3))
    session = runtime.RuntimeSession(model)
    context = new_context()
    context.set_kernel_usage_enabled(True)
    rng = np.random.default_rng(3)
    past = {"past_k": empty, "past_v": empty}
    total = 0
    for step in range(7):
        s = 3 if step == 0 else 1
        total += s
        feeds = {"q": rng.standard_normal((2, q_heads, s, head)).astype(dtype)}
        feeds.update({n: rng.standard_normal((2, kv_heads, s, head)).astype(dtype) for n in "kv"})
        if mask:
            feeds["mask"] = rng.random((s, total)) > 0.2
        got = state.run(context, feeds)
        want = session.run(new_context(), {**feeds, **past})
        past = {"past_k": want["pk"].numpy().copy(), "past_v": want["pv"].numpy().copy()}
        assert set(got) == set(want)
        for name in want:
            np.testing.assert_array_equal(got[name].numpy().astype(np.float32),
                                          want[name].numpy().astype(np.float32), err_msg=f"{step} {name}")
    type_name = {np.float32: "float32", np.float16: "float16"}.get(dtype, "bfloat16")
    assert context.get_kernel_usage().count(f"Attention/{type_name}/persistent-append") == 7
    assert state.values["past_k"].shape == (2, kv_heads, total, head)


# ---- storage numbers through the real kernels ------------------------------------------------------


@pytest.mark.parametrize("attention", ["Attention", "Concat"])
def test_capacity_four_five_steps_storage_numbers(models, attention):
    state = new_state(models[attention], capacity=4)
    context = new_context(events_enabled=True)
    for x in token_inputs(5, prefill=0):
        state.run(context, {"x": x})
    events = storage_events(context)
    row_bytes = HEADS * HEAD_SIZE * 4
    assert {e.name for e in events} == set(BINDINGS.values())
    for output in BINDINGS.values():
        t = totals(events, output)
        assert t["storage_allocations"] == 2, output
        assert t["storage_allocated_bytes"] == (4 + 8) * row_bytes, output
        assert t["storage_prefix_copied_bytes"] == 4 * row_bytes, output
        assert t["storage_reuse_count"] == 3, output
        assert t["storage_append_copied_bytes"] == 5 * row_bytes, output
    assert all(e.kind == "output" and e.node_index >= 0 for e in events)


def test_prefix_copying_is_bounded_by_the_final_cache(attention_model):
    state = new_state(attention_model, capacity=32)
    context = new_context(events_enabled=True)
    for x in token_inputs(64, prefill=0):
        state.run(context, {"x": x})
    t = totals(storage_events(context))
    final_bytes = sum(np.asarray(v).nbytes for v in state.values.values())
    row_bytes = HEADS * HEAD_SIZE * 4
    assert t["storage_prefix_copied_bytes"] <= final_bytes
    assert t["storage_prefix_copied_bytes"] == len(BINDINGS) * 32 * row_bytes  # one doubling, 32 rows
    assert t["storage_allocations"] == 2 * len(BINDINGS)
    assert t["storage_reuse_count"] == 62 * len(BINDINGS)
    assert t["storage_append_copied_bytes"] == final_bytes


@pytest.mark.parametrize("steps", [40, 512, 2048])
def test_default_options_never_copy_a_prefix_below_the_reserved_rows(attention_model, steps):
    """The default options lay each value out for 4096 rows of lazily backed memory: one
    allocation per value, no prefix copy at any length up to that, results unchanged."""
    declared = runtime.with_persistent_bindings(attention_model, BINDINGS)
    state = runtime.PersistentValueState(declared, empty_cache())
    assert runtime.RuntimeSessionOptions().persistent_tensor_reserved_rows == 4096
    context = new_context(events_enabled=True)
    xs = token_inputs(steps, prefill=0)
    for x in xs:
        out = state.run(context, {"x": x})
    t = totals(storage_events(context))
    final_bytes = sum(np.asarray(v).nbytes for v in state.values.values())
    assert t["storage_prefix_copied_bytes"] == 0
    assert t["storage_allocations"] == len(BINDINGS)
    assert t["storage_allocated_bytes"] == len(BINDINGS) * 4096 * HEADS * HEAD_SIZE * 4
    assert t["storage_reuse_count"] == (steps - 1) * len(BINDINGS)
    assert t["storage_append_copied_bytes"] == final_bytes
    if steps == 40:
        want = stateless_loop(attention_model, xs)
        assert_step_equal(out, want[-1], 1e-5, steps - 1)


def test_capacity_zero_copies_every_step(attention_model):
    state = new_state(attention_model, capacity=0)
    context = new_context(events_enabled=True)
    steps = 6
    for x in token_inputs(steps, prefill=0):
        state.run(context, {"x": x})
    row_bytes = HEADS * HEAD_SIZE * 4
    per_step = {}
    for e in storage_events(context):
        if e.name == "present_key_0" and e.storage_allocations:
            per_step[len(per_step)] = e.storage_prefix_copied_bytes
    assert per_step == {s: s * row_bytes for s in range(steps)}  # the whole past, every step
    t = totals(storage_events(context))
    assert t["storage_reuse_count"] == 0
    assert t["storage_allocations"] == steps * len(BINDINGS)


def test_no_events_when_recording_is_off(attention_model):
    state = new_state(attention_model, capacity=4)
    context = new_context()
    for x in token_inputs(6, prefill=0):
        state.run(context, {"x": x})
    assert context.events() == []
    assert state.values["past_key_0"].shape[2] == 6


def test_kernel_usage_names_the_in_place_appends(models):
    names = {}
    for attention, model in models.items():
        state = new_state(model)
        context = new_context()
        context.set_kernel_usage_enabled(True)
        for x in token_inputs(2):
            state.run(context, {"x": x})
        names[attention] = context.get_kernel_usage()
    assert names["Attention"].count("Attention/float32/persistent-append") == 3 * LAYERS
    assert names["Concat"].count("Concat/any/persistent-append") == 3 * 2 * LAYERS
    assert not any("persistent-append" in n for n in names["Concat"] if not n.startswith("Concat/"))


def test_stateless_runs_never_append_in_place(attention_model):
    context = new_context(events_enabled=True)
    context.set_kernel_usage_enabled(True)
    stateless = runtime.RuntimeSession(attention_model)
    past = empty_cache()
    for x in token_inputs(3):
        out = stateless.run(context, {"x": x, **past})
        past = {inp: np.array(out[o]) for inp, o in BINDINGS.items()}
    assert storage_events(context) == []
    assert not any("persistent-append" in n for n in context.get_kernel_usage())


# ---- as_dict schema --------------------------------------------------------------------------------


def test_as_dict_has_storage_keys_only_for_storage_events(attention_model):
    state = new_state(attention_model, capacity=2)
    context = new_context(events_enabled=True)
    context.put("unrelated", np.ones(2, np.float32))
    for x in token_inputs(3):
        state.run(context, {"x": x})
    by_action = {}
    for event in context.events():
        d = event.as_dict()
        by_action.setdefault(d["action"], []).append(d)
    assert {"add", "run_node", "persistent_storage"} <= set(by_action)
    base = None
    for action, dicts in by_action.items():
        if action == "persistent_storage":
            for d in dicts:
                assert STORAGE_KEYS <= set(d)
                assert all(type(d[k]) is int for k in STORAGE_KEYS)
            continue
        for d in dicts:
            assert not STORAGE_KEYS & set(d), action
            base = base or set(d)
            assert set(d) == base, action
    storage = by_action["persistent_storage"][0]
    assert set(storage) == base | STORAGE_KEYS


# ---- failure atomicity -----------------------------------------------------------------------------


def hooked_decoder(attention_model, domain):
    """The decoder with y passed through a custom `Hook` node after everything else has run (after
    every in-place append)."""
    model = type(attention_model)()
    model.CopyFrom(attention_model)
    last = model.graph.node[-1]
    assert list(last.output) == ["y"]
    last.output[0] = "y_raw"
    model.graph.node.append(helper.make_node("Hook", ["y_raw"], ["y"], domain=domain))
    model.opset_import.append(helper.make_opsetid(domain, 1))
    return model


def snapshot(state):
    return {name: (np.array(t), np.asarray(t).__array_interface__["data"][0]) for name, t in state.values.items()}


def assert_unchanged(state, before):
    after = snapshot(state)
    for name, (data, address) in before.items():
        np.testing.assert_array_equal(after[name][0], data, err_msg=name)
        assert after[name][1] == address, f"{name} moved"


def test_failure_after_the_appends_leaves_the_state_unchanged(attention_model):
    kernels = runtime.KernelContext(runtime.default_opset(23))
    fail = {"now": False}

    def hook(y):
        if fail["now"]:
            raise RuntimeError("hook asked to fail")
        return np.array(y)

    runtime.register_kernel("test.hook", "Hook", hook, kernel_context=kernels)
    model = hooked_decoder(attention_model, "test.hook")
    xs = token_inputs(8)
    want = stateless_loop(attention_model, xs)
    state = new_state(model, capacity=4, kernel_context=kernels)
    context = new_context(kernels, events_enabled=True)
    for step, x in enumerate(xs):
        # Rows 5 (prefill), 6 (grows to 10), 7 and 9 (reuse the buffer): fail at a growth and at reuses.
        if step in (1, 2, 4):
            before = snapshot(state)
            context.clear_events()
            fail["now"] = True
            with pytest.raises(ValueError, match="hook asked to fail"):
                state.run(context, {"x": x})
            fail["now"] = False
            assert_unchanged(state, before)
            appended = totals(storage_events(context))["storage_append_copied_bytes"]
            assert appended == len(BINDINGS) * HEADS * HEAD_SIZE * 4, "the call failed after its appends"
        assert_step_equal(state.run(context, {"x": x}), want[step], 1e-5, step)


def test_bad_feed_shape_leaves_the_state_unchanged(attention_model):
    xs = token_inputs(4)
    want = stateless_loop(attention_model, xs)
    state = new_state(attention_model, capacity=4)
    context = new_context()
    for step, x in enumerate(xs):
        before = snapshot(state)
        with pytest.raises(ValueError):
            state.run(context, {"x": np.ones((1, 1, D_MODEL + 1), np.float32)})
        assert_unchanged(state, before)
        assert_step_equal(state.run(context, {"x": x}), want[step], 1e-5, step)


# ---- held outputs and lifecycle --------------------------------------------------------------------


def test_held_outputs_stay_as_they_were(attention_model):
    xs = token_inputs(12)
    want = stateless_loop(attention_model, xs)
    state = new_state(attention_model, capacity=4)
    context = new_context()
    held = [state.run(context, {"x": x}) for x in xs]
    for step, out in enumerate(held):
        assert_step_equal(out, want[step], 1e-5, step)
    # Two consecutive steps that shared a buffer: the earlier one is a prefix view of it.
    a, b = np.asarray(held[-2]["present_key_0"]), np.asarray(held[-1]["present_key_0"])
    assert np.shares_memory(a, b)

    values = state.values
    for name, t in values.items():
        assert t.readonly
        view = np.asarray(t)
        assert not view.flags.writeable
        with pytest.raises(ValueError):
            view[...] = 0

    state.reset(empty_cache())
    assert state.values["past_key_0"].shape[2] == 0
    for step, out in enumerate(held):
        assert_step_equal(out, want[step], 1e-5, step)
    np.testing.assert_array_equal(np.asarray(values["past_key_0"]), want[-1]["present_key_0"])

    state.run(context, {"x": xs[0]})  # after reset, a fresh buffer; the held views are untouched
    state.close()
    assert state.closed
    for step, out in enumerate(held):
        assert_step_equal(out, want[step], 1e-5, step)
    with pytest.raises(RuntimeError, match="closed"):
        state.run(context, {"x": xs[1]})
    with pytest.raises(RuntimeError, match="closed"):
        state.reset(empty_cache())
    assert state.values == {}


@pytest.mark.parametrize("attention", ["Attention", "Concat"])
def test_bound_outputs_are_read_only(models, attention):
    """Writing into a returned present_* would change the state's cache (and earlier results that
    share its buffer): they are handed out read-only; the ordinary output y stays writable."""
    state = new_state(models[attention], capacity=4)
    context = new_context()
    for x in token_inputs(3):
        out = state.run(context, {"x": x})
        before = np.array(state.values["past_key_0"])
        for name in BINDINGS.values():
            assert out[name].readonly and not np.asarray(out[name]).flags.writeable, name
            with pytest.raises(ValueError):
                np.asarray(out[name])[...] = 0
        np.testing.assert_array_equal(np.asarray(state.values["past_key_0"]), before)
        assert np.asarray(out["y"]).flags.writeable


def test_reset_restarts_the_decode(attention_model):
    xs = token_inputs(5)
    want = stateless_loop(attention_model, xs)
    state = new_state(attention_model, capacity=4)
    context = new_context()
    for x in xs:
        state.run(context, {"x": x})
    state.reset(empty_cache())
    for step, x in enumerate(xs):
        assert_step_equal(state.run(context, {"x": x}), want[step], 1e-5, step)


def test_feed_errors(attention_model):
    state = new_state(attention_model)
    context = new_context()
    x = token_inputs(0)[0]
    with pytest.raises(ValueError, match="past_key_0.*do not feed"):
        state.run(context, {"x": x, "past_key_0": empty_cache()["past_key_0"]})
    with pytest.raises(KeyError, match="nonsense"):
        state.run(context, {"x": x, "nonsense": x})
    with pytest.raises(ValueError):
        state.run(context, {})  # x is required
    assert state.values["past_key_0"].shape[2] == 0
    state.run(context, {"x": x})
    assert state.values["past_key_0"].shape[2] == 5


def test_overlapping_call_from_another_thread_raises(attention_model):
    kernels = runtime.KernelContext(runtime.default_opset(23))
    entered, release = threading.Event(), threading.Event()

    def hook(y):
        entered.set()
        assert release.wait(30), "never released"
        return np.array(y)

    runtime.register_kernel("test.gate", "Hook", hook, kernel_context=kernels)
    state = new_state(hooked_decoder(attention_model, "test.gate"), kernel_context=kernels)
    x = token_inputs(0)[0]
    errors = []

    def first():
        try:
            state.run(new_context(kernels), {"x": x})
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert entered.wait(30), "the first call never reached the hook"
        with pytest.raises(RuntimeError, match="another call is in progress"):
            state.run(new_context(kernels), {"x": x})
        with pytest.raises(RuntimeError, match="another call is in progress"):
            state.reset(empty_cache())
        with pytest.raises(RuntimeError, match="another call is in progress"):
            state.close()
    finally:
        release.set()
        thread.join(30)
    assert errors == []
    assert state.values["past_key_0"].shape[2] == 5
    state.run(new_context(kernels), {"x": x[:, :1]})
    assert state.values["past_key_0"].shape[2] == 6


# ---- validation ------------------------------------------------------------------------------------


def test_validation_errors(attention_model):
    def make(bindings, initial=None):
        declared = runtime.with_persistent_bindings(attention_model, bindings)
        return runtime.PersistentValueState(declared, empty_cache() if initial is None else initial)

    with pytest.raises(KeyError, match="'present_nope' is not a graph output"):
        make({**BINDINGS, "past_key_0": "present_nope"})
    with pytest.raises(KeyError, match="'past_nope' is not a graph input"):
        make({"past_nope": "present_key_0"}, {})
    with pytest.raises(ValueError, match="output 'present_key_0' is bound more than once"):
        make({**BINDINGS, "past_value_0": "present_key_0"})
    with pytest.raises(ValueError, match="declares no persistent bindings"):
        runtime.PersistentValueState(attention_model, {})
    with pytest.raises(ValueError, match="must include bound input 'past_value_1'"):
        make(BINDINGS, {k: v for k, v in empty_cache().items() if k != "past_value_1"})
    with pytest.raises(KeyError, match="'x' is not a bound input"):
        make(BINDINGS, {**empty_cache(), "x": np.zeros((1, 1, D_MODEL), np.float32)})
    with pytest.raises(ValueError, match="expected float32, got float16|expected float, got float16"):
        make(BINDINGS, {**empty_cache(), "past_key_0": np.zeros((1, HEADS, 0, HEAD_SIZE), np.float16)})
    with pytest.raises(ValueError, match="expected rank 4"):
        make(BINDINGS, {**empty_cache(), "past_key_0": np.zeros((HEADS, 0, HEAD_SIZE), np.float32)})
    state = make(BINDINGS)
    with pytest.raises(ValueError, match="expected rank 4"):
        state.reset({**empty_cache(), "past_key_0": np.zeros((1, 1), np.float32)})
    assert state.bindings == BINDINGS


# ---- concurrency -----------------------------------------------------------------------------------


def test_concurrent_states_match_sequential_runs(attention_model, concat_model):
    models = [attention_model, concat_model, attention_model, concat_model]
    inputs = [token_inputs(16, prefill=3, seed=10 + i) for i in range(len(models))]

    def decode(i):
        state = new_state(models[i], capacity=4)
        context = new_context(events_enabled=True)
        return [{k: np.array(v) for k, v in state.run(context, {"x": x}).items()} for x in inputs[i]]

    sequential = [decode(i) for i in range(len(models))]
    results, errors = [None] * len(models), []

    def worker(i):
        try:
            results[i] = decode(i)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(models))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    for i in range(len(models)):
        for step, (got, want) in enumerate(zip(results[i], sequential[i])):
            for name in want:
                np.testing.assert_array_equal(got[name], want[name], err_msg=f"thread {i} step {step} {name}")


def test_concat_on_the_sequence_axis_of_a_flat_cache_appends_in_place():
    """The [batch, length, heads * head_size] cache layout (Concat on axis 1), as some exports
    keep it: in place from an empty cache, no prefix copy, every row where it belongs."""
    width = 12
    graph = helper.make_graph(
        [helper.make_node("Concat", ["past", "x"], ["present"], axis=1),
         helper.make_node("ReduceSum", ["present"], ["total"], keepdims=0)],
        "flat_cache",
        [helper.make_tensor_value_info("past", TensorProto.FLOAT, [2, "past_len", width]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, width])],
        [helper.make_tensor_value_info("present", TensorProto.FLOAT, [2, "len", width]),
         helper.make_tensor_value_info("total", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    state = runtime.PersistentValueState(runtime.with_persistent_bindings(model, {"past": "present"}),
                                         {"past": np.zeros((2, 0, width), np.float32)})
    context = new_context(events_enabled=True)
    context.set_kernel_usage_enabled(True)
    rng = np.random.default_rng(5)
    rows = []
    for _ in range(40):
        x = rng.standard_normal((2, 1, width)).astype(np.float32)
        rows.append(x)
        out = state.run(context, {"x": x})
    np.testing.assert_array_equal(np.asarray(out["present"]), np.concatenate(rows, axis=1))
    assert set(context.get_kernel_usage()) >= {"Concat/any/persistent-append"}
    t = totals(storage_events(context))
    assert t["storage_prefix_copied_bytes"] == 0 and t["storage_allocations"] == 1
    assert t["storage_append_copied_bytes"] == 2 * 40 * width * 4
