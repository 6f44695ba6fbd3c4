"""Names and strings that are not UTF-8 (python/src/names.cc, error_bindings.cc): errors keep their
documented type with the bad bytes shown as \\xNN; names come back with surrogate escapes that
encode to the original bytes; string elements that are not UTF-8 come back as bytes."""

import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime


def new_context(**kwargs):
    return runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), **kwargs)


def patched(model, replacements):
    """The model's bytes with placeholder names replaced by raw bytes of the same length (so no
    length prefix changes): ONNX tooling refuses to build such names directly."""
    data = model.SerializeToString()
    for old, new in replacements.items():
        assert len(old) == len(new) and old in data
        data = data.replace(old, new)
    return data


def identity_model(op="Identity", dtype=TensorProto.FLOAT):
    graph = helper.make_graph(
        [helper.make_node(op, ["in_Q"], ["outQ"], name="nodeQ")], "g",
        [helper.make_tensor_value_info("in_Q", dtype, [3])], [helper.make_tensor_value_info("outQ", dtype, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


BAD_NAMES = {b"in_Q": b"in_\xff", b"outQ": b"out\xfe", b"nodeQ": b"node\xc3"}


def raw(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


def test_unknown_operator_with_invalid_utf8_name_is_not_implemented():
    model = patched(identity_model("RelQ"), {b"RelQ": b"Rel\xff"})
    # The schema-function fallback (onnx_light.function_expansion) sees the name as bytes and
    # must decline quietly rather than warn that it failed.
    with pytest.raises(NotImplementedError) as error, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runtime.RuntimeSession(model)
    assert not [str(w.message) for w in caught]
    assert r"Rel\xff" in str(error.value)
    ops = runtime.model_info(model)["operators"]
    assert [raw(op["op_type"]) for op in ops] == [b"Rel\xff"]


def test_invalid_utf8_input_and_output_names_can_be_fed_and_read_back():
    model = patched(identity_model(), BAD_NAMES)
    session = runtime.RuntimeSession(model)
    (name_in,) = session.input_names
    (name_out,) = session.output_names
    assert raw(name_in) == b"in_\xff" and raw(name_out) == b"out\xfe"
    assert [raw(v["name"]) for v in session.inputs] == [b"in_\xff"]
    assert session.required_input_names == [name_in]
    x = np.arange(3, dtype=np.float32)
    context = new_context(events_enabled=True)
    out = session.run(context, {name_in: x})
    assert list(out) == [name_out]
    assert raw(out[name_out].name) == b"out\xfe"
    np.testing.assert_array_equal(out[name_out].numpy(), x)
    assert r"out\xfe" in repr(out[name_out])
    # bytes keys name the same input.
    out = session.run(new_context(), {b"in_\xff": x})
    np.testing.assert_array_equal(out[name_out].numpy(), x)
    # Events carry the names the same way.
    run_node = [e for e in context.events() if e.action == runtime.RuntimeEventAction.kRunNode]
    assert [raw(e.name) for e in run_node] == [b"node\xc3"]
    assert [raw(n) for n in run_node[0].inputs] == [b"in_\xff"]
    assert raw(run_node[0].as_dict()["name"]) == b"node\xc3"
    assert {raw(e.name) for e in context.events()} >= {b"in_\xff", b"out\xfe"}
    assert r"node\xc3" in repr(run_node[0])
    # And the context's value names.
    assert name_in in context and raw(next(iter(context.tensors()))) in (b"in_\xff", b"out\xfe")
    np.testing.assert_array_equal(np.asarray(context.get(name_out)), x)
    info = runtime.model_info(model)
    assert [raw(v["name"]) for v in info["outputs"]] == [b"out\xfe"]


def test_unknown_feed_with_invalid_utf8_name_is_a_key_error():
    session = runtime.RuntimeSession(identity_model())
    with pytest.raises(KeyError) as error:
        session.run(new_context(), {b"zz\xff": np.zeros(3, np.float32)})
    assert r"zz\xff" in error.value.args[0]


def test_feed_errors_quote_invalid_utf8_names_escaped():
    session = runtime.RuntimeSession(patched(identity_model(), BAD_NAMES))
    with pytest.raises(ValueError) as error:
        session.run(new_context(), {b"in_\xff": np.zeros(3, np.int32)})
    assert r"in_\xff" in str(error.value)
    with pytest.raises(TypeError) as error:
        session.run(new_context(), {b"in_\xff": object()})
    assert r"in_\xff" in str(error.value)


def test_string_output_with_invalid_utf8_comes_back_as_bytes():
    strings = np.array([b"ok", b"\xff\xfe", "caf\u00e9".encode()], dtype=object)
    init = numpy_helper.from_array(strings, "s")
    graph = helper.make_graph([helper.make_node("Identity", ["s"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, [3])], initializer=[init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    out = runtime.RuntimeSession(model).run(new_context(), {})["y"].numpy()
    assert out.dtype == object
    assert out.tolist() == ["ok", b"\xff\xfe", "caf\u00e9"]


def test_string_feed_elements_round_trip_bytes_and_str():
    session = runtime.RuntimeSession(identity_model(dtype=TensorProto.STRING))
    x = np.array(["plain", b"\x80raw", "\udcff"], dtype=object)  # the last: the escaped byte 0xff
    out = session.run(new_context(), {"in_Q": x})["outQ"].numpy()
    assert out.tolist() == ["plain", b"\x80raw", b"\xff"]


def test_a_lone_surrogate_name_is_a_value_error():
    session = runtime.RuntimeSession(identity_model())
    with pytest.raises(ValueError, match="surrogate"):
        session.run(new_context(), {"\ud800": np.zeros(3, np.float32)})
    session = runtime.RuntimeSession(identity_model(dtype=TensorProto.STRING))
    with pytest.raises(ValueError, match=r"feed 'in_Q' element 1 .*surrogate"):
        session.run(new_context(), {"in_Q": np.array(["a", "\ud800", "c"], dtype=object)})


def test_persistent_state_names_round_trip():
    graph = helper.make_graph(
        [helper.make_node("Concat", ["pastQ", "x"], ["presQ"], axis=0)], "g",
        [helper.make_tensor_value_info("pastQ", TensorProto.FLOAT, ["p"]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("presQ", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    model = patched(model, {b"pastQ": b"past\xff", b"presQ": b"pres\xff"})
    past, present = b"past\xff".decode("utf-8", "surrogateescape"), b"pres\xff".decode("utf-8", "surrogateescape")
    declared = runtime.with_persistent_bindings(model, {past: present})
    state = runtime.PersistentValueState(declared, initial={past: np.zeros(0, np.float32)})
    assert state.bindings == {past: present}
    out = state.run(new_context(), {"x": np.ones(1, np.float32)})
    assert list(out) == [present]
    assert list(state.values) == [past]
    state.reset({b"past\xff": np.zeros(2, np.float32)})
    assert np.asarray(state.values[past]).tolist() == [0.0, 0.0]
