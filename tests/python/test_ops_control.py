"""Control flow (If, Loop, Scan), sequence and optional operators.

Subgraph bodies use only Identity and the operators under test, so every test runs on this
family's kernels alone. Results are compared with onnx.reference where it implements the case,
otherwise with ONNX Runtime (onnx.reference runs no iteration for a Loop without `cond`, fails on
zero-iteration scan outputs, implements Scan only for axis 0 and forward directions, and wraps
optionals in lists), and always with an expectation computed in NumPy where that is simple.
"""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime
from node_check import assert_close, check_model, make_model, random, run_ort, run_ours, run_reference

V = helper.make_tensor_value_info
I64, F32, BOOL = TensorProto.INT64, TensorProto.FLOAT, TensorProto.BOOL


def untyped(name):
    return helper.make_value_info(name, onnx.TypeProto())


def graph(nodes, name, inputs, outputs):
    """A subgraph; inputs/outputs are ValueInfoProtos or names (untyped)."""
    inputs = [untyped(i) if isinstance(i, str) else i for i in inputs]
    outputs = [untyped(o) if isinstance(o, str) else o for o in outputs]
    return helper.make_graph(nodes, name, inputs, outputs)


def ident(src, dst):
    return helper.make_node("Identity", [src], [dst])


def check_ort(model, feeds):
    """Compares with ONNX Runtime and returns our outputs."""
    expected = run_ort(model, feeds)
    actual = run_ours(model, feeds)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, e, name=model.graph.output[i].name)
    return actual


def usage_of(model, feeds):
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    ctx.set_kernel_usage_enabled(True)
    runtime.RuntimeSession(model).run(ctx, feeds)
    return ctx.get_kernel_usage()


# ================================================================================================
# If
# ================================================================================================


def if_node(then_nodes, then_outs, else_nodes, else_outs, outputs, cond="c", name="the_if"):
    return helper.make_node(
        "If", [cond], outputs, name=name,
        then_branch=graph(then_nodes, "then", [], then_outs),
        else_branch=graph(else_nodes, "else", [], else_outs))


@pytest.mark.parametrize("opset", [1, 11, 13, 16, 19, 21, 23])
@pytest.mark.parametrize("cond", [True, False])
def test_if_outer_scope_captures(cond, opset):
    x, y = random((2, 3), seed=1), random((2, 3), seed=2)
    node = if_node([ident("x", "tx")], ["tx"], [ident("y", "ey")], ["ey"], ["out"])
    feeds = {"c": np.array(cond), "x": x, "y": y}
    out = check_model(make_model([node], feeds, ["out"], opset=opset), feeds)
    np.testing.assert_array_equal(out[0], x if cond else y)


@pytest.mark.parametrize("c1,c2", list(itertools.product([True, False], repeat=2)))
def test_if_nested_captures_two_levels_up(c1, c2):
    # outer then-branch: t = Identity(y); inner If(c2) returns x (from the main graph, two levels
    # up) or t (from the outer branch); the outer branch also returns z (one level up).
    x, y, z = random((2, 2), seed=1), random((3,), seed=2), random((4,), seed=3)
    inner = if_node([ident("x", "ix")], ["ix"], [ident("t", "it")], ["it"], ["inner_out"],
                    cond="c2", name="inner_if")
    outer = if_node([ident("y", "t"), inner, ident("z", "zz")], ["inner_out", "zz"],
                    [ident("y", "ey"), ident("x", "ex")], ["ey", "ex"], ["o1", "o2"], cond="c1",
                    name="outer_if")
    feeds = {"c1": np.array(c1), "c2": np.array(c2), "x": x, "y": y, "z": z}
    out = check_model(make_model([outer], feeds, ["o1", "o2"]), feeds)
    if c1:
        np.testing.assert_array_equal(out[0], x if c2 else y)
        np.testing.assert_array_equal(out[1], z)
    else:
        np.testing.assert_array_equal(out[0], y)
        np.testing.assert_array_equal(out[1], x)


@pytest.mark.parametrize("cond", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int64, np.int32, np.int8,
                                   np.uint8, np.bool_])
def test_if_branches_produce_different_shapes(cond, dtype):
    x, y = random((2, 3), dtype, seed=1), random((5,), dtype, seed=2)
    e = np.zeros((0, 4), dtype)
    node = if_node([ident("x", "a"), ident("e", "b")], ["a", "b"],
                   [ident("y", "a2"), ident("x", "b2")], ["a2", "b2"], ["o1", "o2"])
    feeds = {"c": np.array(cond), "x": x, "y": y, "e": e}
    out = check_model(make_model([node], feeds, ["o1", "o2"]), feeds)
    assert out[0].shape == ((2, 3) if cond else (5,))
    assert out[1].shape == ((0, 4) if cond else (2, 3))


def test_if_cond_may_be_any_rank_with_one_element():
    x, y = random((3,), seed=1), random((3,), seed=2)
    node = if_node([ident("x", "tx")], ["tx"], [ident("y", "ey")], ["ey"], ["out"])
    for c in [np.array([True]), np.array([[False]])]:
        feeds = {"c": c, "x": x, "y": y}
        check_model(make_model([node], feeds, ["out"]), feeds)


def test_if_outputs_are_not_copied():
    x, y = random((64,), seed=1), random((64,), seed=2)
    node = if_node([ident("x", "tx")], ["tx"], [ident("y", "ey")], ["ey"], ["out"])
    feeds = {"c": np.array(True), "x": x, "y": y}
    out = run_ours(make_model([node], feeds, ["out"]), feeds)
    assert np.shares_memory(out[0], x)


@pytest.mark.parametrize("cond", [True, False])
def test_if_sequence_output(cond):
    x, y = random((2, 3), seed=1), random((4,), seed=2)
    then_nodes = [helper.make_node("SequenceConstruct", ["x", "y"], ["s"])]
    else_nodes = [helper.make_node("SequenceEmpty", [], ["s2"], dtype=F32)]
    node = if_node(then_nodes, ["s"], else_nodes, ["s2"], ["out"])
    feeds = {"c": np.array(cond), "x": x, "y": y}
    out = check_model(make_model([node], feeds, ["out"]), feeds)
    assert isinstance(out[0], list) and len(out[0]) == (2 if cond else 0)


@pytest.mark.parametrize("cond", [True, False])
def test_if_optional_output(cond):
    x = random((2, 3), seed=1)
    then_nodes = [helper.make_node("Optional", ["x"], ["o"])]
    else_nodes = [helper.make_node("Optional", [], ["o2"],
                                   type=helper.make_tensor_type_proto(F32, None))]
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(F32, None))
    node = helper.make_node(
        "If", ["c"], ["out"],
        then_branch=graph(then_nodes, "then", [], [helper.make_value_info("o", opt)]),
        else_branch=graph(else_nodes, "else", [], [helper.make_value_info("o2", opt)]))
    has = helper.make_node("OptionalHasElement", ["out"], ["has"])
    feeds = {"c": np.array(cond), "x": x}
    model = make_model([node, has], feeds, {"has": BOOL})
    out = check_ort(model, feeds)
    assert bool(out[0]) == cond
    model = make_model([node], feeds, ["out"])
    out = run_ours(model, feeds)
    if cond:
        np.testing.assert_array_equal(out[0], x)
    else:
        assert out[0] is None


