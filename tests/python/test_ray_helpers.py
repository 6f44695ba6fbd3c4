"""onnx_light.ray_helpers without Ray: BatchPredictor and DecodeLoop called directly, as one Ray
actor or one Serve replica would call them (tests/python/test_ray.py runs them inside Ray)."""

import json
import threading

import numpy as np
import pytest

import onnx_light.runtime as runtime
from onnx_light import cnn_model
from onnx_light.ray_helpers import BatchPredictor, DecodeLoop, merge_worker_traces


@pytest.fixture(scope="module")
def cnn_bytes():
    return cnn_model.build_cnn(channels=(3, 8, 16), image=16).SerializeToString()


def images(n, seed=0):
    return np.random.default_rng(seed).standard_normal((n, 3, 16, 16)).astype(np.float32)


def test_batch_predictor_matches_a_session(cnn_bytes):
    predictor = BatchPredictor(cnn_bytes, inputs={"pixels": "image"}, keep_columns=["id"])
    batch = {"pixels": images(5), "id": np.arange(5)}
    out = predictor(batch)
    expected = runtime.RuntimeSession(cnn_bytes).run(None, {"image": batch["pixels"]})
    assert sorted(out) == sorted(predictor.outputs + ["id"])
    np.testing.assert_array_equal(out[predictor.outputs[0]], np.asarray(expected[0]))
    np.testing.assert_array_equal(out["id"], batch["id"])
    assert predictor.session is not None and predictor.batches == 1


def test_batch_predictor_names_what_is_wrong(cnn_bytes):
    with pytest.raises(ValueError, match=r"does not have; its inputs are \['image'\]"):
        BatchPredictor(cnn_bytes, inputs={"pixels": "img"})
    with pytest.raises(ValueError, match=r"outputs \['nope'\] are not model outputs"):
        BatchPredictor(cnn_bytes, outputs=["nope"])
    predictor = BatchPredictor(cnn_bytes, keep_columns=["id"])
    with pytest.raises(ValueError, match=r"no column 'image' for model input 'image'; its columns are \['data'\]"):
        predictor({"data": images(1)})
    with pytest.raises(ValueError, match="keep_columns names 'id'"):
        predictor({"image": images(1)})
    with pytest.raises(ValueError, match="image"):  # a wrong shape is the runtime's error, naming the input
        predictor({"image": np.zeros((1, 4, 16, 16), np.float32)})


def test_batch_predictor_writes_one_trace_per_batch(cnn_bytes, tmp_path):
    first = BatchPredictor(cnn_bytes, trace_dir=tmp_path, label="actor-a")
    second = BatchPredictor(cnn_bytes, trace_dir=tmp_path, label="actor-b")
    for i in range(3):
        first({"image": images(2, seed=i)})
    second({"image": images(2)})
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["actor-a-000000.json", "actor-a-000001.json", "actor-a-000002.json", "actor-b-000000.json"]
    data = json.loads((tmp_path / files[0]).read_text(encoding="utf-8"))
    assert data["otherData"]["label"] == "actor-a"
    assert any(e.get("name") == "compile" for e in data["traceEvents"]), "the first batch shows the build"
    merged = merge_worker_traces(tmp_path, tmp_path / "all.json")
    names = {e["pid"]: e["args"]["name"] for e in merged["traceEvents"] if e["name"] == "process_name"}
    assert names == {1: "actor-a", 2: "actor-b"}
    runs = [e for e in merged["traceEvents"] if e.get("cat") == "run" and e["ph"] == "b"]
    assert sorted(e["pid"] for e in runs) == [1, 1, 1, 2]
    assert json.loads((tmp_path / "all.json").read_text(encoding="utf-8")) == merged
    assert merge_worker_traces(tmp_path, tmp_path / "all.json") == merged, "its own output is not an input"
    with pytest.raises(ValueError, match="no \\*.json trace in"):
        merge_worker_traces(tmp_path / "empty")


def test_decode_loop_gives_each_request_its_own_cache():
    loop = DecodeLoop(layers=1, heads=2, head_size=8)
    prompt = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    first = loop.generate(prompt, 5)
    assert first["outputs"].shape == (5, 16) and first["cache_length"] == 3 + 5
    again = loop.generate(prompt, 5)
    np.testing.assert_array_equal(first["outputs"], again["outputs"])  # nothing carried over
    assert loop.generate(prompt, 0)["outputs"].shape == (0, 16)
    traced = loop.generate(prompt[:1], 2, record_events=True)
    runs = [e for e in traced["trace"]["traceEvents"] if e.get("cat") == "run" and e["ph"] == "b"]
    assert len(runs) == 3
    builds = {e["name"] for e in traced["trace"]["traceEvents"] if e.get("cat") == "session"}
    assert builds == {"load model", "compile"}, "the request's own state build is in its trace"
    with pytest.raises(ValueError, match=r"prompt must be \[tokens >= 1, 16\], got \[3, 4\]"):
        loop.generate(np.zeros((3, 4)), 1)
    with pytest.raises(ValueError, match="steps must be >= 0, got -1"):
        loop.generate(prompt, -1)


def test_decode_loop_serves_concurrent_requests():
    """What a Serve replica does with overlapping requests: several threads call generate."""
    loop = DecodeLoop(layers=1, heads=2, head_size=8)
    prompts = [np.random.default_rng(seed).standard_normal((2, 16)).astype(np.float32) for seed in range(4)]
    expected = [loop.generate(p, 12)["outputs"] for p in prompts]
    results = [None] * (3 * len(prompts))
    barrier = threading.Barrier(len(results))

    def request(i):
        barrier.wait()
        results[i] = loop.generate(prompts[i % len(prompts)], 12)["outputs"]

    threads = [threading.Thread(target=request, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for i, got in enumerate(results):
        np.testing.assert_array_equal(got, expected[i % len(prompts)])
