"""Recurrent layers in whole graphs: the graph torch's exporter produces for a 2-layer
bidirectional nn.LSTM / nn.GRU (Slice of the stacked initial states, Transpose + Reshape between
layers, Concat of the final states), checked against ONNX Runtime; and streaming an LSTM chunk by
chunk through PersistentValueState, which must equal one run over the whole sequence."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_light.runtime as runtime
from node_check import assert_close, run_ort, run_ours
from rnn_reference import GATES

INPUT, HIDDEN, LAYERS = 10, 16, 2


def torch_like_model(op, batch_first=False, seed=0, dtype=np.float32):
    """Mirrors torch.onnx.export of nn.LSTM/nn.GRU(INPUT, HIDDEN, num_layers=2,
    bidirectional=True): weights as initializers, h0 (and c0) stacked [layers * 2, batch, hidden]."""
    rng = np.random.default_rng(seed)
    gates = GATES[op]
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    nodes, inits = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    x = "input"
    if batch_first:
        nodes.append(helper.make_node("Transpose", ["input"], ["x_tm"], perm=[1, 0, 2]))
        x = "x_tm"
    states = ["h0"] + (["c0"] if op == "LSTM" else [])
    finals = {s: [] for s in states}
    in_size = INPUT
    for layer in range(LAYERS):
        w = const(f"W{layer}", (rng.standard_normal((2, gates * HIDDEN, in_size)) * 0.3).astype(dtype))
        r = const(f"R{layer}", (rng.standard_normal((2, gates * HIDDEN, HIDDEN)) * 0.3).astype(dtype))
        b = const(f"B{layer}", (rng.standard_normal((2, 2 * gates * HIDDEN)) * 0.3).astype(dtype))
        sliced = []
        for s in states:
            out = f"{s}_l{layer}"
            nodes.append(helper.make_node("Slice", [s, const(f"{out}_start", np.array([2 * layer])),
                                                    const(f"{out}_end", np.array([2 * layer + 2])),
                                                    const(f"{out}_axes", np.array([0]))], [out]))
            sliced.append(out)
        outs = [f"Y{layer}", f"Yh{layer}"] + ([f"Yc{layer}"] if op == "LSTM" else [])
        inputs = [x, w, r, b, ""] + sliced
        nodes.append(helper.make_node(op, inputs, outs, direction="bidirectional", hidden_size=HIDDEN,
                                      **({"linear_before_reset": 1} if op == "GRU" else {})))
        for s, o in zip(states, outs[1:]):
            finals[s].append(o)
        # [seq, 2, batch, hidden] -> [seq, batch, 2 * hidden]
        nodes.append(helper.make_node("Transpose", [outs[0]], [f"Yt{layer}"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", [f"Yt{layer}", const(f"shape{layer}", np.array([0, 0, -1]))],
                                      [f"Yr{layer}"]))
        x = f"Yr{layer}"
        in_size = 2 * HIDDEN
    if batch_first:
        nodes.append(helper.make_node("Transpose", [x], ["output"], perm=[1, 0, 2]))
    else:
        nodes.append(helper.make_node("Identity", [x], ["output"]))
    outputs = ["output"]
    for s in states:
        nodes.append(helper.make_node("Concat", finals[s], [f"{s[0]}_n"], axis=0))
        outputs.append(f"{s[0]}_n")
    graph_inputs = [helper.make_tensor_value_info("input", elem, ["d0", "d1", INPUT])]
    graph_inputs += [helper.make_tensor_value_info(s, elem, [2 * LAYERS, "batch", HIDDEN]) for s in states]
    graph = helper.make_graph(nodes, "torch_rnn", graph_inputs,
                              [helper.make_tensor_value_info(o, elem, ["o0", "o1", "o2"]) for o in outputs], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_torch_exported_two_layer_bidirectional(op, batch_first):
    onnx.checker.check_model(torch_like_model(op, batch_first))
    seq, batch = 9, 3
    rng = np.random.default_rng(5)
    x_shape = (batch, seq, INPUT) if batch_first else (seq, batch, INPUT)
    feeds = {"input": rng.standard_normal(x_shape).astype(np.float32),
             "h0": rng.standard_normal((2 * LAYERS, batch, HIDDEN)).astype(np.float32)}
    if op == "LSTM":
        feeds["c0"] = rng.standard_normal((2 * LAYERS, batch, HIDDEN)).astype(np.float32)
    model = torch_like_model(op, batch_first)
    assert_close(run_ours(model, feeds), run_ort(model, feeds), rtol=1e-4, atol=1e-5)


def streaming_model(hidden=HIDDEN, seed=3):
    rng = np.random.default_rng(seed)
    inits = {
        "W": (rng.standard_normal((1, 4 * hidden, INPUT)) * 0.3).astype(np.float32),
        "R": (rng.standard_normal((1, 4 * hidden, hidden)) * 0.3).astype(np.float32),
        "B": (rng.standard_normal((1, 8 * hidden)) * 0.3).astype(np.float32),
        "P": (rng.standard_normal((1, 3 * hidden)) * 0.3).astype(np.float32),
    }
    node = helper.make_node("LSTM", ["x", "W", "R", "B", "", "h_in", "c_in", "P"], ["y", "h_out", "c_out"],
                            hidden_size=hidden)
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [node], "stream",
        [helper.make_tensor_value_info("x", f, ["seq", "batch", INPUT]),
         helper.make_tensor_value_info("h_in", f, [1, "batch", hidden]),
         helper.make_tensor_value_info("c_in", f, [1, "batch", hidden])],
        [helper.make_tensor_value_info(n, f, None) for n in ("y", "h_out", "c_out")],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize("chunks", [[1] * 12, [5, 7], [3, 1, 4, 4], [12]])
def test_streaming_chunks_equal_whole_sequence(chunks):
    batch = 2
    model = streaming_model()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((sum(chunks), batch, INPUT)).astype(np.float32)
    zeros = np.zeros((1, batch, HIDDEN), np.float32)
    whole = run_ours(model, {"x": x, "h_in": zeros, "c_in": zeros})

    declared = runtime.with_persistent_bindings(model, {"h_in": "h_out", "c_in": "c_out"})
    state = runtime.PersistentValueState(declared, {"h_in": zeros, "c_in": zeros})
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ys = []
    start = 0
    for n in chunks:
        out = state.run(context, {"x": x[start:start + n]})
        ys.append(np.array(out["y"]))
        start += n
    np.testing.assert_allclose(np.concatenate(ys), whole[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.array(state.values["h_in"]), whole[1], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.array(state.values["c_in"]), whole[2], rtol=1e-6, atol=1e-7)

    # reset starts a new sequence: the first chunk again gives the first chunk's result
    state.reset({"h_in": zeros, "c_in": zeros})
    again = state.run(context, {"x": x[:chunks[0]]})
    np.testing.assert_array_equal(np.array(again["y"]), ys[0])
    state.close()