def test_if_records_branch_in_kernel_usage():
    x = random((2,), seed=1)
    node = if_node([ident("x", "tx")], ["tx"], [ident("x", "ey")], ["ey"], ["out"])
    for cond, name in [(True, "If/bool/then_branch"), (False, "If/bool/else_branch")]:
        feeds = {"c": np.array(cond), "x": x}
        usage = usage_of(make_model([node], feeds, ["out"]), feeds)
        assert name in usage and "Identity/any/view" in usage


@pytest.mark.parametrize("cond", [np.array(1.0, np.float32), np.array([True, False]),
                                  np.zeros((0,), np.bool_)])
def test_if_bad_condition_is_value_error(cond):
    x = random((2,), seed=1)
    node = if_node([ident("x", "tx")], ["tx"], [ident("x", "ey")], ["ey"], ["out"])
    feeds = {"c": cond, "x": x}
    with pytest.raises(ValueError, match="the_if"):
        run_ours(make_model([node], feeds, ["out"]), feeds)


def test_if_branch_output_count_mismatch_is_value_error():
    x = random((2,), seed=1)
    node = if_node([ident("x", "tx")], ["tx"], [ident("x", "ey")], ["ey"], ["o1", "o2"])
    feeds = {"c": np.array(True), "x": x}
    with pytest.raises(ValueError, match="the_if"):
        runtime.RuntimeSession(make_model([node], feeds, ["o1", "o2"]))


def test_if_error_inside_branch_names_inner_node():
    # SequenceAt out of range inside the branch: the message names the inner node.
    x = random((2,), seed=1)
    then_nodes = [helper.make_node("SequenceConstruct", ["x"], ["s"]),
                  helper.make_node("SequenceAt", ["s", "p"], ["v"], name="bad_at")]
    node = if_node(then_nodes, ["v"], [ident("x", "ey")], ["ey"], ["out"])
    feeds = {"c": np.array(True), "x": x, "p": np.array(5, np.int64)}
    with pytest.raises(ValueError, match="bad_at"):
        run_ours(make_model([node], feeds, ["out"]), feeds)


@pytest.mark.parametrize("cond,branch", [(True, "then_branch"), (False, "else_branch")])
def test_if_events_carry_subgraph_position(events_context, cond, branch):
    x = random((2, 3), seed=1)
    pre = ident("x", "x1")  # node 0
    node = if_node([ident("x1", "tx"), ident("tx", "tx2")], ["tx2"],
                   [ident("x1", "ey"), ident("ey", "ey2")], ["ey2"], ["out"])  # node 1
    post = ident("out", "y")  # node 2
    feeds = {"c": np.array(cond), "x": x}
    model = make_model([pre, node, post], feeds, ["y"])
    runtime.RuntimeSession(model).run(events_context, feeds)
    runs = [e for e in events_context.events() if e.action == runtime.RuntimeEventAction.kRunNode]
    inner = [e for e in runs if e.subgraph_node_index != -1]
    top = [e for e in runs if e.subgraph_node_index == -1]
    assert [e.op_type for e in top] == ["Identity", "If", "Identity"]
    assert [e.node_index for e in top] == [0, 1, 2]
    assert len(inner) == 2
    for e in inner:
        assert e.subgraph_node_index == 1
        assert e.subgraph_attr_name == branch
        assert e.op_type == "Identity"
    assert [e.node_index for e in inner] == [0, 1]
    for e in top:
        assert e.subgraph_attr_name == ""
    # The branch's run events come before the If's own (recorded when it finishes).
    order = [(e.op_type, e.subgraph_node_index) for e in runs]
    assert order == [("Identity", -1), ("Identity", 1), ("Identity", 1), ("If", -1), ("Identity", -1)]


def test_nested_if_events_report_inner_position(events_context):
    x = random((2,), seed=1)
    inner = if_node([ident("x", "ix")], ["ix"], [ident("x", "ix2")], ["ix2"], ["inner_out"],
                    cond="c2", name="inner_if")
    outer = if_node([ident("x", "pad"), inner], ["inner_out"], [ident("x", "ex")], ["ex"], ["out"],
                    cond="c1", name="outer_if")
    feeds = {"c1": np.array(True), "c2": np.array(False), "x": x}
    runtime.RuntimeSession(make_model([outer], feeds, ["out"])).run(events_context, feeds)
    runs = [(e.name, e.op_type, e.node_index, e.subgraph_node_index, e.subgraph_attr_name)
            for e in events_context.events() if e.action == runtime.RuntimeEventAction.kRunNode]
    # The innermost Identity runs at index 0 of inner_if's else_branch, which sits at index 1 of
    # outer_if's then_branch.
    assert ("", "Identity", 0, 1, "else_branch") in runs
    assert ("inner_if", "If", 1, 0, "then_branch") in runs
    assert ("outer_if", "If", 0, -1, "") in runs


# ================================================================================================
# Loop
# ================================================================================================


def loop_body(nodes, carried_in, carried_out, scan_out, cond_out="cout", typed=None,
              i="i", cin="cin"):
    """Body (i, cin, carried...) -> (cond_out, carried..., scans...). `typed` maps names to
    (elem_type, shape) for value infos; the rest stay untyped."""
    typed = typed or {}

    def info(name):
        if name in typed:
            return V(name, *typed[name])
        return untyped(name)

    inputs = [V(i, I64, []), V(cin, BOOL, [])] + [info(n) for n in carried_in]
    outputs = [info(cond_out)] + [info(n) for n in carried_out] + [info(n) for n in scan_out]
    return graph(nodes, "body", inputs, outputs)


def conds_split(name="conds_arr", out="conds"):
    # A sequence of bool scalars from a 1-D bool input: the body reads its condition from it.
    return helper.make_node("SplitToSequence", [name], [out], keepdims=0)


