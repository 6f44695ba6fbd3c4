"""The onnx-light command line, run as `python -m onnx_light.cli` in a subprocess."""

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from event_models import concat_cache_model, if_model


def cli(*args, cwd=None):
    # A strict UTF-8 console: names that are not UTF-8 must not break the output.
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "onnx_light.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=120, env=env)


def identity_model(shape=(3,), names=("x", "y"), op="Identity"):
    graph = helper.make_graph([helper.make_node(op, [names[0]], [names[1]])], "g",
                              [helper.make_tensor_value_info(names[0], TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(names[1], TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


def user_error(result, code):
    """A user error: the documented exit code and one line on stderr, never a traceback."""
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("onnx-light: error: ") or result.stderr.startswith("usage:"), result.stderr


@pytest.fixture
def if_path(tmp_path):
    path = tmp_path / "if_model.onnx"
    onnx.save(if_model(), path)
    return path


def save(model, tmp_path, name):
    path = tmp_path / name
    onnx.save(model, path)
    return path


def unsupported_model():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Frobnicate", ["h"], ["y"], domain="example.ops")],
        "custom", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23), helper.make_opsetid("example.ops", 1)])
    model.ir_version = 10
    return model


def failing_model():
    """Reshape of a [batch, 3] input to [4]: compiles, fails when it runs."""
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])], "bad_reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[helper.make_tensor("shape", TensorProto.INT64, [1], [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model


# ---- info -----------------------------------------------------------------------------------


