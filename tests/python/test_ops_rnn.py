"""RNN, GRU and LSTM against onnx.reference (default activations, no clip or sequence_lens: all it
implements) and, for every other attribute, against the numpy model in rnn_reference.py, which is
itself checked against onnx.reference and ONNX Runtime here."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import helper

import onnx_light.runtime as runtime
from node_check import assert_close, assert_thread_count_invariant, expect_error, run_ort, run_ours, run_reference
from rnn_reference import DEFAULTS, GATES, recurrent

INPUT_NAMES = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
OUTPUTS = {"RNN": ["Y", "Y_h"], "GRU": ["Y", "Y_h"], "LSTM": ["Y", "Y_h", "Y_c"]}
F32 = {"rtol": 1e-4, "atol": 1e-5}
F64 = {"rtol": 1e-10, "atol": 1e-12}


def recurrent_model(op, feeds, attrs=None, outputs=None, opset=22, name="rnn_node"):
    """One recurrent node; inputs absent from `feeds` are left out ("" when others follow)."""
    n_inputs = max(INPUT_NAMES.index(k) for k in feeds) + 1
    inputs = [n if n in feeds else "" for n in INPUT_NAMES[:n_inputs]]
    outputs = outputs if outputs is not None else OUTPUTS[op]
    node = helper.make_node(op, inputs, outputs, name=name, **(attrs or {}))
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in feeds.items()]
    graph_outputs = [helper.make_value_info(n, onnx.TypeProto()) for n in outputs if n]
    graph = helper.make_graph([node], "rnn", graph_inputs, graph_outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def make_feeds(op, seq=5, batch=3, input_size=4, hidden=3, directions=1, layout=0, dtype=np.float32, seed=0,
               bias=True, initial=True, peepholes=True, lengths=None):
    rng = np.random.default_rng(seed)
    gates = GATES[op]

    def rand(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    feeds = {
        "X": rand(seq, batch, input_size) if layout == 0 else rand(batch, seq, input_size),
        "W": rand(directions, gates * hidden, input_size, scale=0.5),
        "R": rand(directions, gates * hidden, hidden, scale=0.5),
    }
    if bias:
        feeds["B"] = rand(directions, 2 * gates * hidden, scale=0.5)
    if lengths is not None:
        feeds["sequence_lens"] = np.asarray(lengths, np.int32)
    state = (directions, batch, hidden) if layout == 0 else (batch, directions, hidden)
    if initial:
        feeds["initial_h"] = rand(*state)
        if op == "LSTM":
            feeds["initial_c"] = rand(*state)
    if op == "LSTM" and peepholes:
        feeds["P"] = rand(directions, 3 * hidden, scale=0.5)
    return feeds


def expected(op, feeds, attrs):
    kwargs = {k: v for k, v in feeds.items() if k not in ("X", "W", "R")}
    attrs = {k: v for k, v in attrs.items() if k != "hidden_size"}
    return recurrent(op, feeds["X"], feeds["W"], feeds["R"], **kwargs, **attrs)


def directions_of(attrs):
    return 2 if attrs.get("direction") == "bidirectional" else 1


# ---- the numpy model against onnx.reference and ORT ------------------------------------------

@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
def test_numpy_model_matches_onnx_reference(op, direction, layout):
    attrs = {"direction": direction, "layout": layout}
    feeds = make_feeds(op, directions=directions_of(attrs), layout=layout, dtype=np.float64)
    got = run_reference(recurrent_model(op, feeds, attrs), feeds)
    assert_close(expected(op, feeds, attrs), got, **F64)


# Attribute sets outside onnx.reference: ORT is the second opinion (it has no layout=1).
ORT_CASES = [
    ("RNN", {"clip": 0.3}, None),
    ("RNN", {"direction": "bidirectional", "activations": ["LeakyRelu", "HardSigmoid"],
             "activation_alpha": [0.2, 0.3], "activation_beta": [0.6]}, None),
    ("RNN", {"direction": "reverse"}, [5, 2, 1]),
    ("GRU", {"direction": "bidirectional"}, [5, 2, 1]),
    ("GRU", {"linear_before_reset": 1, "clip": 0.4}, None),
    ("GRU", {"activations": ["HardSigmoid", "ScaledTanh"], "activation_alpha": [0.4, 0.6],
             "activation_beta": [0.7, 0.8]}, None),
    ("GRU", {"activations": ["Sigmoid", "Softsign"]}, [3, 5, 4]),
    ("LSTM", {"input_forget": 1}, None),
    ("LSTM", {"direction": "bidirectional", "clip": 0.5}, [1, 5, 3]),
    ("LSTM", {"activations": ["HardSigmoid", "Elu", "Softplus"], "activation_alpha": [0.3, 0.8]}, None),
    ("LSTM", {"activations": ["Sigmoid", "Affine", "ThresholdedRelu"], "activation_alpha": [0.5, 0.1],
              "activation_beta": [0.2]}, None),
]


@pytest.mark.parametrize("op,attrs,lengths", ORT_CASES)
def test_numpy_model_matches_ort(op, attrs, lengths):
    feeds = make_feeds(op, directions=directions_of(attrs), lengths=lengths)
    attrs = dict(attrs, hidden_size=3)  # ORT requires the attribute
    got = run_ort(recurrent_model(op, feeds, attrs), feeds)
    assert_close(expected(op, feeds, attrs), got, rtol=1e-4, atol=1e-5)


# ---- our kernels ------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_onnx_reference(op, direction, layout, dtype):
    attrs = {"direction": direction, "layout": layout}
    feeds = make_feeds(op, directions=directions_of(attrs), layout=layout, dtype=dtype)
    model = recurrent_model(op, feeds, attrs)
    assert_close(run_ours(model, feeds), run_reference(model, feeds), **(F32 if dtype == np.float32 else F64))


# P exists for LSTM only.
@pytest.mark.parametrize("op,bias,initial,peepholes",
                         [(op, b, i, p) for op in ("RNN", "GRU", "LSTM") for b, i, p in
                          itertools.product([False, True], repeat=3) if p or op == "LSTM"])
def test_optional_inputs(op, bias, initial, peepholes):
    feeds = make_feeds(op, bias=bias, initial=initial, peepholes=peepholes)
    model = recurrent_model(op, feeds)
    assert_close(run_ours(model, feeds), run_reference(model, feeds), **F32)


ACTIVATION_SETS = {
    "RNN": [["Relu"], ["Sigmoid"], ["Affine"], ["LeakyRelu"], ["ThresholdedRelu"], ["ScaledTanh"],
            ["HardSigmoid"], ["Elu"], ["Softsign"], ["Softplus"]],
    "GRU": [["HardSigmoid", "Softsign"], ["Sigmoid", "ScaledTanh"], ["Sigmoid", "Affine"], ["Sigmoid", "Elu"],
            ["HardSigmoid", "LeakyRelu"], ["Sigmoid", "ThresholdedRelu"], ["Sigmoid", "Softplus"],
            ["Sigmoid", "Relu"]],
    "LSTM": [["HardSigmoid", "Tanh", "Softsign"], ["Sigmoid", "ScaledTanh", "Affine"], ["Sigmoid", "Elu", "Relu"],
             ["HardSigmoid", "LeakyRelu", "ThresholdedRelu"], ["Sigmoid", "Softplus", "Tanh"]],
}


@pytest.mark.parametrize("op,activations",
                         [(op, acts) for op, sets in ACTIVATION_SETS.items() for acts in sets])
@pytest.mark.parametrize("with_values", [False, True])
def test_activations(op, activations, with_values):
    attrs = {"direction": "bidirectional",
             "activations": activations + list(reversed(activations))}
    if with_values:
        attrs["activation_alpha"] = [0.3, 0.7, 0.4, 0.6, 0.2, 0.5]
        attrs["activation_beta"] = [0.4, 0.6, 0.3, 0.5]
    feeds = make_feeds(op, directions=2, dtype=np.float64)
    model = recurrent_model(op, feeds, attrs)
    assert_close(run_ours(model, feeds), expected(op, feeds, attrs), **F64)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("lengths", [[5, 2, 4], [1, 5, 3], [5, 5, 5]])
def test_sequence_lens(op, direction, layout, lengths):
    attrs = {"direction": direction, "layout": layout}
    feeds = make_feeds(op, directions=directions_of(attrs), layout=layout, lengths=lengths, dtype=np.float64)
    model = recurrent_model(op, feeds, attrs)
    assert_close(run_ours(model, feeds), expected(op, feeds, attrs), **F64)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_zero_length_sequence_keeps_initial_state(op):
    # Our definition (docs/semantics.md): a sequence of length 0 produces zero Y rows and passes
    # its initial state through to Y_h / Y_c. ORT returns zeros there instead.
    feeds = make_feeds(op, directions=2, lengths=[4, 0, 2], dtype=np.float64)
    attrs = {"direction": "bidirectional"}
    out = run_ours(recurrent_model(op, feeds, attrs), feeds)
    assert_close(out, expected(op, feeds, attrs), **F64)
    np.testing.assert_array_equal(out[0][:, :, 1], 0)
    np.testing.assert_array_equal(out[1][:, 1], feeds["initial_h"][:, 1])
    if op == "LSTM":
        np.testing.assert_array_equal(out[2][:, 1], feeds["initial_c"][:, 1])


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("clip", [0.1, 0.5, 3.0])
def test_clip(op, clip):
    attrs = {"direction": "bidirectional", "clip": clip}
    feeds = make_feeds(op, directions=2, dtype=np.float64)
    model = recurrent_model(op, feeds, attrs)
    assert_close(run_ours(model, feeds), expected(op, feeds, attrs), **F64)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("lengths", [None, [2, 5, 3]])
def test_gru_linear_before_reset(linear_before_reset, direction, lengths):
    attrs = {"direction": direction, "linear_before_reset": linear_before_reset}
    feeds = make_feeds("GRU", directions=directions_of(attrs), lengths=lengths)
    model = recurrent_model("GRU", feeds, attrs)
    assert_close(run_ours(model, feeds), expected("GRU", feeds, attrs), **F32)
    if lengths is None:
        assert_close(run_ours(model, feeds), run_reference(model, feeds), **F32)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
@pytest.mark.parametrize("peepholes", [False, True])
def test_lstm_input_forget(direction, peepholes):
    attrs = {"direction": direction, "input_forget": 1}
    feeds = make_feeds("LSTM", directions=directions_of(attrs), peepholes=peepholes, lengths=[5, 3, 1])
    model = recurrent_model("LSTM", feeds, attrs)
    assert_close(run_ours(model, feeds), expected("LSTM", feeds, attrs), **F32)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("keep", [(0,), (1,), (2,), (0, 2), (1, 2)])
def test_omitted_outputs(op, keep):
    if op != "LSTM" and 2 in keep:
        keep = tuple(k for k in keep if k != 2) or (1,)
    names = [n if i in keep else "" for i, n in enumerate(OUTPUTS[op])]
    while names and not names[-1]:
        names.pop()
    feeds = make_feeds(op, directions=2)
    attrs = {"direction": "bidirectional"}
    out = run_ours(recurrent_model(op, feeds, attrs, outputs=names), feeds)
    full = expected(op, feeds, attrs)
    assert_close(out, [full[i] for i in keep], **F32)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("opset", [7, 14, 22])
def test_opset_versions(op, opset):
    layout_ok = opset >= 14
    attrs = {"direction": "bidirectional", **({"layout": 1} if layout_ok else {})}
    feeds = make_feeds(op, directions=2, layout=1 if layout_ok else 0)
    model = recurrent_model(op, feeds, attrs, opset=opset)
    assert_close(run_ours(model, feeds), expected(op, feeds, attrs), **F32)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("dtype,opset,tol", [(np.float16, 14, 2e-2), (ml_dtypes.bfloat16, 22, 6e-2)])
def test_half_precision(op, dtype, opset, tol):
    attrs = {"direction": "bidirectional"}
    feeds = make_feeds(op, directions=2, dtype=dtype, lengths=[5, 3, 4])
    out = run_ours(recurrent_model(op, feeds, attrs, opset=opset), feeds)
    f32 = {k: v.astype(np.float32) if v.dtype == dtype else v for k, v in feeds.items()}
    for got, want in zip(out, expected(op, f32, attrs)):
        assert got.dtype == dtype
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_hidden_size_attribute_and_larger_shapes(op):
    attrs = {"direction": "bidirectional", "hidden_size": 37}
    feeds = make_feeds(op, seq=9, batch=6, input_size=21, hidden=37, directions=2, lengths=[9, 1, 4, 9, 7, 2])
    model = recurrent_model(op, feeds, attrs)
    assert_close(run_ours(model, feeds), expected(op, feeds, attrs), rtol=1e-4, atol=2e-5)


def test_empty_batch_and_sequence():
    feeds = make_feeds("LSTM", seq=0, batch=2, directions=2)
    out = run_ours(recurrent_model("LSTM", feeds, {"direction": "bidirectional"}), feeds)
    assert out[0].shape == (0, 2, 2, 3)
    assert_close(out[1:], [feeds["initial_h"], feeds["initial_c"]])
    feeds = make_feeds("GRU", batch=0)
    out = run_ours(recurrent_model("GRU", feeds), feeds)
    assert out[0].shape == (5, 1, 0, 3) and out[1].shape == (1, 0, 3)


# ---- threads and kernel usage -----------------------------------------------------------------

def run_with(model, feeds, threads):
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    session = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(num_threads=threads))
    out = session.run(ctx, feeds)
    return [out[o.name].numpy() for o in model.graph.output], ctx.get_kernel_usage()


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_directions_in_parallel_give_the_same_result(op):
    feeds = make_feeds(op, seq=16, batch=4, input_size=32, hidden=24, directions=2, lengths=[16, 3, 9, 12])
    model = recurrent_model(op, feeds, {"direction": "bidirectional"})
    one, usage_one = run_with(model, feeds, 1)
    two, usage_two = run_with(model, feeds, 2)
    for a, b in zip(one, two):
        assert_thread_count_invariant(b, a)
    assert f"{op}/float32/gemm" in usage_one
    assert f"{op}/float32/gemm-parallel-directions" in usage_two


def test_one_session_from_several_threads():
    # Run is const and keeps its scratch per call: concurrent runs of one session agree.
    import threading

    feeds = make_feeds("LSTM", seq=12, batch=4, input_size=16, hidden=20, directions=2, lengths=[12, 5, 9, 1])
    model = recurrent_model("LSTM", feeds, {"direction": "bidirectional"})
    session = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(num_threads=2))
    want = run_ours(model, feeds)
    errors = []

    def worker():
        ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
        for _ in range(20):
            out = session.run(ctx, feeds)
            for name, expected_value in zip(OUTPUTS["LSTM"], want):
                if not np.array_equal(out[name].numpy(), expected_value):
                    errors.append(name)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ---- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("attrs,needles", [
    ({"direction": "sideways"}, ["rnn_node", "direction", "sideways"]),
    ({"activations": ["Tanh", "Tanh"]}, ["activations", "lists 2", "expected 1"]),
    ({"activations": ["Gelu"]}, ["unknown function 'Gelu'"]),
    ({"layout": 2}, ["layout", "is 2"]),
    ({"hidden_size": 4}, ["hidden_size", "is 4", "[1, 3, 3]"]),
    ({"clip": -1.0}, ["clip", "positive"]),
])
def test_attribute_errors(attrs, needles):
    feeds = make_feeds("RNN")
    expect_error(recurrent_model("RNN", feeds, attrs), feeds, *needles)


def test_flag_errors():
    feeds = make_feeds("GRU")
    expect_error(recurrent_model("GRU", feeds, {"linear_before_reset": 2}), feeds, "linear_before_reset", "got 2")
    feeds = make_feeds("LSTM")
    expect_error(recurrent_model("LSTM", feeds, {"input_forget": -1}), feeds, "input_forget", "got -1")


def test_input_errors():
    feeds = make_feeds("LSTM")
    bad = dict(feeds, W=feeds["W"][:, :5])
    expect_error(recurrent_model("LSTM", bad), bad, "rnn_node", "'W'", "[1, 5, 4]", "expected [1, 12, 4]")
    bad = dict(feeds, sequence_lens=np.array([1, 6, 2], np.int32))
    expect_error(recurrent_model("LSTM", bad), bad, "'sequence_lens'[1] is 6", "[0, 5]")
    bad = dict(feeds, P=feeds["P"][:, :4])
    expect_error(recurrent_model("LSTM", bad), bad, "'P'", "expected [1, 9]")
    bad = dict(feeds, initial_c=feeds["initial_c"][:, :2])
    expect_error(recurrent_model("LSTM", bad), bad, "'initial_c'", "expected [1, 3, 3]")
    bad = dict(feeds, X=feeds["X"][0])
    expect_error(recurrent_model("LSTM", bad), bad, "'X' must have rank 3")


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_bfloat16_needs_opset_22(op):
    feeds = make_feeds(op, dtype=ml_dtypes.bfloat16)
    with pytest.raises(NotImplementedError) as info:
        run_ours(recurrent_model(op, feeds, opset=21), feeds)
    assert "bfloat16" in str(info.value) and "rnn_node" in str(info.value)