@pytest.mark.parametrize("opset", [1, 11, 13, 16, 19, 21, 23])
@pytest.mark.parametrize("trips", [1, 4])
def test_loop_trip_count_only(trips, opset):
    # cond omitted: a for loop. Carried: a sequence that gets x appended each iteration (opset 13+
    # allows sequences) and a tensor passed through; scans: the iteration number and captured x.
    x = random((3,), seed=1)
    with_seq = opset >= 13
    body_nodes = [ident("cin", "cout"), ident("v_in", "v_out"), ident("i", "i_scan"),
                  ident("x", "x_scan")]
    carried_in, carried_out, loop_in, loop_out = ["v_in"], ["v_out"], ["v"], ["vf"]
    nodes = []
    if with_seq:
        body_nodes.append(helper.make_node("SequenceInsert", ["s_in", "x"], ["s_out"]))
        carried_in, carried_out = ["s_in", "v_in"], ["s_out", "v_out"]
        loop_in, loop_out = ["s0", "v"], ["s", "vf"]
        nodes.append(helper.make_node("SequenceEmpty", [], ["s0"], dtype=F32))
    body = loop_body(body_nodes, carried_in, carried_out, ["i_scan", "x_scan"])
    nodes.append(helper.make_node("Loop", ["M", ""] + loop_in, loop_out + ["iters", "xs"], body=body))
    feeds = {"M": np.array(trips, np.int64), "x": x, "v": random((2, 2), seed=3)}
    out = check_ort(make_model(nodes, feeds, loop_out + ["iters", "xs"], opset=opset), feeds)
    if with_seq:
        assert len(out[0]) == trips
    np.testing.assert_array_equal(out[-3], feeds["v"])
    np.testing.assert_array_equal(out[-2], np.arange(trips))
    np.testing.assert_array_equal(out[-1], np.tile(x, (trips, 1)))


@pytest.mark.parametrize("pattern", [[False], [True, False], [True, True, True, False, True]])
def test_loop_cond_only(pattern):
    # A while loop: the body's condition for the next iteration is conds[i].
    body = loop_body(
        [helper.make_node("SequenceAt", ["conds", "i"], ["cout"]), ident("i", "i_scan"),
         helper.make_node("SequenceInsert", ["s_in", "i"], ["s_out"])],
        ["s_in"], ["s_out"], ["i_scan"])
    nodes = [conds_split(), helper.make_node("SequenceEmpty", [], ["s0"], dtype=I64),
             helper.make_node("Loop", ["", "c", "s0"], ["s", "iters"], body=body)]
    feeds = {"conds_arr": np.array(pattern), "c": np.array(True)}
    # onnx.reference stacks scalar scan outputs with np.vstack, giving [n, 1]; ORT gives [n].
    out = check_ort(make_model(nodes, feeds, ["s", "iters"]), feeds)
    expected = pattern.index(False) + 1
    np.testing.assert_array_equal(out[1], np.arange(expected))
    assert [int(t) for t in out[0]] == list(range(expected))


@pytest.mark.parametrize("trips,pattern,initial", [
    (3, [True] * 6, True), (10, [True, True, False, True], True), (2, [True, False], True),
    (5, [True] * 6, False), (0, [True], True), (-3, [True], True)])
def test_loop_trip_count_and_cond(trips, pattern, initial):
    body = loop_body(
        [helper.make_node("SequenceAt", ["conds", "i"], ["cout"]), ident("i", "i_scan"),
         ident("i", "last_out")],
        ["last_in"], ["last_out"], ["i_scan"],
        typed={"i_scan": (I64, []), "last_in": (I64, []), "last_out": (I64, []), "cout": (BOOL, [])})
    nodes = [conds_split(), helper.make_node("Loop", ["M", "c", "start"], ["last", "iters"], body=body)]
    feeds = {"conds_arr": np.array(pattern), "M": np.array(trips, np.int64), "c": np.array(initial),
             "start": np.array(-1, np.int64)}
    out = check_ort(make_model(nodes, feeds, ["last", "iters"]), feeds)
    n = 0
    cond = initial
    while cond and n < trips:
        cond = pattern[n]
        n += 1
    np.testing.assert_array_equal(out[1], np.arange(n))
    assert out[1].dtype == np.int64
    assert int(out[0]) == n - 1


def test_loop_swaps_carried_values_of_different_shapes():
    # (a, b) -> (b, a) each iteration; also checks that carried values keep their own shapes.
    a, b = random((2,), seed=1), random((3, 1), seed=2)
    body = loop_body([ident("cin", "cout"), ident("b_in", "a_out"), ident("a_in", "b_out")],
                     ["a_in", "b_in"], ["a_out", "b_out"], [])
    for trips in [0, 1, 2, 3]:
        nodes = [helper.make_node("Loop", ["M", "", "a", "b"], ["af", "bf"], body=body)]
        feeds = {"M": np.array(trips, np.int64), "a": a, "b": b}
        out = check_ort(make_model(nodes, feeds, ["af", "bf"]), feeds)
        np.testing.assert_array_equal(out[0], a if trips % 2 == 0 else b)


def test_loop_scan_output_from_captured_sequence():
    # Each iteration emits rows[i] (a captured sequence built in the main graph).
    x = random((4, 3), seed=4)
    body = loop_body([ident("cin", "cout"), helper.make_node("SequenceAt", ["rows", "i"], ["row"])],
                     [], [], ["row"])
    nodes = [helper.make_node("SplitToSequence", ["x"], ["rows"], keepdims=0),
             helper.make_node("Loop", ["M", "c"], ["stacked"], body=body)]
    feeds = {"x": x, "M": np.array(4, np.int64), "c": np.array(True)}
    out = check_model(make_model(nodes, feeds, ["stacked"]), feeds)
    np.testing.assert_array_equal(out[0], x)


@pytest.mark.parametrize("dims,expected", [([3, 2], (0, 3, 2)), (["n", 2], (0, 0, 2)), ([], (0,))])
@pytest.mark.parametrize("stop", ["M", "cond"])
def test_loop_zero_iterations(dims, expected, stop):
    # Carried values come back as given; scan outputs are empty, shaped [0] + the body's declared
    # output shape with symbolic dims as 0 (ONNX Runtime's convention).
    v = random((2, 2), seed=1)
    body = loop_body([ident("cin", "cout"), ident("v_in", "v_out"), ident("y", "y_scan")],
                     ["v_in"], ["v_out"], ["y_scan"],
                     typed={"y_scan": (F32, dims), "v_in": (F32, [2, 2]), "v_out": (F32, [2, 2]),
                            "cout": (BOOL, [])})
    nodes = [helper.make_node("Loop", ["M", "c", "v"], ["vf", "ys"], body=body)]
    feeds = {"M": np.array(0 if stop == "M" else 5, np.int64), "c": np.array(stop == "M"), "v": v,
             "y": random((3, 2), seed=2)}
    model = make_model(nodes, feeds, ["vf", "ys"])
    out = run_ours(model, feeds)
    np.testing.assert_array_equal(out[0], v)
    assert out[1].shape == expected and out[1].dtype == np.float32
    # ORT's shape inference resolves the symbolic dim from the body (3), and rejects a scalar
    # declaration the body contradicts; compare only fully static declarations.
    if dims == [3, 2]:
        check_ort(model, feeds)


