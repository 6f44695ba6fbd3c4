"""Greedy decode loops over an exported decoder file, ours and ONNX Runtime's, for the example,
the tests and the benchmark.

An exported decoder here is an ONNX model with ``input_ids`` [batch, seq] (int64), optionally
``attention_mask`` [batch, past + seq] and ``position_ids`` [batch, seq], one past input per cache
tensor [batch, kv_heads, past, head_size] and ``logits`` [batch, seq, vocab] followed by the
present outputs. Which present feeds which past is read from the names (``cache_bindings``).

Only numpy and onnx (to read the graph's inputs) are needed; ONNX Runtime is imported by
``OrtLoop`` alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np


def cache_bindings(input_names, output_names) -> dict[str, str]:
    """{past input: present output} found from the names: ``past_key_values.<i>.<k>`` pairs with
    ``present.<i>.<k>`` (the Hugging Face Optimum spelling), and otherwise any input starting with
    ``past`` pairs with the output named the same with ``present`` in its place (``past_key_0`` ->
    ``present_key_0``). Inputs without such an output are not bound."""
    outputs = set(output_names)
    found = {}
    for name in input_names:
        if name.startswith("past_key_values"):
            candidate = "present" + name[len("past_key_values"):]
        elif name.startswith("past"):
            candidate = "present" + name[len("past"):]
        else:
            continue
        if candidate in outputs:
            found[name] = candidate
    return found


@dataclass
class DecoderFile:
    """What a decode loop needs to know about one exported decoder file."""

    path: str
    input_names: list[str]
    output_names: list[str]
    bindings: dict[str, str]
    cache_shapes: dict[str, tuple[int, int]]  # past input -> (kv_heads, head_size)
    cache_dtype: np.dtype = field(default_factory=lambda: np.dtype(np.float32))
    vocab: int | None = None  # the last axis of the logits, when the file gives it

    @classmethod
    def read(cls, path) -> "DecoderFile":
        from onnx_light._optional import require_onnx

        onnx = require_onnx("onnx_light.exported_decoder")
        from onnx import helper

        path = os.fspath(path)
        graph = onnx.load(path, load_external_data=False).graph
        initializers = {t.name for t in graph.initializer}
        inputs = [i for i in graph.input if i.name not in initializers]
        input_names = [i.name for i in inputs]
        output_names = [o.name for o in graph.output]
        bindings = cache_bindings(input_names, output_names)
        if not bindings:
            raise ValueError(f"{path}: no past/present pairs among inputs {input_names} and outputs {output_names}")
        shapes, dtypes = {}, set()
        for value in inputs:
            if value.name not in bindings:
                continue
            dims = value.type.tensor_type.shape.dim
            if len(dims) != 4 or not dims[1].HasField("dim_value") or not dims[3].HasField("dim_value"):
                raise ValueError(f"{path}: past input {value.name!r} is not [batch, heads, past, head_size] "
                                 f"with fixed heads and head size")
            shapes[value.name] = (dims[1].dim_value, dims[3].dim_value)
            dtypes.add(helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type))
        if len(dtypes) != 1:
            raise ValueError(f"{path}: past inputs of several types {sorted(map(str, dtypes))}")
        decoder = cls(path, input_names, output_names, bindings, shapes, dtypes.pop())
        logits = next(o for o in graph.output if o.name == decoder.logits_name).type.tensor_type.shape.dim
        if logits and logits[-1].HasField("dim_value"):
            decoder.vocab = logits[-1].dim_value
        return decoder

    @property
    def logits_name(self) -> str:
        return "logits" if "logits" in self.output_names else self.output_names[0]

    def empty_cache(self, batch=1) -> dict[str, np.ndarray]:
        """Zero-length past values for the first call."""
        return {name: np.zeros((batch, heads, 0, size), self.cache_dtype)
                for name, (heads, size) in self.cache_shapes.items()}

    def cache_bytes(self, length, batch=1) -> int:
        """Bytes of the whole cache at `length` positions."""
        return sum(batch * heads * length * size * self.cache_dtype.itemsize
                   for heads, size in self.cache_shapes.values())

    def step_feeds(self, tokens, past_length) -> dict[str, np.ndarray]:
        """The non-cache inputs of one call: `tokens` [batch, seq] after `past_length` positions."""
        tokens = np.asarray(tokens, dtype=np.int64)
        batch, seq = tokens.shape
        feeds = {"input_ids": tokens}
        if "attention_mask" in self.input_names:
            feeds["attention_mask"] = np.ones((batch, past_length + seq), np.int64)
        if "position_ids" in self.input_names:
            feeds["position_ids"] = np.broadcast_to(np.arange(past_length, past_length + seq, dtype=np.int64),
                                                    (batch, seq)).copy()
        return feeds


class StateLoop:
    """Our decode loop: a PersistentValueState built from the file's path (or from `model`, e.g.
    the output of with_persistent_bindings), fed only the token inputs."""

    def __init__(self, decoder: DecoderFile, context, options=None, model=None):
        from onnx_light import runtime

        self.decoder = decoder
        self.context = context
        source = model if model is not None else runtime.with_persistent_bindings(decoder.path, decoder.bindings)
        self.state = runtime.PersistentValueState(source, decoder.empty_cache(), options)
        self.length = 0

    def step(self, tokens) -> np.ndarray:
        """Runs one call; returns the logits of its last position [batch, vocab] (a copy)."""
        tokens = np.asarray(tokens, dtype=np.int64)
        out = self.state.run(self.context, self.decoder.step_feeds(tokens, self.length))
        self.length += tokens.shape[1]
        return np.array(np.asarray(out[self.decoder.logits_name])[:, -1, :])

    def cache(self) -> dict[str, np.ndarray]:
        return {name: np.array(value) for name, value in self.state.values.items()}


class OrtLoop:
    """ONNX Runtime re-feeding each present as the next call's past."""

    def __init__(self, decoder: DecoderFile, threads=1):
        import onnxruntime as ort

        self.decoder = decoder
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(decoder.path, options, providers=["CPUExecutionProvider"])
        self.past = decoder.empty_cache()
        self.length = 0

    def step(self, tokens) -> np.ndarray:
        tokens = np.asarray(tokens, dtype=np.int64)
        names = self.decoder.output_names
        outs = self.session.run(None, {**self.decoder.step_feeds(tokens, self.length), **self.past})
        by_name = dict(zip(names, outs))
        self.past = {past: by_name[present] for past, present in self.decoder.bindings.items()}
        self.length += tokens.shape[1]
        return by_name[self.decoder.logits_name][:, -1, :]

    def cache(self) -> dict[str, np.ndarray]:
        return dict(self.past)


def greedy(loop, prompt, steps) -> tuple[list[int], list[np.ndarray]]:
    """`steps` calls: the prompt [1, n] first, then each call's argmax token. Returns the chosen
    tokens and each call's last-position logits."""
    tokens, logits = [], []
    feed = np.asarray(prompt, dtype=np.int64).reshape(1, -1)
    for _ in range(steps):
        last = loop.step(feed)
        logits.append(last)
        token = int(np.argmax(last[0]))
        tokens.append(token)
        feed = np.array([[token]], np.int64)
    return tokens, logits
