"""session.inputs / outputs (runtime.ValueInfo) and session.metadata (runtime.ModelMetadata),
checked against what the onnx package wrote and what ONNX Runtime reports for the same model."""

import json

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

import onnx_light.runtime as runtime


def described_model():
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT64),
         helper.make_node("Identity", ["flags"], ["flags_out"])],
        "the_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, None]),
         helper.make_tensor_value_info("flags", TensorProto.BOOL, None)],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["batch", 3, "width"]),
         helper.make_tensor_value_info("flags_out", TensorProto.BOOL, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23), helper.make_opsetid("ai.onnx.ml", 3)],
                              producer_name="test-producer", producer_version="9.1", doc_string="what it does",
                              domain="org.example", model_version=7)
    model.ir_version = 10
    helper.set_model_props(model, {"author": "someone", "license": "MIT"})
    return model.SerializeToString()


def test_inputs_and_outputs_read_like_ort():
    model = described_model()
    session = runtime.RuntimeSession(model)
    reference = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for ours, theirs in ((session.inputs, reference.get_inputs()), (session.outputs, reference.get_outputs())):
        assert [v.name for v in ours] == [v.name for v in theirs]
        assert [v.type for v in ours] == [v.type for v in theirs]
        for v, t in zip(ours, theirs):
            if v.shape is not None:  # ORT reports [] for an undeclared rank; None says "unknown"
                assert v.shape == t.shape
    x, flags = session.get_inputs()
    assert x.shape == ["batch", 3, None] and x.dims == [-1, 3, -1]
    assert x.type == "tensor(float)" and x.dtype == np.float32 and x.data_type == TensorProto.FLOAT
    assert x.kind == "tensor"
    assert flags.shape is None and flags.dims is None and flags.dtype == np.bool_
    y = session.get_outputs()[0]
    assert y.shape == ["batch", 3, "width"] and y.type == "tensor(int64)" and y.dtype == np.int64
    # Code written against the dictionaries earlier versions returned keeps working.
    assert x["name"] == "x" and x["data_type"] == TensorProto.FLOAT and x["kind"] == "tensor"
    assert "shape" in x and dict(x)["type"] == "tensor(float)"
    assert repr(x) == "ValueInfo(name='x', type='tensor(float)', shape=['batch', 3, None])"


def test_type_strings_of_other_kinds():
    graph = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["s_out"]), helper.make_node("Identity", ["o"], ["o_out"])], "g",
        [helper.make_value_info("s", helper.make_sequence_type_proto(
            helper.make_tensor_type_proto(TensorProto.INT64, [2]))),
         helper.make_value_info("o", helper.make_optional_type_proto(
             helper.make_tensor_type_proto(TensorProto.DOUBLE, [])))],
        [helper.make_value_info("s_out", helper.make_sequence_type_proto(
            helper.make_tensor_type_proto(TensorProto.INT64, [2]))),
         helper.make_value_info("o_out", helper.make_optional_type_proto(
             helper.make_tensor_type_proto(TensorProto.DOUBLE, [])))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    session = runtime.RuntimeSession(model.SerializeToString())
    s, o = session.inputs
    assert (s.kind, s.type, s.dtype, s.shape) == ("sequence", "seq(tensor(int64))", None, None)
    assert (o.kind, o.type) == ("optional", "optional(tensor(double))")


def test_model_metadata():
    model = described_model()
    meta = runtime.RuntimeSession(model).metadata
    assert isinstance(meta, runtime.ModelMetadata)
    assert meta.producer_name == "test-producer" and meta.producer_version == "9.1"
    assert meta.doc_string == "what it does" and meta.domain == "org.example" and meta.model_version == 7
    assert meta.graph_name == "the_graph" and meta.ir_version == 10
    assert meta.opset_imports == {"": 23, "ai.onnx.ml": 3}
    assert meta.metadata_props == {"author": "someone", "license": "MIT"}
    reference = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).get_modelmeta()
    assert meta.custom_metadata_map == reference.custom_metadata_map
    assert (meta.description, meta.version, meta.producer_name, meta.graph_name) == (
        reference.description, reference.version, reference.producer_name, reference.graph_name)
    assert runtime.RuntimeSession(model).get_modelmeta() == meta
    info = runtime.model_info(model)
    assert info["metadata_props"] == {"author": "someone", "license": "MIT"}
    assert [v.shape for v in info["inputs"]] == [["batch", 3, None], None]


def test_cli_json_report_holds_the_descriptions(tmp_path):
    import subprocess
    import sys
    path = tmp_path / "m.onnx"
    path.write_bytes(described_model())
    done = subprocess.run([sys.executable, "-m", "onnx_light.cli", "info", "--json", str(path)],
                          capture_output=True, text=True, timeout=120)
    report = json.loads(done.stdout)
    assert report["inputs"][0] == {"name": "x", "kind": "tensor", "data_type": 1, "shape": [-1, 3, -1],
                                   "symbolic_shape": ["batch", 3, None], "type": "tensor(float)"}