def test_loop_zero_iterations_without_declared_type_is_value_error():
    body = loop_body([ident("cin", "cout"), ident("y", "y_scan")], [], [], ["y_scan"])
    nodes = [helper.make_node("Loop", ["M", ""], ["ys"], body=body, name="the_loop")]
    feeds = {"M": np.array(0, np.int64), "y": random((3,), seed=2)}
    with pytest.raises(ValueError, match="the_loop.*y_scan"):
        run_ours(make_model(nodes, feeds, ["ys"]), feeds)


def test_loop_with_if_inside_body():
    # The body branches on conds[i]: odd rows come from x, the others from y (both captured two
    # levels up inside the If).
    x, y = random((3, 2), seed=1), random((3, 2), seed=2)
    inner = if_node([helper.make_node("SequenceAt", ["xs", "i"], ["xr"])], ["xr"],
                    [helper.make_node("SequenceAt", ["ys", "i"], ["yr"])], ["yr"], ["row"],
                    cond="pick", name="pick_if")
    body = loop_body([ident("cin", "cout"), helper.make_node("SequenceAt", ["picks", "i"], ["pick"]),
                      inner], [], [], ["row"])
    nodes = [helper.make_node("SplitToSequence", ["x"], ["xs"], keepdims=0),
             helper.make_node("SplitToSequence", ["y"], ["ys"], keepdims=0),
             conds_split("picks_arr", "picks"),
             helper.make_node("Loop", ["M", ""], ["rows"], body=body)]
    picks = np.array([True, False, True])
    feeds = {"x": x, "y": y, "picks_arr": picks, "M": np.array(3, np.int64)}
    out = check_ort(make_model(nodes, feeds, ["rows"]), feeds)
    np.testing.assert_array_equal(out[0], np.where(picks[:, None], x, y))


def test_loop_nested_loops():
    # The outer loop's scan output is the inner loop's stacked iteration numbers.
    inner_body = loop_body([ident("cin2", "cout2"), ident("j", "j_scan")], [], [], ["j_scan"],
                           cond_out="cout2", i="j", cin="cin2")
    inner = helper.make_node("Loop", ["N", ""], ["js"], body=inner_body)
    outer_body = loop_body([ident("cin", "cout"), inner], [], [], ["js"])
    nodes = [helper.make_node("Loop", ["M", ""], ["all"], body=outer_body)]
    feeds = {"M": np.array(3, np.int64), "N": np.array(2, np.int64)}
    out = check_ort(make_model(nodes, feeds, ["all"]), feeds)
    np.testing.assert_array_equal(out[0], np.tile(np.arange(2), (3, 1)))


def test_loop_unnamed_outputs_are_skipped():
    # The carried output and the first scan output are left unnamed; the second scan output is
    # still produced, and the unnamed one is not shape-checked (its rows differ in shape).
    body = loop_body([ident("cin", "cout"), ident("v_in", "v_out"),
                      helper.make_node("SequenceAt", ["rows", "i"], ["row"]), ident("i", "i_scan")],
                     ["v_in"], ["v_out"], ["row", "i_scan"])
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["rows"]),
             helper.make_node("Loop", ["M", "", "v"], ["", "", "iters"], body=body)]
    feeds = {"a": random((2,), seed=1), "b": random((3,), seed=2), "M": np.array(2, np.int64),
             "v": random((1,), seed=3)}
    out = run_ours(make_model(nodes, feeds, ["iters"]), feeds)
    np.testing.assert_array_equal(out[0], [0, 1])


def test_loop_events_carry_body_position(events_context):
    body = loop_body([ident("cin", "cout"), ident("i", "i_scan")], [], [], ["i_scan"])
    nodes = [ident("M", "M2"), helper.make_node("Loop", ["M2", ""], ["iters"], body=body)]
    feeds = {"M": np.array(3, np.int64)}
    runtime.RuntimeSession(make_model(nodes, feeds, ["iters"])).run(events_context, feeds)
    runs = [e for e in events_context.events() if e.action == runtime.RuntimeEventAction.kRunNode]
    inner = [e for e in runs if e.subgraph_node_index != -1]
    assert len(inner) == 6  # two Identity nodes, three iterations
    assert all(e.subgraph_node_index == 1 and e.subgraph_attr_name == "body" for e in inner)
    # The top-level Identity is removed at build time (eliminate_noop_nodes); the Loop keeps its
    # written position, which its body's events name.
    top = [e for e in runs if e.subgraph_node_index == -1]
    assert [(e.op_type, e.node_index) for e in top] == [("Loop", 1)]


def test_loop_kernel_usage():
    body = loop_body([ident("cin", "cout"), ident("i", "i_scan")], [], [], ["i_scan"])
    nodes = [helper.make_node("Loop", ["M", ""], ["iters"], body=body)]
    feeds = {"M": np.array(2, np.int64)}
    assert "Loop/any/body+scan-outputs" in usage_of(make_model(nodes, feeds, ["iters"]), feeds)


def test_loop_bad_trip_count_dtype_is_value_error():
    body = loop_body([ident("cin", "cout")], [], [], [])
    nodes = [helper.make_node("Loop", ["M", ""], [], body=body, name="the_loop"),
             ident("M", "out")]
    feeds = {"M": np.array(2, np.int32)}
    with pytest.raises(ValueError, match="the_loop.*int64"):
        run_ours(make_model(nodes, feeds, ["out"]), feeds)


def test_loop_scan_output_shape_change_is_value_error():
    # rows has items of different shapes, so the scan output changes shape in iteration 1.
    body = loop_body([ident("cin", "cout"), helper.make_node("SequenceAt", ["rows", "i"], ["row"])],
                     [], [], ["row"])
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["rows"]),
             helper.make_node("Loop", ["M", ""], ["stacked"], body=body, name="the_loop")]
    feeds = {"a": random((2,), seed=1), "b": random((3,), seed=2), "M": np.array(2, np.int64)}
    with pytest.raises(ValueError, match="the_loop.*iteration 1"):
        run_ours(make_model(nodes, feeds, ["stacked"]), feeds)


def test_loop_body_input_count_mismatch_is_value_error():
    body = loop_body([ident("cin", "cout")], ["extra"], ["cin"], [])
    nodes = [helper.make_node("Loop", ["M", ""], [], body=body, name="the_loop"), ident("M", "o")]
    feeds = {"M": np.array(2, np.int64)}
    with pytest.raises(ValueError, match="the_loop"):
        runtime.RuntimeSession(make_model(nodes, feeds, ["o"]))


# ================================================================================================
# Scan
# ================================================================================================


def scan_model(n_states, scan_inputs, state_names, body_nodes, body_in, body_out, outputs, attrs,
               feeds, opset=23, typed_body=None, leading=()):
    typed_body = typed_body or {}

    def info(name):
        return V(name, *typed_body[name]) if name in typed_body else untyped(name)

    body = graph(body_nodes, "body", [info(n) for n in body_in], [info(n) for n in body_out])
    node = helper.make_node("Scan", list(leading) + state_names + scan_inputs, outputs, body=body,
                            name="the_scan", **attrs)
    return make_model([node], feeds, outputs, opset=opset)


