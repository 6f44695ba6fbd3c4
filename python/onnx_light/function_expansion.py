"""Expansion of standard operators that onnx defines by a function body.

Some ``ai.onnx`` operators (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, Softsign, ...) are
defined in their onnx schema as a function of other operators. When onnx-light has no kernel for
such an operator, the model is rewritten with the function body inlined at every call, using onnx's
own inliner (``onnx.inliner.inline_selected_functions(..., inline_schema_functions=True)``), which
also resolves context-dependent bodies (built from the node's attributes and input types), attribute
references and nested calls.

``RuntimeSession`` and ``PersistentValueState`` call :func:`_expand_for_runtime` when constructing
the session fails with NotImplementedError, and retry once with the expanded model. A model that
needs no expansion is never copied.
"""

from __future__ import annotations

import os
import warnings
from typing import Iterator

import onnx
import onnx.defs
import onnx.inliner

_ONNX_DOMAINS = ("", "ai.onnx")
_MAX_ROUNDS = 8  # nested calls: each round inlines the calls the previous round produced


def supported_operator_names() -> set[str]:
    """The runtime's built-in operators as "op" (ai.onnx) or "domain::op" names."""
    from onnx_light.onnx_py._onnxpykernels import runtime

    return {op if not domain else f"{domain}::{op}" for domain, op, _ in runtime.supported_operators()}


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _graphs(g)


def _nodes(model: onnx.ModelProto) -> Iterator[onnx.NodeProto]:
    for graph in _graphs(model.graph):
        yield from graph.node
    for function in model.functions:
        for node in function.node:
            yield node
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    for g in _graphs(attr.g):
                        yield from g.node
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for sub in attr.graphs:
                        for g in _graphs(sub):
                            yield from g.node


def _onnx_opset(model: onnx.ModelProto) -> int:
    for opset in model.opset_import:
        if opset.domain in _ONNX_DOMAINS:
            return opset.version
    return 0


def has_schema_function(op_type: str, opset_version: int) -> bool:
    """Whether onnx defines `op_type` (ai.onnx) at `opset_version` by a function body."""
    if not isinstance(op_type, str):  # protobuf hands out a name that is not UTF-8 as bytes
        return False
    try:
        schema = onnx.defs.get_schema(op_type, opset_version, "")
    except onnx.defs.SchemaError:
        return False
    if schema.has_function and any(v <= opset_version for v in schema.function_opset_versions):
        return True
    return schema.has_context_dependent_function and any(
        v <= opset_version for v in schema.context_dependent_function_opset_versions
    )


def _to_expand(model: onnx.ModelProto, supported: set[str]) -> list[str]:
    opset = _onnx_opset(model)
    if opset == 0:
        return []
    missing = {n.op_type for n in _nodes(model) if n.domain in _ONNX_DOMAINS}
    missing -= supported
    return sorted(op for op in missing if has_schema_function(op, opset))


def _fill_default_attributes(model: onnx.ModelProto, ops: list[str]) -> None:
    """Writes the schema's default values of attributes the calls of `ops` leave out.

    Function bodies refer to attributes (`@alpha`); onnx's inliner drops a reference the call does
    not set instead of using the schema default, so the defaults are made explicit first.
    """
    opset = _onnx_opset(model)
    defaults: dict[str, list[onnx.AttributeProto]] = {}
    for op in ops:
        schema = onnx.defs.get_schema(op, opset, "")
        defaults[op] = [
            attr.default_value
            for attr in schema.attributes.values()
            if attr.default_value is not None and attr.default_value.name
        ]
    for node in _nodes(model):
        if node.domain not in _ONNX_DOMAINS or node.op_type not in defaults:
            continue
        present = {a.name for a in node.attribute}
        for default in defaults[node.op_type]:
            if default.name not in present:
                node.attribute.append(default)


def expand_schema_functions(
    model: onnx.ModelProto, supported: set[str] | None = None
) -> onnx.ModelProto | None:
    """Inlines the schema function body of every ai.onnx operator the runtime has no kernel for.

    `supported` is the runtime's operator table ("op" / "domain::op"), by default
    ``runtime.supported_operators()``. Walks the main graph, subgraphs and model-local functions
    (which are kept). Returns a new model, or None when no node needed expansion (the model is then
    not copied). Operators without a function body are left as they are.
    """
    if supported is None:
        supported = supported_operator_names()
    ops = _to_expand(model, supported)
    if not ops:
        return None
    expanded = onnx.ModelProto()
    expanded.CopyFrom(model)
    for _ in range(_MAX_ROUNDS):
        _fill_default_attributes(expanded, ops)
        ids = [(domain, op) for op in ops for domain in _ONNX_DOMAINS]
        expanded = onnx.inliner.inline_selected_functions(
            expanded, ids, exclude=False, inline_schema_functions=True
        )
        remaining = _to_expand(expanded, supported)
        if not remaining or remaining == ops:  # done, or the inliner declined these calls
            break
        ops = remaining
    return expanded


def _load(model: object) -> onnx.ModelProto:
    if isinstance(model, (str, os.PathLike)):
        return onnx.load(os.fspath(model))  # external data resolved next to the file
    if isinstance(model, onnx.ModelProto):
        return model
    if hasattr(model, "SerializeToString"):
        return onnx.load_from_string(model.SerializeToString())
    return onnx.load_from_string(bytes(model))


def _expand_for_runtime(model: object) -> onnx.ModelProto | None:
    """Called by the session constructors after NotImplementedError: the expanded model or None.

    None (the caller re-raises its original error) when nothing can be expanded; a failure of the
    expansion itself is reported as a warning, not in place of the original error.
    """
    try:
        return expand_schema_functions(_load(model))
    except Exception as error:  # noqa: BLE001 - the original NotImplementedError is the better one
        warnings.warn(f"onnx_light: expanding schema functions failed: {error}", RuntimeWarning)
        return None
