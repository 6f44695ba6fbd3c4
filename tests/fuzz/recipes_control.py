"""Recipes for control flow (If, Loop, Scan), sequences and optionals. These build small graphs
of a few nodes; the operator under test is the one the recipe is registered for."""

from __future__ import annotations

import numpy as np
from onnx import helper

from recipe_tools import Case, Gen, onnx_type


def _info(name: str, t: str, shape=None):
    return helper.make_tensor_value_info(name, onnx_type(t), shape)


def _branch(name: str, node_op: str, source: str, t: str):
    """A subgraph without inputs computing `node_op(source)` from the enclosing scope."""
    out = f"{name}_out"
    node = helper.make_node(node_op, [source], [out])
    return helper.make_graph([node], name, [], [_info(out, t)])


def if_(g: Gen) -> Case:
    t = g.choice(["float", "int64", "int32", "double"])
    x = g.array(t, g.shape())
    then_op, else_op = g.choice(["Identity", "Neg", "Abs"]), g.choice(["Identity", "Neg", "Abs"])
    attrs = {"then_branch": _branch("then", then_op, "x1", t),
             "else_branch": _branch("else", else_op, "x1", t)}
    return Case("If", g.opset, [g.scalar("bool", g.chance(0.5)), x], attrs,
                nodes=[helper.make_node("If", ["x0"], ["y0"], name="fuzz_node", **attrs)])


def loop(g: Gen) -> Case:
    t = g.choice(["float", "int64", "int32"])
    v = g.array(t, g.shape(max_rank=2))
    trips = g.int(0, 4)
    stop_at = g.int(0, 5)
    # body(iter, cond, v) -> (iter < stop_at, v + v, v): stops early when stop_at < trips.
    # (Less takes int64 from opset 9; older bodies keep the condition.)
    stop = ([helper.make_node("Constant", [], ["limit"], value=helper.make_tensor("l", 7, [], [stop_at])),
             helper.make_node("Less", ["iter", "limit"], ["cond_out"])] if g.opset >= 9
            else [helper.make_node("Identity", ["cond_in"], ["cond_out"])])
    if g.opset < 9 and t != "float":
        t = "float"  # Add-1 and Add-6 take floats only
        v = g.array(t, v.shape)
    body = helper.make_graph(
        stop + [helper.make_node("Add", ["v_in", "v_in"], ["v_out"]),
                helper.make_node("Identity", ["v_in"], ["scan_out"])],
        "body",
        [_info("iter", "int64", []), _info("cond_in", "bool", []), _info("v_in", t)],
        [_info("cond_out", "bool", []), _info("v_out", t), _info("scan_out", t)])
    inputs = [g.scalar("int64", trips) if g.chance(0.8) else None,
              g.scalar("bool", True) if g.chance(0.8) else None, v]
    # Without a trip count the loop ends only when the body's condition turns false, which the
    # pre-opset-9 body (Identity of the condition) never does: that would be an endless loop.
    if inputs[0] is None and (inputs[1] is None or g.opset < 9):
        inputs[0] = g.scalar("int64", trips)
    names = [f"x{i}" if a is not None else "" for i, a in enumerate(inputs)]
    node = helper.make_node("Loop", names, ["y0", "y1"], name="fuzz_node", body=body)
    return Case("Loop", g.opset, inputs, {"body": body}, n_outputs=2, nodes=[node])


def scan(g: Gen) -> Case:
    t = g.choice(["float", "double", "int64"])
    steps = g.int(0, 4)
    inner = g.shape(max_rank=2, max_dim=3)
    state = g.array(t, inner)
    axis = g.int(0, len(inner))
    seq_shape = list(inner)
    seq_shape.insert(axis, steps)
    xs = g.array(t, seq_shape)
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_in"], ["s_out"]),
         helper.make_node("Mul", ["s_in", "x_in"], ["y_out"])],
        "body", [_info("s_in", t), _info("x_in", t)], [_info("s_out", t), _info("y_out", t)])
    attrs = {"body": body, "num_scan_inputs": 1}
    if g.version >= 9:
        if axis or g.chance(0.3):
            attrs["scan_input_axes"] = [axis - xs.ndim if g.version >= 11 and g.chance(0.3) else axis]
        if g.chance(0.3):
            attrs["scan_input_directions"] = [g.bool_attr()]
        if g.chance(0.3):
            attrs["scan_output_directions"] = [g.bool_attr()]
        if g.chance(0.3):
            attrs["scan_output_axes"] = [g.int(0, len(inner))]
        inputs = [state, xs]
        names = ["x0", "x1"]
    else:  # Scan-8: a leading batch axis and an optional sequence_lens input
        state = state[None]
        xs = np.moveaxis(xs, axis, 0)[None] if xs.ndim else xs
        inputs = [None, state, xs]
        names = ["", "x1", "x2"]
    node = helper.make_node("Scan", names, ["y0", "y1"], name="fuzz_node", **attrs)
    return Case("Scan", g.opset, inputs, attrs, n_outputs=2, nodes=[node])


