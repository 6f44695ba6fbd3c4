"""The Python error contract: every runtime failure is an onnx_light.Error carrying `.code` and
also the built-in exception of its kind; a missing model file is a FileNotFoundError."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light
import onnx_light.runtime as runtime


def add_model():
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["z"])], "add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model.SerializeToString()


def unknown_op_model():
    graph = helper.make_graph(
        [helper.make_node("NoSuchOp", ["x"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model.SerializeToString()


X = np.array([1, 2], np.float32)


@pytest.mark.parametrize("action, builtin, code", [
    (lambda: runtime.RuntimeSession(b"\x08\x07\x12garbage"), ValueError, runtime.ErrorCode.kInvalidArgument),
    (lambda: runtime.RuntimeSession(unknown_op_model()), NotImplementedError, runtime.ErrorCode.kUnimplemented),
    (lambda: runtime.RuntimeSession(add_model()).run({"x": X, "w": X}), KeyError, runtime.ErrorCode.kNotFound),
    (lambda: runtime.RuntimeSession(add_model()).run({"x": X, "y": X.astype(np.float64)}), ValueError,
     runtime.ErrorCode.kInvalidArgument),
    (lambda: runtime.RuntimeSession(add_model()).run({"x": X, "y": "text"}), TypeError,
     runtime.ErrorCode.kInvalidArgument),
    (lambda: runtime.RuntimeSessionOptions(num_threads=5000), ValueError, runtime.ErrorCode.kInvalidArgument),
    (lambda: runtime.RuntimeSession("/nonexistent/model.onnx"), FileNotFoundError, runtime.ErrorCode.kNotFound),
    (lambda: runtime.model_info("/nonexistent/model.onnx"), FileNotFoundError, runtime.ErrorCode.kNotFound),
])
def test_each_failure_is_an_onnx_light_error_and_its_builtin(action, builtin, code):
    with pytest.raises(builtin) as raised:
        action()
    assert isinstance(raised.value, onnx_light.Error)
    assert raised.value.code == code


def test_closed_state_and_stopped_runs_are_runtime_errors():
    model = runtime.with_persistent_bindings(add_model(), {"y": "z"})
    state = runtime.PersistentValueState(model, initial={"y": X})
    state.close()
    with pytest.raises(RuntimeError) as raised:
        state.run(runtime.RuntimeContext(), {"x": X})
    assert isinstance(raised.value, onnx_light.Error)
    assert raised.value.code == runtime.ErrorCode.kFailedPrecondition

    context = runtime.RuntimeContext()
    context.request_stop()
    with pytest.raises(onnx_light.Error) as raised:
        runtime.RuntimeSession(add_model()).run(context, {"x": X, "y": X})
    assert isinstance(raised.value, RuntimeError)
    assert raised.value.code == runtime.ErrorCode.kCancelled


def test_missing_persistent_state_model_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        runtime.PersistentValueState(str(tmp_path / "absent.onnx"), initial={})
    assert isinstance(raised.value, onnx_light.Error)
    assert "absent.onnx" in str(raised.value)


def test_error_classes_are_exported_once():
    assert onnx_light.Error is runtime.Error
    assert issubclass(runtime.ModelFileNotFoundError, FileNotFoundError)
    assert issubclass(runtime.NotFoundError, KeyError) and not issubclass(runtime.NotFoundError, ValueError)
    assert runtime.Error.code is None


def test_run_forms_without_a_context():
    session = runtime.RuntimeSession(add_model())
    feeds = {"x": X, "y": X * 10}
    as_dict = session.run(feeds)
    assert list(as_dict) == ["z"]
    np.testing.assert_array_equal(np.asarray(as_dict["z"]), [11, 22])
    as_list = session.run(None, feeds)
    assert len(as_list) == 1
    np.testing.assert_array_equal(np.asarray(as_list[0]), [11, 22])
    named = session.run(["z"], feeds)
    np.testing.assert_array_equal(np.asarray(named[0]), [11, 22])
    with pytest.raises(KeyError, match="'w' is not a graph output; the outputs are \\[z\\]"):
        session.run(["w"], feeds)
    with pytest.raises(TypeError, match="the first argument is a int"):
        session.run(3, feeds)
    # The context form is unchanged.
    context = runtime.RuntimeContext()
    np.testing.assert_array_equal(np.asarray(session.run(context, feeds)["z"]), [11, 22])
    np.testing.assert_array_equal(np.asarray(context.get("z")), [11, 22])


def custom_op_model(domain, wrap_in_if=False):
    node = helper.make_node("Fail", ["x"], ["z"], domain=domain)
    if wrap_in_if:
        branch = helper.make_graph([helper.make_node("Fail", ["x"], ["z_in"], domain=domain)], "then", [],
                                   [helper.make_tensor_value_info("z_in", TensorProto.FLOAT, [2])])
        node = helper.make_node("If", ["cond"], ["z"], then_branch=branch, else_branch=branch)
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])]
    if wrap_in_if:
        inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23), helper.make_opsetid(domain, 1)])
    model.ir_version = 10
    return model.SerializeToString()


@pytest.mark.parametrize("wrap_in_if", [False, True])
@pytest.mark.parametrize("raised_type, builtin, code", [
    (ZeroDivisionError, ValueError, runtime.ErrorCode.kInvalidArgument),
    (ValueError, ValueError, runtime.ErrorCode.kInvalidArgument),
    (KeyError, KeyError, runtime.ErrorCode.kNotFound),
    (NotImplementedError, NotImplementedError, runtime.ErrorCode.kUnimplemented),
])
def test_a_python_kernel_exception_is_chained(raised_type, builtin, code, wrap_in_if):
    kernels = runtime.KernelContext()
    raised = []

    def fail(x):
        error = raised_type("kernel failed on purpose")
        raised.append(error)
        raise error

    runtime.register_kernel("test.chain", "Fail", fail, kernel_context=kernels)
    session = runtime.RuntimeSession(custom_op_model("test.chain", wrap_in_if),
                                     runtime.RuntimeSessionOptions(kernel_context=kernels))
    feeds = {"x": X, "cond": np.array(True)} if wrap_in_if else {"x": X}
    with pytest.raises(builtin) as caught:
        session.run(runtime.RuntimeContext(kernels), feeds)
    error = caught.value
    assert isinstance(error, onnx_light.Error) and error.code == code
    assert "the Python kernel raised" in str(error) and "kernel failed on purpose" in str(error)
    assert error.__cause__ is raised[0]  # the original object, of its own type
    assert type(error.__cause__) is raised_type
    assert error.__cause__.__traceback__ is not None
    assert error.__suppress_context__