@pytest.mark.parametrize("opset", [9, 11, 16, 19, 21, 23])
def test_scan_forward_multiple_inputs(opset):
    # State: the last slice of a; scans: slices of b and of a, in order.
    a, b = random((4, 2), seed=1), random((4, 3, 2), seed=2)
    model = scan_model(1, ["a", "b"], ["s0"], [ident("a_t", "s_out"), ident("b_t", "b_scan"),
                                               ident("s_in", "prev_scan")],
                       ["s_in", "a_t", "b_t"], ["s_out", "b_scan", "prev_scan"],
                       ["s", "bs", "prevs"], {"num_scan_inputs": 2},
                       feeds := {"s0": random((2,), seed=3), "a": a, "b": b}, opset=opset)
    out = check_model(model, feeds)
    np.testing.assert_array_equal(out[0], a[-1])
    np.testing.assert_array_equal(out[1], b)
    np.testing.assert_array_equal(out[2], np.concatenate([feeds["s0"][None], a[:-1]]))


def expected_scan(x, in_axis, in_dir, out_axis, out_dir):
    slices = list(np.moveaxis(x, in_axis, 0))
    if in_dir:
        slices = slices[::-1]
    if out_dir:
        slices = slices[::-1]
    return np.stack(slices, axis=out_axis)


@pytest.mark.parametrize("in_axes,in_dirs,out_axes,out_dirs", [
    ([0, 0], [1, 0], [0, 0], [0, 0]),
    ([1, 2], [0, 0], [0, 0], [0, 0]),
    ([-1, 0], [1, 1], [1, -1], [0, 1]),
    ([1, 1], [0, 1], [2, 0], [1, 1]),
    ([2, -2], [1, 0], [-3, 1], [1, 0]),
])
def test_scan_axes_and_directions(in_axes, in_dirs, out_axes, out_dirs):
    # Both inputs have 3 entries along their scan axis.
    a = random((2, 3, 3), seed=1) if in_axes[0] in (1, -2, 2, -1) else random((3, 2, 4), seed=1)
    b = random((3, 3, 5), seed=2) if in_axes[1] in (0, 1, -2) else random((2, 4, 3), seed=2)
    attrs = {"num_scan_inputs": 2, "scan_input_axes": in_axes, "scan_input_directions": in_dirs,
             "scan_output_axes": out_axes, "scan_output_directions": out_dirs}
    norm = lambda ax, r: ax + r if ax < 0 else ax  # noqa: E731
    a_slices = np.moveaxis(a, norm(in_axes[0], 3), 0)
    # State: the slice of a processed last (threads through the iterations in processing order).
    feeds = {"s0": np.zeros_like(a_slices[0]), "a": a, "b": b}
    model = scan_model(1, ["a", "b"], ["s0"],
                       [ident("a_t", "s_out"), ident("a_t", "a_scan"), ident("b_t", "b_scan")],
                       ["s_in", "a_t", "b_t"], ["s_out", "a_scan", "b_scan"], ["s", "as", "bs"],
                       attrs, feeds)
    out = check_ort(model, feeds)
    np.testing.assert_array_equal(out[0], a_slices[0] if in_dirs[0] else a_slices[-1])
    np.testing.assert_array_equal(out[1], expected_scan(a, norm(in_axes[0], 3), in_dirs[0],
                                                        norm(out_axes[0], 3), out_dirs[0]))
    np.testing.assert_array_equal(out[2], expected_scan(b, norm(in_axes[1], 3), in_dirs[1],
                                                        norm(out_axes[1], 3), out_dirs[1]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.bool_, np.uint8, np.float64])
def test_scan_dtypes(dtype):
    x = random((3, 2), dtype, seed=1)
    model = scan_model(0, ["x"], [], [ident("x_t", "x_scan")], ["x_t"], ["x_scan"], ["xs"],
                       {"num_scan_inputs": 1, "scan_output_axes": [1]}, feeds := {"x": x})
    out = check_ort(model, feeds)
    np.testing.assert_array_equal(out[0], x.T)


def test_scan_strings():
    x = np.array([["a", "bb"], ["ccc", "d"], ["e", "f"]], dtype=object)
    model = scan_model(0, ["x"], [], [ident("x_t", "x_scan")], ["x_t"], ["x_scan"], ["xs"],
                       {"num_scan_inputs": 1, "scan_input_axes": [1], "scan_input_directions": [1]},
                       feeds := {"x": x})
    out = run_ours(model, feeds)
    assert out[0].tolist() == [["bb", "d", "f"], ["a", "ccc", "e"]]


def test_scan_body_captures_outer_value():
    x, w = random((3, 2), seed=1), random((4,), seed=2)
    model = scan_model(0, ["x"], [], [ident("w", "w_scan")], ["x_t"], ["w_scan"], ["ws"],
                       {"num_scan_inputs": 1}, feeds := {"x": x, "w": w})
    out = check_model(model, feeds)
    np.testing.assert_array_equal(out[0], np.tile(w, (3, 1)))


def test_scan_zero_length():
    x = np.zeros((0, 2), np.float32)
    s0 = random((2,), seed=1)
    model = scan_model(1, ["x"], ["s0"], [ident("x_t", "s_out"), ident("x_t", "x_scan")],
                       ["s_in", "x_t"], ["s_out", "x_scan"], ["s", "xs"],
                       {"num_scan_inputs": 1, "scan_output_axes": [1]}, feeds := {"s0": s0, "x": x},
                       typed_body={"x_scan": (F32, [2]), "s_in": (F32, [2]), "s_out": (F32, [2]),
                                   "x_t": (F32, [2])})
    out = run_ours(model, feeds)
    np.testing.assert_array_equal(out[0], s0)
    assert out[1].shape == (2, 0)


def test_scan_length_mismatch_is_value_error():
    model = scan_model(0, ["a", "b"], [], [ident("a_t", "a_scan")], ["a_t", "b_t"], ["a_scan"],
                       ["as"], {"num_scan_inputs": 2},
                       feeds := {"a": random((3, 2)), "b": random((4, 2))})
    with pytest.raises(ValueError, match="the_scan.*same length"):
        run_ours(model, feeds)


def test_scan_bad_attribute_is_value_error():
    feeds = {"a": random((3, 2))}
    for attrs in [{"num_scan_inputs": 1, "scan_input_directions": [2]},
                  {"num_scan_inputs": 1, "scan_input_axes": [0, 1]},
                  {"num_scan_inputs": 3}]:
        model = scan_model(0, ["a"], [], [ident("a_t", "a_scan")], ["a_t"], ["a_scan"], ["as"],
                           attrs, feeds)
        with pytest.raises(ValueError, match="the_scan"):
            runtime.RuntimeSession(model)


