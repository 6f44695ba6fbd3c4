"""Operators served by onnx function bodies work where the onnx package cannot be imported: the
bodies are compiled into the runtime. The model is written here (with onnx); a subprocess in which
`import onnx` fails runs it, and runs `onnx-light info` and `onnx-light run` on it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import onnx
from onnx import TensorProto, helper

from node_check import random

CHILD = textwrap.dedent("""
    import json, sys
    sys.modules["onnx"] = None  # any `import onnx` now raises ImportError
    import numpy as np
    import onnx_light.runtime as runtime
    from onnx_light import cli

    try:
        import onnx  # noqa: F401
        raise SystemExit("onnx is importable in the child")
    except ImportError:
        pass
    path, feeds_path, out_path = sys.argv[1:4]
    with np.load(feeds_path) as data:
        feeds = {name: data[name] for name in data.files}
    session = runtime.RuntimeSession(path)
    ctx = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
    out = session.run(ctx, feeds)
    np.savez(out_path, **{name: np.asarray(value) for name, value in out.items()})
    codes = [cli.main(["info", path]), cli.main(["info", path, "--json"]),
             cli.main(["run", path, "--inputs", feeds_path])]
    print("CODES", json.dumps(codes))
""")


def loss_and_crop_model():
    """loss = SoftmaxCrossEntropyLoss(scores, labels, weights, ignore_index=1, reduction=sum),
    soft = Softsign(CenterCropPad(x, [2, 4]))."""
    nodes = [
        helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "labels", "weights"], ["loss"],
                         reduction="sum", ignore_index=1),
        helper.make_node("CenterCropPad", ["x", "crop"], ["cropped"]),
        helper.make_node("Softsign", ["cropped"], ["soft"]),
    ]
    graph = helper.make_graph(
        nodes, "functions",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [3, 4]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, [3]),
         helper.make_tensor_value_info("weights", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("soft", TensorProto.FLOAT, [2, 4])],
        initializer=[helper.make_tensor("crop", TensorProto.INT64, [2], [2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    return model


def expected(feeds):
    scores = feeds["scores"].astype(np.float64)
    log_prob = scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))
    loss = sum(-log_prob[i, c] * feeds["weights"][c] for i, c in enumerate(feeds["labels"]) if c != 1)
    # Crop rows 4 -> 2 (start 1), pad columns 3 -> 4 (0 before, 1 after).
    cropped = np.zeros((2, 4), np.float32)
    cropped[:, :3] = feeds["x"][1:3, :]
    return np.float32(loss), cropped / (1 + np.abs(cropped))


def test_function_bodies_run_without_the_onnx_package(tmp_path):
    model_path = tmp_path / "functions.onnx"
    onnx.save(loss_and_crop_model(), model_path)
    feeds = {"scores": random((3, 4), seed=1), "labels": np.array([0, 1, 3], np.int64),
             "weights": random((4,), low=0.5, high=1.5, seed=2), "x": random((4, 3), seed=3)}
    feeds_path = tmp_path / "feeds.npz"
    np.savez(feeds_path, **feeds)
    out_path = tmp_path / "out.npz"

    result = subprocess.run([sys.executable, "-c", CHILD, str(model_path), str(feeds_path), str(out_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    codes = json.loads(result.stdout.split("CODES", 1)[1])
    assert codes == [0, 0, 0], result.stdout + result.stderr

    loss, soft = expected(feeds)
    with np.load(out_path) as out:
        np.testing.assert_allclose(out["loss"], loss, rtol=1e-5)
        np.testing.assert_allclose(out["soft"], soft, rtol=1e-6)

    lines = result.stdout.splitlines()
    for op in ("SoftmaxCrossEntropyLoss", "CenterCropPad", "Softsign"):
        row = [line for line in lines if line.split()[:1] == [op]]
        assert row and "supported (function body)" in row[0], (op, row)
    assert "every operator is supported; the session builds" in result.stdout
    report = json.loads(result.stdout[result.stdout.index("{\n"):result.stdout.index("\n}\n") + 2])
    assert report["supported"] is True
    assert {op["op_type"]: op["status"] for op in report["operators"]}["Softsign"] == "function_body"
