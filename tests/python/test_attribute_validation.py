"""Attribute values outside an operator's documented domain are refused when the session is
built, with a ValueError naming the node and the attribute.

Every (operator, boolean attribute) pair onnx-light implements comes from the fuzzer's table
(tests/fuzz/op_recipes.py BOOLEAN_ATTRIBUTES), checked against the schemas here, so a new
boolean attribute of an implemented operator shows up as a test case."""

from __future__ import annotations

import os
import sys

import onnx
import onnx.defs
import pytest
from onnx import TensorProto, helper

import onnx_light.runtime as runtime

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fuzz"))
from op_recipes import BOOLEAN_ATTRIBUTES  # noqa: E402

NEWEST = onnx.defs.onnx_opset_version()

# Attributes some kernels need before they look at anything else.
REQUIRED = {
    "Cast": {"to": TensorProto.FLOAT},
    "AveragePool": {"kernel_shape": [1]},
    "MaxPool": {"kernel_shape": [1]},
    "LpPool": {"kernel_shape": [1]},
    "ConcatFromSequence": {"axis": 0},
    "TopK": {"k": 1},
}


def _served_versions() -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for entry in runtime.supported_operators():
        if entry[0] == "":
            until = entry[3] if len(entry) > 3 else NEWEST
            out.setdefault(entry[1], []).append((entry[2], min(until, NEWEST)))
    return out


def _opset_with(op: str, attr: str, ranges) -> int | None:
    """The newest opset our kernel serves whose schema version of `op` has `attr`."""
    for version in range(NEWEST, 0, -1):
        if not any(lo <= version <= hi for lo, hi in ranges):
            continue
        try:
            schema = onnx.defs.get_schema(op, version)
        except onnx.defs.SchemaError:
            continue
        if attr in schema.attributes:
            return version
    return None


def _pairs():
    served = _served_versions()
    pairs = []
    for op, attrs in sorted(BOOLEAN_ATTRIBUTES.items()):
        if op not in served:
            continue
        for attr in attrs:
            opset = _opset_with(op, attr, served[op])
            if opset is not None:
                pairs.append(pytest.param(op, attr, opset, id=f"{op}-{opset}-{attr}"))
    return pairs


PAIRS = _pairs()


