"""How a session relates to what it was built from: load modes for model files and external
data, Python buffers (bytes viewed, every other buffer copied), regular files only, and bool
constants normalised at load."""

import mmap
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime

WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
X = np.array([10.0, 20.0, 30.0, 40.0], np.float32)
EXPECTED = X + WEIGHTS


def add_model(weights=WEIGHTS):
    """y = x + w for 4 floats, w an initializer."""
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "add",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                              initializer=[numpy_helper.from_array(weights, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


def new_context():
    return runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))


def run_add(session):
    return np.asarray(session.run(new_context(), {"x": X})["y"])


def save_external(model, path):
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)


def run_isolated(code, timeout=60):
    """Runs `code` in a fresh interpreter (a hang fails the test after `timeout` seconds)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ))


# --- RuntimeSessionOptions.load_mode ---------------------------------------------------------

def test_load_mode_option():
    assert runtime.RuntimeSessionOptions().load_mode == "copy"
    assert runtime.RuntimeSessionOptions(load_mode="map").load_mode == "map"
    options = runtime.RuntimeSessionOptions()
    options.load_mode = "map"
    assert options.load_mode == "map"
    with pytest.raises(ValueError, match="load_mode must be 'copy' or 'map', got 'mmap'"):
        runtime.RuntimeSessionOptions(load_mode="mmap")
    with pytest.raises(ValueError):
        options.load_mode = "Copy"
    assert options.load_mode == "map"
    with pytest.raises(TypeError):
        runtime.RuntimeSessionOptions(32, 0, None, True, "copy")   # keyword only


# --- copy mode: later changes to the files do not reach the session --------------------------

@pytest.mark.parametrize("external", [False, True], ids=["inline", "external"])
def test_copy_mode_ignores_truncated_and_rewritten_files(tmp_path, external):
    path = tmp_path / "model.onnx"
    save_external(add_model(), path) if external else onnx.save(add_model(), str(path))
    session = runtime.RuntimeSession(str(path))       # copy is the default
    np.testing.assert_array_equal(run_add(session), EXPECTED)
    data = tmp_path / "weights.bin" if external else path
    for change in ("truncate", "rewrite", "delete"):
        if change == "truncate":
            os.truncate(data, 0)
        elif change == "rewrite":
            data.write_bytes(np.full(64, 7.0, np.float32).tobytes())
        else:
            data.unlink()
        np.testing.assert_array_equal(run_add(session), EXPECTED)


@pytest.mark.parametrize("external", [False, True], ids=["inline", "external"])
def test_map_mode_loads_the_same_model(tmp_path, external):
    path = tmp_path / "model.onnx"
    save_external(add_model(), path) if external else onnx.save(add_model(), str(path))
    options = runtime.RuntimeSessionOptions(load_mode="map")
    np.testing.assert_array_equal(run_add(runtime.RuntimeSession(path, options)), EXPECTED)
    info = runtime.model_info(str(path), options=options)
    assert info["initializer_count"] == 1
    assert runtime.model_info(str(path))["initializer_count"] == 1


def stateful_model_file(folder):
    """model.onnx in `folder` with w in weights.bin: y = x + w, and q = p fed back (p <- q)."""
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"]), helper.make_node("Identity", ["p"], ["q"])],
                              "stateful",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                               helper.make_tensor_value_info("p", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]),
                               helper.make_tensor_value_info("q", TensorProto.FLOAT, [4])],
                              initializer=[numpy_helper.from_array(WEIGHTS, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    path = folder / "model.onnx"
    save_external(model, path)
    path.write_bytes(runtime.with_persistent_bindings(str(path), {"p": "q"}))
    return path


@pytest.mark.parametrize("mode", ["copy", "map"])
def test_persistent_state_loads_with_the_options_load_mode(tmp_path, mode):
    path = stateful_model_file(tmp_path)
    state = runtime.PersistentValueState(str(path), {"p": np.zeros(4, np.float32)},
                                         options=runtime.RuntimeSessionOptions(load_mode=mode))
    if mode == "copy":
        os.truncate(tmp_path / "weights.bin", 0)
    out = state.run(new_context(), {"x": X})
    np.testing.assert_array_equal(np.asarray(out["y"]), EXPECTED)


# --- Python buffers ----------------------------------------------------------------------------

def test_bytes_are_viewed_not_copied():
    data = add_model().SerializeToString()
    before = sys.getrefcount(data)
    session = runtime.RuntimeSession(data)
    assert sys.getrefcount(data) == before + 1      # the model holds the bytes object itself
    np.testing.assert_array_equal(run_add(session), EXPECTED)
    del session
    assert sys.getrefcount(data) == before


@pytest.mark.parametrize("kind", ["bytearray", "memoryview", "numpy"])
def test_other_buffers_are_copied_once(kind):
    data = add_model().SerializeToString()
    source = {"bytearray": lambda: bytearray(data), "memoryview": lambda: memoryview(bytearray(data)),
              "numpy": lambda: np.frombuffer(data, np.uint8).copy()}[kind]()
    before = sys.getrefcount(source)
    session = runtime.RuntimeSession(source)
    assert sys.getrefcount(source) == before        # nothing of the caller's is kept
    np.testing.assert_array_equal(run_add(session), EXPECTED)
    if kind == "numpy":
        source[:] = 0
    elif kind == "memoryview":
        source.release()
    else:
        source[:] = bytes(len(source))
    np.testing.assert_array_equal(run_add(session), EXPECTED)


def test_bytearray_cleared_or_resized_after_load():
    for change in (lambda b: b.clear(), lambda b: b.extend(bytes(1 << 20)), lambda b: b.__delitem__(slice(0, 8))):
        source = bytearray(add_model().SerializeToString())
        session = runtime.RuntimeSession(source)
        change(source)
        np.testing.assert_array_equal(run_add(session), EXPECTED)


def test_mmap_closed_after_load(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(add_model(), str(path))
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
    session = runtime.RuntimeSession(m)
    info = runtime.model_info(m)
    m.close()                                       # no export is left open: close succeeds
    os.truncate(path, 0)
    np.testing.assert_array_equal(run_add(session), EXPECTED)
    assert info["initializer_count"] == 1


def test_model_proto_is_serialized_and_viewed():
    proto = add_model()
    session = runtime.RuntimeSession(proto)
    proto.graph.initializer[0].raw_data = np.zeros(4, np.float32).tobytes()
    np.testing.assert_array_equal(run_add(session), EXPECTED)


def test_non_contiguous_buffer_is_refused():
    data = np.frombuffer(add_model().SerializeToString() * 2, np.uint8)[::2]
    with pytest.raises((BufferError, ValueError), match="contiguous"):
        runtime.RuntimeSession(data)


# --- files that are not regular files ---------------------------------------------------------

def test_fifo_model_path_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    result = run_isolated(f"""
        import onnx_light.runtime as runtime
        for call in (lambda: runtime.RuntimeSession({str(fifo)!r}),
                     lambda: runtime.RuntimeSession({str(fifo)!r}, runtime.RuntimeSessionOptions(load_mode="map")),
                     lambda: runtime.model_info({str(fifo)!r}),
                     lambda: runtime.with_persistent_bindings({str(fifo)!r}, {{"a": "b"}})):
            try:
                call()
            except ValueError as error:
                assert "is a FIFO, not a regular file" in str(error), error
            else:
                raise AssertionError("a FIFO was accepted")
        print("refused")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "refused"


