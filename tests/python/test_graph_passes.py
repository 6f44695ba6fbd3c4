"""Build-time graph passes seen from Python (docs/graph-passes.md): the options, GELU fusion on
the forms exporters write, and what events and traces say about rewritten nodes. The C++ tests
(tests/cpp/constant_folding_test.cc, noop_elimination_test.cc) pin the folding and no-op rules."""

import json

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import assert_close, make_model, random, run_reference, run_ours

C_TANH = float(np.sqrt(2.0 / np.pi))


def const(name, value, dtype=np.float32):
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(
        name + "_v", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), [], [float(value)]))


def run_events(model, feeds, options=None):
    """(outputs, run_node events, kernel usage) of one run with events and usage on."""
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    ctx.set_kernel_usage_enabled(True)
    outputs = run_ours(model, feeds, context=ctx, options=options)
    nodes = [e for e in ctx.events() if e.action == runtime.RuntimeEventAction.kRunNode]
    return outputs, nodes, ctx.get_kernel_usage()


def erf_gelu(divide=True, grouping="x_then_half", dtype=np.float32):
    """x * 0.5 * (1 + erf(x / sqrt2)) as torch and BERT exports write it."""
    nodes = [const("sqrt2", np.sqrt(2.0) if divide else 1 / np.sqrt(2.0), dtype), const("one", 1.0, dtype),
             const("half", 0.5, dtype),
             helper.make_node("Div" if divide else "Mul", ["x", "sqrt2"], ["d"], name="scale_arg"),
             helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"])]
    if grouping == "x_then_half":
        nodes += [helper.make_node("Mul", ["x", "a"], ["m"]), helper.make_node("Mul", ["m", "half"], ["y"])]
    else:
        nodes += [helper.make_node("Mul", ["half", "x"], ["h"]), helper.make_node("Mul", ["a", "h"], ["y"])]
    return nodes


def tanh_gelu(cube="pow", dtype=np.float32, coefficient=0.044715):
    """GPT-2's gelu_new: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))."""
    nodes = [const("three", 3.0, dtype), const("k", coefficient, dtype), const("c", C_TANH, dtype),
             const("one", 1.0, dtype), const("half", 0.5, dtype)]
    if cube == "pow":
        nodes += [helper.make_node("Pow", ["x", "three"], ["p"], name="cube"),
                  helper.make_node("Mul", ["p", "k"], ["b"])]
    else:
        nodes += [helper.make_node("Mul", ["x", "x"], ["xx"], name="cube"),
                  helper.make_node("Mul", ["xx", "x"], ["xxx"]),
                  helper.make_node("Mul", ["k", "xxx"], ["b"])]
    nodes += [helper.make_node("Add", ["x", "b"], ["s"]),
              helper.make_node("Mul", ["s", "c"], ["t_in"]),
              helper.make_node("Tanh", ["t_in"], ["t"]),
              helper.make_node("Add", ["one", "t"], ["a"]),
              helper.make_node("Mul", ["x", "half"], ["h"]),
              helper.make_node("Mul", ["h", "a"], ["y"])]
    return nodes


FORMS = {
    "erf-div": lambda: erf_gelu(True, "x_then_half"),
    "erf-mul": lambda: erf_gelu(False, "half_then_a"),
    "tanh-pow": lambda: tanh_gelu("pow"),
    "tanh-xxx": lambda: tanh_gelu("xxx"),
}


@pytest.mark.parametrize("opset", [17, 23])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_gelu_forms_fuse_into_one_node(form, opset):
    feeds = {"x": random((3, 37), seed=1, low=-5, high=5)}
    model = make_model(FORMS[form](), feeds, ["y"], opset=opset)
    want = run_reference(model, feeds)
    got, nodes, usage = run_events(model, feeds)
    assert_close(got, want, rtol=1e-5, atol=2e-6)
    assert [(e.op_domain, e.op_type) for e in nodes] == [("ai.onnx_light.fused", "Gelu")]
    fused = nodes[0]
    # Folded Constants are not part of the fused node; every other written node is.
    written = [i for i, n in enumerate(model.graph.node) if n.op_type != "Constant"]
    assert list(fused.covered_node_indices) == written
    assert list(fused.covered_node_names) == [model.graph.node[i].name for i in written]
    assert fused.node_index == written[0]
    assert any(u.startswith("Gelu/float32/") for u in usage), usage
    assert ("tanh" in form) == any("tanh" in u for u in usage), usage

    unfused_options = runtime.RuntimeSessionOptions(fuse_gelu=False)
    unfused, unfused_nodes, _ = run_events(model, feeds, unfused_options)
    assert [e.node_index for e in unfused_nodes] == written
    assert_close(got, unfused, rtol=1e-5, atol=2e-6)


def test_float16_tanh_gelu_fuses():
    feeds = {"x": random((4, 33), seed=2, low=-4, high=4).astype(np.float16)}
    model = make_model(tanh_gelu("pow", np.float16), feeds, ["y"], opset=18)
    got, nodes, _ = run_events(model, feeds)
    assert [e.op_type for e in nodes] == ["Gelu"]
    want = run_reference(model, feeds)
    assert_close(got, want, rtol=5e-3, atol=5e-3)


def test_another_constant_is_not_gelu():
    feeds = {"x": random((2, 9), seed=3)}
    model = make_model(tanh_gelu("pow", coefficient=0.05), feeds, ["y"])
    got, nodes, _ = run_events(model, feeds)
    assert "Gelu" not in [e.op_type for e in nodes]
    assert_close(got, run_reference(model, feeds))


def test_an_intermediate_read_elsewhere_stops_the_fusion():
    feeds = {"x": random((2, 9), seed=4)}
    model = make_model(erf_gelu(), feeds, ["y", "e"])  # the Erf output is a graph output too
    got, nodes, _ = run_events(model, feeds)
    assert "Gelu" not in [e.op_type for e in nodes]
    for g, w in zip(got, run_reference(model, feeds)):
        assert_close(g, w)


def test_models_cannot_use_the_fused_domain():
    feeds = {"x": random((2,), seed=5)}
    node = helper.make_node("Gelu", ["x"], ["y"], domain="ai.onnx_light.fused")
    model = make_model([node], feeds, ["y"], extra_opsets={"ai.onnx_light.fused": 1})
    with pytest.raises(ValueError, match="reserved"):
        runtime.RuntimeSession(model)


def test_options_default_on_and_switch_off():
    options = runtime.RuntimeSessionOptions()
    assert options.fold_constants and options.eliminate_noop_nodes and options.fuse_gelu
    off = runtime.RuntimeSessionOptions(fold_constants=False, eliminate_noop_nodes=False, fuse_gelu=False)
    assert not (off.fold_constants or off.eliminate_noop_nodes or off.fuse_gelu)
    feeds = {"x": random((2, 5), seed=6)}
    model = make_model(FORMS["tanh-pow"](), feeds, ["y"])
    _, nodes, _ = run_events(model, feeds, off)
    assert len(nodes) == len(model.graph.node)  # the Constant nodes run too


def test_folded_values_and_fused_nodes_in_dicts_and_traces(tmp_path):
    feeds = {"x": random((2, 5), seed=7)}
    nodes = FORMS["erf-div"]()
    nodes[-1].output[0] = "g"
    # The GELU's constants vanish with the fused nodes; this bias stays, folded from two nodes.
    nodes += [const("b0", 2.0), helper.make_node("Neg", ["b0"], ["bias"], name="negate"),
              helper.make_node("Add", ["g", "bias"], ["y"])]
    model = make_model(nodes, feeds, ["y"])
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=True)
    run_ours(model, feeds, context=ctx)
    events = ctx.events()
    folded = [e for e in events if e.action == runtime.RuntimeEventAction.kAdd and e.kind == "initializer"]
    assert [e.name for e in folded] == ["bias"]
    written = [n.name for n in model.graph.node]
    assert [written[i] for i in folded[0].covered_node_indices] == list(folded[0].covered_node_names)
    assert folded[0].covered_node_indices == (len(written) - 3, len(written) - 2)
    assert folded[0].as_dict()["covered_node_names"] == folded[0].covered_node_names
    fused = next(e for e in events if e.action == runtime.RuntimeEventAction.kRunNode)
    assert "covered_node_indices" in fused.as_dict()
    plain = [e for e in events if e.action == runtime.RuntimeEventAction.kAdd and e.kind != "initializer"]
    assert all("covered_node_indices" not in e.as_dict() for e in plain)

    trace_path = tmp_path / "trace.json"
    runtime.export_chrome_trace(events, str(trace_path))
    trace = json.loads(trace_path.read_text())
    records = trace["traceEvents"] if isinstance(trace, dict) else trace
    node_records = [r for r in records if r.get("cat") == "node"]
    assert node_records[0]["args"]["covered_node_names"] == list(fused.covered_node_names)
    # A trace read back keeps them (export_chrome_trace accepts as_dict() dictionaries).
    again = tmp_path / "again.json"
    runtime.export_chrome_trace([e.as_dict() for e in events], str(again))
    assert json.loads(again.read_text()) == trace
