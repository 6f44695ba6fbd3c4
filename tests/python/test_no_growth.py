"""Nothing a run leaves behind grows with the number of runs: fresh contexts, fresh
KernelContexts carrying a Python custom kernel, and fresh PersistentValueStates give back every
allocator byte, and the session caches at most one plan for a KernelContext of its own. The
counts are exact (live kernel functions, cached plans, allocator bytes), not RSS samples."""

import gc
import weakref

import numpy as np
from onnx import TensorProto, helper

import onnx_light.runtime as runtime

RUNS = 10_000


def twice_model():
    graph = helper.make_graph(
        [helper.make_node("Twice", ["x"], ["t"], domain="test.leak"), helper.make_node("Add", ["t", "x"], ["y"])],
        "twice", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23), helper.make_opsetid("test.leak", 1)])
    model.ir_version = 10
    return model.SerializeToString()


def kernels_with_twice(alive):
    """A fresh KernelContext with a fresh Python kernel; `alive` tracks the kernel function."""
    kernels = runtime.KernelContext(runtime.default_opset(23))

    def twice(x):
        return np.asarray(x) * 2

    alive.add(twice)
    runtime.register_kernel("test.leak", "Twice", twice, kernel_context=kernels)
    return kernels


def test_fresh_kernel_contexts_with_a_python_kernel_do_not_grow():
    alive = weakref.WeakSet()
    session = runtime.RuntimeSession(twice_model(), runtime.RuntimeSessionOptions(
        num_threads=1, kernel_context=kernels_with_twice(alive)))
    x = np.arange(4, dtype=np.float32)
    for run in range(RUNS):
        ctx = runtime.RuntimeContext(kernels_with_twice(alive))
        out = session.run(ctx, {"x": x})
        assert np.asarray(out["y"]).tolist() == [0.0, 3.0, 6.0, 9.0]
        assert session._custom_plan_count() <= 1
        del out
        ctx.clear()
        assert ctx.allocated_bytes == 0  # every tensor of the run went back to the allocator
        del ctx
    gc.collect()
    # The session's own kernel and the one cached for the last KernelContext: the other 9,999
    # functions (and the plans holding them) are gone.
    assert len(alive) == 2
    assert session._custom_plan_count() == 1


def test_fresh_contexts_and_states_give_back_every_byte():
    model = runtime.with_persistent_bindings(_accumulate_model(), {"past": "present"})
    session = runtime.RuntimeSession(_accumulate_model(), runtime.RuntimeSessionOptions(num_threads=1))
    for run in range(RUNS):
        ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
        session.run(ctx, {"past": np.ones(4, np.float32), "x": np.ones(4, np.float32)})
        state = runtime.PersistentValueState(model, {"past": np.zeros(4, np.float32)},
                                             runtime.RuntimeSessionOptions(num_threads=1))
        state.run(ctx, {"x": np.full(4, run, np.float32)})
        assert np.asarray(state.values["past"]).tolist() == [float(run)] * 4
        state.close()
        del state
        ctx.clear()
        assert ctx.allocated_bytes == 0
    assert session._custom_plan_count() == 0


def _accumulate_model():
    graph = helper.make_graph(
        [helper.make_node("Add", ["past", "x"], ["present"])], "acc",
        [helper.make_tensor_value_info("past", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("present", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model.SerializeToString()
