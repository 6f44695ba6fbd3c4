"""Feeds are never misread (python/src/tensor_bindings.cc): arrays in the other byte order are
refused with a clear ValueError, and bool feeds whose bytes are not all 0/1 are normalised on a copy,
by every route a tensor enters the runtime (session feeds, runtime.Tensor, DLPack, context.put,
PersistentValueState's initial values and reset)."""

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from event_models import concat_cache_model
from node_check import make_model, node_model, run_ours

BF16 = np.dtype(ml_dtypes.bfloat16)


def new_context():
    return runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))


def identity(x):
    return node_model("Identity", {"x": x})


def foreign(dtype):
    """`dtype` in the byte order this machine does not use."""
    return np.dtype(dtype).newbyteorder("S")


class DLPackOnly:
    """A producer that offers only the DLPack protocol (the route C extensions take)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None, **kwargs):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


# ---- byte order ----------------------------------------------------------------------------------

BYTE_ORDER_TYPES = [np.float32, np.float64, np.float16, np.int16, np.int32, np.int64, np.uint16, np.uint32,
                    np.uint64, np.complex64, BF16]


@pytest.mark.parametrize("dtype", BYTE_ORDER_TYPES, ids=lambda d: np.dtype(d).name)
def test_foreign_byte_order_feed_is_a_clear_value_error(dtype):
    native = np.arange(1, 7).reshape(2, 3).astype(dtype)
    swapped = native.astype(foreign(dtype))
    assert not swapped.dtype.isnative
    np.testing.assert_array_equal(swapped, native)  # the same values, other bytes
    session = runtime.RuntimeSession(identity(native))
    with pytest.raises(ValueError) as error:
        session.run(new_context(), {"x": swapped})
    message = str(error.value)
    assert "feed 'x'" in message and swapped.dtype.str in message and "newbyteorder('=')" in message
    # The conversion the message suggests gives a feed that reads right.
    fixed = swapped.astype(swapped.dtype.newbyteorder("="))
    out = session.run(new_context(), {"x": fixed})["y0"].numpy()
    np.testing.assert_array_equal(out, native)


def test_foreign_byte_order_is_refused_by_every_route():
    swapped = np.arange(4, dtype=">f4" if np.little_endian else "<f4")
    with pytest.raises(ValueError, match="feed 't'.*byte order"):
        runtime.Tensor(swapped, "t")
    with pytest.raises(ValueError, match="feed 'v'.*byte order"):
        new_context().put("v", swapped)
    declared = runtime.with_persistent_bindings(concat_cache_model(), {"past": "present"})
    past = np.zeros((1, 2, 0, 4), np.float32)
    with pytest.raises(ValueError, match="feed 'past'.*byte order"):
        runtime.PersistentValueState(declared, initial={"past": past.astype(foreign(np.float32))})
    state = runtime.PersistentValueState(declared, initial={"past": past})
    with pytest.raises(ValueError, match="feed 'past'.*byte order"):
        state.reset({"past": past.astype(foreign(np.float32))})
    state.run(new_context(), {"x": np.ones((1, 2, 1, 4), np.float32)})  # still usable


def test_structured_arrays_are_refused_not_misread():
    # No ONNX type is a record, so a structured array (whatever its fields' byte order) never
    # reaches the byte-order check: it is refused as a type.
    for fields in ([("a", ">i4"), ("b", "<f4")], [("a", "=i4")]):
        with pytest.raises(TypeError, match="feed 'r'.*no ONNX tensor type"):
            runtime.Tensor(np.zeros(3, dtype=fields), "r")


def test_single_byte_and_bool_arrays_have_no_byte_order_to_check():
    for x in (np.array([1, 2], np.int8), np.array([True, False]), np.array([3], np.uint8)):
        out = run_ours(identity(x), {"x": x})[0]
        np.testing.assert_array_equal(out, x)


# ---- bool bytes ----------------------------------------------------------------------------------

def bad_bool(raw=(2, 0, 1, 255, 0, 128)):
    """A bool array whose bytes include values other than 0 and 1 (true for NumPy: non-zero)."""
    return np.array(raw, np.uint8).view(np.bool_)


def test_not_of_a_bool_feed_with_other_bytes_is_logical():
    x = bad_bool()
    out = run_ours(node_model("Not", {"x": x}), {"x": x})[0]
    assert out.view(np.uint8).tolist() == [0, 1, 0, 0, 1, 0]
    assert x.view(np.uint8).tolist() == [2, 0, 1, 255, 0, 128]  # the caller's array is untouched


def test_bool_feed_with_other_bytes_is_copied_and_normalised():
    x = bad_bool()
    session = runtime.RuntimeSession(identity(x))
    y = np.asarray(session.run(new_context(), {"x": x})["y0"])
    assert y.view(np.uint8).tolist() == [1, 0, 1, 1, 0, 1]
    assert not np.shares_memory(x, y)


def test_valid_bool_feed_is_still_viewed_without_copy():
    x = np.array([True, False, True])
    session = runtime.RuntimeSession(identity(x))
    y = np.asarray(session.run(new_context(), {"x": x})["y0"])
    assert np.shares_memory(x, y)


@pytest.mark.parametrize("shape", [(), (0,), (4, 3), (2, 1, 5)], ids=str)
def test_bool_normalisation_keeps_the_shape(shape):
    raw = (np.arange(int(np.prod(shape)), dtype=np.uint8) * 3).reshape(shape)
    x = raw.view(np.bool_)
    out = run_ours(node_model("Not", {"x": x}), {"x": x})[0]
    assert out.shape == shape
    assert out.view(np.uint8).tolist() == (raw == 0).astype(np.uint8).tolist()


def test_bool_from_dlpack_with_other_bytes_is_normalised():
    x = bad_bool()
    out = run_ours(node_model("Not", {"x": x}), {"x": DLPackOnly(x)})[0]
    assert out.view(np.uint8).tolist() == [0, 1, 0, 0, 1, 0]


def test_runtime_tensor_of_bool_bytes_is_normalised_when_built_and_when_fed():
    t = runtime.Tensor(bad_bool(), "t")
    assert np.asarray(t).view(np.uint8).tolist() == [1, 0, 1, 1, 0, 1]
    # A valid tensor is a view: bytes written into the caller's array afterwards are seen at the
    # next feed, and normalised then.
    raw = np.array([1, 0, 1], np.uint8)
    t = runtime.Tensor(raw.view(np.bool_), "t")
    raw[0], raw[1] = 7, 64
    x = np.zeros(3, np.bool_)
    out = run_ours(node_model("Not", {"x": x}), {"x": t})[0]
    assert out.view(np.uint8).tolist() == [0, 0, 0]


def test_context_put_normalises_bool_bytes():
    context = new_context()
    context.put("flags", bad_bool((0, 9)))
    assert np.asarray(context.get("flags")).view(np.uint8).tolist() == [0, 1]


def test_persistent_state_normalises_initial_and_reset_values():
    graph = helper.make_graph(
        [helper.make_node("Concat", ["past", "x"], ["present"], axis=0),
         helper.make_node("Not", ["present"], ["y0"])],
        "bools",
        [helper.make_tensor_value_info("past", TensorProto.BOOL, ["p"]),
         helper.make_tensor_value_info("x", TensorProto.BOOL, [1])],
        [helper.make_tensor_value_info("y0", TensorProto.BOOL, None),
         helper.make_tensor_value_info("present", TensorProto.BOOL, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    declared = runtime.with_persistent_bindings(model, {"past": "present"})
    state = runtime.PersistentValueState(declared, initial={"past": bad_bool((4, 0))})
    assert np.asarray(state.values["past"]).view(np.uint8).tolist() == [1, 0]
    out = state.run(new_context(), {"x": bad_bool((0,))})
    assert out["y0"].numpy().view(np.uint8).tolist() == [0, 1, 1]
    state.reset({"past": bad_bool((0, 0, 200))})
    assert np.asarray(state.values["past"]).view(np.uint8).tolist() == [0, 0, 1]
    out = state.run(new_context(), {"x": bad_bool((3,))})
    assert out["y0"].numpy().view(np.uint8).tolist() == [1, 1, 0, 0]


def test_bool_sequence_items_are_normalised():
    x = np.zeros(2, np.bool_)
    model = make_model([helper.make_node("SequenceAt", ["s", "i"], ["y0"])],
                       {"i": np.array(0, np.int64)}, ["y0"])
    seq_type = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.BOOL, None))
    model.graph.input.insert(0, helper.make_value_info("s", seq_type))
    out = run_ours(model, {"s": [bad_bool((5, 0)), x], "i": np.array(0, np.int64)})[0]
    assert out.view(np.uint8).tolist() == [1, 0]
