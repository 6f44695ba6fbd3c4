"""Runs the ONNX backend *node* test cases through onnx-light (and optionally ONNX Runtime).

    python -m onnx_light.backend_test                          # our runtime, every case
    python -m onnx_light.backend_test --backend onnxruntime    # ONNX Runtime on the same cases
    python -m onnx_light.backend_test --backend both --json report.json
    python -m onnx_light.backend_test -k "^test_gather" --op Gather

Where the cases come from: the installed ``onnx`` package. The onnx 1.23.2 wheel does not ship
``onnx/backend/test/data/node``; the node cases are produced in memory by onnx's own case
definitions (``onnx.backend.test.case.node``: every ``export*`` function calls ``expect`` which
appends a ``TestCase`` holding the model and one input/output data set, plus one ``_expanded``
case per function body of the operator). ``onnx.backend.test.loader.load_model_tests(kind="node")``
and ``onnx.backend.test.case.node.collect_testcases()`` both return that list. When the installed
onnx does have the on-disk ``data/node`` folder, the folder is read instead.

Every case runs, whatever opset its model imports, in a fresh session and context. The summary
also counts the cases per imported ai.onnx opset.

Tolerances are the ones ONNX Runtime's own backend-test driver uses: rtol 1e-3, atol 1e-5. The
onnx case definitions give every node case the same generator constants (rtol 1e-3, atol 1e-7),
so no case states a tolerance of its own; a case that does (a value other than those constants)
is compared with its own values. bfloat16 outputs get rtol >= 2**-6 (two bfloat16 ulps), as in
onnx's runner. Integer, boolean and string outputs must match exactly.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import re
import sys
import time
import warnings
from collections import Counter, defaultdict
from typing import Any, Callable, Iterable, Sequence

import numpy as np

MAX_OPSET = 28  # the newest ai.onnx opset of the pinned onnx (runtime.MAX_ONNX_OPSET)
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-5
# What onnx's case generator writes into every node TestCase (not a statement about the case).
GENERATOR_RTOL = 1e-3
GENERATOR_ATOL = 1e-7

PASS = "pass"
FAIL = "fail"  # ran, but an output differs
ERROR = "error"  # raised something other than "not implemented"
UNSUPPORTED = "unsupported"  # operator / type / operator version not implemented (NotImplementedError)
STATUSES = (PASS, FAIL, ERROR, UNSUPPORTED)

BACKENDS = ("ours", "onnxruntime")
_EXPANDED = re.compile(r"^(?P<base>.*)_expanded(?:_ver(?P<ver>\d+))?$")


# ---------------------------------------------------------------------------------------------
# Cases


@dataclasses.dataclass
class NodeCase:
    """One backend node case, ready to run: the serialized model and normalized data."""

    name: str
    op_type: str  # the operator under test ("ai.onnx.ml:Binarizer" outside the default domain)
    opset: int | None  # the model's ai.onnx opset (None when it imports only other domains)
    expanded: bool  # the operator's function body instead of the operator itself
    model: bytes
    input_names: list[str]
    output_names: list[str]
    inputs: list[Any]
    outputs: list[Any]
    rtol: float
    atol: float

    def feeds(self) -> dict[str, Any]:
        return dict(zip(self.input_names, self.inputs))


def normalize(value: Any) -> Any:
    """A case value as NumPy data: arrays (contiguous), lists for sequences, None for empty optionals."""
    import onnx
    from onnx import numpy_helper

    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, onnx.TensorProto):
        return _contiguous(numpy_helper.to_array(value))
    if isinstance(value, onnx.SequenceProto):
        return [normalize(v) for v in numpy_helper.to_list(value)]
    if isinstance(value, onnx.OptionalProto):
        return normalize(numpy_helper.to_optional(value))
    return _contiguous(value)


def _contiguous(value: Any) -> np.ndarray:
    # np.ascontiguousarray would turn a 0-d array into shape (1,): only copy when needed.
    array = np.asarray(value)
    return array if array.flags.c_contiguous else np.ascontiguousarray(array).reshape(array.shape)


def onnx_version() -> str:
    import onnx

    return onnx.__version__


def _raw_testcases() -> list:
    """The onnx TestCase objects of kind "node" the installed onnx provides."""
    import onnx.backend.test.loader as loader

    # The case definitions reseed NumPy's global generator: leave it as the caller had it.
    rng_state = np.random.get_state()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            node_dir = os.path.join(loader.DATA_DIR, "node")
            if os.path.isdir(node_dir):  # onnx < 1.23: cases stored as files
                return loader.load_model_tests(kind="node")
            from onnx.backend.test.case.node import collect_testcases

            return list(collect_testcases())
    finally:
        np.random.set_state(rng_state)


def _read_disk_case(case) -> tuple[Any, list]:
    """Model and data sets of an on-disk case folder (model.onnx, test_data_set_N/{input,output}_K.pb)."""
    import glob

    import onnx
    from onnx import numpy_helper

    model = onnx.load(os.path.join(case.model_dir, "model.onnx"))

    def parse(data: bytes, value_info) -> Any:
        kind = value_info.type.WhichOneof("value") if value_info is not None else "tensor_type"
        if kind == "sequence_type":
            proto = onnx.SequenceProto()
            proto.ParseFromString(data)
            return numpy_helper.to_list(proto)
        if kind == "optional_type":
            proto = onnx.OptionalProto()
            proto.ParseFromString(data)
            return numpy_helper.to_optional(proto)
        proto = onnx.TensorProto()
        proto.ParseFromString(data)
        return numpy_helper.to_array(proto)

    def read(folder: str, prefix: str, infos) -> list:
        paths = sorted(glob.glob(os.path.join(folder, f"{prefix}_*.pb")),
                       key=lambda p: int(re.findall(r"_(\d+)\.pb$", p)[0]))
        values = []
        for k, path in enumerate(paths):
            with open(path, "rb") as f:
                values.append(parse(f.read(), infos[k] if k < len(infos) else None))
        return values

    data_sets = []
    for folder in sorted(glob.glob(os.path.join(case.model_dir, "test_data_set*"))):
        data_sets.append((read(folder, "input", list(model.graph.input)),
                          read(folder, "output", list(model.graph.output))))
    return model, data_sets


def _ai_onnx_opset(model) -> int | None:
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    return max(versions) if versions else None


def _tested_op(model) -> str:
    node = model.graph.node[0]
    return f"{node.domain}:{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type


def load_cases(pattern: str | None = None) -> list[NodeCase]:
    """Every node case of the installed onnx, sorted by name (optionally filtered by a regex)."""
    regex = re.compile(pattern) if pattern else None
    raw = _raw_testcases()
    models: dict[str, tuple[Any, list]] = {}
    for case in raw:
        if case.model is not None:
            models[case.name] = (case.model, list(case.data_sets or []))
        elif case.model_dir:
            models[case.name] = _read_disk_case(case)
    ops: dict[str, str] = {}
    for name, (model, _) in models.items():
        if not _EXPANDED.match(name) and len(model.graph.node) == 1:
            ops[name] = _tested_op(model)
    cases = []
    for case in raw:
        if case.name not in models or (regex and not regex.search(case.name)):
            continue
        model, data_sets = models[case.name]
        expanded = _EXPANDED.match(case.name)
        if expanded:
            op = ops.get(expanded.group("base")) or _op_from_expanded_names(model)
        else:
            op = ops.get(case.name) or _tested_op(model)
        explicit = (case.rtol, case.atol) != (GENERATOR_RTOL, GENERATOR_ATOL)
        inputs, outputs = data_sets[0] if data_sets else ([], [])
        cases.append(NodeCase(
            name=case.name,
            op_type=op,
            opset=_ai_onnx_opset(model),
            expanded=bool(expanded),
            model=model.SerializeToString(),
            input_names=[i.name for i in model.graph.input][: len(inputs)],
            output_names=[o.name for o in model.graph.output],
            inputs=[normalize(v) for v in inputs],
            outputs=[normalize(v) for v in outputs],
            rtol=case.rtol if explicit else DEFAULT_RTOL,
            atol=case.atol if explicit else DEFAULT_ATOL,
        ))
    cases.sort(key=lambda c: c.name)
    return cases


def _op_from_expanded_names(model) -> str:
    # expect() prefixes internal names with "<Op>_<case name>_expanded_function_".
    for node in model.graph.node:
        for name in node.output:
            if "_expanded_function_" in name:
                return name.split("_", 1)[0]
    return "?"


# ---------------------------------------------------------------------------------------------
# Backends


class OursBackend:
    name = "ours"

    def __init__(self):
        import onnx_light.runtime as runtime

        self.runtime = runtime

    def is_unsupported(self, error: BaseException) -> bool:
        return isinstance(error, NotImplementedError)

    def run(self, case: NodeCase) -> list[Any]:
        rt = self.runtime
        session = rt.RuntimeSession(case.model)
        feeds = {name: _to_ours(value) for name, value in case.feeds().items()}
        out = session.run(rt.RuntimeContext(), feeds)
        return [_from_ours(out.get(name)) for name in case.output_names]


# NumPy (ml_dtypes) keeps these one element per byte; the runtime packs them, which is a copy the
# caller asks for explicitly with runtime.Tensor.pack.
_SUB_BYTE_DTYPE_NAMES = frozenset({"int4", "uint4", "int2", "uint2", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"})


def _to_ours(value: Any) -> Any:
    import onnx_light.runtime as runtime

    if isinstance(value, list):
        return [_to_ours(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype.name in _SUB_BYTE_DTYPE_NAMES:
        return runtime.Tensor.pack(value)
    return value


def _from_ours(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [_from_ours(v) for v in value]
    if isinstance(value, bytes):
        return value
    return value.numpy()


class OrtBackend:
    name = "onnxruntime"

    def __init__(self):
        import onnxruntime as ort

        self.ort = ort
        from onnxruntime.capi import onnxruntime_pybind11_state as state

        self._not_implemented = getattr(state, "NotImplemented", None)

    def is_unsupported(self, error: BaseException) -> bool:
        if self._not_implemented is not None and isinstance(error, self._not_implemented):
            return True
        return isinstance(error, NotImplementedError)

    def run(self, case: NodeCase) -> list[Any]:
        ort = self.ort
        options = ort.SessionOptions()
        options.log_severity_level = 4
        session = ort.InferenceSession(case.model, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        values = session.run(names, case.feeds())
        got = dict(zip(names, values))
        return [got.get(name) for name in case.output_names]


def make_backend(name: str):
    if name == "ours":
        return OursBackend()
    if name in ("onnxruntime", "ort"):
        return OrtBackend()
    raise ValueError(f"unknown backend {name!r}; expected one of {BACKENDS}")


# ---------------------------------------------------------------------------------------------
# Comparison


class Mismatch(AssertionError):
    """An output differs; carries the largest absolute and relative error when numeric."""

    def __init__(self, message: str, max_abs: float | None = None, max_rel: float | None = None):
        super().__init__(message)
        self.max_abs = max_abs
        self.max_rel = max_rel


def _dtype_family(dtype: np.dtype) -> str:
    if dtype == object or dtype.kind in "USO":
        return "string"
    if dtype.kind == "b":
        return "bool"
    if dtype.kind in "iu":
        return "int"
    if dtype.kind in "fc":
        return "float"
    name = dtype.name  # ml_dtypes: bfloat16, float8_*, float4_*, int4, uint4, int2, ...
    if "int" in name:
        return "int"
    return "float"


def compare(actual: Any, expected: Any, rtol: float, atol: float, where: str = "output") -> None:
    """Raises Mismatch unless `actual` matches `expected` (arrays, lists, None) within tolerance."""
    if expected is None:
        if actual is not None:
            raise Mismatch(f"{where}: expected an empty optional (None), got {type(actual).__name__}")
        return
    if isinstance(expected, list):
        if not isinstance(actual, list):
            raise Mismatch(f"{where}: expected a sequence, got {type(actual).__name__}")
        if len(actual) != len(expected):
            raise Mismatch(f"{where}: sequence length {len(actual)} != expected {len(expected)}")
        worst: Mismatch | None = None
        for i, (a, e) in enumerate(zip(actual, expected)):
            try:
                compare(a, e, rtol, atol, f"{where}[{i}]")
            except Mismatch as m:
                if worst is None or (m.max_abs or 0) > (worst.max_abs or 0):
                    worst = m
        if worst is not None:
            raise worst
        return
    if actual is None or isinstance(actual, list):
        raise Mismatch(f"{where}: expected a tensor, got {'None' if actual is None else 'a sequence'}")
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        raise Mismatch(f"{where}: shape {actual.shape} != expected {expected.shape}")
    family = _dtype_family(expected.dtype)
    if family == "string":
        a = np.vectorize(_as_text, otypes=[object])(actual) if actual.size else actual
        e = np.vectorize(_as_text, otypes=[object])(expected) if expected.size else expected
        if actual.dtype.kind not in "USO" or not np.array_equal(a, e):
            raise Mismatch(f"{where}: strings differ")
        return
    if actual.dtype != expected.dtype:
        raise Mismatch(f"{where}: dtype {actual.dtype} != expected {expected.dtype}")
    if family in ("int", "bool"):
        a = actual.astype(np.int64) if family == "int" and actual.dtype.kind not in "iu" else actual
        e = expected.astype(np.int64) if family == "int" and expected.dtype.kind not in "iu" else expected
        bad = a != e
        if np.any(bad):
            diff = None
            if family == "int":
                diff = float(np.max(np.abs(a[bad].astype(np.float64) - e[bad].astype(np.float64))))
            raise Mismatch(f"{where}: {int(bad.sum())} of {bad.size} elements differ "
                           f"(exact match required)", diff, None)
        return
    if expected.dtype.name == "bfloat16":
        rtol = max(rtol, 2.0**-6)
    if expected.dtype.kind == "c":
        a, e = actual.astype(np.complex128), expected.astype(np.complex128)
    else:
        a, e = actual.astype(np.float64), expected.astype(np.float64)
    a_nan, e_nan = np.isnan(a), np.isnan(e)
    with np.errstate(all="ignore"):
        err = np.abs(a - e)
        e_inf = np.isinf(e)
        ok = np.where(e_inf, a == e, err <= atol + rtol * np.abs(np.where(e_inf, 0, e))) | (a_nan & e_nan)
    ok &= a_nan == e_nan
    if not np.all(ok):
        bad = ~ok
        finite = bad & np.isfinite(err)
        max_abs = float(np.max(err[finite])) if np.any(finite) else math.inf
        with np.errstate(all="ignore"):
            rel = err[finite] / np.abs(e[finite])
        rel = rel[np.isfinite(rel)]
        max_rel = float(np.max(rel)) if rel.size else None
        if np.any(bad & ~np.isfinite(err)):
            max_abs = math.inf
        raise Mismatch(f"{where}: {int(bad.sum())} of {bad.size} elements differ, "
                       f"max abs error {max_abs:.3g}"
                       + (f", max rel error {max_rel:.3g}" if max_rel is not None else "")
                       + f" (rtol {rtol:g}, atol {atol:g})", max_abs, max_rel)


def _as_text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


# ---------------------------------------------------------------------------------------------
# Running


@dataclasses.dataclass
class Result:
    status: str
    reason: str = ""
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    seconds: float = 0.0

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        for key in ("max_abs_error", "max_rel_error"):
            if d[key] is not None and not math.isfinite(d[key]):
                d[key] = str(d[key])
        return d


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    text = " ".join(text.split("\n")[:3])
    return f"{type(error).__name__}: {text}"[:400]


def run_case(case: NodeCase, backend) -> Result:
    """Runs one case on one backend and classifies the outcome."""
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = backend.run(case)
    except Exception as error:  # noqa: BLE001 - every failure is a result
        status = UNSUPPORTED if backend.is_unsupported(error) else ERROR
        return Result(status, _first_line(error), seconds=time.perf_counter() - start)
    seconds = time.perf_counter() - start
    try:
        if len(actual) != len(case.outputs):
            raise Mismatch(f"{len(actual)} outputs, expected {len(case.outputs)}")
        worst: Mismatch | None = None
        for name, a, e in zip(case.output_names, actual, case.outputs):
            try:
                compare(a, e, case.rtol, case.atol, where=name)
            except Mismatch as m:
                if worst is None or (m.max_abs or 0) > (worst.max_abs or 0):
                    worst = m
        if worst is not None:
            raise worst
    except Mismatch as m:
        return Result(FAIL, str(m), m.max_abs, m.max_rel, seconds)
    return Result(PASS, seconds=seconds)


class Progress:
    """A one-line textual progress bar on stderr."""

    def __init__(self, total: int, enabled: bool, stream=None):
        self.total = max(total, 1)
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = 0
        self.start = time.monotonic()
        self._last = 0.0

    def clear(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def update(self, label: str = "", force: bool = False) -> None:
        self.done += 1
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:  # redraw at most 10 times a second
            if not force and now - self._last < 0.1 and self.done < self.total:
                return
        elif not force and self.done * 10 // self.total == (self.done - 1) * 10 // self.total:
            return  # not a terminal: one line per tenth of the cases
        self._last = now
        width = 30
        filled = int(width * self.done / self.total)
        elapsed = now - self.start
        line = (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"{elapsed:5.1f}s {label[:40]}")
        if self.tty:
            self.stream.write("\r\x1b[K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def run_all(cases: Sequence[NodeCase], backends: Sequence, on_result: Callable | None = None,
            progress: Progress | None = None) -> dict[str, dict[str, Result]]:
    """Runs every case on every backend; returns {case name: {backend name: Result}}."""
    results: dict[str, dict[str, Result]] = {}
    for case in cases:
        per_backend = {b.name: run_case(case, b) for b in backends}
        results[case.name] = per_backend
        if on_result is not None:
            if progress is not None:
                progress.clear()
            on_result(case, per_backend)
        if progress is not None:
            progress.update(case.name)
    if progress is not None:
        progress.finish()
    return results


# ---------------------------------------------------------------------------------------------
# Summaries and the report


def tally(cases: Sequence[NodeCase], results: dict, backend: str) -> dict[str, int]:
    counts = Counter(results[c.name][backend].status for c in cases)
    out = {s: counts.get(s, 0) for s in STATUSES}
    out["total"] = len(cases)
    return out


def percent(counts: dict[str, int]) -> float:
    return 100.0 * counts[PASS] / counts["total"] if counts["total"] else 0.0


def per_operator(cases: Sequence[NodeCase], results: dict, backends: Sequence[str]) -> dict:
    ops: dict[str, list[NodeCase]] = defaultdict(list)
    for c in cases:
        ops[c.op_type].append(c)
    return {op: {b: tally(cs, results, b) for b in backends} for op, cs in sorted(ops.items())}


def per_opset(cases: Sequence[NodeCase], results: dict, backends: Sequence[str]) -> dict:
    """{ai.onnx opset a case imports (None: other domains only): {backend: tally}}, by opset."""
    groups: dict[int | None, list[NodeCase]] = defaultdict(list)
    for c in cases:
        groups[c.opset].append(c)
    order = sorted(groups, key=lambda o: (o is None, o or 0))
    return {o: {b: tally(groups[o], results, b) for b in backends} for o in order}


# ours: "the model imports ai.onnx opset 24, and onnx-light implements operator 'Cast' only for
# opset versions 1-23": a version we do not implement of an operator we have.
_VERSION_REFUSAL = re.compile(
    r"the model imports (?P<domain>\S+) opset (?P<opset>\d+), and onnx-light implements operator "
    r"'(?P<op>[^']+)' only for opset versions")


def parse_version_refusal(reason: str) -> tuple[str, str, int] | None:
    """(domain, operator, imported opset) of an operator-version refusal message, else None.

    The domain is "" for ai.onnx; the operator is the bare op type."""
    m = _VERSION_REFUSAL.search(reason)
    if not m:
        return None
    domain = "" if m.group("domain") == "ai.onnx" else m.group("domain")
    return domain, m.group("op").rpartition("::")[2], int(m.group("opset"))


def version_refusals(cases: Sequence[NodeCase], results: dict, backend: str = "ours") -> dict[str, int]:
    """{operator: unsupported cases} for refusals of an operator version (not of a missing operator)."""
    refused: Counter = Counter()
    for c in cases:
        r = results[c.name][backend]
        parsed = parse_version_refusal(r.reason) if r.status == UNSUPPORTED else None
        if parsed:
            refused[parsed[1]] += 1
    return dict(sorted(refused.items(), key=lambda kv: (-kv[1], kv[0])))

# ours: "no kernel for operator 'Cast' at opset 23"; ORT: "Could not find an implementation for Cast(23)"
_MISSING_OP = re.compile(r"no kernel for operator '([^']+)'|Could not find an implementation for ([A-Za-z0-9_]+)\(")


def _missing_op(reason: str) -> str | None:
    m = _MISSING_OP.search(reason)
    return (m.group(1) or m.group(2)) if m else None


def missing_operators(cases: Sequence[NodeCase], results: dict, backend: str = "ours") -> list[dict]:
    """Operators a backend reports as unimplemented, ranked by the cases they would unblock.

    ``cases`` counts the cases that stop at that operator; ``sole`` the unsupported cases whose
    model uses no other reported-missing operator (implementing it alone would let them run).
    """
    import onnx

    blocked: Counter = Counter()
    missing: set[str] = set()
    for c in cases:
        r = results[c.name][backend]
        if r.status == UNSUPPORTED:
            op = _missing_op(r.reason)
            if op:
                missing.add(op)
                blocked[op] += 1
    sole: Counter = Counter()
    for c in cases:
        r = results[c.name][backend]
        if r.status != UNSUPPORTED or not _missing_op(r.reason):
            continue
        used = _ops_used(onnx.load_model_from_string(c.model).graph) & missing
        if len(used) == 1:
            sole[next(iter(used))] += 1
    ranked = [{"operator": op, "cases": blocked[op], "sole": sole[op], "function": _has_function(op)}
              for op in missing]
    ranked.sort(key=lambda d: (-d["cases"], -d["sole"], d["operator"]))
    return ranked


def _has_function(op: str) -> bool:
    """Whether onnx defines the operator (newest version) by a function body of other operators."""
    import onnx.defs

    domain, _, name = op.rpartition("::")
    try:
        schema = onnx.defs.get_schema(name, domain=domain)
    except Exception:  # noqa: BLE001 - unknown to this onnx
        return False
    return bool(schema.has_function or schema.has_context_dependent_function)


def _ops_used(graph) -> set[str]:
    ops = set()
    for node in graph.node:
        ops.add(node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}")
        ops.add(node.op_type)
        for attr in node.attribute:
            if attr.HasField("g"):
                ops |= _ops_used(attr.g)
            for g in attr.graphs:
                ops |= _ops_used(g)
    return ops


def failure_causes(cases: Sequence[NodeCase], results: dict, backend: str = "ours",
                   limit: int = 15) -> list[tuple[str, int]]:
    """The most common failure reasons, with numbers and names folded away."""
    causes: Counter = Counter()
    for c in cases:
        r = results[c.name][backend]
        if r.status in (FAIL, ERROR, UNSUPPORTED):
            causes[f"{r.status}: {_fold_reason(r.reason)}"] += 1
    return causes.most_common(limit)


def _fold_reason(reason: str) -> str:
    text = _MISSING_OP.sub("no kernel for operator '*'", reason)
    text = re.sub(r"at opset \d+", "at opset N", text)
    text = re.sub(r"node '[^']*'", "node", text)
    text = re.sub(r"\([A-Za-z0-9_.:]+\)", "(Op)", text)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", text)
    return text[:160]


def report(cases: Sequence[NodeCase], results: dict, backends: Sequence[str], elapsed: float) -> dict:
    meta: dict[str, Any] = {
        "onnx_version": onnx_version(),
        "rtol_default": DEFAULT_RTOL,
        "atol_default": DEFAULT_ATOL,
        "seconds": round(elapsed, 3),
    }
    if "onnxruntime" in backends:
        import onnxruntime

        meta["onnxruntime_version"] = onnxruntime.__version__
    if "ours" in backends:
        import onnx_light

        meta["onnx_light_version"] = getattr(onnx_light, "__version__", "?")
    return {
        **meta,
        "backends": list(backends),
        "totals": {b: {**tally(cases, results, b), "pass_percent": round(percent(tally(cases, results, b)), 2)}
                   for b in backends},
        "operators": per_operator(cases, results, backends),
        "opsets": [{"opset": o, **{b: t[b] for b in backends}}
                   for o, t in per_opset(cases, results, backends).items()],
        "missing_operators": {b: missing_operators(cases, results, b) for b in backends},
        "version_refusals": {b: version_refusals(cases, results, b) for b in backends},
        "cases": [
            {"name": c.name, "op_type": c.op_type, "opset": c.opset, "expanded": c.expanded,
             "rtol": c.rtol, "atol": c.atol,
             "results": {b: results[c.name][b].as_dict() for b in backends}}
            for c in cases
        ],
    }


def _case_line(case: NodeCase, per_backend: dict[str, Result]) -> str:
    parts = []
    for name, r in per_backend.items():
        label = "" if len(per_backend) == 1 else f"{'ort' if name == 'onnxruntime' else name}="
        text = f"{label}{r.status}"
        if r.status == FAIL:
            err = "?" if r.max_abs_error is None else f"{r.max_abs_error:.3g}"
            text += f" (max abs error {err}: {r.reason})"
        elif r.status in (ERROR, UNSUPPORTED):
            text += f" ({r.reason})"
        parts.append(text)
    return f"{case.name:<60} " + "  ".join(parts)


def _opset_label(opset: int | None) -> str:
    return "none (other domains only)" if opset is None else str(opset)


def format_summary(cases: Sequence[NodeCase], results: dict, backends: Sequence[str]) -> str:
    lines = []
    ops = per_operator(cases, results, backends)
    short = {"ours": "ours", "onnxruntime": "ort"}
    header = f"{'operator':<34}{'cases':>6}"
    for b in backends:
        header += f"  {short[b] + ' pass':>9}{'fail':>5}{'err':>5}{'unsup':>6}"
    lines += ["", "Per operator", header, "-" * len(header)]
    for op, per_b in ops.items():
        first = per_b[backends[0]]
        row = f"{op[:33]:<34}{first['total']:>6}"
        for b in backends:
            t = per_b[b]
            row += f"  {t[PASS]:>9}{t[FAIL]:>5}{t[ERROR]:>5}{t[UNSUPPORTED]:>6}"
        lines.append(row)
    header = f"{'ai.onnx opset':<26}{'cases':>6}" + "".join(f"  {short[b] + ' pass':>9}" for b in backends)
    lines += ["", "Per imported opset", header, "-" * len(header)]
    for opset, per_b in per_opset(cases, results, backends).items():
        row = f"{_opset_label(opset):<26}{per_b[backends[0]]['total']:>6}"
        row += "".join(f"  {per_b[b][PASS]:>9}" for b in backends)
        lines.append(row)
    lines += ["", f"Overall (onnx {onnx_version()} node cases, every case run)"]
    for b in backends:
        t = tally(cases, results, b)
        lines.append(f"  {b:<12} {t[PASS]}/{t['total']} passed ({percent(t):.1f}%), {t[FAIL]} failed, "
                     f"{t[ERROR]} errors, {t[UNSUPPORTED]} unsupported")
    if "ours" in backends:
        refused = version_refusals(cases, results, "ours")
        if refused:
            lines += ["", "Operator versions ours does not implement (cases): "
                      + ", ".join(f"{op} ({n})" for op, n in refused.items())]
    return "\n".join(lines)


def format_markdown(cases: Sequence[NodeCase], results: dict, backends: Sequence[str]) -> str:
    """The results as Markdown: overall counts, missing operators, failure causes, per operator."""
    import platform

    title = {"ours": "onnx-light", "onnxruntime": "ONNX Runtime"}
    versions = [f"onnx {onnx_version()}"]
    if "onnxruntime" in backends:
        import onnxruntime

        versions.append(f"onnxruntime {onnxruntime.__version__}")
    versions.append(f"numpy {np.__version__}, Python {platform.python_version()}")
    totals = {b: tally(cases, results, b) for b in backends}
    first = totals[backends[0]]
    out = [
        f"Cases: {first['total']} node cases from {versions[0]}, all of them run. "
        f"Versions: {', '.join(versions)}.",
        "",
        "| backend | passed | % | failed (wrong values) | errors | unsupported |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for b in backends:
        t = totals[b]
        out.append(f"| {title[b]} | {t[PASS]} / {t['total']} | {percent(t):.1f}% | {t[FAIL]} | {t[ERROR]} | "
                   f"{t[UNSUPPORTED]} |")
    for b in backends:
        subsets = {"operator cases": [c for c in cases if not c.expanded],
                   "`_expanded` cases": [c for c in cases if c.expanded]}
        parts = []
        for label, subset in subsets.items():
            t = tally(subset, results, b)
            parts.append(f"{label} {t[PASS]} / {t['total']} ({percent(t):.1f}%)")
        out.append("")
        out.append(f"{title[b]}: " + ", ".join(parts) + ".")
    out += ["", "### Per imported opset", "",
            "The ai.onnx opset each case's model imports (usually the tested operator's newest "
            "version), with the cases each backend passes.", "",
            "| ai.onnx opset | cases |" + "".join(f" {title[b]} passed |" for b in backends),
            "|---|---:|" + "---:|" * len(backends)]
    for opset, per_b in per_opset(cases, results, backends).items():
        out.append(f"| {_opset_label(opset)} | {per_b[backends[0]]['total']} |"
                   + "".join(f" {per_b[b][PASS]} |" for b in backends))
    if "ours" in backends:
        missing = missing_operators(cases, results, "ours")
        out += ["", "### Operators onnx-light does not implement yet", "",
                "Ranked by the run cases that stop at them (\"alone\": cases in which no other "
                "missing operator appears, so implementing this one would let them run; "
                "\"function\": onnx defines the operator's newest version by a function body; "
                "onnx-light expands such bodies, so these cases stop at an older version without one "
                "or at an operator the body uses).", "",
                "| operator | cases | alone | function |", "|---|---:|---:|:---:|"]
        out += [f"| {m['operator']} | {m['cases']} | {m['sole']} | {'yes' if m['function'] else ''} |"
                for m in missing]
        by_function = sum(m["cases"] for m in missing if m["function"])
        out += ["", f"Missing operators that onnx defines by a function body stop {by_function} cases."]
        causes = failure_causes(cases, results, "ours", limit=25)
        out += ["", "### Other failure causes (onnx-light)", "",
                "Every failed, erroring or unsupported case that is not a missing operator, grouped "
                "by its message with names and numbers folded.", "", "| cases | cause |", "|---:|---|"]
        out += [f"| {n} | {cause.replace('|', '/')} |" for cause, n in causes
                if "no kernel for operator" not in cause]
        refused = version_refusals(cases, results, "ours")
        out += ["", "### Operator versions onnx-light does not implement yet", "",
                "Cases refused because the model imports a version of an operator that onnx-light "
                "has, but not in that version (no case runs with another version's semantics).", "",
                "| operator | cases |", "|---|---:|"]
        out += [f"| {op} | {n} |" for op, n in refused.items()] or ["| (none) | 0 |"]
    ops = per_operator(cases, results, backends)
    header = "| operator | cases |" + "".join(f" {title[b]} pass | {title[b]} fail/err/unsup |" for b in backends)
    out += ["", "### Per operator", "",
            "Counts cover the operator's own cases and its `_expanded` (function body) cases.", "", header,
            "|---|---:|" + "---:|---|" * len(backends)]
    for op, per_b in ops.items():
        t0 = per_b[backends[0]]
        row = f"| {op} | {t0['total']} |"
        for b in backends:
            t = per_b[b]
            row += f" {t[PASS]} | {t[FAIL]}/{t[ERROR]}/{t[UNSUPPORTED]} |"
        out.append(row)
    return "\n".join(out) + "\n"


DOC_BEGIN = "<!-- backend_test results: begin -->"
DOC_END = "<!-- backend_test results: end -->"


def update_doc(path: str, markdown: str) -> None:
    """Replaces the block between DOC_BEGIN and DOC_END in `path` with `markdown`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    begin, end = text.find(DOC_BEGIN), text.find(DOC_END)
    if begin < 0 or end < begin:
        raise ValueError(f"{path} has no '{DOC_BEGIN}' ... '{DOC_END}' block")
    text = text[: begin + len(DOC_BEGIN)] + "\n" + markdown + text[end:]
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_expected_failures(path: str, cases: Sequence[NodeCase], results: dict,
                            backend: str = "ours") -> int:
    """Writes the expected-failures list the pytest suite reads: one case per line with its reason."""
    lines = [
        "# Backend node cases that onnx-light does not pass yet (see docs/conformance.md).",
        f"# Generated by `python -m onnx_light.backend_test --write-expected-failures` (onnx {onnx_version()}).",
        "# One case a line: <name> <status>: <reason>[  # note]. A listed case is still run and must still",
        "# fail; notes written after '  # ' survive regeneration.",
        "# Once a case passes, tests/python/test_backend_conformance.py asks for its line to be removed.",
    ]
    notes: dict[str, str] = {}  # hand-written "  # why" notes of cases that still fail are kept
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for raw in f:
                name, sep, note = raw.strip().partition("  # ")
                if sep and not name.startswith("#"):
                    notes[name.split(" ", 1)[0]] = note
    count = 0
    for c in cases:
        r = results[c.name][backend]
        if r.status in (FAIL, ERROR, UNSUPPORTED):
            reason = " ".join(r.reason.split())
            reason = re.sub(r"^[A-Za-z]+(Error)?: node '[^']*' \([^)]*\): ", "", reason)
            if r.status == FAIL:
                reason = reason.split(" (rtol")[0]
            note = f"  # {notes[c.name]}" if c.name in notes else ""
            lines.append(f"{c.name} {r.status}: {reason}{note}")
            count += 1
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return count


