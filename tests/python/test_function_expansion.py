"""Operators onnx defines by a function body and the runtime has no kernel for are expanded at
session construction (onnx_light.function_expansion), checked against onnx.reference."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from onnx_light.function_expansion import expand_schema_functions, has_schema_function, supported_operator_names
from node_check import assert_close, make_model, random, run_ours, run_reference

NODE = "expanded_node"
SUPPORTED = supported_operator_names()


def loss_model(op, inputs, attrs, opset=23, n_outputs=1):
    outputs = ["loss", "log_prob"][:n_outputs]
    node = helper.make_node(op, list(inputs), outputs, name=NODE, **attrs)
    return make_model([node], inputs, outputs, opset=opset)


def check(model, feeds, rtol=1e-5, atol=1e-6):
    expected = run_reference(model, feeds)
    actual = run_ours(model, feeds)
    for a, e, out in zip(actual, expected, model.graph.output):
        assert_close(a, np.asarray(e), rtol, atol, name=out.name)


def nll_inputs(shape, classes, with_weight, seed=0, ignore=None):
    n, rest = shape[0], shape[1:]
    x = random((n, classes, *rest), np.float32, -3.0, 0.0, seed)
    target = random((n, *rest), np.int64, 0, classes - 1, seed + 1)
    if ignore is not None:
        target.flat[::3] = ignore
    feeds = {"x": x, "target": target}
    if with_weight:
        feeds["weight"] = random((classes,), np.float32, 0.2, 1.0, seed + 2)
    return feeds


def test_supported_operators_table():
    ops = runtime.supported_operators()
    assert ops == sorted(ops)
    assert all(isinstance(d, str) and isinstance(o, str) and isinstance(since, int) and isinstance(until, int)
               and 1 <= since <= until for d, o, since, until in ops)
    names = supported_operator_names()
    assert "Add" in names and "Conv" in names


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("shape", [(3,), (2, 4), (2, 3, 2)], ids=str)
@pytest.mark.parametrize("with_weight", [False, True], ids=["noweight", "weight"])
def test_nllloss(reduction, shape, with_weight):
    feeds = nll_inputs(shape, 5, with_weight)
    check(loss_model("NegativeLogLikelihoodLoss", feeds, {"reduction": reduction}), feeds)


@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("with_weight", [False, True], ids=["noweight", "weight"])
def test_nllloss_ignore_index(reduction, with_weight):
    # (not -1: onnx.reference then skips the ignored elements' count in an unweighted mean)
    feeds = nll_inputs((4, 3), 5, with_weight, ignore=2)
    model = loss_model("NegativeLogLikelihoodLoss", feeds, {"reduction": reduction, "ignore_index": 2})
    check(model, feeds)


@pytest.mark.parametrize("opset", [13, 22])
def test_nllloss_older_opsets(opset):
    feeds = nll_inputs((3, 2), 4, True)
    check(loss_model("NegativeLogLikelihoodLoss", feeds, {"reduction": "mean"}, opset=opset), feeds)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("shape", [(3,), (2, 4)], ids=str)
@pytest.mark.parametrize("with_weight", [False, True], ids=["noweight", "weight"])
@pytest.mark.parametrize("n_outputs", [1, 2])
def test_softmax_cross_entropy(reduction, shape, with_weight, n_outputs):
    feeds = nll_inputs(shape, 4, with_weight, seed=3)
    feeds["x"] = random(feeds["x"].shape, np.float32, -2.0, 2.0, 5)
    model = loss_model("SoftmaxCrossEntropyLoss", feeds, {"reduction": reduction}, n_outputs=n_outputs)
    check(model, feeds)


def test_softmax_cross_entropy_ignore_index_double():
    feeds = nll_inputs((4, 2), 3, False, seed=7, ignore=2)
    feeds["x"] = feeds["x"].astype(np.float64)
    model = loss_model("SoftmaxCrossEntropyLoss", feeds, {"ignore_index": 2})
    check(model, feeds, rtol=1e-10, atol=1e-12)


def test_expanded_model_is_a_copy_without_the_operator():
    feeds = nll_inputs((2, 3), 4, False)
    model = loss_model("SoftmaxCrossEntropyLoss", feeds, {"reduction": "mean"})
    before = model.SerializeToString()
    expanded = expand_schema_functions(model, SUPPORTED - {"SoftmaxCrossEntropyLoss",
                                                           "NegativeLogLikelihoodLoss"})
    assert expanded is not None and expanded is not model
    assert model.SerializeToString() == before
    ops = {n.op_type for n in expanded.graph.node}
    assert "SoftmaxCrossEntropyLoss" not in ops
    assert "NegativeLogLikelihoodLoss" not in ops  # the nested call is expanded too
    assert {"LogSoftmax", "GatherElements"} <= ops


def test_model_without_missing_operators_is_not_expanded():
    x = random((2, 3))
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name=NODE)], {"x": x}, ["y"])
    assert expand_schema_functions(model) is None


def test_subgraph_and_local_function_are_expanded():
    # Softsign (a function-bodied operator) inside an If branch; a model-local function is kept.
    x = random((2, 3), seed=4)
    branch_out = helper.make_tensor_value_info("b", TensorProto.FLOAT, None)
    then_graph = helper.make_graph([helper.make_node("Softsign", ["x"], ["b"])], "then", [], [branch_out])
    else_graph = helper.make_graph([helper.make_node("Neg", ["x"], ["b"])], "else", [], [branch_out])
    local = helper.make_function("local", "Twice", ["t"], ["u"],
                                 [helper.make_node("Add", ["t", "t"], ["u"])],
                                 [helper.make_opsetid("", 23)])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph),
             helper.make_node("Twice", ["y"], ["z"], domain="local")]
    model = make_model(nodes, {"x": x, "c": np.array(True)}, ["z"], extra_opsets={"local": 1},
                       functions=[local])
    expanded = expand_schema_functions(model, SUPPORTED - {"Softsign"})
    assert expanded is not None
    branches = {a.name: a.g for a in expanded.graph.node[0].attribute}
    then_ops = [n.op_type for n in branches["then_branch"].node]
    assert "Softsign" not in then_ops and "Div" in then_ops
    assert [f.name for f in expanded.functions] == ["Twice"]
    for cond in (True, False):
        feeds = {"x": x, "c": np.array(cond)}
        assert_close(run_ours(model, feeds)[0], np.asarray(run_reference(model, feeds)[0]))


def test_persistent_state_expands():
    # present = Concat(past, Softsign(k)) fed back as past: the bindings survive the expansion.
    past0 = np.zeros((1, 2, 0, 4), np.float32)
    k = random((1, 2, 1, 4), seed=1)
    nodes = [helper.make_node("Softsign", ["k"], ["s"], name=NODE),
             helper.make_node("Concat", ["past", "s"], ["present"], axis=2)]
    model = make_model(nodes, {"past": past0, "k": k}, ["present"])
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "T"
    bound = runtime.with_persistent_bindings(model, {"past": "present"})
    state = runtime.PersistentValueState(bound, initial={"past": past0})
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    past = past0
    for step in range(3):
        k = random((1, 2, 1, 4), seed=10 + step)
        present = np.asarray(state.run(ctx, {"k": k})["present"])
        expected = np.concatenate([past, k / (1 + np.abs(k))], axis=2)
        assert_close(present, expected)
        past = expected


@pytest.mark.parametrize("source", ["path", "bytes", "proto"])
def test_model_sources(tmp_path, source):
    feeds = nll_inputs((2, 3), 4, True)
    model = loss_model("NegativeLogLikelihoodLoss", feeds, {"reduction": "mean"})
    if source == "path":
        arg = tmp_path / "nll.onnx"
        onnx.save(model, arg)
    else:
        arg = model.SerializeToString() if source == "bytes" else model
    session = runtime.RuntimeSession(arg)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    out = session.run(ctx, feeds)
    assert_close(np.asarray(out["loss"]), np.asarray(run_reference(model, feeds)[0]))


# Operators with no function body in onnx; the first one the runtime lacks is used.
NO_FUNCTION = ["StringSplit", "RegexFullMatch", "TfIdfVectorizer", "DeformConv", "Det"]


def test_unsupported_operator_without_function_still_raises():
    missing = [op for op in NO_FUNCTION if op not in SUPPORTED and not has_schema_function(op, 23)]
    assert missing, "every candidate is implemented now: extend NO_FUNCTION"
    op = missing[0]
    node = helper.make_node(op, ["x"], ["y"], name=NODE)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.STRING, [1])],
                              [helper.make_value_info("y", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    assert expand_schema_functions(model) is None
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*{op}"):
        runtime.RuntimeSession(model)


def test_missing_operator_with_function_next_to_one_without():
    # Softsign can be expanded, the other cannot: the error names the one left.
    missing = [op for op in NO_FUNCTION if op not in SUPPORTED]
    assert missing
    x = random((2, 2))
    nodes = [helper.make_node("Softsign", ["x"], ["s"], name="soft"),
             helper.make_node(missing[0], ["s"], ["y"], name=NODE)]
    model = make_model(nodes, {"x": x}, ["y"])
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*{missing[0]}"):
        runtime.RuntimeSession(model)


# Calls that leave attributes out: the body must see the schema defaults (alpha=1, axes=[0,2,3],
# output_datatype=float, periodic=1).
DEFAULTS = [
    ("ThresholdedRelu", {"x": random((3, 4), seed=2)}, 23),
    ("MeanVarianceNormalization", {"x": random((2, 3, 2, 2), seed=3)}, 13),
    ("HannWindow", {"size": np.array(10, np.int64)}, 17),
    ("BlackmanWindow", {"size": np.array(7, np.int64)}, 17),
    ("Shrink", {"x": random((5,), seed=4)}, 23),
]


@pytest.mark.parametrize("op,feeds,opset", DEFAULTS, ids=[d[0] for d in DEFAULTS])
def test_default_attributes_reach_the_body(op, feeds, opset):
    node = helper.make_node(op, list(feeds), ["y"], name=NODE)
    model = make_model([node], feeds, ["y"], opset=opset)
    check(model, feeds, rtol=1e-5, atol=1e-5)
    if op not in SUPPORTED:
        expanded = expand_schema_functions(model)
        assert expanded is not None and op not in {n.op_type for n in expanded.graph.node}
