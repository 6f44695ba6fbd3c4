"""The operator fuzzer's recipe table: which recipe builds cases for each operator, which
attributes are booleans, and which attribute values lie outside an operator's domain.

    case = make_case("Gather", opset=13, seed=7, index=3)

Recipes live beside this file, one module per operator family (recipes_elementwise.py,
recipes_tensor.py, recipes_nn.py, recipes_control.py, recipes_signal.py). An operator without a recipe of its own
gets `schema_recipe`, which reads the inputs and type constraints from the schema and feeds
same-shaped random tensors: enough to catch crashes and plain mismatches in simple operators.
"""

from __future__ import annotations

import zlib

import numpy as np

import recipes_control
import recipes_elementwise
import recipes_image
import recipes_nn
import recipes_probes
import recipes_signal
import recipes_tensor
import recipes_text
from recipe_tools import Case, Gen

RECIPES = {}
for _module in (recipes_elementwise, recipes_tensor, recipes_nn, recipes_control, recipes_signal, recipes_text,
                recipes_image):
    RECIPES.update(_module.RECIPES)

# Attributes whose schema domain is {0, 1}. onnx-light reads each with KernelBuildInfo::GetBool,
# which refuses any other value when the session is built.
BOOLEAN_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "ArgMax": ("keepdims", "select_last_index"),
    "ArgMin": ("keepdims", "select_last_index"),
    "Attention": ("is_causal",),
    "AveragePool": ("ceil_mode", "count_include_pad"),
    "BatchNormalization": ("training_mode", "spatial", "is_test"),
    "Cast": ("saturate",),
    "CastLike": ("saturate",),
    "ConcatFromSequence": ("new_axis",),
    "CumSum": ("exclusive", "reverse"),
    "CumProd": ("exclusive", "reverse"),
    "Dropout": ("is_test",),
    "Gemm": ("transA", "transB", "broadcast"),
    "IsInf": ("detect_negative", "detect_positive"),
    "LpPool": ("ceil_mode",),
    "MaxPool": ("ceil_mode", "storage_order"),
    "Mod": ("fmod",),
    "Reshape": ("allowzero",),
    "Resize": ("exclude_outside", "antialias"),
    "RotaryEmbedding": ("interleaved",),
    "SplitToSequence": ("keepdims",),
    "TopK": ("largest", "sorted"),
    "Trilu": ("upper",),
    "Unique": ("sorted",),
    "NonMaxSuppression": ("center_point_box",),
    "DFT": ("inverse", "onesided"),
    "STFT": ("onesided",),
    "StringNormalizer": ("is_case_sensitive",),
}
for _op in recipes_tensor.REDUCE:
    BOOLEAN_ATTRIBUTES[_op] = ("keepdims", "noop_with_empty_axes")
# The legacy (opset < 7) broadcasting flag of the elementwise operators.
for _op in ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"):
    BOOLEAN_ATTRIBUTES[_op] = ("broadcast",)

# String attributes with a closed set of values: (op or "*", attribute) -> a value outside it.
_ENUMS = {
    ("*", "auto_pad"): "SAME",
    ("*", "mode"): "bogus",
    ("Resize", "coordinate_transformation_mode"): "half-pixel",
    ("Resize", "nearest_mode"): "round",
    ("Resize", "keep_aspect_ratio_policy"): "fit",
    ("BitShift", "direction"): "left",
    ("ScatterElements", "reduction"): "sum",
    ("ScatterND", "reduction"): "sum",
    ("Gelu", "approximate"): "fast",
    ("StringNormalizer", "case_change_action"): "lower",
}
# Integer attributes with a lower bound: (op or "*", attribute) -> smallest valid value.
_LOWER_BOUNDS = {
    ("*", "strides"): 1,
    ("*", "dilations"): 1,
    ("*", "kernel_shape"): 1,
    ("Conv", "pads"): 0,
    ("ConvTranspose", "pads"): 0,
    ("AveragePool", "pads"): 0,
    ("MaxPool", "pads"): 0,
    ("LpPool", "pads"): 0,
    ("*", "group"): 1,
    ("*", "blocksize"): 1,
    ("GroupNormalization", "num_groups"): 1,
    ("Split", "num_outputs"): 1,
    ("Attention", "q_num_heads"): 1,
    ("Attention", "kv_num_heads"): 1,
    ("RotaryEmbedding", "num_heads"): 0,
    ("RotaryEmbedding", "rotary_embedding_dim"): 0,
    ("TopK", "k"): 0,
    ("TfIdfVectorizer", "min_gram_length"): 1,
    ("TfIdfVectorizer", "max_skip_count"): 0,
}
# Integer attributes with a closed set of values: (op, attribute) -> an invalid value.
_INT_ENUMS = {
    ("Attention", "qk_matmul_output_mode"): 4,
    ("Attention", "softmax_precision"): 7,
    ("LayerNormalization", "stash_type"): 6,
    ("RMSNormalization", "stash_type"): 6,
    ("GroupNormalization", "stash_type"): 6,
    ("Cast", "to"): 999,
}


