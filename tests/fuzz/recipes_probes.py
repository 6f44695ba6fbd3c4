"""Size probes: cases whose output size, or a size computed on the way, does not fit int64 or
the machine. onnx-light must refuse them with an error naming the node (no wrapped size, no
crash, no attempt to allocate terabytes). Every probe stays far above the physical memory of any
machine the fuzzer runs on (>= 2^40 elements), so a missing check fails fast instead of
allocating.

`empty_huge` feeds an operator a zero-size tensor whose other dimensions multiply past int64
(built in the graph by ConstantOfShape, since NumPy cannot hold one): such a case has no oracle,
and onnx-light may compute it or refuse it, but must not crash or overflow.
"""

from __future__ import annotations

import numpy as np
from onnx import helper

from recipe_tools import Case, Gen

BIG = 2**62
HUGE = 2**40  # elements: terabytes for any element type


def _x(g: Gen, shape) -> np.ndarray:
    return g.array("float", shape, special=False)


def tile(g: Gen) -> Case:
    x = _x(g, (2, 4))
    repeats = g.choice([[1, BIG + 1], [1, 2**61], [HUGE, HUGE], [HUGE, 1]])
    return Case("Tile", g.opset, [x, g.ints(repeats)], invalid=f"repeats {repeats}")


def expand(g: Gen) -> Case:
    shape = g.choice([[BIG, 4], [HUGE, HUGE, 1], [HUGE]])
    return Case("Expand", g.opset, [_x(g, (1, 1)), g.ints(shape)], invalid=f"shape {shape}")


def reshape(g: Gen) -> Case:
    target = g.choice([[BIG, 4, -1], [HUGE, HUGE, 0, -1], [-1, BIG, BIG]])
    return Case("Reshape", g.opset, [_x(g, (2, 2)), g.ints(target)], invalid=f"shape {target}")


def constant_of_shape(g: Gen) -> Case:
    shape = g.choice([[HUGE], [BIG, 4], [HUGE, HUGE], [2**31, 2**31, 2**2]])
    return Case("ConstantOfShape", g.opset, [g.ints(shape)], invalid=f"shape {shape}")


def range_(g: Gen) -> Case:
    start, limit, delta = g.choice([(-(2**63) + 1, 2**63 - 1, 1), (-BIG, BIG, 1), (0, 2**63 - 1, 2),
                                    (2**63 - 1, -(2**63), -3)])
    return Case("Range", g.opset, [g.scalar("int64", v) for v in (start, limit, delta)],
                invalid=f"range({start}, {limit}, {delta})")


def pad(g: Gen) -> Case:
    pads = g.choice([[0, 0, 0, BIG], [0, HUGE, 0, HUGE], [0, 2**63 - 1, 0, 1]])
    return Case("Pad", g.opset, [_x(g, (2, 2)), g.ints(pads)], invalid=f"pads {pads}")


def one_hot(g: Gen) -> Case:
    depth = g.choice([HUGE, BIG])
    return Case("OneHot", g.opset, [g.ints([0, 1]), g.scalar("int64", depth),
                                    np.array([0, 1], np.float32)], invalid=f"depth {depth}")


def resize(g: Gen) -> Case:
    x = _x(g, (1, 1, 2, 2))
    if g.chance(0.5):
        sizes = [1, 1, HUGE, HUGE]
        return Case("Resize", g.opset, [x, None, None, g.ints(sizes)], invalid=f"sizes {sizes}")
    scales = np.array([1, 1, 1e30, g.choice([1.0, np.inf])], np.float32)
    return Case("Resize", g.opset, [x, None, scales], invalid=f"scales {scales.tolist()}")


def conv(g: Gen) -> Case:
    x = _x(g, (1, 1, 4, 4))
    w = _x(g, (1, 1, 2, 2))
    attr = g.choice([{"dilations": [BIG, 1]}, {"pads": [0, 0, 2**63 - 1, 0]},
                     {"strides": [BIG, BIG], "pads": [BIG, 0, BIG, 0]}])
    return Case("Conv", g.opset, [x, w], attr, invalid=f"window {attr}")