def _sequence_items(g: Gen, t: str, same_shape: bool = False, min_items: int = 1) -> list:
    base = g.shape(min_rank=1, max_rank=3, max_dim=3)
    items = []
    for _ in range(g.int(min_items, 3)):
        shape = list(base)
        if not same_shape:
            shape[0] = g.dim(3)
        items.append(g.array(t, shape))
    return items


def sequence(g: Gen) -> Case:
    """SequenceConstruct feeding the sequence operator under test."""
    op = g.op
    t = g.choice(["float", "int64", "int32", "bool", "double", "float16", "string"])
    items = _sequence_items(g, t, same_shape=op == "ConcatFromSequence" and g.chance(0.5))
    inputs = list(items)
    names = [f"x{i}" for i in range(len(items))]
    construct = helper.make_node("SequenceConstruct", names, ["seq"])
    n = len(items)
    attrs = {}
    if op == "SequenceConstruct":
        nodes = [helper.make_node("SequenceConstruct", names, ["y0"], name="fuzz_node")]
        return Case(op, g.opset, inputs, nodes=nodes)
    if op == "SequenceLength":
        node_inputs = ["seq"]
    elif op == "SequenceAt":
        inputs.append(g.scalar(g.choice(["int64", "int32"]), g.int(-n, n - 1)))
        node_inputs = ["seq", f"x{n}"]
    elif op == "SequenceErase":
        node_inputs = ["seq"]
        if g.chance(0.7):
            inputs.append(g.scalar("int64", g.int(-n, n - 1)))
            node_inputs.append(f"x{n}")
    elif op == "SequenceInsert":
        inputs.append(g.array(t, items[0].shape))
        node_inputs = ["seq", f"x{n}"]
        if g.chance(0.6):
            inputs.append(g.scalar("int64", g.int(-n, n)))
            node_inputs.append(f"x{n + 1}")
    else:  # ConcatFromSequence
        rank = items[0].ndim
        new_axis = g.bool_attr() if g.chance(0.5) else 0
        same = all(i.shape == items[0].shape for i in items)
        if not same:
            new_axis = 0
        axis = 0 if not same else g.int(-rank - new_axis, rank - 1 + new_axis)
        attrs = {"axis": axis}
        if new_axis or g.chance(0.3):
            attrs["new_axis"] = new_axis
        node_inputs = ["seq"]
    node = helper.make_node(op, node_inputs, ["y0"], name="fuzz_node", **attrs)
    return Case(op, g.opset, inputs, attrs, nodes=[construct, node])


def sequence_empty(g: Gen) -> Case:
    t = g.choice(["float", "int64", "int32", "double", "bool"])
    attrs = {"dtype": onnx_type(t)} if g.chance(0.7) else {}
    nodes = [helper.make_node("SequenceEmpty", [], ["seq"], **attrs),
             helper.make_node("SequenceLength", ["seq"], ["y0"], name="fuzz_node")]
    return Case("SequenceEmpty", g.opset, [], attrs, nodes=nodes)


def split_to_sequence(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1))
    axis = g.axis(x.ndim)
    n = x.shape[axis]
    attrs = {"axis": axis}
    inputs = [x]
    if g.chance(0.5):
        if g.chance(0.5):
            inputs.append(g.scalar("int64", g.int(1, max(n, 1))))
        else:
            cuts = sorted(g.int(0, n) for _ in range(g.int(0, 2)))
            inputs.append(g.ints([b - a for a, b in zip([0] + cuts, cuts + [n])]))
    elif g.chance(0.5):
        attrs["keepdims"] = g.bool_attr()
    return Case("SplitToSequence", g.opset, inputs, attrs)


def optional(g: Gen) -> Case:
    op = g.op
    t = g.choice(["float", "int64", "bool"])
    x = g.array(t, g.shape(max_rank=2))
    empty = g.chance(0.4) and op != "OptionalGetElement"
    if empty:
        make = helper.make_node("Optional", [], ["opt"],
                                type=helper.make_tensor_type_proto(onnx_type(t), None))
    else:
        make = helper.make_node("Optional", ["x0"], ["opt"])
    if op == "Optional":
        nodes = [make, helper.make_node("OptionalHasElement", ["opt"], ["y0"], name="fuzz_node")]
        nodes[0].name = "fuzz_node"
        nodes[1].name = "has"
    else:
        nodes = [make, helper.make_node(op, ["opt"], ["y0"], name="fuzz_node")]
    return Case(op, g.opset, [] if empty else [x], nodes=nodes,
                note="empty optional" if empty else "")


RECIPES = {
    "If": if_, "Loop": loop, "Scan": scan,
    "SequenceConstruct": sequence, "SequenceLength": sequence, "SequenceAt": sequence,
    "SequenceErase": sequence, "SequenceInsert": sequence, "ConcatFromSequence": sequence,
    "SequenceEmpty": sequence_empty, "SplitToSequence": split_to_sequence,
    "Optional": optional, "OptionalHasElement": optional, "OptionalGetElement": optional,
}
