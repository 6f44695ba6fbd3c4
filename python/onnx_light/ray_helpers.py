"""Running the runtime inside Ray: batch inference with Ray Data and a decode loop per request.

    import ray
    from onnx_light.ray_helpers import BatchPredictor, merge_worker_traces

    ds = ray.data.from_numpy(images).rename_columns({"data": "image"})
    out = ds.map_batches(BatchPredictor, fn_constructor_kwargs={"model": "cnn.onnx", "trace_dir": "traces"},
                         batch_size=64, batch_format="numpy", compute=ray.data.ActorPoolStrategy(size=2), num_cpus=1)
    merge_worker_traces("traces", "all_workers.json")   # one process track per actor

Nothing here imports ray: ``BatchPredictor`` is the callable class Ray Data instantiates once per
actor (so each actor builds one session), and ``DecodeLoop`` is what a Ray Serve replica calls per
request (examples/ray_serve_decode.py wraps it in a deployment). Install Ray with the extra:
``pip install onnx-light-runtime[ray]``. See docs/ray.md.
"""

from __future__ import annotations

import glob
import json
import os
import socket
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

import onnx_light.runtime as runtime
from onnx_light import trace

__all__ = ["BatchPredictor", "DecodeLoop", "default_worker_label", "merge_worker_traces"]

ModelSource = Union[str, os.PathLike, bytes, Any]


def default_worker_label() -> str:
    """The name a worker's traces carry unless told otherwise: host and process id, which tell
    Ray actors (one process each) apart, also across machines."""
    return f"{socket.gethostname()}-pid{os.getpid()}"


def _model_bytes_or_path(model: ModelSource) -> Any:
    """What RuntimeSession accepts: a path, bytes, ModelBytes; a ModelProto becomes its bytes."""
    if hasattr(model, "SerializeToString") and not isinstance(model, (bytes, bytearray)):
        return model.SerializeToString()
    return model


