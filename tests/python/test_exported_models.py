"""Tiny versions of the architectures of benchmarks/bench_models.py, exported by torch.onnx.export
and checked in under tests/data/models/: each runs through a RuntimeSession and must give ONNX
Runtime's output on the same fixed random inputs, at 1 and 2 threads, and with events on the
run_node records must account for the run.

Regenerate the folder (needs torch, torchvision, transformers and onnxscript; versions in
docs/dependencies.md and the manifest) with

    python examples/export_models.py --check-in

which rewrites every model and tests/data/models/manifest.json (file, architecture, exporter,
element type, and per input its shape and how to fill it; see onnx_light.exported_model).

Tolerances are relative to the size of the output, |ours - ORT| <= tol * max |ORT| element by
element (a plain rtol fails on outputs that cross zero, and an absolute tolerance would say
nothing about the random-weight CNNs, whose outputs are around 1e-6): float32 tol 1e-4 (the
differences seen are below 2e-7), float16 tol 5e-3 (five half-precision steps at 1.0; either
runtime may accumulate in float32 and round intermediates at different points; seen: 2.5e-4).
test_output_depends_on_the_input checks that the comparison is not vacuous. The models are
compared by outputs only, never by node counts, so graph-rewrite passes that fuse or fold nodes
keep these tests meaningful.
"""

import json
import time
from pathlib import Path

import numpy as np
import onnx
import pytest

import onnx_light.runtime as runtime
from onnx_light.exported_model import ExportedModel, read_folder, ort_session

DATA = Path(__file__).resolve().parent.parent / "data" / "models"
MANIFEST = json.loads((DATA / "manifest.json").read_text())
MODELS = {m.label: m for m in read_folder(DATA)}
TOL = {"float32": 1e-4, "float16": 5e-3}
ARCHITECTURES = ["mobilenet_v3_small", "efficientnet_b0", "lraspp_mobilenet_v3_large", "resnet18", "resnet18_fp16",
                 "squeezenet1_1", "gpt2", "gpt2_fp16", "whisper_encoder", "vit", "bert", "llama"]


def new_context(events=False):
    return runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)), events_enabled=events)


def run_ours(model: ExportedModel, feeds, threads=1, context=None):
    session = runtime.RuntimeSession(model.path, runtime.RuntimeSessionOptions(num_threads=threads))
    out = session.run(context or new_context(), feeds)
    return np.array(out["output"])


_ORT_OUTPUTS = {}


def ort_output(model: ExportedModel) -> np.ndarray:
    if model.label not in _ORT_OUTPUTS:
        _ORT_OUTPUTS[model.label] = ort_session(model.path).run(["output"], model.feeds(seed=0))[0]
    return _ORT_OUTPUTS[model.label]


def assert_close_to_ort(got, want, dtype, label):
    assert got.dtype == want.dtype and got.shape == want.shape, (label, got.dtype, got.shape, want.dtype, want.shape)
    assert np.isfinite(want).all(), f"{label}: ORT's output is not finite; the test input is no good"
    scale = float(np.abs(want.astype(np.float64)).max())
    assert scale > 0, f"{label}: ORT's output is all zeros; the test input is no good"
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0, atol=TOL[dtype] * scale,
                               err_msg=label)


# ---- the checked-in folder -----------------------------------------------------------------------


def test_manifest_describes_the_folder():
    on_disk = {p.name for p in DATA.iterdir()} - {"manifest.json", "README.md"}
    listed = {e["file"] for e in MANIFEST["files"]} | {e["external_data"] for e in MANIFEST["files"]
                                                         if e["external_data"]}
    assert on_disk == listed
    assert {e["model"] for e in MANIFEST["files"]} == set(ARCHITECTURES)
    assert {e["exporter"] for e in MANIFEST["files"]} == {"torchscript", "dynamo"}
    assert {e["dtype"] for e in MANIFEST["files"]} == {"float32", "float16"}
    # Small enough to keep in the repository.
    assert sum((DATA / name).stat().st_size for name in listed) < 3_000_000


