"""Text operators, onnx-light runtime against ONNX Runtime in one process.

    python benchmarks/bench_strings.py [--threads 1] [--cases tfidf,normsplit,regex,concat]

Prints a Markdown table of median wall times per run (ms) and the ratio ours / ORT (below 1 is
faster). Uses the alternating-block timing of bench_vs_ort.py. String feeds and outputs cross the
Python boundary in both runtimes (NumPy object arrays to std::string and back), so those cases
time the conversions as well as the kernels, as a Python caller sees them.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_vs_ort import run_case_table  # noqa: E402

WORDS = np.array(["the", "a", "cat", "dog", "sat", "on", "mat", "The", "Quick", "brown", "fox", "jumps", "over",
                  "lazy", "été", "naïve", "x1", "y22", "hello", "world"], dtype=object)


def model_of(nodes, inputs, outputs, opset):
    graph_inputs = [helper.make_tensor_value_info(n, TensorProto.STRING if a.dtype == object else
                                                  helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                    for n, a in inputs.items()]
    graph = helper.make_graph(nodes, "bench", graph_inputs, [helper.make_value_info(o, onnx.TypeProto()) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def tfidf_cases(rng):
    # 3000 unigrams and 2000 bigrams over a 4000-id vocabulary; 10k token ids per run.
    unigrams = rng.choice(4000, size=3000, replace=False)
    bigrams = set()
    while len(bigrams) < 2000:
        bigrams.add(tuple(rng.integers(0, 4000, size=2)))
    pool = [int(v) for v in unigrams] + [int(v) for pair in sorted(bigrams) for v in pair]
    attrs = {"min_gram_length": 1, "max_gram_length": 2, "ngram_counts": [0, 3000], "ngram_indexes": list(range(5000)),
             "pool_int64s": pool, "weights": rng.uniform(0.5, 2.0, 5000).astype(np.float32).tolist()}
    x = rng.integers(0, 4000, size=(10000,)).astype(np.int64)
    for mode, skip in [("TF", 0), ("TFIDF", 0), ("TFIDF", 3)]:
        node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode=mode, max_skip_count=skip, **attrs)
        yield (f"TfIdfVectorizer {mode} skip {skip}, 10k int64 ids, 5k n-gram pool",
               model_of([node], {"x": x}, ["y"], 9), {"x": x})
    xb = x.reshape(100, 100)
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TFIDF", max_skip_count=0, **attrs)
    yield "TfIdfVectorizer TFIDF, [100, 100] int64 ids, 5k pool", model_of([node], {"x": xb}, ["y"], 9), {"x": xb}
    vocab = np.array([f"w{i}" for i in range(4000)], dtype=object)
    sattrs = dict(attrs)
    del sattrs["pool_int64s"]
    sattrs["pool_strings"] = [str(vocab[i]) for i in pool]
    xs = vocab[x]
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TFIDF", max_skip_count=0, **sattrs)
    yield "TfIdfVectorizer TFIDF, 10k string tokens, 5k pool", model_of([node], {"x": xs}, ["y"], 9), {"x": xs}


def normalize_split_case(rng):
    # 10k short strings of 1-4 words: lower-case, drop two stopwords, split on whitespace.
    x = np.array([" ".join(rng.choice(WORDS, size=rng.integers(1, 5))) for _ in range(10000)], dtype=object)
    x[::50] = "the"
    nodes = [helper.make_node("StringNormalizer", ["x"], ["n"], case_change_action="LOWER", stopwords=["the", "a"],
                              locale="C.UTF-8"),  # ORT needs a locale this machine has
             helper.make_node("StringSplit", ["n"], ["y", "z"])]
    return "StringNormalizer + StringSplit, 10k short strings", model_of(nodes, {"x": x}, ["y", "z"], 20), {"x": x}


def regex_case(rng):
    names = rng.choice(WORDS, size=(100000, 2))
    domains = rng.choice(np.array(["gmail.com", "yahoo.com", "example.org"], dtype=object), size=100000)
    x = np.array([f"{a}.{b}@{d}" for (a, b), d in zip(names, domains)], dtype=object)
    node = helper.make_node("RegexFullMatch", ["x"], ["y"], pattern=r"[\w.\-]{0,25}@(yahoo|gmail)\.com")
    return "RegexFullMatch e-mail pattern, 100k strings", model_of([node], {"x": x}, ["y"], 20), {"x": x}


def concat_case(rng):
    a = rng.choice(WORDS, size=(1000, 100))
    b = np.array(["_suffix"], dtype=object)
    node = helper.make_node("StringConcat", ["a", "b"], ["y"])
    return "StringConcat [1000, 100] + [1] broadcast", model_of([node], {"a": a, "b": b}, ["y"], 20), {"a": a, "b": b}


def main():
    run_case_table(__doc__.splitlines()[0], {"tfidf": tfidf_cases, "normsplit": normalize_split_case, "regex": regex_case, "concat": concat_case}, digits=2)


if __name__ == "__main__":
    main()
