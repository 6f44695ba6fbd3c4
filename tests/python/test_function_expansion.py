"""Operators onnx defines by a function body and the runtime has no kernel for run that body,
expanded by the C++ library when the session is built (src/functions/); results are checked
against onnx.reference, and the context-dependent builders against onnx's own bodies."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.defs
import onnx.inliner
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import assert_close, make_model, random, run_ours, run_reference

NODE = "expanded_node"


def _names(table, opset=None):
    return {op if not domain else f"{domain}::{op}"
            for domain, op, since, until in table
            if opset is None or since <= opset <= until}


SUPPORTED = _names(runtime.supported_operators())


def served_by_body(op, opset):
    """Whether the runtime runs `op` (ai.onnx) at `opset` by its schema function body."""
    return op in _names(runtime.schema_function_operators(), opset)


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


def run_with_events(model, feeds):
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    ctx.set_kernel_usage_enabled(True)
    out = runtime.RuntimeSession(model).run(ctx, feeds)
    ran = [e.op_type for e in ctx.events() if e.action == runtime.RuntimeEventAction.kRunNode]
    return out, ran, ctx.get_kernel_usage()


def test_supported_operators_table():
    ops = runtime.supported_operators()
    assert ops == sorted(ops)
    assert all(isinstance(d, str) and isinstance(o, str) and isinstance(since, int) and isinstance(until, int)
               and 1 <= since <= until for d, o, since, until in ops)
    assert "Add" in SUPPORTED and "Conv" in SUPPORTED


def test_schema_function_operators_table():
    ops = runtime.schema_function_operators()
    assert ops == sorted(ops)
    assert all(1 <= since <= until <= runtime.MAX_ONNX_OPSET for _, _, since, until in ops)
    # Static bodies and context-dependent builders, each at the versions onnx gives a body.
    for op, opset in [("Softsign", 18), ("SoftmaxCrossEntropyLoss", 13), ("NegativeLogLikelihoodLoss", 22),
                      ("Celu", 12), ("Celu", 28), ("CenterCropPad", 18), ("SequenceMap", 17),
                      ("Bernoulli", 15), ("MeanVarianceNormalization", 9), ("HannWindow", 17)]:
        assert served_by_body(op, opset), (op, opset)
    assert not served_by_body("Shrink", 17)  # onnx's Shrink body starts at opset 18
    assert not served_by_body("Softsign", 17)
    assert not served_by_body("Attention", 23)  # context-dependent, no C++ builder
    assert not served_by_body("Add", 23)


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


@pytest.mark.parametrize("opset", [12, 13, 22])
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


def test_only_the_log_prob_output():
    # A call may leave out output 0 and use only output 1.
    feeds = nll_inputs((2, 3), 4, False, seed=9)
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "target"], ["", "log_prob"], name=NODE)
    model = make_model([node], feeds, ["log_prob"])
    x = feeds["x"].astype(np.float64)
    expected = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    assert_close(run_ours(model, feeds)[0], expected.astype(np.float32), rtol=1e-5, atol=1e-6)


def test_nested_bodies_run_in_function_contexts():
    # SoftmaxCrossEntropyLoss's body calls NegativeLogLikelihoodLoss, whose body is expanded in turn.
    feeds = nll_inputs((2, 3), 4, False)
    model = loss_model("SoftmaxCrossEntropyLoss", feeds, {"reduction": "mean"})
    before = model.SerializeToString()
    out, ran, usage = run_with_events(model, feeds)
    assert model.SerializeToString() == before
    assert_close(np.asarray(out["loss"]), np.asarray(run_reference(model, feeds)[0]))
    assert ran[-1] == "SoftmaxCrossEntropyLoss" and "NegativeLogLikelihoodLoss" in ran
    assert {"LogSoftmax", "GatherElements"} <= set(ran)
    assert any(u.startswith("LogSoftmax/") for u in usage)
    assert not any(u.startswith("SoftmaxCrossEntropyLoss/") for u in usage)  # no kernel of its own


def test_operator_with_kernel_runs_its_kernel():
    x = random((2, 3))
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name=NODE)], {"x": x}, ["y"])
    assert served_by_body("Relu", 23)  # onnx has a body, but the kernel comes first
    _, ran, _ = run_with_events(model, {"x": x})
    assert ran == ["Relu"]


def test_subgraph_and_local_function_are_expanded():
    # Softsign (a function-bodied operator) inside an If branch; a model-local function beside it.
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
    for cond in (True, False):
        feeds = {"x": x, "c": np.array(cond)}
        assert_close(run_ours(model, feeds)[0], np.asarray(run_reference(model, feeds)[0]))
    _, ran, _ = run_with_events(model, {"x": x, "c": np.array(True)})
    assert "Softsign" in ran and "Div" in ran and "Twice" in ran


def test_persistent_state_expands():
    # present = Concat(past, Softsign(k)) fed back as past.
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


# Operators with no function body in onnx; the first one the runtime lacks is used. Every ai.onnx
# operator has a kernel since ImageDecoder, so the last candidate is a name onnx does not define
# (it has no body either, and the runtime refuses it the same way).
NO_FUNCTION = ["StringSplit", "RegexFullMatch", "TfIdfVectorizer", "DeformConv", "Det", "ImageDecoder",
               "NoSuchOperator"]


def test_unsupported_operator_without_function_still_raises():
    missing = [op for op in NO_FUNCTION if op not in SUPPORTED and not served_by_body(op, 23)]
    assert missing, "every candidate is implemented now: extend NO_FUNCTION"
    op = missing[0]
    node = helper.make_node(op, ["x"], ["y"], name=NODE)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.STRING, [1])],
                              [helper.make_value_info("y", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    with pytest.raises(NotImplementedError, match=rf"node '{NODE}' \({op}\): no kernel for operator '{op}' at opset 23"):
        runtime.RuntimeSession(model)


def test_missing_operator_with_function_next_to_one_without():
    # Softsign is served by its body, the other is not: the error names the one left.
    missing = [op for op in NO_FUNCTION if op not in SUPPORTED]
    assert missing
    x = random((2, 2))
    nodes = [helper.make_node("Softsign", ["x"], ["s"], name="soft"),
             helper.make_node(missing[0], ["s"], ["y"], name=NODE)]
    model = make_model(nodes, {"x": x}, ["y"])
    with pytest.raises(NotImplementedError, match=rf"{NODE}.*{missing[0]}"):
        runtime.RuntimeSession(model)


def test_body_whose_operator_has_no_kernel_names_both():
    # Every operator onnx's bodies use has a kernel now (Bernoulli's RandomUniformLike, then
    # DynamicQuantizeLinear's QuantizeLinear served this test), so the model shadows one: a
    # model-local Abs (resolved before the built-in kernel) whose body calls an operator nothing
    # implements. Softsign's body calls Abs.
    x = random((3,))
    missing = helper.make_node("NoSuchOp", ["X"], ["Y"], domain="test.none")
    abs_body = helper.make_function("", "Abs", ["X"], ["Y"], [missing],
                                    [helper.make_opsetid("", 22), helper.make_opsetid("test.none", 1)])
    model = make_model([helper.make_node("Softsign", ["x"], ["y"], name=NODE)], {"x": x}, ["y"], opset=22,
                       functions=[abs_body])
    with pytest.raises(NotImplementedError, match=rf"node '{NODE}' \(Softsign\).*function body.*"
                                                  r"no kernel for operator 'test.none::NoSuchOp'"):
        runtime.RuntimeSession(model)


def test_operator_version_without_body_keeps_the_refusal():
    # Softsign-1 has no body before opset 18, so opset 17 is refused as before. (Shrink and then
    # ThresholdedRelu served this test until they got their kernels.)
    x = random((5,), seed=4)
    model = make_model([helper.make_node("Softsign", ["x"], ["y"], name=NODE)], {"x": x}, ["y"], opset=17)
    with pytest.raises(NotImplementedError,
                       match=rf"node '{NODE}' \(Softsign\): no kernel for operator 'Softsign' at opset 17"):
        runtime.RuntimeSession(model)


# Calls that leave attributes out: the body must see the schema defaults (alpha=1, axes=[0,2,3],
# output_datatype=float, periodic=1, bias=0 and lambd=0.5).
DEFAULTS = [
    ("ThresholdedRelu", {"x": random((3, 4), seed=2)}, 23),
    ("MeanVarianceNormalization", {"x": random((2, 3, 2, 2), seed=3)}, 13),
    ("MeanVarianceNormalization", {"x": random((2, 3, 2, 2), seed=3)}, 18),
    ("HannWindow", {"size": np.array(10, np.int64)}, 17),
    ("BlackmanWindow", {"size": np.array(7, np.int64)}, 17),
    ("HammingWindow", {"size": np.array(6, np.int64)}, 17),
    ("Shrink", {"x": random((5,), seed=4)}, 23),
    ("Celu", {"x": random((5,), seed=5)}, 23),
]


@pytest.mark.parametrize("op,feeds,opset", DEFAULTS, ids=[f"{d[0]}-{d[2]}" for d in DEFAULTS])
def test_default_attributes_reach_the_body(op, feeds, opset):
    node = helper.make_node(op, list(feeds), ["y"], name=NODE)
    model = make_model([node], feeds, ["y"], opset=opset)
    check(model, feeds, rtol=1e-5, atol=1e-5)
    assert op in SUPPORTED or served_by_body(op, opset)


# ---- the context-dependent builders against onnx's bodies ------------------------------------


def onnx_expanded(model):
    """`model` with every schema-function call inlined by onnx itself (its inliner builds the
    context-dependent bodies from the inferred input types). The schema defaults of attributes a
    call leaves out are written on the call first: the inliner drops an unset `@attr` instead."""
    expanded = onnx.ModelProto()
    expanded.CopyFrom(model)
    opset = next(o.version for o in expanded.opset_import if o.domain in ("", "ai.onnx"))
    for node in expanded.graph.node:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
        present = {a.name for a in node.attribute}
        node.attribute.extend(a.default_value for name, a in schema.attributes.items()
                              if name not in present and a.default_value.name)
    ops = sorted({n.op_type for n in expanded.graph.node} | {"NegativeLogLikelihoodLoss"})
    ids = [(domain, op) for op in ops for domain in ("", "ai.onnx")]
    for _ in range(3):  # nested calls (SoftmaxCrossEntropyLoss -> NegativeLogLikelihoodLoss)
        expanded = onnx.inliner.inline_selected_functions(expanded, ids, exclude=False,
                                                          inline_schema_functions=True)
    return expanded


def check_against_onnx_body(model, feeds, rtol=1e-5, atol=1e-6):
    expanded = onnx_expanded(model)
    called = {n.op_type for n in model.graph.node}
    assert not called & {n.op_type for n in expanded.graph.node}, "onnx did not expand the call"
    expected = run_reference(expanded, feeds)
    actual = run_ours(model, feeds)
    for a, e, out in zip(actual, expected, model.graph.output):
        assert_close(a, np.asarray(e), rtol, atol, name=out.name)


LOSS_VARIANTS = [
    ({"reduction": "mean"}, False, np.float32, 13),
    ({"reduction": "sum", "ignore_index": 1}, True, np.float32, 13),
    ({"reduction": "none", "ignore_index": 0}, False, np.float64, 13),
    ({"reduction": "mean", "ignore_index": 2}, True, np.float64, 22),
    ({"ignore_index": 3}, False, np.float16, 23),
    ({"reduction": "none"}, True, np.float16, 12),
]


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("attrs,with_weight,dtype,opset", LOSS_VARIANTS,
                         ids=[f"{i}-{np.dtype(v[2]).name}-{v[3]}" for i, v in enumerate(LOSS_VARIANTS)])
def test_loss_builders_match_onnx(op, attrs, with_weight, dtype, opset):
    feeds = nll_inputs((3, 2), 4, with_weight, seed=11, ignore=attrs.get("ignore_index"))
    feeds = {k: v.astype(dtype) if v.dtype.kind == "f" else v for k, v in feeds.items()}
    tol = {np.float16: (2e-3, 2e-3), np.float32: (1e-5, 1e-6), np.float64: (1e-10, 1e-12)}[dtype]
    check_against_onnx_body(loss_model(op, feeds, attrs, opset=opset), feeds, *tol)


@pytest.mark.parametrize("alpha", [None, 0.5, 2.0])
def test_celu_builder_matches_onnx(alpha):
    x = random((2, 5), seed=12, low=-3.0, high=3.0)
    attrs = {} if alpha is None else {"alpha": alpha}
    model = make_model([helper.make_node("Celu", ["x"], ["y"], name=NODE, **attrs)], {"x": x}, ["y"], opset=23)
    check_against_onnx_body(model, {"x": x})


CROP_VARIANTS = [
    ((5, 4), [3, 6], None),        # crop one axis, pad the other (odd and even amounts)
    ((2, 7, 3), [4, 2], [1, -1]),  # a subset of the axes, one negative
    ((3, 3), [3, 3], None),        # already the size
    ((6, 1, 2), [1], [0]),
]


@pytest.mark.parametrize("shape,size,axes", CROP_VARIANTS, ids=[str(v) for v in CROP_VARIANTS])
def test_center_crop_pad_builder_matches_onnx(shape, size, axes):
    x = random(shape, seed=13)
    feeds = {"x": x, "shape": np.array(size, np.int64)}
    attrs = {} if axes is None else {"axes": axes}
    model = make_model([helper.make_node("CenterCropPad", ["x", "shape"], ["y"], name=NODE, **attrs)],
                       feeds, ["y"], opset=18)
    check_against_onnx_body(model, feeds)
    check(model, feeds)


def sequence_map_model(extra_is_sequence):
    """SequenceMap over a sequence of 1-D float tensors: y_i = x_i * scale_i (a sequence) or
    y_i = x_i * scale (a tensor), and s_i = Shape(x_i)."""
    x_in = helper.make_tensor_value_info("x_i", TensorProto.FLOAT, ["n"])
    s_in = helper.make_tensor_value_info("scale_i", TensorProto.FLOAT, None)
    body = helper.make_graph(
        [helper.make_node("Mul", ["x_i", "scale_i"], ["y_i"]), helper.make_node("Shape", ["x_i"], ["s_i"])],
        "body", [x_in, s_in],
        [helper.make_tensor_value_info("y_i", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("s_i", TensorProto.INT64, [1])])
    node = helper.make_node("SequenceMap", ["xs", "scale"], ["ys", "shapes"], name=NODE, body=body)
    seq_float = helper.make_tensor_sequence_value_info("xs", TensorProto.FLOAT, None)
    scale = (helper.make_tensor_sequence_value_info("scale", TensorProto.FLOAT, None) if extra_is_sequence
             else helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1]))
    graph = helper.make_graph([node], "g", [seq_float, scale],
                              [helper.make_tensor_sequence_value_info("ys", TensorProto.FLOAT, None),
                               helper.make_tensor_sequence_value_info("shapes", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    return model


@pytest.mark.parametrize("extra_is_sequence", [False, True], ids=["tensor", "sequence"])
def test_sequence_map_builder_matches_onnx(extra_is_sequence):
    xs = [random((n,), seed=20 + n) for n in (3, 1, 4)]
    scale = ([np.array([2.0], np.float32), np.array([-1.0], np.float32), np.array([0.5], np.float32)]
             if extra_is_sequence else np.array([3.0], np.float32))
    model = sequence_map_model(extra_is_sequence)
    feeds = {"xs": xs, "scale": scale}
    expected = run_reference(onnx_expanded(model), feeds)
    actual = run_ours(model, feeds)
    for a, e in zip(actual, expected):
        assert_close(a, [np.asarray(t) for t in e])
    scales = scale if extra_is_sequence else [scale] * 3
    assert_close(actual[0], [x * s for x, s in zip(xs, scales)])


def test_sequence_map_input_of_unknown_kind_is_refused():
    model = sequence_map_model(False)
    # `scale` comes from a node now, so its type is not declared anywhere (Abs, not Identity,
    # which the session removes at build time).
    model.graph.input[1].name = "scale_raw"
    model.graph.node.insert(0, helper.make_node("Abs", ["scale_raw"], ["scale"]))
    with pytest.raises(NotImplementedError, match=rf"node '{NODE}' \(SequenceMap\).*input 1 \('scale'\).*declare"):
        runtime.RuntimeSession(model)
    # Declaring it in value_info is enough.
    model.graph.value_info.append(helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1]))
    runtime.RuntimeSession(model)
