"""Every ONNX backend node case of the installed onnx, run through our runtime as a regression test.

The cases come from onnx's own case definitions (see onnx_light.backend_test and
docs/conformance.md). A case must pass unless it is listed in conformance_expected_failures.txt
with its reason; a listed case still runs and must still fail (strict: once it passes, the test
fails and asks for the line to be removed). Cases whose model opset is newer than the runtime's
are skipped with that reason.

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
CASES = bt.load_cases(bt.MAX_OPSET)  # each model is serialized once, here
CASES_BY_NAME = {case.name: case for case in CASES}
with open(EXPECTED_FAILURES_FILE, encoding="utf-8") as _f:
    _generated_with = re.search(r"\(onnx ([^)]+)\)", _f.read(2000))
LIST_ONNX_VERSION = _generated_with.group(1) if _generated_with else "?"


@pytest.fixture(scope="module")
def ours():
    return bt.OursBackend()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_node_case(case, ours):
    if case.newer_opset:
        pytest.skip(f"newer opset: the model imports ai.onnx opset {case.opset}, "
                    f"the runtime implements opset {bt.MAX_OPSET}")
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
    if result.status == bt.PASS:
        pytest.fail(f"{case.name} passes now: remove its line from "
                    f"tests/python/{os.path.basename(EXPECTED_FAILURES_FILE)} (listed as: {listed})",
                    pytrace=False)
    pytest.xfail(f"expected failure ({listed}); now: {result.status}: {result.reason}")


def test_expected_failures_name_runnable_cases():
    unknown = sorted(name for name in EXPECTED_FAILURES if name not in CASES_BY_NAME)
    assert not unknown, f"listed in {os.path.basename(EXPECTED_FAILURES_FILE)} but not a node case: {unknown}"
    newer = sorted(name for name in EXPECTED_FAILURES if CASES_BY_NAME[name].newer_opset)
    assert not newer, f"newer-opset cases are skipped, do not list them: {newer}"


def test_cases_were_found():
    # Guards against an onnx upgrade that changes how node cases are provided.
    assert len(CASES) > 1000, f"only {len(CASES)} node cases found in onnx {bt.onnx_version()}"
    assert sum(not case.newer_opset for case in CASES) > 1000