def test_scan_bad_axis_is_value_error():
    model = scan_model(0, ["a"], [], [ident("a_t", "a_scan")], ["a_t"], ["a_scan"], ["as"],
                       {"num_scan_inputs": 1, "scan_input_axes": [2]}, feeds := {"a": random((3, 2))})
    with pytest.raises(ValueError, match="the_scan.*axes"):
        run_ours(model, feeds)


def test_scan_kernel_usage_tells_paths_apart():
    feeds = {"a": random((3, 2))}
    for axes, name in [([0], "Scan/any/axis0-views"), ([1], "Scan/any/moved-axis-inputs")]:
        model = scan_model(0, ["a"], [], [ident("a_t", "a_scan")], ["a_t"], ["a_scan"], ["as"],
                           {"num_scan_inputs": 1, "scan_input_axes": axes}, feeds)
        assert name in usage_of(model, feeds)


@pytest.mark.parametrize("lens", [None, [3, 1], [1, 2]])
@pytest.mark.parametrize("direction", [0, 1])
def test_scan_opset8_batched(lens, direction):
    # Inputs carry a batch axis; scan outputs past a batch entry's length are zero.
    x = random((2, 3, 4), seed=1)
    s0 = random((2, 4), seed=2)
    leading = ["lens"] if lens is not None else [""]
    feeds = {"s0": s0, "x": x}
    if lens is not None:
        feeds["lens"] = np.array(lens, np.int64)
    typed = {"s_in": (F32, [4]), "x_t": (F32, [4]), "s_out": (F32, [4]), "x_scan": (F32, [4]),
             "prev": (F32, [4])}
    model = scan_model(1, ["x"], ["s0"], [ident("x_t", "s_out"), ident("x_t", "x_scan"),
                                          ident("s_in", "prev")],
                       ["s_in", "x_t"], ["s_out", "x_scan", "prev"], ["s", "xs", "prevs"],
                       {"num_scan_inputs": 1, "directions": [direction]}, feeds, opset=8,
                       typed_body=typed, leading=leading)
    out = check_ort(model, feeds)
    for b in range(2):
        n = 3 if lens is None else lens[b]
        order = list(range(n))[::-1] if direction else list(range(n))
        np.testing.assert_array_equal(out[0][b], x[b, order[-1]] if n else s0[b])
        np.testing.assert_array_equal(out[1][b, :n], x[b, order])
        assert not out[1][b, n:].any()


# ================================================================================================
# Sequences
# ================================================================================================

SEQ_DTYPES = [np.float32, np.float16, np.float64, np.int64, np.int32, np.int8, np.uint8, np.bool_]


def seq_model(nodes, feeds, outputs, opset=23):
    return make_model(nodes, feeds, outputs, opset=opset)


def construct(names, out="seq"):
    return helper.make_node("SequenceConstruct", names, [out])


def three(dtype, shapes=((2, 3), (1, 3), (4, 3))):
    return {f"t{i}": random(s, dtype, seed=i) for i, s in enumerate(shapes)}


@pytest.mark.parametrize("dtype", SEQ_DTYPES)
def test_sequence_construct_and_length(dtype):
    feeds = three(dtype)
    nodes = [construct(list(feeds)), helper.make_node("SequenceLength", ["seq"], ["n"])]
    out = check_model(seq_model(nodes, feeds, ["seq", "n"]), feeds)
    assert int(out[1]) == 3 and out[1].dtype == np.int64


@pytest.mark.parametrize("dtype_code", [F32, I64, TensorProto.FLOAT16, BOOL, TensorProto.STRING])
def test_sequence_empty(dtype_code):
    nodes = [helper.make_node("SequenceEmpty", [], ["seq"], dtype=dtype_code),
             helper.make_node("SequenceLength", ["seq"], ["n"])]
    feeds = {}
    out = check_model(seq_model(nodes, feeds, ["seq", "n"]), feeds)
    assert out[0] == [] and int(out[1]) == 0


def test_sequence_empty_unsupported_dtype_is_not_implemented():
    nodes = [helper.make_node("SequenceEmpty", [], ["seq"], dtype=29, name="mk")]  # no such ONNX type (yet)
    with pytest.raises(NotImplementedError, match="mk"):
        runtime.RuntimeSession(seq_model(nodes, {}, ["seq"]))


def test_concat_from_sequence_bad_new_axis_is_value_error():
    feeds = three(np.float32)
    nodes = [construct(list(feeds)),
             helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0, new_axis=2, name="cat")]
    with pytest.raises(ValueError, match="cat.*new_axis"):
        runtime.RuntimeSession(seq_model(nodes, feeds, ["y"]))


def test_sequence_empty_default_dtype_then_insert_float():
    nodes = [helper.make_node("SequenceEmpty", [], ["e"]),
             helper.make_node("SequenceInsert", ["e", "x"], ["seq"])]
    feeds = {"x": random((2,))}
    check_model(seq_model(nodes, feeds, ["seq"]), feeds)


