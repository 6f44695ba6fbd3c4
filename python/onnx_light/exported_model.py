"""Exported model files and the inputs to feed them, for benchmarks/bench_models.py and the tests
of tests/data/models/ (both folders are written by examples/export_models.py).

A folder made by that script has a ``manifest.json``::

    {"files": [{"file": "resnet18-torchscript.onnx", "model": "resnet18", "exporter": "torchscript",
                "dtype": "float32", "external_data": null,
                "inputs": {"pixel_values": {"shape": [1, 3, 224, 224], "dtype": "float32", "fill": "normal"}},
                ...}, ...]}

Each input says how to fill it: ``normal`` (standard normal values), ``int`` (integers in
[0, high), e.g. token ids below the vocabulary size) or ``ones``. A folder without a manifest is
read from the graphs themselves: every ``.onnx`` file, dynamic axes set to 1, float inputs
normal and integer inputs 0 or 1 (``ExportedModel.from_graph``).

Only numpy and onnx are needed; ONNX Runtime is imported by ``ort_session`` alone.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class InputSpec:
    shape: list[int]
    dtype: str
    fill: str = "normal"  # normal | int | ones
    high: int = 2  # exclusive upper bound of "int" values

    def make(self, rng: np.random.Generator) -> np.ndarray:
        dtype = np.dtype(self.dtype)
        if self.fill == "ones":
            return np.ones(self.shape, dtype)
        if self.fill == "int":
            return rng.integers(0, self.high, size=self.shape).astype(dtype)
        if self.fill == "normal":
            return rng.standard_normal(self.shape).astype(dtype)
        raise ValueError(f"input fill {self.fill!r} is not one of normal, int, ones")


@dataclass
class ExportedModel:
    path: str
    name: str  # the architecture (resnet18, bert, ...)
    exporter: str  # torchscript | dynamo | unknown
    dtype: str  # element type of the output
    inputs: dict[str, InputSpec] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """`<architecture>-<exporter>`, the file's name without `.onnx`."""
        return Path(self.path).name.removesuffix(".onnx")

    def feeds(self, seed: int = 0) -> dict[str, np.ndarray]:
        """The same inputs for the same seed, in the model's input order."""
        rng = np.random.default_rng(seed)
        return {name: spec.make(rng) for name, spec in self.inputs.items()}

    @classmethod
    def from_entry(cls, folder, entry: dict) -> "ExportedModel":
        inputs = {name: InputSpec(**spec) for name, spec in entry["inputs"].items()}
        return cls(os.fspath(Path(folder) / entry["file"]), entry["model"], entry["exporter"], entry["dtype"], inputs)

    @classmethod
    def from_graph(cls, path) -> "ExportedModel":
        """A file without manifest: inputs from the graph, dynamic axes set to 1."""
        from onnx_light._optional import require_onnx

        onnx = require_onnx("onnx_light.exported_model")
        from onnx import helper

        graph = onnx.load(os.fspath(path), load_external_data=False).graph
        initializers = {t.name for t in graph.initializer}
        inputs = {}
        for value in graph.input:
            if value.name in initializers:
                continue
            tensor = value.type.tensor_type
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
            shape = [d.dim_value if d.HasField("dim_value") else 1 for d in tensor.shape.dim]
            fill = "normal" if np.issubdtype(dtype, np.floating) else "int"
            inputs[value.name] = InputSpec(shape, dtype.name, fill)
        output = graph.output[0].type.tensor_type.elem_type
        stem = Path(path).name.removesuffix(".onnx")
        name, _, exporter = stem.rpartition("-") if "-" in stem else (stem, "", "unknown")
        return cls(os.fspath(path), name, exporter or "unknown",
                   np.dtype(helper.tensor_dtype_to_np_dtype(output)).name, inputs)


def read_folder(folder) -> list[ExportedModel]:
    """The models of a folder: the manifest's files in its order, or every `.onnx` by name."""
    folder = Path(folder)
    manifest = folder / "manifest.json"
    if manifest.exists():
        entries = json.loads(manifest.read_text())["files"]
        return [ExportedModel.from_entry(folder, entry) for entry in entries]
    return [ExportedModel.from_graph(path) for path in sorted(folder.glob("*.onnx"))]


def ort_session(path, threads=1, profile_prefix=None, optimize=True):
    """An ONNX Runtime CPU session with `threads` intra-op threads and one inter-op thread, its
    default graph optimisations (all of them) unless `optimize` is false, and profiling on when
    `profile_prefix` is given."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = os.fspath(profile_prefix)
    return ort.InferenceSession(os.fspath(path), options, providers=["CPUExecutionProvider"])