def depth_to_space(g: Gen) -> Case:
    b = g.choice([2**32, 2**31 + 1])
    return Case(g.op, g.opset, [_x(g, (1, 4, 2, 2))], {"blocksize": b}, invalid=f"blocksize {b}")


# The first operator version whose inputs and attributes the probes above use.
MIN_VERSION = {"Tile": 6, "Reshape": 14, "Pad": 11, "Resize": 13, "Split": 18, "ReduceSum": 13,
               "ReduceMax": 18, "ReduceMean": 18, "Unsqueeze": 13, "Slice": 10, "TopK": 10,
               "CumSum": 11, "Squeeze": 13}

PROBES = {
    "Tile": tile, "Expand": expand, "Reshape": reshape, "ConstantOfShape": constant_of_shape,
    "Range": range_, "Pad": pad, "OneHot": one_hot, "Resize": resize, "Conv": conv,
    "DepthToSpace": depth_to_space, "SpaceToDepth": depth_to_space,
}

# Operators that take one data tensor first and can be fed an empty tensor with huge dims;
# extra inputs and attributes per operator.
_EMPTY_HUGE = {
    "Flatten": ([], {"axis": 2}), "Transpose": ([], {}), "Identity": ([], {}), "Relu": ([], {}),
    "ReduceSum": ([np.array([1], np.int64)], {}), "ReduceMax": ([np.array([1], np.int64)], {}),
    "ReduceMean": ([np.array([2], np.int64)], {}), "ArgMax": ([], {"axis": 1}),
    "Softmax": ([], {"axis": 1}), "LogSoftmax": ([], {"axis": -1}), "CumSum": ([np.array(1)], {}),
    "Concat": ([], {"axis": 1}), "Split": ([], {"axis": 1, "num_outputs": 2}),
    "Reshape": ([np.array([0, -1], np.int64)], {"allowzero": 1}), "Squeeze": ([], {}),
    "Unsqueeze": ([np.array([0], np.int64)], {}), "Tile": ([np.array([1, 2, 1], np.int64)], {}),
    "Slice": ([np.array([1], np.int64), np.array([3], np.int64), np.array([1], np.int64)], {}),
    "Gather": ([np.array([0], np.int64)], {"axis": 1}), "TopK": ([np.array([1], np.int64)], {"axis": 1}),
    "Pad": ([np.array([0, 1, 0, 0, 1, 0], np.int64)], {}), "Expand": ([np.array([1, 1, 1], np.int64)], {}),
    "MatMul": ([np.zeros((3, 2), np.float32)], {}), "Shape": ([], {}), "Size": ([], {}),
    "NonZero": ([], {}), "Trilu": ([], {}), "LayerNormalization": ([np.ones((1,), np.float32)], {"axis": -1}),
    "Add": ([np.ones((1,), np.float32)], {}), "Where": ([], {}),
}


def empty_huge(g: Gen) -> Case | None:
    if g.op not in _EMPTY_HUGE or g.version < MIN_VERSION.get(g.op, 1):
        return None
    extra, attrs = _EMPTY_HUGE[g.op]
    shape = g.choice([[0, HUGE, HUGE], [HUGE, 0, HUGE], [HUGE, HUGE, 0], [0, BIG, 3]])
    if g.op == "MatMul":
        shape[-1] = 3
    value = helper.make_tensor("v", 1, [1], [0.0])
    names = ["t"] + [f"x{i + 1}" for i in range(len(extra))]
    nodes = [helper.make_node("ConstantOfShape", ["x0"], ["t"], value=value, name="probe")]
    if g.op == "Concat":
        names = ["t", "t"]
    if g.op == "Where":
        nodes.append(helper.make_node("Cast", ["t"], ["c"], to=9))
        names = ["c", "t", "t"]
    n_out = 2 if g.op in ("Split", "TopK") else 1
    nodes.append(helper.make_node(g.op, names, [f"y{i}" for i in range(n_out)], name="fuzz_node",
                                  **attrs))
    return Case(g.op, g.opset, [g.ints(shape)] + list(extra), attrs, n_outputs=n_out, nodes=nodes,
                robustness=True, note=f"empty input of shape {shape}")