def read_expected_failures(path: str) -> dict[str, str]:
    """{case name: reason} from an expected-failures file (comments and blank lines ignored)."""
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition(" ")
            if name in out:
                raise ValueError(f"{path}: {name} is listed twice")
            out[name] = reason.strip() or "no reason given"
    return out


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m onnx_light.backend_test",
        description="Run the ONNX backend node test cases through onnx-light and/or ONNX Runtime.")
    parser.add_argument("--backend", choices=("ours", "onnxruntime", "both"), default="ours",
                        help="which runtime runs the cases; 'both' runs each case on both (default: ours)")
    parser.add_argument("-k", "--filter", metavar="REGEX", help="only cases whose name matches")
    parser.add_argument("--op", action="append", default=[], help="only cases of this operator (repeatable)")
    parser.add_argument("--json", metavar="PATH", help="write a JSON report")
    parser.add_argument("--write-expected-failures", metavar="PATH",
                        help="write the cases our runtime fails, with reasons, in the pytest list format")
    parser.add_argument("--markdown", metavar="PATH", help="write the results as Markdown tables")
    parser.add_argument("--update-doc", metavar="PATH",
                        help=f"replace the results block of a Markdown document ({DOC_BEGIN} ... {DOC_END})")
    parser.add_argument("--progress", action="store_true", help="show the progress bar even if stderr is not a TTY")
    parser.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-case lines, only the summaries")
    parser.add_argument("--list", action="store_true", help="list the selected cases and exit")
    args = parser.parse_args(list(argv) if argv is not None else None)
    from onnx_light._optional import require_onnx

    require_onnx("python -m onnx_light.backend_test (it reads onnx's node test cases)")
    cases = load_cases(args.filter)
    if args.op:
        cases = [c for c in cases if c.op_type in set(args.op)]
    if args.list:
        for c in cases:
            print(f"{c.name:<60} {c.op_type:<24} opset {c.opset}")
        return 0
    names = ["ours", "onnxruntime"] if args.backend == "both" else [args.backend]
    if args.write_expected_failures and "ours" not in names:
        parser.error("--write-expected-failures needs --backend ours or both")
    backends = [make_backend(n) for n in names]
    show = (args.progress or sys.stderr.isatty()) and not args.no_progress
    progress = Progress(len(cases), show)

    def on_result(case, per_backend):
        if not args.quiet:
            print(_case_line(case, per_backend), flush=True)

    start = time.monotonic()
    results = run_all(cases, backends, on_result, progress)
    elapsed = time.monotonic() - start
    print(format_summary(cases, results, names))
    for b in names:
        missing = missing_operators(cases, results, b)
        if missing:
            print(f"\nOperators {b} does not implement (cases blocked, cases blocked by it alone):")
            print("  " + ", ".join(f"{m['operator']} ({m['cases']}, {m['sole']})" for m in missing))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report(cases, results, names, elapsed), f, indent=1)
            f.write("\n")
    if args.markdown or args.update_doc:
        markdown = format_markdown(cases, results, names)
        if args.markdown:
            with open(args.markdown, "w", encoding="utf-8") as f:
                f.write(markdown)
        if args.update_doc:
            update_doc(args.update_doc, markdown)
    if args.write_expected_failures:
        n = write_expected_failures(args.write_expected_failures, cases, results)
        print(f"\nwrote {n} expected failures to {args.write_expected_failures}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