@pytest.mark.parametrize("label", sorted(MODELS))
def test_feeds_are_fixed_and_match_the_graph(label):
    model = MODELS[label]
    graph = onnx.load(model.path, load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    assert list(model.inputs) == [i.name for i in graph.input if i.name not in initializers]
    first, again = model.feeds(seed=0), model.feeds(seed=0)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    assert [o.name for o in graph.output] == ["output"]


# ---- the same results as ONNX Runtime ------------------------------------------------------------


@pytest.mark.parametrize("label", sorted(MODELS))
def test_output_depends_on_the_input(label):
    """Another input moves ORT's output by several times the tolerance, so agreeing within the
    tolerance means something (a model whose output were its last bias would fail here). The
    random-weight resnet18 in float16 moves least: 0.037 against a largest value of 0.43."""
    model = MODELS[label]
    other = ort_session(model.path).run(["output"], model.feeds(seed=1))[0].astype(np.float64)
    want = ort_output(model).astype(np.float64)
    assert np.abs(other - want).max() > 5 * TOL[model.dtype] * np.abs(want).max(), label



@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("label", sorted(MODELS))
def test_matches_onnx_runtime(label, threads):
    model = MODELS[label]
    got = run_ours(model, model.feeds(seed=0), threads)
    want = ort_output(model)
    assert list(want.shape) == next(e["output_shape"] for e in MANIFEST["files"] if e["file"] == Path(model.path).name)
    assert_close_to_ort(got, want, model.dtype, label)


@pytest.mark.parametrize("label", ["resnet18-torchscript", "bert-torchscript"])
def test_other_inputs_match_too(label):
    """A second seed: the first input is not special (a folded constant that happened to fit it
    would show here)."""
    model = MODELS[label]
    feeds = model.feeds(seed=1)
    want = ort_session(model.path).run(["output"], feeds)[0]
    assert_close_to_ort(run_ours(model, feeds), want, model.dtype, label)


# ---- events --------------------------------------------------------------------------------------


@pytest.mark.parametrize("label", sorted(MODELS))
def test_run_node_events_cover_the_run(label):
    """With events on, the output is the same as with events off (bit for bit), and the run_node
    records account for the run: at least one node ran, every top-level record names a distinct
    node of the model file, all records fall inside the run's wall-clock window, their durations
    (nodes run one after another, docs/threading.md) add up to no more than that window, and the
    graph output is added after a node ran. Fused nodes report one of their original nodes, and
    folded nodes report nothing, so counts are not compared with the graph."""
    model = MODELS[label]
    feeds = model.feeds(seed=0)
    quiet = run_ours(model, feeds)
    context = new_context(events=True)
    start_ns = time.time_ns()
    traced = run_ours(model, feeds, context=context)
    end_ns = time.time_ns()
    np.testing.assert_array_equal(traced, quiet)

    nodes_in_file = len(onnx.load(model.path, load_external_data=False).graph.node)
    events = context.events()
    run_nodes = [e for e in events if e.action == runtime.RuntimeEventAction.kRunNode]
    top = [e for e in run_nodes if e.subgraph_node_index == -1]
    assert top, f"{label}: no run_node records"
    indices = [e.node_index for e in top]
    assert len(set(indices)) == len(indices), f"{label}: a node ran twice"
    assert all(0 <= i < nodes_in_file for i in indices), (label, indices, nodes_in_file)
    assert all(e.op_type for e in top)
    for e in events:
        assert start_ns <= e.timestamp_ns <= end_ns, (label, e.as_dict())
    assert all(e.duration_ns >= 0 for e in run_nodes)
    assert sum(e.duration_ns for e in top) <= end_ns - start_ns
    first_node = events.index(top[0])
    outputs = [i for i, e in enumerate(events) if e.action == runtime.RuntimeEventAction.kAdd and e.name == "output"]
    assert outputs and outputs[-1] > first_node, f"{label}: the output was not added after a node ran"
    assert events[outputs[-1]].kind == "output"


def test_a_folder_without_manifest_is_read_from_the_graphs(tmp_path):
    """onnx_light.exported_model reads other folders too: inputs from the graph, dynamic axes 1,
    integer inputs 0 or 1; the benchmark then runs them like the manifest's."""
    for label in ("bert-torchscript", "resnet18-torchscript"):
        (tmp_path / f"{label}.onnx").write_bytes(Path(MODELS[label].path).read_bytes())
    found = {m.label: m for m in read_folder(tmp_path)}
    assert sorted(found) == ["bert-torchscript", "resnet18-torchscript"]
    bert, resnet = found["bert-torchscript"], found["resnet18-torchscript"]
    assert (bert.name, bert.exporter, bert.dtype) == ("bert", "torchscript", "float32")
    assert {n: (s.shape, s.dtype, s.fill) for n, s in bert.inputs.items()} == {
        "input_ids": ([1, 1], "int64", "int"), "attention_mask": ([1, 1], "int64", "int")}
    assert resnet.inputs["pixel_values"].shape == [1, 3, 32, 32]  # only the batch axis is dynamic
    feeds = bert.feeds(seed=0)
    assert set(np.unique(np.concatenate([v.ravel() for v in feeds.values()]))) <= {0, 1}
    want = ort_session(bert.path).run(["output"], feeds)[0]
    assert_close_to_ort(run_ours(bert, feeds), want, "float32", bert.label)