@pytest.mark.parametrize("position", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("pos_dtype", [np.int64, np.int32])
def test_sequence_at(position, pos_dtype):
    feeds = three(np.float32)
    feeds["p"] = np.array(position, pos_dtype)
    nodes = [construct(["t0", "t1", "t2"]), helper.make_node("SequenceAt", ["seq", "p"], ["y"])]
    out = check_model(seq_model(nodes, feeds, ["y"]), feeds)
    np.testing.assert_array_equal(out[0], feeds[f"t{position % 3}"])


@pytest.mark.parametrize("position", [3, -4])
def test_sequence_at_out_of_range_is_value_error(position):
    feeds = three(np.float32)
    feeds["p"] = np.array(position, np.int64)
    nodes = [construct(["t0", "t1", "t2"]),
             helper.make_node("SequenceAt", ["seq", "p"], ["y"], name="at_node")]
    with pytest.raises(ValueError, match="at_node.*position"):
        run_ours(seq_model(nodes, feeds, ["y"]), feeds)


def test_sequence_at_bad_position_type_is_value_error():
    feeds = three(np.float32)
    feeds["p"] = np.array(1.0, np.float32)
    nodes = [construct(["t0", "t1", "t2"]),
             helper.make_node("SequenceAt", ["seq", "p"], ["y"], name="at_node")]
    with pytest.raises(ValueError, match="at_node"):
        run_ours(seq_model(nodes, feeds, ["y"]), feeds)


@pytest.mark.parametrize("position", [None, 0, 1, 3, -1, -3, np.array([2], np.int64)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_sequence_insert(position, dtype):
    feeds = three(dtype)
    feeds["x"] = random((5, 3), dtype, seed=9)
    inputs = ["seq", "x"]
    if position is not None:
        feeds["p"] = np.asarray(position, np.int64) if not isinstance(position, np.ndarray) else position
        inputs.append("p")
    nodes = [construct(["t0", "t1", "t2"]), helper.make_node("SequenceInsert", inputs, ["out"])]
    model = seq_model(nodes, feeds, ["out"])
    if position is not None and int(np.ravel(position)[0]) == 3:
        # position == length appends; onnx.reference wraps it to the front, so check directly.
        out = run_ours(model, feeds)
        assert_close(out[0], [feeds["t0"], feeds["t1"], feeds["t2"], feeds["x"]])
    else:
        out = check_model(model, feeds)
    assert len(out[0]) == 4


def test_sequence_insert_keeps_input_sequence_unchanged():
    feeds = three(np.float32)
    feeds["x"] = random((5, 3), seed=9)
    nodes = [construct(["t0", "t1", "t2"]), helper.make_node("SequenceInsert", ["seq", "x"], ["out"])]
    out = check_model(seq_model(nodes, feeds, ["seq", "out"]), feeds)
    assert len(out[0]) == 3 and len(out[1]) == 4


def test_sequence_insert_type_mismatch_is_value_error():
    feeds = three(np.float32)
    feeds["x"] = random((5, 3), np.int64, seed=9)
    nodes = [construct(["t0", "t1", "t2"]),
             helper.make_node("SequenceInsert", ["seq", "x"], ["out"], name="ins")]
    with pytest.raises(ValueError, match="ins.*int64.*float32"):
        run_ours(seq_model(nodes, feeds, ["out"]), feeds)


@pytest.mark.parametrize("position", [4, -5])
def test_sequence_insert_out_of_range_is_value_error(position):
    feeds = three(np.float32)
    feeds["x"] = random((5, 3), seed=9)
    feeds["p"] = np.array(position, np.int64)
    nodes = [construct(["t0", "t1", "t2"]),
             helper.make_node("SequenceInsert", ["seq", "x", "p"], ["out"], name="ins")]
    with pytest.raises(ValueError, match="ins.*position"):
        run_ours(seq_model(nodes, feeds, ["out"]), feeds)


@pytest.mark.parametrize("position", [None, 0, 1, 2, -1, -3])
def test_sequence_erase(position):
    feeds = three(np.float32)
    inputs = ["seq"]
    if position is not None:
        feeds["p"] = np.array(position, np.int32)
        inputs.append("p")
    nodes = [construct(["t0", "t1", "t2"]), helper.make_node("SequenceErase", inputs, ["out"])]
    out = check_model(seq_model(nodes, feeds, ["out"]), feeds)
    assert len(out[0]) == 2


def test_sequence_erase_empty_is_value_error():
    nodes = [helper.make_node("SequenceEmpty", [], ["e"]),
             helper.make_node("SequenceErase", ["e"], ["out"], name="erase")]
    with pytest.raises(ValueError, match="erase.*empty"):
        run_ours(seq_model(nodes, {}, ["out"]), {})


def test_sequence_op_on_tensor_input_is_value_error():
    feeds = {"x": random((2,))}
    nodes = [helper.make_node("SequenceLength", ["x"], ["n"], name="len")]
    with pytest.raises(ValueError, match="len.*sequence"):
        run_ours(seq_model(nodes, feeds, ["n"]), feeds)


def test_sequence_construct_mixed_types_is_value_error():
    feeds = {"a": random((2,)), "b": random((2,), np.int64)}
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"], name="mk")]
    with pytest.raises(ValueError, match="mk.*int64"):
        run_ours(seq_model(nodes, feeds, ["s"]), feeds)


@pytest.mark.parametrize("axis", [0, -2])
@pytest.mark.parametrize("dtype", SEQ_DTYPES)
def test_concat_from_sequence_axis0(axis, dtype):
    feeds = three(dtype)
    nodes = [construct(list(feeds)), helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=axis)]
    check_model(seq_model(nodes, feeds, ["y"]), feeds)


@pytest.mark.parametrize("axis", [1, -1])
def test_concat_from_sequence_inner_axis(axis):
    feeds = three(np.float32, shapes=((2, 3, 4), (2, 3, 1), (2, 3, 0))) if axis == -1 else \
        three(np.float32, shapes=((2, 1, 4), (2, 5, 4), (2, 2, 4)))
    nodes = [construct(list(feeds)), helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=axis)]
    check_model(seq_model(nodes, feeds, ["y"]), feeds)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16])
def test_concat_from_sequence_new_axis(axis, dtype):
    feeds = three(dtype, shapes=((2, 3), (2, 3), (2, 3)))
    nodes = [construct(list(feeds)),
             helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=axis, new_axis=1)]
    out = check_model(seq_model(nodes, feeds, ["y"]), feeds)
    np.testing.assert_array_equal(out[0], np.stack(list(feeds.values()), axis=axis))


def test_concat_from_sequence_strings():
    feeds = {"a": np.array(["x", "yy"], dtype=object), "b": np.array(["zzz"], dtype=object)}
    nodes = [construct(["a", "b"]), helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0)]
    out = run_ours(seq_model(nodes, feeds, ["y"]), feeds)
    assert out[0].tolist() == ["x", "yy", "zzz"]


@pytest.mark.parametrize("axis,new_axis,shapes", [
    (2, 0, ((2, 3), (2, 3))), (3, 1, ((2, 3), (2, 3))), (0, 0, ((2, 3), (2, 4))),
    (0, 1, ((2, 3), (3, 2))), (0, 0, ((2, 3), (2, 3, 1)))])
def test_concat_from_sequence_errors(axis, new_axis, shapes):
    feeds = three(np.float32, shapes=shapes)
    nodes = [construct(list(feeds)),
             helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=axis, new_axis=new_axis,
                              name="cat")]
    with pytest.raises(ValueError, match="cat"):
        run_ours(seq_model(nodes, feeds, ["y"]), feeds)


def test_concat_from_empty_sequence_is_value_error():
    nodes = [helper.make_node("SequenceEmpty", [], ["e"]),
             helper.make_node("ConcatFromSequence", ["e"], ["y"], axis=0, name="cat")]
    with pytest.raises(ValueError, match="cat.*empty"):
        run_ours(seq_model(nodes, {}, ["y"]), {})


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.float16])
def test_split_to_sequence_no_split(axis, keepdims, dtype):
    feeds = {"x": random((3, 4, 2), dtype)}
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=axis, keepdims=keepdims)]
    out = check_model(seq_model(nodes, feeds, ["seq"]), feeds)
    assert len(out[0]) == feeds["x"].shape[axis]


