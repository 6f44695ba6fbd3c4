"""Every ONNX backend node case of the installed onnx, run through our runtime as a regression test.

The cases come from onnx's own case definitions (see onnx_light.backend_test and
docs/conformance.md). Every case runs, whatever opset its model imports. A case must pass unless
it is listed in conformance_expected_failures.txt with its reason; a listed case still runs and
must still fail (strict: once it passes, the test fails and asks for the line to be removed).

Regenerate the list after kernel work with
    python -m onnx_light.backend_test -q --write-expected-failures tests/python/conformance_expected_failures.txt
"""

from __future__ import annotations

import os
import re

import pytest

from onnx_light import backend_test as bt

EXPECTED_FAILURES_FILE = os.path.join(os.path.dirname(__file__), "conformance_expected_failures.txt")
EXPECTED_FAILURES = bt.read_expected_failures(EXPECTED_FAILURES_FILE)
CASES = bt.load_cases()  # each model is serialized once, here
CASES_BY_NAME = {case.name: case for case in CASES}
with open(EXPECTED_FAILURES_FILE, encoding="utf-8") as _f:
    _generated_with = re.search(r"\(onnx ([^)]+)\)", _f.read(2000))
LIST_ONNX_VERSION = _generated_with.group(1) if _generated_with else "?"
# The reason the list gives for cases whose expected values come from numpy's random generator.
RANDOM_VALUES = "# random values:"


@pytest.fixture(scope="module")
def ours():
    return bt.OursBackend()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_node_case(case, ours):
    result = bt.run_case(case, ours)
    listed = EXPECTED_FAILURES.get(case.name)
    if listed is None:
        assert result.status == bt.PASS, (
            f"{case.name} ({case.op_type}) {result.status}: {result.reason}\n"
            f"If this is a known gap, list it in {os.path.basename(EXPECTED_FAILURES_FILE)} with its reason."
            + ("" if LIST_ONNX_VERSION == bt.onnx_version() else
               f" Note: the list was generated with onnx {LIST_ONNX_VERSION}, onnx {bt.onnx_version()} "
               "is installed; its cases may differ."))
        return
    if result.status == bt.PASS and RANDOM_VALUES in listed:
        # Our generator is not numpy's (docs/semantics.md, random operators), so a random case's
        # values agree with the stored ones only by chance (an unseeded Bernoulli of 10 elements
        # does now and then); that is no sign the line is stale.
        return
    if result.status == bt.PASS:
        pytest.fail(f"{case.name} passes now: remove its line from "
                    f"tests/python/{os.path.basename(EXPECTED_FAILURES_FILE)} (listed as: {listed})",
                    pytrace=False)
    # A case listed as an operator-version refusal must still be refused for that reason: once the
    # version is implemented, a wrong result must not stay hidden behind the old line.
    listed_refusal = bt.parse_version_refusal(listed)
    if listed_refusal is not None and bt.parse_version_refusal(result.reason) != listed_refusal:
        pytest.fail(f"{case.name} is listed as a version refusal ({listed}) but now {result.status}: "
                    f"{result.reason}; regenerate its line", pytrace=False)
    pytest.xfail(f"expected failure ({listed}); now: {result.status}: {result.reason}")


def test_expected_failures_name_runnable_cases():
    unknown = sorted(name for name in EXPECTED_FAILURES if name not in CASES_BY_NAME)
    assert not unknown, f"listed in {os.path.basename(EXPECTED_FAILURES_FILE)} but not a node case: {unknown}"


def test_listed_version_refusals_are_not_implemented_versions():
    # "implements operator 'X' only for opset versions ..." lines are fine to list, but only while
    # no registration covers that version: a listed refusal of a version some kernel now claims
    # would hide a newer-opset semantic gap behind a stale reason.
    from onnx_light import runtime

    ranges: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for domain, op, since, until in runtime.supported_operators():
        ranges.setdefault((domain, op), []).append((since, until))
    claimed = []
    for name, reason in EXPECTED_FAILURES.items():
        refusal = bt.parse_version_refusal(reason)
        if refusal is None:
            continue
        domain, op, opset = refusal
        if any(since <= opset <= until for since, until in ranges.get((domain, op), [])):
            claimed.append(f"{name}: {op}-{opset}")
    assert not claimed, f"listed as refused, but a kernel claims that version: {claimed}"


def test_cases_were_found():
    # Guards against an onnx upgrade that changes how node cases are provided.
    assert len(CASES) > 1000, f"only {len(CASES)} node cases found in onnx {bt.onnx_version()}"
