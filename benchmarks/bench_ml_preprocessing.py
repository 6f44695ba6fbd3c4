"""ai.onnx.ml preprocessing and encoders, onnx-light runtime against ONNX Runtime in one process.

    python benchmarks/bench_ml_preprocessing.py [--threads 1] [--repeat 200] [--cases pipeline,...]
                                                [--only ZipMap]

Cases: a scikit-learn ColumnTransformer (StandardScaler on 4 numeric columns, OneHotEncoder on 3
integer-coded columns) converted by skl2onnx, at batch 1 and 10000; LabelEncoder string -> int64
over 100k strings (1000 classes); CategoryMapper and OneHotEncoder on strings; the map operators:
a LogisticRegression converted with skl2onnx's default ZipMap at batch 1 and 10000 (the output is
a list of dicts, built by each runtime's Python binding), and a DictVectorizer + LogisticRegression
pipeline fed one dict. Prints a Markdown
table of median wall times per run (ms) and the ratio ours / ORT (below 1 is faster). Uses the
alternating-block timing and the command line of bench_vs_ort.py (run_case_table); cases with
50k or more input elements run a tenth of --repeat (at least 10).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_vs_ort import run_case_table  # noqa: E402

ML = "ai.onnx.ml"


def ml_node_model(op, inputs, attrs, ml_opset):
    node = helper.make_node(op, list(inputs), ["y"], domain=ML, **attrs)
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items()]
    graph = helper.make_graph([node], op, graph_inputs, [helper.make_value_info("y", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid(ML, ml_opset)])
    model.ir_version = 10
    return model


def pipeline_cases(rng):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    from skl2onnx import to_onnx

    def data(rows):
        numeric = rng.normal(size=(rows, 4)) * 3 + 1
        codes = rng.integers(0, 12, size=(rows, 3))
        return np.concatenate([numeric, codes], axis=1).astype(np.float32)

    ct = ColumnTransformer([("num", StandardScaler(), [0, 1, 2, 3]),
                            ("cat", OneHotEncoder(handle_unknown="ignore"), [4, 5, 6])],
                           sparse_threshold=0).fit(data(2000))
    model = to_onnx(ct, data(1))
    name = model.graph.input[0].name
    for rows in (1, 10000):
        yield f"StandardScaler + OneHotEncoder pipeline, batch {rows}", model, {name: data(rows)}


def label_encoder_case(rng):
    classes = [f"class_{i:04d}" for i in range(1000)]
    x = np.array(classes, dtype=object)[rng.integers(0, 1000, size=100_000)]
    attrs = {"keys_strings": classes, "values_int64s": list(range(1000))}
    return "LabelEncoder string -> int64, 100k strings", ml_node_model("LabelEncoder", {"x": x}, attrs, 2), {"x": x}


def category_mapper_case(rng):
    classes = [f"c{i}" for i in range(1000)]
    x = np.array(classes, dtype=object)[rng.integers(0, 1000, size=100_000)]
    attrs = {"cats_strings": classes, "cats_int64s": list(range(1000))}
    return "CategoryMapper string -> int64, 100k strings", ml_node_model("CategoryMapper", {"x": x}, attrs, 1), {"x": x}


def one_hot_strings_case(rng):
    words = ["red", "green", "blue", "teal", "mauve", "ochre", "sand", "plum"]
    x = np.array(words, dtype=object)[rng.integers(0, 8, size=(10000, 1))]
    attrs = {"cats_strings": words}
    return "OneHotEncoder strings, 10000 x 1, 8 categories", ml_node_model("OneHotEncoder", {"x": x}, attrs, 1), {"x": x}


def zipmap_cases(rng):
    import warnings

    from sklearn.linear_model import LogisticRegression
    from skl2onnx import to_onnx

    x = rng.normal(size=(2000, 8)).astype(np.float32)
    y = np.array(["cat", "dog", "emu"])[rng.integers(0, 3, size=2000)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_onnx(LogisticRegression(max_iter=500).fit(x, y), x[:1], target_opset={"": 17, ML: 3})
    for rows in (1, 10000):
        yield (f"LogisticRegression + ZipMap, batch {rows}, 3 string labels", model,
               {"X": rng.normal(size=(rows, 8)).astype(np.float32)})


def dict_vectorizer_case(rng):
    import warnings

    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import DictionaryType, FloatTensorType, StringTensorType

    words = [f"w{i}" for i in range(50)]
    rows = [{w: float(rng.integers(1, 5)) for w in rng.choice(words, size=10, replace=False)} for _ in range(500)]
    y = rng.integers(0, 2, size=500)
    pipeline = make_pipeline(DictVectorizer(sparse=False), LogisticRegression(max_iter=500)).fit(rows, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = convert_sklearn(pipeline, initial_types=[("input", DictionaryType(StringTensorType([1]),
                                                                                  FloatTensorType([1])))],
                                target_opset={"": 17, ML: 3})
    return "DictVectorizer (50 words) + LogisticRegression + ZipMap, one dict of 10", model, {"input": rows[0]}


def repeat_for(feeds, repeat):
    size = getattr(next(iter(feeds.values())), "size", 1)
    return repeat if size < 50_000 else max(10, repeat // 10)


def main():
    families = {"pipeline": pipeline_cases, "label_encoder": label_encoder_case,
                "category_mapper": category_mapper_case, "one_hot_strings": one_hot_strings_case,
                "zipmap": zipmap_cases, "dict_vectorizer": dict_vectorizer_case}
    run_case_table(__doc__.splitlines()[0], families, repeat=200, digits=3, repeat_for=repeat_for)


if __name__ == "__main__":
    main()
