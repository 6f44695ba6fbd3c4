#!/usr/bin/env python3
"""Print the operators of .onnx models, one per line: "Op" for ai.onnx, "domain::Op" otherwise.

Walks the main graph, every subgraph attribute (If, Loop, Scan, ...) and model-local functions:
a node calling a local function contributes the function body's operators, not its own name.
Used at configure time by cmake/selective_build.cmake; reads the protobuf wire format itself so
the build needs no onnx package. External data is never opened (only the graph structure is read).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Field numbers from onnx.proto.
MODEL_GRAPH, MODEL_FUNCTIONS = 7, 25
GRAPH_NODE = 1
NODE_OP_TYPE, NODE_ATTRIBUTE, NODE_DOMAIN = 4, 5, 7
ATTR_G, ATTR_GRAPHS = 6, 11
FUNC_NAME, FUNC_NODE, FUNC_DOMAIN = 1, 7, 10


def _varint(data: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def fields(data: memoryview):
    """Yields (field number, value) pairs; length-delimited values as memoryviews."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field")
            value, pos = data[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, value


def _text(view: memoryview) -> str:
    return bytes(view).decode("utf-8")


def _node(data: memoryview) -> tuple[str, str, list[memoryview]]:
    op_type, domain, graphs = "", "", []
    for number, value in fields(data):
        if number == NODE_OP_TYPE:
            op_type = _text(value)
        elif number == NODE_DOMAIN:
            domain = _text(value)
        elif number == NODE_ATTRIBUTE:
            graphs.extend(v for n, v in fields(value) if n in (ATTR_G, ATTR_GRAPHS))
    return op_type, domain, graphs


def model_operators(path: Path) -> set[str]:
    model = memoryview(path.read_bytes())
    graph = None
    functions: dict[tuple[str, str], list[memoryview]] = {}
    for number, value in fields(model):
        if number == MODEL_GRAPH:
            graph = value
        elif number == MODEL_FUNCTIONS:
            name = domain = ""
            nodes = []
            for n, v in fields(value):
                if n == FUNC_NAME:
                    name = _text(v)
                elif n == FUNC_DOMAIN:
                    domain = _text(v)
                elif n == FUNC_NODE:
                    nodes.append(v)
            functions[(domain, name)] = nodes
    if graph is None:
        raise ValueError(f"{path}: no graph")
    ops: set[str] = set()
    seen_functions: set[tuple[str, str]] = set()

    def visit_nodes(nodes) -> None:
        for node in nodes:
            op_type, domain, graphs = _node(node)
            key = ("" if domain == "ai.onnx" else domain, op_type)
            if key in functions:
                if key not in seen_functions:
                    seen_functions.add(key)
                    visit_nodes(functions[key])
            else:
                ops.add(op_type if not key[0] else f"{key[0]}::{op_type}")
            for sub in graphs:
                visit_graph(sub)

    def visit_graph(g: memoryview) -> None:
        visit_nodes(v for n, v in fields(g) if n == GRAPH_NODE)

    visit_graph(graph)
    return ops


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: model_operators.py MODEL.onnx...", file=sys.stderr)
        return 2
    ops: set[str] = set()
    for arg in argv:
        try:
            ops |= model_operators(Path(arg))
        except (OSError, ValueError, UnicodeDecodeError) as e:
            print(f"{arg}: {e}", file=sys.stderr)
            return 1
    print("\n".join(sorted(ops)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