def _model(op: str, opset: int, attrs: dict) -> bytes:
    schema = onnx.defs.get_schema(op, opset)
    n_inputs = max(schema.min_input, 1)
    names = [f"x{i}" for i in range(n_inputs)]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names]
    node = helper.make_node(op, names, ["y"], name="the_node", **{**REQUIRED.get(op, {}), **attrs})
    graph = helper.make_graph([node], "g", inputs, [helper.make_value_info("y", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model.SerializeToString()


def test_every_implemented_boolean_attribute_is_covered():
    # Sanity: the table matches the schemas (no typo hides an attribute) and is not empty.
    assert len(PAIRS) >= 40
    for op, attrs in BOOLEAN_ATTRIBUTES.items():
        known = set()
        for schema in onnx.defs.get_all_schemas_with_history():
            if schema.name == op and schema.domain == "":
                known |= set(schema.attributes)
        assert not known or set(attrs) <= known, (op, set(attrs) - known)


@pytest.mark.parametrize("op,attr,opset", PAIRS)
@pytest.mark.parametrize("value", [2, -1])
def test_boolean_attribute_outside_0_1_is_refused_at_build(op, attr, opset, value):
    with pytest.raises(ValueError) as info:
        runtime.RuntimeSession(_model(op, opset, {attr: value}))
    assert f"node 'the_node' ({op}): attribute '{attr}' must be 0 or 1, got {value}" in str(info.value)


@pytest.mark.parametrize("op,attr,opset", PAIRS)
def test_boolean_attribute_0_and_1_are_accepted(op, attr, opset):
    for value in (0, 1):
        try:
            runtime.RuntimeSession(_model(op, opset, {attr: value}))
        except NotImplementedError:
            pass  # e.g. BatchNormalization training_mode=1: a supported value we do not run
        except ValueError as error:  # other checks may fire, but never this attribute's
            assert f"attribute '{attr}'" not in str(error), error


# Integer and string attributes with a documented domain: one case per kind of check.
OUT_OF_DOMAIN = [
    ("Conv", 22, 2, {"strides": [0]}, "attribute 'strides' must hold values >= 1, got [0]"),
    ("Conv", 22, 2, {"dilations": [1, -1]}, "attribute 'dilations' must hold values >= 1"),
    ("Conv", 22, 2, {"pads": [0, -1]}, "attribute 'pads' must hold values >= 0"),
    ("Conv", 22, 2, {"group": 0}, "attribute 'group' must be >= 1, got 0"),
    ("Conv", 22, 2, {"auto_pad": "SAME"}, "attribute 'auto_pad' must be one of"),
    ("MaxPool", 22, 1, {"kernel_shape": [0]}, "attribute 'kernel_shape' must hold values >= 1"),
    ("ConvTranspose", 22, 2, {"output_padding": [-1]}, "attribute 'output_padding' must hold values >= 0"),
    ("ConvTranspose", 22, 2, {"group": -2}, "attribute 'group' must be >= 1, got -2"),
    ("DepthToSpace", 13, 1, {"blocksize": 0}, "attribute 'blocksize' must be >= 1, got 0"),
    ("DepthToSpace", 13, 1, {"blocksize": 2, "mode": "dcr"}, "attribute 'mode' must be one of 'DCR', 'CRD'"),
    ("SpaceToDepth", 13, 1, {"blocksize": -3}, "attribute 'blocksize' must be >= 1, got -3"),
    ("Pad", 18, 2, {"mode": "wrap"}, "attribute 'mode' must be one of 'constant', 'reflect', 'edge', got 'wrap'"),
    ("Pad", 19, 2, {"mode": "bogus"}, "attribute 'mode' must be one of"),
    ("GatherND", 13, 2, {"batch_dims": -1}, "attribute 'batch_dims' must be >= 0, got -1"),
    ("ScatterND", 16, 3, {"reduction": "max"}, "attribute 'reduction' must be one of 'none', 'add', 'mul'"),
    ("ScatterElements", 18, 3, {"reduction": "sum"}, "attribute 'reduction' must be one of"),
    ("BitShift", 11, 2, {"direction": "left"}, "attribute 'direction' must be one of 'LEFT', 'RIGHT'"),
    ("Gelu", 20, 1, {"approximate": "fast"}, "attribute 'approximate' must be one of 'none', 'tanh'"),
    ("Attention", 23, 3, {"qk_matmul_output_mode": 4}, "attribute 'qk_matmul_output_mode' must be in [0, 3]"),
    ("Attention", 23, 3, {"q_num_heads": 0}, "attribute 'q_num_heads' must be >= 1, got 0"),
    ("RotaryEmbedding", 23, 3, {"num_heads": -1}, "attribute 'num_heads' must be >= 0, got -1"),
    ("GroupNormalization", 21, 3, {"num_groups": 0}, "attribute 'num_groups' must be >= 1, got 0"),
    ("GroupNormalization", 21, 3, {"num_groups": 1, "stash_type": 6}, "attribute 'stash_type'"),
    ("TopK", 1, 1, {"k": -1}, "attribute 'k' must be >= 0, got -1"),
]


@pytest.mark.parametrize("op,opset,n_inputs,attrs,message", OUT_OF_DOMAIN,
                         ids=[f"{c[0]}-{'-'.join(c[3])}" for c in OUT_OF_DOMAIN])
def test_attribute_outside_its_domain_is_refused_at_build(op, opset, n_inputs, attrs, message):
    names = [f"x{i}" for i in range(n_inputs)]
    node = helper.make_node(op, names, ["y"], name="the_node", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                                            for n in names],
                              [helper.make_value_info("y", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    with pytest.raises(ValueError) as info:
        runtime.RuntimeSession(model.SerializeToString())
    assert f"node 'the_node' ({op})" in str(info.value)
    assert message in str(info.value)


def test_scan_directions_must_be_0_or_1():
    body = helper.make_graph([helper.make_node("Identity", ["s"], ["s_out"]),
                              helper.make_node("Identity", ["x"], ["y_out"])], "body",
                             [helper.make_tensor_value_info("s", TensorProto.FLOAT, None),
                              helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                             [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, None),
                              helper.make_tensor_value_info("y_out", TensorProto.FLOAT, None)])
    node = helper.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], name="the_node", body=body,
                            num_scan_inputs=1, scan_input_directions=[2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
                                            for n in ("s0", "xs")],
                              [helper.make_value_info(n, onnx.TypeProto()) for n in ("s_final", "ys")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    with pytest.raises(ValueError, match=r"node 'the_node' \(Scan\): attribute 'scan_input_directions' "
                                         r"must hold values in \[0, 1\], got \[2\]"):
        runtime.RuntimeSession(model.SerializeToString())
