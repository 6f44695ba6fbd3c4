"""Whole-pipeline probe: corrupted and hostile models through load, build and run.

Each probe takes a valid model (the ONNX backend node cases, with their inputs), damages it in one
of several ways (flipped or inserted bytes, truncation, attribute and dimension values at the
edges of int64, names with invalid UTF-8, element-type codes out of range, a Loop that never
ends) and runs it through what a user does: `RuntimeSession(bytes)` then `session.run(...)` with
the case's inputs. Every probe runs in a worker process with an address-space limit and a wall
clock limit, so the outcome is always one of:

- ``ok``: the model loaded and ran;
- ``error``: a clean exception of a documented type (ValueError, KeyError, NotImplementedError,
  RuntimeError, TypeError, FileNotFoundError);
- ``crash``: the worker died from a signal;
- ``hang``: the worker did not answer within the wall clock limit;
- ``memory``: MemoryError, or the worker died of the address-space limit;
- ``unexpected``: any other exception type (UnicodeDecodeError, SystemError, ...).

Only the first two are acceptable. A bounded, seeded slice runs in CI
(tests/python/test_model_probe.py); a longer run by hand:

    python tests/fuzz/model_probe.py --seed 1 --probes 20000 --save build/probe-findings

Reproducers of every unacceptable outcome are written to --save as <n>.onnx plus <n>.npz (the
feeds) and <n>.txt (what happened).
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import os
import pickle
import random
import resource
import sys
import time
from typing import Any, Callable

import numpy as np

ACCEPTABLE = ("ok", "error")
DOCUMENTED_ERRORS = ("ValueError", "KeyError", "NotImplementedError", "RuntimeError", "TypeError",
                     "FileNotFoundError")
RUN_TIMEOUT_S = 5.0  # the runtime's own per-run timeout (RuntimeContext.run_timeout)
WALL_LIMIT_S = 30.0  # the worker must answer within this, or the probe counts as a hang
MEMORY_LIMIT = 4 << 30  # address space of a worker


# ---- mutations --------------------------------------------------------------------------------

def _flip_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(out))
        out[i] = rng.randrange(256)
    return bytes(out)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data))]


def _insert_bytes(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 16))) + data[i:]


def _duplicate_chunk(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data))
    j = min(len(data), i + rng.randint(1, 64))
    return data[:j] + data[i:j] + data[j:]


_EDGE_INTS = [-(1 << 63), -(1 << 62), -2, -1, 0, 1, 2, 3, 255, 1 << 31, (1 << 61) + 1, (1 << 62) + 1,
              (1 << 63) - 1]


def _structured(mutate: Callable[[Any, random.Random], bool]) -> Callable[[bytes, random.Random], bytes]:
    """A mutation of the parsed model; falls back to a byte flip when nothing applies."""

    def apply(data: bytes, rng: random.Random) -> bytes:
        import onnx

        model = onnx.ModelProto()
        model.ParseFromString(data)
        if not mutate(model, rng):
            return _flip_bytes(data, rng)
        return model.SerializeToString()

    apply.__name__ = mutate.__name__
    return apply


def _nodes(model):
    yield from model.graph.node
    for function in model.functions:
        yield from function.node


@_structured
def edge_attribute_values(model, rng) -> bool:
    import onnx

    attrs = [a for n in _nodes(model) for a in n.attribute if a.type in (onnx.AttributeProto.INT,
                                                                           onnx.AttributeProto.INTS)]
    if not attrs:
        return False
    attr = rng.choice(attrs)
    if attr.type == onnx.AttributeProto.INT:
        attr.i = rng.choice(_EDGE_INTS)
    elif attr.ints:
        attr.ints[rng.randrange(len(attr.ints))] = rng.choice(_EDGE_INTS)
    else:
        attr.ints.append(rng.choice(_EDGE_INTS))
    return True


@_structured
def edge_initializer_values(model, rng) -> bool:
    """An int64 initializer (shapes, axes, repeats, pads, k) gets an edge value."""
    import onnx
    from onnx import numpy_helper

    candidates = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT64]
    if not candidates:
        return False
    tensor = rng.choice(candidates)
    array = numpy_helper.to_array(tensor).copy()
    if array.size == 0:
        return False
    array.flat[rng.randrange(array.size)] = rng.choice(_EDGE_INTS)
    tensor.CopyFrom(numpy_helper.from_array(array, tensor.name))
    return True


@_structured
def huge_dimensions(model, rng) -> bool:
    values = [v for v in list(model.graph.input) + list(model.graph.output)
              if v.type.HasField("tensor_type") and v.type.tensor_type.shape.dim]
    if not values:
        return False
    dim = rng.choice(rng.choice(values).type.tensor_type.shape.dim)
    dim.dim_value = rng.choice([1 << 40, 1 << 62, (1 << 63) - 1])
    return True


@_structured
def element_type_codes(model, rng) -> bool:
    values = [v for v in list(model.graph.input) + list(model.graph.initializer)]
    if not values:
        return False
    value = rng.choice(values)
    code = rng.choice([0, 8, 17, 22, 24, 29, 40, 1000, -1])
    if hasattr(value, "data_type"):
        value.data_type = code
    else:
        value.type.tensor_type.elem_type = code
    return True


MUTATIONS: list[Callable[[bytes, random.Random], bytes]] = [
    _flip_bytes, _truncate, _insert_bytes, _duplicate_chunk, edge_attribute_values,
    edge_initializer_values, huge_dimensions, element_type_codes,
]


def apply_invalid_utf8(data: bytes, rng: random.Random) -> bytes:
    """Names and op types with invalid UTF-8 bytes (protobuf's Python API cannot write them)."""
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(data)
    nodes = list(model.graph.node)
    if not nodes:
        return _flip_bytes(data, rng)
    marker = f"zq{rng.randrange(1 << 30):08x}"
    node = rng.choice(nodes)
    choice = rng.randrange(3)
    if choice == 0:
        node.op_type = marker
    elif choice == 1:
        node.name = marker
    else:
        if not model.graph.input:
            return _flip_bytes(data, rng)
        old = model.graph.input[0].name
        model.graph.input[0].name = marker
        for n in model.graph.node:
            for i, name in enumerate(n.input):
                if name == old:
                    n.input[i] = marker
    raw = model.SerializeToString()
    # Same length, so every length prefix stays right: "zq" + 8 hex digits -> invalid UTF-8.
    bad = b"\xff\xfe" + bytes(rng.randrange(0x80, 0x100) for _ in range(8))
    return raw.replace(marker.encode(), bad)


MUTATIONS.append(apply_invalid_utf8)


def edge_feed_values(feeds: dict, rng: random.Random) -> dict | None:
    """An integer feed (shapes, axes, repeats, pads, indices, k) gets an edge value; the model is
    unchanged. None when the case has no integer feed."""
    candidates = [name for name, value in feeds.items() if value.dtype.kind in "iu" and value.size]
    if not candidates:
        return None
    name = rng.choice(candidates)
    array = feeds[name].copy()
    info = np.iinfo(array.dtype)
    value = rng.choice(_EDGE_INTS)
    array.flat[rng.randrange(array.size)] = min(max(value, info.min), info.max)
    return {**feeds, name: array}


def endless_loop_model() -> tuple[bytes, dict]:
    """A valid ~300-byte model: Loop with M = 2**62 and a one-node body."""
    import onnx
    from onnx import TensorProto, helper

    body = helper.make_graph(
        [helper.make_node("Add", ["x_in", "one"], ["x_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [1])],
        initializer=[helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "cond", "x"], ["y"], body=body)], "endless",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        initializer=[helper.make_tensor("M", TensorProto.INT64, [], [1 << 62]),
                     helper.make_tensor("cond", TensorProto.BOOL, [], [True])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    return model.SerializeToString(), {"x": np.zeros(1, np.float32)}


# ---- the worker -------------------------------------------------------------------------------

def _under_asan() -> bool:
    return "libasan" in os.environ.get("LD_PRELOAD", "")


def _worker(conn) -> None:
    # AddressSanitizer reserves terabytes of address space for its shadow memory, so under it the
    # limit comes from its allocator options instead (set by Worker._start).
    if not _under_asan():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    import onnx_light.runtime as runtime

    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        model_bytes, feeds = message
        try:
            session = runtime.RuntimeSession(model_bytes, runtime.RuntimeSessionOptions(num_threads=1))
            context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(23)))
            context.run_timeout = RUN_TIMEOUT_S
            known = set(session.input_names)
            session.run(context, {k: v for k, v in feeds.items() if k in known})
            conn.send(("ok", ""))
        except MemoryError as error:
            conn.send(("memory", f"MemoryError: {error}"[:300]))
        except BaseException as error:  # noqa: BLE001 - every exception is classified
            name = type(error).__name__
            outcome = "error" if isinstance(error, tuple(_builtin(n) for n in DOCUMENTED_ERRORS)) else "unexpected"
            try:
                text = str(error)
            except BaseException:  # noqa: BLE001
                text = "<str() failed>"
            conn.send((outcome, f"{name}: {text}"[:300]))


def _builtin(name: str) -> type:
    return getattr(__import__("builtins"), name)


class Worker:
    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker, args=(child,), daemon=True)
        saved = os.environ.get("ASAN_OPTIONS")
        if _under_asan():
            # An allocation over the worker's memory limit fails (std::bad_alloc) instead of
            # ending the process with an allocation-size report.
            os.environ["ASAN_OPTIONS"] = ":".join(
                filter(None, [saved, "allocator_may_return_null=1",
                              f"max_allocation_size_mb={MEMORY_LIMIT >> 20}"]))
        try:
            self.process.start()
        finally:
            if saved is None:
                os.environ.pop("ASAN_OPTIONS", None)
            else:
                os.environ["ASAN_OPTIONS"] = saved
        child.close()

    def probe(self, model_bytes: bytes, feeds: dict) -> tuple[str, str]:
        try:
            self.conn.send((model_bytes, feeds))
        except (BrokenPipeError, OSError):
            self.restart()
            self.conn.send((model_bytes, feeds))
        if not self.conn.poll(WALL_LIMIT_S):
            self.restart()
            return "hang", f"no answer within {WALL_LIMIT_S:.0f} s"
        try:
            return self.conn.recv()
        except EOFError:
            self.process.join(5)
            code = self.process.exitcode
            self.restart()
            if code is not None and code < 0:
                return "crash", f"killed by signal {-code}"
            return "memory" if code == 1 else "crash", f"worker exited with code {code}"

    def restart(self) -> None:
        self.process.kill()
        self.process.join(5)
        self._start()

    def close(self) -> None:
        self.conn.close()
        self.process.kill()
        self.process.join(5)


# ---- the probe run ----------------------------------------------------------------------------

def seeds_corpus() -> list[tuple[str, bytes, dict]]:
    from onnx_light import backend_test as bt

    corpus = []
    for case in bt.load_cases():
        feeds = {name: value for name, value in case.feeds().items() if isinstance(value, np.ndarray)}
        corpus.append((case.name, case.model, feeds))
    return corpus


def run(seed: int, probes: int, time_budget: float | None, save: str | None,
        progress: bool = False) -> dict:
    rng = random.Random(seed)
    corpus = seeds_corpus()
    endless, endless_feeds = endless_loop_model()
    worker = Worker()
    counts: collections.Counter = collections.Counter()
    by_mutation: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    findings = []
    start = time.monotonic()
    done = 0
    try:
        for n in range(probes):
            if time_budget is not None and time.monotonic() - start > time_budget:
                break
            if n % 50 == 0:
                name, mutation_name, data, feeds = "endless_loop", "endless_loop", endless, endless_feeds
            else:
                name, model, feeds = rng.choice(corpus)
                mutated_feeds = edge_feed_values(feeds, rng) if rng.random() < 0.2 else None
                if mutated_feeds is not None:
                    mutation_name, data, feeds = "edge_feed_values", model, mutated_feeds
                else:
                    mutation = rng.choice(MUTATIONS)
                    mutation_name = mutation.__name__.lstrip("_")
                    try:
                        data = mutation(model, rng)
                    except Exception:  # noqa: BLE001 - the mutation could not parse its own input
                        data = _flip_bytes(model, rng)
            outcome, detail = worker.probe(data, feeds)
            counts[outcome] += 1
            by_mutation[mutation_name][outcome] += 1
            done += 1
            if outcome not in ACCEPTABLE:
                findings.append((n, name, mutation_name, outcome, detail))
                if save:
                    os.makedirs(save, exist_ok=True)
                    with open(os.path.join(save, f"{n}.onnx"), "wb") as f:
                        f.write(data)
                    np.savez(os.path.join(save, f"{n}.npz"), **feeds)
                    with open(os.path.join(save, f"{n}.txt"), "w", encoding="utf-8") as f:
                        f.write(f"{name} / {mutation_name}: {outcome}: {detail}\n")
            if progress and done % 200 == 0:
                print(f"{done} probes, {dict(counts)}", file=sys.stderr)
    finally:
        worker.close()
    return {"seed": seed, "probes": done, "seconds": time.monotonic() - start, "counts": dict(counts),
            "by_mutation": {k: dict(v) for k, v in by_mutation.items()}, "findings": findings}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--probes", type=int, default=2000)
    parser.add_argument("--time-budget", type=float, default=None, help="stop after this many seconds")
    parser.add_argument("--save", help="folder for reproducers of unacceptable outcomes")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.seed, args.probes, args.time_budget, args.save, args.progress)
    print(f"{result['probes']} probes in {result['seconds']:.0f} s (seed {result['seed']}): "
          + ", ".join(f"{k} {v}" for k, v in sorted(result["counts"].items())))
    for mutation, counts in sorted(result["by_mutation"].items()):
        print(f"  {mutation:28s} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for n, name, mutation, outcome, detail in result["findings"][:50]:
        print(f"  #{n} {name} / {mutation}: {outcome}: {detail}")
    return 0 if not result["findings"] else 1


if __name__ == "__main__":
    sys.exit(main())
