"""Map values and the ai.onnx.ml map operators: ZipMap, DictVectorizer and CastMap.

Node tests build graphs with onnx.helper and compare with ONNX Runtime (which implements all
three on the CPU); where ORT cannot be asked (it refuses empty dicts and map(int64, string) feeds
from Python) the test states the definition it checks (docs/ml-preprocessing.md, "Maps").
Model tests convert scikit-learn classifiers with skl2onnx's default ZipMap and compare the
outputs, a list of dicts, with ORT's.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper

from node_check import run_ort
from onnx_light import runtime

ML = "ai.onnx.ml"


def map_type(key, value):
    return helper.make_map_type_proto(key, helper.make_tensor_type_proto(value, None))


def map_model(op_type, input_type, output_type, **attrs):
    node = helper.make_node(op_type, ["x"], ["y"], domain=ML, **attrs)
    graph = helper.make_graph([node], "maps", [helper.make_value_info("x", input_type)],
                              [helper.make_value_info("y", output_type)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)])
    model.ir_version = 10
    return model


def run(model, feeds, context=None):
    ctx = context or runtime.RuntimeContext()
    out = runtime.RuntimeSession(model).run(ctx, feeds)
    return [out[o.name] for o in model.graph.output]


def as_array(value):
    return value.numpy() if hasattr(value, "numpy") else np.asarray(value)


def zipmap_model(labels):
    key = T.STRING if isinstance(labels[0], str) else T.INT64
    attr = {"classlabels_strings": labels} if key == T.STRING else {"classlabels_int64s": labels}
    return map_model("ZipMap", helper.make_tensor_type_proto(T.FLOAT, None),
                     helper.make_sequence_type_proto(map_type(key, T.FLOAT)), **attr)


def assert_maps_equal(actual, expected):
    assert isinstance(actual, list) and len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert isinstance(a, dict)
        assert list(a) == list(e)  # the same keys in the same (sorted) order
        for k in e:
            assert a[k] == pytest.approx(e[k], rel=1e-6, abs=1e-7)


# ---- ZipMap -------------------------------------------------------------------------------------

@pytest.mark.parametrize("labels", [["b", "a", "c"], [7, -2, 3], ["only"]])
@pytest.mark.parametrize("shape", [(4, None), (None,), (0, None)])
def test_zipmap_matches_ort(labels, shape):
    width = len(labels)
    full = tuple(width if d is None else d for d in shape)
    x = np.random.default_rng(0).random(full).astype(np.float32)
    model = zipmap_model(labels)
    ours = run(model, {"x": x})[0]
    assert_maps_equal(ours, run_ort(model, {"x": x})[0])


def test_zipmap_errors():
    model = zipmap_model(["a", "b", "c"])
    with pytest.raises(runtime.Error, match="has 4 columns but there are 3 class labels"):
        run(model, {"x": np.zeros((2, 4), np.float32)})
    with pytest.raises(runtime.Error, match=r"must be \[N, C\] or \[C\]"):
        run(model, {"x": np.zeros((1, 2, 3), np.float32)})
    with pytest.raises(runtime.Error, match="appears more than once"):
        runtime.RuntimeSession(zipmap_model(["a", "b", "a"]))
    empty = zipmap_model(["a"])
    del empty.graph.node[0].attribute[:]
    empty.graph.node[0].attribute.append(helper.make_attribute("classlabels_strings", [], attr_type=onnx.AttributeProto.STRINGS))
    with pytest.raises(runtime.Error, match="the class labels must not be empty"):
        runtime.RuntimeSession(empty)


def test_zipmap_kernel_usage_and_events():
    model = zipmap_model([3, 1, 2])
    ctx = runtime.RuntimeContext(events_enabled=True)
    ctx.set_kernel_usage_enabled(True)
    run(model, {"x": np.ones((5, 3), np.float32)}, ctx)
    assert "ZipMap/int64/rows" in ctx.get_kernel_usage()
    adds = [e for e in ctx.events() if e.name == "y" and e.action == runtime.RuntimeEventAction.kAdd]
    assert adds  # the node output, then the graph output stored in the context
    add = adds[-1]
    assert add.value_kind == "map sequence"
    assert add.data_type == T.FLOAT and add.shape == (5,)
    assert add.as_dict()["value_kind"] == "map sequence"


# ---- DictVectorizer -----------------------------------------------------------------------------

DV_CASES = [
    # (key type, value type, vocabulary, feed)
    (T.STRING, T.FLOAT, ["a", "b", "c"], {"c": 3.5, "a": 1.0, "zz": 9.0}),
    (T.STRING, T.DOUBLE, ["x", "y"], {"y": -2.25}),
    (T.STRING, T.INT64, ["p", "q", "r"], {"r": 4, "p": -7}),
    (T.INT64, T.FLOAT, [5, 1, 3], {1: 0.5, 3: 2.0, 99: 1.0}),
    (T.INT64, T.DOUBLE, [10, 20], {20: 1.5}),
]


NUMPY_OF = {T.FLOAT: np.float32, T.DOUBLE: np.float64, T.INT64: np.int64}


@pytest.mark.parametrize("key,value,vocabulary,feed", DV_CASES)
def test_dict_vectorizer(key, value, vocabulary, feed):
    attr = {"string_vocabulary": vocabulary} if key == T.STRING else {"int64_vocabulary": vocabulary}
    model = map_model("DictVectorizer", map_type(key, value), helper.make_tensor_type_proto(value, None), **attr)
    ours = as_array(run(model, {"x": feed})[0])
    if value == T.FLOAT:
        expected = run_ort(model, {"x": feed})[0]
    else:
        # ORT's Python binding feeds dicts as map(..., float) only, so these value types are
        # checked against the definition (ORT's kernel for them computes the same).
        expected = np.array([[feed.get(k, 0) for k in vocabulary]], dtype=NUMPY_OF[value])
    assert ours.shape == expected.shape == (1, len(vocabulary))
    assert ours.dtype == expected.dtype
    np.testing.assert_array_equal(ours, expected)


def test_dict_vectorizer_empty_map_and_string_values():
    # ORT refuses an empty dict and cannot take map(int64, string) from Python; ours: absent keys
    # give the value type's zero ("" for strings).
    model = map_model("DictVectorizer", map_type(T.STRING, T.FLOAT), helper.make_tensor_type_proto(T.FLOAT, None),
                      string_vocabulary=["a", "b"])
    np.testing.assert_array_equal(as_array(run(model, {"x": {}})[0]), np.zeros((1, 2), np.float32))
    model = map_model("DictVectorizer", map_type(T.INT64, T.STRING), helper.make_tensor_type_proto(T.STRING, None),
                      int64_vocabulary=[4, 2, 9])
    out = as_array(run(model, {"x": {2: "two", 9: "nine", 5: "five"}})[0])
    assert out.tolist() == [["", "two", "nine"]]


def test_dict_vectorizer_kernel_usage():
    model = map_model("DictVectorizer", map_type(T.STRING, T.DOUBLE), helper.make_tensor_type_proto(T.DOUBLE, None),
                      string_vocabulary=["a"])
    ctx = runtime.RuntimeContext()
    ctx.set_kernel_usage_enabled(True)
    run(model, {"x": {"a": 1.0}}, ctx)
    assert "DictVectorizer/float64/search" in ctx.get_kernel_usage()


# ---- CastMap ------------------------------------------------------------------------------------

OUT_TYPE = {"TO_FLOAT": T.FLOAT, "TO_STRING": T.STRING, "TO_INT64": T.INT64}


@pytest.mark.parametrize("cast_to", list(OUT_TYPE))
@pytest.mark.parametrize("form,max_map", [("DENSE", 1), ("SPARSE", 6), ("SPARSE", 3)])
def test_cast_map_float_values(cast_to, form, max_map):
    feed = {1: 2.5, 4: -1.75, 0: 3.0} if max_map > 4 else {1: 2.5, 0: -3.25}
    model = map_model("CastMap", map_type(T.INT64, T.FLOAT), helper.make_tensor_type_proto(OUT_TYPE[cast_to], None),
                      cast_to=cast_to, map_form=form, max_map=max_map)
    ours = as_array(run(model, {"x": feed})[0])
    expected = run_ort(model, {"x": feed})[0]
    if cast_to == "TO_STRING" and form == "SPARSE":
        # ORT pads strings with "0.f"; ours with the cast of 0.0f like every other type.
        expected = np.where(expected == "0.f", "0.000000", expected)
    assert ours.shape == expected.shape
    np.testing.assert_array_equal(ours.astype(expected.dtype), expected)


def test_cast_map_string_values():
    # map(int64, string) cannot be fed to ORT from Python; ours parses whole numbers only.
    def model(cast_to, form="DENSE", max_map=1):
        return map_model("CastMap", map_type(T.INT64, T.STRING),
                         helper.make_tensor_type_proto(OUT_TYPE[cast_to], None),
                         cast_to=cast_to, map_form=form, max_map=max_map)

    feed = {3: "7", 1: "-2"}
    assert as_array(run(model("TO_FLOAT"), {"x": {3: "7.5", 1: "-2"}})[0]).tolist() == [[-2.0, 7.5]]
    assert as_array(run(model("TO_INT64"), {"x": feed})[0]).tolist() == [[-2, 7]]
    assert as_array(run(model("TO_STRING", "SPARSE", 4), {"x": feed})[0]).tolist() == [
        ["0.000000", "-2", "0.000000", "7"]]
    with pytest.raises(runtime.Error, match="the value 'x' of map key 1 is not a float"):
        run(model("TO_FLOAT"), {"x": {1: "x"}})
    with pytest.raises(runtime.Error, match="the value '2.5' of map key 1 is not an integer"):
        run(model("TO_INT64"), {"x": {1: "2.5"}})


def test_cast_map_errors_and_usage():
    model = map_model("CastMap", map_type(T.INT64, T.FLOAT), helper.make_tensor_type_proto(T.FLOAT, None),
                      map_form="SPARSE", max_map=2)
    with pytest.raises(runtime.Error, match=r"map key 5 is outside \[0, max_map = 2\)"):
        run(model, {"x": {5: 1.0}})
    to_int = map_model("CastMap", map_type(T.INT64, T.FLOAT), helper.make_tensor_type_proto(T.INT64, None),
                       cast_to="TO_INT64")
    with pytest.raises(runtime.Error, match="has no int64 value"):
        run(to_int, {"x": {0: float("nan")}})
    with pytest.raises(runtime.Error, match="cast_to"):
        runtime.RuntimeSession(map_model("CastMap", map_type(T.INT64, T.FLOAT),
                                         helper.make_tensor_type_proto(T.FLOAT, None), cast_to="TO_BYTES"))
    ctx = runtime.RuntimeContext()
    ctx.set_kernel_usage_enabled(True)
    run(model, {"x": {1: 1.0}}, ctx)
    assert "CastMap/float32/sparse" in ctx.get_kernel_usage()


# ---- map feeds, outputs and events --------------------------------------------------------------

def identity_map_model(key=T.STRING, value=T.FLOAT):
    """A graph whose map input is also its output (no node)."""
    graph = helper.make_graph([], "m", [helper.make_value_info("x", map_type(key, value))],
                              [helper.make_value_info("x", map_type(key, value))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def test_map_feed_round_trip_sorted_and_cast():
    out = run(identity_map_model(), {"x": {"b": 2, "a": 1.5, "c": np.float64(-1)}})[0]
    assert out == {"a": 1.5, "b": 2.0, "c": -1.0}
    assert list(out) == ["a", "b", "c"]
    out = run(identity_map_model(T.INT64, T.INT64), {"x": {3: 30, -1: 10}})[0]
    assert out == {-1: 10, 3: 30} and all(isinstance(v, int) for v in out.values())
    assert run(identity_map_model(), {"x": {}})[0] == {}


@pytest.mark.parametrize("feed,error,needle", [
    ({1: 1.0}, runtime.Error, "expected map(string, float32), got map(int64, float32)"),
    ({"a": "text"}, runtime.Error, "expected map(string, float32), got map(string, string)"),
    ({"a": 1.0, 2: 1.0}, TypeError, "map keys must be all int or all str"),
    ({1.5: 1.0}, TypeError, "map keys must be all int or all str"),
    ({"a": None}, TypeError, "map values must be numbers or str, got NoneType for key 'a'"),
    ({"a": [1.0]}, TypeError, "map values must be numbers or str"),
    ({"a": 1.0, "b": "x"}, TypeError, "map values must be all numbers or all str"),
    (np.zeros(2, np.float32), runtime.Error, "input 'x': expected map(string, float32), got tensor"),
])
def test_map_feed_errors(feed, error, needle):
    with pytest.raises(error) as info:
        run(identity_map_model(), {"x": feed})
    assert needle in str(info.value)
    assert "'x'" in str(info.value)


def test_map_feed_int_key_out_of_range():
    with pytest.raises(ValueError, match="map key 18446744073709551616 does not fit int64"):
        run(identity_map_model(T.INT64, T.FLOAT), {"x": {2**64: 1.0}})


def test_sequence_of_maps_feed_and_output():
    seq = helper.make_sequence_type_proto(map_type(T.INT64, T.FLOAT))
    graph = helper.make_graph([], "s", [helper.make_value_info("x", seq)], [helper.make_value_info("x", seq)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    out = run(model, {"x": [{2: 1, 1: 2}, {}]})[0]
    assert out == [{1: 2.0, 2: 1.0}, {}]
    with pytest.raises(TypeError, match="a sequence of maps holds dicts only"):
        run(model, {"x": [{1: 1.0}, np.zeros(2, np.float32)]})


def test_map_events_and_context_values():
    ctx = runtime.RuntimeContext(events_enabled=True)
    run(identity_map_model(), {"x": {"a": 1.0, "b": 2.0, "c": 3.0}}, ctx)
    (add,) = [e for e in ctx.events() if e.name == "x" and e.action == runtime.RuntimeEventAction.kAdd]
    assert add.value_kind == "map"
    assert add.data_type == T.FLOAT and add.shape == (3,)
    assert add.kind == "input"
    assert ctx.values()["x"] == {"a": 1.0, "b": 2.0, "c": 3.0}
    ctx.put("m", {7: 1.0})
    assert ctx.get("m") == {7: 1.0}
    put = [e for e in ctx.events() if e.name == "m"][-1]
    assert put.as_dict()["value_kind"] == "map" and put.shape == (1,)


def test_map_event_in_chrome_trace(tmp_path):
    from onnx_light import trace

    ctx = runtime.RuntimeContext(events_enabled=True)
    run(zipmap_model(["a", "b"]), {"x": np.ones((2, 2), np.float32)}, ctx)
    path = tmp_path / "trace.json"
    trace.export_chrome_trace(ctx.events(), str(path), include_value_events=True)
    text = path.read_text()
    assert '"value_kind":"map sequence"' in text


# ---- scikit-learn classifiers with the default ZipMap -------------------------------------------

@pytest.fixture
def skl2onnx():
    pytest.importorskip("sklearn", reason="scikit-learn is pinned in constraints.txt; setup.sh installs it")
    return pytest.importorskip("skl2onnx", reason="skl2onnx is pinned in constraints.txt; setup.sh installs it")


def to_onnx(estimator, sample):
    import skl2onnx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return skl2onnx.to_onnx(estimator, sample, target_opset={"": 17, "ai.onnx.ml": 3})


def assert_classifier_outputs(ours, expected):
    np.testing.assert_array_equal(as_array(ours[0]), expected[0])
    assert_maps_equal(ours[1], expected[1])
    assert all(isinstance(k, type(next(iter(expected[1][0])))) for k in ours[1][0])


def classification(seed=0, n_classes=3):
    from sklearn.datasets import make_classification

    x, y = make_classification(200, 8, n_informative=5, n_classes=n_classes, random_state=seed)
    return x.astype(np.float32), y


@pytest.mark.parametrize("labels", ["int", "str"])
@pytest.mark.parametrize("name", ["logistic_regression", "random_forest"])
def test_sklearn_classifier_with_zipmap(name, labels, skl2onnx):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression

    x, y = classification(seed=1)
    if labels == "str":
        y = np.array(["cat", "dog", "emu"])[y]
    estimator = (LogisticRegression(max_iter=1000) if name == "logistic_regression"
                 else RandomForestClassifier(n_estimators=10, max_depth=6, random_state=0)).fit(x, y)
    model = to_onnx(estimator, x[:1])
    assert any(n.op_type == "ZipMap" for n in model.graph.node)
    sess = runtime.RuntimeSession(model)
    ours = sess.run(None, {"X": x})
    expected = run_ort(model, {"X": x})
    assert_classifier_outputs(ours, expected)
    label = ours[0].numpy()[0]
    assert ours[1][0][label] == max(ours[1][0].values())
    np.testing.assert_allclose([[row[c] for c in estimator.classes_] for row in ours[1]],
                               estimator.predict_proba(x), atol=1e-5)


def test_sklearn_pipeline_dict_vectorizer(skl2onnx):
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from skl2onnx.common.data_types import DictionaryType, FloatTensorType, StringTensorType

    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "eps"]
    rows = [{w: float(rng.integers(0, 4)) for w in rng.choice(words, size=3, replace=False)} for _ in range(60)]
    y = np.array([int(r.get("alpha", 0) + r.get("beta", 0) > 2) for r in rows])
    pipeline = make_pipeline(DictVectorizer(sparse=False), LogisticRegression(max_iter=1000)).fit(rows, y)
    import skl2onnx as s2o

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = s2o.convert_sklearn(pipeline, initial_types=[("input", DictionaryType(StringTensorType([1]),
                                                                                          FloatTensorType([1])))],
                                    target_opset={"": 17, "ai.onnx.ml": 3})
    assert {"DictVectorizer", "ZipMap"} <= {n.op_type for n in model.graph.node}
    sess = runtime.RuntimeSession(model)
    for row in rows[:20]:
        ours = sess.run(None, {"input": row})
        expected = run_ort(model, {"input": row})
        assert_classifier_outputs(ours, expected)
        assert as_array(ours[0])[0] == pipeline.predict([row])[0]


def test_custom_kernel_takes_and_returns_maps():
    seen = []

    def swap(m):
        seen.append(m)
        return {str(v): float(k) for k, v in m.items()}

    kernels = runtime.KernelContext(runtime.default_opset(23))
    runtime.register_kernel("example.maps", "Swap", swap, kernel_context=kernels)
    node = helper.make_node("Swap", ["x"], ["y"], domain="example.maps")
    graph = helper.make_graph([node], "swap", [helper.make_value_info("x", map_type(T.INT64, T.STRING))],
                              [helper.make_value_info("y", map_type(T.STRING, T.FLOAT))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("example.maps", 1)])
    model.ir_version = 10
    session = runtime.RuntimeSession(model, runtime.RuntimeSessionOptions(kernel_context=kernels))
    out = session.run(runtime.RuntimeContext(kernels), {"x": {2: "b", 1: "a"}})
    assert seen == [{1: "a", 2: "b"}]
    assert out["y"] == {"a": 1.0, "b": 2.0}


def test_map_feed_duplicate_keys():
    # A Python dict cannot repeat a key unless two keys hash apart yet convert to one int64.
    class Key(int):
        def __hash__(self):
            return id(self)

    with pytest.raises(ValueError, match="feed 'x': map key 1 appears more than once"):
        run(identity_map_model(T.INT64, T.FLOAT), {"x": {Key(1): 1.0, Key(1): 2.0}})