def test_directory_and_device_model_paths_are_refused(tmp_path):
    with pytest.raises(ValueError, match="is a directory, not a regular file"):
        runtime.RuntimeSession(str(tmp_path))
    with pytest.raises(ValueError, match="is a character device, not a regular file"):
        runtime.RuntimeSession("/dev/null")


def test_external_data_outside_the_folder_is_refused(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    save_external(add_model(), folder / "model.onnx")
    (tmp_path / "weights.bin").write_bytes((folder / "weights.bin").read_bytes())
    (folder / "weights.bin").unlink()
    (folder / "weights.bin").symlink_to(tmp_path / "weights.bin")
    # Without openat2 (Linux < 5.6) the symlink itself is refused instead.
    with pytest.raises(ValueError, match="outside the model folder|symbolic link"):
        runtime.RuntimeSession(str(folder / "model.onnx"))


# --- bool constants ---------------------------------------------------------------------------

def test_bool_initializer_bytes_other_than_zero_or_one_mean_true():
    b = helper.make_tensor("b", TensorProto.BOOL, [4], b"\x00\x01\x02\xff", raw=True)
    nodes = [helper.make_node("Not", ["b"], ["not_b"]),
             helper.make_node("Cast", ["b"], ["b_int"], to=TensorProto.INT32),
             helper.make_node("Constant", [], ["c"],
                              value=helper.make_tensor("c", TensorProto.BOOL, [], b"\x02", raw=True)),
             helper.make_node("Not", ["c"], ["not_c"])]
    graph = helper.make_graph(nodes, "bools", [], [
        helper.make_tensor_value_info("not_b", TensorProto.BOOL, [4]),
        helper.make_tensor_value_info("b_int", TensorProto.INT32, [4]),
        helper.make_tensor_value_info("not_c", TensorProto.BOOL, [])], initializer=[b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    out = runtime.RuntimeSession(model).run(new_context(), {})
    np.testing.assert_array_equal(np.asarray(out["not_b"]), [True, False, False, False])
    np.testing.assert_array_equal(np.asarray(out["b_int"]), [0, 1, 1, 1])
    assert np.asarray(out["not_c"]).view(np.uint8).item() == 0
    assert np.asarray(out["not_b"]).view(np.uint8).tolist() == [1, 0, 0, 0]
