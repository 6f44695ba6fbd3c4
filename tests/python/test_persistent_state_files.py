"""PersistentValueState on models the way exporters write them: weights in `model.onnx.data`
beside the model (torch's dynamo exporter always does this), and the cache read by Shape next to
the Concat that extends it. The bound model must keep its external data resolvable whether the
state is built from the path, from with_persistent_bindings' ModelBytes, or from bytes plus
base_dir."""

from __future__ import annotations

import os
import pickle

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime
from onnx_light import summary

H, D = 2, 4


def decoder_like_model():
    """k = Reshape(x @ W); present = Concat(past, k) on the sequence axis; y = x + len(past):
    the length comes from Shape(past), the dynamo exporter's extra reader of the cache."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((H * D, H * D)).astype(np.float32), "W")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["kx"]),
        helper.make_node("Reshape", ["kx", "k_shape"], ["k"]),
        helper.make_node("Concat", ["past", "k"], ["present"], axis=2),
        helper.make_node("Shape", ["past"], ["past_shape"]),
        helper.make_node("Gather", ["past_shape", "two"], ["past_len"], axis=0),
        helper.make_node("Cast", ["past_len"], ["past_len_f"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["x", "past_len_f"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "decoder_like",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, H * D]),
         helper.make_tensor_value_info("past", TensorProto.FLOAT, [1, H, "past_len", D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, H * D]),
         helper.make_tensor_value_info("present", TensorProto.FLOAT, [1, H, "len", D])],
        initializer=[w, numpy_helper.from_array(np.array([1, H, 1, D], np.int64), "k_shape"),
                     numpy_helper.from_array(np.array(2, np.int64), "two")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


@pytest.fixture
def model_path(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    path = folder / "model.onnx"
    onnx.save(decoder_like_model(), path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="model.onnx.data", size_threshold=0)
    assert (folder / "model.onnx.data").stat().st_size > 0
    return path


EMPTY = {"past": np.zeros((1, H, 0, D), np.float32)}


def decode(state, steps=6):
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(20)), events_enabled=True)
    context.set_kernel_usage_enabled(True)
    rng = np.random.default_rng(1)
    outs = [state.run(context, {"x": rng.standard_normal((1, 1, H * D)).astype(np.float32)}) for _ in range(steps)]
    return outs, context


def stateless(path, steps=6):
    session = runtime.RuntimeSession(str(path))
    rng = np.random.default_rng(1)
    past, outs = EMPTY["past"], []
    for _ in range(steps):
        out = session.run({"x": rng.standard_normal((1, 1, H * D)).astype(np.float32), "past": past})
        past = np.asarray(out["present"])
        outs.append(out)
    return outs


def check_decode(state, path):
    got, context = decode(state)
    want = stateless(path)
    for step, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(np.asarray(g["y"]), np.asarray(w["y"]), err_msg=f"step {step}")
        np.testing.assert_array_equal(np.asarray(g["present"]), np.asarray(w["present"]), err_msg=f"step {step}")
    assert "Concat/any/persistent-append" in context.get_kernel_usage()
    assert summary.storage_totals(context.events())["storage_prefix_copied_bytes"] == 0


def test_bindings_from_a_path_remember_the_folder(model_path):
    bound = runtime.with_persistent_bindings(model_path, {"past": "present"})
    assert isinstance(bound, bytes) and isinstance(bound, runtime.ModelBytes)
    assert os.path.samefile(bound.base_dir, model_path.parent)
    check_decode(runtime.PersistentValueState(bound, EMPTY), model_path)


def test_state_from_a_bound_file_on_disk(model_path):
    bound = runtime.with_persistent_bindings(model_path, {"past": "present"})
    bound_path = model_path.parent / "bound.onnx"
    bound_path.write_bytes(bound)
    check_decode(runtime.PersistentValueState(bound_path, EMPTY), model_path)
    check_decode(runtime.PersistentValueState(str(bound_path), EMPTY), model_path)


def test_plain_bytes_need_a_base_dir(model_path):
    plain = bytes(runtime.with_persistent_bindings(model_path, {"past": "present"}))
    with pytest.raises(runtime.Error, match="base director"):
        runtime.PersistentValueState(plain, EMPTY)
    check_decode(runtime.PersistentValueState(plain, EMPTY, base_dir=model_path.parent), model_path)
    check_decode(runtime.PersistentValueState(plain, EMPTY, base_dir=str(model_path.parent)), model_path)


def test_a_model_proto_without_its_data_takes_a_base_dir(model_path):
    proto = onnx.load(model_path, load_external_data=False)
    bound = runtime.with_persistent_bindings(proto, {"past": "present"}, base_dir=model_path.parent)
    assert os.path.samefile(bound.base_dir, model_path.parent)
    check_decode(runtime.PersistentValueState(bound, EMPTY), model_path)
    # Rebinding keeps the folder the argument remembered.
    again = runtime.with_persistent_bindings(bound, {})
    assert again.base_dir == bound.base_dir


def test_an_explicit_base_dir_wins_over_the_remembered_one(model_path, tmp_path):
    bound = runtime.with_persistent_bindings(model_path, {"past": "present"})
    with pytest.raises(runtime.Error, match="model.onnx.data"):
        runtime.PersistentValueState(bound, EMPTY, base_dir=tmp_path)  # no data file there


def test_base_dir_with_a_path_is_refused(model_path):
    with pytest.raises(ValueError, match="base_dir"):
        runtime.with_persistent_bindings(model_path, {"past": "present"}, base_dir=model_path.parent)
    with pytest.raises(ValueError, match="base_dir"):
        runtime.PersistentValueState(model_path, EMPTY, base_dir=model_path.parent)
    with pytest.raises(ValueError, match="base_dir"):
        runtime.RuntimeSession(model_path, base_dir=model_path.parent)
    with pytest.raises(TypeError, match="base_dir"):
        runtime.RuntimeSession(model_path.read_bytes(), base_dir=3)
    with pytest.raises(TypeError, match="base_dir"):
        runtime.with_persistent_bindings(model_path.read_bytes(), {"past": "present"}, base_dir=3)


def test_runtime_session_reads_model_bytes_with_their_folder(model_path):
    bound = runtime.with_persistent_bindings(model_path, {"past": "present"})
    session = runtime.RuntimeSession(bound)
    out = session.run({"x": np.ones((1, 1, H * D), np.float32), "past": EMPTY["past"]})
    assert np.asarray(out["present"]).shape == (1, H, 1, D)
    session = runtime.RuntimeSession(model_path.read_bytes(), base_dir=model_path.parent)
    assert np.asarray(session.run({"x": np.ones((1, 1, H * D), np.float32), "past": EMPTY["past"]})["y"]).shape == (
        1, 1, H * D)


def test_model_bytes_pickle_with_their_folder(model_path):
    bound = runtime.with_persistent_bindings(model_path, {"past": "present"})
    copy = pickle.loads(pickle.dumps(bound))
    assert type(copy) is runtime.ModelBytes and copy == bound and copy.base_dir == bound.base_dir
    assert "base_dir=" in repr(bound) and len(repr(bound)) < 200
    assert runtime.ModelBytes(b"abc").base_dir is None
