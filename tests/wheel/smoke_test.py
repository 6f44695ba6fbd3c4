"""Smoke test of an installed wheel, run in a clean virtual environment by scripts/test.sh.

The environment holds only numpy and the wheel: no onnx, no compiler needed, and the Debian
libraries the build linked must not be what the extension loads. The test writes its model with a
few lines of protobuf encoding (no onnx package), runs it, checks the numbers against numpy, then
runs the README's Python quick start unchanged on that model.

    python smoke_test.py README.md
"""

import importlib.metadata
import importlib.util
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np


def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, payload):
    """A length-delimited field (strings, bytes, sub-messages)."""
    if isinstance(payload, str):
        payload = payload.encode()
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int_field(number, value):
    return _varint(number << 3) + _varint(value)


def _value_info(name, dims):
    shape = b"".join(_field(1, _field(2, d) if isinstance(d, str) else _int_field(1, d)) for d in dims)
    tensor_type = _int_field(1, 1) + _field(2, shape)  # elem_type FLOAT
    return _field(1, name) + _field(2, _field(1, tensor_type))


def _initializer(name, array):
    array = np.ascontiguousarray(array, dtype=np.float32)
    dims = b"".join(_int_field(1, d) for d in array.shape)
    return dims + _int_field(2, 1) + _field(8, name) + _field(9, array.tobytes())


def _node(op_type, inputs, outputs):
    return b"".join(_field(1, i) for i in inputs) + b"".join(_field(2, o) for o in outputs) + _field(4, op_type)


def write_model(path, weight, bias):
    """y = Relu(x @ weight + bias), x: float[N, 4], opset 17."""
    graph = (
        _field(1, _node("MatMul", ["x", "w"], ["xw"]))
        + _field(1, _node("Add", ["xw", "b"], ["pre"]))
        + _field(1, _node("Relu", ["pre"], ["y"]))
        + _field(2, "smoke")
        + _field(5, _initializer("w", weight))
        + _field(5, _initializer("b", bias))
        + _field(11, _value_info("x", ["N", 4]))
        + _field(12, _value_info("y", ["N", weight.shape[1]]))
    )
    model = _int_field(1, 8) + _field(7, graph) + _field(8, _field(1, "") + _int_field(2, 17))
    with open(path, "wb") as f:
        f.write(model)


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
