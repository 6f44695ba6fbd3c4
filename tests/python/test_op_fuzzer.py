"""The differential operator fuzzer (tests/fuzz/op_fuzzer.py): its CI slice, and checks that the
harness itself notices what it is meant to notice.

The slice runs one fixed seed over every operator runtime.supported_operators() lists, in a
worker process (a crash is a finding, not the end of the test run), and fails on any disagreement
that tests/fuzz/known_differences.py does not justify. Longer runs are by hand; see
docs/reliability.md."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fuzz"))
import op_fuzzer  # noqa: E402
from op_recipes import RECIPES, make_case  # noqa: E402
from recipe_tools import Case  # noqa: E402

import onnx_light.runtime as runtime  # noqa: E402

SEED = 20261201
CASES_PER_OP = 24


def test_ci_slice_runs_clean(tmp_path):
    summary = op_fuzzer.fuzz(SEED, CASES_PER_OP, save=str(tmp_path), isolate=True,
                             stderr_path=str(tmp_path / "worker.log"))
    ops = {entry[1] for entry in runtime.supported_operators() if entry[0] == ""}
    covered = {r["op"] for r in summary.records}
    assert covered == ops
    assert len(summary.records) == len(ops) * CASES_PER_OP
    assert not summary.failures(), summary.format()
    counts = summary.counts()
    # The slice must exercise something: most cases compare against an oracle and pass.
    assert counts[op_fuzzer.PASS] > len(summary.records) // 2, summary.format()
    assert counts[op_fuzzer.REFUSED] > 0  # out-of-domain attributes and size probes are refused


# Operators added after the recipes were written: the fuzzer still runs them every time, with
# inputs derived from their schema only (types and ranks, default attributes), which rarely gives
# valid shapes, so most of their cases end as clean refusals. Hand-written recipes for them are
# open work (docs/reliability.md); the list is explicit so that a new operator cannot slip in
# without either a recipe or a line here.
SCHEMA_RECIPE_ONLY = {
    "Bernoulli", "BitCast", "CausalConvWithState", "Col2Im", "Compress", "CumProd", "DeformConv", "Det",
    "EyeLike", "GRU", "GridSample", "LRN", "LSTM", "LinearAttention", "LpNormalization", "MaxRoiPool",
    "MaxUnpool", "Multinomial", "NonMaxSuppression", "RNN", "RandomNormal", "RandomNormalLike", "RandomUniform",
    "RandomUniformLike", "ReverseSequence", "RoiAlign", "SwiGLU", "TensorScatter", "Unique",
    # quantization (tests/python/test_ops_quantization.py covers them by hand)
    "ConvInteger", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "QLinearConv", "QLinearMatMul",
    "QuantizeLinear",
}


def test_every_implemented_operator_has_a_recipe():
    ops = {entry[1] for entry in runtime.supported_operators() if entry[0] == ""}
    assert sorted(ops - set(RECIPES)) == sorted(SCHEMA_RECIPE_ONLY)


def test_cases_are_reproducible():
    a = make_case("Pad", 19, seed=5, index=17)
    b = make_case("Pad", 19, seed=5, index=17)
    assert a.describe() == b.describe()
    for x, y in zip(a.inputs, b.inputs):
        if x is None or y is None:
            assert x is None and y is None
        elif x.dtype == object:  # strings: NaN does not apply
            assert np.array_equal(x, y)
        else:
            assert np.array_equal(x, y, equal_nan=True)


def test_a_wrong_result_is_reported(monkeypatch):
    case = Case("Add", 14, [np.ones((2, 2), np.float32), np.ones((2,), np.float32)])

    def off_by_one(model_bytes, inputs, n_outputs):
        return op_fuzzer.Outcome(True, [np.full((2, 2), 3.0, np.float32)])

    monkeypatch.setattr(op_fuzzer, "run_ours", off_by_one)
    verdict, _ = op_fuzzer.execute(case)
    assert verdict.status == op_fuzzer.FAIL and verdict.kind == "mismatch"
    assert "ORT agrees with the reference" in verdict.detail


def test_an_accepted_out_of_domain_attribute_is_reported(monkeypatch):
    case = Case("ReduceSum", 13, [np.ones((2, 2), np.float32)], {"keepdims": 2},
                invalid="keepdims=2 is not 0 or 1", invalid_attribute="keepdims")
    monkeypatch.setattr(op_fuzzer, "run_ours",
                        lambda m, i, n: op_fuzzer.Outcome(True, [np.ones((1, 1), np.float32)]))
    verdict, _ = op_fuzzer.execute(case)
    assert verdict.status == op_fuzzer.FAIL and verdict.kind == "accepts-invalid"


def test_out_of_domain_attribute_is_refused_for_real():
    case = Case("ReduceSum", 13, [np.ones((2, 2), np.float32)], {"keepdims": 2},
                invalid="keepdims=2 is not 0 or 1", invalid_attribute="keepdims")
    verdict, outcomes = op_fuzzer.execute(case)
    assert verdict.status == op_fuzzer.REFUSED, verdict
    assert outcomes["ours"].phase == "build"


def test_a_crash_is_a_finding_and_the_run_goes_on(tmp_path, monkeypatch):
    # A worker that dies on its first case: the parent reports a crash and restarts it.
    worker = op_fuzzer.Worker(str(tmp_path / "worker.log"),
                              env={**os.environ, "OP_FUZZER_CRASH_ONCE": str(tmp_path / "crashed")})
    try:
        first = worker.run("Relu", 14, 1, 0, timeout=60)
        second = worker.run("Relu", 14, 1, 1, timeout=60)
    finally:
        worker.close()
    assert first["status"] == op_fuzzer.FAIL and first["kind"] == "crash", first
    assert second["status"] == op_fuzzer.PASS, second


def test_reproducer_round_trip(tmp_path):
    record = op_fuzzer.run_one("Gather", 13, SEED, 3)
    folder = op_fuzzer.save_reproducer(str(tmp_path), record)
    model, inputs = op_fuzzer.load_reproducer(folder)
    case = make_case("Gather", 13, SEED, 3)
    assert model.SerializeToString() == op_fuzzer.build_model(case).SerializeToString()
    for name, value in op_fuzzer.feeds(case).items():
        assert np.array_equal(inputs[name], value)
    assert op_fuzzer.replay(folder) == 0


@pytest.mark.parametrize("op,opset", [("Tile", 13), ("ConstantOfShape", 23), ("Range", 11)])
def test_size_probes_are_refused(op, opset):
    import recipes_probes
    from recipe_tools import Gen

    for index in range(6):
        g = Gen(np.random.default_rng(index), op, opset)
        case = recipes_probes.PROBES[op](g)
        verdict, outcomes = op_fuzzer.execute(case)
        assert verdict.status == op_fuzzer.REFUSED, (case.describe(), verdict)
        assert "fuzz_node" in outcomes["ours"].message