class BatchPredictor:
    """A callable class for ``Dataset.map_batches(BatchPredictor, batch_format="numpy", ...)``.

    Ray Data builds one instance per actor, so the model is loaded and compiled once per actor
    and every batch that actor receives runs through that session. A batch is a dict of numpy
    arrays by column; the result is a dict of numpy arrays: the requested model outputs plus the
    ``keep_columns`` passed through unchanged (ids, labels).

    ``model`` is a model path (every actor must be able to read it: a shared or local copy on
    each node), model bytes or an onnx ModelProto (pickled to every actor; fine for small
    models). ``inputs`` maps column names to model input names (default: columns named like the
    inputs). ``outputs`` picks the outputs to return (default: all, in graph order).
    ``num_threads`` is the session's thread count; 1 by default because Ray gives each actor
    ``num_cpus`` cores and an actor that used every core of the node would compete with its
    neighbours. ``options`` (RuntimeSessionOptions) overrides it entirely.

    With ``trace_dir``, each batch is run with events on and its Chrome trace is written to
    ``<trace_dir>/<label>-<n>.json`` with ``otherData.label`` set to ``label`` (default
    ``default_worker_label()``); ``merge_worker_traces(trace_dir)`` then makes one trace with one
    process track per actor. The folder must be reachable from every actor (one machine, or a
    shared file system).

    Threading: one call at a time per instance (what Ray Data does by default); the session
    itself may be shared by threads, the per-call state (batch counter) may not.
    """

    def __init__(self, model: ModelSource, *, inputs: Optional[Mapping[str, str]] = None,
                 outputs: Optional[Sequence[str]] = None, keep_columns: Sequence[str] = (),
                 num_threads: int = 1, options: Optional[runtime.RuntimeSessionOptions] = None,
                 trace_dir: Optional[Union[str, os.PathLike]] = None, label: Optional[str] = None,
                 include_value_events: bool = False):
        if options is None:
            options = runtime.RuntimeSessionOptions(num_threads=num_threads)
        self.session = runtime.RuntimeSession(_model_bytes_or_path(model), options)
        names = self.session.input_names
        self.inputs = dict(inputs) if inputs is not None else {name: name for name in names}
        unknown = sorted(set(self.inputs.values()) - set(names))
        if unknown:
            raise ValueError(f"BatchPredictor: inputs maps columns to {unknown}, which the model does not have; "
                             f"its inputs are {names}")
        self.outputs = list(outputs) if outputs is not None else list(self.session.output_names)
        missing = sorted(set(self.outputs) - set(self.session.output_names))
        if missing:
            raise ValueError(f"BatchPredictor: outputs {missing} are not model outputs; the model has "
                             f"{self.session.output_names}")
        self.keep_columns = list(keep_columns)
        self.trace_dir = os.fspath(trace_dir) if trace_dir is not None else None
        self.label = label or default_worker_label()
        self.include_value_events = include_value_events
        self.batches = 0
        if self.trace_dir is not None:
            os.makedirs(self.trace_dir, exist_ok=True)

    def feeds(self, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The model feeds of a batch; ValueError naming a missing column and the ones present."""
        feeds = {}
        for column, name in self.inputs.items():
            if column not in batch:
                raise ValueError(f"BatchPredictor: the batch has no column '{column}' for model input '{name}'; "
                                 f"its columns are {sorted(batch)}")
            feeds[name] = np.ascontiguousarray(batch[column])
        return feeds

    def __call__(self, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        feeds = self.feeds(batch)
        if self.trace_dir is None:
            values = self.session.run(self.outputs, feeds)
        else:
            context = runtime.RuntimeContext(events_enabled=True)
            result = self.session.run(context, feeds)
            values = [result[name] for name in self.outputs]
            sessions = [self.session] if self.batches == 0 else []  # load and compile, once
            data = trace.chrome_trace(context, include_value_events=self.include_value_events, sessions=sessions)
            data["otherData"]["label"] = self.label
            path = os.path.join(self.trace_dir, f"{self.label}-{self.batches:06d}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(data, f)
        self.batches += 1
        # Copies: the arrays outlive the run and Ray serialises them after this call returns.
        out = {name: np.array(value) for name, value in zip(self.outputs, values)}
        for column in self.keep_columns:
            if column not in batch:
                raise ValueError(f"BatchPredictor: keep_columns names '{column}', which the batch does not have; "
                                 f"its columns are {sorted(batch)}")
            out[column] = batch[column]
        return out


def merge_worker_traces(trace_dir: Union[str, os.PathLike],
                        output: Optional[Union[str, os.PathLike]] = None) -> dict:
    """Merges every ``*.json`` trace in ``trace_dir`` (as ``BatchPredictor`` writes them) into
    one trace, one process track per worker label, and writes it to ``output`` when given.
    ValueError when the folder holds no trace."""
    paths = sorted(glob.glob(os.path.join(os.fspath(trace_dir), "*.json")))
    if output is not None:
        target = os.path.abspath(os.fspath(output))
        paths = [p for p in paths if os.path.abspath(p) != target]
    if not paths:
        raise ValueError(f"merge_worker_traces: no *.json trace in '{os.fspath(trace_dir)}'")
    merged = trace.merge_traces(paths)
    if output is not None:
        with open(os.fspath(output), "w", encoding="utf-8") as f:
            json.dump(merged, f)
    return merged


class DecodeLoop:
    """A decode loop per request over the demo decoder (onnx_light.decoder_model), the work a
    Ray Serve replica does for each request (examples/ray_serve_decode.py).

    The replica builds one DecodeLoop, which writes the model with its feedback declarations
    once; each ``generate`` call creates its own PersistentValueState (its own KV cache, compiled
    from those bytes), runs ``steps`` tokens and closes it, so concurrent requests never share a
    cache. ``generate`` may be called from several threads at once.
    """

    def __init__(self, layers: int = 2, heads: int = 4, head_size: int = 16, capacity: int = 64,
                 num_threads: int = 1, seed: int = 0):
        from onnx_light import decoder_model

        self.layers, self.heads, self.head_size = layers, heads, head_size
        self.d_model = heads * head_size
        model = decoder_model.build_decoder(layers=layers, heads=heads, head_size=head_size, seed=seed)
        self.model = runtime.with_persistent_bindings(model, decoder_model.bindings(layers))
        self.initial = decoder_model.empty_cache(layers, heads, head_size)
        self.options = runtime.RuntimeSessionOptions(persistent_tensor_initial_capacity=capacity,
                                                     num_threads=num_threads)

    def generate(self, prompt: np.ndarray, steps: int, *, record_events: bool = False) -> dict[str, Any]:
        """Feeds ``prompt`` ([tokens, d_model] float32, at least one row) then ``steps`` generated
        embeddings, each a function of the previous output. Returns ``{"outputs": [steps, d_model]
        array, "cache_length": int}``, plus ``"trace"`` (a Chrome trace dict) with
        ``record_events``. ValueError for a prompt of the wrong shape or a negative step count."""
        prompt = np.asarray(prompt, dtype=np.float32)
        if prompt.ndim != 2 or prompt.shape[0] < 1 or prompt.shape[1] != self.d_model:
            raise ValueError(f"DecodeLoop.generate: prompt must be [tokens >= 1, {self.d_model}], got "
                             f"{list(prompt.shape)}")
        if steps < 0:
            raise ValueError(f"DecodeLoop.generate: steps must be >= 0, got {steps}")
        state = runtime.PersistentValueState(self.model, initial=self.initial, options=self.options)
        try:
            context = runtime.RuntimeContext(events_enabled=record_events)
            out = state.run(context, {"x": prompt[None]})
            generated = []
            for _ in range(steps):
                x = np.tanh(np.asarray(out["y"])[:, -1:, :self.d_model]).astype(np.float32)
                out = state.run(context, {"x": x})
                generated.append(np.array(out["y"])[0, -1, :self.d_model])
            result = {"outputs": np.stack(generated) if generated else np.zeros((0, self.d_model), np.float32),
                      "cache_length": int(state.values["past_key_0"].shape[2])}
            if record_events:
                result["trace"] = trace.chrome_trace(context, sessions=[state])
            return result
        finally:
            state.close()
