"""The onnx package is optional for real: the demo, `onnx-light info` and `onnx-light run` work in a
Python where `import onnx` fails (a sitecustomize sets sys.modules["onnx"] = None), and the helpers
that still need onnx say so."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from onnx_light import decoder_model


@pytest.fixture
def no_onnx_env(tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text('import sys\nsys.modules["onnx"] = None  # import onnx raises\n')
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(shim), env.get("PYTHONPATH", "")])
    env["MPLBACKEND"] = "Agg"
    check = subprocess.run([sys.executable, "-c", "import onnx"], env=env, capture_output=True, text=True)
    assert check.returncode != 0 and "import of onnx halted" in check.stderr  # the shim works
    return env


def run(args, env, cwd):
    return subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_demo_runs_without_onnx(no_onnx_env, tmp_path):
    done = run(["-m", "onnx_light.demo", "--steps", "4", "--layers", "1", "--no-plot",
                "--trace", str(tmp_path / "t.json")], no_onnx_env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "4 steps in" in done.stdout and "kernels that ran" in done.stdout
    assert (tmp_path / "t.json").stat().st_size > 0


def test_info_and_run_without_onnx(no_onnx_env, tmp_path):
    path = tmp_path / "decoder.onnx"
    path.write_bytes(decoder_model.build_decoder(layers=1).SerializeToString())
    info = run(["-m", "onnx_light.cli", "info", str(path)], no_onnx_env, tmp_path)
    assert info.returncode == 0, info.stdout + info.stderr
    assert "NOT SUPPORTED" not in info.stdout
    assert "x                           float32   [?, ?, 64]" in info.stdout
    ran = run(["-m", "onnx_light.cli", "run", str(path)], no_onnx_env, tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_the_decoder_builds_without_onnx_as_it_does_with_it(no_onnx_env, tmp_path):
    code = ("import sys; from onnx_light import decoder_model; "
            "sys.stdout.buffer.write(decoder_model.build_decoder(layers=1).SerializeToString())")
    done = subprocess.run([sys.executable, "-c", code], env=no_onnx_env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    import numpy as np
    import onnx_light.runtime as runtime
    feeds = {"x": np.ones((1, 2, 64), np.float32), **decoder_model.empty_cache(1, 4, 16)}
    ours = runtime.RuntimeSession(done.stdout).run(None, feeds)
    theirs = runtime.RuntimeSession(decoder_model.build_decoder(layers=1)).run(None, feeds)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_helpers_that_need_onnx_say_so(no_onnx_env, tmp_path):
    code = "from onnx_light import cnn_model; cnn_model.build_cnn()"
    done = run(["-c", code], no_onnx_env, tmp_path)
    assert done.returncode != 0
    assert "ModuleNotFoundError: onnx_light.cnn_model needs the onnx package" in done.stderr
    assert "pip install onnx" in done.stderr
