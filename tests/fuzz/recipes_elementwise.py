"""Recipes for elementwise operators: unary maps, broadcasting binary operators, variadic
operators, comparisons and logic, Cast/CastLike and Clip."""

from __future__ import annotations

import numpy as np

from recipe_tools import FLOAT_TYPES, INT_TYPES, Case, Gen, np_dtype, onnx_type

UNARY = (
    "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Cos", "Cosh", "Erf", "Exp",
    "Floor", "Identity", "IsNaN", "Log", "Neg", "Not", "Reciprocal", "Relu", "Round", "Sigmoid",
    "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Tan", "Tanh", "HardSwish", "Mish",
    "BitwiseNot", "Elu", "HardSigmoid", "LeakyRelu", "Selu", "Gelu", "IsInf", "ThresholdedRelu",
    "Shrink", "Celu", "Swish",
)

BINARY = (
    "Add", "Sub", "Mul", "Div", "Pow", "Mod", "And", "Or", "Xor", "Equal", "Greater",
    "GreaterOrEqual", "Less", "LessOrEqual", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
)

VARIADIC = ("Max", "Min", "Mean", "Sum")

# Float attributes: (low, high) of the random values.
_FLOAT_ATTRS = {
    "Elu": {"alpha": (0.1, 2.0)},
    "HardSigmoid": {"alpha": (0.05, 1.0), "beta": (-0.5, 1.0)},
    "LeakyRelu": {"alpha": (0.0, 0.5)},
    "Selu": {"alpha": (0.5, 2.0), "gamma": (0.5, 2.0)},
    "ThresholdedRelu": {"alpha": (-1.0, 2.0)},
    "Shrink": {"bias": (0.0, 1.0), "lambd": (0.0, 1.0)},
    "Celu": {"alpha": (0.1, 2.0)},
    "Swish": {"alpha": (0.1, 2.0)},
}


def unary(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape())
    attrs = {}
    for name, (low, high) in _FLOAT_ATTRS.get(g.op, {}).items():
        if g.chance(0.7):
            attrs[name] = g.float_attr(low, high)
    if g.op == "IsInf":
        for name in ("detect_negative", "detect_positive"):
            if g.chance(0.6):
                attrs[name] = g.bool_attr()
    if g.op == "Gelu" and g.chance(0.7):
        attrs["approximate"] = g.choice(["none", "tanh"])
    return Case(g.op, g.opset, [x], attrs)


def _legacy_broadcast(g: Gen, t: str) -> tuple:
    """Shapes for the opset < 7 binary operators: equal shapes, or B a suffix of A with broadcast=1."""
    a_shape = g.shape(min_rank=1)
    attrs = {}
    if "broadcast" in g.schema.attributes and g.chance(0.5):
        attrs["broadcast"] = 1
        b_shape = a_shape[g.int(0, len(a_shape)):]
    else:
        b_shape = a_shape
    return a_shape, b_shape, attrs


def binary(g: Gen) -> Case:
    op = g.op
    legacy = g.version < 7 and op not in ("BitShift", "Mod")
    t = g.dtype(0)
    if legacy:
        a_shape, b_shape, attrs = _legacy_broadcast(g, t)
    else:
        out = g.shape()
        a_shape, b_shape, attrs = g.broadcastable(out), g.broadcastable(out), {}
        if g.chance(0.5):
            a_shape = out
    t_b = t
    if op == "Pow" and g.version >= 12:
        t_b = g.dtype(1)
    low = high = None
    if op == "BitShift":
        attrs["direction"] = g.choice(["LEFT", "RIGHT"])
        bits = np_dtype(t).itemsize * 8
        b = g.array(t_b, b_shape, low=0, high=bits - 1)
        return Case(op, g.opset, [g.array(t, a_shape), b], attrs)
    if op == "Mod":
        if t in FLOAT_TYPES:
            attrs["fmod"] = 1
        elif g.chance(0.5):
            attrs["fmod"] = g.bool_attr()
    if op == "Pow" and t_b in INT_TYPES:
        low, high = (0, 6) if t_b.startswith("u") else (-3, 6)
    a = g.array(t, a_shape)
    b = g.array(t_b, b_shape, low=low, high=high)
    return Case(op, g.opset, [a, b], attrs)


