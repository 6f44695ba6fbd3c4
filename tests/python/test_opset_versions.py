"""Operator versions: the newest opset, kernel ranges aligned with the schema history, and what a
KernelContext's opset means (a label: the model's imports choose kernel versions)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import onnx
import onnx.defs
import pytest

import onnx_light.runtime as runtime
from node_check import node_model, run_ours


def schema_versions() -> dict[str, list[int]]:
    """ai.onnx operator -> every since_version in the installed onnx's schema history."""
    history: dict[str, set[int]] = defaultdict(set)
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain in ("", "ai.onnx"):
            history[schema.name].add(schema.since_version)
    return {op: sorted(versions) for op, versions in history.items()}


def test_max_opset_is_the_pinned_onnx_newest():
    assert runtime.MAX_ONNX_OPSET == onnx.defs.onnx_opset_version()
    assert runtime.default_opset(runtime.MAX_ONNX_OPSET).version == runtime.MAX_ONNX_OPSET
    with pytest.raises(ValueError):
        runtime.default_opset(runtime.MAX_ONNX_OPSET + 1)


def test_ranges_are_aligned_with_the_schema_history():
    # A range starts at a schema version of its operator and ends at the newest opset or just
    # before a schema version: a kernel never claims part of a version, and a range ending early
    # stops exactly where the next (unimplemented) version begins.
    history = schema_versions()
    newest = onnx.defs.onnx_opset_version()
    misaligned = []
    for domain, op, since, until in runtime.supported_operators():
        if domain != "":
            continue
        versions = history.get(op)
        if versions is None:
            misaligned.append(f"{op}: not an ai.onnx operator")
            continue
        if since not in versions:
            misaligned.append(f"{op} {since}-{until}: {since} is not a version of {op} {versions}")
        if until != newest and until + 1 not in versions:
            misaligned.append(f"{op} {since}-{until}: {until + 1} is not a version of {op} {versions}")
    assert not misaligned, "\n".join(misaligned)


# Operators whose newest versions belong to the element-type work (new float8, int2/uint2 and
# float6 types, round_mode): they stop before 24 until that work lands.
AWAITING_ELEMENT_TYPES = {"Cast", "CastLike"}


def test_every_operator_we_have_serves_the_newest_opset():
    newest = onnx.defs.onnx_opset_version()
    ends: dict[str, int] = defaultdict(int)
    for domain, op, _, until in runtime.supported_operators():
        if domain == "":
            ends[op] = max(ends[op], until)
    behind = {op: end for op, end in ends.items() if end < newest and op not in AWAITING_ELEMENT_TYPES}
    assert not behind, f"operators whose newest versions are not implemented: {behind}"


def test_supported_operators_ranges_do_not_overlap():
    by_op: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for domain, op, since, until in runtime.supported_operators():
        by_op[(domain, op)].append((since, until))
    for key, ranges in by_op.items():
        ranges.sort()
        for (_, end), (start, _) in zip(ranges, ranges[1:]):
            assert end < start, f"{key}: overlapping ranges {ranges}"


# ---- KernelContext and RuntimeContext defaults -------------------------------------------------


def test_runtime_context_defaults():
    context = runtime.RuntimeContext()
    assert not context.events_enabled
    assert runtime.KernelContext().opset.version == runtime.MAX_ONNX_OPSET
    assert runtime.KernelContext().opset.domain == ""
    assert runtime.RuntimeContext(events_enabled=True).events_enabled
    # The contract's spelled-out form keeps working.
    labelled = runtime.KernelContext(runtime.default_opset(23))
    assert labelled.opset.version == 23
    assert runtime.RuntimeContext(labelled, events_enabled=True).events_enabled


def test_default_context_runs_a_session():
    x = np.array([-1.0, 2.0], np.float32)
    model = node_model("Relu", {"x": x}, opset=runtime.MAX_ONNX_OPSET)
    out = runtime.RuntimeSession(model).run(runtime.RuntimeContext(), {"x": x})
    np.testing.assert_array_equal(out["y0"].numpy(), [0.0, 2.0])


@pytest.mark.parametrize("label", [11, 13, runtime.MAX_ONNX_OPSET])
def test_kernel_context_opset_does_not_select_the_operator_version(label):
    # Softmax-11 normalises over the flattened axes from `axis` on, Softmax-13 over `axis` only:
    # the model's import (11) decides, whatever the context is labelled with.
    x = np.zeros((1, 2, 2), np.float32)
    model = node_model("Softmax", {"x": x}, {"axis": 1}, opset=11)
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(label)))
    y, = run_ours(model, {"x": x}, context=context)
    np.testing.assert_allclose(y, np.full((1, 2, 2), 0.25, np.float32))
