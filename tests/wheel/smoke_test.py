"""Smoke test of an installed wheel, run in a clean virtual environment by scripts/test.sh.

The environment holds only numpy and the wheel: no onnx, no compiler needed, and the Debian
libraries the build linked must not be what the extension loads. The test writes its model with
the package's own writer (onnx_light._onnx_writer, no onnx package), runs it, checks the numbers against numpy, then
runs the README's Python quick start unchanged on that model.

    python smoke_test.py README.md
"""

import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def write_model(path, weight, bias):
    """y = Relu(x @ weight + bias), x: float[N, 4], opset 17, written by the package's own ONNX
    writer (the one the demo uses without onnx), so the wheel's copy of it is exercised too."""
    from onnx_light._onnx_writer import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["pre"]),
             helper.make_node("Relu", ["pre"], ["y"])]
    graph = helper.make_graph(nodes, "smoke", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", weight.shape[1]])],
                              [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def check_loaded_libraries(module_path):
    """Every library the extension loads is the system baseline or one the wheel bundles."""
    baseline = re.compile(r"^(linux-vdso|ld-linux[-\w]*|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libz)\.so")
    site = os.path.dirname(os.path.dirname(os.path.dirname(module_path)))
    text = subprocess.run(["ldd", module_path], check=True, capture_output=True, text=True).stdout
    bundled = 0
    for line in text.splitlines():
        name, _, rest = line.strip().partition(" => ")
        if baseline.match(os.path.basename(name)):
            continue
        path = os.path.realpath(rest.split(" (")[0].strip())
        assert path.startswith(site + os.sep), f"the extension loads {name} from outside the wheel: {line.strip()}"
        bundled += 1
    return bundled


def main():
    readme = os.path.abspath(sys.argv[1])
    assert importlib.util.find_spec("onnx") is None, "the smoke test must run without the onnx package"

    import onnx_light
    import onnx_light.runtime as runtime

    distribution = importlib.metadata.version("onnx-light-runtime")
    assert onnx_light.__version__ == runtime.__version__ == distribution, (
        onnx_light.__version__, runtime.__version__, distribution)
    bundled = check_loaded_libraries(onnx_light.onnx_py._onnxpykernels.__file__)

    rng = np.random.default_rng(0)
    weight = rng.standard_normal((4, 3)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        write_model("model.onnx", weight, bias)
        session = runtime.RuntimeSession("model.onnx")
        context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(17)))
        x = rng.standard_normal((5, 4)).astype(np.float32)
        y = np.asarray(session.run(context, {"x": x})["y"])
        np.testing.assert_allclose(y, np.maximum(x @ weight + bias, 0), rtol=1e-5, atol=1e-6)

        # The README's Python quick start, unchanged, against model.onnx (input x, output y).
        text = open(readme, encoding="utf-8").read()
        section = text[text.index("## Python quick start"):]
        snippet = re.search(r"```python\n(.*?)```", section, re.S).group(1)
        exec(compile(snippet, "README.md quick start", "exec"), {})
        assert os.path.getsize("run.json") > 0
    print(f"wheel smoke test passed: onnx_light {onnx_light.__version__}, {bundled} bundled libraries loaded")


if __name__ == "__main__":
    main()