def variadic(g: Gen) -> Case:
    t = g.dtype(0)
    n = g.int(1, 3)
    if g.version < 8:
        shape = g.shape()
        shapes = [shape] * n
    else:
        out = g.shape()
        shapes = [g.broadcastable(out) for _ in range(n)]
    return Case(g.op, g.opset, [g.array(t, s) for s in shapes])


def where(g: Gen) -> Case:
    out = g.shape()
    t = g.dtype(1)
    c = g.array("bool", g.broadcastable(out))
    return Case("Where", g.opset, [c, g.array(t, g.broadcastable(out)), g.array(t, g.broadcastable(out))])


def prelu(g: Gen) -> Case:
    t = g.dtype(0)
    x_shape = g.shape(min_rank=1)
    if g.version < 7:
        slope_shape = x_shape if g.chance(0.5) else (1,)
    else:
        slope_shape = g.broadcastable(x_shape)
    return Case("PRelu", g.opset, [g.array(t, x_shape), g.array(t, slope_shape)])


def clip(g: Gen) -> Case:
    t = g.dtype(0)
    x = g.array(t, g.shape())
    if g.version < 11:
        attrs = {}
        if g.chance(0.7):
            attrs["min"] = g.float_attr(-2, 0)
        if g.chance(0.7):
            attrs["max"] = g.float_attr(0, 2)
        return Case("Clip", g.opset, [x], attrs)
    inputs = [x]
    lo = g.array(t, (), low=-3, high=0, special=False) if g.chance(0.7) else None
    hi = g.array(t, (), low=0, high=3, special=False) if g.chance(0.7) else None
    if g.chance(0.1) and lo is not None and hi is not None:
        lo, hi = hi, lo  # min > max: every element becomes max
    if lo is not None or hi is not None:
        inputs.append(lo)
    if hi is not None:
        inputs.append(hi)
    return Case("Clip", g.opset, inputs)


_CAST_TARGETS = FLOAT_TYPES + INT_TYPES + ("bool", "string")


def cast(g: Gen) -> Case:
    source = g.dtype(0)
    target = g.choice([t for t in _CAST_TARGETS if t in g.allowed_types(output_index=0)])
    shape = g.shape()
    if source == "string":
        # Strings that parse as numbers (the spec leaves other strings undefined).
        pool = (["0", "1", "7", "42"] if target in INT_TYPES + ("bool",)
                else ["0", "1", "-2", "3.5", "-0.25", "100", "nan", "inf", "-inf"])
        count = int(np.prod(shape, dtype=np.int64))
        x = np.array([g.choice(pool) for _ in range(count)], dtype=object).reshape(shape)
    elif source in FLOAT_TYPES and target in INT_TYPES + ("bool",):
        x = g.array(source, shape, low=-300, high=300)
    else:
        x = g.array(source, shape)
    attrs = {}
    if g.op == "Cast":
        attrs["to"] = onnx_type(target) if g.version >= 6 else target.upper()
    if "saturate" in g.schema.attributes and g.chance(0.3):
        attrs["saturate"] = g.bool_attr()
    inputs = [x]
    if g.op == "CastLike":
        inputs.append(g.array(target, (g.int(0, 2),)))
    return Case(g.op, g.opset, inputs, attrs)


RECIPES = {op: unary for op in UNARY}
RECIPES.update({op: binary for op in BINARY})
RECIPES.update({op: variadic for op in VARIADIC})
RECIPES.update({"Where": where, "PRelu": prelu, "Clip": clip, "Cast": cast, "CastLike": cast})
