"""The runtime inside Ray, on a local instance with two CPUs: Ray Data batch inference through
onnx_light.ray_helpers.BatchPredictor and the Ray Serve decode example.

All tests share one Ray instance (module fixture): starting Ray takes seconds, most of this
module's time. ray[data,serve] is pinned in constraints.txt and installed by scripts/setup.sh.
"""

import importlib.util
import json
import os
import pathlib
import re
import signal

import numpy as np
import pytest

import onnx_light
import onnx_light.runtime as runtime
from onnx_light import cnn_model, trace
from onnx_light.ray_helpers import BatchPredictor, DecodeLoop, merge_worker_traces

# Skipped only where the optional extra is absent (a wheel smoke test, a user's checkout without
# onnx-light-runtime[ray]); scripts/setup.sh installs it, so CI runs these tests.
ray = pytest.importorskip("ray", reason="Ray is the optional extra onnx-light-runtime[ray]; not installed here")

# scripts/test.sh also runs the suite with the sanitizer runtimes preloaded into an uninstrumented
# Python. Ray's own native processes (GCS, raylet) and its workers would inherit LD_PRELOAD, and
# without it the workers could not load the sanitized extension; the plain run covers this
# module, and test_ray_helpers.py runs the same helpers under the sanitizers.
if "libasan" in os.environ.get("LD_PRELOAD", ""):
    pytest.skip("Ray's processes cannot run under the preloaded AddressSanitizer runtime",
                allow_module_level=True)

ROOT = pathlib.Path(__file__).resolve().parents[2]
IMAGES = 96
BATCH = 8


# A Ray that hangs (an actor that never starts, a lost task) must fail the suite, not stall CI:
# the module normally takes under a minute.
MODULE_LIMIT_S = 300


def _over_time(signum, frame):
    raise TimeoutError(f"the Ray tests ran longer than {MODULE_LIMIT_S} s")


@pytest.fixture(scope="module")
def local_ray():
    previous = signal.signal(signal.SIGALRM, _over_time)
    signal.alarm(MODULE_LIMIT_S)
    # The workers must import the same onnx_light as this process (the build tree in tests).
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(onnx_light.__file__)))
    path = os.pathsep.join([package_root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.wait_for_min_actors_s = 60  # both actors up before batches go out, so both get some
    yield ray
    ray.shutdown()
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def cnn():
    return cnn_model.build_cnn(channels=(3, 8, 16), image=16).SerializeToString()


def test_batch_inference_equals_a_single_process_run(local_ray, cnn, tmp_path):
    data = np.random.default_rng(0).standard_normal((IMAGES, 3, 16, 16)).astype(np.float32)
    items = [{"id": i, "image": data[i]} for i in range(IMAGES)]
    ds = ray.data.from_items(items, override_num_blocks=IMAGES // BATCH)
    out = ds.map_batches(BatchPredictor, fn_constructor_kwargs={"model": cnn, "keep_columns": ["id"],
                                                                "trace_dir": str(tmp_path)},
                         batch_size=BATCH, batch_format="numpy", num_cpus=1,
                         compute=ray.data.ActorPoolStrategy(size=2))
    rows = sorted(out.take_all(), key=lambda row: row["id"])
    output_name = runtime.RuntimeSession(cnn).output_names[0]
    got = np.stack([row[output_name] for row in rows])
    assert [row["id"] for row in rows] == list(range(IMAGES))

    session = runtime.RuntimeSession(cnn, runtime.RuntimeSessionOptions(num_threads=1))
    # The same batches in one process give the same bits; the whole set at once agrees to
    # rounding (a different batch size may change how the final Gemm blocks its sums).
    expected = np.concatenate([np.asarray(session.run(None, {"image": data[i:i + BATCH]})[0])
                               for i in range(0, IMAGES, BATCH)])
    np.testing.assert_array_equal(got, expected)
    whole = np.asarray(session.run(None, {"image": data})[0])
    np.testing.assert_allclose(got, whole, rtol=1e-5, atol=1e-6)

    # The workers' traces merge into one trace, a process track per actor.
    files = sorted(tmp_path.glob("*.json"))
    labels = {json.loads(f.read_text(encoding="utf-8"))["otherData"]["label"] for f in files}
    assert len(labels) == 2, f"two actors, each wrote traces: {labels}"
    assert all(re.fullmatch(r".+-pid[0-9]+", label) for label in labels), labels
    merged = merge_worker_traces(tmp_path, tmp_path / "merged.json")
    names = {e["pid"]: e["args"]["name"] for e in merged["traceEvents"] if e["name"] == "process_name"}
    assert sorted(names.values()) == sorted(labels) and sorted(names) == [1, 2]
    runs = [e for e in merged["traceEvents"] if e.get("cat") == "run" and e["ph"] == "b"]
    assert len(runs) == len(files) == IMAGES // BATCH
    assert sum(e["args"]["node_count"] for e in runs) == len(
        [e for e in merged["traceEvents"] if e["ph"] == "X"]), "every node of every batch is in the trace"
    for pid in names:
        assert any(e["pid"] == pid and e["ph"] == "X" for e in merged["traceEvents"])
    starts = [e["ts"] for e in merged["traceEvents"] if e["ph"] != "M"]
    assert min(starts) == 0 and max(starts) < 120e6, "one time axis for both workers"
    assert merged == trace.merge_traces(sorted(p for p in tmp_path.glob("*.json") if p.name != "merged.json"))


def load_example():
    spec = importlib.util.spec_from_file_location("ray_serve_decode", ROOT / "examples" / "ray_serve_decode.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_serve_decode_example_matches_a_local_loop(local_ray):
    serve = pytest.importorskip("ray.serve", reason="Ray Serve comes with ray[serve]; not installed here")
    example = load_example()
    # No HTTP proxy: the handle is enough, and the test must not depend on a free port 8000.
    serve.start(proxy_location="Disabled")
    try:
        handle = serve.run(example.app(layers=1, heads=2, head_size=8, replicas=1), route_prefix=None)
        prompts = [np.random.default_rng(seed).standard_normal((2, 16)).astype(np.float32) for seed in range(3)]
        responses = [handle.generate.remote(p, 6) for p in prompts]  # overlapping requests
        results = [r.result(timeout_s=120) for r in responses]
    finally:
        serve.shutdown()
    loop = DecodeLoop(layers=1, heads=2, head_size=8)
    for prompt, result in zip(prompts, results):
        expected = loop.generate(prompt, 6)
        np.testing.assert_array_equal(result["outputs"], expected["outputs"])
        assert result["cache_length"] == 2 + 6
