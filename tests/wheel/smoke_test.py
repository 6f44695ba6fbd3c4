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


def write_tiff(pixels):
    """An uncompressed little-endian RGB TIFF of `pixels` (uint8 [H, W, 3]), written by hand:
    the clean environment has no Pillow."""
    import struct

    height, width, _ = pixels.shape
    entries = [(256, 3, 1, width), (257, 3, 1, height), (258, 3, 3, 134), (259, 3, 1, 1), (262, 3, 1, 2),
               (273, 4, 1, 140), (277, 3, 1, 3), (278, 4, 1, height), (279, 4, 1, pixels.size), (284, 3, 1, 1)]
    ifd = struct.pack("<H", len(entries))
    for tag, kind, count, value in entries:
        ifd += struct.pack("<HHII", tag, kind, count, value)
    data = b"II*\0" + struct.pack("<I", 8) + ifd + struct.pack("<I", 0) + struct.pack("<3H", 8, 8, 8)
    assert len(data) == 140
    return data + pixels.tobytes()


def write_image_decoder_model(path):
    from onnx_light._onnx_writer import TensorProto, helper

    graph = helper.make_graph([helper.make_node("ImageDecoder", ["encoded"], ["image"])], "decode",
                              [helper.make_tensor_value_info("encoded", TensorProto.UINT8, ["N"])],
                              [helper.make_tensor_value_info("image", TensorProto.UINT8, ["H", "W", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def check_tiff(runtime, rng):
    """The wheel does not bundle libtiff (Debian's needs GPL JBIG-KIT): it loads the host's
    libtiff.so.6 when a TIFF is first decoded, and says what to install when it cannot."""
    write_image_decoder_model("decode.onnx")
    pixels = rng.integers(0, 256, (3, 5, 3), dtype=np.uint8)
    encoded = np.frombuffer(write_tiff(pixels), dtype=np.uint8)
    image = runtime.RuntimeSession("decode.onnx").run({"encoded": encoded})["image"]
    np.testing.assert_array_equal(np.asarray(image), pixels)
    np.save("encoded.npy", encoded)
    script = ("import numpy as np, onnx_light.runtime as rt\n"
              "try:\n"
              "    rt.RuntimeSession('decode.onnx').run({'encoded': np.load('encoded.npy')})\n"
              "except Exception as error:\n"
              "    print(error)\n")
    env = dict(os.environ, ONNX_LIGHT_LIBTIFF="/nonexistent/libtiff.so.6")
    message = subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True,
                             text=True).stdout
    assert "/nonexistent/libtiff.so.6 could not be used" in message and "libtiff6" in message, message


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
        check_tiff(runtime, rng)
    print(f"wheel smoke test passed: onnx_light {onnx_light.__version__}, {bundled} bundled libraries loaded")


if __name__ == "__main__":
    main()