def _lookup(table: dict, op: str, attr: str):
    return table.get((op, attr), table.get(("*", attr)))


def invalid_mutations(case: Case, g: Gen) -> list[tuple[str, object, str]]:
    """(attribute, out-of-domain value, why) choices for this case's operator version."""
    schema_attrs = g.schema.attributes
    out = []
    for attr in BOOLEAN_ATTRIBUTES.get(case.op, ()):
        if attr in schema_attrs:
            value = g.choice([2, 3, -1, 5, 255])
            out.append((attr, value, f"{attr}={value} is not 0 or 1"))
    for attr in schema_attrs:
        enum = _lookup(_ENUMS, case.op, attr)
        if enum is not None and schema_attrs[attr].type == 3:  # STRING
            out.append((attr, enum, f"{attr}='{enum}' is not one of the allowed values"))
        bound = _lookup(_LOWER_BOUNDS, case.op, attr)
        if bound is not None:
            bad = bound - g.int(1, 3)
            current = case.attrs.get(attr)
            if schema_attrs[attr].type == 7:  # INTS: keep the length, break one value
                values = list(current) if current else _default_length(case, attr)
                if values:
                    values[g.int(0, len(values) - 1)] = bad
                    out.append((attr, values, f"{attr}={values} has a value below {bound}"))
            else:
                out.append((attr, bad, f"{attr}={bad} is below {bound}"))
        int_enum = _INT_ENUMS.get((case.op, attr))
        if int_enum is not None:
            out.append((attr, int_enum, f"{attr}={int_enum} is not an allowed value"))
    return out


def _default_length(case: Case, attr: str) -> list[int]:
    x = case.inputs[0] if case.inputs else None
    if not isinstance(x, np.ndarray) or x.ndim < 3:
        return []
    r = x.ndim - 2
    return [1] * (2 * r if attr == "pads" else r)


def schema_recipe(g: Gen) -> Case:
    """Same-shaped random tensors for every required input, typed from the schema."""
    shape = g.shape()
    inputs = []
    chosen: dict[str, str] = {}
    for i, param in enumerate(g.schema.inputs):
        if param.option == param.option.Optional:
            break
        t = chosen.get(param.type_str) or g.dtype(i)
        chosen[param.type_str] = t
        inputs.append(g.array(t, shape))
    return Case(g.op, g.opset, inputs, n_outputs=len(g.schema.outputs), note="schema recipe")


def case_rng(seed: int, op: str, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(op.encode()), index])


def make_case(op: str, opset: int, seed: int, index: int, domain: str = "",
              invalid_rate: float = 0.1, probe_rate: float = 0.05) -> Case:
    """The case `index` of operator `op` for `seed`: the same arguments give the same case."""
    rng = case_rng(seed, op, index)
    g = Gen(rng, op, opset, domain)
    if g.chance(probe_rate):  # a size probe (recipes_probes.py) instead of a regular case
        probe = recipes_probes.PROBES.get(op) if g.chance(0.5) else recipes_probes.empty_huge
        if g.version < recipes_probes.MIN_VERSION.get(op, 1):
            probe = None
        case = probe(g) if probe is not None else None
        if case is not None:
            case.domain = domain
            return case
    case = RECIPES.get(op, schema_recipe)(g)
    case.domain = domain
    if g.chance(invalid_rate) and case.nodes is None:
        choices = invalid_mutations(case, g)
        if choices:
            attr, value, why = choices[g.int(0, len(choices) - 1)]
            case.attrs[attr] = value
            case.invalid = why
            case.invalid_attribute = attr
    return case