def test_info_lists_inputs_outputs_opsets_and_operator_support(if_path):
    result = cli("info", if_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "opsets: ai.onnx 23" in out
    assert "x" in out and "float32" in out and "[?, 3]" in out
    assert "cond" in out and "bool" in out
    for op in ("Identity", "If", "Relu", "Add", "Neg"):
        assert any(line.split()[:1] == [op] and "supported" in line for line in out.splitlines()), op
    assert "session builds" in out


def test_info_json_is_machine_readable(if_path):
    result = cli("info", if_path, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["supported"] is True
    assert [v["name"] for v in report["inputs"]] == ["x", "cond"]
    assert report["inputs"][0]["shape"] == [-1, 3]
    assert {op["op_type"]: op["status"] for op in report["operators"]}["If"] == "supported"
    assert report["opset_imports"] == [["", 23]]


def test_info_flags_unsupported_operators_with_exit_3(tmp_path):
    result = cli("info", save(unsupported_model(), tmp_path, "custom.onnx"))
    assert result.returncode == 3
    assert "Frobnicate" in result.stdout and "NOT SUPPORTED" in result.stdout
    relu = [line for line in result.stdout.splitlines() if line.split()[:1] == ["Relu"]]
    assert relu and "supported" in relu[0] and "NOT" not in relu[0]


def function_body_model(op, opset):
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"])], "body",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def test_info_reports_operators_served_by_a_function_body(tmp_path):
    result = cli("info", save(function_body_model("Softsign", 23), tmp_path, "softsign.onnx"))
    assert result.returncode == 0, result.stderr
    row = [line for line in result.stdout.splitlines() if line.split()[:1] == ["Softsign"]]
    assert row and "supported (function body)" in row[0]
    assert "every operator is supported; the session builds" in result.stdout


def test_info_function_body_that_does_not_build_exits_3(tmp_path):
    # Softsign has a body, but the model shadows the Abs it calls with a local function whose
    # EyeLike node carries an invalid dtype (every operator onnx's bodies use has a kernel now, so
    # no body fails for a missing one): every operator is listed as supported, and the session
    # build says why it fails.
    model = function_body_model("Softsign", 22)
    model.functions.append(helper.make_function(
        "", "Abs", ["X"], ["Y"], [helper.make_node("EyeLike", ["X"], ["Y"], dtype=99)], [helper.make_opsetid("", 22)]))
    result = cli("info", save(model, tmp_path, "softsign_shadowed.onnx"))
    assert result.returncode == 3
    assert "supported (function body)" in result.stdout
    assert "the session does not build" in result.stdout and "EyeLike" in result.stdout


def test_info_counts_operators_inside_persistent_bindings_and_subgraphs(tmp_path):
    import onnx_light.runtime as runtime

    path = tmp_path / "cache.onnx"
    path.write_bytes(runtime.with_persistent_bindings(concat_cache_model(), {"past": "present"}))
    result = cli("info", path)
    assert result.returncode == 0, result.stderr
    assert "persistent bindings: past <- present" in result.stdout


# ---- run ------------------------------------------------------------------------------------


def test_run_with_random_inputs_prints_outputs_and_time(if_path):
    result = cli("run", if_path)
    assert result.returncode == 0, result.stderr
    assert "x" in result.stdout and "[1, 3]" in result.stdout and "(random)" in result.stdout
    assert "outputs:" in result.stdout and "y" in result.stdout
    assert "time:" in result.stdout


def test_run_with_events_kernel_usage_and_repeat(if_path):
    result = cli("run", if_path, "--events", "--kernel-usage", "--repeat", 3)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "3 runs" in out
    assert "operator" in out and "share" in out and "If" in out
    identity = [line for line in out.splitlines() if line.startswith("Identity")]
    assert identity and identity[0].split()[1] == "3", "three runs, one Identity each"
    assert "kernels that ran:" in out


def test_run_writes_a_trace(if_path, tmp_path):
    trace_path = tmp_path / "out" / "trace.json"
    trace_path.parent.mkdir()
    result = cli("run", if_path, "--trace", trace_path, "--repeat", 2)
    assert result.returncode == 0, result.stderr
    data = json.loads(trace_path.read_text())
    slices = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert slices and all({"name", "ph", "ts", "dur", "pid", "tid", "args"} <= e.keys() for e in slices)
    assert sum(e["name"] == "If" for e in slices) == 2


def test_run_uses_the_arrays_of_an_npz_file(if_path, tmp_path):
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, x=np.array([[1, 2, 3], [4, 5, 6]], np.float32), cond=np.array(False))
    result = cli("run", if_path, "--inputs", inputs)
    assert result.returncode == 0, result.stderr
    assert "from inputs.npz" in result.stdout
    (line,) = [line for line in result.stdout.splitlines() if line.strip().startswith("y ")]
    assert "min -6" in line and "max -1" in line, line  # the else branch negates x


# ---- errors and exit codes ------------------------------------------------------------------


def test_missing_model_is_a_usage_error(tmp_path):
    for command in ("run", "info"):
        result = cli(command, tmp_path / "nope.onnx")
        assert result.returncode == 2
        assert "does not exist" in result.stderr and "nope.onnx" in result.stderr
        assert "Traceback" not in result.stderr


def test_bad_model_bytes_exit_3(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"\xff\xfe this is not a protobuf")
    for command in ("run", "info"):
        result = cli(command, path)
        assert result.returncode == 3, result.stderr
        assert "not a valid ONNX model" in result.stderr
        assert "Traceback" not in result.stderr


def test_unsupported_model_run_exits_3(tmp_path):
    result = cli("run", save(unsupported_model(), tmp_path, "custom.onnx"))
    user_error(result, 3)
    assert "Frobnicate" in result.stderr


def test_model_files_that_are_not_models(tmp_path):
    good = identity_model().SerializeToString()
    files = {"empty.onnx": b"", "truncated.onnx": good[: len(good) // 2],
             "random.onnx": np.random.default_rng(0).bytes(4096)}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        for command in ("run", "info"):
            result = cli(command, tmp_path / name)
            user_error(result, 3)
            assert "not a valid ONNX model" in result.stderr and name in result.stderr
    for command in ("run", "info"):
        result = cli(command, tmp_path)
        user_error(result, 2)
        assert "is a directory" in result.stderr


def test_huge_input_is_refused_naming_the_input_and_the_element_count(tmp_path):
    for shape in ([2**62], [2**31, 2**31]):
        result = cli("run", save(identity_model(shape), tmp_path, "huge.onnx"))
        user_error(result, 3)
        assert "input 'x'" in result.stderr and str(2**62) in result.stderr and "--inputs" in result.stderr
    assert cli("info", tmp_path / "huge.onnx").returncode == 0


def test_names_that_are_not_utf8_are_printed_escaped(tmp_path):
    data = identity_model(names=("in_Q", "outQ")).SerializeToString()
    path = tmp_path / "names.onnx"
    path.write_bytes(data.replace(b"in_Q", b"in_\xff").replace(b"outQ", b"out\xfe"))
    for args in (("run", path, "--events", "--kernel-usage", "--trace", tmp_path / "t.json"), ("info", path)):
        result = cli(*args)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        assert r"in_\xff" in result.stdout and r"out\xfe" in result.stdout
    result = cli("info", path, "--json")
    assert result.returncode == 0, result.stderr
    name = json.loads(result.stdout)["inputs"][0]["name"]
    assert name.encode("utf-8", "surrogateescape") == b"in_\xff"
    data = identity_model(op="RelQ").SerializeToString()
    path.write_bytes(data.replace(b"RelQ", b"Rel\xff"))
    result = cli("run", path)
    user_error(result, 3)
    assert r"Rel\xff" in result.stderr
    result = cli("info", path)  # the operator table says what is missing, on stdout
    assert result.returncode == 3 and not result.stderr
    assert r"Rel\xff" in result.stdout and "NOT SUPPORTED" in result.stdout


def test_inputs_files_that_do_not_fit_the_model_are_usage_errors(tmp_path):
    path = save(identity_model(), tmp_path, "id.onnx")
    np.savez(tmp_path / "dtype.npz", x=np.zeros(3, np.int64))
    result = cli("run", path, "--inputs", tmp_path / "dtype.npz")
    user_error(result, 2)
    assert "dtype.npz" in result.stderr and "int64" in result.stderr and "float32" in result.stderr
    np.savez(tmp_path / "shape.npz", x=np.zeros((2, 2), np.float32))
    result = cli("run", path, "--inputs", tmp_path / "shape.npz")
    user_error(result, 2)
    assert "[2, 2]" in result.stderr and "[3]" in result.stderr
    np.savez(tmp_path / "objects.npz", x=np.array([1, "a"], dtype=object))
    user_error(cli("run", path, "--inputs", tmp_path / "objects.npz"), 2)
    # A file written on a machine of the other byte order is converted, not refused or misread.
    other = ">f4" if sys.byteorder == "little" else "<f4"
    np.savez(tmp_path / "swapped.npz", x=np.array([1.5, -2.0, 3.0], other))
    result = cli("run", path, "--inputs", tmp_path / "swapped.npz")
    assert result.returncode == 0, result.stderr
    assert "min -2  max 3" in result.stdout


def test_a_closed_output_pipe_ends_quietly(if_path):
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    process = subprocess.Popen([sys.executable, "-m", "onnx_light.cli", "info", str(if_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    process.stdout.close()  # the reader is gone before anything is written
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141
    assert stderr == ""


def test_an_internal_error_is_reported_as_a_bug_with_its_traceback(monkeypatch, capsys, if_path):
    from onnx_light import cli as cli_module

    def broken(*args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(cli_module, "operator_support", broken)
    assert cli_module.main(["info", str(if_path)]) == cli_module.EXIT_INTERNAL == 4
    err = capsys.readouterr().err
    assert err.startswith("onnx-light: internal error") and "ZeroDivisionError: a bug" in err
    assert "Traceback" in err


def test_failing_run_exits_1(tmp_path):
    result = cli("run", save(failing_model(), tmp_path, "bad_reshape.onnx"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the run failed" in result.stderr and "Reshape" in result.stderr


def test_input_file_problems_are_usage_errors(if_path, tmp_path):
    result = cli("run", if_path, "--inputs", tmp_path / "missing.npz")
    assert result.returncode == 2 and "missing.npz" in result.stderr
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, not_an_input=np.zeros(3, np.float32))
    result = cli("run", if_path, "--inputs", wrong)
    assert result.returncode == 2 and "not_an_input" in result.stderr
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"not a zip")
    result = cli("run", if_path, "--inputs", broken)
    assert result.returncode == 2 and "broken.npz" in result.stderr
    single = tmp_path / "single.npy"
    np.save(single, np.zeros(3, np.float32))
    result = cli("run", if_path, "--inputs", single)
    assert result.returncode == 2 and "numpy.savez" in result.stderr


def test_usage_errors_exit_2(if_path, tmp_path):
    assert cli().returncode == 2
    assert cli("bogus").returncode == 2
    assert cli("run").returncode == 2
    assert cli("run", if_path, "--repeat", 0).returncode == 2
    assert cli("run", if_path, "--repeat", "many").returncode == 2
    result = cli("run", if_path, "--trace", tmp_path / "no-such-dir" / "t.json")
    assert result.returncode == 2 and "no-such-dir" in result.stderr


def test_version_and_help():
    result = cli("--version")
    assert result.returncode == 0 and "onnx-light" in result.stdout
    result = cli("--help")
    assert result.returncode == 0 and "run" in result.stdout and "info" in result.stdout
