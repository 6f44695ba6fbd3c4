"""The conformance runner itself: comparison rules, outcome classification, files it writes."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from onnx_light import backend_test as bt


def mismatch(actual, expected, rtol=1e-3, atol=1e-5) -> bt.Mismatch:
    with pytest.raises(bt.Mismatch) as info:
        bt.compare(actual, expected, rtol, atol)
    return info.value


def test_compare_floats_within_and_beyond_tolerance():
    e = np.array([1.0, 100.0, 0.0], np.float32)
    bt.compare(e + np.array([1e-3, 0.09, 9e-6], np.float32), e, 1e-3, 1e-5)
    m = mismatch(e + np.array([0, 0.2, 0], np.float32), e)
    assert m.max_abs == pytest.approx(0.2, rel=1e-3) and "1 of 3 elements differ" in str(m)


def test_compare_nan_inf_and_shape_dtype():
    e = np.array([np.nan, np.inf, -np.inf, 1.0])
    bt.compare(e.copy(), e, 1e-3, 1e-5)
    assert math.isinf(mismatch(np.array([np.nan, np.inf, np.inf, 1.0]), e).max_abs)
    mismatch(np.array([0.0, np.inf, -np.inf, 1.0]), e)  # NaN expected
    assert "shape" in str(mismatch(np.zeros((1,), np.float32), np.zeros((), np.float32)))
    assert "dtype" in str(mismatch(np.zeros(2, np.float64), np.zeros(2, np.float32)))


def test_compare_integers_exactly_and_strings():
    bt.compare(np.array([5, 7]), np.array([5, 7]), 1e-3, 1e-5)
    assert mismatch(np.array([100000, 7]), np.array([100001, 7])).max_abs == 1
    bt.compare(np.array(["a", "b"], object), np.array(["a", "b"], object), 1e-3, 1e-5)
    mismatch(np.array(["a", "c"], object), np.array(["a", "b"], object))


def test_compare_sequences_and_optionals():
    bt.compare([np.ones(2)], [np.ones(2)], 1e-3, 1e-5)
    bt.compare(None, None, 1e-3, 1e-5)
    mismatch(np.ones(2), None)
    mismatch(None, np.ones(2))
    mismatch([np.ones(2)], [np.ones(2), np.ones(2)])
    assert "[1]" in str(mismatch([np.ones(2), np.zeros(2)], [np.ones(2), np.ones(2)]))


def test_compare_bfloat16_uses_two_ulps():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes")
    e = np.array([1.0, 2.0], ml_dtypes.bfloat16)
    bt.compare(np.array([1.0078125, 2.0], ml_dtypes.bfloat16), e, 1e-3, 1e-5)


def test_normalize_keeps_scalars_zero_dimensional():
    assert bt.normalize(np.float32(3)).shape == ()
    assert bt.normalize(np.arange(6).reshape(2, 3).T).flags.c_contiguous
    assert bt.normalize(None) is None and bt.normalize([np.int64(1)])[0].shape == ()


def _case(**overrides) -> bt.NodeCase:
    fields = dict(name="test_x", op_type="X", opset=13, expanded=False, model=b"", input_names=["a"],
                  output_names=["y"], inputs=[np.ones(2, np.float32)], outputs=[np.ones(2, np.float32)],
                  rtol=1e-3, atol=1e-5)
    fields.update(overrides)
    return bt.NodeCase(**fields)


class FakeBackend:
    name = "fake"

    def __init__(self, behaviour):
        self.behaviour = behaviour

    def is_unsupported(self, error):
        return isinstance(error, NotImplementedError)

    def run(self, case):
        return self.behaviour(case)


def test_run_case_classifies_outcomes():
    ok = FakeBackend(lambda c: [np.ones(2, np.float32)])
    assert bt.run_case(_case(), ok).status == bt.PASS
    wrong = bt.run_case(_case(), FakeBackend(lambda c: [np.full(2, 3, np.float32)]))
    assert wrong.status == bt.FAIL and wrong.max_abs_error == pytest.approx(2)

    def missing(case):
        raise NotImplementedError("node '' (X): no kernel for operator 'X' at opset 13")

    def broken(case):
        raise ValueError("bad input")

    unsupported = bt.run_case(_case(), FakeBackend(missing))
    assert unsupported.status == bt.UNSUPPORTED and "no kernel for operator 'X'" in unsupported.reason
    assert bt.run_case(_case(), FakeBackend(broken)).status == bt.ERROR
    # Every case runs, whatever opset its model imports: there is no "not run" outcome.
    assert bt.run_case(_case(opset=bt.MAX_OPSET + 1), ok).status == bt.PASS
    assert set(bt.STATUSES) == {bt.PASS, bt.FAIL, bt.ERROR, bt.UNSUPPORTED}


REFUSAL = ("NotImplementedError: node '' (Cast): the model imports ai.onnx opset 24, and onnx-light "
           "implements operator 'Cast' only for opset versions 1-23")


def test_version_refusals_are_parsed_and_counted():
    assert bt.parse_version_refusal(REFUSAL) == ("", "Cast", 24)
    assert bt.parse_version_refusal(
        "the model imports com.example opset 3, and onnx-light implements operator "
        "'com.example::Op' only for opset versions 1-2") == ("com.example", "Op", 3)
    assert bt.parse_version_refusal("no kernel for operator 'X' at opset 13") is None
    cases = [_case(name="test_a"), _case(name="test_b"), _case(name="test_c")]
    results = {"test_a": {"ours": bt.Result(bt.UNSUPPORTED, REFUSAL)},
               "test_b": {"ours": bt.Result(bt.UNSUPPORTED, "no kernel for operator 'B' at opset 13")},
               "test_c": {"ours": bt.Result(bt.PASS)}}
    assert bt.version_refusals(cases, results) == {"Cast": 1}
    assert [m["operator"] for m in bt.missing_operators(cases, results)] == ["B"]


def test_per_opset_counts_every_imported_opset():
    cases = [_case(name="test_a", opset=24), _case(name="test_b", opset=13), _case(name="test_c", opset=24),
             _case(name="test_d", opset=None)]
    results = {"test_a": {"ours": bt.Result(bt.PASS), "onnxruntime": bt.Result(bt.FAIL)},
               "test_b": {"ours": bt.Result(bt.UNSUPPORTED, REFUSAL), "onnxruntime": bt.Result(bt.PASS)},
               "test_c": {"ours": bt.Result(bt.PASS), "onnxruntime": bt.Result(bt.PASS)},
               "test_d": {"ours": bt.Result(bt.PASS), "onnxruntime": bt.Result(bt.ERROR)}}
    table = bt.per_opset(cases, results, ["ours", "onnxruntime"])
    assert list(table) == [13, 24, None]
    assert table[24]["ours"]["total"] == 2 and table[24]["ours"][bt.PASS] == 2
    assert table[24]["onnxruntime"][bt.PASS] == 1 and table[13]["onnxruntime"][bt.PASS] == 1
    markdown = bt.format_markdown(cases, results, ["ours", "onnxruntime"])
    assert "| 24 | 2 | 2 | 1 |" in markdown and "| none (other domains only) | 1 | 1 | 0 |" in markdown
    assert "| Cast | 1 |" in markdown
    summary = bt.format_summary(cases, results, ["ours", "onnxruntime"])
    assert "Per imported opset" in summary and "Cast (1)" in summary


def test_expected_failures_file_round_trip_keeps_notes(tmp_path):
    path = tmp_path / "expected.txt"
    path.write_text("test_a fail: old  # a hand-written why\n")
    cases = [_case(name="test_a"), _case(name="test_b"), _case(name="test_c")]
    results = {
        "test_a": {"ours": bt.Result(bt.FAIL, "y: 1 of 2 elements differ (rtol 0.001, atol 1e-05)", 1.0)},
        "test_b": {"ours": bt.Result(bt.UNSUPPORTED, "NotImplementedError: node '' (B): no kernel for "
                                                     "operator 'B' at opset 13")},
        "test_c": {"ours": bt.Result(bt.PASS)},
    }
    assert bt.write_expected_failures(str(path), cases, results) == 2
    listed = bt.read_expected_failures(str(path))
    assert listed == {"test_a": "fail: y: 1 of 2 elements differ  # a hand-written why",
                      "test_b": "unsupported: no kernel for operator 'B' at opset 13"}


def test_cases_come_from_the_installed_onnx():
    cases = bt.load_cases(pattern=r"^test_(relu|softsign)(_expanded.*)?$")
    by_name = {c.name: c for c in cases}
    assert by_name["test_relu"].op_type == "Relu" and not by_name["test_relu"].expanded
    expanded = [c for c in cases if c.expanded]
    assert {c.name for c in expanded} >= {"test_softsign_expanded_ver18", "test_relu_expanded_ver18"}
    assert all(c.op_type == ("Relu" if "relu" in c.name else "Softsign") for c in expanded)
    assert all(c.rtol == bt.DEFAULT_RTOL and c.atol == bt.DEFAULT_ATOL for c in cases)


def test_main_prints_lines_and_writes_json(tmp_path, capsys):
    report = tmp_path / "report.json"
    assert bt.main(["-k", "^test_relu$", "--json", str(report), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "test_relu" in out and "pass" in out and "Per operator" in out
    data = json.loads(report.read_text())
    assert data["onnx_version"] and data["totals"]["ours"]["pass"] == 1
    assert [(o["opset"], o["ours"]["pass"], o["ours"]["total"]) for o in data["opsets"]] == [(14, 1, 1)]
    assert data["cases"][0]["results"]["ours"]["status"] == "pass"


def test_main_onnxruntime_backend(capsys):
    pytest.importorskip("onnxruntime", reason="the ORT backend needs onnxruntime")
    assert bt.main(["-k", "^test_relu$", "--backend", "both", "-q", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "ours" in out and "onnxruntime  1/1 passed" in out


def test_reads_an_on_disk_case_folder(tmp_path):
    # The layout older onnx wheels ship under onnx/backend/test/data/node/<case>/.
    import types

    import onnx
    from onnx import helper, numpy_helper

    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 2])])
    onnx.save(helper.make_model(graph), str(tmp_path / "model.onnx"))
    data = tmp_path / "test_data_set_0"
    data.mkdir()
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(x, "y").SerializeToString())
    model, data_sets = bt._read_disk_case(types.SimpleNamespace(model_dir=str(tmp_path)))
    assert model.graph.node[0].op_type == "Relu"
    (inputs, outputs), = data_sets
    np.testing.assert_array_equal(inputs[0], x)
    np.testing.assert_array_equal(outputs[0], x)
