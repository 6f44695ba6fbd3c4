"""Recipes for reductions, shape manipulation, indexing and generator operators."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from recipe_tools import FLOAT_TYPES, Case, Gen

REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
          "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp")
# The opset from which `axes` is an input instead of an attribute.
_AXES_INPUT_SINCE = {"ReduceSum": 13}


def _axes(g: Gen, rank: int) -> list[int]:
    axes = [a for a in range(rank) if g.chance(0.5)]
    return [a - rank if g.chance(0.3) else a for a in axes]


def reduce(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape())
    attrs = {}
    if g.chance(0.5):
        attrs["keepdims"] = g.bool_attr()
    axes = _axes(g, x.ndim) if g.chance(0.8) else None
    inputs = [x]
    if g.version >= _AXES_INPUT_SINCE.get(g.op, 18):
        if g.chance(0.4):
            attrs["noop_with_empty_axes"] = g.bool_attr()
        if axes is not None:
            inputs.append(g.ints(axes))
    elif axes is not None and (axes or g.chance(0.5)):
        attrs["axes"] = axes
    return Case(g.op, g.opset, inputs, attrs, rtol=_reduce_rtol(g, t))


def _reduce_rtol(g: Gen, t: str) -> float | None:
    # numpy sums float16 in float16 (pairwise); onnx-light accumulates in float32.
    return 1e-2 if t in ("float16", "bfloat16") else None


def arg(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1, zero=0.0))
    attrs = {"axis": g.axis(x.ndim, negative=g.version >= 11)} if g.chance(0.8) else {}
    if g.chance(0.5):
        attrs["keepdims"] = g.bool_attr()
    if "select_last_index" in g.schema.attributes and g.chance(0.5):
        attrs["select_last_index"] = g.bool_attr()
    return Case(g.op, g.opset, [x], attrs)


def concat(g: Gen) -> Case:
    t = g.dtype(0)
    base = list(g.shape(min_rank=1))
    axis = g.axis(len(base), negative=g.version >= 11)
    inputs = []
    for _ in range(g.int(1, 3)):
        shape = list(base)
        shape[axis] = g.dim(3, zero=0.2)
        inputs.append(g.array(t, shape))
    return Case("Concat", g.opset, inputs, {"axis": axis})


def split(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1))
    axis = g.axis(x.ndim, negative=g.version >= 11)
    n = x.shape[axis]
    attrs = {"axis": axis}
    inputs = [x]
    if g.version >= 18 and g.chance(0.4):
        k = g.int(1, max(1, n)) if n else 1
        attrs["num_outputs"] = k
        return Case("Split", g.opset, inputs, attrs, n_outputs=k)
    parts = g.int(1, 3)
    cuts = sorted(g.int(0, n) for _ in range(parts - 1))
    sizes = [b - a for a, b in zip([0] + cuts, cuts + [n])]
    if g.chance(0.3) and n % parts == 0:
        return Case("Split", g.opset, inputs, attrs, n_outputs=parts)  # equal parts
    if g.version >= 13:
        inputs.append(g.ints(sizes))
    elif g.version == 1 and g.chance(0.5):
        inputs.append(g.ints(sizes).astype(x.dtype))  # Split-1: an input of the data's type
    else:
        attrs["split"] = sizes
    return Case("Split", g.opset, inputs, attrs, n_outputs=len(sizes))


def slice_(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1))
    rank = x.ndim
    axes = [a for a in range(rank) if g.chance(0.6)] or [0]
    starts, ends, steps = [], [], []
    for a in axes:
        n = x.shape[a]
        step = g.choice([1, 1, 2, -1, -2, 3]) if g.version >= 10 else 1
        big = g.choice([n, n + 5, 2**62, -(2**62), 2**63 - 1, -(2**63)])
        starts.append(g.choice([0, g.int(-n - 2, n + 2), big]))
        ends.append(g.choice([n, g.int(-n - 2, n + 2), big, -1]))
        steps.append(step)
    neg_axes = [a - rank if g.chance(0.3) else a for a in axes]
    if g.version < 10:
        attrs = {"starts": starts, "ends": ends}
        if g.chance(0.7):
            attrs["axes"] = neg_axes if g.version >= 11 else axes
        return Case("Slice", g.opset, [x], attrs)
    inputs = [x, g.ints(starts), g.ints(ends)]
    it = g.choice(["int64", "int32"])
    if it == "int32":
        clip32 = lambda v: [int(np.clip(i, -(2**31), 2**31 - 1)) for i in v]  # noqa: E731
        inputs = [x, g.ints(clip32(starts), it), g.ints(clip32(ends), it)]
    with_axes = g.chance(0.7)
    with_steps = g.chance(0.6)
    if with_axes or with_steps:
        inputs.append(g.ints(neg_axes, it) if with_axes else None)
    if with_steps:
        inputs.append(g.ints(steps, it))
    return Case("Slice", g.opset, inputs)


def gather(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1))
    axis = g.axis(x.ndim, negative=g.version >= 11)
    n = x.shape[axis]
    it = g.choice(["int64", "int32"])
    idx_shape = g.shape(max_rank=2)
    low = -n if g.version >= 11 else 0
    idx = g.array(it, idx_shape, low=low, high=max(n - 1, 0), special=False)
    if n == 0 and idx.size:
        idx_shape = (0,)
        idx = g.array(it, idx_shape, special=False)
    return Case("Gather", g.opset, [x, idx], {"axis": axis})


def gather_elements(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1, zero=0.0))
    axis = g.axis(x.ndim)
    shape = [g.int(1, d) if d else 0 for d in x.shape]
    shape[axis] = g.int(0, 4)
    n = x.shape[axis]
    idx = g.array(g.choice(["int64", "int32"]), shape, low=-n, high=n - 1, special=False)
    return Case("GatherElements", g.opset, [x, idx], {"axis": axis})


def gather_nd(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1, zero=0.0))
    batch = g.int(0, x.ndim - 1) if g.version >= 12 and g.chance(0.4) else 0
    k = g.int(1, x.ndim - batch)
    outer = list(x.shape[:batch]) + list(g.shape(max_rank=2, zero=0.0))
    idx = np.zeros(outer + [k], dtype=np.int64)
    for j in range(k):
        n = x.shape[batch + j]
        idx[..., j] = g.rng.integers(-n, n, size=idx.shape[:-1])
    attrs = {"batch_dims": batch} if batch or g.chance(0.3) else {}
    if g.version < 12:
        attrs = {}
    return Case("GatherND", g.opset, [x, idx], attrs)


def scatter_elements(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1, zero=0.0))
    axis = g.axis(x.ndim)
    shape = [g.int(1, d) for d in x.shape]
    n = x.shape[axis]
    idx = g.array("int64", shape, low=-n, high=n - 1, special=False)
    attrs = {"axis": axis}
    reduction = "none"
    if "reduction" in g.schema.attributes and g.chance(0.6):
        reduction = g.choice(["none", "add", "mul"] + (["max", "min"] if g.version >= 18 else []))
        attrs["reduction"] = reduction
    if reduction == "none":
        # Duplicate indices give an unspecified result without a reduction: make them unique.
        idx = _unique_along(g, x.shape, shape, axis)
    op = g.op
    return Case(op, g.opset, [x, idx, g.array(t, shape)], attrs)


def _unique_along(g: Gen, data_shape, shape, axis) -> np.ndarray:
    n = data_shape[axis]
    shape = list(shape)
    shape[axis] = min(shape[axis], n)
    idx = np.zeros(shape, dtype=np.int64)
    moved = np.moveaxis(idx, axis, -1)
    for pos in np.ndindex(*moved.shape[:-1]):
        moved[pos] = g.rng.permutation(n)[: shape[axis]]
    return idx


def scatter_nd(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1, zero=0.0))
    k = g.int(1, x.ndim)
    attrs = {}
    reduction = "none"
    if "reduction" in g.schema.attributes and g.chance(0.6):
        reduction = g.choice(["none", "add", "mul"] + (["max", "min"] if g.version >= 18 else []))
        attrs["reduction"] = reduction
    count = g.int(0, 4)
    rows = []
    seen = set()
    for _ in range(count):
        row = tuple(int(g.rng.integers(-d, d)) for d in x.shape[:k])
        key = tuple(v % d for v, d in zip(row, x.shape[:k]))
        if reduction == "none" and key in seen:
            continue
        seen.add(key)
        rows.append(row)
    idx = np.array(rows, dtype=np.int64).reshape(len(rows), k)
    updates = g.array(t, (len(rows),) + tuple(x.shape[k:]))
    return Case("ScatterND", g.opset, [x, idx, updates], attrs)


def pad(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1))
    rank = x.ndim
    modes = ["constant", "reflect", "edge"] + (["wrap"] if g.version >= 19 else [])
    mode = g.choice(modes)
    axes = list(range(rank))
    if g.version >= 18 and g.chance(0.4):
        axes = [a for a in range(rank) if g.chance(0.6)] or [0]
    pads = []
    for side in range(2):
        for a in axes:
            n = x.shape[a]
            if mode == "constant":
                pads.append(g.int(-n, 3))
            elif mode == "reflect":
                pads.append(g.int(0, max(n - 1, 0)))
            else:
                pads.append(g.int(0, 3) if n else 0)
    attrs = {"mode": mode} if mode != "constant" or g.chance(0.5) else {}
    if g.version < 11:
        attrs["pads" if g.version >= 2 else "paddings"] = pads
        if mode == "constant" and g.chance(0.5):
            attrs["value"] = g.float_attr(-2, 2)
        return Case("Pad", g.opset, [x], attrs)
    inputs = [x, g.ints(pads)]
    if mode == "constant" and g.chance(0.5) or (g.version >= 18 and len(axes) != rank):
        inputs.append(g.array(t, (), special=False) if mode == "constant" else None)
    if len(axes) != rank:
        inputs.append(g.ints([a - rank if g.chance(0.3) else a for a in axes]))
    return Case("Pad", g.opset, inputs, attrs)


def tile(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1, max_dim=3))
    repeats = [g.int(0, 3) for _ in range(x.ndim)]
    if g.version < 6:  # Tile-1: `tiles` copies along `axis`, both of the input's type
        axis = g.axis(x.ndim, negative=False)
        return Case("Tile", g.opset, [x, g.scalar(t, repeats[axis]), g.scalar(t, axis)])
    return Case("Tile", g.opset, [x, g.ints(repeats)])


def expand(g: Gen) -> Case:
    t = g.dtype(0)
    out = g.shape(max_dim=3)
    x_shape = g.broadcastable(out)
    shape = list(out)
    if g.chance(0.3) and shape:
        shape = shape[g.int(0, len(shape)):]  # shorter: x's own dims win
        shape = [1 if g.chance(0.5) else d for d in shape]
    return Case("Expand", g.opset, [g.array(t, x_shape), g.ints(shape)])


def reshape(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(max_dim=3))
    dims = list(x.shape)
    # Regroup the element count into a new shape.
    target = _regroup(g, dims)
    allowzero = g.version >= 14 and g.chance(0.3) and g.bool_attr()
    if g.chance(0.4) and target:
        i = g.int(0, len(target) - 1)
        if not (allowzero and 0 in target):
            target[i] = -1
    if g.chance(0.3) and not allowzero:
        for i in range(min(len(target), x.ndim)):
            if target[i] == x.shape[i] and g.chance(0.5):
                target[i] = 0  # copy the input's dimension
    attrs = {"allowzero": int(allowzero)} if g.version >= 14 and (allowzero or g.chance(0.3)) else {}
    if g.version < 5:
        return Case("Reshape", g.opset, [x], {"shape": target, **attrs})
    return Case("Reshape", g.opset, [x, g.ints(target)], attrs)


def _regroup(g: Gen, dims: list[int]) -> list[int]:
    if 0 in dims:
        out = [d for d in dims if g.chance(0.7)]
        return out if 0 in out else out + [0]
    factors = []
    for d in dims:
        for p in (2, 3):
            while d % p == 0:
                factors.append(p)
                d //= p
        if d > 1:
            factors.append(d)
    g.rng.shuffle(factors)
    out = []
    for f in factors:
        if out and g.chance(0.5):
            out[-1] *= f
        else:
            out.append(f)
    while g.chance(0.2):
        out.insert(g.int(0, len(out)), 1)
    return out


def flatten(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1 if g.version < 11 else 0))
    lo = -x.ndim if g.version >= 11 else 0
    attrs = {"axis": g.int(lo, x.ndim)} if g.chance(0.8) else {}
    return Case("Flatten", g.opset, [x], attrs)


def squeeze(g: Gen) -> Case:
    t = g.dtype(0)
    shape = [1 if g.chance(0.5) else g.dim(3) for _ in range(g.int(0, 4))]
    x = g.array(t, shape)
    ones = [i for i, d in enumerate(shape) if d == 1]
    axes = [a - len(shape) if g.chance(0.3) and g.version >= 11 else a for a in ones if g.chance(0.6)]
    if g.chance(0.3):
        return Case("Squeeze", g.opset, [x])  # every size-1 axis
    if g.version >= 13:
        return Case("Squeeze", g.opset, [x, g.ints(axes)])
    return Case("Squeeze", g.opset, [x], {"axes": axes})


def unsqueeze(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(max_rank=3))
    k = g.int(1, 2)
    out_rank = x.ndim + k
    axes = list(g.rng.permutation(out_rank)[:k])
    axes = [int(a) - out_rank if g.version >= 11 and g.chance(0.3) else int(a) for a in axes]
    if g.version >= 13:
        return Case("Unsqueeze", g.opset, [x, g.ints(axes)])
    return Case("Unsqueeze", g.opset, [x], {"axes": axes})


def shape_op(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape())
    attrs = {}
    if g.op == "Shape" and g.version >= 15:
        if g.chance(0.5):
            attrs["start"] = g.int(-5, 5)
        if g.chance(0.5):
            attrs["end"] = g.int(-5, 5)
    return Case(g.op, g.opset, [x], attrs)


def transpose(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape())
    attrs = {"perm": [int(p) for p in g.rng.permutation(x.ndim)]} if g.chance(0.8) else {}
    return Case("Transpose", g.opset, [x], attrs)


def depth_to_space(g: Gen) -> Case:
    t = g.dtype(0)
    b = g.int(1, 3)
    to_space = g.op == "DepthToSpace"
    n, h, w = g.int(0, 2), g.int(1, 3), g.int(1, 3)
    c = g.int(1, 2) * (b * b if to_space else 1)
    shape = (n, c, h, w) if to_space else (n, c, h * b, w * b)
    attrs = {"blocksize": b}
    if (to_space and g.version >= 11 or not to_space and g.version >= 28) and g.chance(0.5):
        attrs["mode"] = g.choice(["DCR", "CRD"])
    return Case(g.op, g.opset, [g.array(t, shape)], attrs)


def trilu(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=2))
    attrs = {"upper": g.bool_attr()} if g.chance(0.7) else {}
    inputs = [x]
    if g.chance(0.7):
        k = g.choice([g.int(-4, 4), 2**62, -(2**62), 2**63 - 1, -(2**63)])
        inputs.append(g.ints([k]).reshape(()))
    return Case("Trilu", g.opset, inputs, attrs)


def range_(g: Gen) -> Case:
    t = g.dtype(0)
    if t in FLOAT_TYPES:
        start = g.float_attr(-5, 5)
        delta = g.choice([g.float_attr(0.3, 2), -g.float_attr(0.3, 2)])
        limit = start + delta * g.int(-2, 8)
    else:
        start = g.int(-10, 10)
        delta = g.choice([1, 2, 3, -1, -2])
        limit = start + delta * g.int(-2, 8) + g.int(0, 1)
    return Case("Range", g.opset, [g.scalar(t, v) for v in (start, limit, delta)])


def one_hot(g: Gen) -> Case:
    it = g.dtype(0)
    depth = g.int(1, 5)
    indices = g.array(it, g.shape(max_rank=3), low=-depth - 1 if it[0] != "u" else 0,
                      high=depth, special=False)
    vt = g.dtype(2)
    values = g.array(vt, (2,), special=False)
    dt = g.dtype(1)
    attrs = {"axis": g.int(-indices.ndim - 1, indices.ndim)} if g.chance(0.7) else {}
    return Case("OneHot", g.opset, [indices, g.scalar(dt, depth), values], attrs)


def non_zero(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(), low=-1, high=1)
    if t not in ("string", "bool") and x.size:
        x[g.rng.random(x.shape) < 0.4] = 0
    return Case("NonZero", g.opset, [x])


def constant_of_shape(g: Gen) -> Case:
    shape = g.ints(g.shape(max_dim=3))
    attrs = {}
    if g.chance(0.7):
        types = g.allowed_types(output_index=0)
        t = g.choice([x for x in types if x != "string"] or types)
        attrs["value"] = numpy_helper.from_array(g.array(t, (1,)), "value")
    return Case("ConstantOfShape", g.opset, [shape], attrs)


def constant(g: Gen) -> Case:
    t = g.choice(["float", "int64", "int32", "bool", "double", "float16", "uint8"])
    value = g.array(t, g.shape(max_rank=2))
    kind = g.choice(["value"] + (["value_float", "value_ints", "value_floats", "value_int"]
                                 if g.version >= 12 else []))
    if kind == "value":
        attrs = {"value": numpy_helper.from_array(value, "value")}
    elif kind == "value_float":
        attrs = {kind: g.float_attr(-3, 3)}
    elif kind == "value_floats":
        attrs = {kind: [g.float_attr(-3, 3) for _ in range(g.int(0, 3))]}
    elif kind == "value_int":
        attrs = {kind: g.int(-5, 5)}
    else:
        attrs = {kind: [g.int(-5, 5) for _ in range(g.int(0, 3))]}
    return Case("Constant", g.opset, [], attrs)


def top_k(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1))
    axis = g.axis(x.ndim, negative=g.version >= 11)
    k = g.int(0, x.shape[axis])
    attrs = {"axis": axis} if g.chance(0.8) else {}
    if "axis" not in attrs:
        k = g.int(0, x.shape[-1])
    if g.version >= 11:
        if g.chance(0.5):
            attrs["largest"] = g.bool_attr()
        if g.chance(0.3):
            attrs["sorted"] = 1
    if g.version < 10:
        attrs["k"] = k
        return Case("TopK", g.opset, [x], attrs, n_outputs=2)
    # Ties make the index order implementation-defined unless sorted: keep values distinct.
    return Case("TopK", g.opset, [x, g.ints([k])], attrs, n_outputs=2)


def cum_sum(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape(min_rank=1))
    attrs = {}
    for name in ("exclusive", "reverse"):
        if g.chance(0.5):
            attrs[name] = g.bool_attr()
    axis = g.axis(x.ndim)
    return Case("CumSum", g.opset, [x, g.ints([axis], g.choice(["int64", "int32"])).reshape(())],
                attrs, rtol=1e-2 if t in ("float16", "bfloat16") else None)


def einsum(g: Gen) -> Case:
    t = g.dtype(0)
    letters = "abcd"
    n_in = g.int(1, 2)
    sizes = {c: g.dim(3) for c in letters}
    terms = []
    for _ in range(n_in):
        rank = g.int(0, 3)
        terms.append("".join(g.choice(letters) for _ in range(rank)))
    used = sorted(set("".join(terms)))
    explicit = g.chance(0.6)
    out = "".join(c for c in used if g.chance(0.5)) if explicit else ""
    equation = ",".join(terms) + ("->" + out if explicit else "")
    inputs = [g.array(t, tuple(sizes[c] for c in term)) for term in terms]
    return Case("Einsum", g.opset, inputs, {"equation": equation},
                rtol=1e-2 if t in ("float16", "bfloat16") else None)


def matmul(g: Gen) -> Case:
    t = g.dtype(0)
    m, k, n = g.dim(4), g.dim(4), g.dim(4)
    batch = g.shape(max_rank=2, max_dim=3)
    a_shape = g.broadcastable(batch) + (m, k) if g.chance(0.8) else (k,)
    b_shape = g.broadcastable(batch) + (k, n) if g.chance(0.8) else (k,)
    rtol = 1e-2 if t in ("float16", "bfloat16") else None
    return Case("MatMul", g.opset, [g.array(t, a_shape), g.array(t, b_shape)], rtol=rtol)


def gemm(g: Gen) -> Case:
    t = g.dtype(0)
    m, k, n = g.dim(4), g.dim(4), g.dim(4)
    attrs = {}
    ta, tb = g.bool_attr(), g.bool_attr()
    if ta or g.chance(0.3):
        attrs["transA"] = ta
    if tb or g.chance(0.3):
        attrs["transB"] = tb
    if g.chance(0.5):
        attrs["alpha"] = g.float_attr(-2, 2)
    if g.chance(0.5):
        attrs["beta"] = g.float_attr(-2, 2)
    a = g.array(t, (k, m) if ta else (m, k))
    b = g.array(t, (n, k) if tb else (k, n))
    inputs = [a, b]
    if g.version >= 11 and g.chance(0.3):
        pass  # C omitted
    elif g.version < 7:
        inputs.append(g.array(t, (m, n)))
    else:
        inputs.append(g.array(t, g.broadcastable((m, n))))
    rtol = 1e-2 if t in ("float16", "bfloat16") else None
    return Case("Gemm", g.opset, inputs, attrs, rtol=rtol)


RECIPES = {op: reduce for op in REDUCE}
RECIPES.update({
    "ArgMax": arg, "ArgMin": arg, "Concat": concat, "Split": split, "Slice": slice_,
    "Gather": gather, "GatherElements": gather_elements, "GatherND": gather_nd,
    "ScatterElements": scatter_elements, "Scatter": scatter_elements, "ScatterND": scatter_nd,
    "Pad": pad, "Tile": tile, "Expand": expand, "Reshape": reshape, "Flatten": flatten,
    "Squeeze": squeeze, "Unsqueeze": unsqueeze, "Shape": shape_op, "Size": shape_op,
    "Transpose": transpose, "DepthToSpace": depth_to_space, "SpaceToDepth": depth_to_space,
    "Trilu": trilu, "Range": range_, "OneHot": one_hot, "NonZero": non_zero,
    "ConstantOfShape": constant_of_shape, "Constant": constant, "TopK": top_k,
    "CumSum": cum_sum, "Einsum": einsum, "MatMul": matmul, "Gemm": gemm,
})
