"""ai.onnx.ml models converted from scikit-learn, onnx-light runtime against ONNX Runtime.

    python benchmarks/bench_ml.py [--threads 1] [--cases rf,gbr,logreg]

Fits the estimators on fixed random data, converts them with skl2onnx (zipmap off) and prints a
Markdown table of median wall times per run (ms) and the ratio ours / ORT (below 1 is faster),
with the alternating-block timing of bench_vs_ort.py. Needs scikit-learn and skl2onnx (pinned in
constraints.txt).
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_vs_ort import run_case_table  # noqa: E402


def convert(estimator, x, classifier):
    from skl2onnx import to_onnx

    options = {id(estimator): {"zipmap": False}} if classifier else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_onnx(estimator, x[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3})


def feeds_for(model, x):
    return {model.graph.input[0].name: x}


def rf_cases(rng):
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier

    x, y = make_classification(4000, 20, n_informative=12, n_classes=3, random_state=0)
    x = x.astype(np.float32)
    rf = RandomForestClassifier(n_estimators=300, max_depth=12, random_state=0, n_jobs=1).fit(x, y)
    model = convert(rf, x, classifier=True)
    nodes = sum(len(e.tree_.feature) for e in rf.estimators_)
    for batch in (1, 1000):
        rows = x[rng.integers(0, len(x), batch)]
        yield f"RandomForestClassifier 300 trees depth 12 ({nodes} nodes), 20 features, 3 classes, batch {batch}", \
            model, feeds_for(model, rows)


def gbr_cases(rng):
    from sklearn.datasets import make_regression
    from sklearn.ensemble import GradientBoostingRegressor

    x, y = make_regression(4000, 20, n_informative=12, noise=1.0, random_state=0)
    x = x.astype(np.float32)
    gbr = GradientBoostingRegressor(n_estimators=300, max_depth=5, random_state=0).fit(x, y)
    model = convert(gbr, x, classifier=False)
    for batch in (1, 1000):
        rows = x[rng.integers(0, len(x), batch)]
        yield f"GradientBoostingRegressor 300 trees depth 5, 20 features, batch {batch}", model, feeds_for(model, rows)


def logreg_cases(rng):
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    x, y = make_classification(4000, 20, n_informative=12, n_classes=4, random_state=0)
    x = x.astype(np.float32)
    lr = LogisticRegression(max_iter=2000).fit(x, y)
    model = convert(lr, x, classifier=True)
    rows = x[rng.integers(0, len(x), 1000)]
    yield "LogisticRegression 20 features, 4 classes, batch 1000", model, feeds_for(model, rows)


def main():
    run_case_table(__doc__.splitlines()[0], {"rf": rf_cases, "gbr": gbr_cases, "logreg": logreg_cases}, digits=3)


if __name__ == "__main__":
    main()