@pytest.mark.parametrize("split", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("axis", [0, 1])
def test_split_to_sequence_scalar_split(split, axis):
    feeds = {"x": random((5, 5), seed=2), "split": np.array(split, np.int64)}
    nodes = [helper.make_node("SplitToSequence", ["x", "split"], ["seq"], axis=axis, keepdims=0)]
    check_model(seq_model(nodes, feeds, ["seq"]), feeds)


@pytest.mark.parametrize("split", [[1, 2, 3], [6], [0, 6, 0], [2, 2, 2]])
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("split_dtype", [np.int64, np.int32])
def test_split_to_sequence_split_list(split, axis, split_dtype):
    feeds = {"x": random((6, 6), seed=3), "split": np.array(split, split_dtype)}
    nodes = [helper.make_node("SplitToSequence", ["x", "split"], ["seq"], axis=axis)]
    check_model(seq_model(nodes, feeds, ["seq"]), feeds)


def test_split_to_sequence_empty_dim():
    feeds = {"x": np.zeros((0, 3), np.float32)}
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=0),
             helper.make_node("SequenceLength", ["seq"], ["n"])]
    out = check_model(seq_model(nodes, feeds, ["seq", "n"]), feeds)
    assert out[0] == [] and int(out[1]) == 0
    feeds = {"x": np.zeros((2, 0), np.float32)}
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=0)]
    check_model(seq_model(nodes, feeds, ["seq"]), feeds)


def test_split_to_sequence_axis0_views_share_memory():
    x = random((4, 8), seed=1)
    feeds = {"x": x}
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], keepdims=0)]
    model = seq_model(nodes, feeds, ["seq"])
    out = run_ours(model, feeds)
    assert all(np.shares_memory(o, x) for o in out[0])
    assert "SplitToSequence/float32/views" in usage_of(model, feeds)
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=1)]
    assert "SplitToSequence/float32/copy" in usage_of(seq_model(nodes, feeds, ["seq"]), feeds)


def test_split_to_sequence_strings():
    x = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=1, keepdims=0)]
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    out = runtime.RuntimeSession(seq_model(nodes, {"x": x}, ["seq"])).run(ctx, {"x": x})
    assert [o.numpy().tolist() for o in out["seq"]] == [["a", "d"], ["b", "e"], ["c", "f"]]


@pytest.mark.parametrize("split,axis", [([1, 1], 0), ([4, -1], 0), (0, 0), (None, 2),
                                        (np.zeros((1, 1), np.int64), 0)])
def test_split_to_sequence_errors(split, axis):
    feeds = {"x": random((3, 2))}
    inputs = ["x"]
    if split is not None:
        feeds["split"] = np.asarray(split, np.int64)
        inputs.append("split")
    nodes = [helper.make_node("SplitToSequence", inputs, ["seq"], axis=axis, name="splitter")]
    with pytest.raises(ValueError, match="splitter"):
        run_ours(seq_model(nodes, feeds, ["seq"]), feeds)


def test_split_then_concat_round_trip_with_kernel_usage():
    x = random((3, 4), seed=5)
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=1, keepdims=0),
             helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=1, new_axis=1)]
    model = seq_model(nodes, {"x": x}, ["y"])
    out = check_model(model, {"x": x})
    np.testing.assert_array_equal(out[0], x)
    assert "ConcatFromSequence/float32/stack" in usage_of(model, {"x": x})


# ================================================================================================
# Optional
# ================================================================================================


@pytest.mark.parametrize("opset", [15, 18, 23])
def test_optional_with_tensor(opset):
    x = random((2, 3), seed=1)
    nodes = [helper.make_node("Optional", ["x"], ["o"]),
             helper.make_node("OptionalHasElement", ["o"], ["h"]),
             helper.make_node("OptionalGetElement", ["o"], ["g"])]
    feeds = {"x": x}
    out = check_ort(make_model(nodes, feeds, {"h": BOOL, "g": F32}, opset=opset), feeds)
    assert bool(out[0]) and np.shares_memory(out[1], x)


@pytest.mark.parametrize("opset", [15, 18, 23])
def test_optional_empty(opset):
    nodes = [helper.make_node("Optional", [], ["o"], type=helper.make_tensor_type_proto(F32, None)),
             helper.make_node("OptionalHasElement", ["o"], ["h"])]
    out = check_ort(make_model(nodes, {}, {"h": BOOL}, opset=opset), {})
    assert not bool(out[0])
    assert run_ours(make_model(nodes, {}, ["o"], opset=opset), {})[0] is None


def test_optional_with_sequence():
    feeds = three(np.float32)
    nodes = [construct(list(feeds)), helper.make_node("Optional", ["seq"], ["o"]),
             helper.make_node("OptionalGetElement", ["o"], ["g"]),
             helper.make_node("OptionalHasElement", ["o"], ["h"])]
    out = run_ours(make_model(nodes, feeds, ["g", "h"]), feeds)
    assert len(out[0]) == 3 and bool(out[1])


def test_optional_v18_accepts_plain_values_and_missing_input():
    x = random((2,), seed=1)
    nodes = [helper.make_node("OptionalHasElement", ["x"], ["h1"]),
             helper.make_node("OptionalHasElement", [], ["h2"]),
             helper.make_node("OptionalGetElement", ["x"], ["g"])]
    feeds = {"x": x}
    out = check_ort(make_model(nodes, feeds, {"h1": BOOL, "h2": BOOL, "g": F32}, opset=18), feeds)
    assert bool(out[0]) and not bool(out[1])


def test_optional_get_element_of_empty_is_value_error():
    nodes = [helper.make_node("Optional", [], ["o"], type=helper.make_tensor_type_proto(F32, None)),
             helper.make_node("OptionalGetElement", ["o"], ["g"], name="get")]
    with pytest.raises(ValueError, match="get.*empty"):
        run_ours(make_model(nodes, {}, ["g"]), {})


def test_scan_opset8_zero_length_entries():
    # ORT rejects zero entries in sequence_lens; the spec allows them: the state passes through
    # and the scan output rows stay zero.
    x = random((2, 3, 4), seed=1)
    s0 = random((2, 4), seed=2)
    feeds = {"lens": np.array([0, 2], np.int64), "s0": s0, "x": x}
    model = scan_model(1, ["x"], ["s0"], [ident("x_t", "s_out"), ident("x_t", "x_scan")],
                       ["s_in", "x_t"], ["s_out", "x_scan"], ["s", "xs"],
                       {"num_scan_inputs": 1}, feeds, opset=8, leading=["lens"])
    out = run_ours(model, feeds)
    np.testing.assert_array_equal(out[0], np.stack([s0[0], x[1, 1]]))
    np.testing.assert_array_equal(out[1][0], np.zeros((3, 4), np.float32))
    np.testing.assert_array_equal(out[1][1, :2], x[1, :2])
    assert not out[1][1, 2].any()


def test_scan_opset8_bad_sequence_lens_is_value_error():
    feeds = {"lens": np.array([4, 1], np.int64), "x": random((2, 3, 4))}
    model = scan_model(0, ["x"], [], [ident("x_t", "x_scan")], ["x_t"], ["x_scan"], ["xs"],
                       {"num_scan_inputs": 1}, feeds, opset=8, leading=["lens"])
    with pytest.raises(ValueError, match="the_scan.*sequence_lens"):
        run_ours(model, feeds)
